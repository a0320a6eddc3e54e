/* `scry mcp`'s messages: one line of input (a JSON-RPC request, notification or anything else a
 * client or an attacker may send) answered as MCP says: initialize, ping, tools/list, tools/call
 * (mcp_tools.h), errors for the rest. Apart from the command's options and loop
 * (cli/cmd_mcp.c), so that tests/fuzz/fuzz_mcp.c can drive it. */
#ifndef SCRY_MCP_MCP_SERVER_H
#define SCRY_MCP_MCP_SERVER_H

#include <stdbool.h>
#include <stddef.h>

struct mcp_server {
    bool initialized;
};

/* Serves one line (len bytes, NUL-terminated, without its newline): every answer goes through
 * mcp_send. Returns false once the client is gone. */
bool mcp_serve_line(struct mcp_server *s, const char *line, size_t len);

#endif
