/* The browser view of a profile (`scry view`, `--html`, `--standalone`): one HTML page holding the
 * viewer's template, stylesheet and script (web/, embedded into the scry binary at build time) and
 * the profile JSON itself, so that the page needs no other file and makes no network request. */
#ifndef SCRY_RENDER_PROFILE_HTML_H
#define SCRY_RENDER_PROFILE_HTML_H

#include <stddef.h>

#include "common/strbuf.h"

/* The viewer's files. The template holds the markers @@SCRY_TITLE@@, @@SCRY_CSS@@, @@SCRY_JS@@,
 * @@SCRY_CONFIG@@ and @@SCRY_PROFILE@@, each replaced once, and optionally @@SCRY_CONNECT@@ (in
 * the Content-Security-Policy: "; connect-src 'self'" for a served page, else nothing). */
struct profile_html_assets {
    const char *html, *css, *js;
    size_t html_len, css_len, js_len;
};

/* web/index.html, web/viewer.css and web/viewer.js as built into the scry binary
 * (build/gen/web_assets.c, written by scripts/embed-web.sh); only the scry binary links it, so
 * that this renderer can be tested on assets of its own. */
extern const struct profile_html_assets profile_html_web_assets;

struct profile_html_opts {
    double threshold; /* the page's initial "quiet line" threshold, in % of the time */
    const char *scry_version;
    /* Set by `scry view --serve`: the page may POST proposals to the server that served it
     * (config "serve" and "token"; the Content-Security-Policy's connect-src 'self'). NULL: the
     * page makes no request at all. */
    const char *serve_token;
    /* With serve_token: the provider and base URL of scry's command line (config "provider",
     * "base_url"; NULL: none), which the page shows as its defaults. */
    const char *serve_provider, *serve_base_url;
};

/* Renders the page for the profile file's bytes; `what` names it in errors. The profile is checked
 * as the terminal view checks it (a document that is not a profile gives -SCRY_E_BAD_PROFILE
 * naming the field), then embedded as it is, with every '<' written as \u003c so that no text in
 * it can end the script element or open a comment. */
int profile_html_render_bytes(const struct profile_html_assets *assets, const char *text,
                              size_t len, const char *what, const struct profile_html_opts *o,
                              struct strbuf *out);

/* Another view of the same page (config "page": "compare" for `scry compare --html`, drawn by
 * web/compare.js): the JSON document (one scry wrote, so not checked as a profile; it must be an
 * object) embedded as a profile is, under the title `scry: TITLE` (cleaned and escaped). */
int profile_html_render_page(const struct profile_html_assets *assets, const char *page,
                             const char *title, const char *text, size_t len,
                             const struct profile_html_opts *o, struct strbuf *out);

#endif
