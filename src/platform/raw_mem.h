/* Mapping memory straight from the kernel, past any hook: the agent's own mmap, munmap and
 * mremap wrappers call these before the real functions are known, so that they never recurse.
 * Each returns what the system call returns: for the mapping calls, an address, or a value in
 * the last page (-errno) on failure. linux/raw_mem_linux.h: the system calls. */
#ifndef SCRY_PLATFORM_RAW_MEM_H
#define SCRY_PLATFORM_RAW_MEM_H

#include <stddef.h>
#include <sys/types.h>

#if defined(__linux__)
#include "platform/linux/raw_mem_linux.h"
#else
#error "scry: no raw_mem implementation for this system (src/platform/)"
#endif

/* Each system's file defines:
 *   void *pf_raw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
 *   int   pf_raw_munmap(void *addr, size_t len)
 *   void *pf_raw_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr) */

#endif
