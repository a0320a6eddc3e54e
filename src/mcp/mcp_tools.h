/* `scry mcp`'s tools: one table (name, description, input schema) from which tools/list is
 * answered and every call's arguments are validated, and the tools themselves, each calling the
 * code of the scry command it stands for (docs/mcp.md). */
#ifndef SCRY_MCP_MCP_TOOLS_H
#define SCRY_MCP_MCP_TOOLS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* What the server was started with. */
struct mcp_config {
    bool allow_run;       /* --allow-run: run_profile */
    bool allow_dump;      /* --allow-dump: capture_heap */
    unsigned long max_dump_mb; /* --max-dump-mb: capture_heap refuses a larger RSS */
    unsigned run_timeout_s;    /* --run-timeout: run_profile's longest (and default) run */
};

/* Parses the tables' schemas; false (logged) if one does not parse (a bug). */
bool mcp_tools_init(const struct mcp_config *cfg);
void mcp_tools_free(void);
/* The tools/list result. */
json_t *mcp_tools_list(void);
/* Calls tool name with args. Returns the tools/call result (isError set for a failure of the
 * tool), or NULL for a protocol error with *code and why filled (-32602: unknown tool,
 * arguments that fail the schema). */
#include "common/strbuf.h"
json_t *mcp_tools_call(const char *name, const json_t *args, int *code, struct strbuf *why);

#endif
