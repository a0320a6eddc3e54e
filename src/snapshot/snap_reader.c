/* The snapshot reader: maps the file and checks every rule of docs/snapshot-format.md ("What a
 * reader checks") before handing out a struct snap, so that its accessors need no checks.
 *
 * Sections: errors; the frame (header, directory, tiling, checksums); the chunks; open/close;
 * lookups. */
#include "snapshot/snap_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/cursor.h"
#include "common/error.h"
#include "platform/infile.h"

/* ---- errors ---------------------------------------------------------------------------------- */

struct vctx {
    struct snap *s;
    const char *name;
    struct cursor file; /* the whole file */
};

/* Records "<name>: <what>, at offset <off>" as a bad_snapshot error. */
static int bad(const struct vctx *v, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(const struct vctx *v, uint64_t off, const char *fmt, ...)
{
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return err_fail(SCRY_E_BAD_SNAPSHOT, "%s: %s, at offset %llu", v->name, what,
                    (unsigned long long)off);
}

static const char *chunk_name(uint32_t type, char buf[8])
{
    for (int i = 0; i < 4; i++) {
        char ch = (char)((type >> (8 * i)) & 0xff);
        buf[i] = (ch >= 0x21 && ch <= 0x7e) ? ch : '?';
    }
    buf[4] = 0;
    return buf;
}

static uint64_t align8(uint64_t x) { return (x + (SNAP_CHUNK_ALIGN - 1)) & ~(uint64_t)7; }

/* ---- the frame ------------------------------------------------------------------------------- */

enum {
    K_META, K_STRS, K_OBJS, K_EDGE, K_ROOT, K_LOCS, K_CONT, K_INFR, K_ALOC, K_BUFS, K_ARNA,
    K__COUNT
};
static const uint32_t known_types[K__COUNT] = {
    SNAP_CHUNK_META, SNAP_CHUNK_STRS, SNAP_CHUNK_OBJS, SNAP_CHUNK_EDGE, SNAP_CHUNK_ROOT,
    SNAP_CHUNK_LOCS, SNAP_CHUNK_CONT, SNAP_CHUNK_INFR, SNAP_CHUNK_ALOC, SNAP_CHUNK_BUFS,
    SNAP_CHUNK_ARNA,
};

struct span {
    bool present;
    uint64_t off, len;
};

/* Zero padding in [from, to). */
static int check_padding(struct vctx *v, uint64_t from, uint64_t to)
{
    struct cursor c = cur_sub(&v->file, from, to - from);
    for (uint64_t at = from; at < to; at++)
        if (cur_u8(&c) != 0)
            return bad(v, at, "padding byte is not zero");
    return 0;
}

static int check_frame(struct vctx *v, struct span spans[K__COUNT])
{
    struct snap *s = v->s;
    struct cursor *c = &v->file;
    size_t size = s->size;
    if (size == 0)
        return bad(v, 0, "file is empty (not a scry heap snapshot, or truncated)");
    if (size < 8 || memcmp(cur_bytes(c, 8), SNAP_MAGIC, 8) != 0)
        return bad(v, 0, "not a scry heap snapshot (no '%s' magic)", SNAP_MAGIC);
    if (size < SNAP_HEADER_SIZE)
        return bad(v, size, "file is %zu bytes, shorter than the %d-byte header (truncated?)",
                   size, SNAP_HEADER_SIZE);
    cur_seek(c, SNAP_HEADER_CRC_OFF);
    uint32_t want = cur_u32(c);
    uint32_t got = (uint32_t)crc32_z(0, s->base, SNAP_HEADER_CRC_OFF);
    if (want != got)
        return bad(v, SNAP_HEADER_CRC_OFF, "header checksum 0x%08x does not match its bytes (0x%08x)",
                   want, got);
    cur_seek(c, 8);
    s->major = cur_u16(c);
    s->minor = cur_u16(c);
    if (s->major > SNAP_MAJOR) {
        char what[160];
        snprintf(what, sizeof(what), "format version %u.%u is newer than this scry reads (%d.x)",
                 s->major, s->minor, SNAP_MAJOR);
        return err_fail_hint(SCRY_E_BAD_SNAPSHOT, "upgrade scry to read it",
                             "%s: %s, at offset 8", v->name, what);
    }
    if (s->major == 0)
        return bad(v, 8, "format version 0.%u does not exist", s->minor);
    cur_u32(c); /* flags: none defined in 1.x */
    uint64_t file_size = cur_u64(c);
    uint64_t dir_offset = cur_u64(c);
    uint32_t nchunks = cur_u32(c);
    uint32_t dir_crc = cur_u32(c);
    if (file_size != size)
        return bad(v, 16, "file is %zu bytes but its header says %llu (%s)", size,
                   (unsigned long long)file_size, size < file_size ? "truncated" : "extended");
    if (nchunks > SNAP_MAX_CHUNKS)
        return bad(v, 32, "%u chunks (at most %d)", nchunks, SNAP_MAX_CHUNKS);
    if (dir_offset < SNAP_HEADER_SIZE || dir_offset > size ||
        size - dir_offset != (uint64_t)nchunks * SNAP_DIR_ENTRY_SIZE)
        return bad(v, 24, "the directory of %u chunks at offset %llu does not end the file", nchunks,
                   (unsigned long long)dir_offset);
    got = (uint32_t)crc32_z(0, s->base + dir_offset, size - dir_offset);
    if (got != dir_crc)
        return bad(v, dir_offset, "directory checksum 0x%08x does not match its bytes (0x%08x)",
                   dir_crc, got);

    s->nchunks = nchunks;
    s->chunks = calloc(nchunks ? nchunks : 1, sizeof(*s->chunks));
    if (!s->chunks)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading %s", v->name);
    uint64_t end = SNAP_HEADER_SIZE;
    char nb[8];
    for (uint32_t i = 0; i < nchunks; i++) {
        uint64_t at = dir_offset + (uint64_t)i * SNAP_DIR_ENTRY_SIZE;
        cur_seek(c, at);
        struct snap_chunk_info *ci = &s->chunks[i];
        ci->type = cur_u32(c);
        ci->crc = cur_u32(c);
        ci->offset = cur_u64(c);
        ci->length = cur_u64(c);
        if (!cur_ok(c))
            return bad(v, c->fail_off, "directory entry %u is cut short", i);
        const char *name = chunk_name(ci->type, nb);
        if (ci->offset != align8(end))
            return bad(v, at + 8, "chunk %u (%s) starts at %llu, expected %llu", i, name,
                       (unsigned long long)ci->offset, (unsigned long long)align8(end));
        if (ci->offset > dir_offset || ci->length > dir_offset - ci->offset)
            return bad(v, at + 16, "chunk %u (%s) of %llu bytes at %llu runs into the directory",
                       i, name, (unsigned long long)ci->length, (unsigned long long)ci->offset);
        int err = check_padding(v, end, ci->offset);
        if (err)
            return err;
        got = (uint32_t)crc32_z(0, s->base + ci->offset, ci->length);
        if (got != ci->crc)
            return bad(v, ci->offset, "chunk %s: checksum 0x%08x does not match its bytes (0x%08x)",
                       name, ci->crc, got);
        for (int k = 0; k < K__COUNT; k++) {
            if (known_types[k] != ci->type)
                continue;
            if (spans[k].present)
                return bad(v, at, "a second %s chunk", name);
            spans[k] = (struct span){true, ci->offset, ci->length};
        }
        end = ci->offset + ci->length;
    }
    if (align8(end) != dir_offset)
        return bad(v, 24, "the directory starts at %llu, expected %llu",
                   (unsigned long long)dir_offset, (unsigned long long)align8(end));
    int err = check_padding(v, end, dir_offset);
    if (err)
        return err;
    for (int k = 0; k < K__COUNT; k++)
        if (!spans[k].present && known_types[k] != SNAP_CHUNK_CONT &&
            known_types[k] != SNAP_CHUNK_INFR && known_types[k] != SNAP_CHUNK_ALOC &&
            known_types[k] != SNAP_CHUNK_BUFS && known_types[k] != SNAP_CHUNK_ARNA)
            return bad(v, dir_offset, "no %s chunk", chunk_name(known_types[k], nb));
    return 0;
}

/* ---- the chunks ------------------------------------------------------------------------------ */

static int check_strings(struct vctx *v, const struct span *sp)
{
    struct snap *s = v->s;
    struct cursor c = cur_sub(&v->file, sp->off, sp->len);
    uint32_t n = cur_u32(&c);
    uint32_t blob_len = cur_u32(&c);
    if (!cur_ok(&c))
        return bad(v, sp->off, "chunk STRS: %llu bytes, too short for its counts",
                   (unsigned long long)sp->len);
    if (n == 0 || n == UINT32_MAX)
        return bad(v, sp->off, "chunk STRS: %u strings (string 0 must exist)", n);
    uint64_t need = 8 + 4 * ((uint64_t)n + 1) + blob_len;
    if (need != sp->len)
        return bad(v, sp->off, "chunk STRS is %llu bytes but %u strings in %u bytes take %llu",
                   (unsigned long long)sp->len, n, blob_len, (unsigned long long)need);
    uint64_t blob_at = sp->off + 8 + 4 * ((uint64_t)n + 1);
    struct cursor blob = cur_sub(&v->file, blob_at, blob_len);
    uint32_t prev = cur_u32(&c);
    if (prev != 0)
        return bad(v, sp->off + 8, "chunk STRS: string 0 starts at %u, not 0", prev);
    for (uint32_t i = 0; i < n; i++) {
        size_t at = c.off;
        uint32_t next = cur_u32(&c);
        if (next <= prev || next > blob_len)
            return bad(v, sp->off + at, "chunk STRS: string %u ends at %u, not within (%u, %u]", i,
                       next, prev, blob_len);
        if (i == 0 && next != 1)
            return bad(v, sp->off + at, "chunk STRS: string 0 is not empty");
        cur_seek(&blob, next - 1);
        if (cur_u8(&blob) != 0)
            return bad(v, blob_at + next - 1, "chunk STRS: string %u is not NUL-terminated", i);
        prev = next;
    }
    if (prev != blob_len)
        return bad(v, sp->off + 8 + 4 * (uint64_t)n, "chunk STRS: strings end at %u, blob at %u",
                   prev, blob_len);
    if (!cur_ok(&c) || !cur_ok(&blob))
        return bad(v, sp->off, "chunk STRS: cut short");
    s->nstrings = n;
    s->str_off = (const uint32_t *)(s->base + sp->off + 8);
    s->str_blob = (const char *)(s->base + blob_at);
    return 0;
}

static int check_meta(struct vctx *v, const struct span *sp)
{
    struct snap *s = v->s;
    if (sp->len < SNAP_META_SIZE_1_0)
        return bad(v, sp->off, "chunk META is %llu bytes, at least %d expected",
                   (unsigned long long)sp->len, SNAP_META_SIZE_1_0);
    struct cursor c = cur_sub(&v->file, sp->off, sp->len);
    struct snap_meta_info *m = &s->meta;
    m->pid = cur_u32(&c);
    uint32_t flags = cur_u32(&c);
    m->capture_contents = flags & SNAP_META_CONTENTS;
    m->c_samples_only = flags & SNAP_META_C_SAMPLES_ONLY;
    m->rss_bytes = cur_u64(&c);
    m->dump_time_us = cur_i64(&c);
    m->pause_us = cur_u64(&c);
    m->max_str = cur_u32(&c);
    size_t at_py = c.off;
    uint32_t py = cur_u32(&c);
    uint32_t tool = cur_u32(&c);
    cur_u32(&c);
    m->dropped_edges = cur_u64(&c);
    m->duplicate_objects = cur_u64(&c);
    m->dropped_roots = cur_u32(&c);
    m->dropped_locations = cur_u32(&c);
    if (!cur_ok(&c))
        return bad(v, sp->off + c.fail_off, "chunk META: cut short");
    if (py >= s->nstrings)
        return bad(v, sp->off + at_py, "chunk META: python version string %u of %u", py,
                   s->nstrings);
    if (tool >= s->nstrings)
        return bad(v, sp->off + at_py + 4, "chunk META: tool version string %u of %u", tool,
                   s->nstrings);
    m->python_version = snap_string(s, py);
    m->tool_version = snap_string(s, tool);
    return 0;
}

static int check_objects(struct vctx *v, const struct span *sp)
{
    struct snap *s = v->s;
    if (sp->len % SNAP_OBJ_SIZE)
        return bad(v, sp->off, "chunk OBJS is %llu bytes, not a multiple of %d",
                   (unsigned long long)sp->len, SNAP_OBJ_SIZE);
    uint64_t n = sp->len / SNAP_OBJ_SIZE;
    if (n >= UINT32_MAX)
        return bad(v, sp->off, "chunk OBJS: %llu objects (at most 2^32 - 2)",
                   (unsigned long long)n);
    struct cursor c = cur_sub(&v->file, sp->off, sp->len);
    uint64_t prev = 0, total = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t at = c.off;
        uint64_t addr = cur_u64(&c);
        uint64_t size = cur_u64(&c);
        uint32_t type = cur_u32(&c);
        cur_u32(&c); /* flags: unknown bits are ignored */
        if (addr == 0 || addr <= prev)
            return bad(v, sp->off + at,
                       "chunk OBJS: object %llu at 0x%llx is not after 0x%llx (objects are sorted "
                       "by address, none at 0)",
                       (unsigned long long)i, (unsigned long long)addr, (unsigned long long)prev);
        if (type >= s->nstrings)
            return bad(v, sp->off + at + 16, "chunk OBJS: object %llu has type string %u of %u",
                       (unsigned long long)i, type, s->nstrings);
        total = total + size < total ? UINT64_MAX : total + size;
        prev = addr;
    }
    if (!cur_ok(&c))
        return bad(v, sp->off + c.fail_off, "chunk OBJS: cut short");
    s->nobjects = (uint32_t)n;
    s->objects = (const struct snap_object *)(s->base + sp->off);
    s->shallow_total = total;
    return 0;
}

static int check_edges(struct vctx *v, const struct span *sp)
{
    struct snap *s = v->s;
    struct cursor c = cur_sub(&v->file, sp->off, sp->len);
    uint32_t nobj = cur_u32(&c);
    uint32_t nedges = cur_u32(&c);
    if (!cur_ok(&c))
        return bad(v, sp->off, "chunk EDGE: %llu bytes, too short for its counts",
                   (unsigned long long)sp->len);
    if (nobj != s->nobjects)
        return bad(v, sp->off, "chunk EDGE: for %u objects, but OBJS has %u", nobj, s->nobjects);
    uint64_t need = 8 + 4 * ((uint64_t)nobj + 1) + 9 * (uint64_t)nedges;
    if (need != sp->len)
        return bad(v, sp->off + 4, "chunk EDGE is %llu bytes but %u objects and %u edges take %llu",
                   (unsigned long long)sp->len, nobj, nedges, (unsigned long long)need);
    uint32_t prev = cur_u32(&c);
    if (prev != 0)
        return bad(v, sp->off + 8, "chunk EDGE: object 0's edges start at %u, not 0", prev);
    for (uint32_t i = 0; i < nobj; i++) {
        size_t at = c.off;
        uint32_t next = cur_u32(&c);
        if (next < prev || next > nedges)
            return bad(v, sp->off + at, "chunk EDGE: object %u's edges end at %u, not within "
                       "[%u, %u]", i, next, prev, nedges);
        prev = next;
    }
    if (prev != nedges)
        return bad(v, sp->off + 8 + 4 * (uint64_t)nobj, "chunk EDGE: the last object's edges end "
                   "at %u, not at %u", prev, nedges);
    size_t targets_at = c.off;
    for (uint32_t e = 0; e < nedges; e++) {
        uint32_t t = cur_u32(&c);
        if (t >= nobj)
            return bad(v, sp->off + targets_at + 4 * (uint64_t)e,
                       "chunk EDGE: edge %u targets object %u but there are %u objects", e, t,
                       nobj);
    }
    size_t labels_at = c.off;
    for (uint32_t e = 0; e < nedges; e++) {
        uint32_t l = cur_u32(&c);
        if (l >= s->nstrings)
            return bad(v, sp->off + labels_at + 4 * (uint64_t)e,
                       "chunk EDGE: edge %u has label string %u of %u", e, l, s->nstrings);
    }
    size_t kinds_at = c.off;
    const uint8_t *kinds = cur_bytes(&c, nedges);
    if (!cur_ok(&c))
        return bad(v, sp->off + c.fail_off, "chunk EDGE: cut short");
    for (uint32_t e = 0; e < nedges; e++)
        if (kinds[e] > SNAP_EDGE_KIND_MAX)
            return bad(v, sp->off + kinds_at + e, "chunk EDGE: edge %u has kind %u (at most %d)",
                       e, kinds[e], SNAP_EDGE_KIND_MAX);
    s->nedges = nedges;
    s->edge_first = (const uint32_t *)(s->base + sp->off + 8);
    s->edge_target = (const uint32_t *)(s->base + sp->off + targets_at);
    s->edge_label = (const uint32_t *)(s->base + sp->off + labels_at);
    s->edge_kind = s->base + sp->off + kinds_at;
    return 0;
}

/* INFR (1.1): indexes of inferred edges, strictly increasing, each below nedges. */
static int check_allocations(struct vctx *v, const struct span *sp)
{
    struct snap *s = v->s;
    if (!sp->present)
        return 0;
    struct cursor c = cur_sub(&v->file, sp->off, sp->len);
    uint64_t window = cur_u64(&c);
    uint32_t ns = cur_u32(&c), nst = cur_u32(&c), nf = cur_u32(&c), zero = cur_u32(&c);
    uint64_t dropped = cur_u64(&c);
    if (!cur_ok(&c))
        return bad(v, sp->off, "chunk ALOC: %llu bytes, too short for its header",
                   (unsigned long long)sp->len);
    uint64_t need = SNAP_ALOC_HEADER_SIZE + (uint64_t)ns * SNAP_ALOC_SAMPLE_SIZE +
                    (uint64_t)nst * SNAP_ALOC_STACK_SIZE + (uint64_t)nf * SNAP_ALOC_FRAME_SIZE;
    if (need != sp->len || zero != 0)
        return bad(v, sp->off, "chunk ALOC is %llu bytes but %u samples, %u stacks and %u frames "
                               "take %llu (or its reserved field is not 0)",
                   (unsigned long long)sp->len, ns, nst, nf, (unsigned long long)need);
    const uint8_t *at = s->base + sp->off + SNAP_ALOC_HEADER_SIZE;
    s->alloc_samples = (const struct snap_alloc_sample *)at;
    s->alloc_stacks = (const struct snap_alloc_stack *)(at + (uint64_t)ns * SNAP_ALOC_SAMPLE_SIZE);
    s->alloc_frames = (const struct snap_alloc_frame *)((const uint8_t *)s->alloc_stacks +
                                                        (uint64_t)nst * SNAP_ALOC_STACK_SIZE);
    for (uint32_t i = 0; i < ns; i++) {
        const struct snap_alloc_sample *a = &s->alloc_samples[i];
        if ((a->stack != SNAP_NONE && a->stack >= nst) || a->zero != 0)
            return bad(v, (uint64_t)((const uint8_t *)a - s->base),
                       "chunk ALOC: sample %u names stack %u of %u", i, a->stack, nst);
    }
    for (uint32_t i = 0; i < nst; i++) {
        const struct snap_alloc_stack *k = &s->alloc_stacks[i];
        if ((uint64_t)k->first + k->depth > nf)
            return bad(v, (uint64_t)((const uint8_t *)k - s->base),
                       "chunk ALOC: stack %u runs past the %u frames", i, nf);
    }
    for (uint32_t i = 0; i < nf; i++) {
        const struct snap_alloc_frame *f = &s->alloc_frames[i];
        if (f->file >= s->nstrings || f->func >= s->nstrings)
            return bad(v, (uint64_t)((const uint8_t *)f - s->base),
                       "chunk ALOC: frame %u names a string beyond the %u strings", i,
                       s->nstrings);
    }
    s->has_allocations = true;
    s->alloc_window = window;
    s->alloc_dropped = dropped;
    s->nalloc_samples = ns;
    s->nalloc_stacks = nst;
    s->nalloc_frames = nf;
    return 0;
}

/* BUFS (1.3): blocks in increasing address order, each of an object, reserved fields 0. */
static int check_buffers(struct vctx *v, const struct span *sp)
{
    struct snap *s = v->s;
    if (!sp->present)
        return 0;
    if (sp->len % SNAP_BUF_SIZE || sp->len / SNAP_BUF_SIZE >= UINT32_MAX)
        return bad(v, sp->off, "chunk BUFS is %llu bytes: not %d per block",
                   (unsigned long long)sp->len, SNAP_BUF_SIZE);
    const struct snap_buffer *b = (const struct snap_buffer *)(s->base + sp->off);
    uint32_t n = (uint32_t)(sp->len / SNAP_BUF_SIZE);
    for (uint32_t i = 0; i < n; i++)
        if (b[i].object >= s->nobjects || b[i].zero != 0 || (i && b[i].addr < b[i - 1].addr))
            return bad(v, sp->off + (uint64_t)i * SNAP_BUF_SIZE,
                       "chunk BUFS: block %u is out of order, of no object or has a reserved "
                       "field that is not 0",
                       i);
    s->buffers = b;
    s->nbuffers = n;
    return 0;
}

/* ARNA (1.4): arenas in increasing address order, not overlapping, each naming a stack of
 * ALOC (or none), reserved fields 0; only with ALOC. */
static int check_arenas(struct vctx *v, const struct span *sp)
{
    struct snap *s = v->s;
    if (!sp->present)
        return 0;
    if (!s->has_allocations)
        return bad(v, sp->off, "chunk ARNA without an ALOC chunk");
    if (sp->len % SNAP_ARNA_SIZE || sp->len / SNAP_ARNA_SIZE >= UINT32_MAX)
        return bad(v, sp->off, "chunk ARNA is %llu bytes: not %d per arena",
                   (unsigned long long)sp->len, SNAP_ARNA_SIZE);
    const struct snap_arena *a = (const struct snap_arena *)(s->base + sp->off);
    uint32_t n = (uint32_t)(sp->len / SNAP_ARNA_SIZE);
    for (uint32_t i = 0; i < n; i++)
        if ((a[i].stack != SNAP_NONE && a[i].stack >= s->nalloc_stacks) || a[i].zero != 0 ||
            a[i].size == 0 || a[i].addr + a[i].size < a[i].addr ||
            (i && a[i].addr < a[i - 1].addr + a[i - 1].size))
            return bad(v, sp->off + (uint64_t)i * SNAP_ARNA_SIZE,
                       "chunk ARNA: arena %u is empty, out of order, overlaps the one before, "
                       "names no stack or has a reserved field that is not 0",
                       i);
    s->arenas = a;
    s->narenas = n;
    return 0;
}

static int check_inferred(struct vctx *v, const struct span *sp)
{
    struct snap *s = v->s;
    if (!sp->present)
        return 0;
    if (sp->len % 4 || sp->len / 4 > s->nedges)
        return bad(v, sp->off, "chunk INFR is %llu bytes: not 4 per edge of at most %u",
                   (unsigned long long)sp->len, s->nedges);
    struct cursor c = cur_sub(&v->file, sp->off, sp->len);
    uint32_t n = (uint32_t)(sp->len / 4), prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t e = cur_u32(&c);
        if (e >= s->nedges || (i > 0 && e <= prev))
            return bad(v, sp->off + 4 * (uint64_t)i,
                       "chunk INFR: entry %u names edge %u (edges below %u, increasing)", i, e,
                       s->nedges);
        prev = e;
    }
    s->ninferred = n;
    s->inferred = (const uint32_t *)(s->base + sp->off);
    return 0;
}

/* ROOT, LOCS and CONT: records of u32 fields, the first an object index, the others string ids
 * except LOCS's line; sorted: object indexes strictly increasing. */
static int check_records(struct vctx *v, const struct span *sp, const char *name, unsigned size,
                         bool sorted, uint32_t *count)
{
    struct snap *s = v->s;
    *count = 0;
    if (!sp->present)
        return 0;
    if (sp->len % size)
        return bad(v, sp->off, "chunk %s is %llu bytes, not a multiple of %u", name,
                   (unsigned long long)sp->len, size);
    uint64_t n = sp->len / size;
    if (n >= UINT32_MAX)
        return bad(v, sp->off, "chunk %s: %llu records (at most 2^32 - 2)", name,
                   (unsigned long long)n);
    struct cursor c = cur_sub(&v->file, sp->off, sp->len);
    uint64_t prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t at = c.off;
        uint32_t obj = cur_u32(&c);
        uint32_t str = cur_u32(&c);
        if (size == SNAP_LOC_SIZE)
            cur_u32(&c); /* the line: any value */
        if (obj >= s->nobjects)
            return bad(v, sp->off + at, "chunk %s: record %llu names object %u of %u", name,
                       (unsigned long long)i, obj, s->nobjects);
        if (sorted && i > 0 && obj <= prev)
            return bad(v, sp->off + at,
                       "chunk %s: record %llu names object %u after object %llu (sorted, one "
                       "per object)",
                       name, (unsigned long long)i, obj, (unsigned long long)prev);
        if (str >= s->nstrings)
            return bad(v, sp->off + at + 4, "chunk %s: record %llu names string %u of %u", name,
                       (unsigned long long)i, str, s->nstrings);
        prev = obj;
    }
    if (!cur_ok(&c))
        return bad(v, sp->off + c.fail_off, "chunk %s: cut short", name);
    *count = (uint32_t)n;
    return 0;
}

static int validate(struct vctx *v)
{
    struct span spans[K__COUNT] = {{0}};
    struct snap *s = v->s;
    int err;
    if ((err = check_frame(v, spans)) || (err = check_strings(v, &spans[K_STRS])) ||
        (err = check_meta(v, &spans[K_META])) || (err = check_objects(v, &spans[K_OBJS])) ||
        (err = check_edges(v, &spans[K_EDGE])) || (err = check_inferred(v, &spans[K_INFR])) ||
        (err = check_allocations(v, &spans[K_ALOC])) || (err = check_buffers(v, &spans[K_BUFS])) ||
        (err = check_arenas(v, &spans[K_ARNA])) ||
        (err = check_records(v, &spans[K_ROOT], "ROOT", SNAP_ROOT_SIZE, false, &s->nroots)) ||
        (err = check_records(v, &spans[K_LOCS], "LOCS", SNAP_LOC_SIZE, true, &s->nlocations)) ||
        (err = check_records(v, &spans[K_CONT], "CONT", SNAP_CONT_SIZE, true, &s->ncontents)))
        return err;
    if (s->ncontents && !s->meta.capture_contents)
        return bad(v, spans[K_CONT].off,
                   "chunk CONT holds %u contents but the dump did not capture contents",
                   s->ncontents);
    s->roots = (const struct snap_root *)(s->base + spans[K_ROOT].off);
    s->locations = (const struct snap_location *)(s->base + spans[K_LOCS].off);
    s->contents = spans[K_CONT].present ? (const struct snap_content *)(s->base + spans[K_CONT].off)
                                        : NULL;
    return 0;
}

/* ---- open/close ------------------------------------------------------------------------------ */

static int open_validated(struct snap *s, const char *name)
{
    struct vctx v = {.s = s, .name = name};
    cur_init(&v.file, s->base, s->size);
    int err = validate(&v);
    if (err)
        snap_close(s);
    return err;
}

int snap_open(const char *path, struct snap *out)
{
    memset(out, 0, sizeof(*out));
    /* Regular files only (a FIFO would block the open); mapped, so no cap on the size. */
    int fd;
    uint64_t fsize;
    int err = infile_open(path, "snapshot", 0, &fd, &fsize);
    if (err)
        return err;
    if (fsize > 0) {
        if (fsize > SIZE_MAX) {
            close(fd);
            return err_fail(SCRY_E_TOO_LARGE, "%s is too large to map", path);
        }
        void *p = mmap(NULL, (size_t)fsize, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return err_fail(SCRY_E_IO, "cannot map %s: %s", path, strerror(e));
        }
        out->base = p;
        out->size = (size_t)fsize;
        out->mapped = true;
    }
    close(fd);
    err = open_validated(out, path);
    /* Validation read every page (the checksums); an analysis touches only some of them. */
    if (!err)
        snap_release_pages(out);
    return err;
}

void snap_release_pages(const struct snap *s)
{
    /* Clean pages of a read-only file mapping: they stay in the page cache and come back from
     * the file on the next touch (docs/PERFORMANCE.md: analyze's bytes per object). */
    if (s->mapped && s->base && s->size)
        madvise((void *)s->base, s->size, MADV_DONTNEED);
}

int snap_open_buffer(const void *data, size_t len, const char *name, struct snap *out)
{
    memset(out, 0, sizeof(*out));
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading %s", name);
    if (len)
        memcpy(copy, data, len);
    out->base = copy;
    out->size = len;
    return open_validated(out, name);
}

void snap_close(struct snap *s)
{
    if (s->base) {
        if (s->mapped)
            munmap((void *)s->base, s->size);
        else
            free((void *)s->base);
    }
    free(s->chunks);
    memset(s, 0, sizeof(*s));
}

/* ---- lookups --------------------------------------------------------------------------------- */

uint32_t snap_find(const struct snap *s, uint64_t addr)
{
    uint32_t lo = 0, hi = s->nobjects;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint64_t a = s->objects[mid].addr;
        if (a == addr)
            return mid;
        if (a < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SNAP_NONE;
}

bool snap_location(const struct snap *s, uint32_t object, const char **file, uint32_t *line)
{
    uint32_t lo = 0, hi = s->nlocations;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const struct snap_location *l = &s->locations[mid];
        if (l->object == object) {
            *file = snap_string(s, l->file);
            *line = l->line;
            return true;
        }
        if (l->object < object)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

bool snap_edge_inferred(const struct snap *s, uint32_t e)
{
    uint32_t lo = 0, hi = s->ninferred;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->inferred[mid] == e)
            return true;
        if (s->inferred[mid] < e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

bool snap_content(const struct snap *s, uint32_t object, const char **data, size_t *len)
{
    uint32_t lo = 0, hi = s->ncontents;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const struct snap_content *ct = &s->contents[mid];
        if (ct->object == object) {
            *data = snap_string_len(s, ct->string, len);
            return true;
        }
        if (ct->object < object)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}
