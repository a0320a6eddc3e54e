/* Unit tests for the error table: the string codes are a public contract (scripts and --json error
 * documents match on them), so each one is pinned here, with the last-error record and hints. */
#include <limits.h>

#include "common/error.h"
#include "testlib.h"

static void test_codes_are_stable(void)
{
    CHECK_STR(err_code_name(SCRY_E_OK), "ok");
    CHECK_STR(err_code_name(SCRY_E_USAGE), "usage");
    CHECK_STR(err_code_name(SCRY_E_NO_SUCH_PROCESS), "no_such_process");
    CHECK_STR(err_code_name(SCRY_E_PERMISSION_DENIED), "permission_denied");
    CHECK_STR(err_code_name(SCRY_E_NOT_PYTHON), "not_python");
    CHECK_STR(err_code_name(SCRY_E_UNSUPPORTED_PYTHON), "unsupported_python");
    CHECK_STR(err_code_name(SCRY_E_BAD_CORE), "bad_core");
    CHECK_STR(err_code_name(SCRY_E_BAD_SNAPSHOT), "bad_snapshot");
    CHECK_STR(err_code_name(SCRY_E_IO), "io_error");
    CHECK_STR(err_code_name(SCRY_E_NO_MEMORY), "out_of_memory");
    CHECK_STR(err_code_name(SCRY_E_READ_FAILED), "read_failed");
    CHECK_STR(err_code_name(SCRY_E_INTERNAL), "internal_error");
    CHECK_STR(err_code_name(SCRY_E_NO_API_KEY), "no_api_key");
    CHECK_STR(err_code_name(SCRY_E_PROVIDER_UNREACHABLE), "provider_unreachable");
    CHECK_STR(err_code_name(SCRY_E_PROVIDER_ERROR), "provider_error");
    CHECK_STR(err_code_name(SCRY_E_BAD_ANSWER), "bad_answer");
    /* Out-of-range values map to internal_error rather than reading past the table. */
    CHECK_STR(err_code_name(SCRY_E__COUNT), "internal_error");
    CHECK_STR(err_code_name((enum scry_err)1000), "internal_error");
    CHECK_STR(err_code_name((enum scry_err)-1), "internal_error");
}

static void test_codes_unique_and_hinted(void)
{
    for (int i = 0; i < SCRY_E__COUNT; i++) {
        const char *name = err_code_name((enum scry_err)i);
        CHECK(name && name[0]);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(name, err_code_name((enum scry_err)j)) != 0);
        const char *hint = err_default_hint((enum scry_err)i);
        CHECK(hint != NULL);
        if (i != SCRY_E_OK)
            CHECK(hint && hint[0]);
    }
    CHECK(strstr(err_default_hint(SCRY_E_PERMISSION_DENIED), "CAP_SYS_PTRACE") != NULL);
    CHECK(strstr(err_default_hint(SCRY_E_USAGE), "scry help") != NULL);
    CHECK_STR(err_default_hint(SCRY_E__COUNT), err_default_hint(SCRY_E_INTERNAL));
}

static void test_fail_returns_negative_code(void)
{
    err_clear();
    CHECK_EQ(err_fail(SCRY_E_NOT_PYTHON, "pid %d is %s", 1234, "bash"), -SCRY_E_NOT_PYTHON);
    CHECK_EQ(err_last_code(), SCRY_E_NOT_PYTHON);
    CHECK_STR(err_last_message(), "pid 1234 is bash");
    CHECK_STR(err_last_hint(), err_default_hint(SCRY_E_NOT_PYTHON));
    CHECK_EQ(err_from_ret(-SCRY_E_NOT_PYTHON), SCRY_E_NOT_PYTHON);

    int ret = err_fail(SCRY_E_BAD_SNAPSHOT, "truncated at %zu", (size_t)77);
    CHECK(ret < 0);
    CHECK_EQ(err_from_ret(ret), SCRY_E_BAD_SNAPSHOT);
    CHECK_STR(err_code_name(err_from_ret(ret)), "bad_snapshot");
    CHECK_STR(err_last_message(), "truncated at 77");
    /* Every code round-trips through a return value. */
    for (int i = 1; i < SCRY_E__COUNT; i++) {
        int r = err_fail((enum scry_err)i, "e%d", i);
        CHECK_EQ(r, -i);
        CHECK_EQ(err_from_ret(r), i);
        CHECK_EQ(err_last_code(), i);
    }
}

static void test_hint_override(void)
{
    err_clear();
    int ret = err_fail_hint(SCRY_E_PERMISSION_DENIED, "try --core instead", "cannot attach to %d", 9);
    CHECK_EQ(ret, -SCRY_E_PERMISSION_DENIED);
    CHECK_STR(err_last_message(), "cannot attach to 9");
    CHECK_STR(err_last_hint(), "try --core instead");
    /* A NULL hint means the default one; the next error replaces the previous hint. */
    err_fail_hint(SCRY_E_IO, NULL, "x");
    CHECK_STR(err_last_hint(), err_default_hint(SCRY_E_IO));
    err_fail(SCRY_E_USAGE, "bad option");
    CHECK_STR(err_last_hint(), err_default_hint(SCRY_E_USAGE));
}

static void test_clear_and_defaults(void)
{
    err_fail(SCRY_E_IO, "gone");
    err_clear();
    CHECK_EQ(err_last_code(), SCRY_E_OK);
    CHECK_STR(err_last_message(), "");
    CHECK_STR(err_last_hint(), "");
    /* An empty message falls back to the code name so output is never blank. */
    err_fail(SCRY_E_BAD_CORE, "%s", "");
    CHECK_STR(err_last_message(), "bad_core");
    /* Failing with OK or an unknown code is a bug: reported as internal_error, still negative. */
    CHECK_EQ(err_fail(SCRY_E_OK, "oops"), -SCRY_E_INTERNAL);
    CHECK_EQ(err_last_code(), SCRY_E_INTERNAL);
    CHECK_EQ(err_fail((enum scry_err)999, "oops"), -SCRY_E_INTERNAL);
    CHECK_EQ(err_fail((enum scry_err)-5, "oops"), -SCRY_E_INTERNAL);
}

static void test_long_message_truncated(void)
{
    char big[2000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    err_fail_hint(SCRY_E_IO, big, "%s", big);
    size_t n = strlen(err_last_message());
    CHECK(n > 100 && n < sizeof(big) - 1);
    CHECK(strlen(err_last_hint()) < sizeof(big) - 1);
}

static void test_from_ret(void)
{
    CHECK_EQ(err_from_ret(0), SCRY_E_OK);
    CHECK_EQ(err_from_ret(5), SCRY_E_OK); /* positive results (counts, fds) are not errors */
    CHECK_EQ(err_from_ret(-1), 1);
    CHECK_EQ(err_from_ret(-SCRY_E__COUNT), SCRY_E_INTERNAL);
    CHECK_EQ(err_from_ret(-1000), SCRY_E_INTERNAL);
    CHECK_EQ(err_from_ret(INT_MIN), SCRY_E_INTERNAL); /* must not negate INT_MIN */
    CHECK_EQ(err_from_ret(-1), SCRY_E_USAGE);
}

static const struct tl_test tests[] = {
    TL(test_codes_are_stable),
    TL(test_codes_unique_and_hinted),
    TL(test_fail_returns_negative_code),
    TL(test_hint_override),
    TL(test_clear_and_defaults),
    TL(test_long_message_truncated),
    TL(test_from_ret),
};
TL_MAIN(tests)
