/* scry's entry point: the command table and top-level help. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"run", cmd_run, "profile a Python program (CPU: Python, native and system time per line)"},
    {"view", cmd_view, "show a profile: in the browser, as HTML (--html), in the terminal (--cli)"},
    {"stacks", cmd_stacks, "print every thread's Python stack of a process or a core file"},
    {"dump", cmd_dump, "write a heap snapshot of a process or a core file"},
    {"analyze", cmd_analyze, "what a heap snapshot retains: top retainers, types, RSS share"},
    {"query", cmd_query, "a heap snapshot's instances of a type, an object's retaining path, "
                         "where a name is defined"},
    {"check", cmd_check, "validate a heap snapshot and say what it holds"},
    {"diff", cmd_diff, "what grew between two heap snapshots: by type and by retaining site"},
    {"compare", cmd_compare, "what got slower or bigger between two profiles, with sampling error"},
    {"flamegraph", cmd_flamegraph, "draw a profile's CPU flame graph (SVG) or write folded stacks"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: scry <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  %-10s %s\n", "help", "show this help, or a command's: scry help stacks");
    fprintf(f, "  %-10s %s\n", "version", "print scry's version");
    fprintf(f, "\nRun 'scry <command> --help' for a command's options.\n");
}

static const struct command *find(const char *name)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        const struct command *c = argc > 2 ? find(argv[2]) : NULL;
        if (c) {
            char *args[] = {argv[2], "--help", NULL};
            return c->run(2, args);
        }
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(name, "version") == 0 || strcmp(name, "--version") == 0) {
        printf("scry %s\n", SCRY_VERSION);
        return CLI_EXIT_OK;
    }
    const struct command *c = find(name);
    if (!c) {
        size_t n = strlen(name);
        if (n > 3 && strcmp(name + n - 3, ".py") == 0)
            return cli_usage_error(false, "unknown command '%s'; did you mean: scry run %s", name,
                                   name);
        return cli_usage_error(cli_wants_json(argc, argv),
                               "unknown command '%s' (commands: run, view, stacks, dump, check, help, version)",
                               name);
    }
    return c->run(argc - 1, argv + 1);
}
