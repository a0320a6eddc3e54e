/* What glibc's headers declare only from a later version than 2.17, for the manylinux2014 build
 * (scripts/build-manylinux.sh compiles with zig cc against glibc 2.17's headers and symbols); with
 * a newer glibc this is the system's own declaration. */
#ifndef SCRY_COMMON_GLIBC_COMPAT_H
#define SCRY_COMMON_GLIBC_COMPAT_H

#include <features.h>
#include <stddef.h>
#include <sys/types.h>

#if defined(__GLIBC__) && !__GLIBC_PREREQ(2, 25)
/* getrandom: the system call itself (Linux 3.17+), which glibc 2.25 wrapped; on an older kernel
 * (CentOS 7's 3.10) /dev/urandom. */
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef GRND_NONBLOCK
#define GRND_NONBLOCK 0x01
#endif
static inline ssize_t scry_getrandom(void *buf, size_t n, unsigned int flags)
{
    ssize_t got = (ssize_t)syscall(SYS_getrandom, buf, n, flags);
    if (got >= 0 || errno != ENOSYS)
        return got;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    got = read(fd, buf, n);
    int saved = errno;
    close(fd);
    errno = saved;
    return got;
}
#define getrandom scry_getrandom
#else
#include <sys/random.h>
#endif

#endif
