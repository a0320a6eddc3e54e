/* Private to the agent: memory profiling, the allocation side. The interposers (memhooks.c)
 * count bytes per thread and emit samples into one lock-free queue (memqueue.c) that the
 * collector drains; memstats.c turns the samples into the footprint and per-line numbers.
 * Semantics: docs/agent-protocol.md, "Memory". */
#ifndef SCRY_AGENT_MEMORY_H
#define SCRY_AGENT_MEMORY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"
#include "agent/strata.h"


/* Per-thread state of the hooks (initial-exec TLS: usable from the first malloc of the process
 * and from signal handlers). */
struct ag_mem_tls {
    int guard;     /* > 0: inside a hook, a signal handler or the agent's own code: not counted */
    int in_pymem;  /* > 0: inside Python's allocator (PyMem wrappers): the wrappers attribute */
    bool resolving; /* this thread is looking up the real functions */
    bool py_thread; /* a thread the interpreter started (threadhooks.c) */
    bool mapping;   /* the allocation being sampled is a new anonymous mapping, whole */
    int tid;        /* gettid(), cached (reset after fork) */
    int64_t net;    /* bytes allocated minus freed (the heap's own view) since the last sample */
    struct ag_strata alloc, copy; /* the sampling points of allocated and of copied bytes */
    uint64_t pend, pend_py; /* weight of samples that could not be queued, for the next one */
    uint64_t rng;           /* xorshift64* state, 0 until the thread's first sampling point */
    /* While a PyMem realloc wrapper runs: what the hooks under it saw. */
    bool rl_active, rl_seen, rl_tracked;
    uint64_t rl_seq;  /* rl_tracked: the sample of the block being reallocated */
    int64_t rl_delta; /* usable-size change of a C realloc under it */
    uint64_t rl_copy; /* bytes pymalloc copied (the old block's size when it moved) */
};
extern __thread struct ag_mem_tls ag_mtls __attribute__((tls_model("initial-exec")));

extern _Atomic bool ag_mem_on;
extern _Atomic bool ag_mem_python_ready;
extern uint64_t ag_mem_window;  /* SCRY_ALLOCATION_WINDOW */
extern uint64_t ag_copy_window; /* SCRY_COPY_WINDOW */
extern bool ag_leak_on;         /* SCRY_LEAK_DETECTOR */

/* AG_M_MALLOC: an allocation carrying sampling points (bytes: what it stands for); AG_M_FREE:
 * the allocation of an earlier malloc sample (freed_seq) was freed; AG_M_NET: the thread's
 * heap moved by a window since its last sample, nothing to charge to a line; AG_M_COPY; AG_M_MOVE:
 * a realloc moved or resized the block of malloc sample freed_seq to ptr, now size bytes (its
 * samples must join the block where it is at a heap dump, not where it was first sampled). */
enum ag_mem_kind { AG_M_MALLOC, AG_M_FREE, AG_M_COPY, AG_M_NET, AG_M_MOVE };

enum ag_mem_flags {
    AG_M_STARTUP = 1,   /* before the interpreter ran Python code, or in its main thread with no
                           Python frame (compiling the script): counted in the footprint only */
    AG_M_NO_PYTHON = 2, /* the thread had no Python frame: charged to <native> */
    AG_M_UNTRACKED = 4, /* its allocation's address could not be remembered: its fate is unknown */
    AG_M_MAPPED = 8,    /* its allocation is an anonymous mapping (size: its length) counted by
                           its resident pages: its line holds what the collector finds resident
                           (ag_maps_scan_resident), not the length */
};

/* One queued sample. */
struct ag_mem_sample {
    _Atomic uint64_t ready; /* seq + 1 once written */
    uint64_t seq;           /* the queue position: global order of samples */
    uint32_t kind, mflags;
    uint64_t bytes, python_bytes; /* the estimate this sample stands for, Python's part */
    int64_t net;       /* the thread's allocated minus freed bytes since its previous sample */
    uint64_t freed_seq; /* free and move samples: the malloc sample whose allocation this was;
                           malloc samples: 1 + an earlier malloc sample of the same block (a
                           realloc's growth, or a block whose free was not seen), 0 if none: the
                           two go together when the block is freed */
    uint64_t ptr;  /* malloc samples: the allocation sampled; move samples: where it is now */
    uint64_t size; /* malloc and move samples: the block's size at ptr (requested, usable or
                      mapped) */
    uint64_t time_ns; /* CLOCK_MONOTONIC */
    int tid;
    struct ag_sample s; /* the thread's Python stack (weight unused) */
};

/* memhooks.c */
void ag_mem_hooks_init(void);
void ag_mem_fork_child(void);
/* A thread the interpreter started is ending: the heap's net it has not sampled yet (less than
 * a window) goes to the footprint now, not with the thread (a pool's workers, short threads). */
void ag_mem_thread_end(void);
void *ag_real_mmap(size_t len); /* anonymous memory for the agent, never counted */
/* Python's allocator (the PyMem wrappers, pyhooks.c): the objects it hands out are sampled by
 * their requested size, and what it does underneath counts only in the heap's net. The fast
 * paths are inline (a Python allocation that carries no point, a free of no sample's block). */
void ag_mem_py_sample(void *p, size_t n);
void ag_mem_py_free(void *p);
void ag_mem_py_realloc_begin(void *old);
void ag_mem_py_realloc_end(void *old, void *p, size_t n);
/* Between the two, on a free-threaded build: the change of the block's counted bytes (its size
 * class, or the pages its request spans: ag_mi_alloc_bytes), which the hooks under the wrapper
 * do not see; the realloc's growth. */
void ag_mem_py_realloc_grew(int64_t delta);

/* One subtraction and a compare: an object of the window or more takes the distance below 0
 * too, and the slow path (which also checks that memory is being counted) sorts it out. The
 * heap's net changes under Python's allocator are checked by the C hooks themselves. */
static inline void ag_mem_py_alloc(void *p, size_t n)
{
    if ((ag_mtls.alloc.until -= (int64_t)n) > 0)
        return;
    ag_mem_py_sample(p, n);
}

/* The track table's buckets (memqueue.c) and how many ways of each are taken. */
#define AG_TRACK_BITS 13
extern _Atomic uint8_t ag_track_used[1u << AG_TRACK_BITS];

static inline size_t ag_track_bucket(uint64_t ptr)
{
    return (size_t)(((ptr >> 4) * 0x9E3779B97F4A7C15ULL) >> (64 - AG_TRACK_BITS));
}

/* False: ptr is surely no sample's allocation (one byte read). */
static inline bool ag_memq_maybe_tracked(uint64_t ptr)
{
    return atomic_load_explicit(&ag_track_used[ag_track_bucket(ptr)], memory_order_relaxed);
}

/* memqueue.c */
int ag_memq_init(void);
/* Queues a sample of the calling thread (reading its Python stack); false when it cannot be
 * queued now (queue full, no scratch buffer). */
bool ag_memq_emit(enum ag_mem_kind kind, uint64_t bytes, uint64_t python_bytes, int64_t net,
                  uint64_t ptr, uint64_t size, uint64_t freed_seq, int tid);
extern _Atomic uint64_t ag_memq_deferred; /* emits that failed */
/* Collector: the oldest written sample, or NULL; then pop it. */
struct ag_mem_sample *ag_memq_peek(void);
void ag_memq_pop(void);
void ag_memq_fork_child(void);
/* The allocations of malloc samples, by address: a block about to be freed that was one gives
 * its sample's seq (and is forgotten); a realloc gives its block's sample back at the address
 * it returned (false: no room there). */
bool ag_memq_take_tracked(uint64_t ptr, uint64_t *seq);
bool ag_memq_retrack(uint64_t ptr, uint64_t seq);
/* The anonymous mappings counted so far, by address: add (false: table full, not counted;
 * resident: charged to the footprint in full from the start, as pymalloc's arenas, which it
 * fills as it goes) and remove (the length it had, 0 if not ours, and in *resident the bytes
 * charged to the footprint for it; a prefix of it may be removed: the rest stays counted). */
bool ag_maps_add(uint64_t addr, uint64_t len, bool resident);
uint64_t ag_maps_remove(uint64_t addr, uint64_t len, uint64_t *resident);
/* Collector: the pages of counted mappings that became resident since the last call, in bytes
 * (mincore; they are charged to the footprint from then on). Those of a mapping whose malloc
 * sample is AG_M_MAPPED are also told to held(ctx, seq, bytes); a mapping whose sample the
 * collector has not taken yet waits for the next call. */
uint64_t ag_maps_scan_resident(void (*held)(void *ctx, uint64_t seq, uint64_t bytes), void *ctx);
/* The counted mapping that holds addr is counted no longer (what was charged for it stays in
 * the footprint); false if none holds it. A scan of the table: not for a hook's path. */
bool ag_maps_forget_holding(uint64_t addr);

/* Free-threaded builds (mimalloc_sizes.c): when ag_mi_by_block, Python's allocator counts in the
 * heap's net by the sizes of its blocks (the PyMem wrappers, ag_mem_py_net), and what the hooks
 * see under it (mimalloc's mappings) counts in nothing. */
extern bool ag_mi_by_block;
bool ag_mi_layout_known(int minor);
int ag_mi_sizes_init(void); /* its table of large blocks; -1: no memory for it */
bool ag_mi_sizes_probe(const void *p, uint64_t n);
/* The bytes a block of Python's allocator counts (n: requested), at its allocation and at its
 * free (the same bytes); keep: the block is still there with the bytes it counted (a realloc
 * that failed after its block's free_bytes). */
uint64_t ag_mi_alloc_bytes(const void *p, uint64_t n);
uint64_t ag_mi_free_bytes(const void *p);
void ag_mi_keep_bytes(const void *p, uint64_t bytes);
/* memhooks.c: the thread's net moves by delta bytes of Python's blocks (a loss may emit a net
 * sample; a gain waits for the object's own sample). */
void ag_mem_py_net(int64_t delta);

/* The hooked functions by name, and the hooks' own addresses (memhooks.c): what attach.c has
 * platform/module_hooks.h put in the way of a process the agent was loaded into late. */
#define AG_HOOK_NAMES(X)                                                                         \
    X(malloc) X(calloc) X(free) X(realloc) X(reallocarray) X(posix_memalign) X(aligned_alloc)    \
    X(memalign) X(valloc) X(pvalloc) X(mmap) X(mmap64) X(munmap) X(mremap) X(memcpy) X(memmove) \
    X(__memcpy_chk) X(__memmove_chk)
/* reallocarray is hooked whatever glibc the agent is compiled against; glibc declares it from
 * 2.26 on (the manylinux build compiles against 2.17's headers: scripts/build-manylinux.sh). */
#if defined(__GLIBC__) && !__GLIBC_PREREQ(2, 26)
void *reallocarray(void *old, size_t n, size_t size);
#endif
/* A hook's hidden alias, with the hooked function's attributes where the compiler can copy them
 * (gcc; clang has no copy attribute). */
#if __has_attribute(copy)
#define AG_ALIAS_OF(name) __attribute__((alias(#name), copy(name)))
#else
#define AG_ALIAS_OF(name) __attribute__((alias(#name)))
#endif
struct ag_hook {
    const char *name;
    void *fn;
};
extern const struct ag_hook ag_mem_hooks[]; /* ends with {NULL, NULL} */
/* dlsym_hooks.c: dlsym and dlvsym, patched too, so that a look-up through a handle made while
 * attached answers the hook (ctypes.CDLL(None).malloc); ends with {NULL, NULL}. */
extern const struct ag_hook ag_dl_hooks[];
/* dlsym_hooks.c: the agent's own hook for a name of either list, else NULL (what attach.c
 * hands to pf_hooks_install). */
void *ag_hook_for(const char *name);

#endif
