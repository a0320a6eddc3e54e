/* The allocation join (analysis/alloc_join.h) on a synthetic snapshot: a block matches the
 * object at its start (+0, +16 GC header, +32 pre-header) only; a block much larger than the
 * object found there (its address reused by a smaller object), or one that ends before the
 * object, is unmatched; bytes go to the holder that dominates the object, by innermost frame;
 * the ALOC chunk is validated and the file's version is 1.2 with it, 1.1 without. A block that
 * holds no object but is an object's own buffer (BUFS, 1.3) goes to its owner: at the buffer's
 * start or a small header before it, up to its size rounded to pages; not a block inside it,
 * nor one much larger, nor the buffer of an address that is no object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/alloc_join.h"
#include "common/error.h"
#include "snapshot/snap_writer.h"
#include "testlib.h"

/* sys.modules['app'] -> module M -.__dict__-> D -['CACHE']-> C (list) -[0]-> B0, -[1]-> B1
 * (bytes 100000 each, B1 a GC-less object at its block's start); D -['other']-> O (dict 64,
 * allocated with a 16-byte GC header before it). */
enum { M = 1, D, C, B0, B1, O };
static uint64_t addr(int i) { return 0x100000 + (uint64_t)i * 0x100000; }

static void build(const char *path, bool alloc)
{
    struct snap_writer *w;
    CHECK_EQ(snap_writer_open(path, &w), 0);
    CHECK_EQ(snap_add_object(w, addr(M), "builtins.module", 72, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, addr(D), "builtins.dict", 200, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, addr(C), "builtins.list", 72, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, addr(B0), "builtins.bytes", 100000, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, addr(B1), "builtins.bytes", 100000, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, addr(O), "builtins.dict", 64, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_edge(w, addr(M), addr(D), SNAP_EDGE_ATTR, ".__dict__"), 0);
    CHECK_EQ(snap_add_edge(w, addr(D), addr(C), SNAP_EDGE_DICT_VALUE, "['CACHE']"), 0);
    CHECK_EQ(snap_add_edge(w, addr(C), addr(B0), SNAP_EDGE_INDEX, "[0]"), 0);
    CHECK_EQ(snap_add_edge(w, addr(C), addr(B1), SNAP_EDGE_INDEX, "[1]"), 0);
    CHECK_EQ(snap_add_edge(w, addr(D), addr(O), SNAP_EDGE_DICT_VALUE, "['other']"), 0);
    CHECK_EQ(snap_add_root(w, addr(M), "sys.modules['app']"), 0);
    struct snap_meta meta = {.pid = 7, .python_version = "3.12.1"};
    snap_set_meta(w, &meta);
    if (!alloc) {
        CHECK_EQ(snap_writer_close(w, NULL), 0);
        return;
    }
    /* stack 0: <module>:5 -> fill:10; stack 1: <module>:6 -> other:20 */
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "<module>", 5), 0);
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "fill", 10), 0);
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "<module>", 6), 0);
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "other", 20), 0);
    CHECK_EQ(snap_add_alloc_stack(w, 0, 2), 0);
    CHECK_EQ(snap_add_alloc_stack(w, 2, 2), 0);
    /* 0: B0's block, exact size: matched, to fill:10. */
    CHECK_EQ(snap_add_alloc_sample(w, addr(B0), 100000, 100000, 0), 0);
    /* 1: B1's address but a block of 1 MB: B1 reused a freed bigger block: unmatched. */
    CHECK_EQ(snap_add_alloc_sample(w, addr(B1), 1 << 20, 1 << 20, 0), 0);
    /* 2: O's block starts 16 bytes before it (GC header): matched, to other:20 (window 64 KiB
     * stands for the small block). */
    CHECK_EQ(snap_add_alloc_sample(w, addr(O) - 16, 80, 65536, 1), 0);
    /* 3: a 16-byte block that ends before O starts 32 bytes later: unmatched. */
    CHECK_EQ(snap_add_alloc_sample(w, addr(O) - 32, 16, 65536, 1), 0);
    /* 4: inside B0, not at a header offset: unmatched. */
    CHECK_EQ(snap_add_alloc_sample(w, addr(B0) + 48, 64, 65536, UINT32_MAX), 0);
    /* 5: no stack, at C: matched, to no line. */
    CHECK_EQ(snap_add_alloc_sample(w, addr(C) - 16, 88, 65536, UINT32_MAX), 0);
    snap_set_alloc_info(w, 65536, 3);
    CHECK_EQ(snap_writer_close(w, NULL), 0);
}

/* Writes the snapshot (with or without samples), opens and analyses it. */
static void open_built(bool alloc, struct snap *s, struct heap_analysis *a)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.heap", tl_tmpdir(), alloc ? "a" : "b");
    build(path, alloc);
    CHECK_EQ(snap_open(path, s), 0);
    CHECK_EQ(ha_build(s, a), 0);
}

static void test_join(void)
{
    struct snap s;
    struct heap_analysis a;
    struct aj_join j;
    open_built(true, &s, &a);
    CHECK_EQ(s.minor, 2);
    CHECK(s.has_allocations);
    CHECK_EQ(s.alloc_window, 65536);
    CHECK_EQ(s.alloc_dropped, 3);
    CHECK_EQ(aj_build(&a, &j), 0);
    CHECK_EQ(j.samples, 6);
    CHECK_EQ(j.matched, 3);
    CHECK_EQ(j.unmatched, 3);
    CHECK_EQ(j.object[0], snap_find(&s, addr(B0)));
    CHECK_EQ(j.object[1], SNAP_NONE);
    CHECK_EQ(j.object[2], snap_find(&s, addr(O)));
    CHECK_EQ(j.object[3], SNAP_NONE);
    CHECK_EQ(j.object[4], SNAP_NONE);
    CHECK_EQ(j.object[5], snap_find(&s, addr(C)));
    CHECK_EQ(j.unmatched_bytes, (1 << 20) + 2 * 65536);

    struct aj_line *l;
    size_t n;
    CHECK_EQ(aj_lines_retained_by(&j, snap_find(&s, addr(C)), &l, &n), 0);
    CHECK_EQ(n, 2); /* fill:10 (B0), and the list's own block with no stack */
    CHECK_EQ(l[0].bytes, 100000);
    CHECK_EQ(l[0].line, 10);
    CHECK_STR(snap_string(&s, l[0].func), "fill");
    CHECK_EQ(l[0].small, 0);
    CHECK_EQ(l[0].error, 0); /* a block of the window or more: exact */
    CHECK_EQ(l[1].file, 0);
    CHECK_EQ(l[1].bytes, 65536);
    CHECK_EQ(l[1].error, 65536);
    free(l);
    CHECK_EQ(aj_lines_retained_by(&j, snap_find(&s, addr(O)), &l, &n), 0);
    CHECK_EQ(n, 1);
    CHECK_EQ(l[0].line, 20);
    /* One sample of a small block weighs the window (64 KiB), but O retains 64 bytes: the
     * estimate and its error are capped at what O retains. */
    CHECK_EQ(l[0].bytes, 64);
    CHECK_EQ(l[0].error, 64);
    free(l);
    /* The unmatched samples by line: 1 MiB at fill:10 (exact), then 64 KiB with no stack and
     * 64 KiB at other:20 (equal bytes: by file, no file first). */
    CHECK_EQ(j.nunmatched_lines, 3);
    CHECK_EQ(j.unmatched_lines[0].line, 10);
    CHECK_EQ(j.unmatched_lines[0].bytes, 1 << 20);
    CHECK_EQ(j.unmatched_lines[0].error, 0);
    CHECK_EQ(j.unmatched_lines[1].file, 0);
    CHECK_EQ(j.unmatched_lines[1].bytes, 65536);
    CHECK_EQ(j.unmatched_lines[2].line, 20);
    CHECK_EQ(j.unmatched_lines[2].error, 65536);
    uint8_t *member = calloc(s.nobjects, 1);
    member[snap_find(&s, addr(B0))] = member[snap_find(&s, addr(B1))] = 1;
    CHECK_EQ(aj_lines_of_objects(&j, member, &l, &n), 0);
    CHECK_EQ(n, 1);
    CHECK_EQ(l[0].bytes, 100000);
    free(l);
    memset(member, 0, s.nobjects); /* O alone: its 64 KiB sample is capped at its 64 bytes */
    member[snap_find(&s, addr(O))] = 1;
    CHECK_EQ(aj_lines_of_objects(&j, member, &l, &n), 0);
    CHECK_EQ(n, 1);
    CHECK_EQ(l[0].bytes, 64);
    free(l);
    free(member);

    struct stk_tree t;
    stk_init(&t, false);
    CHECK_EQ(aj_add_stacks(&j, &t), 0);
    CHECK_EQ(stk_finish(&t), 0);
    struct strbuf sb = STRBUF_INIT;
    CHECK_EQ(stk_write_folded(&t, &sb), 0);
    CHECK(strstr(sb_str(&sb), "<module> (app.py:5);fill (app.py:10) 100000\n") != NULL);
    CHECK(strstr(sb_str(&sb), "<module> (app.py:6);other (app.py:20) 65536\n") != NULL);
    CHECK(strstr(sb_str(&sb), "<no Python frame> 65536\n") != NULL);
    sb_release(&sb);
    stk_free(&t);
    aj_free(&j);
    ha_free(&a);
    snap_close(&s);
}

static void test_writer_checks(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/c.heap", tl_tmpdir());
    struct snap_writer *w;
    CHECK_EQ(snap_writer_open(path, &w), 0);
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "f", 1), 0);
    CHECK(snap_add_alloc_stack(w, 0, 2) != 0); /* past the frames */
    snap_writer_abort(w);
    CHECK_EQ(snap_writer_open(path, &w), 0);
    CHECK(snap_add_alloc_sample(w, 0x1000, 16, 16, 0) != 0); /* no stack 0 */
    snap_writer_abort(w);
    err_clear();
}

static void test_without_allocations(void)
{
    struct snap s;
    struct heap_analysis a;
    struct aj_join j;
    open_built(false, &s, &a);
    CHECK_EQ(s.minor, 1);
    CHECK(!s.has_allocations);
    CHECK_EQ(aj_build(&a, &j), -SCRY_E_NO_ALLOCATIONS);
    err_clear();
    aj_free(&j);
    ha_free(&a);
    snap_close(&s);
}

/* sys.modules['app'] -> M -.__dict__-> D -['LISTS']-> L -[0]-> L1, -[1]-> L2; D -['A']-> N
 * (an ndarray). Their buffers: L1's items (800000 bytes), L2's (8000, a block with an 8-byte
 * header before them), N's data (3386560: malloc maps it, and reports whole pages). */
enum { BM = 1, BD, BL, BL1, BL2, BN };
#define L1_ITEMS 0x7000000ULL
#define L2_ITEMS 0x7200008ULL
#define N_DATA 0x7400010ULL
#define NOT_AN_OBJECT 0x9000000ULL

static void test_buffers(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/buf.heap", tl_tmpdir());
    struct snap_writer *w;
    CHECK_EQ(snap_writer_open(path, &w), 0);
    CHECK_EQ(snap_add_object(w, addr(BM), "builtins.module", 72, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, addr(BD), "builtins.dict", 200, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, addr(BL), "builtins.list", 88, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, addr(BL1), "builtins.list", 56 + 800000, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, addr(BL2), "builtins.list", 56 + 8000, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, addr(BN), "numpy.ndarray", 112 + 3386560, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_edge(w, addr(BM), addr(BD), SNAP_EDGE_ATTR, ".__dict__"), 0);
    CHECK_EQ(snap_add_edge(w, addr(BD), addr(BL), SNAP_EDGE_DICT_VALUE, "['LISTS']"), 0);
    CHECK_EQ(snap_add_edge(w, addr(BL), addr(BL1), SNAP_EDGE_INDEX, "[0]"), 0);
    CHECK_EQ(snap_add_edge(w, addr(BL), addr(BL2), SNAP_EDGE_INDEX, "[1]"), 0);
    CHECK_EQ(snap_add_edge(w, addr(BD), addr(BN), SNAP_EDGE_DICT_VALUE, "['A']"), 0);
    CHECK_EQ(snap_add_root(w, addr(BM), "sys.modules['app']"), 0);
    /* in any order; the last is owned by an address that is no object: dropped */
    CHECK_EQ(snap_add_buffer(w, addr(BN), N_DATA, 3386560), 0);
    CHECK_EQ(snap_add_buffer(w, addr(BL1), L1_ITEMS, 800000), 0);
    CHECK_EQ(snap_add_buffer(w, addr(BL2), L2_ITEMS, 8000), 0);
    CHECK_EQ(snap_add_buffer(w, 0x42000, NOT_AN_OBJECT, 4096), 0);
    struct snap_meta meta = {.pid = 7, .python_version = "3.13.0"};
    snap_set_meta(w, &meta);
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "fill", 10), 0);
    CHECK_EQ(snap_add_alloc_stack(w, 0, 1), 0);
    CHECK_EQ(snap_add_alloc_sample(w, L1_ITEMS, 800000, 800000, 0), 0);            /* 0: L1 */
    CHECK_EQ(snap_add_alloc_sample(w, N_DATA, 3387376, 3387376, 0), 0);            /* 1: N */
    CHECK_EQ(snap_add_alloc_sample(w, L2_ITEMS - 8, 8008, 65536, 0), 0);           /* 2: L2 */
    CHECK_EQ(snap_add_alloc_sample(w, L1_ITEMS, 800000 + 8192, 808192, 0), 0);     /* 3: no */
    CHECK_EQ(snap_add_alloc_sample(w, L1_ITEMS + 48, 4096, 65536, 0), 0);          /* 4: no */
    CHECK_EQ(snap_add_alloc_sample(w, NOT_AN_OBJECT, 4096, 65536, 0), 0);          /* 5: no */
    CHECK_EQ(snap_add_alloc_sample(w, N_DATA - 64, 48, 65536, 0), 0);              /* 6: no */
    snap_set_alloc_info(w, 65536, 0);
    CHECK_EQ(snap_writer_close(w, NULL), 0);

    struct snap s;
    struct heap_analysis a;
    struct aj_join j;
    CHECK_EQ(snap_open(path, &s), 0);
    CHECK_EQ(s.minor, 3);
    CHECK_EQ(s.nbuffers, 3);
    CHECK_EQ_U64(s.buffers[0].addr, L1_ITEMS); /* sorted by address */
    CHECK_EQ_U64(s.buffers[2].addr, N_DATA);
    CHECK_EQ(s.buffers[2].object, snap_find(&s, addr(BN)));
    CHECK_EQ(ha_build(&s, &a), 0);
    CHECK_EQ(aj_build(&a, &j), 0);
    CHECK_EQ(j.object[0], snap_find(&s, addr(BL1)));
    CHECK_EQ(j.object[1], snap_find(&s, addr(BN)));
    CHECK_EQ(j.object[2], snap_find(&s, addr(BL2)));
    for (int i = 3; i <= 6; i++)
        CHECK_EQ(j.object[i], SNAP_NONE);
    CHECK_EQ(j.matched, 3);
    CHECK_EQ(j.in_buffers, 3);
    CHECK_EQ(j.in_buffers_bytes, 800000 + 3387376 + 65536);
    struct aj_line *l;
    size_t n;
    CHECK_EQ(aj_lines_retained_by(&j, snap_find(&s, addr(BL)), &l, &n), 0);
    CHECK_EQ(n, 1);
    /* 800000 + 65536 sampled, but BL retains 88 + 800056 + 8056 bytes: capped there */
    CHECK_EQ(l[0].bytes, 88 + 800056 + 8056);
    free(l);
    aj_free(&j);
    ha_free(&a);
    snap_close(&s);
}

/* Arenas (ARNA, 1.4): sys.modules['app'] -> AM -.__dict__-> AD -['L']-> AL (a list of 4 KiB,
 * outside every arena) -[i]-> T1, T2 (in arena A1, made by fill:10), T3 (in A2, other:20), T4
 * (in no arena), S (in A1 but held by a sample of its own), BIG (in A1 but of 600 bytes: not a
 * small object). An object is credited by its arena only when small, held by no sample, and
 * inside one; a retainer's lines add its objects so, and the flame graph the arenas' credits. */
#define A1 0x20000000ULL
#define A2 0x20100000ULL
static void test_arenas(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/arenas.heap", tl_tmpdir());
    const uint64_t AM = 0x1000, AD = 0x2000, AL = 0x3000, T1 = A1 + 0x4030, T2 = A1 + 0x4070,
                   T3 = A2 + 0x4030, T4 = 0x9000, S = A1 + 0x40b0, BIG = A1 + 0x8030;
    struct snap_writer *w;
    CHECK_EQ(snap_writer_open(path, &w), 0); /* an arena must name a stack added before */
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "fill", 10), 0);
    CHECK_EQ(snap_add_alloc_stack(w, 0, 1), 0);
    CHECK(snap_add_arena(w, A2, 1 << 20, 7) != 0);
    err_clear();
    snap_writer_abort(w);

    CHECK_EQ(snap_writer_open(path, &w), 0);
    CHECK_EQ(snap_add_object(w, AM, "builtins.module", 72, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, AD, "builtins.dict", 200, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, AL, "builtins.list", 4096, 0, NULL, 0), 0);
    const uint64_t items[] = {T1, T2, T3, T4, S, BIG};
    const uint64_t sizes[] = {64, 64, 64, 64, 48, 600};
    CHECK_EQ(snap_add_edge(w, AM, AD, SNAP_EDGE_ATTR, ".__dict__"), 0);
    CHECK_EQ(snap_add_edge(w, AD, AL, SNAP_EDGE_DICT_VALUE, "['L']"), 0);
    for (int i = 0; i < 6; i++) {
        CHECK_EQ(snap_add_object(w, items[i], "builtins.tuple", sizes[i], 0, NULL, 0), 0);
        CHECK_EQ(snap_add_edge(w, AL, items[i], SNAP_EDGE_INDEX, "[i]"), 0);
    }
    CHECK_EQ(snap_add_root(w, AM, "sys.modules['app']"), 0);
    struct snap_meta meta = {.pid = 7, .python_version = "3.12.1", .c_samples_only = true};
    snap_set_meta(w, &meta);
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "fill", 10), 0);
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "other", 20), 0);
    CHECK_EQ(snap_add_alloc_stack(w, 0, 1), 0);
    CHECK_EQ(snap_add_alloc_stack(w, 1, 1), 0);
    CHECK_EQ(snap_add_alloc_sample(w, S - 16, 64, 65536, 1), 0); /* S's own: other:20 */
    /* in any order; one overlapping an arena already added is dropped */
    CHECK_EQ(snap_add_arena(w, A2, 1 << 20, 1), 0);
    CHECK_EQ(snap_add_arena(w, A1, 1 << 20, 0), 0);
    CHECK_EQ(snap_add_arena(w, A1 + 4096, 1 << 20, 1), 0);
    snap_set_alloc_info(w, 65536, 0);
    CHECK_EQ(snap_writer_close(w, NULL), 0);

    struct snap s;
    struct heap_analysis a;
    struct aj_join j;
    CHECK_EQ(snap_open(path, &s), 0);
    CHECK_EQ(s.minor, 4);
    CHECK(s.meta.c_samples_only);
    CHECK_EQ(s.narenas, 2);
    CHECK_EQ_U64(s.arenas[0].addr, A1);
    CHECK_EQ(s.arenas[0].stack, 0);
    CHECK_EQ_U64(s.arenas[1].addr, A2);
    CHECK_EQ(ha_build(&s, &a), 0);
    CHECK_EQ(aj_build(&a, &j), 0);
    CHECK_EQ(j.arena_of[snap_find(&s, T1)], 0);
    CHECK_EQ(j.arena_of[snap_find(&s, T2)], 0);
    CHECK_EQ(j.arena_of[snap_find(&s, T3)], 1);
    CHECK_EQ(j.arena_of[snap_find(&s, T4)], SNAP_NONE);
    CHECK_EQ(j.arena_of[snap_find(&s, S)], SNAP_NONE);   /* its own sample holds it */
    CHECK_EQ(j.arena_of[snap_find(&s, BIG)], SNAP_NONE); /* not a small object */
    CHECK_EQ(j.arena_objects, 3);
    CHECK_EQ(j.arena_bytes, 192);
    CHECK_EQ(j.arena_credit[0], 128);

    struct aj_line *l;
    size_t n;
    CHECK_EQ(aj_lines_retained_by(&j, snap_find(&s, AL), &l, &n), 0);
    CHECK_EQ(n, 2);
    CHECK_EQ(l[0].line, 20); /* S's sample (64 KiB) and T3 by arena: capped at AL's retained */
    CHECK_EQ(l[1].line, 10); /* T1 and T2 by arena */
    CHECK_EQ(l[1].arena_bytes, 128);
    CHECK_EQ(l[1].samples, 0);
    uint64_t sum = l[0].bytes + l[1].bytes;
    CHECK(sum <= a.retained[snap_find(&s, AL)] && sum + 2 >= a.retained[snap_find(&s, AL)]);
    free(l);
    uint8_t *member = calloc(s.nobjects, 1);
    member[snap_find(&s, T3)] = member[snap_find(&s, T4)] = 1;
    CHECK_EQ(aj_lines_of_objects(&j, member, &l, &n), 0);
    CHECK_EQ(n, 1);
    CHECK_EQ(l[0].line, 20);
    CHECK_EQ(l[0].bytes, 64);
    CHECK_EQ(l[0].arena_bytes, 64);
    free(l);
    free(member);

    struct stk_tree t;
    stk_init(&t, false);
    CHECK_EQ(aj_add_stacks(&j, &t), 0);
    CHECK_EQ(stk_finish(&t), 0);
    struct strbuf sb = STRBUF_INIT;
    CHECK_EQ(stk_write_folded(&t, &sb), 0);
    CHECK(strstr(sb_str(&sb), "fill (app.py:10) 128\n") != NULL);
    CHECK(strstr(sb_str(&sb), "other (app.py:20) 65600\n") != NULL); /* the sample + T3 */
    sb_release(&sb);
    stk_free(&t);
    aj_free(&j);
    ha_free(&a);
    snap_close(&s);
}

/* A buffer grown by realloc: its samples are at the block's address with the block's size (4
 * MiB, above the window), but each growth that carried a point weighs a window: those are
 * sampled, with sampling error, not counted exactly as a block of the window or more is (its
 * weight is its size). Before, every sample of a block of the window or more counted as exact:
 * "+-0 B" on a grown buffer's line. */
static void test_grown_buffer_has_sampling_error(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/grown.heap", tl_tmpdir());
    struct snap_writer *w;
    const uint64_t G = 0x500000, E = 0x900000, MIB4 = 4 << 20;
    CHECK_EQ(snap_writer_open(path, &w), 0);
    CHECK_EQ(snap_add_object(w, 0x100000, "builtins.module", 72, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, 0x200000, "builtins.dict", 200, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, G, "builtins.bytes", MIB4, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_object(w, E, "builtins.bytes", MIB4, 0, NULL, 0), 0);
    CHECK_EQ(snap_add_edge(w, 0x100000, 0x200000, SNAP_EDGE_ATTR, ".__dict__"), 0);
    CHECK_EQ(snap_add_edge(w, 0x200000, G, SNAP_EDGE_DICT_VALUE, "['G']"), 0);
    CHECK_EQ(snap_add_edge(w, 0x200000, E, SNAP_EDGE_DICT_VALUE, "['E']"), 0);
    CHECK_EQ(snap_add_root(w, 0x100000, "sys.modules['app']"), 0);
    struct snap_meta meta = {.pid = 7, .python_version = "3.12.1"};
    snap_set_meta(w, &meta);
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "grow", 10), 0);
    CHECK_EQ(snap_add_alloc_frame(w, "app.py", "whole", 20), 0);
    CHECK_EQ(snap_add_alloc_stack(w, 0, 1), 0);
    CHECK_EQ(snap_add_alloc_stack(w, 1, 1), 0);
    for (int k = 0; k < 4; k++) /* four growth points of G, moved with it */
        CHECK_EQ(snap_add_alloc_sample(w, G, MIB4, 65536, 0), 0);
    CHECK_EQ(snap_add_alloc_sample(w, E, MIB4, MIB4, 1), 0); /* E: allocated whole, exact */
    snap_set_alloc_info(w, 65536, 0);
    CHECK_EQ(snap_writer_close(w, NULL), 0);

    struct snap s;
    struct heap_analysis a;
    struct aj_join j;
    CHECK_EQ(snap_open(path, &s), 0);
    CHECK_EQ(ha_build(&s, &a), 0);
    CHECK_EQ(aj_build(&a, &j), 0);
    CHECK_EQ(j.matched, 5);
    struct aj_line *l;
    size_t n;
    CHECK_EQ(aj_lines_retained_by(&j, snap_find(&s, G), &l, &n), 0);
    CHECK_EQ(n, 1);
    CHECK_EQ(l[0].line, 10);
    CHECK_EQ(l[0].bytes, 4 * 65536);
    CHECK_EQ(l[0].small, 4);
    CHECK_EQ(l[0].error, 2 * 65536); /* W x sqrt(4) */
    free(l);
    CHECK_EQ(aj_lines_retained_by(&j, snap_find(&s, E), &l, &n), 0);
    CHECK_EQ(n, 1);
    CHECK_EQ(l[0].bytes, MIB4);
    CHECK_EQ(l[0].error, 0);
    free(l);
    aj_free(&j);
    ha_free(&a);
    snap_close(&s);
}

static const struct tl_test tests[] = {
    TL(test_join),
    TL(test_buffers),
    TL(test_arenas),
    TL(test_writer_checks),
    TL(test_without_allocations),
    TL(test_grown_buffer_has_sampling_error),
};
TL_MAIN(tests)
