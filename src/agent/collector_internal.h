/* What the collector's files share. collector.c: the collector thread, the threads' slots, their
 * rings and off-CPU time, the end of the run; attribution.c: code objects and where a sample is
 * charged; native_stacks.c: the native and combined stacks of CPU samples (--stacks);
 * memory_drain.c: the memory samples' queue; collector_settle.c: profiling on and off, and the
 * checkpoints. Everything here is used by the collector thread, or under the collector's lock. */
#ifndef SCRY_AGENT_COLLECTOR_INTERNAL_H
#define SCRY_AGENT_COLLECTOR_INTERNAL_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/agent.h"
#include "agent/memstats.h"
#include "agent/stats.h"

/* The statistics of the run (collector.c). */
extern struct ag_stats ag_col_stats;
extern struct ag_mem_stats ag_col_mstats;
extern uint64_t ag_col_start_mono_ns; /* CLOCK_MONOTONIC when sampling started */
extern double ag_col_start_real_sec;
extern _Atomic int ag_col_finish_started; /* ag_collector_finish was called */
extern _Atomic bool ag_col_finished;      /* the part is written */

/* The memory statistics for a part file: NULL without --memory. */
static inline const struct ag_mem_stats *ag_col_mem(void)
{
    return ag_cfg.memory ? &ag_col_mstats : NULL;
}

/* The collector's lock, taken by one of the program's threads (collector.c). */
void ag_col_take_lock_in_program(sigset_t *old);
void ag_col_drop_lock_in_program(const sigset_t *old);

/* ---- where a sample is charged (attribution.c) ---- */

/* Where a sample is charged: a profiled line, or (time nobody takes) the innermost file; with
 * --stacks also the call stack of its profiled frames. */
struct ag_attr {
    enum { AG_ATTR_NONE, AG_ATTR_LINE, AG_ATTR_EXCLUDED } kind;
    uint32_t file, func;
    int32_t line;
    uint32_t stack; /* index + 1 into ag_col_stats.stacks, 0 for none */
};

/* With stacks: the profiled frames of the sample being processed, outermost first, and the C
 * call of the eval loop running each (struct ag_sample.group). */
struct ag_pychain {
    struct ag_sframe f[AG_MAX_DEPTH];
    uint8_t group[AG_MAX_DEPTH];
    uint32_t n;
};
extern struct ag_pychain ag_col_pychain;

void ag_col_codes_init(void);   /* at start: the directory relative file names are under */
void ag_col_codes_forget(void); /* in a forked child: the entries point into the parent's stats */
void ag_col_read_prefixes(uint64_t interp);
enum ag_rule ag_col_shutdown_rule(const char *name);
struct ag_attr ag_col_attribute(const struct ag_sample *s, bool chain_wanted);
void ag_col_charging_at(uint64_t t_ns, int tid);
void ag_col_gpu_tick(void);
void ag_col_charge(const struct ag_attr *a, enum ag_cat cat, uint64_t weight_ns);
struct ag_attr ag_col_process(const struct ag_sample *s, enum ag_cat cat);

/* ---- native stacks (native_stacks.c) ---- */

void ag_col_native_names_init(void);
void ag_col_native_sample(const struct ag_sample *s, const struct ag_attr *a);

/* ---- memory samples (memory_drain.c) ---- */

void ag_col_memory_reset(void);
void ag_col_drain_memory(bool flush);

/* ---- the threads (collector.c), for switching and settling ---- */

void ag_col_end_exited_threads(uint64_t now);
void ag_col_wall_samples(uint64_t now, bool flush);
void ag_col_drain_all(bool flush);
void ag_col_charge_cpu_so_far(void);
void ag_col_restart_clocks(uint64_t now);
bool ag_col_shutdown_began(void);

/* ---- profiling on and off, checkpoints (collector_settle.c) ---- */

void ag_col_set_profiling_locked(bool on);
void ag_col_off_reset(uint64_t start_ns);
double ag_col_off_seconds(uint64_t now);

#endif
