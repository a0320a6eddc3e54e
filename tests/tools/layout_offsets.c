/* Prints, for the CPython whose headers it is compiled against, every offset scry's layout tables
 * (src/cpython/layout.c) hold: the u64 index of each _Py_DebugOffsets field scry reads (3.13+),
 * and offsetof()/sizeof of what that block does not give. One "name value" line each; compare
 * with the tables by hand or with tests/e2e/test_layout_headers.py.
 *
 *   cc -I$INC -I$INC/internal -DPy_BUILD_CORE tests/tools/layout_offsets.c -o layout_offsets
 *
 * $INC: the version's include/python3.X folder (pyenv's, or a Debian root's usr/include/python3.X
 * together with -I of that root's usr/include, where its pyconfig.h points). */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>

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

#define P(name, v) printf("%s %lld\n", name, (long long)(v))
#define O(name, type, field) P(name, offsetof(type, field))
#if PY_MINOR_VERSION >= 13
#define D(name, field) P("dbg." name, offsetof(struct _Py_DebugOffsets, field) / 8)
#endif

int main(void)
{
    P("minor", PY_MINOR_VERSION);
#if PY_MINOR_VERSION >= 13
    P("dbg.sizeof", sizeof(struct _Py_DebugOffsets));
    D("rt_size", runtime_state.size);
    D("rt_interpreters_head", runtime_state.interpreters_head);
    D("is_size", interpreter_state.size);
    D("is_id", interpreter_state.id);
    D("is_next", interpreter_state.next);
    D("is_threads_head", interpreter_state.threads_head);
    D("is_gc", interpreter_state.gc);
    D("is_modules", interpreter_state.imports_modules);
    D("is_sysdict", interpreter_state.sysdict);
    D("is_builtins", interpreter_state.builtins);
    D("is_ceval_gil", interpreter_state.ceval_gil);
    D("gil_start", interpreter_state.gil_runtime_state);
    D("gil_locked", interpreter_state.gil_runtime_state_locked);
    D("gil_holder", interpreter_state.gil_runtime_state_holder);
    D("ts_size", thread_state.size);
    D("ts_next", thread_state.next);
    D("ts_interp", thread_state.interp);
    D("ts_current_frame", thread_state.current_frame);
    D("ts_thread_id", thread_state.thread_id);
    D("ts_native_thread_id", thread_state.native_thread_id);
    D("ts_datastack_chunk", thread_state.datastack_chunk);
    D("fr_size", interpreter_frame.size);
    D("fr_previous", interpreter_frame.previous);
    D("fr_code", interpreter_frame.executable);
    D("fr_instr", interpreter_frame.instr_ptr);
    D("fr_localsplus", interpreter_frame.localsplus);
    D("fr_owner", interpreter_frame.owner);
    D("co_size", code_object.size);
    D("co_filename", code_object.filename);
    D("co_name", code_object.name);
    D("co_qualname", code_object.qualname);
    D("co_linetable", code_object.linetable);
    D("co_firstlineno", code_object.firstlineno);
    D("co_code_adaptive", code_object.co_code_adaptive);
    D("ob_size", pyobject.size);
    D("ob_type", pyobject.ob_type);
    D("tp_size", type_object.size);
    D("tp_name", type_object.tp_name);
    D("tp_flags", type_object.tp_flags);
    D("dict_size", dict_object.size);
    D("dict_keys", dict_object.ma_keys);
    D("dict_values", dict_object.ma_values);
    D("long_size", long_object.size);
    D("long_digits", long_object.ob_digit);
    D("bytes_objsize", bytes_object.size);
    D("bytes_size", bytes_object.ob_size);
    D("bytes_sval", bytes_object.ob_sval);
    D("str_size", unicode_object.size);
    D("str_state", unicode_object.state);
    D("str_length", unicode_object.length);
    D("str_ascii_size", unicode_object.asciiobject_size);
#endif
    /* struct py_layout, beyond the block */
    P("owner_generator", FRAME_OWNED_BY_GENERATOR);
    P("owner_frame_object", FRAME_OWNED_BY_FRAME_OBJECT);
#if PY_MINOR_VERSION >= 12 && PY_MINOR_VERSION <= 14 /* 3.15: shim frames are the interpreter's */
    P("owner_cstack", FRAME_OWNED_BY_CSTACK);
#endif
#if PY_MINOR_VERSION >= 14
    P("owner_interpreter", FRAME_OWNED_BY_INTERPRETER);
#endif
    O("co_firsttraceable", PyCodeObject, _co_firsttraceable);
    O("co_nunits", PyCodeObject, ob_base.ob_size);
    O("tp_basicsize", PyTypeObject, tp_basicsize);
    O("tp_dictoffset", PyTypeObject, tp_dictoffset);
    O("ht_cached_keys", PyHeapTypeObject, ht_cached_keys);
    P("str_compact_size", sizeof(PyCompactUnicodeObject));
    P("str_ascii_size_sizeof", sizeof(PyASCIIObject));
    O("mod_dict", PyModuleObject, md_dict);
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
#endif
    /* functions */
    O("func_globals", PyFunctionObject, func_globals);
    O("func_builtins", PyFunctionObject, func_builtins);
    O("func_name", PyFunctionObject, func_name);
    O("func_qualname", PyFunctionObject, func_qualname);
    O("func_code", PyFunctionObject, func_code);
    O("func_defaults", PyFunctionObject, func_defaults);
    O("func_kwdefaults", PyFunctionObject, func_kwdefaults);
    O("func_closure", PyFunctionObject, func_closure);
    O("func_doc", PyFunctionObject, func_doc);
    O("func_dict", PyFunctionObject, func_dict);
    O("func_module", PyFunctionObject, func_module);
    O("func_annotations", PyFunctionObject, func_annotations);
#if PY_MINOR_VERSION >= 14
    O("func_annotate", PyFunctionObject, func_annotate);
#endif
#if PY_MINOR_VERSION >= 12
    O("func_typeparams", PyFunctionObject, func_typeparams);
#endif
    P("sizeof_func", sizeof(PyFunctionObject));
    O("exc_dict", PyBaseExceptionObject, dict);
    O("exc_args", PyBaseExceptionObject, args);
    O("exc_notes", PyBaseExceptionObject, notes);
    O("exc_traceback", PyBaseExceptionObject, traceback);
    O("exc_context", PyBaseExceptionObject, context);
    O("exc_cause", PyBaseExceptionObject, cause);
    O("tb_next", PyTracebackObject, tb_next);
    O("tb_frame", PyTracebackObject, tb_frame);
    O("method_func", PyMethodObject, im_func);
    O("method_self", PyMethodObject, im_self);
    O("cfunc_self", PyCFunctionObject, m_self);
    O("cfunc_module", PyCFunctionObject, m_module);
    O("cell_contents", PyCellObject, ob_ref);
    O("module_dict", PyModuleObject, md_dict);
    O("module_name", PyModuleObject, md_name);
    return 0;
}
