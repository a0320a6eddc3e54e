/* The size of a block of Python's allocator on a free-threaded build (3.13t), where that
 * allocator is the mimalloc CPython vendors (Objects/mimalloc): the heap's net counts Python's
 * blocks by these sizes, at allocation and at free, instead of the mappings under them
 * (mimalloc maps large areas and fills and purges their pages itself: their resident pages
 * lag behind and run ahead of what the program holds). docs/agent-protocol.md, "Memory".
 *
 * A block's size is read from mimalloc's own metadata, as its mi_usable_size does (static in
 * the interpreter, so not callable): the segment is the block's address rounded down to the
 * segment size; the slice of the segment that holds the address points back (slice_offset,
 * bytes) to its page's slice, which is the page (mi_slice_t is mi_page_t), whose xblock_size is
 * the size of each of its blocks; a huge block (xblock_size AG_MI_HUGE_BLOCK_SIZE) is its
 * segment's size. Every address the wrapped allocator hands out or frees is inside a block of
 * one of its segments, whose header is mapped and written while the block lives: the reads are
 * plain loads, no lock, no call (they run on the allocator's path).
 *
 * The layout (mimalloc_layout.h) is 3.13's release build, checked against its headers by the
 * tests (tests/e2e/test_layout_headers.py; the reading itself: tests/unit/test_mimalloc_sizes.c),
 * and at run time by probing the allocator (ag_mi_sizes_probe) before its blocks count.
 * A build whose blocks do not read right (a debug build's padded pages, another minor version)
 * is not profiled for memory. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "agent/memory.h"
#include "agent/mimalloc_layout.h"
#include "common/hashmap.h"

bool ag_mi_by_block;

#define MI_SLICES_PER_SEGMENT (1u << (AG_MI_SEGMENT_SHIFT - AG_MI_SLICE_SHIFT))

/* Blocks above AG_MI_SMALL_OBJ_SIZE_MAX count the pages their request spans, not their size
 * class (a 1 MiB + 1 request takes a 1.5 MiB block, whose tail is never touched, so never
 * resident): what each counted is kept here by address, so that its free takes back the same.
 * A block that finds no room counts its size class, at both ends. Lock-free, open addressing. */
#define BIG_SLOTS (1u << 15)
#define BIG_PROBES 32
#define BIG_TOMB UINT64_MAX
static struct big_block {
    _Atomic uint64_t addr;
    _Atomic uint64_t bytes;
} *big;

bool ag_mi_layout_known(int minor)
{
    return minor == 13 && sizeof(void *) == 8;
}

int ag_mi_sizes_init(void)
{
    if (!big)
        big = ag_real_mmap(BIG_SLOTS * sizeof(*big));
    return big ? 0 : -1;
}

/* The slice of p's segment that holds p (idx: its index there). */
static const unsigned char *slice_of(const void *p, uintptr_t *idx)
{
    uintptr_t seg = (uintptr_t)p & ~(((uintptr_t)1 << AG_MI_SEGMENT_SHIFT) - 1);
    *idx = ((uintptr_t)p - seg) >> AG_MI_SLICE_SHIFT;
    return (const unsigned char *)seg + AG_MI_SEG_SLICES + *idx * AG_MI_SLICE_SIZE;
}

static uint32_t slice_back(const unsigned char *slice)
{
    uint32_t back;
    memcpy(&back, slice + AG_MI_PAGE_SLICE_OFFSET, sizeof back);
    return back;
}

static uint64_t block_size(const void *p)
{
    uintptr_t idx;
    const unsigned char *slice = slice_of(p, &idx);
    uint32_t bsize;
    memcpy(&bsize, slice - slice_back(slice) + AG_MI_PAGE_XBLOCK_SIZE, sizeof bsize);
    if (bsize < AG_MI_HUGE_BLOCK_SIZE)
        return bsize;
    uint64_t segment_size;
    const unsigned char *seg = slice - AG_MI_SEG_SLICES - idx * AG_MI_SLICE_SIZE;
    memcpy(&segment_size, seg + AG_MI_SEG_SEGMENT_SIZE, sizeof segment_size);
    return segment_size;
}

/* A block of n bytes from the allocator reads as a block of n or a little more (mimalloc's size
 * classes are four to a doubling: 200000 bytes take a 262144-byte block), and its page's slice
 * lies in the segment's header. */
bool ag_mi_sizes_probe(const void *p, uint64_t n)
{
    if (!p)
        return false;
    uintptr_t idx;
    uint32_t back = slice_back(slice_of(p, &idx));
    if (idx >= MI_SLICES_PER_SEGMENT || back % AG_MI_SLICE_SIZE || back / AG_MI_SLICE_SIZE > idx)
        return false;
    uint64_t got = block_size(p);
    return got >= n && got <= n + n / 2 + 64;
}

static size_t big_index(uint64_t addr)
{
    return (size_t)(hm_hash64(addr >> 4) & (BIG_SLOTS - 1));
}

/* Remembers bytes for the block at addr (a stale entry of a block freed unseen is replaced). */
static bool remember(uint64_t addr, uint64_t bytes)
{
    size_t i = big_index(addr);
    struct big_block *free_slot = NULL;
    for (int k = 0; k < BIG_PROBES; k++, i = (i + 1) & (BIG_SLOTS - 1)) {
        uint64_t cur = atomic_load_explicit(&big[i].addr, memory_order_acquire);
        if (cur == addr) {
            atomic_store_explicit(&big[i].bytes, bytes, memory_order_release);
            return true;
        }
        if ((cur == 0 || cur == BIG_TOMB) && !free_slot)
            free_slot = &big[i];
        if (cur == 0)
            break;
    }
    if (!free_slot)
        return false;
    /* Only the block's free reads its bytes, and that comes after this allocation returned. */
    uint64_t cur = atomic_load_explicit(&free_slot->addr, memory_order_relaxed);
    if ((cur != 0 && cur != BIG_TOMB) ||
        !atomic_compare_exchange_strong(&free_slot->addr, &cur, addr))
        return false; /* taken meanwhile by another thread's block */
    atomic_store_explicit(&free_slot->bytes, bytes, memory_order_release);
    return true;
}

/* What the block at addr counted, taken out of the table (0: not there). */
static uint64_t forget(uint64_t addr)
{
    size_t i = big_index(addr);
    for (int k = 0; k < BIG_PROBES; k++, i = (i + 1) & (BIG_SLOTS - 1)) {
        uint64_t cur = atomic_load_explicit(&big[i].addr, memory_order_acquire);
        if (cur == 0)
            return 0;
        if (cur != addr)
            continue;
        uint64_t bytes = atomic_load_explicit(&big[i].bytes, memory_order_relaxed);
        return atomic_compare_exchange_strong(&big[i].addr, &cur, BIG_TOMB) ? bytes : 0;
    }
    return 0;
}

uint64_t ag_mi_alloc_bytes(const void *p, uint64_t n)
{
    uint64_t size = block_size(p);
    if (size <= AG_MI_SMALL_OBJ_SIZE_MAX)
        return size;
    uint64_t pages = (n + 4095) & ~(uint64_t)4095;
    if (pages > size)
        pages = size;
    return remember((uint64_t)(uintptr_t)p, pages) ? pages : size;
}

uint64_t ag_mi_free_bytes(const void *p)
{
    uint64_t size = block_size(p);
    if (size <= AG_MI_SMALL_OBJ_SIZE_MAX)
        return size;
    uint64_t had = forget((uint64_t)(uintptr_t)p);
    return had ? had : size;
}

void ag_mi_keep_bytes(const void *p, uint64_t bytes)
{
    if (block_size(p) > AG_MI_SMALL_OBJ_SIZE_MAX && bytes)
        (void)remember((uint64_t)(uintptr_t)p, bytes);
}
