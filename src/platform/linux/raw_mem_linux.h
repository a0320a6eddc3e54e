/* Linux's side of platform/raw_mem.h. */
#ifndef SCRY_PLATFORM_LINUX_RAW_MEM_LINUX_H
#define SCRY_PLATFORM_LINUX_RAW_MEM_LINUX_H

#include <sys/syscall.h>
#include <unistd.h>

static inline void *pf_raw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static inline int pf_raw_munmap(void *addr, size_t len)
{
    return (int)syscall(SYS_munmap, addr, len);
}

static inline void *pf_raw_mremap(void *old, size_t oldlen, size_t newlen, int flags,
                                  void *newaddr)
{
    return (void *)syscall(SYS_mremap, old, oldlen, newlen, flags, newaddr);
}

#endif
