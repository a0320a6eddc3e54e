/* A CPython runtime found inside a target (this process, another process, a core): where
 * _PyRuntime is, which version it is, the layout to read it with, and the addresses of the
 * builtin type objects used to recognise objects. Everything in src/cpython starts here. */
#ifndef SCRY_CPYTHON_RUNTIME_H
#define SCRY_CPYTHON_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "cpython/layout.h"
#include "reader/reader.h"

/* Builtin type objects, by address in the target (0 when not found). */
struct py_types {
    uint64_t code, type, str, bytes, long_, dict, list, tuple, module, none_struct;
    /* for the heap walker */
    uint64_t object, bool_, float_, complex, bytearray, set, frozenset, cell, function, method,
        cfunction, cmethod, classmethod, staticmethod, property, frame, gen, coro, async_gen,
        traceback, none_type, weakref, weakproxy, weakcallableproxy, odict, true_struct,
        false_struct;
    uint64_t set_dummy_ptr; /* &_PySet_Dummy: a pointer variable holding the dummy key */
};

struct py_runtime {
    struct rd_reader *rd; /* not owned */
    struct py_layout layout;
    uint32_t version_hex; /* PY_VERSION_HEX */
    int major, minor, micro;
    char version_str[32]; /* "3.12.1", "3.13.0rc2" */
    uint64_t runtime_addr;
    uint64_t load_base;       /* where the image holding _PyRuntime is loaded */
    char image_path[4096];    /* libpython or the executable, as the target sees it */
    bool static_interpreter;  /* _PyRuntime lives in the executable itself */
    struct py_types types;
};

/* Finds the Python runtime in the target behind rd. Errors: not_python (no CPython runtime in
 * it), unsupported_python (too old or new, debug or free-threaded builds: the message says which),
 * read errors of the reader. */
int py_runtime_open(struct rd_reader *rd, struct py_runtime *out);

/* The first interpreter (newest first, as CPython links them), or 0. */
int py_interp_head(struct py_runtime *rt, uint64_t *interp);

/* The PyThreadState holding this interpreter's GIL, or 0 when it is free. */
int py_gil_holder(struct py_runtime *rt, uint64_t interp, uint64_t *tstate);

#endif
