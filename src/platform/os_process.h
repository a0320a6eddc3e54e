/* What scry asks of the operating system about processes and threads: ids, signalling one
 * thread, ending this process at once, letting a chosen process trace this one, and a handle
 * that says when another process has ended. The implementation for each system is in its own
 * subfolder (linux/os_process_linux.h: inline, because the agent calls these on its hot paths);
 * nothing outside src/platform/ includes a system header for them. */
#ifndef SCRY_PLATFORM_OS_PROCESS_H
#define SCRY_PLATFORM_OS_PROCESS_H

#if defined(__linux__)
#include "platform/linux/os_process_linux.h"
#else
#error "scry: no os_process implementation for this system (src/platform/)"
#endif

/* Each system's file defines:
 *   int  pf_getpid(void)      this process's id, asked of the kernel every time (never a value
 *                             cached by the C library, which a raw fork or clone leaves stale)
 *   int  pf_gettid(void)      the calling thread's id as the system and other tools name it
 *   int  pf_thread_kill(int pid, int tid, int sig)   0, or -1 with errno (ESRCH: gone); sig 0
 *                             only checks that the thread exists
 *   void pf_exit_now(int status)    ends the whole process at once: no atexit, no flush
 *   void pf_allow_tracer(int pid)   lets process pid read this one where the system restricts
 *                             tracing to ancestors (Yama's ptrace_scope 1); no-op elsewhere
 *   int  pf_process_handle(int pid) a descriptor that becomes readable when process pid ends,
 *                             or -1 with errno (the caller falls back on polling)
 *   ssize_t pf_self_exe(char *buf, size_t size)   the path of this program's executable file,
 *                             NUL-terminated in buf: its length, or -1 with errno
 *   const char *pf_self_exec_path(void)   a path that starts this very program again, even when
 *                             its file was moved or replaced meanwhile (for exec) */

#endif
