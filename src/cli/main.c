/* scry's entry point and its one command table: `scry --help`, `scry help CMD`, `scry CMD
 * --help` and dispatch are all made from it. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "options/options.h"
#include "common/strbuf.h"

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const char help_usage[] =
    "usage: scry help [COMMAND]\n"
    "\n"
    "Lists scry's commands, or prints one command's options (the same as scry COMMAND --help).\n";

static const char version_usage[] =
    "usage: scry version\n"
    "\n"
    "Prints scry's version (also scry --version).\n";

const struct cli_command cli_commands[] = {
    {"run", cmd_run, "profile a Python program (CPU: Python, native and system time per line)",
     cmd_run_usage, 0, OC_RUN, 34, cmd_run_usage_tail},
    {"record", cmd_record, "profile a running Python process from outside (scry run's profile)",
     cmd_record_usage, 0, OC_RECORD, 34, NULL},
    {"top", cmd_top, "a live view of a running Python process: its functions' time, like top",
     cmd_top_usage, 0, OC_TOP, 34, NULL},
    {"view", cmd_view, "show a profile: in the browser, as HTML (--html), in the terminal (--cli)",
     cmd_view_usage, 0, OC_VIEW, 32, NULL},
    {"stacks", cmd_stacks, "print every thread's Python stack of a process or a core file",
     cmd_stacks_usage, CLI_JSON | CLI_JSON_SHORT, OC_STACKS, 21, NULL},
    {"dump", cmd_dump, "write a heap snapshot of a process or a core file", cmd_dump_usage,
     CLI_JSON | CLI_JSON_SHORT, OC_DUMP, 26, NULL},
    {"analyze", cmd_analyze, "what a heap snapshot retains: top retainers, types, RSS share",
     cmd_analyze_usage, CLI_JSON | CLI_JSON_SHORT, OC_ANALYZE, 22, NULL},
    {"query", cmd_query,
     "a heap snapshot's instances of a type, an object's retaining path, where a name is defined",
     cmd_query_usage, CLI_JSON | CLI_JSON_SHORT, OC_QUERY, 23, NULL},
    {"check", cmd_check, "validate a heap snapshot and say what it holds", cmd_check_usage,
     CLI_JSON | CLI_JSON_SHORT, OC_CHECK, 16, NULL},
    {"diff", cmd_diff, "what grew between two heap snapshots: by type and by retaining site",
     cmd_diff_usage, CLI_JSON | CLI_JSON_SHORT, OC_DIFF, 17, NULL},
    {"compare", cmd_compare, "what got slower or bigger between two profiles, with sampling error",
     cmd_compare_usage, CLI_JSON | CLI_JSON_SHORT, OC_COMPARE, 24, NULL},
    {"flamegraph", cmd_flamegraph, "draw a profile's CPU flame graph (SVG) or write folded stacks",
     cmd_flamegraph_usage, CLI_OUTFILE, OC_FLAMEGRAPH, 22, NULL},
    {"optimize", cmd_optimize, "ask a language model for a faster version of a profiled region",
     cmd_optimize_usage, CLI_JSON | CLI_JSON_SHORT, OC_OPTIMIZE, 26, NULL},
    {"control", cmd_control, "turn profiling on or off in a program scry run is profiling",
     cmd_control_usage, 0, 0, 0, NULL},
    {"collect", cmd_collect, "write the profile of a program that called scry.start() itself",
     cmd_collect_usage, 0, OC_COLLECT, 34, NULL},
    {"kernel", cmd_kernel, "install the Jupyter kernel \"Python 3 (scry)\" (memory in %%scry)",
     cmd_kernel_usage, 0, OC_KERNEL, 32, NULL},
    {"mcp", cmd_mcp, "an MCP server on stdio: scry's tools for coding agents", cmd_mcp_usage, 0,
     OC_MCP, 25, NULL},
    {"help", cmd_help, "show this help, or a command's: scry help stacks", help_usage, 0, 0, 0, NULL},
    {"version", cmd_version, "print scry's version", version_usage, 0, 0, 0, NULL},
};
const size_t cli_ncommands = sizeof(cli_commands) / sizeof(cli_commands[0]);

static void commands_help(struct strbuf *sb)
{
    sb_adds(sb, "usage: scry <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < cli_ncommands; i++)
        sb_addf(sb, "  %-10s %s\n", cli_commands[i].name, cli_commands[i].summary);
    sb_adds(sb, "\nRun 'scry <command> --help' for a command's options.\n");
}

static int cmd_help(int argc, char **argv)
{
    if (argc > 2)
        return cli_usage("give at most one command: scry help [COMMAND]");
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return cli_help();
    if (argc == 2) {
        const struct cli_command *c = cli_find_command(argv[1]);
        if (!c)
            return cli_usage("unknown command '%s'", argv[1]);
        struct strbuf sb = STRBUF_INIT;
        cli_command_help(c, &sb);
        cli_print(&sb);
        sb_release(&sb);
        return CLI_EXIT_OK;
    }
    struct strbuf sb = STRBUF_INIT;
    commands_help(&sb);
    cli_print(&sb);
    sb_release(&sb);
    return CLI_EXIT_OK;
}

static int cmd_version(int argc, char **argv)
{
    if (argc > 1)
        return strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0
                   ? cli_help()
                   : cli_usage("unexpected argument '%s'", argv[1]);
    printf("scry %s\n", SCRY_VERSION);
    return CLI_EXIT_OK;
}

static bool is_script(const char *arg)
{
    size_t n = strlen(arg);
    return n > 3 && strcmp(arg + n - 3, ".py") == 0;
}

/* `scry prog.py`, `scry --cpu prog.py`, `python -m scry --cli -m pkg`: Scalene's and Python's
 * habit of options before the program. The command they meant is `scry run` with the same
 * arguments up to the program (what follows is the program's own, not shown). argv[0] is
 * "python -m scry" when the package's `python -m scry` execs us: the suggestion says that. */
static bool run_suggestion(int argc, char **argv, struct strbuf *out)
{
    int end = 0;
    if (argv[1][0] != '-' && !is_script(argv[1]))
        return false; /* a mistyped command, not a program */
    for (int i = 1; i < argc && !end && strcmp(argv[i], "---") != 0; i++)
        if (is_script(argv[i]))
            end = i;
        else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc)
            end = i + 1;
    if (!end)
        return false;
    sb_adds(out, argv[0] && strcmp(argv[0], "python -m scry") == 0 ? argv[0] : "scry");
    sb_adds(out, " run");
    for (int i = 1; i <= end; i++) {
        /* Quoted as a shell would need it, so that the line can be pasted. */
        const char *a = argv[i];
        if (*a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                            "-_=./:,+@%") == strlen(a)) {
            sb_addf(out, " %s", a);
            continue;
        }
        sb_adds(out, " '");
        for (; *a; a++)
            if (*a == '\'')
                sb_adds(out, "'\\''");
            else
                sb_addch(out, *a);
        sb_addch(out, '\'');
    }
    if (end + 1 < argc)
        sb_adds(out, " ...");
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        struct strbuf sb = STRBUF_INIT;
        commands_help(&sb);
        fputs(sb_str(&sb), stderr);
        sb_release(&sb);
        return CLI_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        name = "help";
    else if (strcmp(name, "--version") == 0)
        name = "version";
    const struct cli_command *c = cli_find_command(name);
    if (!c) {
        struct strbuf names = STRBUF_INIT, run = STRBUF_INIT;
        for (size_t i = 0; i < cli_ncommands; i++)
            sb_addf(&names, "%s%s", i ? ", " : "", cli_commands[i].name);
        bool script = run_suggestion(argc, argv, &run);
        if (script)
            cli_usage("unknown command '%s'; did you mean: %s", name, sb_str(&run));
        else
            cli_usage("unknown command '%s' (commands: %s)", name, sb_str(&names));
        sb_release(&names);
        sb_release(&run);
        /* A script's arguments are its own: --json among them is not scry's. */
        return cli_finish_stdout(cli_report_error(!script && cli_wants_json(argc, argv)), false);
    }
    return cli_dispatch(c, argc - 1, argv + 1);
}
