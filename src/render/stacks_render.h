/* The `scry stacks` report: a plain model of every thread's Python stack, and its text (in the
 * manner of py-spy dump) and JSON renderings. Knows nothing of how the stacks were read. */
#ifndef SCRY_RENDER_STACKS_RENDER_H
#define SCRY_RENDER_STACKS_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

struct stacks_frame {
    const char *function;
    const char *file;
    int line; /* -1: unknown */
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
    const char *source;      /* "process" or the core file's path */
    const char *command;     /* the target's command line or executable, or NULL */
    const char *python_version;
    bool free_threaded;      /* a free-threaded build (3.13t) */
    const char *python_path; /* libpython or the executable holding the runtime */
    struct stacks_thread *threads;
    size_t nthreads;
};

void stacks_render_text(const struct stacks_report *r, bool color, struct strbuf *out);
void stacks_render_json(const struct stacks_report *r, struct strbuf *out);

#endif
