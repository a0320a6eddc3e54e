/* The memory samples' way to the collector, and the two address tables the hooks keep:
 * - a multi-producer single-consumer queue of fixed slots: a producer reserves the next position
 *   with a compare-and-swap (never when the queue is full), writes the slot, then publishes it;
 *   the collector takes slots in position order;
 * - the addresses of the malloc samples' allocations, and a log of those freed (which sample,
 *   when) that the collector reads: the memory each line still holds, and the leak rule;
 * - the anonymous mappings counted, so that munmap counts only what mmap counted.
 * All memory here comes from mmap at start; nothing allocates or locks. */
#include <dlfcn.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "agent/memory.h"
#include "common/hashmap.h"

#define QUEUE_SLOTS 1024  /* samples waiting for the collector (~4.7 MiB, touched as used) */
#define SCRATCH_COUNT 32  /* threads that can read their stack for a sample at once */
#define SCRATCH_TRIES 100 /* rounds (with a yield between) to wait for a scratch buffer */
#define TRACK_BUCKETS 2048 /* sample addresses: 8-way buckets, one cache line of addresses each */
#define TRACK_WAYS 8
#define TRACK_EMPTY 0
#define TRACK_BUSY 1  /* being filled in */
#define FREED_SLOTS 16384 /* freed sample allocations waiting for the collector */
#define MAP_SLOTS 16384   /* anonymous mappings counted */
#define MAP_PROBES 64
#define MAP_TOMB UINT64_MAX

static struct ag_mem_sample *slots;
static _Atomic uint64_t head, tail;

static void *scratch[SCRATCH_COUNT];
static _Atomic int scratch_busy[SCRATCH_COUNT];

/* An entry is EMPTY -> BUSY -> the address (live) -> EMPTY again when the block is freed, once
 * the free is in the log. */
static struct track_bucket {
    _Atomic uint64_t ptr[TRACK_WAYS];
    _Atomic uint64_t seq[TRACK_WAYS];
} *tracks;

/* The log of freed sample allocations: the same reserve-then-publish protocol as the queue. */
static struct freed_event {
    _Atomic uint64_t ready; /* position + 1 once written */
    uint64_t seq, freed_at;
} *freed_log;
static _Atomic uint64_t freed_head, freed_tail;

static struct map_entry {
    _Atomic uint64_t addr;
    _Atomic uint64_t len;
} *maps;

static uint64_t (*gilstate)(void); /* PyGILState_GetThisThreadState */

int ag_memq_init(void)
{
    slots = ag_real_mmap(QUEUE_SLOTS * sizeof(*slots));
    tracks = ag_real_mmap(TRACK_BUCKETS * sizeof(*tracks));
    freed_log = ag_real_mmap(FREED_SLOTS * sizeof(*freed_log));
    maps = ag_real_mmap(MAP_SLOTS * sizeof(*maps));
    for (int i = 0; i < SCRATCH_COUNT; i++)
        scratch[i] = ag_real_mmap(AG_SCRATCH_SIZE);
    *(void **)&gilstate = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    if (!slots || !tracks || !freed_log || !maps || !gilstate)
        return -1;
    for (int i = 0; i < SCRATCH_COUNT; i++)
        if (!scratch[i])
            return -1;
    return 0;
}

_Atomic uint64_t ag_memq_deferred;

/* A free scratch buffer; when all are taken (many threads sampling at once), waits a little for
 * one: a thread that gave up would keep its bytes, and lose them if it ended before its next
 * sample. */
static int take_scratch(void)
{
    for (int round = 0; round < SCRATCH_TRIES; round++) {
        for (int i = 0; i < SCRATCH_COUNT; i++) {
            int expected = 0;
            if (atomic_load_explicit(&scratch_busy[i], memory_order_relaxed) == 0 &&
                atomic_compare_exchange_strong(&scratch_busy[i], &expected, 1))
                return i;
        }
        sched_yield();
    }
    return -1;
}

static void give_scratch(int i)
{
    if (i >= 0)
        atomic_store_explicit(&scratch_busy[i], 0, memory_order_release);
}

/* Both rings (samples, freed allocations): a producer reserves the next position unless the
 * ring is full, writes its slot, then publishes it by setting the slot's ready mark to the
 * position + 1; the consumer takes positions in order, each once it is published. */
static bool ring_reserve(_Atomic uint64_t *h, _Atomic uint64_t *t, uint64_t size, uint64_t *pos)
{
    uint64_t p = atomic_load_explicit(h, memory_order_relaxed);
    do {
        if (p - atomic_load_explicit(t, memory_order_acquire) >= size)
            return false;
    } while (!atomic_compare_exchange_weak(h, &p, p + 1));
    *pos = p;
    return true;
}

/* The consumer's next position if it is published. */
static bool ring_next(_Atomic uint64_t *h, _Atomic uint64_t *t, _Atomic uint64_t *ready_of_slot0,
                      size_t stride, uint64_t size, uint64_t *pos)
{
    uint64_t p = atomic_load_explicit(t, memory_order_relaxed);
    if (p == atomic_load_explicit(h, memory_order_acquire))
        return false;
    _Atomic uint64_t *ready =
        (_Atomic uint64_t *)((unsigned char *)ready_of_slot0 + (size_t)(p % size) * stride);
    if (atomic_load_explicit(ready, memory_order_acquire) != p + 1)
        return false;
    *pos = p;
    return true;
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
    if (tstate && (sc = take_scratch()) < 0) {
        atomic_fetch_add_explicit(&ag_memq_deferred, 1, memory_order_relaxed);
        return false;
    }
    uint64_t h;
    if (!ring_reserve(&head, &tail, QUEUE_SLOTS, &h)) {
        give_scratch(sc);
        atomic_fetch_add_explicit(&ag_memq_deferred, 1, memory_order_relaxed);
        return false;
    }
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
    /* No Python frame: a native thread's allocation (<native>), except on the main thread,
     * where it is the interpreter's own work (compiling the script) and counts in the
     * footprint only. */
    if (python && m->s.depth == 0)
        m->mflags |= tid == ag_pid ? AG_M_STARTUP : AG_M_NO_PYTHON;
    if (kind == AG_M_MALLOC && (!ptr || ptr <= TRACK_BUSY || !track(ptr, h)))
        m->mflags |= AG_M_UNTRACKED;
    atomic_store_explicit(&m->ready, h + 1, memory_order_release);
    /* A quarter full: the collector is behind its usual pace (a tick every 10 ms). */
    if (h - atomic_load_explicit(&tail, memory_order_relaxed) == QUEUE_SLOTS / 4)
        ag_collector_wake();
    return true;
}

struct ag_mem_sample *ag_memq_peek(void)
{
    uint64_t t;
    if (!slots || !ring_next(&head, &tail, &slots[0].ready, sizeof(*slots), QUEUE_SLOTS, &t))
        return NULL;
    return &slots[t % QUEUE_SLOTS];
}

void ag_memq_pop(void)
{
    atomic_fetch_add_explicit(&tail, 1, memory_order_release);
}

void ag_memq_fork_child(void)
{
    /* Slots other threads had reserved will never be written here: carry on after them (the
     * positions go on, so no slot's old ready mark can be taken for a new one). */
    uint64_t h = atomic_load(&head);
    atomic_store(&tail, h);
    h = atomic_load(&freed_head);
    atomic_store(&freed_tail, h);
    for (int i = 0; i < SCRATCH_COUNT; i++)
        atomic_store(&scratch_busy[i], 0);
}

void ag_memq_note_freed(uint64_t ptr)
{
    if (!tracks || ptr <= TRACK_BUSY)
        return;
    struct track_bucket *b = bucket_of(ptr);
    for (int w = 0; w < TRACK_WAYS; w++) {
        if (atomic_load_explicit(&b->ptr[w], memory_order_acquire) != ptr)
            continue;
        /* One thread frees a given block. With the log full, the entry stays: the sample
         * counts as still allocated, never as freed when it was not. */
        uint64_t seq = atomic_load_explicit(&b->seq[w], memory_order_relaxed), h;
        if (!ring_reserve(&freed_head, &freed_tail, FREED_SLOTS, &h))
            return;
        struct freed_event *e = &freed_log[h % FREED_SLOTS];
        e->seq = seq;
        e->freed_at = atomic_load(&head);
        atomic_store_explicit(&b->ptr[w], TRACK_EMPTY, memory_order_release);
        atomic_store_explicit(&e->ready, h + 1, memory_order_release);
        return;
    }
}

bool ag_memq_next_freed(uint64_t *seq, uint64_t *freed_at)
{
    uint64_t t;
    if (!freed_log || !ring_next(&freed_head, &freed_tail, &freed_log[0].ready,
                                 sizeof(*freed_log), FREED_SLOTS, &t))
        return false;
    const struct freed_event *e = &freed_log[t % FREED_SLOTS];
    *seq = e->seq;
    *freed_at = e->freed_at;
    atomic_store_explicit(&freed_tail, t + 1, memory_order_release);
    return true;
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
