/* Where CPython keeps what scry reads, per minor version: byte offsets into the runtime,
 * interpreter, thread, frame, code, type and object structs. 3.11 and 3.12 come from tables
 * (checked against offsetof() on the real headers by tests/e2e/test_layout_headers.py); 3.13-3.15
 * are read from the target's own _Py_DebugOffsets and checked for sanity, with tables only for
 * what that block does not give (checked the same way, as are the block's indices).
 * Walkers use these numbers and never branch on the version for a struct layout. */
#ifndef SCRY_CPYTHON_LAYOUT_H
#define SCRY_CPYTHON_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How an instance keeps its attributes when it has no __dict__ object of its own. */
enum py_values_kind {
    PY_VALUES_311, /* obj-32: PyDictValues* (NULL once a dict exists), obj-24: dict
                      (managed_dict) */
    PY_VALUES_312, /* obj-24: dict, or values pointer tagged with bit 0 */
    PY_VALUES_313, /* inline PyDictValues after tp_basicsize when Py_TPFLAGS_INLINE_VALUES; dict:
                      the managed dict pointer */
};

struct py_layout {
    int minor;
    bool from_debug_offsets; /* 3.13+: the offsets below came from the target itself */
    bool free_threaded;      /* a free-threaded build (3.13t): 32-byte object header, no GIL
                                unless enabled at run time (gil_enabled), mimalloc heaps */

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
    uint64_t gil_enabled;        /* free-threaded builds only: where the int saying whether the
                                    GIL is on lies (0 when it is off) in _gil_runtime_state */

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
    int owner_cstack;            /* the owner of the entry (shim) frame each C call of the eval
                                    loop pushes under its first frame, skipped in stacks and
                                    counted as an entry: FRAME_OWNED_BY_CSTACK on 3.12/3.13,
                                    FRAME_OWNED_BY_INTERPRETER on 3.14+; -1 on 3.11 */
    int owner_interpreter;       /* another owner whose frames are skipped (3.14's
                                    FRAME_OWNED_BY_CSTACK), else -1 */
    uint64_t fr_is_entry;        /* 3.11: bool is_entry (the first frame of one C call of the
                                    eval loop; later versions mark it with a shim frame); 0 */

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
    bool llp64;                  /* Windows x64 (LLP64): `unsigned long` is 4 bytes, so
                                  * PyThreadState.thread_id and native_thread_id are (read
                                  * 8 bytes, keep the low 4); so is tp_flags, but every flag
                                  * scry tests lies in its low 4 bytes */
    bool long_has_lv_tag;        /* 3.12+: lv_tag at 16; 3.11: signed ob_size */
    uint64_t long_digits;        /* 24 */
    /* bytes */
    uint64_t bytes_size, bytes_sval;
    /* dict */
    uint64_t dict_keys, dict_values;
    enum py_values_kind values_kind;
    /* module */
    uint64_t mod_dict;
    /* bytes before an object where its managed dict pointer lies (-MANAGED_DICT_OFFSET: 24,
       8 in free-threaded builds); 3.11 keeps the values pointer in the word before it */
    uint64_t managed_dict;
};

/* The table for a minor version without _Py_DebugOffsets (3.11, 3.12), or NULL. */
const struct py_layout *py_layout_table(int minor);

/* Fills a layout for 3.13+ (free_threaded: its free-threaded build, which scry reads for 3.13
 * only) from the raw _Py_DebugOffsets block read from the target (block/len: the bytes at
 * _PyRuntime). Fails with unsupported_python if the block does not have the shape this version
 * should have, naming the field. */
int py_layout_from_debug_offsets(int minor, bool free_threaded, const uint8_t *block, size_t len,
                                 struct py_layout *out);

/* Bytes of the _Py_DebugOffsets block for a minor version (0 when it has none). */
size_t py_debug_offsets_size(int minor, bool free_threaded);

/* One field of struct py_layout taken from _Py_DebugOffsets: the u64 at index `idx` of the block,
 * which must lie inside the struct whose size is at index `size_idx`. */
struct py_dbg_field {
    const char *name; /* the struct py_layout field */
    size_t layout_off;
    int idx;
    int size_idx;
};

/* The indices of the embedded GIL's start, its `locked` and its `last_holder` in the block. */
#define PY_DBG_GIL_INDICES 3

/* For 3.13+: what py_layout_from_debug_offsets starts from (the fields the block does not give),
 * the fields it takes from the block and the GIL's indices; NULL for other versions. Exposed so
 * that tests/tools/layout_table.c can print every number for the header check. */
const struct py_layout *py_debug_layout_fixed(int minor, bool free_threaded,
                                              const struct py_dbg_field **fields,
                                              size_t *nfields, const int **gil);

/* A labelled object pointer inside a struct: the references a tp_traverse visits, as data. */
struct py_ref_field {
    uint16_t off;
    uint8_t kind;      /* enum hw_edge_kind (cpython/heap_walk.h) */
    const char *label; /* `.__globals__` */
};

#define PY_MAX_REF_FIELDS 16

/* What the heap walker needs beyond struct py_layout: GC lists, type and heap-type fields, and the
 * layouts of the builtin containers, per minor version (generated from the 3.11.7, 3.12.1, 3.13.0,
 * 3.14.10 and 3.15.2 headers: layout_3X.c; 3.13.15t's: layout_313t.c). None of these is in _Py_DebugOffsets except
 * gc.collecting, which the walker checks against it. */
struct py_heap_layout {
    int minor;
    /* struct _gc_runtime_state, relative to interp->gc: list heads (PyGC_Head, 16 bytes) */
    uint64_t gc_generations[3], gc_permanent, gc_collecting, gc_garbage;
    /* PyTypeObject / PyHeapTypeObject */
    uint64_t tp_itemsize, tp_weaklistoffset, tp_base, tp_dict, tp_bases, tp_mro, tp_is_gc;
    uint64_t ht_name, ht_slots, ht_qualname, ht_module;
    uint64_t sizeof_type, sizeof_heaptype;
    bool static_type_presize; /* sys.getsizeof adds the GC head to static types (3.11, 3.12) */
    /* tuple, list, set, bytearray */
    uint64_t tuple_items, list_items, list_allocated;
    uint64_t set_mask, set_table, set_smalltable;
    uint64_t ba_alloc, ba_start, ba_basicsize;
    uint64_t ba_bytes_header; /* 3.15: the buffer is a bytes object's; sys.getsizeof adds its
                                 header and NUL (33) when ob_alloc > 0; else 0 */
    /* dict keys */
    uint64_t dk_usable, dk_nentries;
    /* code */
    uint64_t co_localsplusnames, co_nlocalsplus, co_stacksize, co_extra;
    /* _PyInterpreterFrame beyond struct py_layout */
    uint64_t fr_func, fr_globals, fr_builtins, fr_locals, fr_frame_obj, fr_stacktop;
    bool fr_stackpointer; /* 3.14: fr_stacktop holds a _PyStackRef* instead of a slot count */
    /* PyFrameObject */
    uint64_t frobj_back, frobj_frame, frobj_trace, frobj_data;
    int frame_owned_by_frame_object;
    /* generators and coroutines */
    uint64_t gi_name, gi_qualname, gi_exc_value, gi_frame_state, gi_iframe;
    int gen_state_cleared;
    /* PyThreadState objects used as roots */
    uint64_t ts_dict, ts_async_exc, ts_context, ts_exc_info, ts_current_exception;
    /* PyGC_Head (its size and the next and previous links, whose low 2 bits are flags),
       PyVarObject.ob_size, sizeof(PyObject), tp_dealloc */
    uint64_t gc_head_size, gc_next, gc_prev, ob_size, object_size, tp_dealloc;
    /* sys.getsizeof's pre-header (_PyType_PreHeaderSize): preheader_gc bytes for a GC type,
       preheader_dict more when the type has any of preheader_flags (managed dict/weakref) */
    uint64_t preheader_gc, preheader_flags, preheader_dict;
    uint64_t managed_values; /* 3.11: bytes before an object where its values pointer lies; 0 */
    /* PyMemberDef (a heap type's __slots__) and the member types that hold an object */
    uint64_t member_size, member_name, member_type, member_offset;
    uint64_t member_t_object, member_t_object_ex;
    /* PyDictKeysObject's header, its two entry layouts (general: dke_, unicode: dkue_) and
       PyDictValues (dv_capacity/embedded/valid: 3.13+, else 0) */
    uint64_t dk_refcnt, dk_log2_size, dk_log2_index_bytes, dk_kind, dk_indices;
    uint64_t dke_size, dke_key, dke_value, dkue_size, dkue_key, dkue_value;
    uint64_t dv_values, dv_capacity, dv_embedded, dv_valid;
    uint64_t long_tag; /* 3.12+: lv_tag; 3.11: the signed ob_size */
    uint64_t func_code, func_closure, weakref_object, setentry_size, setentry_key;
    uint64_t exc_item_value; /* _PyErr_StackItem.exc_value (tstate->exc_info) */
    /* fixed references per kind, in the order tp_traverse visits them */
    struct py_ref_field func[PY_MAX_REF_FIELDS], exc[8], tb[4], method[4], cfunc[4], cell[2],
        classmethod[4], property[6], weakref_cb[2], module[4], type_fields[8], frobj[4];
};

/* The heap walker's table for a minor version (11-15; free_threaded: 3.13 only), or NULL. The
 * frame walker takes code and frame fields from it too. */
const struct py_heap_layout *py_heap_layout_table(int minor, bool free_threaded);
/* The heap walker's table for the Windows x64 (LLP64, MSVC) build of a minor version into out:
 * the Linux table with what the Windows headers lay out otherwise (PyThreadState's thread ids are
 * 4-byte `unsigned long`s, moving the fields after them). Only 3.13 is known (checked against
 * the official 3.13.5's headers by tests/e2e/test_windows_minidump.py); false for the others. */
bool py_heap_layout_windows(int minor, struct py_heap_layout *out);

#endif
