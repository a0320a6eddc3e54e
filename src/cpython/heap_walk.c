/* The heap walker (heap_walk.h). Seeds are every object on the GC lists of every interpreter
 * (three generations and the permanent one) and the roots (sys.modules and its modules, the sys
 * and builtins dicts, gc.garbage, each thread's frame locals and thread-state objects). From
 * there references are followed the way each type's tp_traverse would, with an explicit work
 * stack (never recursion) and a set of the addresses met (two bits per 8 bytes of the address
 * space touched), so each object is reported exactly once.
 *
 * Every pointer read from the target is checked before it is followed: 8-byte aligned, readable,
 * and its ob_type must be a type whose own type is `type` or a metatype. Memory is read through a
 * block cache (memcache.h): the target is stopped, so its memory is copied in 64 KiB blocks.
 *
 * Labels follow heapspy's notation: `.attr`, `['key']`, `[<str len=9>]`, `[3]`,
 * `.__closure__[0]`, `.cell_contents`, `.locals['x']`. Dict keys are shown by content only when
 * they are interned strings (identifiers: attribute names, module globals, keyword names) or
 * when contents are captured; otherwise a placeholder gives their type and length. Every text
 * taken from the target (names, keys, type and file names, contents) goes through the redaction
 * rule (redact.h) whole, before it is cut: a flagged one is stored as <redacted>.
 *
 * Sizes mirror sys.getsizeof (the type's __sizeof__ plus the GC and managed-dict pre-header).
 * The C containers of the standard library and numpy.ndarray are walked from their layouts
 * (heap_ctypes.h), with the native memory they own; other GC-tracked extension objects get a
 * conservative scan of their C body, whose edges are marked HW_EDGE_INFERRED. Known
 * approximations: other C types that override __sizeof__ are sized as object.__sizeof__ would
 * (tp_basicsize + itemsize * size); 3.11's cached wchar_t copies of str objects are not counted;
 * a code object's co_extra is. */
#include "heap_walk.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "common/log.h"
#include "cpython/heap_walk_int.h"
#include "cpython/thread_list.h"
#include "cpython/threads.h"

static size_t seen_index(const struct seenset *m, uint64_t key)
{
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 40) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int seen_grow(struct seenset *m)
{
    struct seenset n = {NULL, NULL, m->cap ? m->cap * 2 : 1024, m->count, 0, NULL};
    n.keys = calloc(n.cap, sizeof(*n.keys));
    n.pages = calloc(n.cap, sizeof(*n.pages));
    if (!n.keys || !n.pages) {
        free(n.keys);
        free(n.pages);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t j = seen_index(&n, m->keys[i]);
            n.keys[j] = m->keys[i];
            n.pages[j] = m->pages[i];
        }
    free(m->keys);
    free(m->pages);
    n.last_key = m->last_key;
    n.last = m->last;
    *m = n;
    return 0;
}

struct seen_page *hw_seen_page(struct seenset *m, uint64_t addr, bool create)
{
    uint64_t key = (addr >> SEEN_PAGE_SHIFT) + 1;
    if (key == m->last_key)
        return m->last;
    if (m->cap) {
        size_t i = seen_index(m, key);
        if (m->keys[i]) {
            m->last_key = key;
            return m->last = m->pages[i];
        }
    }
    if (!create)
        return NULL;
    if ((m->count + 1) * 2 > m->cap && seen_grow(m))
        return NULL;
    struct seen_page *p = calloc(1, sizeof(*p));
    if (!p) {
        err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
        return NULL;
    }
    size_t i = seen_index(m, key);
    m->keys[i] = key;
    m->pages[i] = p;
    m->count++;
    m->last_key = key;
    return m->last = p;
}

static void seen_set(struct seen_page *p, uint64_t addr, unsigned state)
{
    unsigned slot = (unsigned)(addr >> 3) & (SEEN_SLOTS - 1), shift = (slot & 31) * 2;
    p->bits[slot >> 5] = (p->bits[slot >> 5] & ~(3ULL << shift)) | ((uint64_t)state << shift);
}

static void seen_free(struct seenset *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->pages[i]);
    free(m->keys);
    free(m->pages);
}
static int push_u64(uint64_t **arr, size_t *n, size_t *cap, uint64_t v)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4096;
        uint64_t *na = realloc(*arr, nc * sizeof(*na));
        if (!na)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = v;
    return 0;
}

/* ---- objects, edges, roots ------------------------------------------------------------------- */

/* The first meeting of addr (SEEN_NEW in page p): its tinfo, with its state set to `state`, when
 * it is an object; else NULL, marked as no object. */
static struct tinfo *check_new(struct hw *w, struct seen_page *p, uint64_t addr, unsigned state)
{
    uint64_t tp;
    struct tinfo *ti = NULL;
    if (mc_read_u64(&w->mc, addr + w->L->ob_type, &tp) == 0)
        ti = hw_type(w, tp);
    if (!ti || !ti->valid) {
        w->st->unreadable++;
        seen_set(p, addr, SEEN_NOT_OBJECT);
        return NULL;
    }
    seen_set(p, addr, state);
    return ti;
}

/* The stack holds (address, tinfo | flags) pairs: no lookup when the object is walked. */
static int push(struct hw *w, uint64_t addr, const struct tinfo *ti, uint64_t flags)
{
    if (w->nstack + 2 > w->capstack) {
        size_t nc = w->capstack ? w->capstack * 2 : 8192;
        uint64_t *ns = realloc(w->stack, nc * sizeof(*ns));
        if (!ns)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
        w->stack = ns;
        w->capstack = nc;
    }
    w->stack[w->nstack++] = addr;
    w->stack[w->nstack++] = (uint64_t)(uintptr_t)ti | flags;
    if (w->nstack / 2 > w->st->max_waiting)
        w->st->max_waiting = w->nstack / 2;
    return 0;
}

int hw_add_new(struct hw *w, struct seen_page *p, uint64_t addr, uint64_t flags)
{
    struct tinfo *ti =
        check_new(w, p, addr, (flags & SEEN_TRACKED) ? SEEN_ON_GC_LIST : SEEN_OBJECT);
    if (!ti)
        return 0;
    int err = push(w, addr, ti, flags);
    return err ? err : 1;
}

static int mark_sensitive(struct hw *w, uint64_t addr)
{
    if (hm_put(&w->sensitive, addr, 1))
        return err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
    return 0;
}

/* The flags of an object on the work stack, with what was learnt of it since it was pushed. */
static uint64_t current_flags(const struct hw *w, uint64_t addr, uint64_t v)
{
    if (w->opt->capture_contents && hm_has(&w->sensitive, addr))
        v |= SEEN_SENSITIVE;
    return v;
}

int hw_ref_slow(struct hw *w, const struct holder *h, uint64_t to, enum hw_edge_kind kind,
                const char *label, bool sensitive)
{
    int err;
    if (w->opt->capture_contents && (sensitive || h->sensitive) &&
        (err = mark_sensitive(w, to)) != 0)
        return err;
    if (h->from) {
        w->st->edges++;
        return w->sink->edge(w->sink->ctx, h->from, to, kind, label);
    }
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s%s%s", h->prefix ? h->prefix : "", h->prefix ? " " : "",
             label);
    w->st->roots++;
    return w->sink->root(w->sink->ctx, to, buf);
}

int hw_label_id_slow(struct hw *w, const char *text, uint32_t *id)
{
    int err = w->sink->intern(w->sink->ctx, text, id);
    if (!err) {
        struct label_id *l = &w->label_ids[((uintptr_t)text >> 3) & (LABEL_IDS - 1)];
        l->text = text;
        l->id = *id;
    }
    return err;
}

int hw_root(struct hw *w, uint64_t to, const char *label)
{
    struct holder h = {0, NULL, false};
    return hw_ref(w, &h, to, HW_EDGE_INTERNAL, label, false);
}
/* _PyCodeObjectExtra (private to Objects/codeobject.c, in no header): what code.__sizeof__ adds
 * for co_extra. */
struct code_extra {
    int64_t ce_size;
    uint64_t ce_extras[1];
};

/* A str, bytes or bytearray: a leaf, whose contents are captured after the walk (when
 * sensitivity is known). */
static int walk_bytes_like(struct hw *w, const struct holder *h, uint64_t addr,
                           const struct tinfo *ti, int64_t ob_size, uint64_t seen)
{
    if (ti->heap) {
        int err = hw_walk_instance(w, h, addr, ti, ob_size);
        if (err)
            return err;
    }
    if (w->opt->capture_contents) /* after the walk: sensitivity is known then */
        return push_u64(&w->deferred, &w->ndeferred, &w->capdeferred, addr) ||
                       push_u64(&w->deferred, &w->ndeferred, &w->capdeferred, seen)
                   ? -SCRY_E_NO_MEMORY
                   : 0;
    return hw_emit_leaf(w, addr, seen);
}

/* object.__sizeof__ of the kinds whose size is not basicsize + items * itemsize (that, size, for
 * the others). */
static uint64_t kind_size(struct hw *w, uint64_t addr, const struct tinfo *ti, uint64_t items,
                          uint64_t size)
{
    const struct py_heap_layout *H = w->H;
    switch (ti->kind) {
    case K_INT: {
        uint64_t nd = 0, tag;
        bool negative;
        if (mc_read_u64(&w->mc, addr + H->long_tag, &tag) == 0)
            py_long_shape(w->L, tag, &nd, &negative);
        return w->L->long_digits + sizeof(uint32_t) * (nd ? nd : 1); /* 30-bit digits */
    }
    case K_GEN:
    case K_FRAME: {
        /* Not variable-size objects in 3.12+ (no ob_size): the slots come from the code. */
        uint64_t f = addr + H->gi_iframe, c = 0;
        int32_t nl = 0, ns = 0;
        if (ti->kind == K_FRAME && mc_read_u64(&w->mc, addr + H->frobj_frame, &f))
            f = 0;
        if (f && mc_read_u64(&w->mc, f + w->L->fr_code, &c) == 0 &&
            (c = py_fw_object(w->L, c)) != 0) {
            mc_read(&w->mc, c + H->co_nlocalsplus, &nl, 4);
            mc_read(&w->mc, c + H->co_stacksize, &ns, 4);
        }
        size = (uint64_t)ti->basicsize;
        if (nl >= 0 && ns >= 0 && nl + ns < (1 << 20))
            size += (uint64_t)(nl + ns) * PTR;
        return size;
    }
    case K_LIST: {
        uint64_t alloc;
        if (mc_read_u64(&w->mc, addr + H->list_allocated, &alloc) == 0 && alloc < MAX_ITEMS)
            size = (uint64_t)ti->basicsize + alloc * PTR;
        return size;
    }
    case K_CODE: {
        uint64_t extra;
        size = ((uint64_t)ti->basicsize + items * (uint64_t)ti->itemsize + 7) & ~7ULL;
        if (mc_read_u64(&w->mc, addr + H->co_extra, &extra) == 0 && extra) {
            int64_t ce_size;
            if (mc_read_u64(&w->mc, extra, (uint64_t *)&ce_size) == 0 && ce_size > 0 &&
                ce_size < 4096)
                size += sizeof(struct code_extra) +
                        (uint64_t)(ce_size - 1) * sizeof(((struct code_extra *)0)->ce_extras[0]);
        }
        return size;
    }
    default:
        return size;
    }
}

/* A dict or set: its size depends on the tables read while walking, so it is walked first and
 * reported after. */
static int walk_dict_set(struct hw *w, const struct holder *h, uint64_t addr,
                         const struct tinfo *ti, int64_t ob_size, uint64_t size, uint64_t presize,
                         uint64_t seen, uint64_t refcnt)
{
    int err;
    if (ti->kind == K_DICT)
        err = hw_walk_dict(w, h, addr, ti->basicsize, &size);
    else
        err = hw_walk_set(w, h, addr, &size);
    if (!err && ti->ct) { /* OrderedDict's nodes, defaultdict's factory */
        uint64_t extra = 0;
        err = hw_walk_ctype(w, h, addr, ti, &extra);
        size += extra;
    }
    if (!err && (ti->heap || ti->dictoffset > 0)) /* OrderedDict's od_inst_dict */
        err = hw_walk_instance(w, h, addr, ti, ob_size);
    if (!err)
        err = hw_emit_object(w, addr, ti, size + presize, seen, refcnt, NULL, 0);
    return err;
}

/* A type object: its size is type.__sizeof__ of itself. */
static int walk_type(struct hw *w, const struct holder *h, uint64_t addr, const struct tinfo *ti,
                     int64_t ob_size, uint64_t seen, uint64_t refcnt)
{
    const struct py_heap_layout *H = w->H;
    uint64_t flags = 0, ck = 0, size, presize;
    mc_read_u64(&w->mc, addr + w->L->tp_flags, &flags);
    if (flags & TPFLAGS_HEAPTYPE) {
        size = H->sizeof_heaptype;
        if (mc_read_u64(&w->mc, addr + w->L->ht_cached_keys, &ck) == 0 && ck) {
            struct py_dict_keys k;
            if (hw_dict_keys(w, ck, &k) == 0)
                size += py_dict_keys_sizeof(H, k.log2_size, k.log2_index_bytes, k.kind);
        }
        presize = ti->presize;
    } else {
        size = H->sizeof_type;
        presize = H->static_type_presize ? 16 : 0;
    }
    int err = hw_emit_object(w, addr, ti, size + presize, seen, refcnt, NULL, 0);
    if (err)
        return err;
    if (flags & TPFLAGS_HEAPTYPE) {
        err = hw_ref_fields(w, h, addr, H->type_fields, NFIELDS(H->type_fields));
    } else {
        err = hw_ref_fields(w, h, addr, H->type_fields, 4); /* dict, mro, bases, base */
    }
    if (!err && ti->heap)
        err = hw_walk_instance(w, h, addr, ti, ob_size);
    return err;
}

static int walk_function(struct hw *w, const struct holder *h, uint64_t addr)
{
    const struct py_heap_layout *H = w->H;
    int err = hw_ref_fields(w, h, addr, H->func, NFIELDS(H->func));
    uint64_t closure, code_obj;
    /* Each closure cell also hangs off the function directly, as heapspy shows it. */
    if (!err && mc_read_u64(&w->mc, addr + H->func_closure, &closure) == 0 && closure) {
        int64_t n;
        if (mc_read_u64(&w->mc, closure + H->ob_size, (uint64_t *)&n) == 0 && n > 0 &&
            n < 65536) {
            for (int64_t i = 0; i < n && !err; i++) {
                uint64_t cell;
                char label[48];
                if (mc_read_u64(&w->mc, closure + H->tuple_items + (uint64_t)i * PTR, &cell))
                    break;
                snprintf(label, sizeof(label), ".__closure__[%lld]", (long long)i);
                err = hw_ref(w, h, cell, HW_EDGE_CELL, label, false);
            }
        }
    }
    if (!err && mc_read_u64(&w->mc, addr + H->func_code, &code_obj) == 0 && code_obj)
        err = hw_code_location(w, addr, code_obj);
    return err;
}

static int walk_module(struct hw *w, const struct holder *h, uint64_t addr)
{
    const struct py_heap_layout *H = w->H;
    int err = hw_ref_fields(w, h, addr, H->module, NFIELDS(H->module));
    uint64_t md, file;
    if (!err && w->sink->location && mc_read_u64(&w->mc, addr + w->L->mod_dict, &md) == 0 &&
        md &&
        (file = hw_dict_get(w, md, "__file__")) != 0) {
        const char *f = hw_str_text(w, file, NULL);
        if (f)
            err = w->sink->location(w->sink->ctx, addr, f, 0);
    }
    return err;
}

static int walk_frame(struct hw *w, const struct holder *h, uint64_t addr)
{
    const struct py_heap_layout *H = w->H;
    int err = hw_ref_fields(w, h, addr, H->frobj, NFIELDS(H->frobj));
    uint64_t f;
    uint8_t owner = 0;
    /* Locals belong to the frame object only once it owns its interpreter frame. */
    if (!err && mc_read_u64(&w->mc, addr + H->frobj_frame, &f) == 0 &&
        f == addr + H->frobj_data &&
        mc_read(&w->mc, f + w->L->fr_owner, &owner, 1) == 0 &&
        owner == H->frame_owned_by_frame_object)
        err = hw_walk_iframe(w, h, f, true, NULL);
    return err;
}

static int walk_generator(struct hw *w, const struct holder *h, uint64_t addr)
{
    const struct py_heap_layout *H = w->H;
    uint64_t code = 0;
    int err = hw_ref_fields(w, h, addr,
                         (const struct py_ref_field[]){{(uint16_t)H->gi_name, HW_EDGE_INTERNAL,
                                                        ".__name__"},
                                                       {(uint16_t)H->gi_qualname,
                                                        HW_EDGE_INTERNAL, ".__qualname__"},
                                                       {(uint16_t)H->gi_exc_value,
                                                        HW_EDGE_ATTR, ".gi_exc_value"}},
                         3);
    int8_t state = 0;
    if (!err && mc_read(&w->mc, addr + H->gi_frame_state, &state, 1) == 0 &&
        state < H->gen_state_cleared) {
        /* locals, value stack, f_globals, f_func, f_code */
        err = hw_walk_iframe(w, h, addr + H->gi_iframe, true, &code);
        if (!err && code)
            err = hw_code_location(w, addr, code);
    }
    return err;
}

/* The references of an object already reported, by its kind (size: its reported size less
 * what comes before it). */
static int walk_refs(struct hw *w, const struct holder *h, uint64_t addr, const struct tinfo *ti,
                     int64_t ob_size, uint64_t items, uint64_t size)
{
    const struct py_heap_layout *H = w->H;
    int err = 0;
    switch (ti->kind) {
    case K_TUPLE:
        return hw_ref_items(w, h, addr + H->tuple_items, items);
    case K_LIST: {
        uint64_t arr;
        if (mc_read_u64(&w->mc, addr + H->list_items, &arr) || !arr)
            return 0;
        err = hw_buffer(w, addr, arr, size - (uint64_t)ti->basicsize); /* the item array */
        if (!err && ob_size > 0 && (uint64_t)ob_size < MAX_ITEMS)
            err = hw_ref_items(w, h, arr, (uint64_t)ob_size);
        return err;
    }
    case K_CELL:
        return hw_ref_fields(w, h, addr, H->cell, NFIELDS(H->cell));
    case K_FUNCTION:
        return walk_function(w, h, addr);
    case K_METHOD:
        return hw_ref_fields(w, h, addr, H->method, NFIELDS(H->method));
    case K_CFUNCTION:
        return hw_ref_fields(w, h, addr, H->cfunc, NFIELDS(H->cfunc));
    case K_CLASSMETHOD:
        return hw_ref_fields(w, h, addr, H->classmethod, NFIELDS(H->classmethod));
    case K_PROPERTY:
        return hw_ref_fields(w, h, addr, H->property, NFIELDS(H->property));
    case K_MODULE:
        return walk_module(w, h, addr);
    case K_EXC:
        return hw_ref_fields(w, h, addr, H->exc, NFIELDS(H->exc));
    case K_TRACEBACK:
        return hw_ref_fields(w, h, addr, H->tb, NFIELDS(H->tb));
    case K_WEAKREF: {
        uint64_t referent;
        err = hw_ref_fields(w, h, addr, H->weakref_cb, NFIELDS(H->weakref_cb));
        if (!err && mc_read_u64(&w->mc, addr + H->weakref_object, &referent) == 0 && referent &&
            referent != w->rt->types.none_struct)
            err = hw_ref_stable(w, h, referent, HW_EDGE_WEAK, "<weakref>", false);
        return err;
    }
    case K_CODE:
        return hw_code_location(w, addr, addr);
    case K_FRAME:
        return walk_frame(w, h, addr);
    case K_GEN:
        return walk_generator(w, h, addr);
    case K_OBJECT:
        if (!ti->ct && ti->gc)
            err = hw_scan_body(w, h, addr, (struct tinfo *)ti);
        return err;
    default:
        return 0;
    }
}

static int walk_object(struct hw *w, uint64_t addr, uint64_t seen)
{
    const struct tinfo *ti = (const struct tinfo *)(uintptr_t)(seen & ~(uint64_t)SEEN_FLAGS);
    const struct py_heap_layout *H = w->H;
    struct holder h = {addr, NULL, (seen & SEEN_SENSITIVE) != 0};
    uint8_t hdr[64];
    int err = 0;
    /* The header up to ob_size (a variable-size object's item count); an object that ends
     * before it (at the end of a mapping) has none. */
    memset(hdr, 0, sizeof(hdr));
    if (H->ob_size + PTR > sizeof(hdr) || (mc_read(&w->mc, addr, hdr, H->ob_size + PTR) &&
                                         mc_read(&w->mc, addr, hdr, H->object_size)))
        return 0;
    uint64_t refcnt = hw_refcnt(w->L, hdr);
    int64_t ob_size = (int64_t)rd64(hdr + H->ob_size);

    if (ti->kind == K_STR || ti->kind == K_BYTES || ti->kind == K_BYTEARRAY)
        return walk_bytes_like(w, &h, addr, ti, ob_size, seen);

    /* object.__sizeof__, refined per kind. */
    uint64_t items = ti->itemsize ? (uint64_t)(ob_size < 0 ? -ob_size : ob_size) : 0;
    if (items > MAX_ITEMS)
        items = 0; /* not a variable-size object after all */
    uint64_t size = kind_size(w, addr, ti,
                              items, (uint64_t)ti->basicsize + items * (uint64_t)ti->itemsize);
    uint64_t presize = ti->presize;

    /* Report the object before its references (sinks may rely on it for nothing, but it reads
     * naturally in a trace); sizes that need the walk are computed first. */
    if (ti->kind == K_DICT || ti->kind == K_SET)
        return walk_dict_set(w, &h, addr, ti, ob_size, size, presize, seen, refcnt);
    if (ti->kind == K_TYPE)
        return walk_type(w, &h, addr, ti, ob_size, seen, refcnt);

    if (ti->ct) { /* known C layouts: references and owned memory before the report */
        uint64_t extra = 0;
        err = hw_walk_ctype(w, &h, addr, ti, &extra);
        if (err)
            return err;
        size += extra;
    }
    err = hw_emit_object(w, addr, ti, size + presize, seen, refcnt, NULL, 0);
    if (!err)
        err = walk_refs(w, &h, addr, ti, ob_size, items, size);
    if (!err && (ti->heap || ti->kind == K_OBJECT) && ti->kind != K_FUNCTION &&
        ti->kind != K_MODULE && ti->kind != K_EXC && ti->kind != K_CLASSMETHOD)
        err = hw_walk_instance(w, &h, addr, ti, ob_size);
    else if (!err && ti->heap)
        err = hw_ref_stable(w, &h, ti->addr, HW_EDGE_INTERNAL, ".__class__", false);
    return err;
}

/* ---- seeds ----------------------------------------------------------------------------------- */

/* The low bits of _gc_next and _gc_prev are flags (NEXT_MASK_UNREACHABLE; PREV_MASK_COLLECTING,
 * _PyGC_PREV_MASK_FINALIZED), never part of the address. */
#define GC_NEXT_FLAGS 3
#define GC_PREV_FLAGS 3

/* Pops and walks objects until the work stack is empty. */
static int drain(struct hw *w)
{
    while (w->nstack) {
        if (w->opt->progress && (w->popped++ & 4095) == 0)
            w->opt->progress(w->opt->progress_ctx, HW_PROGRESS_OBJECTS, w->st->objects, 0);
        uint64_t v = w->stack[--w->nstack], addr = w->stack[--w->nstack];
        if (w->opt->capture_contents) /* sensitivity may have been learnt since the push */
            v = current_flags(w, addr, v);
        int err = walk_object(w, addr, v);
        if (err)
            return err;
    }
    return 0;
}

struct tinfo *hw_mark_seed(struct hw *w, struct seen_page *p, uint64_t obj)
{
    return check_new(w, p, obj, SEEN_ON_GC_LIST);
}

/* The first pass over a GC list: each object checked and marked SEEN_ON_GC_LIST, so that it is
 * known as tracked (and as an object) before any is reported, but not pushed: the second pass
 * walks them one by one (walk_gc_list_back), so the work stack holds only what one object leads
 * to instead of every tracked object at once (16 bytes each). *len: the list's length. */
static int mark_gc_list(struct hw *w, uint64_t head, bool permanent, uint64_t *len)
{
    const struct py_heap_layout *H = w->H;
    uint64_t g, n = 0;
    int err = mc_read_u64(&w->mc, head + H->gc_next, &g);
    *len = 0;
    if (err)
        return err;
    g &= ~(uint64_t)GC_NEXT_FLAGS;
    for (; g != head; n++) {
        if (!g || n > (1ULL << 32))
            return err_fail(SCRY_E_READ_FAILED, "the GC list at 0x%llx is damaged",
                            (unsigned long long)head);
        uint64_t obj = g + H->gc_head_size; /* the object follows its PyGC_Head */
        if (obj >= 4096 && !(obj & 7)) {
            struct seen_page *p = hw_seen_page(&w->seen, obj, true);
            if (!p)
                return -SCRY_E_NO_MEMORY;
            unsigned state = hw_seen_get(p, obj);
            if (state == SEEN_ON_GC_LIST)
                return err_fail(SCRY_E_READ_FAILED,
                                "the GC list at 0x%llx loops (object 0x%llx seen twice)",
                                (unsigned long long)head, (unsigned long long)obj);
            if (state == SEEN_NEW && hw_mark_seed(w, p, obj)) {
                w->st->gc_tracked++;
                if (permanent)
                    w->st->permanent++;
            }
        }
        err = mc_read_u64(&w->mc, g + H->gc_next, &g);
        if (err)
            return err;
        g &= ~(uint64_t)GC_NEXT_FLAGS;
    }
    *len = n;
    return 0;
}

/* obj is marked by mark_gc_list or hw_ft_seeds, and met since only through references, which do
 * not push it. */
int hw_walk_seed(struct hw *w, uint64_t obj, bool frozen)
{
    struct seen_page *p =
        obj >= 4096 && !(obj & 7) ? hw_seen_page(&w->seen, obj, false) : NULL;
    if (!p || hw_seen_get(p, obj) != SEEN_ON_GC_LIST)
        return 0;
    uint64_t tp;
    struct tinfo *ti = NULL;
    if (mc_read_u64(&w->mc, obj + w->L->ob_type, &tp) == 0)
        ti = hw_type(w, tp);
    if (!ti || !ti->valid) /* checked by the first pass, on the same memory */
        return 0;
    seen_set(p, obj, SEEN_OBJECT);
    int err = push(w, obj, ti, SEEN_TRACKED | (frozen ? SEEN_PERMANENT : 0));
    return err ? err : drain(w);
}

/* The second pass over a GC list of len objects: each walked, from the last to the first (by
 * _gc_prev), the order in which they came off the work stack when every one was pushed first
 * (the snapshot is the same, its strings numbered alike). Each backward link is checked against
 * the forward one; where they disagree, the rest is walked in forward order instead. */
static int walk_gc_list_back(struct hw *w, uint64_t head, bool permanent, uint64_t len)
{
    const struct py_heap_layout *H = w->H;
    uint64_t link[2], g = head, n = 0, prev;
    int err = 0;
    bool whole = false;
    if (H->gc_prev == H->gc_next + 8 && mc_read(&w->mc, head + H->gc_next, link, 16) == 0) {
        for (;;) {
            prev = link[1] & ~(uint64_t)GC_PREV_FLAGS;
            if (prev == head) {
                whole = n == len;
                break;
            }
            if (n >= len || !prev || mc_read(&w->mc, prev + H->gc_next, link, 16) ||
                (link[0] & ~(uint64_t)GC_NEXT_FLAGS) != g)
                break;
            g = prev;
            n++;
            if ((err = hw_walk_seed(w, g + H->gc_head_size, permanent)) != 0)
                return err;
        }
    }
    if (whole)
        return 0;
    if (mc_read_u64(&w->mc, head + H->gc_next, &g))
        return 0;
    for (n = 0, g &= ~(uint64_t)GC_NEXT_FLAGS; g && g != head && n < len && !err; n++) {
        err = hw_walk_seed(w, g + H->gc_head_size, permanent);
        if (!err && mc_read_u64(&w->mc, g + H->gc_next, &g) == 0)
            g &= ~(uint64_t)GC_NEXT_FLAGS;
        else
            g = 0;
    }
    return err;
}

static int interp_roots(struct hw *w, uint64_t interp, int64_t id)
{
    char prefix[64] = "", label[MAX_NAME * 2 + 64];
    uint64_t modules = 0, sysdict = 0, builtins = 0, garbage = 0;
    if (id != 0)
        snprintf(prefix, sizeof(prefix), "interp %lld: ", (long long)id);
    mc_read_u64(&w->mc, interp + w->L->is_modules, &modules);
    mc_read_u64(&w->mc, interp + w->L->is_sysdict, &sysdict);
    mc_read_u64(&w->mc, interp + w->L->is_builtins, &builtins);
    mc_read_u64(&w->mc, interp + w->L->is_gc + w->H->gc_garbage, &garbage);
    int err;
    snprintf(label, sizeof(label), "%ssys.modules", prefix);
    if ((err = hw_root(w, modules, label)) != 0)
        return err;
    /* Each module is a root of its own, so that paths read sys.modules['app.cache'] first. */
    uint64_t keys, values;
    struct py_dict_keys k;
    if (modules && hw_dict_tables(w, modules, &keys, &values) == 0 && keys &&
        hw_dict_keys(w, keys, &k) == 0) {
        for (uint64_t i = 0; i < k.nentries && i < (1 << 20); i++) {
            uint64_t key, mod;
            if (hw_dict_entry(w, &k, values, i, &key, &mod))
                break;
            const char *name = key ? hw_str_text(w, key, NULL) : NULL;
            if (!mod || !name)
                continue;
            snprintf(label, sizeof(label), "%ssys.modules[", prefix);
            if (name == hw_redacted)
                strcat(label, hw_redacted);
            else
                hw_quote(label, sizeof(label) - 1, name);
            strcat(label, "]");
            if ((err = hw_root(w, mod, label)) != 0)
                return err;
        }
    }
    snprintf(label, sizeof(label), "%ssys.__dict__", prefix);
    if ((err = hw_root(w, sysdict, label)) != 0)
        return err;
    snprintf(label, sizeof(label), "%sbuiltins.__dict__", prefix);
    if ((err = hw_root(w, builtins, label)) != 0)
        return err;
    snprintf(label, sizeof(label), "%sgc.garbage", prefix);
    return hw_root(w, garbage, label);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void let_go(struct hw *w)
{
    if (w->resume) {
        void (*resume)(void *) = w->resume;
        w->resume = NULL;
        resume(w->resume_ctx);
    }
}

static void copy_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct hw *w = ctx;
    w->opt->progress(w->opt->progress_ctx, HW_PROGRESS_COPY, done, total);
}

bool hw_mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    struct hw_mem *m = ctx;
    int err = mc_read(&m->w->mc, addr, buf, len);
    if (err && !m->err)
        m->err = err;
    return err == 0;
}

/* list_interpreters' walk: the interpreters found so far. */
struct interp_list {
    struct hw *w;
    uint64_t *interps;
    int64_t *ids;
    size_t n;
    int err;
};

static int list_interp(void *ctx, uint64_t interp)
{
    struct interp_list *l = ctx;
    struct hw *w = l->w;
    int32_t collecting = 0;
    l->interps[l->n] = interp;
    l->ids[l->n] = 0;
    mc_read(&w->mc, interp + w->L->is_id, &l->ids[l->n], 8);
    l->n++;
    int err = mc_read(&w->mc, interp + w->L->is_gc + w->H->gc_collecting, &collecting, 4);
    if (!err && collecting) {
        w->st->gc_running = true;
        err = err_fail(SCRY_E_READ_FAILED, "a garbage collection is running; try again");
    }
    l->err = err;
    return err;
}

/* Every interpreter (at most PY_MAX_INTERPRETERS; a list that loops ends where the loop is
 * seen) and its id, the main one first; an error when there is none, or when one is collecting
 * garbage (its lists are being moved). */
static int list_interpreters(struct hw *w, uint64_t *interps, int64_t *ids, size_t *ninterps)
{
    uint64_t interp;
    int err = py_interp_head(w->rt, &interp);
    if (err)
        return err;
    if (!interp)
        return err_fail(SCRY_E_NOT_PYTHON,
                        "the Python runtime has no interpreter (not started yet, or finalized)");
    struct interp_list l = {w, interps, ids, 0, 0};
    struct hw_mem hm = {w, 0};
    struct py_mem mem = {.read = hw_mem_read, .ctx = &hm};
    struct py_tl tl = {.L = w->L, .mem = &mem, .max_interps = PY_MAX_INTERPRETERS,
                       .on_interp = list_interp, .ctx = &l}; /* no on_thread: no thread lists */
    enum py_tl_end end = py_tl_walk(&tl, interp);
    if (end == PY_TL_STOPPED || end == PY_TL_READ_FAILED)
        return end == PY_TL_STOPPED ? l.err : hm.err;
    *ninterps = l.n;
    return 0;
}

/* The GC lists (a free-threaded build's heaps) of every interpreter flagged, lens: their
 * lengths (gen0-2, permanent). */
static int mark_gc_lists(struct hw *w, const uint64_t *interps, size_t ninterps,
                         uint64_t (*lens)[4])
{
    int err = 0;
    for (size_t i = 0; i < ninterps && !err; i++) {
        if (w->L->free_threaded) {
            err = hw_ft_seeds(w, interps[i]);
            continue;
        }
        uint64_t gc = interps[i] + w->L->is_gc;
        for (int g = 0; g < 3 && !err; g++)
            err = mark_gc_list(w, gc + w->H->gc_generations[g], false, &lens[i][g]);
        if (!err)
            err = mark_gc_list(w, gc + w->H->gc_permanent, true, &lens[i][3]);
    }
    return err;
}

/* The GC lists' objects, last interpreter and list first: the order of a work stack onto which
 * they were pushed before the roots. */
static int walk_gc_lists(struct hw *w, const uint64_t *interps, size_t ninterps,
                         uint64_t (*lens)[4])
{
    if (w->L->free_threaded)
        return hw_ft_walk_seeds(w);
    int err = 0;
    for (size_t i = ninterps; i-- > 0 && !err;) {
        uint64_t gc = interps[i] + w->L->is_gc;
        err = walk_gc_list_back(w, gc + w->H->gc_permanent, true, lens[i][3]);
        for (int g = 2; g >= 0 && !err; g--)
            err = walk_gc_list_back(w, gc + w->H->gc_generations[g], false, lens[i][g]);
    }
    return err;
}

static int walk_impl(struct py_runtime *rt, const struct hw_options *opt,
                     const struct hw_sink *sink, struct hw_stats *stats, uint64_t max_copy,
                     void (*resume)(void *ctx), void *resume_ctx)
{
    struct hw w;
    struct hw_stats local;
    int err = 0;
    memset(&w, 0, sizeof(w));
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof(*stats));
    w.rt = rt;
    w.L = &rt->layout;
    w.H = py_runtime_heap_layout(rt);
    w.opt = opt;
    w.sink = sink;
    w.st = stats;
    w.resume = resume;
    w.resume_ctx = resume_ctx;
    if (!w.H)
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON, "no heap layout for Python 3.%d", rt->minor);
    if (py_fw_init(&w.fw, w.L, w.H, rt->types.code) != 0)
        return err_fail(SCRY_E_INTERNAL, "frame layout out of range");
    if (!rt->types.type || !rt->types.str || !rt->types.dict)
        return err_fail(SCRY_E_NOT_PYTHON, "the Python image does not export its type objects");
    mc_init(&w.mc, rt->rd, 0);
    if (sink->intern && sink->object_id && sink->edge_id &&
        !(w.label_ids = calloc(LABEL_IDS, sizeof(*w.label_ids)))) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
        goto out;
    }
    double t_start = now_ms(), t_copied = t_start, t_seeds = t_start;
    bool copied = false;
    if (resume) {
        mc_use_pool(&w.mc, opt->copy_pool);
        w.mc.progress = opt->progress ? copy_progress : NULL;
        w.mc.progress_ctx = &w;
        err = mc_prefetch_writable(&w.mc, max_copy);
        if (err < 0)
            goto out;
        copied = err == 0;
        t_copied = now_ms();
        log_debug("heap walk: %s (%zu bytes copied); %llu untouched pages of its blocks left out",
                  copied ? "walking a copy of the writable memory" : "walking the stopped target",
                  w.mc.bytes, (unsigned long long)w.mc.pages_skipped);
    }
    if (rt->types.set_dummy_ptr)
        mc_read_u64(&w.mc, rt->types.set_dummy_ptr, &w.set_dummy);

    uint64_t interps[PY_MAX_INTERPRETERS];
    int64_t ids[PY_MAX_INTERPRETERS];
    size_t ninterps = 0;
    if ((err = list_interpreters(&w, interps, ids, &ninterps)) != 0)
        goto out;
    hw_hc_env_init(&w);
    hw_find_subtype_dealloc(&w, interps[0]);
    if ((err = hw_collect_threads(&w)) != 0)
        goto out;
    if (copied)
        let_go(&w);
    /* GC lists (a free-threaded build's heaps) first, so that every tracked object is flagged
       before any is reported. */
    uint64_t lens[PY_MAX_INTERPRETERS][4]; /* gen0-2, permanent */
    if ((err = mark_gc_lists(&w, interps, ninterps, lens)) != 0)
        goto out;
    for (size_t i = 0; i < ninterps; i++)
        if ((err = interp_roots(&w, interps[i], ids[i])) != 0)
            goto out;
    if ((err = hw_thread_roots(&w)) != 0)
        goto out;

    t_seeds = now_ms();
    if ((err = drain(&w)) != 0)
        goto out;
    if ((err = walk_gc_lists(&w, interps, ninterps, lens)) != 0)
        goto out;
    for (size_t i = 0; i + 1 < w.ndeferred; i += 2) {
        uint64_t addr = w.deferred[i], v = current_flags(&w, addr, w.deferred[i + 1]);
        if ((err = hw_emit_leaf(&w, addr, v)) != 0)
            goto out;
    }
    log_debug("heap walk: copy %.1f ms, GC lists and roots %.1f ms, objects %.1f ms",
              t_copied - t_start, t_seeds - t_copied, now_ms() - t_seeds);
    log_debug("heap walk: %llu objects, %llu edges, %llu roots; %llu blocks read, %llu direct "
              "reads, %zu types; at most %llu objects waiting",
              (unsigned long long)stats->objects, (unsigned long long)stats->edges,
              (unsigned long long)stats->roots, (unsigned long long)w.mc.block_reads,
              (unsigned long long)w.mc.direct_reads, w.types.count,
              (unsigned long long)stats->max_waiting);
out:
    let_go(&w);
    mc_free(&w.mc);
    free(w.thread_items);
    seen_free(&w.seen);
    hm_free(&w.sensitive);
    hm_free(&w.types);
    hm_free(&w.names);
    hm_free(&w.codes);
    free(w.stack);
    free(w.ft_pages);
    free(w.label_ids);
    free(w.deferred);
    sb_release(&w.content);
    arena_free(&w.arena);
    return err;
}

int hw_walk(struct py_runtime *rt, const struct hw_options *opt, const struct hw_sink *sink,
            struct hw_stats *stats)
{
    return walk_impl(rt, opt, sink, stats, 0, NULL, NULL);
}

int hw_walk_resuming(struct py_runtime *rt, const struct hw_options *opt,
                     const struct hw_sink *sink, struct hw_stats *stats, uint64_t max_copy,
                     void (*resume)(void *ctx), void *resume_ctx)
{
    return walk_impl(rt, opt, sink, stats, max_copy, resume, resume_ctx);
}
