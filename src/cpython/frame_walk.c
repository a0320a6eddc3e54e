/* The frame walker (frame_walk.h). A live target may be caught mid-push and a core may be
 * damaged: every read can fail, the chain is bounded, and a loop in it is found without memory
 * of the addresses seen (Brent's cycle finding: one saved address), then cut exactly where the
 * first frame comes round again. */
#include "frame_walk.h"

#include <string.h>

/* The len bytes at addr inside the copy made beforehand, or NULL. */
static const uint8_t *in_copy(const struct py_mem *m, uint64_t addr, size_t len)
{
    if (m->copy && addr >= m->copy_base && addr - m->copy_base <= m->copy_len &&
        len <= m->copy_len - (addr - m->copy_base))
        return m->copy + (addr - m->copy_base);
    return NULL;
}

bool py_mem_read(const struct py_mem *m, uint64_t addr, void *buf, size_t len)
{
    const uint8_t *p = in_copy(m, addr, len);
    if (p) {
        memcpy(buf, p, len);
        return true;
    }
    return m->read(m->ctx, addr, buf, len);
}

static void widen(size_t *lo, size_t *hi, uint64_t off, size_t len)
{
    if (off < *lo)
        *lo = off;
    if (off + len > *hi)
        *hi = off + len;
}

int py_fw_init(struct py_fw *fw, const struct py_layout *L, const struct py_heap_layout *H,
               uint64_t code_type)
{
    memset(fw, 0, sizeof(*fw));
    fw->L = L;
    fw->code_type = code_type;

    size_t lo = 0, hi = 0;
    widen(&lo, &hi, L->fr_previous, 8);
    widen(&lo, &hi, L->fr_code, 8);
    widen(&lo, &hi, L->fr_instr, 8);
    widen(&lo, &hi, L->fr_owner, 1);
    if (L->fr_is_entry)
        widen(&lo, &hi, L->fr_is_entry, 1);
    fw->frame_bytes = hi;

    uint64_t cf = L->ts_cframe ? L->ts_cframe : L->ts_current_frame;
    lo = cf;
    hi = cf + 8;
    widen(&lo, &hi, L->ts_native_thread_id, 8);
    if (L->ts_datastack_chunk)
        widen(&lo, &hi, L->ts_datastack_chunk, 16); /* datastack_chunk, datastack_top */
    fw->tstate_lo = lo;
    fw->tstate_hi = hi;

    if (H && H->co_nlocalsplus + 4 <= L->co_size && H->co_stacksize + 4 <= L->co_size) {
        fw->co_nlocalsplus = H->co_nlocalsplus;
        fw->co_stacksize = H->co_stacksize;
    }
    if (H && H->fr_stacktop + 8 <= L->fr_localsplus) {
        fw->fr_stacktop = H->fr_stacktop;
        fw->fr_stackpointer = H->fr_stackpointer;
    }
    if (fw->frame_bytes > PY_FW_MAX_FRAME_BYTES || hi - lo > PY_FW_MAX_TSTATE_SPAN ||
        L->co_firsttraceable + 4 > L->co_size || L->co_nunits + 8 > L->co_size ||
        L->ob_type + 8 > L->co_size)
        return -1;
    return 0;
}

bool py_fw_thread(const struct py_fw *fw, const struct py_mem *m, uint64_t tstate,
                  struct py_fw_thread *out)
{
    const struct py_layout *L = fw->L;
    uint8_t buf[PY_FW_MAX_TSTATE_SPAN];
    size_t lo = fw->tstate_lo;
    if (!py_mem_read(m, tstate + lo, buf, fw->tstate_hi - lo))
        return false;
    out->native_id = py_u64_at(buf + (L->ts_native_thread_id - lo));
    if (L->llp64)
        out->native_id &= 0xffffffffu;
    out->chunk = out->top = 0;
    if (L->ts_datastack_chunk) {
        out->chunk = py_u64_at(buf + (L->ts_datastack_chunk - lo));
        out->top = py_u64_at(buf + (L->ts_datastack_chunk + 8 - lo));
    }
    if (!L->ts_cframe) {
        out->frame = py_u64_at(buf + (L->ts_current_frame - lo));
        return true;
    }
    /* 3.11, 3.12: tstate->cframe->current_frame; no cframe, no frame */
    uint64_t cframe = py_u64_at(buf + (L->ts_cframe - lo));
    out->frame = 0;
    return !cframe || py_mem_read(m, cframe + L->cframe_current_frame, &out->frame, 8);
}

uint64_t py_fw_object(const struct py_layout *L, uint64_t ref)
{
    if (L->fr_code_tagged) {
        if ((ref & 3) == 3)
            return 0; /* a tagged int */
        ref &= ~(uint64_t)3;
    }
    return ref;
}

/* The first kept frame that was kept before (a chain that loops), cut from there. */
static size_t cut_repeat(const struct py_fw_frame *out, size_t n)
{
    for (size_t j = 1; j < n; j++)
        for (size_t i = 0; i < j; i++)
            if (out[i].addr == out[j].addr)
                return j;
    return n;
}

size_t py_fw_walk(const struct py_fw *fw, const struct py_mem *m, uint64_t frame,
                  struct py_fw_frame *out, size_t max, size_t max_steps, unsigned *flags)
{
    const struct py_layout *L = fw->L;
    uint8_t one[PY_FW_MAX_FRAME_BYTES];
    uint64_t saved = 0; /* Brent: the frame the walk compares with, moved at powers of two */
    size_t power = 1, since = 0, n = 0;
    unsigned group = 0;
    *flags = 0;
    for (size_t steps = 0; frame; steps++) {
        if (steps >= max_steps || n >= max) {
            *flags |= PY_FW_LIMIT;
            break;
        }
        if (frame == saved) {
            *flags |= PY_FW_CYCLE;
            n = cut_repeat(out, n);
            break;
        }
        if (++since == power) {
            saved = frame;
            power *= 2;
            since = 0;
        }
        const uint8_t *fr = in_copy(m, frame, fw->frame_bytes); /* no copy of the copy */
        if (!fr && m->read(m->ctx, frame, one, fw->frame_bytes))
            fr = one;
        if (!fr) {
            *flags |= PY_FW_FAULT;
            break;
        }
        uint64_t here = frame;
        uint64_t code = py_fw_object(L, py_u64_at(fr + L->fr_code));
        int owner = fr[L->fr_owner];
        /* Each C call of the eval loop starts with an entry frame: 3.11 flags it (is_entry),
         * later versions put a shim frame (owned by the C stack) under it. */
        bool entry = (L->fr_is_entry && fr[L->fr_is_entry]) || owner == L->owner_cstack;
        frame = py_u64_at(fr + L->fr_previous);
        if (code && owner != L->owner_cstack && owner != L->owner_interpreter) {
            out[n].addr = here;
            out[n].code = code;
            out[n].instr = py_u64_at(fr + L->fr_instr);
            out[n].owner = (uint8_t)owner;
            out[n].group = (uint8_t)(group < 255 ? group : 255);
            n++;
        }
        if (entry)
            group++;
    }
    return n;
}

int64_t py_fw_lasti(const struct py_fw *fw, uint64_t code, uint64_t instr)
{
    return ((int64_t)instr - (int64_t)(code + fw->L->co_code_adaptive)) / 2;
}

void py_fw_code_facts(const struct py_fw *fw, const uint8_t *header, struct py_fw_code *out)
{
    const struct py_layout *L = fw->L;
    out->is_code = py_u64_at(header + L->ob_type) == fw->code_type;
    out->firsttraceable = py_i32_at(header + L->co_firsttraceable);
    out->nunits = py_u64_at(header + L->co_nunits);
}

bool py_fw_shown(const struct py_fw *fw, const struct py_fw_frame *f, const struct py_fw_code *c,
                 int64_t lasti)
{
    if (!c->is_code)
        return false;
    if (f->owner != fw->L->owner_generator && lasti < c->firsttraceable)
        return false; /* not started: CPython hides it too */
    return lasti < (int64_t)c->nunits;
}

bool py_fw_frame_above(const struct py_fw *fw, const struct py_fw_frame *f, const uint8_t *header,
                       uint64_t chunk, uint64_t top)
{
    if (!fw->co_nlocalsplus || !chunk || f->addr <= chunk || f->addr >= top)
        return false;
    int32_t nlocalsplus = py_i32_at(header + fw->co_nlocalsplus);
    int32_t stacksize = py_i32_at(header + fw->co_stacksize);
    if (nlocalsplus < 0 || stacksize < 0)
        return false;
    /* _PyFrame_PushUnchecked: a frame takes localsplus + co_framesize slots of the data stack */
    uint64_t end =
        f->addr + fw->L->fr_localsplus + 8 * ((uint64_t)nlocalsplus + (uint64_t)stacksize);
    return top > end;
}

int64_t py_fw_stack_used(const struct py_fw *fw, uint64_t frame_addr, const uint8_t *fr,
                         uint64_t nlocalsplus, int32_t stacksize)
{
    if (!fw->fr_stacktop || stacksize < 0)
        return -1;
    int64_t top;
    if (fw->fr_stackpointer)
        top = ((int64_t)py_u64_at(fr + fw->fr_stacktop) -
               (int64_t)(frame_addr + fw->L->fr_localsplus)) /
              8;
    else
        top = py_i32_at(fr + fw->fr_stacktop);
    if (top < 0 || (uint64_t)top > nlocalsplus + (uint64_t)stacksize)
        return -1;
    return top;
}
