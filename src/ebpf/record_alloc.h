/* `scry record --pid PID --allocations --dump FILE` (record_alloc.c, docs/allocations.md): the
 * allocations of a running process recorded with eBPF uprobes, joined to a heap snapshot. */
#ifndef SCRY_EBPF_RECORD_ALLOC_H
#define SCRY_EBPF_RECORD_ALLOC_H

#include <stdbool.h>

/* Whether record's arguments ask for the allocation recorder (--allocations). */
bool record_alloc_wanted(int argc, char **argv);
/* The command with those arguments; its exit status (errors recorded for the dispatcher). */
int record_alloc_main(int argc, char **argv);

#endif
