/* What every subcommand shares: the command table, usage errors and other errors in text or
 * JSON with the stable codes, help, standard output (checked once, at the end), small parsers. */
#ifndef SCRY_CLI_CLI_H
#define SCRY_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "common/strbuf.h"

#define SCRY_VERSION "0.1.0"

/* Exit statuses: 0 success, 1 any error with a code, 2 usage errors. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_ERROR = 1, CLI_EXIT_USAGE = 2 };

/* ---- the command table (main.c) ------------------------------------------------------------- */

enum cli_command_flags {
    CLI_JSON = 1u << 0,       /* takes --json: with it, errors are JSON documents on stdout */
    CLI_OUTFILE = 1u << 1,    /* what it prints can go to -o FILE (the stdout error's hint) */
    CLI_JSON_SHORT = 1u << 2  /* -j is --json */
};

/* A handler returns an exit status (its errors already reported), or a negative error code it
 * recorded with err_fail/cli_usage and left to the dispatcher to report. */
struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the command's name */
    const char *summary;               /* the one line of `scry --help` */
    const char *usage;                 /* `scry help NAME`, `scry NAME --help`: the synopsis and
                                        * description, before the options' lines */
    unsigned flags;
    unsigned opts;          /* its enum opt_cmd bit: its options' help comes from the option
                             * table (options.h); 0: usage holds them */
    int opt_column;         /* the column of the options' help (0: 34) */
    const char *usage_tail; /* after the options' lines; NULL: none */
};
extern const struct cli_command cli_commands[];
extern const size_t cli_ncommands;
/* NULL if no command has that name. */
const struct cli_command *cli_find_command(const char *name);
/* Runs c with argc/argv (argv[0] its name): the current command for cli_usage and cli_help
 * while it runs; reports a negative return, then checks standard output (cli_finish_stdout).
 * Returns the exit status. */
int cli_dispatch(const struct cli_command *c, int argc, char **argv);

int cmd_run(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_stacks(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_control(int argc, char **argv);
int cmd_collect(int argc, char **argv);
int cmd_top(int argc, char **argv);
extern const char cmd_top_usage[];
int cmd_record(int argc, char **argv);
int cmd_kernel(int argc, char **argv);
extern const char cmd_record_usage[];
int cmd_mcp(int argc, char **argv);
extern const char cmd_mcp_usage[];
int cmd_optimize(int argc, char **argv);
extern const char cmd_optimize_usage[];
/* Each command's help text, next to its options. */
extern const char cmd_run_usage[], cmd_view_usage[], cmd_stacks_usage[], cmd_dump_usage[],
    cmd_analyze_usage[], cmd_query_usage[], cmd_check_usage[], cmd_diff_usage[],
    cmd_compare_usage[], cmd_flamegraph_usage[], cmd_control_usage[],
    cmd_collect_usage[], cmd_kernel_usage[];
/* what follows a command's options in its help */
extern const char cmd_run_usage_tail[];

/* ---- errors and help (cli_common.c) ---------------------------------------------------------- */

/* Records a usage error (code usage, exit status 2): the message, and a hint naming the
 * current command's --help. Returns -SCRY_E_USAGE: a handler returns it and the dispatcher
 * reports it (as JSON when the command takes --json and argv has it). The one way a usage
 * error is made. */
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* getopt's complaint (c is ':' for a missing value, anything else an unknown option) through
 * cli_usage; returns -SCRY_E_USAGE. */
int cli_option_error(int c, char **argv);
/* Prints the last recorded error (err_last_*) as text on stderr, or as a JSON error document on
 * stdout when json is set, and returns the exit status for it. */
int cli_report_error(bool json);
/* Whether the current command's errors are JSON: it takes --json and argv holds it (or -j, where
 * that is its short form), before any `--`. */
bool cli_json_errors(void);
/* Prints the current command's help on stdout; returns CLI_EXIT_OK. */
int cli_help(void);
/* Command c's whole help: its usage, its options' lines, its tail. */
void cli_command_help(const struct cli_command *c, struct strbuf *out);
/* True if argv contains --json before any `--` (so that errors found while parsing are JSON). */
bool cli_wants_json(int argc, char **argv);

/* ---- standard output (cli_common.c) ---------------------------------------------------------- */

/* Appends buf to standard output. A failure is not reported here: cli_finish_stdout, run once
 * by the dispatcher after the command, flushes and reports it (io_error, exit status 1). */
void cli_print(const struct strbuf *buf);
/* The end of a command whose report a reports.h function made: prints out when err is 0, else
 * reports the recorded error (as JSON with json); releases out. Returns the exit status. */
int cli_finish_report(int err, struct strbuf *out, bool json);
/* Flushes standard output; if any write to it failed (a full disk, a closed pipe), reports an
 * io_error on stderr and returns CLI_EXIT_ERROR when status was 0, status otherwise (so `scry
 * run` keeps a failing program's status, as it does when the profile cannot be written). The
 * one place stdout's errors are checked. */
int cli_finish_stdout(int status, bool outfile_hint);
/* Standard output when path is NULL or "-", else the file (common/outfile.h: a temporary name
 * renamed over path, mode 0600); returns 0 or records an io_error. */
int cli_write_output(const char *path, const struct strbuf *sb);

/* ---- inputs and parsers (cli_common.c) ------------------------------------------------------ */

/* Whether stdout should get colours (a terminal, NO_COLOR unset). */
bool cli_color_stdout(void);
/* Parses a positive pid; false if s is not one. */
bool cli_parse_pid(const char *s, int *pid);
/* A part directory of a run (scry-parts-XXXXXX, made by mkdtemp: a directory of its own, mode
 * 0700, owned by uid): the only kind `scry control` writes into and `scry collect` empties, so
 * that a path from another process's environment or the command line cannot make them write
 * into, or remove files from, any other directory. */
bool cli_is_part_dir(const char *dir, uid_t uid);
/* Parses a percentage from 0 to 100; false if s is not one. */
bool cli_parse_percent(const char *s, double *out);
/* Parses a finite number >= 0; false if s is not one. */
bool cli_parse_amount(const char *s, double *out);
/* Reads a whole file into a malloc'd buffer (common/infile.h); records an io_error on failure. */
int cli_read_file(const char *path, char **data, size_t *len);
/* Parses the options of snapshot report cmd (its enum opt_cmd bit: those the option table
 * gives it of --top N, --json, --help (sets *help), --allocations, -q/--quiet; allocations and
 * quiet may be NULL for a command that takes neither). Returns 0, or -SCRY_E_USAGE (recorded
 * with cli_usage) for the handler to return; optind is the first operand. */
int cli_parse_report_options(unsigned cmd, int argc, char **argv, long *top, bool *json,
                             bool *help, bool *allocations, bool *quiet);
/* ha_build_progress's callback for analyze and diff: each step on the progress line
 * (common/progress.h); ctx is an int, 0 at the start, that remembers the step shown. */
enum ha_step;
void cli_heap_progress(void *ctx, enum ha_step step, uint64_t done, uint64_t total);
/* The target of stacks and dump: --pid PID, --core FILE with an optional --exe, or --minidump
 * FILE (NULL when not given). Records a usage error unless exactly one was given (returns
 * -SCRY_E_USAGE then, else 0). */
struct rd_reader;
int cli_check_target(int pid, const char *core, const char *exe, const char *minidump);
int cli_open_target(int pid, const char *core, const char *exe, const char *minidump,
                    struct rd_reader **out);
/* After a failure on a live target (pid > 0): read_failed, not_python or io_error of a process
 * that has exited or is exiting becomes no_such_process, the error that says what happened;
 * permission_denied as root gets a hint that does not say to run as root. */
void cli_target_error(int pid);
/* The scheduler state letter of thread tid in a list from rd_threads; 0 if it is not there. */
struct rd_thread;
char cli_thread_state(const struct rd_thread *threads, size_t n, long long tid);

/* ---- profiles' call stacks (cli_common.c), for flamegraph and view --format ----------------- */

struct stk_tree;
struct pdoc;
/* Reads a profile (pdoc_load) and its stacks into t (one side of a differential tree when before
 * is set; the memory stacks with memory); the model goes to *doc when doc is not NULL (release
 * it with pdoc_free). A heap snapshot is refused with a message that says what to do. */
int cli_load_profile_stacks(const char *path, struct stk_tree *t, bool before, bool memory,
                            struct pdoc *doc);
/* The profiled program's name in a profile, NULL if it has none (or doc is NULL or empty). */
const char *cli_profile_program(const struct pdoc *doc);

/* ---- the other files' entry points --------------------------------------------------------- */

/* `scry view --format FORMAT` (view_export.c): folded, speedscope, pprof, trace, firefox;
 * outfile NULL or "-" is standard output. Returns what a handler returns. */
int cli_view_export(const char *path, const char *format, const char *outfile);
/* The browser view's page of the profile document data (view_page.c; what names it in errors,
 * threshold is the page's "quiet line" level): written to dest, or to a new private file in
 * $TMPDIR when dest is NULL; its path goes to path. Returns 0 or a negative error (recorded). */
int cli_page_write(const char *data, size_t len, const char *what, double threshold,
                   const char *dest, char *path, size_t size);
/* `scry view --serve` (src/http/view_serve.c): serves the page of the profile document data from
 * 127.0.0.1:port (0: any free port) under a random token, with its "propose" action, until
 * SIGINT or SIGTERM. Returns 0 or a negative error (recorded). */
struct serve_llm;
int cli_view_serve(const char *path, const char *data, size_t len, double threshold,
                   unsigned port, const struct serve_llm *llm);
/* Whether the file starts with a heap snapshot's magic (heap_flamegraph.c); false if unreadable. */
bool cli_is_snapshot(const char *path);
/* The retention flame graph of heap snapshots (heap_flamegraph.c), for `scry flamegraph`. */
struct cli_heap_graph {
    char **inputs;     /* one snapshot, or before and after with diff */
    bool diff, folded; /* differential; folded stacks instead of the SVG */
    bool allocations;  /* retained bytes by allocating stack (one snapshot) */
    const char *title; /* NULL: the default */
    double min_pct;    /* < 0: the default (0.01%); 0: none */
    double min_bytes;  /* 0: none */
    long max_depth;    /* 0: the default (32) */
    unsigned width;    /* 0: the default */
};
/* Writes the SVG or folded stacks to out. Returns 0 or a negative error (recorded). */
int cli_heap_flamegraph(const struct cli_heap_graph *g, struct strbuf *out);

/* ---- a CPU profile's document (profile_out.c) ---------------------------------------------- */

struct profile;
struct profile_json_opts;
struct outfile;
/* The source of every profiled file, for the text of each line; unreadable files keep none. */
void cli_profile_read_sources(struct profile *p);
/* Reads the sources, renders the document and commits it to out (aborted on failure). Returns
 * 0 or a recorded error. */
/* libscry-agent.so next to the scry binary, into out (0, or io_error with a hint). */
int cli_find_agent(char *out, size_t n);
int cli_profile_write(struct profile *p, const struct profile_json_opts *jo, struct outfile *out);

#endif
