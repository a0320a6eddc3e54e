/* CALL-family tables (src/cpython/opcodes.c): opcode numbers measured on real interpreters in
 * shared/reference/agent-sampling.md section 4, the exclusions (CALL_INTRINSIC_*, BINARY_OP,
 * INSTRUMENTED_LINE, and the specialised calls whose callee is a Python function: issue 10,
 * item 8) and unknown versions. tests/e2e/test_opcodes.py checks the whole tables. */
#include <stdbool.h>
#include <stddef.h>

#include "cpython/opcodes.h"
#include "testlib.h"

static int count(int minor)
{
    int n = 0;
    for (int op = 0; op < 256; op++)
        n += py_opcode_is_call(minor, (uint8_t)op);
    return n;
}

static void test_311(void)
{
    CHECK(py_opcode_is_call(11, 166)); /* PRECALL */
    CHECK(py_opcode_is_call(11, 171)); /* CALL */
    CHECK(py_opcode_is_call(11, 142)); /* CALL_FUNCTION_EX */
    CHECK(py_opcode_is_call(11, 22));  /* CALL_ADAPTIVE */
    CHECK(py_opcode_is_call(11, 67));  /* PRECALL_BUILTIN_FAST_WITH_KEYWORDS */
    CHECK(py_opcode_is_call(11, 66));  /* PRECALL_BUILTIN_CLASS */
    CHECK(!py_opcode_is_call(11, 143)); /* PRECALL_PYFUNC: a Python callee */
    CHECK(!py_opcode_is_call(11, 65));  /* PRECALL_BOUND_METHOD: only unpacks the method */
    CHECK(!py_opcode_is_call(11, 23));  /* CALL_PY_EXACT_ARGS */
    CHECK(!py_opcode_is_call(11, 24));  /* CALL_PY_WITH_DEFAULTS */
    CHECK(!py_opcode_is_call(11, 122)); /* BINARY_OP */
    CHECK(!py_opcode_is_call(11, 151)); /* RESUME */
    CHECK_EQ(count(11), 19);
}

static void test_312(void)
{
    CHECK(py_opcode_is_call(12, 171)); /* CALL */
    CHECK(py_opcode_is_call(12, 241)); /* INSTRUMENTED_CALL */
    CHECK(py_opcode_is_call(12, 244)); /* INSTRUMENTED_CALL_FUNCTION_EX */
    CHECK(py_opcode_is_call(12, 56));  /* CALL_NO_KW_TYPE_1 */
    for (int op = 39; op <= 48; op++)  /* CALL_NO_KW_* */
        CHECK(py_opcode_is_call(12, (uint8_t)op));
    CHECK(!py_opcode_is_call(12, 173)); /* CALL_INTRINSIC_1 */
    CHECK(!py_opcode_is_call(12, 174)); /* CALL_INTRINSIC_2 */
    CHECK(!py_opcode_is_call(12, 122)); /* BINARY_OP */
    CHECK(!py_opcode_is_call(12, 254)); /* INSTRUMENTED_LINE */
    CHECK(!py_opcode_is_call(12, 253)); /* INSTRUMENTED_INSTRUCTION */
    CHECK(!py_opcode_is_call(12, 166)); /* PRECALL on 3.11; something else now */
    CHECK(py_opcode_is_call(12, 29));   /* CALL_BUILTIN_CLASS */
    CHECK(!py_opcode_is_call(12, 23));  /* CALL_PY_EXACT_ARGS */
    CHECK(!py_opcode_is_call(12, 24));  /* CALL_PY_WITH_DEFAULTS */
    CHECK(!py_opcode_is_call(12, 28));  /* CALL_BOUND_METHOD_EXACT_ARGS */
    CHECK_EQ(count(12), 18);
}

static void test_313(void)
{
    CHECK(py_opcode_is_call(13, 53)); /* CALL */
    CHECK(py_opcode_is_call(13, 54)); /* CALL_FUNCTION_EX */
    CHECK(py_opcode_is_call(13, 57)); /* CALL_KW */
    for (int op = 165; op <= 176; op++) /* CALL_BUILTIN_CLASS ... CALL_NON_PY_GENERAL */
        CHECK(py_opcode_is_call(13, (uint8_t)op));
    for (int op = 179; op <= 181; op++) /* CALL_STR_1, CALL_TUPLE_1, CALL_TYPE_1 */
        CHECK(py_opcode_is_call(13, (uint8_t)op));
    /* Python callees: CALL_ALLOC_AND_ENTER_INIT, CALL_BOUND_METHOD_EXACT_ARGS/GENERAL,
     * CALL_PY_EXACT_ARGS, CALL_PY_GENERAL */
    static const int py13[] = {162, 163, 164, 177, 178};
    for (size_t i = 0; i < sizeof(py13) / sizeof(py13[0]); i++)
        CHECK(!py_opcode_is_call(13, (uint8_t)py13[i]));
    CHECK(!py_opcode_is_call(13, 161)); /* BINARY_SUBSCR_TUPLE_INT: just below the run */
    CHECK(!py_opcode_is_call(13, 182)); /* COMPARE_OP_FLOAT: just above it */
    CHECK(py_opcode_is_call(13, 244)); /* INSTRUMENTED_CALL */
    CHECK(py_opcode_is_call(13, 245)); /* INSTRUMENTED_CALL_KW */
    CHECK(py_opcode_is_call(13, 246)); /* INSTRUMENTED_CALL_FUNCTION_EX */
    CHECK(!py_opcode_is_call(13, 55)); /* CALL_INTRINSIC_1 */
    CHECK(!py_opcode_is_call(13, 56)); /* CALL_INTRINSIC_2 */
    CHECK(!py_opcode_is_call(13, 45)); /* BINARY_OP */
    CHECK(!py_opcode_is_call(13, 70)); /* ENTER_EXECUTOR */
    CHECK(!py_opcode_is_call(13, 71)); /* EXTENDED_ARG */
    CHECK(!py_opcode_is_call(13, 247)); /* INSTRUMENTED_INSTRUCTION */
    CHECK(!py_opcode_is_call(13, 254)); /* INSTRUMENTED_LINE */
    CHECK_EQ(count(13), 21);
}

static void test_314(void)
{
    CHECK(py_opcode_is_call(14, 52));  /* CALL */
    CHECK(py_opcode_is_call(14, 4));   /* CALL_FUNCTION_EX */
    CHECK(py_opcode_is_call(14, 55));  /* CALL_KW */
    CHECK(py_opcode_is_call(14, 152)); /* CALL_KW_NON_PY */
    CHECK(py_opcode_is_call(14, 160)); /* CALL_NON_PY_GENERAL */
    CHECK(!py_opcode_is_call(14, 151)); /* CALL_KW_BOUND_METHOD: a Python callee */
    CHECK(!py_opcode_is_call(14, 153)); /* CALL_KW_PY */
    CHECK(!py_opcode_is_call(14, 161)); /* CALL_PY_EXACT_ARGS */
    CHECK(py_opcode_is_call(14, 250)); /* INSTRUMENTED_CALL */
    CHECK(!py_opcode_is_call(14, 53)); /* CALL_INTRINSIC_1 */
    CHECK(!py_opcode_is_call(14, 54)); /* CALL_INTRINSIC_2 */
    CHECK(!py_opcode_is_call(14, 44)); /* BINARY_OP */
    CHECK_EQ(count(14), 22);
}

/* 3.15.2's numbers (tests/tools/gen_opcodes.py run by it). */
static void test_315(void)
{
    CHECK(py_opcode_is_call(15, 50));   /* CALL */
    CHECK(py_opcode_is_call(15, 4));    /* CALL_FUNCTION_EX */
    CHECK(py_opcode_is_call(15, 53));   /* CALL_KW */
    CHECK(py_opcode_is_call(15, 151));  /* CALL_EX_NON_PY_GENERAL */
    CHECK(!py_opcode_is_call(15, 152)); /* CALL_EX_PY: a Python callee */
    CHECK(!py_opcode_is_call(15, 164)); /* CALL_PY_EXACT_ARGS */
    CHECK(!py_opcode_is_call(15, 144)); /* CALL_ALLOC_AND_ENTER_INIT */
    CHECK(py_opcode_is_call(15, 249));  /* INSTRUMENTED_CALL */
    CHECK(!py_opcode_is_call(15, 51));  /* CALL_INTRINSIC_1 */
    CHECK_EQ(count(15), 23);
}

static void test_unknown_versions(void)
{
    for (int minor = -1; minor <= 20; minor++) {
        if (minor >= 11 && minor <= 15) {
            CHECK(py_opcodes_known(minor));
            continue;
        }
        CHECK(!py_opcodes_known(minor));
        CHECK_EQ(count(minor), 0);
    }
    CHECK(!py_opcode_is_call(10, 131)); /* CALL_FUNCTION on 3.10: no table, so no */
    CHECK(!py_opcode_is_call(16, 50));
}

static const struct tl_test tests[] = {
    TL(test_311), TL(test_312), TL(test_313), TL(test_314), TL(test_315),
    TL(test_unknown_versions),
};
TL_MAIN(tests)
