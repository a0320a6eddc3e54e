/* The snapshot writer: compact arrays filled by the walker's callbacks, turned into the on-disk
 * chunks at close (docs/snapshot-format.md).
 *
 * Sections: string interning; adding; building the chunks (sort, index, CSR); output. */
#include "snapshot/snap_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/error.h"
#include "common/grow.h"
#include "common/hashmap.h" /* hm_hash64 */
#include "platform/outfile.h"
#include "snapshot/snap_index.h"
#include "snapshot/snap_reader.h" /* the record structs, and the little-endian check */
#include "snapshot/snap_spill.h"

/* ---- string interning ---------------------------------------------------------------------- */

/* Strings are stored as the STRS chunk wants them: a blob of NUL-terminated strings and the
 * offsets array; a hash table of (hash32 << 32 | id + 1) finds a string's id. */
struct interner {
    char *blob;
    size_t blob_len, blob_alloc;
    uint32_t *off; /* count + 1 entries */
    size_t count, off_alloc;
    uint64_t *table;
    size_t cap; /* power of two */
};

static uint32_t str_hash(const char *s, size_t len)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    for (; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
    return (uint32_t)(hm_hash64(h) >> 32);
}

static int intern_rehash(struct interner *in, size_t newcap)
{
    uint64_t *t = calloc(newcap, sizeof(*t));
    if (!t)
        return -SCRY_E_NO_MEMORY;
    for (size_t i = 0; i < in->cap; i++) {
        uint64_t e = in->table[i];
        if (!e)
            continue;
        size_t j = (size_t)(e >> 32) & (newcap - 1);
        while (t[j])
            j = (j + 1) & (newcap - 1);
        t[j] = e;
    }
    free(in->table);
    in->table = t;
    in->cap = newcap;
    return 0;
}

/* The id of s (len bytes), adding it if new. Returns 0 and *id, or a negative error. */
static int intern(struct interner *in, const char *s, size_t len, uint32_t *id)
{
    if (!s)
        s = "", len = 0;
    if ((in->count + 1) * 2 > in->cap) {
        int err = intern_rehash(in, in->cap ? in->cap * 2 : 4096);
        if (err)
            return err;
    }
    uint32_t h = str_hash(s, len);
    size_t i = h & (in->cap - 1);
    for (;; i = (i + 1) & (in->cap - 1)) {
        uint64_t e = in->table[i];
        if (!e)
            break;
        if ((uint32_t)(e >> 32) != h)
            continue;
        uint32_t cand = (uint32_t)e - 1;
        size_t clen = in->off[cand + 1] - in->off[cand] - 1;
        if (clen == len && memcmp(in->blob + in->off[cand], s, len) == 0) {
            *id = cand;
            return 0;
        }
    }
    if (in->count >= UINT32_MAX - 2)
        return err_fail(SCRY_E_INTERNAL, "snapshot limit: more than 2^32 - 2 distinct strings");
    if (len >= UINT32_MAX || in->blob_len + len + 1 > UINT32_MAX)
        return err_fail(SCRY_E_INTERNAL, "snapshot limit: more than 4 GiB of distinct strings");
    if (grow_array(&in->blob, &in->blob_alloc, in->blob_len + len + 1, 1) ||
        grow_array(&in->off, &in->off_alloc, in->count + 2, sizeof(uint32_t)))
        return -SCRY_E_NO_MEMORY;
    if (in->count == 0)
        in->off[0] = 0;
    memcpy(in->blob + in->blob_len, s, len);
    in->blob[in->blob_len + len] = 0;
    in->blob_len += len + 1;
    *id = (uint32_t)in->count;
    in->count++;
    in->off[in->count] = (uint32_t)in->blob_len;
    in->table[i] = ((uint64_t)h << 32) | (*id + 1);
    return 0;
}

static int intern_cstr(struct interner *in, const char *s, uint32_t *id)
{
    return intern(in, s, s ? strlen(s) : 0, id);
}

/* intern_cstr in front of a small cache keyed by the string's address: a walker passes the same
 * type names and label buffers again and again, and one comparison is cheaper than hashing the
 * string and probing the table. An entry is used only when the text there is still the same (a
 * buffer may have been rewritten), so any caller is safe. */
#define RECENT 256
struct recent {
    const char *p;
    uint32_t id;
};

static int intern_recent(struct interner *in, struct recent *cache, const char *s, uint32_t *id)
{
    if (!s)
        return intern(in, "", 0, id);
    struct recent *r = &cache[((uintptr_t)s >> 3) & (RECENT - 1)];
    if (r->p == s && strcmp(in->blob + in->off[r->id], s) == 0) {
        *id = r->id;
        return 0;
    }
    int err = intern_cstr(in, s, id);
    if (!err) {
        r->p = s;
        r->id = *id;
    }
    return err;
}

static void interner_free(struct interner *in)
{
    free(in->blob);
    free(in->off);
    free(in->table);
    memset(in, 0, sizeof(*in));
}

/* ---- the writer ------------------------------------------------------------------------------ */

struct raw_edge {
    uint64_t from, to; /* addresses; at close, object indexes */
    uint32_t label;
    uint8_t kind;
};

struct raw_ref { /* a root, a location or a content */
    uint64_t addr;
    uint32_t str;
    uint32_t line; /* locations only */
    uint32_t seq;  /* arrival order, so that "the first one wins" survives sorting */
    uint32_t index;
};

struct alloc_frame {
    uint32_t file, func, line;
};
struct alloc_stack {
    uint32_t first, depth;
};
struct alloc_sample {
    uint64_t addr, size, weight;
    uint32_t stack;
};
struct raw_buffer {
    uint64_t addr, size;
    uint64_t owner; /* an address, then an object index */
};
struct raw_arena {
    uint64_t addr, size;
    uint32_t stack;
};

#define VEC(T)                                                                                     \
    struct {                                                                                       \
        T *v;                                                                                      \
        size_t n, alloc;                                                                           \
    }

struct snap_writer {
    char *path;
    struct outfile out; /* out.fd: written with pwrite at the end */
    struct interner strings;
    struct recent recent[RECENT]; /* type names and labels: see intern_recent */
    /* The two big arrays go to the temporary file block by block as the walk goes: a walk of a
     * live process holds a copy of its memory meanwhile (snap_spill.h). */
    struct snap_spill objects; /* struct snap_object */
    struct snap_spill edges;   /* struct raw_edge */
    uint64_t spill_end;        /* the temporary file's end */
    VEC(struct raw_ref) roots;
    VEC(struct raw_ref) locations;
    VEC(struct raw_ref) contents;
    struct snap_meta meta;
    char *python_version, *tool_version;
    bool failed;
    /* ALOC */
    bool alloc;
    uint64_t alloc_window, alloc_dropped;
    VEC(struct alloc_frame) aframes;
    VEC(struct alloc_stack) astacks;
    VEC(struct alloc_sample) asamples;
    VEC(struct raw_buffer) buffers; /* BUFS */
    VEC(struct raw_arena) arenas;   /* ARNA */
};

#define VEC_PUSH(w, vec, item)                                                                     \
    (grow_array(&(vec).v, &(vec).alloc, (vec).n + 1, sizeof(*(vec).v))                          \
         ? writer_fail(w, -SCRY_E_NO_MEMORY)                                                        \
         : ((vec).v[(vec).n++] = (item), 0))

static int writer_fail(struct snap_writer *w, int err)
{
    w->failed = true;
    if (err == -SCRY_E_NO_MEMORY)
        err_fail(SCRY_E_NO_MEMORY, "out of memory while building the snapshot %s", w->path);
    if (err == -SCRY_E_IO)
        err_fail(SCRY_E_IO, "cannot write %s: %s", w->path,
                 strerror(w->objects.err ? w->objects.err : w->edges.err));
    return err;
}

int snap_writer_open(const char *path, struct snap_writer **out)
{
    *out = NULL;
    struct snap_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    w->out.fd = -1;
    snap_spill_init(&w->objects, sizeof(struct snap_object), -1, &w->spill_end);
    snap_spill_init(&w->edges, sizeof(struct raw_edge), -1, &w->spill_end);
    w->path = strdup(path);
    if (!w->path) {
        snap_writer_abort(w);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    /* A snapshot holds the program's names and maybe its data: 0600, whoever reads the folder. */
    int e = outfile_open(&w->out, path, OUTFILE_PRIVATE);
    if (e) {
        snap_writer_abort(w);
        return e;
    }
    /* A file written in place (a FIFO, a device) cannot be read back: the arrays stay in memory. */
    if (w->out.tmp)
        w->objects.fd = w->edges.fd = w->out.fd;
    /* String 0 is "" by definition. */
    uint32_t id;
    int err = intern(&w->strings, "", 0, &id);
    if (err) {
        snap_writer_abort(w);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    *out = w;
    return 0;
}

int snap_intern(struct snap_writer *w, const char *s, uint32_t *id)
{
    if (w->failed)
        return -SCRY_E_INTERNAL;
    int err = intern_recent(&w->strings, w->recent, s, id);
    return err ? writer_fail(w, err) : 0;
}

int snap_add_object_id(struct snap_writer *w, uint64_t addr, uint32_t type, uint64_t size,
                       uint32_t flags, const char *content, size_t content_len)
{
    if (w->failed)
        return -SCRY_E_INTERNAL;
    if (addr == 0 || addr == UINT64_MAX || type >= w->strings.count)
        return err_fail(SCRY_E_INTERNAL, "object at address 0x%llx (type string %u) cannot be "
                        "stored", (unsigned long long)addr, type);
    struct snap_object o = {.addr = addr, .size = size, .flags = flags, .type = type};
    struct raw_ref c = {.addr = addr, .seq = (uint32_t)w->contents.n};
    int err = content ? intern(&w->strings, content, content_len, &c.str) : 0;
    if (!err && content)
        err = VEC_PUSH(w, w->contents, c);
    if (!err)
        err = snap_spill_push(&w->objects, &o);
    return err ? writer_fail(w, err) : 0;
}

int snap_add_object(struct snap_writer *w, uint64_t addr, const char *type_name, uint64_t size,
                    uint32_t flags, const char *content, size_t content_len)
{
    uint32_t type;
    int err = snap_intern(w, type_name, &type);
    return err ? err : snap_add_object_id(w, addr, type, size, flags, content, content_len);
}

int snap_add_edge_id(struct snap_writer *w, uint64_t from, uint64_t to, unsigned kind,
                     uint32_t label)
{
    if (w->failed)
        return -SCRY_E_INTERNAL;
    if ((kind & ~(unsigned)SNAP_EDGE_INFERRED) > SNAP_EDGE_KIND_MAX || label >= w->strings.count)
        return err_fail(SCRY_E_INTERNAL, "edge of kind %u, label string %u, cannot be stored",
                        kind, label);
    struct raw_edge e = {.from = from, .to = to, .kind = (uint8_t)kind, .label = label};
    int err = snap_spill_push(&w->edges, &e);
    return err ? writer_fail(w, err) : 0;
}

int snap_add_edge(struct snap_writer *w, uint64_t from, uint64_t to, unsigned kind,
                  const char *label)
{
    uint32_t id;
    int err = snap_intern(w, label, &id);
    return err ? err : snap_add_edge_id(w, from, to, kind, id);
}

int snap_add_root(struct snap_writer *w, uint64_t addr, const char *label)
{
    if (w->failed)
        return -SCRY_E_INTERNAL;
    struct raw_ref r = {.addr = addr, .seq = (uint32_t)w->roots.n};
    int err = intern_cstr(&w->strings, label, &r.str);
    if (err)
        return writer_fail(w, err);
    return VEC_PUSH(w, w->roots, r);
}

int snap_add_location(struct snap_writer *w, uint64_t addr, const char *file, int line)
{
    if (w->failed)
        return -SCRY_E_INTERNAL;
    struct raw_ref r = {.addr = addr, .line = line < 0 ? 0 : (uint32_t)line,
                        .seq = (uint32_t)w->locations.n};
    int err = intern_cstr(&w->strings, file, &r.str);
    if (err)
        return writer_fail(w, err);
    return VEC_PUSH(w, w->locations, r);
}

int snap_add_alloc_frame(struct snap_writer *w, const char *file, const char *func, int line)
{
    struct alloc_frame f = {.line = line < 0 ? 0 : (uint32_t)line};
    int err = intern_cstr(&w->strings, file, &f.file);
    if (!err)
        err = intern_cstr(&w->strings, func, &f.func);
    return err ? writer_fail(w, err) : VEC_PUSH(w, w->aframes, f);
}

int snap_add_alloc_stack(struct snap_writer *w, uint32_t first, uint32_t depth)
{
    if ((uint64_t)first + depth > w->aframes.n)
        return writer_fail(w, err_fail(SCRY_E_INTERNAL, "allocation stack past its frames"));
    return VEC_PUSH(w, w->astacks, ((struct alloc_stack){first, depth}));
}

int snap_add_alloc_sample(struct snap_writer *w, uint64_t addr, uint64_t size, uint64_t weight,
                          uint32_t stack)
{
    if (stack != UINT32_MAX && stack >= w->astacks.n)
        return writer_fail(w, err_fail(SCRY_E_INTERNAL, "allocation sample of no stack"));
    return VEC_PUSH(w, w->asamples, ((struct alloc_sample){addr, size, weight, stack}));
}

int snap_add_buffer(struct snap_writer *w, uint64_t owner, uint64_t addr, uint64_t size)
{
    if (w->failed)
        return -SCRY_E_INTERNAL;
    return VEC_PUSH(w, w->buffers, ((struct raw_buffer){addr, size, owner}));
}

int snap_add_arena(struct snap_writer *w, uint64_t addr, uint64_t size, uint32_t stack)
{
    if (w->failed)
        return -SCRY_E_INTERNAL;
    if ((stack != UINT32_MAX && stack >= w->astacks.n) || !size || addr + size < addr)
        return writer_fail(w, err_fail(SCRY_E_INTERNAL, "arena of no stack, or empty"));
    return VEC_PUSH(w, w->arenas, ((struct raw_arena){addr, size, stack}));
}

void snap_set_alloc_info(struct snap_writer *w, uint64_t window, uint64_t dropped)
{
    w->alloc = true;
    w->alloc_window = window;
    w->alloc_dropped = dropped;
}

void snap_set_meta(struct snap_writer *w, const struct snap_meta *m)
{
    free(w->python_version);
    free(w->tool_version);
    w->meta = *m;
    w->python_version = strdup(m->python_version ? m->python_version : "");
    w->tool_version = strdup(m->tool_version ? m->tool_version : "");
    if (!w->python_version || !w->tool_version)
        writer_fail(w, -SCRY_E_NO_MEMORY);
}

void snap_writer_abort(struct snap_writer *w)
{
    if (!w)
        return;
    outfile_abort(&w->out);
    interner_free(&w->strings);
    snap_spill_free(&w->objects);
    snap_spill_free(&w->edges);
    free(w->roots.v);
    free(w->locations.v);
    free(w->contents.v);
    free(w->aframes.v);
    free(w->astacks.v);
    free(w->asamples.v);
    free(w->buffers.v);
    free(w->arenas.v);
    free(w->python_version);
    free(w->tool_version);
    free(w->path);
    free(w);
}

/* ---- building the chunks --------------------------------------------------------------------- */

static int cmp_object(const void *a, const void *b)
{
    const struct snap_object *x = a, *y = b;
    /* The whole record decides, so that duplicates keep the same one whatever qsort does. */
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    if (x->type != y->type)
        return x->type < y->type ? -1 : 1;
    return x->flags < y->flags ? -1 : x->flags > y->flags;
}

static int cmp_ref_by_index(const void *a, const void *b)
{
    const struct raw_ref *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Maps each ref's address to its object index; drops those without one, and, if sorted, all but
 * the first ref of each object. Returns how many were dropped. */
static int cmp_buffer(const void *a, const void *b)
{
    const struct raw_buffer *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->owner < y->owner ? -1 : x->owner > y->owner;
}

static int cmp_arena(const void *a, const void *b)
{
    const struct raw_arena *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Arenas by address; one that overlaps the one before (a mapping seen twice) is dropped. */
static void sort_arenas(struct snap_writer *w)
{
    if (w->arenas.n > 1)
        qsort(w->arenas.v, w->arenas.n, sizeof(*w->arenas.v), cmp_arena);
    size_t k = 0;
    for (size_t i = 0; i < w->arenas.n; i++)
        if (!k || w->arenas.v[i].addr >= w->arenas.v[k - 1].addr + w->arenas.v[k - 1].size)
            w->arenas.v[k++] = w->arenas.v[i];
    w->arenas.n = w->alloc ? k : 0; /* ARNA goes with ALOC, whose stacks it names */
}

/* Owners to object indexes (a buffer of no object is dropped), sorted by address. */
static void map_buffers(struct snap_writer *w, const struct snap_index *index)
{
    size_t k = 0;
    for (size_t i = 0; i < w->buffers.n; i++) {
        uint64_t idx;
        if (snap_index_get(index, w->buffers.v[i].owner, &idx)) {
            w->buffers.v[k] = w->buffers.v[i];
            w->buffers.v[k++].owner = idx;
        }
    }
    w->buffers.n = k;
    if (k > 1)
        qsort(w->buffers.v, k, sizeof(*w->buffers.v), cmp_buffer);
}

static uint64_t map_refs(struct raw_ref *v, size_t *n, const struct snap_index *index, bool sorted)
{
    size_t kept = 0;
    for (size_t i = 0; i < *n; i++) {
        uint64_t idx;
        if (!snap_index_get(index, v[i].addr, &idx))
            continue;
        v[i].index = (uint32_t)idx;
        v[kept++] = v[i];
    }
    uint64_t dropped = *n - kept;
    if (sorted && kept > 1) {
        qsort(v, kept, sizeof(*v), cmp_ref_by_index);
        size_t k = 1;
        for (size_t i = 1; i < kept; i++)
            if (v[i].index != v[k - 1].index)
                v[k++] = v[i];
        dropped += kept - k;
        kept = k;
    }
    *n = kept;
    return dropped;
}

/* ---- output ---------------------------------------------------------------------------------- */

struct out {
    int fd;
    uint8_t *buf;
    size_t n;
    uint64_t pos;
    uint32_t crc;
    int err; /* errno of the first failure */
};

#define OUT_BUF (1u << 20)

static void out_flush(struct out *o)
{
    size_t done = 0;
    while (!o->err && done < o->n) {
        ssize_t r = write(o->fd, o->buf + done, o->n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            o->err = r < 0 ? errno : EIO;
        else
            done += (size_t)r;
    }
    o->n = 0;
}

static void out_put(struct out *o, const void *data, size_t len)
{
    o->crc = (uint32_t)crc32_z(o->crc, data, len);
    o->pos += len;
    const uint8_t *p = data;
    while (len) {
        if (o->n == OUT_BUF)
            out_flush(o);
        size_t k = OUT_BUF - o->n < len ? OUT_BUF - o->n : len;
        memcpy(o->buf + o->n, p, k);
        o->n += k;
        p += k;
        len -= k;
    }
}

static void out_u32(struct out *o, uint32_t v) { out_put(o, &v, 4); }
static void out_u64(struct out *o, uint64_t v) { out_put(o, &v, 8); }

struct dir_entry {
    uint32_t type, crc;
    uint64_t offset, length;
};

static void chunk_begin(struct out *o, struct dir_entry *d, uint32_t type)
{
    static const uint8_t zeros[SNAP_CHUNK_ALIGN];
    size_t pad = (SNAP_CHUNK_ALIGN - (o->pos & (SNAP_CHUNK_ALIGN - 1))) & (SNAP_CHUNK_ALIGN - 1);
    out_put(o, zeros, pad);
    d->type = type;
    d->offset = o->pos;
    o->crc = 0;
}

static void chunk_end(struct out *o, struct dir_entry *d)
{
    d->crc = o->crc;
    d->length = o->pos - d->offset;
}

static void put_le32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_le64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* ---- reading the spilled arrays back ---------------------------------------------------- */

/* Every object into one array (what the sort needs), each block freed as it is copied. */
static int load_objects(struct snap_writer *w, void *scratch, struct snap_object **out, size_t *n)
{
    struct snap_spill *s = &w->objects;
    *n = 0;
    int err = snap_spill_flush(s);
    if (err)
        return err;
    if (!(*out = malloc((s->total ? s->total : 1) * sizeof(**out))))
        return -SCRY_E_NO_MEMORY;
    for (size_t b = 0; b < s->nblocks; b++) {
        size_t k;
        const void *recs = snap_spill_load(s, b, scratch, &k);
        if (!recs)
            return -SCRY_E_IO;
        memcpy(*out + *n, recs, k * sizeof(**out));
        *n += k;
        snap_spill_drop(s, b);
    }
    return 0;
}

#define EDGE_DROPPED UINT64_MAX /* a reference whose ends are not both objects */

/* First pass over the references: addresses to object indexes, written back into the blocks,
 * and each object's count in first[index + 1]. */
static int map_edges(struct snap_writer *w, const struct snap_index *index, void *scratch,
                     uint32_t *first, size_t *nedge, struct snap_write_stats *st)
{
    struct snap_spill *s = &w->edges;
    int err = snap_spill_flush(s);
    if (err)
        return err;
    uint64_t last_from = 0, last_f = 0; /* the walker sends an object's edges together */
    bool last_ok = false, any = false;
    for (size_t b = 0; b < s->nblocks; b++) {
        size_t k;
        struct raw_edge *e = snap_spill_load(s, b, scratch, &k);
        if (!e)
            return -SCRY_E_IO;
        for (size_t i = 0; i < k; i++) {
            uint64_t f, t;
            if (e[i].from != last_from || !any) {
                any = true;
                last_from = e[i].from;
                last_ok = snap_index_get(index, last_from, &last_f);
            }
            f = last_f;
            if (!last_ok || !snap_index_get(index, e[i].to, &t)) {
                st->dropped_edges++;
                e[i].from = EDGE_DROPPED;
                continue;
            }
            if (first[f + 1] == UINT32_MAX || *nedge == UINT32_MAX)
                return err_fail(SCRY_E_INTERNAL, "snapshot limit: 2^32 or more references");
            first[f + 1]++;
            e[i].from = f;
            e[i].to = t;
            (*nedge)++;
        }
        if ((err = snap_spill_store(s, b, e)) != 0)
            return err;
    }
    return 0;
}

/* Second pass: each reference to its place in the CSR arrays (first[] holds the starts). */
static int place_edges(struct snap_writer *w, void *scratch, uint32_t *first, uint32_t *target,
                       uint32_t *label, uint8_t *kind)
{
    struct snap_spill *s = &w->edges;
    for (size_t b = 0; b < s->nblocks; b++) {
        size_t k;
        const struct raw_edge *e = snap_spill_load(s, b, scratch, &k);
        if (!e)
            return -SCRY_E_IO;
        for (size_t i = 0; i < k; i++) {
            if (e[i].from == EDGE_DROPPED)
                continue;
            uint32_t at = first[e[i].from]++;
            target[at] = (uint32_t)e[i].to;
            label[at] = e[i].label;
            kind[at] = e[i].kind;
        }
        snap_spill_drop(s, b);
    }
    return 0;
}

/* ALOC, BUFS and ARNA (docs/allocations.md), those that the writer holds. */
static void write_alloc_chunks(struct snap_writer *w, struct out *o, struct dir_entry *dir,
                               size_t *nd)
{
    if (w->alloc) {
        chunk_begin(o, &dir[*nd], SNAP_CHUNK_ALOC);
        out_u64(o, w->alloc_window);
        out_u32(o, (uint32_t)w->asamples.n);
        out_u32(o, (uint32_t)w->astacks.n);
        out_u32(o, (uint32_t)w->aframes.n);
        out_u32(o, 0);
        out_u64(o, w->alloc_dropped);
        for (size_t i = 0; i < w->asamples.n; i++) {
            const struct alloc_sample *a = &w->asamples.v[i];
            out_u64(o, a->addr);
            out_u64(o, a->size);
            out_u64(o, a->weight);
            out_u32(o, a->stack);
            out_u32(o, 0);
        }
        for (size_t i = 0; i < w->astacks.n; i++) {
            out_u32(o, w->astacks.v[i].first);
            out_u32(o, w->astacks.v[i].depth);
        }
        for (size_t i = 0; i < w->aframes.n; i++) {
            out_u32(o, w->aframes.v[i].file);
            out_u32(o, w->aframes.v[i].func);
            out_u32(o, w->aframes.v[i].line);
        }
        chunk_end(o, &dir[(*nd)++]);
    }

    if (w->buffers.n) {
        chunk_begin(o, &dir[*nd], SNAP_CHUNK_BUFS);
        for (size_t i = 0; i < w->buffers.n; i++) {
            out_u64(o, w->buffers.v[i].addr);
            out_u64(o, w->buffers.v[i].size);
            out_u32(o, (uint32_t)w->buffers.v[i].owner);
            out_u32(o, 0);
        }
        chunk_end(o, &dir[(*nd)++]);
    }

    if (w->arenas.n) {
        chunk_begin(o, &dir[*nd], SNAP_CHUNK_ARNA);
        for (size_t i = 0; i < w->arenas.n; i++) {
            out_u64(o, w->arenas.v[i].addr);
            out_u64(o, w->arenas.v[i].size);
            out_u32(o, w->arenas.v[i].stack);
            out_u32(o, 0);
        }
        chunk_end(o, &dir[(*nd)++]);
    }
}

/* The CSR form of the graph that write_snapshot writes. */
struct csr {
    const struct snap_object *objs;
    size_t nobj, nedge, ninferred;
    const uint32_t *first, *target, *label, *inferred;
    const uint8_t *kind;
};

/* Every chunk, the directory and then the header over its placeholder, from the file's start
 * (over the spilled blocks, all read by now). A failure is left in o->err. */
static void write_snapshot(struct snap_writer *w, struct out *o, const struct csr *g,
                           uint32_t pyver_id, uint32_t toolver_id,
                           const struct snap_write_stats *st)
{
    struct dir_entry dir[11];
    size_t nd = 0;
    uint8_t header[SNAP_HEADER_SIZE] = {0};
    out_put(o, header, sizeof(header)); /* written again at the end */

    chunk_begin(o, &dir[nd], SNAP_CHUNK_META);
    out_u32(o, w->meta.pid);
    out_u32(o, (w->meta.capture_contents ? SNAP_META_CONTENTS : 0) |
                     (w->meta.c_samples_only ? SNAP_META_C_SAMPLES_ONLY : 0));
    out_u64(o, w->meta.rss_bytes);
    out_u64(o, (uint64_t)w->meta.dump_time_us);
    out_u64(o, w->meta.pause_us);
    out_u32(o, w->meta.capture_contents ? w->meta.max_str : 0);
    out_u32(o, pyver_id);
    out_u32(o, toolver_id);
    out_u32(o, 0);
    out_u64(o, st->dropped_edges);
    out_u64(o, st->duplicate_objects);
    out_u32(o, (uint32_t)(st->dropped_roots > UINT32_MAX ? UINT32_MAX : st->dropped_roots));
    out_u32(o, (uint32_t)(st->dropped_locations > UINT32_MAX ? UINT32_MAX
                                                             : st->dropped_locations));
    chunk_end(o, &dir[nd++]);

    chunk_begin(o, &dir[nd], SNAP_CHUNK_STRS);
    out_u32(o, (uint32_t)w->strings.count);
    out_u32(o, (uint32_t)w->strings.blob_len);
    out_put(o, w->strings.off, (w->strings.count + 1) * sizeof(uint32_t));
    out_put(o, w->strings.blob, w->strings.blob_len);
    chunk_end(o, &dir[nd++]);

    chunk_begin(o, &dir[nd], SNAP_CHUNK_OBJS);
    out_put(o, g->objs, g->nobj * sizeof(*g->objs));
    chunk_end(o, &dir[nd++]);

    chunk_begin(o, &dir[nd], SNAP_CHUNK_EDGE);
    out_u32(o, (uint32_t)g->nobj);
    out_u32(o, (uint32_t)g->nedge);
    out_put(o, g->first, (g->nobj + 1) * sizeof(*g->first));
    out_put(o, g->target, g->nedge * sizeof(*g->target));
    out_put(o, g->label, g->nedge * sizeof(*g->label));
    out_put(o, g->kind, g->nedge);
    chunk_end(o, &dir[nd++]);

    if (g->ninferred) {
        chunk_begin(o, &dir[nd], SNAP_CHUNK_INFR);
        out_put(o, g->inferred, g->ninferred * sizeof(*g->inferred));
        chunk_end(o, &dir[nd++]);
    }

    chunk_begin(o, &dir[nd], SNAP_CHUNK_ROOT);
    for (size_t i = 0; i < w->roots.n; i++) {
        out_u32(o, w->roots.v[i].index);
        out_u32(o, w->roots.v[i].str);
    }
    chunk_end(o, &dir[nd++]);

    chunk_begin(o, &dir[nd], SNAP_CHUNK_LOCS);
    for (size_t i = 0; i < w->locations.n; i++) {
        out_u32(o, w->locations.v[i].index);
        out_u32(o, w->locations.v[i].str);
        out_u32(o, w->locations.v[i].line);
    }
    chunk_end(o, &dir[nd++]);

    write_alloc_chunks(w, o, dir, &nd);

    if (w->meta.capture_contents) {
        chunk_begin(o, &dir[nd], SNAP_CHUNK_CONT);
        for (size_t i = 0; i < w->contents.n; i++) {
            out_u32(o, w->contents.v[i].index);
            out_u32(o, w->contents.v[i].str);
        }
        chunk_end(o, &dir[nd++]);
    }

    /* Directory, then the header over the placeholder. */
    struct dir_entry dummy;
    chunk_begin(o, &dummy, 0);
    uint64_t dir_offset = o->pos;
    for (size_t i = 0; i < nd; i++) {
        out_u32(o, dir[i].type);
        out_u32(o, dir[i].crc);
        out_u64(o, dir[i].offset);
        out_u64(o, dir[i].length);
    }
    chunk_end(o, &dummy);
    uint32_t dir_crc = dummy.crc;
    out_flush(o);

    memcpy(header, SNAP_MAGIC, 8);
    header[8] = SNAP_MAJOR;
    header[10] = w->arenas.n    ? SNAP_MINOR_ARNA
                 : w->buffers.n ? SNAP_MINOR_BUFS
                 : w->alloc     ? SNAP_MINOR_ALOC
                                : SNAP_MINOR;
    put_le64(header + 16, o->pos);
    put_le64(header + 24, dir_offset);
    put_le32(header + 32, (uint32_t)nd);
    put_le32(header + 36, dir_crc);
    put_le32(header + SNAP_HEADER_CRC_OFF, (uint32_t)crc32_z(0, header, SNAP_HEADER_CRC_OFF));
    if (!o->err && pwrite(w->out.fd, header, sizeof(header), 0) != (ssize_t)sizeof(header))
        o->err = errno ? errno : EIO;
}

int snap_writer_close(struct snap_writer *w, struct snap_write_stats *stats)
{
    int err = 0;
    struct snap_index index = {NULL, 0, NULL};
    struct snap_object *objs = NULL;
    uint32_t *first = NULL, *target = NULL, *label = NULL;
    uint8_t *kind = NULL;
    uint32_t *inferred = NULL;
    struct out o = {.fd = w->out.fd};
    struct snap_write_stats st = {0};

    if (w->failed) {
        err = -SCRY_E_INTERNAL;
        goto out;
    }
    if (w->contents.n && !w->meta.capture_contents) {
        err = err_fail(SCRY_E_INTERNAL, "contents were given for a snapshot without "
                                        "capture_contents; refusing to store them");
        goto out;
    }
    uint32_t pyver_id, toolver_id;
    if ((err = intern_cstr(&w->strings, w->python_version, &pyver_id)) ||
        (err = intern_cstr(&w->strings, w->tool_version, &toolver_id))) {
        if (err == -SCRY_E_NO_MEMORY)
            goto fail_mem;
        goto out; /* a limit, with its message */
    }

    /* Objects: read back, sorted by address, one per address. */
    if (!(o.buf = malloc(OUT_BUF))) /* first the scratch for the spilled blocks */
        goto fail_mem;
    size_t nobj;
    if ((err = load_objects(w, o.buf, &objs, &nobj)) != 0)
        goto fail_err;
    if (nobj > 1)
        qsort(objs, nobj, sizeof(*objs), cmp_object);
    size_t k = 0;
    for (size_t i = 0; i < nobj; i++) {
        if (k && objs[k - 1].addr == objs[i].addr) {
            st.duplicate_objects++;
            continue;
        }
        objs[k++] = objs[i];
        st.shallow_bytes += objs[i].size;
    }
    nobj = k;
    if (nobj >= UINT32_MAX) {
        err = err_fail(SCRY_E_INTERNAL, "snapshot limit: %zu objects (at most 2^32 - 2)", nobj);
        goto out;
    }

    /* Address -> index, then references by index. */
    if (snap_index_build(&index, objs, nobj))
        goto fail_mem;
    first = calloc(nobj + 1, sizeof(*first));
    if (!first)
        goto fail_mem;
    size_t nedge = 0;
    if ((err = map_edges(w, &index, o.buf, first, &nedge, &st)) != 0)
        goto fail_err;
    st.dropped_roots = map_refs(w->roots.v, &w->roots.n, &index, false);
    st.dropped_locations = map_refs(w->locations.v, &w->locations.n, &index, true);
    map_refs(w->contents.v, &w->contents.n, &index, true); /* duplicates of duplicate objects */
    map_buffers(w, &index);
    sort_arenas(w);
    if (w->roots.n >= UINT32_MAX) {
        err = err_fail(SCRY_E_INTERNAL, "snapshot limit: 2^32 or more roots");
        goto out;
    }
    snap_index_free(&index);

    /* CSR: a stable counting sort by source, keeping the walker's order within an object.
     * first[i] holds object i-1's count; after the prefix sum it is object i's start, then each
     * placement bumps it, leaving first[i] at object i's end, which is shifted into place. */
    for (size_t i = 1; i <= nobj; i++)
        first[i] += first[i - 1];
    target = malloc((nedge ? nedge : 1) * sizeof(*target));
    label = malloc((nedge ? nedge : 1) * sizeof(*label));
    kind = malloc(nedge ? nedge : 1);
    if (!target || !label || !kind)
        goto fail_mem;
    if ((err = place_edges(w, o.buf, first, target, label, kind)) != 0)
        goto fail_err;
    memmove(first + 1, first, nobj * sizeof(*first));
    first[0] = 0;
    /* Inferred edges: their indexes, in increasing order, for INFR; the flag leaves the kind. */
    size_t ninferred = 0;
    for (size_t i = 0; i < nedge; i++)
        ninferred += (kind[i] & SNAP_EDGE_INFERRED) != 0;
    if (ninferred && !(inferred = malloc(ninferred * sizeof(*inferred))))
        goto fail_mem;
    for (size_t i = 0, j = 0; i < nedge; i++)
        if (kind[i] & SNAP_EDGE_INFERRED) {
            inferred[j++] = (uint32_t)i;
            kind[i] &= (uint8_t)~SNAP_EDGE_INFERRED;
        }
    snap_spill_free(&w->edges);

    struct csr g = {objs, nobj, nedge, ninferred, first, target, label, inferred, kind};
    write_snapshot(w, &o, &g, pyver_id, toolver_id, &st);
    if (o.err) {
        err = err_fail(SCRY_E_IO, "cannot write %s: %s", w->path, strerror(o.err));
        goto out;
    }
    /* The spilled blocks may have made the file longer than the snapshot. */
    if (w->out.tmp && ftruncate(w->out.fd, (off_t)o.pos) != 0) {
        err = err_fail(SCRY_E_IO, "cannot write %s: %s", w->path, strerror(errno));
        goto out;
    }
    if ((err = outfile_commit(&w->out)) != 0)
        goto out;

    st.objects = nobj;
    st.edges = nedge;
    st.roots = w->roots.n;
    st.locations = w->locations.n;
    st.contents = w->meta.capture_contents ? w->contents.n : 0;
    st.strings = w->strings.count;
    st.file_bytes = o.pos;
    if (stats)
        *stats = st;
    goto out;

fail_err:
    if (err == -SCRY_E_NO_MEMORY)
        goto fail_mem;
    if (err == -SCRY_E_IO)
        err = err_fail(SCRY_E_IO, "cannot read back %s: %s", w->path,
                       strerror(w->objects.err ? w->objects.err : w->edges.err));
    goto out;
fail_mem:
    err = err_fail(SCRY_E_NO_MEMORY, "out of memory while writing the snapshot %s", w->path);
out:
    free(objs);
    snap_index_free(&index);
    free(first);
    free(target);
    free(label);
    free(kind);
    free(inferred);
    free(o.buf);
    snap_writer_abort(w);
    return err;
}
