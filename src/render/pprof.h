/* A profile document as pprof's profile.proto (github.com/google/pprof proto/profile.proto),
 * gzipped, for `go tool pprof`, Pyroscope, Parca and the like. docs/export-formats.md says
 * what each sample type holds. */
#ifndef SCRY_RENDER_PPROF_H
#define SCRY_RENDER_PPROF_H

#include <stdbool.h>

#include "analysis/profile_doc.h"
#include "common/strbuf.h"

/* Which sample types a profile holds. The export has them all; a push sends the time types and
 * the memory types as two profiles, since Pyroscope names a profile (its `__name__`) after its
 * sample types: one pprof would put memory under `wall`, Go's under `memory`. */
enum pprof_part {
    PPROF_ALL,    /* the time types, and the memory types with a memory profile */
    PPROF_TIME,   /* samples, python, native, system, wall (or cpu); period wall (cpu) in ns */
    PPROF_MEMORY, /* alloc_space, inuse_space; period type space/bytes, as Go's heap profile */
};

struct pprof_opts {
    const char *exporter; /* "scry VERSION", written as a comment */
    bool raw;             /* the serialized message without gzip (tests) */
    enum pprof_part part;
};

/* Writes the profile; 0 or a negative error (recorded). */
int pprof_write(const struct pdoc *d, const struct pprof_opts *o, struct strbuf *out);

#endif
