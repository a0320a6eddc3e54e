/* Layout tables and the _Py_DebugOffsets reader: synthetic blocks (shape checks, refusals) and,
 * where pyenv's 3.13, 3.14 and 3.15 are installed, the real block read from libpython3.13's file
 * or the 3.14/3.15 executables (scripts/install-pythons.sh) compared with offsetof() values taken
 * from their headers (tests/tools/layout_offsets.c). */
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "cpython/layout.h"
#include "reader/elf_image.h"
#include "testlib.h"

static void put(uint8_t *block, int idx, uint64_t v) { memcpy(block + idx * 8, &v, 8); }

/* A plausible 3.13 block: every struct 4096 bytes, field i at offset 8*i within it. */
static void fake_313(uint8_t *block)
{
    memset(block, 0, 584);
    memcpy(block, "xdebugpy", 8);
    put(block, 1, 0x030d00f0);
    int sizes[] = {3, 6, 19, 28, 34, 44, 46, 50, 53, 56, 59, 61, 64, 67, 71};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        int start = sizes[s];
        int end = s + 1 < sizeof(sizes) / sizeof(sizes[0]) ? sizes[s + 1] : 73;
        put(block, start, 4096);
        for (int i = start + 1; i < end; i++)
            put(block, i, (uint64_t)(i - start) * 8);
    }
}

static void test_tables_exist(void)
{
    CHECK(py_layout_table(11) != NULL);
    CHECK(py_layout_table(12) != NULL);
    CHECK(py_layout_table(13) == NULL);
    CHECK(py_layout_table(10) == NULL);
    CHECK_EQ(py_layout_table(11)->fr_previous, 48);
    CHECK_EQ(py_layout_table(12)->co_code_adaptive, 192);
    CHECK_EQ(py_debug_offsets_size(13, false), 584);
    CHECK_EQ(py_debug_offsets_size(14, false), 760);
    CHECK_EQ(py_debug_offsets_size(15, false), 888);
    CHECK(py_heap_layout_table(15, false) != NULL);
    CHECK(py_heap_layout_table(16, false) == NULL);
    CHECK_EQ(py_heap_layout_table(14, false)->frobj_data, 72);
    CHECK_EQ(py_heap_layout_table(15, false)->gc_generations[0], 8);
    CHECK_EQ(py_heap_layout_table(15, false)->gen_state_cleared, 5);
    CHECK_EQ(py_debug_offsets_size(12, false), 0);
}

static void test_synthetic_313(void)
{
    uint8_t block[584];
    struct py_layout L;
    fake_313(block);
    CHECK_EQ(py_layout_from_debug_offsets(13, false, block, sizeof(block), &L), 0);
    CHECK_EQ(L.minor, 13);
    CHECK(L.from_debug_offsets);
    CHECK_EQ(L.rt_interpreters_head, 16);    /* idx 5 - 3 */
    CHECK_EQ(L.is_threads_head, 24);         /* idx 9 - 6 */
    CHECK_EQ(L.ts_current_frame, 32);        /* idx 23 - 19 */
    CHECK_EQ(L.fr_owner, 40);                /* idx 33 - 28 */
    CHECK_EQ(L.co_code_adaptive, 72);        /* idx 43 - 34 */
    CHECK_EQ(L.str_ascii_size, 24);          /* idx 70 - 67 */
    CHECK_EQ(L.gil_locked, 16);              /* (17 - 6) - (15 - 6) words */
    CHECK_EQ(L.gil_last_holder, 24);
    CHECK_EQ(L.owner_cstack, 3);
    CHECK(!L.fr_code_tagged);
}

static void test_refusals(void)
{
    uint8_t block[584];
    struct py_layout L;
    fake_313(block);
    memcpy(block, "xdebugpz", 8);
    CHECK_EQ(py_layout_from_debug_offsets(13, false, block, sizeof(block), &L),
             -SCRY_E_UNSUPPORTED_PYTHON);
    fake_313(block);
    CHECK_EQ(py_layout_from_debug_offsets(13, false, block, 100, &L), -SCRY_E_UNSUPPORTED_PYTHON);
    fake_313(block);
    put(block, 23, 5000); /* current_frame past the end of a 4096-byte thread state */
    CHECK_EQ(py_layout_from_debug_offsets(13, false, block, sizeof(block), &L),
             -SCRY_E_UNSUPPORTED_PYTHON);
    CHECK(strstr(err_last_message(), "ts_current_frame") != NULL);
    fake_313(block);
    put(block, 19, (uint64_t)1 << 30); /* absurd struct size */
    CHECK_EQ(py_layout_from_debug_offsets(13, false, block, sizeof(block), &L),
             -SCRY_E_UNSUPPORTED_PYTHON);
    fake_313(block);
    put(block, 17, 2); /* GIL `locked` before the GIL's start */
    CHECK_EQ(py_layout_from_debug_offsets(13, false, block, sizeof(block), &L),
             -SCRY_E_UNSUPPORTED_PYTHON);
    CHECK_EQ(py_layout_from_debug_offsets(12, false, block, sizeof(block), &L), -SCRY_E_INTERNAL);
}

/* The _Py_DebugOffsets block (n bytes) of the first image matching $PYENV_ROOT/versions/<glob>,
 * and that image's path; false when there is none (the test is skipped, and says so). */
static bool real_block(const char *test, const char *pattern, uint8_t *block, size_t n,
                       char *path, size_t path_size)
{
    glob_t g;
    const char *root = getenv("PYENV_ROOT");
    char full[512];
    snprintf(full, sizeof(full), "%s/versions/%s", root ? root : "/root/.pyenv", pattern);
    if (glob(full, 0, NULL, &g) != 0) {
        printf("skip %s: no %s\n", test, full);
        return false;
    }
    snprintf(path, path_size, "%s", g.gl_pathv[0]);
    globfree(&g);
    struct elf_image *img = NULL;
    uint64_t rt, size;
    CHECK_EQ(elf_open(path, &img), 0);
    CHECK(img && elf_symbol(img, "_PyRuntime", &rt, &size));
    CHECK_EQ(elf_read_vaddr(img, rt, block, n), 0);
    elf_close(img);
    return true;
}

/* The block as the 3.13.0 build initialises it, compared with its headers' offsetof(). */
static void test_real_313(void)
{
    uint8_t block[584];
    char path[512];
    struct py_layout L;
    if (!real_block("test_real_313", "3.13.*/lib/libpython3.13.so.1.0", block, sizeof(block),
                    path, sizeof(path)))
        return;
    CHECK_EQ(py_layout_from_debug_offsets(13, false, block, sizeof(block), &L), 0);
    if (strstr(path, "/3.13.0/")) { /* offsetof() values of the 3.13.0 headers */
        CHECK_EQ(L.rt_interpreters_head, 632);
        CHECK_EQ(L.is_next, 7264);
        CHECK_EQ(L.is_id, 7272);
        CHECK_EQ(L.is_threads_head, 7344);
        CHECK_EQ(L.is_modules, 7656);
        CHECK_EQ(L.is_ceval_gil, 16);
        CHECK_EQ(L.ts_current_frame, 72);
        CHECK_EQ(L.ts_thread_id, 152);
        CHECK_EQ(L.ts_native_thread_id, 160);
        CHECK_EQ(L.fr_previous, 8);
        CHECK_EQ(L.fr_instr, 56);
        CHECK_EQ(L.fr_owner, 70);
        CHECK_EQ(L.co_qualname, 128);
        CHECK_EQ(L.co_firstlineno, 68);
        CHECK_EQ(L.co_code_adaptive, 200);
        CHECK_EQ(L.gil_last_holder, 8);
        CHECK_EQ(L.gil_locked, 16);
        CHECK_EQ(L.str_ascii_size, 40);
    }
}

/* 3.13's free-threaded build (scripts/install-pythons.sh: a static python3.13t): its block
 * says free-threaded, and with 3.13t's table the object offsets are past the 32-byte header. */
static void test_real_313t(void)
{
    uint64_t free_threaded = 0;
    uint8_t block[584];
    char path[512];
    struct py_layout L;
    CHECK_EQ(py_debug_offsets_size(13, true), sizeof(block));
    if (!real_block("test_real_313t", "3.13.*t/bin/python3.13t", block, sizeof(block), path,
                    sizeof(path)))
        return;
    memcpy(&free_threaded, block + 16, 8);
    CHECK_EQ(free_threaded, 1);
    CHECK_EQ(py_layout_from_debug_offsets(13, true, block, sizeof(block), &L), 0);
    CHECK(L.free_threaded && L.from_debug_offsets);
    CHECK_EQ(L.ob_type, 24);      /* ob_tid, flags, mutex, gc bits, ob_ref_local, ob_ref_shared */
    CHECK_EQ(L.long_digits, 40);  /* after the 32-byte header and lv_tag */
    CHECK_EQ(L.bytes_sval, 48);
    CHECK_EQ(L.co_nunits, 32);
    CHECK_EQ(L.managed_dict, 8);  /* MANAGED_DICT_OFFSET is -8 there */
    CHECK_EQ(L.gil_enabled, 0);   /* the first field of struct _gil_runtime_state */
    CHECK_EQ(py_heap_layout_table(13, true)->co_nlocalsplus, 88);
    CHECK(py_heap_layout_table(14, true) == NULL);
    CHECK_EQ(py_layout_from_debug_offsets(14, true, block, sizeof(block), &L), -SCRY_E_INTERNAL);
}

/* offsetof() values of the 3.14.10 and 3.15.2 headers. */
struct real_expect {
    int minor;
    const char *pattern; /* under $PYENV_ROOT/versions */
    uint64_t rt_interpreters_head, is_next, is_id, is_threads_head, is_modules, ts_current_frame,
        ts_thread_id, ts_native_thread_id, fr_previous, fr_instr, fr_owner, fr_localsplus,
        co_qualname, co_firstlineno, co_code_adaptive, ht_cached_keys;
};

static const struct real_expect real_expected[] = {
    {14, "3.14.10/bin/python3.14", 808, 7272, 7280, 7344, 7688, 72, 152, 160, 8, 56, 74, 80, 128,
     68, 208, 880},
    {15, "3.15.2/bin/python3.15", 936, 7264, 7272, 7336, 7592, 72, 176, 184, 8, 56, 74, 80, 128,
     68, 208, 888},
};

/* The block of a Debian sid 3.14/3.15 executable (statically linked: _PyRuntime is in it). */
static void test_real_314_315(void)
{
    const char *root = getenv("PYENV_ROOT");
    const char *dir = getenv("SCRY_PYTHONS_DIR"); /* where install-pythons.sh put them */
    for (size_t i = 0; i < sizeof(real_expected) / sizeof(real_expected[0]); i++) {
        const struct real_expect *e = &real_expected[i];
        char path[512];
        if (dir)
            snprintf(path, sizeof(path), "%s/%s", dir, e->pattern);
        else
            snprintf(path, sizeof(path), "%s/versions/%s", root ? root : "/root/.pyenv",
                     e->pattern);
        struct elf_image *img = NULL;
        if (elf_open(path, &img) != 0) {
            printf("skip test_real_314_315 for 3.%d: no %s\n", e->minor, path);
            continue;
        }
        uint64_t rt, size;
        uint8_t block[1024];
        struct py_layout L;
        size_t n = py_debug_offsets_size(e->minor, false);
        CHECK(elf_symbol(img, "_PyRuntime", &rt, &size));
        CHECK_EQ(elf_read_vaddr(img, rt, block, n), 0);
        CHECK_EQ(py_layout_from_debug_offsets(e->minor, false, block, n, &L), 0);
        CHECK_EQ(L.rt_interpreters_head, e->rt_interpreters_head);
        CHECK_EQ(L.is_next, e->is_next);
        CHECK_EQ(L.is_id, e->is_id);
        CHECK_EQ(L.is_threads_head, e->is_threads_head);
        CHECK_EQ(L.is_modules, e->is_modules);
        CHECK_EQ(L.is_ceval_gil, 16);
        CHECK_EQ(L.ts_current_frame, e->ts_current_frame);
        CHECK_EQ(L.ts_thread_id, e->ts_thread_id);
        CHECK_EQ(L.ts_native_thread_id, e->ts_native_thread_id);
        CHECK_EQ(L.fr_previous, e->fr_previous);
        CHECK_EQ(L.fr_code, 0);
        CHECK_EQ(L.fr_instr, e->fr_instr);
        CHECK_EQ(L.fr_owner, e->fr_owner);
        CHECK_EQ(L.fr_localsplus, e->fr_localsplus);
        CHECK_EQ(L.co_qualname, e->co_qualname);
        CHECK_EQ(L.co_firstlineno, e->co_firstlineno);
        CHECK_EQ(L.co_code_adaptive, e->co_code_adaptive);
        CHECK_EQ(L.ht_cached_keys, e->ht_cached_keys);
        CHECK_EQ(L.tp_basicsize, 32);
        CHECK_EQ(L.tp_dictoffset, 288);
        CHECK_EQ(L.gil_last_holder, 8);
        CHECK_EQ(L.gil_locked, 16);
        CHECK_EQ(L.str_ascii_size, 40);
        CHECK(L.fr_code_tagged);
        elf_close(img);
    }
}

static const struct tl_test tests[] = {
    TL(test_tables_exist),
    TL(test_synthetic_313),
    TL(test_refusals),
    TL(test_real_313),
    TL(test_real_313t),
    TL(test_real_314_315),
};
TL_MAIN(tests)
