/* Operator instructions (src/cpython/operators.c): which slots a generic operator instruction
 * may call, by opcode and oparg, per version; specialised forms, calls and unknown versions call
 * none. tests/e2e/test_opcodes.py checks the opcode numbers against each interpreter, and
 * tests/e2e/test_record_operators.py the whole rule on real programs. */
#include <stdbool.h>
#include <stdint.h>

#include "cpython/operators.h"
#include "testlib.h"

#define BIT(n) (1ULL << (n))

static void test_binary_op_slots(void)
{
    /* PyNumberMethods indexes: nb_add 0, nb_subtract 1, nb_multiply 2, nb_remainder 3,
     * nb_inplace_add 19, nb_inplace_matrix_multiply 35, nb_matrix_multiply 34 */
    CHECK_EQ_U64(py_operator_slots(11, 122, 0), BIT(0));  /* BINARY_OP NB_ADD */
    CHECK_EQ_U64(py_operator_slots(11, 3, 4), BIT(34));   /* BINARY_OP_ADAPTIVE NB_MATMUL */
    CHECK_EQ_U64(py_operator_slots(12, 122, 10), BIT(1)); /* NB_SUBTRACT */
    CHECK_EQ_U64(py_operator_slots(13, 45, 6), BIT(3));   /* NB_REMAINDER */
    CHECK_EQ_U64(py_operator_slots(13, 45, 5), BIT(2));   /* NB_MULTIPLY */
    /* In place: its own slot, else the binary one. */
    CHECK_EQ_U64(py_operator_slots(13, 45, 13), BIT(19) | BIT(0));
    CHECK_EQ_U64(py_operator_slots(14, 44, 17), BIT(35) | BIT(34));
    /* 3.14+ NB_SUBSCR: a subscript; no such oparg before. */
    CHECK_EQ_U64(py_operator_slots(14, 44, 26), BIT(PY_OPS_MP_SUBSCRIPT));
    CHECK_EQ_U64(py_operator_slots(15, 42, 26), BIT(PY_OPS_MP_SUBSCRIPT));
    CHECK_EQ_U64(py_operator_slots(13, 45, 26), 0);
    CHECK_EQ_U64(py_operator_slots(13, 45, 200), 0);
}

static void test_other_kinds(void)
{
    CHECK_EQ_U64(py_operator_slots(11, 25, 0), BIT(PY_OPS_MP_SUBSCRIPT));   /* BINARY_SUBSCR */
    CHECK_EQ_U64(py_operator_slots(13, 39, 0), BIT(PY_OPS_MP_ASS_SUBSCRIPT)); /* STORE_SUBSCR */
    CHECK_EQ_U64(py_operator_slots(12, 107, 40), BIT(PY_OPS_RICHCOMPARE));   /* COMPARE_OP */
    CHECK_EQ_U64(py_operator_slots(14, 57, 0), BIT(PY_OPS_SQ_CONTAINS));     /* CONTAINS_OP */
    CHECK_EQ_U64(py_operator_slots(12, 248, 3), BIT(PY_OPS_ITERNEXT)); /* INSTRUMENTED_FOR_ITER */
    CHECK_EQ_U64(py_operator_slots(15, 79, 1), BIT(PY_OPS_GETATTRO));  /* LOAD_ATTR */
    CHECK_EQ_U64(py_operator_slots(11, 160, 1), BIT(PY_OPS_GETATTRO)); /* LOAD_METHOD */
    CHECK_EQ_U64(py_operator_slots(13, 108, 1), BIT(PY_OPS_SETATTRO)); /* STORE_ATTR */
}

static void test_not_operators(void)
{
    /* The specialised forms run inline in the eval loop: Python time. */
    CHECK_EQ_U64(py_operator_slots(11, 14, 0), 0);  /* 3.11 BINARY_OP_SUBTRACT_FLOAT */
    CHECK_EQ_U64(py_operator_slots(13, 150, 0), 0); /* 3.13 BINARY_OP_ADD_FLOAT */
    CHECK_EQ_U64(py_operator_slots(12, 22, 0), 0);  /* 3.12 BINARY_SUBSCR_TUPLE_INT */
    CHECK_EQ_U64(py_operator_slots(13, 53, 2), 0);  /* CALL: opcodes.c's */
    CHECK_EQ_U64(py_operator_slots(14, 0, 0), 0);  /* CACHE */
    /* Versions without a table. */
    CHECK_EQ_U64(py_operator_slots(10, 122, 0), 0);
    CHECK_EQ_U64(py_operator_slots(16, 42, 0), 0);
}

static const struct tl_test tests[] = {
    TL(test_binary_op_slots),
    TL(test_other_kinds),
    TL(test_not_operators),
};
TL_MAIN(tests)
