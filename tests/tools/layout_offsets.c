/* Prints, for the CPython whose headers it is compiled against, every number scry's layout tables
 * (src/cpython/layout.c) hold, under the names tests/tools/layout_table.c prints scry's own
 * numbers with: the u64 index of each _Py_DebugOffsets field scry reads and of its struct's size
 * (3.13+: "dbg.<field>", "dbg.<field>.within"), and offsetof()/sizeof/enum values for the rest
 * (0 for a field this version does not have). tests/e2e/test_layout_headers.py compiles it per
 * installed version and compares.
 *
 *   cc -I$INC -I$INC/internal tests/tools/layout_offsets.c -o layout_offsets
 *
 * $INC: the version's include/python3.X folder (pyenv's, or a Debian root's usr/include/python3.X
 * with -idirafter that root's usr/include, where its pyconfig.h points). */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_moduleobject.h"
#include "internal/pycore_runtime.h"
#if PY_MINOR_VERSION >= 14 /* 3.13 declares _Py_DebugOffsets in pycore_runtime.h */
#include "internal/pycore_debug_offsets.h"
#endif
#if PY_MINOR_VERSION >= 14
#include "internal/pycore_interpframe.h"
#endif
#include "internal/pycore_genobject.h"
#include "internal/pycore_dict.h"
#include "internal/pycore_function.h"
#include "internal/pycore_object.h"
#if PY_MINOR_VERSION == 11
#include "structmember.h"
#endif

#define P(name, v) printf("%s %lld\n", name, (long long)(v))
#define O(name, type, field) P(name, offsetof(type, field))
#if PY_MINOR_VERSION >= 13
/* A field of the block and the index of the size of the struct it lies in. */
#define D(name, st, field)                                                                         \
    do {                                                                                           \
        P("dbg." name, offsetof(struct _Py_DebugOffsets, st.field) / 8);                            \
        P("dbg." name ".within", offsetof(struct _Py_DebugOffsets, st.size) / 8);                  \
    } while (0)
#define DG(name, field) P("dbg." name, offsetof(struct _Py_DebugOffsets, field) / 8)
#endif
#define Z(name) P(name, 0) /* a field this version does not have */

int main(void)
{
    P("minor", PY_MINOR_VERSION);
#ifdef Py_GIL_DISABLED
    P("free_threaded", 1);
#else
    P("free_threaded", 0);
#endif
#if PY_MINOR_VERSION >= 13
    /* struct py_layout, from the block */
    P("dbg.sizeof", sizeof(struct _Py_DebugOffsets));
    D("rt_size", runtime_state, size);
    D("rt_interpreters_head", runtime_state, interpreters_head);
    D("is_size", interpreter_state, size);
    D("is_id", interpreter_state, id);
    D("is_next", interpreter_state, next);
    D("is_threads_head", interpreter_state, threads_head);
    D("is_gc", interpreter_state, gc);
    D("is_modules", interpreter_state, imports_modules);
    D("is_sysdict", interpreter_state, sysdict);
    D("is_builtins", interpreter_state, builtins);
    D("is_ceval_gil", interpreter_state, ceval_gil);
    DG("gil_start", interpreter_state.gil_runtime_state);
    DG("gil_locked", interpreter_state.gil_runtime_state_locked);
    DG("gil_holder", interpreter_state.gil_runtime_state_holder);
    D("ts_size", thread_state, size);
    D("ts_next", thread_state, next);
    D("ts_interp", thread_state, interp);
    D("ts_current_frame", thread_state, current_frame);
    D("ts_thread_id", thread_state, thread_id);
    D("ts_native_thread_id", thread_state, native_thread_id);
    D("ts_datastack_chunk", thread_state, datastack_chunk);
    D("fr_size", interpreter_frame, size);
    D("fr_previous", interpreter_frame, previous);
    D("fr_code", interpreter_frame, executable);
    D("fr_instr", interpreter_frame, instr_ptr);
    D("fr_localsplus", interpreter_frame, localsplus);
    D("fr_owner", interpreter_frame, owner);
    D("co_size", code_object, size);
    D("co_filename", code_object, filename);
    D("co_name", code_object, name);
    D("co_qualname", code_object, qualname);
    D("co_linetable", code_object, linetable);
    D("co_firstlineno", code_object, firstlineno);
    D("co_code_adaptive", code_object, co_code_adaptive);
    D("ob_type", pyobject, ob_type);
    D("tp_name", type_object, tp_name);
    D("tp_flags", type_object, tp_flags);
#if PY_MINOR_VERSION >= 15
    D("tp_basicsize", type_object, tp_basicsize);
    D("tp_dictoffset", type_object, tp_dictoffset);
    D("ht_cached_keys", heap_type_object, ht_cached_keys);
#endif
    D("dict_keys", dict_object, ma_keys);
    D("dict_values", dict_object, ma_values);
    D("long_digits", long_object, ob_digit);
    D("bytes_size", bytes_object, ob_size);
    D("bytes_sval", bytes_object, ob_sval);
    D("str_state", unicode_object, state);
    D("str_length", unicode_object, length);
    D("str_ascii_size", unicode_object, asciiobject_size);
    /* struct py_layout fields these versions do not have */
    Z("rt_gil_locked");
    Z("rt_gil_last_holder");
    Z("ts_cframe");
    Z("cframe_current_frame");
    Z("fr_is_entry");
#else
    /* struct py_layout, all of it (3.11, 3.12) */
    P("rt_size", sizeof(_PyRuntimeState));
    O("rt_interpreters_head", _PyRuntimeState, interpreters.head);
    P("is_size", sizeof(PyInterpreterState));
    O("is_next", PyInterpreterState, next);
    O("is_id", PyInterpreterState, id);
    O("is_threads_head", PyInterpreterState, threads.head);
    O("is_gc", PyInterpreterState, gc);
    O("is_sysdict", PyInterpreterState, sysdict);
    O("is_builtins", PyInterpreterState, builtins);
#if PY_MINOR_VERSION == 11
    O("rt_gil_locked", _PyRuntimeState, ceval.gil.locked);
    O("rt_gil_last_holder", _PyRuntimeState, ceval.gil.last_holder);
    O("is_modules", PyInterpreterState, modules);
    Z("is_ceval_gil");
    Z("gil_locked");
    Z("gil_last_holder");
    O("fr_code", _PyInterpreterFrame, f_code);
    O("fr_is_entry", _PyInterpreterFrame, is_entry);
    O("long_digits", PyLongObject, ob_digit);
#else
    Z("rt_gil_locked");
    Z("rt_gil_last_holder");
    O("is_modules", PyInterpreterState, imports.modules);
    O("is_ceval_gil", PyInterpreterState, ceval.gil);
    O("gil_locked", struct _gil_runtime_state, locked);
    O("gil_last_holder", struct _gil_runtime_state, last_holder);
    O("fr_code", _PyInterpreterFrame, f_code);
    Z("fr_is_entry");
    O("long_digits", PyLongObject, long_value.ob_digit);
#endif
    P("ts_size", sizeof(PyThreadState));
    O("ts_next", PyThreadState, next);
    O("ts_interp", PyThreadState, interp);
    O("ts_thread_id", PyThreadState, thread_id);
    O("ts_native_thread_id", PyThreadState, native_thread_id);
    O("ts_cframe", PyThreadState, cframe);
    O("cframe_current_frame", _PyCFrame, current_frame);
    Z("ts_current_frame");
    O("ts_datastack_chunk", PyThreadState, datastack_chunk);
    P("fr_size", sizeof(_PyInterpreterFrame));
    O("fr_previous", _PyInterpreterFrame, previous);
    O("fr_instr", _PyInterpreterFrame, prev_instr);
    O("fr_owner", _PyInterpreterFrame, owner);
    O("fr_localsplus", _PyInterpreterFrame, localsplus);
    P("co_size", sizeof(PyCodeObject));
    O("co_filename", PyCodeObject, co_filename);
    O("co_name", PyCodeObject, co_name);
    O("co_qualname", PyCodeObject, co_qualname);
    O("co_linetable", PyCodeObject, co_linetable);
    O("co_firstlineno", PyCodeObject, co_firstlineno);
    O("co_code_adaptive", PyCodeObject, co_code_adaptive);
    O("ob_type", PyObject, ob_type);
    O("tp_name", PyTypeObject, tp_name);
    O("tp_flags", PyTypeObject, tp_flags);
    O("str_length", PyASCIIObject, length);
    O("str_state", PyASCIIObject, state);
    P("str_ascii_size", sizeof(PyASCIIObject));
    O("bytes_size", PyBytesObject, ob_base.ob_size);
    O("bytes_sval", PyBytesObject, ob_sval);
    O("dict_keys", PyDictObject, ma_keys);
    O("dict_values", PyDictObject, ma_values);
#endif
#if PY_MINOR_VERSION <= 14 /* 3.15's block gives these */
    O("tp_basicsize", PyTypeObject, tp_basicsize);
    O("tp_dictoffset", PyTypeObject, tp_dictoffset);
    O("ht_cached_keys", PyHeapTypeObject, ht_cached_keys);
#endif
    /* struct py_layout, never in the block */
    P("owner_generator", FRAME_OWNED_BY_GENERATOR);
    /* scry's owner_cstack is the owner of the entry (shim) frame the eval loop pushes per C call,
     * owner_interpreter another owner whose frames are skipped (-1: none) */
#if PY_MINOR_VERSION == 11
    P("owner_cstack", -1);
    P("owner_interpreter", -1);
#elif PY_MINOR_VERSION <= 13
    P("owner_cstack", FRAME_OWNED_BY_CSTACK);
    P("owner_interpreter", -1);
#elif PY_MINOR_VERSION == 14
    P("owner_cstack", FRAME_OWNED_BY_INTERPRETER);
    P("owner_interpreter", FRAME_OWNED_BY_CSTACK);
#else
    P("owner_cstack", FRAME_OWNED_BY_INTERPRETER);
    P("owner_interpreter", -1);
#endif
    O("co_firsttraceable", PyCodeObject, _co_firsttraceable);
    O("co_nunits", PyCodeObject, ob_base.ob_size);
    P("str_compact_size", sizeof(PyCompactUnicodeObject));
    O("mod_dict", PyModuleObject, md_dict);
    /* bytes before an object where its managed dict pointer lies */
#if PY_MINOR_VERSION == 12 /* _PyObject_DictOrValuesPointer: ((PyDictOrValues *)obj) - 3 */
    P("managed_dict", 3 * sizeof(PyObject *));
#else
    P("managed_dict", -MANAGED_DICT_OFFSET);
#endif
    /* a free-threaded build's GIL can be enabled at run time: _gil_runtime_state.enabled */
#if defined(Py_GIL_DISABLED) && PY_MINOR_VERSION >= 13
    O("gil_enabled", struct _gil_runtime_state, enabled);
#else
    Z("gil_enabled");
#endif
    /* struct py_heap_layout */
#if PY_MINOR_VERSION >= 14 && defined(Py_GIL_DISABLED)
#else
    O("gc_gen0", struct _gc_runtime_state, generations[0]);
    O("gc_gen1", struct _gc_runtime_state, generations[1]);
    O("gc_gen2", struct _gc_runtime_state, generations[2]);
#endif
    O("gc_permanent", struct _gc_runtime_state, permanent_generation);
    O("gc_collecting", struct _gc_runtime_state, collecting);
    O("gc_garbage", struct _gc_runtime_state, garbage);
    O("tp_itemsize", PyTypeObject, tp_itemsize);
    O("tp_weaklistoffset", PyTypeObject, tp_weaklistoffset);
    O("tp_base", PyTypeObject, tp_base);
    O("tp_dict", PyTypeObject, tp_dict);
    O("tp_bases", PyTypeObject, tp_bases);
    O("tp_mro", PyTypeObject, tp_mro);
    O("tp_is_gc", PyTypeObject, tp_is_gc);
    O("ht_name", PyHeapTypeObject, ht_name);
    O("ht_slots", PyHeapTypeObject, ht_slots);
    O("ht_qualname", PyHeapTypeObject, ht_qualname);
    O("ht_module", PyHeapTypeObject, ht_module);
    P("sizeof_type", sizeof(PyTypeObject));
    P("sizeof_heaptype", sizeof(PyHeapTypeObject));
    O("tuple_items", PyTupleObject, ob_item);
    O("list_items", PyListObject, ob_item);
    O("list_allocated", PyListObject, allocated);
    O("set_mask", PySetObject, mask);
    O("set_table", PySetObject, table);
    O("set_smalltable", PySetObject, smalltable);
    O("ba_alloc", PyByteArrayObject, ob_alloc);
    O("ba_start", PyByteArrayObject, ob_start);
    P("ba_basicsize", sizeof(PyByteArrayObject));
    O("dk_usable", PyDictKeysObject, dk_usable);
    O("dk_nentries", PyDictKeysObject, dk_nentries);
    O("co_localsplusnames", PyCodeObject, co_localsplusnames);
    O("co_nlocalsplus", PyCodeObject, co_nlocalsplus);
    O("co_stacksize", PyCodeObject, co_stacksize);
    O("co_extra", PyCodeObject, co_extra);
#if PY_MINOR_VERSION >= 12
    O("fr_func", _PyInterpreterFrame, f_funcobj);
#else
    O("fr_func", _PyInterpreterFrame, f_func);
#endif
    O("fr_globals", _PyInterpreterFrame, f_globals);
    O("fr_builtins", _PyInterpreterFrame, f_builtins);
    O("fr_locals", _PyInterpreterFrame, f_locals);
    O("fr_frame_obj", _PyInterpreterFrame, frame_obj);
#if PY_MINOR_VERSION >= 14
    O("fr_stacktop", _PyInterpreterFrame, stackpointer);
#else
    O("fr_stacktop", _PyInterpreterFrame, stacktop);
#endif
    O("frobj_back", PyFrameObject, f_back);
    O("frobj_frame", PyFrameObject, f_frame);
    O("frobj_trace", PyFrameObject, f_trace);
#if PY_MINOR_VERSION >= 13
    O("frobj_extra_locals", PyFrameObject, f_extra_locals);
    O("frobj_locals_cache", PyFrameObject, f_locals_cache);
#endif
    O("frobj_data", PyFrameObject, _f_frame_data);
    O("gi_name", PyGenObject, gi_name);
    O("gi_qualname", PyGenObject, gi_qualname);
    O("gi_exc_value", PyGenObject, gi_exc_state.exc_value);
    O("gi_frame_state", PyGenObject, gi_frame_state);
    O("gi_iframe", PyGenObject, gi_iframe);
    P("gen_state_cleared", FRAME_CLEARED);
    O("ts_dict", PyThreadState, dict);
    O("ts_async_exc", PyThreadState, async_exc);
    O("ts_context", PyThreadState, context);
    O("ts_exc_info", PyThreadState, exc_info);
#if PY_MINOR_VERSION >= 12
    O("ts_current_exception", PyThreadState, current_exception);
#else
    O("ts_current_exception", PyThreadState, curexc_value);
#endif
    P("frame_owned_by_frame_object", FRAME_OWNED_BY_FRAME_OBJECT);
#if PY_MINOR_VERSION >= 15 /* the buffer is a bytes object's: its header and NUL */
    P("ba_bytes_header", offsetof(PyBytesObject, ob_sval) + 1);
#else
    Z("ba_bytes_header");
#endif
    /* object, GC and type headers the heap walker reads */
    P("gc_head_size", sizeof(PyGC_Head));
    O("gc_next", PyGC_Head, _gc_next);
    O("gc_prev", PyGC_Head, _gc_prev);
    O("ob_size", PyVarObject, ob_size);
    P("object_size", sizeof(PyObject));
    O("tp_dealloc", PyTypeObject, tp_dealloc);
    {
        /* sys.getsizeof's pre-header: the GC head, the managed dict (and weakref) words */
        PyTypeObject t;
        memset(&t, 0, sizeof(t));
        t.tp_flags = Py_TPFLAGS_HAVE_GC;
        P("preheader_gc", _PyType_PreHeaderSize(&t));
#if PY_MINOR_VERSION == 11
        P("preheader_flags", Py_TPFLAGS_MANAGED_DICT);
#else
        P("preheader_flags", Py_TPFLAGS_PREHEADER);
#endif
        t.tp_flags = Py_TPFLAGS_MANAGED_DICT;
        P("preheader_dict", _PyType_PreHeaderSize(&t));
    }
#if PY_MINOR_VERSION == 11 /* the values pointer: the word before the managed dict */
    {
        static PyTypeObject t;
        static PyObject words[4];
        PyObject *o = &words[2]; /* its function asserts that the type has a managed dict */
        t.tp_flags = Py_TPFLAGS_MANAGED_DICT;
        o->ob_type = &t;
        P("managed_values", (char *)o - (char *)_PyObject_ValuesPointer(o));
    }
#else
    Z("managed_values");
#endif
    /* __slots__: a heap type's PyMemberDef array, after its metatype's basic size */
    P("member_size", sizeof(PyMemberDef));
    O("member_name", PyMemberDef, name);
    O("member_type", PyMemberDef, type);
    O("member_offset", PyMemberDef, offset);
#if PY_MINOR_VERSION == 11
    P("member_t_object", T_OBJECT);
    P("member_t_object_ex", T_OBJECT_EX);
#else
    P("member_t_object", _Py_T_OBJECT);
    P("member_t_object_ex", Py_T_OBJECT_EX);
#endif
    /* dict keys, entries and split/inline values */
    O("dk_refcnt", PyDictKeysObject, dk_refcnt);
    O("dk_log2_size", PyDictKeysObject, dk_log2_size);
    O("dk_log2_index_bytes", PyDictKeysObject, dk_log2_index_bytes);
    O("dk_kind", PyDictKeysObject, dk_kind);
    O("dk_indices", PyDictKeysObject, dk_indices);
    P("dke_size", sizeof(PyDictKeyEntry));
    O("dke_key", PyDictKeyEntry, me_key);
    O("dke_value", PyDictKeyEntry, me_value);
    P("dkue_size", sizeof(PyDictUnicodeEntry));
    O("dkue_key", PyDictUnicodeEntry, me_key);
    O("dkue_value", PyDictUnicodeEntry, me_value);
    O("dv_values", PyDictValues, values);
#if PY_MINOR_VERSION >= 13
    O("dv_capacity", PyDictValues, capacity);
    O("dv_embedded", PyDictValues, embedded);
    O("dv_valid", PyDictValues, valid);
#else
    Z("dv_capacity");
    Z("dv_embedded");
    Z("dv_valid");
#endif
    /* int: 3.12+ lv_tag, 3.11 the signed ob_size */
#if PY_MINOR_VERSION >= 12
    O("long_tag", PyLongObject, long_value.lv_tag);
#else
    O("long_tag", PyLongObject, ob_base.ob_size);
#endif
    O("func_code", PyFunctionObject, func_code);
    O("func_closure", PyFunctionObject, func_closure);
    O("weakref_object", PyWeakReference, wr_object);
    P("setentry_size", sizeof(setentry));
    O("setentry_key", setentry, key);
    O("exc_item_value", _PyErr_StackItem, exc_value);
    /* the heap walker's labelled references (classmethod and property objects are private to
     * Objects/ and have no header: the test lists them as unchecked) */
    O("ref.func.__globals__", PyFunctionObject, func_globals);
    O("ref.func.__builtins__", PyFunctionObject, func_builtins);
    O("ref.func.__name__", PyFunctionObject, func_name);
    O("ref.func.__qualname__", PyFunctionObject, func_qualname);
    O("ref.func.__code__", PyFunctionObject, func_code);
    O("ref.func.__defaults__", PyFunctionObject, func_defaults);
    O("ref.func.__kwdefaults__", PyFunctionObject, func_kwdefaults);
    O("ref.func.__closure__", PyFunctionObject, func_closure);
    O("ref.func.__doc__", PyFunctionObject, func_doc);
    O("ref.func.__dict__", PyFunctionObject, func_dict);
    O("ref.func.__module__", PyFunctionObject, func_module);
    O("ref.func.__annotations__", PyFunctionObject, func_annotations);
#if PY_MINOR_VERSION >= 14
    O("ref.func.__annotate__", PyFunctionObject, func_annotate);
#endif
#if PY_MINOR_VERSION >= 12
    O("ref.func.__type_params__", PyFunctionObject, func_typeparams);
#endif
    O("ref.exc.__dict__", PyBaseExceptionObject, dict);
    O("ref.exc.args", PyBaseExceptionObject, args);
    O("ref.exc.__notes__", PyBaseExceptionObject, notes);
    O("ref.exc.__traceback__", PyBaseExceptionObject, traceback);
    O("ref.exc.__context__", PyBaseExceptionObject, context);
    O("ref.exc.__cause__", PyBaseExceptionObject, cause);
    O("ref.tb.tb_next", PyTracebackObject, tb_next);
    O("ref.tb.tb_frame", PyTracebackObject, tb_frame);
    O("ref.method.__func__", PyMethodObject, im_func);
    O("ref.method.__self__", PyMethodObject, im_self);
    O("ref.cfunc.__self__", PyCFunctionObject, m_self);
    O("ref.cfunc.__module__", PyCFunctionObject, m_module);
    O("ref.cell.cell_contents", PyCellObject, ob_ref);
    O("ref.weakref.__callback__", PyWeakReference, wr_callback);
    O("ref.module.__dict__", PyModuleObject, md_dict);
    O("ref.module.__name__", PyModuleObject, md_name);
    O("ref.type.__dict__", PyTypeObject, tp_dict);
    O("ref.type.__mro__", PyTypeObject, tp_mro);
    O("ref.type.__bases__", PyTypeObject, tp_bases);
    O("ref.type.__base__", PyTypeObject, tp_base);
    O("ref.type.__module_object__", PyHeapTypeObject, ht_module);
    O("ref.type.__name__", PyHeapTypeObject, ht_name);
    O("ref.type.__qualname__", PyHeapTypeObject, ht_qualname);
    O("ref.type.__slots__", PyHeapTypeObject, ht_slots);
    O("ref.frame.f_back", PyFrameObject, f_back);
    O("ref.frame.f_trace", PyFrameObject, f_trace);
#if PY_MINOR_VERSION >= 13
    O("ref.frame.f_extra_locals", PyFrameObject, f_extra_locals);
    O("ref.frame.f_locals_cache", PyFrameObject, f_locals_cache);
#endif
    return 0;
}
