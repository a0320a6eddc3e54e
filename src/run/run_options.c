/* `scry run`'s options: its usage text, its command line and --config FILE (Scalene's names
 * too, scalene-options.md) parsed into struct run_opts (run_options.h). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_options.h"
#include "common/error.h"

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

/* The options' codes: scry's own, then Scalene's names and --config (scalene-options.md). */
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
enum {
    O_CONFIG = 512, O_CPU, O_CLI, O_JSON, O_HTML, O_WEB, O_NO_BROWSER, O_MALLOC_THRESHOLD,
};

static const struct option run_longopts[] = {
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

/* Scalene's mode flags given (--cpu, --memory, --gpu): those not given are off. */
struct mode_flags {
    bool cpu, memory, gpu;
};

static void set_defaults(struct run_opts *o)
{
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
}

/* An option that turns something on or off (no value): false when c is not one. */
static bool switch_option(int c, struct run_opts *o, struct mode_flags *m)
{
    switch (c) {
    case O_CPU_ONLY:
        o->memory = false;
        o->gpu = -1;
        break;
    case O_GPU:
        o->gpu = 1;
        m->gpu = true;
        break;
    case O_NO_GPU:
        o->gpu = -1;
        m->gpu = false;
        break;
    case O_MEMORY:
        o->memory = true;
        m->memory = true;
        break;
    case 'c':
    case O_CONFIG:
        break; /* read before the others (expand_config) */
    case O_CPU:
        m->cpu = true;
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
    case O_LEAKS:
        o->leak_detector = true;
        break;
    case O_NO_LEAKS:
        o->leak_detector = false;
        break;
    case O_VIRTUAL:
        o->virtual_time = true;
        break;
    case O_ALL:
        o->profile_all = true;
        break;
    case O_SYSLIB:
        o->system_libs = true;
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
    default:
        return false;
    }
    return true;
}

/* --push, --push-interval, --tag, --service-name, --push-tenant (push.c checks them). */
static int push_option(int c, const char *arg, struct run_opts *o)
{
    static const enum push_opt which[] = {PUSH_OPT_URL, PUSH_OPT_INTERVAL, PUSH_OPT_TAG,
                                          PUSH_OPT_SERVICE, PUSH_OPT_TENANT};
    int k = c == O_PUSH            ? 0
            : c == O_PUSH_INTERVAL ? 1
            : c == O_TAG           ? 2
            : c == O_SERVICE       ? 3
                                   : 4;
    return push_set_option(which[k], arg, &o->push) != 0 ? -SCRY_E_USAGE : 0;
}

/* A number of seconds, milliseconds, MB or percent, checked: 0 or a usage error. */
static int number_option(int c, const char *arg, struct run_opts *o)
{
    char *end;
    switch (c) {
    case O_GPU_INTERVAL: {
        unsigned long long ms;
        errno = 0;
        ms = strtoull(arg, &end, 10);
        if (errno || end == arg || *end || arg[0] == '-' || ms < 10 || ms > 60000)
            return cli_usage("--gpu-interval needs a number of milliseconds from 10 to 60000 "
                             "(such as 50), not '%s'",
                             arg);
        o->gpu_interval = (unsigned)ms;
        return 0;
    }
    case O_MALLOC_THRESHOLD:
        if (!cli_parse_amount(arg, &o->malloc_threshold))
            return cli_usage("--malloc-threshold needs a number of MB from 0 (such as 10), "
                             "not '%s'",
                             arg);
        return 0;
    case O_WINDOW:
        return cli_parse_window(arg, &o->window) != 0 ? -SCRY_E_USAGE : 0;
    case O_RATE:
        errno = 0;
        o->rate = strtod(arg, &end);
        if (errno || end == arg || *end || !isfinite(o->rate) || o->rate <= 0 || o->rate > 3600)
            return cli_usage("--cpu-sampling-rate needs a number of seconds above 0 (such as "
                             "0.01), not '%s'",
                             arg);
        return 0;
    case O_THRESHOLD:
        if (!cli_parse_percent(arg, &o->threshold))
            return cli_usage("--cpu-percent-threshold needs a percentage from 0 to 100, not "
                             "'%s'",
                             arg);
        return 0;
    default: /* O_PROFILE_INTERVAL */
        if (!parse_interval(arg, &o->profile_interval))
            return cli_usage("--profile-interval needs a number of seconds from 0.1 to 86400 "
                             "(such as 1), not '%s'",
                             arg);
        return 0;
    }
}

/* An option with a value: 0, a usage error, or 1 when c is not one. */
static int value_option(int c, const char *arg, struct run_opts *o)
{
    switch (c) {
    case 'o':
        if (!*arg)
            return cli_usage("--outfile needs a file name");
        o->outfile = arg;
        return 0;
    case 'm':
        o->module = arg;
        return 0;
    case O_PYTHON:
        if (!*arg)
            return cli_usage("--python needs the path of a Python");
        o->python = arg;
        return 0;
    case O_ONLY:
        o->only = arg;
        return 0;
    case O_EXCLUDE:
        o->exclude = arg;
        return 0;
    case O_PPATH:
        o->program_path = arg;
        return 0;
    case O_HEAP_AT_EXIT:
        o->heap_at_exit = arg;
        return 0;
    case O_GPU_INTERVAL:
    case O_MALLOC_THRESHOLD:
    case O_WINDOW:
    case O_RATE:
    case O_THRESHOLD:
    case O_PROFILE_INTERVAL:
        return number_option(c, arg, o);
    case O_PUSH:
    case O_PUSH_INTERVAL:
    case O_TAG:
    case O_SERVICE:
    case O_PUSH_TENANT:
        return push_option(c, arg, o);
    default:
        return 1;
    }
}

/* After the options: the mode flags' meaning, the checks of options together, the program and
 * its arguments. */
static int finish_options(int argc, char **argv, struct run_opts *o, const struct mode_flags *m,
                          bool sep)
{
    o->at = 0;
    /* Scalene's mode flags: when any of --cpu, --memory, --gpu is given, those not given are off
     * (--cpu without --memory is CPU only). */
    if ((m->cpu || m->gpu) && !m->memory)
        o->memory = false;
    if ((m->cpu || m->memory) && !m->gpu)
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

int run_parse_options(int argc, char **argv, struct run_opts *o, bool *help)
{
    set_defaults(o);
    int cerr = expand_config(&argc, &argv, run_longopts, o);
    if (cerr)
        return cerr;
    struct mode_flags m = {false, false, false};
    o->push.tags = calloc((size_t)argc + 1, sizeof(*o->push.tags));
    if (!o->push.tags)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    *help = false;
    opterr = 0;
    optind = 1;
    bool sep = false; /* a `---` was removed */
    for (;;) {
        /* `---` (Scalene's separator) is not an option: stop there. */
        if (optind < argc && strcmp(argv[optind], "---") == 0) {
            optind++;
            sep = true;
            break;
        }
        o->at = optind;
        int c = getopt_long(argc, argv, "+:o:m:c:qh", run_longopts, NULL);
        if (c == -1)
            break;
        if (c == 'h') {
            *help = true;
            return 0;
        }
        if (!switch_option(c, o, &m)) {
            int err = value_option(c, optarg, o);
            if (err == 1)
                return cli_option_error(c, argv);
            if (err)
                return err;
        }
        if (c == 'm')
            break; /* what follows the module is its command line */
    }
    return finish_options(argc, argv, o, &m, sep);
}
