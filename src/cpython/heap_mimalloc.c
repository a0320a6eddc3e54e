/* The heap walker's seeds on a free-threaded build (3.13t), which has no GC lists: every object
 * that its own collector would visit, found the way gc_free_threading.c's gc_visit_heaps finds
 * them. Each thread state has a mimalloc heap for GC objects and one for GC objects with the
 * two-word pre-header (the object starts 16 bytes into its block); a heap's page queues list its
 * pages; a page's blocks follow one another from its start. Threads that exited left their
 * pages in segments of the interpreter's abandoned pool, where a page's tag names its heap.
 * A block holds an object unless it is on one of the free lists (its page's free, local_free
 * and xthread_free, its heap's thread_delayed_free) or lies past the page's capacity; the
 * object is a seed when its ob_gc_bits say it is tracked, as the collector's op_from_block
 * decides (frozen ones: gc.freeze, the permanent generation of the other builds).
 *
 * The collector first moves the free lists into one (it runs in the process, with the world
 * stopped); from outside they are read as they are, each checked block by block: a list that
 * leaves its page ends there. Every layout number is cpython/mimalloc_layout.h's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "cpython/heap_walk_int.h"
#include "cpython/mimalloc_layout.h"
#include "cpython/thread_list.h"

#define SEGMENT_SIZE (1ULL << PY_MI_SEGMENT_SHIFT)
#define SLICE_BYTES (1ULL << PY_MI_SLICE_SHIFT)
#define SLICES_PER_SEGMENT (SEGMENT_SIZE / SLICE_BYTES)
#define MAX_CAPACITY 65536u        /* capacity is a uint16_t */
#define MAX_LIST_STEPS (1u << 24)  /* pages in one queue, segments in one pool list */
#define MAX_DELAYED (1u << 22)     /* blocks on a heap's thread_delayed_free list */

struct ft_walk {
    struct hw *w;
    uint64_t *free_map; /* MAX_CAPACITY bits: the blocks of the page being read that are free */
    struct hashmap delayed; /* the heap's thread_delayed_free blocks */
    uint64_t pages, blocks, segments; /* read: pages, live blocks, abandoned segments (log) */
    uint64_t seeds;                   /* marked so far */
    int err;                          /* a thread's heaps' (thread_heaps) */
};

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* One block that is no free block: a seed when it holds a tracked object. */
static int seed_block(struct ft_walk *f, uint64_t obj)
{
    struct hw *w = f->w;
    uint8_t bits;
    f->blocks++;
    if (mc_read(&w->mc, obj + PY_FT_OB_GC_BITS, &bits, 1)) {
        w->st->unreadable++;
        return 0;
    }
    if (!(bits & PY_FT_GC_TRACKED))
        return 0;
    struct seen_page *p = hw_seen_page(&w->seen, obj, true);
    if (!p)
        return -SCRY_E_NO_MEMORY;
    if (hw_seen_get(p, obj) != SEEN_NEW)
        return 0; /* met already: a page listed twice */
    if (!hw_mark_seed(w, p, obj))
        return 0;
    f->seeds++;
    w->st->gc_tracked++;
    if (bits & PY_FT_GC_FROZEN)
        w->st->permanent++;
    return 0;
}

/* Marks in free_map the blocks of a free list (head: its first block) that lie in the page. */
static void mark_free(struct ft_walk *f, uint64_t head, uint64_t start, uint64_t bsize,
                      uint32_t capacity)
{
    uint64_t b = head;
    for (uint32_t n = 0; b && n < capacity; n++) {
        if (b < start || (b - start) % bsize || (b - start) / bsize >= capacity)
            return; /* not a block of this page: the list was being changed */
        uint64_t i = (b - start) / bsize;
        f->free_map[i >> 6] |= 1ULL << (i & 63);
        if (mc_read_u64(&f->w->mc, b, &b)) /* a free block's first word: the next one */
            return;
    }
}

/* The live blocks of one page (its address: its slice in the segment header); obj_offset: where
 * the object starts in its block. next: the page after it in its queue. */
static int visit_page(struct ft_walk *f, uint64_t page, uint64_t obj_offset, uint64_t *next)
{
    struct hw *w = f->w;
    uint8_t pg[PY_MI_SLICE_SIZE];
    *next = 0;
    if (mc_read(&w->mc, page, pg, sizeof(pg))) {
        w->st->unreadable++;
        return 0;
    }
    *next = rd64(pg + PY_MI_PAGE_NEXT);
    uint16_t capacity;
    memcpy(&capacity, pg + PY_MI_PAGE_CAPACITY, 2);
    uint32_t used = rd32(pg + PY_MI_PAGE_USED), xbsize = rd32(pg + PY_MI_PAGE_XBLOCK_SIZE);
    uint32_t nslices = rd32(pg + PY_MI_PAGE_SLICE_COUNT);
    uint64_t segment = page & ~(SEGMENT_SIZE - 1), slices = segment + PY_MI_SEG_SLICES;
    if (!used || !capacity)
        return 0;
    uint64_t idx = (page - slices) / PY_MI_SLICE_SIZE;
    if (page < slices || (page - slices) % PY_MI_SLICE_SIZE ||
        idx + nslices > SLICES_PER_SEGMENT || !nslices || xbsize < 8) {
        log_debug("heap walk: 0x%llx is no mimalloc page", (unsigned long long)page);
        w->st->unreadable++;
        *next = 0;
        return 0;
    }
    /* _mi_segment_page_start: small blocks start a few blocks into their page */
    uint64_t psize = nslices * SLICE_BYTES, skip = 0;
    if (xbsize <= 64)
        skip = 3ULL * xbsize;
    else if (xbsize <= 512)
        skip = xbsize;
    uint64_t bsize = xbsize >= PY_MI_HUGE_BLOCK_SIZE ? psize - skip : xbsize;
    uint64_t start = segment + idx * SLICE_BYTES + skip;
    if ((uint64_t)capacity * bsize > psize - skip) {
        w->st->unreadable++;
        return 0;
    }
    f->pages++;
    size_t words = ((size_t)capacity + 63) / 64;
    memset(f->free_map, 0, words * sizeof(uint64_t));
    mark_free(f, rd64(pg + PY_MI_PAGE_FREE), start, bsize, capacity);
    mark_free(f, rd64(pg + PY_MI_PAGE_LOCAL_FREE), start, bsize, capacity);
    mark_free(f, rd64(pg + PY_MI_PAGE_XTHREAD_FREE) & ~3ULL, start, bsize, capacity);
    uint64_t seeds = f->seeds;
    for (uint32_t i = 0; i < capacity; i++) {
        if (f->free_map[i >> 6] & (1ULL << (i & 63)))
            continue;
        uint64_t block = start + i * bsize;
        if (f->delayed.count && hm_has(&f->delayed, block))
            continue;
        int err = seed_block(f, block + obj_offset);
        if (err)
            return err;
    }
    /* The page is walked again for its seeds (hw_ft_walk_seeds): 32 bytes here instead of 16
     * per seed on the work stack. */
    if (f->seeds == seeds)
        return 0;
    if (w->nft_pages == w->capft_pages) {
        size_t nc = w->capft_pages ? w->capft_pages * 2 : 256;
        struct ft_page *np = realloc(w->ft_pages, nc * sizeof(*np));
        if (!np)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
        w->ft_pages = np;
        w->capft_pages = nc;
    }
    w->ft_pages[w->nft_pages++] = (struct ft_page){start, bsize, obj_offset, capacity};
    return 0;
}

/* A thread's heap: its delayed frees, then every page of its queues. */
static int visit_heap(struct ft_walk *f, uint64_t heap, uint64_t obj_offset, uint64_t thread_id)
{
    struct hw *w = f->w;
    uint8_t *h = malloc(PY_MI_HEAP_SIZE);
    int err = 0;
    if (!h)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
    if (mc_read(&w->mc, heap, h, PY_MI_HEAP_SIZE)) {
        w->st->unreadable++;
        goto out;
    }
    if (rd64(h + PY_MI_HEAP_THREAD_ID) != thread_id) {
        err = err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                       "the mimalloc heap at 0x%llx does not belong to its thread (0x%llx, not "
                       "0x%llx): this free-threaded build's layout is not 3.13.15t's",
                       (unsigned long long)heap, (unsigned long long)rd64(h + PY_MI_HEAP_THREAD_ID),
                       (unsigned long long)thread_id);
        goto out;
    }
    if (f->delayed.count)
        hm_clear(&f->delayed);
    uint64_t b = rd64(h + PY_MI_HEAP_DELAYED_FREE);
    for (uint32_t n = 0; b && n < MAX_DELAYED; n++) {
        if (hm_put(&f->delayed, b, 1)) {
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
            goto out;
        }
        if (mc_read_u64(&w->mc, b, &b))
            break;
    }
    for (int q = 0; q <= PY_MI_BIN_FULL && !err; q++) {
        uint64_t page = rd64(h + PY_MI_HEAP_PAGES + (uint64_t)q * PY_MI_QUEUE_SIZE);
        for (uint32_t n = 0; page && n < MAX_LIST_STEPS && !err; n++)
            err = visit_page(f, page, obj_offset, &page);
    }
out:
    free(h);
    return err;
}

/* The GC pages of an abandoned segment (their heap is their tag). */
static int visit_segment(struct ft_walk *f, uint64_t segment)
{
    struct hw *w = f->w;
    uint64_t entries;
    uint32_t first;
    f->segments++;
    if (mc_read_u64(&w->mc, segment + PY_MI_SEG_SLICE_ENTRIES, &entries) ||
        mc_read(&w->mc, segment + PY_MI_SEG_SLICES + PY_MI_PAGE_SLICE_COUNT, &first, 4)) {
        w->st->unreadable++;
        return 0;
    }
    if (entries > SLICES_PER_SEGMENT + 1)
        entries = SLICES_PER_SEGMENT + 1;
    /* mi_slices_start_iterate: the first span is the segment's own header */
    for (uint64_t s = first; s < entries;) {
        uint64_t page = segment + PY_MI_SEG_SLICES + s * PY_MI_SLICE_SIZE, next;
        uint8_t pg[PY_MI_SLICE_SIZE];
        if (mc_read(&w->mc, page, pg, sizeof(pg)))
            break;
        uint32_t count = rd32(pg + PY_MI_PAGE_SLICE_COUNT);
        unsigned tag = (pg[PY_MI_PAGE_TAG_BYTE] >> PY_MI_PAGE_TAG_SHIFT) & 15u;
        bool used = rd32(pg + PY_MI_PAGE_XBLOCK_SIZE) != 0; /* mi_slice_is_used */
        if (used && (tag == PY_MI_HEAP_GC || tag == PY_MI_HEAP_GC_PRE)) {
            int err = visit_page(f, page, tag == PY_MI_HEAP_GC_PRE ? 2 * PTR : 0, &next);
            if (err)
                return err;
        }
        if (!count)
            break;
        s += count;
    }
    return 0;
}

int hw_ft_walk_seeds(struct hw *w)
{
    for (size_t k = w->nft_pages; k-- > 0;) {
        const struct ft_page *pg = &w->ft_pages[k];
        for (uint32_t i = pg->capacity; i-- > 0;) {
            uint64_t obj = pg->start + i * pg->bsize + pg->obj_offset;
            struct seen_page *p = hw_seen_page(&w->seen, obj, false);
            uint8_t bits = 0;
            if (!p || hw_seen_get(p, obj) != SEEN_ON_GC_LIST ||
                mc_read(&w->mc, obj + PY_FT_OB_GC_BITS, &bits, 1))
                continue;
            int err = hw_walk_seed(w, obj, (bits & PY_FT_GC_FROZEN) != 0);
            if (err)
                return err;
        }
    }
    return 0;
}

/* A thread's heaps (interp's list of thread states, py_tl_walk). */
static int thread_heaps(void *ctx, uint64_t interp, uint64_t ts)
{
    (void)interp;
    struct ft_walk *f = ctx;
    struct hw *w = f->w;
    uint64_t m = ts + PY_MI_TSTATE, thread_id = 0;
    int32_t initialized = 0;
    if (mc_read(&w->mc, m + PY_MI_TS_INITIALIZED, &initialized, 4) == 0 && initialized &&
        mc_read_u64(&w->mc, ts + w->L->ts_thread_id, &thread_id) == 0) {
        uint64_t heaps = m + PY_MI_TS_HEAPS;
        f->err = visit_heap(f, heaps + PY_MI_HEAP_GC * PY_MI_HEAP_SIZE, 0, thread_id);
        if (!f->err)
            f->err = visit_heap(f, heaps + PY_MI_HEAP_GC_PRE * PY_MI_HEAP_SIZE, 2 * PTR, thread_id);
    }
    return f->err;
}

int hw_ft_seeds(struct hw *w, uint64_t interp)
{
    struct ft_walk f = {.w = w};
    int err = 0;
    f.free_map = malloc(MAX_CAPACITY / 8);
    if (!f.free_map)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
    struct hw_mem hm = {w, 0};
    struct py_mem mem = {.read = hw_mem_read, .ctx = &hm};
    struct py_tl tl = {.L = w->L, .mem = &mem, .max_interps = 1, .max_threads = MAX_LIST_STEPS,
                       .on_thread = thread_heaps, .ctx = &f};
    if (py_tl_walk(&tl, interp) == PY_TL_STOPPED)
        err = f.err; /* else the threads up to a torn or looping list were seen */
    /* _mi_abandoned_pool_visit_blocks: `abandoned` (tagged in its low bits), then
       `abandoned_visited` */
    static const uint64_t lists[] = {PY_MI_POOL_ABANDONED, PY_MI_POOL_VISITED};
    for (size_t l = 0; l < NFIELDS(lists) && !err; l++) {
        uint64_t seg = 0;
        mc_read_u64(&w->mc, interp + PY_MI_INTERP_POOL + lists[l], &seg);
        seg &= ~(SEGMENT_SIZE - 1);
        for (uint32_t n = 0; seg && n < MAX_LIST_STEPS && !err; n++) {
            err = visit_segment(&f, seg);
            if (!err && mc_read_u64(&w->mc, seg + PY_MI_SEG_ABANDONED_NEXT, &seg))
                break;
        }
    }
    log_debug("heap walk: %llu mimalloc pages (%llu abandoned segments), %llu blocks in use, "
              "%llu tracked objects",
              (unsigned long long)f.pages, (unsigned long long)f.segments,
              (unsigned long long)f.blocks, (unsigned long long)w->st->gc_tracked);
    hm_free(&f.delayed);
    free(f.free_map);
    return err;
}
