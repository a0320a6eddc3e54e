/* py_runtime_open: the runtime image's symbols read from its ELF file (libelf), for scry's
 * commands, which read another process or a core. The agent, inside the interpreter, uses
 * runtime_self.c instead and links no libelf. */
#include "runtime.h"

#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "reader/elf_image.h"

struct elf_syms {
    struct py_runtime *rt;
    struct elf_image *img;
    uint64_t first_vaddr;
};

static bool elf_value(struct elf_syms *es, const char *name, uint64_t *value)
{
    uint64_t size;
    if (elf_symbol(es->img, name, value, &size))
        return true;
    /* A stripped static interpreter may still have the section the runtime lives in. */
    return strcmp(name, "_PyRuntime") == 0 && elf_section(es->img, ".PyRuntime", value, &size);
}

static uint64_t elf_addr(void *ctx, const char *name)
{
    struct elf_syms *es = ctx;
    uint64_t value;
    if (!elf_value(es, name, &value) || value < es->first_vaddr)
        return 0;
    return es->rt->load_base + (value - es->first_vaddr);
}

static bool elf_file_version(void *ctx, uint32_t *out)
{
    struct elf_syms *es = ctx;
    uint64_t value, size;
    uint8_t b[4];
    if (!elf_symbol(es->img, "Py_Version", &value, &size) ||
        elf_read_vaddr(es->img, value, b, 4) != 0)
        return false;
    *out = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return true;
}

int py_runtime_open(struct rd_reader *rd, struct py_runtime *rt)
{
    char host[4096], who[512];
    if (rd_kind(rd) == RD_MINIDUMP)
        return py_runtime_open_pe(rd, rt);
    int err = py_runtime_locate(rd, rt);
    if (err)
        return err;
    struct elf_syms es = {.rt = rt};
    rd_host_path(rd, rt->image_path, host, sizeof(host));
    err = elf_open(host, &es.img);
    if (err) {
        char why[512]; /* a copy: err_fail_hint writes over the last message */
        snprintf(why, sizeof(why), "%s", err_last_message());
        return err_fail_hint(SCRY_E_NOT_PYTHON,
                             rd_kind(rd) == RD_CORE
                                 ? "pass the Python executable that made the core with --exe PATH"
                                 : NULL,
                             "%s: cannot read %s to find the Python runtime: %s",
                             py_target_name(rd, who, sizeof(who)), host, why);
    }
    es.first_vaddr = elf_first_load_vaddr(es.img);
    uint64_t value;
    if (elf_value(&es, "_PyRuntime", &value) && value < es.first_vaddr) {
        err = err_fail(SCRY_E_NOT_PYTHON, "%s: _PyRuntime lies outside %s",
                       py_target_name(rd, who, sizeof(who)), rt->image_path);
    } else {
        struct py_image_syms syms = {&es, elf_addr, elf_file_version};
        err = py_runtime_from_image(rt, &syms);
    }
    elf_close(es.img);
    return err;
}
