/* Unit tests of the heap snapshot writer and reader (docs/snapshot-format.md): a synthetic
 * snapshot written and read back holds exactly what was given (minus what the format drops, as
 * documented); every flipped byte and every truncation of a small snapshot is refused with
 * bad_snapshot; deeper damage behind valid checksums is refused with a message naming it; unknown
 * chunks and newer minor versions are read, newer major versions refused. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/error.h"
#include "snapshot/snap_reader.h"
#include "snapshot/snap_writer.h"
#include "testlib.h"

/* zlib's CRC-32 (the snapshot's checksum) as a uint32_t. */
static uint32_t zcrc(uint32_t crc, const void *data, size_t len)
{
    return (uint32_t)crc32_z(crc, data, len);
}

/* ---- helpers --------------------------------------------------------------------------------- */

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static char *tmp_path(const char *name)
{
    static char buf[8][512];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 512, "%s/%s", tl_tmpdir(), name);
    return p;
}

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
    if (fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void write_all(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len)
        tl_fail(__FILE__, __LINE__, "cannot write %s", path);
    if (f)
        fclose(f);
}

static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static void set32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void set64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Recomputes every chunk checksum, the directory's and the header's, so that a test can damage
 * a field behind valid checksums. */
static void refresh_crcs(uint8_t *b, size_t len)
{
    uint64_t dir = get64(b + 24);
    uint32_t n = get32(b + 32);
    if (dir > len || (len - dir) / 24 < n)
        return;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *e = b + dir + 24 * i;
        uint64_t off = get64(e + 8), l = get64(e + 16);
        if (off <= len && l <= len - off)
            set32(e + 4, zcrc(0, b + off, l));
    }
    set32(b + 36, zcrc(0, b + dir, 24 * (size_t)n));
    set32(b + 60, zcrc(0, b, 60));
}

/* The offset of chunk type's bytes in a snapshot image, or 0. */
static uint64_t chunk_off(const uint8_t *b, uint32_t type, uint64_t *len)
{
    uint64_t dir = get64(b + 24);
    uint32_t n = get32(b + 32);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = b + dir + 24 * i;
        if (get32(e) == type) {
            *len = get64(e + 16);
            return get64(e + 8);
        }
    }
    return 0;
}

/* Reads everything an analysis could, so that ASan sees any out-of-range access; returns a sum
 * so that nothing is optimised away. */
static uint64_t walk(const struct snap *s)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < snap_nobjects(s); i++) {
        const struct snap_object *o = snap_object(s, i);
        sum += o->addr + o->size + strlen(snap_type_name(s, i));
        uint32_t b, e;
        snap_edges(s, i, &b, &e);
        for (uint32_t k = b; k < e; k++)
            sum += snap_edge_target(s, k) + snap_edge_kind(s, k) +
                   strlen(snap_string(s, snap_edge_label(s, k)));
        const char *file, *data;
        uint32_t line;
        size_t len;
        if (snap_location(s, i, &file, &line))
            sum += strlen(file) + line;
        if (snap_content(s, i, &data, &len))
            sum += len + (len ? (uint8_t)data[len - 1] : 0);
        if (snap_find(s, o->addr) != i)
            tl_fail(__FILE__, __LINE__, "snap_find(0x%" PRIx64 ") is not %u", o->addr, i);
    }
    for (uint32_t i = 0; i < snap_nroots(s); i++)
        sum += snap_root(s, i)->object + strlen(snap_string(s, snap_root(s, i)->label));
    for (uint32_t i = 0; i < s->nstrings; i++) {
        size_t len;
        const char *p = snap_string_len(s, i, &len);
        if (p[len] != 0)
            tl_fail(__FILE__, __LINE__, "string %u not terminated", i);
        sum += len;
    }
    sum += strlen(snap_meta(s)->python_version) + strlen(snap_meta(s)->tool_version);
    return sum;
}

/* ---- the synthetic snapshot and its model ---------------------------------------------------- */

struct m_edge {
    uint64_t to;
    unsigned kind;
    char label[40];
};

struct m_obj {
    uint64_t addr, size;
    uint32_t flags;
    const char *type;
    char content[24];
    size_t content_len; /* 0 and content[0] == 1: none */
    bool has_content;
    struct m_edge *edges;
    size_t nedges;
    const char *file;
    int line;
};

static const char *const type_names[] = {
    "builtins.dict", "builtins.list", "builtins.str", "builtins.tuple", "app.session.Session",
    "builtins.function", "builtins.type", "builtins.bytes", "builtins.int", "builtins.cell",
};

struct model {
    struct m_obj *objs; /* sorted by address */
    size_t n;
    uint64_t dropped_edges;
    struct {
        uint64_t addr;
        char label[48];
        bool kept;
    } roots[16];
    size_t nroots;
};

static int cmp_mobj(const void *a, const void *b)
{
    const struct m_obj *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static struct m_obj *model_find(struct model *m, uint64_t addr)
{
    struct m_obj key = {.addr = addr};
    return bsearch(&key, m->objs, m->n, sizeof(key), cmp_mobj);
}

static const struct snap_meta test_meta = {
    .pid = 4242,
    .python_version = "3.12.1",
    .rss_bytes = 1234567890123ULL,
    .dump_time_us = 1700000000123456LL,
    .pause_us = 412345,
    .capture_contents = true,
    .max_str = 16,
    .tool_version = "scry 0.1.0",
};

/* Builds a model of n objects at random addresses and feeds it to a writer for path, in an order
 * that is not sorted, with references before their objects, references to and from unknown
 * addresses, a duplicate object, unknown roots and locations. */
static int build(const char *path, size_t n, struct model *m, struct snap_write_stats *st)
{
    rng_state = 0x9E3779B97F4A7C15ULL ^ n;
    memset(m, 0, sizeof(*m));
    m->objs = calloc(n, sizeof(*m->objs));
    m->n = n;
    for (size_t i = 0; i < n; i++) {
        struct m_obj *o = &m->objs[i];
        o->addr = 0x7f0000000000ULL + (i * 64) + (rnd() % 4) * 8; /* unique, shuffled below */
        o->size = 16 + rnd() % 5000;
        o->flags = (uint32_t)(rnd() % 8);
        o->type = type_names[rnd() % 10];
        if (rnd() % 3 == 0) {
            o->has_content = true;
            o->content_len = rnd() % 17;
            for (size_t k = 0; k < o->content_len; k++)
                o->content[k] = (char)(rnd() % 4 == 0 ? 0 : 'a' + rnd() % 26); /* NULs too */
        }
        if (rnd() % 4 == 0) {
            o->file = (rnd() % 2) ? "app/session.py" : "/usr/lib/python3.12/json/__init__.py";
            o->line = (int)(rnd() % 900) - 2; /* a few negative: stored as 0 */
        }
    }
    /* Edges: to earlier or later objects, plus unknown targets. */
    for (size_t i = 0; i < n; i++) {
        struct m_obj *o = &m->objs[i];
        size_t ne = rnd() % 6;
        o->edges = calloc(ne ? ne : 1, sizeof(*o->edges));
        for (size_t k = 0; k < ne; k++) {
            struct m_edge *e = &o->edges[o->nedges++];
            e->kind = (unsigned)(rnd() % 8);
            if (rnd() % 10 == 0)
                e->to = 0x10000 + rnd() % 100000; /* no object there */
            else
                e->to = m->objs[rnd() % n].addr;
            switch (rnd() % 4) {
            case 0: e->label[0] = 0; break;
            case 1: snprintf(e->label, sizeof(e->label), "[%u]", (unsigned)k); break;
            case 2: snprintf(e->label, sizeof(e->label), ".attr%u", (unsigned)(rnd() % 50)); break;
            default: snprintf(e->label, sizeof(e->label), "['key:%u']", (unsigned)(rnd() % 3000));
            }
        }
    }

    struct snap_writer *w;
    int err = snap_writer_open(path, &w);
    if (err)
        return err;
    /* Objects in a shuffled order; each object's edges right after it, except every fifth
     * object's, which come before it. */
    size_t *order = malloc(n * sizeof(*order));
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = rnd() % i, t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (size_t x = 0; x < n && !err; x++) {
        struct m_obj *o = &m->objs[order[x]];
        bool early = x % 5 == 0;
        for (size_t k = 0; early && k < o->nedges && !err; k++)
            err = snap_add_edge(w, o->addr, o->edges[k].to, o->edges[k].kind,
                                o->edges[k].label[0] ? o->edges[k].label
                                                     : (k % 2 ? NULL : ""));
        if (!err)
            err = snap_add_object(w, o->addr, o->type, o->size, o->flags,
                                  o->has_content ? o->content : NULL, o->content_len);
        for (size_t k = 0; !early && k < o->nedges && !err; k++)
            err = snap_add_edge(w, o->addr, o->edges[k].to, o->edges[k].kind,
                                o->edges[k].label[0] ? o->edges[k].label : NULL);
        if (!err && o->file)
            err = snap_add_location(w, o->addr, o->file, o->line);
        if (x == n / 2 && !err) {
            /* A second report of this object: dropped, counted; a second location too. */
            err = snap_add_object(w, o->addr, o->type, o->size, o->flags, NULL, 0);
            if (!err && o->file)
                err = snap_add_location(w, o->addr, "elsewhere.py", 1);
        }
    }
    /* References from an address without an object. */
    for (int k = 0; k < 7 && !err; k++)
        err = snap_add_edge(w, 0x20000 + k, m->objs[k % n].addr, SNAP_EDGE_ATTR, ".x");
    for (size_t k = 0; k < 10 && !err; k++) {
        bool known = k != 3;
        uint64_t addr = known ? m->objs[rnd() % n].addr : 0x30000;
        snprintf(m->roots[k].label, sizeof(m->roots[k].label), "sys.modules['mod%zu']", k);
        m->roots[k].addr = addr;
        m->roots[k].kept = known;
        err = snap_add_root(w, addr, m->roots[k].label);
    }
    m->nroots = 10;
    if (!err)
        err = snap_add_location(w, 0x40000, "nowhere.py", 3);
    free(order);
    if (err) {
        snap_writer_abort(w);
        return err;
    }
    snap_set_meta(w, &test_meta);
    qsort(m->objs, n, sizeof(*m->objs), cmp_mobj);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < m->objs[i].nedges; k++)
            if (!model_find(m, m->objs[i].edges[k].to))
                m->dropped_edges++;
    m->dropped_edges += 7;
    return snap_writer_close(w, st);
}

static void model_free(struct model *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->objs[i].edges);
    free(m->objs);
}

/* The snapshot holds exactly the model. */
static void compare(const struct snap *s, struct model *m)
{
    CHECK_EQ(snap_nobjects(s), m->n);
    if (snap_nobjects(s) != m->n)
        return;
    uint64_t nedges = 0, nlocs = 0, ncont = 0, shallow = 0;
    for (uint32_t i = 0; i < m->n; i++) {
        const struct m_obj *o = &m->objs[i];
        const struct snap_object *so = snap_object(s, i);
        CHECK_EQ_U64(so->addr, o->addr);
        CHECK_EQ_U64(so->size, o->size);
        CHECK_EQ(so->flags, o->flags);
        CHECK_STR(snap_type_name(s, i), o->type);
        shallow += o->size;
        uint32_t b, e;
        snap_edges(s, i, &b, &e);
        uint32_t k = b;
        for (size_t x = 0; x < o->nedges; x++) {
            const struct m_edge *me = &o->edges[x];
            const struct m_obj *t = model_find(m, me->to);
            if (!t)
                continue;
            if (k >= e) {
                tl_fail(__FILE__, __LINE__, "object %u: too few edges", i);
                break;
            }
            CHECK_EQ(snap_edge_target(s, k), t - m->objs);
            CHECK_EQ(snap_edge_kind(s, k), me->kind);
            CHECK_STR(snap_string(s, snap_edge_label(s, k)), me->label);
            k++;
            nedges++;
        }
        CHECK_EQ(k, e);
        const char *file, *data;
        uint32_t line;
        size_t len;
        bool has = snap_location(s, i, &file, &line);
        CHECK_EQ(has, o->file != NULL);
        if (has && o->file) {
            CHECK_STR(file, o->file);
            CHECK_EQ(line, o->line < 0 ? 0 : o->line);
            nlocs++;
        }
        has = snap_content(s, i, &data, &len);
        CHECK_EQ(has, o->has_content);
        if (has && o->has_content) {
            CHECK_EQ(len, o->content_len);
            CHECK(len == o->content_len && memcmp(data, o->content, len) == 0);
            ncont++;
        }
    }
    CHECK_EQ(s->nedges, nedges);
    CHECK_EQ(s->nlocations, nlocs);
    CHECK_EQ(s->ncontents, ncont);
    CHECK_EQ_U64(s->shallow_total, shallow);
    uint32_t r = 0;
    for (size_t k = 0; k < m->nroots; k++) {
        if (!m->roots[k].kept)
            continue;
        if (r >= snap_nroots(s)) {
            tl_fail(__FILE__, __LINE__, "too few roots");
            break;
        }
        CHECK_EQ_U64(snap_object(s, snap_root(s, r)->object)->addr, m->roots[k].addr);
        CHECK_STR(snap_string(s, snap_root(s, r)->label), m->roots[k].label);
        r++;
    }
    CHECK_EQ(snap_nroots(s), r);
    const struct snap_meta_info *mi = snap_meta(s);
    CHECK_EQ(mi->pid, 4242);
    CHECK_STR(mi->python_version, "3.12.1");
    CHECK_STR(mi->tool_version, "scry 0.1.0");
    CHECK_EQ_U64(mi->rss_bytes, 1234567890123ULL);
    CHECK_EQ(mi->dump_time_us, 1700000000123456LL);
    CHECK_EQ_U64(mi->pause_us, 412345);
    CHECK(mi->capture_contents);
    CHECK_EQ(mi->max_str, 16);
    CHECK_EQ_U64(mi->dropped_edges, m->dropped_edges);
    CHECK_EQ_U64(mi->duplicate_objects, 1);
    CHECK_EQ(mi->dropped_roots, 1);
    CHECK(mi->dropped_locations >= 1); /* nowhere.py, and elsewhere.py if that object had one */
    CHECK_EQ(s->major, SNAP_MAJOR);
    CHECK_EQ(s->minor, SNAP_MINOR);
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void test_crc32(void)
{
    CHECK_EQ_U64(zcrc(0, "123456789", 9), 0xCBF43926u);
    CHECK_EQ_U64(zcrc(0, "", 0), 0);
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    uint32_t whole = zcrc(0, buf, sizeof(buf));
    for (size_t cut = 0; cut <= sizeof(buf); cut += 37)
        CHECK_EQ_U64(zcrc(zcrc(0, buf, cut), buf + cut, sizeof(buf) - cut), whole);
    /* The bitwise definition, for every length up to 64 at every alignment. */
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len + off <= 72; len++) {
            uint32_t c = 0xFFFFFFFFu;
            for (size_t i = 0; i < len; i++) {
                c ^= buf[off + i];
                for (int k = 0; k < 8; k++)
                    c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
            }
            CHECK_EQ_U64(zcrc(0, buf + off, len), ~c);
        }
}

static void test_roundtrip(void)
{
    const char *path = tmp_path("roundtrip.heap");
    struct model m;
    struct snap_write_stats st;
    int err = build(path, 3000, &m, &st);
    CHECK_EQ(err, 0);
    if (err) {
        fprintf(stderr, "  %s\n", err_last_message());
        model_free(&m);
        return;
    }
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && (uint64_t)sb.st_size == st.file_bytes);
    char tmp[600];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    CHECK(access(tmp, F_OK) != 0); /* renamed away */
    CHECK_EQ(st.objects, 3000);
    CHECK_EQ(st.duplicate_objects, 1);
    CHECK_EQ(st.dropped_edges, m.dropped_edges);
    CHECK_EQ(st.dropped_roots, 1);

    struct snap s;
    err = snap_open(path, &s);
    CHECK_EQ(err, 0);
    if (err) {
        fprintf(stderr, "  %s\n", err_last_message());
    } else {
        compare(&s, &m);
        CHECK_EQ(s.nedges, st.edges);
        CHECK_EQ(s.nstrings, st.strings);
        CHECK(s.mapped);
        CHECK_EQ(s.nchunks, 7);
        walk(&s);
        snap_close(&s);
    }
    /* The same bytes through the buffer reader. */
    size_t len;
    uint8_t *bytes = read_all(path, &len);
    CHECK(bytes != NULL);
    if (bytes && snap_open_buffer(bytes, len, "buf", &s) == 0) {
        compare(&s, &m);
        snap_close(&s);
    } else {
        tl_fail(__FILE__, __LINE__, "snap_open_buffer: %s", err_last_message());
    }
    /* The writer is deterministic: the same input gives the same bytes. */
    struct model m2;
    const char *path2 = tmp_path("roundtrip2.heap");
    CHECK_EQ(build(path2, 3000, &m2, NULL), 0);
    size_t len2;
    uint8_t *bytes2 = read_all(path2, &len2);
    CHECK(bytes && bytes2 && len == len2 && memcmp(bytes, bytes2, len) == 0);
    free(bytes);
    free(bytes2);
    model_free(&m2);
    model_free(&m);
}

static void test_empty_snapshot(void)
{
    const char *path = tmp_path("empty.heap");
    struct snap_writer *w;
    CHECK_EQ(snap_writer_open(path, &w), 0);
    CHECK_EQ(snap_add_edge(w, 0x1000, 0x2000, SNAP_EDGE_ATTR, ".a"), 0);
    CHECK_EQ(snap_add_root(w, 0x1000, "sys.modules"), 0);
    struct snap_write_stats st;
    CHECK_EQ(snap_writer_close(w, &st), 0);
    CHECK_EQ(st.objects, 0);
    CHECK_EQ(st.dropped_edges, 1);
    struct snap s;
    CHECK_EQ(snap_open(path, &s), 0);
    CHECK_EQ(snap_nobjects(&s), 0);
    CHECK_EQ(s.nedges, 0);
    CHECK_EQ(snap_nroots(&s), 0);
    CHECK_EQ(s.nstrings, 3); /* "", and the two empty versions are "" too: "", ".a", "sys.modules" */
    CHECK_STR(snap_meta(&s)->python_version, "");
    CHECK(!snap_meta(&s)->capture_contents);
    CHECK_EQ(s.nchunks, 6); /* no CONT without capture */
    CHECK_EQ(snap_find(&s, 0x1000), SNAP_NONE);
    snap_close(&s);
}

/* How many entries dir holds (. and .. aside); the last one's name goes to name if given. */
static int dir_entries(const char *dir, char *name)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        n++;
        if (name)
            snprintf(name, 256, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

static void test_writer_errors(void)
{
    struct snap_writer *w;
    err_clear();
    CHECK_EQ(snap_writer_open("/nonexistent-dir/x.heap", &w), -SCRY_E_IO);
    CHECK(strstr(err_last_message(), "/nonexistent-dir/x.heap") != NULL);
    CHECK(w == NULL);

    /* Contents without capture_contents: refused, nothing left on disk. */
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/writer-errors", tl_tmpdir());
    CHECK_EQ(mkdir(dir, 0700), 0);
    char path[600];
    snprintf(path, sizeof(path), "%s/nocapture.heap", dir);
    CHECK_EQ(snap_writer_open(path, &w), 0);
    CHECK_EQ(snap_add_object(w, 0x1000, "builtins.str", 60, 0, "secret", 6), 0);
    CHECK(snap_add_object(w, 0, "builtins.str", 60, 0, NULL, 0) < 0); /* address 0 */
    CHECK(snap_add_edge(w, 0x1000, 0x1000, 99, NULL) < 0);             /* unknown kind */
    CHECK(snap_writer_close(w, NULL) < 0);
    CHECK_EQ(dir_entries(dir, NULL), 0);

    /* The temporary file is a hidden 0600 file next to the target; abort removes it. */
    CHECK_EQ(snap_writer_open(path, &w), 0);
    char tmp[600];
    CHECK_EQ(dir_entries(dir, tmp), 1);
    CHECK(tmp[0] == '.');
    struct stat st;
    char full[1200];
    snprintf(full, sizeof(full), "%s/%s", dir, tmp);
    CHECK_EQ(lstat(full, &st), 0);
    CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600);
    snap_writer_abort(w);
    CHECK_EQ(dir_entries(dir, NULL), 0);
    CHECK(access(path, F_OK) != 0);
}

static void test_open_errors(void)
{
    struct snap s;
    CHECK_EQ(snap_open(tmp_path("missing.heap"), &s), -SCRY_E_IO);
    CHECK(strstr(err_last_message(), "missing.heap") != NULL);
    CHECK_EQ(snap_open(tl_tmpdir(), &s), -SCRY_E_IO);
    CHECK(strstr(err_last_message(), "directory") != NULL);
    const char *empty = tmp_path("zero.heap");
    write_all(empty, "", 0);
    CHECK_EQ(snap_open(empty, &s), -SCRY_E_BAD_SNAPSHOT);
    CHECK(strstr(err_last_message(), "empty") != NULL);
    const char *junk = tmp_path("junk.heap");
    write_all(junk, "hello, this is not a snapshot at all, not even close to one......", 64);
    CHECK_EQ(snap_open(junk, &s), -SCRY_E_BAD_SNAPSHOT);
    CHECK(strstr(err_last_message(), "magic") != NULL);
    CHECK(strstr(err_last_message(), "offset 0") != NULL);
}

/* A small snapshot with every chunk type, as bytes. */
static uint8_t *small_snapshot(size_t *len)
{
    const char *path = tmp_path("small.heap");
    struct model m;
    if (build(path, 12, &m, NULL) != 0) {
        tl_fail(__FILE__, __LINE__, "build: %s", err_last_message());
        model_free(&m);
        return NULL;
    }
    model_free(&m);
    return read_all(path, len);
}

static void test_every_flip_and_truncation(void)
{
    size_t len;
    uint8_t *good = small_snapshot(&len);
    if (!good)
        return;
    struct snap s;
    CHECK_EQ(snap_open_buffer(good, len, "small", &s), 0);
    CHECK_EQ(s.nchunks, 7);
    snap_close(&s);
    uint8_t *b = malloc(len + 1);
    size_t undetected = 0, crashes_would_show = 0;
    for (size_t i = 0; i < len; i++) {
        static const uint8_t masks[] = {0x01, 0x80, 0xff};
        for (size_t k = 0; k < sizeof(masks); k++) {
            memcpy(b, good, len);
            b[i] ^= masks[k];
            int err = snap_open_buffer(b, len, "flipped", &s);
            if (err != -SCRY_E_BAD_SNAPSHOT) {
                if (undetected++ < 5)
                    tl_fail(__FILE__, __LINE__, "byte %zu ^ 0x%02x: %d, not bad_snapshot", i,
                            masks[k], err);
                if (!err)
                    snap_close(&s);
            } else if (!strstr(err_last_message(), "at offset ")) {
                tl_fail(__FILE__, __LINE__, "byte %zu: message without offset: %s", i,
                        err_last_message());
            }
        }
    }
    CHECK_EQ(undetected, 0);
    for (size_t n = 0; n < len; n++) {
        int err = snap_open_buffer(good, n, "truncated", &s);
        if (err != -SCRY_E_BAD_SNAPSHOT) {
            if (crashes_would_show++ < 5)
                tl_fail(__FILE__, __LINE__, "truncated to %zu: %d, not bad_snapshot", n, err);
            if (!err)
                snap_close(&s);
        }
    }
    CHECK_EQ(crashes_would_show, 0);
    /* A byte appended: the header's file size no longer matches. */
    memcpy(b, good, len);
    b[len] = 0;
    CHECK_EQ(snap_open_buffer(b, len + 1, "extended", &s), -SCRY_E_BAD_SNAPSHOT);
    CHECK(strstr(err_last_message(), "extended") != NULL);
    /* Truncations through real files and mmap, a sample of lengths. */
    const char *path = tmp_path("cut.heap");
    for (size_t n = 0; n < len; n += 1 + len / 17) {
        write_all(path, good, n);
        CHECK_EQ(snap_open(path, &s), -SCRY_E_BAD_SNAPSHOT);
    }
    write_all(path, good, len);
    CHECK_EQ(snap_open(path, &s), 0);
    snap_close(&s);
    free(b);
    free(good);
}

/* With checksums recomputed after each flip, the deeper checks see every byte damaged: the
 * result may be accepted (a size, a flag, a line) but must never crash, and what is accepted must
 * be walkable. */
static void test_flips_behind_valid_checksums(void)
{
    size_t len;
    uint8_t *good = small_snapshot(&len);
    if (!good)
        return;
    uint8_t *b = malloc(len);
    size_t accepted = 0, refused = 0;
    for (size_t i = 0; i < len; i++) {
        for (int k = 0; k < 8; k++) {
            memcpy(b, good, len);
            b[i] ^= (uint8_t)(1u << k);
            refresh_crcs(b, len);
            struct snap s;
            int err = snap_open_buffer(b, len, "flipped", &s);
            if (err == 0) {
                accepted++;
                walk(&s);
                snap_close(&s);
            } else {
                refused++;
                CHECK_EQ(err, -SCRY_E_BAD_SNAPSHOT);
            }
        }
    }
    CHECK(accepted > 0 && refused > 0);
    free(b);
    free(good);
}

/* Specific damage behind valid checksums, each with the message that names it. */
static void test_semantic_errors(void)
{
    size_t len;
    uint8_t *good = small_snapshot(&len);
    if (!good)
        return;
    uint8_t *b = malloc(len + 64);
    struct snap s;
    uint64_t l = 0, off;
    struct {
        uint32_t chunk;
        uint64_t at; /* offset in the chunk; UINT64_MAX: special */
        uint32_t value;
        const char *message;
    } cases[] = {
        {SNAP_CHUNK_EDGE, 8, 1, "object 0's edges start at 1"},
        {SNAP_CHUNK_OBJS, 28, 0, "is not after"},                /* object 1 below object 0 */
        {SNAP_CHUNK_OBJS, 16, 999999, "type string 999999"},
        {SNAP_CHUNK_ROOT, 0, 5000, "names object 5000"},
        {SNAP_CHUNK_META, 36, 77777, "python version string 77777"},
        {SNAP_CHUNK_STRS, 12, 7, "string 0 is not empty"},
        {SNAP_CHUNK_META, 4, 0, "did not capture contents"},     /* capture flag off, CONT full */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(b, good, len);
        off = chunk_off(b, cases[i].chunk, &l);
        CHECK(off != 0);
        set32(b + off + cases[i].at, cases[i].value);
        refresh_crcs(b, len);
        CHECK_EQ(snap_open_buffer(b, len, "damaged", &s), -SCRY_E_BAD_SNAPSHOT);
        if (!strstr(err_last_message(), cases[i].message))
            tl_fail(__FILE__, __LINE__, "case %zu: \"%s\" does not say \"%s\"", i,
                    err_last_message(), cases[i].message);
    }
    /* An edge target out of range: the first target after first[]. */
    memcpy(b, good, len);
    off = chunk_off(b, SNAP_CHUNK_EDGE, &l);
    uint32_t nobj = get32(b + off), nedges = get32(b + off + 4);
    CHECK(nedges > 0);
    set32(b + off + 8 + 4 * ((uint64_t)nobj + 1), nobj);
    refresh_crcs(b, len);
    CHECK_EQ(snap_open_buffer(b, len, "damaged", &s), -SCRY_E_BAD_SNAPSHOT);
    CHECK(strstr(err_last_message(), "edge 0 targets object 12 but there are 12 objects") != NULL);
    /* A kind out of range: the last byte of the chunk. */
    memcpy(b, good, len);
    b[off + l - 1] = 8;
    refresh_crcs(b, len);
    CHECK_EQ(snap_open_buffer(b, len, "damaged", &s), -SCRY_E_BAD_SNAPSHOT);
    CHECK(strstr(err_last_message(), "kind 8") != NULL);
    /* A checksum mismatch names the chunk and its offset. */
    memcpy(b, good, len);
    off = chunk_off(b, SNAP_CHUNK_OBJS, &l);
    b[off + 3] ^= 1;
    CHECK_EQ(snap_open_buffer(b, len, "damaged", &s), -SCRY_E_BAD_SNAPSHOT);
    char want[80];
    snprintf(want, sizeof(want), "chunk OBJS: checksum");
    CHECK(strstr(err_last_message(), want) != NULL);
    snprintf(want, sizeof(want), "at offset %llu", (unsigned long long)off);
    CHECK(strstr(err_last_message(), want) != NULL);
    free(b);
    free(good);
}

/* Rebuilds an image with an extra chunk of the given type before the directory. */
static uint8_t *with_extra_chunk(const uint8_t *good, size_t len, uint32_t type,
                                 const void *data, size_t dlen, size_t *out_len)
{
    uint64_t dir = get64(good + 24);
    uint32_t n = get32(good + 32);
    uint64_t last_end = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = good + dir + 24 * i;
        last_end = get64(e + 8) + get64(e + 16);
    }
    uint64_t at = (last_end + 7) & ~7ull;
    uint64_t ndir = (at + dlen + 7) & ~7ull;
    size_t total = ndir + 24 * ((size_t)n + 1);
    uint8_t *b = calloc(1, total);
    memcpy(b, good, last_end);
    memcpy(b + at, data, dlen);
    memcpy(b + ndir, good + dir, 24 * (size_t)n);
    uint8_t *e = b + ndir + 24 * n;
    set32(e, type);
    set64(e + 8, at);
    set64(e + 16, dlen);
    set64(b + 16, total);
    set64(b + 24, ndir);
    set32(b + 32, n + 1);
    refresh_crcs(b, total);
    (void)len;
    *out_len = total;
    return b;
}

/* ARNA (1.4) names ALOC's stacks: a file with ARNA and no ALOC is refused. */
static void test_arenas_need_samples(void)
{
    size_t len, blen;
    uint8_t *good = small_snapshot(&len);
    if (!good)
        return;
    uint8_t rec[SNAP_ARNA_SIZE] = {0};
    set64(rec, 0x7f0000000000ull);
    set64(rec + 8, 1 << 20);
    set32(rec + 16, 0xffffffffu);
    uint8_t *b = with_extra_chunk(good, len, SNAP_CHUNK_ARNA, rec, sizeof(rec), &blen);
    struct snap s;
    CHECK_EQ(snap_open_buffer(b, blen, "arna", &s), -SCRY_E_BAD_SNAPSHOT);
    CHECK(strstr(err_last_message(), "chunk ARNA without an ALOC chunk") != NULL);
    err_clear();
    free(b);
    free(good);
}

static void test_compatibility(void)
{
    size_t len;
    uint8_t *good = small_snapshot(&len);
    if (!good)
        return;
    struct snap s;
    /* An unknown chunk is skipped (its checksum is still checked). */
    size_t l2;
    uint8_t *b = with_extra_chunk(good, len, SNAP_FOURCC('X', 'T', 'R', 'A'), "hello", 5, &l2);
    CHECK_EQ(snap_open_buffer(b, l2, "extra", &s), 0);
    CHECK_EQ(s.nchunks, 8);
    CHECK_EQ(snap_nobjects(&s), 12);
    snap_close(&s);
    b[get64(b + 24) - 8] ^= 1; /* "hello" starts 8 bytes before the directory */
    CHECK_EQ(snap_open_buffer(b, l2, "extra", &s), -SCRY_E_BAD_SNAPSHOT);
    free(b);
    /* A second known chunk is refused. */
    uint64_t rl = 0;
    uint64_t ro = chunk_off(good, SNAP_CHUNK_ROOT, &rl);
    b = with_extra_chunk(good, len, SNAP_CHUNK_ROOT, good + ro, rl, &l2);
    CHECK_EQ(snap_open_buffer(b, l2, "twice", &s), -SCRY_E_BAD_SNAPSHOT);
    CHECK(strstr(err_last_message(), "a second ROOT chunk") != NULL);
    free(b);

    b = malloc(len);
    /* A newer minor version is read. */
    memcpy(b, good, len);
    b[10] = 7;
    refresh_crcs(b, len);
    CHECK_EQ(snap_open_buffer(b, len, "minor", &s), 0);
    CHECK_EQ(s.minor, 7);
    snap_close(&s);
    /* A newer major version is refused, with the hint to upgrade. */
    b[8] = 2;
    refresh_crcs(b, len);
    CHECK_EQ(snap_open_buffer(b, len, "major", &s), -SCRY_E_BAD_SNAPSHOT);
    CHECK(strstr(err_last_message(), "format version 2.7 is newer") != NULL);
    CHECK(strstr(err_last_hint(), "upgrade scry") != NULL);
    b[8] = 0;
    refresh_crcs(b, len);
    CHECK_EQ(snap_open_buffer(b, len, "major", &s), -SCRY_E_BAD_SNAPSHOT);
    /* Without a valid header checksum the version is not believed. */
    memcpy(b, good, len);
    b[8] = 2;
    CHECK_EQ(snap_open_buffer(b, len, "major", &s), -SCRY_E_BAD_SNAPSHOT);
    CHECK(strstr(err_last_message(), "header checksum") != NULL);
    free(b);
    free(good);
}


/* The fuzz target's seeds: written to $SCRY_SNAPSHOT_SEEDS when set (to regenerate the corpus),
 * else to a temporary directory; each must open, and the committed corpus must be what the
 * writer produces now (a golden test: regenerate it when the format changes on purpose). */
static void test_write_seeds(void)
{
    const char *dir = getenv("SCRY_SNAPSHOT_SEEDS");
    if (!dir || !*dir)
        dir = tl_tmpdir();
    static const char *const names[] = {"small.heap", "tiny-no-contents.heap", "empty.heap",
                                        "allocations.heap"};
    enum { NSEEDS = sizeof(names) / sizeof(names[0]) };
    char path[NSEEDS][600];
    for (int i = 0; i < NSEEDS; i++)
        snprintf(path[i], sizeof(path[i]), "%s/%s", dir, names[i]);
    struct model m;
    CHECK_EQ(build(path[0], 12, &m, NULL), 0);
    model_free(&m);

    struct snap_writer *w;
    CHECK_EQ(snap_writer_open(path[1], &w), 0);
    CHECK_EQ(snap_add_object(w, 0x1000, "builtins.dict", 232, SNAP_OBJ_GC_TRACKED, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, 0x2000, "builtins.str", 58, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, 0x3000, "builtins.function", 160, 1, NULL, 0), 0);
    CHECK_EQ(snap_add_edge(w, 0x1000, 0x2000, SNAP_EDGE_DICT_KEY, NULL), 0);
    CHECK_EQ(snap_add_edge(w, 0x1000, 0x3000, SNAP_EDGE_DICT_VALUE, "['f']"), 0);
    CHECK_EQ(snap_add_edge(w, 0x3000, 0x1000, SNAP_EDGE_INTERNAL, ".__globals__"), 0);
    CHECK_EQ(snap_add_edge(w, 0x3000, 0x2000, SNAP_EDGE_ATTR | SNAP_EDGE_INFERRED,
                           ".<inferred +24>"), 0);
    CHECK_EQ(snap_add_root(w, 0x1000, "sys.modules['__main__'].__dict__"), 0);
    CHECK_EQ(snap_add_location(w, 0x3000, "app.py", 10), 0);
    struct snap_meta meta = test_meta;
    meta.capture_contents = false;
    snap_set_meta(w, &meta);
    CHECK_EQ(snap_writer_close(w, NULL), 0);

    CHECK_EQ(snap_writer_open(path[2], &w), 0);
    CHECK_EQ(snap_writer_close(w, NULL), 0);

    /* ALOC, BUFS and ARNA (1.4), as record --allocations writes them */
    CHECK_EQ(snap_writer_open(path[3], &w), 0);
    CHECK_EQ(snap_add_object(w, 0x1000, "builtins.dict", 232, SNAP_OBJ_GC_TRACKED, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, 0x2000, "builtins.list", 8056, SNAP_OBJ_GC_TRACKED, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, 0x20004030, "builtins.tuple", 56, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_edge(w, 0x1000, 0x2000, SNAP_EDGE_DICT_VALUE, "['L']"), 0);
    CHECK_EQ(snap_add_edge(w, 0x2000, 0x20004030, SNAP_EDGE_INDEX, "[0]"), 0);
    CHECK_EQ(snap_add_root(w, 0x1000, "sys.modules['__main__'].__dict__"), 0);
    meta.c_samples_only = true;
    snap_set_meta(w, &meta);
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "<module>", 3), 0);
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "fill", 9), 0);
    CHECK_EQ(snap_add_alloc_stack(w, 0, 2), 0);
    CHECK_EQ(snap_add_alloc_sample(w, 0x9000, 8000, 65536, 0), 0);
    CHECK_EQ(snap_add_alloc_sample(w, 0xa000, 4096, 65536, UINT32_MAX), 0);
    CHECK_EQ(snap_add_buffer(w, 0x2000, 0x9008, 8000), 0);
    CHECK_EQ(snap_add_arena(w, 0x20000000, 1 << 20, 0), 0);
    snap_set_alloc_info(w, 65536, 1);
    CHECK_EQ(snap_writer_close(w, NULL), 0);

    for (int i = 0; i < NSEEDS; i++) {
        struct snap s;
        CHECK_EQ(snap_open(path[i], &s), 0);
        snap_close(&s);
        char committed[600];
        snprintf(committed, sizeof(committed), "tests/fuzz/corpus/snapshot/%s", names[i]);
        size_t a_len, b_len;
        uint8_t *a = read_all(committed, &a_len);
        uint8_t *b = read_all(path[i], &b_len);
        if (a && b && (a_len != b_len || memcmp(a, b, a_len) != 0))
            tl_fail(__FILE__, __LINE__,
                    "%s differs from what the writer writes now; if the format changed on "
                    "purpose: SCRY_SNAPSHOT_SEEDS=tests/fuzz/corpus/snapshot "
                    "build/tests/test_snapshot test_write_seeds",
                    committed);
        free(a);
        free(b);
    }
}

/* Type names and labels given as ids (snap_intern) make the same file as given as texts; an id
 * the writer did not give is refused. */
static void test_ids(void)
{
    char path[2][600];
    uint8_t *data[2];
    size_t len[2];
    for (int i = 0; i < 2; i++) {
        snprintf(path[i], sizeof(path[i]), "%s/ids%d.heap", tl_tmpdir(), i);
        struct snap_writer *w;
        CHECK_EQ(snap_writer_open(path[i], &w), 0);
        if (i == 0) {
            CHECK_EQ(snap_add_object(w, 0x1000, "builtins.dict", 232, 1, NULL, 0), 0);
            CHECK_EQ(snap_add_edge(w, 0x1000, 0x2000, SNAP_EDGE_DICT_VALUE, "['f']"), 0);
            CHECK_EQ(snap_add_object(w, 0x2000, "builtins.str", 58, 0, NULL, 0), 0);
            CHECK_EQ(snap_add_edge(w, 0x2000, 0x1000, SNAP_EDGE_ATTR, ".x"), 0);
            CHECK_EQ(snap_add_object(w, 0x3000, "builtins.str", 50, 0, NULL, 0), 0);
            CHECK_EQ(snap_add_edge(w, 0x3000, 0x1000, SNAP_EDGE_ATTR, ".x"), 0);
        } else {
            uint32_t dict, f, str, x;
            CHECK_EQ(snap_intern(w, "builtins.dict", &dict), 0);
            CHECK_EQ(snap_add_object_id(w, 0x1000, dict, 232, 1, NULL, 0), 0);
            CHECK_EQ(snap_intern(w, "['f']", &f), 0);
            CHECK_EQ(snap_add_edge_id(w, 0x1000, 0x2000, SNAP_EDGE_DICT_VALUE, f), 0);
            CHECK_EQ(snap_intern(w, "builtins.str", &str), 0);
            CHECK_EQ(snap_add_object_id(w, 0x2000, str, 58, 0, NULL, 0), 0);
            CHECK_EQ(snap_intern(w, ".x", &x), 0);
            CHECK_EQ(snap_add_edge_id(w, 0x2000, 0x1000, SNAP_EDGE_ATTR, x), 0);
            CHECK_EQ(snap_add_object_id(w, 0x3000, str, 50, 0, NULL, 0), 0);
            CHECK_EQ(snap_add_edge_id(w, 0x3000, 0x1000, SNAP_EDGE_ATTR, x), 0);
            CHECK_EQ(snap_add_edge_id(w, 0x3000, 0x1000, SNAP_EDGE_ATTR, x + 100),
                     -SCRY_E_INTERNAL);
            CHECK_EQ(snap_add_object_id(w, 0x4000, x + 1, 50, 0, NULL, 0), -SCRY_E_INTERNAL);
        }
        snap_set_meta(w, &test_meta);
        CHECK_EQ(snap_writer_close(w, NULL), 0);
        data[i] = read_all(path[i], &len[i]);
        CHECK(data[i] != NULL);
    }
    CHECK(data[0] && data[1] && len[0] == len[1] && memcmp(data[0], data[1], len[0]) == 0);
    free(data[0]);
    free(data[1]);
}

/* Inferred edges (1.1): the writer lists them in INFR and keeps their kind; the reader finds
 * them, refuses a damaged list, and reads a 1.0 file (no INFR) as before. */
static void test_inferred(void)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/inferred.heap", tl_tmpdir());
    struct snap_writer *w;
    CHECK_EQ(snap_writer_open(path, &w), 0);
    for (uint64_t a = 1; a <= 4; a++)
        CHECK_EQ(snap_add_object(w, a * 0x1000, "t", 10, 0, NULL, 0), 0);
    /* From 0x4000 first: the CSR order differs from the order given. */
    CHECK_EQ(snap_add_edge(w, 0x4000, 0x1000, SNAP_EDGE_ATTR | SNAP_EDGE_INFERRED, "i1"), 0);
    CHECK_EQ(snap_add_edge(w, 0x1000, 0x2000, SNAP_EDGE_ATTR, "a"), 0);
    CHECK_EQ(snap_add_edge(w, 0x1000, 0x3000, SNAP_EDGE_INDEX | SNAP_EDGE_INFERRED, "i2"), 0);
    CHECK_EQ(snap_add_edge(w, 0x1000, 0x9000, SNAP_EDGE_ATTR | SNAP_EDGE_INFERRED, "gone"), 0);
    CHECK_EQ(snap_add_edge(w, 0x2000, 0x3000, 9, "bad"), -SCRY_E_INTERNAL);
    snap_writer_abort(w);
    CHECK_EQ(snap_writer_open(path, &w), 0);
    for (uint64_t a = 1; a <= 4; a++)
        CHECK_EQ(snap_add_object(w, a * 0x1000, "t", 10, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_edge(w, 0x4000, 0x1000, SNAP_EDGE_ATTR | SNAP_EDGE_INFERRED, "i1"), 0);
    CHECK_EQ(snap_add_edge(w, 0x1000, 0x2000, SNAP_EDGE_ATTR, "a"), 0);
    CHECK_EQ(snap_add_edge(w, 0x1000, 0x3000, SNAP_EDGE_INDEX | SNAP_EDGE_INFERRED, "i2"), 0);
    CHECK_EQ(snap_add_edge(w, 0x1000, 0x9000, SNAP_EDGE_ATTR | SNAP_EDGE_INFERRED, "gone"), 0);
    snap_set_meta(w, &test_meta);
    CHECK_EQ(snap_writer_close(w, NULL), 0);
    struct snap s;
    CHECK_EQ(snap_open(path, &s), 0);
    CHECK_EQ(s.minor, SNAP_MINOR);
    CHECK_EQ(s.nedges, 3);
    CHECK_EQ(s.ninferred, 2);
    /* object 0 (0x1000): edges 0 (a) and 1 (i2); object 3 (0x4000): edge 2 (i1) */
    CHECK(!snap_edge_inferred(&s, 0));
    CHECK(snap_edge_inferred(&s, 1));
    CHECK(snap_edge_inferred(&s, 2));
    CHECK_EQ(snap_edge_kind(&s, 1), SNAP_EDGE_INDEX);
    CHECK_EQ(snap_edge_kind(&s, 2), SNAP_EDGE_ATTR);
    CHECK_STR(snap_string(&s, snap_edge_label(&s, 1)), "i2");
    snap_close(&s);

    size_t len, il = 0;
    uint8_t *b = read_all(path, &len);
    CHECK(b != NULL);
    if (b) {
        uint64_t io = chunk_off(b, SNAP_CHUNK_INFR, &il);
        CHECK_EQ(il, 8);
        uint32_t v = 1; /* not increasing: 1, 1 */
        memcpy(b + io + 4, &v, 4);
        refresh_crcs(b, len);
        CHECK_EQ(snap_open_buffer(b, len, "infr", &s), -SCRY_E_BAD_SNAPSHOT);
        CHECK(strstr(err_last_message(), "chunk INFR") != NULL);
        v = 3; /* past the last edge */
        memcpy(b + io + 4, &v, 4);
        refresh_crcs(b, len);
        CHECK_EQ(snap_open_buffer(b, len, "infr", &s), -SCRY_E_BAD_SNAPSHOT);
        free(b);
    }
    /* A snapshot written by 1.0 (kept in the fuzz corpus) reads, with no inferred edge. */
    CHECK_EQ(snap_open("tests/fuzz/corpus/snapshot/small-1.0.heap", &s), 0);
    CHECK_EQ(s.minor, 0);
    CHECK_EQ(s.ninferred, 0);
    CHECK(s.nedges > 0 && !snap_edge_inferred(&s, 0));
    snap_close(&s);
}

static const struct tl_test tests[] = {
    TL(test_inferred),
    TL(test_ids),
    TL(test_arenas_need_samples),
    TL(test_crc32),
    TL(test_roundtrip),
    TL(test_empty_snapshot),
    TL(test_writer_errors),
    TL(test_open_errors),
    TL(test_every_flip_and_truncation),
    TL(test_flips_behind_valid_checksums),
    TL(test_semantic_errors),
    TL(test_compatibility),
    TL(test_write_seeds),
};

TL_MAIN(tests)
