/* The browser view's page: the template (web/index.html) with its markers replaced by the
 * stylesheet, the script, a small config object and the profile. Everything is inlined, so the
 * page is one self-contained file; the template's Content-Security-Policy forbids every fetch. */
#include "render/profile_html.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "common/error.h"
#include "common/sanitize.h"
#include "analysis/profile_doc.h"

/* Text placed inside <title>: HTML-escaped, control characters dropped. */
static void add_escaped(struct strbuf *sb, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&':
            sb_adds(sb, "&amp;");
            break;
        case '<':
            sb_adds(sb, "&lt;");
            break;
        case '>':
            sb_adds(sb, "&gt;");
            break;
        case '"':
            sb_adds(sb, "&quot;");
            break;
        default:
            if (c >= 0x20 && c != 0x7f)
                sb_addch(sb, (char)c);
        }
    }
}

/* JSON text inside <script type="application/json">: the document is valid JSON (it was parsed),
 * so '<' occurs only inside strings, where \u003c means the same character. That rules out
 * </script> and <!-- (which would change how the HTML parser reads the element). */
static void add_script_json(struct strbuf *sb, const char *text, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '<')
            continue;
        sb_add(sb, text + start, i - start);
        sb_adds(sb, "\\u003c");
        start = i + 1;
    }
    sb_add(sb, text + start, len - start);
}

/* Our own CSS and JS must not close their element early; refuse a build that would. */
static int check_asset(const char *what, const char *s, size_t len, const char *closer)
{
    size_t n = strlen(closer);
    for (size_t i = 0; i + n <= len; i++)
        if (strncasecmp(s + i, closer, n) == 0)
            return err_fail(SCRY_E_INTERNAL, "the viewer's %s contains %s", what, closer);
    return 0;
}

/* ,"name":"value" for the page's configuration, '<' written as \u003c (the configuration sits
 * in a script element, and a command-line value could hold "</script>"); nothing when NULL. */
static void add_config_str(struct strbuf *out, const char *name, const char *v)
{
    if (!v)
        return;
    struct strbuf js = STRBUF_INIT;
    sb_add_json_str(&js, v, strlen(v));
    sb_addf(out, ",\"%s\":", name);
    for (size_t i = 0; i < js.len; i++) {
        if (js.buf[i] == '<')
            sb_adds(out, "\\u003c");
        else
            sb_addch(out, js.buf[i]);
    }
    sb_release(&js);
}

/* The template with its markers replaced: the title (cleaned by the one sanitizer, then
 * escaped), the assets, the config (with "page" when not NULL: which view the script shows) and
 * the document. */
static int fill_template(const struct profile_html_assets *a, const char *title, const char *page,
                         const char *text, size_t len, const struct profile_html_opts *o,
                         struct strbuf *out)
{
    int err;
    if ((err = check_asset("stylesheet", a->css, a->css_len, "</style")) ||
        (err = check_asset("script", a->js, a->js_len, "</script")))
        return err;

    static const char *const markers[] = {"@@SCRY_TITLE@@", "@@SCRY_CSS@@", "@@SCRY_JS@@",
                                          "@@SCRY_CONFIG@@", "@@SCRY_PROFILE@@",
                                          "@@SCRY_CONNECT@@"};
    const char *p = a->html, *end = a->html + a->html_len;
    int seen = 0;
    while (p < end) {
        const char *m = memmem(p, (size_t)(end - p), "@@SCRY_", 7);
        if (!m) {
            sb_add(out, p, (size_t)(end - p));
            break;
        }
        sb_add(out, p, (size_t)(m - p));
        size_t k;
        for (k = 0; k < sizeof(markers) / sizeof(*markers); k++)
            if ((size_t)(end - m) >= strlen(markers[k]) &&
                memcmp(m, markers[k], strlen(markers[k])) == 0)
                break;
        if (k == sizeof(markers) / sizeof(*markers)) {
            sb_add(out, m, 7);
            p = m + 7;
            continue;
        }
        switch (k) {
        case 0:
            sb_adds(out, "scry: ");
            add_escaped(out, san_str(title));
            break;
        case 1:
            sb_add(out, a->css, a->css_len);
            break;
        case 2:
            sb_add(out, a->js, a->js_len);
            break;
        case 3:
            sb_addf(out, "{\"threshold\":%.17g,\"scry_version\":", o->threshold);
            sb_add_json_str(out, o->scry_version ? o->scry_version : "",
                            o->scry_version ? strlen(o->scry_version) : 0);
            add_config_str(out, "page", page);
            if (o->serve_token) {
                sb_adds(out, ",\"serve\":true,\"token\":");
                sb_add_json_str(out, o->serve_token, strlen(o->serve_token));
                add_config_str(out, "provider", o->serve_provider);
                add_config_str(out, "base_url", o->serve_base_url);
            }
            sb_addch(out, '}');
            break;
        case 4:
            add_script_json(out, text, len);
            break;
        case 5:
            if (o->serve_token)
                sb_adds(out, "; connect-src 'self'");
            break;
        }
        seen |= 1 << k;
        p = m + strlen(markers[k]);
    }
    if ((seen & ((1 << 5) - 1)) != (1 << 5) - 1)
        return err_fail(SCRY_E_INTERNAL, "the viewer's template lacks a marker (have %#x)", seen);
    return 0;
}

int profile_html_render_bytes(const struct profile_html_assets *a, const char *text, size_t len,
                              const char *what, const struct profile_html_opts *o,
                              struct strbuf *out)
{
    /* The profile model's checks, the terminal view's too: a profile opens in both views or in
     * neither. */
    struct pdoc d;
    int err = pdoc_load_bytes(&d, text, len, what);
    if (err)
        return err;
    err = fill_template(a, d.program[0] ? d.program : what, NULL, text, len, o, out);
    pdoc_free(&d);
    return err;
}

int profile_html_render_page(const struct profile_html_assets *a, const char *page,
                             const char *title, const char *text, size_t len,
                             const struct profile_html_opts *o, struct strbuf *out)
{
    json_t *root = json_loadb(text, len, 0, NULL);
    bool ok = json_is_object(root);
    json_decref(root);
    if (!ok)
        return err_fail(SCRY_E_INTERNAL, "the %s page's document is not a JSON object", page);
    return fill_template(a, title, page, text, len, o, out);
}
