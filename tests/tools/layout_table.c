/* Prints scry's own layout numbers for one CPython minor version as compiled (src/cpython/layout.c
 * and the generated layout_3X.c), in the
 * "name value" lines of tests/tools/layout_offsets.c, which prints the same names from the
 * version's headers: tests/e2e/test_layout_headers.py compares the two.
 *
 *   layout_table MINOR      (13t: 3.13's free-threaded build)
 *
 * 3.11/3.12: every field of struct py_layout by name. 3.13+: "dbg.<field> <index>" and
 * "dbg.<field>.within <index of its struct's size>" for what comes from _Py_DebugOffsets,
 * dbg.gil_start/gil_locked/gil_holder, and by name every other field. Then the heap walker's table
 * (struct py_heap_layout): its numbers by name, gc_gen0..2, and each labelled reference as
 * "ref.<kind><label> <offset>". Flags and enums (values_kind, fr_code_tagged, ...) are rules,
 * not header numbers (tests/tools/gen_layouts.py rules()), and are not printed. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpython/layout.h"

#define U(f) {#f, offsetof(struct py_layout, f), 'u'}
#define I(f) {#f, offsetof(struct py_layout, f), 'i'}

struct field {
    const char *name;
    size_t off;
    char type; /* 'u': uint64_t, 'i': int */
};

static const struct field layout_fields[] = {
    U(rt_size), U(rt_interpreters_head), U(rt_gil_locked), U(rt_gil_last_holder),
    U(is_size), U(is_next), U(is_id), U(is_threads_head), U(is_gc), U(is_modules),
    U(is_sysdict), U(is_builtins), U(is_ceval_gil), U(gil_locked), U(gil_last_holder),
    U(gil_enabled),
    U(ts_size), U(ts_next), U(ts_interp), U(ts_thread_id), U(ts_native_thread_id),
    U(ts_cframe), U(cframe_current_frame), U(ts_current_frame), U(ts_datastack_chunk),
    U(fr_size), U(fr_previous), U(fr_code), U(fr_instr), U(fr_owner), U(fr_localsplus),
    I(owner_generator), I(owner_cstack), I(owner_interpreter), U(fr_is_entry),
    U(co_size), U(co_nunits), U(co_filename), U(co_name), U(co_qualname), U(co_linetable),
    U(co_firstlineno), U(co_firsttraceable), U(co_code_adaptive),
    U(ob_type), U(tp_name), U(tp_basicsize), U(tp_flags), U(tp_dictoffset), U(ht_cached_keys),
    U(str_length), U(str_state), U(str_ascii_size), U(str_compact_size),
    U(long_digits), U(bytes_size), U(bytes_sval), U(dict_keys), U(dict_values), U(mod_dict),
    U(managed_dict),
};
#undef U
#undef I

#define U(f) {#f, offsetof(struct py_heap_layout, f), 'u'}
#define I(f) {#f, offsetof(struct py_heap_layout, f), 'i'}
static const struct field heap_fields[] = {
    {"gc_gen0", offsetof(struct py_heap_layout, gc_generations[0]), 'u'},
    {"gc_gen1", offsetof(struct py_heap_layout, gc_generations[1]), 'u'},
    {"gc_gen2", offsetof(struct py_heap_layout, gc_generations[2]), 'u'},
    U(gc_permanent), U(gc_collecting), U(gc_garbage),
    U(tp_itemsize), U(tp_weaklistoffset), U(tp_base), U(tp_dict), U(tp_bases), U(tp_mro),
    U(tp_is_gc), U(ht_name), U(ht_slots), U(ht_qualname), U(ht_module),
    U(sizeof_type), U(sizeof_heaptype),
    U(tuple_items), U(list_items), U(list_allocated), U(set_mask), U(set_table),
    U(set_smalltable), U(ba_alloc), U(ba_start), U(ba_basicsize), U(ba_bytes_header),
    U(dk_usable), U(dk_nentries),
    U(co_localsplusnames), U(co_nlocalsplus), U(co_stacksize), U(co_extra),
    U(fr_func), U(fr_globals), U(fr_builtins), U(fr_locals), U(fr_frame_obj), U(fr_stacktop),
    U(frobj_back), U(frobj_frame), U(frobj_trace), U(frobj_data),
    I(frame_owned_by_frame_object),
    U(gi_name), U(gi_qualname), U(gi_exc_value), U(gi_frame_state), U(gi_iframe),
    I(gen_state_cleared),
    U(ts_dict), U(ts_async_exc), U(ts_context), U(ts_exc_info), U(ts_current_exception),
    U(gc_head_size), U(gc_next), U(gc_prev), U(ob_size), U(object_size), U(tp_dealloc),
    U(preheader_gc), U(preheader_flags), U(preheader_dict), U(managed_values), U(member_size),
    U(member_name), U(member_type), U(member_offset), U(member_t_object), U(member_t_object_ex),
    U(dk_refcnt),
    U(dk_log2_size), U(dk_log2_index_bytes), U(dk_kind), U(dk_indices), U(dke_size), U(dke_key),
    U(dke_value), U(dkue_size), U(dkue_key), U(dkue_value), U(dv_values), U(dv_capacity),
    U(dv_embedded), U(dv_valid), U(long_tag), U(func_code), U(func_closure), U(weakref_object),
    U(setentry_size), U(setentry_key), U(exc_item_value),
};
#undef U
#undef I

#define REFS(f, kind) {kind, offsetof(struct py_heap_layout, f), sizeof(((struct py_heap_layout *)0)->f) / sizeof(struct py_ref_field)}
static const struct {
    const char *kind;
    size_t off, n;
} ref_lists[] = {
    REFS(func, "func"),       REFS(exc, "exc"),
    REFS(tb, "tb"),           REFS(method, "method"),
    REFS(cfunc, "cfunc"),     REFS(cell, "cell"),
    REFS(classmethod, "classmethod"), REFS(property, "property"),
    REFS(weakref_cb, "weakref"),      REFS(module, "module"),
    REFS(type_fields, "type"),        REFS(frobj, "frame"),
};
#undef REFS

/* Prints each field of fs in the struct at base, but those skip says the block gives. */
static void print_fields(const void *base, const struct field *fs, size_t n,
                         int (*skip)(size_t off))
{
    for (size_t i = 0; i < n; i++) {
        if (skip && skip(fs[i].off))
            continue;
        const char *p = (const char *)base + fs[i].off;
        if (fs[i].type == 'u') {
            uint64_t v;
            memcpy(&v, p, sizeof(v));
            printf("%s %llu\n", fs[i].name, (unsigned long long)v);
        } else {
            int v;
            memcpy(&v, p, sizeof(v));
            printf("%s %d\n", fs[i].name, v);
        }
    }
}

static const struct py_dbg_field *dbg_fields;
static size_t n_dbg_fields;

/* A field the block gives (the GIL's two are derived from its indices). */
static int from_block(size_t off)
{
    if (off == offsetof(struct py_layout, gil_locked) ||
        off == offsetof(struct py_layout, gil_last_holder))
        return 1;
    for (size_t i = 0; i < n_dbg_fields; i++)
        if (dbg_fields[i].layout_off == off)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: layout_table MINOR[t|w]\n");
        return 2;
    }
    char *end;
    int minor = (int)strtol(argv[1], &end, 10);
    bool ft = strcmp(end, "t") == 0;
    const struct py_heap_layout *H = py_heap_layout_table(minor, ft);
    struct py_heap_layout windows; /* "13w": the Windows x64 build's */
    if (strcmp(end, "w") == 0) {
        H = py_heap_layout_windows(minor, &windows) ? &windows : NULL;
        end++;
    }
    const struct py_layout *L = ft ? NULL : py_layout_table(minor);
    const int *gil = NULL;
    if (!L)
        L = py_debug_layout_fixed(minor, ft, &dbg_fields, &n_dbg_fields, &gil);
    if (!L || !H || (*end && !ft)) {
        fprintf(stderr, "layout_table: scry has no layout for 3.%s\n", argv[1]);
        return 1;
    }
    printf("minor %d\n", minor);
    if (gil) {
        printf("dbg.sizeof %zu\n", py_debug_offsets_size(minor, ft));
        for (size_t i = 0; i < n_dbg_fields; i++) {
            printf("dbg.%s %d\n", dbg_fields[i].name, dbg_fields[i].idx);
            printf("dbg.%s.within %d\n", dbg_fields[i].name, dbg_fields[i].size_idx);
        }
        printf("dbg.gil_start %d\ndbg.gil_locked %d\ndbg.gil_holder %d\n", gil[0], gil[1], gil[2]);
    }
    print_fields(L, layout_fields, sizeof(layout_fields) / sizeof(layout_fields[0]),
                 gil ? from_block : NULL);
    print_fields(H, heap_fields, sizeof(heap_fields) / sizeof(heap_fields[0]), NULL);
    for (size_t k = 0; k < sizeof(ref_lists) / sizeof(ref_lists[0]); k++) {
        const struct py_ref_field *r =
            (const struct py_ref_field *)((const char *)H + ref_lists[k].off);
        for (size_t i = 0; i < ref_lists[k].n && r[i].label; i++)
            printf("ref.%s%s %u\n", ref_lists[k].kind, r[i].label, (unsigned)r[i].off);
    }
    return 0;
}
