/* The folded-stack model on synthetic stacks: folded round trips, escaping, Scalene's stacks,
 * totals, cutting into [other] (widths of the rest unchanged), max depth, differential lines. */
#include <stdlib.h>
#include <string.h>

#include "analysis/stacks.h"
#include "common/error.h"
#include "testlib.h"

static void folded_of(const struct stk_tree *t, struct strbuf *sb)
{
    sb_reset(sb);
    stk_write_folded(t, sb);
}

static int build(struct stk_tree *t, bool diff, const char *text)
{
    stk_init(t, diff);
    int err = stk_parse_folded(t, text, strlen(text), "test");
    if (!err)
        err = stk_finish(t);
    return err;
}

static void test_folded_round_trip(void)
{
    /* Out of order, a duplicate, blank lines, CRLF, several spaces before the count. */
    const char *in = "main (a.py:3);work (a.py:9) 4\n"
                     "\n"
                     "main (a.py:3) 2\r\n"
                     "main (a.py:3);load (b.py:1)   7\n"
                     "main (a.py:3);work (a.py:9) 6\n"
                     "other (c.py:5) 1.5";
    struct stk_tree t;
    CHECK_EQ(build(&t, false, in), 0);
    struct strbuf out = STRBUF_INIT;
    folded_of(&t, &out);
    const char *want = "main (a.py:3) 2\n"
                       "main (a.py:3);load (b.py:1) 7\n"
                       "main (a.py:3);work (a.py:9) 10\n"
                       "other (c.py:5) 1.5\n";
    CHECK_STR(sb_str(&out), want);
    CHECK(t.nodes[STK_ROOT].total == 20.5);
    CHECK_EQ(t.max_depth, 2);

    /* What we write reads back as the same tree. */
    struct stk_tree t2;
    CHECK_EQ(build(&t2, false, sb_str(&out)), 0);
    struct strbuf out2 = STRBUF_INIT;
    folded_of(&t2, &out2);
    CHECK_STR(sb_str(&out2), want);
    stk_free(&t2);
    stk_free(&t);
    sb_release(&out);
    sb_release(&out2);
}

static void test_escaping(void)
{
    struct stk_tree t;
    stk_init(&t, false);
    const char *frames[] = {"outer", "a;b (x.py:1)", "two\nlines"};
    CHECK_EQ(stk_add_stack(&t, frames, NULL, 3, 3, 0), 0);
    CHECK_EQ(stk_finish(&t), 0);
    struct strbuf out = STRBUF_INIT;
    folded_of(&t, &out);
    CHECK_STR(sb_str(&out), "outer;a:b (x.py:1);two lines 3\n");
    stk_free(&t);
    sb_release(&out);
}

static void test_parse_errors(void)
{
    struct stk_tree t;
    CHECK(build(&t, false, "a;b 1\na;b\n") == -SCRY_E_BAD_PROFILE);
    CHECK(strstr(err_last_message(), "line 2") != NULL);
    stk_free(&t);
    CHECK(build(&t, false, "a;;b 3\n") == -SCRY_E_BAD_PROFILE);
    CHECK(strstr(err_last_message(), "empty frame") != NULL);
    stk_free(&t);
    CHECK(build(&t, false, "   5\n") == -SCRY_E_BAD_PROFILE);
    stk_free(&t);
    CHECK(build(&t, false, "a 1.2.3\n") == -SCRY_E_BAD_PROFILE);
    stk_free(&t);
    /* A differential tree wants two numbers. */
    CHECK(build(&t, true, "a;b 3\n") == -SCRY_E_BAD_PROFILE);
    stk_free(&t);
    /* A frame may end in digits when the count is the last field (single mode). */
    CHECK_EQ(build(&t, false, "f 12 3\n"), 0);
    struct strbuf out = STRBUF_INIT;
    folded_of(&t, &out);
    CHECK_STR(sb_str(&out), "f 12 3\n");
    stk_free(&t);
    sb_release(&out);
}

static void test_diff_lines(void)
{
    struct stk_tree t;
    CHECK_EQ(build(&t, true, "m;grow 10 30\nm;shrink 20 5\nm;gone 4 0\nm;new 0 6\n"), 0);
    struct strbuf out = STRBUF_INIT;
    folded_of(&t, &out);
    CHECK_STR(sb_str(&out), "m;gone 4 0\nm;grow 10 30\nm;new 0 6\nm;shrink 20 5\n");
    CHECK(t.nodes[STK_ROOT].total == 41);
    CHECK(t.nodes[STK_ROOT].total_before == 34);
    stk_free(&t);
    sb_release(&out);
}

static void test_scalene_frames(void)
{
    struct strbuf sb = STRBUF_INIT;
    stk_scalene_frame_text("/app/a.py main:12;", strlen("/app/a.py main:12;"), &sb);
    CHECK_STR(sb_str(&sb), "main (/app/a.py:12)");
    sb_reset(&sb);
    stk_scalene_frame_text("/my dir/b.py Cls.<locals>.f:7;", 30, &sb);
    CHECK_STR(sb_str(&sb), "Cls.<locals>.f (/my dir/b.py:7)");
    sb_reset(&sb);
    stk_scalene_frame_text("no line here;", 13, &sb);
    CHECK_STR(sb_str(&sb), "no line here");
    sb_release(&sb);

    struct stk_frame_parts p;
    CHECK(stk_frame_split("main (/app/a.py:12)", &p));
    CHECK_EQ(p.name_len, 4);
    CHECK_EQ(p.file_len, 9);
    CHECK(memcmp(p.file, "/app/a.py", 9) == 0);
    CHECK_EQ(p.line, 12);
    CHECK(stk_frame_split("memcpy (libc.so.6)", &p));
    CHECK_EQ(p.line, 0);
    CHECK(!stk_frame_split("[other]", &p));
    CHECK(stk_frame_kind("main (/app/a.py:12)") == STK_KIND_PYTHON);
    CHECK(stk_frame_kind("<module> (<string>:1)") == STK_KIND_PYTHON);
    CHECK(stk_frame_kind("memcpy (libc.so.6)") == STK_KIND_NATIVE);
    CHECK(stk_frame_kind("[other]") == STK_KIND_OTHER);
    CHECK(stk_frame_kind("['CACHE'] dict") == STK_KIND_OTHER);
}

/* A profile document's text through the model into t. */
static int add_doc(struct stk_tree *t, const char *text, bool before, bool memory)
{
    struct pdoc d;
    int err = pdoc_load_bytes(&d, text, strlen(text), "p.json");
    if (err == 0) {
        err = stk_add_profile(t, &d, "p.json", before, memory);
        pdoc_free(&d);
    }
    return err;
}

static void test_profile_stacks(void)
{
    const char *doc =
        "{\"files\": {}, \"stacks\": ["
        " [[\"/a.py <module>:1;\", \"/a.py main:5;\", \"/a.py work:9;\"],"
        "  {\"count\": 7, \"python_time\": 0.1, \"c_time\": 0, \"cpu_samples\": 0.1, \"sys_time\": 0}],"
        " [[\"/a.py <module>:1;\", \"/a.py main:5;\"], {\"count\": 3}],"
        " [[\"/a.py <module>:1;\", \"/a.py main:5;\", \"/a.py work:9;\"], {\"count\": 2}],"
        " [[\"/b.py t:2;\"], 4]"
        "]}";
    const char *root = doc;
    struct stk_tree t;
    stk_init(&t, false);
    CHECK_EQ(add_doc(&t, root, false, false), 0);
    CHECK_EQ(stk_finish(&t), 0);
    struct strbuf out = STRBUF_INIT;
    folded_of(&t, &out);
    CHECK_STR(sb_str(&out), "<module> (/a.py:1);main (/a.py:5) 3\n"
                            "<module> (/a.py:1);main (/a.py:5);work (/a.py:9) 9\n"
                            "t (/b.py:2) 4\n");
    stk_free(&t);

    /* Before side of a differential tree. */
    root = "{\"files\": {}, \"stacks\": [[[\"/a.py f:1;\"], {\"count\": 5}]]}";
    stk_init(&t, true);
    CHECK_EQ(add_doc(&t, root, true, false), 0);
    CHECK_EQ(stk_finish(&t), 0);
    CHECK(t.nodes[STK_ROOT].total_before == 5 && t.nodes[STK_ROOT].total == 0);
    stk_free(&t);

    /* No stacks: the message says how to record them. */
    const char *none[] = {"{\"files\": {}}", "{\"files\": {}, \"stacks\": []}"};
    for (size_t i = 0; i < 2; i++) {
        root = none[i];
        stk_init(&t, false);
        CHECK(add_doc(&t, root, false, false) == -SCRY_E_BAD_PROFILE);
        CHECK(strstr(err_last_message(), "no call stacks") != NULL);
        CHECK(strstr(err_last_message(), "scry run --stacks") != NULL);
        stk_free(&t);
    }
    /* Malformed entries name the entry. */
    const char *badd[] = {"{\"files\": {}, \"stacks\": [[[\"/a.py f:1;\"]]]}",
                          "{\"files\": {}, \"stacks\": [[[\"/a.py f:1;\"], {\"count\": -1}]]}",
                          "{\"files\": {}, \"stacks\": [[[7], {\"count\": 1}]]}",
                          "{\"files\": {}, \"stacks\": 3}"};
    for (size_t i = 0; i < 4; i++) {
        root = badd[i];
        stk_init(&t, false);
        CHECK(add_doc(&t, root, false, false) == -SCRY_E_BAD_PROFILE);
        CHECK(strstr(err_last_message(), "stacks") != NULL);
        stk_free(&t);
    }
    sb_release(&out);
}

/* memory_stacks (Scalene's format: frame objects, MB): weights in MB, frames as "NAME
 * (FILE:LINE)"; a profile without them says how to record them. */
static void test_profile_memory_stacks(void)
{
    const char *doc =
        "{\"files\": {}, \"stacks\": [[[\"/a.py f:1;\"], {\"count\": 9}]], "
        "\"memory_stacks\": ["
        " [[{\"kind\": \"py\", \"display_name\": \"<module>\", \"filename_or_module\": "
        "\"/a.py\", \"line\": 1, \"ip\": null, \"offset\": null},"
        "   {\"kind\": \"py\", \"display_name\": \"load\", \"filename_or_module\": \"/a.py\","
        " \"line\": 7, \"ip\": null, \"offset\": null}], 200.5],"
        " [[{\"kind\": \"py\", \"display_name\": \"<module>\", \"filename_or_module\": "
        "\"/a.py\", \"line\": 2, \"ip\": null, \"offset\": null}], 10]"
        "]}";
    const char *root = doc;
    struct stk_tree t;
    stk_init(&t, false);
    CHECK_EQ(add_doc(&t, root, false, true), 0);
    CHECK_EQ(stk_finish(&t), 0);
    CHECK(t.nodes[STK_ROOT].total == 210.5);
    struct strbuf out = STRBUF_INIT;
    folded_of(&t, &out);
    CHECK(strstr(sb_str(&out), "<module> (/a.py:1);load (/a.py:7) 200.5") != NULL);
    CHECK(strstr(sb_str(&out), "<module> (/a.py:2) 10") != NULL);
    stk_free(&t);

    root = "{\"files\": {}, \"stacks\": [[[\"/a.py f:1;\"], {\"count\": 9}]]}";
    stk_init(&t, false);
    CHECK(add_doc(&t, root, false, true) == -SCRY_E_BAD_PROFILE);
    CHECK(strstr(err_last_message(), "no memory call stacks") != NULL);
    stk_free(&t);
    root = "{\"files\": {}, \"memory_stacks\": [[[\"/a.py f:1;\"], 3]]}";
    stk_init(&t, false);
    CHECK(add_doc(&t, root, false, true) == -SCRY_E_BAD_PROFILE);
    CHECK(strstr(err_last_message(), "memory_stacks[0]") != NULL);
    stk_free(&t);
    sb_release(&out);
}

/* The node of `t` at the path of node `id` of `from` (by frame texts), or STK_NONE. */
static uint32_t find_path(const struct stk_tree *t, const struct stk_tree *from, uint32_t id)
{
    if (id == STK_ROOT)
        return STK_ROOT;
    uint32_t p = find_path(t, from, from->nodes[id].parent);
    if (p == STK_NONE)
        return STK_NONE;
    const char *want = from->frames[from->nodes[id].frame];
    for (uint32_t c = t->nodes[p].first_child; c != STK_NONE; c = t->nodes[c].next_sibling)
        if (strcmp(t->frames[t->nodes[c].frame], want) == 0)
            return c;
    return STK_NONE;
}

/* A tree with wide and narrow frames at several depths. */
static const char cut_input[] = "root;a;a1 500\n"
                                "root;a;a2 3\n"
                                "root;a;a3 2\n"
                                "root;a 40\n"
                                "root;b;b1;b2;b3 300\n"
                                "root;b;b1;tiny 1\n"
                                "root;c 4\n"
                                "root;d;d1 5\n"
                                "side 145\n";

static void check_cut_keeps_widths(const struct stk_tree *in, const struct stk_tree *out)
{
    CHECK(out->nodes[STK_ROOT].total == in->nodes[STK_ROOT].total);
    CHECK(out->nodes[STK_ROOT].total_before == in->nodes[STK_ROOT].total_before);
    for (uint32_t i = 1; i < out->nnodes; i++) {
        const struct stk_node *n = &out->nodes[i];
        size_t others = 0;
        double kids = 0;
        for (uint32_t c = n->first_child; c != STK_NONE; c = out->nodes[c].next_sibling) {
            kids += out->nodes[c].total;
            others += strcmp(out->frames[out->nodes[c].frame], STK_OTHER) == 0;
        }
        CHECK(others <= 1);               /* one [other] per parent */
        CHECK(kids <= n->total + 1e-9); /* children fit in their parent */
        if (strcmp(out->frames[n->frame], STK_OTHER) == 0)
            continue;
        uint32_t j = find_path(in, out, i);
        CHECK(j != STK_NONE);
        if (j == STK_NONE)
            continue;
        CHECK(in->nodes[j].total == n->total); /* exactly */
        CHECK(in->nodes[j].total_before == n->total_before);
    }
}

static void test_cut_min_pct(void)
{
    struct stk_tree t, c;
    CHECK_EQ(build(&t, false, cut_input), 0);
    CHECK(t.nodes[STK_ROOT].total == 1000);
    struct stk_cut cut = {.min_pct = 1.0}; /* 10 samples */
    CHECK_EQ(stk_cut(&t, &cut, &c), 0);
    check_cut_keeps_widths(&t, &c);
    struct strbuf out = STRBUF_INIT;
    folded_of(&c, &out);
    /* a2+a3 -> [other] 5 under a; c+d(+d1) -> [other] 9 under root; tiny -> [other] under b1. */
    CHECK_STR(sb_str(&out), "root;a 40\n"
                            "root;a;a1 500\n"
                            "root;a;[other] 5\n"
                            "root;b;b1;b2;b3 300\n"
                            "root;b;b1;[other] 1\n"
                            "root;[other] 9\n"
                            "side 145\n");
    stk_free(&c);

    /* An absolute cutoff does the same by weight. */
    struct stk_cut abs = {.min_weight = 10};
    CHECK_EQ(stk_cut(&t, &abs, &c), 0);
    struct strbuf out2 = STRBUF_INIT;
    folded_of(&c, &out2);
    CHECK_STR(sb_str(&out2), sb_str(&out));
    stk_free(&c);

    /* No cutoff: the same tree. */
    struct stk_cut none = {0};
    CHECK_EQ(stk_cut(&t, &none, &c), 0);
    folded_of(&c, &out2);
    folded_of(&t, &out);
    CHECK_STR(sb_str(&out2), sb_str(&out));
    stk_free(&c);
    stk_free(&t);
    sb_release(&out);
    sb_release(&out2);
}

static void test_cut_max_depth(void)
{
    struct stk_tree t, c;
    CHECK_EQ(build(&t, false, cut_input), 0);
    struct stk_cut cut = {.max_depth = 2};
    CHECK_EQ(stk_cut(&t, &cut, &c), 0);
    check_cut_keeps_widths(&t, &c);
    CHECK_EQ(c.max_depth, 3);
    for (uint32_t i = 1; i < c.nnodes; i++)
        if (c.nodes[i].depth == 3)
            CHECK_STR(c.frames[c.nodes[i].frame], STK_OTHER);
    struct strbuf out = STRBUF_INIT;
    folded_of(&c, &out);
    CHECK_STR(sb_str(&out), "root;a 40\n"
                            "root;a;[other] 505\n"
                            "root;b;[other] 301\n"
                            "root;c 4\n"
                            "root;d;[other] 5\n"
                            "side 145\n");
    stk_free(&c);
    stk_free(&t);
    sb_release(&out);
}

static void test_cut_diff(void)
{
    /* Folded only when narrow on both sides. */
    struct stk_tree t, c;
    CHECK_EQ(build(&t, true, "m;big 50 60\nm;was 30 1\nm;now 1 30\nm;small 2 1\nm;tiny 1 2\n"),
             0);
    struct stk_cut cut = {.min_pct = 10};
    CHECK_EQ(stk_cut(&t, &cut, &c), 0);
    check_cut_keeps_widths(&t, &c);
    struct strbuf out = STRBUF_INIT;
    folded_of(&c, &out);
    CHECK_STR(sb_str(&out), "m;big 50 60\nm;now 1 30\nm;was 30 1\nm;[other] 3 3\n");
    stk_free(&c);
    stk_free(&t);
    sb_release(&out);
}

static void test_build_by_node(void)
{
    /* The way a dominator tree is turned into frames: children by text, self weights. */
    struct stk_tree t;
    stk_init(&t, false);
    uint32_t f_root, f_cache, f_sess, n_root, n_cache, n_a, n_b;
    CHECK_EQ(stk_frame(&t, "sys.modules['app']", 18, &f_root), 0);
    CHECK_EQ(stk_frame(&t, "['CACHE'] dict", 14, &f_cache), 0);
    CHECK_EQ(stk_frame(&t, "[<str len=9>] Session", 21, &f_sess), 0);
    CHECK_EQ(stk_child(&t, STK_ROOT, f_root, &n_root), 0);
    CHECK_EQ(stk_child(&t, n_root, f_cache, &n_cache), 0);
    CHECK_EQ(stk_child(&t, n_cache, f_sess, &n_a), 0);
    CHECK_EQ(stk_child(&t, n_cache, f_sess, &n_b), 0);
    CHECK_EQ(n_a, n_b); /* same text under one parent: one frame */
    CHECK_EQ(stk_add(&t, n_root, 100, 0), 0);
    CHECK_EQ(stk_add(&t, n_cache, 1000, 0), 0);
    CHECK_EQ(stk_add(&t, n_a, 500, 0), 0);
    CHECK_EQ(stk_add(&t, n_b, 700, 0), 0);
    CHECK(stk_add(&t, n_b, -1, 0) == -SCRY_E_BAD_PROFILE);
    CHECK_EQ(stk_finish(&t), 0);
    CHECK(t.nodes[n_cache].total == 2200);
    CHECK(t.nodes[n_root].total == 2300);
    stk_free(&t);
}

static void test_weights_and_trimming(void)
{
    struct strbuf sb = STRBUF_INIT;
    const double ws[] = {0, 7, 1.5, 0.1, 1e-7, 2.5e44, 123456789012345678.0, 1.0 / 3};
    for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]); i++) {
        sb_reset(&sb);
        stk_format_weight(&sb, ws[i]);
        CHECK(strchr(sb_str(&sb), 'e') == NULL); /* no exponent: flamegraph.pl reads digits */
        CHECK(strtod(sb_str(&sb), NULL) == ws[i]);
    }
    sb_reset(&sb);
    stk_format_weight(&sb, 0.1);
    CHECK_STR(sb_str(&sb), "0.1");
    /* A huge count and a leaf with spaces around it survive a round trip (found by fuzzing). */
    struct stk_tree t;
    stk_init(&t, false);
    const char *frames[] = {" a ", "b\t\t", "   "};
    CHECK_EQ(stk_add_stack(&t, frames, NULL, 3, 2.5e44, 0), 0);
    CHECK_EQ(stk_finish(&t), 0);
    sb_reset(&sb);
    stk_write_folded(&t, &sb);
    CHECK_STR(sb_str(&sb), "a;b;? 249999999999999982439322256133887804982689792\n");
    struct stk_tree t2;
    stk_init(&t2, false);
    CHECK_EQ(stk_parse_folded(&t2, sb_str(&sb), sb.len, "again"), 0);
    CHECK_EQ(stk_finish(&t2), 0);
    CHECK(t2.nodes[STK_ROOT].total == 2.5e44);
    stk_free(&t2);
    stk_free(&t);
    sb_release(&sb);
}

static const struct tl_test tests[] = {
    TL(test_profile_memory_stacks), TL(test_weights_and_trimming),
    TL(test_folded_round_trip), TL(test_escaping),    TL(test_parse_errors),
    TL(test_diff_lines),        TL(test_scalene_frames), TL(test_profile_stacks),
    TL(test_cut_min_pct),       TL(test_cut_max_depth), TL(test_cut_diff),
    TL(test_build_by_node),
};
TL_MAIN(tests)
