/* Operator instructions whose work is a C type's own code: `c = a @ b` on numpy arrays runs
 * numpy's matmul in the eval loop's BINARY_OP, with no CALL on the stack. From outside (scry
 * record --pid, scry top) there is no program counter to say where the thread is, so the rule is
 * predicted from what the instruction will call: the generic (or 3.11 adaptive) form of an
 * operator, subscript, comparison, containment, iteration or attribute instruction, whose operand
 * types implement that operation with a function outside the interpreter's image (an extension
 * module's code, as the agent's program counter would show). The specialised forms (int, float,
 * str, list, dict...) run inline in the eval loop and are never native here. docs/top.md. */
#ifndef SCRY_CPYTHON_OPERATORS_H
#define SCRY_CPYTHON_OPERATORS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/hashmap.h"
#include "cpython/frame_walk.h"
#include "cpython/runtime.h"

/* Bits of a type's slots (one per operation an instruction may call), set when the type's
 * function for it lies outside the interpreter. 0-35: PyNumberMethods by index. */
enum py_op_slot {
    PY_OPS_MP_SUBSCRIPT = 36,
    PY_OPS_MP_ASS_SUBSCRIPT,
    PY_OPS_SQ_CONTAINS,
    PY_OPS_RICHCOMPARE,
    PY_OPS_ITERNEXT,
    PY_OPS_GETATTRO,
    PY_OPS_SETATTRO,
    PY_OPS_NSLOTS
};

/* The slots an instruction of CPython 3.<minor> (opcode and oparg: one code unit of
 * co_code_adaptive) may call, as a mask of enum py_op_slot bits; 0 when it is not a generic
 * operator instruction (specialised forms, calls, everything else) or the version is unknown. */
uint64_t py_operator_slots(int minor, uint8_t opcode, uint8_t oparg);

/* What the per-sample test keeps: each type's slot bits (cached by the type's address), the
 * frame walker's facts, and the interpreter's executable address ranges. */
struct py_op_cache {
    struct hashmap types; /* type address -> slot bits | PY_OPS_KNOWN */
    struct py_fw fw;
    bool ready, failed;
    int nranges;
    uint64_t ranges[16][2];
};

void py_op_cache_init(struct py_op_cache *c);
/* Forgets the types (their memory can be reused by other types); keeps the ranges. */
void py_op_cache_clear(struct py_op_cache *c);
void py_op_cache_free(struct py_op_cache *c);

/* True when a value on the value stack of the frame at frame_addr (running the code object at
 * code) has a type whose function for one of `slots` (py_operator_slots) lies outside the
 * interpreter: the thread is running that type's C code. From outside the stack top is unknown
 * while the frame runs (3.11-3.13 keep it in a register), so every slot of the value stack is
 * looked at: a stale value above the top can make a wrong answer (docs/top.md). Reads through
 * the runtime's reader; a failed read answers false. */
bool py_operator_in_c(struct py_runtime *rt, struct py_op_cache *c, uint64_t frame_addr,
                      uint64_t code, uint64_t slots);

#endif
