/* Answering `scry mcp`'s messages (mcp_server.h): the JSON-RPC envelope's checks, the handshake
 * and the dispatch to the tools. */
#include "mcp/mcp_server.h"

#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "common/strbuf.h"
#include "mcp/mcp_protocol.h"
#include "mcp/mcp_tools.h"

/* The protocol revisions served, newest first: an unknown one is answered with the first. */
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

static const char instructions[] =
    "scry profiles Python programs and analyses their heaps. CPU/memory: run_profile (or a "
    "scry-profile.json), then profile_summary and hot_lines; compare_profiles for before/after. "
    "Heap: list_processes, capture_heap, then heap_summary, retaining_path, type_instances, "
    "locate; diff_heaps for growth. Answers are ranked and bounded by limit and token_budget.";

static json_t *initialize_result(const json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    const char *v = versions[0];
    for (size_t i = 0; asked && i < sizeof(versions) / sizeof(versions[0]); i++)
        if (strcmp(asked, versions[i]) == 0)
            v = versions[i];
    return json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s,s:s},s:s}", "protocolVersion", v,
                     "capabilities", "tools", "listChanged", 0, "serverInfo", "name", "scry",
                     "version", SCRY_VERSION, "title", "scry profiler", "instructions",
                     instructions);
}

static bool valid_id(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

/* One request (id set) or notification (id NULL). Returns false once the client is gone. */
static bool handle(struct mcp_server *s, const char *method, const json_t *id, const json_t *params)
{
    if (!id) {
        if (strcmp(method, "notifications/initialized") == 0)
            s->initialized = true;
        /* notifications/cancelled: requests are served in order, so the one it names has been
         * answered already; others are ignored, as notifications are never answered. */
        return true;
    }
    if (params && !json_is_object(params))
        return mcp_send_error(id, MCP_INVALID_PARAMS, "params must be an object", NULL);
    if (strcmp(method, "ping") == 0)
        return mcp_send_result(id, json_object());
    if (strcmp(method, "initialize") == 0) {
        s->initialized = true;
        return mcp_send_result(id, initialize_result(params));
    }
    if (strcmp(method, "tools/list") == 0) {
        const json_t *cursor = json_object_get(params, "cursor");
        if (cursor && !(json_is_string(cursor) && json_string_length(cursor) == 0))
            return mcp_send_error(id, MCP_INVALID_PARAMS,
                                  "invalid cursor: every tool is on the first page", NULL);
        return mcp_send_result(id, mcp_tools_list());
    }
    if (strcmp(method, "tools/call") == 0) {
        if (!s->initialized)
            return mcp_send_error(id, MCP_INVALID_REQUEST, "send initialize first", NULL);
        const json_t *name = json_object_get(params, "name");
        const json_t *args = json_object_get(params, "arguments");
        if (!json_is_string(name))
            return mcp_send_error(id, MCP_INVALID_PARAMS, "params.name must be a tool's name",
                                  NULL);
        json_t *empty = args ? NULL : json_object();
        if (args && !json_is_object(args))
            return mcp_send_error(id, MCP_INVALID_PARAMS, "params.arguments must be an object",
                                  NULL);
        int code = MCP_INTERNAL_ERROR;
        struct strbuf why = STRBUF_INIT;
        json_t *res = mcp_tools_call(json_string_value(name), args ? args : empty, &code, &why);
        json_decref(empty);
        bool ok = res ? mcp_send_result(id, res)
                      : mcp_send_error(id, code, why.len ? sb_str(&why) : "tool failed", NULL);
        sb_release(&why);
        return ok;
    }
    struct strbuf msg = STRBUF_INIT;
    sb_addf(&msg, "Method not found: %s", method);
    bool ok = mcp_send_error(id, MCP_METHOD_NOT_FOUND, sb_str(&msg), NULL);
    sb_release(&msg);
    return ok;
}

bool mcp_serve_line(struct mcp_server *s, const char *line, size_t len)
{
    json_error_t e;
    json_t *msg = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
    if (!msg) {
        /* A blank line is not a message; anything else that is not JSON is a parse error. */
        bool blank = strspn(line, " \t\r") == len;
        return blank || mcp_send_error(NULL, MCP_PARSE_ERROR, "Parse error", NULL);
    }
    bool ok;
    const json_t *id = json_object_get(msg, "id");
    const json_t *method = json_object_get(msg, "method");
    if (json_is_array(msg)) {
        ok = mcp_send_error(NULL, MCP_INVALID_REQUEST,
                            "batches are not part of MCP since 2025-06-18: send one message a "
                            "line",
                            NULL);
    } else if (!json_is_object(msg) || (id && !valid_id(id))) {
        ok = mcp_send_error(NULL, MCP_INVALID_REQUEST, "Invalid Request", NULL);
    } else if (!json_is_string(method)) {
        /* A response to a request of ours (we send none), or no method: only a request is
         * answered. */
        ok = !id || json_object_get(msg, "result") || json_object_get(msg, "error")
                 ? true
                 : mcp_send_error(id, MCP_INVALID_REQUEST, "Invalid Request: no method", NULL);
    } else if (!json_is_string(json_object_get(msg, "jsonrpc")) ||
               strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0) {
        ok = !id || mcp_send_error(id, MCP_INVALID_REQUEST, "jsonrpc must be \"2.0\"", NULL);
    } else {
        ok = handle(s, json_string_value(method), id, json_object_get(msg, "params"));
    }
    json_decref(msg);
    return ok;
}

