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

/* The line a frame resting at `unit` is on, for samples and stacks: py_linetable_line's, except
 * that an instruction the table gives no line (3.11's COPY_FREE_VARS and MAKE_CELL before the
 * first line, the JUMP_BACKWARD that closes a loop after an `if`, an exception handler's
 * PUSH_EXC_INFO) is on the line of the last instruction before it that has one, or on
 * firstlineno when none does: CPython's line of the frame there, never line 0 (the line 0 of
 * the RESUME that opens a module's code on 3.12+ is firstlineno too). -1 only when
 * the table is malformed there or unit is past its end. */
int py_linetable_frame_line(const uint8_t *table, size_t len, int firstlineno, int64_t unit);

#endif
