/* How long the program's threads waited for a CPU while they could run (run-queue delay), next
 * to how long they ran: the second and first fields of /proc/self/task/TID/schedstat. A thread
 * that waits for a CPU is off it, so the off-CPU samples count that wait as system time; on an
 * oversubscribed machine a pure-Python line then shows "system" time that is no I/O at all. The
 * part reports both sums so that the profile can say so (docs/agent-protocol.md).
 * Collector thread only: reading a /proc file is no business of a hook or a signal handler.
 * Not read at all when the program started with fd 0, 1 or 2 closed (ag_low_fds_closed): the
 * file would be opened at that number, where the interpreter may be checking for its stream. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/agent.h"

/* Per thread slot (struct ag_thread's index): the thread it was read for and its values then. */
static struct {
    int tid;
    uint64_t delay_ns, cpu_ns;
} seen[AG_MAX_THREADS];

static uint64_t total_delay_ns, total_cpu_ns;
static bool available; /* some thread's schedstat was read */

/* Reads the thread's (cpu ns, run delay ns); false when the kernel keeps no schedstat. */
static bool read_schedstat(int tid, uint64_t *cpu, uint64_t *delay)
{
    char path[64], buf[128];
    snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    unsigned long long c, d;
    if (sscanf(buf, "%llu %llu", &c, &d) != 2)
        return false;
    *cpu = c;
    *delay = d;
    return true;
}

void ag_sched_read(size_t slot, int tid)
{
    uint64_t cpu, delay;
    if (ag_low_fds_closed || slot >= AG_MAX_THREADS || !read_schedstat(tid, &cpu, &delay))
        return;
    available = true;
    /* A thread read for the first time adds everything since it started. */
    uint64_t c0 = 0, d0 = 0;
    if (seen[slot].tid == tid) {
        c0 = seen[slot].cpu_ns;
        d0 = seen[slot].delay_ns;
    }
    if (cpu > c0)
        total_cpu_ns += cpu - c0;
    if (delay > d0)
        total_delay_ns += delay - d0;
    seen[slot].tid = tid;
    seen[slot].cpu_ns = cpu;
    seen[slot].delay_ns = delay;
}

bool ag_sched_totals(uint64_t *delay_ns, uint64_t *cpu_ns)
{
    *delay_ns = total_delay_ns;
    *cpu_ns = total_cpu_ns;
    return available;
}

void ag_sched_reset(void)
{
    for (size_t i = 0; i < AG_MAX_THREADS; i++)
        seen[i].tid = 0;
    total_delay_ns = total_cpu_ns = 0;
    available = false;
}
