/* A profile document as pprof's profile.proto (github.com/google/pprof proto/profile.proto),
 * gzipped, for `go tool pprof`, Pyroscope, Parca and the like. docs/export-formats.md says
 * what each sample type holds. */
#ifndef SCRY_RENDER_PPROF_H
#define SCRY_RENDER_PPROF_H

#include <stdbool.h>

#include "analysis/profile_doc.h"
#include "common/strbuf.h"

struct pprof_opts {
    const char *exporter; /* "scry VERSION", written as a comment */
    bool raw;             /* the serialized message without gzip (tests) */
};

/* Writes the profile; 0 or a negative error (recorded). */
int pprof_write(const struct pdoc *d, const struct pprof_opts *o, struct strbuf *out);

#endif
