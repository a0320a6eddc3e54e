/* Making a running process call a function of scry's agent: the agent library is loaded into it
 * first when it is not there yet. `scry record --pid --memory` attaches and detaches this way
 * (record/record_memory.c). The implementation for each system is in its subfolder
 * (linux/inject_ptrace.c: ptrace, x86-64). */
#ifndef SCRY_PLATFORM_INJECT_H
#define SCRY_PLATFORM_INJECT_H

#include <stdint.h>

/* The run-time address of symbol sym in the first library loaded in process pid whose file name
 * starts with lib; 0 when there is none (attach/agent_link.c's agent_link_symbol). */
typedef uint64_t (*pf_symbol_fn)(int pid, const char *lib, const char *sym);

/* Makes process pid call fn(text) of the agent at path agent (loaded first if it is not), with
 * text copied into the process (NULL: no argument), and puts the process back exactly as it was.
 * *ret: the call's int result. Returns 0, or no_such_process (it ended meanwhile),
 * permission_denied, inject_refused (no safe point found, no dlopen, vector registers
 * unreadable, another architecture) or internal (the call faulted; the process goes on). */
int pf_inject_call(int pid, const char *agent, const char *fn, const char *text,
                   pf_symbol_fn symbol, int64_t *ret);

#endif
