/* The interpreter and thread-state lists walked once for every caller (cpython/thread_list.h). */
#include "cpython/thread_list.h"

/* Brent's cycle detection: a mark that moves to the current node at every power of two steps;
 * a list that loops comes back to the mark within twice its length. */
struct brent {
    uint64_t mark;
    size_t power, lam;
};

static void brent_init(struct brent *b, uint64_t first)
{
    *b = (struct brent){first, 1, 1};
}

static bool brent_loops(struct brent *b, uint64_t next)
{
    if (next == b->mark)
        return true;
    if (b->power == b->lam) {
        b->mark = next;
        b->power *= 2;
        b->lam = 0;
    }
    b->lam++;
    return false;
}

static bool read_u64(const struct py_tl *w, uint64_t addr, uint64_t *out)
{
    return py_mem_read(w->mem, addr, out, 8);
}

/* One interpreter's thread states. */
static enum py_tl_end walk_threads(struct py_tl *w, uint64_t interp, uint64_t tstate)
{
    const struct py_layout *L = w->L;
    struct brent b;
    brent_init(&b, tstate);
    for (size_t nt = 0; tstate; nt++) {
        w->tstate = tstate;
        if (nt >= w->max_threads)
            return PY_TL_THREAD_LONG;
        uint64_t owner = 0, next = 0;
        if (w->check_owner) {
            if (!read_u64(w, tstate + L->ts_interp, &owner))
                return PY_TL_READ_FAILED;
            if (owner != interp)
                return PY_TL_FOREIGN;
        }
        if (w->on_thread(w->ctx, interp, tstate))
            return PY_TL_STOPPED;
        if (!read_u64(w, tstate + L->ts_next, &next))
            return PY_TL_READ_FAILED;
        if (next && brent_loops(&b, next)) {
            w->tstate = next;
            return PY_TL_THREAD_LOOP;
        }
        tstate = next;
    }
    return PY_TL_COMPLETE;
}

enum py_tl_end py_tl_walk(struct py_tl *w, uint64_t first)
{
    const struct py_layout *L = w->L;
    uint64_t interp = first;
    enum py_tl_end first_end = PY_TL_COMPLETE;
    struct brent b;
    brent_init(&b, interp);
    w->interp = w->tstate = 0;
    for (size_t ni = 0; interp; ni++) {
        w->interp = interp;
        w->tstate = 0;
        if (ni >= w->max_interps)
            return PY_TL_INTERP_LONG;
        uint64_t tstate = 0, next = 0;
        if ((w->on_thread && !read_u64(w, interp + L->is_threads_head, &tstate)) ||
            !read_u64(w, interp + L->is_next, &next))
            return PY_TL_READ_FAILED;
        if (w->on_interp && w->on_interp(w->ctx, interp))
            return PY_TL_STOPPED;
        enum py_tl_end end = walk_threads(w, interp, tstate);
        if (end != PY_TL_COMPLETE && (!w->go_on || end == PY_TL_STOPPED))
            return end;
        if (end != PY_TL_COMPLETE &&
            (first_end == PY_TL_COMPLETE || first_end == PY_TL_THREAD_LONG))
            first_end = end;
        if (next && brent_loops(&b, next)) {
            w->interp = next;
            w->tstate = 0;
            return PY_TL_INTERP_LOOP;
        }
        interp = next;
    }
    return first_end;
}
