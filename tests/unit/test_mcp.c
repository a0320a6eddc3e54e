/* `scry mcp`'s pure parts: the argument validator (src/cli/mcp_schema.c), the answer's cuts to
 * limit and token budget (src/cli/mcp_answer.c), and the line reader (src/cli/mcp_protocol.c). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/mcp_answer.h"
#include "cli/mcp_protocol.h"
#include "cli/mcp_schema.h"
#include "common/error.h"
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

static const struct tl_test tests[] = {
    TL(test_schema),       TL(test_answer_limit), TL(test_answer_budget),
    TL(test_answer_error), TL(test_read_lines),
};
TL_MAIN(tests)
