/* Private to the agent (libscry-agent.so, preloaded into profiled programs): the per-thread
 * sampling state shared by the signal handler and the collector thread, the sample records that
 * pass between them, and the entry points of each part. Rules for everything here: nothing on a
 * signal path allocates, locks, or calls Python; errno is preserved; target memory is read only
 * through ag_safe_read, which never faults. */
#ifndef SCRY_AGENT_AGENT_H
#define SCRY_AGENT_AGENT_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/sstream.h"
#include "cpython/runtime.h"

#define AG_EXPORT __attribute__((visibility("default")))

#define AG_MAX_DEPTH 126   /* frames kept per sample (the rest is marked truncated) */
#define AG_RING_SLOTS 16   /* samples a thread can hold until the collector drains them */
#define AG_SLOT_SIZE 4736  /* a sample with its native frames (74 KiB of ring per thread) */
#define AG_MAX_NATIVE 64   /* native frames kept per sample (with stacks on) */
#define AG_MAX_THREADS 4096
#define AG_SHUTDOWN_FILE "<interpreter shutdown>" /* pseudo-file (and function), line 0 */
#define AG_CHUNK_COPY (64 * 1024) /* used part of a thread's frame stack copied in one read */
#define AG_SCRATCH_SIZE (AG_CHUNK_COPY + 64 * 1024)

/* Options from the SCRY_* environment (docs/agent-protocol.md), parsed once at start. */
struct ag_config {
    char part_dir[4096];
    double rate_sec;
    bool virtual_time;
    bool profile_all;
    bool system_libraries;
    bool stacks; /* record call stacks (SCRY_STACKS=1) */
    char program_path[4096];
    char profile_only[4096];   /* comma-separated, may be empty */
    char profile_exclude[4096];
    bool memory; /* SCRY_MEMORY=1: allocations, footprint, copies (memory.h) */
    bool memory_unsupported; /* SCRY_MEMORY=1 turned off: a free-threaded build, whose
                                allocator the agent does not measure right yet */
    double snapshot_sec; /* SCRY_SNAPSHOT_INTERVAL: seconds between snapshots (0: none) */
    int heap_at_exit_pid; /* SCRY_HEAP_AT_EXIT: `scry run --heap-at-exit`'s pid (0: none) */
    int collect_pid;      /* SCRY_COLLECT_PID: scry.start()'s `scry collect` (0: none) */
    int collect_for;      /* the process it collects (not a forked child) */
};

/* One Python frame as the signal handler saw it. filename/qualname/firstlineno are the code
 * object's identity at that moment (checked again when the sample is resolved). */
struct ag_frame {
    uint64_t code;
    uint64_t filename;
    uint64_t qualname;
    int32_t lasti;
    int32_t firstlineno;
};

enum ag_sample_flags {
    AG_S_NATIVE = 1,    /* inside a call into C, or the PC was outside the interpreter */
    AG_S_TRUNCATED = 2, /* deeper than AG_MAX_DEPTH, or the chain could not be read or loops */
    /* the thread's frame stack goes on above its innermost frame: a Python frame being set up
     * (a call into Python) or cleared (a return from it) */
    AG_S_FRAME_ABOVE = 4,
};

struct ag_sample {
    uint64_t weight_ns; /* CPU (or off-CPU) time this sample stands for */
    uint64_t time_ns;   /* CLOCK_MONOTONIC when it was taken (the timeline's time) */
    uint32_t flags;
    uint32_t depth; /* frames[0] is the innermost */
    struct ag_frame frames[AG_MAX_DEPTH];
    /* group[i]: which C call of the eval loop (_PyEval_EvalFrameDefault) runs frames[i],
     * counted from the innermost call (0); calls that run no kept frame still count. */
    uint8_t group[AG_MAX_DEPTH];
    /* With stacks on, CPU samples only: the interrupted native call chain, ips[0] the
     * interrupted PC and the others return addresses, innermost first (0: none unwound). */
    uint32_t native_depth;
    uint32_t native_truncated;
    uint64_t ips[AG_MAX_NATIVE];
};

_Static_assert(sizeof(struct ag_sample) <= AG_SLOT_SIZE, "a sample must fit a ring slot");

/* Single-producer (the thread's signal handler) single-consumer (the collector) ring. */
struct ag_ring {
    _Atomic uint32_t head; /* written by the producer */
    _Atomic uint32_t tail; /* written by the consumer */
    _Atomic uint32_t dropped;
    unsigned char slots[AG_RING_SLOTS][AG_SLOT_SIZE];
};

/* A sampled Python thread. Allocated by the collector, 64-byte aligned, never freed: a retired
 * entry is reused only after a grace period, and the generation in the low bits of the timer's
 * sigval tells a late signal of the old thread from the new one's.
 *
 * Two ways in: threads that the interpreter starts (pthread_create of a start routine inside
 * libpython or the executable) are claimed by the pthread_create interposer and counted from
 * their first instruction (threadhooks.c; `hooked`): their timer is armed by the thread itself
 * before it runs any Python, the handler finds their thread state, and when they end (a pthread
 * key destructor) they leave their CPU time since their last sample for the collector to charge
 * (AG_T_EXITED). Other threads (the main thread, threads of C code that later call into Python)
 * are found on the collector's scan of the thread-state lists, as before. */
struct ag_thread {
    _Atomic int state; /* AG_T_FREE, AG_T_CLAIMED, AG_T_ACTIVE, AG_T_EXITED, AG_T_RETIRED */
    uint32_t gen;      /* 0..63 */
    int tid;
    _Atomic uint64_t tstate; /* PyThreadState in this process (0: not known yet) */
    timer_t timer;
    _Atomic bool has_timer; /* whoever clears it deletes the timer */
    bool hooked;            /* claimed at its creation (pthread_create interposer) */
    clockid_t cpu_clock;
    struct ag_ring *ring;
    void *scratch; /* AG_SCRATCH_SIZE bytes for the handler's stack walk */
    /* Set by the creating thread for a hooked thread: its real start routine. */
    void *(*start_routine)(void *);
    void *start_arg;
    /* The thread's CPU clock up to which its time is charged: moved on by its samples
     * (handler) and by a settle on any thread, only through ag_thread_cpu_advance. */
    _Atomic uint64_t last_cpu_ns;
    /* Handler-owned. */
    uint64_t rng;
    /* Written by a hooked thread as it ends, before AG_T_EXITED. */
    uint64_t exit_cpu_ns, exit_wall_ns;
    /* Collector-owned. */
    uint64_t wall_last_ns, wall_last_cpu_ns, retired_at_ns, seen_scan;
    uint64_t pending_off_ns; /* off-CPU time not yet charged (charged once it reaches 1 ms) */
} __attribute__((aligned(64)));

/* Moves the thread's charged-up-to clock to now, and returns the CPU time this charges (0 when
 * another charge already covers it). A sample (the thread's own handler) and a settle (any
 * thread) may race: each nanosecond goes to one of them, never to both. Async-signal-safe. */
static inline uint64_t ag_thread_cpu_advance(struct ag_thread *t, uint64_t now)
{
    uint64_t last = atomic_load_explicit(&t->last_cpu_ns, memory_order_relaxed);
    while (now > last) {
        if (atomic_compare_exchange_weak_explicit(&t->last_cpu_ns, &last, now,
                                                  memory_order_relaxed, memory_order_relaxed))
            return now - last;
    }
    return 0;
}

enum { AG_T_FREE, AG_T_ACTIVE, AG_T_RETIRED, AG_T_CLAIMED, AG_T_EXITED };

/* --timeline (SCRY_TIMELINE=1): the stream of samples the collector appends to (attribution.c),
 * at most ag_sstream_max (SCRY_TIMELINE_MAX) per process; the final part has it. */
extern bool ag_sstream_on;
extern size_t ag_sstream_max;
extern struct sst_stream ag_sstream;

/* Global agent state (agent.c). */
extern struct ag_config ag_cfg;
extern struct py_runtime ag_rt;
extern int ag_pid;          /* this process; updated in a forked child */
extern int ag_signal;       /* the real-time signal of the CPU timers */
extern _Atomic bool ag_running;
/* Profiling on (the default) or off (--off, scry.stop(), scry control): control.c. */
extern _Atomic bool ag_enabled;
extern uint64_t ag_main_thread_id; /* pthread_self() of the main thread */

/* sampler.c */
extern _Atomic uint64_t ag_handler_ns, ag_handler_calls; /* the handler's own cost */
int ag_sampler_init(void);  /* PC ranges, signal choice and handler */
/* With SCRY_STACKS=1: loads libunwind (dlopen, RTLD_LOCAL) and warms it up; false (native
 * stacks absent) when it is not there. */
bool ag_unwind_init(void);
extern bool ag_unwind_ok;
/* fork: stops new unwinds and waits for those in flight (false: some did not end), so that
 * no thread holds libunwind's cache lock when the process forks; then lets them go on. */
bool ag_unwind_fork_prepare(void);
void ag_unwind_fork_done(bool child, bool clean);
/* Reads len bytes of this process at addr; false (never a fault) if unmapped. */
bool ag_safe_read(uint64_t addr, void *buf, size_t len);
/* ag_safe_read as the cpython walkers' memory interface (cpython/frame_walk.h). */
extern const struct py_mem ag_self_mem;
/* Walks tstate's frames into s (depth, frames, TRUNCATED); returns the innermost frame's opcode
 * or -1. Usable from a signal handler and from the collector (for another thread). */
int ag_walk_stack(uint64_t tstate, int expect_tid, struct ag_sample *s, void *scratch);
/* Creates t's CPU timer and arms it: after first_ns of the thread's CPU time if not 0, else
 * after an exponential interval. */
int ag_timer_create(struct ag_thread *t, uint64_t first_ns);
/* True when pc lies in the interpreter's own code (libpython, the executable, ld.so). */
bool ag_pc_in_interpreter(uint64_t pc);
/* True when pc lies in this agent's own code (which ag_pc_in_interpreter counts too, for its
 * interposers): a thread started there (the collector, the GPU sampler) is the agent's. */
bool ag_pc_in_agent(uint64_t pc);
/* Whether pc is in the eval loop's own code (its symbol's range, or its unnamed clone's). */
bool ag_pc_in_eval_loop(uint64_t pc);
/* The same, with the start of the loop's code when it is. */
bool ag_eval_loop_start(uint64_t pc, uint64_t *start);
void ag_timer_delete(struct ag_thread *t);
uint64_t ag_exp_interval_ns(uint64_t *rng);
uint64_t ag_now_ns(clockid_t clock);

/* signals.c: installs the CPU-timer signal's handler and keeps it against later sigaction() or
 * signal() calls of the program (which see their own settings reported back). */
int ag_install_signal(int sig, const struct sigaction *sa);
/* Puts the flush handler wherever SIGINT, SIGTERM or SIGHUP has the default disposition. */
void ag_install_flush_handlers(void);
/* agent.c: writes this process's part before it dies (from the flush handler). */
void ag_flush_for_exit(void);

/* collector.c */
int ag_collector_start(void);
/* Stops sampling, drains, and writes the part; safe to call twice and from any thread except a
 * signal handler that interrupted the collector. */
void ag_collector_finish(void);
/* Resolves what the rings and the memory queue hold now, while the code objects of the samples
 * are still alive (the program is ending: the interpreter is about to free them). */
void ag_collector_drain(void);
/* The program is over (its last atexit callback): resolves what is waiting, as
 * ag_collector_drain, and from now on measures the calling thread, which finalizes the
 * interpreter, as <interpreter shutdown> (docs/agent-protocol.md). */
void ag_collector_shutdown_begins(void);
/* The program is about to run its first line (on the main thread): the threads are scanned now,
 * so that the main thread is sampled from there whatever the collector's delay. */
void ag_collector_program_runs(void);
/* Makes the collector run its next tick now (async-signal-safe: one write to an eventfd). */
void ag_collector_wake(void);
/* fork: the collector thread is stopped (joined) before, so that the process has only the
 * program's threads when it forks (CPython 3.12+ warns about forking a multi-threaded process),
 * and started again after. In the child, statistics start from nothing. */
void ag_collector_pause(void);
void ag_collector_resume(void);
void ag_collector_reset_child(void);
/* Profiling on or off (see control.c), from any thread but a signal handler. */
void ag_collector_set_profiling(bool on);
/* Checkpoints (window.c), from any thread but a signal handler: each first settles the
 * statistics (every sample taken so far is in them, and every thread's time up to now), then
 * writes them as a part document to a new file at path / gives the totals / restarts the peak
 * since the mark at the footprint. 0, or -1 when this process is not profiled (any more) or the
 * file cannot be written (errno; err_last_message). */
struct ag_totals {
    bool profiling, memory;
    double sec[3]; /* by enum ag_cat */
    uint64_t samples, malloc_bytes, free_bytes, python_bytes, copy_bytes;
    uint64_t footprint, max_footprint, mark_peak;
};
int ag_collector_checkpoint(const char *path);
int ag_collector_totals(struct ag_totals *out);
int ag_collector_mark_peak(void);
/* window.c: the Python package's way in to checkpoints (docs/agent-protocol.md). */
AG_EXPORT int scry_agent_checkpoint(const char *path);
AG_EXPORT int scry_agent_totals(char *buf, size_t size);
AG_EXPORT int scry_agent_mark_peak(void);

/* control.c: SCRY_OFF at the start; the run's control file (`scry control`), looked at by the
 * collector at every tick: -1 when it asks for nothing new, else 0 (off) or 1 (on). */
void ag_control_init(void);
/* The Python package's way in (control.c): want 1 turns profiling on, 0 off, -1 asks. */
AG_EXPORT int scry_agent_profiling(int want);
/* @profile (the builtin, or scry.profile): a decorated function, by its code object's
 * co_filename, co_qualname and co_firstlineno. When the program decorated any, a sample with a
 * decorated function on its stack is charged to the innermost one's current line (its calling
 * line when the sample is in an undecorated callee: attribution.c ag_col_attribute), and the
 * profile reports only those functions (the merge filters: docs/json-schema.md). 0, or -1 if the
 * table is full or this process is not profiled. */
AG_EXPORT int scry_agent_profile_function(const char *file, const char *qualname,
                                          int firstlineno);
struct ag_decorated {
    char file[1024];
    char name[256];
    int first;
};
/* A copy of the decorated functions (the part writer's). */
size_t ag_decorated_copy(struct ag_decorated *out, size_t max);
/* How many functions are decorated so far (the table only grows: the collector asks entries
 * [from, to) about a code object it has already asked the first `from` about). Lock-free. */
size_t ag_decorated_count(void);
bool ag_decorated_in(size_t from, size_t to, const char *file, const char *qualname,
                     int firstlineno);
/* agent.c: this process is profiled (the agent started here, and not in a vfork child). */
bool ag_agent_active(void);
int ag_control_poll(void);
/* `scry dump --pid` asks for the live allocation samples (docs/allocations.md): the number in
 * $SCRY_PART_DIR/allocreq-<pid> when it differs from the last one answered, else 0. */
uint64_t ag_alloc_request_poll(void);
/* `scry run --heap-at-exit`: the program is over (atexit, GIL held); marks the part directory's
 * heapexit-<pid> and waits until `scry run` has taken its heap snapshot and removed it. */
void ag_heap_at_exit_wait(void);
/* scry.start() in a plain python run: the part is written and the process is ending. Marks
 * the part directory's exiting-<pid> and waits (bounded) until `scry collect` has written the
 * profile and removed the directory, so that the file is complete when the process has exited. */
void ag_collect_at_exit_wait(void);
/* Threads the interpreter starts (threadhooks.c): a slot claimed by the creating thread (NULL:
 * none free, or not sampling), given back if the thread could not be created; the new thread
 * starts its own sampling before it runs anything, and ends it from its key destructor. */
struct ag_thread *ag_thread_claim(void *(*start_routine)(void *), void *arg);
void ag_thread_unclaim(struct ag_thread *t);
void ag_thread_begin(struct ag_thread *t);
void ag_thread_end(struct ag_thread *t);

/* schedstat.c (collector thread): the run-queue delay and CPU time of the program's threads,
 * from /proc/self/task/TID/schedstat. ag_sched_read adds what thread tid waited and ran since
 * its last read (since it started, the first time: a thread is known by its id, whichever slot
 * of the threads table it is in); ag_sched_totals gives the sums (false: the kernel keeps no
 * schedstat). */
void ag_sched_read(int tid);
bool ag_sched_totals(uint64_t *delay_ns, uint64_t *cpu_ns);
void ag_sched_reset(void);

/* pyhooks.c: what is done with the GIL (allocator wrappers, atexit, builtins.profile,
 * os.register_at_fork hooks, so that after os.fork() the collector restarts only once CPython
 * has counted the threads), at the program's first line (ag_pyhooks_at_start) or from a pending
 * call the collector schedules once the interpreter has imported os. */
void ag_pyhooks_maybe_schedule(void);
/* `scry run`'s agent, before the interpreter starts: a C audit hook that installs the same
 * hooks in the main thread at the program's first line (cpython.run_file and its kin), whatever
 * the collector thread is doing, then leaves the runtime's list of hooks. */
void ag_pyhooks_at_start(void);
bool ag_pyhooks_installed(void);
/* Detach (attach.c), from a thread that holds no lock of Python's: a pending call puts Python's
 * allocators back; the next attach installs the wrappers again. */
void ag_pyhooks_detach(void);
/* A fork that returns in a thread holding the GIL before the fork hooks are installed: the
 * collector is started again from a pending call, once os.fork() has counted the process's
 * threads. False if it must be started now (no GIL held, or no pending call possible). */
bool ag_pyhooks_defer_resume(void);
extern _Atomic bool ag_python_fork; /* inside os.fork(): Python's hooks restart the collector */

/* part_writer.c: writes $SCRY_PART_DIR/part-<pid>.json (docs/agent-protocol.md). */
struct ag_stats;
struct ag_mem_stats;
/* mem: the memory statistics, NULL when memory profiling is off. */
/* start_mono_ns: CLOCK_MONOTONIC at start_real_sec (the timeline's origin). Only this final
 * part has the timeline (SCRY_TIMELINE=1); snapshots and checkpoints do not. */
int ag_write_part_file(const struct ag_stats *st, const struct ag_mem_stats *mem,
                       double start_real_sec, double elapsed_sec, uint64_t start_mono_ns);
/* When a process starts profiling (and in a forked child): opens the part directory and creates
 * this process's part file, so that the part is written even if the program drops its
 * privileges later, and creates $SCRY_PART_DIR/live-<pid>, which tells the command that this
 * process will write a part (it waits a moment for processes that outlive the program); the
 * marker is removed once the part is written. */
void ag_part_begin(void);
/* The part directory's empty marker files (live-, heapexit-, exiting-<pid>: how a process tells
 * the command where it is), made here only: 0600, never through a link; exclusive fails when
 * the marker exists. 0 or -1. */
int ag_part_mark(const char *name, bool exclusive);
bool ag_part_mark_present(const char *name);
void ag_part_unmark(const char *name);
/* Closes the part directory and file (an attached agent's detach: the next attach has another). */
void ag_part_forget_dir(void);
/* While the process runs (SCRY_SNAPSHOT_INTERVAL, for `scry run --push`): the statistics so far,
 * in the part's format, as $SCRY_PART_DIR/snap-<pid>.json (written under a temporary name, then
 * renamed over the previous one). Collector thread, lock held. */
int ag_write_snapshot_file(const struct ag_stats *st, const struct ag_mem_stats *mem,
                           double start_real_sec, double elapsed_sec);
/* A checkpoint (window.c): the same document in a new file at path (O_EXCL, O_NOFOLLOW, 0600:
 * nothing that exists there is opened or replaced), its leak judgements over the window since
 * window_sec (the previous checkpoint: a test's or a cell's). Lock held. */
int ag_write_checkpoint_file(const struct ag_stats *st, const struct ag_mem_stats *mem,
                             double start_real_sec, double elapsed_sec, double window_sec,
                             const char *path);
/* The live malloc samples with their stacks, answering request req, as
 * $SCRY_PART_DIR/alloc-<pid>.json (docs/allocations.md). Collector thread, lock held. */
int ag_write_allocations_file(const struct ag_stats *st, const struct ag_mem_stats *mem,
                              uint64_t req);

/* Every descriptor the agent holds is above 2 and close-on-exec (common/outfile.h's
 * fd_above_stdio), so that a program started with stdin, stdout or stderr closed never finds one
 * of the agent's files there. */
/* A descriptor the agent holds and the file it was opened on: a program may close descriptors
 * it does not know (daemons close them all) and get the number again for a file of its own,
 * which the agent must then never read, write or truncate. */
struct ag_fd {
    int fd;
    unsigned long long dev, ino;
};
/* fd (moved above 2) as id; fd < 0 leaves id->fd -1. Returns id->fd. */
int ag_fd_keep(struct ag_fd *id, int fd);
/* id->fd when it still refers to the file it was opened on, else -1 (async-signal-safe). */
int ag_fd_get(const struct ag_fd *id);
/* One of fds 0-2 was closed when the agent started: the collector then opens no file while the
 * program runs (any open would take the lowest free descriptor, where the interpreter looks for
 * its standard streams). */
extern bool ag_low_fds_closed;

/* agent.c, for attach.c (`scry record --pid --memory`): start profiling with the settings get
 * gives (0, or -1 logged); the agent goes idle once detached; whether `scry run` started it. */
extern bool ag_attached;
/* attach.c's entry points, which `scry record --pid --memory` makes a thread of the process
 * call (docs/record-memory.md). */
AG_EXPORT int scry_agent_attach(const char *settings_path);
AG_EXPORT int scry_agent_detach(void);
int ag_attach_start(const char *(*get)(const char *name));
void ag_attach_stopped(void);
bool ag_started_by_run(void);

#endif
