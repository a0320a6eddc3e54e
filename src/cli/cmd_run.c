/* `scry run`: runs a Python program with the agent preloaded (docs/agent-protocol.md), waits for
 * it with the terminal's signals left to it, merges the part files its processes wrote into
 * scry-profile.json (docs/json-schema.md) and shows the terminal view. The program's stdin,
 * stdout, stderr and exit status pass through unchanged. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/profile.h"
#include "analysis/profile_delta.h"
#include "analysis/profile_doc.h"
#include "cli/cli.h"
#include "options/options.h"
#include "common/error.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/sanitize.h"
#include "platform/browser.h"
#include "platform/os_process.h"
#include "platform/outfile.h"
#include "push/push.h"
#include "render/pprof.h"
#include "render/profile_json.h"
#include "render/profile_text.h"
#include "run/run_options.h"
#include "run/run_parts.h"

/* The html page next to the profile: its name with .html for .json (or .html added). */
static void page_path(const char *outfile, char *out, size_t n)
{
    size_t len = strlen(outfile);
    if (len > 5 && strcmp(outfile + len - 5, ".json") == 0)
        len -= 5;
    snprintf(out, n, "%.*s.html", (int)len, outfile);
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int set_env(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0)
        return err_fail(SCRY_E_NO_MEMORY, "cannot set %s: %s", name, strerror(errno));
    return 0;
}

/* --gpu's default: on when an NVIDIA device looks visible (the driver's device nodes) or a
 * library is named; the agent loads NVML only then, so no GPU costs nothing. */
static const char *gpu_env(const struct run_opts *o)
{
    if (o->gpu != 0)
        return o->gpu > 0 ? "1" : "0";
    const char *lib = getenv("SCRY_NVML_LIBRARY");
    if ((lib && *lib) || access("/dev/nvidiactl", F_OK) == 0 || access("/dev/nvidia0", F_OK) == 0)
        return "auto";
    return "0";
}

static int setup_env(const struct run_opts *o, const char *agent, const char *part_dir,
                     const char *program_path)
{
    struct strbuf pre = STRBUF_INIT;
    sb_adds(&pre, agent);
    const char *old = getenv("LD_PRELOAD");
    if (old && *old) {
        sb_addch(&pre, ':');
        sb_adds(&pre, old);
    }
    char rate[64], window[32], snapshot[64], gpu_ms[32], heap[32] = "";
    snprintf(gpu_ms, sizeof(gpu_ms), "%u", o->gpu_interval);
    if (o->heap_at_exit) /* the agent waits at exit for this process's snapshot */
        snprintf(heap, sizeof(heap), "%d", (int)getpid());
    snprintf(rate, sizeof(rate), "%.17g", o->rate);
    /* Snapshots for --push and --profile-interval: as often as the more frequent one needs. */
    double snap = 0;
    if (o->push.url)
        snap = o->push.interval_sec;
    if (o->profile_interval > 0 && (snap == 0 || o->profile_interval < snap))
        snap = o->profile_interval;
    snprintf(snapshot, sizeof(snapshot), "%.17g", snap);
    snprintf(window, sizeof(window), "%llu", o->window);
    /* The agent's settings, each under the name the option table gives it (options.h). */
    const struct {
        enum opt_id id;
        const char *value; /* NULL: not set (the agent's default) */
    } agent_env[] = {
        {OPT_CPU_SAMPLING_RATE, rate},
        {OPT_USE_VIRTUAL_TIME, o->virtual_time ? "1" : "0"},
        {OPT_PROGRAM_PATH, program_path},
        {OPT_PROFILE_ALL, o->profile_all ? "1" : "0"},
        {OPT_PROFILE_ONLY, o->only ? o->only : ""},
        {OPT_PROFILE_EXCLUDE, o->exclude ? o->exclude : ""},
        {OPT_PROFILE_SYSTEM_LIBRARIES, o->system_libs ? "1" : "0"},
        {OPT_STACKS, o->stacks ? "1" : "0"},
        {OPT_TIMELINE, o->timeline ? "1" : "0"},
        {OPT_MEMORY, o->memory ? "1" : "0"},
        {OPT_ALLOCATION_SAMPLING_WINDOW, window},
        {OPT_MEMORY_LEAK_DETECTOR, o->leak_detector ? "1" : "0"},
        {OPT_OFF, o->off ? "1" : "0"},
        {OPT_HEAP_AT_EXIT, heap},
        {OPT_PROFILE_INTERVAL, snapshot}, /* --push's interval too */
        {OPT_GPU, gpu_env(o)},
        {OPT_GPU_INTERVAL, o->gpu_interval ? gpu_ms : NULL},
    };
    int err = set_env("LD_PRELOAD", sb_str(&pre));
    if (!err)
        err = set_env("SCRY_PART_DIR", part_dir);
    for (size_t i = 0; !err && i < sizeof(agent_env) / sizeof(agent_env[0]); i++) {
        const char *name = opt_agent_env(agent_env[i].id);
        if (!name)
            err = err_fail(SCRY_E_INTERNAL, "option %d has no agent setting", agent_env[i].id);
        else if (agent_env[i].value)
            err = set_env(name, agent_env[i].value);
    }
    sb_release(&pre);
    return err;
}

static volatile sig_atomic_t child_pid;

/* SIGTERM and SIGHUP sent to scry (not by the terminal) are meant for the program. */
static void forward_signal(int sig)
{
    int saved = errno;
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
    errno = saved;
}

/* Starts the program; returns its pid, or a negative error (exec failed: nothing is running). */
static int spawn(const struct run_opts *o, pid_t *pid_out)
{
    size_t n = 0;
    char **av = calloc((size_t)o->nargs + 4, sizeof(*av));
    if (!av)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    av[n++] = (char *)o->python;
    if (o->module) {
        av[n++] = "-m";
        av[n++] = (char *)o->module;
    } else {
        av[n++] = (char *)o->prog;
    }
    for (int i = 0; i < o->nargs; i++)
        av[n++] = o->args[i];
    av[n] = NULL;

    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        free(av);
        return err_fail(SCRY_E_IO, "cannot create a pipe: %s", strerror(errno));
    }
    /* Signals wait until the forwarding is in place; the child starts with none blocked. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGQUIT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        sigprocmask(SIG_SETMASK, &old, NULL);
        execvp(av[0], av);
        int e = errno;
        ssize_t w = write(pfd[1], &e, sizeof(e));
        (void)w;
        _exit(127);
    }
    int fork_errno = errno;
    close(pfd[1]);
    free(av);
    if (pid < 0) {
        close(pfd[0]);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return err_fail(SCRY_E_IO, "cannot start %s: %s", o->python, strerror(fork_errno));
    }
    child_pid = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = SIG_IGN; /* the terminal sends these to the program too */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);
    sa.sa_handler = forward_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);

    int e = 0;
    ssize_t r;
    do
        r = read(pfd[0], &e, sizeof(e));
    while (r < 0 && errno == EINTR);
    close(pfd[0]);
    if (r == (ssize_t)sizeof(e)) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        child_pid = 0;
        return err_fail_hint(SCRY_E_IO,
                             "install CPython 3.11 or newer, or give its path with --python PATH",
                             "cannot run the Python '%s': %s", o->python, strerror(e));
    }
    *pid_out = pid;
    return 0;
}

static int wait_child(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            st = 0;
            break;
        }
    }
    child_pid = 0;
    return st;
}

/* Ends scry the way the program ended, so that the shell sees the same status. */
static int exit_like(int st)
{
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        struct rlimit nocore = {0, 0};
        setrlimit(RLIMIT_CORE, &nocore); /* the program's core, if any, is the one that matters */
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        fflush(NULL);
        kill(getpid(), sig);
        return 128 + sig; /* a signal whose default is not to terminate */
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : CLI_EXIT_ERROR;
}


static void print_view(const struct strbuf *json, const char *path, double threshold,
                       double malloc_threshold)
{
    bool to_stdout = isatty(1);
    int fd = to_stdout ? 1 : 2;
    const char *nc = getenv("NO_COLOR");
    struct profile_text_opts to = {.color = isatty(fd) && !(nc && *nc),
                                   .threshold = threshold,
                                   .malloc_threshold_mb = malloc_threshold};
    struct strbuf text = STRBUF_INIT;
    if (profile_text_render_bytes(json->buf ? json->buf : "", json->len, path, &to, &text) != 0) {
        fprintf(stderr, "scry: warning: cannot show the profile: %s\n",
                san_str(err_last_message()));
    } else {
        FILE *f = to_stdout ? stdout : stderr;
        fputc('\n', f);
        fwrite(text.buf ? text.buf : "", 1, text.len, f);
        fflush(f);
    }
    sb_release(&text);
}

/* The views at the end: the page next to the profile (--html), the browser view (--web; the
 * page then goes to a temporary file unless --html wrote it) and the terminal view, unless
 * --no-view or the browser showed the profile. What scry says goes to stderr. */
static void show_views(const struct run_opts *o, const struct strbuf *json)
{
    bool in_browser = false;
    if (o->html || o->web) {
        char html[PATH_MAX], page[PATH_MAX], abs[PATH_MAX];
        page_path(o->outfile, html, sizeof(html));
        if (cli_page_write(json->buf ? json->buf : "", json->len, o->outfile, o->threshold,
                           o->html ? html : NULL, page, sizeof(page)) != 0) {
            fprintf(stderr, "scry: warning: cannot write the page: %s\n",
                    san_str(err_last_message()));
        } else {
            const char *shown = realpath(page, abs) ? abs : page, *why = "";
            if (o->html && !o->quiet)
                fprintf(stderr, "scry: wrote the page to %s\n", san_str(page));
            if (o->web && (in_browser = pf_browser_open(shown, &why))) {
                if (!o->quiet)
                    fprintf(stderr, "scry: opened %s in the browser\n", san_str(shown));
            } else if (o->web) /* not silenced: the view is not where it was asked for */
                fprintf(stderr, "scry: the page is %s; %s%s\n", san_str(shown), why,
                        o->no_view ? "" : ": the terminal view instead");
        }
    }
    if (!o->no_view && !in_browser)
        print_view(json, o->outfile, o->threshold, o->malloc_threshold);
}

/* The run's last line when the machine was oversubscribed: the view (or the page) says it at its
 * top, which a long view has scrolled away and --no-view never shows, while the shares of system
 * time it explains are what a person reads last. */
static void warn_oversubscribed(const struct profile *p)
{
    if (!prof_oversubscribed(p))
        return;
    struct strbuf w = STRBUF_INIT;
    profile_text_oversubscribed(&w, p->run_queue_delay_sec, p->run_queue_cpu_sec);
    fprintf(stderr, "scry: warning: %s\n", w.buf ? w.buf : "");
    sb_release(&w);
}

/* --push: the profile of every process so far is read from the part directory (snapshots and
 * parts) at the end of each interval; what it gained since the previous one is the interval's
 * profile. */
struct push_state {
    struct pusher *ps;
    const char *dir;
    pid_t child;
    const struct profile_json_opts *jo;
    struct push_delta delta;
};

static void push_window(struct push_state *st)
{
    struct profile p;
    prof_init(&p);
    run_parts_read(&p, st->dir, st->child, true);
    prof_finish(&p);
    push_profile(st->ps, &st->delta, &p, st->jo);
    prof_free(&p);
}

/* --profile-interval: the profile of every process so far (snapshots and parts), written over
 * the profile's file at the end of each interval (outfile_write_all: a new file renamed over
 * the old one, so a reader never sees half a profile). */
struct rewrite_state {
    const char *dir, *path;
    pid_t child;
    const struct profile_json_opts *jo;
    bool warned;
};

static void rewrite_profile(struct rewrite_state *rw)
{
    struct profile p;
    struct strbuf json = STRBUF_INIT;
    prof_init(&p);
    run_parts_read(&p, rw->dir, rw->child, true);
    prof_finish(&p);
    if (p.nparts > 0) {
        cli_profile_read_sources(&p);
        profile_json_write(&p, rw->jo, &json);
        if (outfile_write_all(rw->path, json.buf ? json.buf : "", json.len, OUTFILE_PRIVATE) !=
                0 &&
            !rw->warned) {
            fprintf(stderr, "scry: warning: cannot rewrite the profile while the program runs: "
                            "%s\n",
                    san_str(err_last_message()));
            rw->warned = true;
        }
    }
    sb_release(&json);
    prof_free(&p);
}

/* What is done every so often while the program runs: pushes (--push) and rewrites of the
 * profile (--profile-interval). The agent writes its snapshots every interval from its start,
 * a moment after ours: each round comes a little later (a quarter of the interval, at most
 * 0.5 s) to find the new ones. */
struct periodic {
    struct push_state *push;
    double push_every, push_next;
    struct rewrite_state *rw;
    double rw_every, rw_next;
    const char *heap_path; /* --heap-at-exit: the snapshot to take when the program ends */
    const char *part_dir;
    bool heap_done;
};

#define HEAP_POLL_S 0.02

/* --heap-at-exit: once the program's agent marks that it has ended (heapexit-PID in the part
 * directory, src/agent/control.c), `scry dump --pid` of it (this executable), then the mark is
 * removed and the program goes on to finalize. The dump's report goes to stderr: the program's
 * stdout is its own. */
static void heap_at_exit_check(struct periodic *pe, pid_t pid)
{
    char mark[PATH_MAX + 64];
    snprintf(mark, sizeof(mark), "%s/heapexit-%d", pe->part_dir, (int)pid);
    struct stat st;
    if (pe->heap_done || lstat(mark, &st) != 0)
        return;
    pe->heap_done = true;
    char pidtext[32];
    snprintf(pidtext, sizeof(pidtext), "%d", (int)pid);
    /* The dump runs without the agent preloaded (this process's environment has it for the
     * program). */
    extern char **environ;
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 1, sizeof(*env));
    for (size_t i = 0; env && i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
            env[k++] = environ[i];
    char *const argv[] = {"scry", "dump", "--pid", pidtext, "-o", (char *)pe->heap_path, NULL};
    fflush(NULL);
    pid_t d = env ? fork() : -1;
    if (d == 0) {
        dup2(2, 1);
        execve(pf_self_exec_path(), argv, env);
        _exit(127);
    }
    free(env);
    int dst = 0;
    while (d > 0 && waitpid(d, &dst, 0) < 0 && errno == EINTR)
        ;
    if (d < 0 || !WIFEXITED(dst) || WEXITSTATUS(dst) != 0)
        fprintf(stderr, "scry: warning: the heap snapshot at exit (%s) was not written\n",
                san_str(pe->heap_path));
    unlink(mark);
}

static double first_round(double t0, double every)
{
    return t0 + every + fmin(0.5, every / 4);
}

static void next_round(double *next, double every)
{
    while (*next <= mono_now())
        *next += every;
}

/* wait_child, doing the periodic work meanwhile. */
static int wait_child_periodic(pid_t pid, struct periodic *pe)
{
    int pfd = pf_process_handle(pid);
    for (;;) {
        double now = mono_now();
        if (pe->push && now >= pe->push_next) {
            push_window(pe->push);
            next_round(&pe->push_next, pe->push_every);
            continue;
        }
        if (pe->rw && now >= pe->rw_next) {
            rewrite_profile(pe->rw);
            next_round(&pe->rw_next, pe->rw_every);
            continue;
        }
        if (pe->heap_path)
            heap_at_exit_check(pe, pid);
        double next = pe->push ? pe->push_next : pe->rw ? pe->rw_next : now + HEAP_POLL_S;
        if (pe->push && pe->rw && pe->rw_next < next)
            next = pe->rw_next;
        if (pe->heap_path && !pe->heap_done && next > now + HEAP_POLL_S)
            next = now + HEAP_POLL_S;
        int ms = (int)ceil((next - now) * 1000);
        if (pfd >= 0) {
            struct pollfd pl = {pfd, POLLIN, 0};
            if (poll(&pl, 1, ms) > 0)
                break;
        } else {
            /* No pidfd (a kernel before 5.3): look every 20 ms. */
            struct timespec ts = {0, (ms < 20 ? ms : 20) * 1000000L};
            nanosleep(&ts, NULL);
            int wst;
            if (waitpid(pid, &wst, WNOHANG) == pid) {
                child_pid = 0;
                return wst;
            }
        }
    }
    close(pfd);
    return wait_child(pid);
}

static int run(struct run_opts o);

/* A usage error found after parsing (--program-path's directory) names its option first: when
 * only the config gave that option, the error gets the config's file and line. */
static void blame_late(const struct run_opts *o)
{
    const char *msg = err_last_message();
    for (size_t i = o->config.nargs; i-- > 0;) {
        const char *a = o->config.args[i];
        size_t n = strcspn(a, "=");
        if (strncmp(msg, a, n) != 0 || msg[n] != ' ')
            continue;
        for (char **arg = o->argv + 1 + o->config.nargs; *arg; arg++)
            if (strncmp(*arg, a, n) == 0 && ((*arg)[n] == 0 || (*arg)[n] == '='))
                return; /* the command line gave it too */
        cli_config_blame(&o->config, i);
        return;
    }
}

int cmd_run(int argc, char **argv)
{
    struct run_opts o;
    bool help = false;
    int rc;
    if (run_parse_options(argc, argv, &o, &help) != 0) {
        if (o.at > 0)
            cli_config_blame(&o.config, (size_t)o.at - 1);
        rc = cli_report_error(false);
    } else if (help) {
        rc = cli_help();
    } else if ((rc = run(o)) == -SCRY_E_USAGE) {
        blame_late(&o);
    }
    free(o.push.tags);
    free(o.argv);
    cli_config_free(&o.config);
    return rc;
}

/* The program's absolute path (or its module's name), its directory, and the directory whose
 * files are the program's (--program-path, else the program's or the current one), each
 * PATH_MAX bytes: 0, or what `scry run` returns. */
static int program_paths(const struct run_opts *o, char *program, char *entry_dir,
                         char *program_path)
{
    program[0] = entry_dir[0] = 0;
    if (o->prog) {
        struct stat st;
        if (stat(o->prog, &st) != 0 || !realpath(o->prog, program)) {
            err_fail_hint(SCRY_E_IO, "check the program's path, or use -m for a module",
                          "cannot open the program %s: %s", o->prog, strerror(errno));
            return cli_report_error(false);
        }
        if (S_ISDIR(st.st_mode)) {
            /* python runs a directory's __main__.py; its directory is the program's. */
            snprintf(entry_dir, PATH_MAX, "%s", program);
        } else {
            snprintf(entry_dir, PATH_MAX, "%s", program);
            char *slash = strrchr(entry_dir, '/');
            if (slash)
                *(slash == entry_dir ? slash + 1 : slash) = 0;
        }
    } else {
        snprintf(program, PATH_MAX, "%s", o->module);
    }
    if (o->program_path) {
        struct stat st;
        if (!realpath(o->program_path, program_path) || stat(program_path, &st) != 0 ||
            !S_ISDIR(st.st_mode))
            return cli_usage("--program-path needs a directory, not '%s'",
                             o->program_path);
    } else if (o->prog) {
        snprintf(program_path, PATH_MAX, "%s", entry_dir);
    } else if (!getcwd(program_path, PATH_MAX)) {
        err_fail(SCRY_E_IO, "cannot read the current directory: %s", strerror(errno));
        return cli_report_error(false);
    }
    return 0;
}

/* Waits for the program, doing meanwhile the periodic work asked for (--push, a profile
 * rewritten every --profile-interval when rewrite, --heap-at-exit): its wait status. */
static int wait_program(const struct run_opts *o, pid_t pid, double t0, const char *part_dir,
                        struct push_state *ps, bool rewrite, const struct profile_json_opts *jo)
{
    ps->child = pid;
    struct rewrite_state rw = {.dir = part_dir, .path = o->outfile, .child = pid, .jo = jo};
    struct periodic pe = {0};
    if (ps->ps) {
        pe.push = ps;
        pe.push_every = o->push.interval_sec;
        pe.push_next = first_round(t0, pe.push_every);
    }
    if (rewrite) {
        pe.rw = &rw;
        pe.rw_every = o->profile_interval;
        pe.rw_next = first_round(t0, pe.rw_every);
    }
    if (o->heap_at_exit) {
        pe.heap_path = o->heap_at_exit;
        pe.part_dir = part_dir;
    }
    int st = pe.push || pe.rw || pe.heap_path ? wait_child_periodic(pid, &pe) : wait_child(pid);
    if (pe.heap_path && !pe.heap_done)
        fprintf(stderr, "scry: warning: no heap snapshot at exit: the program ended without "
                        "running its atexit handlers (os._exit, a signal, exec)\n");
    return st;
}

/* The profile of what the program's processes wrote in part_dir (which goes), with the sources
 * of its files; when none wrote a part, what scry saw itself (st: the program's wait status,
 * ran: its seconds, wall0: when it started). */
static void gather_profile(struct profile *p, const struct run_opts *o, const char *part_dir,
                           pid_t pid, int st, double ran, const struct timespec *wall0)
{
    /* The merge of many parts, the sources and the document take seconds: a progress line
     * (common/progress.h), not with --json, --no-view or --quiet, erased before the view. */
    prog_init(o->no_view || o->quiet);
    run_parts_read(p, part_dir, pid, false);
    run_parts_remove_dir(part_dir);
    prof_finish(p);
    if (p->nparts == 0) {
        p->elapsed_sec = ran;
        p->sampling_rate_sec = o->rate;
        p->virtual_time = o->virtual_time;
        p->start_time_absolute = (double)wall0->tv_sec + (double)wall0->tv_nsec / 1e9;
        if (WIFSIGNALED(st))
            p->note = arena_printf(&p->arena,
                                   "the program was killed by signal %d (%s) after %.3f s, "
                                   "before it could write its profile data: nothing was recorded",
                                   WTERMSIG(st), strsignal(WTERMSIG(st)), ran);
    }
    prog_phase("reading the sources", PROG_NONE, 0, NULL, NULL);
    cli_profile_read_sources(p);
    prog_done();
    if (p->memory_unsupported)
        fprintf(stderr, "scry: warning: memory was not profiled: Python %s is a free-threaded "
                        "build whose allocator's (mimalloc's) blocks scry does not know how to "
                        "read (it knows 3.13's release builds); this profile has CPU time only, "
                        "as with --cpu-only\n",
                san_str(p->python_version ? p->python_version : "?"));
}

/* Writes the profile to out, says so and shows it: the program's exit status (st: its wait
 * status), or an error's when the profile could not be written. */
static int write_profile(struct profile *p, const struct run_opts *o,
                         const struct profile_json_opts *jo, struct outfile *out, int st)
{
    struct strbuf json = STRBUF_INIT;
    prog_phase("writing the profile", PROG_NONE, 0, NULL, NULL);
    profile_json_write(p, jo, &json);
    prog_done();
    int status = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
    int werr = outfile_write(out, json.buf ? json.buf : "", json.len);
    if (werr)
        outfile_abort(out);
    else
        werr = outfile_commit(out);
    if (werr) {
        cli_report_error(false);
        if (status == 0)
            status = CLI_EXIT_ERROR;
    } else {
        if (!o->quiet)
            fprintf(stderr,
                    "scry: wrote %s (%llu samples over %.3f s); view it with: scry view --cli "
                    "%s\n",
                    san_str(o->outfile), (unsigned long long)p->samples, p->elapsed_sec,
                    san_str(o->outfile));
        show_views(o, &json);
        warn_oversubscribed(p);
    }
    sb_release(&json);
    return status;
}

static int run(struct run_opts o)
{
    char agent[PATH_MAX], program_path[PATH_MAX], program[PATH_MAX], entry_dir[PATH_MAX];
    int rc = program_paths(&o, program, entry_dir, program_path);
    if (rc)
        return rc;
    if (cli_find_agent(agent, sizeof(agent)) != 0)
        return cli_report_error(false);

    /* The profile's file is created now, before the program runs: a path that cannot be
     * written fails here instead of losing the profile at the end. */
    struct outfile out;
    if (outfile_open(&out, o.outfile, OUTFILE_PRIVATE) != 0)
        return cli_report_error(false);

    /* A profile written straight to a device or a pipe (-o /dev/stdout) is written once. */
    bool rewrite = o.profile_interval > 0 && out.tmp;
    if (o.profile_interval > 0 && !out.tmp)
        fprintf(stderr, "scry: warning: %s is not a regular file: the profile is written once, "
                        "at the end, not every %g s\n",
                san_str(o.outfile), o.profile_interval);

    char part_dir[PATH_MAX];
    if (run_parts_make_dir(part_dir) != 0) {
        outfile_abort(&out);
        return cli_report_error(false);
    }

    struct push_state ps = {.dir = part_dir};
    if (o.push.url) {
        char service[256];
        push_default_service(o.module ? o.module : o.prog, service, sizeof(service));
        if (push_start(&ps.ps, &o.push, o.push.service ? o.push.service : service, o.rate) != 0) {
            run_parts_remove_dir(part_dir);
            outfile_abort(&out);
            return cli_report_error(false);
        }
    }

    struct profile p;
    prof_init(&p);
    double t0 = mono_now();
    struct timespec wall0;
    clock_gettime(CLOCK_REALTIME, &wall0);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    struct profile_json_opts jo = {
        .version = SCRY_VERSION,
        .program = program,
        .entrypoint_dir = entry_dir,
        .filename = program_path,
        .args = (const char *const *)o.args,
        .nargs = (size_t)o.nargs,
        .start_time_perf = t0,
        .cpu_percent_threshold = o.threshold,
        .reduced = o.reduced,
        .malloc_threshold_mb = o.malloc_threshold,
        .ncpus = ncpu > 0 ? (unsigned)ncpu : 1,
    };
    /* The pushed profiles keep every line, whatever --reduced-profile does to the file. */
    struct profile_json_opts push_jo = jo;
    push_jo.reduced = false;
    ps.jo = &push_jo;
    pid_t pid = 0;
    if (setup_env(&o, agent, part_dir, program_path) != 0 || spawn(&o, &pid) != 0) {
        run_parts_remove_dir(part_dir);
        prof_free(&p);
        outfile_abort(&out);
        push_end(ps.ps, false);
        return cli_report_error(false);
    }
    int st = wait_program(&o, pid, t0, part_dir, &ps, rewrite, &jo);
    double ran = mono_now() - t0;

    run_parts_wait_lingering(part_dir);
    if (ps.ps)
        push_window(&ps); /* the last interval, from the parts */
    gather_profile(&p, &o, part_dir, pid, st, ran, &wall0);
    int status = write_profile(&p, &o, &jo, &out, st);
    /* The profile is written: only now wait (a bounded time) for the pushes still queued. */
    push_end(ps.ps, true);
    push_delta_free(&ps.delta);
    prof_free(&p);
    if (WIFSIGNALED(st))
        return exit_like(st);
    return status;
}
