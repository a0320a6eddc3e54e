/* Finding CPython in a target: the image that holds _PyRuntime (libpython, or the executable of
 * a static interpreter), the version, the refusal of builds scry cannot read, and the layout
 * (3.13's free-threaded build has its own, chosen by _Py_DebugOffsets.free_threaded).
 * Where the image's symbols come from is the caller's: its ELF file (runtime_elf.c, scry's
 * commands) or its dynamic symbol table in this process (runtime_self.c, the agent). */
#include "runtime.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* What a file name says about the Python in it: "libpython3.12.so.1.0", "python3.13t",
 * "libpython3.12d.so". Returns false when the name is not a Python's. */
struct name_info {
    int major, minor;
    bool threaded, debug, is_lib;
};

static bool parse_python_name(const char *path, struct name_info *ni)
{
    const char *b = base_name(path);
    memset(ni, 0, sizeof(*ni));
    if (strncmp(b, "libpython", 9) == 0) {
        ni->is_lib = true;
        b += 9;
    } else if (strncmp(b, "python", 6) == 0) {
        b += 6;
    } else {
        return false;
    }
    if (b[0] < '2' || b[0] > '3')
        return false;
    ni->major = b[0] - '0';
    if (b[1] != '.') /* "python3" alone says nothing about the minor version */
        return ni->is_lib ? false : (ni->minor = -1, true);
    char *end;
    long minor = strtol(b + 2, &end, 10);
    if (end == b + 2 || minor < 0 || minor > 99)
        return false;
    ni->minor = (int)minor;
    for (; *end && *end != '.'; end++) {
        if (*end == 't')
            ni->threaded = true;
        else if (*end == 'd')
            ni->debug = true;
    }
    return true;
}

/* The image that should hold _PyRuntime: a mapped libpython, else the executable. */
static const char *pick_image(struct rd_reader *rd)
{
    size_t n;
    const struct rd_mapping *m = rd_mappings(rd, &n);
    for (size_t i = 0; i < n; i++) {
        struct name_info ni;
        if (m[i].path[0] == '/' && parse_python_name(m[i].path, &ni) && ni.is_lib)
            return m[i].path;
    }
    const char *exe = rd_exe_path(rd);
    if (exe)
        return exe;
    for (size_t i = 0; i < n; i++)
        if (m[i].path[0] == '/')
            return m[i].path;
    return NULL;
}

/* Load base of a mapped file: the start of its mapping at file offset 0. */
static bool image_base(struct rd_reader *rd, const char *path, uint64_t *base)
{
    size_t n;
    const struct rd_mapping *m = rd_mappings(rd, &n);
    bool found = false;
    uint64_t best_off = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i].path, path) != 0 || m[i].offset >= best_off)
            continue;
        best_off = m[i].offset;
        *base = m[i].start - m[i].offset;
        found = true;
    }
    return found;
}

static void version_string(struct py_runtime *rt)
{
    uint32_t v = rt->version_hex;
    int level = (v >> 4) & 0xf, serial = v & 0xf;
    const char *tag = level == 0xa ? "a" : level == 0xb ? "b" : level == 0xc ? "rc" : "";
    if (*tag)
        snprintf(rt->version_str, sizeof(rt->version_str), "%d.%d.%d%s%d", rt->major, rt->minor,
                 rt->micro, tag, serial);
    else
        snprintf(rt->version_str, sizeof(rt->version_str), "%d.%d.%d", rt->major, rt->minor,
                 rt->micro);
}

/* Reads PY_VERSION_HEX from the Py_Version symbol: in the target's memory if it is there (a core
 * usually lacks .rodata), else from the image's file. */
static bool read_py_version(struct py_runtime *rt, const struct py_image_syms *syms,
                            uint32_t *out)
{
    uint64_t addr = syms->addr(syms->ctx, "Py_Version");
    if (!addr)
        return false;
    if (rd_read_u32(rt->rd, addr, out) == 0 && (*out >> 24) == 3)
        return true;
    return syms->file_version && syms->file_version(syms->ctx, out) && (*out >> 24) == 3;
}

const char *py_target_name(struct rd_reader *rd, char *buf, size_t size)
{
    const char *exe = rd_exe_path(rd);
    if (rd_kind(rd) == RD_CORE)
        snprintf(buf, size, "the core of %s", exe ? exe : "an unknown program");
    else if (rd_kind(rd) == RD_MINIDUMP)
        snprintf(buf, size, "the minidump of process %d (%s)", rd_pid(rd),
                 exe ? exe : "an unknown program");
    else
        snprintf(buf, size, "process %d (%s)", rd_pid(rd), exe ? exe : "unknown executable");
    return buf;
}

static int unsupported_version(struct rd_reader *rd, int major, int minor, const char *what)
{
    char who[512];
    py_target_name(rd, who, sizeof(who));
    return err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                    "%s runs Python %d.%d%s, which scry does not support", who, major, minor,
                    what);
}

/* Free-threaded builds: scry reads 3.13t's thread states, frames and heap (stacks, run, dump);
 * other free-threaded versions are refused, naming what scry does not read there. */
static int unsupported_free_threaded(struct rd_reader *rd, int major, int minor)
{
    char who[512];
    py_target_name(rd, who, sizeof(who));
    return err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                    "%s runs Python %d.%d in a free-threaded build, which scry does not support "
                    "yet: it reads the free-threaded build of 3.13 only (its layout tables are "
                    "made from 3.13t's headers)",
                    who, major, minor);
}

int py_runtime_locate(struct rd_reader *rd, struct py_runtime *rt)
{
    char who[512];
    memset(rt, 0, sizeof(*rt));
    rt->rd = rd;
    py_target_name(rd, who, sizeof(who));

    const char *image = pick_image(rd);
    if (!image)
        return err_fail(SCRY_E_NOT_PYTHON, "%s is not a Python process: it maps no files", who);
    snprintf(rt->image_path, sizeof(rt->image_path), "%s", image);
    struct name_info ni;
    bool named = parse_python_name(image, &ni);
    if (named && ni.major == 2)
        return unsupported_version(rd, 2, ni.minor, "");
    if (named && ni.minor >= 0 && ni.minor < 11)
        return unsupported_version(rd, ni.major, ni.minor, " (scry reads 3.11 and newer)");
    if (named && ni.threaded && ni.minor != 13)
        return unsupported_free_threaded(rd, ni.major, ni.minor);
    if (named && ni.debug)
        return unsupported_version(rd, ni.major, ni.minor, " in a debug build");

    if (!image_base(rd, image, &rt->load_base))
        return err_fail(SCRY_E_NOT_PYTHON, "%s: cannot find where %s is loaded", who, image);
    rt->static_interpreter = !(named && ni.is_lib);
    return 0;
}

int py_runtime_from_image(struct py_runtime *rt, const struct py_image_syms *syms)
{
    struct rd_reader *rd = rt->rd;
    const char *image = rt->image_path;
    char who[512];
    int err;
    py_target_name(rd, who, sizeof(who));
    struct name_info ni;
    bool named = parse_python_name(image, &ni);

    rt->runtime_addr = syms->addr(syms->ctx, "_PyRuntime");
    if (!rt->runtime_addr)
        return err_fail(SCRY_E_NOT_PYTHON,
                        "%s is not a Python process: no libpython is mapped and %s has no "
                        "_PyRuntime",
                        who, image);

    uint8_t head[24];
    err = rd_read(rd, rt->runtime_addr, head, sizeof(head));
    if (err && (err == -SCRY_E_NO_SUCH_PROCESS || err == -SCRY_E_PERMISSION_DENIED))
        return err; /* it exited, or may not be read: say that, not "not Python" */
    if (err) {
        char why[512]; /* a copy: err_fail writes over the last message */
        snprintf(why, sizeof(why), "%s", err_last_message());
        return err_fail(SCRY_E_NOT_PYTHON, "%s: cannot read _PyRuntime at 0x%llx: %s", who,
                        (unsigned long long)rt->runtime_addr, why);
    }
    bool has_debug_offsets = memcmp(head, "xdebugpy", 8) == 0;
    uint64_t free_threaded = 0;
    if (has_debug_offsets) {
        memcpy(&rt->version_hex, head + 8, 4);
        memcpy(&free_threaded, head + 16, 8);
        if (free_threaded && ((rt->version_hex >> 16) & 0xff) != 13)
            return unsupported_free_threaded(rd, (int)(rt->version_hex >> 24),
                                             (int)((rt->version_hex >> 16) & 0xff));
    } else if (!read_py_version(rt, syms, &rt->version_hex)) {
        if (!named || ni.minor < 0)
            return err_fail(SCRY_E_NOT_PYTHON, "%s: cannot tell which Python version %s is", who,
                            image);
        rt->version_hex = (uint32_t)ni.major << 24 | (uint32_t)ni.minor << 16 | 0xf0;
    }
    rt->major = (int)(rt->version_hex >> 24);
    rt->minor = (int)((rt->version_hex >> 16) & 0xff);
    rt->micro = (int)((rt->version_hex >> 8) & 0xff);
    version_string(rt);

    if (rt->major != 3 || rt->minor < 11 || rt->minor > 15)
        return unsupported_version(rd, rt->major, rt->minor,
                                   rt->minor < 11 ? " (scry reads 3.11 and newer)" : "");
    if (syms->addr(syms->ctx, "_Py_NegativeRefcount") || syms->addr(syms->ctx, "_Py_RefTotal"))
        return unsupported_version(rd, rt->major, rt->minor, " in a debug build (--with-pydebug)");
    if (((rt->version_hex >> 4) & 0xf) != 0xf)
        log_warn("Python %s is a pre-release: its layouts may differ from the release",
                 rt->version_str);

    if (has_debug_offsets) {
        uint8_t block[1024];
        size_t n = py_debug_offsets_size(rt->minor, free_threaded != 0);
        if (n == 0) /* 3.11/3.12 never carry the cookie: something is off */
            return unsupported_version(rd, rt->major, rt->minor, " with an unknown layout");
        err = rd_read(rd, rt->runtime_addr, block, n);
        if (!err)
            err = py_layout_from_debug_offsets(rt->minor, free_threaded != 0, block, n,
                                               &rt->layout);
        if (err)
            return err;
    } else {
        const struct py_layout *t = py_layout_table(rt->minor);
        if (!t)
            return unsupported_version(rd, rt->major, rt->minor,
                                       ": its runtime carries no _Py_DebugOffsets");
        rt->layout = *t;
    }

    static const struct {
        size_t off;
        const char *sym;
    } types[] = {
        {offsetof(struct py_types, code), "PyCode_Type"},
        {offsetof(struct py_types, type), "PyType_Type"},
        {offsetof(struct py_types, str), "PyUnicode_Type"},
        {offsetof(struct py_types, bytes), "PyBytes_Type"},
        {offsetof(struct py_types, long_), "PyLong_Type"},
        {offsetof(struct py_types, dict), "PyDict_Type"},
        {offsetof(struct py_types, list), "PyList_Type"},
        {offsetof(struct py_types, tuple), "PyTuple_Type"},
        {offsetof(struct py_types, module), "PyModule_Type"},
        {offsetof(struct py_types, none_struct), "_Py_NoneStruct"},
        {offsetof(struct py_types, object), "PyBaseObject_Type"},
        {offsetof(struct py_types, bool_), "PyBool_Type"},
        {offsetof(struct py_types, float_), "PyFloat_Type"},
        {offsetof(struct py_types, complex), "PyComplex_Type"},
        {offsetof(struct py_types, bytearray), "PyByteArray_Type"},
        {offsetof(struct py_types, set), "PySet_Type"},
        {offsetof(struct py_types, frozenset), "PyFrozenSet_Type"},
        {offsetof(struct py_types, cell), "PyCell_Type"},
        {offsetof(struct py_types, function), "PyFunction_Type"},
        {offsetof(struct py_types, method), "PyMethod_Type"},
        {offsetof(struct py_types, cfunction), "PyCFunction_Type"},
        {offsetof(struct py_types, cmethod), "PyCMethod_Type"},
        {offsetof(struct py_types, classmethod), "PyClassMethod_Type"},
        {offsetof(struct py_types, staticmethod), "PyStaticMethod_Type"},
        {offsetof(struct py_types, property), "PyProperty_Type"},
        {offsetof(struct py_types, frame), "PyFrame_Type"},
        {offsetof(struct py_types, gen), "PyGen_Type"},
        {offsetof(struct py_types, coro), "PyCoro_Type"},
        {offsetof(struct py_types, async_gen), "PyAsyncGen_Type"},
        {offsetof(struct py_types, traceback), "PyTraceBack_Type"},
        {offsetof(struct py_types, none_type), "_PyNone_Type"},
        {offsetof(struct py_types, weakref), "_PyWeakref_RefType"},
        {offsetof(struct py_types, weakproxy), "_PyWeakref_ProxyType"},
        {offsetof(struct py_types, weakcallableproxy), "_PyWeakref_CallableProxyType"},
        {offsetof(struct py_types, odict), "PyODict_Type"},
        {offsetof(struct py_types, true_struct), "_Py_TrueStruct"},
        {offsetof(struct py_types, false_struct), "_Py_FalseStruct"},
        {offsetof(struct py_types, set_dummy_ptr), "_PySet_Dummy"},
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        uint64_t a = syms->addr(syms->ctx, types[i].sym);
        memcpy((uint8_t *)&rt->types + types[i].off, &a, sizeof(a));
    }
    if (!rt->types.code)
        return err_fail(SCRY_E_NOT_PYTHON, "%s: %s does not export PyCode_Type", who, image);
    log_debug("Python %s, _PyRuntime at 0x%llx in %s (base 0x%llx)", rt->version_str,
              (unsigned long long)rt->runtime_addr, image, (unsigned long long)rt->load_base);
    return 0;
}

const struct py_heap_layout *py_runtime_heap_layout(const struct py_runtime *rt)
{
    if (rt->layout.llp64)
        return &rt->heap_windows;
    return py_heap_layout_table(rt->minor, rt->layout.free_threaded);
}

int py_interp_head(struct py_runtime *rt, uint64_t *interp)
{
    return rd_read_u64(rt->rd, rt->runtime_addr + rt->layout.rt_interpreters_head, interp);
}

int py_gil_holder(struct py_runtime *rt, uint64_t interp, uint64_t *tstate, bool *enabled)
{
    const struct py_layout *L = &rt->layout;
    uint64_t gil;
    uint32_t locked = 0;
    int err;
    *tstate = 0;
    *enabled = true;
    if (L->is_ceval_gil) {
        err = rd_read_u64(rt->rd, interp + L->is_ceval_gil, &gil);
        if (err)
            return err;
        if (!gil)
            return 0;
        if (L->free_threaded) { /* no GIL unless enabled at run time (PYTHON_GIL=1, a module) */
            int32_t on = 0;
            err = rd_read(rt->rd, gil + L->gil_enabled, &on, sizeof(on));
            if (err)
                return err;
            *enabled = on != 0;
            if (!on)
                return 0;
        }
        err = rd_read_u32(rt->rd, gil + L->gil_locked, &locked);
        if (!err && locked)
            err = rd_read_u64(rt->rd, gil + L->gil_last_holder, tstate);
        return err;
    }
    err = rd_read_u32(rt->rd, rt->runtime_addr + L->rt_gil_locked, &locked);
    if (!err && locked)
        err = rd_read_u64(rt->rd, rt->runtime_addr + L->rt_gil_last_holder, tstate);
    return err;
}
