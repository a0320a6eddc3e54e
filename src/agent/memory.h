/* Private to the agent: memory profiling, the allocation side. The interposers (memhooks.c)
 * count bytes per thread and emit samples into one lock-free queue (memqueue.c) that the
 * collector drains; memstats.c turns the samples into the footprint and per-line numbers.
 * Semantics: docs/agent-protocol.md, "Memory". */
#ifndef SCRY_AGENT_MEMORY_H
#define SCRY_AGENT_MEMORY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/agent.h"

/* Per-thread state of the hooks (initial-exec TLS: usable from the first malloc of the process
 * and from signal handlers). */
struct ag_mem_tls {
    int guard;     /* > 0: inside a hook, a signal handler or the agent's own code: not counted */
    int in_pymem;  /* > 0: inside Python's allocator (PyMem wrappers): allocations are Python */
    bool resolving; /* this thread is looking up the real functions */
    int tid;        /* gettid(), cached (reset after fork) */
    uint64_t inc, dec; /* bytes allocated / freed since the thread's last sample */
    uint64_t py, nat;  /* bytes allocated through Python's allocator / natively since then */
    uint64_t copy;     /* bytes copied since the thread's last copy sample */
};
extern __thread struct ag_mem_tls ag_mtls __attribute__((tls_model("initial-exec")));

extern _Atomic bool ag_mem_on;
extern _Atomic bool ag_mem_python_ready;
extern uint64_t ag_mem_window;  /* SCRY_ALLOCATION_WINDOW */
extern uint64_t ag_copy_window; /* SCRY_COPY_WINDOW */
extern bool ag_leak_on;         /* SCRY_LEAK_DETECTOR */

enum ag_mem_kind { AG_M_MALLOC, AG_M_FREE, AG_M_COPY };

enum ag_mem_flags {
    AG_M_STARTUP = 1,   /* before the interpreter ran Python code, or in its main thread with no
                           Python frame (compiling the script): counted in the footprint only */
    AG_M_NO_PYTHON = 2, /* the thread had no Python frame: charged to <native> */
    AG_M_UNTRACKED = 4, /* its allocation's address could not be remembered: its fate is unknown */
};

/* One queued sample. */
struct ag_mem_sample {
    _Atomic uint64_t ready; /* seq + 1 once written */
    uint64_t seq;           /* the queue position: global order of samples */
    uint32_t kind, mflags;
    uint64_t bytes, python_bytes;
    uint64_t ptr; /* malloc samples: the allocation that crossed the threshold */
    uint64_t time_ns; /* CLOCK_MONOTONIC */
    int tid;
    struct ag_sample s; /* the thread's Python stack (weight unused) */
};

/* memhooks.c */
void ag_mem_hooks_init(void);
void ag_mem_fork_child(void);
void *ag_real_mmap(size_t len); /* anonymous memory for the agent, never counted */

/* memqueue.c */
int ag_memq_init(void);
/* Queues a sample of the calling thread (reading its Python stack); false when it cannot be
 * queued now (queue full, no scratch buffer): the caller keeps the bytes for the next try. */
bool ag_memq_emit(enum ag_mem_kind kind, uint64_t bytes, uint64_t python_bytes, uint64_t ptr,
                  int tid);
extern _Atomic uint64_t ag_memq_deferred; /* emits that failed (their bytes were kept) */
/* Collector: the oldest written sample, or NULL; then pop it. */
struct ag_mem_sample *ag_memq_peek(void);
void ag_memq_pop(void);
void ag_memq_fork_child(void);
/* The fate of malloc samples' allocations: the hooks report every freed block (or unmapped
 * mapping); when it is a sample's allocation, the free goes into a log that the collector reads
 * in order: which sample (seq) and the queue position when it was freed. */
void ag_memq_note_freed(uint64_t ptr);
bool ag_memq_next_freed(uint64_t *seq, uint64_t *freed_at);
/* The anonymous mappings counted so far, by address: add (false: table full, not counted) and
 * remove (the bytes it had, 0 if not ours; a prefix of it may be removed). */
bool ag_maps_add(uint64_t addr, uint64_t len);
uint64_t ag_maps_remove(uint64_t addr, uint64_t len);

#endif
