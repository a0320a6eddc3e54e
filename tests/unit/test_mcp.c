/* `scry mcp`'s pure parts: the argument validator (src/mcp/mcp_schema.c), the answer's cuts to
 * limit and token budget (src/mcp/mcp_answer.c), the line reader and the cleaning of what is
 * sent (src/mcp/mcp_protocol.c), and the roots rule of path arguments (src/mcp/mcp_paths.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/profile_doc.h"
#include "common/error.h"
#include "mcp/mcp_answer.h"
#include "mcp/mcp_paths.h"
#include "mcp/mcp_protocol.h"
#include "mcp/mcp_schema.h"
#include "testlib.h"

static const char schema_text[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"snapshot\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":8},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000},"
    "\"by\":{\"type\":\"string\",\"enum\":[\"time\",\"memory\"]},"
    "\"ratio\":{\"type\":\"number\",\"minimum\":0.5},"
    "\"flag\":{\"type\":\"boolean\"},"
    "\"command\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":2,\"items\":{\"type\":\"string\"}}"
    "},\"required\":[\"snapshot\"],\"additionalProperties\":false}";

/* Checks args against the schema: ok, or the message naming why. */
static void expect(const char *args, const char *why)
{
    json_t *schema = json_loads(schema_text, 0, NULL), *v = json_loads(args, JSON_DECODE_ANY, NULL);
    struct strbuf sb = STRBUF_INIT;
    CHECK(schema && v);
    bool ok = mcp_schema_check(schema, v, &sb);
    if (why) {
        CHECK(!ok);
        CHECK_STR(sb_str(&sb), why);
    } else {
        CHECK(ok);
        CHECK_EQ(sb.len, 0);
    }
    sb_release(&sb);
    json_decref(schema);
    json_decref(v);
}

static void test_schema(void)
{
    expect("{\"snapshot\":\"a.heap\"}", NULL);
    expect("{\"snapshot\":\"a\",\"limit\":1000,\"by\":\"memory\",\"ratio\":0.5,\"flag\":false,"
           "\"command\":[\"x\",\"y\"]}",
           NULL);
    expect("{}", "argument 'snapshot' is required");
    expect("[]", "the arguments must be an object, not array");
    expect("{\"snapshot\":3}", "argument 'snapshot' must be a string, not integer");
    expect("{\"snapshot\":\"\"}", "argument 'snapshot' must have at least 1 characters");
    expect("{\"snapshot\":\"123456789\"}", "argument 'snapshot' must have at most 8 characters");
    expect("{\"snapshot\":\"a\",\"limit\":0}", "argument 'limit' must be at least 1");
    expect("{\"snapshot\":\"a\",\"limit\":1001}", "argument 'limit' must be at most 1000");
    expect("{\"snapshot\":\"a\",\"limit\":1.0}", "argument 'limit' must be an integer, not number");
    expect("{\"snapshot\":\"a\",\"limit\":null}", "argument 'limit' must be an integer, not null");
    expect("{\"snapshot\":\"a\",\"ratio\":0.25}", "argument 'ratio' must be at least 0.5");
    expect("{\"snapshot\":\"a\",\"ratio\":2}", NULL); /* an integer is a number */
    expect("{\"snapshot\":\"a\",\"by\":\"speed\"}",
           "argument 'by' must be one of [\"time\",\"memory\"]");
    expect("{\"snapshot\":\"a\",\"flag\":1}", "argument 'flag' must be a boolean, not integer");
    expect("{\"snapshot\":\"a\",\"command\":[]}", "argument 'command' must have at least 1 items");
    expect("{\"snapshot\":\"a\",\"command\":[\"a\",\"b\",\"c\"]}",
           "argument 'command' must have at most 2 items");
    expect("{\"snapshot\":\"a\",\"command\":[\"a\",7]}",
           "argument 'command[1]' must be a string, not integer");
    expect("{\"snapshot\":\"a\",\"color\":\"red\"}",
           "argument 'color' is not an argument of this tool");
}

/* A document of n ranked rows, each about 100 bytes, and a scalar. */
static json_t *rows_doc(int n)
{
    json_t *rows = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(rows, json_pack("{s:i,s:s}", "rank", i,
                                              "path", "sys.modules['app'].__dict__['CACHE']"));
    return json_pack("{s:s,s:o,s:[i,i]}", "snapshot", "a.heap", "rows", rows, "pair", 1, 2);
}

static size_t answer_bytes(const json_t *res)
{
    const char *text = json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
    char *doc = json_dumps(json_object_get(res, "structuredContent"), JSON_COMPACT);
    size_t n = strlen(text) + strlen(doc);
    free(doc);
    return n;
}

static void test_answer_limit(void)
{
    json_t *res = mcp_answer(rows_doc(50), "Title", 20, 100000, "next_call {}");
    const json_t *doc = json_object_get(res, "structuredContent");
    const char *text = json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
    CHECK(json_is_false(json_object_get(res, "isError")));
    CHECK_EQ(json_array_size(json_object_get(doc, "rows")), 20);
    CHECK_EQ(json_integer_value(json_object_get(json_object_get(doc, "truncated"), "rows")), 30);
    CHECK(json_object_get(json_object_get(doc, "truncated"), "pair") == NULL);
    /* The first rows are kept: the lists come ranked. */
    CHECK_EQ(json_integer_value(json_object_get(json_array_get(json_object_get(doc, "rows"), 19), "rank")), 19);
    CHECK(strncmp(text, "Title\n", 6) == 0);
    CHECK(strstr(text, "truncated: 30 more rows (raise limit or token_budget"));
    CHECK(strstr(text, "\nnext: next_call {}\n"));
    CHECK(strstr(text, "  - rank=0 path=sys.modules['app'].__dict__['CACHE']\n"));
    json_decref(res);

    res = mcp_answer(rows_doc(5), "Title", 20, 100000, NULL);
    doc = json_object_get(res, "structuredContent");
    CHECK_EQ(json_object_size(json_object_get(doc, "truncated")), 0);
    CHECK(!strstr(json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text")), "truncated"));
    json_decref(res);
}

static void test_answer_budget(void)
{
    for (size_t budget = 200; budget <= 6400; budget *= 2) {
        json_t *res = mcp_answer(rows_doc(1000), "Title", 1000, budget, NULL);
        const json_t *doc = json_object_get(res, "structuredContent");
        size_t kept = json_array_size(json_object_get(doc, "rows"));
        size_t cut = (size_t)json_integer_value(json_object_get(json_object_get(doc, "truncated"), "rows"));
        size_t bytes = answer_bytes(res);
        CHECK(bytes <= budget * MCP_BYTES_PER_TOKEN);
        /* Cut to the budget, not far below: at most a few rows' worth (about 180 bytes each,
         * text and JSON) under it. */
        CHECK(bytes + 8 * 180 > budget * MCP_BYTES_PER_TOKEN);
        CHECK_EQ(kept + cut, 1000);
        CHECK(kept > 0 && kept < 1000);
        json_decref(res);
    }
}

/* profile_summary's shape: a list of short rows (functions) before a list of long ones (lines
 * with their source). A small budget keeps the top of both, the two cut to the same length,
 * not the long rows emptied while the short ones stay. */
static void test_answer_budget_keeps_every_list(void)
{
    json_t *doc = json_pack("{s:s,s:[],s:[]}", "profile", "/tmp/p.json", "functions", "lines");
    for (int i = 0; i < 20; i++) {
        json_array_append_new(json_object_get(doc, "functions"),
                              json_pack("{s:s,s:i,s:f}", "function", "hot", "line", i, "pct", 1.5));
        json_array_append_new(json_object_get(doc, "lines"),
                              json_pack("{s:s,s:i,s:s}", "function", "hot", "line", i, "source",
                                        "    return sum(i * i for i in range(n))  # a long "
                                        "source line, repeated in the text and the JSON ..."));
    }
    json_t *res = mcp_answer(doc, "Title", 20, 600, NULL);
    const json_t *sc = json_object_get(res, "structuredContent");
    size_t nf = json_array_size(json_object_get(sc, "functions"));
    size_t nl = json_array_size(json_object_get(sc, "lines"));
    CHECK(answer_bytes(res) <= 600 * MCP_BYTES_PER_TOKEN);
    CHECK(nl >= 1 && nf >= 1);
    CHECK(nf <= nl + 1 && nl <= nf + 1); /* cut together */
    CHECK(nl < 20);
    const json_t *cut = json_object_get(sc, "truncated");
    CHECK_EQ(json_integer_value(json_object_get(cut, "lines")) + (json_int_t)nl, 20);
    CHECK_EQ(json_integer_value(json_object_get(cut, "functions")) + (json_int_t)nf, 20);
    json_decref(res);
}

static void test_answer_error(void)
{
    err_fail_hint(SCRY_E_NOT_FOUND, "try type_instances", "no object at 0x10");
    json_t *res = mcp_answer_error();
    CHECK(json_is_true(json_object_get(res, "isError")));
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0), "text")),
              "not_found: no object at 0x10\nhint: try type_instances");
    CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(res, "structuredContent"), "error"), "code")),
              "not_found");
    json_decref(res);
}

static void test_read_lines(void)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    /* Lines, a blank one, an over-long one (skipped whole), and a last line with no newline. */
    const char head[] = "{\"a\":1}\n\nsecond\n";
    CHECK(write(fds[1], head, strlen(head)) == (ssize_t)strlen(head));
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        char *big = malloc(MCP_MAX_LINE + 10);
        memset(big, 'x', MCP_MAX_LINE + 10);
        big[MCP_MAX_LINE + 9] = '\n';
        for (size_t off = 0; off < MCP_MAX_LINE + 10;) {
            ssize_t w = write(fds[1], big + off, MCP_MAX_LINE + 10 - off);
            if (w <= 0)
                _exit(1);
            off += (size_t)w;
        }
        if (write(fds[1], "after\nlast", 10) != 10)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    struct mcp_reader r = {.fd = fds[0]};
    char *line;
    size_t len;
    CHECK_EQ(mcp_read_line(&r, &line, &len), MCP_LINE);
    CHECK_STR(line, "{\"a\":1}");
    CHECK_EQ(mcp_read_line(&r, &line, &len), MCP_LINE);
    CHECK_EQ(len, 0);
    CHECK_EQ(mcp_read_line(&r, &line, &len), MCP_LINE);
    CHECK_STR(line, "second");
    CHECK_EQ(mcp_read_line(&r, &line, &len), MCP_TOO_LONG);
    CHECK_EQ(mcp_read_line(&r, &line, &len), MCP_LINE);
    CHECK_STR(line, "after");
    CHECK_EQ(mcp_read_line(&r, &line, &len), MCP_LINE);
    CHECK_STR(line, "last");
    CHECK_EQ(mcp_read_line(&r, &line, &len), MCP_EOF);
    mcp_reader_free(&r);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* What one send writes, read back from a pipe (one line, small). */
static void sent_line(bool (*send)(void *), void *arg, char *out, size_t size)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    mcp_set_output(fds[1]);
    CHECK(send(arg));
    mcp_set_output(1);
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n < size - 1 && (r = read(fds[0], out + n, size - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = 0;
    close(fds[0]);
}

static bool send_error_result(void *id)
{
    err_fail_hint(SCRY_E_BAD_PROFILE, "hint \x1b]0;t\x07",
                  "/tmp/a\x1b[31m\xe2\x80\xae.json: output\nline\r2\xc2\x9b\xff");
    return mcp_send_result(id, mcp_answer_error());
}

static bool send_protocol_error(void *id)
{
    return mcp_send_error(id, MCP_INVALID_PARAMS, "Unknown tool: x\x1b[2J\xe2\x81\xa6", NULL);
}

/* Results and errors leave through the one sanitizer: no ESC, BEL, CSI, CR or bidi control
 * survives (JSON would carry them escaped to a client that shows them); the text's newlines do,
 * and the client's own id is echoed as it came. */
static void test_sent_text_is_clean(void)
{
    char line[4096];
    json_t *id = json_string("id\x1b");
    sent_line(send_error_result, id, line, sizeof(line));
    json_t *msg = json_loads(line, 0, NULL);
    CHECK(msg);
    const char *text = json_string_value(json_object_get(
        json_array_get(json_object_get(json_object_get(msg, "result"), "content"), 0), "text"));
    CHECK_STR(text,
              "bad_profile: /tmp/a?[31m?.json: output\nline?2?\xef\xbf\xbd\nhint: hint ?]0;t?");
    CHECK_STR(json_string_value(json_object_get(
                  json_object_get(json_object_get(json_object_get(msg, "result"),
                                                  "structuredContent"),
                                  "error"),
                  "hint")),
              "hint ?]0;t?");
    CHECK_STR(json_string_value(json_object_get(msg, "id")), "id\x1b");
    json_decref(msg);
    sent_line(send_protocol_error, id, line, sizeof(line));
    msg = json_loads(line, 0, NULL);
    CHECK_STR(json_string_value(json_object_get(json_object_get(msg, "error"), "message")),
              "Unknown tool: x?[2J?");
    json_decref(msg);
    json_decref(id);
    /* Member names too (a type or file name can be a key), deep in lists. */
    json_t *v = json_pack("{s:[{s:s}],s:s}", "ok", "a\x1b", "b\x07\n", "k\xe2\x80\x8f", "x");
    mcp_clean(v);
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(v, "ok"), 0), "a?")),
              "b?\n");
    CHECK_STR(json_string_value(json_object_get(v, "k?")), "x");
    CHECK_EQ(json_object_size(v), 2);
    json_decref(v);
}

/* A string cut for the text in the middle of a character: the answer is still sent (jansson
 * refuses invalid UTF-8), the cut character shown as U+FFFD. */
static void test_answer_cuts_a_character(void)
{
    char name[512];
    memset(name, 'a', 239);
    strcpy(name + 239, "\xc3\xa9 and more text after the cut to pass 240 bytes");
    json_t *res = mcp_answer(json_pack("{s:s}", "name", name), "t", 20, 4000, NULL);
    CHECK(res);
    const json_t *block = json_array_get(json_object_get(res, "content"), 0);
    const char *text = json_string_value(json_object_get(block, "text"));
    CHECK(text && strstr(text, "a\xef\xbf\xbd..."));
    json_decref(res);
}

/* Makes path (a directory or, with content, a file). */
static void make(const char *dir, const char *name, const char *content, char *path)
{
    CHECK(snprintf(path, PATH_MAX, "%s/%s", dir, name) < PATH_MAX);
    if (content) {
        FILE *f = fopen(path, "w");
        CHECK(f && fputs(content, f) >= 0 && fclose(f) == 0);
    } else {
        CHECK(mkdir(path, 0700) == 0);
    }
}

static void test_roots(void)
{
    char tmpl[] = "/tmp/scry-test-roots-XXXXXX", root[PATH_MAX], root2[PATH_MAX];
    char out_dir[PATH_MAX], f[PATH_MAX], f2[PATH_MAX], secret[PATH_MAX], link[PATH_MAX];
    char sub[PATH_MAX], out[PATH_MAX], want[PATH_MAX * 2];
    CHECK(mkdtemp(tmpl));
    make(tmpl, "root", NULL, root);
    make(tmpl, "root2", NULL, root2);
    make(tmpl, "outside", NULL, out_dir);
    make(root, "a.json", "{}", f);
    make(root2, "b.json", "{}", f2);
    make(out_dir, "creds", "AKIAIOSFODNN7EXAMPLE", secret);
    make(root, "sub", NULL, sub);
    CHECK(snprintf(link, sizeof(link), "%s/link", root) < (int)sizeof(link));
    CHECK(symlink(secret, link) == 0);
    mcp_roots_clear();
    CHECK_EQ(mcp_roots_add(root), 0);
    CHECK(mcp_roots_add(f) == -SCRY_E_USAGE); /* a file is no root */
    CHECK_EQ(mcp_path_read(f, "profile", out, sizeof(out)), 0);
    CHECK_STR(out, f);
    /* /root2 is not under /root; a symlink in the root that points out; .. out of the root. */
    CHECK(mcp_path_read(f2, "profile", out, sizeof(out)) == -SCRY_E_PERMISSION_DENIED);
    CHECK(strstr(err_last_message(), "outside this server's roots"));
    CHECK(mcp_path_read(link, "profile", out, sizeof(out)) == -SCRY_E_PERMISSION_DENIED);
    snprintf(want, sizeof(want), "%s/../../outside/creds", sub);
    CHECK(mcp_path_read(want, "profile", out, sizeof(out)) == -SCRY_E_PERMISSION_DENIED);
    CHECK(mcp_path_read("/etc/passwd", "snapshot", out, sizeof(out)) == -SCRY_E_PERMISSION_DENIED);
    CHECK(!strstr(err_last_message(), "root:"));
    /* Inside: a directory, a missing file; the messages name the path and what was expected. */
    CHECK(mcp_path_read(sub, "snapshot", out, sizeof(out)) == -SCRY_E_IO);
    CHECK(strstr(err_last_message(), "is a directory: a regular file expected"));
    snprintf(want, sizeof(want), "%s/missing", root);
    CHECK(mcp_path_read(want, "snapshot", out, sizeof(out)) == -SCRY_E_IO);
    CHECK(strstr(err_last_message(), want));
    CHECK_EQ(mcp_path_dir(sub, "cwd", out, sizeof(out)), 0);
    CHECK(mcp_path_dir(out_dir, "cwd", out, sizeof(out)) == -SCRY_E_PERMISSION_DENIED);
    CHECK(mcp_path_dir(f, "cwd", out, sizeof(out)) == -SCRY_E_IO);
    /* New files: in a directory under a root, never over an existing one or its symlink. */
    snprintf(want, sizeof(want), "%s/sub/../new.heap", root);
    CHECK_EQ(mcp_path_new(want, "output", out, sizeof(out)), 0);
    snprintf(want, sizeof(want), "%s/new.heap", root);
    CHECK_STR(out, want);
    CHECK(mcp_path_new(f, "output", out, sizeof(out)) == -SCRY_E_IO);
    CHECK(mcp_path_new(link, "output", out, sizeof(out)) == -SCRY_E_IO);
    snprintf(want, sizeof(want), "%s/new.heap", out_dir);
    CHECK(mcp_path_new(want, "output", out, sizeof(out)) == -SCRY_E_PERMISSION_DENIED);
    snprintf(want, sizeof(want), "%s/..", sub);
    CHECK(mcp_path_new(want, "output", out, sizeof(out)) == -SCRY_E_IO); /* exists */
    snprintf(want, sizeof(want), "%s/missing/x.heap", root);
    CHECK(mcp_path_new(want, "output", out, sizeof(out)) == -SCRY_E_IO);
    /* Outside the roots, what does not exist is refused as what does: nothing to probe. */
    CHECK(mcp_path_new("/nonexistent-dir/x", "output", out, sizeof(out)) ==
          -SCRY_E_PERMISSION_DENIED);
    CHECK(mcp_path_read("/etc/no-such-file-here", "profile", out, sizeof(out)) ==
          -SCRY_E_PERMISSION_DENIED);
    snprintf(want, sizeof(want), "%s/missing", out_dir);
    CHECK(mcp_path_read(want, "profile", out, sizeof(out)) == -SCRY_E_PERMISSION_DENIED);
    /* A second root, and / (everything under it). */
    CHECK_EQ(mcp_roots_add(root2), 0);
    CHECK_EQ(mcp_path_read(f2, "profile", out, sizeof(out)), 0);
    CHECK(!mcp_under_root("/"));
    CHECK_EQ(mcp_roots_add("/"), 0);
    CHECK(mcp_under_root("/etc/passwd") && mcp_under_root("/"));
    mcp_roots_clear();
    CHECK(!mcp_under_root(root));
    CHECK(unlink(link) == 0 && unlink(secret) == 0 && unlink(f) == 0 && unlink(f2) == 0);
    CHECK(rmdir(sub) == 0 && rmdir(out_dir) == 0 && rmdir(root) == 0 && rmdir(root2) == 0);
    CHECK(rmdir(tmpl) == 0);
}

/* A file that is not JSON: the message says where and what was expected, not what was there. */
static void test_parse_error_quotes_nothing(void)
{
    static const char *const files[] = {"AKIAIOSFODNN7EXAMPLE\n", "root:$6$salt:19000::\n",
                                        "{\"files\": secretvalue}", "{\"a\": \"unterminated"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        struct pdoc d;
        CHECK(pdoc_load_bytes(&d, files[i], strlen(files[i]), "p.json") == -SCRY_E_BAD_PROFILE);
        const char *m = err_last_message();
        CHECK(strstr(m, "p.json is not a profile: not JSON (line 1, column "));
        CHECK(!strstr(m, "AKIA") && !strstr(m, "root") && !strstr(m, "secret") &&
              !strstr(m, "unterminated"));
        pdoc_free(&d);
    }
}

static const struct tl_test tests[] = {
    TL(test_schema),       TL(test_answer_limit), TL(test_answer_budget),
    TL(test_answer_budget_keeps_every_list),
    TL(test_answer_error), TL(test_read_lines),   TL(test_sent_text_is_clean),
    TL(test_answer_cuts_a_character), TL(test_roots), TL(test_parse_error_quotes_nothing),
};
TL_MAIN(tests)
