/* Fuzz target: arbitrary bytes as a heap snapshot. Each input is opened twice: as it is, through
 * a temporary file and snap_open (the mmap path `scry check` and `scry analyze` take), and with
 * its checksums recomputed, through snap_open_buffer, so that mutations reach the checks behind
 * the checksums too. Whatever is accepted is walked completely (every object, edge, label, root,
 * location, content, lookup): validation at open must make every later access safe, and ASan
 * checks that it does. A refused input must be refused with bad_snapshot.
 * Seeds (tests/fuzz/corpus/snapshot/) are written by the unit test:
 *   SCRY_SNAPSHOT_SEEDS=tests/fuzz/corpus/snapshot build/tests/test_snapshot test_write_seeds */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/error.h"
#include "snapshot/snap_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t walk(const struct snap *s)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < snap_nobjects(s); i++) {
        const struct snap_object *o = snap_object(s, i);
        sum += o->addr + o->size + o->flags + strlen(snap_type_name(s, i));
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
        if (snap_content(s, i, &data, &len) && len)
            sum += (uint8_t)data[0] + (uint8_t)data[len - 1];
        if (snap_find(s, o->addr) != i)
            abort();
    }
    for (uint32_t i = 0; i < snap_nroots(s); i++)
        sum += snap_object(s, snap_root(s, i)->object)->size +
               strlen(snap_string(s, snap_root(s, i)->label));
    for (uint32_t i = 0; i < snap_nlocations(s); i++)
        sum += snap_location_at(s, i)->line;
    for (uint32_t i = 0; i < s->nstrings; i++) {
        size_t len;
        const char *p = snap_string_len(s, i, &len);
        if (p[len] != 0)
            abort();
    }
    for (uint32_t i = 0; i < s->nalloc_samples; i++) {
        const struct snap_alloc_sample *a = &s->alloc_samples[i];
        sum += a->addr + a->size + a->weight;
        if (a->stack != SNAP_NONE)
            sum += s->alloc_stacks[a->stack].depth;
    }
    for (uint32_t i = 0; i < s->nalloc_stacks; i++) {
        const struct snap_alloc_stack *k = &s->alloc_stacks[i];
        for (uint32_t d = 0; d < k->depth; d++) {
            const struct snap_alloc_frame *f = &s->alloc_frames[k->first + d];
            sum += strlen(snap_string(s, f->file)) + strlen(snap_string(s, f->func)) + f->line;
        }
    }
    for (uint32_t i = 0; i < s->nbuffers; i++)
        sum += s->buffers[i].addr + snap_object(s, s->buffers[i].object)->size;
    for (uint32_t i = 0; i < s->narenas; i++)
        sum += s->arenas[i].addr + s->arenas[i].size +
               (s->arenas[i].stack != SNAP_NONE ? s->alloc_stacks[s->arenas[i].stack].first : 0);
    return sum + strlen(snap_meta(s)->python_version) + strlen(snap_meta(s)->tool_version);
}

static void check(int err, const struct snap *s)
{
    if (err == 0)
        walk(s);
    else if (err != -SCRY_E_BAD_SNAPSHOT && err != -SCRY_E_NO_MEMORY)
        abort();
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void set32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

/* What a writer would have computed, wherever the (untrusted) directory lets us. */
static void refresh_crcs(uint8_t *b, size_t len)
{
    if (len < SNAP_HEADER_SIZE)
        return;
    uint64_t dir = get64(b + 24);
    uint32_t n;
    memcpy(&n, b + 32, 4);
    if (dir <= len && n <= (len - dir) / SNAP_DIR_ENTRY_SIZE) {
        for (uint32_t i = 0; i < n; i++) {
            uint8_t *e = b + dir + (size_t)SNAP_DIR_ENTRY_SIZE * i;
            uint64_t off = get64(e + 8), l = get64(e + 16);
            if (off <= len && l <= len - off)
                set32(e + 4, (uint32_t)crc32_z(0, b + off, l));
        }
        set32(b + 36, (uint32_t)crc32_z(0, b + dir, (size_t)SNAP_DIR_ENTRY_SIZE * n));
    }
    set32(b + SNAP_HEADER_CRC_OFF, (uint32_t)crc32_z(0, b, SNAP_HEADER_CRC_OFF));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof(path), "/tmp/fuzz-snapshot-%ld.heap", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (f) {
        size_t w = fwrite(data, 1, size, f);
        if (fclose(f) == 0 && w == size) {
            struct snap s;
            int err = snap_open(path, &s);
            check(err, &s);
            snap_close(&s);
        }
        unlink(path);
    }

    uint8_t *b = malloc(size ? size : 1);
    if (!b)
        return 0;
    memcpy(b, data, size);
    refresh_crcs(b, size);
    struct snap s;
    int err = snap_open_buffer(b, size, "fuzz", &s);
    check(err, &s);
    snap_close(&s);
    free(b);
    return 0;
}
