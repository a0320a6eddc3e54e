/* Interpreters and their threads: PyThreadState lists, thread names from threading's registry,
 * and which thread holds each interpreter's GIL (if it has one: a free-threaded build runs
 * without one unless it is enabled at run time). */
#ifndef SCRY_CPYTHON_THREADS_H
#define SCRY_CPYTHON_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "cpython/runtime.h"

#define PY_MAX_THREADS 65536
#define PY_MAX_INTERPRETERS 1024

struct py_thread {
    uint64_t tstate;
    uint64_t interp;
    int64_t interp_id;
    uint64_t thread_id;  /* pthread_t: threading.get_ident() */
    int64_t native_id;   /* kernel TID: threading.get_native_id() */
    bool holds_gil;
    bool no_gil;         /* its interpreter runs without a GIL (free-threaded build) */
    const char *name;    /* threading.Thread.name, or NULL (in the arena) */
};

/* Every thread of every interpreter, in CPython's list order (interpreters and threads newest
 * first). The array and names are allocated in `arena`. Thread names are best effort: a thread
 * that threading does not know keeps name NULL. */
int py_list_threads(struct py_runtime *rt, struct arena *arena, struct py_thread **out,
                    size_t *count);

#endif
