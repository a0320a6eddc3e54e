/* `scry record --pid PID`: a sampling CPU profiler from outside the process, in the manner of
 * py-spy record, that writes the profile `scry run` writes. At every tick each Python thread's
 * scheduler state (/proc) and stack (process_vm_readv, cpython/frames.c) are read; the wall time
 * since the thread's previous sample is charged at its first profiled frame: system when the
 * thread is off the CPU, native when it runs on a call that may be into C (the CALL family:
 * from outside there is no program counter), else python. Each process's statistics become a
 * part document (docs/agent-protocol.md, "Part file") merged by analysis/profile.c, so every
 * view and export works on the result unchanged (docs/json-schema.md, "A recorded profile"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "analysis/profile.h"
#include "cli/cli.h"
#include "cli/record_native.h"
#include "common/arena.h"
#include "common/error.h"
#include "common/grow.h"
#include "common/log.h"
#include "common/outfile.h"
#include "common/sanitize.h"
#include "cpython/file_filter.h"
#include "cpython/frames.h"
#include "cpython/opcodes.h"
#include "cpython/runtime.h"
#include "cpython/threads.h"
#include "reader/reader.h"
#include "render/profile_json.h"

const char cmd_record_usage[] =
    "usage: scry record --pid PID [options]\n"
    "\n"
    "Samples a running Python process from outside (it needs no restart and loads nothing) and\n"
    "writes the profile `scry run` writes: python, native and system time per line and function,\n"
    "with call stacks, so that scry view, flamegraph and the exports work on it. Recording ends\n"
    "after --duration, on Ctrl-C or SIGTERM, or when the process exits; the profile is written\n"
    "then, and scry exits 0.\n"
    "\n"
    "  -p, --pid PID                   the process to record\n"
    "  -d, --duration S                stop after S seconds (default: until Ctrl-C or its exit)\n"
    "  -o, --outfile FILE              where to write the profile (default scry-profile.json)\n"
    "  -r, --rate HZ                   samples per second (default 100, at most 10000)\n"
    "      --subprocesses              also record its children (and theirs) that run Python\n"
    "      --idle                      also count the off-CPU time of threads with none of your\n"
    "                                  code on their stack (as system time, in no line)\n"
    "      --blocking                  stop the process while each sample is read (consistent\n"
    "                                  stacks; slows it down)\n"
    "      --native                    also the native call chain of each running thread\n"
    "                                  (libunwind-ptrace; stops the process for each sample)\n"
    "      --profile-all               profile every file, the standard library included\n"
    "      --profile-only A,B          only files whose path contains one of these\n"
    "      --profile-exclude A,B       never files whose path contains one of these\n"
    "      --profile-system-libraries  also profile the standard library and site-packages\n"
    "      --program-path DIR          your code: files under DIR are profiled (default: the\n"
    "                                  script's directory, else the process's working directory)\n"
    ;

#define DEFAULT_RATE_HZ 100.0
#define MAX_RATE_HZ 10000.0
#define MAX_DEPTH 256            /* frames read per thread and sample */
#define CHILD_SCAN_NS 200000000ULL /* --subprocesses: look for new children every 200 ms */
#define CODE_CACHE_NS 2000000000ULL /* code objects are read afresh every 2 s (memory reuse) */
#define CHILD_OPEN_TRIES 10      /* a child that is not (yet) Python: tries, one per scan */
#define NATIVE_DEPTH 64          /* native frames kept per chain, from the innermost */
#define MAX_CHAINS 10000         /* distinct native / combined chains kept per process */
#define REOPEN_AFTER 10          /* failed samples in a row of a live process: read it afresh */

struct rec_opts {
    int pid;
    double duration; /* 0: none */
    double rate;
    const char *outfile;
    bool subprocesses, idle, blocking, native;
    bool profile_all, system_libraries;
    const char *profile_only, *profile_exclude, *program_path;
};

/* One Python thread as last sampled. */
struct rec_thread {
    uint64_t tstate;
    int64_t tid;
    uint64_t thread_id;
    uint64_t cpu_ns, wall_ns; /* at the previous sample */
    uint64_t samples, gil_samples;
    uint64_t sched_cpu_ns, sched_delay_ns; /* schedstat at the previous sample */
    char name[64];
    bool seen; /* in this sample's list */
};

struct rec_line {
    uint32_t file, func;
    int32_t line;
    double sec[3];
    uint64_t samples;
};

struct rec_stack {
    json_t *frames; /* [[file, func, line], ...] outermost first */
    double sec[3];
    uint64_t samples;
};

enum { CAT_PYTHON, CAT_NATIVE, CAT_SYS };

/* A process being recorded and its statistics, in the part's own terms. */
struct rec_proc {
    int pid;
    struct rd_reader *rd;
    struct py_runtime rt;
    struct py_code_cache cc;
    uint64_t cc_since;
    struct py_filter filter;
    char cwd[PATH_MAX];
    json_t *argv;
    double start_real;
    uint64_t start_ns, last_ns;
    uint64_t main_thread_id;
    bool ended;
    int failures; /* samples in a row that could not be read */
    struct rec_thread *threads;
    size_t nthreads, cap_threads;
    /* Interned tables: names -> index in json objects, rows in json arrays / C arrays. */
    json_t *file_idx, *files, *func_idx, *funcs, *line_idx, *stack_idx, *excl;
    int *file_rule;
    size_t cap_rules;
    struct rec_line *lines;
    size_t nlines, cap_lines;
    struct rec_stack *stacks;
    size_t nstacks, cap_stacks;
    double total[3];
    uint64_t samples, dropped;
    /* Over the sampled intervals: the threads' time on a CPU and waiting for one (schedstat). */
    bool have_run_queue;
    double rq_cpu_sec, rq_delay_sec;
    /* --native: the unwinder, native frames [module, symbol, ip, offset] by key, and the
     * distinct native and combined chains (key -> [items, hits]). */
    struct rn_proc *rn;
    json_t *nframe_idx, *nframes, *native_chains, *combined_chains;
    uint64_t native_overflow, combined_overflow;
};

/* A pid found among the children that is not (yet) recordable, and how often it was tried. */
struct rec_candidate {
    int pid;
    int tries;
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
    stop_signal = sig;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- options ---- */

enum { O_SUBPROC = 1000, O_IDLE, O_BLOCKING, O_ALL, O_ONLY, O_EXCLUDE, O_SYSLIB, O_PPATH,
       O_NATIVE };

static int parse(int argc, char **argv, struct rec_opts *o, bool *help)
{
    static const struct option longopts[] = {
        {"pid", required_argument, NULL, 'p'},
        {"duration", required_argument, NULL, 'd'},
        {"outfile", required_argument, NULL, 'o'},
        {"rate", required_argument, NULL, 'r'},
        {"subprocesses", no_argument, NULL, O_SUBPROC},
        {"idle", no_argument, NULL, O_IDLE},
        {"blocking", no_argument, NULL, O_BLOCKING},
        {"native", no_argument, NULL, O_NATIVE},
        {"profile-all", no_argument, NULL, O_ALL},
        {"profile-only", required_argument, NULL, O_ONLY},
        {"profile-exclude", required_argument, NULL, O_EXCLUDE},
        {"profile-system-libraries", no_argument, NULL, O_SYSLIB},
        {"program-path", required_argument, NULL, O_PPATH},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->rate = DEFAULT_RATE_HZ;
    o->outfile = "scry-profile.json";
    o->profile_only = o->profile_exclude = "";
    *help = false;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "+:p:d:o:r:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (!cli_parse_pid(optarg, &o->pid))
                return cli_usage("--pid needs a process id, not '%s'", optarg);
            break;
        case 'd':
            if (!cli_parse_amount(optarg, &o->duration) || o->duration <= 0)
                return cli_usage("--duration needs a number of seconds above 0, not '%s'",
                                 optarg);
            break;
        case 'o':
            if (!*optarg)
                return cli_usage("--outfile needs a file name");
            o->outfile = optarg;
            break;
        case 'r':
            if (!cli_parse_amount(optarg, &o->rate) || o->rate < 1 || o->rate > MAX_RATE_HZ)
                return cli_usage("--rate needs samples per second from 1 to %.0f, not '%s'",
                                 MAX_RATE_HZ, optarg);
            break;
        case O_SUBPROC:
            o->subprocesses = true;
            break;
        case O_IDLE:
            o->idle = true;
            break;
        case O_BLOCKING:
            o->blocking = true;
            break;
        case O_NATIVE:
            o->native = true;
            break;
        case O_ALL:
            o->profile_all = true;
            break;
        case O_ONLY:
            o->profile_only = optarg;
            break;
        case O_EXCLUDE:
            o->profile_exclude = optarg;
            break;
        case O_SYSLIB:
            o->system_libraries = true;
            break;
        case O_PPATH:
            o->program_path = optarg;
            break;
        case 'h':
            *help = true;
            return 0;
        default:
            return cli_option_error(c, argv);
        }
    }
    if (optind < argc)
        return cli_usage("unexpected argument '%s'", argv[optind]);
    if (!o->pid)
        return cli_usage("scry record needs --pid PID");
    return 0;
}

/* ---- the target's /proc ---- */

/* The whole of a small /proc file, NUL-terminated; -1 if unreadable. */
static ssize_t read_proc(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < size) {
        ssize_t r = read(fd, buf + n, size - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    return (ssize_t)n;
}

/* A thread's nanoseconds on a CPU and waiting on a run queue (schedstat's first two fields);
 * false if it is gone or the kernel keeps no schedstat. */
static bool thread_sched(int pid, int64_t tid, uint64_t *cpu, uint64_t *delay)
{
    char path[96], buf[128];
    snprintf(path, sizeof(path), "/proc/%d/task/%lld/schedstat", pid, (long long)tid);
    unsigned long long c, d;
    if (read_proc(path, buf, sizeof(buf)) <= 0 || sscanf(buf, "%llu %llu", &c, &d) != 2)
        return false;
    *cpu = c;
    *delay = d;
    return true;
}

/* A thread's scheduler state letter now (/proc/PID/task/TID/stat), 0 if it is gone. */
static char thread_state(int pid, int64_t tid)
{
    char path[96], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/task/%lld/stat", pid, (long long)tid);
    if (read_proc(path, buf, sizeof(buf)) <= 0)
        return 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

/* Whether a runnable thread is inside a system call (/proc/PID/task/TID/syscall names one): a
 * thread woken from a sleep or a read, waiting for a CPU to return to the program. A thread on
 * a CPU reads "running", one preempted in the program "-1 ...". */
static bool in_syscall(int pid, int64_t tid)
{
    char path[96], buf[64];
    snprintf(path, sizeof(path), "/proc/%d/task/%lld/syscall", pid, (long long)tid);
    return read_proc(path, buf, sizeof(buf)) > 0 && buf[0] >= '0' && buf[0] <= '9';
}

static json_t *proc_argv(int pid)
{
    char path[64], buf[16384];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    ssize_t n = read_proc(path, buf, sizeof(buf));
    json_t *a = json_array();
    for (ssize_t i = 0; a && i < n; i += (ssize_t)strlen(buf + i) + 1)
        json_array_append_new(a, json_string(buf + i));
    return a;
}

/* ---- tables ---- */

static int intern(json_t *idx, json_t *rows, const char *key, json_t *row, size_t *out)
{
    json_t *v = json_object_get(idx, key);
    if (v) {
        json_decref(row);
        *out = (size_t)json_integer_value(v);
        return 0;
    }
    *out = json_array_size(rows);
    if (!row || json_array_append_new(rows, row) ||
        json_object_set_new(idx, key, json_integer((json_int_t)*out)))
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    return 0;
}

/* co_filename made absolute against the process's working directory (as the agent does). */
static void absolute_name(const struct rec_proc *pr, const char *name, char *out, size_t size)
{
    if (name[0] == '/' || name[0] == '<' || !pr->cwd[0])
        snprintf(out, size, "%s", name);
    else
        snprintf(out, size, "%s/%s", pr->cwd, name);
}

static int file_index(struct rec_proc *pr, const char *name, uint32_t *out)
{
    size_t i;
    int err = intern(pr->file_idx, pr->files, name, json_string(name), &i);
    if (err)
        return err;
    if (i >= pr->cap_rules) {
        if (grow_array(&pr->file_rule, &pr->cap_rules, i + 1, sizeof(*pr->file_rule)))
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    if (i + 1 == json_array_size(pr->files))
        pr->file_rule[i] = !strcmp(name, PROF_NATIVE_FILE)
                               ? (int)py_filter_pseudo(&pr->filter, name)
                               : (int)py_filter_classify(&pr->filter, name);
    *out = (uint32_t)i;
    return 0;
}

static int func_index(struct rec_proc *pr, const char *qualname, uint32_t file, int first,
                      uint32_t *out)
{
    char key[8192];
    snprintf(key, sizeof(key), "%u:%d:%s", file, first, qualname);
    size_t i;
    int err = intern(pr->func_idx, pr->funcs, key, json_pack("[siI]", qualname, (int)file,
                                                               (json_int_t)first), &i);
    *out = (uint32_t)i;
    return err;
}

static int charge_line(struct rec_proc *pr, uint32_t file, uint32_t func, int line, int cat,
                       double sec)
{
    char key[64];
    snprintf(key, sizeof(key), "%u:%u:%d", file, func, line);
    json_t *v = json_object_get(pr->line_idx, key);
    size_t i;
    if (v) {
        i = (size_t)json_integer_value(v);
    } else {
        if (grow_array(&pr->lines, &pr->cap_lines, pr->nlines + 1, sizeof(*pr->lines)) ||
            json_object_set_new(pr->line_idx, key, json_integer((json_int_t)pr->nlines)))
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
        i = pr->nlines++;
        pr->lines[i] = (struct rec_line){.file = file, .func = func, .line = line};
    }
    pr->lines[i].sec[cat] += sec;
    pr->lines[i].samples++;
    return 0;
}

/* The stack's profiled frames (given innermost first) as one distinct stack. */
static int charge_stack(struct rec_proc *pr, const uint32_t (*fr)[3], size_t n, int cat,
                        double sec)
{
    struct strbuf key = STRBUF_INIT;
    for (size_t k = n; k-- > 0;)
        sb_addf(&key, "%u:%u:%u;", fr[k][0], fr[k][1], fr[k][2]);
    const char *ks = sb_str(&key);
    json_t *v = json_object_get(pr->stack_idx, ks);
    size_t i;
    int err = 0;
    if (v) {
        i = (size_t)json_integer_value(v);
    } else {
        json_t *frames = json_array();
        for (size_t k = n; frames && k-- > 0;)
            json_array_append_new(frames, json_pack("[iii]", (int)fr[k][0], (int)fr[k][1],
                                                    (int)fr[k][2]));
        if (!frames ||
            grow_array(&pr->stacks, &pr->cap_stacks, pr->nstacks + 1, sizeof(*pr->stacks)) ||
            json_object_set_new(pr->stack_idx, ks, json_integer((json_int_t)pr->nstacks))) {
            json_decref(frames);
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
            goto out;
        }
        i = pr->nstacks++;
        pr->stacks[i] = (struct rec_stack){.frames = frames};
    }
    pr->stacks[i].sec[cat] += sec;
    pr->stacks[i].samples++;
out:
    sb_release(&key);
    return err;
}

static void charge_excluded(struct rec_proc *pr, uint32_t file, double sec)
{
    const char *name = json_string_value(json_array_get(pr->files, file));
    json_t *v = json_object_get(pr->excl, name);
    json_object_set_new(pr->excl, name, json_real((v ? json_real_value(v) : 0) + sec));
}

/* ---- sampling ---- */

static struct rec_thread *thread_slot(struct rec_proc *pr, const struct py_thread *t)
{
    for (size_t i = 0; i < pr->nthreads; i++)
        if (pr->threads[i].tstate == t->tstate && pr->threads[i].tid == t->native_id)
            return &pr->threads[i];
    if (grow_array(&pr->threads, &pr->cap_threads, pr->nthreads + 1, sizeof(*pr->threads)))
        return NULL;
    struct rec_thread *s = &pr->threads[pr->nthreads++];
    *s = (struct rec_thread){.tstate = t->tstate, .tid = t->native_id,
                             .thread_id = t->thread_id};
    return s;
}

/* Whether the innermost frame rests on a call that may be into C (the agent's rule, without
 * the program counter: from outside there is none). */
static bool on_c_call(struct rec_proc *pr, const struct py_frame *f)
{
    uint8_t unit[2];
    if (f->lasti < 0 || (uint64_t)f->lasti >= f->code->nunits)
        return false;
    if (rd_read(pr->rd, f->code->addr + pr->rt.layout.co_code_adaptive + (uint64_t)f->lasti * 2,
                unit, 2) != 0)
        return false;
    return py_opcode_is_call(pr->rt.minor, unit[0]);
}

/* The profiled frames of a stack (innermost first) as [file, function, line], with their
 * eval-loop group when grp is given; *first_file: the innermost frame's file. */
static int profiled_frames(struct rec_proc *pr, const struct py_frame *frames, size_t n,
                           uint32_t (*fr)[3], uint8_t *grp, size_t *nprof, uint32_t *first_file)
{
    *nprof = 0;
    *first_file = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 1024];
        uint32_t file, func;
        int err;
        absolute_name(pr, frames[i].code->filename, path, sizeof(path));
        if ((err = file_index(pr, path, &file)))
            return err;
        if (i == 0)
            *first_file = file;
        if (pr->file_rule[file] != PY_RULE_PROFILED)
            continue;
        if ((err = func_index(pr, frames[i].code->qualname, file, frames[i].code->firstlineno,
                              &func)))
            return err;
        fr[*nprof][0] = file;
        fr[*nprof][1] = func;
        fr[*nprof][2] = (uint32_t)(frames[i].line > 0 ? frames[i].line : 0);
        if (grp)
            grp[*nprof] = frames[i].group;
        (*nprof)++;
    }
    return 0;
}

/* Charges one thread's interval: cpu seconds on the CPU (python or native by where it is),
 * off seconds off it (system), at the first profiled frame of its stack. */
static int charge(struct rec_proc *pr, const struct rec_opts *o, const struct py_frame *frames,
                  size_t n, double cpu, double off)
{
    uint32_t fr[MAX_DEPTH][3];
    size_t nprof = 0;
    uint32_t first_file = UINT32_MAX;
    bool native = n == 0 || on_c_call(pr, &frames[0]);
    int err = profiled_frames(pr, frames, n, fr, NULL, &nprof, &first_file);
    if (err)
        return err;
    if (n == 0) {
        /* A thread with no Python frame (not started yet, or in C only): <native>. */
        uint32_t file, func;
        if ((err = file_index(pr, PROF_NATIVE_FILE, &file)) ||
            (err = func_index(pr, PROF_NATIVE_FILE, file, 0, &func)))
            return err;
        first_file = file;
        if (pr->file_rule[file] == PY_RULE_PROFILED) {
            fr[0][0] = file;
            fr[0][1] = func;
            fr[0][2] = 0;
            nprof = 1;
        }
    }
    pr->samples++;
    int cpu_cat = native ? CAT_NATIVE : CAT_PYTHON;
    pr->total[cpu_cat] += cpu;
    if (nprof == 0) {
        /* Nothing of your code: the CPU time counts in the totals and says which file took it;
         * the off-CPU time only with --idle. */
        if (o->idle)
            pr->total[CAT_SYS] += off;
        charge_excluded(pr, first_file, cpu + off);
        return 0;
    }
    pr->total[CAT_SYS] += off;
    if (cpu > 0 && (err = charge_line(pr, fr[0][0], fr[0][1], (int)fr[0][2], cpu_cat, cpu)))
        return err;
    if (off > 0 && (err = charge_line(pr, fr[0][0], fr[0][1], (int)fr[0][2], CAT_SYS, off)))
        return err;
    if (cpu > 0 && (err = charge_stack(pr, fr, nprof, cpu_cat, cpu)))
        return err;
    if (off > 0 && (err = charge_stack(pr, fr, nprof, CAT_SYS, off)))
        return err;
    return 0;
}

/* Counts one hit of the chain (items: a JSON array, stolen) in chains, keyed by its text. */
static int chain_hit(json_t *chains, json_t *items, uint64_t *overflow)
{
    char *key = json_dumps(items, JSON_COMPACT);
    int err = 0;
    if (!key) {
        json_decref(items);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    json_t *c = json_object_get(chains, key);
    if (c) {
        json_array_set_new(c, 1, json_integer(json_integer_value(json_array_get(c, 1)) + 1));
        json_decref(items);
    } else if (json_object_size(chains) >= MAX_CHAINS) {
        (*overflow)++;
        json_decref(items);
    } else if (json_object_set_new(chains, key, json_pack("[oi]", items, 1))) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    free(key);
    return err;
}

/* The native frame of ips[i] (innermost first) as an index into the part's native_frames. */
static int nframe_index(struct rec_proc *pr, const uint64_t *ips, size_t i, size_t *out,
                        bool *eval)
{
    const char *module, *symbol;
    uint64_t offset;
    int err = rn_name(pr->rn, ips[i], i == 0, &module, &symbol, &offset, eval);
    if (err)
        return err;
    char key[8192];
    snprintf(key, sizeof(key), "%s\x1f%s\x1f%llu", module, symbol, (unsigned long long)offset);
    return intern(pr->nframe_idx, pr->nframes, key,
                  json_pack("[ssII]", module, symbol, (json_int_t)ips[i], (json_int_t)offset), out);
}

/* --native: the running thread's native chain (it is stopped), and the combined stack in which
 * each call of the eval loop is replaced by the profiled Python frames it runs (the agent's
 * rules, docs/agent-protocol.md: the k-th eval-loop frame from the leaf runs the frames of group
 * k; frames under the outermost eval loop are left out; groups the chain lacks come first). */
static int charge_native(struct rec_proc *pr, const struct py_frame *frames, size_t n, int64_t tid)
{
    uint64_t ips[NATIVE_DEPTH];
    size_t nips, idx[NATIVE_DEPTH];
    bool eval[NATIVE_DEPTH];
    int err = rn_unwind(pr->rn, (int)tid, ips, NATIVE_DEPTH, &nips);
    if (err || nips == 0)
        return 0; /* a thread that cannot be unwound has no chain this time */
    size_t outermost_eval = SIZE_MAX, nevals = 0;
    for (size_t i = 0; i < nips; i++) {
        if ((err = nframe_index(pr, ips, i, &idx[i], &eval[i])))
            return err;
        if (eval[i]) {
            outermost_eval = i;
            nevals++;
        }
    }
    json_t *nat = json_array();
    for (size_t i = nips; nat && i-- > 0;)
        json_array_append_new(nat, json_integer((json_int_t)idx[i]));
    if (!nat)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if ((err = chain_hit(pr->native_chains, nat, &pr->native_overflow)))
        return err;

    /* The profiled Python frames, with their group, innermost first. */
    uint32_t fr[MAX_DEPTH][3];
    uint8_t grp[MAX_DEPTH];
    size_t nprof = 0;
    uint32_t first_file;
    if ((err = profiled_frames(pr, frames, n, fr, grp, &nprof, &first_file)))
        return err;
    if (nprof == 0)
        return 0;
    json_t *items = json_array();
    if (!items)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    /* Groups the chain has no eval-loop frame for, outermost first. */
    for (size_t k = nprof; k-- > 0;)
        if (grp[k] >= nevals)
            json_array_append_new(items, json_pack("[iii]", (int)fr[k][0], (int)fr[k][1],
                                                   (int)fr[k][2]));
    size_t from = outermost_eval != SIZE_MAX ? outermost_eval : nips - 1;
    size_t g = nevals;
    for (size_t i = from + 1; i-- > 0;) {
        if (!eval[i]) {
            json_array_append_new(items, json_pack("[I]", (json_int_t)idx[i]));
            continue;
        }
        g--; /* the g-th eval-loop call from the leaf runs group g */
        for (size_t k = nprof; k-- > 0;)
            if (grp[k] == g)
                json_array_append_new(items, json_pack("[iii]", (int)fr[k][0], (int)fr[k][1],
                                                       (int)fr[k][2]));
    }
    if (json_array_size(items) == 0 || json_array_size(items) > PROF_MAX_DEPTH) {
        json_decref(items);
        return 0;
    }
    return chain_hit(pr->combined_chains, items, &pr->combined_overflow);
}

/* One sample of every Python thread of the process. Returns 0, or an error when the process
 * can no longer be read (it has exited, or is exiting). */
static int sample_proc(struct rec_proc *pr, const struct rec_opts *o, struct py_frame *frames)
{
    struct arena a = ARENA_INIT;
    struct py_thread *th;
    size_t nth;
    uint64_t now = mono_ns();
    if (now - pr->cc_since >= CODE_CACHE_NS) {
        /* A code object's memory can be reused by another: forget them now and then. */
        py_code_cache_free(&pr->cc);
        py_code_cache_init(&pr->cc);
        pr->cc_since = now;
    }
    /* Scheduler states first: once stopped (--blocking), every thread looks idle. */
    const struct rd_thread *os;
    size_t nos;
    int perr = rd_threads(pr->rd, &os, &nos);
    if (perr) {
        arena_free(&a);
        return perr;
    }
    if (o->blocking || o->native) {
        perr = rd_pause(pr->rd);
        if (perr) {
            arena_free(&a);
            return perr;
        }
    }
    int err = py_list_threads(&pr->rt, &a, &th, &nth);
    if (err) {
        pr->dropped++;
        goto out;
    }
    for (size_t i = 0; i < pr->nthreads; i++)
        pr->threads[i].seen = false;
    for (size_t i = 0; i < nth; i++) {
        struct rec_thread *s = thread_slot(pr, &th[i]);
        if (!s) {
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
            goto out;
        }
        s->seen = true;
        if (th[i].native_id == pr->pid)
            pr->main_thread_id = th[i].thread_id;
        if (th[i].name)
            snprintf(s->name, sizeof(s->name), "%s", th[i].name);
        char st = cli_thread_state(os, nos, th[i].native_id);
        if (!st)
            continue; /* ended between the two lists */
        bool first = s->wall_ns == 0;
        double dwall = first ? 0 : (double)(now - s->wall_ns) / 1e9;
        s->wall_ns = now;
        uint64_t scpu, sdelay;
        if (thread_sched(pr->pid, th[i].native_id, &scpu, &sdelay)) {
            if (!first && scpu >= s->sched_cpu_ns && sdelay >= s->sched_delay_ns) {
                pr->have_run_queue = true;
                pr->rq_cpu_sec += (double)(scpu - s->sched_cpu_ns) / 1e9;
                pr->rq_delay_sec += (double)(sdelay - s->sched_delay_ns) / 1e9;
            }
            s->sched_cpu_ns = scpu;
            s->sched_delay_ns = sdelay;
        }
        if (first)
            continue; /* counted from now on */
        size_t n = 0;
        bool truncated;
        int serr = py_thread_stack(&pr->rt, &pr->cc, th[i].tstate, frames, MAX_DEPTH, &n,
                                   &truncated);
        s->samples++;
        if (th[i].holds_gil)
            s->gil_samples++;
        if (serr && n == 0) {
            pr->dropped++;
            continue;
        }
        /* Off the CPU, or on it in the kernel (a system call): system time. The state is read
         * again right after the stack, so that both describe the same moment (a stopped
         * process keeps the state read before it was stopped). */
        if (!o->blocking && !o->native)
            st = thread_state(pr->pid, th[i].native_id);
        bool running = st == 'R' && !in_syscall(pr->pid, th[i].native_id);
        if ((err = charge(pr, o, frames, n, running ? dwall : 0, running ? 0 : dwall)))
            goto out;
        if (o->native && running && (err = charge_native(pr, frames, n, th[i].native_id)))
            goto out;
    }
    /* A thread gone from the lists keeps its slot only for its GIL counts. */
    size_t k = 0;
    for (size_t i = 0; i < pr->nthreads; i++)
        if (pr->threads[i].seen || pr->threads[i].samples)
            pr->threads[k++] = pr->threads[i];
    pr->nthreads = k;
    pr->last_ns = now;
out:
    if (o->blocking || o->native)
        rd_resume(pr->rd);
    arena_free(&a);
    return err;
}

/* ---- processes ---- */

static void proc_free(struct rec_proc *pr)
{
    if (pr->rd)
        rd_close(pr->rd);
    py_code_cache_free(&pr->cc);
    json_decref(pr->argv);
    json_decref(pr->file_idx);
    json_decref(pr->files);
    json_decref(pr->func_idx);
    json_decref(pr->funcs);
    json_decref(pr->line_idx);
    json_decref(pr->stack_idx);
    json_decref(pr->excl);
    json_decref(pr->nframe_idx);
    json_decref(pr->nframes);
    json_decref(pr->native_chains);
    json_decref(pr->combined_chains);
    rn_proc_free(pr->rn);
    for (size_t i = 0; i < pr->nstacks; i++)
        json_decref(pr->stacks[i].frames);
    free(pr->stacks);
    free(pr->lines);
    free(pr->threads);
    free(pr->file_rule);
    free(pr);
}

/* Opens pid as a Python process to record; NULL with the error recorded if it is not one. */
static struct rec_proc *proc_open(int pid, const struct rec_opts *o, const char *program_path)
{
    struct rec_proc *pr = calloc(1, sizeof(*pr));
    if (!pr) {
        err_fail(SCRY_E_NO_MEMORY, "out of memory");
        return NULL;
    }
    pr->pid = pid;
    py_code_cache_init(&pr->cc);
    int err = rd_open_pid(pid, &pr->rd);
    if (!err)
        err = py_runtime_open(pr->rd, &pr->rt);
    if (err) {
        cli_target_error(pid);
        proc_free(pr);
        return NULL;
    }
    char link[64];
    snprintf(link, sizeof(link), "/proc/%d/cwd", pid);
    ssize_t n = readlink(link, pr->cwd, sizeof(pr->cwd) - 1);
    pr->cwd[n > 0 ? n : 0] = 0;
    pr->filter = (struct py_filter){
        .profile_all = o->profile_all,
        .system_libraries = o->system_libraries,
        .program_path = program_path,
        .profile_only = o->profile_only,
        .profile_exclude = o->profile_exclude,
    };
    uint64_t interp;
    if (py_interp_head(&pr->rt, &interp) == 0 && interp)
        py_filter_read_prefixes(&pr->filter, &pr->rt, interp);
    pr->argv = proc_argv(pid);
    pr->file_idx = json_object();
    pr->files = json_array();
    pr->func_idx = json_object();
    pr->funcs = json_array();
    pr->line_idx = json_object();
    pr->stack_idx = json_object();
    pr->excl = json_object();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    pr->start_real = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    pr->start_ns = pr->last_ns = pr->cc_since = mono_ns();
    if (o->native) {
        pr->rn = rn_proc_new(pr->rd);
        pr->nframe_idx = json_object();
        pr->nframes = json_array();
        pr->native_chains = json_object();
        pr->combined_chains = json_object();
    }
    if (!pr->argv || !pr->file_idx || !pr->files || !pr->func_idx || !pr->funcs ||
        !pr->line_idx || !pr->stack_idx || !pr->excl ||
        (o->native && (!pr->rn || !pr->nframe_idx || !pr->nframes || !pr->native_chains ||
                       !pr->combined_chains))) {
        err_fail(SCRY_E_NO_MEMORY, "out of memory");
        proc_free(pr);
        return NULL;
    }
    return pr;
}

/* A live process whose reads keep failing has exec'd (a forked child that became another
 * program): its runtime is found afresh; its statistics so far are kept. */
static int proc_reopen(struct rec_proc *pr)
{
    rd_close(pr->rd);
    pr->rd = NULL;
    int err = rd_open_pid(pr->pid, &pr->rd);
    if (!err)
        err = py_runtime_open(pr->rd, &pr->rt);
    if (err)
        return err;
    py_code_cache_free(&pr->cc);
    py_code_cache_init(&pr->cc);
    if (pr->rn) {
        /* Its modules are another program's now, and it named them through the old reader. */
        rn_proc_free(pr->rn);
        if (!(pr->rn = rn_proc_new(pr->rd)))
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    pr->failures = 0;
    pr->filter.prefixes_known = false;
    uint64_t interp;
    if (py_interp_head(&pr->rt, &interp) == 0 && interp)
        py_filter_read_prefixes(&pr->filter, &pr->rt, interp);
    json_t *argv = proc_argv(pr->pid);
    if (argv) {
        json_decref(pr->argv);
        pr->argv = argv;
    }
    log_info("process %d read afresh (Python %s)", pr->pid, pr->rt.version_str);
    return 0;
}

static int cmp_excl(const void *a, const void *b)
{
    double x = json_real_value(json_array_get(*(json_t *const *)a, 2));
    double y = json_real_value(json_array_get(*(json_t *const *)b, 2));
    return (x < y) - (x > y);
}

/* The process's statistics as a part document (docs/agent-protocol.md), with the threads'
 * GIL samples under "threads". */
static json_t *proc_part(struct rec_proc *pr, const struct rec_opts *o)
{
    static const char *const rules[] = {"", "not_a_file", "excluded", "not_in_profile_only",
                                        "system_library", "outside_program"};
    json_t *lines = json_array(), *stacks = json_array(), *excl = json_array(),
           *threads = json_array();
    for (size_t i = 0; i < pr->nlines; i++) {
        const struct rec_line *l = &pr->lines[i];
        json_array_append_new(lines, json_pack("[iiifffI]", (int)l->file, (int)l->line,
                                               (int)l->func, l->sec[0], l->sec[1], l->sec[2],
                                               (json_int_t)l->samples));
    }
    for (size_t i = 0; i < pr->nstacks; i++) {
        const struct rec_stack *s = &pr->stacks[i];
        json_array_append_new(stacks, json_pack("[OIfff]", s->frames, (json_int_t)s->samples,
                                                s->sec[0], s->sec[1], s->sec[2]));
    }
    const char *name;
    json_t *v;
    json_t **rows = NULL;
    size_t nrows = 0, cap = 0;
    json_object_foreach(pr->excl, name, v) {
        json_t *idx = json_object_get(pr->file_idx, name);
        int rule = pr->file_rule[json_integer_value(idx)];
        if (rule == PY_RULE_PROFILED || grow_array(&rows, &cap, nrows + 1, sizeof(*rows)))
            continue;
        rows[nrows++] = json_pack("[ssf]", name, rules[rule], json_real_value(v));
    }
    if (nrows > 1)
        qsort(rows, nrows, sizeof(*rows), cmp_excl);
    for (size_t i = 0; i < nrows; i++) {
        if (i < PROF_MAX_EXCLUDED)
            json_array_append(excl, rows[i]);
        json_decref(rows[i]);
    }
    free(rows);
    for (size_t i = 0; i < pr->nthreads; i++) {
        const struct rec_thread *t = &pr->threads[i];
        if (t->samples)
            json_array_append_new(threads, json_pack("{sIsIsssIsI}", "native_id",
                                                     (json_int_t)t->tid, "thread_id",
                                                     (json_int_t)t->thread_id, "name", t->name,
                                                     "samples", (json_int_t)t->samples,
                                                     "gil_samples", (json_int_t)t->gil_samples));
    }
    json_t *part = json_pack(
        "{sssisisssOsfsfsIsbsfs{sfsfsfsIsI}sOsOsosososo}", "format", "scry-part",
        "format_version", 1, "pid", pr->pid, "python_version", pr->rt.version_str, "argv",
        pr->argv, "start_time_absolute", pr->start_real, "elapsed_sec",
        (double)(pr->last_ns - pr->start_ns) / 1e9, "main_thread_id",
        (json_int_t)pr->main_thread_id, "virtual_time", 0, "sampling_rate_sec", 1.0 / o->rate,
        "totals", "python_sec", pr->total[0], "native_sec", pr->total[1], "sys_sec",
        pr->total[2], "samples", (json_int_t)pr->samples, "dropped", (json_int_t)pr->dropped,
        "files", pr->files, "functions", pr->funcs, "lines", lines, "stacks", stacks,
        "excluded", excl, "threads", threads);
    if (part && pr->rn) {
        /* The chains as the part has them: [[items], hits]. */
        json_t *chains[2] = {json_array(), json_array()};
        json_t *from[2] = {pr->native_chains, pr->combined_chains};
        for (int k = 0; k < 2; k++) {
            const char *key;
            json_t *c;
            json_object_foreach(from[k], key, c) json_array_append(chains[k], c);
        }
        json_object_set(part, "native_frames", pr->nframes);
        json_object_set_new(part, "native_stacks", chains[0]);
        json_object_set_new(part, "combined_stacks", chains[1]);
        json_object_set_new(part, "native_stacks_overflow",
                            json_integer((json_int_t)pr->native_overflow));
        json_object_set_new(part, "combined_stacks_overflow",
                            json_integer((json_int_t)pr->combined_overflow));
    }
    if (part && pr->have_run_queue)
        json_object_set_new(part, "run_queue", json_pack("{sfsf}", "delay_sec", pr->rq_delay_sec,
                                                         "cpu_sec", pr->rq_cpu_sec));
    return part;
}

/* Adds the children of pid (every thread's) that are not known yet to the candidates. */
static void find_children(int pid, struct rec_proc **procs, size_t nprocs,
                          struct rec_candidate **cand, size_t *ncand, size_t *cap)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char cpath[300], buf[4096];
        snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", pid, e->d_name);
        if (read_proc(cpath, buf, sizeof(buf)) <= 0)
            continue;
        for (char *p = buf, *end; *p; p = end) {
            long child = strtol(p, &end, 10);
            if (end == p)
                break;
            bool known = false;
            for (size_t i = 0; i < nprocs && !known; i++)
                known = procs[i]->pid == child;
            for (size_t i = 0; i < *ncand && !known; i++)
                known = (*cand)[i].pid == child;
            if (!known && child > 0 && !grow_array(cand, cap, *ncand + 1, sizeof(**cand)))
                (*cand)[(*ncand)++] = (struct rec_candidate){(int)child, 0};
        }
    }
    closedir(d);
}

/* ---- the program ---- */

/* What the profile says the program is, from the target's command line: the script (made
 * absolute), its directory and its arguments; -m and -c programs have no directory. */
struct rec_program {
    char program[PATH_MAX], entry_dir[PATH_MAX], program_path[PATH_MAX];
    const char **args;
    size_t nargs;
};

static void describe_program(const struct rec_proc *pr, const struct rec_opts *o,
                             struct rec_program *pg)
{
    size_t argc = json_array_size(pr->argv);
    size_t i = 1;
    pg->program[0] = pg->entry_dir[0] = 0;
    while (i < argc) {
        const char *a = json_string_value(json_array_get(pr->argv, i));
        if (!strcmp(a, "-m") || !strcmp(a, "-c")) {
            if (i + 1 < argc)
                snprintf(pg->program, sizeof(pg->program), "%s",
                         a[1] == 'm' ? json_string_value(json_array_get(pr->argv, i + 1)) : "-c");
            i += 2;
            break;
        }
        if (a[0] != '-' || !strcmp(a, "-")) {
            char path[PATH_MAX + 1024];
            absolute_name(pr, a, path, sizeof(path));
            if (!realpath(path, pg->program) && strlen(path) < sizeof(pg->program))
                memcpy(pg->program, path, strlen(path) + 1);
            snprintf(pg->entry_dir, sizeof(pg->entry_dir), "%s", pg->program);
            char *slash = strrchr(pg->entry_dir, '/');
            if (slash)
                *(slash == pg->entry_dir ? slash + 1 : slash) = 0;
            i++;
            break;
        }
        /* Options of the interpreter; those that take a separate value skip it. */
        i += (!strcmp(a, "-X") || !strcmp(a, "-W") || !strcmp(a, "--check-hash-based-pycs")) ? 2
                                                                                            : 1;
    }
    pg->nargs = i < argc ? argc - i : 0;
    pg->args = calloc(pg->nargs + 1, sizeof(*pg->args));
    for (size_t k = 0; pg->args && k < pg->nargs; k++)
        pg->args[k] = json_string_value(json_array_get(pr->argv, i + k));
    if (!pg->args)
        pg->nargs = 0;
    if (o->program_path)
        snprintf(pg->program_path, sizeof(pg->program_path), "%s", o->program_path);
    else if (pg->entry_dir[0])
        snprintf(pg->program_path, sizeof(pg->program_path), "%s", pg->entry_dir);
    else
        snprintf(pg->program_path, sizeof(pg->program_path), "%s", pr->cwd);
}

static bool alive(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    if (read_proc(path, buf, sizeof(buf)) <= 0)
        return false;
    const char *s = strrchr(buf, ')');
    return s && s[1] == ' ' && s[2] != 'Z' && s[2] != 'X';
}

static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Samples every process until the duration, a signal, or the end of the primary process. */
static int record_loop(struct rec_proc ***procs_io, size_t *nprocs_io, size_t *cap_procs,
                       const struct rec_opts *o, const char *program_path, const char **why)
{
    struct py_frame *frames = malloc(MAX_DEPTH * sizeof(*frames));
    struct rec_candidate *cand = NULL;
    size_t ncand = 0, cap_cand = 0;
    int err = 0;
    if (!frames)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    uint64_t period = (uint64_t)(1e9 / o->rate);
    uint64_t start = mono_ns(), tick = start, last_scan = 0;
    uint64_t end = o->duration > 0 ? start + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
    *why = "the duration ended";
    for (;;) {
        struct rec_proc **procs = *procs_io;
        for (size_t i = 0; i < *nprocs_io; i++) {
            struct rec_proc *pr = procs[i];
            if (pr->ended)
                continue;
            int serr = sample_proc(pr, o, frames);
            if (serr == -SCRY_E_NO_MEMORY) {
                err = serr;
                goto out;
            }
            pr->failures = serr ? pr->failures + 1 : 0;
            if (serr && (!alive(pr->pid) || rd_pid_exited(pr->pid, 0))) {
                pr->ended = true;
                log_info("process %d ended", pr->pid);
            } else if (pr->failures >= REOPEN_AFTER && proc_reopen(pr) != 0) {
                pr->ended = true;
                log_info("process %d no longer runs Python: %s", pr->pid, err_last_message());
            }
        }
        if (!alive(procs[0]->pid)) {
            procs[0]->ended = true;
            *why = "the process exited";
            break;
        }
        uint64_t now = mono_ns();
        if (o->subprocesses && now - last_scan >= CHILD_SCAN_NS) {
            last_scan = now;
            for (size_t i = 0; i < *nprocs_io; i++)
                if (!(*procs_io)[i]->ended)
                    find_children((*procs_io)[i]->pid, *procs_io, *nprocs_io, &cand, &ncand,
                                  &cap_cand);
            size_t k = 0;
            for (size_t i = 0; i < ncand; i++) {
                struct rec_proc *pr = NULL;
                if (alive(cand[i].pid) && cand[i].tries < CHILD_OPEN_TRIES)
                    pr = proc_open(cand[i].pid, o, program_path);
                if (pr) {
                    if (grow_array(procs_io, cap_procs, *nprocs_io + 1, sizeof(**procs_io))) {
                        proc_free(pr);
                        continue;
                    }
                    (*procs_io)[(*nprocs_io)++] = pr;
                    log_info("recording child process %d", cand[i].pid);
                    continue;
                }
                /* Not Python yet (forked, not yet exec'd into Python) or not at all: kept,
                 * so that it is not tried every scan forever. */
                cand[i].tries++;
                cand[k++] = cand[i];
            }
            ncand = k;
        }
        if (stop_signal) {
            *why = stop_signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)";
            break;
        }
        tick += period;
        now = mono_ns();
        if (tick < now) /* fell behind: the next tick on the grid still ahead, no burst */
            tick += ((now - tick) / period + 1) * period;
        if (tick >= end)
            break;
        struct timespec ts = {(time_t)(tick / 1000000000ULL), (long)(tick % 1000000000ULL)};
        while (!stop_signal && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        if (stop_signal) {
            *why = stop_signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)";
            break;
        }
    }
out:
    free(cand);
    free(frames);
    return err;
}

int cmd_record(int argc, char **argv)
{
    struct rec_opts o;
    bool help;
    int parsed = parse(argc, argv, &o, &help);
    if (parsed != 0)
        return parsed;
    if (help)
        return cli_help();
    char ppath[PATH_MAX];
    if (o.program_path) {
        struct stat st;
        if (!realpath(o.program_path, ppath) || stat(ppath, &st) != 0 || !S_ISDIR(st.st_mode))
            return cli_usage("--program-path needs a directory, not '%s'", o.program_path);
        o.program_path = ppath;
    }
    if (o.native && rn_available() != 0)
        return cli_report_error(false);
    struct rec_program pg = {0};
    struct rec_proc **procs = calloc(1, sizeof(*procs));
    size_t nprocs = 0, cap_procs = 1;
    if (!procs)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    /* The primary first, to learn the program path its children share. */
    struct rec_proc *first = proc_open(o.pid, &o, "");
    if (!first) {
        free(procs);
        return cli_report_error(false);
    }
    procs[nprocs++] = first;
    describe_program(first, &o, &pg);
    first->filter.program_path = pg.program_path;

    struct outfile out;
    if (outfile_open(&out, o.outfile, OUTFILE_PRIVATE) != 0) {
        proc_free(first);
        free(procs);
        free(pg.args);
        return cli_report_error(false);
    }
    install_handlers();
    fprintf(stderr, "scry: recording process %d (Python %s) at %.0f Hz%s; Ctrl-C to stop\n",
            o.pid, san_str(first->rt.version_str), o.rate,
            o.native ? ", stopping it to unwind native frames"
                     : o.blocking ? ", stopping it" : "");
    const char *why = "the duration ended";
    int err = record_loop(&procs, &nprocs, &cap_procs, &o, pg.program_path, &why);

    struct profile p;
    prof_init(&p);
    for (size_t i = 0; !err && i < nprocs; i++) {
        json_t *part = proc_part(procs[i], &o);
        char what[64];
        snprintf(what, sizeof(what), "process %d", procs[i]->pid);
        if (!part)
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
        else
            err = prof_add_part(&p, part, what, o.pid);
        json_decref(part);
    }
    int status = CLI_EXIT_OK;
    if (!err) {
        prof_finish(&p);
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        struct profile_json_opts jo = {
            .version = SCRY_VERSION,
            .program = pg.program,
            .entrypoint_dir = pg.entry_dir,
            .filename = pg.program_path,
            .args = pg.args,
            .nargs = pg.nargs,
            .start_time_perf = (double)first->start_ns / 1e9,
            .cpu_percent_threshold = 1,
            .ncpus = ncpu > 0 ? (unsigned)ncpu : 1,
        };
        err = cli_profile_write(&p, &jo, &out);
        if (!err)
            fprintf(stderr,
                    "scry: %s: wrote %s (%llu samples over %.3f s); view it with: scry view "
                    "--cli %s\n",
                    why, san_str(o.outfile), (unsigned long long)p.samples, p.elapsed_sec,
                    san_str(o.outfile));
    } else {
        outfile_abort(&out);
    }
    if (err)
        status = cli_report_error(false);
    prof_free(&p);
    for (size_t i = 0; i < nprocs; i++)
        proc_free(procs[i]);
    free(procs);
    free(pg.args);
    return status;
}
