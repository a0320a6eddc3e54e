/* The `scry stacks` report: a plain model of every thread's Python stack, and its text (in the
 * manner of py-spy dump) and JSON renderings. Knows nothing of how the stacks were read. */
#ifndef SCRY_RENDER_STACKS_RENDER_H
#define SCRY_RENDER_STACKS_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

/* A local variable of a frame (--locals): its value already shortened and redacted. */
struct stacks_local {
    const char *name;
    const char *type;
    const char *value; /* "<redacted>" when redacted */
    bool redacted;
    bool cell; /* a cell or free variable: the cell's contents */
};

struct stacks_frame {
    const char *function; /* a native frame: its symbol, or "" when none is known */
    const char *file;     /* a native frame: its module's path */
    int line;             /* -1: unknown (native frames) */
    bool native;          /* a native frame (--native) */
    uint64_t offset;      /* native: from the symbol (from the module's base without one) */
    struct stacks_local *locals; /* --locals: the bound fast locals */
    size_t nlocals;
    bool locals_cut; /* more locals than shown */
};

/* An asyncio task (--async). */
struct stacks_task {
    uint64_t addr;
    uint64_t loop;        /* its event loop */
    const char *name;
    const char *state;    /* "pending", "cancelled" or "finished" */
    uint64_t awaits;      /* the task it waits on (task_fut_waiter is a task), or 0 */
    const char *awaits_type; /* the type of what it waits on when that is not a task, or NULL */
    const uint64_t *gathers; /* what it waits on is a gather(): the tasks gathered */
    size_t ngathers;
    struct stacks_frame *coro; /* its coroutine chain, outermost (the task's coroutine) first */
    size_t ncoro;
};

struct stacks_thread {
    uint64_t thread_id;
    int64_t native_id;
    int64_t interpreter_id;
    const char *name; /* NULL when threading does not know the thread */
    bool idle;
    bool gil;
    bool no_gil;    /* its interpreter had no GIL (free-threaded build): gil is meaningless */
    bool truncated; /* deeper than shown, or the frame chain was damaged */
    struct stacks_frame *frames; /* innermost first */
    size_t nframes;
};

struct stacks_report {
    int pid;
    /* a subprocess that could not be read (not Python, gone, ...): the error, else NULL */
    const char *error_code, *error_message;
    const char *source;      /* "process" or the core file's path (or the minidump's) */
    bool minidump;           /* source is a Windows minidump, not a core */
    const char *command;     /* the target's command line or executable, or NULL */
    const char *python_version;
    bool free_threaded;      /* a free-threaded build (3.13t) */
    const char *python_path; /* libpython or the executable holding the runtime */
    struct stacks_thread *threads;
    size_t nthreads;
    bool with_locals, with_native; /* what was asked for: JSON keys appear only then */
    bool with_async;
    struct stacks_task *tasks; /* --async */
    size_t ntasks;
    bool with_subprocesses;
    struct stacks_report *children; /* --subprocesses: each descendant, depth first */
    size_t nchildren;
    int parent_pid; /* a child's parent */
};

void stacks_render_text(const struct stacks_report *r, bool color, struct strbuf *out);
void stacks_render_json(const struct stacks_report *r, struct strbuf *out);

#endif
