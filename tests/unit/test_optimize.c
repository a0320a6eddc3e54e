/* Unit tests for optimisation proposals (src/llm/optimize_prompt.c, llm_providers.c): the
 * location parser, the region and prompt from a synthetic profile, the answer split into code
 * and reasons, the line diff, and the key scrubbing of provider text. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/error.h"
#include "llm/llm_providers.h"
#include "llm/optimize_prompt.h"
#include "testlib.h"

/* cli_common.c names the command table; this test has no commands. */
const struct cli_command cli_commands[] = {{.name = "optimize", .summary = "", .usage = ""}};
const size_t cli_ncommands = 1;

static void test_location(void)
{
    struct opt_request r;
    char a[] = "app/work.py";
    CHECK_EQ(opt_parse_location(a, &r), 0);
    CHECK_STR(r.file, "app/work.py");
    CHECK_EQ(r.first, 0);
    char b[] = "work.py:12";
    CHECK_EQ(opt_parse_location(b, &r), 0);
    CHECK_STR(r.file, "work.py");
    CHECK_EQ(r.first, 12);
    CHECK_EQ(r.last, 12);
    char c[] = "w.py:3-9";
    CHECK_EQ(opt_parse_location(c, &r), 0);
    CHECK_EQ(r.first, 3);
    CHECK_EQ(r.last, 9);
    char d[] = "w.py:9-3", e[] = "w.py:0", f[] = "w.py:3-x", g[] = ":3";
    CHECK_EQ(opt_parse_location(d, &r), -SCRY_E_USAGE);
    CHECK_EQ(opt_parse_location(e, &r), -SCRY_E_USAGE);
    CHECK_EQ(opt_parse_location(f, &r), -SCRY_E_USAGE);
    CHECK_EQ(opt_parse_location(g, &r), -SCRY_E_USAGE);
}

static void test_diff(void)
{
    struct strbuf sb = STRBUF_INIT;
    CHECK(opt_diff("f.py", 10, "a\nb\nc\n", "a\nB\nc\nd\n", &sb));
    CHECK_STR(sb_str(&sb), "--- f.py:10-12\n+++ f.py:10 (proposed)\n@@ -10,3 +10,4 @@\n"
                           " a\n-b\n+B\n c\n+d\n");
    sb_reset(&sb);
    CHECK(opt_diff("f.py", 1, "x\ny\n", "y\n", &sb));
    CHECK_STR(sb_str(&sb), "--- f.py:1-2\n+++ f.py:1 (proposed)\n@@ -1,2 +1,1 @@\n-x\n y\n");
    sb_reset(&sb);
    /* A line that is a prefix of another is a different line. */
    CHECK(opt_diff("f.py", 5, "ab\n", "a\n", &sb));
    CHECK(strstr(sb_str(&sb), "-ab\n+a\n") != NULL);
    sb_release(&sb);
}

static void test_answer(void)
{
    struct opt_result r = {0};
    r.file = strdup("f.py");
    r.first = r.last = 7;
    sb_adds(&r.original, "        total += i * i % 7\n");
    const char *ans = "Try this:\n```python\ntotal += (i * i) % 7\n```\nIt is faster.\n";
    CHECK_EQ(opt_take_answer(ans, strlen(ans), &r), 0);
    /* Back to the region's 8 spaces of indentation. */
    CHECK_STR(sb_str(&r.code), "        total += (i * i) % 7\n");
    CHECK_STR(sb_str(&r.reasons), "Try this:\n\nIt is faster.");
    CHECK(strstr(sb_str(&r.diff), "-        total += i * i % 7\n+        total += (i * i) % 7\n"));
    opt_result_free(&r);

    struct opt_result s = {0};
    sb_adds(&s.original, "x = 1\n");
    const char *none = "I would leave it as it is.";
    CHECK_EQ(opt_take_answer(none, strlen(none), &s), -SCRY_E_BAD_ANSWER);
    const char *open = "```python\nx = 2\n";
    CHECK_EQ(opt_take_answer(open, strlen(open), &s), -SCRY_E_BAD_ANSWER);
    opt_result_free(&s);

    struct opt_result t = {0};
    sb_adds(&t.original, "    a()\n");
    const char *tilde = "~~~\n    b()\n~~~";
    CHECK_EQ(opt_take_answer(tilde, strlen(tilde), &t), 0);
    CHECK_STR(sb_str(&t.code), "    b()\n");
    CHECK_STR(sb_str(&t.reasons), "(the model gave no reasons)");
    opt_result_free(&t);
}

static json_t *line(int no, const char *src, double py, double mb)
{
    return json_pack("{s:i,s:s,s:f,s:f,s:f,s:f,s:f,s:f}", "lineno", no, "line", src,
                     "n_cpu_percent_python", py, "n_cpu_percent_c", 0.0, "n_sys_percent", 0.0,
                     "n_malloc_mb", mb, "n_peak_mb", 0.0, "n_copy_mb_s", 0.0);
}

static json_t *profile(void)
{
    static const char *src[] = {"import math\n",      "\n",
                                "def f(n):\n",        "    s = 0\n",
                                "    for i in range(n):\n", "        s += i \\u0026 3\n",
                                "    return s\n",     "\n",
                                "x = f(10)\n"};
    json_t *lines = json_array();
    for (int i = 0; i < 9; i++)
        json_array_append_new(lines, line(i + 1, src[i], i == 5 ? 61.25 : i == 4 ? 20.0 : 0,
                                          i == 5 ? 12.5 : 0));
    json_t *fn = json_pack("{s:s,s:i,s:f,s:f,s:f}", "line", "f", "lineno", 3,
                           "n_cpu_percent_python", 81.25, "n_cpu_percent_c", 0.0,
                           "n_sys_percent", 0.0);
    return json_pack("{s:s,s:{s:{s:f,s:o,s:[o]}}}", "program", "/p/m.py", "files", "/p/m.py",
                     "percent_cpu_time", 90.0, "lines", lines, "functions", fn);
}

static void test_prepare(void)
{
    json_t *doc = profile();
    struct pdoc model, *p = &model;
    CHECK_EQ(pdoc_load(p, doc, "p.json"), 0);
    json_decref(doc);
    struct opt_result r = {0};
    struct opt_request q = {.file = "m.py"};
    /* The hottest function: f, from its def to its return. */
    CHECK_EQ(opt_prepare(p, &q, &r), 0);
    CHECK_EQ(r.first, 3);
    CHECK_EQ(r.last, 7);
    CHECK_STR(r.function, "f");
    const char *pr = sb_str(&r.prompt);
    CHECK(strstr(pr, "    6 |    61.2 |     0.0 |     0.0 |     12.5 |     0.0 |      0.0 | "
                     "        s += i & 3\n") != NULL ||
          strstr(pr, "    6 |    61.3 |") != NULL);
    CHECK(strstr(pr, "import math\n") != NULL);
    CHECK(strstr(pr, "Function: f (lines 3-7)") != NULL);
    CHECK(strstr(pr, "    9 | x = f(10)\n") != NULL); /* context after the region */
    CHECK(strstr(pr, "lines 3-7") != NULL);
    CHECK_STR(sb_str(&r.original), "def f(n):\n    s = 0\n    for i in range(n):\n"
                                   "        s += i & 3\n    return s\n");
    opt_result_free(&r);

    struct opt_result s = {0};
    struct opt_request one = {.file = "/p/m.py", .first = 9, .last = 9};
    CHECK_EQ(opt_prepare(p, &one, &s), 0);
    CHECK_STR(s.function, ""); /* module level */
    CHECK(strstr(sb_str(&s.prompt), "Function: none (module level)") != NULL);
    opt_result_free(&s);

    struct opt_result t = {0};
    struct opt_request bad = {.file = "m.py", .first = 5, .last = 10};
    CHECK_EQ(opt_prepare(p, &bad, &t), -SCRY_E_USAGE);
    opt_result_free(&t);
    struct opt_result u = {0};
    struct opt_request nofile = {.file = "other.py"};
    CHECK_EQ(opt_prepare(p, &nofile, &u), -SCRY_E_USAGE);
    opt_result_free(&u);
    struct opt_result v = {0};
    struct opt_request nofn = {.file = "m.py", .function = "g"};
    CHECK_EQ(opt_prepare(p, &nofn, &v), -SCRY_E_USAGE);
    opt_result_free(&v);
    pdoc_free(p);
}

static void test_scrub(void)
{
    struct strbuf sb = STRBUF_INIT;
    sb_adds(&sb, "bad key sk-12345678abc, again sk-12345678abc.");
    llm_scrub(&sb, "sk-12345678abc");
    CHECK_STR(sb_str(&sb), "bad key [key], again [key].");
    llm_scrub(&sb, "short"); /* too short to be a key: left alone */
    CHECK_STR(sb_str(&sb), "bad key [key], again [key].");
    sb_release(&sb);
    CHECK(llm_find("bedrock") != NULL);
    CHECK(llm_find("bard") == NULL);
}

/* One line through the redaction of what is sent: its text as sent ("" when unchanged) and
 * what was noted. */
static void redacts(const char *line, int *state, const char *want, const char *note)
{
    struct strbuf out = STRBUF_INIT, what = STRBUF_INIT;
    bool changed = opt_redact_line(line, strlen(line), state, &out, &what);
    CHECK_EQ(changed, *want != 0);
    if (*want)
        CHECK_STR(sb_str(&out), want);
    else
        CHECK_STR(sb_str(&out), line);
    CHECK(strstr(sb_str(&what), note) != NULL);
    sb_release(&out);
    sb_release(&what);
}

/* Issue 26 item 8: secrets in the source never reach the provider. */
static void test_redact_source(void)
{
    int st = 0;
    redacts("DB_PASSWORD = \"hunter2\"", &st, "DB_PASSWORD = \"<redacted>\"",
            "the string assigned to DB_PASSWORD");
    redacts("API_KEY = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123'", &st,
            "API_KEY = '<redacted>'", "looks like a secret");
    redacts("conn = connect(user=\"bob\", password=\"pw12\", host=\"db\")", &st,
            "conn = connect(user=\"bob\", password=\"<redacted>\", host=\"db\")", "password");
    redacts("cfg[\"api_key\"] = b'abcd'", &st, "cfg[\"api_key\"] = b'<redacted>'", "api_key");
    redacts("H = {\"Authorization\": \"Bearer x\", \"user\": \"bob\"}", &st,
            "H = {\"Authorization\": \"<redacted>\", \"user\": \"bob\"}", "Authorization");
    redacts("url = f\"postgres://app:s3cret99@db/{name}\"", &st, "url = f\"<redacted>\"",
            "looks like a secret");
    redacts("x = 1  # ghp_abcdefghijklmnopqrstuvwxyz0123456789", &st, "x = 1  # <redacted>",
            "comment");
    redacts("k = AKIAABCDEFGHIJKLMNOP", &st, "k = <redacted>", "a name");
    /* Code that only mentions secret-sounding names keeps every character. */
    redacts("if password == \"abcd\":", &st, "", "");
    redacts("    n = len(tokens) + int(\"12\") + f(key=k)", &st, "", "");
    /* Everything in a secret name's value, a default of a look-up included (over-redaction is
     * the accepted cost, as in snapshots). */
    redacts("DB_PASSWORD = os.environ.get(\"PW\", \"hunter2\"); x = \"a\"", &st,
            "DB_PASSWORD = os.environ.get(\"<redacted>\", \"<redacted>\"); x = \"a\"",
            "DB_PASSWORD");
    redacts("x = \"hello\"  # a comment about keys", &st, "", "");
    redacts("s = 'it\\'s' + \"#\"", &st, "", "");
    CHECK_EQ(st, 0);
    /* A triple-quoted string carries over lines; its value under a secret name too. */
    redacts("SECRET = \"\"\"first", &st, "SECRET = \"\"\"<redacted>", "SECRET");
    CHECK(st != 0);
    redacts("middle", &st, "<redacted>", "assigned");
    redacts("last\"\"\" + x", &st, "<redacted>\"\"\" + x", "assigned");
    CHECK_EQ(st, 0);
    redacts("doc = '''", &st, "", "");
    redacts("password=hunter22 in a doc", &st, "<redacted>", "looks like a secret");
    redacts("plain words'''", &st, "", "");
    CHECK_EQ(st, 0);
}

static const struct tl_test tests[] = {TL(test_location),    TL(test_diff),  TL(test_answer),
                                       TL(test_prepare),     TL(test_scrub),
                                       TL(test_redact_source)};
TL_MAIN(tests)
