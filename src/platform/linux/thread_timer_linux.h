/* Linux's side of platform/thread_timer.h. */
#ifndef SCRY_PLATFORM_LINUX_THREAD_TIMER_LINUX_H
#define SCRY_PLATFORM_LINUX_THREAD_TIMER_LINUX_H

#include <signal.h>
#include <string.h>
#include <time.h>

static inline clockid_t pf_thread_cpu_clock(int tid)
{
    /* The kernel's encoding of a per-thread CPU clock (MAKE_THREAD_CPUCLOCK(tid, SCHED)). */
    return (clockid_t)((~(unsigned)tid << 3) | 6);
}

static inline int pf_thread_timer_create(clockid_t clock, int tid, int signo, void *value,
                                         timer_t *out)
{
    struct sigevent sev;
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = signo;
    sev._sigev_un._tid = tid;
    sev.sigev_value.sival_ptr = value;
    return timer_create(clock, &sev, out);
}

static inline void pf_timer_arm_once(timer_t timer, uint64_t ns)
{
    struct itimerspec its = {{0, 0}, {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)}};
    timer_settime(timer, 0, &its, NULL);
}

static inline void pf_timer_delete(timer_t timer)
{
    timer_delete(timer);
}

#endif
