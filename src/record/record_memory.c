/* `scry record --pid PID --memory`: the memory profile of a process that scry did not start
 * (docs/record-memory.md). scry's agent is loaded into it: its main thread is stopped with ptrace
 * at a point where it holds no lock of the C library's or the dynamic loader's (blocked in one
 * of a few waiting system calls, or running code outside libc, the loader and the agent), and
 * made to call dlopen(agent) and then scry_agent_attach(settings), after which its registers are
 * put back exactly and it is let go (an interrupted system call restarts as the kernel would
 * have restarted it). The agent hooks the allocation functions through every loaded object's
 * relocation entries and profiles as under `scry run --memory`. At the end the main thread is
 * made to call scry_agent_detach, which starts a thread of the agent's that writes the part,
 * puts every relocation entry back and leaves the agent loaded and idle; the part is merged into
 * the profile as `scry run` merges its parts. x86-64 Linux only. On Python 3.14+ both calls are
 * made through CPython's remote debugging instead (attach/record_remote.c) where the process
 * allows it and its main thread runs Python. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/profile.h"
#include "attach/agent_link.h"
#include "attach/record_remote.h"
#include "cli/cli.h"
#include "common/arena.h"
#include "common/error.h"
#include "common/infile.h"
#include "common/outfile.h"
#include "common/progress.h"
#include "common/sanitize.h"
#include "reader/reader_impl.h"
#include "record/record_memory.h"
#include "render/profile_json.h"

#define PICK_TRIES 400      /* stops of the main thread looking for a safe point (~4 s) */
#define PART_WAIT_MS 15000  /* for the agent's part after detach */
#define GONE_WAIT_MS 2000   /* for the part of a process that has ended */
#define DEFAULT_WINDOW 1048576ULL /* the allocation sampling window, as scry run's */
#define REMOTE_WAIT_S 2.0 /* for the interpreter to run the attach script (3.14+) */
#define STACK_SKIP 1024     /* bytes left alone below the thread's stack pointer */

#if defined(__x86_64__)

/* ---- the target's mappings ---- */

/* Whether pc lies in an executable mapping of one of the objects where a stopped thread may
 * hold a lock that dlopen or the agent's start takes. */
static bool pc_unsafe(int pid, uint64_t pc)
{
    static const char *const objects[] = {"libc.so", "libc-", "ld-linux", "ld-", "libpthread",
                                          "libdl", "libgcc_s", "libstdc++", "libscry-agent"};
    struct arena a = ARENA_INIT;
    struct rd_mapping *maps = NULL;
    size_t n = 0;
    bool unsafe = false, seen = false;
    if (rd_maps_read(pid, &a, &maps, &n) != 0)
        err_clear();
    for (size_t i = 0; i < n && !seen; i++) {
        if (pc < maps[i].start || pc >= maps[i].end)
            continue;
        seen = true;
        const char *slash = strrchr(maps[i].path, '/');
        for (size_t k = 0; slash && k < sizeof(objects) / sizeof(*objects); k++)
            if (strncmp(slash + 1, objects[k], strlen(objects[k])) == 0)
                unsafe = true;
    }
    free(maps);
    arena_free(&a);
    return unsafe || !seen;
}

/* ---- stopping the main thread at a safe point ---- */

#define XSTATE_BYTES 16384 /* more than the largest XSAVE area (with AMX, about 11 KiB) */

struct inj {
    int pid;
    struct user_regs_struct saved;
    /* The vector, x87 and MXCSR state, put back with the general registers: the injected calls
     * (the loader's string and memory functions) use the vector registers, and the interrupted
     * code may hold live values there (pymalloc links a pool with one SSE store of two
     * pointers). In the XSAVE layout when the kernel gives it, else FXSAVE's (x87 and SSE). */
    uint8_t xstate[XSTATE_BYTES];
    size_t xstate_len; /* 0: fp holds it */
    struct user_fpregs_struct fp;
    bool held;
};

static int save_vector_state(struct inj *in)
{
    struct iovec iov = {in->xstate, sizeof(in->xstate)};
    if (ptrace(PTRACE_GETREGSET, in->pid, (void *)(uintptr_t)NT_X86_XSTATE, &iov) == 0 &&
        iov.iov_len > 0) {
        in->xstate_len = iov.iov_len;
        return 0;
    }
    in->xstate_len = 0;
    return ptrace(PTRACE_GETFPREGS, in->pid, 0, &in->fp) == 0 ? 0 : -1;
}

static void restore_vector_state(struct inj *in)
{
    struct iovec iov = {in->xstate, in->xstate_len};
    if (in->xstate_len)
        ptrace(PTRACE_SETREGSET, in->pid, (void *)(uintptr_t)NT_X86_XSTATE, &iov);
    else
        ptrace(PTRACE_SETFPREGS, in->pid, 0, &in->fp);
}

/* Blocking system calls during which a thread holds none of the locks dlopen takes. */
static bool waiting_syscall(long nr)
{
    static const long ok[] = {0 /* read */,      7 /* poll */,      23 /* select */,
                              34 /* pause */,    35 /* nanosleep */, 43 /* accept */,
                              45 /* recvfrom */, 47 /* recvmsg */,   61 /* wait4 */,
                              128 /* rt_sigtimedwait */, 130 /* rt_sigsuspend */,
                              230 /* clock_nanosleep */, 232 /* epoll_wait */,
                              247 /* waitid */, 270 /* pselect6 */, 271 /* ppoll */,
                              281 /* epoll_pwait */, 288 /* accept4 */, 441 /* epoll_pwait2 */};
    for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++)
        if (nr == ok[i])
            return true;
    return false;
}

/* Whether the thread blocks SIGSEGV (the injected call returns through one, which must reach
 * us rather than be forced on a blocked thread). */
static bool blocks_segv(int pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true;
    bool blocked = true;
    while (fgets(buf, sizeof(buf), f))
        if (strncmp(buf, "SigBlk:", 7) == 0)
            blocked = (strtoull(buf + 7, NULL, 16) >> (SIGSEGV - 1)) & 1;
    fclose(f);
    return blocked;
}

static int lost(int pid)
{
    return err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d exited while scry was loading its agent",
                    pid);
}

/* Waits for the next stop of the main thread: 0 with *status, or an error if it ended. */
static int wait_stop(int pid, int *status)
{
    for (;;) {
        pid_t r = waitpid(pid, status, __WALL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || WIFEXITED(*status) || WIFSIGNALED(*status))
            return lost(pid);
        return 0;
    }
}

/* Seizes and stops the main thread, keeping it only where it is safe to call into the loader. */
static int hold_main_thread(struct inj *in)
{
    int pid = in->pid;
    for (int tries = 0; tries < PICK_TRIES; tries++) {
        if (blocks_segv(pid))
            return err_fail(SCRY_E_INJECT_REFUSED,
                                 "the main thread of process %d blocks SIGSEGV, through which "
                                 "scry's injected call returns",
                                 pid);
        if (ptrace(PTRACE_SEIZE, pid, 0, 0) != 0) {
            if (errno == ESRCH)
                return err_fail(SCRY_E_NO_SUCH_PROCESS, "no process %d", pid);
            return err_fail(SCRY_E_PERMISSION_DENIED, "not allowed to trace process %d: %s", pid,
                            strerror(errno));
        }
        int st;
        if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) != 0 || wait_stop(pid, &st) != 0)
            return lost(pid);
        if ((st >> 16) != PTRACE_EVENT_STOP) {
            /* A signal arrived first: hand it over and look again. */
            ptrace(PTRACE_DETACH, pid, 0, (void *)(long)WSTOPSIG(st));
            continue;
        }
        if (ptrace(PTRACE_GETREGS, pid, 0, &in->saved) != 0) {
            ptrace(PTRACE_DETACH, pid, 0, 0);
            return lost(pid);
        }
        long nr = (long)in->saved.orig_rax;
        bool safe = nr >= 0 ? waiting_syscall(nr) : !pc_unsafe(pid, in->saved.rip);
        if (safe && save_vector_state(in) != 0) {
            ptrace(PTRACE_DETACH, pid, 0, 0);
            return err_fail(SCRY_E_INJECT_REFUSED,
                            "cannot read the vector registers of process %d's main thread "
                            "(PTRACE_GETREGSET): an injected call would lose them",
                            pid);
        }
        if (safe) {
            in->held = true;
            return 0;
        }
        ptrace(PTRACE_DETACH, pid, 0, 0);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return err_fail(SCRY_E_INJECT_REFUSED,
                         "the main thread of process %d was never at a safe point to load scry's "
                         "agent (it was always inside the C library, the loader or a lock wait)",
                         pid);
}

/* Puts the registers back and lets the thread go (a pending SIGSEGV of ours is dropped). */
static void release_main_thread(struct inj *in)
{
    if (!in->held)
        return;
    ptrace(PTRACE_SETREGS, in->pid, 0, &in->saved);
    restore_vector_state(in);
    ptrace(PTRACE_DETACH, in->pid, 0, 0);
    in->held = false;
}

/* Makes the held thread call fn(arg0, arg1), where a string `text` (if any) is copied below its
 * stack and passed as arg0; the call returns to address 0, whose fault stops it again. */
static int remote_call(struct inj *in, uint64_t fn, const char *text, uint64_t arg1,
                       uint64_t *ret)
{
    int pid = in->pid;
    struct user_regs_struct r = in->saved;
    uint64_t sp = (in->saved.rsp - STACK_SKIP) & ~(uint64_t)15;
    uint64_t arg0 = 0;
    if (text) {
        size_t len = strlen(text) + 1;
        sp = (sp - len) & ~(uint64_t)15;
        arg0 = sp;
        struct iovec local = {(void *)text, len}, remote = {(void *)(uintptr_t)sp, len};
        if (process_vm_writev(pid, &local, 1, &remote, 1, 0) != (ssize_t)len)
            return err_fail(SCRY_E_PERMISSION_DENIED, "cannot write into process %d: %s", pid,
                            strerror(errno));
    }
    sp -= 16;
    uint64_t zero = 0;
    sp -= 8; /* the return address: rsp % 16 == 8 at the callee's entry, as after a call */
    struct iovec lz = {&zero, 8}, rz = {(void *)(uintptr_t)sp, 8};
    if (process_vm_writev(pid, &lz, 1, &rz, 1, 0) != 8)
        return err_fail(SCRY_E_PERMISSION_DENIED, "cannot write into process %d: %s", pid,
                        strerror(errno));
    r.rsp = sp;
    r.rip = fn;
    r.rdi = arg0;
    r.rsi = arg1;
    r.rax = 0;
    r.orig_rax = (unsigned long long)-1; /* no system call to restart under the call */
    r.eflags &= ~0x400ULL; /* the direction flag: clear at a call, as the ABI wants */
    if (ptrace(PTRACE_SETREGS, pid, 0, &r) != 0 || ptrace(PTRACE_CONT, pid, 0, 0) != 0)
        return lost(pid);
    for (;;) {
        int st;
        if (wait_stop(pid, &st) != 0) {
            in->held = false;
            return -(int)err_last_code();
        }
        int sig = WSTOPSIG(st);
        if ((st >> 16) == PTRACE_EVENT_STOP) {
            ptrace(PTRACE_CONT, pid, 0, 0);
            continue;
        }
        if (sig == SIGSEGV) {
            struct user_regs_struct now;
            if (ptrace(PTRACE_GETREGS, pid, 0, &now) != 0)
                return lost(pid);
            if (now.rip == 0) {
                *ret = now.rax;
                return 0;
            }
            /* A fault inside the call: it is abandoned, the thread goes on where it was. */
            return err_fail(SCRY_E_INTERNAL, "the injected call faulted in process %d at %#llx",
                            pid, (unsigned long long)now.rip);
        }
        ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig); /* the program's own signal */
    }
}

/* Calls fn of the agent (already loaded, else loaded first) in the held thread. */
static int agent_call(struct inj *in, const char *agent, const char *fn, const char *text,
                      int64_t *ret)
{
    uint64_t addr = agent_link_symbol(in->pid, "libscry-agent.so", fn), r = 0;
    if (!addr) {
        uint64_t dlopen_at = agent_link_symbol(in->pid, "libc.so", "dlopen");
        if (!dlopen_at)
            dlopen_at = agent_link_symbol(in->pid, "libdl.so", "dlopen");
        if (!dlopen_at)
            return err_fail(SCRY_E_INJECT_REFUSED,
                                 "process %d has no dlopen (a static executable?): scry cannot "
                                 "load its agent there",
                                 in->pid);
        int err = remote_call(in, dlopen_at, agent, 2 /* RTLD_NOW */, &r);
        if (err)
            return err;
        addr = r ? agent_link_symbol(in->pid, "libscry-agent.so", fn) : 0;
        if (!addr)
            return err_fail(SCRY_E_INJECT_REFUSED, "process %d could not load %s", in->pid,
                            san_str(agent));
    }
    int err = remote_call(in, addr, text, 0, &r);
    *ret = (int32_t)(uint32_t)r;
    return err;
}

/* One call into the agent in process pid, with the main thread held around it. */
static int inject(int pid, const char *agent, const char *fn, const char *text, int64_t *ret)
{
    struct inj in = {.pid = pid};
    int err = hold_main_thread(&in);
    if (!err)
        err = agent_call(&in, agent, fn, text, ret);
    release_main_thread(&in);
    return err;
}

#else

static int inject(int pid, const char *agent, const char *fn, const char *text, int64_t *ret)
{
    (void)agent;
    (void)fn;
    (void)text;
    (void)ret;
    return err_fail(SCRY_E_INJECT_REFUSED, "scry record --memory loads its agent on x86-64 only "
                                            "(process %d)",
                    pid);
}

#endif

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
        if (waited >= GONE_WAIT_MS && !smp_alive(pid))
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
    if (!smp_alive(pid))
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
        execv("/proc/self/exe", argv);
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
        if (!smp_alive(pid))
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

/* Whether process pid has ended or is ending: its /proc entry is gone, or its main thread is a
 * zombie (or dead) with no other thread left, or it is exiting (PF_EXITING in the main thread's
 * flags) and gets there within about 100 ms. A process whose main thread ended on its own while
 * other threads run (pthread_exit) is not gone. */
static bool target_gone(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    for (int tries = 0; tries < 50; tries++) {
        ssize_t n = smp_read_proc(path, buf, sizeof(buf) - 1);
        if (n <= 0)
            return true;
        buf[n] = 0;
        const char *s = strrchr(buf, ')');
        char state = 0;
        unsigned long flags = 0;
        long threads = 0;
        /* state ppid pgrp session tty tpgid flags ... num_threads (the 20th field) */
        if (!s || sscanf(s + 1, " %c %*d %*d %*d %*d %*d %lu %*u %*u %*u %*u %*u %*u %*d %*d "
                                "%*d %*d %ld",
                         &state, &flags, &threads) != 3)
            return false;
        bool dead = state == 'Z' || state == 'X';
        if (dead && threads <= 1)
            return true;
        if (!dead && !(flags & 0x4 /* PF_EXITING */))
            return false;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* An attach that failed because the process ended under it (its main thread was stopped and let
 * go while another thread called exit): the kernel then refuses the trace (EPERM on a zombie),
 * its /proc files vanish and its memory cannot be written, which would read as
 * permission_denied or inject_refused. What happened is that it exited. */
static int attach_error(int pid, int err)
{
    if (err == 0 || err == -SCRY_E_NO_SUCH_PROCESS || !target_gone(pid))
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
    err = inject(pid, agent, ATTACH, settings, rc);
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
        err = inject(pid, agent, DETACH, NULL, &rc);
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
        if (smp_alive(pid) && detach(rt, pid, dir, agent) != 0) {
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
