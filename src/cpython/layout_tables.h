/* Private to src/cpython/layout*.c: the per-version tables that tests/tools/gen_layouts.py
 * generates from each interpreter's headers (layout_311.c ... layout_315.c), which layout.c hands
 * out. Adding a version: generate its file, declare its tables here, list them in layout.c. */
#ifndef SCRY_CPYTHON_LAYOUT_TABLES_H
#define SCRY_CPYTHON_LAYOUT_TABLES_H

#include "cpython/heap_walk.h"
#include "cpython/layout.h"

#define PY_REF(o, k, l) {o, HW_EDGE_##k, l}
#define PY_DBG(field, i, s) {#field, offsetof(struct py_layout, field), i, s}

/* 3.11, 3.12: the whole struct py_layout */
extern const struct py_layout py_layout_311, py_layout_312;

/* 3.13+: what the _Py_DebugOffsets block does not give, the fields it gives (the block's size in
 * bytes, each field's index and its struct's size index) and the GIL's indices */
extern const struct py_layout py_layout_fixed_313, py_layout_fixed_314, py_layout_fixed_315;
extern const size_t py_dbg_size_313, py_dbg_size_314, py_dbg_size_315;
extern const struct py_dbg_field py_dbg_fields_313[], py_dbg_fields_314[], py_dbg_fields_315[];
extern const size_t py_dbg_nfields_313, py_dbg_nfields_314, py_dbg_nfields_315;
extern const int py_dbg_gil_313[PY_DBG_GIL_INDICES], py_dbg_gil_314[PY_DBG_GIL_INDICES],
    py_dbg_gil_315[PY_DBG_GIL_INDICES];
/* the same for 3.13's free-threaded build (layout_313t.c) */
extern const struct py_layout py_layout_fixed_313t;
extern const size_t py_dbg_size_313t;
extern const struct py_dbg_field py_dbg_fields_313t[];
extern const size_t py_dbg_nfields_313t;
extern const int py_dbg_gil_313t[PY_DBG_GIL_INDICES];

/* every version: the heap walker's table (the frame walker's code and frame fields) */
extern const struct py_heap_layout py_heap_layout_311, py_heap_layout_312, py_heap_layout_313,
    py_heap_layout_314, py_heap_layout_315, py_heap_layout_313t;

#endif
