/* py_runtime_open for a Windows target (a minidump): the runtime image is python3XY.dll, and its
 * symbols are its PE exports, read from the target's memory through the reader (the image is
 * mapped whole in a full-memory dump), so no file of the target's machine is needed. Portable:
 * it reads the PE headers by hand, from Microsoft's documentation of the format.
 * Only 3.13 is read: its _PyRuntime carries _Py_DebugOffsets, and the numbers the block does not
 * give come from the Linux tables with the Windows differences (py_heap_layout_windows), all
 * checked against the official 3.13.5's headers by tests/e2e/test_windows_minidump.py
 * (tests/tools/layout_offsets.c built with mingw-w64 and run under Wine). 3.11 and 3.12 would
 * need tables made for the Windows ABI (LLP64), 3.14+ a check against their Windows headers:
 * they are refused. */
#include "runtime.h"

#include <stdio.h>
#include <string.h>

#include "common/error.h"

struct pe_syms {
    struct rd_reader *rd;
    uint64_t base;
    uint32_t nnames, names, ordinals, functions, nfunctions;
    uint32_t exp_rva, exp_size;
};

static const char *win_base_name(const char *path)
{
    const char *s = path;
    for (const char *p = path; *p; p++)
        if (*p == '\\' || *p == '/')
            s = p + 1;
    return s;
}

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* "python313.dll" -> 13; "python313t.dll": threaded; "python313_d.dll": debug. -1: not one
 * (python3.dll, the stable ABI's forwarder, included). */
static int pe_python_minor(const char *path, bool *threaded, bool *debug)
{
    const char *b = win_base_name(path);
    static const char pre[] = "python3";
    *threaded = *debug = false;
    for (size_t i = 0; i < sizeof(pre) - 1; i++)
        if (lower(b[i]) != pre[i])
            return -1;
    b += sizeof(pre) - 1;
    int minor = 0, digits = 0;
    while (*b >= '0' && *b <= '9' && digits < 3) {
        minor = minor * 10 + (*b++ - '0');
        digits++;
    }
    if (!digits)
        return -1;
    if (lower(*b) == 't') {
        *threaded = true;
        b++;
    }
    if (b[0] == '_' && lower(b[1]) == 'd') {
        *debug = true;
        b += 2;
    }
    if (lower(b[0]) != '.' || lower(b[1]) != 'd' || lower(b[2]) != 'l' || lower(b[3]) != 'l' ||
        b[4])
        return -1;
    return minor;
}

/* Compares the NUL-terminated export name at rva with name (like strcmp). */
static int pe_name_cmp(struct pe_syms *ps, uint32_t rva, const char *name)
{
    char buf[128];
    size_t want = strlen(name) + 1;
    if (want > sizeof(buf))
        return 1;
    /* The name may end near the end of the image: read what can be read. */
    if (rd_read(ps->rd, ps->base + rva, buf, want) != 0) {
        err_clear();
        return 1;
    }
    return strncmp(buf, name, want);
}

static uint64_t pe_addr(void *ctx, const char *name)
{
    struct pe_syms *ps = ctx;
    size_t lo = 0, hi = ps->nnames;
    while (lo < hi) { /* the export names are sorted (ASCII order) */
        size_t mid = lo + (hi - lo) / 2;
        uint32_t rva;
        if (rd_read_u32(ps->rd, ps->base + ps->names + 4 * (uint64_t)mid, &rva) != 0)
            break;
        int c = pe_name_cmp(ps, rva, name);
        if (c == 0) {
            uint16_t ord;
            uint32_t fn;
            if (rd_read(ps->rd, ps->base + ps->ordinals + 2 * (uint64_t)mid, &ord, 2) != 0 ||
                ord >= ps->nfunctions ||
                rd_read_u32(ps->rd, ps->base + ps->functions + 4 * (uint64_t)ord, &fn) != 0)
                break;
            if (fn >= ps->exp_rva && fn - ps->exp_rva < ps->exp_size)
                return 0; /* forwarded to another DLL */
            return fn ? ps->base + fn : 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    err_clear();
    return 0;
}

/* Reads the export directory of the image at base. */
static int pe_open_exports(struct rd_reader *rd, uint64_t base, const char *who,
                           const char *image, struct pe_syms *ps)
{
    uint8_t dos[64], nt[24 + 112 + 8];
    memset(ps, 0, sizeof(*ps));
    ps->rd = rd;
    ps->base = base;
    if (rd_read(rd, base, dos, sizeof(dos)) != 0 || dos[0] != 'M' || dos[1] != 'Z')
        return err_fail(SCRY_E_NOT_PYTHON, "%s: %s at 0x%llx has no readable PE image", who,
                        image, (unsigned long long)base);
    uint32_t lfanew;
    memcpy(&lfanew, dos + 0x3c, 4);
    if (lfanew > (1u << 20) || rd_read(rd, base + lfanew, nt, sizeof(nt)) != 0 ||
        memcmp(nt, "PE\0\0", 4) != 0)
        return err_fail(SCRY_E_NOT_PYTHON, "%s: %s has no readable PE header", who, image);
    uint16_t magic;
    memcpy(&magic, nt + 24, 2);
    if (magic != 0x20b)
        return err_fail_hint(SCRY_E_UNSUPPORTED_PYTHON,
                             "scry reads 64-bit (x64) Windows Pythons only",
                             "%s: %s is not a 64-bit (PE32+) image", who, image);
    memcpy(&ps->exp_rva, nt + 24 + 112, 4);
    memcpy(&ps->exp_size, nt + 24 + 112 + 4, 4);
    uint8_t ed[40];
    if (!ps->exp_rva || rd_read(rd, base + ps->exp_rva, ed, sizeof(ed)) != 0)
        return err_fail(SCRY_E_NOT_PYTHON, "%s: cannot read the export table of %s", who, image);
    memcpy(&ps->nfunctions, ed + 20, 4);
    memcpy(&ps->nnames, ed + 24, 4);
    memcpy(&ps->functions, ed + 28, 4);
    memcpy(&ps->names, ed + 32, 4);
    memcpy(&ps->ordinals, ed + 36, 4);
    if (ps->nnames > (1u << 20) || ps->nfunctions > (1u << 20))
        return err_fail(SCRY_E_NOT_PYTHON, "%s: the export table of %s is implausible", who,
                        image);
    return 0;
}

int py_runtime_open_pe(struct rd_reader *rd, struct py_runtime *rt)
{
    char who[512];
    memset(rt, 0, sizeof(*rt));
    rt->rd = rd;
    py_target_name(rd, who, sizeof(who));

    size_t n;
    const struct rd_mapping *m = rd_mappings(rd, &n);
    const struct rd_mapping *img = NULL;
    int minor = -1;
    bool threaded = false, debug = false;
    for (size_t i = 0; i < n && !img; i++) {
        if (m[i].offset != 0 || !m[i].path[0])
            continue;
        minor = pe_python_minor(m[i].path, &threaded, &debug);
        if (minor >= 0)
            img = &m[i];
    }
    if (!img)
        return err_fail(SCRY_E_NOT_PYTHON, "%s is not a Python process: no python3XY.dll is loaded",
                        who);
    snprintf(rt->image_path, sizeof(rt->image_path), "%s", img->path);
    rt->load_base = img->start;
    if (debug)
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                        "%s runs Python 3.%d in a debug build (%s), which scry does not support",
                        who, minor, win_base_name(img->path));
    if (minor != 13 || threaded)
        return err_fail_hint(SCRY_E_UNSUPPORTED_PYTHON,
                             "on Windows scry reads the regular (not free-threaded) build of "
                             "CPython 3.13 only: 3.11 and 3.12 carry no _Py_DebugOffsets and "
                             "would need layout tables made for the Windows ABI, and 3.14+ "
                             "have not been checked against their Windows headers yet",
                             "%s runs Python 3.%d%s on Windows, which scry does not support", who,
                             minor, threaded ? " (free-threaded)" : "");

    struct pe_syms ps;
    int err = pe_open_exports(rd, img->start, who, img->path, &ps);
    if (err)
        return err;
    uint64_t runtime = pe_addr(&ps, "_PyRuntime");
    uint8_t cookie[8];
    if (!runtime || rd_read(rd, runtime, cookie, 8) != 0 || memcmp(cookie, "xdebugpy", 8) != 0) {
        err_clear();
        return err_fail_hint(SCRY_E_UNSUPPORTED_PYTHON,
                             "on Windows scry reads CPython 3.13, through the _Py_DebugOffsets "
                             "at the start of _PyRuntime",
                             "%s: %s exports no _PyRuntime carrying _Py_DebugOffsets", who,
                             win_base_name(img->path));
    }
    struct py_image_syms syms = {&ps, pe_addr, NULL};
    err = py_runtime_from_image(rt, &syms);
    if (err)
        return err;
    rt->layout.llp64 = true; /* LLP64: unsigned long is 4 bytes */
    if (!py_heap_layout_windows(rt->minor, &rt->heap_windows))
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                        "%s runs Python %s on Windows, whose layout scry does not know", who,
                        rt->version_str);
    return 0;
}
