/* Unit tests for the file filter (cpython/file_filter.c), the rules of docs/agent-protocol.md
 * that the agent and `scry record` share: each rule in its order, on synthetic paths. */
#include "cpython/file_filter.h"
#include "testlib.h"

static struct py_filter base(void)
{
    struct py_filter f = {.program_path = "/srv/app", .profile_only = "", .profile_exclude = ""};
    return f;
}

static void test_default_is_the_program_directory(void)
{
    struct py_filter f = base();
    CHECK_EQ(py_filter_classify(&f, "/srv/app/main.py"), PY_RULE_PROFILED);
    CHECK_EQ(py_filter_classify(&f, "/srv/app/pkg/util.py"), PY_RULE_PROFILED);
    /* A sibling whose name starts the same is not under it. */
    CHECK_EQ(py_filter_classify(&f, "/srv/application/x.py"), PY_RULE_OUTSIDE_PROGRAM);
    CHECK_EQ(py_filter_classify(&f, "/tmp/other.py"), PY_RULE_OUTSIDE_PROGRAM);
    CHECK_EQ(py_filter_classify(&f, "<string>"), PY_RULE_NOT_A_FILE);
    CHECK_EQ(py_filter_classify(&f, "<frozen importlib._bootstrap>"), PY_RULE_NOT_A_FILE);
    CHECK_EQ(py_filter_classify(&f, ""), PY_RULE_NOT_A_FILE);
    /* A trailing slash on the program path changes nothing. */
    f.program_path = "/srv/app/";
    CHECK_EQ(py_filter_classify(&f, "/srv/app/main.py"), PY_RULE_PROFILED);
}

static void test_system_libraries(void)
{
    struct py_filter f = base();
    f.program_path = "/opt";
    CHECK_EQ(py_filter_classify(&f, "/usr/lib/python3.12/json/encoder.py"),
             PY_RULE_SYSTEM_LIBRARY);
    CHECK_EQ(py_filter_classify(&f, "/srv/app/.venv/site-packages/x.py"), PY_RULE_SYSTEM_LIBRARY);
    CHECK_EQ(py_filter_classify(&f, "/usr/lib/dist-packages/y.py"), PY_RULE_SYSTEM_LIBRARY);
    /* Under a prefix only once the prefixes are known. */
    snprintf(f.prefixes[0], sizeof(f.prefixes[0]), "/opt/py");
    CHECK_EQ(py_filter_classify(&f, "/opt/py/x.py"), PY_RULE_PROFILED);
    f.prefixes_known = true;
    CHECK_EQ(py_filter_classify(&f, "/opt/py/x.py"), PY_RULE_SYSTEM_LIBRARY);
    f.system_libraries = true;
    CHECK_EQ(py_filter_classify(&f, "/opt/py/x.py"), PY_RULE_PROFILED);
    CHECK_EQ(py_filter_classify(&f, "/usr/lib/python3.12/json/encoder.py"), PY_RULE_PROFILED);
}

static void test_only_exclude_all_in_order(void)
{
    struct py_filter f = base();
    f.profile_exclude = "secret,,vendor";
    CHECK_EQ(py_filter_classify(&f, "/srv/app/vendor/x.py"), PY_RULE_EXCLUDED);
    CHECK_EQ(py_filter_classify(&f, "/srv/app/secret.py"), PY_RULE_EXCLUDED);
    /* An empty item matches nothing. */
    CHECK_EQ(py_filter_classify(&f, "/srv/app/main.py"), PY_RULE_PROFILED);
    f.profile_only = "lib,main";
    CHECK_EQ(py_filter_classify(&f, "/srv/app/other.py"), PY_RULE_NOT_IN_PROFILE_ONLY);
    /* --profile-only reaches outside the program path, but exclusion comes first. */
    CHECK_EQ(py_filter_classify(&f, "/opt/lib/x.py"), PY_RULE_PROFILED);
    CHECK_EQ(py_filter_classify(&f, "/opt/lib/vendor/x.py"), PY_RULE_EXCLUDED);
    /* ...and it does not let the standard library in. */
    CHECK_EQ(py_filter_classify(&f, "/usr/lib/python3.12/main.py"), PY_RULE_SYSTEM_LIBRARY);
    f.profile_all = true;
    CHECK_EQ(py_filter_classify(&f, "/usr/lib/python3.12/main.py"), PY_RULE_PROFILED);
    CHECK_EQ(py_filter_classify(&f, "/usr/share/python3/json.py"), PY_RULE_NOT_IN_PROFILE_ONLY);
    CHECK_EQ(py_filter_classify(&f, "<string>"), PY_RULE_NOT_A_FILE);
}

static void test_pseudo_files(void)
{
    struct py_filter f = base();
    CHECK_EQ(py_filter_pseudo(&f, "<native>"), PY_RULE_PROFILED);
    f.profile_exclude = "native";
    CHECK_EQ(py_filter_pseudo(&f, "<native>"), PY_RULE_EXCLUDED);
    f.profile_exclude = "";
    f.profile_only = "app";
    CHECK_EQ(py_filter_pseudo(&f, "<interpreter shutdown>"), PY_RULE_NOT_IN_PROFILE_ONLY);
    f.profile_only = "shutdown";
    CHECK_EQ(py_filter_pseudo(&f, "<interpreter shutdown>"), PY_RULE_PROFILED);
}

static const struct tl_test tests[] = {
    TL(test_default_is_the_program_directory),
    TL(test_system_libraries),
    TL(test_only_exclude_all_in_order),
    TL(test_pseudo_files),
};
TL_MAIN(tests)
