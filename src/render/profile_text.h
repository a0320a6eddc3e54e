/* The terminal view of a profile (`scry view --cli`, and the end of `scry run`), rendered from the
 * profile JSON alone (scry's, or Scalene's: same schema) into a strbuf. */
#ifndef SCRY_RENDER_PROFILE_TEXT_H
#define SCRY_RENDER_PROFILE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/strbuf.h"

/* Lines whose python + native + system share reaches this are highlighted (Scalene's value). */
#define PROFILE_TEXT_HOT_PERCENT 33.0

struct profile_text_opts {
    bool color;       /* ANSI colours: only for a terminal */
    double threshold; /* hide lines, functions and files under this % of the time */
    /* A line under the threshold in time is shown for its share of the allocated memory only
     * when it allocated at least this many MB (0: any). */
    double malloc_threshold_mb;
};

/* Renders the profile document; a document that is not a profile (wrong types where the schema
 * says otherwise) gives -SCRY_E_BAD_PROFILE naming the field, and out holds nothing useful. */
int profile_text_render(const json_t *profile, const struct profile_text_opts *o,
                        struct strbuf *out);
/* Same from the bytes of a profile file; `what` names it in errors. */
int profile_text_render_bytes(const char *text, size_t len, const char *what,
                              const struct profile_text_opts *o, struct strbuf *out);

#endif
