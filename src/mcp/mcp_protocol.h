/* `scry mcp`'s wire: JSON-RPC 2.0 over stdio as MCP frames it (one compact JSON message per
 * line, nothing else on the output; docs/mcp.md). Reading lines of bounded length, writing one
 * message per write, and the shapes of results and errors. */
#ifndef SCRY_MCP_MCP_PROTOCOL_H
#define SCRY_MCP_MCP_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* The longest line read; a longer one is answered with a parse error and skipped. */
#define MCP_MAX_LINE (4u << 20)

/* JSON-RPC's error codes as MCP uses them. */
enum {
    MCP_PARSE_ERROR = -32700,
    MCP_INVALID_REQUEST = -32600,
    MCP_METHOD_NOT_FOUND = -32601,
    MCP_INVALID_PARAMS = -32602,
    MCP_INTERNAL_ERROR = -32603
};

struct mcp_reader {
    int fd;
    char *buf;
    size_t len, cap;
    size_t scanned;   /* bytes already searched for a newline */
    size_t consumed;  /* bytes of the line handed out last, dropped at the next call */
    bool discarding;  /* inside an over-long line: drop until its newline */
    bool eof;
};

enum mcp_read { MCP_LINE, MCP_TOO_LONG, MCP_EOF, MCP_READ_ERROR };

/* Reads the next line (without its newline, NUL-terminated, valid until the next call) into
 * *line. MCP_TOO_LONG: a line over MCP_MAX_LINE was skipped. A last line without a newline
 * before EOF is a line. */
enum mcp_read mcp_read_line(struct mcp_reader *r, char **line, size_t *len);
void mcp_reader_free(struct mcp_reader *r);

/* The output: messages go to fd (stdout's descriptor moved out of the way; standard output
 * itself then points at stderr so that nothing else can write into the protocol stream).
 * Returns false once the client is gone (EPIPE or another write error). */
void mcp_set_output(int fd);
bool mcp_send(json_t *msg); /* steals msg */
/* A response: result (stolen) for id, or an error; id NULL (unreadable) is left out. */
bool mcp_send_result(const json_t *id, json_t *result);
/* Cleans every string and member name in v (recursively) with the one sanitizer
 * (common/sanitize.h), keeping the newlines of multi-line texts: results and error messages pass
 * through it before they are sent, since a client shows them to a person. */
void mcp_clean(json_t *v);
bool mcp_send_error(const json_t *id, int code, const char *message, json_t *data);

#endif
