/* Decoding of CPython 3.11+ location tables (co_linetable): code-unit index -> source line.
 * Pure functions over bytes, shared by `scry stacks`, the heap tools and the agent (it allocates
 * nothing and takes no locks, so it is safe in a signal handler). */
#ifndef SCRY_CPYTHON_LINETABLE_H
#define SCRY_CPYTHON_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/* The source line of the instruction at code-unit index `unit` (an index into co_code_adaptive in
 * 2-byte units), or -1 when the table gives it no line or is malformed there. A negative unit (a
 * frame that has not started) gives firstlineno, as CPython does. */
int py_linetable_line(const uint8_t *table, size_t len, int firstlineno, int64_t unit);

#endif
