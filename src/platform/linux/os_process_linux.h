/* Linux's side of platform/os_process.h: system calls made directly where the C library's
 * wrapper would cache (getpid) or is missing from older versions (gettid, tgkill, pidfd_open). */
#ifndef SCRY_PLATFORM_LINUX_OS_PROCESS_LINUX_H
#define SCRY_PLATFORM_LINUX_OS_PROCESS_LINUX_H

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static inline int pf_getpid(void)
{
    return (int)syscall(SYS_getpid);
}

static inline int pf_gettid(void)
{
    return (int)syscall(SYS_gettid);
}

static inline int pf_thread_kill(int pid, int tid, int sig)
{
    return (int)syscall(SYS_tgkill, pid, tid, sig);
}

__attribute__((noreturn)) static inline void pf_exit_now(int status)
{
    for (;;)
        syscall(SYS_exit_group, status);
}

static inline void pf_allow_tracer(int pid)
{
    prctl(PR_SET_PTRACER, (unsigned long)pid, 0, 0, 0);
}

static inline int pf_process_handle(int pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static inline ssize_t pf_self_exe(char *buf, size_t size)
{
    ssize_t n = size ? readlink("/proc/self/exe", buf, size - 1) : -1;
    if (size)
        buf[n > 0 ? n : 0] = 0;
    return n;
}

static inline const char *pf_self_exec_path(void)
{
    return "/proc/self/exe";
}

#endif
