/* The JSON Schema subset `scry mcp` declares for its tools' arguments, and its one validator:
 * type (object, string, integer, number, boolean, array), properties, required,
 * additionalProperties false, enum, minimum/maximum, minLength/maxLength, items,
 * minItems/maxItems. The schemas tools/list sends are the ones checked here. */
#ifndef SCRY_MCP_MCP_SCHEMA_H
#define SCRY_MCP_MCP_SCHEMA_H

#include <stdbool.h>

#include <jansson.h>

#include "common/strbuf.h"

/* Whether value conforms to schema; if not, why gets one sentence naming the argument
 * ("argument 'limit' must be at most 1000"). */
bool mcp_schema_check(const json_t *schema, const json_t *value, struct strbuf *why);

#endif
