/* The terminal view of a profile (`scry view --cli`, and the end of `scry run`), rendered from the
 * profile model (analysis/profile_doc.h: the profile JSON, scry's or Scalene's, read and checked
 * there) into a strbuf. */
#ifndef SCRY_RENDER_PROFILE_TEXT_H
#define SCRY_RENDER_PROFILE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/profile_doc.h"
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

/* Renders the profile. */
int profile_text_render(const struct pdoc *profile, const struct profile_text_opts *o,
                        struct strbuf *out);
/* The oversubscription warning's sentence (no "warning: " before it, no newline after it): the
 * terminal view prints it under its header and `scry run` again as its last line, so the same
 * words say it wherever a person looks last. delay_sec and cpu_sec are the profile's
 * run_queue_delay_sec and run_queue_cpu_sec. */
void profile_text_oversubscribed(struct strbuf *out, double delay_sec, double cpu_sec);
/* Same from the bytes of a profile file, read by pdoc_load_bytes: a document that is not a
 * profile (wrong types where the schema says otherwise) gives -SCRY_E_BAD_PROFILE naming `what`
 * and the field, and out holds nothing useful. */
int profile_text_render_bytes(const char *text, size_t len, const char *what,
                              const struct profile_text_opts *o, struct strbuf *out);

#endif
