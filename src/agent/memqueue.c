/* The memory samples' way to the collector, and the two address tables the hooks keep:
 * - a multi-producer single-consumer queue of fixed slots: a producer reserves the next position
 *   with a compare-and-swap (never when the queue is full), writes the slot, then publishes it;
 *   the collector takes slots in position order;
 * - the addresses of the malloc samples' allocations: freeing one is a free sample (the memory
 *   each line still holds, what each line freed, and the leak rule);
 * - the anonymous mappings counted, so that munmap counts only what mmap counted, with the bytes
 *   of their pages found resident (what they cost the footprint) and the malloc sample of a new
 *   mapping, whose line holds those bytes (not the length it was charged as allocated).
 * All memory here comes from mmap at start; nothing allocates or locks. */
#include <dlfcn.h>
#include <sched.h>
#include <sys/mman.h>
#include <string.h>
#include <time.h>

#include "agent/memory.h"
#include "common/hashmap.h"

#define QUEUE_SLOTS 1024  /* samples waiting for the collector (~4.7 MiB, touched as used) */
#define SCRATCH_COUNT 32  /* threads that can read their stack for a sample at once */
#define SCRATCH_TRIES 100 /* rounds (with a yield between) to wait for a scratch buffer */
#define TRACK_BUCKETS (1u << AG_TRACK_BITS) /* sample addresses: 8-way buckets, one cache line
                                              of addresses each */
#define TRACK_WAYS 8
#define TRACK_EMPTY 0
#define TRACK_BUSY 1  /* being filled in */
#define MAP_SLOTS 16384   /* anonymous mappings counted */
#define MAP_PROBES 64
#define MAP_TOMB UINT64_MAX
#define MAP_GONE UINT64_MAX /* resident bytes of a removed entry: the scan charges no more */
#define PAGE 4096

static struct ag_mem_sample *slots;
static _Atomic uint64_t head, tail;

static void *scratch[SCRATCH_COUNT];
static _Atomic int scratch_busy[SCRATCH_COUNT];

/* An entry is EMPTY -> BUSY -> the address (live) -> EMPTY again when the block is freed. A
 * bucket's count of taken ways lets every free that is not a sample's (nearly all) return after
 * one byte read. */
static struct track_bucket {
    _Atomic uint64_t ptr[TRACK_WAYS];
    _Atomic uint64_t seq[TRACK_WAYS];
} *tracks;
_Atomic uint8_t ag_track_used[TRACK_BUCKETS]; /* static: one load from the free wrapper */
#define track_used ag_track_used

static struct map_entry {
    _Atomic uint64_t addr;
    _Atomic uint64_t len;
    _Atomic uint64_t resident; /* bytes charged to the footprint for its resident pages */
    _Atomic uint64_t seq;      /* 1 + its AG_M_MAPPED malloc sample, 0: none */
} *maps;

static uint64_t (*gilstate)(void); /* PyGILState_GetThisThreadState */

int ag_memq_init(void)
{
    if (slots && tracks && maps) { /* attached again (attach.c): nothing from before is tracked */
        memset(tracks, 0, TRACK_BUCKETS * sizeof(*tracks));
        memset(maps, 0, MAP_SLOTS * sizeof(*maps));
        ag_memq_fork_child();
        return 0;
    }
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

/* The ring of samples: a producer reserves the next position unless the
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

static size_t bucket_index(uint64_t ptr)
{
    return ag_track_bucket(ptr);
}

/* Remembers the address of sample seq's allocation; false when its bucket is full. */
static bool track(uint64_t ptr, uint64_t seq)
{
    size_t i = bucket_index(ptr);
    struct track_bucket *b = &tracks[i];
    for (int w = 0; w < TRACK_WAYS; w++) {
        uint64_t expected = TRACK_EMPTY;
        if (atomic_load_explicit(&b->ptr[w], memory_order_relaxed) != TRACK_EMPTY ||
            !atomic_compare_exchange_strong(&b->ptr[w], &expected, TRACK_BUSY))
            continue;
        atomic_fetch_add_explicit(&track_used[i], 1, memory_order_relaxed);
        atomic_store_explicit(&b->seq[w], seq, memory_order_relaxed);
        atomic_store_explicit(&b->ptr[w], ptr, memory_order_release);
        return true;
    }
    return false;
}

bool ag_memq_retrack(uint64_t ptr, uint64_t seq)
{
    return tracks && ptr > TRACK_BUSY && track(ptr, seq);
}

/* The block's owner is the only thread that can free it, and it was tracked before the
 * allocation returned: a relaxed read of the count sees it. */
bool ag_memq_take_tracked(uint64_t ptr, uint64_t *seq)
{
    if (!tracks || ptr <= TRACK_BUSY)
        return false;
    size_t i = bucket_index(ptr);
    if (!atomic_load_explicit(&track_used[i], memory_order_relaxed))
        return false;
    struct track_bucket *b = &tracks[i];
    for (int w = 0; w < TRACK_WAYS; w++) {
        if (atomic_load_explicit(&b->ptr[w], memory_order_acquire) != ptr)
            continue;
        *seq = atomic_load_explicit(&b->seq[w], memory_order_relaxed);
        atomic_store_explicit(&b->ptr[w], TRACK_EMPTY, memory_order_release);
        atomic_fetch_sub_explicit(&track_used[i], 1, memory_order_relaxed);
        return true;
    }
    return false;
}

static bool link_mapping(uint64_t addr, uint64_t len, uint64_t seq);

/* Remembers malloc sample m's allocation (position h). A sample already at that address is the
 * same block's (a realloc's growth, whose sample followed the block there) or one whose free went
 * unseen (the block was freed while nothing was counted, and its address reused): either way it
 * goes when this block goes, so the new sample carries it (freed_seq) and takes its place. */
static void track_sample(struct ag_mem_sample *m, uint64_t h)
{
    uint64_t ptr = m->ptr, prev;
    if (!ptr || ptr <= TRACK_BUSY) {
        m->mflags |= AG_M_UNTRACKED;
        return;
    }
    bool had = ag_memq_take_tracked(ptr, &prev);
    if (!track(ptr, h)) {
        m->mflags |= AG_M_UNTRACKED;
        if (had)
            (void)track(ptr, prev); /* the way just freed: it stays as it was */
        return;
    }
    if (had)
        m->freed_seq = prev + 1;
    /* A whole new mapping, sampled at its length (the window or more): its line holds its
     * resident pages as the collector finds them. */
    if (ag_mtls.mapping && m->size >= ag_mem_window && link_mapping(ptr, m->size, h))
        m->mflags |= AG_M_MAPPED;
}

bool ag_memq_emit(enum ag_mem_kind kind, uint64_t bytes, uint64_t python_bytes, int64_t net,
                  uint64_t ptr, uint64_t size, uint64_t freed_seq, int tid)
{
    if (!slots)
        return false;
    bool python = atomic_load_explicit(&ag_mem_python_ready, memory_order_acquire);
    /* A net sample is for the footprint only, a move for the collector's record: no stack. */
    bool stackless = kind == AG_M_NET || kind == AG_M_MOVE;
    uint64_t tstate = python && !stackless ? gilstate() : 0;
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
    m->net = net;
    m->freed_seq = freed_seq;
    m->ptr = ptr;
    m->size = size;
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
    /* No Python frame: a native thread's allocation (<native>), except on the main thread and
     * the threads the interpreter starts, where it is the interpreter's own work (compiling
     * the script; a new thread's frame stack, 16 KiB before its first frame: 6 MB of <native>
     * for 400 threads) and counts in the footprint only. */
    if (python && m->s.depth == 0 && !stackless)
        m->mflags |= tid == ag_pid || ag_mtls.py_thread ? AG_M_STARTUP : AG_M_NO_PYTHON;
    if (kind == AG_M_MALLOC)
        track_sample(m, h);
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
    for (int i = 0; i < SCRATCH_COUNT; i++)
        atomic_store(&scratch_busy[i], 0);
}

/* ---- anonymous mappings ---- */

static size_t map_index(uint64_t addr)
{
    return (size_t)(hm_hash64(addr >> 12) & (MAP_SLOTS - 1));
}

bool ag_maps_add(uint64_t addr, uint64_t len, bool resident)
{
    if (!maps || !addr || addr == MAP_TOMB)
        return false;
    size_t i = map_index(addr);
    for (int k = 0; k < MAP_PROBES; k++, i = (i + 1) & (MAP_SLOTS - 1)) {
        uint64_t cur = atomic_load_explicit(&maps[i].addr, memory_order_relaxed);
        if (cur != 0 && cur != MAP_TOMB)
            continue;
        /* Only the unmapping of addr reads this length, and it comes after this mmap returned;
         * the scan reads the length only once resident is no longer MAP_GONE. */
        if (atomic_compare_exchange_strong(&maps[i].addr, &cur, addr)) {
            atomic_store_explicit(&maps[i].resident, MAP_GONE, memory_order_relaxed);
            atomic_store_explicit(&maps[i].seq, 0, memory_order_relaxed);
            atomic_store_explicit(&maps[i].len, len, memory_order_release);
            atomic_store_explicit(&maps[i].resident, resident ? len : 0, memory_order_release);
            return true;
        }
    }
    return false;
}

/* The mapping at addr, of len bytes, is malloc sample seq's. Only the thread that mapped it, before
 * returning it, links it: no one unmaps it meanwhile. */
static bool link_mapping(uint64_t addr, uint64_t len, uint64_t seq)
{
    size_t i = map_index(addr);
    for (int k = 0; maps && k < MAP_PROBES; k++, i = (i + 1) & (MAP_SLOTS - 1)) {
        uint64_t cur = atomic_load_explicit(&maps[i].addr, memory_order_acquire);
        if (cur == 0)
            return false;
        if (cur != addr)
            continue;
        if (atomic_load_explicit(&maps[i].len, memory_order_relaxed) != len)
            return false;
        atomic_store_explicit(&maps[i].seq, seq + 1, memory_order_release);
        return true;
    }
    return false;
}

uint64_t ag_maps_remove(uint64_t addr, uint64_t len, uint64_t *resident)
{
    *resident = 0;
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
        /* What the scan charged, and no more after this. */
        uint64_t r = atomic_exchange(&maps[i].resident, MAP_GONE);
        *resident = r == MAP_GONE ? 0 : r;
        if (len < had) { /* the front of the mapping went; the rest stays counted */
            if (ag_maps_add(addr + len, had - len, r == had && r != MAP_GONE)) {
                *resident = r == had ? len : *resident; /* charged in full: the rest stays so */
                return len;
            }
            return had; /* no room for the rest: count it all as gone */
        }
        return had;
    }
    return 0;
}

bool ag_maps_forget_holding(uint64_t addr)
{
    for (size_t i = 0; maps && i < MAP_SLOTS; i++) {
        uint64_t at = atomic_load_explicit(&maps[i].addr, memory_order_acquire);
        if (at == 0 || at == MAP_TOMB || addr < at)
            continue;
        uint64_t r = atomic_load_explicit(&maps[i].resident, memory_order_acquire);
        if (r == MAP_GONE || addr - at >= atomic_load_explicit(&maps[i].len, memory_order_relaxed))
            continue;
        if (atomic_compare_exchange_strong(&maps[i].addr, &at, MAP_TOMB)) {
            atomic_store(&maps[i].resident, MAP_GONE);
            return true;
        }
    }
    return false;
}

/* Resident pages of [addr, addr + len), by mincore in steps of vec's size; 0 if unreadable
 * (unmapped meanwhile). Collector thread only. */
static uint64_t resident_bytes(uint64_t addr, uint64_t len)
{
    static unsigned char vec[16384]; /* 64 MiB of pages per call */
    uint64_t pages = 0;
    for (uint64_t off = 0; off < len;) {
        uint64_t n = len - off;
        if (n > sizeof(vec) * PAGE)
            n = sizeof(vec) * PAGE;
        if (mincore((void *)(uintptr_t)(addr + off), n, vec) != 0)
            return 0;
        for (uint64_t p = 0; p < (n + PAGE - 1) / PAGE; p++)
            pages += vec[p] & 1;
        off += n;
    }
    return pages * PAGE;
}

uint64_t ag_maps_scan_resident(void (*held)(void *ctx, uint64_t seq, uint64_t bytes), void *ctx)
{
    uint64_t taken = atomic_load_explicit(&tail, memory_order_acquire);
    if (!maps)
        return 0;
    uint64_t grew = 0;
    for (size_t i = 0; i < MAP_SLOTS; i++) {
        uint64_t addr = atomic_load_explicit(&maps[i].addr, memory_order_acquire);
        if (addr == 0 || addr == MAP_TOMB)
            continue;
        uint64_t had = atomic_load_explicit(&maps[i].resident, memory_order_acquire);
        uint64_t len = atomic_load_explicit(&maps[i].len, memory_order_acquire);
        if (had == MAP_GONE || had >= len)
            continue; /* being added or removed, or all of it is resident already */
        uint64_t seq = atomic_load_explicit(&maps[i].seq, memory_order_acquire);
        if (seq && seq - 1 >= taken)
            continue; /* its sample is not in the collector's hands yet: next time */
        uint64_t now = resident_bytes(addr, len);
        if (now > len)
            now = len;
        /* Fails if the mapping was removed meanwhile: then nothing more is charged. */
        if (now > had && atomic_compare_exchange_strong(&maps[i].resident, &had, now)) {
            grew += now - had;
            if (seq && held)
                held(ctx, seq - 1, now - had);
        }
    }
    return grew;
}
