/* Unit test of the heap analysis's own memory (heap_analysis.c, dominators.c): the peak of the
 * bytes it has allocated at once while building the analysis of a snapshot, counted by wrapping
 * malloc, calloc, realloc and free in this test program (glibc's __libc_* underneath), per
 * object; and the pages of the mapped snapshot left in the process after it (the kernel's count
 * for that mapping): the object records' pages go back once the retained sizes are made, so that
 * only one part of the file is held at a time. Deterministic: no timing. */
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heap_analysis.h"
#include "common/error.h"
#include "snapshot/snap_reader.h"
#include "snapshot/snap_writer.h"
#include "testlib.h"

#if !TL_UNDER_ASAN

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);

static size_t live, peak;

static void *counted(void *p)
{
    if (p) {
        live += malloc_usable_size(p);
        if (live > peak)
            peak = live;
    }
    return p;
}

void *malloc(size_t n) { return counted(__libc_malloc(n)); }
void *calloc(size_t n, size_t k) { return counted(__libc_calloc(n, k)); }
void free(void *p)
{
    if (p)
        live -= malloc_usable_size(p);
    __libc_free(p);
}
void *realloc(void *p, size_t n)
{
    size_t old = p ? malloc_usable_size(p) : 0;
    void *q = __libc_realloc(p, n);
    if (q || !n)
        live -= old;
    return counted(q);
}

#define NOBJ 200000u

/* A chain from a root (each object holds the next: one edge per object, so the dominators'
 * predecessor lists are empty and the retained sizes' step is the largest). */
static void test_analysis_peak_per_object(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/chain.heap", tl_tmpdir());
    struct snap_writer *w;
    CHECK_EQ(snap_writer_open(path, &w), 0);
    for (uint32_t i = 0; i < NOBJ; i++) {
        uint64_t a = 0x100000 + 64 * (uint64_t)i;
        CHECK_EQ(snap_add_object(w, a, "node", 64, 0, NULL, 0), 0);
        if (i + 1 < NOBJ)
            CHECK_EQ(snap_add_edge(w, a, a + 64, SNAP_EDGE_ATTR, "next"), 0);
    }
    CHECK_EQ(snap_add_root(w, 0x100000, "head"), 0);
    CHECK_EQ(snap_writer_close(w, NULL), 0);
    struct snap s;
    int err = snap_open(path, &s);
    CHECK_EQ(err, 0);
    if (err)
        return;
    struct heap_analysis a;
    size_t base = live;
    peak = live;
    CHECK_EQ(ha_build(&s, &a), 0);
    double per_object = (double)(peak - base) / NOBJ;
    /* idom 4 + root labels 4 + retained 8 + dom_retained's pending 4 = 20, or the dominators'
     * step: idom 4 + root labels 4 + 16 of working arrays = 24. A second array of shallow sizes
     * made the retained step 28. */
    CHECK(per_object <= 25.0);
    fprintf(stderr, "ha_build's peak: %.1f bytes per object\n", per_object);
    CHECK_EQ_U64(a.retained[0], 64ull * NOBJ);
    CHECK_EQ_U64(a.reachable_bytes, 64ull * NOBJ);
    CHECK_EQ_U64(a.reachable_objects, NOBJ);
    /* Left mapped: what the retaining paths' pass read, the edges (4 + 4 B per object here); not
     * the object records (24 B per object), read by the retained sizes' step before it. */
    long kb = tl_mapping_rss_kb(s.base);
    fprintf(stderr, "after ha_build: %ld kB of the %zu-byte snapshot resident\n", kb, s.size);
    CHECK(kb >= 0 && (size_t)kb * 1024 < (size_t)NOBJ * 16);
    ha_free(&a);
    snap_close(&s);
}

static const struct tl_test tests[] = {
    TL(test_analysis_peak_per_object),
};

TL_MAIN(tests)
#else
TL_MAIN_SKIPPED_UNDER_ASAN("it counts its own mallocs by wrapping malloc")
#endif
