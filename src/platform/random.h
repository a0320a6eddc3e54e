/* Random bytes from the operating system (file names no one can guess, the view server's
 * token). linux/random_linux.h: getrandom (a system call where glibc is older than 2.25). */
#ifndef SCRY_PLATFORM_RANDOM_H
#define SCRY_PLATFORM_RANDOM_H

#include <stddef.h>
#include <sys/types.h>

#if defined(__linux__)
#include "platform/linux/random_linux.h"
#else
#error "scry: no random implementation for this system (src/platform/)"
#endif

/* Each system's file defines:
 *   ssize_t pf_random(void *buf, size_t n, int nonblocking)
 *        up to n random bytes: the count, or -1 with errno; nonblocking: fail rather than wait
 *        for the system's pool (early in boot) */

#endif
