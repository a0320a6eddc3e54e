/* The sample stream of a profile (`scry run --timeline`): the parts' "sample_stream"
 * (docs/agent-protocol.md) merged into one time-ordered list of samples, each with its process
 * and thread, kind, weight and call stack (a one-frame stack, the line, without --stacks), as
 * scry-profile.json's "sample_stream" (docs/json-schema.md) writes it. Pure, like profile.c. */
#ifndef SCRY_ANALYSIS_SAMPLE_STREAM_H
#define SCRY_ANALYSIS_SAMPLE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct profile;
struct prof_sframe;

struct prof_ssthread {
    int64_t pid, tid;
    const char *name;       /* "" when unknown */
    uint64_t stride;        /* its process kept every stride-th sample */
};

struct prof_sssample {
    int64_t t;          /* absolute ns while merging; ns since the program's start after */
    uint64_t weight_ns; /* the time it stands for */
    uint32_t thread;    /* index into threads */
    uint32_t stack;     /* index into stacks */
    uint8_t kind;       /* 0 python, 1 native, 2 system */
};

/* A stack: frames[off .. off + depth) of the profile's sframes-like table, outermost first. */
struct prof_ssstack {
    uint32_t off, depth;
};

struct prof_sstream {
    bool on; /* some part had a sample stream */
    struct prof_ssthread *threads;
    size_t nthreads, cap_threads;
    struct prof_sssample *samples;
    size_t nsamples, cap_samples;
    struct prof_ssstack *stacks;
    size_t nstacks, cap_stacks;
    struct prof_sframe *frames; /* merged file, func, line */
    size_t nframes, cap_frames;
};

/* Checks a part's "sample_stream" (absent is fine); 0 or -SCRY_E_BAD_PROFILE via msg. */
int prof_ss_check(const json_t *part, size_t nfiles, size_t nfuncs, size_t nstacks,
                  char *msg, size_t size);
/* Merges a checked part's stream: fmap/umap map its files and functions, stack_pos its stacks
 * to the profile's (merged) stacks; start_sec is its start_time_absolute. */
int prof_ss_merge(struct profile *p, const json_t *part, int64_t pid, double start_sec,
                  const uint32_t *fmap, const uint32_t *umap, const size_t *stack_pos);
/* Times made relative to origin_ns (never negative), samples sorted by time. */
void prof_ss_finish(struct prof_sstream *ss, int64_t origin_ns);
void prof_ss_free(struct prof_sstream *ss);

#endif
