/* `scry stacks`: what every Python thread of a process (or a core) is doing right now, in the
 * manner of `py-spy dump`. A live target is stopped only while its threads and frames are read. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "options/options.h"
#include "cli/reports.h"
#include "common/arena.h"
#include "common/error.h"
#include "common/log.h"
#include "cpython/async_tasks.h"
#include "cpython/frames.h"
#include "cpython/locals.h"
#include "cpython/runtime.h"
#include "cpython/threads.h"
#include "platform/proc_info.h"
#include "reader/reader.h"
#include "record/record_native.h"
#include "render/stacks_render.h"

const char cmd_stacks_usage[] =
    "usage: scry stacks --pid PID [--locals] [--native] [--async] [--subprocesses] [--json]\n"
    "                   [--no-color]\n"
    "       scry stacks --core FILE [--exe PYTHON] [--locals] [--async] [--json] [--no-color]\n"
    "       scry stacks --minidump FILE [--locals] [--async] [--json] [--no-color]\n"
    "\n"
    "Prints every thread of every interpreter of a Python process (or of a core file made\n"
    "by gcore or the kernel, or of a Windows minidump): its id, name, whether it is running\n"
    "or idle, whether it holds the GIL, and its Python stack innermost first as\n"
    "`function (file:line)`.\n"
    "\n";

struct stacks_opts {
    int pid;
    const char *core;
    const char *exe;
    const char *minidump;
    bool json;
    bool color;
    bool locals, native, async, subprocesses;
};

static int parse(int argc, char **argv, struct stacks_opts *o, bool *help)
{
    memset(o, 0, sizeof(*o));
    o->json = cli_wants_json(argc, argv);
    o->color = cli_color_stdout();
    *help = false;
    struct opt_parser p;
    opt_begin(&p, OC_STACKS, argc, argv, OP_STOP_AT_OPERAND);
    int c;
    while ((c = opt_next(&p)) > 0) {
        switch (c) {
        case OPT_PID:
            o->pid = (int)p.ival;
            break;
        case OPT_CORE:
            o->core = p.arg;
            break;
        case OPT_EXE:
            o->exe = p.arg;
            break;
        case OPT_MINIDUMP:
            o->minidump = p.arg;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_NO_COLOR:
            o->color = false;
            break;
        case OPT_LOCALS:
            o->locals = true;
            break;
        case OPT_NATIVE:
            o->native = true;
            break;
        case OPT_ASYNC:
            o->async = true;
            break;
        case OPT_SUBPROCESSES:
            o->subprocesses = true;
            break;
        case OPT_HELP:
            *help = true;
            return 0;
        }
    }
    if (c < 0)
        return c;
    if (opt_operand(&p) < argc)
        return cli_usage("unexpected argument '%s'", argv[opt_operand(&p)]);
    int err = cli_check_target(o->pid, o->core, o->exe, o->minidump);
    if (err)
        return err;
    if (!o->pid && (o->native || o->subprocesses))
        return cli_usage("%s needs a live process (--pid), not a %s",
                         o->native ? "--native" : "--subprocesses", o->core ? "core" : "minidump");
    if (o->json)
        o->color = false;
    return 0;
}

/* The target's command line, spaces between arguments; NULL if unreadable. */
static const char *live_cmdline(struct arena *a, int pid)
{
    char buf[4096];
    ssize_t n = pf_process_cmdline(pid, buf, sizeof(buf));
    if (n <= 0)
        return NULL;
    while (n > 0 && buf[n - 1] == 0)
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == 0)
            buf[i] = ' ';
    return arena_strndup(a, buf, (size_t)n);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#define NATIVE_DEPTH 512

static int no_memory(void)
{
    return err_fail(SCRY_E_NO_MEMORY, "out of memory");
}

/* A Python frame into the report (its strings move from the code cache into the arena), with
 * its locals when asked for. */
static int python_frame(struct py_runtime *rt, struct arena *a, const struct py_frame *pf,
                        bool with_locals, struct stacks_frame *out)
{
    memset(out, 0, sizeof(*out));
    out->function = arena_strdup(a, pf->code->qualname);
    out->file = arena_strdup(a, pf->code->filename);
    out->line = pf->line;
    if (!out->function || !out->file)
        return no_memory();
    if (!with_locals)
        return 0;
    struct py_local *pl;
    size_t n;
    int err = py_frame_locals(rt, a, pf->addr, pf->code->addr, &pl, &n, &out->locals_cut);
    if (err) {
        /* a frame whose locals cannot be read still shows; the walk found it whole */
        log_debug("locals of frame 0x%" PRIx64 ": %s", pf->addr, err_last_message());
        return err == -SCRY_E_NO_MEMORY ? err : 0;
    }
    out->locals = arena_alloc(a, (n ? n : 1) * sizeof(*out->locals));
    if (!out->locals)
        return no_memory();
    for (size_t i = 0; i < n; i++)
        out->locals[i] = (struct stacks_local){pl[i].name, pl[i].type, pl[i].value,
                                               pl[i].redacted, pl[i].cell};
    out->nlocals = n;
    return 0;
}

/* The Python frames of group g (the g-th call of the eval loop from the leaf), innermost first;
 * g == SIZE_MAX: the groups from `from` on (the chain has no eval-loop frame for them). */
static int add_group(struct py_runtime *rt, struct arena *a, const struct py_frame *frames,
                     size_t n, size_t g, size_t from, bool with_locals, struct stacks_frame *out,
                     size_t *nout)
{
    for (size_t k = 0; k < n; k++) {
        bool in = g == SIZE_MAX ? frames[k].group >= from : frames[k].group == g;
        if (!in)
            continue;
        int err = python_frame(rt, a, &frames[k], with_locals, &out[(*nout)++]);
        if (err)
            return err;
    }
    return 0;
}

/* --native: the thread's native chain with each call of the eval loop replaced by the Python
 * frames it runs, innermost first (record --native's rule, docs/agent-protocol.md: the k-th
 * eval-loop frame from the leaf runs group k; groups the chain has no eval-loop frame for go
 * last, outermost; a build whose eval loop is not recognised, by symbol or unwind tables
 * (record/record_native.c), shows the whole native chain, then the Python frames). Sets *nout;
 * *out lives in the arena. */
static int stitch_native(struct py_runtime *rt, struct arena *a, struct rn_proc *rn, int tid,
                         const struct py_frame *frames, size_t n, bool with_locals,
                         struct stacks_frame **out, size_t *nout)
{
    uint64_t ips[NATIVE_DEPTH];
    size_t nips = 0;
    *nout = 0;
    if (rn_unwind(rn, tid, ips, NATIVE_DEPTH, &nips) != 0)
        nips = 0; /* a thread that cannot be unwound shows its Python frames only */
    *out = arena_alloc(a, (nips + n + 1) * sizeof(**out));
    if (!*out)
        return no_memory();
    size_t g = 0;
    for (size_t i = 0; i < nips; i++) {
        const char *module, *symbol;
        uint64_t offset;
        bool eval;
        int err = rn_name(rn, ips[i], i == 0, &module, &symbol, &offset, &eval);
        if (err)
            return err;
        if (eval) {
            err = add_group(rt, a, frames, n, g++, 0, with_locals, *out, nout);
            if (err)
                return err;
            continue;
        }
        struct stacks_frame *f = &(*out)[(*nout)++];
        memset(f, 0, sizeof(*f));
        f->native = true;
        f->function = arena_strdup(a, symbol);
        f->file = arena_strdup(a, module);
        f->line = -1;
        f->offset = offset;
        if (!f->function || !f->file)
            return no_memory();
    }
    return add_group(rt, a, frames, n, SIZE_MAX, g, with_locals, *out, nout);
}

static const char *task_state(int state)
{
    switch (state) {
    case 0:
        return "pending";
    case 1:
        return "cancelled";
    case 2:
        return "finished";
    default:
        return "unknown";
    }
}

/* --async: the tasks of every interpreter, read while the target is stopped. */
static int collect_tasks(struct py_runtime *rt, struct py_code_cache *cc, struct arena *a,
                         struct stacks_report *rep)
{
    struct py_async_task *tasks;
    size_t n;
    int err = py_async_tasks(rt, cc, a, &tasks, &n);
    if (err)
        return err;
    rep->tasks = arena_alloc(a, (n ? n : 1) * sizeof(*rep->tasks));
    if (!rep->tasks)
        return no_memory();
    for (size_t i = 0; i < n; i++) {
        const struct py_async_task *t = &tasks[i];
        struct stacks_task *o = &rep->tasks[i];
        *o = (struct stacks_task){
            .addr = t->addr,
            .loop = t->loop,
            .name = t->name,
            .state = task_state(t->state),
            .awaits = t->waiter_is_task ? t->waiter : 0,
            .awaits_type = t->waiter_is_task ? NULL : t->waiter_type,
            .gathers = t->gathers,
            .ngathers = t->ngathers,
            .coro = arena_alloc(a, (t->ncoro ? t->ncoro : 1) * sizeof(*o->coro)),
            .ncoro = t->ncoro,
        };
        if (!o->coro)
            return no_memory();
        for (size_t f = 0; f < t->ncoro; f++) {
            err = python_frame(rt, a, &t->coro[f], rep->with_locals, &o->coro[f]);
            if (err)
                return err;
        }
    }
    rep->ntasks = n;
    return 0;
}

/* Reads everything the report needs while the target is stopped (rep->with_* say what). */
static int collect(struct rd_reader *rd, struct py_runtime *rt, struct arena *a,
                   struct stacks_report *rep)
{
    const struct rd_thread *os = NULL;
    size_t nos = 0;
    struct py_thread *threads;
    size_t nthreads;
    struct py_code_cache cc;
    struct py_frame *frames = NULL;
    struct rn_proc *rn = NULL;
    py_code_cache_init(&cc);

    if (rep->with_async) {
        int err = py_async_supported(rt);
        if (err)
            return err;
    }
    if (rep->with_native && !(rn = rn_proc_new(rd)))
        return no_memory();
    /* Scheduler states first: once stopped, every thread looks idle. */
    int err = rd_threads(rd, &os, &nos);
    if (err)
        goto out_unpaused;
    struct rd_thread *states = arena_memdup(a, os, nos * sizeof(*os));
    if (nos && !states) {
        err = no_memory();
        goto out_unpaused;
    }
    double t0 = now_ms();
    err = rd_pause(rd);
    if (err)
        goto out_unpaused;
    err = py_list_threads(rt, a, &threads, &nthreads);
    if (err)
        goto out;
    frames = malloc(PY_MAX_STACK_DEPTH * sizeof(*frames));
    rep->threads = arena_alloc(a, (nthreads ? nthreads : 1) * sizeof(*rep->threads));
    if (!frames || !rep->threads) {
        err = no_memory();
        goto out;
    }
    for (size_t i = 0; i < nthreads; i++) {
        struct stacks_thread *t = &rep->threads[i];
        size_t n;
        bool truncated;
        err = py_thread_stack(rt, &cc, threads[i].tstate, frames, PY_MAX_STACK_DEPTH, &n,
                              &truncated);
        if (err)
            goto out;
        char st = cli_thread_state(states, nos, threads[i].native_id);
        *t = (struct stacks_thread){
            .thread_id = threads[i].thread_id,
            .native_id = threads[i].native_id,
            .interpreter_id = threads[i].interp_id,
            .name = threads[i].name,
            .idle = st != 'R',
            .gil = threads[i].holds_gil,
            .no_gil = threads[i].no_gil,
            .truncated = truncated,
            .nframes = n,
        };
        if (rn) {
            err = stitch_native(rt, a, rn, (int)threads[i].native_id, frames, n,
                                rep->with_locals, &t->frames, &t->nframes);
            if (err)
                goto out;
            continue;
        }
        t->frames = arena_alloc(a, (n ? n : 1) * sizeof(struct stacks_frame));
        if (!t->frames) {
            err = no_memory();
            goto out;
        }
        for (size_t f = 0; f < n; f++) {
            err = python_frame(rt, a, &frames[f], rep->with_locals, &t->frames[f]);
            if (err)
                goto out;
        }
    }
    rep->nthreads = nthreads;
    if (rep->with_async)
        err = collect_tasks(rt, &cc, a, rep);
out:
    rd_resume(rd);
    log_info("the target was stopped for %.2f ms", now_ms() - t0);
out_unpaused:
    free(frames);
    rn_proc_free(rn);
    py_code_cache_free(&cc);
    return err;
}

struct descendants {
    int *out;
    size_t n, max;
};

static void add_descendant(int child, void *ctx)
{
    struct descendants *d = ctx;
    for (size_t i = 0; i < d->n; i++)
        if (d->out[i] == child)
            return;
    if (d->n >= d->max)
        return;
    d->out[d->n++] = child;
    pf_process_children(child, add_descendant, d);
}

/* The descendants of pid (children of every thread, then theirs), depth first, at most max. */
static size_t find_descendants(int pid, int *out, size_t max)
{
    struct descendants d = {out, 0, max};
    pf_process_children(pid, add_descendant, &d);
    return d.n;
}

/* One process into rep: opened, read, closed. */
static int read_process(int pid, const char *core, const char *exe, const char *minidump,
                        struct arena *a, struct stacks_report *rep)
{
    struct rd_reader *rd = NULL;
    struct py_runtime rt;
    int err = cli_open_target(pid, core, exe, minidump, &rd);
    if (!err)
        err = py_runtime_open(rd, &rt);
    if (!err)
        err = collect(rd, &rt, a, rep);
    if (err) {
        cli_target_error(pid);
        goto out;
    }
    rep->pid = rd_pid(rd);
    rep->source = minidump ? minidump : core;
    rep->minidump = minidump != NULL;
    rep->command = pid ? live_cmdline(a, pid) : rd_exe_path(rd);
    if (!pid && rep->command)
        rep->command = arena_strdup(a, rep->command); /* the reader's string dies with it */
    rep->python_version = arena_strdup(a, rt.version_str);
    rep->free_threaded = rt.layout.free_threaded;
    rep->python_path = arena_strdup(a, rt.image_path);
out:
    if (rd)
        rd_close(rd);
    return err;
}

#define MAX_SUBPROCESSES 256

/* --subprocesses: every descendant, each read on its own; one that cannot be read is listed
 * with its error (a child that runs no Python: not_python). */
static int read_children(const struct stacks_report *parent, struct arena *a,
                         struct stacks_report *rep)
{
    int pids[MAX_SUBPROCESSES];
    size_t n = find_descendants(parent->pid, pids, MAX_SUBPROCESSES);
    rep->children = arena_alloc(a, (n ? n : 1) * sizeof(*rep->children));
    if (!rep->children)
        return no_memory();
    for (size_t i = 0; i < n; i++) {
        struct stacks_report *c = &rep->children[i];
        *c = (struct stacks_report){.with_locals = parent->with_locals,
                                    .with_native = parent->with_native,
                                    .with_async = parent->with_async};
        int ppid = pf_process_parent(pids[i]); /* the real parent */
        c->parent_pid = ppid > 0 ? ppid : parent->pid;
        c->command = live_cmdline(a, pids[i]);
        if (read_process(pids[i], NULL, NULL, NULL, a, c) != 0) {
            if (err_last_code() == SCRY_E_NO_MEMORY)
                return -SCRY_E_NO_MEMORY;
            c->pid = pids[i];
            c->error_code = err_code_name(err_last_code());
            c->error_message = arena_strdup(a, err_last_message());
            c->threads = NULL;
            c->nthreads = 0;
        }
    }
    rep->nchildren = n;
    return 0;
}

/* The report of o's target (and its children with --subprocesses) into out, text or JSON; 0 or
 * a recorded error. */
static int stacks_report(const struct stacks_opts *o, struct strbuf *out)
{
    struct arena a = ARENA_INIT;
    struct stacks_report rep;
    memset(&rep, 0, sizeof(rep));
    rep.with_locals = o->locals;
    rep.with_native = o->native;
    rep.with_async = o->async;
    rep.with_subprocesses = o->subprocesses;
    int err = o->native ? rn_available() : 0;
    if (!err)
        err = read_process(o->pid, o->core, o->exe, o->minidump, &a, &rep);
    if (!err && o->subprocesses)
        err = read_children(&rep, &a, &rep);
    if (!err && o->json)
        stacks_render_json(&rep, out);
    else if (!err)
        stacks_render_text(&rep, o->color, out);
    arena_free(&a);
    return err;
}

int cli_stacks_report(int pid, bool json, struct strbuf *out)
{
    struct stacks_opts o = {.pid = pid, .json = json};
    return stacks_report(&o, out);
}

int cmd_stacks(int argc, char **argv)
{
    struct stacks_opts o;
    bool help;
    struct strbuf out = STRBUF_INIT;

    int parsed = parse(argc, argv, &o, &help);
    if (parsed || help) /* a usage error is reported by the dispatcher */
        return parsed ? parsed : cli_help();
    return cli_finish_report(stacks_report(&o, &out), &out, o.json);
}
