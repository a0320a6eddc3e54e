/* The retention flame graph and the heap diff on synthetic snapshots whose answers are known:
 * frame texts (root labels, edge label and type, `builtins.` dropped, `[<index>]`, the `...`
 * rules, `;` written `:`), merging of siblings and of their children, folded sums equal to
 * retained sizes exactly, cutting that keeps every other width, and growth by site and type. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heap_analysis.h"
#include "analysis/heap_diff.h"
#include "analysis/retention.h"
#include "analysis/stacks.h"
#include "common/error.h"
#include "snapshot/snap_writer.h"
#include "testlib.h"

/* sys.modules['app'] M (module 72) -.__dict__-> D (dict 200)
 *   D -['CACHE']-> C (dict 100) -[<str len=2>]-> S1 (Session 50) -.payload-> P1 (bytes 1000)
 *                               -[<str len=2>]-> S2 (Session 50) -.payload-> P2 (bytes 1000)
 *                                                                -.inner-> S3 (Session 50)
 *     (extra entries S4..: the grown snapshot, each with a payload of 1000)
 *   D -['L']-> L (list 80) -[0]-> B0 (bytes 300), -[1]-> B1 (bytes 400)
 *   D -['H']-> H (Holder 40) -.a-> A (list 60) -[0]-> X (bytes 500)
 *                            -.b-> T (tuple 48) -[0]-> X          X: entered through A, not H
 *   D -['SHARED']-> SH (list 70) <-.locals['x']- F (frame 400, root "Thread 1 main")
 *   D -['a;b']-> Z (str 60) */
enum { M = 1, D, C, S1, P1, S2, P2, S3, L, B0, B1, H, A, X, T, SH, F, Z, GROWN = 100 };

static uint64_t addr(int i) { return 0x10000 + (uint64_t)i * 0x100; }

static void obj(struct snap_writer *w, int id, const char *type, uint64_t size)
{
    CHECK_EQ(snap_add_object(w, addr(id), type, size, 0, NULL, 0), 0);
}

static void edge(struct snap_writer *w, int from, int to, unsigned kind, const char *label)
{
    CHECK_EQ(snap_add_edge(w, addr(from), addr(to), kind, label), 0);
}

/* grow: extra cache entries, each a Session (50) with a payload (1000). */
static void build(const char *path, int grow)
{
    struct snap_writer *w;
    CHECK_EQ(snap_writer_open(path, &w), 0);
    obj(w, M, "builtins.module", 72);
    obj(w, D, "builtins.dict", 200);
    obj(w, C, "builtins.dict", grow ? 400 : 100);
    obj(w, S1, "app.Session", 50);
    obj(w, P1, "builtins.bytes", 1000);
    obj(w, S2, "app.Session", 50);
    obj(w, P2, "builtins.bytes", 1000);
    obj(w, S3, "app.Session", 50);
    obj(w, L, "builtins.list", 80);
    obj(w, B0, "builtins.bytes", 300);
    obj(w, B1, "builtins.bytes", 400);
    obj(w, H, "app.Holder", 40);
    obj(w, A, "builtins.list", 60);
    obj(w, X, "builtins.bytes", 500);
    obj(w, T, "builtins.tuple", 48);
    obj(w, SH, "builtins.list", 70);
    obj(w, F, "builtins.frame", 400);
    obj(w, Z, "builtins.str", 60);
    edge(w, M, D, SNAP_EDGE_ATTR, ".__dict__");
    edge(w, D, C, SNAP_EDGE_DICT_VALUE, "['CACHE']");
    edge(w, C, S1, SNAP_EDGE_DICT_VALUE, "[<str len=2>]");
    edge(w, C, S2, SNAP_EDGE_DICT_VALUE, "[<str len=2>]");
    edge(w, S1, P1, SNAP_EDGE_ATTR, ".payload");
    edge(w, S2, P2, SNAP_EDGE_ATTR, ".payload");
    edge(w, S2, S3, SNAP_EDGE_ATTR, ".inner");
    edge(w, D, L, SNAP_EDGE_DICT_VALUE, "['L']");
    edge(w, L, B0, SNAP_EDGE_INDEX, "[0]");
    edge(w, L, B1, SNAP_EDGE_INDEX, "[1]");
    edge(w, D, H, SNAP_EDGE_DICT_VALUE, "['H']");
    edge(w, H, A, SNAP_EDGE_ATTR, ".a");
    edge(w, H, T, SNAP_EDGE_ATTR, ".b");
    edge(w, A, X, SNAP_EDGE_INDEX, "[0]");
    edge(w, T, X, SNAP_EDGE_INDEX, "[0]");
    edge(w, D, SH, SNAP_EDGE_DICT_VALUE, "['SHARED']");
    edge(w, F, SH, SNAP_EDGE_LOCAL, ".locals['x']");
    edge(w, D, Z, SNAP_EDGE_DICT_VALUE, "['a;b']");
    for (int i = 0; i < grow; i++) {
        int s = GROWN + 2 * i, p = s + 1;
        obj(w, s, "app.Session", 50);
        obj(w, p, "builtins.bytes", 1000);
        edge(w, C, s, SNAP_EDGE_DICT_VALUE, "[<str len=2>]");
        edge(w, s, p, SNAP_EDGE_ATTR, ".payload");
    }
    CHECK_EQ(snap_add_root(w, addr(M), "sys.modules['app']"), 0);
    CHECK_EQ(snap_add_root(w, addr(F), "Thread 1 main"), 0);
    struct snap_meta meta = {.pid = 7, .python_version = "3.12.1", .rss_bytes = 100000};
    snap_set_meta(w, &meta);
    CHECK_EQ(snap_writer_close(w, NULL), 0);
}

static uint32_t idx(const struct snap *s, int id) { return snap_find(s, addr(id)); }

/* The node at a folded stack ("a;b;c"), or STK_NONE. */
static uint32_t find(const struct stk_tree *t, const char *stack)
{
    uint32_t node = STK_ROOT;
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", stack);
    for (char *save = NULL, *f = strtok_r(buf, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
        uint32_t c = t->nodes[node].first_child;
        while (c != STK_NONE && strcmp(t->frames[t->nodes[c].frame], f) != 0)
            c = t->nodes[c].next_sibling;
        if (c == STK_NONE)
            return STK_NONE;
        node = c;
    }
    return node;
}

static double total(const struct stk_tree *t, const char *stack)
{
    uint32_t n = find(t, stack);
    CHECK(n != STK_NONE);
    return n == STK_NONE ? -1 : t->nodes[n].total;
}

static double self(const struct stk_tree *t, const char *stack)
{
    uint32_t n = find(t, stack);
    CHECK(n != STK_NONE);
    return n == STK_NONE ? -1 : t->nodes[n].self;
}

#define APP "sys.modules['app'];.__dict__ dict"

static void open_analysis(const char *name, int grow, struct snap *s, struct heap_analysis *a)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", tl_tmpdir(), name);
    build(path, grow);
    CHECK_EQ(snap_open(path, s), 0);
    CHECK_EQ(ha_build(s, a), 0);
}

static void test_frames(void)
{
    struct snap s;
    struct heap_analysis a;
    open_analysis("r.heap", 0, &s, &a);
    struct strbuf sb = STRBUF_INIT;
    static const struct {
        int id;
        const char *text;
    } want[] = {
        {M, "sys.modules['app']"},
        {D, ".__dict__ dict"},
        {C, "['CACHE'] dict"},
        {S2, "[<str len=2>] app.Session"},
        {P2, ".payload bytes"},
        {B1, "[<index>] bytes"},
        {X, "...[<index>] bytes"},               /* entered through A, dominated by H */
        {SH, "...Thread 1 main.locals['x'] list"}, /* shared by two roots: top level */
        {F, "Thread 1 main"},
        {Z, "['a;b'] str"},                      /* stk_frame writes the ';' as ':' */
    };
    uint32_t *entry = ret_entry_edges(&a);
    CHECK(entry != NULL);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        sb_reset(&sb);
        ret_frame_text(&a, entry, idx(&s, want[i].id), &sb);
        CHECK_STR(sb_str(&sb), want[i].text);
        sb_reset(&sb);
        ret_frame_text(&a, NULL, idx(&s, want[i].id), &sb); /* the slow lookup agrees */
        CHECK_STR(sb_str(&sb), want[i].text);
    }
    free(entry);
    sb_release(&sb);
    ha_free(&a);
    snap_close(&s);
}

static void test_tree(void)
{
    struct snap s;
    struct heap_analysis a;
    open_analysis("r.heap", 0, &s, &a);
    struct stk_tree t;
    stk_init(&t, false);
    CHECK_EQ(ret_add_snapshot(&t, &a, false, NULL), 0);
    CHECK_EQ(stk_finish(&t), 0);

    /* Every reachable byte, once. */
    CHECK_EQ((uint64_t)t.nodes[STK_ROOT].total, a.reachable_bytes);
    /* Single objects: width = retained size. */
    CHECK_EQ((uint64_t)total(&t, "sys.modules['app']"), a.retained[idx(&s, M)]);
    CHECK_EQ((uint64_t)total(&t, APP ";['CACHE'] dict"), a.retained[idx(&s, C)]);
    CHECK_EQ((uint64_t)total(&t, APP ";['H'] app.Holder"), a.retained[idx(&s, H)]);
    CHECK_EQ((uint64_t)total(&t, "Thread 1 main"), 400);
    /* Merged siblings: the two sessions are one frame, self = their shallow sizes, width = their
     * retained sizes; their children merge too (two payloads in one frame). */
    const char *sess = APP ";['CACHE'] dict;[<str len=2>] app.Session";
    CHECK_EQ((uint64_t)self(&t, sess), 100);
    CHECK_EQ((uint64_t)total(&t, sess), a.retained[idx(&s, S1)] + a.retained[idx(&s, S2)]);
    CHECK_EQ((uint64_t)total(&t, APP ";['CACHE'] dict;[<str len=2>] app.Session;.payload bytes"),
             2000);
    CHECK_EQ((uint64_t)total(&t, APP ";['CACHE'] dict;[<str len=2>] app.Session;.inner app.Session"),
             50);
    /* List items merge as [<index>]. */
    CHECK_EQ((uint64_t)self(&t, APP ";['L'] list;[<index>] bytes"), 700);
    /* X sits above its dominator H, marked as reached through what H owns. */
    CHECK_EQ((uint64_t)total(&t, APP ";['H'] app.Holder;...[<index>] bytes"), 500);
    CHECK(find(&t, APP ";['H'] app.Holder;.a list;[<index>] bytes") == STK_NONE);
    /* The shared list is a top-level frame; ';' in a label became ':'. */
    CHECK_EQ((uint64_t)total(&t, "...Thread 1 main.locals['x'] list"), 70);
    CHECK_EQ((uint64_t)total(&t, APP ";['a:b'] str"), 60);

    /* The folded lines reproduce the totals exactly. */
    struct strbuf sb = STRBUF_INIT;
    stk_write_folded(&t, &sb);
    struct stk_tree back;
    stk_init(&back, false);
    CHECK_EQ(stk_parse_folded(&back, sb_str(&sb), sb.len, "test"), 0);
    CHECK_EQ(stk_finish(&back), 0);
    CHECK_EQ((uint64_t)back.nodes[STK_ROOT].total, a.reachable_bytes);
    CHECK_EQ((uint64_t)total(&back, APP ";['CACHE'] dict"), a.retained[idx(&s, C)]);
    CHECK_EQ(back.nnodes, t.nnodes);
    stk_free(&back);

    /* Cutting folds narrow frames into [other] and keeps every other width. */
    struct stk_tree cut;
    struct stk_cut c = {.min_weight = 450};
    CHECK_EQ(stk_cut(&t, &c, &cut), 0);
    CHECK_EQ(cut.nodes[STK_ROOT].total, t.nodes[STK_ROOT].total);
    CHECK_EQ(total(&cut, APP ";['CACHE'] dict"), total(&t, APP ";['CACHE'] dict"));
    CHECK_EQ(total(&cut, sess), total(&t, sess));
    CHECK_EQ(total(&cut, APP ";['H'] app.Holder"), total(&t, APP ";['H'] app.Holder"));
    CHECK(find(&cut, APP ";['a:b'] str") == STK_NONE);
    CHECK(find(&cut, APP ";[other]") != STK_NONE);
    CHECK(find(&cut, "...Thread 1 main.locals['x'] list") == STK_NONE);
    for (uint32_t i = 1; i < cut.nnodes; i++) {
        const char *f = cut.frames[cut.nodes[i].frame];
        CHECK(strcmp(f, STK_OTHER) == 0 || cut.nodes[i].total >= 450);
    }
    stk_free(&cut);
    /* Depth: rows 1..2 kept, row 3 is [other] holding everything above. */
    struct stk_cut deep = {.max_depth = 2};
    CHECK_EQ(stk_cut(&t, &deep, &cut), 0);
    CHECK_EQ(total(&cut, APP), total(&t, APP));
    CHECK_EQ(total(&cut, APP ";[other]"), total(&t, APP) - self(&t, APP));
    stk_free(&cut);

    sb_release(&sb);
    stk_free(&t);
    ha_free(&a);
    snap_close(&s);
}

static void test_diff(void)
{
    struct snap sb, sa;
    struct heap_analysis b, a;
    open_analysis("before.heap", 0, &sb, &b);
    open_analysis("after.heap", 3, &sa, &a);
    struct heap_diff d;
    CHECK_EQ(hd_build(&b, &a, &d), 0);
    /* The cache grew by 3 entries of 1050 bytes and its own 300: the first site, exactly. */
    CHECK(d.nsites >= 1);
    struct strbuf path = STRBUF_INIT;
    hd_node_path(&d.tree, d.sites[0].node, &path);
    CHECK_STR(sb_str(&path), APP ";['CACHE'] dict");
    CHECK_EQ(d.sites[0].retained_after - d.sites[0].retained_before, 3 * 1050 + 300);
    CHECK_EQ(d.sites[0].retained_before, b.retained[idx(&sb, C)]);
    /* Structure (the module, its __dict__) is never a site. */
    for (size_t i = 0; i < d.nsites; i++) {
        sb_reset(&path);
        hd_node_path(&d.tree, d.sites[i].node, &path);
        CHECK(strcmp(sb_str(&path), APP) != 0 && strcmp(sb_str(&path), "sys.modules['app']") != 0);
    }
    /* The differential tree: width after, before kept per frame. */
    uint32_t n = find(&d.tree, APP ";['CACHE'] dict;[<str len=2>] app.Session");
    CHECK(n != STK_NONE);
    CHECK_EQ(d.tree.nodes[n].total_before, 2150);
    CHECK_EQ(d.tree.nodes[n].total, 2150 + 3 * 1050);
    CHECK_EQ(d.nodes.objects_before[n], 2);
    CHECK_EQ(d.nodes.objects[n], 5);
    /* Types: bytes and sessions grew, by count and shallow bytes. */
    CHECK(d.ntypes >= 2);
    CHECK_STR(d.types[0].type, "builtins.bytes");
    CHECK_EQ(d.types[0].count_after - d.types[0].count_before, 3);
    CHECK_EQ(d.types[0].shallow_after - d.types[0].shallow_before, 3000);
    bool seen = false;
    for (size_t i = 0; i < d.ntypes; i++)
        if (strcmp(d.types[i].type, "app.Session") == 0) {
            seen = true;
            CHECK_EQ(d.types[i].count_before, 3);
            CHECK_EQ(d.types[i].count_after, 6);
        }
    CHECK(seen);
    sb_release(&path);
    hd_free(&d);
    ha_free(&a);
    ha_free(&b);
    snap_close(&sa);
    snap_close(&sb);
}

static const struct tl_test tests[] = {
    TL(test_frames),
    TL(test_tree),
    TL(test_diff),
};
TL_MAIN(tests)
