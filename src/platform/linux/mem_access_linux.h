/* Linux's side of platform/mem_access.h: process_vm_readv and process_vm_writev, as system
 * calls (the agent must not depend on which C library wraps them). */
#ifndef SCRY_PLATFORM_LINUX_MEM_ACCESS_LINUX_H
#define SCRY_PLATFORM_LINUX_MEM_ACCESS_LINUX_H

#include <stddef.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

_Static_assert(sizeof(struct pf_iov) == sizeof(struct iovec) &&
                   offsetof(struct pf_iov, base) == offsetof(struct iovec, iov_base) &&
                   offsetof(struct pf_iov, len) == offsetof(struct iovec, iov_len),
               "struct pf_iov must be laid out as struct iovec");

static inline long pf_mem_read(int pid, uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return syscall(SYS_process_vm_readv, pid, &local, 1UL, &remote, 1UL, 0UL);
}

static inline long pf_mem_readv(int pid, const struct pf_iov *local, const struct pf_iov *remote,
                                size_t n)
{
    return syscall(SYS_process_vm_readv, pid, (const struct iovec *)local, (unsigned long)n,
                   (const struct iovec *)remote, (unsigned long)n, 0UL);
}

static inline long pf_mem_write(int pid, uint64_t addr, const void *buf, size_t len)
{
    struct iovec local = {(void *)buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return syscall(SYS_process_vm_writev, pid, &local, 1UL, &remote, 1UL, 0UL);
}

#endif
