/* A call tree (analysis/stacks.h), or a profile's sample stream (per thread, in time order), as
 * a speedscope file (https://www.speedscope.app,
 * file-format-schema.json): one "sampled" profile over a shared frames table, one sample per
 * stack with a self weight, frame indices root first. Frame texts "NAME (FILE:LINE)" become
 * {"name", "file", "line"}; others only a name. */
#ifndef SCRY_RENDER_SPEEDSCOPE_H
#define SCRY_RENDER_SPEEDSCOPE_H

#include "analysis/stacks.h"
#include "common/strbuf.h"

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

struct speedscope_opts {
    const char *name;     /* the file's and the profile's name (the program); NULL: "scry" */
    const char *unit;     /* a speedscope ValueUnit: "none" (sample counts), "bytes", ... */
    const char *exporter; /* "scry@VERSION" */
};

/* Writes the document (compact, ending with a newline) of a finished tree; a differential tree
 * gives its "after" weights. */
void speedscope_write(const struct stk_tree *t, const struct speedscope_opts *o,
                      struct strbuf *out);

/* A profile's sample stream (scry run --timeline; d->have_stream) as one "sampled" profile per
 * thread ("MainThread (TID)", with "pid N: " first when the stream has several processes), its
 * samples in time order with their weights in microseconds, over a shared frames table
 * ({"name", "file", "line"}, in order of first use); activeProfileIndex: the thread with the
 * most time. Returns 0, or -SCRY_E_NO_MEMORY. */
struct pdoc;
int speedscope_write_stream(const struct pdoc *d, const struct speedscope_opts *o,
                            struct strbuf *out);

#endif
