/* The one reader of a profile document (scry-profile.json, Scalene's schema:
 * docs/json-schema.md): every reader of a profile (the terminal view and the page's checks, the
 * exports, `scry compare`, push, MCP, optimize) takes this model. Per file its share, leaks and
 * entries; per line and per function the seconds of each time kind, the document's own
 * percentages and figures (so views print exactly what the file says), the sample count, the
 * memory and GPU figures; the call stacks, the sample stream and the footprint timeline when the
 * profile has them. Every field is checked here, once, with one set of messages. Pure: a parsed
 * document in, structs out. Strings point into the document, which the model keeps a reference
 * to. */
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
    const char *text; /* "line": a line's source text (NULL when absent), a function's name */
    uint32_t line, first_line;
    uint32_t order; /* its place among its file's lines or functions in the document */
    uint32_t func_line; /* a line's start_function_line (0: not given) */
    double python_sec, native_sec, sys_sec;
    /* The same as the document gives them: % of the sampled time. */
    double python_pct, native_pct, sys_pct;
    double samples;
    double malloc_bytes; /* n_malloc_mb in bytes */
    double kept_bytes;   /* n_growth_mb in bytes */
    double held_bytes;   /* n_max_held_mb in bytes, -1: absent (profiles of older agents) */
    /* The memory and GPU figures in the document's units (0 when absent). */
    double malloc_mb, growth_mb, held_mb, peak_mb, copy_mb_s;
    double python_fraction, usage_fraction; /* n_python_fraction, n_usage_fraction: 0 to 1 */
    double gpu_percent, gpu_peak_mb;        /* n_gpu_percent, n_gpu_peak_memory_mb */
    const json_t *memory_samples; /* lines: [[ns, MB], ...] (checked), NULL when empty */
};

/* A line of "leaks": {"LINENO": {"likelihood", "velocity_mb_s"}}. */
struct pdoc_leak {
    uint32_t line;
    double likelihood, velocity_mb_s;
};

/* An entry of "files", in the document's order: its lines are lines[0 .. nlines) in the
 * document's order, its functions funcs[0 .. nfuncs) by first line (both point into the
 * model's tables), its leaks the most likely first (then by line). */
struct pdoc_file {
    const char *name;
    double percent; /* percent_cpu_time */
    bool first;     /* the document's first_file (a notebook cell's own) */
    struct pdoc_entry *lines, *funcs;
    size_t nlines, nfuncs;
    struct pdoc_leak *leaks;
    size_t nleaks;
};

struct pdoc_frame {
    const char *file; /* not NUL-terminated: file_len bytes */
    size_t file_len;
    const char *func;
    size_t func_len;
    uint32_t line;
    /* "stacks": the frame as written, "FILE QUALNAME:LINE;" (text_len bytes); NULL elsewhere */
    const char *text;
    size_t text_len;
};

/* One distinct stack of "stacks": frames[off .. off+depth), outermost first. Its weight is
 * {"count", "python_time", "c_time", "sys_time"} (Scalene's), or a bare count. */
struct pdoc_stack {
    uint32_t off, depth;
    double python_sec, native_sec, sys_sec;
    double samples;
};

/* A stack of "memory_stacks" (scry run --stacks with memory, Scalene's format): mframes[off ..
 * off+depth), outermost first, frames {"display_name", "filename_or_module", "line"?}, and the
 * MB its memory samples allocated. */
struct pdoc_mframe {
    const char *name, *file;
    bool has_line;
    long long line;
};

struct pdoc_mstack {
    uint32_t off, depth;
    double mb;
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
    /* sampled_sec is the elapsed time when the document has no sampled_time_sec (Scalene's),
     * sampling_rate_sec 0.01 s when it has no cpu_sampling_rate; the *_given ones are what the
     * document says (0 when absent). */
    double elapsed_sec, sampled_sec, sampling_rate_sec, start_time_absolute;
    double sampled_given_sec, sampling_rate_given_sec;
    double profiled_sec; /* profiled_time_sec: the profiled files' share of the sampled time */
    double profiling_off_sec;
    bool virtual_time, memory, gpu;
    /* Whether the document has the key at all (the view says only what it was told). */
    bool has_n_samples, has_processes, has_profiled;
    double n_samples;  /* every sample (charged or not); 0 when absent */
    double processes;
    double mem_window; /* memory_sampling_window in bytes (1 MiB when absent) */
    /* Run details, NULL when absent; args holds the string elements of "args". */
    const char *python_version, *note, *gpu_note, *first_file;
    const char *gpu_device, *gpu_utilization_source, *gpu_memory_source;
    const char **args;
    size_t nargs;
    bool oversubscribed;
    double run_queue_delay_sec, run_queue_cpu_sec;
    double max_footprint_mb, growth_rate, native_allocations_mb;
    struct pdoc_file *files;
    size_t nfiles;
    struct pdoc_entry *lines, *funcs;
    size_t nlines, nfuncs;
    struct pdoc_frame *frames;
    size_t nframes;
    struct pdoc_stack *stacks; /* the ones with frames */
    size_t nstacks;
    struct pdoc_mframe *mframes;
    size_t nmframes;
    struct pdoc_mstack *mstacks; /* the ones with frames */
    size_t nmstacks;
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

/* Reads the document (a new reference is taken). "files" is required, except in the empty
 * document {} (Scalene's empty profile), which has none. A line's function is the function entry of
 * its file with the largest first line at or before it ("<module>" at line 1 when none): exact
 * for top-level functions and methods, and for a nested function's own lines; lines of an
 * enclosing function after a nested definition are charged to the nested one (the document
 * does not say which function a line entry belongs to: profiles with call stacks give
 * pprof the exact frames). Errors: -SCRY_E_BAD_PROFILE, "WHAT is not a profile: FIELD ...",
 * the field by its path (files["a.py"].lines[3].n_malloc_mb). */
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
