/* The timeline of samples (SCRY_TIMELINE=1, `scry run --timeline`): every sample charged to a
 * profiled line, in the order taken, with its time, thread, kind, weight and line (and call
 * stack with --stacks), for the exports' per-thread timelines (docs/export-formats.md). Bounded:
 * at most SCRY_TIMELINE_MAX samples; when full, every second one is dropped and from then on only
 * every stride-th sample is kept (the stride doubles each time), so the timeline still spans the
 * run. Collector thread only, lock held (never on a signal or malloc-hook path). */
#ifndef SCRY_AGENT_SSTREAM_H
#define SCRY_AGENT_SSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "render/json_writer.h"

#define AG_SSTREAM_DEFAULT_MAX 100000
#define AG_SSTREAM_MIN_MAX 16

struct ag_tl_sample {
    uint64_t t_ns;      /* CLOCK_MONOTONIC, absolute (made relative to the start when written) */
    uint64_t weight_ns; /* the time it stands for */
    uint32_t file, func;
    int32_t line;
    uint32_t stack;  /* the stats' stack index + 1; 0: none */
    uint32_t thread; /* index into the timeline's threads */
    uint8_t cat;     /* enum ag_cat */
};

struct ag_tl_thread {
    int tid;
    char name[17]; /* /proc/self/task/TID/comm when first seen ("" when it cannot be read) */
};

struct ag_sstream {
    struct ag_tl_sample *s;
    size_t n, cap, max; /* cap: allocated (grown by doubling; never needs more than max) */
    uint64_t stride; /* only samples whose sequence number is a multiple of it are kept */
    uint64_t seen;   /* samples offered */
    uint64_t lost;   /* samples not kept for want of memory */
    struct ag_tl_thread *threads;
    size_t nthreads, cap_threads;
    size_t last_thread;
};

extern bool ag_sstream_on;  /* SCRY_TIMELINE=1 */
extern size_t ag_sstream_max; /* SCRY_TIMELINE_MAX */
extern struct ag_sstream ag_sstream;

/* Empties it (a forked child starts afresh); frees its memory. */
void ag_sstream_reset(struct ag_sstream *tl);
/* One sample charged to a line, taken at t_ns on thread tid. read_names: the thread's name may
 * be read from /proc (false when the program started with fd 0-2 closed). */
void ag_sstream_add(struct ag_sstream *tl, uint64_t t_ns, int tid, bool read_names, int cat,
                     uint64_t weight_ns, uint32_t file, uint32_t func, int32_t line,
                     uint32_t stack);
/* The part's "sample_stream" value (docs/agent-protocol.md): times relative to start_ns;
 * stack_pos[i] is the position in the part's "stacks" of the stats' stack i (-1: not written). */
void ag_sstream_write(const struct ag_sstream *tl, uint64_t start_ns, const int64_t *stack_pos,
                       struct json_writer *w);

#endif
