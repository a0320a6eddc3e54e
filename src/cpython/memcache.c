/* Block cache over rd_read (see memcache.h). */
#include "memcache.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/error.h"

void mc_init(struct memcache *mc, struct rd_reader *rd, size_t max_bytes)
{
    memset(mc, 0, sizeof(*mc));
    mc->rd = rd;
    mc->max_bytes = max_bytes ? max_bytes : (size_t)2 << 30;
    mc->last_index = UINT64_MAX;
    for (size_t i = 0; i < MC_FRONT; i++)
        mc->front[i].index = UINT64_MAX;
}

#define POOL_SLOT (sizeof(struct mc_block) + MC_BLOCK_SIZE)

static bool in_pool(const struct memcache *mc, const void *b)
{
    const uint8_t *p = b;
    return mc->pool && mc->pool->base && p >= mc->pool->base &&
           p < mc->pool->base + mc->pool->slots * POOL_SLOT;
}

static void drop_all(struct memcache *mc)
{
    uint64_t k, v;
    for (size_t i = 0; hm_next(&mc->blocks, &i, &k, &v);)
        if (!in_pool(mc, (void *)(uintptr_t)v) && v != (uint64_t)(uintptr_t)mc->zero)
            free((void *)(uintptr_t)v);
    if (mc->pool)
        mc->pool->used = 0;
    hm_clear(&mc->blocks);
    mc->bytes = 0;
    mc->last = NULL;
    mc->last_index = UINT64_MAX;
    for (size_t i = 0; i < MC_FRONT; i++)
        mc->front[i].index = UINT64_MAX;
}

void mc_free(struct memcache *mc)
{
    drop_all(mc);
    hm_free(&mc->blocks);
    free(mc->zero);
    mc->zero = NULL;
}

/* Reads the pages of [lo, hi) (offsets in the block at start) whose bit is set in pages (bit i:
 * the 4 KiB page i of the block); the others are left as they are (zeros: never written).
 * 0 or the reader's error. */
static int read_pages(struct memcache *mc, uint64_t start, uint8_t *data, uint64_t lo,
                      uint64_t hi, uint16_t pages)
{
    if (pages == MC_ALL_PAGES)
        return rd_read(mc->rd, start + lo, data + lo, hi - lo);
    for (unsigned i = 0; i < MC_BLOCK_PAGES;) {
        if (!(pages & (1u << i))) {
            i++;
            continue;
        }
        unsigned j = i;
        while (j < MC_BLOCK_PAGES && (pages & (1u << j)))
            j++;
        uint64_t a = (uint64_t)i << MC_PAGE_SHIFT, b = (uint64_t)j << MC_PAGE_SHIFT;
        a = a > lo ? a : lo;
        b = b < hi ? b : hi;
        int err = a < b ? rd_read(mc->rd, start + a, data + a, b - a) : 0;
        if (err)
            return err;
        i = j;
    }
    return 0;
}

/* The block with this index, read now if needed (only the pages set in `pages`: the others the
 * target never touched, zeros); NULL when out of memory. */
static struct mc_block *load_block(struct memcache *mc, uint64_t index, uint16_t pages)
{
    uint64_t v;
    size_t slot = (size_t)index & (MC_FRONT - 1);
    if (mc->front[slot].index == index)
        return mc->front[slot].block;
    if (hm_get(&mc->blocks, index + 1, &v)) {
        mc->front[slot].index = index;
        return mc->front[slot].block = (struct mc_block *)(uintptr_t)v;
    }
    if (mc->bytes + MC_BLOCK_SIZE > mc->max_bytes && !mc->pinned)
        drop_all(mc);
    uint64_t start = index << MC_BLOCK_SHIFT, end = start + MC_BLOCK_SIZE;
    /* The readable part: the first readable mapping that overlaps the block, extended over the
     * mappings that follow it without a gap (pymalloc's arenas are often adjacent). */
    size_t n, i;
    const struct rd_mapping *maps = rd_mappings(mc->rd, &n);
    uint64_t lo = end, hi = end;
    for (i = 0; i < n; i++)
        if (maps[i].end > start && maps[i].start < end && (maps[i].prot & RD_PROT_R))
            break;
    if (i < n) {
        lo = maps[i].start > start ? maps[i].start : start;
        hi = maps[i].end;
        while (hi < end && i + 1 < n && maps[i + 1].start == hi && (maps[i + 1].prot & RD_PROT_R))
            hi = maps[++i].end;
        if (hi > end)
            hi = end;
    }
    bool pooled = mc->pool && mc->pool->used < mc->pool->slots;
    if (pooled)
        mc->pool->written = true;
    struct mc_block *b = pooled ? (struct mc_block *)(void *)(mc->pool->base +
                                                                mc->pool->used++ * POOL_SLOT)
                                : malloc(sizeof(*b) + MC_BLOCK_SIZE);
    if (!b)
        return NULL;
    b->lo = b->hi = 0;
    if (lo < hi && read_pages(mc, start, b->data, lo - start, hi - start, pages) == 0) {
        b->lo = (uint32_t)(lo - start);
        b->hi = (uint32_t)(hi - start);
        mc->bytes += MC_BLOCK_SIZE;
        mc->block_reads++;
    } else {
        /* Keep a small marker: reads here go to the reader directly. */
        struct mc_block *small = pooled ? NULL : realloc(b, sizeof(*b));
        if (small)
            b = small;
    }
    if (hm_put(&mc->blocks, index + 1, (uint64_t)(uintptr_t)b)) {
        if (!pooled)
            free(b);
        return NULL;
    }
    mc->front[slot].index = index;
    return mc->front[slot].block = b;
}

static struct mc_block *get_block(struct memcache *mc, uint64_t index)
{
    return load_block(mc, index, MC_ALL_PAGES);
}

int mc_read_slow(struct memcache *mc, uint64_t addr, void *buf, size_t len)
{
    uint8_t *out = buf;
    if (addr + len < addr)
        return err_fail(SCRY_E_READ_FAILED, "cannot read %zu bytes at 0x%llx", len,
                        (unsigned long long)addr);
    while (len) {
        uint64_t index = addr >> MC_BLOCK_SHIFT;
        uint32_t off = (uint32_t)(addr & (MC_BLOCK_SIZE - 1));
        size_t chunk = MC_BLOCK_SIZE - off;
        if (chunk > len)
            chunk = len;
        struct mc_block *b;
        if (index == mc->last_index) {
            b = mc->last;
        } else {
            b = get_block(mc, index);
            if (!b)
                return err_fail(SCRY_E_NO_MEMORY, "out of memory caching the target's memory");
            mc->last = b;
            mc->last_index = index;
        }
        if (off >= b->lo && off + chunk <= b->hi) {
            memcpy(out, b->data + off, chunk);
        } else {
            mc->direct_reads++;
            int err = rd_read(mc->rd, addr, out, chunk);
            if (err)
                return err;
        }
        out += chunk;
        addr += chunk;
        len -= chunk;
    }
    return 0;
}

/* Anonymous memory: a page the target never touched there reads as zeros. */
static bool anonymous(const struct rd_mapping *m)
{
    return !m->path[0] || strcmp(m->path, "[heap]") == 0 || strcmp(m->path, "[stack]") == 0 ||
           strncmp(m->path, "[anon:", 6) == 0;
}

/* Every 64 KiB block of the target's readable and writable mappings, once per mapping, to
 * visit, with the pages of it that the target touched (bit i: page i of the block): all of them
 * (MC_ALL_PAGES) unless the block lies inside one anonymous mapping whose page map was read;
 * none: a block of zeros. */
static int writable_blocks(struct rd_reader *rd,
                           int (*visit)(void *ctx, uint64_t index, uint16_t pages), void *ctx)
{
    size_t n, cap = 0;
    const struct rd_mapping *maps = rd_mappings(rd, &n);
    uint64_t *touched = NULL;
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        const struct rd_mapping *m = &maps[i];
        if (!(m->prot & RD_PROT_R) || !(m->prot & RD_PROT_W) || m->end <= m->start)
            continue;
        bool known = false;
        if (anonymous(m)) {
            size_t words = (size_t)(((m->end - m->start) >> MC_PAGE_SHIFT) / 64 + 1);
            if (words > cap) {
                uint64_t *t = realloc(touched, words * sizeof(*t));
                if (t) {
                    touched = t;
                    cap = words;
                }
            }
            known = words <= cap && rd_pages_touched(rd, m->start, m->end, touched) == 0;
        }
        for (uint64_t b = m->start >> MC_BLOCK_SHIFT; b <= (m->end - 1) >> MC_BLOCK_SHIFT && !err;
             b++) {
            uint64_t start = b << MC_BLOCK_SHIFT, end = start + MC_BLOCK_SIZE;
            uint16_t pages = MC_ALL_PAGES;
            if (known && start >= m->start && end <= m->end) {
                uint64_t first = (start - m->start) >> MC_PAGE_SHIFT;
                pages = 0;
                for (unsigned p = 0; p < MC_BLOCK_PAGES; p++)
                    if (touched[(first + p) >> 6] & (1ULL << ((first + p) & 63)))
                        pages |= (uint16_t)(1u << p);
            }
            err = visit(ctx, b, pages);
        }
    }
    free(touched);
    return err;
}

static int count_copied(void *ctx, uint64_t index, uint16_t pages)
{
    (void)index;
    if (pages)
        *(uint64_t *)ctx += 1;
    return 0;
}

static int copy_block(void *ctx, uint64_t index, uint16_t pages)
{
    struct memcache *mc = ctx;
    uint64_t v;
    if (pages) {
        mc->pages_skipped += MC_BLOCK_PAGES - (unsigned)__builtin_popcount(pages);
        return load_block(mc, index, pages) ? 0 : -SCRY_E_NO_MEMORY;
    }
    if (hm_get(&mc->blocks, index + 1, &v))
        return 0;
    if (!mc->zero && (mc->zero = calloc(1, sizeof(*mc->zero) + MC_BLOCK_SIZE)) != NULL)
        mc->zero->hi = MC_BLOCK_SIZE;
    if (!mc->zero || hm_put(&mc->blocks, index + 1, (uint64_t)(uintptr_t)mc->zero))
        return -SCRY_E_NO_MEMORY;
    return 0;
}

struct copy_progress {
    struct memcache *mc;
    uint64_t done, total; /* blocks */
};

/* copy_block, with a progress report every 64 blocks (4 MiB): a copy of gigabytes takes
 * seconds. Only copied blocks count, as count_copied counted the total. */
static int copy_block_reporting(void *ctx, uint64_t index, uint16_t pages)
{
    struct copy_progress *c = ctx;
    int err = copy_block(c->mc, index, pages);
    if (!err && pages && (++c->done & 63) == 0)
        c->mc->progress(c->mc->progress_ctx, c->done * MC_BLOCK_SIZE, c->total * MC_BLOCK_SIZE);
    return err;
}

/* The room prepared for the copy holds a few blocks more than the copy took (the heap may grow
 * before the stop), all faulted in: their pages go back now, so that the walk's own arrays do not
 * come on top of them. A slot used later is faulted in again (zeros). */
static void release_unused(struct mc_pool *pool)
{
    if (!pool || !pool->base || pool->used >= pool->slots)
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)(pool->base + pool->used * POOL_SLOT) + page - 1) & ~(page - 1);
    uintptr_t to = (uintptr_t)(pool->base + pool->slots * POOL_SLOT) & ~(page - 1);
    if (to > from)
        madvise((void *)from, to - from, MADV_DONTNEED);
}

int mc_prefetch_writable(struct memcache *mc, uint64_t max_bytes)
{
    uint64_t blocks = 0;
    writable_blocks(mc->rd, count_copied, &blocks);
    uint64_t total = blocks * MC_BLOCK_SIZE;
    if (total > max_bytes || total + mc->bytes > mc->max_bytes)
        return 1;
    mc->pinned = true; /* the copy is the only consistent view left once the target runs */
    struct copy_progress cp = {mc, 0, blocks};
    int err = mc->progress ? writable_blocks(mc->rd, copy_block_reporting, &cp)
                           : writable_blocks(mc->rd, copy_block, mc);
    if (err != 0)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory copying the target's memory");
    release_unused(mc->pool);
    return 0;
}

/* Faults in the room of the pool's slots in the order the copy will take them, only where the
 * target's pages were touched (the copy writes nothing into the others, which stay zeros and take
 * no memory); contiguous runs in one call. */
struct populate {
    uint8_t *base;
    size_t slot, page;
    uintptr_t from, to; /* the run waiting, page-aligned */
};

static void populate_run(struct populate *p)
{
    if (p->to > p->from && madvise((void *)p->from, p->to - p->from, MADV_POPULATE_WRITE) != 0)
        for (uintptr_t a = p->from; a < p->to; a += p->page) /* before Linux 5.14: by hand */
            *(volatile uint8_t *)a = 0;
    p->from = p->to = 0;
}

static int populate_block(void *ctx, uint64_t index, uint16_t pages)
{
    struct populate *p = ctx;
    (void)index;
    if (!pages)
        return 0;
    uintptr_t data = (uintptr_t)(p->base + p->slot++ * POOL_SLOT + sizeof(struct mc_block));
    for (unsigned i = 0; i < MC_BLOCK_PAGES; i++) {
        if (!(pages & (1u << i)))
            continue;
        uintptr_t a = (data + ((uintptr_t)i << MC_PAGE_SHIFT)) & ~(p->page - 1);
        uintptr_t b = (data + ((uintptr_t)(i + 1) << MC_PAGE_SHIFT) + p->page - 1) &
                      ~(p->page - 1);
        if (a > p->to)
            populate_run(p);
        if (!p->to)
            p->from = a;
        p->to = b;
    }
    return 0;
}

int mc_pool_prepare(struct mc_pool *pool, struct rd_reader *rd, uint64_t max_bytes)
{
    memset(pool, 0, sizeof(*pool));
    uint64_t blocks = 0;
    writable_blocks(rd, count_copied, &blocks);
    if (!blocks || blocks * MC_BLOCK_SIZE > max_bytes || blocks > SIZE_MAX / POOL_SLOT / 2)
        return 0;
    /* A few blocks more: the heap may grow a little before the stop. Only the room of the pages
     * counted now is faulted in: the spare blocks would raise the dumper's peak for nothing when
     * the heap did not grow (1/16 of the copy), and fault in during the copy when it did. */
    blocks += blocks / 16 + 4;
    void *m = mmap(NULL, blocks * POOL_SLOT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED)
        return 0;
    struct populate p = {m, 0, (size_t)sysconf(_SC_PAGESIZE), 0, 0};
    writable_blocks(rd, populate_block, &p);
    populate_run(&p);
    pool->base = m;
    pool->slots = blocks;
    return 0;
}

void mc_pool_free(struct mc_pool *pool)
{
    if (pool->base)
        munmap(pool->base, pool->slots * POOL_SLOT);
    memset(pool, 0, sizeof(*pool));
}

void mc_use_pool(struct memcache *mc, struct mc_pool *pool)
{
    mc->pool = pool && pool->base ? pool : NULL;
    if (!mc->pool)
        return;
    mc->pool->used = 0;
    /* A second copy in the same room (the walk tried again): the pages it skips must read as
     * zeros, not as what the first copy left there. */
    if (mc->pool->written)
        madvise(mc->pool->base, mc->pool->slots * POOL_SLOT, MADV_DONTNEED);
    mc->pool->written = false;
}
