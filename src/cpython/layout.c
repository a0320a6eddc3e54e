/* Layout tables for 3.11 and 3.12 (offsetof() on the 3.11.7 and 3.12.1 headers with
 * Py_BUILD_CORE), the reader of _Py_DebugOffsets for 3.13-3.15 with what that block does not give,
 * and the heap walker's tables. Every number here is compared with the installed interpreters'
 * headers by tests/e2e/test_layout_headers.py (tests/tools/layout_offsets.c against
 * tests/tools/layout_table.c): change one and that test names it. Facts and sources:
 * shared/reference/cpython-internals.md sections 3.2-3.9. */
#include "layout.h"

#include <string.h>

#include "common/error.h"
#include "cpython/heap_walk.h"

static const struct py_layout layout_311 = {
    .minor = 11,
    .rt_size = 166688,
    .rt_interpreters_head = 40,
    .rt_gil_locked = 376,
    .rt_gil_last_holder = 368,
    .is_size = 107752,
    .is_next = 0,
    .is_id = 48,
    .is_threads_head = 16,
    .is_gc = 648,
    .is_modules = 888,
    .is_sysdict = 904,
    .is_builtins = 912,
    .ts_size = 360,
    .ts_next = 8,
    .ts_interp = 16,
    .ts_thread_id = 152,
    .ts_native_thread_id = 160,
    .ts_cframe = 56,
    .cframe_current_frame = 8,
    .ts_datastack_chunk = 296,
    .fr_size = 80,
    .fr_previous = 48,
    .fr_code = 32,
    .fr_instr = 56,
    .fr_owner = 69,
    .fr_is_entry = 68,
    .fr_localsplus = 72,
    .owner_generator = 1,
    .owner_cstack = -1,
    .owner_interpreter = -1,
    .co_size = 192,
    .co_nunits = 16,
    .co_filename = 112,
    .co_name = 120,
    .co_qualname = 128,
    .co_linetable = 136,
    .co_firstlineno = 72,
    .co_firsttraceable = 168,
    .co_code_adaptive = 184,
    .ob_type = 8,
    .tp_name = 24,
    .tp_basicsize = 32,
    .tp_flags = 168,
    .tp_dictoffset = 288,
    .ht_cached_keys = 872,
    .str_length = 16,
    .str_state = 32,
    .str_ascii_size = 48,
    .str_compact_size = 72,
    .long_has_lv_tag = false,
    .long_digits = 24,
    .bytes_size = 16,
    .bytes_sval = 32,
    .dict_keys = 32,
    .dict_values = 40,
    .values_kind = PY_VALUES_311,
    .mod_dict = 16,
};

static const struct py_layout layout_312 = {
    .minor = 12,
    .rt_size = 459944,
    .rt_interpreters_head = 40,
    .is_size = 383552,
    .is_next = 0,
    .is_id = 8,
    .is_threads_head = 72,
    .is_gc = 112,
    .is_modules = 944,
    .is_sysdict = 352,
    .is_builtins = 360,
    .is_ceval_gil = 384,
    .gil_locked = 16,
    .gil_last_holder = 8,
    .ts_size = 288,
    .ts_next = 8,
    .ts_interp = 16,
    .ts_thread_id = 136,
    .ts_native_thread_id = 144,
    .ts_cframe = 56,
    .cframe_current_frame = 0,
    .ts_datastack_chunk = 232,
    .fr_size = 80,
    .fr_previous = 8,
    .fr_code = 0,
    .fr_instr = 56,
    .fr_owner = 70,
    .fr_localsplus = 72,
    .owner_generator = 1,
    .owner_cstack = 3,
    .owner_interpreter = -1,
    .co_size = 200,
    .co_nunits = 16,
    .co_filename = 112,
    .co_name = 120,
    .co_qualname = 128,
    .co_linetable = 136,
    .co_firstlineno = 68,
    .co_firsttraceable = 176,
    .co_code_adaptive = 192,
    .ob_type = 8,
    .tp_name = 24,
    .tp_basicsize = 32,
    .tp_flags = 168,
    .tp_dictoffset = 288,
    .ht_cached_keys = 880,
    .str_length = 16,
    .str_state = 32,
    .str_ascii_size = 40,
    .str_compact_size = 56,
    .long_has_lv_tag = true,
    .long_digits = 24,
    .bytes_size = 16,
    .bytes_sval = 32,
    .dict_keys = 32,
    .dict_values = 40,
    .values_kind = PY_VALUES_312,
    .mod_dict = 16,
};

const struct py_layout *py_layout_table(int minor)
{
    switch (minor) {
    case 11:
        return &layout_311;
    case 12:
        return &layout_312;
    default:
        return NULL;
    }
}

#define F(field, i, s) {#field, offsetof(struct py_layout, field), i, s}

/* Indices of the 3.13 block (584 bytes, 73 u64). */
static const struct py_dbg_field fields_313[] = {
    F(rt_size, 3, 3),
    F(rt_interpreters_head, 5, 3),
    F(is_size, 6, 6),
    F(is_id, 7, 6),
    F(is_next, 8, 6),
    F(is_threads_head, 9, 6),
    F(is_gc, 10, 6),
    F(is_modules, 11, 6),
    F(is_sysdict, 12, 6),
    F(is_builtins, 13, 6),
    F(is_ceval_gil, 14, 6),
    F(ts_size, 19, 19),
    F(ts_next, 21, 19),
    F(ts_interp, 22, 19),
    F(ts_current_frame, 23, 19),
    F(ts_thread_id, 24, 19),
    F(ts_native_thread_id, 25, 19),
    F(ts_datastack_chunk, 26, 19),
    F(fr_size, 28, 28),
    F(fr_previous, 29, 28),
    F(fr_code, 30, 28),
    F(fr_instr, 31, 28),
    F(fr_localsplus, 32, 28),
    F(fr_owner, 33, 28),
    F(co_size, 34, 34),
    F(co_filename, 35, 34),
    F(co_name, 36, 34),
    F(co_qualname, 37, 34),
    F(co_linetable, 38, 34),
    F(co_firstlineno, 39, 34),
    F(co_code_adaptive, 43, 34),
    F(ob_type, 45, 44),
    F(tp_name, 47, 46),
    F(tp_flags, 49, 46),
    F(dict_keys, 57, 56),
    F(dict_values, 58, 56),
    F(long_digits, 63, 61),
    F(bytes_size, 65, 64),
    F(bytes_sval, 66, 64),
    F(str_state, 68, 67),
    F(str_length, 69, 67),
    F(str_ascii_size, 70, 67),
};
/* The _gil_runtime_state fields are given relative to the interpreter; these indices give the
 * embedded GIL's start, its `locked` and its `last_holder`. */
static const int gil_313[PY_DBG_GIL_INDICES] = {15, 17, 18};

/* Indices of the 3.14 block (760 bytes, 95 u64). */
static const struct py_dbg_field fields_314[] = {
    F(rt_size, 3, 3),
    F(rt_interpreters_head, 5, 3),
    F(is_size, 6, 6),
    F(is_id, 7, 6),
    F(is_next, 8, 6),
    F(is_threads_head, 9, 6),
    F(is_gc, 11, 6),
    F(is_modules, 12, 6),
    F(is_sysdict, 13, 6),
    F(is_builtins, 14, 6),
    F(is_ceval_gil, 15, 6),
    F(ts_size, 22, 22),
    F(ts_next, 24, 22),
    F(ts_interp, 25, 22),
    F(ts_current_frame, 26, 22),
    F(ts_thread_id, 27, 22),
    F(ts_native_thread_id, 28, 22),
    F(ts_datastack_chunk, 29, 22),
    F(fr_size, 31, 31),
    F(fr_previous, 32, 31),
    F(fr_code, 33, 31),
    F(fr_instr, 34, 31),
    F(fr_localsplus, 35, 31),
    F(fr_owner, 36, 31),
    F(co_size, 39, 39),
    F(co_filename, 40, 39),
    F(co_name, 41, 39),
    F(co_qualname, 42, 39),
    F(co_linetable, 43, 39),
    F(co_firstlineno, 44, 39),
    F(co_code_adaptive, 48, 39),
    F(ob_type, 51, 50),
    F(tp_name, 53, 52),
    F(tp_flags, 55, 52),
    F(dict_keys, 67, 66),
    F(dict_values, 68, 66),
    F(long_digits, 73, 71),
    F(bytes_size, 75, 74),
    F(bytes_sval, 76, 74),
    F(str_state, 78, 77),
    F(str_length, 79, 77),
    F(str_ascii_size, 80, 77),
};
static const int gil_314[PY_DBG_GIL_INDICES] = {16, 18, 19};

/* Indices of the 3.15 block (888 bytes, 111 u64): the thread state gains base_frame and the
 * profiling fields before thread_id, the type object tp_basicsize/tp_dictoffset, and a heap
 * type object struct follows it. */
static const struct py_dbg_field fields_315[] = {
    F(rt_size, 3, 3),
    F(rt_interpreters_head, 5, 3),
    F(is_size, 6, 6),
    F(is_id, 7, 6),
    F(is_next, 8, 6),
    F(is_threads_head, 9, 6),
    F(is_gc, 11, 6),
    F(is_modules, 12, 6),
    F(is_sysdict, 13, 6),
    F(is_builtins, 14, 6),
    F(is_ceval_gil, 15, 6),
    F(ts_size, 22, 22),
    F(ts_next, 24, 22),
    F(ts_interp, 25, 22),
    F(ts_current_frame, 26, 22),
    F(ts_thread_id, 30, 22),
    F(ts_native_thread_id, 31, 22),
    F(ts_datastack_chunk, 32, 22),
    F(fr_size, 39, 39),
    F(fr_previous, 40, 39),
    F(fr_code, 41, 39),
    F(fr_instr, 42, 39),
    F(fr_localsplus, 43, 39),
    F(fr_owner, 44, 39),
    F(co_size, 47, 47),
    F(co_filename, 48, 47),
    F(co_name, 49, 47),
    F(co_qualname, 50, 47),
    F(co_linetable, 51, 47),
    F(co_firstlineno, 52, 47),
    F(co_code_adaptive, 56, 47),
    F(ob_type, 59, 58),
    F(tp_name, 61, 60),
    F(tp_flags, 63, 60),
    F(tp_basicsize, 64, 60),
    F(tp_dictoffset, 65, 60),
    F(ht_cached_keys, 67, 66),
    F(dict_keys, 79, 78),
    F(dict_values, 80, 78),
    F(long_digits, 85, 83),
    F(bytes_size, 87, 86),
    F(bytes_sval, 88, 86),
    F(str_state, 90, 89),
    F(str_length, 91, 89),
    F(str_ascii_size, 92, 89),
};
static const int gil_315[PY_DBG_GIL_INDICES] = {16, 18, 19};

/* What the block does not give (3.15's gives tp_basicsize, tp_dictoffset and ht_cached_keys):
 * offsetof() on the 3.13.0, 3.14.10 and 3.15.2 headers (tests/e2e/test_layout_headers.py checks
 * them). Entry frames are FRAME_OWNED_BY_CSTACK (3) on 3.13 and FRAME_OWNED_BY_INTERPRETER (3) on
 * 3.14+ (seen in the live 3.14.10 and 3.15.2); 3.14 keeps FRAME_OWNED_BY_CSTACK (4) for other
 * shims, 3.15 has none. The fields the block gives are filled from it over these. */
#define FIXED_313_315                                                                              \
    .from_debug_offsets = true, .owner_generator = 1, .owner_cstack = 3, .co_nunits = 16,         \
    .str_compact_size = 56, .long_has_lv_tag = true, .values_kind = PY_VALUES_313, .mod_dict = 16

static const struct py_layout fixed_313 = {
    .minor = 13,
    FIXED_313_315,
    .owner_interpreter = -1,
    .co_firsttraceable = 184,
    .tp_basicsize = 32,
    .tp_dictoffset = 288,
    .ht_cached_keys = 880,
};

static const struct py_layout fixed_314 = {
    .minor = 14,
    FIXED_313_315,
    .fr_code_tagged = true,
    .owner_interpreter = 4,
    .co_firsttraceable = 192,
    .tp_basicsize = 32,
    .tp_dictoffset = 288,
    .ht_cached_keys = 880,
};

static const struct py_layout fixed_315 = {
    .minor = 15,
    FIXED_313_315,
    .fr_code_tagged = true,
    .owner_interpreter = -1,
    .co_firsttraceable = 192,
};

#undef FIXED_313_315
#undef F

size_t py_debug_offsets_size(int minor)
{
    switch (minor) {
    case 13:
        return 584;
    case 14:
        return 760;
    case 15:
        return 888;
    default:
        return 0;
    }
}

static uint64_t block_u64(const uint8_t *block, int idx)
{
    uint64_t v;
    memcpy(&v, block + (size_t)idx * 8, 8);
    return v;
}

const struct py_layout *py_debug_layout_fixed(int minor, const struct py_dbg_field **fields,
                                              size_t *nfields, const int **gil)
{
    const struct py_layout *fixed;
    if (minor == 13) {
        fixed = &fixed_313;
        *fields = fields_313;
        *nfields = sizeof(fields_313) / sizeof(fields_313[0]);
        *gil = gil_313;
    } else if (minor == 14) {
        fixed = &fixed_314;
        *fields = fields_314;
        *nfields = sizeof(fields_314) / sizeof(fields_314[0]);
        *gil = gil_314;
    } else if (minor == 15) {
        fixed = &fixed_315;
        *fields = fields_315;
        *nfields = sizeof(fields_315) / sizeof(fields_315[0]);
        *gil = gil_315;
    } else {
        return NULL;
    }
    return fixed;
}

int py_layout_from_debug_offsets(int minor, const uint8_t *block, size_t len,
                                 struct py_layout *out)
{
    const struct py_dbg_field *fields;
    size_t nfields;
    const int *gil;
    const struct py_layout *fixed = py_debug_layout_fixed(minor, &fields, &nfields, &gil);
    if (!fixed)
        return err_fail(SCRY_E_INTERNAL, "no _Py_DebugOffsets layout for 3.%d", minor);
    if (len < py_debug_offsets_size(minor) || memcmp(block, "xdebugpy", 8) != 0)
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON, "_Py_DebugOffsets block is missing or short");

    *out = *fixed;
    for (size_t i = 0; i < nfields; i++) {
        uint64_t v = block_u64(block, fields[i].idx);
        uint64_t size = block_u64(block, fields[i].size_idx);
        /* A struct over 1 MiB or a field past its struct's end means the block is not what this
         * version's header says: refuse rather than read garbage. */
        if (size == 0 || size > (1u << 20) || (fields[i].idx != fields[i].size_idx && v >= size))
            return err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                            "_Py_DebugOffsets of this Python 3.%d do not have the expected shape "
                            "(field %s = %llu, struct size %llu)",
                            minor, fields[i].name, (unsigned long long)v,
                            (unsigned long long)size);
        memcpy((uint8_t *)out + fields[i].layout_off, &v, sizeof(v));
    }
    uint64_t gil_start = block_u64(block, gil[0]);
    uint64_t gil_locked = block_u64(block, gil[1]);
    uint64_t gil_holder = block_u64(block, gil[2]);
    if (gil_locked < gil_start || gil_holder < gil_start || gil_locked - gil_start > 4096 ||
        gil_holder - gil_start > 4096)
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                        "_Py_DebugOffsets GIL fields of this Python 3.%d are inconsistent", minor);

    out->gil_locked = gil_locked - gil_start;
    out->gil_last_holder = gil_holder - gil_start;
    return 0;
}

/* ---- the heap walker's tables ---------------------------------------------------------------- */

#define R(o, k, l) {o, HW_EDGE_##k, l}

/* References that are the same in 3.11-3.15 (offsetof() on all three headers agrees). */
#define COMMON_HEAP_FIELDS                                                                         \
    .tp_itemsize = 40,                                                                             \
    .tp_weaklistoffset = 208, .tp_base = 256, .tp_dict = 264, .tp_bases = 336, .tp_mro = 344,     \
    .tp_is_gc = 328, .list_items = 24, .list_allocated = 32, .set_mask = 32, .set_table = 40,     \
    .set_smalltable = 64, .ba_alloc = 24, .ba_start = 40, .dk_usable = 16,                         \
    .dk_nentries = 24, .co_localsplusnames = 96, .frobj_back = 16, .frobj_frame = 24,             \
    .frobj_trace = 32, .frame_owned_by_frame_object = 2,                                         \
    .exc = {R(16, ATTR, ".__dict__"), R(24, ATTR, ".args"), R(32, ATTR, ".__notes__"),          \
            R(40, ATTR, ".__traceback__"), R(48, ATTR, ".__context__"),                          \
            R(56, ATTR, ".__cause__")},                                                           \
    .tb = {R(16, ATTR, ".tb_next"), R(24, ATTR, ".tb_frame")},                                   \
    .method = {R(16, ATTR, ".__func__"), R(24, ATTR, ".__self__")},                              \
    .cfunc = {R(24, ATTR, ".__self__"), R(32, INTERNAL, ".__module__")},                         \
    .cell = {R(16, CELL, ".cell_contents")},                                                      \
    .classmethod = {R(16, ATTR, ".__func__"), R(24, ATTR, ".__dict__")},                         \
    .property = {R(16, ATTR, ".fget"), R(24, ATTR, ".fset"), R(32, ATTR, ".fdel"),              \
                 R(40, ATTR, ".__doc__"), R(48, INTERNAL, ".__name__")},                         \
    .weakref_cb = {R(24, ATTR, ".__callback__")}

/* The same in 3.11-3.14; 3.15 differs. */
#define HEAP_FIELDS_311_314                                                                        \
    .gc_generations = {24, 48, 72}, .ba_basicsize = 56, .gen_state_cleared = 4,                    \
    .module = {R(16, ATTR, ".__dict__"), R(48, INTERNAL, ".__name__")}

#define FUNC_FIELDS_311                                                                            \
    R(16, INTERNAL, ".__globals__"), R(24, INTERNAL, ".__builtins__"),                            \
        R(32, INTERNAL, ".__name__"), R(40, INTERNAL, ".__qualname__"),                            \
        R(48, INTERNAL, ".__code__"), R(56, ATTR, ".__defaults__"),                               \
        R(64, ATTR, ".__kwdefaults__"), R(72, INTERNAL, ".__closure__"),                          \
        R(80, ATTR, ".__doc__"), R(88, ATTR, ".__dict__"), R(104, INTERNAL, ".__module__"),      \
        R(112, ATTR, ".__annotations__")

static const struct py_heap_layout heap_311 = {
    .minor = 11,
    COMMON_HEAP_FIELDS,
    HEAP_FIELDS_311_314,
    .gc_permanent = 104, .gc_collecting = 200, .gc_garbage = 208,
    .ht_name = 848, .ht_slots = 856, .ht_qualname = 864, .ht_module = 880,
    .sizeof_type = 408, .sizeof_heaptype = 904, .static_type_presize = true,
    .tuple_items = 24,
    .co_nlocalsplus = 76, .co_stacksize = 68, .co_extra = 176,
    .fr_func = 0, .fr_globals = 8, .fr_builtins = 16, .fr_locals = 24, .fr_frame_obj = 40,
    .fr_stacktop = 64,
    .frobj_data = 48,
    .gi_name = 32, .gi_qualname = 40, .gi_exc_value = 48, .gi_frame_state = 75, .gi_iframe = 80,
    .ts_dict = 128, .ts_async_exc = 144, .ts_context = 224, .ts_exc_info = 120,
    .ts_current_exception = 104, /* curexc_value */
    .func = {FUNC_FIELDS_311},
    .type_fields = {R(264, ATTR, ".__dict__"), R(344, INTERNAL, ".__mro__"),
                    R(336, INTERNAL, ".__bases__"), R(256, INTERNAL, ".__base__"),
                    R(880, INTERNAL, ".__module_object__"), R(848, INTERNAL, ".__name__"),
                    R(864, INTERNAL, ".__qualname__"), R(856, INTERNAL, ".__slots__")},
    .frobj = {R(16, INTERNAL, ".f_back"), R(32, ATTR, ".f_trace")},
};

static const struct py_heap_layout heap_312 = {
    .minor = 12,
    COMMON_HEAP_FIELDS,
    HEAP_FIELDS_311_314,
    .gc_permanent = 104, .gc_collecting = 200, .gc_garbage = 208,
    .ht_name = 856, .ht_slots = 864, .ht_qualname = 872, .ht_module = 888,
    .sizeof_type = 416, .sizeof_heaptype = 920, .static_type_presize = true,
    .tuple_items = 24,
    .co_nlocalsplus = 72, .co_stacksize = 64, .co_extra = 184,
    .fr_func = 16, .fr_globals = 24, .fr_builtins = 32, .fr_locals = 40, .fr_frame_obj = 48,
    .fr_stacktop = 64,
    .frobj_data = 48,
    .gi_name = 24, .gi_qualname = 32, .gi_exc_value = 40, .gi_frame_state = 67, .gi_iframe = 72,
    .ts_dict = 112, .ts_async_exc = 128, .ts_context = 208, .ts_exc_info = 104,
    .ts_current_exception = 96,
    .func = {FUNC_FIELDS_311, R(120, ATTR, ".__type_params__")},
    .type_fields = {R(264, ATTR, ".__dict__"), R(344, INTERNAL, ".__mro__"),
                    R(336, INTERNAL, ".__bases__"), R(256, INTERNAL, ".__base__"),
                    R(888, INTERNAL, ".__module_object__"), R(856, INTERNAL, ".__name__"),
                    R(872, INTERNAL, ".__qualname__"), R(864, INTERNAL, ".__slots__")},
    .frobj = {R(16, INTERNAL, ".f_back"), R(32, ATTR, ".f_trace")},
};

static const struct py_heap_layout heap_313 = {
    .minor = 13,
    COMMON_HEAP_FIELDS,
    HEAP_FIELDS_311_314,
    .gc_permanent = 104, .gc_collecting = 200, .gc_garbage = 208,
    .ht_name = 856, .ht_slots = 864, .ht_qualname = 872, .ht_module = 888,
    .sizeof_type = 416, .sizeof_heaptype = 928, .static_type_presize = false,
    .tuple_items = 24,
    .co_nlocalsplus = 72, .co_stacksize = 64, .co_extra = 192,
    .fr_func = 16, .fr_globals = 24, .fr_builtins = 32, .fr_locals = 40, .fr_frame_obj = 48,
    .fr_stacktop = 64,
    .frobj_data = 64,
    .gi_name = 24, .gi_qualname = 32, .gi_exc_value = 40, .gi_frame_state = 67, .gi_iframe = 72,
    .ts_dict = 128, .ts_async_exc = 144, .ts_context = 208, .ts_exc_info = 120,
    .ts_current_exception = 112,
    .func = {FUNC_FIELDS_311, R(120, ATTR, ".__type_params__")},
    .type_fields = {R(264, ATTR, ".__dict__"), R(344, INTERNAL, ".__mro__"),
                    R(336, INTERNAL, ".__bases__"), R(256, INTERNAL, ".__base__"),
                    R(888, INTERNAL, ".__module_object__"), R(856, INTERNAL, ".__name__"),
                    R(872, INTERNAL, ".__qualname__"), R(864, INTERNAL, ".__slots__")},
    .frobj = {R(16, INTERNAL, ".f_back"), R(32, ATTR, ".f_trace"),
              R(48, ATTR, ".f_extra_locals"), R(56, INTERNAL, ".f_locals_cache")},
};

/* 3.14: offsetof() on the 3.14.10 headers (tests/tools/layout_offsets.c): GC lists with the
 * permanent generation at +96, frames 8 bytes longer (localsplus at 80, stackpointer at 64),
 * tuple items after the cached hash, frame objects' data after f_overwritten_fast_locals. */
static const struct py_heap_layout heap_314 = {
    .minor = 14,
    COMMON_HEAP_FIELDS,
    HEAP_FIELDS_311_314,
    .gc_permanent = 96, .gc_collecting = 192, .gc_garbage = 200,
    .ht_name = 856, .ht_slots = 864, .ht_qualname = 872, .ht_module = 888,
    .sizeof_type = 416, .sizeof_heaptype = 936, .static_type_presize = false,
    .tuple_items = 32,
    .co_nlocalsplus = 72, .co_stacksize = 64, .co_extra = 200,
    .fr_func = 16, .fr_globals = 24, .fr_builtins = 32, .fr_locals = 40, .fr_frame_obj = 48,
    .fr_stacktop = 64, .fr_stackpointer = true,
    .frobj_data = 72,
    .gi_name = 24, .gi_qualname = 32, .gi_exc_value = 40, .gi_frame_state = 67, .gi_iframe = 72,
    .ts_dict = 128, .ts_async_exc = 144, .ts_context = 208, .ts_exc_info = 120,
    .ts_current_exception = 112,
    .func = {FUNC_FIELDS_311, R(120, ATTR, ".__annotate__"), R(128, ATTR, ".__type_params__")},
    .type_fields = {R(264, ATTR, ".__dict__"), R(344, INTERNAL, ".__mro__"),
                    R(336, INTERNAL, ".__bases__"), R(256, INTERNAL, ".__base__"),
                    R(888, INTERNAL, ".__module_object__"), R(856, INTERNAL, ".__name__"),
                    R(872, INTERNAL, ".__qualname__"), R(864, INTERNAL, ".__slots__")},
    .frobj = {R(16, INTERNAL, ".f_back"), R(32, ATTR, ".f_trace"),
              R(48, ATTR, ".f_extra_locals"), R(56, INTERNAL, ".f_locals_cache")},
};

/* 3.15: offsetof() on the 3.15.2 headers (tests/tools/layout_offsets.c): the GC state lost its
 * trash-can fields (generations from +8), PyTypeObject grew by 8 (_tp_iteritem), bytearray too
 * (ob_bytes_object: the buffer is a bytes object's); the thread state's exception fields moved
 * 24 bytes on; module names at +40; a new generator state (FRAME_SUSPENDED_YIELD_FROM_LOCKED)
 * makes CLEARED 5. */
static const struct py_heap_layout heap_315 = {
    .minor = 15,
    COMMON_HEAP_FIELDS,
    .gc_generations = {8, 32, 56},
    .gc_permanent = 80, .gc_collecting = 112, .gc_garbage = 128,
    .ht_name = 864, .ht_slots = 872, .ht_qualname = 880, .ht_module = 896,
    .sizeof_type = 424, .sizeof_heaptype = 944, .static_type_presize = false,
    .ba_basicsize = 64, .ba_bytes_header = 33,
    .tuple_items = 32,
    .co_nlocalsplus = 72, .co_stacksize = 64, .co_extra = 200,
    .fr_func = 16, .fr_globals = 24, .fr_builtins = 32, .fr_locals = 40, .fr_frame_obj = 48,
    .fr_stacktop = 64, .fr_stackpointer = true,
    .frobj_data = 72,
    .gi_name = 24, .gi_qualname = 32, .gi_exc_value = 40, .gi_frame_state = 67, .gi_iframe = 72,
    .gen_state_cleared = 5,
    .ts_dict = 152, .ts_async_exc = 168, .ts_context = 232, .ts_exc_info = 144,
    .ts_current_exception = 136,
    .func = {FUNC_FIELDS_311, R(120, ATTR, ".__annotate__"), R(128, ATTR, ".__type_params__")},
    .type_fields = {R(264, ATTR, ".__dict__"), R(344, INTERNAL, ".__mro__"),
                    R(336, INTERNAL, ".__bases__"), R(256, INTERNAL, ".__base__"),
                    R(896, INTERNAL, ".__module_object__"), R(864, INTERNAL, ".__name__"),
                    R(880, INTERNAL, ".__qualname__"), R(872, INTERNAL, ".__slots__")},
    .frobj = {R(16, INTERNAL, ".f_back"), R(32, ATTR, ".f_trace"),
              R(48, ATTR, ".f_extra_locals"), R(56, INTERNAL, ".f_locals_cache")},
    .module = {R(16, ATTR, ".__dict__"), R(40, INTERNAL, ".__name__")},
};

#undef R

const struct py_heap_layout *py_heap_layout_table(int minor)
{
    switch (minor) {
    case 11:
        return &heap_311;
    case 12:
        return &heap_312;
    case 13:
        return &heap_313;
    case 14:
        return &heap_314;
    case 15:
        return &heap_315;
    default:
        return NULL;
    }
}
