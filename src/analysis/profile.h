/* The profile of one `scry run`: the agent's part files (docs/agent-protocol.md), one per
 * process, CPU time and (with SCRY_MEMORY=1) memory, merged into one model that
 * src/render/profile_json.c writes as scry-profile.json.
 * Pure: parsed JSON or text in, structs out; the caller reads files and hands their bytes over. */
#ifndef SCRY_ANALYSIS_PROFILE_H
#define SCRY_ANALYSIS_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "analysis/sample_stream.h"
#include "common/arena.h"

/* Parts list at most this many excluded files each; the merge keeps as many. */
#define PROF_MAX_EXCLUDED 50
/* Frames of one call stack at most (the agent keeps 126). */
#define PROF_MAX_DEPTH 256
/* Points of a memory timeline at most, per line and for the whole program (Scalene's 100). */
#define PROF_MAX_POINTS 100
/* The pseudo-file that samples of threads with no Python frame are charged to (line 0). */
#define PROF_NATIVE_FILE "<native>"
/* The pseudo-file (line 0) of the time the interpreter took to finalize after the program's
 * last atexit callback (docs/agent-protocol.md, "Interpreter shutdown"). */
#define PROF_SHUTDOWN_FILE "<interpreter shutdown>"

/* One point of a memory timeline: a time and a footprint in bytes. While parts are merged t is
 * absolute (nanoseconds of Unix time); after prof_finish it is nanoseconds since the program's
 * process started (the primary part's start_time_absolute), never negative. */
struct prof_point {
    int64_t t;
    uint64_t bytes;
};

/* A growable list of points; owned by whatever holds it (prof_free frees the profile's). */
struct prof_timeline {
    struct prof_point *pts;
    size_t n, cap;
};

struct prof_file {
    const char *name; /* co_filename as the agent saw it */
    /* Source text split into lines (each keeps its '\n'), set by prof_set_source; src_read is
     * false when the file could not be read, and then only sampled lines are reported. */
    const char **src;
    size_t nsrc;
    bool src_read;
};

struct prof_func {
    const char *qualname;
    uint32_t file;
    uint32_t first_line;
};

/* Time charged to one (file, line, function), summed over every part. */
struct prof_line {
    uint32_t file;
    uint32_t line;
    uint32_t func;
    double python_sec;
    double native_sec;
    double sys_sec;
    uint64_t samples;
    /* Memory (parts with `memory_lines`), bytes and counts summed over parts; peak_bytes is the
     * largest of any part. All zero for a line of a CPU-only part. */
    uint64_t malloc_bytes, python_bytes, malloc_samples, free_bytes, peak_bytes, hw_sum_bytes,
        execs, copy_bytes, leak_mallocs, leak_frees;
    /* Bytes of its malloc samples never freed, wherever the free happened. */
    uint64_t live_bytes;
    /* The leak rule of its own growth (parts that judge it: growth_known): the malloc samples
     * that raised its live bytes until the end, the most of any part; 0: no steady growth. */
    bool growth_known;
    uint64_t growth_rises;
    /* The most its live bytes were at once in one process, the most of any part (parts that
     * write it: held_known); peak_bytes is one execution's net. */
    bool held_known;
    uint64_t max_held_bytes;
    /* GPU (parts with `gpu_lines`), summed over parts: the seconds its samples stood for while a
     * GPU reading was there, those seconds weighted by the load (0..1) and by the memory (MiB);
     * the largest memory reading of any part. */
    double gpu_sec, gpu_load_sec, gpu_mem_mb_sec, gpu_peak_mb;
    struct prof_timeline timeline; /* at most PROF_MAX_POINTS after prof_finish */
};

/* A part's whole-process footprint timeline, kept until prof_finish sums them (absolute times;
 * end: when the process ended, INT64_MAX when unknown; its footprint is 0 after that). */
struct prof_mpart {
    int64_t end;
    struct prof_timeline tl;
};

/* The memory side of the profile, over every part that had a `memory` object. */
struct prof_memory {
    bool on;                  /* some part had memory profiling on */
    uint64_t window;          /* the allocation sampling window (primary part, else first) */
    uint64_t copy_window;
    bool window_from_primary;
    uint64_t alloc_samples, copy_samples; /* sums */
    uint64_t malloc_bytes, free_bytes, python_bytes, copy_bytes, native_malloc_bytes,
        startup_malloc_bytes;
    /* The largest one process reached, and where (from that process's part: at_file a merged
     * file index, valid when have_at). */
    uint64_t part_max_footprint;
    bool have_at;
    uint32_t at_file, at_line;
    double max_footprint_python_fraction;
    /* After prof_finish: the larger of part_max_footprint and the peak of `footprint`, the
     * footprint of all processes together (the sum of each one's timeline as a step function),
     * at most PROF_MAX_POINTS points. */
    uint64_t max_footprint;
    struct prof_timeline footprint;
    struct prof_mpart *parts;
    size_t nparts, cap_parts;
};

/* A distinct call stack (scry run --stacks): frames sframes[off .. off+depth), outermost
 * first, each a profiled function and line. */
struct prof_sframe {
    uint32_t file, func, line;
};

struct prof_stack {
    uint32_t off, depth;
    double python_sec, native_sec, sys_sec;
    uint64_t samples;
    uint64_t malloc_bytes; /* memory samples' bytes (memory_stacks) */
};

/* A native frame (scry run --stacks): the module and symbol dladdr gave (symbol "" when the
 * address has no exported symbol), the address in the process that saw it and its offset from
 * the symbol (from the module's base without one). Merged by (module, symbol, offset). */
struct prof_nframe {
    const char *module, *symbol;
    uint64_t ip, offset;
};

/* A distinct chain of items, outermost first, and how many samples had it. */
struct prof_chain {
    uint32_t off, depth;
    uint64_t hits;
};

/* An item of a combined stack: a Python frame (file, func, line) or a native frame (native
 * set, nframe its index). */
struct prof_citem {
    bool native;
    uint32_t file, func, line, nframe;
};

/* A file none of whose samples was charged to a profiled frame, and the rule that excluded it. */
struct prof_excluded {
    const char *file;
    const char *rule;
    double sec;
};

/* A thread `scry record` sampled (parts with "threads"): how many of its samples found it
 * holding its interpreter's GIL. */
struct prof_thread {
    int64_t pid, native_id;
    uint64_t thread_id;
    const char *name; /* "" when threading does not know it */
    uint64_t samples, gil_samples;
};

struct profile {
    struct arena arena; /* every string and source line */
    /* From the primary part (the one whose pid is the program's, else the first merged). */
    int64_t pid;
    const char *python_version; /* NULL if no part said */
    const char **argv;
    size_t argc;
    double start_time_absolute;
    uint64_t main_thread_id;
    bool have_primary;
    /* Over every part. */
    double elapsed_sec; /* max */
    double off_sec;     /* the program's process: seconds profiling was off */
    /* @profile: the decorated functions of every part (file, qualname, first line); when there
     * are any, prof_finish keeps only their lines. */
    struct prof_decorated {
        const char *file, *name;
        uint32_t first;
    } *decorated;
    size_t ndecorated, cap_decorated;
    double sampling_rate_sec;
    bool virtual_time;
    bool memory_unsupported; /* a process asked for memory could not measure it (a
                                free-threaded build): it profiled CPU only */
    double python_sec, native_sec, sys_sec; /* every sample, charged or not */
    uint64_t samples, dropped;
    /* Over the parts that read their threads' schedstat (have_run_queue): how long the threads
     * waited for a CPU while runnable, and how long they ran. */
    bool have_run_queue;
    double run_queue_delay_sec, run_queue_cpu_sec;
    size_t nparts;
    /* Merged tables; after prof_finish lines are sorted by (file, line, func) and excluded by
     * seconds, largest first, at most PROF_MAX_EXCLUDED. */
    struct prof_file *files;
    size_t nfiles, cap_files;
    struct prof_func *funcs;
    size_t nfuncs, cap_funcs;
    struct prof_line *lines;
    size_t nlines, cap_lines;
    struct prof_excluded *excluded;
    size_t nexcluded, cap_excluded;
    bool have_stacks; /* some part recorded call stacks */
    struct prof_stack *stacks;
    size_t nstacks, cap_stacks;
    struct prof_sframe *sframes;
    size_t nsframes, cap_sframes;
    uint64_t stacks_overflow;
    bool have_native; /* some part recorded native and combined stacks */
    struct prof_nframe *nframes;
    size_t nnframes, cap_nframes;
    struct prof_chain *native_stacks; /* items: native_items (nframes indexes) */
    size_t nnative_stacks, cap_native_stacks;
    uint32_t *native_items;
    size_t nnative_items, cap_native_items;
    struct prof_chain *combined_stacks; /* items: combined_items */
    size_t ncombined_stacks, cap_combined_stacks;
    struct prof_citem *combined_items;
    size_t ncombined_items, cap_combined_items;
    uint64_t native_stacks_overflow, combined_stacks_overflow;
    struct prof_memory mem;
    struct prof_thread *threads; /* parts' "threads", in part order */
    size_t nthreads, cap_threads;
    bool have_threads;
    struct prof_sstream ss; /* the parts' sample streams (scry run --timeline) */
    /* Why the profile is empty (nothing sampled, everything filtered out), set by prof_finish;
     * the caller may replace it. NULL when the profile has lines. */
    const char *note;
    /* GPU: some part sampled a device (gpu_device: the first part's); the sources ("process",
     * "device", or "mixed" when parts differ); the parts' notes (why there is no GPU data, or
     * why it stops early), NULL when none. */
    bool gpu;
    const char *gpu_device, *gpu_util_source, *gpu_mem_source, *gpu_note;
    double gpu_sampler_cpu_sec;
    json_t *index; /* string keys -> table positions, for the merge */
};

void prof_init(struct profile *p);
void prof_free(struct profile *p);

/* Validates one part completely, then merges it; a bad part changes nothing and returns
 * -SCRY_E_BAD_PROFILE with a message naming `what` (its file name) and the problem.
 * primary_pid is the pid of the program's own process (0: none): that part's argv, version
 * and start time describe the program. */
int prof_add_part(struct profile *p, const json_t *part, const char *what, int64_t primary_pid);
/* Same, from the bytes of a part file. */
int prof_add_part_text(struct profile *p, const char *text, size_t len, const char *what,
                       int64_t primary_pid);

/* Sorts the tables, keeps the largest excluded files and writes the note. */
void prof_finish(struct profile *p);

/* The source of file i (its bytes, which need not end with a newline). The pseudo-file
 * <native> has none: setting it does nothing. */
int prof_set_source(struct profile *p, size_t i, const char *text, size_t len);

/* Appends the points of src to dst (0 or -SCRY_E_NO_MEMORY). */
int prof_timeline_append(struct prof_timeline *dst, const struct prof_point *pts, size_t n);
/* Sorts by time, then, when there are more than max points, merges runs of ceil(n / max)
 * neighbours into one that keeps the latest time and the largest footprint (the agent's rule),
 * so that peaks survive. */
void prof_timeline_reduce(struct prof_timeline *tl, size_t max);
void prof_timeline_free(struct prof_timeline *tl);

/* The machine was oversubscribed: the program's threads waited for a CPU at least
 * PROF_OVERSUBSCRIBED_RATIO of the time they ran (and at least PROF_OVERSUBSCRIBED_MIN_SEC in
 * all), so a good part of the system time is that wait, not I/O or sleep. */
#define PROF_OVERSUBSCRIBED_RATIO 0.10
#define PROF_OVERSUBSCRIBED_MIN_SEC 0.02
bool prof_oversubscribed(const struct profile *p);

/* Seconds charged to profiled lines (python + native + sys over every line). */
double prof_charged_sec(const struct profile *p);
/* Every sampled second, charged or not: the denominator of every percentage. */
double prof_total_sec(const struct profile *p);

#endif
