/* The browser view's page writer (src/render/profile_html.c) on assets of its own: every marker
 * replaced once, the profile embedded byte for byte except '<' (so that no text in it can end the
 * script element), the title escaped, and bad profiles or incomplete templates refused. */
#include <string.h>

#include "common/error.h"
#include "render/profile_html.h"
#include "testlib.h"

static const char tmpl[] = "<title>@@SCRY_TITLE@@</title><style>@@SCRY_CSS@@</style>"
                           "<c>@@SCRY_CONFIG@@</c><p>@@SCRY_PROFILE@@</p>@@SCRY_other"
                           "<script>@@SCRY_JS@@</script>";

static struct profile_html_assets assets(const char *html, const char *css, const char *js)
{
    struct profile_html_assets a = {html, css, js, strlen(html), strlen(css), strlen(js)};
    return a;
}

static int render(const struct profile_html_assets *a, const char *json, struct strbuf *out)
{
    struct profile_html_opts o = {.threshold = 1.5, .scry_version = "9.9"};
    sb_reset(out);
    return profile_html_render_bytes(a, json, strlen(json), "p.json", &o, out);
}

static void test_markers_replaced(void)
{
    struct profile_html_assets a = assets(tmpl, "b{}", "f()");
    struct strbuf sb = STRBUF_INIT;
    CHECK_EQ(render(&a, "{\"program\":\"/a/<b>&\\\"c.py\",\"files\":{}}", &sb), 0);
    CHECK_STR(sb_str(&sb),
              "<title>scry: /a/&lt;b&gt;&amp;&quot;c.py</title><style>b{}</style>"
              "<c>{\"threshold\":1.5,\"scry_version\":\"9.9\"}</c>"
              "<p>{\"program\":\"/a/\\u003cb>&\\\"c.py\",\"files\":{}}</p>@@SCRY_other"
              "<script>f()</script>");
    sb_release(&sb);
}

static void test_script_end_escaped(void)
{
    struct profile_html_assets a = assets(tmpl, "", "");
    struct strbuf sb = STRBUF_INIT;
    const char *doc = "{\"files\":{\"a.py\":{\"lines\":[{\"lineno\":1,"
                      "\"line\":\"</script><!-- </SCRIPT>\"}]}}}";
    CHECK_EQ(render(&a, doc, &sb), 0);
    CHECK(strstr(sb_str(&sb), "</script><!--") == NULL);
    CHECK(strstr(sb_str(&sb), "\\u003c/script>\\u003c!-- \\u003c/SCRIPT>") != NULL);
    CHECK(strstr(sb_str(&sb), "<title>scry: p.json</title>") != NULL); /* no program: the file */
    sb_release(&sb);
}

/* view --serve's configuration: the token, and the command line's provider and base URL, whose
 * '<' cannot end the script element either. */
static void test_serve_config(void)
{
    struct profile_html_assets a = assets("<c>@@SCRY_CONFIG@@</c>@@SCRY_TITLE@@@@SCRY_CSS@@"
                                          "@@SCRY_PROFILE@@@@SCRY_JS@@@@SCRY_CONNECT@@",
                                          "", "");
    struct profile_html_opts o = {.threshold = 1, .scry_version = "9", .serve_token = "t0",
                                  .serve_provider = "openai",
                                  .serve_base_url = "http://h/</script>\""};
    struct strbuf sb = STRBUF_INIT;
    CHECK_EQ(profile_html_render_bytes(&a, "{}", 2, "p.json", &o, &sb), 0);
    CHECK(strstr(sb_str(&sb), "<c>{\"threshold\":1,\"scry_version\":\"9\",\"serve\":true,"
                              "\"token\":\"t0\",\"provider\":\"openai\","
                              "\"base_url\":\"http://h/\\u003c/script>\\\"\"}</c>") != NULL);
    CHECK(strstr(sb_str(&sb), "</script>") == NULL);
    o.serve_provider = o.serve_base_url = NULL;
    sb_reset(&sb);
    CHECK_EQ(profile_html_render_bytes(&a, "{}", 2, "p.json", &o, &sb), 0);
    CHECK(strstr(sb_str(&sb), "provider") == NULL && strstr(sb_str(&sb), "base_url") == NULL);
    sb_release(&sb);
}

static void test_refusals(void)
{
    struct strbuf sb = STRBUF_INIT;
    struct profile_html_assets a = assets(tmpl, "", "");
    CHECK_EQ(render(&a, "[1]", &sb), -SCRY_E_BAD_PROFILE);
    CHECK_EQ(render(&a, "{\"files\":{\"a.py\":{\"lines\":[{\"lineno\":\"x\"}]}}}", &sb),
             -SCRY_E_BAD_PROFILE);
    CHECK(strstr(err_last_message(), "p.json") != NULL);
    CHECK_EQ(render(&a, "{", &sb), -SCRY_E_BAD_PROFILE);
    struct profile_html_assets partial = assets("<x>@@SCRY_PROFILE@@</x>", "", "");
    CHECK_EQ(render(&partial, "{}", &sb), -SCRY_E_INTERNAL);
    struct profile_html_assets badjs = assets(tmpl, "", "x='</script>'");
    CHECK_EQ(render(&badjs, "{}", &sb), -SCRY_E_INTERNAL);
    sb_release(&sb);
}

/* Another page of the viewer (scry compare --html): its config names it, its title is cleaned by
 * the one sanitizer (an escape sequence and a bidirectional override become '?') and escaped,
 * its document embedded as a profile is, and a document that is not an object refused. */
static void test_other_page(void)
{
    struct profile_html_assets a = assets(tmpl, "", "");
    struct profile_html_opts o = {.threshold = 1, .scry_version = "9"};
    struct strbuf sb = STRBUF_INIT;
    const char *doc = "{\"lines\":[{\"file\":\"</script>\"}]}";
    CHECK_EQ(profile_html_render_page(&a, "compare", "compare a\x1b[31m\xe2\x80\xae<b>", doc,
                                      strlen(doc), &o, &sb),
             0);
    CHECK_STR(sb_str(&sb), "<title>scry: compare a?[31m?&lt;b&gt;</title><style></style>"
                           "<c>{\"threshold\":1,\"scry_version\":\"9\",\"page\":\"compare\"}</c>"
                           "<p>{\"lines\":[{\"file\":\"\\u003c/script>\"}]}</p>@@SCRY_other"
                           "<script></script>");
    sb_reset(&sb);
    CHECK_EQ(profile_html_render_page(&a, "compare", "t", "[1]", 3, &o, &sb), -SCRY_E_INTERNAL);
    sb_release(&sb);
}

static const struct tl_test tests[] = {
    TL(test_markers_replaced),
    TL(test_other_page),
    TL(test_script_end_escaped),
    TL(test_refusals),
    TL(test_serve_config),
};
TL_MAIN(tests)
