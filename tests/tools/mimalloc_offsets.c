/* Checks src/agent/mimalloc_layout.h (what the agent reads of the mimalloc a free-threaded
 * CPython vendors) against that CPython's own headers: prints each number both ways and exits 1
 * if any differs. tests/e2e/test_layout_headers.py compiles it per free-threaded build:
 *
 *   cc -std=c11 -I$INC -I$INC/internal/mimalloc -Isrc tests/tools/mimalloc_offsets.c
 *
 * $INC: the build's include/python3.Xt folder. */
#define Py_BUILD_CORE 1
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <Python.h>

#include "internal/pycore_llist.h"
#include "internal/pycore_mimalloc.h"

#include "agent/mimalloc_layout.h"

static int wrong;

static void check(const char *name, unsigned long long mine, unsigned long long headers)
{
    printf("%s scry %llu headers %llu%s\n", name, mine, headers, mine == headers ? "" : " WRONG");
    wrong |= mine != headers;
}

#define C(mine, headers) check(#mine, (mine), (headers))

int main(void)
{
    C(AG_MI_SEGMENT_SHIFT, MI_SEGMENT_SHIFT);
    C(AG_MI_SLICE_SHIFT, MI_SEGMENT_SLICE_SHIFT);
    C(AG_MI_SEG_SEGMENT_SIZE, offsetof(mi_segment_t, segment_size));
    C(AG_MI_SEG_SLICES, offsetof(mi_segment_t, slices));
    C(AG_MI_SLICE_SIZE, sizeof(mi_slice_t));
    C(AG_MI_SLICE_SIZE, sizeof(mi_page_t));
    C(AG_MI_PAGE_SLICE_OFFSET, offsetof(mi_page_t, slice_offset));
    C(AG_MI_PAGE_XBLOCK_SIZE, offsetof(mi_page_t, xblock_size));
    C(AG_MI_HUGE_BLOCK_SIZE, MI_HUGE_BLOCK_SIZE);
    C(AG_MI_SMALL_OBJ_SIZE_MAX, MI_SMALL_OBJ_SIZE_MAX);
    return wrong;
}
