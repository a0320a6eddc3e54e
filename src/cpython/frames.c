/* Frame walking and code-object resolution. Every frame is validated before use: its code must be
 * a code object (ob_type == PyCode_Type) and the chain is bounded and checked for loops, because
 * a live target may be caught mid-push and a core may be damaged. */
#include "frames.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "cpython/frame_walk.h"
#include "cpython/linetable.h"
#include "cpython/objects.h"

#define MAX_NAME_CHARS 4096
#define MAX_LINETABLE_BYTES (1u << 20)

void py_code_cache_init(struct py_code_cache *cc)
{
    memset(cc, 0, sizeof(*cc));
}

void py_code_cache_free(struct py_code_cache *cc)
{
    hm_free(&cc->by_addr);
    arena_free(&cc->arena);
}

static const char *read_name(struct py_runtime *rt, struct arena *a, uint64_t obj)
{
    struct strbuf sb = STRBUF_INIT;
    const char *r = NULL;
    if (obj && py_read_str(rt, obj, MAX_NAME_CHARS, &sb) == 0)
        r = arena_strndup(a, sb_str(&sb), sb.len);
    sb_release(&sb);
    return r;
}

bool py_reader_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    struct py_reader_mem *r = ctx;
    int err = rd_read(r->rd, addr, buf, len);
    if (err && !r->err)
        r->err = err;
    return err == 0;
}

int py_runtime_fw(const struct py_runtime *rt, struct py_fw *fw)
{
    if (py_fw_init(fw, &rt->layout, py_runtime_heap_layout(rt),
                   rt->types.code) != 0)
        return err_fail(SCRY_E_INTERNAL, "frame layout out of range");
    return 0;
}

int py_code_resolve(struct py_runtime *rt, struct py_code_cache *cc, uint64_t code,
                    const struct py_code_info **out)
{
    const struct py_layout *L = &rt->layout;
    uint64_t cached;
    if (hm_get(&cc->by_addr, code, &cached)) {
        *out = (const struct py_code_info *)(uintptr_t)cached;
        return 0;
    }
    uint8_t hdr[256];
    struct py_fw fw;
    struct py_fw_code facts;
    int err = py_runtime_fw(rt, &fw);
    if (err)
        return err;
    if (L->co_size > sizeof(hdr))
        return err_fail(SCRY_E_INTERNAL, "code object layout out of range");
    err = rd_read(rt->rd, code, hdr, L->co_size);
    if (err)
        return err;
    py_fw_code_facts(&fw, hdr, &facts);
    if (!facts.is_code)
        return err_fail(SCRY_E_READ_FAILED, "0x%llx is not a code object",
                        (unsigned long long)code);

    struct py_code_info *ci = arena_alloc(&cc->arena, sizeof(*ci));
    if (!ci)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory resolving code objects");
    ci->addr = code;
    ci->firstlineno = py_i32_at(hdr + L->co_firstlineno);
    ci->nunits = facts.nunits;
    ci->firsttraceable = facts.firsttraceable;
    ci->filename_obj = py_u64_at(hdr + L->co_filename);
    ci->qualname_obj = py_u64_at(hdr + L->co_qualname);
    ci->filename = read_name(rt, &cc->arena, ci->filename_obj);
    ci->qualname = read_name(rt, &cc->arena, py_u64_at(hdr + L->co_qualname));
    if (!ci->qualname)
        ci->qualname = read_name(rt, &cc->arena, py_u64_at(hdr + L->co_name));
    if (!ci->filename)
        ci->filename = "<unknown>";
    if (!ci->qualname)
        ci->qualname = "<unknown>";

    uint64_t table = py_u64_at(hdr + L->co_linetable);
    int64_t tlen;
    if (table && rd_read_u64(rt->rd, table + L->bytes_size, (uint64_t *)&tlen) == 0 &&
        tlen > 0 && tlen <= MAX_LINETABLE_BYTES) {
        uint8_t *buf = arena_alloc(&cc->arena, (size_t)tlen);
        if (buf && rd_read(rt->rd, table + L->bytes_sval, buf, (size_t)tlen) == 0) {
            ci->linetable = buf;
            ci->linetable_len = (size_t)tlen;
        }
    }
    err = hm_put(&cc->by_addr, code, (uint64_t)(uintptr_t)ci);
    if (err)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory resolving code objects");
    *out = ci;
    return 0;
}

void py_code_forget(struct py_code_cache *cc, uint64_t code)
{
    hm_del(&cc->by_addr, code);
}

/* The walk over mem; *rerr (NULL: none) holds the reader's own error for a failed read. */
static int stack_walk(struct py_runtime *rt, struct py_code_cache *cc, const struct py_mem *mem,
                      const int *rerr, uint64_t tstate, struct py_frame *frames, size_t max,
                      size_t *count, bool *truncated)
{
    struct py_fw fw;
    struct py_fw_thread th;
    *count = 0;
    *truncated = false;
    int err = py_runtime_fw(rt, &fw);
    if (err)
        return err;
    if (!py_fw_thread(&fw, mem, tstate, &th))
        return rerr && *rerr ? *rerr
                             : err_fail(SCRY_E_READ_FAILED, "cannot read a thread state");
    if (max > PY_MAX_STACK_DEPTH)
        max = PY_MAX_STACK_DEPTH;
    struct py_fw_frame *raw = malloc((max ? max : 1) * sizeof(*raw));
    if (!raw)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory walking frames");
    unsigned flags;
    size_t nraw = py_fw_walk(&fw, mem, th.frame, raw, max, PY_MAX_STACK_DEPTH, &flags);
    *truncated = (flags & (PY_FW_LIMIT | PY_FW_CYCLE)) != 0;

    size_t n = 0;
    for (size_t i = 0; i < nraw; i++) {
        const struct py_code_info *ci;
        if (py_code_resolve(rt, cc, raw[i].code, &ci) != 0) {
            log_debug("frame 0x%llx: %s", (unsigned long long)raw[i].addr, err_last_message());
            continue;
        }
        int64_t lasti = py_fw_lasti(&fw, raw[i].code, raw[i].instr);
        struct py_fw_code facts = {true, ci->firsttraceable, ci->nunits};
        if (!py_fw_shown(&fw, &raw[i], &facts, lasti))
            continue;
        frames[n].addr = raw[i].addr;
        frames[n].code = ci;
        frames[n].lasti = lasti;
        frames[n].group = raw[i].group;
        frames[n].line = ci->linetable
                             ? py_linetable_frame_line(ci->linetable, ci->linetable_len,
                                                       ci->firstlineno, lasti)
                             : -1;
        n++;
    }
    free(raw);
    *count = n;
    if (flags & PY_FW_FAULT)
        return rerr && *rerr ? *rerr : err_fail(SCRY_E_READ_FAILED, "cannot read a frame");
    return 0;
}

int py_thread_stack(struct py_runtime *rt, struct py_code_cache *cc, uint64_t tstate,
                    struct py_frame *frames, size_t max, size_t *count, bool *truncated)
{
    struct py_reader_mem rm = {rt->rd, 0};
    struct py_mem mem = {.read = py_reader_read, .ctx = &rm};
    return stack_walk(rt, cc, &mem, &rm.err, tstate, frames, max, count, truncated);
}

int py_thread_stack_mem(struct py_runtime *rt, struct py_code_cache *cc, const struct py_mem *mem,
                        uint64_t tstate, struct py_frame *frames, size_t max, size_t *count,
                        bool *truncated)
{
    return stack_walk(rt, cc, mem, NULL, tstate, frames, max, count, truncated);
}
