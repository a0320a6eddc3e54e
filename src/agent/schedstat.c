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
#include "common/grow.h"
#include "common/hashmap.h"
#include "platform/proc_info.h"

/* Per thread, by its id (a thread may change slots, and a slot threads: keyed by the slot, a
 * thread seen again in a new slot would add its whole life a second time): its values when it
 * was last read, in recs[index], the index found through by_tid (key: tid + 1). */
struct sched_rec {
    uint64_t delay_ns, cpu_ns;
};
static struct sched_rec *recs;
static size_t nrecs, cap_recs;
static struct hashmap by_tid = HASHMAP_INIT;
static uint64_t total_delay_ns, total_cpu_ns;
static bool available; /* some thread's schedstat was read */

/* Reads the thread's (cpu ns, run delay ns); false when the kernel keeps no schedstat. */
static bool read_schedstat(int tid, uint64_t *cpu, uint64_t *delay)
{
    return pf_thread_sched(0, tid, cpu, delay);
}

void ag_sched_read(int tid)
{
    uint64_t cpu, delay, idx;
    if (ag_low_fds_closed || tid <= 0 || !read_schedstat(tid, &cpu, &delay))
        return;
    available = true;
    if (!hm_get(&by_tid, (uint64_t)tid + 1, &idx)) {
        if (grow_array(&recs, &cap_recs, nrecs + 1, sizeof(*recs)) != 0)
            return;
        if (hm_put(&by_tid, (uint64_t)tid + 1, nrecs) != 0)
            return;
        idx = nrecs++;
        recs[idx] = (struct sched_rec){0, 0}; /* read for the first time: all since it started */
    }
    struct sched_rec *r = &recs[idx];
    if (cpu < r->cpu_ns || delay < r->delay_ns)
        *r = (struct sched_rec){0, 0}; /* the id went to a new thread: it starts from nothing */
    if (cpu > r->cpu_ns)
        total_cpu_ns += cpu - r->cpu_ns;
    if (delay > r->delay_ns)
        total_delay_ns += delay - r->delay_ns;
    r->cpu_ns = cpu;
    r->delay_ns = delay;
}

bool ag_sched_totals(uint64_t *delay_ns, uint64_t *cpu_ns)
{
    *delay_ns = total_delay_ns;
    *cpu_ns = total_cpu_ns;
    return available;
}

void ag_sched_reset(void)
{
    hm_clear(&by_tid);
    nrecs = 0;
    total_delay_ns = total_cpu_ns = 0;
    available = false;
}
