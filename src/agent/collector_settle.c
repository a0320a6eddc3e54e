/* Profiling switched on and off (control.c: scry control, scry.start/stop) and the checkpoints
 * (window.c: a notebook cell, a test): both first settle the statistics, so that they say
 * everything that happened before the call (collector_internal.h). */
#include <string.h>

#include "agent/collector_internal.h"

/* Off: the handler takes no sample (it only re-arms the timer), and neither off-CPU time, the
 * CPU time of threads that end, nor memory is counted. Switching off first charges what every
 * thread did since its last sample (where that sample went, as when a thread ends); switching
 * on starts every thread's clocks afresh, so that nothing of the time off is charged. */
static uint64_t off_since_ns, off_total_ns;

/* At start: profiling off from start_ns when it starts off (--off). */
void ag_col_off_reset(uint64_t start_ns)
{
    off_total_ns = 0;
    off_since_ns = atomic_load(&ag_enabled) ? 0 : start_ns;
}

void ag_col_set_profiling_locked(bool on)
{
    if (on == atomic_load(&ag_enabled) || atomic_load(&ag_col_finish_started))
        return;
    uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
    ag_col_end_exited_threads(now); /* threads that ended before the switch, in the old state */
    if (!on) {
        if (!ag_cfg.virtual_time)
            ag_col_wall_samples(now, true);
        atomic_store(&ag_enabled, false);
        if (ag_cfg.memory)
            atomic_store(&ag_mem_on, false);
        ag_col_charge_cpu_so_far();
        off_since_ns = now;
        return;
    }
    ag_col_restart_clocks(now);
    if (off_since_ns && now > off_since_ns)
        off_total_ns += now - off_since_ns;
    off_since_ns = 0;
    atomic_store_explicit(&ag_enabled, true, memory_order_release);
    if (ag_cfg.memory && !ag_col_shutdown_began())
        atomic_store(&ag_mem_on, true);
}

void ag_collector_set_profiling(bool on)
{
    sigset_t old;
    ag_col_take_lock_in_program(&old);
    ag_col_set_profiling_locked(on);
    ag_col_drop_lock_in_program(&old);
}

/* Seconds profiling was off so far. */
double ag_col_off_seconds(uint64_t now)
{
    uint64_t ns = off_total_ns + (off_since_ns && now > off_since_ns ? now - off_since_ns : 0);
    return (double)ns / 1e9;
}

/* ---- checkpoints (window.c): the statistics so far, for a cell or a test ----
 *
 * Settling makes the statistics say everything that happened before the call: every sample the
 * rings and the memory queue hold is taken in, every thread's off-CPU time so far is charged,
 * and so is its CPU time since its last sample, where that sample went (as when profiling is
 * switched off). The calling thread blocks its own sampling signals meanwhile, so that its
 * handler cannot charge the same interval a second time. */
static void settle_locked(void)
{
    if (atomic_load(&ag_col_finish_started) || !atomic_load(&ag_running))
        return;
    uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
    ag_col_drain_all(true);
    if (!atomic_load(&ag_enabled))
        return; /* switching off settled everything; nothing is counted since */
    ag_col_end_exited_threads(now);
    if (!ag_cfg.virtual_time)
        ag_col_wall_samples(now, true);
    ag_col_charge_cpu_so_far();
    ag_col_stats.off_sec = ag_col_off_seconds(now);
}

/* Runs fn under the lock with the calling thread's signals blocked and its allocations not
 * counted. False when this process is not being profiled (any more). */
static bool with_settled(void (*fn)(void *), void *arg)
{
    if (!ag_agent_active() || !atomic_load(&ag_running) || atomic_load(&ag_col_finish_started))
        return false;
    sigset_t old;
    ag_col_take_lock_in_program(&old);
    bool ok = !atomic_load(&ag_col_finished);
    if (ok) {
        settle_locked();
        fn(arg);
    }
    ag_col_drop_lock_in_program(&old);
    return ok;
}

struct checkpoint_call {
    const char *path;
    int rc;
};

/* When the last checkpoint was taken (CLOCK_MONOTONIC; 0: none yet). A window is a checkpoint
 * before and one after (window.c), so the next checkpoint's leak judgements are over the time
 * since this one: a test's growth is judged against the test, not against the process's life
 * before it (a leak in a test that comes after a long one would never be flagged). A checkpoint
 * from before the statistics started again (a forked child's parent's) does not count. */
static uint64_t last_checkpoint_ns;

static void checkpoint_locked(void *arg)
{
    struct checkpoint_call *c = arg;
    uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
    uint64_t since = last_checkpoint_ns > ag_col_start_mono_ns ? last_checkpoint_ns : 0;
    c->rc = ag_write_checkpoint_file(
        &ag_col_stats, ag_col_mem(), ag_col_start_real_sec,
        (double)(now - ag_col_start_mono_ns) / 1e9,
        since ? (double)(since - ag_col_start_mono_ns) / 1e9 : 0, c->path);
    last_checkpoint_ns = now;
}

int ag_collector_checkpoint(const char *path)
{
    struct checkpoint_call c = {path, -1};
    if (!with_settled(checkpoint_locked, &c))
        return -1;
    return c.rc;
}

static void totals_locked(void *arg)
{
    struct ag_totals *t = arg;
    t->profiling = atomic_load(&ag_enabled);
    t->memory = ag_cfg.memory;
    for (int k = 0; k < 3; k++)
        t->sec[k] = ag_col_stats.total_sec[k];
    t->samples = ag_col_stats.samples;
    t->malloc_bytes = ag_col_mstats.malloc_bytes;
    t->free_bytes = ag_col_mstats.free_bytes;
    t->python_bytes = ag_col_mstats.python_bytes;
    t->copy_bytes = ag_col_mstats.copy_bytes;
    t->footprint = ag_col_mstats.footprint;
    t->max_footprint = ag_col_mstats.max_footprint;
    t->mark_peak = ag_col_mstats.mark_peak > ag_col_mstats.footprint ? ag_col_mstats.mark_peak
                                                                      : ag_col_mstats.footprint;
}

int ag_collector_totals(struct ag_totals *out)
{
    memset(out, 0, sizeof(*out));
    return with_settled(totals_locked, out) ? 0 : -1;
}

static void mark_locked(void *arg)
{
    (void)arg;
    ag_col_mstats.mark_peak = ag_col_mstats.footprint;
}

int ag_collector_mark_peak(void)
{
    return with_settled(mark_locked, NULL) ? 0 : -1;
}
