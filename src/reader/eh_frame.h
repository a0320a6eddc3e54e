/* Function ranges from an object's unwind tables (.eh_frame_hdr and the .eh_frame it indexes),
 * which every x86-64 object keeps, stripped or not: the one way to find the bounds of a function
 * that no symbol names (a local clone gcc made of _PyEval_EvalFrameDefault, as in Debian sid's
 * 3.14 and 3.15). Reads go through a callback, so the same code serves this process's own
 * memory (the agent), a file on disk and another process's memory. */
#ifndef SCRY_READER_EH_FRAME_H
#define SCRY_READER_EH_FRAME_H

#include <stdint.h>
#include <stddef.h>

/* Reads len bytes at addr, in the address space the tables are in (a file's link-time
 * addresses, or a process's run-time ones): 0, or negative when they cannot be read. */
typedef int (*ehf_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* The largest function the .eh_frame_hdr at hdr_addr describes: [*start, *end) in the same
 * address space. 0; -1 when the tables cannot be read or use an encoding this reader does not
 * know (then nothing is set). */
int ehf_largest_function(ehf_read_fn read, void *ctx, uint64_t hdr_addr, uint64_t *start,
                         uint64_t *end);

/* The eval loop is by far the largest function of CPython (55-85 KB in the builds measured:
 * 3.11 to 3.15, gcc -O2/-O3): a function smaller than this is not it, and a symbol of
 * _PyEval_EvalFrameDefault this large is the loop itself, not a wrapper of a clone. */
#define EHF_EVAL_LOOP_MIN (16u << 10)

/* The eval loop of an interpreter module whose symbols do not name it: its largest function,
 * unless a symbol starting exactly there names something else. name_at(ctx, addr) gives the
 * name of a symbol starting exactly at addr, or NULL. 0 with [*start, *end), or -1. */
int ehf_eval_loop(ehf_read_fn read, void *ctx, uint64_t hdr_addr,
                  const char *(*name_at)(void *ctx, uint64_t addr), uint64_t *start,
                  uint64_t *end);

#endif
