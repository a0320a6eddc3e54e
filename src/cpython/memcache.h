/* A read cache over a reader for walks that touch most of a stopped target's heap: memory is
 * copied in aligned 64 KiB blocks (clamped to the mapping that holds them) so that a million
 * small object reads cost a few thousand process_vm_readv calls instead of millions. Only valid
 * while the target is stopped (or for a core). Blocks that cannot be read whole fall back to
 * exact reads through the reader, so errors are the reader's. */
#ifndef SCRY_CPYTHON_MEMCACHE_H
#define SCRY_CPYTHON_MEMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hashmap.h"
#include "reader/reader.h"

#define MC_BLOCK_SHIFT 16
#define MC_BLOCK_SIZE (1u << MC_BLOCK_SHIFT)
#define MC_FRONT 64 /* entries of the direct-mapped front (a power of two) */
#define MC_PAGE_SHIFT 12 /* the target's pages, as its page map gives them */
#define MC_BLOCK_PAGES (MC_BLOCK_SIZE >> MC_PAGE_SHIFT)
#define MC_ALL_PAGES 0xffffu

struct mc_block {
    uint32_t lo, hi; /* the readable part [lo, hi) of the block; lo == hi: read directly */
    uint8_t data[];
};

/* Memory for the copy of the writable mappings, mapped and faulted in before the target is
 * stopped (mc_pool_prepare), so that the stop only copies. Blocks are carved from it in order;
 * blocks beyond it are allocated as usual. */
struct mc_pool {
    uint8_t *base;
    size_t slots, used; /* slots of sizeof(struct mc_block) + MC_BLOCK_SIZE bytes */
    bool written;       /* a copy was made in it: zeros are no longer where pages were skipped */
};

struct memcache {
    struct rd_reader *rd;
    struct mc_pool *pool; /* or NULL */
    struct hashmap blocks; /* block index + 1 -> struct mc_block * */
    uint64_t last_index;   /* one-entry front cache */
    struct mc_block *last;
    /* a direct-mapped front of the hash map, by block index: a walk goes back and forth
       between a few blocks (the heap, the type objects in the image's data) */
    struct {
        uint64_t index;
        struct mc_block *block;
    } front[MC_FRONT];
    size_t bytes, max_bytes;
    bool pinned; /* blocks are never dropped (mc_prefetch_writable made them) */
    struct mc_block *zero; /* all zeros: every untouched block of anonymous memory in the copy */
    uint64_t block_reads, direct_reads;
    uint64_t pages_skipped; /* pages of copied blocks the target never touched: not copied */
    /* mc_prefetch_writable's progress, every 64 blocks (NULL: none) */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
};

/* max_bytes: memory the copies may take before the cache is emptied (0: 2 GiB). */
void mc_init(struct memcache *mc, struct rd_reader *rd, size_t max_bytes);
void mc_free(struct memcache *mc);
/* Copies every readable and writable mapping now (the memory that can change once the target
 * runs again), so that later reads see this moment even after the target is resumed. Read-only
 * mappings are still read on demand: they do not change. A page of anonymous memory that the
 * target never touched (rd_pages_touched) is not copied but read as the zeros it holds, and a
 * block of such pages takes no memory: allocators reserve large writable areas (a free-threaded
 * build's mimalloc arenas) and fill them as they go. Returns 0, 1 when the memory to copy is
 * larger than max_bytes (nothing is copied then), or a negative error. */
int mc_prefetch_writable(struct memcache *mc, uint64_t max_bytes);
/* Maps room for a copy of the target's readable and writable mappings (as listed now, less
 * their untouched anonymous blocks), when they take at most max_bytes, and faults in the room of
 * the pages the copy will write (not of the untouched ones); the few spare blocks mapped besides
 * (for a heap that grows before the stop) are faulted in only when used. Returns 0 (pool->base
 * NULL when nothing was prepared: too large, or no memory; the copy then allocates as it goes). */
int mc_pool_prepare(struct mc_pool *pool, struct rd_reader *rd, uint64_t max_bytes);
void mc_pool_free(struct mc_pool *pool);
/* Copies go to pool's memory (mc_prefetch_writable) until it is used up. */
void mc_use_pool(struct memcache *mc, struct mc_pool *pool);
/* Reads exactly len bytes at addr; 0 or the reader's error. */
int mc_read_slow(struct memcache *mc, uint64_t addr, void *buf, size_t len);

static inline int mc_read(struct memcache *mc, uint64_t addr, void *buf, size_t len)
{
    uint64_t off = addr & (MC_BLOCK_SIZE - 1);
    /* The hot case: inside the block read last. */
    if ((addr >> MC_BLOCK_SHIFT) == mc->last_index && off >= mc->last->lo &&
        off + len <= mc->last->hi) {
        __builtin_memcpy(buf, mc->last->data + off, len);
        return 0;
    }
    return mc_read_slow(mc, addr, buf, len);
}

static inline int mc_read_u64(struct memcache *mc, uint64_t addr, uint64_t *out)
{
    int err = mc_read(mc, addr, out, 8);
    if (err)
        *out = 0;
    return err;
}

#endif
