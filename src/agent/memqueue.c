/* The memory samples' way to the collector, and the two address tables the hooks keep:
 * - a multi-producer single-consumer queue of fixed slots: a producer reserves the next position
 *   with a compare-and-swap (never when the queue is full), writes the slot, then publishes it;
 *   the collector takes slots in position order;
 * - the addresses of the malloc samples' allocations, so that the collector learns which were
 *   freed (and when): the memory each line still holds, and the leak rule;
 * - the anonymous mappings counted, so that munmap counts only what mmap counted.
 * All memory here comes from mmap at start; nothing allocates or locks. */
#include <dlfcn.h>
#include <string.h>
#include <time.h>

#include "agent/memory.h"
#include "common/hashmap.h"

#define QUEUE_SLOTS 256   /* samples waiting for the collector (~1.2 MiB) */
#define SCRATCH_COUNT 16  /* threads that can read their stack for a sample at once */
#define TRACK_BUCKETS 2048 /* sample addresses: 8-way buckets, one cache line of addresses each */
#define TRACK_WAYS 8
#define TRACK_EMPTY 0
#define TRACK_FREED 1 /* freed; the collector has not taken note yet */
#define TRACK_BUSY 2  /* being filled in */
#define MAP_SLOTS 16384   /* anonymous mappings counted */
#define MAP_PROBES 64
#define MAP_TOMB UINT64_MAX

static struct ag_mem_sample *slots;
static _Atomic uint64_t head, tail;

static void *scratch[SCRATCH_COUNT];
static _Atomic int scratch_busy[SCRATCH_COUNT];

/* An entry is EMPTY -> BUSY -> the address (live) -> FREED (by a hook) -> EMPTY (once the
 * collector has read its fate): a freed entry is reused only after the collector saw it. */
static struct track_bucket {
    _Atomic uint64_t ptr[TRACK_WAYS];
    _Atomic uint64_t seq[TRACK_WAYS];
    _Atomic uint64_t freed[TRACK_WAYS]; /* queue position when freed */
} *tracks;

static struct map_entry {
    _Atomic uint64_t addr;
    _Atomic uint64_t len;
} *maps;

static uint64_t (*gilstate)(void); /* PyGILState_GetThisThreadState */

int ag_memq_init(void)
{
    slots = ag_real_mmap(QUEUE_SLOTS * sizeof(*slots));
    tracks = ag_real_mmap(TRACK_BUCKETS * sizeof(*tracks));
    maps = ag_real_mmap(MAP_SLOTS * sizeof(*maps));
    for (int i = 0; i < SCRATCH_COUNT; i++)
        scratch[i] = ag_real_mmap(AG_SCRATCH_SIZE);
    *(void **)&gilstate = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    if (!slots || !tracks || !maps || !gilstate)
        return -1;
    for (int i = 0; i < SCRATCH_COUNT; i++)
        if (!scratch[i])
            return -1;
    return 0;
}

static int take_scratch(void)
{
    for (int i = 0; i < SCRATCH_COUNT; i++) {
        int expected = 0;
        if (atomic_load_explicit(&scratch_busy[i], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&scratch_busy[i], &expected, 1))
            return i;
    }
    return -1;
}

static void give_scratch(int i)
{
    if (i >= 0)
        atomic_store_explicit(&scratch_busy[i], 0, memory_order_release);
}

static struct track_bucket *bucket_of(uint64_t ptr)
{
    return &tracks[hm_hash64(ptr) & (TRACK_BUCKETS - 1)];
}

/* Remembers the address of sample seq's allocation; false when its bucket is full. */
static bool track(uint64_t ptr, uint64_t seq)
{
    struct track_bucket *b = bucket_of(ptr);
    for (int w = 0; w < TRACK_WAYS; w++) {
        uint64_t expected = TRACK_EMPTY;
        if (atomic_load_explicit(&b->ptr[w], memory_order_relaxed) != TRACK_EMPTY ||
            !atomic_compare_exchange_strong(&b->ptr[w], &expected, TRACK_BUSY))
            continue;
        atomic_store_explicit(&b->seq[w], seq, memory_order_relaxed);
        atomic_store_explicit(&b->freed[w], 0, memory_order_relaxed);
        atomic_store_explicit(&b->ptr[w], ptr, memory_order_release);
        return true;
    }
    return false;
}

bool ag_memq_emit(enum ag_mem_kind kind, uint64_t bytes, uint64_t python_bytes, uint64_t ptr,
                  int tid)
{
    if (!slots)
        return false;
    bool python = atomic_load_explicit(&ag_mem_python_ready, memory_order_acquire);
    uint64_t tstate = python ? gilstate() : 0;
    int sc = -1;
    if (tstate && (sc = take_scratch()) < 0)
        return false;
    uint64_t h = atomic_load_explicit(&head, memory_order_relaxed);
    do {
        if (h - atomic_load_explicit(&tail, memory_order_acquire) >= QUEUE_SLOTS) {
            give_scratch(sc);
            return false;
        }
    } while (!atomic_compare_exchange_weak(&head, &h, h + 1));
    struct ag_mem_sample *m = &slots[h % QUEUE_SLOTS];
    m->seq = h;
    m->kind = kind;
    m->bytes = bytes;
    m->python_bytes = python_bytes;
    m->ptr = ptr;
    m->time_ns = ag_now_ns(CLOCK_MONOTONIC);
    m->tid = tid;
    m->s.weight_ns = 0;
    m->s.flags = 0;
    m->s.depth = 0;
    m->s.native_depth = 0;
    m->s.native_truncated = 0;
    m->mflags = python ? 0 : AG_M_STARTUP;
    if (tstate)
        ag_walk_stack(tstate, tid, &m->s, scratch[sc]);
    give_scratch(sc);
    if (python && m->s.depth == 0)
        m->mflags |= AG_M_NO_PYTHON;
    if (kind == AG_M_MALLOC && (!ptr || ptr <= TRACK_BUSY || !track(ptr, h)))
        m->mflags |= AG_M_UNTRACKED;
    atomic_store_explicit(&m->ready, h + 1, memory_order_release);
    return true;
}

struct ag_mem_sample *ag_memq_peek(void)
{
    if (!slots)
        return NULL;
    uint64_t t = atomic_load_explicit(&tail, memory_order_relaxed);
    if (t == atomic_load_explicit(&head, memory_order_acquire))
        return NULL;
    struct ag_mem_sample *m = &slots[t % QUEUE_SLOTS];
    return atomic_load_explicit(&m->ready, memory_order_acquire) == t + 1 ? m : NULL;
}

void ag_memq_pop(void)
{
    atomic_fetch_add_explicit(&tail, 1, memory_order_release);
}

uint64_t ag_memq_position(void)
{
    return atomic_load_explicit(&head, memory_order_relaxed);
}

void ag_memq_fork_child(void)
{
    /* Slots other threads had reserved will never be written here: carry on after them (the
     * positions go on, so no slot's old ready mark can be taken for a new one). */
    uint64_t h = atomic_load(&head);
    atomic_store(&tail, h);
    for (int i = 0; i < SCRATCH_COUNT; i++)
        atomic_store(&scratch_busy[i], 0);
}

void ag_memq_note_freed(uint64_t ptr)
{
    if (!tracks || ptr <= TRACK_BUSY)
        return;
    struct track_bucket *b = bucket_of(ptr);
    for (int w = 0; w < TRACK_WAYS; w++) {
        uint64_t cur = atomic_load_explicit(&b->ptr[w], memory_order_relaxed);
        if (cur != ptr)
            continue;
        /* One thread frees a given block: the position is written before the state says so. */
        atomic_store_explicit(&b->freed[w], atomic_load(&head), memory_order_relaxed);
        atomic_compare_exchange_strong(&b->ptr[w], &cur, TRACK_FREED);
        return;
    }
}

int ag_memq_fate(uint64_t ptr, uint64_t seq, uint64_t *freed_at)
{
    if (!tracks || ptr <= TRACK_BUSY)
        return -1;
    struct track_bucket *b = bucket_of(ptr);
    for (int w = 0; w < TRACK_WAYS; w++) {
        if (atomic_load_explicit(&b->seq[w], memory_order_acquire) != seq)
            continue;
        uint64_t cur = atomic_load_explicit(&b->ptr[w], memory_order_acquire);
        if (cur == ptr)
            return 0;
        if (cur != TRACK_FREED)
            continue;
        *freed_at = atomic_load_explicit(&b->freed[w], memory_order_relaxed);
        atomic_store_explicit(&b->ptr[w], TRACK_EMPTY, memory_order_release);
        return 1;
    }
    return -1;
}

/* ---- anonymous mappings ---- */

static size_t map_index(uint64_t addr)
{
    return (size_t)(hm_hash64(addr >> 12) & (MAP_SLOTS - 1));
}

bool ag_maps_add(uint64_t addr, uint64_t len)
{
    if (!maps || !addr || addr == MAP_TOMB)
        return false;
    size_t i = map_index(addr);
    for (int k = 0; k < MAP_PROBES; k++, i = (i + 1) & (MAP_SLOTS - 1)) {
        uint64_t cur = atomic_load_explicit(&maps[i].addr, memory_order_relaxed);
        if (cur != 0 && cur != MAP_TOMB)
            continue;
        /* Only the unmapping of addr reads this length, and it comes after this mmap returned. */
        if (atomic_compare_exchange_strong(&maps[i].addr, &cur, addr)) {
            atomic_store_explicit(&maps[i].len, len, memory_order_release);
            return true;
        }
    }
    return false;
}

uint64_t ag_maps_remove(uint64_t addr, uint64_t len)
{
    if (!maps || !addr || addr == MAP_TOMB)
        return 0;
    size_t i = map_index(addr);
    for (int k = 0; k < MAP_PROBES; k++, i = (i + 1) & (MAP_SLOTS - 1)) {
        uint64_t cur = atomic_load_explicit(&maps[i].addr, memory_order_acquire);
        if (cur == 0)
            return 0;
        if (cur != addr)
            continue;
        uint64_t had = atomic_load_explicit(&maps[i].len, memory_order_relaxed);
        if (!atomic_compare_exchange_strong(&maps[i].addr, &cur, MAP_TOMB))
            return 0; /* another thread removed it */
        if (len < had) { /* the front of the mapping went; the rest stays counted */
            if (ag_maps_add(addr + len, had - len))
                return len;
            return had; /* no room for the rest: count it all as gone */
        }
        return had;
    }
    return 0;
}
