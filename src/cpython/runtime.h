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
    struct py_heap_layout heap_windows; /* layout.llp64: the heap table for Windows */
};

/* The heap walker's table for rt (py_heap_layout_table, or the Windows one), or NULL. */
const struct py_heap_layout *py_runtime_heap_layout(const struct py_runtime *rt);

/* Finds the Python runtime in the target behind rd, reading the symbols of the image that holds
 * it from its ELF file (runtime_elf.c: scry's commands). Errors: not_python (no CPython runtime in
 * it), unsupported_python (too old or new, debug builds, free-threaded builds other than 3.13t:
 * the message says which; layout.free_threaded tells a 3.13t apart),
 * read errors of the reader. */
int py_runtime_open(struct rd_reader *rd, struct py_runtime *out);

/* The same for a Windows target (a minidump; runtime_pe.c): the symbols are python3XY.dll's
 * exports, read from the target's memory. 3.13 only (unsupported_python otherwise).
 * py_runtime_open calls it for a minidump reader. */
int py_runtime_open_pe(struct rd_reader *rd, struct py_runtime *out);

/* The same for this process (rd: the self reader), with the symbols taken from the image's
 * dynamic symbol table as loaded (runtime_self.c: the agent; no libelf). */
int py_runtime_open_self(struct rd_reader *rd, struct py_runtime *out);

/* ---- for runtime_elf.c and runtime_self.c ---- */

/* Where the symbols of the image holding _PyRuntime come from. */
struct py_image_syms {
    void *ctx;
    /* The address in the target of the image's symbol `name`, or 0 when it has none. */
    uint64_t (*addr)(void *ctx, const char *name);
    /* PY_VERSION_HEX from the image's file, for a core that lacks .rodata; NULL: no file. */
    bool (*file_version)(void *ctx, uint32_t *out);
};

/* First step: picks the image that should hold _PyRuntime (a mapped libpython, else the
 * executable), refuses what its file name says scry cannot read, and finds its load base. Fills
 * out->rd, image_path, load_base, static_interpreter. */
int py_runtime_locate(struct rd_reader *rd, struct py_runtime *out);
/* Second step, with the image's symbols: _PyRuntime, the version, the refusals, the layout and
 * the builtin types. */
int py_runtime_from_image(struct py_runtime *rt, const struct py_image_syms *syms);

/* "process PID (EXE)" or "the core of EXE", for messages; returns buf. */
const char *py_target_name(struct rd_reader *rd, char *buf, size_t size);

/* The first interpreter (newest first, as CPython links them), or 0. */
int py_interp_head(struct py_runtime *rt, uint64_t *interp);

/* The PyThreadState holding this interpreter's GIL, or 0 when it is free. *enabled: false when
 * the interpreter runs without a GIL (a free-threaded build whose GIL is not enabled). */
int py_gil_holder(struct py_runtime *rt, uint64_t interp, uint64_t *tstate, bool *enabled);

#endif
