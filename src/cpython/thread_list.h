/* The one walk over CPython's interpreters (_PyRuntime.interpreters.head, then each one's next)
 * and each interpreter's thread states (threads.head, then each one's next). Callers: the agent's
 * signal handler (which thread state is mine), its collector (which threads exist), `scry
 * threads` and the heap walker (cpython/threads.c, heap_walk.c, heap_mimalloc.c).
 *
 * Async-signal-safe: no allocation, no lock; memory is read only through the caller's struct
 * py_mem (cpython/frame_walk.h); lists are bounded by counts and a loop is cut by Brent's cycle
 * detection, so no set of seen addresses is needed. */
#ifndef SCRY_CPYTHON_THREAD_LIST_H
#define SCRY_CPYTHON_THREAD_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpython/frame_walk.h"
#include "cpython/layout.h"

/* Why a walk ended. */
enum py_tl_end {
    PY_TL_COMPLETE,     /* every list ended with a null next */
    PY_TL_STOPPED,      /* a callback returned nonzero */
    PY_TL_READ_FAILED,  /* a read at the interpreter or thread state of struct py_tl failed */
    PY_TL_INTERP_LOOP,  /* the interpreter list loops */
    PY_TL_INTERP_LONG,  /* it has more than max_interps */
    PY_TL_THREAD_LOOP,  /* a thread list loops */
    PY_TL_THREAD_LONG,  /* it has more than max_threads */
    PY_TL_FOREIGN,      /* check_owner: a thread state's interp is not the list's interpreter */
};

struct py_tl {
    const struct py_layout *L;
    const struct py_mem *mem;
    size_t max_interps, max_threads; /* bounds: per walk, per interpreter */
    bool check_owner;                /* check each thread state's interp field */
    bool go_on; /* a thread list that ends early (not PY_TL_STOPPED) does not end the walk: the
                 * next interpreter's is walked, and the first such end is returned
                 * (one other than PY_TL_THREAD_LONG preferred) */
    /* Called for each interpreter before its threads (may be NULL), and for each thread state
     * (NULL: the interpreters only, no thread list is read); a nonzero return ends the walk
     * (PY_TL_STOPPED). */
    int (*on_interp)(void *ctx, uint64_t interp);
    int (*on_thread)(void *ctx, uint64_t interp, uint64_t tstate);
    void *ctx;
    /* Set by the walk: where it was when it ended (tstate 0: between thread lists). */
    uint64_t interp, tstate;
};

/* Walks every interpreter from first (0: none) and its thread states. With go_on, interp and
 * tstate tell where the walk ended, not where the end it returns happened. */
enum py_tl_end py_tl_walk(struct py_tl *w, uint64_t first);

#endif
