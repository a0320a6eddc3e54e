/* A profile document in the Firefox Profiler's processed format (profiler.firefox.com; the
 * format CPython 3.15's `profiling.sampling --gecko` writes: meta.version 32,
 * preprocessedProfileVersion 57, which the app upgrades on load). The profile keeps no
 * timestamp per sample, so every sample row is at time 0 and carries a weight: the call tree,
 * flame graph and per-category split are right, the timeline is not a timeline. See
 * docs/export-formats.md. */
#ifndef SCRY_RENDER_FIREFOX_PROFILE_H
#define SCRY_RENDER_FIREFOX_PROFILE_H

#include "analysis/profile_doc.h"
#include "common/strbuf.h"

struct firefox_opts {
    const char *exporter; /* "scry VERSION" */
};

/* 0 or -SCRY_E_NO_MEMORY (recorded). */
int firefox_profile_write(const struct pdoc *d, const struct firefox_opts *o, struct strbuf *out);

#endif
