/* `scry collect`: the profile of a process that loaded the agent itself.
 *
 * A plain `python app.py` that calls scry.start() loads the agent into its running interpreter
 * (python/scry/_standalone.py) and starts this command beside it: it waits for the process to
 * end, or to mark itself exiting with its part written, then merges the part files it wrote, as
 * `scry run` does after its program; the process waits at exit until the profile is written. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/part_delta.h"
#include "analysis/profile.h"
#include "cli/cli.h"
#include "options/options.h"
#include "common/error.h"
#include "common/sanitize.h"
#include "platform/infile.h"
#include "platform/os_process.h"
#include "platform/outfile.h"
#include "platform/proc_wait.h"
#include "render/profile_json.h"
#include "run/run_parts.h"
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

int cmd_collect(int argc, char **argv)
{
    int pid = 0, c;
    const char *dir = NULL, *outfile = "scry-profile.json", *program = "", *program_path = "";
    const char *part = NULL, *since = NULL;
    struct opt_parser op;
    opt_begin(&op, OC_COLLECT, argc, argv, OP_PERMUTE);
    while ((c = opt_next(&op)) > 0) {
        switch (c) {
        case OPT_PID:
            pid = (int)op.ival;
            break;
        case OPT_PART_DIR:
            dir = op.arg;
            break;
        case OPT_OUTFILE:
            outfile = op.arg;
            break;
        case OPT_PROGRAM:
            program = op.arg;
            break;
        case OPT_PROGRAM_PATH:
            program_path = op.arg;
            break;
        case OPT_PART:
            part = op.arg;
            break;
        case OPT_SINCE:
            since = op.arg;
            break;
        case OPT_HELP:
            return cli_help();
        }
    }
    if (c < 0)
        return c;
    int operand = opt_operand(&op); /* none is taken */
    if (part || since) {
        if (!part || pid || dir || operand != argc)
            return cli_usage("give --part AFTER [--since BEFORE] (and no --pid or --part-dir)");
        return collect_window(part, since, outfile, program, program_path);
    }
    struct stat st;
    if (!pid || !dir || operand != argc)
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
    /* Its agent marks exiting-<pid> in dir and waits for the profile (ag_collect_at_exit_wait)
     * once its part is written, so that the file is complete when its exit status is seen. */
    char mark[64];
    snprintf(mark, sizeof(mark), "exiting-%d", pid);
    pf_wait_exit_or_file(pid, dir, mark);
    run_parts_wait_lingering(dir);
    struct profile p;
    prof_init(&p);
    run_parts_read(&p, dir, (pid_t)pid, false);
    prof_finish(&p);
    if (!p.note)
        p.note = "CPU time only: the program loaded scry itself (scry.start() in a plain python "
                 "run), too late to hook its memory; for memory, run it with scry run --off and "
                 "keep the scry.start() call";
    int err = collect_write(&p, &out, outfile, program, program_path);
    prof_free(&p);
    run_parts_remove_dir(dir); /* after the write: the process waits for its exiting-<pid> to go */
    return err;
}
