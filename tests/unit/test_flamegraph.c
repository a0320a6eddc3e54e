/* The flame graph SVG and the speedscope export on synthetic trees: every frame's width is its
 * weight over the total times the drawing width, children fit in their parents, cutting leaves
 * the other frames' rectangles exactly where they were, text is escaped, the document refers to
 * nothing outside itself, diff colours; speedscope's frames, samples and weights agree. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis/stacks.h"
#include "render/flamegraph_svg.h"
#include "render/speedscope.h"
#include "testlib.h"

struct rect {
    char name[256];
    double w_attr; /* data-w */
    double before; /* data-b */
    double x, y, width;
    char fill[32];
};

static double attr_num(const char *from, const char *end, const char *name)
{
    const char *p = strstr(from, name);
    if (!p || p > end)
        return -1;
    return strtod(p + strlen(name), NULL);
}

/* The frames of an SVG that fg_write_svg wrote. */
static size_t parse_svg(const char *svg, struct rect *out, size_t max)
{
    size_t n = 0;
    for (const char *p = strstr(svg, "<g class=\"f\""); p && n < max;
         p = strstr(p + 1, "<g class=\"f\"")) {
        const char *end = strstr(p, "</g>");
        if (!end)
            break;
        struct rect *r = &out[n++];
        memset(r, 0, sizeof(*r));
        r->w_attr = attr_num(p, end, "data-w=\"");
        r->before = attr_num(p, end, "data-b=\"");
        const char *t = strstr(p, "<title>") + 7;
        size_t len = strcspn(t, "\n");
        if (len >= sizeof(r->name))
            len = sizeof(r->name) - 1;
        memcpy(r->name, t, len);
        const char *rc = strstr(p, "<rect ");
        r->x = attr_num(rc, end, " x=\"");
        r->y = attr_num(rc, end, " y=\"");
        r->width = attr_num(rc, end, " width=\"");
        const char *f = strstr(rc, "fill=\"") + 6;
        size_t fl = strcspn(f, "\"");
        if (fl >= sizeof(r->fill))
            fl = sizeof(r->fill) - 1;
        memcpy(r->fill, f, fl);
    }
    return n;
}

static double absd(double v)
{
    return v < 0 ? -v : v;
}

static int build(struct stk_tree *t, bool diff, const char *text)
{
    stk_init(t, diff);
    int err = stk_parse_folded(t, text, strlen(text), "test");
    return err ? err : stk_finish(t);
}

static const char input[] = "main (a.py:1);work (a.py:5);inner (a.py:9) 600\n"
                            "main (a.py:1);work (a.py:5) 100\n"
                            "main (a.py:1);load (b.py:2) 250\n"
                            "main (a.py:1);rare (c.py:3) 7\n"
                            "main (a.py:1);rarer (c.py:4) 3\n"
                            "main (a.py:1) 30\n"
                            "thread (t.py:8);zlib.compress (zlib.so) 10\n";

/* Width = weight / total * drawing width; children side by side inside their parent. */
static void check_geometry(const struct rect *r, size_t n, double total, double fw)
{
    for (size_t i = 0; i < n; i++) {
        CHECK(absd(r[i].width - r[i].w_attr / total * fw) < 1e-3);
        CHECK(r[i].x >= FG_XPAD - 1e-3 && r[i].x + r[i].width <= FG_XPAD + fw + 1e-3);
        double kids = 0;
        for (size_t j = 0; j < n; j++) {
            if (absd(r[j].y - (r[i].y - FG_FRAME_HEIGHT)) > 1e-6)
                continue;
            if (r[j].x >= r[i].x - 1e-3 && r[j].x + r[j].width <= r[i].x + r[i].width + 1e-3)
                kids += r[j].w_attr;
        }
        CHECK(kids <= r[i].w_attr);
    }
}

static void test_widths_equal_weights(void)
{
    struct stk_tree t;
    CHECK_EQ(build(&t, false, input), 0);
    struct strbuf svg = STRBUF_INIT;
    struct fg_opts o = {.title = "T <&>", .unit = "samples"};
    fg_write_svg(&t, &o, &svg);
    struct rect r[64];
    size_t n = parse_svg(sb_str(&svg), r, 64);
    CHECK_EQ(n, t.nnodes); /* every frame and the root */
    double total = t.nodes[STK_ROOT].total;
    CHECK(total == 1000);
    check_geometry(r, n, total, FG_DEFAULT_WIDTH - 2 * FG_XPAD);
    /* Each frame's weight is its node's total. */
    for (size_t i = 0; i < n; i++) {
        if (strcmp(r[i].name, "all") == 0) {
            CHECK(r[i].w_attr == total);
            continue;
        }
        bool found = false;
        for (uint32_t j = 1; j < t.nnodes; j++)
            if (strcmp(t.frames[t.nodes[j].frame], r[i].name) == 0 &&
                t.nodes[j].total == r[i].w_attr)
                found = true;
        CHECK(found);
    }
    CHECK(strstr(sb_str(&svg), "T &lt;&amp;&gt;") != NULL);
    sb_release(&svg);

    /* Another width scales every frame. */
    o.width = 600;
    fg_write_svg(&t, &o, &svg);
    n = parse_svg(sb_str(&svg), r, 64);
    CHECK_EQ(n, t.nnodes);
    check_geometry(r, n, total, 600 - 2 * FG_XPAD);
    sb_release(&svg);
    stk_free(&t);
}

static void test_cut_keeps_rects(void)
{
    struct stk_tree t, c;
    CHECK_EQ(build(&t, false, input), 0);
    struct stk_cut cut = {.min_pct = 0.95}; /* rare (7) and rarer (3) fold into [other] 10 */
    CHECK_EQ(stk_cut(&t, &cut, &c), 0);
    struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
    struct fg_opts o = {0};
    fg_write_svg(&t, &o, &a);
    fg_write_svg(&c, &o, &b);
    struct rect ra[64], rb[64];
    size_t na = parse_svg(sb_str(&a), ra, 64), nb = parse_svg(sb_str(&b), rb, 64);
    CHECK_EQ(nb, na - 1); /* two frames became one */
    size_t others = 0;
    for (size_t i = 0; i < nb; i++) {
        if (strcmp(rb[i].name, "[other]") == 0) {
            others++;
            CHECK(rb[i].w_attr == 10);
            continue;
        }
        bool same = false;
        for (size_t j = 0; j < na; j++)
            if (strcmp(ra[j].name, rb[i].name) == 0 && ra[j].y == rb[i].y)
                same = ra[j].w_attr == rb[i].w_attr && absd(ra[j].width - rb[i].width) < 1e-9;
        CHECK(same);
    }
    CHECK_EQ(others, 1);
    check_geometry(rb, nb, 1000, FG_DEFAULT_WIDTH - 2 * FG_XPAD);

    /* max-depth: nothing above depth 2 but [other]. */
    struct stk_tree d;
    struct stk_cut deep = {.max_depth = 2};
    CHECK_EQ(stk_cut(&t, &deep, &d), 0);
    sb_reset(&b);
    fg_write_svg(&d, &o, &b);
    nb = parse_svg(sb_str(&b), rb, 64);
    double top = 1e9;
    for (size_t i = 0; i < nb; i++)
        top = rb[i].y < top ? rb[i].y : top;
    for (size_t i = 0; i < nb; i++)
        if (rb[i].y == top)
            CHECK_STR(rb[i].name, "[other]");
    stk_free(&d);
    stk_free(&c);
    stk_free(&t);
    sb_release(&a);
    sb_release(&b);
}

static void test_self_contained_and_escaped(void)
{
    struct stk_tree t;
    stk_init(&t, false);
    const char *frames[] = {"<lambda> (a&b.py:1)", "bad \xff byte", "ctl\x01"};
    CHECK_EQ(stk_add_stack(&t, frames, NULL, 3, 5, 0), 0);
    CHECK_EQ(stk_finish(&t), 0);
    struct strbuf svg = STRBUF_INIT;
    struct fg_opts o = {0};
    fg_write_svg(&t, &o, &svg);
    const char *s = sb_str(&svg);
    CHECK(strstr(s, "&lt;lambda&gt; (a&amp;b.py:1)") != NULL);
    CHECK(strstr(s, "bad \xef\xbf\xbd byte") != NULL);
    CHECK(strstr(s, "ctl?") != NULL);
    CHECK(strstr(s, "\xff") == NULL);
    CHECK(strstr(s, "<script") != NULL && strstr(s, "<style") != NULL);
    CHECK(strstr(s, "href") == NULL);
    CHECK(strstr(s, "url(") == NULL);
    CHECK(strstr(s, "src=") == NULL);
    CHECK(strstr(s, "@import") == NULL);
    /* The only "http" is the SVG namespace. */
    const char *h = strstr(s, "http");
    CHECK(h && strncmp(h, "http://www.w3.org/2000/svg\"", 27) == 0 && !strstr(h + 1, "http"));
    /* One CDATA section, closed once, at the script. */
    CHECK(strstr(s, "]]>") == strrchr(s, ']') - 1);
    sb_release(&svg);
    stk_free(&t);
}

static void test_diff_colors(void)
{
    struct strbuf c = STRBUF_INIT;
    fg_diff_color(10, 20, 10, &c);
    CHECK_STR(sb_str(&c), "rgb(255,25,25)"); /* the largest growth: deepest red */
    sb_reset(&c);
    fg_diff_color(20, 15, 10, &c);
    CHECK_STR(sb_str(&c), "rgb(130,130,255)"); /* half the largest change, shrinking: blue */
    sb_reset(&c);
    fg_diff_color(7, 7, 10, &c);
    CHECK_STR(sb_str(&c), "rgb(235,235,235)");
    sb_release(&c);

    struct stk_tree t;
    CHECK_EQ(build(&t, true, "m;grow 10 40\nm;shrink 30 10\nm;same 5 5\n"), 0);
    struct strbuf svg = STRBUF_INIT;
    struct fg_opts o = {0};
    fg_write_svg(&t, &o, &svg);
    struct rect r[16];
    size_t n = parse_svg(sb_str(&svg), r, 16);
    CHECK_EQ(n, 5);
    check_geometry(r, n, 55, FG_DEFAULT_WIDTH - 2 * FG_XPAD); /* width is after */
    for (size_t i = 0; i < n; i++) {
        if (strcmp(r[i].name, "grow") == 0) {
            CHECK(r[i].before == 10 && r[i].w_attr == 40);
            CHECK(strncmp(r[i].fill, "rgb(255,", 8) == 0);
        } else if (strcmp(r[i].name, "shrink") == 0) {
            CHECK(r[i].before == 30 && r[i].w_attr == 10);
            CHECK(strstr(r[i].fill, ",255)") != NULL && strncmp(r[i].fill, "rgb(255,", 8) != 0);
        } else if (strcmp(r[i].name, "same") == 0) {
            CHECK_STR(r[i].fill, "rgb(235,235,235)");
        }
    }
    CHECK(strstr(sb_str(&svg), "Differential") != NULL);
    sb_release(&svg);
    stk_free(&t);
}

static void test_kind_colors(void)
{
    struct strbuf py = STRBUF_INIT, nat = STRBUF_INIT, oth = STRBUF_INIT, again = STRBUF_INIT;
    fg_frame_color("work (a.py:5)", FG_PALETTE_KIND, &py);
    fg_frame_color("zlib.compress (zlib.so)", FG_PALETTE_KIND, &nat);
    fg_frame_color("[other]", FG_PALETTE_KIND, &oth);
    fg_frame_color("work (a.py:5)", FG_PALETTE_KIND, &again);
    CHECK_STR(sb_str(&py), sb_str(&again)); /* deterministic */
    int r, g, b;
    CHECK_EQ(sscanf(sb_str(&py), "rgb(%d,%d,%d)", &r, &g, &b), 3);
    CHECK(r > b); /* warm */
    CHECK_EQ(sscanf(sb_str(&nat), "rgb(%d,%d,%d)", &r, &g, &b), 3);
    CHECK(b > r); /* cool */
    CHECK_STR(sb_str(&oth), "rgb(200,200,200)");
    sb_release(&py);
    sb_release(&nat);
    sb_release(&oth);
    sb_release(&again);
}

static void test_speedscope(void)
{
    struct stk_tree t;
    CHECK_EQ(build(&t, false, input), 0);
    struct strbuf out = STRBUF_INIT;
    struct speedscope_opts o = {.name = "app.py", .unit = "none", .exporter = "scry@test"};
    speedscope_write(&t, &o, &out);
    json_error_t jerr;
    json_t *doc = json_loads(sb_str(&out), 0, &jerr);
    CHECK(doc != NULL);
    if (!doc)
        return;
    CHECK_STR(json_string_value(json_object_get(doc, "$schema")), SPEEDSCOPE_SCHEMA);
    json_t *frames = json_object_get(json_object_get(doc, "shared"), "frames");
    CHECK_EQ(json_array_size(frames), 8); /* main work inner load rare rarer thread zlib */
    json_t *prof = json_array_get(json_object_get(doc, "profiles"), 0);
    CHECK_STR(json_string_value(json_object_get(prof, "type")), "sampled");
    CHECK_STR(json_string_value(json_object_get(prof, "unit")), "none");
    json_t *samples = json_object_get(prof, "samples"), *weights = json_object_get(prof, "weights");
    CHECK_EQ(json_array_size(samples), 7); /* one per folded line */
    CHECK_EQ(json_array_size(weights), json_array_size(samples));
    double sum = 0;
    for (size_t i = 0; i < json_array_size(weights); i++)
        sum += json_number_value(json_array_get(weights, i));
    CHECK(sum == 1000);
    CHECK(json_number_value(json_object_get(prof, "endValue")) == 1000);
    /* Each sample, root first, spells a stack of the input with its count. */
    struct strbuf line = STRBUF_INIT;
    for (size_t i = 0; i < json_array_size(samples); i++) {
        json_t *s = json_array_get(samples, i);
        sb_reset(&line);
        for (size_t j = 0; j < json_array_size(s); j++) {
            size_t k = (size_t)json_integer_value(json_array_get(s, j));
            CHECK(k < json_array_size(frames));
            json_t *f = json_array_get(frames, k);
            if (j)
                sb_addch(&line, ';');
            sb_adds(&line, json_string_value(json_object_get(f, "name")));
            json_t *file = json_object_get(f, "file");
            if (file)
                sb_addf(&line, " (%s", json_string_value(file));
            json_t *ln = json_object_get(f, "line");
            if (ln)
                sb_addf(&line, ":%lld", (long long)json_integer_value(ln));
            if (file)
                sb_addch(&line, ')');
        }
        sb_addch(&line, ' ');
        stk_format_weight(&line, json_number_value(json_array_get(weights, i)));
        sb_addch(&line, '\n');
        CHECK(strstr(input, sb_str(&line)) != NULL);
    }
    CHECK_STR(json_string_value(json_object_get(doc, "exporter")), "scry@test");
    CHECK_STR(json_string_value(json_object_get(doc, "name")), "app.py");
    json_decref(doc);
    sb_release(&out);
    sb_release(&line);
    stk_free(&t);
}

static const struct tl_test tests[] = {
    TL(test_widths_equal_weights), TL(test_cut_keeps_rects), TL(test_self_contained_and_escaped),
    TL(test_diff_colors),          TL(test_kind_colors),     TL(test_speedscope),
};
TL_MAIN(tests)
