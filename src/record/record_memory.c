/* `scry record --pid PID --memory`: the memory profile of a process that scry did not start
 * (docs/record-memory.md). scry's agent is loaded into it and made to call
 * scry_agent_attach(settings) by platform/inject.h (on Linux: its main thread stopped with ptrace
 * at a safe point, its registers put back exactly afterwards). The agent hooks the allocation
 * functions through every loaded object's relocation entries and profiles as under `scry run
 * --memory`. At the end the process is made to call scry_agent_detach the same way, which starts
 * a thread of the agent's that writes the part, puts every relocation entry back and leaves the
 * agent loaded and idle; the part is merged into the profile as `scry run` merges its parts.
 * x86-64 Linux only. On Python 3.14+ both calls are made through CPython's remote debugging
 * instead (attach/record_remote.c) where the process allows it and its main thread runs Python. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/profile.h"
#include "attach/agent_link.h"
#include "attach/record_remote.h"
#include "cli/cli.h"
#include "common/arena.h"
#include "common/error.h"
#include "common/progress.h"
#include "common/sanitize.h"
#include "platform/infile.h"
#include "platform/inject.h"
#include "platform/os_process.h"
#include "platform/outfile.h"
#include "platform/proc_info.h"
#include "reader/reader_impl.h"
#include "record/record_memory.h"
#include "render/profile_json.h"

#define PART_WAIT_MS 15000  /* for the agent's part after detach */
#define GONE_WAIT_MS 2000   /* for the part of a process that has ended */
#define DEFAULT_WINDOW 1048576ULL /* the allocation sampling window, as scry run's */
#define REMOTE_WAIT_S 2.0 /* for the interpreter to run the attach script (3.14+) */


/* ---- settings, part, profile ---- */

static int write_settings(const char *dir, const struct smp_opts *o,
                          const struct record_memory_opts *m, const char *program_path,
                          char *path, size_t size)
{
    char text[4 * PATH_MAX + 512];
    int at = snprintf(text, sizeof(text),
             "SCRY_PART_DIR=%s\nSCRY_MEMORY=1\nSCRY_CPU_SAMPLING_RATE=%.9g\n"
             "SCRY_PROGRAM_PATH=%s\nSCRY_PROFILE_ALL=%d\nSCRY_PROFILE_SYSTEM_LIBRARIES=%d\n"
             "SCRY_PROFILE_ONLY=%s\nSCRY_PROFILE_EXCLUDE=%s\n",
             dir, 1.0 / o->rate, program_path, o->profile_all, o->system_libraries,
             o->profile_only ? o->profile_only : "", o->profile_exclude ? o->profile_exclude : "");
    /* Always given: an agent attached before keeps the window it was last given. */
    if (at > 0 && (size_t)at < sizeof(text))
        snprintf(text + at, sizeof(text) - (size_t)at, "SCRY_ALLOCATION_WINDOW=%llu\n",
                 m->window ? m->window : DEFAULT_WINDOW);
    if (strchr(program_path, '\n') || (o->profile_only && strchr(o->profile_only, '\n')) ||
        (o->profile_exclude && strchr(o->profile_exclude, '\n')))
        return err_fail(SCRY_E_USAGE, "a path or filter with a newline cannot be passed on");
    snprintf(path, size, "%s/settings", dir);
    return outfile_write_all(path, text, strlen(text), 0600);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")))
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
}

/* The part the agent writes at detach (or when the process ends): 0 and its text, or an error. */
static int wait_part(const char *dir, int pid, char **text, size_t *len)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/part-%d.json", dir, pid);
    for (int waited = 0; waited < PART_WAIT_MS; waited += 10) {
        if (access(path, F_OK) == 0)
            return infile_read_all(path, "part", INFILE_MAX_READ, text, len);
        prog_update((uint64_t)(waited / 1000));
        if (waited >= GONE_WAIT_MS && !pf_process_alive(pid))
            return err_fail(SCRY_E_NO_SUCH_PROCESS,
                            "process %d ended without writing its profile part (os._exit or a "
                            "signal)",
                            pid);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return err_fail(SCRY_E_INTERNAL, "the agent in process %d wrote no profile part", pid);
}

static int write_profile(const char *text, size_t len, int pid, const struct smp_program *pg,
                         struct outfile *out, const char *outfile, const char *why, bool quiet)
{
    struct profile p;
    prof_init(&p);
    char what[64];
    snprintf(what, sizeof(what), "process %d", pid);
    int err = prof_add_part_text(&p, text, len, what, pid);
    if (!err) {
        prof_finish(&p);
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        struct profile_json_opts jo = {
            .version = SCRY_VERSION,
            .program = pg->program,
            .entrypoint_dir = pg->entry_dir,
            .filename = pg->program_path,
            .args = pg->args,
            .nargs = pg->nargs,
            .cpu_percent_threshold = 1,
            .ncpus = ncpu > 0 ? (unsigned)ncpu : 1,
        };
        err = cli_profile_write(&p, &jo, out);
        prog_done();
        if (!err && !quiet)
            fprintf(stderr,
                    "scry: %s: wrote %s (%llu samples over %.3f s); view it with: scry view "
                    "--cli %s\n",
                    why, san_str(outfile), (unsigned long long)p.samples, p.elapsed_sec,
                    san_str(outfile));
    }
    prof_free(&p);
    return err;
}

/* --heap-at-end: `scry dump --pid` of the process (this executable) while the agent is still
 * attached, so that it gets the agent's live allocation samples; its report goes to stderr
 * (with quiet nowhere: dump --quiet draws no progress line, and its "wrote" line is dropped). */
static int heap_at_end(int pid, const char *path, bool quiet)
{
    if (!pf_process_alive(pid))
        return err_fail(SCRY_E_NO_SUCH_PROCESS,
                        "process %d ended before the recording did: no heap snapshot (%s) was "
                        "taken",
                        pid, san_str(path));
    char pidtext[32];
    snprintf(pidtext, sizeof(pidtext), "%d", pid);
    char *const argv[] = {"scry", "dump", "--pid", pidtext, "-o", (char *)path,
                          quiet ? "--quiet" : NULL, NULL};
    fflush(NULL);
    prog_done(); /* the dump draws its own line */
    pid_t d = fork();
    if (d == 0) {
        int null = quiet ? open("/dev/null", O_WRONLY | O_CLOEXEC) : -1;
        dup2(null >= 0 ? null : 2, 1);
        execv(pf_self_exec_path(), argv);
        _exit(127);
    }
    int st = 0;
    while (d > 0 && waitpid(d, &st, 0) < 0 && errno == EINTR)
        ;
    if (d < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return err_fail(SCRY_E_IO, "the heap snapshot at the end (%s) was not written (scry "
                                   "dump's message above)",
                        san_str(path));
    return 0;
}

/* Sleeps until the duration ends, Ctrl-C/SIGTERM, or the process ends; says which. The
 * progress line counts the seconds recorded (of the duration). */
static const char *wait_recording(int pid, double duration)
{
    double slept = 0;
    prog_phase("recording", PROG_SECONDS, (uint64_t)(duration + 0.999), NULL, NULL);
    while (duration <= 0 || slept < duration) {
        prog_update((uint64_t)slept);
        if (smp_stop_signal)
            return smp_stop_signal == SIGINT ? "interrupted (SIGINT)" : "interrupted (SIGTERM)";
        if (!pf_process_alive(pid))
            return "the process exited";
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        slept += 0.02;
    }
    return "the duration ended";
}

static int attach_refused(int pid, int64_t rc)
{
    if (rc == -2)
        return err_fail_hint(SCRY_E_INJECT_REFUSED,
                             "its profile is written by that scry run when it ends",
                             "process %d is profiled by scry run already", pid);
    if (rc == -3 || rc == -4)
        return err_fail_hint(SCRY_E_INJECT_REFUSED, "wait for the other recording to end",
                             "another scry record --memory is attached to process %d", pid);
    return err_fail(SCRY_E_INJECT_REFUSED,
                    "scry's agent could not start in process %d (run with SCRY_LOG=debug in the "
                    "target's environment to see why)",
                    pid);
}

/* An attach that failed because the process ended under it (its main thread was stopped and let
 * go while another thread called exit): the kernel then refuses the trace (EPERM on a zombie),
 * its /proc files vanish and its memory cannot be written, which would read as
 * permission_denied or inject_refused. What happened is that it exited. */
static int attach_error(int pid, int err)
{
    if (err == 0 || err == -SCRY_E_NO_SUCH_PROCESS || !pf_process_ending(pid))
        return err;
    return err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d exited while scry was loading its agent",
                    pid);
}

#define ATTACH "scry_agent_attach"
#define DETACH "scry_agent_detach"

/* One attach: through CPython's remote debugging where the target takes it (3.14+), else with
 * ptrace; *how says which (static text). */
static int attach_once(struct py_runtime *rt, int pid, const char *dir, const char *agent,
                       const char *settings, int64_t *rc, const char **how)
{
    static char said[512];
    enum remote_outcome ro;
    const char *why = NULL;
    int err = pep768_call(rt, pid, dir, agent, ATTACH, settings, REMOTE_WAIT_S, &ro, rc, &why);
    if (err || ro == REMOTE_DONE) {
        *how = "the agent was loaded through CPython's remote debugging (PEP 768)";
        return err;
    }
    err = pf_inject_call(pid, agent, ATTACH, settings, agent_link_symbol, rc);
    /* The withdrawn script may have run after all, just as the ptrace call was made. */
    if (!err && *rc == -3 && ro == REMOTE_PENDING && pep768_result(dir, pid, ATTACH, 2.0, rc) &&
        *rc == 0) {
        *how = "the agent was loaded through CPython's remote debugging (PEP 768)";
        return 0;
    }
    if (rt->minor >= 14)
        snprintf(said, sizeof(said), "the agent was loaded with ptrace (not through CPython's "
                                     "remote debugging: %s)",
                 why);
    else
        snprintf(said, sizeof(said), "the agent was loaded with ptrace");
    *how = said;
    return err;
}

/* The detach, the same way (its end is the part's appearance). */
static int detach(struct py_runtime *rt, int pid, const char *dir, const char *agent)
{
    enum remote_outcome ro;
    const char *why = NULL;
    int64_t rc = 0;
    int err = pep768_call(rt, pid, dir, agent, DETACH, NULL, REMOTE_WAIT_S, &ro, &rc, &why);
    /* A withdrawn request that ran after all: the ptrace call then finds the detach under way
     * (-1), which is harmless. */
    if (!err && ro != REMOTE_DONE)
        err = pf_inject_call(pid, agent, DETACH, NULL, agent_link_symbol, &rc);
    return err;
}

int record_memory(int pid, const struct smp_opts *o, const struct record_memory_opts *m,
                  const char *outfile, const char *agent)
{
    struct smp_hooks hooks = {.input_fd = -1};
    struct smp_set set = {.o = o, .h = &hooks};
    struct smp_program pg = {0};
    if (smp_set_open(&set, pid, &pg) != 0)
        return cli_report_error(false);
    struct py_runtime *rt = &set.procs[0]->rt;
    if (rt->layout.free_threaded) {
        smp_set_free(&set);
        free(pg.args);
        err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                 "memory profiling of a free-threaded Python (process %d) is not supported", pid);
        return cli_report_error(false);
    }
    /* What it does and how (lines), how far (the progress line): not with --quiet. */
    prog_init(m->quiet);
    if (!m->quiet)
        fprintf(stderr, "scry: loading scry's agent into process %d (Python %s) for its memory; "
                        "Ctrl-C to stop\n",
                pid, san_str(rt->version_str));

    struct outfile out;
    if (outfile_open(&out, outfile, OUTFILE_PRIVATE) != 0) {
        smp_set_free(&set);
        free(pg.args);
        return cli_report_error(false);
    }
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], settings[PATH_MAX + 16];
    snprintf(dir, sizeof(dir), "%s/scry-parts-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int err = 0;
    if (!mkdtemp(dir))
        err = err_fail(SCRY_E_IO, "cannot create a directory for the profile's part: %s",
                       strerror(errno));
    bool made = !err;
    if (!err)
        err = write_settings(dir, o, m, pg.program_path, settings, sizeof(settings));
    int64_t rc = 0;
    smp_install_stop_handlers(); /* Ctrl-C ends the recording, never an injected call */
    const char *how = NULL;
    /* -4: the agent is still detaching from a recording that just ended. */
    for (int tries = 0; !err && (tries == 0 || (rc == -4 && tries < 50)); tries++) {
        if (tries) {
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        err = attach_once(rt, pid, dir, agent, settings, &rc, &how);
    }
    if (!err && how && !m->quiet)
        fprintf(stderr, "scry: %s\n", how);
    if (!err && rc != 0)
        err = attach_refused(pid, rc);
    err = attach_error(pid, err);
    char *text = NULL;
    size_t len = 0;
    const char *why = NULL;
    enum scry_err heap_code = SCRY_E_OK; /* --heap-at-end failed: reported after the profile is written */
    char heap_msg[PATH_MAX + 256] = "";
    if (!err) {
        why = wait_recording(pid, o->duration);
        if (m->heap_at_end && heap_at_end(pid, m->heap_at_end, m->quiet) != 0) {
            heap_code = err_last_code();
            snprintf(heap_msg, sizeof(heap_msg), "%s", err_last_message());
            err_clear();
        }
        /* A process that ended wrote its part as it exited. The agent writes it at the detach:
         * seconds for a big profile. */
        prog_phase("detaching and reading the profile", PROG_SECONDS, 0, NULL, NULL);
        if (pf_process_alive(pid) && detach(rt, pid, dir, agent) != 0) {
            prog_clear();
            fprintf(stderr, "scry: warning: %s\n", err_last_message());
        }
        err = wait_part(dir, pid, &text, &len);
    }
    if (!err) {
        prog_phase("writing the profile", PROG_NONE, 0, NULL, NULL);
        err = write_profile(text, len, pid, &pg, &out, outfile, why, m->quiet);
    } else {
        outfile_abort(&out);
    }
    prog_done();
    free(text);
    free(pg.args);
    smp_set_free(&set);
    if (made)
        remove_dir(dir);
    if (!err && heap_code)
        err = err_fail(heap_code, "%s", heap_msg);
    return err ? cli_report_error(false) : CLI_EXIT_OK;
}
