/* Where CPython keeps what scry reads, per minor version: byte offsets into the runtime,
 * interpreter, thread, frame, code, type and object structs. 3.11 and 3.12 come from tables
 * (checked against offsetof() on the real headers); 3.13 and 3.14 are read from the target's own
 * _Py_DebugOffsets and checked for sanity, with tables only for what that block does not give.
 * Walkers use these numbers and never branch on the version for a struct layout. */
#ifndef SCRY_CPYTHON_LAYOUT_H
#define SCRY_CPYTHON_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How an instance keeps its attributes when it has no __dict__ object of its own. */
enum py_values_kind {
    PY_VALUES_311, /* obj-32: PyDictValues* (NULL once a dict exists), obj-24: dict */
    PY_VALUES_312, /* obj-24: dict, or values pointer tagged with bit 0 */
    PY_VALUES_313, /* inline PyDictValues at obj+16 when Py_TPFLAGS_INLINE_VALUES; obj-24: dict */
};

struct py_layout {
    int minor;
    bool from_debug_offsets; /* 3.13+: the offsets below came from the target itself */

    /* _PyRuntimeState */
    uint64_t rt_size;
    uint64_t rt_interpreters_head;
    uint64_t rt_gil_locked;      /* 3.11: _PyRuntime.ceval.gil.locked, else 0 */
    uint64_t rt_gil_last_holder; /* 3.11: _PyRuntime.ceval.gil.last_holder, else 0 */

    /* PyInterpreterState */
    uint64_t is_size;
    uint64_t is_next, is_id, is_threads_head, is_gc, is_modules, is_sysdict, is_builtins;
    uint64_t is_ceval_gil;       /* 3.12+: pointer to the _gil_runtime_state in use, else 0 */
    uint64_t gil_locked;         /* offsets inside struct _gil_runtime_state (3.12+) */
    uint64_t gil_last_holder;

    /* PyThreadState */
    uint64_t ts_size;
    uint64_t ts_next, ts_interp, ts_thread_id, ts_native_thread_id;
    uint64_t ts_cframe;          /* 3.11, 3.12: tstate->cframe; 0 when absent */
    uint64_t cframe_current_frame;
    uint64_t ts_current_frame;   /* 3.13+: tstate->current_frame; used when ts_cframe == 0 */
    uint64_t ts_datastack_chunk; /* _PyStackChunk holding the thread's frames; the top pointer
                                    (datastack_top) follows it */

    /* _PyInterpreterFrame */
    uint64_t fr_size;
    uint64_t fr_previous, fr_code, fr_instr, fr_owner, fr_localsplus;
    bool fr_code_tagged;         /* 3.14: f_executable is a _PyStackRef (low 2 bits are tags) */
    int owner_generator;         /* FRAME_OWNED_BY_GENERATOR */
    int owner_cstack;            /* shim frames to skip; -1 when the version has none */
    int owner_interpreter;       /* 3.14 FRAME_OWNED_BY_INTERPRETER, else -1 */

    /* PyCodeObject */
    uint64_t co_size;            /* sizeof without bytecode */
    uint64_t co_nunits;          /* ob_size: number of 2-byte code units */
    uint64_t co_filename, co_name, co_qualname, co_linetable, co_firstlineno;
    uint64_t co_firsttraceable, co_code_adaptive;

    /* PyObject / PyTypeObject */
    uint64_t ob_type;            /* 8 */
    uint64_t tp_name, tp_basicsize, tp_flags, tp_dictoffset, ht_cached_keys;

    /* str */
    uint64_t str_length, str_state, str_ascii_size, str_compact_size;
    /* int */
    bool long_has_lv_tag;        /* 3.12+: lv_tag at 16; 3.11: signed ob_size */
    uint64_t long_digits;        /* 24 */
    /* bytes */
    uint64_t bytes_size, bytes_sval;
    /* dict */
    uint64_t dict_keys, dict_values;
    enum py_values_kind values_kind;
    /* module */
    uint64_t mod_dict;
};

/* The table for a minor version without _Py_DebugOffsets (3.11, 3.12), or NULL. */
const struct py_layout *py_layout_table(int minor);

/* Fills a layout for 3.13 or 3.14 from the raw _Py_DebugOffsets block read from the target
 * (block/len: the bytes at _PyRuntime). Fails with unsupported_python if the block does not have
 * the shape this version should have, naming the field. */
int py_layout_from_debug_offsets(int minor, const uint8_t *block, size_t len,
                                 struct py_layout *out);

/* Bytes of the _Py_DebugOffsets block for a minor version (0 when it has none). */
size_t py_debug_offsets_size(int minor);

#endif
