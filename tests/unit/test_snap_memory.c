/* Unit tests of the snapshot code's memory. The writer, while a walk feeds it (snap_spill.h): the
 * objects and references of a large snapshot go to the temporary file block by block, so the
 * writer's own allocations (counted by malloc's statistics, not RSS) stay bounded however many are
 * added; the snapshot written from the spilled blocks holds exactly what was given. An output
 * written in place (a device) keeps its blocks in memory. The reader: once a mapped snapshot is
 * validated, none of its pages is left in the process (the kernel's count for that mapping). */
#include <fcntl.h>
#include <stdbool.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "snapshot/snap_reader.h"
#include "snapshot/snap_spill.h"
#include "snapshot/snap_writer.h"
#include "testlib.h"

#define NOBJ 400000u /* 9.6 MB of object records, 19 MB of references: many blocks */
#define BASE 0x7f0000100000ull
#define STRIDE 48u

static uint64_t addr_of(uint32_t i)
{
    /* Objects added in an order that is not the address order, as a walk adds them. */
    uint32_t j = (uint32_t)(((uint64_t)i * 7919u) % NOBJ);
    return BASE + (uint64_t)j * STRIDE;
}

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* Each object i: a "t<i%5>" type, size 32 + i%7, two references (to the next object and to
 * object 0) and one to an address that is no object (dropped). Returns the writer's growth in
 * bytes of malloc'd memory between the first and the last add. */
static size_t fill(struct snap_writer *w)
{
    static const char *types[] = {"t0", "t1", "t2", "t3", "t4"};
    static const char *labels[] = {"next", "head"};
    size_t before = heap_in_use();
    for (uint32_t i = 0; i < NOBJ; i++) {
        uint64_t a = addr_of(i);
        CHECK_EQ(snap_add_object(w, a, types[i % 5], 32 + i % 7, 0, NULL, 0), 0);
        CHECK_EQ(snap_add_edge(w, a, addr_of((i + 1) % NOBJ), SNAP_EDGE_ATTR, labels[0]), 0);
        CHECK_EQ(snap_add_edge(w, a, addr_of(0), SNAP_EDGE_ATTR, labels[1]), 0);
        CHECK_EQ(snap_add_edge(w, a, a + 8, SNAP_EDGE_ATTR, NULL), 0);
    }
    CHECK_EQ(snap_add_root(w, addr_of(0), "sys.modules"), 0);
    size_t after = heap_in_use();
    return after > before ? after - before : 0;
}

static void check_snapshot(const char *path)
{
    struct snap s;
    int err = snap_open(path, &s);
    CHECK_EQ(err, 0);
    if (err)
        return;
    CHECK_EQ(snap_nobjects(&s), NOBJ);
    uint64_t edges = 0;
    for (uint32_t k = 0; k < snap_nobjects(&s); k++) {
        const struct snap_object *o = snap_object(&s, k);
        CHECK_EQ_U64(o->addr, BASE + (uint64_t)k * STRIDE); /* sorted by address */
        uint32_t b, e;
        snap_edges(&s, k, &b, &e);
        edges += e - b;
        if (e - b != 2) {
            CHECK_EQ(e - b, 2);
            break;
        }
        CHECK_STR(snap_string(&s, snap_edge_label(&s, b)), "next");
        CHECK_STR(snap_string(&s, snap_edge_label(&s, b + 1)), "head");
        CHECK_EQ_U64(snap_object(&s, snap_edge_target(&s, b + 1))->addr, addr_of(0));
    }
    CHECK_EQ_U64(edges, 2ull * NOBJ);
    /* object i's "next" is object i+1's address: check a few through the index */
    for (uint32_t i = 0; i < NOBJ; i += 9973) {
        uint32_t k = snap_find(&s, addr_of(i));
        uint32_t b, e;
        snap_edges(&s, k, &b, &e);
        CHECK_EQ_U64(snap_object(&s, snap_edge_target(&s, b))->addr, addr_of((i + 1) % NOBJ));
        CHECK_EQ(snap_object(&s, k)->size, 32 + i % 7);
    }
    snap_close(&s);
}

/* The bound: two blocks (objects, references) being filled, the list of blocks, the strings;
 * the records themselves (29 MB here) are in the file. */
static void test_writer_memory_stays_bounded_while_adding(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/big.heap", tl_tmpdir());
    struct snap_writer *w;
    CHECK_EQ(snap_writer_open(path, &w), 0);
    size_t grew = fill(w);
    CHECK(grew < 4u * SNAP_SPILL_BLOCK);
    if (grew >= 4u * SNAP_SPILL_BLOCK)
        fprintf(stderr, "the writer grew by %zu bytes while adding\n", grew);
    struct snap_write_stats st;
    CHECK_EQ(snap_writer_close(w, &st), 0);
    CHECK_EQ_U64(st.objects, NOBJ);
    CHECK_EQ_U64(st.edges, 2ull * NOBJ);
    CHECK_EQ_U64(st.dropped_edges, NOBJ);
    struct stat sb;
    CHECK_EQ(stat(path, &sb), 0);
    CHECK_EQ_U64((uint64_t)sb.st_size, st.file_bytes); /* the spilled blocks cut off */
    check_snapshot(path);
}

/* Written in place (a device): nothing to read back, so the blocks stay in memory. */
static void test_writer_in_place_keeps_blocks_in_memory(void)
{
    if (TL_UNDER_ASAN) { /* it counts resident pages, which the sanitizer's shadow changes */
        printf("  skipped under AddressSanitizer\n");
        return;
    }
    struct snap_writer *w;
    CHECK_EQ(snap_writer_open("/dev/null", &w), 0);
    size_t grew = fill(w);
    CHECK(grew > 16u * SNAP_SPILL_BLOCK); /* held in memory: the records' size */
    struct snap_write_stats st;
    CHECK_EQ(snap_writer_close(w, &st), 0);
    CHECK_EQ_U64(st.objects, NOBJ);
    CHECK_EQ_U64(st.edges, 2ull * NOBJ);
    CHECK_EQ_U64(st.dropped_edges, NOBJ);
}

static void test_reader_leaves_no_pages_after_validation(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/resident.heap", tl_tmpdir());
    struct snap_writer *w;
    CHECK_EQ(snap_writer_open(path, &w), 0);
    fill(w);
    CHECK_EQ(snap_writer_close(w, NULL), 0);
    struct snap s;
    int err = snap_open(path, &s);
    CHECK_EQ(err, 0);
    if (err)
        return;
    CHECK(s.size > 8u << 20);
    long kb = tl_mapping_rss_kb(s.base);
    CHECK(kb >= 0 && kb < 64); /* was the whole file: every page read by the checksums */
    if (kb >= 64)
        fprintf(stderr, "%ld kB of the %zu-byte snapshot resident after open\n", kb, s.size);
    CHECK_EQ_U64(snap_object(&s, 7)->addr, BASE + 7 * STRIDE); /* still readable */
    snap_close(&s);
}

/* A block changed and stored goes back to where it was read from. */
static void store_and_load(int fd)
{
    uint64_t end = 100; /* bytes before it belong to someone else */
    struct snap_spill s;
    snap_spill_init(&s, sizeof(uint64_t), fd, &end);
    uint64_t n = 3 * (SNAP_SPILL_BLOCK / 8) + 5;
    for (uint64_t i = 0; i < n; i++)
        CHECK_EQ(snap_spill_push(&s, &i), 0);
    CHECK_EQ(snap_spill_flush(&s), 0);
    CHECK_EQ(s.nblocks, 4);
    CHECK_EQ_U64(end, fd >= 0 ? 100 + 8 * n : 100);
    if (fd >= 0)
        CHECK(snap_spill_held(&s) <= SNAP_SPILL_BLOCK + 4096);
    else
        CHECK(snap_spill_held(&s) >= 4 * SNAP_SPILL_BLOCK);
    uint64_t *scratch = malloc(SNAP_SPILL_BLOCK);
    for (size_t b = 0; b < s.nblocks; b++) {
        size_t k;
        uint64_t *v = snap_spill_load(&s, b, scratch, &k);
        for (size_t i = 0; i < k; i++)
            v[i] *= 2;
        CHECK_EQ(snap_spill_store(&s, b, v), 0);
    }
    uint64_t want = 0, bad = 0;
    for (size_t b = 0; b < s.nblocks; b++) {
        size_t k;
        uint64_t *v = snap_spill_load(&s, b, scratch, &k);
        for (size_t i = 0; i < k; i++, want++)
            bad += v[i] != 2 * want;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ_U64(want, n);
    free(scratch);
    snap_spill_free(&s);
}

static void test_spill_block_store_and_load(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/spill", tl_tmpdir());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    store_and_load(fd);
    close(fd);
    store_and_load(-1);
}

static const struct tl_test tests[] = {
    TL(test_writer_memory_stays_bounded_while_adding),
    TL(test_writer_in_place_keeps_blocks_in_memory),
    TL(test_spill_block_store_and_load),
    TL(test_reader_leaves_no_pages_after_validation),
};

TL_MAIN(tests)
