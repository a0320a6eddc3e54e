/* `scry run`: runs a Python program with the agent preloaded (docs/agent-protocol.md), waits for
 * it with the terminal's signals left to it, merges the part files its processes wrote into
 * scry-profile.json (docs/json-schema.md) and shows the terminal view. The program's stdin,
 * stdout, stderr and exit status pass through unchanged. */
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/profile.h"
#include "cli/cli.h"
#include "common/error.h"
#include "common/grow.h"
#include "common/log.h"
#include "common/outfile.h"
#include "common/sanitize.h"
#include "render/profile_json.h"
#include "render/profile_text.h"

const char cmd_run_usage[] =
    "usage: scry run [options] prog.py [---] [args]\n"
    "       scry run [options] -m module [args]\n"
    "\n"
    "Runs the program with scry's agent and writes its profile: for each line and function of\n"
    "your code, the share of the time spent running Python, in native code (C extensions,\n"
    "builtins) and off the CPU (sleep, I/O, locks), and the memory it allocated (through\n"
    "Python's allocator or natively), its peak, growth, copy volume and likely leaks.\n"
    "Children that run Python are profiled too.\n"
    "Options stop at the program name; what follows it is the program's own command line.\n"
    "\n"
    "  -o, --outfile FILE              where to write the profile (default scry-profile.json)\n"
    "      --python PATH               the Python to run (default: python3 on PATH)\n"
    "  -m MODULE                       run a module, as python -m does\n"
    "      --cpu-only                  profile CPU time only (no memory, copies or leaks)\n"
    "      --memory                    profile memory too (the default)\n"
    "      --allocation-sampling-window B\n"
    "                                  bytes a thread allocates (net) between two memory\n"
    "                                  samples (default 1048576)\n"
    "      --memory-leak-detector / --no-memory-leak-detector\n"
    "                                  report lines whose allocations look leaked (default on)\n"
    "      --cpu-sampling-rate S       mean seconds between samples (default 0.01)\n"
    "      --use-virtual-time          count time on the CPU only, not sleep or I/O\n"
    "      --profile-all               profile every file, the standard library included\n"
    "      --profile-only A,B          only files whose path contains one of these\n"
    "      --profile-exclude A,B       never files whose path contains one of these\n"
    "      --profile-system-libraries  also profile the standard library and site-packages\n"
    "      --program-path DIR          your code: files under DIR are profiled (default: the\n"
    "                                  program's directory; for -m the current directory)\n"
    "      --cpu-percent-threshold P   the view hides lines under P% of the time (default 1);\n"
    "                                  with --reduced-profile the JSON leaves them out too\n"
    "      --reduced-profile           keep only lines and functions at or above the threshold\n"
    "      --no-view                   do not print the terminal view at the end\n"
    "      --stacks / --no-stacks      record the call stacks of your code (for flame graphs;\n"
    "                                  default off)\n"
    "\n"
    "The view goes to standard output when it is a terminal, else to standard error; see it\n"
    "again with: scry view --cli scry-profile.json\n";

struct run_opts {
    const char *outfile;
    const char *python;
    const char *module; /* -m */
    const char *prog;   /* the script, when not -m */
    char **args;        /* the program's arguments */
    int nargs;
    double rate;
    bool virtual_time, profile_all, system_libs, reduced, no_view, stacks;
    bool memory, leak_detector;
    unsigned long long window; /* --allocation-sampling-window */
    const char *only, *exclude;
    const char *program_path;
    double threshold;
};

static int parse(int argc, char **argv, struct run_opts *o, bool *help)
{
    enum {
        O_PYTHON = 256, O_CPU_ONLY, O_RATE, O_VIRTUAL, O_ALL, O_ONLY, O_EXCLUDE, O_SYSLIB,
        O_PPATH, O_THRESHOLD, O_REDUCED, O_NO_VIEW, O_STACKS, O_NO_STACKS, O_MEMORY, O_WINDOW,
        O_LEAKS, O_NO_LEAKS,
    };
    static const struct option longopts[] = {
        {"outfile", required_argument, NULL, 'o'},
        {"python", required_argument, NULL, O_PYTHON},
        {"cpu-only", no_argument, NULL, O_CPU_ONLY},
        {"memory", no_argument, NULL, O_MEMORY},
        {"allocation-sampling-window", required_argument, NULL, O_WINDOW},
        {"memory-leak-detector", no_argument, NULL, O_LEAKS},
        {"no-memory-leak-detector", no_argument, NULL, O_NO_LEAKS},
        {"cpu-sampling-rate", required_argument, NULL, O_RATE},
        {"use-virtual-time", no_argument, NULL, O_VIRTUAL},
        {"profile-all", no_argument, NULL, O_ALL},
        {"profile-only", required_argument, NULL, O_ONLY},
        {"profile-exclude", required_argument, NULL, O_EXCLUDE},
        {"profile-system-libraries", no_argument, NULL, O_SYSLIB},
        {"program-path", required_argument, NULL, O_PPATH},
        {"cpu-percent-threshold", required_argument, NULL, O_THRESHOLD},
        {"reduced-profile", no_argument, NULL, O_REDUCED},
        {"no-view", no_argument, NULL, O_NO_VIEW},
        {"stacks", no_argument, NULL, O_STACKS},
        {"no-stacks", no_argument, NULL, O_NO_STACKS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->outfile = "scry-profile.json";
    o->python = "python3";
    o->rate = 0.01;
    o->threshold = 1.0;
    o->memory = true;
    o->leak_detector = true;
    o->window = 1048576;
    *help = false;
    opterr = 0;
    optind = 1;
    int c;
    bool sep = false; /* a `---` was removed */
    for (;;) {
        /* `---` (Scalene's separator) is not an option: stop there. */
        if (optind < argc && strcmp(argv[optind], "---") == 0) {
            optind++;
            sep = true;
            break;
        }
        c = getopt_long(argc, argv, "+:o:m:h", longopts, NULL);
        if (c == -1)
            break;
        char *end;
        switch (c) {
        case 'o':
            if (!*optarg)
                return cli_usage("--outfile needs a file name");
            o->outfile = optarg;
            break;
        case 'm':
            o->module = optarg;
            break;
        case O_PYTHON:
            if (!*optarg)
                return cli_usage("--python needs the path of a Python");
            o->python = optarg;
            break;
        case O_CPU_ONLY:
            o->memory = false;
            break;
        case O_MEMORY:
            o->memory = true;
            break;
        case O_WINDOW:
            errno = 0;
            o->window = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-' || o->window == 0)
                return cli_usage("--allocation-sampling-window needs a number of bytes above 0 "
                                 "(such as 1048576), not '%s'",
                                 optarg);
            break;
        case O_LEAKS:
            o->leak_detector = true;
            break;
        case O_NO_LEAKS:
            o->leak_detector = false;
            break;
        case O_RATE:
            errno = 0;
            o->rate = strtod(optarg, &end);
            if (errno || end == optarg || *end || !isfinite(o->rate) || o->rate <= 0 ||
                o->rate > 3600)
                return cli_usage("--cpu-sampling-rate needs a number of seconds above 0 (such as "
                                 "0.01), not '%s'",
                                 optarg);
            break;
        case O_VIRTUAL:
            o->virtual_time = true;
            break;
        case O_ALL:
            o->profile_all = true;
            break;
        case O_ONLY:
            o->only = optarg;
            break;
        case O_EXCLUDE:
            o->exclude = optarg;
            break;
        case O_SYSLIB:
            o->system_libs = true;
            break;
        case O_PPATH:
            o->program_path = optarg;
            break;
        case O_THRESHOLD:
            if (!cli_parse_percent(optarg, &o->threshold))
                return cli_usage("--cpu-percent-threshold needs a percentage from 0 to 100, not "
                                 "'%s'",
                                 optarg);
            break;
        case O_REDUCED:
            o->reduced = true;
            break;
        case O_NO_VIEW:
            o->no_view = true;
            break;
        case O_STACKS:
            o->stacks = true;
            break;
        case O_NO_STACKS:
            o->stacks = false;
            break;
        case 'h':
            *help = true;
            return 0;
        default:
            return cli_option_error(c, argv);
        }
        if (c == 'm')
            break; /* what follows the module is its command line */
    }
    if (!o->module) {
        if (optind >= argc)
            return cli_usage("give the program to profile: scry run [options] "
                             "prog.py [args], or scry run [options] -m module [args]");
        o->prog = argv[optind++];
    }
    if (!sep && optind < argc && strcmp(argv[optind], "---") == 0)
        optind++;
    o->args = argv + optind;
    o->nargs = argc - optind;
    return 0;
}

/* The agent sits next to the scry binary. */
static int find_agent(char *out, size_t n)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len <= 0)
        return err_fail(SCRY_E_IO, "cannot find scry's own executable: %s", strerror(errno));
    exe[len] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    if ((size_t)snprintf(out, n, "%s/libscry-agent.so", exe) >= n)
        return err_fail(SCRY_E_IO, "the path of scry's agent library is too long");
    if (access(out, R_OK) != 0)
        return err_fail_hint(SCRY_E_IO,
                             "the agent is built with scry ('make' builds build/libscry-agent.so); "
                             "keep it next to the scry binary",
                             "cannot find scry's agent library %s: %s", out, strerror(errno));
    return 0;
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
    char rate[64], window[32];
    snprintf(rate, sizeof(rate), "%.17g", o->rate);
    snprintf(window, sizeof(window), "%llu", o->window);
    int err;
    if ((err = set_env("LD_PRELOAD", sb_str(&pre))) || (err = set_env("SCRY_PART_DIR", part_dir)) ||
        (err = set_env("SCRY_CPU_SAMPLING_RATE", rate)) ||
        (err = set_env("SCRY_VIRTUAL_TIME", o->virtual_time ? "1" : "0")) ||
        (err = set_env("SCRY_PROGRAM_PATH", program_path)) ||
        (err = set_env("SCRY_PROFILE_ALL", o->profile_all ? "1" : "0")) ||
        (err = set_env("SCRY_PROFILE_ONLY", o->only ? o->only : "")) ||
        (err = set_env("SCRY_PROFILE_EXCLUDE", o->exclude ? o->exclude : "")) ||
        (err = set_env("SCRY_PROFILE_SYSTEM_LIBRARIES", o->system_libs ? "1" : "0")) ||
        (err = set_env("SCRY_STACKS", o->stacks ? "1" : "0")) ||
        (err = set_env("SCRY_MEMORY", o->memory ? "1" : "0")) ||
        (err = set_env("SCRY_ALLOCATION_WINDOW", window)) ||
        (err = set_env("SCRY_LEAK_DETECTOR", o->leak_detector ? "1" : "0"))) {
    }
    sb_release(&pre);
    return err;
}

/* Removes the part directory and whatever is in it (parts, temporary files of parts). */
static void remove_part_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    if (rmdir(dir) != 0 && errno != ENOENT)
        fprintf(stderr, "scry: warning: cannot remove %s: %s\n", dir, strerror(errno));
}

/* Python processes of the program that outlive it (a multiprocessing resource tracker, a child
 * that was not waited for) write their parts a moment later: each process marks itself with an
 * empty live-<pid> file while it profiles. Wait, at most LINGER_MS, for those still running. */
#define LINGER_MS 2000

static void wait_for_lingering(const char *dir)
{
    for (int waited = 0; waited < LINGER_MS; waited += 10) {
        bool any = false;
        DIR *d = opendir(dir);
        if (!d)
            return;
        struct dirent *e;
        while ((e = readdir(d)) != NULL && !any) {
            char *end;
            if (strncmp(e->d_name, "live-", 5) != 0)
                continue;
            long pid = strtol(e->d_name + 5, &end, 10);
            if (*end || pid <= 0)
                continue;
            /* A process that died without writing (SIGKILL) leaves its marker: skip it. */
            if (kill((pid_t)pid, 0) == 0 || errno == EPERM)
                any = true;
        }
        closedir(d);
        if (!any)
            return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void read_parts(struct profile *p, const char *dir, pid_t child)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "scry: warning: cannot read the part directory %s: %s\n", dir,
                strerror(errno));
        return;
    }
    /* Sorted names, so that the merge does not depend on the directory's order. */
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        /* .part-PID.json.tmp: the part of a process that could not rename it (it dropped its
         * privileges), or one that is not complete (checked below). */
        bool part = len >= 10 && strncmp(e->d_name, "part-", 5) == 0 &&
                    strcmp(e->d_name + len - 5, ".json") == 0;
        bool tmp = len >= 15 && strncmp(e->d_name, ".part-", 6) == 0 &&
                   strcmp(e->d_name + len - 9, ".json.tmp") == 0;
        if (!part && !tmp)
            continue;
        if (grow_array(&names, &cap, n + 1, sizeof(*names)))
            break;
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), cmp_name);
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        char *data;
        size_t len;
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= sizeof(path)) {
            free(names[i]);
            continue;
        }
        if (cli_read_file(path, &data, &len) == 0) {
            /* A part under its temporary name counts once complete: the agent ends every part
             * with "}\n", and writes the file, created empty at the start, only once. */
            if (names[i][0] == '.' && (len < 2 || memcmp(data + len - 2, "}\n", 2) != 0))
                ; /* still being written, or never: not a part */
            else if (prof_add_part_text(p, data, len, names[i], child) != 0)
                fprintf(stderr, "scry: warning: %s; skipped\n", san_str(err_last_message()));
            free(data);
        } else {
            fprintf(stderr, "scry: warning: %s; skipped\n", san_str(err_last_message()));
        }
        free(names[i]);
    }
    free(names);
}

/* Source of every profiled file, for the text of each line; unreadable files keep none. */
static void read_sources(struct profile *p)
{
    for (size_t i = 0; i < p->nfiles; i++) {
        struct stat st;
        const char *name = p->files[i].name;
        if (stat(name, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20))
            continue;
        char *data;
        size_t len;
        if (cli_read_file(name, &data, &len) != 0)
            continue;
        if (prof_set_source(p, i, data, len) != 0)
            fprintf(stderr, "scry: warning: %s\n", san_str(err_last_message()));
        free(data);
    }
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


static void print_view(const struct strbuf *json, const char *path, double threshold)
{
    bool to_stdout = isatty(1);
    int fd = to_stdout ? 1 : 2;
    const char *nc = getenv("NO_COLOR");
    struct profile_text_opts to = {.color = isatty(fd) && !(nc && *nc), .threshold = threshold};
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

int cmd_run(int argc, char **argv)
{
    struct run_opts o;
    bool help;
    if (parse(argc, argv, &o, &help) != 0)
        return cli_report_error(false);
    if (help) {
        return cli_help();
    }

    char agent[PATH_MAX], program_path[PATH_MAX], program[PATH_MAX], entry_dir[PATH_MAX];
    program[0] = entry_dir[0] = 0;
    if (o.prog) {
        struct stat st;
        if (stat(o.prog, &st) != 0 || !realpath(o.prog, program)) {
            err_fail_hint(SCRY_E_IO, "check the program's path, or use -m for a module",
                          "cannot open the program %s: %s", o.prog, strerror(errno));
            return cli_report_error(false);
        }
        if (S_ISDIR(st.st_mode)) {
            /* python runs a directory's __main__.py; its directory is the program's. */
            snprintf(entry_dir, sizeof(entry_dir), "%s", program);
        } else {
            snprintf(entry_dir, sizeof(entry_dir), "%s", program);
            char *slash = strrchr(entry_dir, '/');
            if (slash)
                *(slash == entry_dir ? slash + 1 : slash) = 0;
        }
    } else {
        snprintf(program, sizeof(program), "%s", o.module);
    }
    if (o.program_path) {
        struct stat st;
        if (!realpath(o.program_path, program_path) || stat(program_path, &st) != 0 ||
            !S_ISDIR(st.st_mode))
            return cli_usage("--program-path needs a directory, not '%s'",
                             o.program_path);
    } else if (o.prog) {
        snprintf(program_path, sizeof(program_path), "%s", entry_dir);
    } else if (!getcwd(program_path, sizeof(program_path))) {
        err_fail(SCRY_E_IO, "cannot read the current directory: %s", strerror(errno));
        return cli_report_error(false);
    }
    if (find_agent(agent, sizeof(agent)) != 0)
        return cli_report_error(false);

    /* The profile's file is created now, before the program runs: a path that cannot be
     * written fails here instead of losing the profile at the end. */
    struct outfile out;
    if (outfile_open(&out, o.outfile, OUTFILE_PRIVATE) != 0)
        return cli_report_error(false);

    const char *tmp = getenv("TMPDIR");
    char part_dir[PATH_MAX];
    snprintf(part_dir, sizeof(part_dir), "%s/scry-parts-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(part_dir)) {
        snprintf(part_dir, sizeof(part_dir), "/tmp/scry-parts-XXXXXX");
        if (!mkdtemp(part_dir)) {
            err_fail(SCRY_E_IO, "cannot create a directory for the profile's parts in /tmp: %s",
                     strerror(errno));
            outfile_abort(&out);
            return cli_report_error(false);
        }
    }

    struct profile p;
    struct strbuf json = STRBUF_INIT;
    prof_init(&p);
    double t0 = mono_now();
    struct timespec wall0;
    clock_gettime(CLOCK_REALTIME, &wall0);
    pid_t pid = 0;
    if (setup_env(&o, agent, part_dir, program_path) != 0 || spawn(&o, &pid) != 0) {
        remove_part_dir(part_dir);
        prof_free(&p);
        outfile_abort(&out);
        return cli_report_error(false);
    }
    int st = wait_child(pid);
    double ran = mono_now() - t0;

    wait_for_lingering(part_dir);
    read_parts(&p, part_dir, pid);
    remove_part_dir(part_dir);
    prof_finish(&p);
    if (p.nparts == 0) {
        p.elapsed_sec = ran;
        p.sampling_rate_sec = o.rate;
        p.virtual_time = o.virtual_time;
        p.start_time_absolute = (double)wall0.tv_sec + (double)wall0.tv_nsec / 1e9;
        if (WIFSIGNALED(st))
            p.note = arena_printf(&p.arena,
                                  "the program was killed by signal %d (%s) after %.3f s, before "
                                  "it could write its profile data: nothing was recorded",
                                  WTERMSIG(st), strsignal(WTERMSIG(st)), ran);
    }
    read_sources(&p);

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
        .ncpus = ncpu > 0 ? (unsigned)ncpu : 1,
    };
    profile_json_write(&p, &jo, &json);
    int status = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
    int werr = outfile_write(&out, json.buf ? json.buf : "", json.len);
    if (werr)
        outfile_abort(&out);
    else
        werr = outfile_commit(&out);
    if (werr) {
        cli_report_error(false);
        if (status == 0)
            status = CLI_EXIT_ERROR;
    } else {
        fprintf(stderr,
                "scry: wrote %s (%llu samples over %.3f s); view it with: scry view --cli %s\n",
                san_str(o.outfile), (unsigned long long)p.samples, p.elapsed_sec,
                san_str(o.outfile));
        if (!o.no_view)
            print_view(&json, o.outfile, o.threshold);
    }
    sb_release(&json);
    prof_free(&p);
    if (WIFSIGNALED(st))
        return exit_like(st);
    return status;
}
