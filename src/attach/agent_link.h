/* An agent that `scry record --pid --memory` loaded into a process (common/agent_link.h): the
 * objects a process has mapped and their symbols, and the attached agent's part directory. */
#ifndef SCRY_ATTACH_AGENT_LINK_H
#define SCRY_ATTACH_AGENT_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The run-time address of the ELF symbol sym in the first object mapped in process pid whose
 * file name starts with prefix (such as "libc.so"); 0 when there is none. */
uint64_t agent_link_symbol(int pid, const char *prefix, const char *sym);

/* The part directory of the agent attached in process pid, into dir; *found false when no agent
 * is attached there (none loaded, idle, or its record does not name a private part directory of
 * the process's user). Returns 0, or an error (no_such_process) for a process that is gone. */
int agent_link_dir(int pid, char *dir, size_t size, bool *found);

#endif
