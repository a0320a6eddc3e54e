/* What a `scry mcp` tool answers: its JSON document, cut to the call's `limit` (rows per list)
 * and `token_budget` (tokens estimated as bytes / 4 over the text block and the JSON together),
 * rows dropped from the bottom of the ranked lists, every cut counted in "truncated"; and the
 * same numbers as compact text for the agent, ending with what was left out and the next calls
 * worth making (docs/mcp.md). */
#ifndef SCRY_MCP_MCP_ANSWER_H
#define SCRY_MCP_MCP_ANSWER_H

#include <stddef.h>

#include <jansson.h>

#include "common/strbuf.h"

#define MCP_BYTES_PER_TOKEN 4

/* A tools/call result from doc (stolen): content [text] and structuredContent, cut to limit
 * rows per list and budget tokens. title is the text's first line; next (may be NULL) lines
 * naming the next calls. */
json_t *mcp_answer(json_t *doc, const char *title, size_t limit, size_t budget,
                   const char *next);
/* The result of a failed tool (isError): the last recorded error's stable code, message and
 * hint, as text and as {"error": {"code", "message", "hint"}}. */
json_t *mcp_answer_error(void);

#endif
