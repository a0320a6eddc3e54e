/* What the commands share (cli.h): dispatch with the current command, usage errors (one form:
 * the message, code usage, a hint naming the command's --help), error documents, help, the one
 * check of standard output, small parsers, and reading a profile's call stacks. No command calls
 * into another command's file. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/heap_analysis.h"
#include "analysis/stacks.h"
#include "cli/cli.h"
#include "options/options.h"
#include "common/error.h"
#include "common/progress.h"
#include "common/sanitize.h"
#include "platform/infile.h"
#include "platform/os_process.h"
#include "platform/outfile.h"
#include "reader/reader.h"
#include "render/json_writer.h"
#include "snapshot/format.h"

/* The command running now (NULL before dispatch: `scry` itself) and its arguments. */
static const struct cli_command *current;
static int current_argc;
static char **current_argv;
/* errno of the first failed write to stdout (0: none seen by cli_print). */
static int stdout_errno;

const struct cli_command *cli_find_command(const char *name)
{
    for (size_t i = 0; i < cli_ncommands; i++)
        if (strcmp(cli_commands[i].name, name) == 0)
            return &cli_commands[i];
    return NULL;
}

bool cli_json_errors(void)
{
    if (!current || !(current->flags & CLI_JSON))
        return false;
    for (int i = 1; i < current_argc; i++) {
        const char *a = current_argv[i];
        if (strcmp(a, "--") == 0)
            break;
        if (strcmp(a, "--json") == 0 || ((current->flags & CLI_JSON_SHORT) && !strcmp(a, "-j")))
            return true;
    }
    return false;
}

int cli_dispatch(const struct cli_command *c, int argc, char **argv)
{
    current = c;
    current_argc = argc;
    current_argv = argv;
    int status = c->run(argc, argv);
    if (status < 0)
        status = cli_report_error(cli_json_errors());
    return cli_finish_stdout(status, c->flags & CLI_OUTFILE);
}

void cli_command_help(const struct cli_command *c, struct strbuf *out)
{
    if (c->usage)
        sb_adds(out, c->usage);
    if (c->opts)
        opt_help(c->opts, c->opt_column ? c->opt_column : 34, out);
    if (c->usage_tail)
        sb_adds(out, c->usage_tail);
}

int cli_help(void)
{
    if (!current)
        return CLI_EXIT_OK;
    struct strbuf sb = STRBUF_INIT;
    cli_command_help(current, &sb);
    cli_print(&sb);
    sb_release(&sb);
    return CLI_EXIT_OK;
}

int cli_report_error(bool json)
{
    enum scry_err code = err_last_code();
    if (code == SCRY_E_OK)
        code = SCRY_E_INTERNAL;
    const char *msg = err_last_message();
    const char *hint = err_last_hint();
    if (json) {
        struct strbuf sb = STRBUF_INIT;
        struct json_writer w;
        jw_init(&w, &sb, false);
        jw_obj_begin(&w);
        jw_key(&w, "error");
        jw_obj_begin(&w);
        jw_key(&w, "code");
        jw_str(&w, err_code_name(code));
        jw_key(&w, "message");
        jw_str(&w, msg);
        jw_key(&w, "hint");
        jw_str(&w, hint);
        jw_obj_end(&w);
        jw_obj_end(&w);
        sb_addch(&sb, '\n');
        fwrite(sb.buf, 1, sb.len, stdout);
        fflush(stdout);
        sb_release(&sb);
    } else {
        prog_clear(); /* the message starts its own line, not in the middle of the progress */
        /* Messages quote paths, names and profile keys: cleaned like every text shown. */
        fprintf(stderr, "scry: error: %s [%s]\n", san_str(msg), err_code_name(code));
        if (hint && *hint)
            fprintf(stderr, "hint: %s\n", san_str(hint));
    }
    return code == SCRY_E_USAGE ? CLI_EXIT_USAGE : CLI_EXIT_ERROR;
}

int cli_usage(const char *fmt, ...)
{
    /* The hint names the command's help; `scry` itself and `scry help` keep the default one,
     * which points at the list of commands. */
    char hint[128];
    bool own = current && strcmp(current->name, "help") != 0;
    if (own)
        snprintf(hint, sizeof(hint), "run 'scry %s --help' to see its options", current->name);
    va_list ap;
    va_start(ap, fmt);
    int ret = err_failv(SCRY_E_USAGE, own ? hint : NULL, fmt, ap);
    va_end(ap);
    return ret;
}

int cli_option_error(int c, char **argv)
{
    if (c == ':')
        return cli_usage("option %s needs a value", argv[optind - 1]);
    return cli_usage("unknown option '%s'", argv[optind - 1]);
}

void cli_print(const struct strbuf *buf)
{
    prog_clear(); /* stdout may be the terminal the progress line is on */
    errno = 0;
    if (buf->len && fwrite(buf->buf, 1, buf->len, stdout) != buf->len && !stdout_errno)
        stdout_errno = errno ? errno : EIO;
}

int cli_finish_report(int err, struct strbuf *out, bool json)
{
    int status = err ? cli_report_error(json) : CLI_EXIT_OK;
    if (!err)
        cli_print(out);
    sb_release(out);
    return status;
}

int cli_finish_stdout(int status, bool outfile_hint)
{
    errno = 0;
    bool failed = fflush(stdout) != 0;
    int e = failed && errno ? errno : stdout_errno;
    if (!failed && !ferror(stdout))
        return status;
    /* io_error's default hint is about paths: none was given here. */
    err_fail_hint(SCRY_E_IO,
                  outfile_hint ? "standard output was closed, or the disk or pipe it goes to is "
                                 "full or gone; write to a file with -o FILE instead"
                               : "standard output was closed, or the disk or pipe it goes to is "
                                 "full or gone",
                  "cannot write to standard output: %s", strerror(e ? e : EIO));
    int st = cli_report_error(false);
    return status != CLI_EXIT_OK ? status : st;
}

int cli_write_output(const char *path, const struct strbuf *sb)
{
    if (!path || strcmp(path, "-") == 0) {
        cli_print(sb);
        return 0;
    }
    return outfile_write_all(path, sb->buf ? sb->buf : "", sb->len, OUTFILE_PRIVATE);
}

bool cli_color_stdout(void)
{
    const char *nc = getenv("NO_COLOR");
    return isatty(1) && !(nc && *nc);
}

bool cli_is_part_dir(const char *dir, uid_t uid)
{
    struct stat st;
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    return strncmp(base, "scry-parts-", 11) == 0 && lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == uid && (st.st_mode & 077) == 0;
}

bool cli_parse_pid(const char *s, int *pid)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v <= 0 || v > INT_MAX)
        return false;
    *pid = (int)v;
    return true;
}

bool cli_wants_json(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--json") == 0)
            return true;
    }
    return false;
}

bool cli_parse_amount(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0)
        return false;
    *out = v;
    return true;
}

bool cli_parse_percent(const char *s, double *out)
{
    double v;
    if (!cli_parse_amount(s, &v) || v > 100)
        return false;
    *out = v;
    return true;
}

int cli_read_file(const char *path, char **data, size_t *len)
{
    return infile_read_all(path, "file", INFILE_MAX_READ, data, len);
}

int cli_parse_report_options(unsigned cmd, int argc, char **argv, long *top, bool *json,
                             bool *help, bool *allocations, bool *quiet)
{
    *help = false;
    if (allocations)
        *allocations = false;
    if (quiet)
        *quiet = false;
    *json = cli_wants_json(argc, argv);
    struct opt_parser p;
    opt_begin(&p, cmd, argc, argv, OP_PERMUTE);
    int c;
    while ((c = opt_next(&p)) > 0) {
        switch (c) {
        case OPT_TOP:
            *top = (long)p.ival;
            break;
        case OPT_JSON:
            *json = true;
            break;
        case OPT_HELP:
            *help = true;
            return 0;
        case OPT_ALLOCATIONS_FLAG:
            if (allocations)
                *allocations = true;
            break;
        case OPT_QUIET:
            if (quiet)
                *quiet = true;
            break;
        }
    }
    return c < 0 ? c : 0;
}

void cli_heap_progress(void *ctx, enum ha_step step, uint64_t done, uint64_t total)
{
    int *shown = ctx;
    if (*shown != (int)step + 1) {
        *shown = (int)step + 1;
        if (step == HA_STEP_GRAPH)
            prog_phase("reading the references", PROG_NONE, 0, NULL, NULL);
        else if (step == HA_STEP_DOMINATORS)
            prog_phase("computing dominators", PROG_PERCENT, total, NULL, NULL);
        else
            prog_phase("retained sizes and paths", PROG_NONE, 0, NULL, NULL);
    }
    if (step == HA_STEP_DOMINATORS)
        prog_update(done);
}

int cli_check_target(int pid, const char *core, const char *exe, const char *minidump)
{
    if (minidump && (pid || core))
        return cli_usage("give exactly one of --pid PID, --core FILE and --minidump FILE");
    if (!minidump && !pid == !core)
        return cli_usage("give exactly one of --pid PID and --core FILE");
    if (exe && !core)
        return cli_usage("--exe only applies to --core");
    return 0;
}

void cli_target_error(int pid)
{
    if (pid <= 0)
        return;
    enum scry_err code = err_last_code();
    /* A process that exits while it is read fails reads (read_failed) or loses its files under
     * /proc/PID/root (not_python, io_error): say what happened. */
    if ((code == SCRY_E_READ_FAILED && rd_pid_exited(pid, 100)) ||
        ((code == SCRY_E_NOT_PYTHON || code == SCRY_E_IO) && rd_pid_exited(pid, 0))) {
        err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d exited while it was being read", pid);
    } else if (err_last_code() == SCRY_E_PERMISSION_DENIED && geteuid() == 0) {
        /* The default hint says to run as root: wrong advice to root. */
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", err_last_message());
        err_fail_hint(SCRY_E_PERMISSION_DENIED,
                      "scry already runs as root, so the kernel refused for another reason: "
                      "this container lacks CAP_SYS_PTRACE (start it with --cap-add SYS_PTRACE), "
                      "/proc/sys/kernel/yama/ptrace_scope is 3, an LSM (AppArmor, SELinux) "
                      "forbids it, or the process belongs to another container or user "
                      "namespace (pid 1 of a sandbox often does)",
                      "%s", msg);
    }
}

char cli_thread_state(const struct rd_thread *threads, size_t n, long long tid)
{
    for (size_t i = 0; i < n; i++)
        if (threads[i].tid == tid)
            return threads[i].state;
    return 0;
}

int cli_open_target(int pid, const char *core, const char *exe, const char *minidump,
                    struct rd_reader **out)
{
    if (minidump)
        return rd_open_minidump(minidump, out);
    return pid ? rd_open_pid(pid, out) : rd_open_core(core, exe, out);
}

int cli_load_profile_stacks(const char *path, struct stk_tree *t, bool before, bool memory,
                            struct pdoc *doc)
{
    char *data = NULL;
    size_t len = 0;
    int err = cli_read_file(path, &data, &len);
    if (err)
        return err;
    if (len >= strlen(SNAP_MAGIC) && memcmp(data, SNAP_MAGIC, strlen(SNAP_MAGIC)) == 0) {
        free(data);
        return err_fail_hint(SCRY_E_USAGE,
                             "draw the CPU flame graph of a profile: scry run --stacks, then "
                             "scry flamegraph scry-profile.json",
                             "%s is a heap snapshot: heap snapshots are not supported yet by "
                             "scry flamegraph",
                             path);
    }
    struct pdoc local, *d = doc ? doc : &local;
    err = pdoc_load_bytes(d, data, len, path);
    free(data);
    if (err)
        return err;
    err = stk_add_profile(t, d, path, before, memory);
    if (err || !doc)
        pdoc_free(d);
    return err;
}

const char *cli_profile_program(const struct pdoc *doc)
{
    return doc && doc->program && doc->program[0] ? doc->program : NULL;
}

/* The agent sits next to the scry binary. */
int cli_find_agent(char *out, size_t n)
{
    char exe[PATH_MAX];
    if (pf_self_exe(exe, sizeof(exe)) <= 0)
        return err_fail(SCRY_E_IO, "cannot find scry's own executable: %s", strerror(errno));
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
