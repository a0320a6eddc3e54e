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
#include <poll.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/profile.h"
#include "analysis/profile_delta.h"
#include "analysis/profile_doc.h"
#include "analysis/part_delta.h"
#include "cli/cli.h"
#include "push/push.h"
#include "common/error.h"
#include "common/grow.h"
#include "common/infile.h"
#include "common/log.h"
#include "common/outfile.h"
#include "common/progress.h"
#include "common/sanitize.h"
#include "render/pprof.h"
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
    "  -c, --config FILE               options from a YAML file (option: value, a list for\n"
    "                                  --tag, true/false for flags); the command line wins\n"
    "      --python PATH               the Python to run (default: $SCRY_PYTHON, else python3\n"
    "                                  on PATH; python -m scry: its own interpreter)\n"
    "  -m MODULE                       run a module, as python -m does\n"
    "      --cpu-only                  profile CPU time only (no memory, copies or leaks)\n"
    "      --cpu                       CPU time; without --memory, CPU time only (Scalene's\n"
    "                                  mode flags)\n"
    "      --memory                    profile memory too (the default)\n"
    "      --allocation-sampling-window B\n"
    "                                  bytes a thread allocates (net) between two memory\n"
    "                                  samples (default 1048576)\n"
    "      --memory-leak-detector / --no-memory-leak-detector\n"
    "                                  report lines whose allocations look leaked (default on)\n"
    "      --gpu / --no-gpu            GPU utilisation and memory per line, NVIDIA through NVML\n"
    "                                  (default: on when a device is visible; --gpu is also a\n"
    "                                  mode flag: --gpu without --memory is CPU and GPU only)\n"
    "      --gpu-interval MS           milliseconds between two GPU readings (10 to 60000,\n"
    "                                  default 50)\n"
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
    "                                  (or with memory: see --malloc-threshold)\n"
    "      --malloc-threshold MB       a line under the time threshold stays in the reduced\n"
    "                                  profile and the view for its memory only when it\n"
    "                                  allocated at least MB megabytes (default 0: any)\n"
    "      --cli                       print the terminal view at the end (the default)\n"
    "      --no-view, --json           do not print it: the JSON profile only\n"
    "  -q, --quiet                     say nothing but warnings and errors: no progress line\n"
    "                                  at the end, no line saying what was written (the view\n"
    "                                  is still printed unless --no-view)\n"
    "      --html                      also write the browser page next to the profile\n"
    "                                  (scry-profile.html for scry-profile.json)\n"
    "      --web, --viewer             open the browser view at the end instead of printing the\n"
    "                                  terminal view ($BROWSER or xdg-open, with a display;\n"
    "                                  otherwise the terminal view)\n"
    "      --no-browser                write the page next to the profile; open nothing\n"
    "      --stacks / --no-stacks      record the call stacks of your code (for flame graphs;\n"
    "                                  default off)\n"
    "      --timeline / --no-timeline  record each sample's time and thread (the per-thread\n"
    "                                  timelines of view --format trace and firefox; default\n"
    "                                  off)\n"
    "      --off / --on                start with profiling off (or on, the default); turn it\n"
    "                                  on and off with scry.start()/scry.stop() in the program\n"
    "                                  or scry control PID on|off from another shell\n"
    "      --heap-at-exit FILE         as the program ends (after its own atexit handlers,\n"
    "                                  before the interpreter finalizes) take a heap snapshot\n"
    "                                  with its live allocation samples into FILE, for scry\n"
    "                                  analyze --allocations (docs/allocations.md)\n"
    "      --profile-interval S        rewrite the profile every S seconds while the program\n"
    "                                  runs (each write atomic: a viewer may read it any time)\n"
    PUSH_OPTIONS_HELP
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
    bool virtual_time, profile_all, system_libs, reduced, no_view, stacks, off, timeline;
    double profile_interval; /* --profile-interval (0: none) */
    const char *heap_at_exit; /* --heap-at-exit FILE */
    bool memory, leak_detector;
    int gpu;               /* 1: --gpu, -1: --no-gpu (or another mode flag), 0: a device visible */
    unsigned gpu_interval; /* --gpu-interval, ms (0: the agent's default) */
    unsigned long long window; /* --allocation-sampling-window */
    const char *only, *exclude;
    const char *program_path;
    double threshold;
    struct push_cfg push; /* push.url NULL: no --push */
    bool web, html;          /* --web: the browser view at the end; --html: the page is written */
    bool quiet;              /* --quiet: warnings and errors only (and the view) */
    double malloc_threshold; /* --malloc-threshold, MB */
    struct cli_config config; /* --config FILE */
    char **argv;              /* with --config: the file's arguments, then the command line */
    int at;                   /* the argument being parsed (a usage error's place) */
};

/* Seconds between two rounds of periodic work (--push-interval, --profile-interval). */
static bool parse_interval(const char *arg, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !isfinite(v) || v < 0.1 || v > 86400)
        return false;
    *out = v;
    return true;
}

/* Scalene's names and --config (scalene-options.md), apart from the first table's codes. */
enum {
    O_CONFIG = 512, O_CPU, O_CLI, O_JSON, O_HTML, O_WEB, O_NO_BROWSER, O_MALLOC_THRESHOLD,
};

/* --config FILE (once, before the program): its options go in front of the command line's, so
 * that the command line wins. The program comes from the command line only. */
static int expand_config(int *argc, char ***argv, const struct option *longopts,
                         struct run_opts *o)
{
    static const char *const repeatable[] = {"tag", NULL}, *const skip[] = {"config", "help",
                                                                              NULL};
    const char *path = NULL;
    int c;
    opterr = 0;
    optind = 1;
    while (optind < *argc && strcmp((*argv)[optind], "---") != 0 &&
           (c = getopt_long(*argc, *argv, "+:o:m:c:h", longopts, NULL)) != -1 && c != 'm')
        if ((c == O_CONFIG || c == 'c') && path)
            return cli_usage("give --config once");
        else if (c == O_CONFIG || c == 'c') /* -c: Scalene's spelling */
            path = optarg;
    if (!path)
        return 0;
    int err = cli_config_load(path, longopts, repeatable, skip, &o->config);
    if (err)
        return err;
    size_t n = o->config.nargs;
    char **av = calloc((size_t)*argc + n + 1, sizeof(*av));
    if (!av)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    av[0] = (*argv)[0];
    memcpy(av + 1, o->config.args, n * sizeof(*av));
    memcpy(av + 1 + n, *argv + 1, (size_t)(*argc - 1) * sizeof(*av));
    o->argv = *argv = av;
    *argc += (int)n;
    return 0;
}

/* The html page next to the profile: its name with .html for .json (or .html added). */
static void page_path(const char *outfile, char *out, size_t n)
{
    size_t len = strlen(outfile);
    if (len > 5 && strcmp(outfile + len - 5, ".json") == 0)
        len -= 5;
    snprintf(out, n, "%.*s.html", (int)len, outfile);
}

static int parse(int argc, char **argv, struct run_opts *o, bool *help)
{
    enum {
        O_PYTHON = 256, O_CPU_ONLY, O_RATE, O_VIRTUAL, O_ALL, O_ONLY, O_EXCLUDE, O_SYSLIB,
        O_PPATH, O_THRESHOLD, O_REDUCED, O_NO_VIEW, O_STACKS, O_NO_STACKS, O_MEMORY, O_WINDOW,
        O_LEAKS, O_NO_LEAKS, O_PUSH, O_PUSH_INTERVAL, O_TAG, O_SERVICE, O_OFF, O_ON,
        O_PROFILE_INTERVAL, O_GPU, O_NO_GPU, O_GPU_INTERVAL,
        O_TIMELINE,
        O_NO_TIMELINE,
        O_PUSH_TENANT,
        O_HEAP_AT_EXIT,
    };
    static const struct option longopts[] = {
        {"outfile", required_argument, NULL, 'o'},
        {"python", required_argument, NULL, O_PYTHON},
        {"cpu-only", no_argument, NULL, O_CPU_ONLY},
        {"memory", no_argument, NULL, O_MEMORY},
        {"config", required_argument, NULL, O_CONFIG},
        {"cpu", no_argument, NULL, O_CPU},
        {"gpu", no_argument, NULL, O_GPU},
        {"no-gpu", no_argument, NULL, O_NO_GPU},
        {"gpu-interval", required_argument, NULL, O_GPU_INTERVAL},
        {"cli", no_argument, NULL, O_CLI},
        {"json", no_argument, NULL, O_JSON},
        {"html", no_argument, NULL, O_HTML},
        {"web", no_argument, NULL, O_WEB},
        {"viewer", no_argument, NULL, O_WEB},
        {"no-browser", no_argument, NULL, O_NO_BROWSER},
        {"malloc-threshold", required_argument, NULL, O_MALLOC_THRESHOLD},
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
        {"quiet", no_argument, NULL, 'q'},
        {"stacks", no_argument, NULL, O_STACKS},
        {"no-stacks", no_argument, NULL, O_NO_STACKS},
        {"timeline", no_argument, NULL, O_TIMELINE},
        {"no-timeline", no_argument, NULL, O_NO_TIMELINE},
        {"off", no_argument, NULL, O_OFF},
        {"on", no_argument, NULL, O_ON},
        {"profile-interval", required_argument, NULL, O_PROFILE_INTERVAL},
        {"heap-at-exit", required_argument, NULL, O_HEAP_AT_EXIT},
        {"push", required_argument, NULL, O_PUSH},
        {"push-interval", required_argument, NULL, O_PUSH_INTERVAL},
        {"tag", required_argument, NULL, O_TAG},
        {"service-name", required_argument, NULL, O_SERVICE},
        {"push-tenant", required_argument, NULL, O_PUSH_TENANT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof(*o));
    o->outfile = "scry-profile.json";
    /* The package's wrappers name their interpreter (python -m scry runs under it). */
    const char *py = getenv("SCRY_PYTHON");
    o->python = py && *py ? py : "python3";
    o->rate = 0.01;
    o->threshold = 1.0;
    o->memory = true;
    o->leak_detector = true;
    o->window = 1048576;
    o->push.interval_sec = 10;
    int cerr = expand_config(&argc, &argv, longopts, o);
    if (cerr)
        return cerr;
    bool cpu_flag = false, memory_flag = false, gpu_flag = false; /* Scalene's mode flags */
    o->push.tags = calloc((size_t)argc + 1, sizeof(*o->push.tags));
    if (!o->push.tags)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
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
        o->at = optind;
        c = getopt_long(argc, argv, "+:o:m:c:qh", longopts, NULL);
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
            o->gpu = -1;
            break;
        case O_GPU:
            o->gpu = 1;
            gpu_flag = true;
            break;
        case O_NO_GPU:
            o->gpu = -1;
            gpu_flag = false;
            break;
        case O_GPU_INTERVAL: {
            unsigned long long ms;
            errno = 0;
            ms = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-' || ms < 10 || ms > 60000)
                return cli_usage("--gpu-interval needs a number of milliseconds from 10 to 60000 "
                                 "(such as 50), not '%s'",
                                 optarg);
            o->gpu_interval = (unsigned)ms;
            break;
        }
        case O_MEMORY:
            o->memory = true;
            memory_flag = true;
            break;
        case 'c':
        case O_CONFIG:
            break; /* read before the others (expand_config) */
        case O_CPU:
            cpu_flag = true;
            break;
        case O_CLI:
            o->no_view = o->web = false;
            break;
        case O_JSON:
            o->no_view = true;
            o->web = false;
            break;
        case O_HTML:
            o->html = true;
            break;
        case O_WEB:
            o->web = true;
            break;
        case O_NO_BROWSER:
            o->web = false;
            o->html = true;
            break;
        case O_MALLOC_THRESHOLD:
            if (!cli_parse_amount(optarg, &o->malloc_threshold))
                return cli_usage("--malloc-threshold needs a number of MB from 0 (such as 10), "
                                 "not '%s'",
                                 optarg);
            break;
        case O_WINDOW:
            if (cli_parse_window(optarg, &o->window) != 0)
                return -SCRY_E_USAGE;
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
        case 'q':
            o->quiet = true;
            break;
        case O_STACKS:
            o->stacks = true;
            break;
        case O_NO_STACKS:
            o->stacks = false;
            break;
        case O_TIMELINE:
            o->timeline = true;
            break;
        case O_NO_TIMELINE:
            o->timeline = false;
            break;
        case O_OFF:
            o->off = true;
            break;
        case O_ON:
            o->off = false;
            break;
        case O_HEAP_AT_EXIT:
            o->heap_at_exit = optarg;
            break;
        case O_PROFILE_INTERVAL:
            if (!parse_interval(optarg, &o->profile_interval))
                return cli_usage("--profile-interval needs a number of seconds from 0.1 to 86400 "
                                 "(such as 1), not '%s'",
                                 optarg);
            break;
        case O_PUSH:
        case O_PUSH_INTERVAL:
        case O_TAG:
        case O_SERVICE:
        case O_PUSH_TENANT: {
            static const enum push_opt which[] = {PUSH_OPT_URL, PUSH_OPT_INTERVAL, PUSH_OPT_TAG,
                                                  PUSH_OPT_SERVICE, PUSH_OPT_TENANT};
            int k = c == O_PUSH            ? 0
                    : c == O_PUSH_INTERVAL ? 1
                    : c == O_TAG           ? 2
                    : c == O_SERVICE       ? 3
                                           : 4;
            if (push_set_option(which[k], optarg, &o->push) != 0)
                return -SCRY_E_USAGE;
            break;
        }
        case 'h':
            *help = true;
            return 0;
        default:
            return cli_option_error(c, argv);
        }
        if (c == 'm')
            break; /* what follows the module is its command line */
    }
    o->at = 0;
    /* Scalene's mode flags: when any of --cpu, --memory, --gpu is given, those not given are off
     * (--cpu without --memory is CPU only). */
    if ((cpu_flag || gpu_flag) && !memory_flag)
        o->memory = false;
    if ((cpu_flag || memory_flag) && !gpu_flag)
        o->gpu = -1;
    if (push_check_options(&o->push) != 0)
        return -SCRY_E_USAGE;
    if (o->heap_at_exit && !o->memory)
        return cli_usage("--heap-at-exit records the allocation samples of memory profiling: "
                         "leave memory on (no --cpu-only)");
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
        (err = set_env("SCRY_TIMELINE", o->timeline ? "1" : "0")) ||
        (err = set_env("SCRY_MEMORY", o->memory ? "1" : "0")) ||
        (err = set_env("SCRY_ALLOCATION_WINDOW", window)) ||
        (err = set_env("SCRY_LEAK_DETECTOR", o->leak_detector ? "1" : "0")) ||
        (err = set_env("SCRY_OFF", o->off ? "1" : "0")) ||
        (err = set_env("SCRY_HEAP_AT_EXIT", heap)) ||
        (err = set_env("SCRY_SNAPSHOT_INTERVAL", snapshot)) ||
        (err = set_env("SCRY_GPU", gpu_env(o))) ||
        (o->gpu_interval && (err = set_env("SCRY_GPU_INTERVAL_MS", gpu_ms)))) {
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

/* The parts in dir; with snapshots, also the snapshots (snap-PID.json) of the processes that
 * have no part yet: the statistics of every process so far (--push). That is done while the
 * program runs, and shares its stderr: a part that cannot be read is then skipped silently (it
 * is reported at the end). */
static void read_parts(struct profile *p, const char *dir, pid_t child, bool snapshots)
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
        bool snap = snapshots && len >= 10 && strncmp(e->d_name, "snap-", 5) == 0 &&
                    strcmp(e->d_name + len - 5, ".json") == 0;
        if (!part && !tmp && !snap)
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
    /* Sorted, snapshots come after every part (".part-" < "part-" < "snap-"): the pids of the
     * parts read are known by then. */
    long *have = calloc(n + 1, sizeof(*have));
    size_t nhave = 0;
    if (!snapshots) /* the merge at the end: while the program runs, its terminal is its own */
        prog_phase("merging the parts", PROG_COUNT, n, "parts", NULL);
    for (size_t i = 0; i < n; i++) {
        if (!snapshots)
            prog_update(i);
        long pid = strtol(names[i] + (names[i][0] == '.' ? 6 : 5), NULL, 10);
        bool skip = false;
        for (size_t j = 0; names[i][0] == 's' && j < nhave && !skip; j++)
            skip = have[j] == pid;
        if (skip || (names[i][0] == 's' && !have)) {
            free(names[i]);
            continue;
        }
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
            else if (prof_add_part_text(p, data, len, names[i], child) != 0) {
                if (!snapshots) {
                    prog_clear();
                    fprintf(stderr, "scry: warning: %s; skipped\n", san_str(err_last_message()));
                }
            } else if (have)
                have[nhave++] = pid;
            free(data);
        } else if (!snapshots) {
            prog_clear();
            fprintf(stderr, "scry: warning: %s; skipped\n", san_str(err_last_message()));
        }
        free(names[i]);
    }
    if (!snapshots)
        prog_update(n);
    free(have);
    free(names);
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
            if (o->web && (in_browser = cli_page_open(shown, &why))) {
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
    read_parts(&p, st->dir, st->child, true);
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
    read_parts(&p, rw->dir, rw->child, true);
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
        execve("/proc/self/exe", argv, env);
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
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
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
    if (parse(argc, argv, &o, &help) != 0) {
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

static int run(struct run_opts o)
{
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

    struct push_state ps = {.dir = part_dir};
    if (o.push.url) {
        char service[256];
        push_default_service(o.module ? o.module : o.prog, service, sizeof(service));
        if (push_start(&ps.ps, &o.push, o.push.service ? o.push.service : service, o.rate) != 0) {
            remove_part_dir(part_dir);
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
        remove_part_dir(part_dir);
        prof_free(&p);
        outfile_abort(&out);
        push_end(ps.ps, false);
        return cli_report_error(false);
    }
    ps.child = pid;
    struct rewrite_state rw = {.dir = part_dir, .path = o.outfile, .child = pid, .jo = &jo};
    struct periodic pe = {0};
    if (ps.ps) {
        pe.push = &ps;
        pe.push_every = o.push.interval_sec;
        pe.push_next = first_round(t0, pe.push_every);
    }
    if (rewrite) {
        pe.rw = &rw;
        pe.rw_every = o.profile_interval;
        pe.rw_next = first_round(t0, pe.rw_every);
    }
    if (o.heap_at_exit) {
        pe.heap_path = o.heap_at_exit;
        pe.part_dir = part_dir;
    }
    int st = pe.push || pe.rw || pe.heap_path ? wait_child_periodic(pid, &pe) : wait_child(pid);
    if (pe.heap_path && !pe.heap_done)
        fprintf(stderr, "scry: warning: no heap snapshot at exit: the program ended without "
                        "running its atexit handlers (os._exit, a signal, exec)\n");
    double ran = mono_now() - t0;

    wait_for_lingering(part_dir);
    if (ps.ps)
        push_window(&ps); /* the last interval, from the parts */
    /* The merge of many parts, the sources and the document take seconds: a progress line
     * (common/progress.h), not with --json, --no-view or --quiet, erased before the view. */
    prog_init(o.no_view || o.quiet);
    read_parts(&p, part_dir, pid, false);
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
    prog_phase("reading the sources", PROG_NONE, 0, NULL, NULL);
    cli_profile_read_sources(&p);
    prog_done();
    if (p.memory_unsupported)
        fprintf(stderr, "scry: warning: memory was not profiled: Python %s is a free-threaded "
                        "build whose allocator's (mimalloc's) blocks scry does not know how to "
                        "read (it knows 3.13's release builds); this profile has CPU time only, "
                        "as with --cpu-only\n",
                san_str(p.python_version ? p.python_version : "?"));

    prog_phase("writing the profile", PROG_NONE, 0, NULL, NULL);
    profile_json_write(&p, &jo, &json);
    prog_done();
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
        if (!o.quiet)
            fprintf(stderr,
                    "scry: wrote %s (%llu samples over %.3f s); view it with: scry view --cli "
                    "%s\n",
                    san_str(o.outfile), (unsigned long long)p.samples, p.elapsed_sec,
                    san_str(o.outfile));
        show_views(&o, &json);
        warn_oversubscribed(&p);
    }
    /* The profile is written: only now wait (a bounded time) for the pushes still queued. */
    push_end(ps.ps, true);
    push_delta_free(&ps.delta);
    sb_release(&json);
    prof_free(&p);
    if (WIFSIGNALED(st))
        return exit_like(st);
    return status;
}

/* ---- `scry collect`: the profile of a process that loaded the agent itself ----
 *
 * A plain `python app.py` that calls scry.start() loads the agent into its running interpreter
 * (python/scry/_standalone.py) and starts this command beside it: it waits for the process to
 * end, or to mark itself exiting with its part written, then merges the part files it wrote, as
 * `scry run` does after its program; the process waits at exit until the profile is written. */
const char cmd_collect_usage[] =
    "usage: scry collect --pid PID --part-dir DIR [-o FILE] [--program PATH]\n"
    "                    [--program-path DIR]\n"
    "       scry collect --part AFTER [--since BEFORE] [-o FILE] [--program PATH]\n"
    "                    [--program-path DIR]\n"
    "\n"
    "Used by the Python package. With --pid (scry.start() in a program not started by scry\n"
    "run): waits for process PID to end, then writes the profile of the part files its agent\n"
    "wrote in DIR (a directory made for it, removed afterwards) to FILE (default\n"
    "scry-profile.json). With --part (a notebook cell, a test): the profile of what one\n"
    "process did up to checkpoint AFTER, or between checkpoints BEFORE and AFTER\n"
    "(scry_agent_checkpoint, docs/agent-protocol.md); --program-path says which files are the\n"
    "program's (their sources are read into the profile).\n";

/* The profile of `scry collect` (either kind) to its outfile, with the one line that says so. */
static int collect_write(struct profile *p, struct outfile *out, const char *outfile,
                         const char *program, const char *program_path)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    struct profile_json_opts jo = {
        .version = SCRY_VERSION,
        .program = program,
        .entrypoint_dir = program_path,
        .filename = program_path,
        .cpu_percent_threshold = 1.0,
        .ncpus = ncpu > 0 ? (unsigned)ncpu : 1,
    };
    int err = cli_profile_write(p, &jo, out);
    if (!err)
        fprintf(stderr, "scry: wrote %s (%llu samples over %.3f s); view it with: scry view --cli "
                        "%s\n",
                san_str(outfile), (unsigned long long)p->samples, p->elapsed_sec,
                san_str(outfile));
    return err ? -1 : 0;
}

/* A checkpoint file, parsed. NULL with the error recorded. */
static json_t *read_checkpoint(const char *path)
{
    char *data;
    size_t len;
    if (infile_read_all(path, "checkpoint", INFILE_MAX_READ, &data, &len) != 0)
        return NULL;
    json_error_t je;
    json_t *doc = json_loadb(data, len, 0, &je);
    free(data);
    if (!doc)
        err_fail(SCRY_E_BAD_PROFILE, "checkpoint %s is not JSON: %s (line %d)", san_str(path),
                 je.text, je.line);
    return doc;
}

/* `scry collect --part AFTER [--since BEFORE]`: a window of one process's run. */
static int collect_window(const char *part, const char *since, const char *outfile,
                          const char *program, const char *program_path)
{
    struct outfile out;
    if (outfile_open(&out, outfile, OUTFILE_PRIVATE) != 0)
        return -1;
    json_t *after = read_checkpoint(part), *before = since ? read_checkpoint(since) : NULL;
    int err = !after || (since && !before) ? -1 : 0;
    if (!err && before)
        err = part_subtract(after, before);
    struct profile p;
    prof_init(&p);
    if (!err)
        err = prof_add_part(&p, after, part, json_integer_value(json_object_get(after, "pid")));
    json_decref(after);
    json_decref(before);
    if (!err) {
        prof_finish(&p);
        err = collect_write(&p, &out, outfile, program, program_path);
    } else {
        outfile_abort(&out);
    }
    prof_free(&p);
    return err ? -1 : 0;
}

/* Until process pid has ended, or is ending with its part written: its agent then marks
 * exiting-<pid> in dir and waits for the profile (ag_collect_at_exit_wait), so that the file is
 * complete when its exit status is seen. Woken by the pidfd and by inotify on dir (a program
 * may run for days: no polling); without them, polled every 20 ms. */
static void wait_for_exit(int pid, const char *dir)
{
    char mark[PATH_MAX];
    struct stat st;
    snprintf(mark, sizeof(mark), "%s/exiting-%d", dir, pid);
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (ifd >= 0 && inotify_add_watch(ifd, dir, IN_CREATE) < 0) {
        close(ifd);
        ifd = -1;
    }
    while (lstat(mark, &st) != 0) {
        if (pfd < 0 && kill((pid_t)pid, 0) != 0 && errno != EPERM)
            break;
        struct pollfd pl[2] = {{pfd, POLLIN, 0}, {ifd, POLLIN, 0}};
        int n = poll(pl, 2, pfd >= 0 && ifd >= 0 ? -1 : 20);
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0 && (pl[0].revents & POLLIN))
            break; /* ended */
        if (n > 0 && (pl[1].revents & POLLIN)) {
            char events[4096];
            while (read(ifd, events, sizeof(events)) > 0)
                ;
        }
    }
    if (pfd >= 0)
        close(pfd);
    if (ifd >= 0)
        close(ifd);
}

int cmd_collect(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"pid", required_argument, NULL, 'p'},         {"part-dir", required_argument, NULL, 'd'},
        {"outfile", required_argument, NULL, 'o'},     {"program", required_argument, NULL, 'P'},
        {"program-path", required_argument, NULL, 'D'}, {"help", no_argument, NULL, 'h'},
        {"part", required_argument, NULL, 'A'},        {"since", required_argument, NULL, 'B'},
        {NULL, 0, NULL, 0},
    };
    int pid = 0, c;
    const char *dir = NULL, *outfile = "scry-profile.json", *program = "", *program_path = "";
    const char *part = NULL, *since = NULL;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (!cli_parse_pid(optarg, &pid))
                return cli_usage("--pid needs a process id, not '%s'", optarg);
            break;
        case 'd':
            dir = optarg;
            break;
        case 'o':
            outfile = optarg;
            break;
        case 'P':
            program = optarg;
            break;
        case 'D':
            program_path = optarg;
            break;
        case 'A':
            part = optarg;
            break;
        case 'B':
            since = optarg;
            break;
        case 'h':
            return cli_help();
        default:
            return cli_option_error(c, argv);
        }
    }
    if (part || since) {
        if (!part || pid || dir || optind != argc)
            return cli_usage("give --part AFTER [--since BEFORE] (and no --pid or --part-dir)");
        return collect_window(part, since, outfile, program, program_path);
    }
    struct stat st;
    if (!pid || !dir || optind != argc)
        return cli_usage("give --pid PID and --part-dir DIR (and nothing else)");
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return err_fail(SCRY_E_NOT_FOUND, "no part directory %s", san_str(dir));
    /* It is emptied at the end: only a part directory of ours. */
    if (!cli_is_part_dir(dir, getuid()))
        return err_fail(SCRY_E_USAGE, "%s is not a part directory (scry-parts-XXXXXX, mode 0700, "
                                      "yours)",
                        san_str(dir));
    struct outfile out;
    if (outfile_open(&out, outfile, OUTFILE_PRIVATE) != 0)
        return -1;
    wait_for_exit(pid, dir);
    wait_for_lingering(dir);
    struct profile p;
    prof_init(&p);
    read_parts(&p, dir, (pid_t)pid, false);
    prof_finish(&p);
    if (!p.note)
        p.note = "CPU time only: the program loaded scry itself (scry.start() in a plain python "
                 "run), too late to hook its memory; for memory, run it with scry run --off and "
                 "keep the scry.start() call";
    int err = collect_write(&p, &out, outfile, program, program_path);
    prof_free(&p);
    remove_part_dir(dir); /* after the write: the process waits for its exiting-<pid> to go */
    return err;
}
