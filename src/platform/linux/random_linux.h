/* Linux's side of platform/random.h. */
#ifndef SCRY_PLATFORM_LINUX_RANDOM_LINUX_H
#define SCRY_PLATFORM_LINUX_RANDOM_LINUX_H

#include "platform/linux/glibc_compat.h"

static inline ssize_t pf_random(void *buf, size_t n, int nonblocking)
{
    return getrandom(buf, n, nonblocking ? GRND_NONBLOCK : 0);
}

#endif
