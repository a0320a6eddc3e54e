/* Fuzz target: arbitrary bytes as folded stacks (single and differential) and as a profile's
 * "stacks"; whatever is accepted is cut, written back as folded, SVG and speedscope, and the
 * folded text must read back to the same folded text. Nothing may crash on any input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stacks.h"
#include "render/flamegraph_svg.h"
#include "render/speedscope.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void render_all(const struct stk_tree *t)
{
    struct strbuf out = STRBUF_INIT;
    struct fg_opts fo = {.title = "fuzz"};
    fg_write_svg(t, &fo, &out);
    sb_reset(&out);
    struct speedscope_opts so = {0};
    speedscope_write(t, &so, &out);
    struct stk_cut cut = {.min_pct = 5, .max_depth = 3};
    struct stk_tree c;
    if (stk_cut(t, &cut, &c) == 0) {
        sb_reset(&out);
        fg_write_svg(&c, &fo, &out);
    }
    stk_free(&c);
    sb_release(&out);
}

static void folded(const char *text, size_t len, bool diff)
{
    struct stk_tree t;
    stk_init(&t, diff);
    if (stk_parse_folded(&t, text, len, "fuzz") == 0 && stk_finish(&t) == 0) {
        render_all(&t);
        struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
        stk_write_folded(&t, &a);
        struct stk_tree t2;
        stk_init(&t2, diff);
        if (stk_parse_folded(&t2, sb_str(&a), a.len, "again") != 0 || stk_finish(&t2) != 0)
            abort(); /* what we write must read back */
        stk_write_folded(&t2, &b);
        if (strcmp(sb_str(&a), sb_str(&b)) != 0)
            abort();
        stk_free(&t2);
        sb_release(&a);
        sb_release(&b);
    }
    stk_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    folded((const char *)data, size, false);
    folded((const char *)data, size, true);
    struct pdoc doc;
    if (pdoc_load_bytes(&doc, (const char *)data, size, "fuzz") == 0) {
        struct stk_tree t;
        stk_init(&t, false);
        if (stk_add_profile(&t, &doc, "fuzz", false, false) == 0 && stk_finish(&t) == 0)
            render_all(&t);
        stk_free(&t);
        stk_init(&t, false);
        if (stk_add_profile(&t, &doc, "fuzz", false, true) == 0 && stk_finish(&t) == 0)
            render_all(&t);
        stk_free(&t);
        pdoc_free(&doc);
    }
    return 0;
}
