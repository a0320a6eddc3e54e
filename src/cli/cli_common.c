/* Shared CLI helpers: error documents, stdout writing, small parsers. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/error.h"
#include "common/outfile.h"
#include "common/sanitize.h"
#include "reader/reader.h"
#include "render/json_writer.h"

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
        /* Messages quote paths, names and profile keys: cleaned like every text shown. */
        fprintf(stderr, "scry: error: %s [%s]\n", san_str(msg), err_code_name(code));
        if (hint && *hint)
            fprintf(stderr, "hint: %s\n", san_str(hint));
    }
    return code == SCRY_E_USAGE ? CLI_EXIT_USAGE : CLI_EXIT_ERROR;
}

int cli_usage_error(bool json, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_failv(SCRY_E_USAGE, NULL, fmt, ap);
    va_end(ap);
    return cli_report_error(json);
}

int cli_stdout_error(void)
{
    /* io_error's default hint is about paths: none was given here. */
    return err_fail_hint(SCRY_E_IO,
                         "standard output was closed, or the disk or pipe it goes to is full or "
                         "gone; write to a file with -o where the command has it",
                         "cannot write to standard output: %s", strerror(errno ? errno : EIO));
}

int cli_write_stdout(const struct strbuf *buf)
{
    errno = 0;
    if (buf->len && fwrite(buf->buf, 1, buf->len, stdout) != buf->len)
        return cli_stdout_error();
    if (fflush(stdout) != 0)
        return cli_stdout_error();
    return 0;
}

bool cli_color_stdout(void)
{
    const char *nc = getenv("NO_COLOR");
    return isatty(1) && !(nc && *nc);
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

int cli_option_error(bool json, int c, char **argv)
{
    if (c == ':')
        return cli_usage_error(json, "option %s needs a value", argv[optind - 1]);
    return cli_usage_error(json, "unknown option '%s'", argv[optind - 1]);
}

int cli_write_file_atomic(const char *path, const struct strbuf *sb)
{
    return outfile_write_all(path, sb->buf ? sb->buf : "", sb->len, OUTFILE_PRIVATE);
}

int cli_parse_report_options(int argc, char **argv, const char *usage, long *top, bool *json)
{
    static const struct option longopts[] = {
        {"top", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *json = cli_wants_json(argc, argv);
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":t:jh", longopts, NULL)) != -1) {
        switch (c) {
        case 't': {
            char *end;
            *top = strtol(optarg, &end, 10);
            if (*end || *top <= 0 || *top > 100000)
                return cli_usage_error(*json, "--top needs a count from 1 to 100000, not '%s'",
                                       optarg);
            break;
        }
        case 'j':
            *json = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return CLI_EXIT_OK;
        default:
            return cli_option_error(*json, c, argv);
        }
    }
    return -1;
}

int cli_check_target(int pid, const char *core, const char *exe)
{
    if (!pid == !core)
        return err_fail(SCRY_E_USAGE, "give exactly one of --pid PID and --core FILE");
    if (exe && !core)
        return err_fail(SCRY_E_USAGE, "--exe only applies to --core");
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

int cli_open_target(int pid, const char *core, const char *exe, struct rd_reader **out)
{
    return pid ? rd_open_pid(pid, out) : rd_open_core(core, exe, out);
}
