/* Unit tests for the sizes of Python's blocks on a free-threaded build (src/agent/
 * mimalloc_sizes.c), read from a hand-made mimalloc segment laid out as 3.13t's
 * (src/agent/mimalloc_layout.h, itself checked against the headers by
 * tests/e2e/test_layout_headers.py): small blocks by their page's size class, through the
 * slices that point back to their page; huge blocks by their segment; blocks above 16 KiB by the
 * pages their request spans, taken back exactly at their free, also when the table is full. */
#include <stdlib.h>
#include <string.h>

#include "agent/memory.h"
#include "agent/mimalloc_layout.h"
#include "testlib.h"

#define SEGMENT (1ULL << AG_MI_SEGMENT_SHIFT)
#define SLICE (1ULL << AG_MI_SLICE_SHIFT)

void *ag_real_mmap(size_t len)
{
    return calloc(1, len);
}

static unsigned char *segment(void)
{
    static unsigned char *seg;
    if (!seg) {
        seg = aligned_alloc(SEGMENT, SEGMENT);
        memset(seg, 0, AG_MI_SEG_SLICES + 512 * AG_MI_SLICE_SIZE);
    }
    return seg;
}

/* Slices first..last make one page of blocks of bsize. */
static void page(unsigned first, unsigned last, uint32_t bsize)
{
    unsigned char *s = segment() + AG_MI_SEG_SLICES;
    for (unsigned i = first; i <= last; i++) {
        uint32_t back = (uint32_t)((i - first) * AG_MI_SLICE_SIZE);
        memcpy(s + i * AG_MI_SLICE_SIZE + AG_MI_PAGE_SLICE_OFFSET, &back, sizeof back);
    }
    memcpy(s + first * AG_MI_SLICE_SIZE + AG_MI_PAGE_XBLOCK_SIZE, &bsize, sizeof bsize);
}

static const void *at(unsigned slice, uint64_t off)
{
    return segment() + slice * SLICE + off;
}

static void test_small_blocks(void)
{
    CHECK_EQ(ag_mi_sizes_init(), 0);
    page(1, 3, 32);
    CHECK_EQ_U64(ag_mi_alloc_bytes(at(1, 64), 24), 32);
    CHECK_EQ_U64(ag_mi_alloc_bytes(at(3, 4096), 30), 32); /* through the slice's back offset */
    CHECK_EQ_U64(ag_mi_free_bytes(at(3, 4096)), 32);
    CHECK(ag_mi_sizes_probe(at(2, 160), 24));
    page(5, 5, 4096);
    CHECK(!ag_mi_sizes_probe(at(5, 0), 24)); /* a block far above the request: not this layout */
    CHECK(!ag_mi_sizes_probe(at(2, 160), 40)); /* smaller than asked */
    CHECK(!ag_mi_sizes_probe(NULL, 24));
}

static void test_large_blocks_count_their_pages(void)
{
    CHECK_EQ(ag_mi_sizes_init(), 0);
    page(8, 40, 1572864); /* 1 MiB + 1 takes a 1.5 MiB block */
    const void *p = at(8, 0);
    CHECK_EQ_U64(ag_mi_alloc_bytes(p, 1048577), 1048576 + 4096);
    CHECK_EQ_U64(ag_mi_free_bytes(p), 1048576 + 4096);
    CHECK_EQ_U64(ag_mi_free_bytes(p), 1572864); /* no longer remembered: its size class */
    /* A realloc that failed keeps what the block counted. */
    CHECK_EQ_U64(ag_mi_alloc_bytes(p, 20000), 20480);
    uint64_t had = ag_mi_free_bytes(p);
    ag_mi_keep_bytes(p, had);
    CHECK_EQ_U64(ag_mi_free_bytes(p), 20480);
    /* A stale entry (a block freed unseen) is replaced by the next block at its address. */
    CHECK_EQ_U64(ag_mi_alloc_bytes(p, 20000), 20480);
    CHECK_EQ_U64(ag_mi_alloc_bytes(p, 40000), 40960);
    CHECK_EQ_U64(ag_mi_free_bytes(p), 40960);
}

static void test_huge_block_is_its_segment(void)
{
    CHECK_EQ(ag_mi_sizes_init(), 0);
    uint64_t size = 48ULL << 20;
    memcpy(segment() + AG_MI_SEG_SEGMENT_SIZE, &size, sizeof size);
    page(100, 101, AG_MI_HUGE_BLOCK_SIZE);
    const void *p = at(100, 0);
    CHECK(ag_mi_sizes_probe(p, 40ULL << 20));
    CHECK_EQ_U64(ag_mi_alloc_bytes(p, (40ULL << 20) + 1), (40ULL << 20) + 4096);
    CHECK_EQ_U64(ag_mi_free_bytes(p), (40ULL << 20) + 4096);
    CHECK_EQ_U64(ag_mi_free_bytes(p), size);
}

/* Many more large blocks than the table holds: each free takes back what its allocation added,
 * whether the table had room for it or not. */
static void test_full_table_stays_exact(void)
{
    CHECK_EQ(ag_mi_sizes_init(), 0);
    page(200, 500, 65536);
    enum { N = 40000 };
    static uint64_t added[N];
    uint64_t in = 0, out = 0, remembered = 0;
    for (unsigned i = 0; i < N; i++) {
        added[i] = ag_mi_alloc_bytes(at(200, (uint64_t)i * 256), 20000 + i % 7);
        in += added[i];
        remembered += added[i] == 20480;
    }
    CHECK(remembered > 20000 && remembered < N); /* the table filled up */
    for (unsigned i = 0; i < N; i++) {
        uint64_t got = ag_mi_free_bytes(at(200, (uint64_t)i * 256));
        if (got != added[i]) {
            tl_fail(__FILE__, __LINE__, "block %u: added %llu, took back %llu", i,
                    (unsigned long long)added[i], (unsigned long long)got);
            break;
        }
        out += got;
    }
    CHECK_EQ_U64(in, out);
}

static const struct tl_test tests[] = {
    TL(test_small_blocks), TL(test_large_blocks_count_their_pages),
    TL(test_huge_block_is_its_segment), TL(test_full_table_stays_exact),
};
TL_MAIN(tests)
