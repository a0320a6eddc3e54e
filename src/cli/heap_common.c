/* What the heap report commands (analyze, query) print the same way: one object's fields. */
#include <inttypes.h>
#include <stdio.h>

#include "cli/heap_common.h"

void cli_heap_object_fields(struct json_writer *w, const struct heap_analysis *a, uint32_t v,
                            struct strbuf *scratch)
{
    const struct snap_object *o = &a->s->objects[v];
    char addr[32];
    snprintf(addr, sizeof(addr), "0x%" PRIx64, o->addr);
    sb_reset(scratch);
    ha_path_inline(a, v, scratch);
    jw_key(w, "address");
    jw_str(w, addr);
    jw_key(w, "type");
    jw_str(w, snap_string(a->s, o->type));
    jw_key(w, "shallow");
    jw_uint(w, o->size);
    jw_key(w, "retained");
    jw_uint(w, a->retained[v]);
    jw_key(w, "path");
    jw_str(w, sb_str(scratch));
}
