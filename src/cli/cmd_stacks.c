/* `scry stacks`: what every Python thread of a process (or a core) is doing right now, in the
 * manner of `py-spy dump`. A live target is stopped only while its threads and frames are read. */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/reports.h"
#include "common/arena.h"
#include "common/error.h"
#include "common/log.h"
#include "cpython/frames.h"
#include "cpython/runtime.h"
#include "cpython/threads.h"
#include "reader/reader.h"
#include "render/stacks_render.h"

const char cmd_stacks_usage[] =
    "usage: scry stacks --pid PID [--json] [--no-color]\n"
    "       scry stacks --core FILE [--exe PYTHON] [--json] [--no-color]\n"
    "\n"
    "Prints every thread of every interpreter of a Python process (or of a core file made\n"
    "by gcore or the kernel): its id, name, whether it is running or idle, whether it holds\n"
    "the GIL, and its Python stack innermost first as `function (file:line)`.\n"
    "\n"
    "  -p, --pid PID      read a live process (it is stopped for a moment, then resumed)\n"
    "  -c, --core FILE    read an ELF core file instead\n"
    "  -e, --exe PYTHON   the Python executable that made the core, if it has moved\n"
    "  -j, --json         print a JSON document (docs/json-schema.md)\n"
    "      --no-color     no colours even on a terminal\n";

struct stacks_opts {
    int pid;
    const char *core;
    const char *exe;
    bool json;
    bool color;
};

static int parse(int argc, char **argv, struct stacks_opts *o, bool *help)
{
    static const struct option longopts[] = {
        {"pid", required_argument, NULL, 'p'},  {"core", required_argument, NULL, 'c'},
        {"exe", required_argument, NULL, 'e'},  {"json", no_argument, NULL, 'j'},
        {"no-color", no_argument, NULL, 'C'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->json = cli_wants_json(argc, argv);
    o->color = cli_color_stdout();
    *help = false;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "+:p:c:e:jh", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (!cli_parse_pid(optarg, &o->pid))
                return cli_usage("--pid needs a process id, not '%s'", optarg);
            break;
        case 'c':
            o->core = optarg;
            break;
        case 'e':
            o->exe = optarg;
            break;
        case 'j':
            o->json = true;
            break;
        case 'C':
            o->color = false;
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
    int err = cli_check_target(o->pid, o->core, o->exe);
    if (err)
        return err;
    if (o->json)
        o->color = false;
    return 0;
}

/* The target's command line from /proc, spaces between arguments; NULL if unreadable. */
static const char *live_cmdline(struct arena *a, int pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
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

/* Reads everything the report needs while the target is stopped. */
static int collect(struct rd_reader *rd, struct py_runtime *rt, struct arena *a,
                   struct stacks_report *rep)
{
    const struct rd_thread *os = NULL;
    size_t nos = 0;
    struct py_thread *threads;
    size_t nthreads;
    struct py_code_cache cc;
    struct py_frame *frames = NULL;
    py_code_cache_init(&cc);

    /* Scheduler states first: once stopped, every thread looks idle. */
    int err = rd_threads(rd, &os, &nos);
    if (err)
        return err;
    struct rd_thread *states = arena_memdup(a, os, nos * sizeof(*os));
    if (nos && !states)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    double t0 = now_ms();
    err = rd_pause(rd);
    if (err)
        return err;
    err = py_list_threads(rt, a, &threads, &nthreads);
    if (err)
        goto out;
    frames = malloc(PY_MAX_STACK_DEPTH * sizeof(*frames));
    rep->threads = arena_alloc(a, (nthreads ? nthreads : 1) * sizeof(*rep->threads));
    if (!frames || !rep->threads) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
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
            .frames = arena_alloc(a, (n ? n : 1) * sizeof(struct stacks_frame)),
        };
        if (!t->frames) {
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
            goto out;
        }
        for (size_t f = 0; f < n; f++) {
            /* Strings move from the code cache (freed below) into the report's arena. */
            t->frames[f].function = arena_strdup(a, frames[f].code->qualname);
            t->frames[f].file = arena_strdup(a, frames[f].code->filename);
            t->frames[f].line = frames[f].line;
            if (!t->frames[f].function || !t->frames[f].file) {
                err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
                goto out;
            }
        }
    }
    rep->nthreads = nthreads;
out:
    rd_resume(rd);
    log_info("the target was stopped for %.2f ms", now_ms() - t0);
    free(frames);
    py_code_cache_free(&cc);
    return err;
}

/* The report of o's target into out (text or JSON); 0 or a recorded error. */
static int stacks_report(const struct stacks_opts *o, struct strbuf *out)
{
    struct rd_reader *rd = NULL;
    struct py_runtime rt;
    struct arena a = ARENA_INIT;
    struct stacks_report rep;
    int err = cli_open_target(o->pid, o->core, o->exe, &rd);
    if (!err)
        err = py_runtime_open(rd, &rt);
    memset(&rep, 0, sizeof(rep));
    if (!err)
        err = collect(rd, &rt, &a, &rep);
    if (err) {
        cli_target_error(o->pid);
        goto out;
    }
    rep.pid = rd_pid(rd);
    rep.source = o->core;
    rep.command = o->pid ? live_cmdline(&a, o->pid) : rd_exe_path(rd);
    rep.python_version = rt.version_str;
    rep.free_threaded = rt.layout.free_threaded;
    rep.python_path = rt.image_path;
    if (o->json)
        stacks_render_json(&rep, out);
    else
        stacks_render_text(&rep, o->color, out);
out:
    arena_free(&a);
    if (rd)
        rd_close(rd);
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
