/* The agent's statistics: time per (file, line, function) split into python, native and system,
 * the totals, and the time of samples that no profiled file took (with the rule that excluded
 * it). Owned by the collector thread; written out as a part file at the end. */
#ifndef SCRY_AGENT_STATS_H
#define SCRY_AGENT_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hashmap.h"

enum ag_cat { AG_PYTHON, AG_NATIVE, AG_SYS };

/* Why a file is not profiled; AG_RULE_PROFILED when it is. */
enum ag_rule {
    AG_RULE_PROFILED,
    AG_RULE_NOT_A_FILE,
    AG_RULE_EXCLUDED,
    AG_RULE_NOT_IN_PROFILE_ONLY,
    AG_RULE_SYSTEM_LIBRARY,
    AG_RULE_OUTSIDE_PROGRAM,
};

const char *ag_rule_name(enum ag_rule r);

/* Interned strings: id -> string, string -> id. */
struct ag_strtab {
    struct hashmap by_hash; /* salted FNV-1a -> id + 1 */
    char **strs;
    size_t n, cap;
};

struct ag_file {
    uint32_t name;   /* string id */
    enum ag_rule rule;
    double excluded_sec;      /* on-CPU time of samples no profiled frame took */
    double excluded_idle_sec; /* off-CPU time of such samples (not in the totals) */
};

struct ag_func {
    uint32_t name; /* string id of the qualname */
    uint32_t file; /* file index */
    int32_t firstline;
};

struct ag_line {
    uint32_t file, func;
    int32_t line;
    double sec[3]; /* by enum ag_cat */
    uint64_t samples;
    /* GPU (gpu.c): the seconds its samples stood for while a GPU reading was published, and
     * those seconds weighted by the reading's load (0..1) and memory (MiB); the largest memory
     * reading. */
    double gpu_sec, gpu_load_sec, gpu_mem_mb_sec, gpu_peak_mb;
};

/* One frame of a call stack: a profiled file's function and line. */
struct ag_sframe {
    uint32_t file, func;
    int32_t line;
};

/* A distinct call stack (with --stacks): its frames are frames[off .. off+depth), outermost
 * first. */
struct ag_stack {
    uint32_t off, depth;
    double sec[3];
    uint64_t samples;
    uint64_t malloc_bytes; /* memory samples charged to this stack (with memory on) */
};

#define AG_MAX_STACKS 10000 /* distinct stacks kept; samples of further ones are counted apart */

/* A native frame (with --stacks): a code address named by dladdr in the collector. */
enum ag_nkind {
    AG_N_OTHER,
    AG_N_EVAL,       /* _PyEval_EvalFrameDefault: runs one group of Python frames */
    AG_N_STARTUP,    /* process or interpreter start-up (_start ... Py_RunMain) */
    AG_N_TRAMPOLINE, /* the signal return trampoline, the agent's own code */
};

struct ag_nframe {
    uint32_t module, symbol; /* string ids; symbol "" when unknown */
    uint64_t ip;             /* the raw address (return address past the call) */
    uint64_t offset;         /* ip - symbol's address, or ip - module base without a symbol */
    enum ag_nkind kind;
};

/* Distinct sequences of fixed-size items (native chains, combined stacks), counted. */
struct ag_chain {
    uint32_t off, depth; /* items [off, off + depth) */
    uint64_t hits;
};

struct ag_chains {
    size_t item_size;
    struct hashmap by_key;
    struct ag_chain *chains;
    size_t n, cap;
    unsigned char *items;
    size_t nitems, cap_items;
    uint64_t overflow; /* hits of chains beyond AG_MAX_STACKS */
};

/* An item of a combined stack: a profiled Python frame or a native frame. */
struct ag_citem {
    uint32_t native; /* 1: a is a native frame index */
    uint32_t a, b;   /* python: file, func */
    int32_t line;
};

struct ag_stats {
    struct ag_strtab strings;
    struct hashmap file_by_name; /* string id + 1 -> file index + 1 */
    struct ag_file *files;
    size_t nfiles, files_cap;
    struct hashmap func_by_key; /* hash(name, file, firstline) -> func index + 1 */
    struct ag_func *funcs;
    size_t nfuncs, funcs_cap;
    struct hashmap line_by_key; /* (file, func, line) -> line index + 1 */
    struct ag_line *lines;
    size_t nlines, lines_cap;
    struct hashmap stack_by_key; /* hash(frames) -> stack index + 1 */
    struct ag_stack *stacks;
    size_t nstacks, stacks_cap;
    struct ag_sframe *sframes;
    size_t nsframes, sframes_cap;
    uint64_t stacks_overflow; /* samples whose stack did not fit in AG_MAX_STACKS */
    struct hashmap nframe_by_addr; /* lookup address -> native frame index + 1 */
    struct ag_nframe *nframes;
    size_t nnframes, nframes_cap;
    struct ag_chains native_stacks;   /* uint32_t native frame indexes, outermost first */
    struct ag_chains combined_stacks; /* struct ag_citem, outermost first */
    struct ag_chains alloc_stacks; /* struct ag_sframe, outermost first: the profiled frames of
                                      malloc samples (with memory on; the heap join's stacks) */
    double total_sec[3];
    uint64_t samples, dropped, unattributed;
    double off_sec; /* seconds profiling was off (scry.stop(), --off, scry control) */
    double gpu_sec, gpu_load_sec; /* every line's, summed */
};

void ag_stats_init(struct ag_stats *st);
void ag_stats_free(struct ag_stats *st);
/* Index of the file, interning it (rule computed by the caller's filter on first sight). */
int ag_stats_file(struct ag_stats *st, const char *name, enum ag_rule (*filter)(const char *),
                  uint32_t *out);
int ag_stats_func(struct ag_stats *st, const char *qualname, uint32_t file, int32_t firstline,
                  uint32_t *out);
/* Adds a sample charged to a line. */
int ag_stats_add(struct ag_stats *st, uint32_t file, uint32_t func, int32_t line, enum ag_cat cat,
                 double sec);
/* Charges a GPU reading (load 0..1, memory MiB) for sec seconds of a sample to a line. */
int ag_stats_add_gpu(struct ag_stats *st, uint32_t file, uint32_t func, int32_t line, double sec,
                     double load, double mem_mb);
const char *ag_stats_str(const struct ag_stats *st, uint32_t id);
int ag_stats_intern(struct ag_stats *st, const char *s, uint32_t *out);
/* Interns a call stack (frames outermost first); *out is its index + 1, or 0 when the table is
 * full. */
int ag_stats_stack(struct ag_stats *st, const struct ag_sframe *frames, uint32_t depth,
                   uint32_t *out);
/* Interns a native frame by its lookup address (cached: dladdr runs once per address). */
int ag_stats_nframe(struct ag_stats *st, uint64_t addr, const struct ag_nframe *f, uint32_t *out);
bool ag_stats_nframe_find(const struct ag_stats *st, uint64_t addr, uint32_t *out);
/* Adds one hit to the chain of n items (at most AG_MAX_STACKS distinct; the rest overflow). */
int ag_chains_hit(struct ag_chains *c, const void *items, uint32_t n);
/* The same, with *at: the chain's index + 1 (0 when it did not fit). */
int ag_chains_hit_at(struct ag_chains *c, const void *items, uint32_t n, uint32_t *at);

#endif
