/* Native call chains of another process's stopped threads for `scry record --native`
 * (record_native.c): libunwind-ptrace, loaded with dlopen, and addresses named from the ELF
 * files the process maps. */
#ifndef SCRY_RECORD_RECORD_NATIVE_H
#define SCRY_RECORD_RECORD_NATIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader/reader.h"

struct rn_proc;

/* Loads libunwind's ptrace support once; 0, or not_found (recorded, with a hint) without it. */
int rn_available(void);
/* The unwinder and symbol cache of one process (rd must outlive it); NULL when out of memory. */
struct rn_proc *rn_proc_new(struct rd_reader *rd);
void rn_proc_free(struct rn_proc *p);
/* The return addresses of thread tid (stopped by rd_pause), innermost first, at most max. */
int rn_unwind(struct rn_proc *p, int tid, uint64_t *ips, size_t max, size_t *n);
/* Names ip (leaf: the innermost frame's own address, not a return address): the module's path
 * ("[unknown]" outside every file), the nearest function symbol ("" when none), the offset from
 * it (from the module's base without one), and whether it is the eval loop
 * (_PyEval_EvalFrameDefault). The strings live as long as p. */
int rn_name(struct rn_proc *p, uint64_t ip, bool leaf, const char **module, const char **symbol,
            uint64_t *offset, bool *eval);

#endif
