/* Shared output of the heap report commands. */
#ifndef SCRY_CLI_HEAP_COMMON_H
#define SCRY_CLI_HEAP_COMMON_H

#include <stdint.h>

#include "analysis/heap_analysis.h"
#include "common/strbuf.h"
#include "render/json_writer.h"

/* Writes an object's address (hex string), type, shallow and retained sizes and root path as
 * keys of the JSON object the caller has opened; scratch is a work buffer. */
void cli_heap_object_fields(struct json_writer *w, const struct heap_analysis *a, uint32_t v,
                            struct strbuf *scratch);

#endif
