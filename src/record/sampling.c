/* The sampler of Python processes from outside, shared by `scry record --pid` and `scry top`
 * (sampling.h): the processes' threads (their states from platform/proc_info.h) and stacks, the
 * wall time of each thread's interval and its kind, the file filter, and the loop at a fixed
 * rate with --subprocesses. */
#include "record/sampling.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/profile.h"
#include "cli/cli.h"
#include "options/options.h"
#include "common/arena.h"
#include "common/error.h"
#include "common/grow.h"
#include "common/log.h"
#include "cpython/opcodes.h"
#include "cpython/threads.h"
#include "platform/proc_info.h"
#include "reader/reader.h"

#define CHILD_SCAN_NS 200000000ULL  /* --subprocesses: look for new children every 200 ms */
#define CODE_CACHE_NS 2000000000ULL /* code objects are read afresh every 2 s (memory reuse) */
#define CHILD_OPEN_TRIES 10         /* a child that is not (yet) Python: tries, one per scan */
#define REOPEN_AFTER 10 /* failed samples in a row of a live process: read it afresh */

/* A pid found among the children that is not (yet) sampled, and how often it was tried. */
struct smp_candidate {
    int pid;
    int tries;
};

volatile sig_atomic_t smp_stop_signal;

static void on_stop(int sig)
{
    smp_stop_signal = sig;
}

void smp_install_stop_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

uint64_t smp_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- the target's command line ---- */

static json_t *proc_argv(int pid)
{
    char buf[16384];
    ssize_t n = pf_process_cmdline(pid, buf, sizeof(buf));
    json_t *a = json_array();
    for (ssize_t i = 0; a && i < n; i += (ssize_t)strlen(buf + i) + 1)
        json_array_append_new(a, json_string(buf + i));
    return a;
}

/* ---- names ---- */

int smp_intern(json_t *idx, json_t *rows, const char *key, json_t *row, size_t *out)
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

void smp_absolute_name(const struct smp_proc *pr, const char *name, char *out, size_t size)
{
    if (name[0] == '/' || name[0] == '<' || !pr->cwd[0])
        snprintf(out, size, "%s", name);
    else
        snprintf(out, size, "%s/%s", pr->cwd, name);
}

static int file_index(struct smp_proc *pr, const char *name, uint32_t *out)
{
    size_t i;
    int err = smp_intern(pr->file_idx, pr->files, name, json_string(name), &i);
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

static int func_index(struct smp_proc *pr, const char *qualname, uint32_t file, int first,
                      uint32_t *out)
{
    char key[8192];
    snprintf(key, sizeof(key), "%u:%d:%s", file, first, qualname);
    size_t i;
    int err = smp_intern(pr->func_idx, pr->funcs, key,
                         json_pack("[siI]", qualname, (int)file, (json_int_t)first), &i);
    *out = (uint32_t)i;
    return err;
}

/* ---- sampling ---- */

static struct smp_thread *thread_slot(struct smp_proc *pr, const struct py_thread *t)
{
    for (size_t i = 0; i < pr->nthreads; i++)
        if (pr->threads[i].tstate == t->tstate && pr->threads[i].tid == t->native_id)
            return &pr->threads[i];
    if (grow_array(&pr->threads, &pr->cap_threads, pr->nthreads + 1, sizeof(*pr->threads)))
        return NULL;
    struct smp_thread *s = &pr->threads[pr->nthreads++];
    *s = (struct smp_thread){.tstate = t->tstate, .tid = t->native_id,
                             .thread_id = t->thread_id};
    return s;
}

/* Whether the innermost frame rests on a call that may be into C (the agent's rule, without
 * the program counter: from outside there is none), or, on a running thread, on an operator
 * instruction whose operands' type does the work in C outside the interpreter (numpy's `a @ b`:
 * cpython/operators.h). */
static bool on_c_call(struct smp_proc *pr, const struct py_frame *f, bool running)
{
    uint8_t unit[2];
    if (f->lasti < 0 || (uint64_t)f->lasti >= f->code->nunits)
        return false;
    if (rd_read(pr->rd, f->code->addr + pr->rt.layout.co_code_adaptive + (uint64_t)f->lasti * 2,
                unit, 2) != 0)
        return false;
    if (py_opcode_is_call(pr->rt.minor, unit[0]))
        return true;
    uint64_t slots = py_operator_slots(pr->rt.minor, unit[0], unit[1]);
    return running && slots && py_operator_in_c(&pr->rt, &pr->ops, f->addr, f->code->addr, slots);
}

int smp_profiled_frames(struct smp_proc *pr, const struct py_frame *frames, size_t n,
                        uint32_t (*fr)[3], uint8_t *grp, size_t *nprof, uint32_t *first_file)
{
    *nprof = 0;
    *first_file = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 1024];
        uint32_t file, func;
        int err;
        smp_absolute_name(pr, frames[i].code->filename, path, sizeof(path));
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

/* Hands one thread's interval to the hook: cpu seconds on the CPU (python or native by where it
 * is), off seconds off it (system), with the stack's profiled frames. */
static int hand_sample(struct smp_set *set, struct smp_proc *pr, struct smp_thread *t,
                       const struct py_frame *frames, size_t n, bool running, double dwall)
{
    uint32_t fr[SMP_MAX_DEPTH][3];
    size_t nprof = 0;
    uint32_t first_file = UINT32_MAX;
    bool native = n == 0 || on_c_call(pr, &frames[0], running);
    int err = smp_profiled_frames(pr, frames, n, fr, NULL, &nprof, &first_file);
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
    struct smp_sample s = {
        .thread = t,
        .frames = frames,
        .n = n,
        .fr = (const uint32_t(*)[3])fr,
        .nprof = nprof,
        .first_file = first_file,
        .cpu_cat = native ? SMP_NATIVE : SMP_PYTHON,
        .cpu = running ? dwall : 0,
        .off = running ? 0 : dwall,
        .running = running,
    };
    return set->h->sample(set->h->ctx, pr, &s);
}

/* One sample of every Python thread of the process. Returns 0, or an error when the process
 * can no longer be read (it has exited, or is exiting). */
static int sample_proc(struct smp_set *set, struct smp_proc *pr, struct py_frame *frames)
{
    const struct smp_opts *o = set->o;
    struct arena a = ARENA_INIT;
    struct py_thread *th;
    size_t nth;
    uint64_t now = smp_mono_ns();
    if (now - pr->cc_since >= CODE_CACHE_NS) {
        /* A code object's memory can be reused by another: forget them now and then. */
        py_code_cache_free(&pr->cc);
        py_code_cache_init(&pr->cc);
        py_op_cache_clear(&pr->ops); /* type objects too */
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
    pr->ticks++;
    for (size_t i = 0; i < pr->nthreads; i++)
        pr->threads[i].seen = pr->threads[i].running = pr->threads[i].holds_gil = false;
    for (size_t i = 0; i < nth; i++) {
        struct smp_thread *s = thread_slot(pr, &th[i]);
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
        if (pf_thread_sched(pr->pid, th[i].native_id, &scpu, &sdelay)) {
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
        int serr = py_thread_stack(&pr->rt, &pr->cc, th[i].tstate, frames, SMP_MAX_DEPTH, &n,
                                   &truncated);
        s->samples++;
        s->holds_gil = th[i].holds_gil;
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
            st = pf_thread_state(pr->pid, th[i].native_id);
        long nr;
        bool running =
            st == 'R' && pf_thread_call(pr->pid, th[i].native_id, &nr) != PF_CALL_SYSCALL;
        s->running = running;
        if ((err = hand_sample(set, pr, s, frames, n, running, dwall)))
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

void smp_proc_free(struct smp_proc *pr, const struct smp_hooks *h)
{
    if (h->release)
        h->release(h->ctx, pr);
    if (pr->rd)
        rd_close(pr->rd);
    py_code_cache_free(&pr->cc);
    py_op_cache_free(&pr->ops);
    json_decref(pr->argv);
    json_decref(pr->file_idx);
    json_decref(pr->files);
    json_decref(pr->func_idx);
    json_decref(pr->funcs);
    free(pr->threads);
    free(pr->file_rule);
    free(pr);
}

struct smp_proc *smp_proc_open(int pid, const struct smp_opts *o, const struct smp_hooks *h,
                               const char *program_path)
{
    struct smp_proc *pr = calloc(1, sizeof(*pr));
    if (!pr) {
        err_fail(SCRY_E_NO_MEMORY, "out of memory");
        return NULL;
    }
    pr->pid = pid;
    py_code_cache_init(&pr->cc);
    py_op_cache_init(&pr->ops);
    int err = rd_open_pid(pid, &pr->rd);
    if (!err)
        err = py_runtime_open(pr->rd, &pr->rt);
    if (err) {
        cli_target_error(pid);
        smp_proc_free(pr, h);
        return NULL;
    }
    pf_process_cwd(pid, pr->cwd, sizeof(pr->cwd));
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
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    pr->start_real = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    pr->start_ns = pr->last_ns = pr->cc_since = smp_mono_ns();
    if (!pr->argv || !pr->file_idx || !pr->files || !pr->func_idx || !pr->funcs) {
        err_fail(SCRY_E_NO_MEMORY, "out of memory");
        smp_proc_free(pr, h);
        return NULL;
    }
    if (h->open && h->open(h->ctx, pr) != 0) {
        smp_proc_free(pr, h);
        return NULL;
    }
    return pr;
}

/* A live process whose reads keep failing has exec'd (a forked child that became another
 * program): its runtime is found afresh; its statistics so far are kept. */
static int proc_reopen(struct smp_proc *pr, const struct smp_hooks *h)
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
    py_op_cache_free(&pr->ops); /* its mappings were the old reader's */
    py_op_cache_init(&pr->ops);
    if (h->reopen && (err = h->reopen(h->ctx, pr)))
        return err;
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

struct new_children {
    struct smp_proc **procs;
    size_t nprocs;
    struct smp_candidate **cand;
    size_t *ncand, *cap;
};

static void add_child(int child, void *ctx)
{
    struct new_children *c = ctx;
    bool known = false;
    for (size_t i = 0; i < c->nprocs && !known; i++)
        known = c->procs[i]->pid == child;
    for (size_t i = 0; i < *c->ncand && !known; i++)
        known = (*c->cand)[i].pid == child;
    if (!known && !grow_array(c->cand, c->cap, *c->ncand + 1, sizeof(**c->cand)))
        (*c->cand)[(*c->ncand)++] = (struct smp_candidate){child, 0};
}

/* Adds the children of pid (every thread's) that are not known yet to the candidates. */
static void find_children(int pid, struct smp_proc **procs, size_t nprocs,
                          struct smp_candidate **cand, size_t *ncand, size_t *cap)
{
    struct new_children c = {procs, nprocs, cand, ncand, cap};
    pf_process_children(pid, add_child, &c);
}

/* --subprocesses: the new children of every process are tried; those that run Python join. */
static void scan_children(struct smp_set *set, struct smp_candidate **cand, size_t *ncand,
                          size_t *cap_cand)
{
    for (size_t i = 0; i < set->n; i++)
        if (!set->procs[i]->ended)
            find_children(set->procs[i]->pid, set->procs, set->n, cand, ncand, cap_cand);
    size_t k = 0;
    for (size_t i = 0; i < *ncand; i++) {
        struct smp_candidate *c = &(*cand)[i];
        struct smp_proc *pr = NULL;
        if (pf_process_alive(c->pid) && c->tries < CHILD_OPEN_TRIES)
            pr = smp_proc_open(c->pid, set->o, set->h, set->program_path);
        if (pr) {
            if (grow_array(&set->procs, &set->cap, set->n + 1, sizeof(*set->procs))) {
                smp_proc_free(pr, set->h);
                continue;
            }
            set->procs[set->n++] = pr;
            log_info("sampling child process %d", c->pid);
            continue;
        }
        /* Not Python yet (forked, not yet exec'd into Python) or not at all: kept, so that it
         * is not tried every scan forever. */
        c->tries++;
        (*cand)[k++] = *c;
    }
    *ncand = k;
}

static const char *stop_reason(void)
{
    return smp_stop_signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)";
}

/* Waits until the monotonic time tick (ns), or a stop signal; with an input descriptor, its
 * input is handed to the hook as it comes. */
static void wait_until(const struct smp_hooks *h, uint64_t tick)
{
    if (h->input_fd < 0) {
        struct timespec ts = {(time_t)(tick / 1000000000ULL), (long)(tick % 1000000000ULL)};
        while (!smp_stop_signal &&
               clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        return;
    }
    for (;;) {
        uint64_t now = smp_mono_ns();
        if (smp_stop_signal || now >= tick)
            return;
        struct pollfd p = {.fd = h->input_fd, .events = POLLIN};
        int ms = (int)((tick - now + 999999) / 1000000);
        int r = poll(&p, 1, ms);
        if (r > 0 && (p.revents & POLLIN))
            h->input(h->ctx);
        else if (r > 0) /* closed or broken: no more input; wait without it */
            poll(NULL, 0, ms);
    }
}

int smp_loop(struct smp_set *set, const char **why)
{
    const struct smp_opts *o = set->o;
    struct py_frame *frames = malloc(SMP_MAX_DEPTH * sizeof(*frames));
    struct smp_candidate *cand = NULL;
    size_t ncand = 0, cap_cand = 0;
    int err = 0;
    if (!frames)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    uint64_t period = (uint64_t)(1e9 / o->rate);
    uint64_t start = smp_mono_ns(), tick = start, last_scan = 0;
    uint64_t end = o->duration > 0 ? start + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
    *why = "the duration ended";
    for (;;) {
        for (size_t i = 0; i < set->n; i++) {
            struct smp_proc *pr = set->procs[i];
            if (pr->ended)
                continue;
            int serr = sample_proc(set, pr, frames);
            if (serr == -SCRY_E_NO_MEMORY) {
                err = serr;
                goto out;
            }
            pr->failures = serr ? pr->failures + 1 : 0;
            if (serr && (!pf_process_alive(pr->pid) || rd_pid_exited(pr->pid, 0))) {
                pr->ended = true;
                log_info("process %d ended", pr->pid);
            } else if (pr->failures >= REOPEN_AFTER && proc_reopen(pr, set->h) != 0) {
                pr->ended = true;
                log_info("process %d no longer runs Python: %s", pr->pid, err_last_message());
            }
        }
        if (!pf_process_alive(set->procs[0]->pid)) {
            set->procs[0]->ended = true;
            *why = "the process exited";
            break;
        }
        uint64_t now = smp_mono_ns();
        if (o->subprocesses && now - last_scan >= CHILD_SCAN_NS) {
            last_scan = now;
            scan_children(set, &cand, &ncand, &cap_cand);
        }
        if (smp_stop_signal) {
            *why = stop_reason();
            break;
        }
        int stop = set->h->tick ? set->h->tick(set->h->ctx, why) : 0;
        if (stop < 0) {
            err = stop;
            goto out;
        }
        if (stop)
            break;
        tick += period;
        now = smp_mono_ns();
        if (tick < now) /* fell behind: the next tick on the grid still ahead, no burst */
            tick += ((now - tick) / period + 1) * period;
        if (tick >= end)
            break;
        wait_until(set->h, tick);
        if (smp_stop_signal) {
            *why = stop_reason();
            break;
        }
    }
out:
    free(cand);
    free(frames);
    return err;
}

/* ---- options and the program ---- */

void smp_opts_init(struct smp_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->rate = SMP_DEFAULT_RATE_HZ;
    o->profile_only = o->profile_exclude = "";
}

int smp_parse_option(int id, const struct opt_parser *p, struct smp_opts *o, int *pid)
{
    switch (id) {
    case OPT_PID:
        *pid = (int)p->ival;
        return 1;
    case OPT_DURATION:
        o->duration = p->num;
        return 1;
    case OPT_RATE:
        o->rate = p->num;
        return 1;
    case OPT_SUBPROCESSES:
        o->subprocesses = true;
        return 1;
    case OPT_IDLE:
        o->idle = true;
        return 1;
    case OPT_PROFILE_ALL:
        o->profile_all = true;
        return 1;
    case OPT_PROFILE_ONLY:
        o->profile_only = p->arg;
        return 1;
    case OPT_PROFILE_EXCLUDE:
        o->profile_exclude = p->arg;
        return 1;
    case OPT_PROFILE_SYSTEM_LIBRARIES:
        o->system_libraries = true;
        return 1;
    case OPT_PROGRAM_PATH:
        o->program_path = p->arg;
        return 1;
    default:
        return 0;
    }
}

int smp_resolve_program_path(struct smp_opts *o, char *buf)
{
    struct stat st;
    if (!o->program_path)
        return 0;
    if (!realpath(o->program_path, buf) || stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return cli_usage("--program-path needs a directory, not '%s'", o->program_path);
    o->program_path = buf;
    return 0;
}


void smp_describe_program(const struct smp_proc *pr, const struct smp_opts *o,
                          struct smp_program *pg)
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
            smp_absolute_name(pr, a, path, sizeof(path));
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


int smp_set_open(struct smp_set *set, int pid, struct smp_program *pg)
{
    /* The primary first, to learn the program path its children share. */
    struct smp_proc *first = smp_proc_open(pid, set->o, set->h, "");
    if (!first)
        return -(int)err_last_code();
    if (grow_array(&set->procs, &set->cap, 1, sizeof(*set->procs))) {
        smp_proc_free(first, set->h);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    set->procs[set->n++] = first;
    smp_describe_program(first, set->o, pg);
    first->filter.program_path = set->program_path = pg->program_path;
    return 0;
}

void smp_set_free(struct smp_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        smp_proc_free(set->procs[i], set->h);
    free(set->procs);
    set->procs = NULL;
    set->n = set->cap = 0;
}
