/* The reader over another live process: process_vm_readv for memory, /proc for mappings and
 * threads, and ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT) to stop every thread for a consistent
 * image. Stopped targets must never be left behind: rd_resume runs on every path, and while a
 * target is stopped, handlers for the fatal signals detach it before scry dies. The list of stopped
 * threads is therefore a static array the signal handler can walk without allocating. */
#include "reader/reader_impl.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "platform/infile.h"

#define MAX_SEIZED 16384
#define STOP_TIMEOUT_NS (10LL * 1000 * 1000 * 1000)

/* Threads this process has seized, with the signal each one was stopped with (re-injected on
 * detach so that the target does not lose it). One paused target at a time. */
static int seized_tids[MAX_SEIZED];
static int seized_sigs[MAX_SEIZED];
static volatile sig_atomic_t seized_count;
static const struct rd_reader *paused_owner;
static pid_t tracer_tid; /* ptrace requests only work from the thread that seized */

static const int fatal_signals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGSEGV, SIGBUS,
                                    SIGABRT, SIGFPE,  SIGILL,  SIGPIPE, SIGXCPU, SIGXFSZ,
                                    SIGALRM, SIGUSR1, SIGUSR2, SIGSYS,  SIGTRAP};
#define NFATAL (sizeof(fatal_signals) / sizeof(fatal_signals[0]))
static struct sigaction saved_actions[NFATAL];
static bool installed[NFATAL];

static pid_t current_tid(void) { return (pid_t)syscall(SYS_gettid); }

/* Async-signal-safe: only ptrace calls over the static list. */
static void detach_all(void)
{
    int n = seized_count;
    for (int i = n - 1; i >= 0; i--)
        ptrace(PTRACE_DETACH, seized_tids[i], NULL, (void *)(uintptr_t)seized_sigs[i]);
    seized_count = 0;
}

static void restore_handlers(void)
{
    for (size_t i = 0; i < NFATAL; i++) {
        if (installed[i])
            sigaction(fatal_signals[i], &saved_actions[i], NULL);
        installed[i] = false;
    }
}

static void fatal_handler(int sig, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;
    if (current_tid() != tracer_tid) {
        /* Only the tracer thread can detach: hand the signal over to it. */
        syscall(SYS_tgkill, getpid(), tracer_tid, sig);
        errno = saved_errno;
        return;
    }
    detach_all();
    struct sigaction old = {0};
    for (size_t i = 0; i < NFATAL; i++)
        if (fatal_signals[i] == sig)
            old = saved_actions[i];
    restore_handlers();
    paused_owner = NULL;
    if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) {
        old.sa_sigaction(sig, info, uctx);
    } else if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL &&
               old.sa_handler != SIG_IGN) {
        old.sa_handler(sig);
    } else {
        struct sigaction dfl = {0};
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        raise(sig); /* blocked until we return, then the default action ends the process */
    }
    errno = saved_errno;
}

static void install_handlers(void)
{
    struct sigaction sa = {0};
    sa.sa_sigaction = fatal_handler;
    sa.sa_flags = SA_SIGINFO;
    sigfillset(&sa.sa_mask);
    for (size_t i = 0; i < NFATAL; i++) {
        if (sigaction(fatal_signals[i], NULL, &saved_actions[i]) < 0)
            continue;
        if (!(saved_actions[i].sa_flags & SA_SIGINFO) && saved_actions[i].sa_handler == SIG_IGN)
            continue;
        if (sigaction(fatal_signals[i], &sa, NULL) == 0)
            installed[i] = true;
    }
}

/* True if the process is gone or on its way out: no /proc entry, a zombie, or PF_EXITING in
 * the flags of /proc/PID/stat (its memory is being torn down, so reads fail as if unmapped). */
static bool process_exiting(int pid)
{
    char path[64], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    if (rd_proc_slurp(path, &text, &len) < 0)
        return true;
    bool gone = false;
    const char *p = memrchr(text, ')', len); /* the command name may hold anything */
    if (p) {
        char state = 0;
        unsigned long flags = 0;
        /* ") S ppid pgrp session tty_nr tpgid flags" */
        if (sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) == 2)
            gone = state == 'Z' || state == 'X' || (flags & 0x4 /* PF_EXITING */);
    }
    free(text);
    return gone;
}

static int pid_read(struct rd_reader *rd, uint64_t addr, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        uint64_t at = addr + done;
        struct iovec local = {(char *)buf + done, len - done};
        struct iovec remote = {(void *)(uintptr_t)at, len - done};
        ssize_t n = process_vm_readv(rd->pid, &local, 1, &remote, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == ESRCH)
            return err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d has exited", rd->pid);
        if (n < 0 && errno == EPERM)
            return err_fail(SCRY_E_PERMISSION_DENIED, "not allowed to read the memory of pid %d",
                            rd->pid);
        if (n <= 0 && process_exiting(rd->pid))
            return err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d exited while it was being read",
                            rd->pid);
        if (n <= 0)
            return err_fail(SCRY_E_READ_FAILED,
                            "cannot read %zu bytes at 0x%llx in pid %d: 0x%llx is not mapped", len,
                            (unsigned long long)addr, rd->pid, (unsigned long long)at);
        done += (size_t)n;
    }
    return 0;
}

static int pid_threads(struct rd_reader *rd) { return rd_threads_proc(rd, rd->pid); }

static bool is_seized(int tid)
{
    for (int i = 0; i < seized_count; i++)
        if (seized_tids[i] == tid)
            return true;
    return false;
}

static void forget_seized(int tid)
{
    int n = seized_count;
    for (int i = 0; i < n; i++) {
        if (seized_tids[i] == tid) {
            seized_tids[i] = seized_tids[n - 1];
            seized_sigs[i] = seized_sigs[n - 1];
            seized_count = n - 1;
            return;
        }
    }
}

/* The state letter of one thread, 0 if it is gone, or '?' if its stat file could not be read
 * for another reason (no descriptor or memory left here): then the thread may well be running,
 * and taking it for gone would leave it running while the others are stopped. */
static char thread_state(int pid, int tid)
{
    char path[96], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
    int rc = rd_proc_slurp(path, &text, &len);
    if (rc == -ENOENT || rc == -ESRCH)
        return 0;
    if (rc < 0)
        return '?';
    char state = rd_stat_state(text, len);
    free(text);
    return state ? state : '?';
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Waits until tid reports its stop. Returns 1 when stopped, 0 when it went away meanwhile. */
static int wait_stopped(int pid, int tid, int *sig_out)
{
    int64_t deadline = now_ns() + STOP_TIMEOUT_NS;
    long sleep_ns = 20000;
    *sig_out = 0;
    for (;;) {
        int status = 0;
        pid_t r = waitpid(tid, &status, __WALL | WNOHANG);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return 0; /* ECHILD: no longer ours (it exited and was reaped) */
        if (r == tid) {
            if (WIFEXITED(status) || WIFSIGNALED(status))
                return 0;
            if (WIFSTOPPED(status)) {
                int event = status >> 16;
                if (event == 0 && WSTOPSIG(status) != SIGTRAP)
                    *sig_out = WSTOPSIG(status); /* signal-delivery-stop: give it back later */
                /* PTRACE_EVENT_STOP: our interrupt, or a group-stop (the target was stopped). */
                return 1;
            }
            continue;
        }
        char st = thread_state(pid, tid);
        if (st == 0 || st == 'Z' || st == 'X')
            return 0; /* an exiting thread never reports a stop */
        if (now_ns() > deadline)
            return err_fail(SCRY_E_READ_FAILED,
                            "thread %d of pid %d did not stop within 10 s (state '%c')", tid, pid,
                            st);
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 1000000)
            sleep_ns *= 2;
    }
}

/* Seizes and stops one thread. Returns 1 if it is now stopped, 0 if it went away, or an error. */
static int stop_thread(int pid, int tid)
{
    if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
        if (errno == ESRCH)
            return 0;
        if (errno == EPERM)
            return err_fail(SCRY_E_PERMISSION_DENIED, "not allowed to stop thread %d of pid %d",
                            tid, pid);
        return err_fail(SCRY_E_INTERNAL, "PTRACE_SEIZE of thread %d of pid %d: %s", tid, pid,
                        strerror(errno));
    }
    int n = seized_count;
    seized_tids[n] = tid;
    seized_sigs[n] = 0;
    seized_count = n + 1;
    if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
        forget_seized(tid);
        ptrace(PTRACE_DETACH, tid, NULL, NULL);
        return 0;
    }
    int sig = 0;
    int ret = wait_stopped(pid, tid, &sig);
    if (ret <= 0) {
        ptrace(PTRACE_DETACH, tid, NULL, NULL);
        forget_seized(tid);
        return ret;
    }
    for (int i = 0; i < seized_count; i++)
        if (seized_tids[i] == tid)
            seized_sigs[i] = sig;
    return 1;
}

static void pid_resume(struct rd_reader *rd)
{
    if (paused_owner != rd)
        return;
    detach_all();
    restore_handlers();
    paused_owner = NULL;
}

static int pid_pause(struct rd_reader *rd)
{
    if (paused_owner == rd)
        return 0;
    if (paused_owner)
        return err_fail(SCRY_E_INTERNAL, "cannot stop pid %d: pid %d is already stopped", rd->pid,
                        paused_owner->pid);
    paused_owner = rd;
    tracer_tid = current_tid();
    seized_count = 0;
    install_handlers();

    int ret = 0;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", rd->pid);
    /* New threads may appear while we stop the others: scan until a pass finds none. */
    for (int pass = 0;; pass++) {
        DIR *dir = opendir(path);
        if (!dir) {
            ret = err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d has exited", rd->pid);
            goto out;
        }
        bool found_new = false;
        struct dirent *de;
        while ((de = readdir(dir)) != NULL) {
            char *endp;
            long tid = strtol(de->d_name, &endp, 10);
            if (*endp || tid <= 0 || tid > INT_MAX || is_seized((int)tid))
                continue;
            char st = thread_state(rd->pid, (int)tid);
            if (st == 0 || st == 'Z' || st == 'X')
                continue; /* exiting: it would never report a stop */
            if (seized_count >= MAX_SEIZED) {
                ret = err_fail(SCRY_E_INTERNAL, "pid %d has more than %d threads", rd->pid,
                               MAX_SEIZED);
                break;
            }
            found_new = true;
            ret = stop_thread(rd->pid, (int)tid);
            if (ret < 0)
                break;
            ret = 0;
        }
        closedir(dir);
        if (ret < 0)
            goto out;
        if (!found_new)
            break;
        if (pass > 1000) {
            ret = err_fail(SCRY_E_READ_FAILED, "pid %d keeps creating threads; cannot stop it",
                           rd->pid);
            goto out;
        }
    }
    if (seized_count == 0)
        ret = err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d has exited", rd->pid);
out:
    if (ret < 0)
        pid_resume(rd);
    return ret;
}

static void pid_close(struct rd_reader *rd) { pid_resume(rd); }

#define PAGEMAP_PRESENT (1ULL << 63)
#define PAGEMAP_SWAPPED (1ULL << 62)

int rd_pages_touched(struct rd_reader *rd, uint64_t start, uint64_t end, uint64_t *touched)
{
    uint64_t npages = (end - start) >> 12;
    memset(touched, 0, (size_t)((npages + 63) / 64) * sizeof(uint64_t));
    if (rd->kind != RD_PID || (start & 4095) || (end & 4095) || end < start)
        return 1;
    char path[64];
    int fd;
    uint64_t size;
    snprintf(path, sizeof(path), "/proc/%d/pagemap", rd->pid);
    if (infile_open(path, "page map", 0, &fd, &size) != 0) {
        err_clear();
        return 1;
    }
    uint64_t entries[512];
    int ret = 0;
    for (uint64_t done = 0; done < npages && !ret;) {
        size_t n = npages - done < 512 ? (size_t)(npages - done) : 512;
        off_t at = (off_t)(((start >> 12) + done) * sizeof(uint64_t));
        if (pread(fd, entries, n * sizeof(uint64_t), at) != (ssize_t)(n * sizeof(uint64_t))) {
            ret = 1;
            break;
        }
        for (size_t i = 0; i < n; i++, done++)
            if (entries[i] & (PAGEMAP_PRESENT | PAGEMAP_SWAPPED))
                touched[done >> 6] |= 1ULL << (done & 63);
    }
    close(fd);
    return ret;
}

static const struct rd_ops pid_ops = {
    .read = pid_read,
    .pause = pid_pause,
    .resume = pid_resume,
    .threads = pid_threads,
    .close = pid_close,
};

/* Reads Tgid and State from /proc/PID/status. */
static int read_status(int pid, int *tgid, char *state)
{
    char path[64], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    int ret = rd_proc_slurp(path, &text, &len);
    if (ret == -ENOENT || ret == -ESRCH)
        return err_fail(SCRY_E_NO_SUCH_PROCESS, "no process with pid %d", pid);
    if (ret < 0)
        return err_fail(SCRY_E_IO, "cannot read %s: %s", path, strerror(-ret));
    *tgid = pid;
    *state = '?';
    const char *p = strstr(text, "\nTgid:");
    if (p)
        *tgid = atoi(p + 6);
    p = strstr(text, "\nState:");
    if (p) {
        p += 7;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p)
            *state = *p;
    }
    free(text);
    return 0;
}

/* A real read of a readable mapping: the only reliable permission test (capabilities, Yama
 * ptrace_scope, LSMs and user namespaces all take part). */
static int probe_read(struct rd_reader *rd)
{
    for (size_t i = 0; i < rd->nmaps; i++) {
        const struct rd_mapping *m = &rd->maps[i];
        if (!(m->prot & RD_PROT_R) || m->end <= m->start || strcmp(m->path, "[vvar]") == 0)
            continue;
        uint8_t byte;
        struct iovec local = {&byte, 1};
        struct iovec remote = {(void *)(uintptr_t)m->start, 1};
        if (process_vm_readv(rd->pid, &local, 1, &remote, 1, 0) == 1)
            return 0;
        if (errno == EPERM || errno == EACCES)
            return err_fail(SCRY_E_PERMISSION_DENIED, "not allowed to read the memory of pid %d",
                            rd->pid);
        if (errno == ESRCH)
            return err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d has exited", rd->pid);
    }
    return 0;
}

bool rd_pid_exited(int pid, int wait_ms)
{
    for (int waited = 0;; waited += 20) {
        if (process_exiting(pid))
            return true;
        if (waited >= wait_ms)
            return false;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int rd_open_pid(int pid, struct rd_reader **out)
{
    *out = NULL;
    if (pid <= 0)
        return err_fail(SCRY_E_NO_SUCH_PROCESS, "no process with pid %d", pid);
    int tgid = pid;
    char state = 0;
    int ret = read_status(pid, &tgid, &state);
    if (ret < 0)
        return ret;
    if (state == 'Z' || state == 'X')
        return err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d has exited (it is a zombie)", pid);
    if (process_exiting(pid))
        return err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d is exiting", pid);
    if (tgid > 0 && tgid != pid) {
        log_info("pid %d is a thread of process %d: reading that process", pid, tgid);
        pid = tgid;
    }
    struct rd_reader *rd = rd_alloc(RD_PID, &pid_ops);
    if (!rd)
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate a reader");
    rd->pid = pid;
    ret = rd_maps_read(pid, &rd->arena, &rd->maps, &rd->nmaps);
    if (ret < 0)
        goto out;
    if (rd->nmaps == 0) {
        ret = err_fail(SCRY_E_NO_SUCH_PROCESS,
                       "process %d has no memory mappings (a kernel thread, or exiting)", pid);
        goto out;
    }
    ret = probe_read(rd);
    if (ret < 0)
        goto out;
    char link[64];
    snprintf(link, sizeof(link), "/proc/%d/exe", pid);
    rd_set_exe_from_link(rd, link);
    *out = rd;
    rd = NULL;
out:
    rd_close(rd);
    return ret;
}
