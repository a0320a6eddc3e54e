/* The agent's sampling clock: one timer per thread on that thread's own CPU clock, whose expiry
 * sends a signal to that thread alone, with a value that says which thread record it is for.
 * The signal handler (agent/sampler.c) takes the sample and arms the timer again.
 * linux/thread_timer_linux.h: POSIX timers with SIGEV_THREAD_ID on the kernel's per-thread CPU
 * clock, inline (armed at every sample). */
#ifndef SCRY_PLATFORM_THREAD_TIMER_H
#define SCRY_PLATFORM_THREAD_TIMER_H

#include <stdint.h>
#include <time.h>

#if defined(__linux__)
#include "platform/linux/thread_timer_linux.h"
#else
#error "scry: no thread_timer implementation for this system (src/platform/)"
#endif

/* Each system's file defines:
 *   clockid_t pf_thread_cpu_clock(int tid)   the CPU clock of thread tid of this process, which
 *                            any thread may read (clock_gettime) or put a timer on
 *   int  pf_thread_timer_create(clockid_t clock, int tid, int signo, void *value, timer_t *out)
 *                            a disarmed timer on clock whose expiry sends signo to thread tid with
 *                            value in si_value.sival_ptr; 0, or -1 with errno
 *   void pf_timer_arm_once(timer_t timer, uint64_t ns)   fires once, after ns of its clock
 *   void pf_timer_delete(timer_t timer) */

#endif
