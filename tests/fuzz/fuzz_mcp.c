/* Fuzz target: arbitrary bytes as the lines a client sends `scry mcp` (src/mcp/mcp_server.c with
 * the real framing, argument validator, answer cutter and cleaner). The tools themselves stand in
 * here (they read files and processes, which the reader targets fuzz): "echo" validates its
 * arguments against a tool-like schema and answers them as a document, so that fuzzed names and
 * paths flow through the cuts and the cleaner; "fail" records an error quoting its argument.
 * Every answer must be one line of JSON whose result and error hold no control character (a
 * text's newlines aside), no bidirectional control and nothing that is not UTF-8; nothing may
 * crash or leak.
 * fuzz-links: src/mcp/mcp_server.c src/mcp/mcp_protocol.c src/mcp/mcp_schema.c
 * fuzz-links: src/mcp/mcp_answer.c */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "common/error.h"
#include "common/sanitize.h"
#include "mcp/mcp_answer.h"
#include "mcp/mcp_protocol.h"
#include "mcp/mcp_schema.h"
#include "mcp/mcp_server.h"
#include "mcp/mcp_tools.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char schema_text[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"snapshot\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096},"
    "\"name\":{\"type\":\"string\"},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000},"
    "\"token_budget\":{\"type\":\"integer\",\"minimum\":200,\"maximum\":200000},"
    "\"by\":{\"type\":\"string\",\"enum\":[\"time\",\"memory\"]},"
    "\"ratio\":{\"type\":\"number\",\"minimum\":0.5},"
    "\"flag\":{\"type\":\"boolean\"},"
    "\"rows\":{\"type\":\"array\",\"maxItems\":64,\"items\":{\"type\":\"object\"}},"
    "\"command\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":8,\"items\":{\"type\":\"string\"}}"
    "},\"additionalProperties\":false}";

static json_t *schema;

json_t *mcp_tools_list(void)
{
    return json_pack("{s:[{s:s,s:O}]}", "tools", "name", "echo", "inputSchema", schema);
}

json_t *mcp_tools_call(const char *name, const json_t *args, int *code, struct strbuf *why)
{
    if (strcmp(name, "echo") != 0 && strcmp(name, "fail") != 0) {
        *code = MCP_INVALID_PARAMS;
        sb_addf(why, "Unknown tool: %s", name);
        return NULL;
    }
    if (!mcp_schema_check(schema, args, why)) {
        *code = MCP_INVALID_PARAMS;
        return NULL;
    }
    const json_t *l = json_object_get(args, "limit"), *b = json_object_get(args, "token_budget");
    const char *snap = json_string_value(json_object_get(args, "snapshot"));
    err_clear();
    if (strcmp(name, "fail") == 0) {
        err_fail_hint(SCRY_E_BAD_SNAPSHOT, snap, "%s: not a snapshot", snap ? snap : "?");
        return mcp_answer_error();
    }
    return mcp_answer(json_deep_copy(args), snap ? snap : "echo",
                      l ? (size_t)json_integer_value(l) : 20,
                      b ? (size_t)json_integer_value(b) : 4000, snap);
}

/* Aborts if a string or member name in v (the id aside) would be cleaned. */
static void check_clean(const json_t *v, bool top)
{
    const char *k;
    const json_t *x;
    size_t i;
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        for (size_t at = 0; at < n;) {
            const char *repl;
            size_t len = san_next(s + at, n - at, &repl);
            if (repl && s[at] != '\n')
                abort();
            at += len;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x) check_clean(x, false);
    } else if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x) {
            if (top && strcmp(k, "id") == 0)
                continue; /* the client's own, echoed as sent */
            if (!san_is_clean(k, strlen(k)))
                abort();
            check_clean(x, false);
        }
    }
}

/* Every line written to fd since the start: one JSON message each, clean. */
static void check_output(int fd)
{
    off_t end = lseek(fd, 0, SEEK_END);
    if (end <= 0)
        return;
    char *out = malloc((size_t)end + 1);
    if (!out || pread(fd, out, (size_t)end, 0) != end)
        abort();
    out[end] = 0;
    if (out[end - 1] != '\n')
        abort(); /* every message ends its line */
    for (char *line = out, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0;
        json_t *msg = json_loads(line, 0, NULL);
        if (!json_is_object(msg))
            abort();
        check_clean(msg, true);
        json_decref(msg);
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!schema) {
        schema = json_loads(schema_text, 0, NULL);
        if (!schema)
            abort();
    }
    int fd = memfd_create("fuzz-mcp", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    mcp_set_output(fd);
    /* The first byte's low bit: a session that starts initialized, or one that must ask. */
    struct mcp_server s = {.initialized = size > 0 && (data[0] & 1)};
    char *buf = malloc(size + 1);
    if (!buf)
        abort();
    memcpy(buf, data, size);
    buf[size] = 0;
    for (size_t at = 0; at < size;) {
        char *nl = memchr(buf + at, '\n', size - at);
        size_t len = nl ? (size_t)(nl - (buf + at)) : size - at;
        buf[at + len] = 0;
        /* As the reader hands out lines: NUL-terminated, the newline cut; blank ones too. */
        if (!mcp_serve_line(&s, buf + at, len))
            abort(); /* only a gone client stops the server */
        at += len + 1;
    }
    free(buf);
    check_output(fd);
    mcp_set_output(1);
    close(fd);
    return 0;
}
