/* A stream of timestamped samples (`scry run --timeline`, `scry record --timeline`): every
 * sample charged to a profiled line, in the order taken, with its time, thread, kind, weight,
 * line and call stack, for the exports' per-thread timelines (docs/export-formats.md). Bounded:
 * at most `max` samples; when full, every second one is dropped and from then on only every
 * stride-th sample is kept (the stride doubles each time), so the stream still spans the run.
 * Written into a part as "sample_stream" (docs/agent-protocol.md) by its owner: the agent's
 * collector thread (never on a signal or malloc-hook path) or scry record. */
#ifndef SCRY_COMMON_SSTREAM_H
#define SCRY_COMMON_SSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SST_DEFAULT_MAX 100000
#define SST_MIN_MAX 16

struct sst_sample {
    uint64_t t_ns;      /* the owner's clock (made relative to its start when written) */
    uint64_t weight_ns; /* the time it stands for */
    uint32_t file, func;
    int32_t line;
    int32_t stack;   /* the owner's stack index; -1: none */
    uint32_t thread; /* index into threads */
    uint8_t cat;     /* 0 python, 1 native, 2 system */
};

struct sst_thread {
    int64_t tid;
    char name[64]; /* the owner's ("" when unknown) */
};

struct sst_stream {
    struct sst_sample *s;
    size_t n, cap, max; /* cap: allocated (grown by doubling) */
    uint64_t stride;    /* only samples whose sequence number is a multiple of it are kept */
    uint64_t seen;      /* samples offered */
    uint64_t lost;      /* samples not kept for want of memory */
    struct sst_thread *threads;
    size_t nthreads, cap_threads;
    size_t last_thread;
};

/* Empties it (frees its memory); max 0 keeps SST_DEFAULT_MAX, below SST_MIN_MAX is raised. */
void sst_reset(struct sst_stream *tl, size_t max);
/* The index of thread tid, added when new (*added then true: the owner names it); SIZE_MAX
 * when out of memory. */
size_t sst_thread(struct sst_stream *tl, int64_t tid, bool *added);
/* One sample charged to a line, of thread index th (sst_thread's). */
void sst_add(struct sst_stream *tl, uint64_t t_ns, size_t th, int cat, uint64_t weight_ns,
             uint32_t file, uint32_t func, int32_t line, int32_t stack);

#endif
