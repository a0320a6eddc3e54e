/* py_runtime_open_self: the runtime of the interpreter this code runs in (the agent), with the
 * image's symbols taken from its dynamic symbol table as loaded (reader/self_symbols.c): a
 * libpython exports them, and so does a static interpreter (Python links its executable with
 * -export-dynamic: Debian's /usr/bin/python3.11, sid's 3.14 and 3.15). No libelf, no file read. */
#include "runtime.h"

#include "reader/self_symbols.h"

static uint64_t self_addr(void *ctx, const char *name)
{
    const struct py_runtime *rt = ctx;
    void *found = NULL;
    /* The image's first mapping (file offset 0) starts at its load base. */
    struct self_sym_query q = {.contains = rt->load_base, .names = &name, .found = &found, .n = 1};
    self_symbols_find(&q);
    return (uint64_t)(uintptr_t)found;
}

int py_runtime_open_self(struct rd_reader *rd, struct py_runtime *rt)
{
    int err = py_runtime_locate(rd, rt);
    if (err)
        return err;
    struct py_image_syms syms = {rt, self_addr, NULL};
    return py_runtime_from_image(rt, &syms);
}
