/* `scry mcp`: a Model Context Protocol server on stdio for coding agents (docs/mcp.md). The
 * handshake era of MCP (2024-11-05 to 2025-11-25): initialize, ping, tools/list, tools/call;
 * JSON-RPC framing in src/mcp/mcp_protocol.c, the messages answered in mcp_server.c, the tools
 * in mcp_tools.c, which files they may touch in mcp_paths.c. Requests are served one at a
 * time, in order; stdout carries only protocol messages, logs go to stderr. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "options/options.h"
#include "common/error.h"
#include "common/log.h"
#include "mcp/mcp_paths.h"
#include "mcp/mcp_protocol.h"
#include "mcp/mcp_server.h"
#include "mcp/mcp_tools.h"
#include "platform/outfile.h"

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
    "\n";

static int parse(int argc, char **argv, struct mcp_config *cfg, bool *help)
{
    *cfg = (struct mcp_config){.max_dump_mb = DEFAULT_MAX_DUMP_MB,
                               .run_timeout_s = DEFAULT_RUN_TIMEOUT};
    *help = false;
    struct opt_parser p;
    opt_begin(&p, OC_MCP, argc, argv, OP_PERMUTE);
    int c;
    while ((c = opt_next(&p)) > 0) {
        switch (c) {
        case OPT_HELP:
            *help = true;
            return 0;
        case OPT_ALLOW_RUN:
            cfg->allow_run = true;
            break;
        case OPT_ALLOW_DUMP:
            cfg->allow_dump = true;
            break;
        case OPT_ROOT: {
            int err = mcp_roots_add(p.arg); /* a usage error naming the directory */
            if (err)
                return err;
            break;
        }
        case OPT_MAX_DUMP_MB:
            cfg->max_dump_mb = (unsigned long)p.ival;
            break;
        case OPT_RUN_TIMEOUT:
            cfg->run_timeout_s = (unsigned)p.ival;
            break;
        }
    }
    if (c < 0)
        return c;
    if (opt_operand(&p) < argc)
        return cli_usage("unexpected argument '%s'", argv[opt_operand(&p)]);
    /* The working directory is always a root: a coding agent's client starts the server in the
     * project it works on. */
    return mcp_roots_add(".");
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
    struct mcp_server s = {0};
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
                 : mcp_serve_line(&s, line, len);
    }
    mcp_reader_free(&r);
    mcp_tools_free();
    mcp_roots_clear();
    close(out);
    return CLI_EXIT_OK;
}
