/* asyncio's tasks, read from outside (`scry stacks --async`): every _asyncio.Task an interpreter
 * knows, its name and state, what it waits on, and its coroutine chain. Python 3.11-3.13
 * (3.13t included): the tasks are those of asyncio.tasks' registries (_all_tasks on 3.11,
 * _scheduled_tasks and _eager_tasks on 3.12 and 3.13), found through sys.modules. 3.14 and 3.15
 * keep native tasks in per-thread lists (and the interpreter's, for ended threads), found through
 * the _Py_AsyncioModuleDebugOffsets the build writes into an .AsyncioDebug section; the
 * registries are read too there (tasks of other kinds). The fields of _asyncio.Task (a struct of
 * Modules/_asynciomodule.c, in no public header) come from the generated table ctl_asyncio_task
 * (ctype_layouts.h), probed in each interpreter by tests/tools/probe_ctypes.py and checked by
 * tests/e2e/test_ctype_layouts.py (tests/e2e/test_stacks_more.py reads known tasks with it on a
 * live process; on 3.14+ the name and coroutine offsets are also checked against the section).
 * Other builds (3.14t, 3.15t) are refused (unsupported_python). */
#ifndef SCRY_CPYTHON_ASYNC_TASKS_H
#define SCRY_CPYTHON_ASYNC_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "cpython/frames.h"
#include "cpython/runtime.h"

#define PY_MAX_TASKS 100000
#define PY_MAX_CORO_CHAIN 256

struct py_async_task {
    uint64_t addr, loop;
    const char *name;        /* task_name: a str, or "Task-N" for 3.12+'s lazy int name */
    int state;               /* fut_state: 0 pending, 1 cancelled, 2 finished */
    uint64_t waiter;         /* task_fut_waiter, or 0 */
    bool waiter_is_task;     /* it is another task (of the list or not) */
    const char *waiter_type; /* its type name, when there is one */
    uint64_t *gathers;       /* the waiter is a gather() future (_GatheringFuture): the tasks
                                of its _children */
    size_t ngathers;
    struct py_frame *coro;   /* the coroutine chain: the task's coroutine first, then what each
                                suspended one awaits while that is a coroutine or generator */
    size_t ncoro;
};

/* Whether --async can read this runtime's tasks; unsupported_python with the reason if not. */
int py_async_supported(const struct py_runtime *rt);

/* The tasks of every interpreter, in registry order. Arrays and strings live in the arena; code
 * objects are resolved through cc. No asyncio imported: no task, no error. */
int py_async_tasks(struct py_runtime *rt, struct py_code_cache *cc, struct arena *a,
                   struct py_async_task **out, size_t *count);

#endif
