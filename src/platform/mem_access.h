/* Reading and writing the memory of a live process (this one included) without ever faulting:
 * an address that is not mapped makes the call fail or stop short, never crashes the reader.
 * Remote addresses are uint64_t. Used by the agent (its own memory, on its hot paths: inline),
 * the live-process reader, and injection. linux/mem_access_linux.h: process_vm_readv/writev. */
#ifndef SCRY_PLATFORM_MEM_ACCESS_H
#define SCRY_PLATFORM_MEM_ACCESS_H

#include <stddef.h>
#include <stdint.h>

/* One piece of a scattered read: where in this process, and how long. */
struct pf_iov {
    void *base;
    size_t len;
};

#if defined(__linux__)
#include "platform/linux/mem_access_linux.h"
#else
#error "scry: no mem_access implementation for this system (src/platform/)"
#endif

/* Each system's file defines:
 *   long pf_mem_read(int pid, uint64_t addr, void *buf, size_t len)
 *        bytes read (len when whole), or -1 with errno (EFAULT: nothing mapped at addr; ESRCH:
 *        no such process; EPERM: not allowed)
 *   long pf_mem_readv(int pid, const struct pf_iov *local, const struct pf_iov *remote, size_t n)
 *        n pieces in one call; stops at the first piece it cannot read whole and returns the
 *        bytes read so far, or -1 with errno when it read nothing
 *   long pf_mem_write(int pid, uint64_t addr, const void *buf, size_t len)
 *        bytes written, or -1 with errno */

#endif
