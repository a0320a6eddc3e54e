/* What every subcommand shares: the command table, error reporting in text or JSON with the
 * stable codes, and writing output to stdout with errors checked. */
#ifndef SCRY_CLI_CLI_H
#define SCRY_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"

#define SCRY_VERSION "0.1.0"

/* Exit statuses: 0 success, 1 any error with a code, 2 usage errors. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_ERROR = 1, CLI_EXIT_USAGE = 2 };

int cmd_stacks(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_compare(int argc, char **argv);

/* Prints the last recorded error (err_last_*) as text on stderr, or as a JSON error document on
 * stdout when json is set, and returns the exit status for it. */
int cli_report_error(bool json);
/* Reports getopt's complaint (c is ':' for a missing value, anything else an unknown option) as
 * a usage error; returns CLI_EXIT_USAGE. */
int cli_option_error(bool json, int c, char **argv);
/* Parses the options every snapshot report takes: --top N (1..100000), --json, --help (prints
 * usage). Returns -1 to go on, or the exit status to return (help shown, usage error reported). */
int cli_parse_report_options(int argc, char **argv, const char *usage, long *top, bool *json);
/* The target of stacks and dump: --pid PID, or --core FILE with an optional --exe. Checks that
 * exactly one was given (usage error otherwise), then opens it with the reader. */
struct rd_reader;
int cli_check_target(int pid, const char *core, const char *exe);
int cli_open_target(int pid, const char *core, const char *exe, struct rd_reader **out);
/* After a failure on a live target (pid > 0): read_failed, not_python or io_error of a process
 * that has exited or is exiting becomes no_such_process, the error that says what happened;
 * permission_denied as root gets a hint that does not say to run as root. */
void cli_target_error(int pid);
/* Records a usage error and reports it; returns CLI_EXIT_USAGE. */
int cli_usage_error(bool json, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes buf to path through common/outfile.h (an unpredictable temporary name in the same
 * directory, renamed over path; mode 0600); returns 0 or records an io_error. */
int cli_write_file_atomic(const char *path, const struct strbuf *sb);
/* Records an io_error for a failed write to stdout (errno says why), with a hint about stdout;
 * returns the negative code. */
int cli_stdout_error(void);
/* Writes buf to stdout and flushes; returns 0 or records an io_error. */
int cli_write_stdout(const struct strbuf *buf);
/* Whether stdout should get colours (a terminal, NO_COLOR unset). */
bool cli_color_stdout(void);
/* Parses a positive pid; false if s is not one. */
bool cli_parse_pid(const char *s, int *pid);
/* Reads a whole file into a malloc'd buffer (cmd_view.c); records an io_error on failure. */
int cli_read_file(const char *path, char **data, size_t *len);
/* Parses a percentage from 0 to 100 (cmd_view.c); false if s is not one. */
bool cli_parse_percent(const char *s, double *out);
/* `scry view --format folded|speedscope [-o FILE]`: the profile's call stacks for other tools
 * (cmd_flamegraph.c); outfile NULL or "-" is standard output. Returns the exit status. */
int cli_view_export(const char *path, const char *format, const char *outfile);
/* Standard output when path is NULL or "-", else the file (temporary name, then renamed). */
int cli_write_output(const char *path, const struct strbuf *sb);
/* The exports of the whole profile document (view_export.c): pprof, trace, firefox. */
bool cli_view_doc_format(const char *format);
int cli_view_export_doc(const char *path, const char *format, const char *outfile);
/* Whether the file starts with a heap snapshot's magic (SCRYSNAP); false if it cannot be read. */
bool cli_is_snapshot(const char *path);
/* The retention flame graph of heap snapshots (heap_flamegraph.c), for `scry flamegraph`. */
struct cli_heap_graph {
    char **inputs;     /* one snapshot, or before and after with diff */
    bool diff, folded; /* differential; folded stacks instead of the SVG */
    const char *title; /* NULL: the default */
    double min_pct;    /* < 0: the default (0.01%); 0: none */
    double min_bytes;  /* 0: none */
    long max_depth;    /* 0: the default (32) */
    unsigned width;    /* 0: the default */
};
/* Writes the SVG or folded stacks to out. Returns 0 or a negative error (recorded). */
int cli_heap_flamegraph(const struct cli_heap_graph *g, struct strbuf *out);
/* True if argv contains --json (so that usage errors found while parsing can be JSON too). */
bool cli_wants_json(int argc, char **argv);

#endif
