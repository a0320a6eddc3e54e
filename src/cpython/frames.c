/* Frame walking and code-object resolution. Every frame is validated before use: its code must be
 * a code object (ob_type == PyCode_Type) and the chain is bounded and checked for loops, because
 * a live target may be caught mid-push and a core may be damaged. */
#include "frames.h"

#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "cpython/linetable.h"
#include "cpython/objects.h"

#define MAX_NAME_CHARS 4096
#define MAX_LINETABLE_BYTES (1u << 20)

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static int32_t rd32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

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
    if (L->co_size > sizeof(hdr) || L->co_firsttraceable + 4 > L->co_size)
        return err_fail(SCRY_E_INTERNAL, "code object layout out of range");
    int err = rd_read(rt->rd, code, hdr, L->co_size);
    if (err)
        return err;
    if (rd64(hdr + L->ob_type) != rt->types.code)
        return err_fail(SCRY_E_READ_FAILED, "0x%llx is not a code object",
                        (unsigned long long)code);

    struct py_code_info *ci = arena_alloc(&cc->arena, sizeof(*ci));
    if (!ci)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory resolving code objects");
    ci->addr = code;
    ci->firstlineno = rd32(hdr + L->co_firstlineno);
    ci->nunits = rd64(hdr + L->co_nunits);
    ci->filename_obj = rd64(hdr + L->co_filename);
    ci->qualname_obj = rd64(hdr + L->co_qualname);
    ci->filename = read_name(rt, &cc->arena, ci->filename_obj);
    ci->qualname = read_name(rt, &cc->arena, rd64(hdr + L->co_qualname));
    if (!ci->qualname)
        ci->qualname = read_name(rt, &cc->arena, rd64(hdr + L->co_name));
    if (!ci->filename)
        ci->filename = "<unknown>";
    if (!ci->qualname)
        ci->qualname = "<unknown>";

    uint64_t table = rd64(hdr + L->co_linetable);
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

/* The frame a thread is executing, or 0. */
static int current_frame(struct py_runtime *rt, uint64_t tstate, uint64_t *frame)
{
    const struct py_layout *L = &rt->layout;
    if (L->ts_cframe) {
        uint64_t cframe;
        int err = rd_read_u64(rt->rd, tstate + L->ts_cframe, &cframe);
        if (err || !cframe) {
            *frame = 0;
            return err;
        }
        return rd_read_u64(rt->rd, cframe + L->cframe_current_frame, frame);
    }
    return rd_read_u64(rt->rd, tstate + L->ts_current_frame, frame);
}

int py_thread_stack(struct py_runtime *rt, struct py_code_cache *cc, uint64_t tstate,
                    struct py_frame *frames, size_t max, size_t *count, bool *truncated)
{
    const struct py_layout *L = &rt->layout;
    struct hashmap seen = HASHMAP_INIT;
    uint64_t frame;
    size_t n = 0;
    *count = 0;
    *truncated = false;
    int err = current_frame(rt, tstate, &frame);
    if (err)
        return err;

    uint8_t fr[128];
    size_t frsize = L->fr_owner + 1;
    if (L->fr_instr + 8 > frsize)
        frsize = L->fr_instr + 8;
    if (L->fr_previous + 8 > frsize)
        frsize = L->fr_previous + 8;
    if (frsize > sizeof(fr))
        return err_fail(SCRY_E_INTERNAL, "frame layout out of range");

    for (size_t depth = 0; frame; depth++) {
        if (depth >= PY_MAX_STACK_DEPTH || hm_has(&seen, frame) || n >= max) {
            *truncated = true;
            break;
        }
        if (hm_put(&seen, frame, 1)) {
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory walking frames");
            goto out;
        }
        err = rd_read(rt->rd, frame, fr, frsize);
        if (err)
            goto out;
        uint64_t addr = frame;
        uint64_t code = rd64(fr + L->fr_code);
        int owner = fr[L->fr_owner];
        frame = rd64(fr + L->fr_previous);
        if (L->fr_code_tagged)
            code &= ~(uint64_t)3;
        if (!code || owner == L->owner_cstack || owner == L->owner_interpreter)
            continue;

        const struct py_code_info *ci;
        if (py_code_resolve(rt, cc, code, &ci) != 0) {
            log_debug("frame 0x%llx: %s", (unsigned long long)addr, err_last_message());
            continue;
        }
        uint64_t instr = rd64(fr + L->fr_instr);
        int64_t lasti = ((int64_t)instr - (int64_t)(code + L->co_code_adaptive)) / 2;
        int32_t firsttraceable = 0;
        if (rd_read(rt->rd, code + L->co_firsttraceable, &firsttraceable, 4) == 0 &&
            owner != L->owner_generator && lasti < firsttraceable)
            continue; /* not started yet: CPython hides these frames too */
        frames[n].addr = addr;
        frames[n].code = ci;
        frames[n].lasti = lasti;
        frames[n].line = ci->linetable
                             ? py_linetable_line(ci->linetable, ci->linetable_len,
                                                 ci->firstlineno, lasti)
                             : -1;
        n++;
    }
    err = 0;
out:
    *count = n;
    hm_free(&seen);
    return err;
}
