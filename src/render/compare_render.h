/* `scry compare`'s report (analysis/compare.h) as text and as JSON (docs/json-schema.md); the
 * HTML page (`--html`) embeds the JSON with clean set (render/profile_html.h). */
#ifndef SCRY_RENDER_COMPARE_RENDER_H
#define SCRY_RENDER_COMPARE_RENDER_H

#include "analysis/compare.h"
#include "common/strbuf.h"

struct compare_render_opts {
    const char *before_path, *after_path;
    const struct pdoc *before, *after;
    double fail_above; /* < 0: no --fail-above */
    size_t top;        /* rows shown per group in the text (0: all) */
    bool clean;        /* JSON: names cleaned by the one sanitizer (the page), not kept exact */
};

/* Both return the number of regressed rows (0 without --fail-above). */
size_t compare_render_text(const struct cmp_result *r, const struct compare_render_opts *o,
                           struct strbuf *out);
size_t compare_render_json(const struct cmp_result *r, const struct compare_render_opts *o,
                           struct strbuf *out);

#endif
