/* Profiling on and off while the program runs (issue 13): `scry run --off` starts with it off
 * (SCRY_OFF=1); the program switches it with scry.start()/scry.stop() (the Python package calls
 * scry_agent_profiling through ctypes); another process switches the whole run with
 * `scry control PID on|off`, which writes "on" or "off" into the run's control file (the part
 * directory's `control`, replaced atomically), looked at by every process's collector at each
 * tick. What off means for the numbers is in collector_settle.c (ag_col_set_profiling_locked). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/memory.h"
#include "platform/os_process.h"

static struct {
    bool seen;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} control_seen;

int ag_control_poll(void)
{
    char path[sizeof(ag_cfg.part_dir) + 16];
    if (ag_low_fds_closed || !ag_cfg.part_dir[0] ||
        (size_t)snprintf(path, sizeof(path), "%s/control", ag_cfg.part_dir) >= sizeof(path))
        return -1;
    int saved = errno;
    struct stat st;
    int want = -1;
    if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        goto out;
    if (control_seen.seen && st.st_dev == control_seen.dev && st.st_ino == control_seen.ino &&
        st.st_size == control_seen.size && st.st_mtim.tv_sec == control_seen.mtime.tv_sec &&
        st.st_mtim.tv_nsec == control_seen.mtime.tv_nsec)
        goto out;
    control_seen.seen = true;
    control_seen.dev = st.st_dev;
    control_seen.ino = st.st_ino;
    control_seen.size = st.st_size;
    control_seen.mtime = st.st_mtim;
    char buf[16] = {0};
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        goto out;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        goto out;
    buf[strcspn(buf, "\n")] = 0;
    if (strcmp(buf, "on") == 0)
        want = 1;
    else if (strcmp(buf, "off") == 0)
        want = 0;
out:
    errno = saved;
    return want;
}

/* Reads a small file of the part directory into buf (NUL-terminated, first line only); false
 * when it is not a regular file there. */
static bool read_part_file(const char *name, char *buf, size_t size)
{
    char path[sizeof(ag_cfg.part_dir) + 64];
    if (ag_low_fds_closed || !ag_cfg.part_dir[0] ||
        (size_t)snprintf(path, sizeof(path), "%s/%s", ag_cfg.part_dir, name) >= sizeof(path))
        return false;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct stat st;
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, size - 1) : -1;
    close(fd);
    if (n < 0)
        return false;
    buf[n] = 0;
    buf[strcspn(buf, "\n")] = 0;
    return true;
}

uint64_t ag_alloc_request_poll(void)
{
    static uint64_t answered;
    char name[64], buf[32];
    int saved = errno;
    snprintf(name, sizeof(name), "allocreq-%d", ag_pid);
    uint64_t req = 0;
    if (read_part_file(name, buf, sizeof(buf))) {
        char *end;
        unsigned long long v = strtoull(buf, &end, 10);
        if (end != buf && !*end && v != answered)
            req = answered = v;
    }
    errno = saved;
    return req;
}

/* Creates the marker name in the part directory and sleeps, step_ms at a time, while it is there
 * and keep_waiting() holds, limit_ms at most: the command removes the marker when it has done
 * what this process waits for. False when the marker could not be made (nothing waited). */
static bool wait_on_marker(const char *name, int limit_ms, int step_ms, bool (*keep_waiting)(void))
{
    if (ag_part_mark(name, true) != 0)
        return false;
    for (int ms = 0; ms < limit_ms && ag_part_mark_present(name) && keep_waiting(); ms += step_ms) {
        struct timespec t = {0, (long)step_ms * 1000000L};
        nanosleep(&t, NULL);
    }
    return true;
}

#define HEAP_AT_EXIT_WAIT_MS (600 * 1000) /* a dump of a very large heap, at most */

/* A scry run that is gone (this process's parent changed) is not waited for. */
static bool heap_dumper_waits(void)
{
    return getppid() == ag_cfg.heap_at_exit_pid;
}

void ag_heap_at_exit_wait(void)
{
    /* Once: scry run takes one snapshot and then looks for the marker no more, so a second
     * marker would be waited on for HEAP_AT_EXIT_WAIT_MS. */
    static atomic_bool waited;
    if (!ag_cfg.heap_at_exit_pid || getppid() != ag_cfg.heap_at_exit_pid || ag_low_fds_closed ||
        atomic_exchange(&waited, true))
        return;
    char name[64];
    snprintf(name, sizeof(name), "heapexit-%d", ag_pid);
    int saved = errno;
    /* scry run's dump is its child, not this process's ancestor: Yama's ptrace_scope 1 lets it
     * read this process only when named here. */
    pf_allow_tracer(ag_cfg.heap_at_exit_pid);
    /* scry run removes the marker once the snapshot is taken. */
    if (wait_on_marker(name, HEAP_AT_EXIT_WAIT_MS, 5, heap_dumper_waits))
        ag_part_unmark(name);
    errno = saved;
}

#define COLLECT_AT_EXIT_WAIT_MS 10000 /* a profile's merge and write, at most */

/* A scry collect that is gone (killed) is not waited for. */
static bool collector_alive(void)
{
    return kill(ag_cfg.collect_pid, 0) == 0 || errno == EPERM;
}

void ag_collect_at_exit_wait(void)
{
    static atomic_bool waited; /* once: the destructor after an exit path that waited */
    if (!ag_cfg.collect_pid || ag_pid != ag_cfg.collect_for || atomic_exchange(&waited, true))
        return;
    char name[64];
    snprintf(name, sizeof(name), "exiting-%d", ag_pid);
    int saved = errno;
    /* scry collect removes the whole part directory once the profile is written. */
    wait_on_marker(name, COLLECT_AT_EXIT_WAIT_MS, 2, collector_alive);
    errno = saved;
}

void ag_control_init(void)
{
    const char *off = getenv("SCRY_OFF");
    if (off && strcmp(off, "1") == 0)
        atomic_store(&ag_enabled, false);
    /* A process started after `scry control PID on|off` follows what was asked last. */
    int want = ag_control_poll();
    if (want >= 0)
        atomic_store(&ag_enabled, want == 1);
}

/* The Python package's way in (scry.start(), scry.stop(), scry.profiling()): want 1 turns
 * profiling on, 0 off, -1 only asks. Returns whether it was on before (1 or 0), or -1 when this
 * process is not being profiled (no agent at work here, or its profile is already written). */
AG_EXPORT int scry_agent_profiling(int want)
{
    if (!ag_agent_active() || !atomic_load(&ag_running))
        return -1;
    int was = atomic_load(&ag_enabled) ? 1 : 0;
    if (want == 0 || want == 1)
        ag_collector_set_profiling(want == 1);
    return was;
}

/* ---- @profile: the functions the program decorated (reported alone when there are any) ---- */

#define AG_MAX_DECORATED 512

static struct ag_decorated decorated[AG_MAX_DECORATED];
/* Entries below the count are complete and never change, so the collector reads them without
 * the lock (a child forked while another thread registered one would wait forever on it). */
static _Atomic size_t ndecorated;
static pthread_mutex_t decorated_lock = PTHREAD_MUTEX_INITIALIZER;

AG_EXPORT int scry_agent_profile_function(const char *file, const char *qualname,
                                          int firstlineno)
{
    if (!ag_agent_active() || !file || !qualname || firstlineno < 0 ||
        strlen(file) >= sizeof(decorated[0].file) || strlen(qualname) >= sizeof(decorated[0].name))
        return -1;
    int rc = 0;
    pthread_mutex_lock(&decorated_lock);
    bool have = false;
    for (size_t i = 0; i < ndecorated && !have; i++)
        have = decorated[i].first == firstlineno && strcmp(decorated[i].file, file) == 0 &&
               strcmp(decorated[i].name, qualname) == 0;
    if (!have && ndecorated < AG_MAX_DECORATED) {
        struct ag_decorated *d = &decorated[ndecorated];
        snprintf(d->file, sizeof(d->file), "%s", file);
        snprintf(d->name, sizeof(d->name), "%s", qualname);
        d->first = firstlineno;
        atomic_fetch_add_explicit(&ndecorated, 1, memory_order_release);
    } else if (!have) {
        rc = -1;
    }
    pthread_mutex_unlock(&decorated_lock);
    return rc;
}

size_t ag_decorated_copy(struct ag_decorated *out, size_t max)
{
    /* The part may be written from a signal handler (SIGTERM) that interrupted a registration:
     * then the table is read without the lock (entries are complete before they are counted). */
    bool locked = pthread_mutex_trylock(&decorated_lock) == 0;
    size_t have = atomic_load_explicit(&ndecorated, memory_order_acquire);
    size_t n = have < max ? have : max;
    memcpy(out, decorated, n * sizeof(*out));
    if (locked)
        pthread_mutex_unlock(&decorated_lock);
    return n;
}

size_t ag_decorated_count(void)
{
    return atomic_load_explicit(&ndecorated, memory_order_acquire);
}

bool ag_decorated_in(size_t from, size_t to, const char *file, const char *qualname,
                     int firstlineno)
{
    size_t n = ag_decorated_count();
    for (size_t i = from; i < to && i < n; i++)
        if (decorated[i].first == firstlineno && strcmp(decorated[i].name, qualname) == 0 &&
            strcmp(decorated[i].file, file) == 0)
            return true;
    return false;
}
