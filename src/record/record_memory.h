/* `scry record --pid PID --memory` (record_memory.c, docs/record-memory.md). */
#ifndef SCRY_RECORD_RECORD_MEMORY_H
#define SCRY_RECORD_RECORD_MEMORY_H

#include "record/sampling.h"

/* --memory's own options. */
struct record_memory_opts {
    const char *heap_at_end;     /* a snapshot with the allocation samples, before the detach */
    unsigned long long window;   /* the allocation sampling window in bytes (0: the agent's) */
    bool quiet;                  /* --quiet: no progress line, no informational lines */
};

/* Loads the agent (the library at agent) into process pid, profiles it until o->duration,
 * Ctrl-C/SIGTERM or its end, (with m->heap_at_end) has `scry dump --pid` take its snapshot,
 * detaches and writes the profile to outfile. o's rate and filter are the agent's. Returns the
 * command's exit status (errors reported). */
int record_memory(int pid, const struct smp_opts *o, const struct record_memory_opts *m,
                  const char *outfile, const char *agent);

#endif
