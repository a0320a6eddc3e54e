/* One interface to read the memory of a Python process, whatever holds it: this process, another
 * live process (process_vm_readv), or an ELF core file. Everything above this layer (src/cpython,
 * the commands) reads target memory only through rd_read and asks for mappings and threads here.
 * Remote addresses are uint64_t, never pointers. */
#ifndef SCRY_READER_READER_H
#define SCRY_READER_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rd_kind { RD_SELF, RD_PID, RD_CORE, RD_MINIDUMP };

enum rd_prot { RD_PROT_R = 1, RD_PROT_W = 2, RD_PROT_X = 4 };

/* One mapping of the target's address space (from /proc/PID/maps, or NT_FILE + PT_LOAD). */
struct rd_mapping {
    uint64_t start, end; /* [start, end) */
    uint64_t offset;     /* offset in the file, bytes */
    unsigned prot;       /* enum rd_prot bits; for a core, from the PT_LOAD flags (R if unknown) */
    const char *path;    /* file path as the target sees it, "" for anonymous, "[heap]" etc. */
};

/* One OS thread of the target, as seen when the reader looked (before stopping it). */
struct rd_thread {
    int tid;
    /* Scheduler state letter from /proc/PID/task/TID/stat ('R', 'S', 'D', 't', ...). For a core:
     * 'S' when the thread was inside a system call (orig_rax != -1 in NT_PRSTATUS), else 'R'. */
    char state;
};

struct rd_reader;

/* Opens a reader on the calling process itself: reads are safe against unmapped addresses
 * (they fail with -SCRY_E_READ_FAILED instead of faulting). */
int rd_open_self(struct rd_reader **out);

/* Opens a reader on a live process. Fails with no_such_process, permission_denied (probed with
 * a real read, so ptrace_scope and capabilities are taken into account). Does not stop it. */
int rd_open_pid(int pid, struct rd_reader **out);
/* After a read of pid failed: true if the process has exited or is exiting, given up to
 * wait_ms to get there (a process that unmaps its memory while it finalizes fails reads before
 * it is gone). */
bool rd_pid_exited(int pid, int wait_ms);

/* Opens an ELF core file (as written by gcore or the kernel). exe_override, if not NULL, is the
 * path of the program's executable to use instead of the one named in the core (for a core
 * moved to another machine, or an executable that moved). Fails with bad_core or io_error.
 * With exe_override, rd_exe_path returns it and the executable's mappings carry it as their path,
 * so that matching mappings against rd_exe_path keeps working. */
int rd_open_core(const char *core_path, const char *exe_override, struct rd_reader **out);

/* Opens a Windows minidump of a 64-bit process (minidump_reader.c), best a full-memory one
 * (procdump -ma): its memory, its modules as the mappings' paths (Windows paths, "C:\..."), its
 * threads (Windows thread ids; 'S' when a thread's RIP follows a syscall instruction, else 'R').
 * Fails with bad_minidump (saying what is missing or damaged), unsupported_python (a 32-bit or
 * ARM64 process), io_error. rd_open_minidump_mem reads one held in memory (data must outlive the
 * reader; what names it in messages). */
int rd_open_minidump(const char *path, struct rd_reader **out);
int rd_open_minidump_mem(const void *data, size_t size, const char *what, struct rd_reader **out);

void rd_close(struct rd_reader *rd);

enum rd_kind rd_kind(const struct rd_reader *rd);
/* The target's pid (for a core, the pid recorded in it; 0 if none). */
int rd_pid(const struct rd_reader *rd);

/* Reads exactly len bytes at addr; returns 0 or -SCRY_E_READ_FAILED (message names the address)
 * or -SCRY_E_NO_SUCH_PROCESS when a live target has gone. */
int rd_read(struct rd_reader *rd, uint64_t addr, void *buf, size_t len);
/* For a live target (RD_PID): which 4 KiB pages of [start, end) (page aligned) were ever touched,
 * resident or swapped out (/proc/PID/pagemap), one bit per page in touched (zeroed first).
 * Returns 0, or 1 when that cannot be known (another kind of reader, pagemap unreadable): an
 * untouched page of an anonymous mapping reads as zeros. */
int rd_pages_touched(struct rd_reader *rd, uint64_t start, uint64_t end, uint64_t *touched);
int rd_read_u64(struct rd_reader *rd, uint64_t addr, uint64_t *out);
int rd_read_u32(struct rd_reader *rd, uint64_t addr, uint32_t *out);

/* The mappings, sorted by start address, valid until rd_close. */
const struct rd_mapping *rd_mappings(const struct rd_reader *rd, size_t *count);
/* The mapping containing addr, or NULL. */
const struct rd_mapping *rd_find_mapping(const struct rd_reader *rd, uint64_t addr);

/* The path of the target's main executable as the target sees it (for a core: --exe, else
 * AT_EXECFN / NT_PRPSINFO / the first NT_FILE entry). NULL if unknown. */
const char *rd_exe_path(const struct rd_reader *rd);

/* The path at which this process can open a file that the target maps as target_path (live:
 * /proc/PID/root/<path>, so that containers work; core: the path itself, or exe_override for
 * the executable). Written into buf; returns buf. */
const char *rd_host_path(const struct rd_reader *rd, const char *target_path, char *buf,
                         size_t size);

/* Lists the target's threads with their scheduler state. Call before rd_pause for live targets:
 * a stopped thread always looks idle. The array is owned by the reader and stays valid until the
 * next call or rd_close. */
int rd_threads(struct rd_reader *rd, const struct rd_thread **out, size_t *count);

/* Live targets: stops every thread (PTRACE_SEIZE + PTRACE_INTERRUPT, repeated until no new thread
 * appears) so that reads see a consistent image. A no-op for self and core readers. rd_resume (and
 * rd_close, and a fatal signal delivered to scry) lets every stopped thread run again. */
int rd_pause(struct rd_reader *rd);
void rd_resume(struct rd_reader *rd);

#endif
