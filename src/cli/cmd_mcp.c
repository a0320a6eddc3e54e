/* `scry mcp`: a Model Context Protocol server on stdio for coding agents (docs/mcp.md). The
 * handshake era of MCP (2024-11-05 to 2025-11-25): initialize, ping, tools/list, tools/call;
 * JSON-RPC framing in mcp_protocol.c, the tools in mcp_tools.c. Requests are served one at a
 * time, in order; stdout carries only protocol messages, logs go to stderr. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/mcp_paths.h"
#include "cli/mcp_protocol.h"
#include "cli/mcp_tools.h"
#include "common/error.h"
#include "common/log.h"
#include "common/outfile.h"

#define DEFAULT_MAX_DUMP_MB 4096
#define DEFAULT_RUN_TIMEOUT 300

const char cmd_mcp_usage[] =
    "usage: scry mcp [--root DIR]... [--allow-run] [--allow-dump] [--max-dump-mb N]\n"
    "                [--run-timeout S]\n"
    "\n"
    "An MCP server on standard input and output for coding agents (Claude Code and other MCP\n"
    "clients; docs/mcp.md): tools to list Python processes, read their stacks, profile a\n"
    "command, summarise and compare profiles, take heap snapshots and ask what they retain.\n"
    "Every answer is ranked and cut to the call's token budget. Logs go to standard error.\n"
    "\n"
    "      --root DIR         also allow the files under DIR (repeatable): the tools read and\n"
    "                         write only regular files under the server's working directory,\n"
    "                         these roots and the server's own directory, symlinks resolved\n"
    "      --allow-run        allow run_profile (runs commands the agent gives)\n"
    "      --allow-dump       allow capture_heap (stops a process while its heap is read)\n"
    "      --max-dump-mb N    capture_heap refuses processes with more RSS (default 4096)\n"
    "      --run-timeout S    run_profile's longest run, in seconds (default 300)\n";

/* The protocol revisions served, newest first: an unknown one is answered with the first. */
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

static const char instructions[] =
    "scry profiles Python programs and analyses their heaps. CPU/memory: run_profile (or a "
    "scry-profile.json), then profile_summary and hot_lines; compare_profiles for before/after. "
    "Heap: list_processes, capture_heap, then heap_summary, retaining_path, type_instances, "
    "locate; diff_heaps for growth. Answers are ranked and bounded by limit and token_budget.";

struct server {
    bool initialized;
};

static int parse(int argc, char **argv, struct mcp_config *cfg, bool *help)
{
    enum { O_RUN = 256, O_DUMP, O_MAX_DUMP, O_TIMEOUT, O_ROOT };
    static const struct option longopts[] = {
        {"allow-run", no_argument, NULL, O_RUN},
        {"allow-dump", no_argument, NULL, O_DUMP},
        {"max-dump-mb", required_argument, NULL, O_MAX_DUMP},
        {"run-timeout", required_argument, NULL, O_TIMEOUT},
        {"root", required_argument, NULL, O_ROOT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *cfg = (struct mcp_config){.max_dump_mb = DEFAULT_MAX_DUMP_MB,
                               .run_timeout_s = DEFAULT_RUN_TIMEOUT};
    *help = false;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h') {
            *help = true;
            return 0;
        }
        if (c == O_RUN || c == O_DUMP) {
            *(c == O_RUN ? &cfg->allow_run : &cfg->allow_dump) = true;
            continue;
        }
        if (c == O_ROOT) {
            int err = mcp_roots_add(optarg); /* a usage error naming the directory */
            if (err)
                return err;
            continue;
        }
        if (c != O_MAX_DUMP && c != O_TIMEOUT)
            return cli_option_error(c, argv);
        char *end;
        errno = 0;
        unsigned long v = strtoul(optarg, &end, 10);
        if (errno || end == optarg || *end || optarg[0] == '-' || v == 0 || v > 1000000)
            return cli_usage("%s needs a number from 1 to 1000000, not '%s'",
                             c == O_MAX_DUMP ? "--max-dump-mb" : "--run-timeout", optarg);
        if (c == O_MAX_DUMP)
            cfg->max_dump_mb = v;
        else
            cfg->run_timeout_s = (unsigned)v;
    }
    if (optind < argc)
        return cli_usage("unexpected argument '%s'", argv[optind]);
    /* The working directory is always a root: a coding agent's client starts the server in the
     * project it works on. */
    return mcp_roots_add(".");
}

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
static bool handle(struct server *s, const char *method, const json_t *id, const json_t *params)
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

/* One line of input. Returns false once the client is gone. */
static bool serve_line(struct server *s, const char *line, size_t len)
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

int cmd_mcp(int argc, char **argv)
{
    struct mcp_config cfg;
    bool help;
    int parsed = parse(argc, argv, &cfg, &help);
    if (parsed || help)
        return parsed ? parsed : cli_help();
    /* The protocol gets stdout's descriptor moved out of the way; stdout itself becomes stderr,
     * so that nothing but a message can reach the client. */
    int out = fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (out < 0 || dup2(2, 1) < 0)
        return err_fail(SCRY_E_IO, "cannot set up standard output: %s", strerror(errno));
    mcp_set_output(out);
    signal(SIGPIPE, SIG_IGN);
    if (!mcp_tools_init(&cfg))
        return err_fail(SCRY_E_INTERNAL, "a tool's schema does not parse");
    log_info("mcp: serving on stdio (run %s, dump %s)", cfg.allow_run ? "allowed" : "off",
             cfg.allow_dump ? "allowed" : "off");
    struct server s = {0};
    struct mcp_reader r = {.fd = 0};
    bool ok = true;
    while (ok) {
        char *line;
        size_t len;
        enum mcp_read got = mcp_read_line(&r, &line, &len);
        if (got == MCP_EOF || got == MCP_READ_ERROR)
            break;
        ok = got == MCP_TOO_LONG
                 ? mcp_send_error(NULL, MCP_PARSE_ERROR, "Parse error: the line is too long",
                                  NULL)
                 : serve_line(&s, line, len);
    }
    mcp_reader_free(&r);
    mcp_tools_free();
    mcp_roots_clear();
    close(out);
    return CLI_EXIT_OK;
}
