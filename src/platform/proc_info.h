/* What the operating system tells about another live process and its threads, without stopping
 * it: scheduler state, CPU and run-queue time, the system call a thread is in, the command line,
 * the working directory, resident memory, children, and whether it is alive or ending. Used by
 * the sampler from outside (record, top), attaching, and the agent (about its own process: a
 * pid of 0 means this process in every call that takes one). The Linux implementation
 * (linux/proc_info_linux.c) reads /proc, never on descriptors 0-2 (a program may have closed
 * them). Every call is cheap enough for each sampling tick, and none fails loudly: a process or
 * thread that is gone reads as such. */
#ifndef SCRY_PLATFORM_PROC_INFO_H
#define SCRY_PLATFORM_PROC_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A thread's scheduler state letter now ('R' runnable, 'S'/'D' waiting, 't'/'T' stopped, 'Z'
 * ...), 0 if it is gone. */
char pf_thread_state(int pid, int64_t tid);

/* A thread's nanoseconds on a CPU and waiting for one on a run queue since it started; false if
 * it is gone or the system keeps no such count. */
bool pf_thread_sched(int pid, int64_t tid, uint64_t *cpu_ns, uint64_t *wait_ns);

/* The thread's name as the system keeps it (15 bytes at most on Linux), "" if unreadable. */
void pf_thread_name(int pid, int64_t tid, char *out, size_t size);

/* What a thread is doing in the kernel's view. */
enum pf_thread_call {
    PF_CALL_UNKNOWN = -1, /* gone, unreadable, or preempted in its own code */
    PF_CALL_RUNNING = 0,  /* on a CPU now */
    PF_CALL_SYSCALL = 1,  /* inside system call *nr (a thread woken from a wait that has not
                             returned to the program yet is still here) */
};
enum pf_thread_call pf_thread_call(int pid, int64_t tid, long *nr);

/* Whether system call nr is a wait on a lock (a futex on Linux): a thread there is most likely
 * waiting for the GIL. */
bool pf_syscall_is_lock_wait(long nr);

/* The process's command line: its arguments, each NUL-terminated, one after the other, in buf;
 * the bytes used, or -1 if unreadable. */
ssize_t pf_process_cmdline(int pid, char *buf, size_t size);

/* The process's current directory, in buf ("" when it cannot be read). */
void pf_process_cwd(int pid, char *buf, size_t size);

/* Its resident memory in bytes now, and the most it ever had resident; -1 if unknown. pid 0:
 * this process. */
double pf_process_rss(int pid);
double pf_process_peak_rss(int pid);

/* The memory the system could give without swapping, in bytes; 0 if unknown. */
uint64_t pf_memory_available(void);

/* The pids of every process this one can see, up to max of them, into pids (*n of them).
 * Returns 0, or -1 with errno when they cannot be listed. */
int pf_process_list(int *pids, size_t max, size_t *n);

/* The user id that owns it; -1 if it is gone or unknown. */
long pf_process_owner(int pid);

/* When it started, in the system's own units: two processes that had the same pid one after the
 * other differ here. 0 if unknown. */
uint64_t pf_process_start_time(int pid);

/* Its environment: NUL-terminated "NAME=value" strings one after the other, malloc'd into *out
 * (*len bytes). Returns 0, or a negative errno (-ENOENT: no such process; -EACCES, -EPERM: not
 * allowed). */
int pf_process_environ(int pid, char **out, size_t *len);

/* The path at which this process opens a file that process pid names path (for a process in a
 * container, through its root), into out. */
void pf_process_file_path(int pid, const char *path, char *out, size_t size);

/* Its parent's pid, or -1 if unknown. */
int pf_process_parent(int pid);

/* Whether it exists and is not a zombie. */
bool pf_process_alive(int pid);

/* Whether it has ended or is ending: gone, its main thread a zombie with no other thread left,
 * or exiting and getting there within about 100 ms. A process whose main thread ended on its own
 * while other threads run is not gone. */
bool pf_process_ending(int pid);

/* Calls each(child, ctx) for every child process of every thread of pid; children may repeat. */
void pf_process_children(int pid, void (*each)(int child, void *ctx), void *ctx);

#endif
