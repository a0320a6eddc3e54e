/* A profile document as Chrome's Trace Event JSON (Perfetto, chrome://tracing). The profile
 * keeps no timestamp per CPU sample (the agent sums samples per line), so the trace holds only
 * what has a time: the program's run as one slice on its main thread, with the time split and
 * the hottest functions as arguments, the memory footprint timeline ("samples") as a counter
 * track, and each line's memory samples (its "memory_samples": when the line allocated or freed
 * a sample's worth, and the footprint then) as process-scoped instant events.
 * docs/export-formats.md says so. */
#ifndef SCRY_RENDER_TRACE_EVENT_H
#define SCRY_RENDER_TRACE_EVENT_H

#include "analysis/profile_doc.h"
#include "common/strbuf.h"

struct trace_opts {
    const char *exporter; /* "scry@VERSION" */
};

void trace_event_write(const struct pdoc *d, const struct trace_opts *o, struct strbuf *out);

#endif
