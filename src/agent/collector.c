/* The collector thread: finds the Python threads (the interpreters' thread-state lists) and gives
 * each a CPU-time timer, takes the off-CPU samples (wall time a thread did not spend on a CPU),
 * drains the threads' rings and has each sample charged (attribution.c), and at the end charges
 * the interpreter's shutdown and writes the part file. The other files of the collector are named
 * in collector_internal.h. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/collector_internal.h"
#include "agent/gpu.h"
#include "common/error.h"
#include "common/hashmap.h"
#include "common/log.h"
#include "cpython/frames.h"
#include "cpython/thread_list.h"
#include "platform/os_process.h"
#include "platform/thread_timer.h"
#include "platform/wake.h"

#define SCAN_INTERVAL_NS 20000000ULL  /* look for new or ended threads every 20 ms */
#define RETIRE_GRACE_NS 2000000000ULL /* a retired slot is reused only after 2 s */
#define FINISH_WAIT_MS 5000
#define WALL_MIN_NS 1000000ULL
#define SCHED_INTERVAL_NS 100000000ULL /* the threads' run-queue delay, every 100 ms */

static struct ag_thread *threads; /* AG_MAX_THREADS entries, mmap'd */
static _Atomic size_t nthreads_used; /* high-water mark (slots are claimed by any thread) */
struct ag_stats ag_col_stats;
struct ag_mem_stats ag_col_mstats;
static struct ag_sample wall_sample; /* collector-only scratch */
static void *wall_scratch;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t collector;
static bool collector_started;
static struct ag_fd wake_fd = {-1, 0, 0};
static _Atomic bool stop_requested;
static _Atomic bool pause_requested;
static _Atomic int collector_tid;
static uint64_t collector_cpu_ns; /* the collector thread's own CPU time, for the log */ /* the thread exits; ag_collector_resume starts another */
_Atomic bool ag_col_finished;
_Atomic int ag_col_finish_started;
static uint64_t last_scan_ns, last_sched_ns, last_snapshot_ns;
uint64_t ag_col_start_mono_ns;
double ag_col_start_real_sec;

static void take_lock(void)
{
    pthread_mutex_lock(&lock);
}

static void drop_lock(void)
{
    pthread_mutex_unlock(&lock);
}

/* The lock, taken by one of the program's threads: with every signal blocked while it is held,
 * so that no handler of this thread waits for the collector (the flush of SIGTERM, SIGINT,
 * SIGHUP) while the collector waits for the lock, and with the agent's own allocations not
 * counted. A SIGTERM that came while a worker drained its samples at exit hung it for the 5 s
 * of FINISH_WAIT_MS, and its part was lost. */
void ag_col_take_lock_in_program(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, old);
    ag_mtls.guard++;
    take_lock();
}

void ag_col_drop_lock_in_program(const sigset_t *old)
{
    drop_lock();
    ag_mtls.guard--;
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Per thread slot: where its last off-CPU sample went, and its CPU clock then. */
static struct {
    bool valid;
    uint64_t cpu_ns;
    uint64_t t_ns; /* when its stack was read */
    struct ag_attr attr;
} wall_cache[AG_MAX_THREADS];

/* ---- threads ---- */

static struct ag_thread *find_thread(int tid)
{
    size_t n = atomic_load(&nthreads_used);
    for (size_t i = 0; i < n; i++)
        if (atomic_load(&threads[i].state) == AG_T_ACTIVE && threads[i].tid == tid)
            return &threads[i];
    return NULL;
}

/* ---- interpreter shutdown ---- */

/* From the program's last atexit callback until the part is written, the thread that finalizes
 * the interpreter (it frees every module's objects, runs the last collections, then the C
 * library's exit handlers) has no frame of the program's: its time is measured by its own
 * clocks, wall and CPU, and charged to the pseudo-file <interpreter shutdown>. Its CPU samples
 * over that stretch only give the split of the CPU time between Python and native. */
static struct {
    uint64_t start_ns; /* CLOCK_MONOTONIC when it began; 0: not (yet) */
    uint64_t cpu0_ns;  /* the finalizing thread's CPU clock then */
    int tid;
    uint64_t sampled_ns[2]; /* its CPU samples since then: python, native */
} shutdown;

static bool in_shutdown(const struct ag_thread *t)
{
    return shutdown.start_ns && t->tid == shutdown.tid;
}

/* Per thread slot: where its last CPU sample went (the thread's CPU time after it, when the
 * thread ends, goes there too). */
static struct {
    bool valid;
    enum ag_cat cat;
    struct ag_attr attr;
    uint64_t t_ns; /* when it was taken: the CPU time after it is charged there, at that time */
} last_cpu[AG_MAX_THREADS];

/* CPU time of threads that ended before any sample of theirs was taken (threads shorter than
 * the sampling interval, or than the kernel's tick): it goes with the next CPU sample of a
 * thread counted from its creation, as a timer over all such threads would have charged it.
 * last_hooked: where the last such sample went (for what is left at the end). */
static uint64_t carry_ns;
static struct ag_attr last_hooked;
static enum ag_cat last_hooked_cat;
static int last_hooked_tid;

static void drain(struct ag_thread *t)
{
    struct ag_ring *r = t->ring;
    if (!r)
        return;
    size_t slot = (size_t)(t - threads);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    for (; tail != head; tail++) {
        const struct ag_sample *s = (const struct ag_sample *)r->slots[tail % AG_RING_SLOTS];
        if (in_shutdown(t)) {
            shutdown.sampled_ns[(s->flags & AG_S_NATIVE) ? 1 : 0] += s->weight_ns;
            continue;
        }
        enum ag_cat cat = (s->flags & AG_S_NATIVE) ? AG_NATIVE : AG_PYTHON;
        ag_col_charging_at(s->time_ns, t->tid);
        struct ag_attr a = ag_col_process(s, cat);
        if (ag_unwind_ok)
            ag_col_native_sample(s, &a);
        /* A thread counted from its creation that has no Python frame yet (or any more: the
         * C start-up and exit of the thread) is where it is: the rest of its time and what is
         * carried go there too (unattributed), not to the next sample's line, which would
         * charge the threads' start-up and exit to their functions. */
        if (a.kind == AG_ATTR_NONE && !t->hooked)
            continue;
        last_cpu[slot].valid = true;
        last_cpu[slot].cat = cat;
        last_cpu[slot].attr = a;
        last_cpu[slot].t_ns = s->time_ns;
        if (t->hooked) {
            last_hooked = a;
            last_hooked_cat = cat;
            last_hooked_tid = t->tid;
            if (carry_ns) {
                ag_col_charge(&a, cat, carry_ns);
                carry_ns = 0;
            }
        }
    }
    atomic_store_explicit(&r->tail, tail, memory_order_release);
    ag_col_stats.dropped += atomic_exchange(&r->dropped, 0);
}

static void retire(struct ag_thread *t, uint64_t now)
{
    ag_timer_delete(t);
    drain(t);
    size_t slot = (size_t)(t - threads);
    last_cpu[slot].valid = false;
    wall_cache[slot].valid = false;
    /* A thread counted from its creation deleted its own timer with its signal blocked, and
     * took it along when it ended: no late signal can come, its slot is free at once (so that
     * thousands of short threads use a handful of slots). */
    t->retired_at_ns = t->hooked && now > RETIRE_GRACE_NS ? now - RETIRE_GRACE_NS - 1 : now;
    atomic_store_explicit(&t->state, AG_T_RETIRED, memory_order_release);
}

/* A free slot (or one retired long enough ago), marked AG_T_CLAIMED; NULL if there is none.
 * Called by the collector and by any thread that creates a thread. */
static struct ag_thread *claim_slot(uint64_t now)
{
    size_t n = atomic_load(&nthreads_used);
    for (size_t i = 0; i < n; i++) {
        struct ag_thread *t = &threads[i];
        int st = atomic_load(&t->state);
        if (st == AG_T_RETIRED && now - t->retired_at_ns <= RETIRE_GRACE_NS)
            continue;
        if ((st == AG_T_FREE || st == AG_T_RETIRED) &&
            atomic_compare_exchange_strong(&t->state, &st, AG_T_CLAIMED))
            return t;
    }
    for (;;) {
        if (n >= AG_MAX_THREADS)
            return NULL;
        if (atomic_compare_exchange_weak(&nthreads_used, &n, n + 1))
            break;
    }
    /* A new slot is FREE (zeroed, or emptied in a forked child): it is ours. */
    struct ag_thread *t = &threads[n];
    int st = AG_T_FREE;
    return atomic_compare_exchange_strong(&t->state, &st, AG_T_CLAIMED) ? t : NULL;
}

/* The slot's ring and scratch memory (mapped once, kept when the slot is reused). */
static bool slot_memory(struct ag_thread *t)
{
    if (t->ring)
        return true;
    ag_mtls.guard++; /* the agent's memory is not the program's */
    void *m = mmap(NULL, sizeof(struct ag_ring) + AG_SCRATCH_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ag_mtls.guard--;
    if (m == MAP_FAILED)
        return false;
    t->scratch = (unsigned char *)m + sizeof(struct ag_ring);
    t->ring = m;
    return true;
}

static void reset_ring(struct ag_thread *t)
{
    atomic_store(&t->ring->head, 0);
    atomic_store(&t->ring->tail, 0);
    atomic_store(&t->ring->dropped, 0);
}

static void start_thread_sampling(uint64_t tstate, int tid, uint64_t now, uint64_t scan)
{
    struct ag_thread *t = claim_slot(now);
    if (!t)
        return;
    if (!slot_memory(t)) {
        atomic_store(&t->state, AG_T_FREE);
        return;
    }
    t->pending_off_ns = 0;
    reset_ring(t);
    t->gen = (t->gen + 1) & 63;
    t->hooked = false;
    t->tid = tid;
    t->tstate = tstate;
    t->cpu_clock = pf_thread_cpu_clock(tid);
    t->last_cpu_ns = ag_now_ns(t->cpu_clock);
    if (!t->last_cpu_ns) {
        atomic_store(&t->state, AG_T_FREE);
        return; /* the thread is already gone */
    }
    t->rng = hm_hash64(((uint64_t)tid << 32) ^ now);
    t->wall_last_ns = now;
    t->wall_last_cpu_ns = t->last_cpu_ns;
    t->seen_scan = scan;
    atomic_store_explicit(&t->state, AG_T_ACTIVE, memory_order_release);
    if (ag_signal > 0 && ag_timer_create(t, 0) != 0)
        log_debug("agent: no CPU timer for thread %d: %s", tid, strerror(errno));
}

/* ---- threads counted from their creation (threadhooks.c) ----
 *
 * The creating thread claims a slot; the new thread fills it and arms its timer before it runs
 * any Python, so that every nanosecond of its CPU time from there is charged: by its samples
 * (a sample before the thread has a thread state, or after, has no frame: C start-up and exit,
 * not charged), then (ag_thread_end) the time since its last sample goes where that sample
 * went, or, for a thread that ended before any sample, with the next sample of such a thread
 * (carry_ns). */

/* A thread's first sample comes at the first kernel tick (when CPU timers are checked) that
 * finds it running: a point uniform over its life, so that a short thread's time, all charged
 * where that one sample lands, goes to its function, its start-up or its exit in proportion.
 * (A first sample only after 0.5 ms of CPU never saw the start-up: +15% on 1 ms threads.) */
#define FIRST_SAMPLE_NS 1ULL

struct ag_thread *ag_thread_claim(void *(*start_routine)(void *), void *arg)
{
    if (!threads || ag_signal <= 0 || !atomic_load(&ag_running) ||
        atomic_load(&ag_col_finish_started))
        return NULL;
    struct ag_thread *t = claim_slot(ag_now_ns(CLOCK_MONOTONIC));
    if (!t)
        return NULL;
    if (!slot_memory(t)) {
        atomic_store(&t->state, AG_T_FREE);
        return NULL;
    }
    t->start_routine = start_routine;
    t->start_arg = arg;
    t->gen = (t->gen + 1) & 63;
    t->hooked = true;
    return t;
}

void ag_thread_unclaim(struct ag_thread *t)
{
    atomic_store(&t->state, AG_T_FREE);
}

void ag_thread_begin(struct ag_thread *t)
{
    ag_mtls.py_thread = true;
    int tid = pf_gettid();
    t->tid = tid;
    atomic_store(&t->tstate, 0);
    t->cpu_clock = pf_thread_cpu_clock(tid);
    t->rng = hm_hash64(((uint64_t)tid << 32) ^ ag_now_ns(CLOCK_MONOTONIC));
    t->pending_off_ns = 0;
    t->seen_scan = 0;
    t->wall_last_ns = ag_now_ns(CLOCK_MONOTONIC);
    t->wall_last_cpu_ns = ag_now_ns(CLOCK_THREAD_CPUTIME_ID);
    /* The CPU time before the timer is armed (the kernel's and libc's start of the thread) has
     * no Python frame, like a sample in the C start-up: it is not charged. Charged with the
     * first sample it went where that sample went, mostly the thread's function (+5% there on
     * 1 ms threads). */
    t->last_cpu_ns = t->wall_last_cpu_ns;
    reset_ring(t);
    atomic_store_explicit(&t->state, AG_T_ACTIVE, memory_order_release);
    if (ag_timer_create(t, FIRST_SAMPLE_NS) != 0)
        log_debug("agent: no CPU timer for thread %d: %s", tid, strerror(errno));
}

void ag_thread_end(struct ag_thread *t)
{
    if (atomic_load(&t->state) != AG_T_ACTIVE || t->tid != pf_gettid())
        return; /* a forked child's copy, or sampling has ended */
    /* No sample of this thread after its exit time is read: its signal is blocked for the few
     * instructions it has left, and its timer goes. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, ag_signal);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    ag_timer_delete(t);
    t->exit_cpu_ns = ag_now_ns(CLOCK_THREAD_CPUTIME_ID);
    t->exit_wall_ns = ag_now_ns(CLOCK_MONOTONIC);
    int st = AG_T_ACTIVE;
    atomic_compare_exchange_strong_explicit(&t->state, &st, AG_T_EXITED, memory_order_release,
                                            memory_order_relaxed);
}

/* Charges what the threads that ended since the last tick left (collector, lock held). */
void ag_col_end_exited_threads(uint64_t now)
{
    size_t n = atomic_load(&nthreads_used);
    for (size_t i = 0; i < n; i++) {
        struct ag_thread *t = &threads[i];
        if (atomic_load_explicit(&t->state, memory_order_acquire) != AG_T_EXITED)
            continue;
        drain(t);
        if (!atomic_load(&ag_enabled)) { /* it ended while profiling was off */
            retire(t, now);
            continue;
        }
        uint64_t last = atomic_load(&t->last_cpu_ns);
        uint64_t rest = t->exit_cpu_ns > last ? t->exit_cpu_ns - last : 0;
        ag_col_charging_at(last_cpu[i].t_ns, t->tid);
        if (last_cpu[i].valid)
            ag_col_charge(&last_cpu[i].attr, last_cpu[i].cat, rest);
        else
            carry_ns += rest; /* a thread of the interpreter's: its time is Python's */
        if (!ag_cfg.virtual_time && t->exit_wall_ns > t->wall_last_ns) {
            int64_t off = (int64_t)(t->exit_wall_ns - t->wall_last_ns) -
                          (int64_t)(t->exit_cpu_ns - t->wall_last_cpu_ns);
            uint64_t weight = t->pending_off_ns + (off > 0 ? (uint64_t)off : 0);
            const struct ag_attr *a = wall_cache[i].valid ? &wall_cache[i].attr
                                      : last_cpu[i].valid ? &last_cpu[i].attr
                                                          : NULL;
            /* In the stream, at the time the thread was last seen there (not at its exit). */
            ag_col_charging_at(wall_cache[i].valid ? wall_cache[i].t_ns : last_cpu[i].t_ns, t->tid);
            if (a && weight)
                ag_col_charge(a, AG_SYS, weight);
        }
        retire(t, now);
    }
}

/* What is still carried when sampling ends goes where the last such sample went. */
static void end_carry(void)
{
    ag_col_charging_at(ag_now_ns(CLOCK_MONOTONIC), last_hooked_tid);
    if (carry_ns && last_hooked.kind != AG_ATTR_NONE)
        ag_col_charge(&last_hooked, last_hooked_cat, carry_ns);
    else if (carry_ns)
        log_debug("agent: %.3f ms of CPU of short threads never sampled", carry_ns / 1e6);
    carry_ns = 0;
}

static int scan_interp(void *ctx, uint64_t interp)
{
    (void)ctx;
    ag_col_read_prefixes(interp);
    return 0;
}

static int scan_thread(void *ctx, uint64_t interp, uint64_t tstate)
{
    (void)interp;
    const uint64_t *scan_now = ctx; /* scan, now */
    uint64_t native = 0;
    if (!ag_safe_read(tstate + ag_rt.layout.ts_native_thread_id, &native, 8))
        return -1;
    int tid = (int)native;
    if (tid > 0) {
        struct ag_thread *t = find_thread(tid);
        if (t) {
            t->tstate = tstate;
            t->seen_scan = scan_now[0];
        } else {
            start_thread_sampling(tstate, tid, scan_now[1], scan_now[0]);
        }
    }
    return 0;
}

/* Walks every interpreter's thread list, starts sampling new threads and retires ended ones. */
static void scan_threads(uint64_t now)
{
    static uint64_t scan;
    uint64_t interp = 0;
    scan++;
    if (!ag_safe_read(ag_rt.runtime_addr + ag_rt.layout.rt_interpreters_head, &interp, 8))
        return;
    uint64_t scan_now[2] = {scan, now};
    struct py_tl w = {.L = &ag_rt.layout, .mem = &ag_self_mem, .max_interps = 64,
                      .max_threads = AG_MAX_THREADS, .check_owner = true, .go_on = true,
                      .on_interp = scan_interp, .on_thread = scan_thread, .ctx = scan_now};
    enum py_tl_end end = py_tl_walk(&w, interp);
    /* Past the bounds the walk counts as complete, as it always did. */
    bool complete = end == PY_TL_COMPLETE || end == PY_TL_INTERP_LONG || end == PY_TL_THREAD_LONG;
    if (!complete)
        return; /* a torn list says nothing about which threads ended */
    /* Threads counted from their creation end on their own (end_exited_threads). */
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++)
        if (atomic_load(&threads[i].state) == AG_T_ACTIVE && !threads[i].hooked &&
            threads[i].seen_scan != scan)
            retire(&threads[i], now);
}

/* Off-CPU samples: the part of the wall time since the last look that a thread was not on a CPU,
 * charged to where it is now. */
void ag_col_wall_samples(uint64_t now, bool flush)
{
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++) {
        struct ag_thread *t = &threads[i];
        if (atomic_load(&t->state) != AG_T_ACTIVE || !atomic_load(&t->tstate) || in_shutdown(t))
            continue;
        uint64_t cpu = ag_now_ns(t->cpu_clock);
        if (!cpu)
            continue;
        int64_t off = (int64_t)(now - t->wall_last_ns) - (int64_t)(cpu - t->wall_last_cpu_ns);
        t->wall_last_ns = now;
        t->wall_last_cpu_ns = cpu;
        if (off > 0)
            t->pending_off_ns += (uint64_t)off;
        /* Slivers (a preemption, a page fault) are gathered until they make a millisecond, so a
         * busy thread is not walked at every tick for nothing. */
        if (t->pending_off_ns < WALL_MIN_NS && !flush)
            continue;
        if (!t->pending_off_ns)
            continue;
        uint64_t weight = t->pending_off_ns;
        t->pending_off_ns = 0;
        ag_col_charging_at(now, t->tid);
        /* A thread that has not run since its stack was last read is still where it was: a
         * blocked thread costs one clock read per tick, not a stack walk. */
        size_t slot = (size_t)(t - threads);
        if (wall_cache[slot].valid && cpu == wall_cache[slot].cpu_ns && !flush) {
            ag_col_charge(&wall_cache[slot].attr, AG_SYS, weight);
            continue;
        }
        wall_sample.weight_ns = weight;
        wall_sample.flags = 0;
        wall_sample.native_depth = 0;
        ag_walk_stack(t->tstate, t->tid, &wall_sample, wall_scratch);
        wall_cache[slot].attr = ag_col_process(&wall_sample, AG_SYS);
        wall_cache[slot].cpu_ns = cpu;
        wall_cache[slot].t_ns = now;
        wall_cache[slot].valid = true;
    }
}

/* The threads' run-queue delay and CPU time (schedstat.c), at most every SCHED_INTERVAL_NS.
 * The last time, retired threads too: the thread that finalizes the interpreter leaves the
 * thread list before the end, and still runs (a thread that has ended reads nothing). */
static void sched_reads(uint64_t now, bool flush)
{
    if (!flush && now - last_sched_ns < SCHED_INTERVAL_NS)
        return;
    last_sched_ns = now;
    for (size_t i = 0; i < nthreads_used; i++) {
        int st = atomic_load(&threads[i].state);
        if (st == AG_T_ACTIVE || (flush && st == AG_T_RETIRED))
            ag_sched_read(threads[i].tid);
    }
}

/* Everything the threads' rings and the memory queue hold. */
void ag_col_drain_all(bool flush)
{
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++)
        if (atomic_load(&threads[i].state) == AG_T_ACTIVE)
            drain(&threads[i]);
    if (ag_cfg.memory)
        ag_col_drain_memory(flush);
}

static void tick(bool flush)
{
    ag_col_gpu_tick();
    uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
    if (now - last_scan_ns >= SCAN_INTERVAL_NS) {
        scan_threads(now);
        last_scan_ns = now;
    }
    if (!ag_cfg.virtual_time && atomic_load(&ag_enabled))
        ag_col_wall_samples(now, flush);
    sched_reads(now, flush);
    ag_col_drain_all(flush);
    ag_col_end_exited_threads(now);
}

/* The thread's CPU time from its last sample to cpu (its clock now) goes where that sample went
 * (lock held). Its handler may take a sample meanwhile (when it is not the caller's): what that
 * charges, this does not. */
static void charge_since_last_sample(struct ag_thread *t, uint64_t cpu)
{
    drain(t);
    size_t i = (size_t)(t - threads);
    uint64_t rest = cpu ? ag_thread_cpu_advance(t, cpu) : 0;
    if (!rest)
        return;
    ag_col_charging_at(last_cpu[i].t_ns, t->tid);
    if (last_cpu[i].valid)
        ag_col_charge(&last_cpu[i].attr, last_cpu[i].cat, rest);
}

/* Switching off, or settling: what every thread did since its last sample goes where that
 * sample went, as when a thread ends (lock held). */
void ag_col_charge_cpu_so_far(void)
{
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++) {
        struct ag_thread *t = &threads[i];
        if (atomic_load(&t->state) != AG_T_ACTIVE || in_shutdown(t))
            continue;
        charge_since_last_sample(t, ag_now_ns(t->cpu_clock));
    }
}

/* Switching on: every thread's clocks start afresh, so that nothing of the time off is charged
 * (lock held). */
void ag_col_restart_clocks(uint64_t now)
{
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++) {
        struct ag_thread *t = &threads[i];
        if (atomic_load(&t->state) != AG_T_ACTIVE)
            continue;
        uint64_t cpu = ag_now_ns(t->cpu_clock);
        t->last_cpu_ns = cpu;
        t->wall_last_ns = now;
        t->wall_last_cpu_ns = cpu;
        t->pending_off_ns = 0;
        wall_cache[i].valid = false;
        /* Where the thread was before the time off is not where it is now: its CPU time from
         * here to its next sample must not go to that line (a settle or a switch off before
         * any new sample would charge it there). */
        last_cpu[i].valid = false;
    }
}

bool ag_col_shutdown_began(void)
{
    return shutdown.start_ns != 0;
}

/* Charges the finalizing thread's time since the shutdown began (see `shutdown`). */
static void charge_shutdown(uint64_t now)
{
    /* A program never sampled (it ended before its first sample) has no shares to complete:
     * its profile stays empty, with the note that says it ran too briefly. */
    if (!shutdown.start_ns || now <= shutdown.start_ns || ag_col_stats.samples == 0 ||
        !atomic_load(&ag_enabled))
        return;
    uint64_t wall = now - shutdown.start_ns;
    uint64_t cpu_now = ag_now_ns(pf_thread_cpu_clock(shutdown.tid));
    uint64_t sampled = shutdown.sampled_ns[0] + shutdown.sampled_ns[1];
    uint64_t cpu = cpu_now > shutdown.cpu0_ns ? cpu_now - shutdown.cpu0_ns : 0;
    if (!cpu_now)
        cpu = sampled; /* the thread is gone (it cannot be: it waits for this part) */
    if (cpu > wall)
        cpu = wall;
    uint32_t f, fn;
    if (ag_stats_file(&ag_col_stats, AG_SHUTDOWN_FILE, ag_col_shutdown_rule, &f) ||
        ag_stats_func(&ag_col_stats, AG_SHUTDOWN_FILE, f, 0, &fn))
        return;
    /* Filtered out: its CPU time is another excluded file's, its waiting not counted. */
    struct ag_attr a = {AG_ATTR_LINE, f, fn, 0, 0};
    if (ag_col_stats.files[f].rule != AG_RULE_PROFILED) {
        a.kind = AG_ATTR_EXCLUDED;
    } else if (ag_cfg.stacks) {
        /* A stack of its own, so that the flame graph's widths add up to the whole run. */
        struct ag_sframe top = {f, fn, 0};
        if (ag_stats_stack(&ag_col_stats, &top, 1, &a.stack))
            a.stack = 0;
    }
    /* Unsampled (a short shutdown): the interpreter's own work, Python's by the PC rule. */
    uint64_t native = sampled ? (uint64_t)((double)cpu * (double)shutdown.sampled_ns[1] /
                                           (double)sampled)
                              : 0;
    ag_col_charging_at(now, shutdown.tid);
    ag_col_charge(&a, AG_PYTHON, cpu - native);
    ag_col_charge(&a, AG_NATIVE, native);
    if (!ag_cfg.virtual_time)
        ag_col_charge(&a, AG_SYS, wall - cpu);
}

static void finish_locked(void)
{
    atomic_store(&ag_running, false);
    atomic_store(&ag_mem_on, false);
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++) {
        if (atomic_load(&threads[i].state) != AG_T_ACTIVE)
            continue;
        ag_timer_delete(&threads[i]);
    }
    tick(true); /* the last off-CPU interval and whatever the rings still hold */
    end_carry();
    uint64_t end = ag_now_ns(CLOCK_MONOTONIC);
    charge_shutdown(end);
    ag_gpu_stop();
    double elapsed = (double)(end - ag_col_start_mono_ns) / 1e9;
    uint64_t calls = atomic_load(&ag_handler_calls), hns = atomic_load(&ag_handler_ns);
    log_info("agent: pid %d: %llu samples, %llu signals taking %.3f ms in the handler (%.1f us "
             "each), collector %.3f ms of CPU, %llu dropped",
             ag_pid, (unsigned long long)ag_col_stats.samples, (unsigned long long)calls, hns / 1e6,
             calls ? hns / 1e3 / calls : 0.0, collector_cpu_ns / 1e6,
             (unsigned long long)ag_col_stats.dropped);
    ag_mem_finish(&ag_col_mstats);
    ag_col_stats.off_sec = ag_col_off_seconds(end);
    if (ag_write_part_file(&ag_col_stats, ag_col_mem(), ag_col_start_real_sec, elapsed,
                           ag_col_start_mono_ns) != 0)
        log_warn("agent: could not write the profile part: %s", err_last_message());
    atomic_store(&ag_col_finished, true);
}

/* SCRY_SNAPSHOT_INTERVAL: the statistics so far, for `scry run --push`. Not when the program
 * started with fd 0-2 closed (no file is opened while it runs). */
static void maybe_snapshot(void)
{
    if (ag_cfg.snapshot_sec <= 0 || ag_low_fds_closed)
        return;
    uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
    if ((double)(now - last_snapshot_ns) < ag_cfg.snapshot_sec * 1e9)
        return;
    last_snapshot_ns = now;
    ag_col_stats.off_sec = ag_col_off_seconds(now);
    if (ag_write_snapshot_file(&ag_col_stats, ag_col_mem(), ag_col_start_real_sec,
                               (double)(now - ag_col_start_mono_ns) / 1e9) != 0)
        log_warn("agent: could not write a snapshot: %s", err_last_message());
}

/* `scry dump --pid` asked for the live allocation samples (after tick: the queue drained). */
static void answer_alloc_request(void)
{
    uint64_t req = ag_alloc_request_poll();
    if (req && ag_write_allocations_file(&ag_col_stats, ag_col_mem(), req) != 0)
        log_warn("agent: could not write the allocation samples: %s", err_last_message());
}

static void *collector_main(void *arg)
{
    (void)arg;
    ag_mtls.guard = 1; /* the agent's own allocations and copies are not the program's */
    uint64_t rng = hm_hash64((uint64_t)ag_pid ^ ag_now_ns(CLOCK_MONOTONIC));
    atomic_store(&collector_tid, pf_gettid());
    uint64_t started = ag_now_ns(CLOCK_MONOTONIC);
    while (!atomic_load(&stop_requested) && !atomic_load(&pause_requested)) {
        uint64_t ns = ag_exp_interval_ns(&rng);
        /* Until the fork hooks are in place (the first few ms of the interpreter), look every
         * millisecond so that they are there before the program's own code runs. */
        if (!ag_pyhooks_installed() && ag_now_ns(CLOCK_MONOTONIC) - started < 5000000000ULL)
            ns = 1000000;
        /* Not ours any more (the program closed it): wait out the interval. */
        pf_wake_wait(ag_fd_get(&wake_fd), ns);
        if (atomic_load(&stop_requested) || atomic_load(&pause_requested))
            break;
        take_lock();
        int want = ag_control_poll();
        if (want >= 0)
            ag_col_set_profiling_locked(want == 1);
        tick(false);
        maybe_snapshot();
        answer_alloc_request();
        ag_pyhooks_maybe_schedule();
        collector_cpu_ns = ag_now_ns(CLOCK_THREAD_CPUTIME_ID);
        drop_lock();
    }
    if (atomic_load(&stop_requested)) {
        take_lock();
        if (!atomic_load(&ag_col_finished))
            finish_locked();
        drop_lock();
    }
    return NULL;
}

static int spawn_collector(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the collector takes no signals */
    int rc = pthread_create(&collector, NULL, collector_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return -1;
    collector_started = true;
    return 0;
}

static void reset_state(void)
{
    ag_stats_init(&ag_col_stats);
    ag_mem_stats_free(&ag_col_mstats);
    ag_col_memory_reset();
    memset(&shutdown, 0, sizeof(shutdown));
    ag_sched_reset();
    last_sched_ns = 0;
    ag_col_start_mono_ns = ag_now_ns(CLOCK_MONOTONIC);
    ag_col_start_real_sec = (double)ag_now_ns(CLOCK_REALTIME) / 1e9;
    last_snapshot_ns = ag_col_start_mono_ns;
    last_scan_ns = 0;
    carry_ns = 0;
    ag_col_off_reset(ag_col_start_mono_ns);
    last_hooked.kind = AG_ATTR_NONE;
    last_hooked_tid = 0;
    sst_reset(&ag_sstream, ag_sstream_max);
}

int ag_collector_start(void)
{
    if (!threads) {
        void *m = mmap(NULL, AG_MAX_THREADS * sizeof(struct ag_thread), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        threads = m;
    }
    if (!wall_scratch) {
        void *m = mmap(NULL, AG_SCRATCH_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (m == MAP_FAILED)
            return -1;
        wall_scratch = m;
    }
    ag_col_codes_init();
    if (ag_unwind_ok)
        ag_col_native_names_init();
    reset_state();
    if (ag_fd_keep(&wake_fd, pf_wake_open()) < 0)
        return -1;
    atomic_store(&ag_running, true);
    ag_part_begin();
    return spawn_collector();
}

static void wake(void)
{
    pf_wake_post(ag_fd_get(&wake_fd));
}

void ag_collector_wake(void)
{
    if (wake_fd.fd >= 0)
        wake();
}

void ag_collector_finish(void)
{
    if (atomic_fetch_add(&ag_col_finish_started, 1) == 0) {
        atomic_store(&ag_running, false);
        if (collector_started && !pthread_equal(pthread_self(), collector)) {
            atomic_store(&stop_requested, true);
            wake();
        } else {
            take_lock();
            if (!atomic_load(&ag_col_finished))
                finish_locked();
            drop_lock();
        }
    }
    /* Wait (async-signal-safely) for the collector to write the part. */
    for (int i = 0; i < FINISH_WAIT_MS && !atomic_load(&ag_col_finished); i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

void ag_collector_drain(void)
{
    if (atomic_load(&ag_col_finish_started) || !atomic_load(&ag_running))
        return;
    sigset_t old;
    ag_col_take_lock_in_program(&old);
    ag_col_drain_all(true);
    ag_col_drop_lock_in_program(&old);
}

void ag_collector_shutdown_begins(void)
{
    if (atomic_load(&ag_col_finish_started) || !atomic_load(&ag_running))
        return;
    ag_collector_drain();
    sigset_t old;
    ag_col_take_lock_in_program(&old);
    if (!shutdown.start_ns) {
        shutdown.tid = pf_gettid();
        shutdown.cpu0_ns = ag_now_ns(CLOCK_THREAD_CPUTIME_ID);
        shutdown.start_ns = ag_now_ns(CLOCK_MONOTONIC);
        /* What the thread ran since its last sample (the program's last lines, the atexit
         * callbacks before this one) goes where that sample went: from here its time is the
         * shutdown's, counted from cpu0_ns, and its samples only split that. Left out, it was
         * lost: 10 ms in a run on average (a sampling interval), 60 ms at times. */
        struct ag_thread *t = find_thread(shutdown.tid); /* an active one */
        if (t && atomic_load(&ag_enabled))
            charge_since_last_sample(t, shutdown.cpu0_ns);
    }
    ag_col_drop_lock_in_program(&old);
}

/* The collector scans for threads every SCAN_INTERVAL_NS of wall time, and its first scan may
 * come before the interpreter has a thread state: on a loaded machine the main thread then ran
 * the program's first lines, unsampled, until the collector's next scan got a CPU (62 ms of CPU
 * in a 1.2 s run, once in a full test run). The scan is made here too, on the main thread, where
 * the program is about to run (the audit hook's run event), so that its first line is sampled
 * whatever the load. */
void ag_collector_program_runs(void)
{
    if (atomic_load(&ag_col_finish_started) || !atomic_load(&ag_running))
        return;
    sigset_t old;
    ag_col_take_lock_in_program(&old);
    if (!atomic_load(&ag_col_finish_started)) {
        uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
        scan_threads(now);
        last_scan_ns = now;
    }
    ag_col_drop_lock_in_program(&old);
}

void ag_collector_pause(void)
{
    if (!collector_started || pthread_equal(pthread_self(), collector))
        return;
    atomic_store(&pause_requested, true);
    wake();
    pthread_join(collector, NULL);
    /* pthread_join returns when the thread's tid word is cleared, a moment before the kernel
     * stops counting the thread in /proc/self/stat (which CPython reads to warn about forking a
     * multi-threaded process): wait until the thread is gone for the kernel too. */
    int tid = atomic_load(&collector_tid);
    for (int i = 0; tid > 0 && i < 2000; i++) {
        if (pf_thread_kill(ag_pid, tid, 0) != 0 && errno == ESRCH)
            break;
        struct timespec us = {0, 5000};
        nanosleep(&us, NULL);
    }
    atomic_store(&collector_tid, 0);
    collector_started = false;
    atomic_store(&pause_requested, false);
}

void ag_collector_resume(void)
{
    if (!collector_started && atomic_load(&ag_running) && !atomic_load(&ag_col_finish_started))
        spawn_collector();
}

void ag_collector_reset_child(void)
{
    ag_part_begin();
    /* POSIX timers and the other threads do not exist here: start from nothing, keeping the
     * code-object cache (the child has the same objects). */
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++) {
        threads[i].has_timer = false;
        atomic_store(&threads[i].state, AG_T_FREE);
    }
    nthreads_used = 0;
    memset(wall_cache, 0, sizeof(wall_cache));
    memset(last_cpu, 0, sizeof(last_cpu));
    ag_col_codes_forget(); /* its entries point into the parent's statistics */
    reset_state();
    collector_started = false;
    atomic_store(&stop_requested, false);
    atomic_store(&pause_requested, false);
    atomic_store(&ag_col_finished, false);
    atomic_store(&ag_col_finish_started, 0);
    pthread_mutex_init(&lock, NULL);
}

