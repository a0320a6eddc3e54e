/* `scry run`'s options (run_options.c): what its command line and --config FILE ask for. */
#ifndef SCRY_RUN_RUN_OPTIONS_H
#define SCRY_RUN_RUN_OPTIONS_H

#include <stdbool.h>

#include "cli/cli.h"
#include "push/push.h"
#include "run/run_config.h"

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

/* Parses scry run's command line into o (which owns o->push.tags, o->argv and o->config
 * afterwards, even on an error): 0, with *help set for --help, or a usage error. */
int run_parse_options(int argc, char **argv, struct run_opts *o, bool *help);

#endif
