/* compare_profiles' answer: scry compare's JSON report reduced to its significant changes
 * (docs/mcp.md). */
#ifndef SCRY_MCP_MCP_COMPARE_H
#define SCRY_MCP_MCP_COMPARE_H

#include <stdbool.h>

#include <jansson.h>

/* A new document from report (compare_render_json's, not stolen): before/after, the counts,
 * "functions" and "lines" with one row per metric whose |z| reaches z_significant (file,
 * function, first_line or line, metric, before, after, delta, pct, z; seconds to the
 * microsecond), rows with no significant change counted in "unchanged". */
json_t *mcp_compare_changes(const json_t *report);

#endif
