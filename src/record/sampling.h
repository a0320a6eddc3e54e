/* Sampling Python processes from outside (sampling.c): the core that `scry record --pid` and
 * `scry top` share. At every tick each Python thread's scheduler state (/proc) and stack
 * (process_vm_readv, cpython/frames.c) are read; the wall time since the thread's previous
 * sample is handed to the user of the sampler as one sample: cpu seconds when the thread runs
 * in the program (python, or native when the innermost frame rests on a call of the CALL family:
 * from outside there is no program counter), off seconds when it is off the CPU or in a system
 * call (system), with the stack's frames that the file filter profiles. What is made of the
 * samples (a part document, a table of functions) is the user's, through struct smp_hooks. */
#ifndef SCRY_RECORD_SAMPLING_H
#define SCRY_RECORD_SAMPLING_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "cpython/file_filter.h"
#include "cpython/frames.h"
#include "cpython/operators.h"
#include "cpython/runtime.h"

#define SMP_DEFAULT_RATE_HZ 100.0 /* --rate's range is the option table's (cli/option_table.c) */
#define SMP_MAX_DEPTH 256 /* frames read per thread and sample */

/* The kinds of time, the index of each in the users' [3] arrays. */
enum { SMP_PYTHON, SMP_NATIVE, SMP_SYS };

struct smp_opts {
    double rate;     /* samples per second */
    double duration; /* seconds; 0: none */
    bool subprocesses, idle, blocking, native;
    bool profile_all, system_libraries;
    const char *profile_only, *profile_exclude, *program_path;
};

/* One Python thread as last sampled. */
struct smp_thread {
    uint64_t tstate;
    int64_t tid;
    uint64_t thread_id;
    uint64_t wall_ns; /* at the previous sample */
    uint64_t samples, gil_samples;
    uint64_t sched_cpu_ns, sched_delay_ns; /* schedstat at the previous sample */
    char name[64];
    bool seen;      /* in this sample's list */
    bool running;   /* at the last sample: on a CPU in the program */
    bool holds_gil; /* at the last sample */
};

/* A process being sampled: how it is read, its threads and its interned names. */
struct smp_proc {
    int pid;
    struct rd_reader *rd;
    struct py_runtime rt;
    struct py_code_cache cc;
    struct py_op_cache ops; /* operator instructions' operand types (cpython/operators.h) */
    uint64_t cc_since;
    struct py_filter filter;
    char cwd[PATH_MAX];
    json_t *argv;
    double start_real;
    uint64_t start_ns, last_ns;
    uint64_t main_thread_id;
    bool ended;
    int failures; /* samples in a row that could not be read */
    struct smp_thread *threads;
    size_t nthreads, cap_threads;
    /* Interned names: files (name -> index, rows of names) and functions ("file:first:qualname"
     * -> index, rows [qualname, file, first line]): a part's own tables. */
    json_t *file_idx, *files, *func_idx, *funcs;
    int *file_rule; /* enum py_rule of each file */
    size_t cap_rules;
    uint64_t samples, dropped; /* thread samples handed to the hook; stacks that were not read */
    uint64_t ticks;            /* rounds in which the threads were listed */
    /* Over the sampled intervals: the threads' time on a CPU and waiting for one (schedstat). */
    bool have_run_queue;
    double rq_cpu_sec, rq_delay_sec;
    void *user; /* the hooks' own state */
};

/* One sample of one thread: the wall time since its previous sample. */
struct smp_sample {
    struct smp_thread *thread;
    const struct py_frame *frames; /* the whole stack, innermost first */
    size_t n;
    const uint32_t (*fr)[3]; /* its profiled frames [file, function, line], innermost first; a
                              * thread without a Python frame has <native> (if profiled) */
    size_t nprof;
    uint32_t first_file; /* the innermost frame's file (<native> without a frame) */
    int cpu_cat;         /* SMP_PYTHON or SMP_NATIVE: what cpu is */
    double cpu, off;     /* seconds on a CPU in the program; off it or in a system call */
    bool running;
};

struct smp_hooks {
    void *ctx;
    /* A process was opened (pr->user is NULL) or read afresh after an exec; may be NULL. */
    int (*open)(void *ctx, struct smp_proc *pr);
    int (*reopen)(void *ctx, struct smp_proc *pr);
    /* A process is being freed: its user state goes. May be NULL. */
    void (*release)(void *ctx, struct smp_proc *pr);
    /* One thread's sample. An error ends the loop. */
    int (*sample)(void *ctx, struct smp_proc *pr, const struct smp_sample *s);
    /* After each round (every process sampled): 1 ends the loop, *why saying why, a negative
     * error ends it with that error; may be NULL. */
    int (*tick)(void *ctx, const char **why);
    /* When input_fd >= 0, the waits between rounds end early when it is readable, and input is
     * called then. */
    int input_fd;
    void (*input)(void *ctx);
};

/* The processes being sampled: the first is the one asked for, the others its children found
 * with --subprocesses. */
struct smp_set {
    const struct smp_opts *o;
    const struct smp_hooks *h;
    const char *program_path; /* the filter's for every child */
    struct smp_proc **procs;
    size_t n, cap;
};

/* Opens pid as a Python process to sample (filter: program_path); NULL with the error recorded
 * (no_such_process, permission_denied with its hint, not_python, unsupported_python). */
struct smp_proc *smp_proc_open(int pid, const struct smp_opts *o, const struct smp_hooks *h,
                               const char *program_path);
void smp_proc_free(struct smp_proc *pr, const struct smp_hooks *h);
/* Samples every process of set at o->rate until o->duration, SIGINT or SIGTERM (after
 * smp_install_stop_handlers), the tick hook, or the end of the first process; *why says which
 * ("the duration ended", "the process exited", "interrupted (SIGINT)", ...). Children found
 * with --subprocesses are added to set. Returns 0 or an error (out of memory, the hooks'). */
int smp_loop(struct smp_set *set, const char **why);
/* SIGINT and SIGTERM end smp_loop (the signal is kept in smp_stop_signal). */
void smp_install_stop_handlers(void);
extern volatile sig_atomic_t smp_stop_signal;
/* co_filename made absolute against the process's working directory (as the agent does). */
void smp_absolute_name(const struct smp_proc *pr, const char *name, char *out, size_t size);
/* The index of key in idx, else row (stolen) appended to rows under a new index. */
int smp_intern(json_t *idx, json_t *rows, const char *key, json_t *row, size_t *out);
/* The profiled frames of a stack (innermost first) as [file, function, line], with their
 * eval-loop group when grp is given; *first_file: the innermost frame's file. */
int smp_profiled_frames(struct smp_proc *pr, const struct py_frame *frames, size_t n,
                        uint32_t (*fr)[3], uint8_t *grp, size_t *nprof, uint32_t *first_file);
uint64_t smp_mono_ns(void);

/* ---- the options record and top share ---- */

/* The defaults: 100 Hz, no duration, the default file filter. */
void smp_opts_init(struct smp_opts *o);
/* Option id (an enum opt_id of cli/options.h, its value p->arg, p->num, p->ival checked by the
 * option table) if it is one of the shared ones (--pid, --duration, --rate, --subprocesses,
 * --idle and the file filter): 1 when it was, 0 when it is not. */
struct opt_parser;
int smp_parse_option(int id, const struct opt_parser *p, struct smp_opts *o, int *pid);
/* --program-path made absolute in buf (a usage error unless it is a directory). */
int smp_resolve_program_path(struct smp_opts *o, char *buf);

/* What the profile says the program is, from the target's command line: the script (made
 * absolute), its directory and its arguments; -m and -c programs have no directory. */
struct smp_program {
    char program[PATH_MAX], entry_dir[PATH_MAX], program_path[PATH_MAX];
    const char **args;
    size_t nargs;
};
/* The program of the process's command line; pg->args must be freed. */
void smp_describe_program(const struct smp_proc *pr, const struct smp_opts *o,
                          struct smp_program *pg);
/* Opens pid as set's first process (set->o and set->h filled in) and describes its program
 * into pg, whose program path the filter of it and of its children is. Returns 0 or a
 * recorded error (smp_proc_open's). */
int smp_set_open(struct smp_set *set, int pid, struct smp_program *pg);
/* Frees every process of set. */
void smp_set_free(struct smp_set *set);

#endif
