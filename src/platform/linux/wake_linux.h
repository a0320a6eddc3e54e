/* Linux's side of platform/wake.h: an eventfd, waited on with ppoll. */
#ifndef SCRY_PLATFORM_LINUX_WAKE_LINUX_H
#define SCRY_PLATFORM_LINUX_WAKE_LINUX_H

#include <poll.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static inline int pf_wake_open(void)
{
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

static inline void pf_wake_post(int fd)
{
    uint64_t one = 1;
    ssize_t r = fd >= 0 ? write(fd, &one, sizeof(one)) : -1;
    (void)r;
}

static inline bool pf_wake_wait(int fd, uint64_t ns)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
    if (ppoll(&pfd, 1, &ts, NULL) <= 0)
        return false;
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof(v));
    (void)r;
    return true;
}

#endif
