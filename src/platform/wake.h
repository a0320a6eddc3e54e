/* A wake-up object: one thread sleeps on it with a timeout, any thread (or a signal handler)
 * wakes it. The agent's collector and GPU sampler sleep between ticks on one.
 * linux/wake_linux.h: an eventfd. */
#ifndef SCRY_PLATFORM_WAKE_H
#define SCRY_PLATFORM_WAKE_H

#include <stdint.h>

#if defined(__linux__)
#include "platform/linux/wake_linux.h"
#else
#error "scry: no wake implementation for this system (src/platform/)"
#endif

/* Each system's file defines:
 *   int  pf_wake_open(void)          a descriptor (close-on-exec), or -1 with errno
 *   void pf_wake_post(int fd)        wakes the sleeper, now or at its next wait; async-signal-
 *                                    safe; a bad descriptor is ignored
 *   bool pf_wake_wait(int fd, uint64_t ns)   sleeps up to ns; true when woken (the wake is
 *                                    consumed), false on time-out or interruption */

#endif
