/* platform/proc_info.h on Linux: small files under /proc/PID, each read whole in one go. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "platform/outfile.h"
#include "platform/proc_info.h"
#include "reader/reader_impl.h"

/* The whole of a small /proc file, NUL-terminated; -1 if unreadable. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
    int fd = fd_above_stdio(open(path, O_RDONLY | O_CLOEXEC));
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < size) {
        ssize_t r = read(fd, buf + n, size - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    return (ssize_t)n;
}

/* /proc/PID/<what>, or /proc/self/<what> for pid 0 ("" for what: the process's directory). */
static void proc_path(int pid, const char *what, char *path, size_t size)
{
    if (pid)
        snprintf(path, size, "/proc/%d%s%s", pid, *what ? "/" : "", what);
    else
        snprintf(path, size, "/proc/self%s%s", *what ? "/" : "", what);
}

static ssize_t read_process(int pid, const char *what, char *buf, size_t size)
{
    char path[96];
    proc_path(pid, what, path, sizeof(path));
    return read_small(path, buf, size);
}

static ssize_t read_task(int pid, int64_t tid, const char *what, char *buf, size_t size)
{
    char sub[64];
    snprintf(sub, sizeof(sub), "task/%lld/%s", (long long)tid, what);
    return read_process(pid, sub, buf, size);
}

void pf_thread_name(int pid, int64_t tid, char *out, size_t size)
{
    if (size == 0)
        return;
    out[0] = 0;
    if (read_task(pid, tid, "comm", out, size) > 0)
        out[strcspn(out, "\n")] = 0;
}

char pf_thread_state(int pid, int64_t tid)
{
    char buf[512];
    if (read_task(pid, tid, "stat", buf, sizeof(buf)) <= 0)
        return 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

bool pf_thread_sched(int pid, int64_t tid, uint64_t *cpu_ns, uint64_t *wait_ns)
{
    char buf[128];
    unsigned long long c, d;
    if (read_task(pid, tid, "schedstat", buf, sizeof(buf)) <= 0 ||
        sscanf(buf, "%llu %llu", &c, &d) != 2)
        return false;
    *cpu_ns = c;
    *wait_ns = d;
    return true;
}

/* /proc/PID/task/TID/syscall: "running" on a CPU, "-1 ..." preempted in the program, else the
 * number of the system call it is in. */
enum pf_thread_call pf_thread_call(int pid, int64_t tid, long *nr)
{
    char buf[64];
    if (read_task(pid, tid, "syscall", buf, sizeof(buf)) <= 0)
        return PF_CALL_UNKNOWN;
    if (strncmp(buf, "running", 7) == 0)
        return PF_CALL_RUNNING;
    if (buf[0] < '0' || buf[0] > '9')
        return PF_CALL_UNKNOWN;
    *nr = strtol(buf, NULL, 10);
    return PF_CALL_SYSCALL;
}

bool pf_syscall_is_lock_wait(long nr)
{
    return nr == SYS_futex;
}

ssize_t pf_process_cmdline(int pid, char *buf, size_t size)
{
    return read_process(pid, "cmdline", buf, size);
}

void pf_process_cwd(int pid, char *buf, size_t size)
{
    char link[64];
    proc_path(pid, "cwd", link, sizeof(link));
    ssize_t n = size ? readlink(link, buf, size - 1) : -1;
    if (size)
        buf[n > 0 ? n : 0] = 0;
}

/* A "kB" field of /proc/PID/status (pid 0: this process) in bytes, -1 if unknown. */
static double status_bytes(int pid, const char *field)
{
    char buf[4096], key[32];
    if (read_process(pid, "status", buf, sizeof(buf)) <= 0)
        return -1;
    snprintf(key, sizeof(key), "\n%s:", field);
    const char *p = strstr(buf, key);
    unsigned long long kb;
    if (!p || sscanf(p + strlen(key), "%llu", &kb) != 1)
        return -1;
    return (double)kb * 1024;
}

double pf_process_rss(int pid)
{
    return status_bytes(pid, "VmRSS");
}

double pf_process_peak_rss(int pid)
{
    return status_bytes(pid, "VmHWM");
}

uint64_t pf_memory_available(void)
{
    char buf[8192];
    if (read_small("/proc/meminfo", buf, sizeof(buf)) <= 0)
        return 0;
    const char *p = strstr(buf, "MemAvailable:");
    unsigned long long kb;
    return p && sscanf(p, "MemAvailable: %llu kB", &kb) == 1 ? (uint64_t)kb * 1024 : 0;
}

int pf_process_list(int *pids, size_t max, size_t *n)
{
    *n = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    struct dirent *de;
    while (*n < max && (de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (!*end && pid > 0 && pid <= INT_MAX)
            pids[(*n)++] = (int)pid;
    }
    closedir(d);
    return 0;
}

long pf_process_owner(int pid)
{
    char path[64];
    struct stat st;
    proc_path(pid, "", path, sizeof(path));
    return stat(path, &st) == 0 ? (long)st.st_uid : -1;
}

int pf_process_parent(int pid)
{
    char path[64], buf[1024];
    proc_path(pid, "stat", path, sizeof(path));
    if (read_small(path, buf, sizeof(buf)) <= 0)
        return -1;
    const char *s = strrchr(buf, ')'); /* field 4, after the command in parentheses */
    int ppid;
    return s && sscanf(s + 1, " %*c %d", &ppid) == 1 ? ppid : -1;
}

bool pf_process_alive(int pid)
{
    char path[64], buf[512];
    proc_path(pid, "stat", path, sizeof(path));
    if (read_small(path, buf, sizeof(buf)) <= 0)
        return false;
    const char *s = strrchr(buf, ')');
    return s && s[1] == ' ' && s[2] != 'Z' && s[2] != 'X';
}

bool pf_process_ending(int pid)
{
    char path[64], buf[1024];
    proc_path(pid, "stat", path, sizeof(path));
    for (int tries = 0; tries < 50; tries++) {
        if (read_small(path, buf, sizeof(buf)) <= 0)
            return true;
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

void pf_process_children(int pid, void (*each)(int child, void *ctx), void *ctx)
{
    char path[64];
    proc_path(pid, "task", path, sizeof(path));
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char cpath[384], buf[4096];
        snprintf(cpath, sizeof(cpath), "%s/%s/children", path, e->d_name);
        if (read_small(cpath, buf, sizeof(buf)) <= 0)
            continue;
        for (char *p = buf, *end; *p; p = end) {
            long child = strtol(p, &end, 10);
            if (end == p)
                break;
            if (child > 0)
                each((int)child, ctx);
        }
    }
    closedir(d);
}

uint64_t pf_process_start_time(int pid)
{
    char buf[4096];
    if (read_process(pid, "stat", buf, sizeof(buf)) <= 0)
        return 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    unsigned long long start = 0;
    /* fields 3..22 after the name: state, then 18 numbers, then starttime */
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                            "%*d %*d %*d %llu",
                     &start) != 1)
        return 0;
    return start;
}

int pf_process_environ(int pid, char **out, size_t *len)
{
    char path[64];
    proc_path(pid, "environ", path, sizeof(path));
    int err = rd_proc_slurp(path, out, len);
    if (err && access(path, F_OK) != 0 && errno == ENOENT)
        return -ENOENT;
    return err;
}

void pf_process_file_path(int pid, const char *path, char *out, size_t size)
{
    char root[64];
    proc_path(pid, "root", root, sizeof(root));
    if (path[0] == '/')
        snprintf(out, size, "%s%s", root, path);
    else
        snprintf(out, size, "%s", path);
}
