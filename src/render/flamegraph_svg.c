/* Flame graph SVG (see flamegraph_svg.h). Laid out in one depth-first pass: each child starts
 * where its previous sibling ended, inside its parent, so widths add up exactly as weights do.
 * Text from the tree is escaped for XML and checked as UTF-8 (bad bytes become U+FFFD), so any
 * frame text gives a well-formed document. */
#include "render/flamegraph_svg.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fmt.h"
#include "common/sanitize.h"

#define FONT_SIZE 12
#define CHAR_W (FONT_SIZE * 0.59) /* mean glyph width of Verdana at that size */
#define YPAD_TOP 56
#define YPAD_BOTTOM 36

/* Without libm: the binary links none. */
static double max_d(double a, double b)
{
    return a > b ? a : b;
}

/* Appends at most max_chars characters of s (SIZE_MAX: all) as XML text; returns how many
 * characters the whole of s has. */
static size_t xml_text(struct strbuf *out, const char *s, size_t max_chars)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), i = 0, chars = 0;
    while (i < n) {
        const char *repl;
        size_t l = san_next(s + i, n - i, &repl);
        if (chars < max_chars) {
            if (repl) /* U+FFFD for bytes that are not UTF-8; '?' for what XML 1.0 refuses */
                sb_adds(out, repl);
            else if (p[i] == '&')
                sb_adds(out, "&amp;");
            else if (p[i] == '<')
                sb_adds(out, "&lt;");
            else if (p[i] == '>')
                sb_adds(out, "&gt;");
            else if (p[i] == '"')
                sb_adds(out, "&quot;");
            else
                sb_add(out, p + i, l);
        }
        i += l;
        chars++;
    }
    return chars;
}

static size_t utf8_chars(const char *s)
{
    size_t n = strlen(s), i = 0, chars = 0;
    while (i < n) {
        const char *repl;
        i += san_next(s + i, n - i, &repl);
        chars++;
    }
    return chars;
}

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

void fg_frame_color(const char *name, enum fg_palette palette, struct strbuf *rgb)
{
    uint64_t h = name_hash(name);
    double v1 = (double)(h & 0xff) / 255.0, v2 = (double)((h >> 8) & 0xff) / 255.0,
           v3 = (double)((h >> 16) & 0xff) / 255.0;
    int r, g, b;
    if (strcmp(name, STK_OTHER) == 0 || strcmp(name, "-") == 0) {
        r = g = b = 200;
    } else if (palette == FG_PALETTE_MEM) {
        r = (int)(40 * v3);
        g = 190 + (int)(50 * v2);
        b = (int)(180 * v1);
    } else if (palette == FG_PALETTE_HASH) {
        r = 205 + (int)(50 * v3);
        g = (int)(230 * v1);
        b = (int)(55 * v2);
    } else {
        switch (stk_frame_kind(name)) {
        case STK_KIND_PYTHON: /* warm: yellow to orange */
            r = 225 + (int)(30 * v3);
            g = 110 + (int)(100 * v1);
            b = 30 + (int)(50 * v2);
            break;
        case STK_KIND_NATIVE: /* cool: teal to blue */
            r = 70 + (int)(50 * v3);
            g = 140 + (int)(60 * v1);
            b = 210 + (int)(45 * v2);
            break;
        default:
            r = g = b = 185 + (int)(30 * v1);
            break;
        }
    }
    sb_addf(rgb, "rgb(%d,%d,%d)", r, g, b);
}

void fg_diff_color(double before, double after, double max_delta, struct strbuf *rgb)
{
    double delta = after - before;
    int c = max_delta > 0 ? (int)(long)(0.5 + 210.0 * fabs(delta) / max_delta) : 0;
    if (c > 210)
        c = 210;
    if (delta > 0)
        sb_addf(rgb, "rgb(255,%d,%d)", 235 - c, 235 - c);
    else if (delta < 0)
        sb_addf(rgb, "rgb(%d,%d,255)", 235 - c, 235 - c);
    else
        sb_adds(rgb, "rgb(235,235,235)");
}

static void weight_text(struct strbuf *out, double w, const struct fg_opts *o)
{
    if (o->bytes && w >= 1024) {
        char human[32];
        fmt_bytes((uint64_t)w, human, sizeof(human));
        sb_addf(out, "%s (", human);
        stk_format_weight(out, w);
        sb_addf(out, " bytes)");
        return;
    }
    stk_format_weight(out, w);
    sb_addf(out, " %s", o->unit ? o->unit : "samples");
}

static const char style[] =
    "<style type=\"text/css\">\n"
    "text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
    "#title { font-size: 17px; text-anchor: middle; }\n"
    "#subtitle { text-anchor: middle; fill: #555; }\n"
    "#matched { text-anchor: end; }\n"
    ".btn { cursor: pointer; fill: #2458c0; }\n"
    ".btn.off { opacity: 0.2; cursor: default; }\n"
    "g.f { cursor: pointer; }\n"
    "g.f text { pointer-events: none; }\n"
    "g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
    "g.f.a rect { opacity: 0.55; }\n"
    "g.f.hide { display: none; }\n"
    "</style>\n";

/* Zoom, search and details. Frames keep their laid-out geometry in properties; zooming maps
 * the chosen frame's span onto the full width. */
static const char script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "\"use strict\";\n"
    "(function () {\n"
    "  var svg = document.documentElement;\n"
    "  var XPAD = +svg.getAttribute(\"data-xpad\"), FW = +svg.getAttribute(\"data-fw\");\n"
    "  var CW = +svg.getAttribute(\"data-cw\");\n"
    "  var unit = svg.getAttribute(\"data-unit\");\n"
    "  var frames = Array.prototype.slice.call(document.querySelectorAll(\"g.f\"));\n"
    "  var details = document.getElementById(\"details\");\n"
    "  var matched = document.getElementById(\"matched\");\n"
    "  var unzoomBtn = document.getElementById(\"unzoom\");\n"
    "  var searchBtn = document.getElementById(\"search\");\n"
    "  var total = 0, searching = false;\n"
    "  frames.forEach(function (g) {\n"
    "    var r = g.querySelector(\"rect\");\n"
    "    g._r = r;\n"
    "    g._t = g.querySelector(\"text\");\n"
    "    g._x = +r.getAttribute(\"x\");\n"
    "    g._w = +r.getAttribute(\"width\");\n"
    "    g._y = +r.getAttribute(\"y\");\n"
    "    g._fill = r.getAttribute(\"fill\");\n"
    "    g._weight = +g.getAttribute(\"data-w\");\n"
    "    var title = g.querySelector(\"title\").textContent;\n"
    "    var nl = title.indexOf(\"\\n\");\n"
    "    g._name = nl < 0 ? title : title.slice(0, nl);\n"
    "    g._info = nl < 0 ? \"\" : title.slice(nl + 1);\n"
    "    if (g._weight > total) total = g._weight;\n"
    "    g.addEventListener(\"click\", function () { zoom(g); });\n"
    "    g.addEventListener(\"mouseover\", function () {\n"
    "      details.textContent = g._name + \"  \" + g._info;\n"
    "    });\n"
    "    g.addEventListener(\"mouseout\", function () { details.textContent = \" \"; });\n"
    "  });\n"
    "  function label(g, x, w) {\n"
    "    var n = Math.floor((w - 6) / CW), s = g._name;\n"
    "    if (n < 3) s = \"\";\n"
    "    else if (s.length > n) s = s.slice(0, n - 2) + \"..\";\n"
    "    g._t.textContent = s;\n"
    "    g._t.setAttribute(\"x\", (x + 3).toFixed(2));\n"
    "  }\n"
    "  function place(g, x, w) {\n"
    "    g._r.setAttribute(\"x\", x.toFixed(4));\n"
    "    g._r.setAttribute(\"width\", w.toFixed(4));\n"
    "    label(g, x, w);\n"
    "  }\n"
    "  function zoom(z) {\n"
    "    var x0 = z._x, x1 = z._x + z._w, s = FW / z._w, eps = 1e-3;\n"
    "    frames.forEach(function (g) {\n"
    "      var inside = g._x >= x0 - eps && g._x + g._w <= x1 + eps;\n"
    "      var covers = g._x <= x0 + eps && g._x + g._w >= x1 - eps;\n"
    "      g.classList.remove(\"hide\", \"a\");\n"
    "      if (g._y <= z._y + eps && inside) {\n"
    "        place(g, XPAD + (g._x - x0) * s, g._w * s);\n"
    "      } else if (g._y > z._y && covers) {\n"
    "        g.classList.add(\"a\");\n"
    "        place(g, XPAD, FW);\n"
    "      } else {\n"
    "        g.classList.add(\"hide\");\n"
    "      }\n"
    "    });\n"
    "    unzoomBtn.classList.remove(\"off\");\n"
    "  }\n"
    "  function unzoom() {\n"
    "    frames.forEach(function (g) {\n"
    "      g.classList.remove(\"hide\", \"a\");\n"
    "      place(g, g._x, g._w);\n"
    "    });\n"
    "    unzoomBtn.classList.add(\"off\");\n"
    "  }\n"
    "  function clearSearch() {\n"
    "    frames.forEach(function (g) { g._r.setAttribute(\"fill\", g._fill); });\n"
    "    matched.textContent = \" \";\n"
    "    searchBtn.textContent = \"Search\";\n"
    "    searching = false;\n"
    "  }\n"
    "  function search(term) {\n"
    "    var re;\n"
    "    try { re = new RegExp(term); }\n"
    "    catch (e) { re = new RegExp(term.replace(/[.*+?^${}()|[\\]\\\\]/g, \"\\\\$&\")); }\n"
    "    var hits = [];\n"
    "    frames.forEach(function (g) {\n"
    "      var hit = re.test(g._name);\n"
    "      g._r.setAttribute(\"fill\", hit ? \"rgb(230,0,230)\" : g._fill);\n"
    "      if (hit) hits.push(g);\n"
    "    });\n"
    "    // A match inside another match is the same samples: count spans, outermost first.\n"
    "    hits.sort(function (a, b) { return a._x - b._x || b._w - a._w || b._y - a._y; });\n"
    "    var sum = 0, end = -1;\n"
    "    hits.forEach(function (g) {\n"
    "      if (g._x + g._w <= end + 1e-3) return;\n"
    "      sum += g._weight;\n"
    "      end = g._x + g._w;\n"
    "    });\n"
    "    var pct = total > 0 ? 100 * sum / total : 0;\n"
    "    matched.textContent = \"Matched: \" + pct.toFixed(2) + \"% (\" + hits.length +\n"
    "      \" frames, \" + sum + \" \" + unit + \")\";\n"
    "    searchBtn.textContent = \"Reset Search\";\n"
    "    searching = true;\n"
    "    return pct;\n"
    "  }\n"
    "  function ask() {\n"
    "    if (searching) { clearSearch(); return; }\n"
    "    var term = window.prompt(\"Search for (regular expression)\", \"\");\n"
    "    if (term) search(term);\n"
    "  }\n"
    "  unzoomBtn.addEventListener(\"click\", unzoom);\n"
    "  searchBtn.addEventListener(\"click\", ask);\n"
    "  window.addEventListener(\"keydown\", function (e) {\n"
    "    if ((e.ctrlKey || e.metaKey) && (e.key === \"f\" || e.key === \"F\")) {\n"
    "      e.preventDefault();\n"
    "      searching = false;\n"
    "      ask();\n"
    "    } else if (e.key === \"Escape\") {\n"
    "      unzoom();\n"
    "      clearSearch();\n"
    "    }\n"
    "  });\n"
    "  // For tests and embedding pages: the same actions without prompts or clicks.\n"
    "  window.scryFlame = { zoom: function (i) { zoom(frames[i]); }, unzoom: unzoom,\n"
    "                       search: search, clearSearch: clearSearch, frames: frames };\n"
    "})();\n"
    "]]></script>\n";

struct layout {
    const struct stk_tree *t;
    const struct fg_opts *o;
    struct strbuf *out;
    double fw;    /* width the root spans */
    double scale; /* pixels per unit of weight */
    double root_total, root_before;
    double max_delta;
    unsigned height;
};

static void pct_text(struct strbuf *out, double w, double of)
{
    sb_addf(out, "%.2f%%", of > 0 ? 100.0 * w / of : 0.0);
}

static void frame(struct layout *L, uint32_t id, double x, struct strbuf *tmp)
{
    const struct stk_tree *t = L->t;
    const struct stk_node *n = &t->nodes[id];
    const char *name = id == STK_ROOT ? "all" : t->frames[n->frame];
    double w = n->total * L->scale;
    double y = (double)L->height - YPAD_BOTTOM - (double)(n->depth + 1) * FG_FRAME_HEIGHT;
    struct strbuf *out = L->out;

    sb_adds(out, "<g class=\"f\" data-w=\"");
    stk_format_weight(out, n->total);
    if (t->diff) {
        sb_adds(out, "\" data-b=\"");
        stk_format_weight(out, n->total_before);
    }
    sb_adds(out, "\"><title>");
    xml_text(out, name, SIZE_MAX);
    sb_adds(out, "\n");
    sb_reset(tmp);
    weight_text(tmp, n->total, L->o);
    sb_adds(tmp, ", ");
    pct_text(tmp, n->total, L->root_total);
    if (t->diff) {
        double d = n->total - n->total_before;
        sb_adds(tmp, "; before ");
        weight_text(tmp, n->total_before, L->o);
        sb_adds(tmp, ", ");
        pct_text(tmp, n->total_before, L->root_before);
        sb_adds(tmp, "; change ");
        sb_addch(tmp, d >= 0 ? '+' : '-');
        weight_text(tmp, fabs(d), L->o);
        if (n->total_before > 0)
            sb_addf(tmp, " (%+.1f%%)", 100.0 * d / n->total_before);
        else if (d > 0)
            sb_adds(tmp, " (new)");
    }
    xml_text(out, sb_str(tmp), SIZE_MAX);
    sb_addf(out, "</title><rect x=\"%.4f\" y=\"%.1f\" width=\"%.4f\" height=\"%d\" fill=\"", x, y,
            w, FG_FRAME_HEIGHT - 1);
    sb_reset(tmp);
    if (t->diff)
        fg_diff_color(n->total_before, n->total, L->max_delta, tmp);
    else if (id == STK_ROOT)
        sb_adds(tmp, "rgb(200,200,200)");
    else
        fg_frame_color(name, L->o->palette, tmp);
    sb_adds(out, sb_str(tmp));
    sb_addf(out, "\"/><text x=\"%.2f\" y=\"%.1f\">", x + 3, y + FG_FRAME_HEIGHT - 4.5);
    long fit = (long)((w - 6) / CHAR_W);
    if (fit >= 3) {
        size_t chars = utf8_chars(name);
        if (chars <= (size_t)fit) {
            xml_text(out, name, SIZE_MAX);
        } else {
            xml_text(out, name, (size_t)fit - 2);
            sb_adds(out, "..");
        }
    }
    sb_adds(out, "</text></g>\n");
}

void fg_write_svg(const struct stk_tree *t, const struct fg_opts *o, struct strbuf *out)
{
    if (t->nnodes == 0)
        return;
    unsigned width = o->width ? o->width : FG_DEFAULT_WIDTH;
    if (width < 4 * FG_XPAD)
        width = 4 * FG_XPAD;
    uint32_t depth = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        depth = t->nodes[i].depth > depth ? t->nodes[i].depth : depth;
    struct layout L = {.t = t, .o = o, .out = out};
    L.fw = (double)width - 2 * FG_XPAD;
    L.root_total = t->nodes[STK_ROOT].total;
    L.root_before = t->nodes[STK_ROOT].total_before;
    L.scale = L.root_total > 0 ? L.fw / L.root_total : 0;
    L.height = YPAD_TOP + (depth + 1) * FG_FRAME_HEIGHT + YPAD_BOTTOM;
    if (t->diff)
        for (size_t i = 1; i < t->nnodes; i++)
            L.max_delta = max_d(L.max_delta, fabs(t->nodes[i].total - t->nodes[i].total_before));

    const char *title = o->title ? o->title : (t->diff ? "Differential Flame Graph" : "Flame Graph");
    sb_adds(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n");
    sb_addf(out,
            "<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
            "xmlns=\"http://www.w3.org/2000/svg\" data-xpad=\"%d\" data-fw=\"%.4f\" "
            "data-cw=\"%.4f\" data-unit=\"",
            width, L.height, width, L.height, FG_XPAD, L.fw, CHAR_W);
    xml_text(out, o->unit ? o->unit : "samples", SIZE_MAX);
    sb_adds(out, "\">\n");
    sb_adds(out, style);
    sb_addf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#f8f8f4\"/>\n", width,
            L.height);
    sb_addf(out, "<text id=\"title\" x=\"%.1f\" y=\"24\">", width / 2.0);
    xml_text(out, title, SIZE_MAX);
    sb_adds(out, "</text>\n");
    if (o->subtitle) {
        sb_addf(out, "<text id=\"subtitle\" x=\"%.1f\" y=\"42\">", width / 2.0);
        xml_text(out, o->subtitle, SIZE_MAX);
        sb_adds(out, "</text>\n");
    }
    sb_addf(out, "<text id=\"unzoom\" class=\"btn off\" x=\"%d\" y=\"24\">Reset Zoom</text>\n",
            FG_XPAD);
    sb_addf(out, "<text id=\"search\" class=\"btn\" x=\"%u\" y=\"24\">Search</text>\n",
            width - FG_XPAD - 100);
    sb_addf(out, "<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n", FG_XPAD, L.height - 12);
    sb_addf(out, "<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n", width - FG_XPAD,
            L.height - 12);
    if (t->diff)
        sb_addf(out,
                "<text x=\"%d\" y=\"42\" fill=\"#555\">width: after; red: grew, blue: "
                "shrank</text>\n",
                FG_XPAD);

    /* Depth-first; each node's x is where its previous sibling ended (or its parent's x). */
    struct strbuf tmp = STRBUF_INIT;
    double *xs = malloc((depth + 2) * sizeof(*xs)); /* next free x per depth on the path */
    if (!xs)
        goto out;
    uint32_t id = STK_ROOT;
    xs[0] = FG_XPAD;
    while (id != STK_NONE) {
        const struct stk_node *n = &t->nodes[id];
        double x = xs[n->depth];
        xs[n->depth] = x + n->total * L.scale;
        if (n->total > 0)
            frame(&L, id, x, &tmp);
        if (n->first_child != STK_NONE) {
            xs[n->depth + 1] = x;
            id = n->first_child;
            continue;
        }
        while (id != STK_NONE && t->nodes[id].next_sibling == STK_NONE)
            id = t->nodes[id].parent;
        if (id != STK_NONE)
            id = t->nodes[id].next_sibling;
    }
    free(xs);
out:
    sb_release(&tmp);
    sb_adds(out, script);
    sb_adds(out, "</svg>\n");
}
