/* Block cache over rd_read (see memcache.h). */
#include "memcache.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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
        if (!in_pool(mc, (void *)(uintptr_t)v))
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
}

/* The block with this index, read now if needed; NULL when out of memory. */
static struct mc_block *get_block(struct memcache *mc, uint64_t index)
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
    struct mc_block *b = pooled ? (struct mc_block *)(void *)(mc->pool->base +
                                                                mc->pool->used++ * POOL_SLOT)
                                : malloc(sizeof(*b) + MC_BLOCK_SIZE);
    if (!b)
        return NULL;
    b->lo = b->hi = 0;
    if (lo < hi && rd_read(mc->rd, lo, b->data + (lo - start), hi - lo) == 0) {
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

int mc_prefetch_writable(struct memcache *mc, uint64_t max_bytes)
{
    size_t n;
    const struct rd_mapping *maps = rd_mappings(mc->rd, &n);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        if ((maps[i].prot & RD_PROT_R) && (maps[i].prot & RD_PROT_W))
            total += maps[i].end - maps[i].start;
    if (total > max_bytes || total + mc->bytes > mc->max_bytes)
        return 1;
    for (size_t i = 0; i < n; i++) {
        if (!(maps[i].prot & RD_PROT_R) || !(maps[i].prot & RD_PROT_W))
            continue;
        for (uint64_t b = maps[i].start >> MC_BLOCK_SHIFT; b <= (maps[i].end - 1) >> MC_BLOCK_SHIFT;
             b++)
            if (!get_block(mc, b))
                return err_fail(SCRY_E_NO_MEMORY, "out of memory copying the target's memory");
    }
    mc->pinned = true; /* the copy is the only consistent view left once the target runs */
    return 0;
}

int mc_pool_prepare(struct mc_pool *pool, struct rd_reader *rd, uint64_t max_bytes)
{
    memset(pool, 0, sizeof(*pool));
    size_t n;
    const struct rd_mapping *maps = rd_mappings(rd, &n);
    uint64_t total = 0, blocks = 0;
    for (size_t i = 0; i < n; i++)
        if ((maps[i].prot & RD_PROT_R) && (maps[i].prot & RD_PROT_W)) {
            total += maps[i].end - maps[i].start;
            blocks += ((maps[i].end - 1) >> MC_BLOCK_SHIFT) - (maps[i].start >> MC_BLOCK_SHIFT) + 1;
        }
    if (!blocks || total > max_bytes || blocks > SIZE_MAX / POOL_SLOT)
        return 0;
    /* A few blocks more: the heap may grow a little before the stop. */
    blocks += blocks / 16 + 4;
    void *p = mmap(NULL, blocks * POOL_SLOT, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    pool->base = p;
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
    if (mc->pool)
        mc->pool->used = 0;
}
