/* The collector's memory statistics: the footprint (running sum of the samples), its maximum
 * and timeline, and per source line the bytes allocated, freed and copied, the Python share,
 * the peak of one execution, and the leak counts. Semantics: docs/agent-protocol.md, "Memory". */
#ifndef SCRY_AGENT_MEMSTATS_H
#define SCRY_AGENT_MEMSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/memory.h"
#include "common/hashmap.h"

#define AG_TIMELINE_POINTS 100
#define AG_LEAK_MIN_FOOTPRINT (100ULL << 20) /* leak tracking starts above this footprint */

/* At most AG_TIMELINE_POINTS points [time, value]: when full, neighbours merge in pairs (the
 * later time, the larger value) and each later point stands for twice as many samples. */
struct ag_timeline {
    uint32_t n;
    uint64_t stride;     /* samples per point */
    uint64_t pend_count; /* samples gathered into the point being built */
    uint64_t pend_t, pend_v;
    uint64_t t[AG_TIMELINE_POINTS], v[AG_TIMELINE_POINTS];
};

void ag_timeline_add(struct ag_timeline *tl, uint64_t t, uint64_t v);
/* Appends the point being built (before writing). */
void ag_timeline_flush(struct ag_timeline *tl);

/* Memory charged to one source line (file, line); func is the first function seen there. */
struct ag_mline {
    uint32_t file, func;
    int32_t line;
    uint64_t malloc_bytes, python_bytes, malloc_samples, free_bytes, copy_bytes;
    uint64_t cur, cur_hw; /* this execution's net bytes and their maximum */
    bool open;            /* an execution is under way */
    uint64_t peak, hw_sum, execs;
    uint64_t leak_mallocs, leak_frees;
    uint64_t live_bytes; /* its malloc samples whose allocation is still there */
    /* The most live_bytes ever were: the most the line held at once (a cache before each trim),
     * where peak is one execution's net (docs/json-schema.md, n_max_held_mb). */
    uint64_t max_live;
    struct ag_timeline *timeline;
    /* Its own growth since its live bytes last fell back below half their top (a cache
     * trimmed): the top, the malloc samples that raised it, and [time, live bytes] of each
     * (NULL until the first; emptied when they fall back). The leak rule reads them. */
    uint64_t grow_top, grow_rises;
    struct ag_timeline *grow;
};

/* A malloc sample whose allocation has not been freed (as far as the collector knows). */
struct ag_live {
    uint64_t seq, ptr, bytes;
    uint64_t held;  /* what its line holds of it: bytes, or for an AG_M_MAPPED sample the bytes
                       it stood for beyond the mapping plus the mapping's pages found resident */
    uint64_t prev;  /* 1 + an earlier sample of the same block, freed with it; 0: none */
    uint64_t size;  /* the block at ptr (for the join with a heap snapshot: docs/allocations.md) */
    uint32_t line;  /* index into lines, UINT32_MAX: charged to no line */
    uint32_t stack; /* index + 1 into the collector's allocation stacks, 0: none */
};

/* Where the collector charged a sample. */
struct ag_mwhere {
    enum { AG_MW_FOOTPRINT_ONLY, AG_MW_LINE } kind;
    bool native; /* the line is <native> */
    uint32_t file, func;
    int32_t line;
    uint32_t stack; /* malloc samples: their profiled frames (index + 1), 0: none */
};

struct ag_mem_stats {
    struct hashmap line_by_key;   /* (file + 1) << 32 | line -> index + 1 */
    struct hashmap last_by_tid;   /* thread -> index + 1 of the line of its last sample */
    struct ag_mline *lines;
    size_t nlines, cap;
    uint64_t alloc_samples, copy_samples;
    uint64_t malloc_bytes, free_bytes, python_bytes, copy_bytes;
    uint64_t native_malloc_bytes, startup_malloc_bytes;
    uint64_t footprint, max_footprint;
    uint64_t mark_peak; /* the footprint's maximum since the last mark (scry_agent_mark_peak) */
    bool max_at_line;
    uint32_t max_file;
    int32_t max_line;
    double max_python_fraction;
    struct ag_timeline timeline;
    struct ag_live *live;
    size_t nlive, cap_live;
    struct hashmap live_by_seq; /* seq + 1 -> index + 1 into live */
    /* Malloc samples that set a new maximum, waiting for their fate (oldest first). */
    struct {
        uint32_t line;
        uint64_t seq;
        bool tracked, freed;
        uint64_t freed_at;
    } pending[3];
    int npending;
    /* The last malloc sample of the batch being drained that set a new maximum. */
    struct {
        bool valid, tracked, freed;
        uint32_t line;
        uint64_t seq, freed_at;
    } batch_max;
};

void ag_mem_stats_init(struct ag_mem_stats *m);
void ag_mem_stats_free(struct ag_mem_stats *m);
/* Accounts one sample; start_ns: the process's start (CLOCK_MONOTONIC). */
void ag_mem_record(struct ag_mem_stats *m, const struct ag_mem_sample *s,
                   const struct ag_mwhere *w, uint64_t start_ns);
/* Pages of anonymous mappings found resident (ag_maps_scan_resident): they join the footprint. */
void ag_mem_resident(struct ag_mem_stats *m, uint64_t bytes, uint64_t t_ns);
/* Of those, bytes of the mapping of AG_M_MAPPED malloc sample seq: its line holds them. */
void ag_mem_held(struct ag_mem_stats *m, uint64_t seq, uint64_t bytes);
/* The collector drained a batch of samples: takes at most one leak candidate per batch (as
 * Scalene), so that only growth that lasts over many collector periods looks like a leak. */
void ag_mem_end_batch(struct ag_mem_stats *m);
/* Ends every open execution and completes the timelines (before writing the part). */
void ag_mem_finish(struct ag_mem_stats *m);
/* The leak rule of one line over the window from start_ns to end_ns (ns since the process
 * started; start_ns 0 for the whole run, a checkpoint's the previous checkpoint's time: a test's
 * or a cell's window): the malloc samples that raised its live bytes, when they grew from the
 * first half of the window to its last quarter, by a fifth at least over its second half, and
 * at least three quarters of the top are still held; 0 otherwise (docs/agent-protocol.md,
 * "Memory"). */
uint64_t ag_mem_growth_rises(const struct ag_mline *l, uint64_t start_ns, uint64_t end_ns);

#endif
