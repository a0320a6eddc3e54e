/* Checks src/cpython/mimalloc_layout.h (what the agent and the heap walker read of the mimalloc
 * a free-threaded CPython vendors, where that CPython keeps its heaps, and its object header)
 * against that CPython's own headers: prints each number both ways and exits 1 if any differs.
 * tests/e2e/test_layout_headers.py compiles it per free-threaded build:
 *
 *   cc -std=c11 -I$INC -I$INC/internal/mimalloc -Isrc tests/tools/mimalloc_offsets.c
 *
 * $INC: the build's include/python3.Xt folder. */
#define Py_BUILD_CORE 1
#define _GNU_SOURCE 1 /* SSIZE_MAX, which the internal headers use, under -std=c11 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <Python.h>

#include "internal/pycore_llist.h"
#include "internal/pycore_mimalloc.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_tstate.h"
#include <string.h>

#include "cpython/mimalloc_layout.h"

static int wrong;

static void check(const char *name, unsigned long long mine, unsigned long long headers)
{
    printf("%s scry %llu headers %llu%s\n", name, mine, headers, mine == headers ? "" : " WRONG");
    wrong |= mine != headers;
}

#define C(mine, headers) check(#mine, (mine), (headers))

/* The byte and lowest bit of mi_page_t's bit-field `tag` (offsetof cannot name a bit-field). */
static void check_tag(void)
{
    mi_page_t page;
    memset(&page, 0, sizeof(page));
    page.tag = 0xf;
    const unsigned char *b = (const unsigned char *)&page;
    for (size_t i = 0; i < sizeof(page); i++)
        if (b[i]) {
            C(PY_MI_PAGE_TAG_BYTE, i);
            C(0xfu << PY_MI_PAGE_TAG_SHIFT, b[i]);
            return;
        }
    C(PY_MI_PAGE_TAG_BYTE, sizeof(page));
}

int main(void)
{
    C(PY_MI_SEGMENT_SHIFT, MI_SEGMENT_SHIFT);
    C(PY_MI_SLICE_SHIFT, MI_SEGMENT_SLICE_SHIFT);
    C(PY_MI_SEG_SEGMENT_SIZE, offsetof(mi_segment_t, segment_size));
    C(PY_MI_SEG_ABANDONED_NEXT, offsetof(mi_segment_t, abandoned_next));
    C(PY_MI_SEG_SLICE_ENTRIES, offsetof(mi_segment_t, slice_entries));
    C(PY_MI_SEG_SLICES, offsetof(mi_segment_t, slices));
    C(PY_MI_SLICE_SIZE, sizeof(mi_slice_t));
    C(PY_MI_SLICE_SIZE, sizeof(mi_page_t));
    C(PY_MI_PAGE_SLICE_COUNT, offsetof(mi_page_t, slice_count));
    C(PY_MI_PAGE_SLICE_OFFSET, offsetof(mi_page_t, slice_offset));
    check_tag();
    C(PY_MI_PAGE_CAPACITY, offsetof(mi_page_t, capacity));
    C(PY_MI_PAGE_FREE, offsetof(mi_page_t, free));
    C(PY_MI_PAGE_USED, offsetof(mi_page_t, used));
    C(PY_MI_PAGE_XBLOCK_SIZE, offsetof(mi_page_t, xblock_size));
    C(PY_MI_PAGE_LOCAL_FREE, offsetof(mi_page_t, local_free));
    C(PY_MI_PAGE_XTHREAD_FREE, offsetof(mi_page_t, xthread_free));
    C(PY_MI_PAGE_NEXT, offsetof(mi_page_t, next));
    C(PY_MI_HUGE_BLOCK_SIZE, MI_HUGE_BLOCK_SIZE);
    C(PY_MI_SMALL_OBJ_SIZE_MAX, MI_SMALL_OBJ_SIZE_MAX);
    C(PY_MI_HEAP_SIZE, sizeof(mi_heap_t));
    C(PY_MI_HEAP_PAGES, offsetof(mi_heap_t, pages));
    C(PY_MI_HEAP_DELAYED_FREE, offsetof(mi_heap_t, thread_delayed_free));
    C(PY_MI_HEAP_THREAD_ID, offsetof(mi_heap_t, thread_id));
    C(PY_MI_QUEUE_SIZE, sizeof(mi_page_queue_t));
    C(0, offsetof(mi_page_queue_t, first));
    C(PY_MI_BIN_FULL, MI_BIN_FULL);
    C(PY_MI_POOL_ABANDONED, offsetof(mi_abandoned_pool_t, abandoned));
    C(PY_MI_POOL_VISITED, offsetof(mi_abandoned_pool_t, abandoned_visited));
    C(PY_MI_INTERP_POOL, offsetof(PyInterpreterState, mimalloc.abandoned_pool));
    C(PY_MI_TSTATE, offsetof(_PyThreadStateImpl, mimalloc));
    C(PY_MI_TS_HEAPS, offsetof(struct _mimalloc_thread_state, heaps));
    C(PY_MI_TS_INITIALIZED, offsetof(struct _mimalloc_thread_state, initialized));
    C(PY_MI_HEAP_GC, _Py_MIMALLOC_HEAP_GC);
    C(PY_MI_HEAP_GC_PRE, _Py_MIMALLOC_HEAP_GC_PRE);
    C(PY_FT_OB_GC_BITS, offsetof(PyObject, ob_gc_bits));
    C(PY_FT_OB_REF_LOCAL, offsetof(PyObject, ob_ref_local));
    C(PY_FT_OB_REF_SHARED, offsetof(PyObject, ob_ref_shared));
    C(2, _Py_REF_SHARED_SHIFT);
    C(PY_FT_GC_TRACKED, _PyGC_BITS_TRACKED);
    C(PY_FT_GC_FROZEN, _PyGC_BITS_FROZEN);
    return wrong;
}
