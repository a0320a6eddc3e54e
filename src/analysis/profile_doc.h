/* A profile document (scry-profile.json, Scalene's schema: docs/json-schema.md) read back into
 * flat tables for the exports (pprof, trace, Firefox) and `scry compare`: per line and per
 * function the seconds of each time kind, the sample count and the memory, and the call stacks
 * when the profile has them. Pure: a parsed document in, structs out. Strings point into the
 * document, which the model keeps a reference to. */
#ifndef SCRY_ANALYSIS_PROFILE_DOC_H
#define SCRY_ANALYSIS_PROFILE_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/strbuf.h"

/* A line entry or a function entry of files[file]. For a line, func/first_line name the
 * function that encloses it (pdoc_load's rule, below); for a function, line == first_line. */
struct pdoc_entry {
    const char *file;
    const char *func;
    uint32_t line, first_line;
    uint32_t func_line; /* a line's start_function_line (0: not given) */
    double python_sec, native_sec, sys_sec;
    double samples;
    double malloc_bytes; /* n_malloc_mb in bytes */
    double kept_bytes;   /* n_growth_mb in bytes */
    double held_bytes;   /* n_max_held_mb in bytes, -1: absent (profiles of older agents) */
    const json_t *memory_samples; /* lines: [[ns, MB], ...] (checked), NULL when empty */
};

struct pdoc_frame {
    const char *file; /* not NUL-terminated: file_len bytes */
    size_t file_len;
    const char *func;
    size_t func_len;
    uint32_t line;
};

/* One distinct stack of "stacks": frames[off .. off+depth), outermost first. */
struct pdoc_stack {
    uint32_t off, depth;
    double python_sec, native_sec, sys_sec;
    double samples;
};

/* The sample stream ("sample_stream", scry run --timeline): a thread, and a sample in time
 * order. Its stacks are pdoc_stack entries of ss_stacks (only off and depth), whose frames are
 * in ss_frames, outermost first. */
struct pdoc_sthread {
    int64_t pid, tid;
    const char *name;
};

struct pdoc_ssample {
    double t_us;      /* since the program's start */
    double weight_us; /* the time it stands for */
    uint32_t thread, stack;
    uint32_t kind; /* 0 python, 1 native, 2 system */
};

struct pdoc {
    json_t *root;
    const char *program; /* "" when absent */
    double elapsed_sec, sampled_sec, sampling_rate_sec, start_time_absolute;
    bool virtual_time, memory;
    double n_samples;  /* every sample (charged or not); 0 when absent */
    double mem_window; /* memory_sampling_window in bytes (1 MiB when absent) */
    struct pdoc_entry *lines, *funcs;
    size_t nlines, nfuncs;
    struct pdoc_frame *frames;
    size_t nframes;
    struct pdoc_stack *stacks;
    size_t nstacks;
    bool have_stream; /* the document has a sample_stream */
    struct pdoc_sthread *ss_threads;
    size_t nss_threads;
    struct pdoc_frame *ss_frames;
    size_t nss_frames;
    struct pdoc_stack *ss_stacks;
    size_t nss_stacks;
    struct pdoc_ssample *ss_samples;
    size_t nss_samples;
    /* The footprint timeline ("samples"): [ns since start, MB] pairs. */
    double (*footprint)[2];
    size_t nfootprint;
};

/* Reads the document (a new reference is taken). A line's function is the function entry of
 * its file with the largest first line at or before it ("<module>" at line 1 when none): exact
 * for top-level functions and methods, and for a nested function's own lines; lines of an
 * enclosing function after a nested definition are charged to the nested one (the document
 * does not say which function a line entry belongs to: profiles with call stacks give
 * pprof the exact frames). Errors: -SCRY_E_BAD_PROFILE naming `what` and the field. */
int pdoc_load(struct pdoc *d, json_t *root, const char *what);
/* The same from the bytes of a file. */
int pdoc_load_bytes(struct pdoc *d, const char *text, size_t len, const char *what);
void pdoc_free(struct pdoc *d);

/* A stream thread's label for the exports: "MainThread (TID)" for the thread whose id is its
 * process's, else "NAME (TID)", or "Thread TID" without a name (appended to out). */
void pdoc_thread_label(const struct pdoc_sthread *t, struct strbuf *out);

/* The first line of function `func` (len bytes) in `file` (file_len bytes), 0 if the document
 * has no such function entry. */
uint32_t pdoc_first_line(const struct pdoc *d, const char *file, size_t file_len,
                         const char *func, size_t func_len);

#endif
