/* Which opcodes are calls: the CALL family per CPython minor version (3.11-3.15), used to tell
 * time inside a call (usually into C: native) from time in the eval loop itself (Python) from
 * the opcode the innermost frame's instruction pointer rests on. See
 * shared/reference/agent-sampling.md sections 4 and 5. Safe in a signal handler. */
#ifndef SCRY_CPYTHON_OPCODES_H
#define SCRY_CPYTHON_OPCODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when `opcode`, the low byte of a code unit of co_code_adaptive (generic, specialised or
 * instrumented), is in the CALL family of CPython 3.<minor>: every CALL* and INSTRUMENTED_CALL*
 * opcode, and on 3.11 PRECALL and every PRECALL_* (the specialised PRECALLs make the C call
 * themselves), but not CALL_INTRINSIC_1/2, nor the specialisations whose callee is a Python
 * function (CALL_PY_*, CALL_BOUND_METHOD_*, CALL_ALLOC_AND_ENTER_INIT, CALL_KW_PY,
 * CALL_KW_BOUND_METHOD, PRECALL_PYFUNC, PRECALL_BOUND_METHOD: frame set-up, not C work). False for every opcode of a version with no table.
 * INSTRUMENTED_LINE and INSTRUMENTED_INSTRUCTION (sys.monitoring, settrace, coverage) hide the real
 * opcode in co->_co_monitoring and are not in the family: a caller that wants them resolved must
 * follow that table itself. */
bool py_opcode_is_call(int minor, uint8_t opcode);

/* True when there is a CALL-family table for CPython 3.<minor>. */
bool py_opcodes_known(int minor);

#endif
