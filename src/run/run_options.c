/* `scry run`'s options: its usage text, its command line and --config FILE (Scalene's names
 * too, scalene-options.md) parsed into struct run_opts (run_options.h). */
#include <stdlib.h>
#include <string.h>

#include "run/run_options.h"
#include "options/options.h"
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
    "\n";

const char cmd_run_usage_tail[] =
    "\n"
    "The view goes to standard output when it is a terminal, else to standard error; see it\n"
    "again with: scry view --cli scry-profile.json\n";

/* Whether the next argument is `---` (Scalene's separator: not an option, the options end). */
static bool at_separator(const struct opt_parser *p)
{
    int i = opt_operand(p);
    return i < p->argc && strcmp(p->argv[i], "---") == 0;
}

/* --config FILE (once, before the program): its options go in front of the command line's, so
 * that the command line wins. The program comes from the command line only; the file's keys are
 * the option table's long names of scry run (options.h). */
static int expand_config(int *argc, char ***argv, struct run_opts *o)
{
    const char *path = NULL;
    struct opt_parser p;
    opt_begin(&p, OC_RUN, *argc, *argv, OP_STOP_AT_OPERAND);
    int c;
    /* A bad value here is reported by the parse after this one, with the file's options. */
    while (!at_separator(&p) && (c = opt_next(&p)) != OPT_END && c != OPT_MODULE)
        if (c == OPT_CONFIG && path)
            return cli_usage("give --config once");
        else if (c == OPT_CONFIG) /* -c: Scalene's spelling */
            path = p.arg;
    if (!path)
        return 0;
    struct opt_config_keys keys;
    opt_config_keys(OC_RUN, &keys);
    int err = cli_config_load(path, keys.longopts, keys.repeatable, keys.skip, &o->config);
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

/* One option: 0 or a usage error. Values have been checked against the table (options.h). */
static int take_option(const struct opt_parser *p, int c, struct run_opts *o, struct mode_flags *m)
{
    switch (c) {
    case OPT_CPU_ONLY:
        o->memory = false;
        o->gpu = -1;
        break;
    case OPT_GPU:
        o->gpu = 1;
        m->gpu = true;
        break;
    case OPT_NO_GPU:
        o->gpu = -1;
        m->gpu = false;
        break;
    case OPT_MEMORY:
        o->memory = true;
        m->memory = true;
        break;
    case OPT_CONFIG:
        break; /* read before the others (expand_config) */
    case OPT_CPU:
        m->cpu = true;
        break;
    case OPT_CLI:
        o->no_view = o->web = false;
        break;
    case OPT_JSON_PROFILE_ONLY:
        o->no_view = true;
        o->web = false;
        break;
    case OPT_HTML:
        o->html = true;
        break;
    case OPT_WEB:
    case OPT_VIEWER:
        o->web = true;
        break;
    case OPT_NO_BROWSER:
        o->web = false;
        o->html = true;
        break;
    case OPT_MEMORY_LEAK_DETECTOR:
        o->leak_detector = true;
        break;
    case OPT_NO_MEMORY_LEAK_DETECTOR:
        o->leak_detector = false;
        break;
    case OPT_USE_VIRTUAL_TIME:
        o->virtual_time = true;
        break;
    case OPT_PROFILE_ALL:
        o->profile_all = true;
        break;
    case OPT_PROFILE_SYSTEM_LIBRARIES:
        o->system_libs = true;
        break;
    case OPT_REDUCED_PROFILE:
        o->reduced = true;
        break;
    case OPT_NO_VIEW:
        o->no_view = true;
        break;
    case OPT_QUIET:
        o->quiet = true;
        break;
    case OPT_STACKS:
        o->stacks = true;
        break;
    case OPT_NO_STACKS:
        o->stacks = false;
        break;
    case OPT_TIMELINE:
        o->timeline = true;
        break;
    case OPT_NO_TIMELINE:
        o->timeline = false;
        break;
    case OPT_OFF:
        o->off = true;
        break;
    case OPT_ON:
        o->off = false;
        break;
    case OPT_OUTFILE:
        o->outfile = p->arg;
        break;
    case OPT_MODULE:
        o->module = p->arg;
        break;
    case OPT_PYTHON:
        o->python = p->arg;
        break;
    case OPT_PROFILE_ONLY:
        o->only = p->arg;
        break;
    case OPT_PROFILE_EXCLUDE:
        o->exclude = p->arg;
        break;
    case OPT_PROGRAM_PATH:
        o->program_path = p->arg;
        break;
    case OPT_HEAP_AT_EXIT:
        o->heap_at_exit = p->arg;
        break;
    case OPT_GPU_INTERVAL:
        o->gpu_interval = (unsigned)p->ival;
        break;
    case OPT_MALLOC_THRESHOLD:
        o->malloc_threshold = p->num;
        break;
    case OPT_ALLOCATION_SAMPLING_WINDOW:
        o->window = (unsigned long long)p->ival;
        break;
    case OPT_CPU_SAMPLING_RATE:
        o->rate = p->num;
        break;
    case OPT_CPU_PERCENT_THRESHOLD:
        o->threshold = p->num;
        break;
    case OPT_PROFILE_INTERVAL:
        o->profile_interval = p->num;
        break;
    default: /* --push and the options that go with it (push.c checks their values) */
        return push_take_option(c, p->arg, p->num, &o->push);
    }
    return 0;
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
    int cerr = expand_config(&argc, &argv, o);
    if (cerr)
        return cerr;
    struct mode_flags m = {false, false, false};
    o->push.tags = calloc((size_t)argc + 1, sizeof(*o->push.tags));
    if (!o->push.tags)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    *help = false;
    struct opt_parser p;
    opt_begin(&p, OC_RUN, argc, argv, OP_STOP_AT_OPERAND);
    bool sep = false; /* a `---` was removed */
    for (;;) {
        /* `---` (Scalene's separator) is not an option: stop there. */
        if (at_separator(&p)) {
            optind++;
            sep = true;
            break;
        }
        o->at = opt_operand(&p);
        int c = opt_next(&p);
        if (c == OPT_END)
            break;
        if (c < 0)
            return c;
        if (c == OPT_HELP) {
            *help = true;
            return 0;
        }
        int err = take_option(&p, c, o, &m);
        if (err)
            return err < 0 ? err : cli_option_error('?', argv);
        if (c == OPT_MODULE)
            break; /* what follows the module is its command line */
    }
    return finish_options(argc, argv, o, &m, sep);
}
