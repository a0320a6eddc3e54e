/* `scry record --pid PID --memory` (record_memory.c, docs/record-memory.md). */
#ifndef SCRY_CLI_RECORD_MEMORY_H
#define SCRY_CLI_RECORD_MEMORY_H

#include "cli/sampling.h"

/* Loads the agent (the library at agent) into process pid, profiles it until o->duration,
 * Ctrl-C/SIGTERM or its end, detaches and writes the profile to outfile. o's rate and filter
 * are the agent's. Returns the command's exit status (errors reported). */
int record_memory(int pid, const struct smp_opts *o, const char *outfile, const char *agent);

#endif
