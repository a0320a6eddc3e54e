/* The heap walker's types and instances (heap_walk_int.h): what a type object says about its
 * instances (struct tinfo: kind, sizes, pre-header, __slots__, shared keys, known C layout), how
 * instances keep their attributes (slots, __dict__, managed dicts, split and inline values), and
 * the C layouts of heap_ctypes.h with a conservative scan of other extension objects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "cpython/heap_walk_int.h"

static bool type_is_type(struct hw *w, uint64_t meta)
{
    /* `type`, or a metatype (ABCMeta, EnumType, ...) whose type is `type`, a few levels deep. */
    for (int depth = 0; depth < 4 && meta; depth++) {
        if (meta == w->rt->types.type)
            return true;
        if (mc_read_u64(&w->mc, meta + w->L->ob_type, &meta))
            return false;
    }
    return false;
}

static enum kind builtin_kind(struct hw *w, uint64_t t)
{
    const struct py_types *T = &w->rt->types;
    if (!t)
        return K_OBJECT;
    if (t == T->str)
        return K_STR;
    if (t == T->bytes)
        return K_BYTES;
    if (t == T->bytearray)
        return K_BYTEARRAY;
    if (t == T->long_ || t == T->bool_)
        return K_INT;
    if (t == T->float_)
        return K_FLOAT;
    if (t == T->none_type)
        return K_NONE;
    if (t == T->code)
        return K_CODE;
    if (t == T->dict || t == T->odict)
        return K_DICT;
    if (t == T->list)
        return K_LIST;
    if (t == T->tuple)
        return K_TUPLE;
    if (t == T->set || t == T->frozenset)
        return K_SET;
    if (t == T->cell)
        return K_CELL;
    if (t == T->function)
        return K_FUNCTION;
    if (t == T->method)
        return K_METHOD;
    if (t == T->cfunction || t == T->cmethod)
        return K_CFUNCTION;
    if (t == T->classmethod || t == T->staticmethod)
        return K_CLASSMETHOD;
    if (t == T->property)
        return K_PROPERTY;
    if (t == T->module)
        return K_MODULE;
    if (t == T->type)
        return K_TYPE;
    if (t == T->frame)
        return K_FRAME;
    if (t == T->gen || t == T->coro || t == T->async_gen)
        return K_GEN;
    if (t == T->weakref || t == T->weakproxy || t == T->weakcallableproxy)
        return K_WEAKREF;
    if (t == T->traceback)
        return K_TRACEBACK;
    return (enum kind)-1;
}

/* The __slots__ members of a heap type (those of its heap-type bases too). */
static void load_slots(struct hw *w, struct tinfo *ti)
{
    const struct py_heap_layout *H = w->H;
    struct slot tmp[256];
    uint32_t n = 0;
    uint64_t cur = ti->addr;
    for (int depth = 0; cur && depth < MAX_TYPE_DEPTH && n < 256; depth++) {
        uint64_t flags, meta, nmembers, base;
        int64_t meta_basicsize;
        if (mc_read_u64(&w->mc, cur + w->L->tp_flags, &flags) || !(flags & TPFLAGS_HEAPTYPE))
            break;
        if (mc_read_u64(&w->mc, cur + w->L->ob_type, &meta) ||
            mc_read_u64(&w->mc, meta + w->L->tp_basicsize, (uint64_t *)&meta_basicsize) ||
            mc_read_u64(&w->mc, cur + H->ob_size, &nmembers) || /* Py_SIZE: the slot count */
            mc_read_u64(&w->mc, cur + w->H->tp_base, &base))
            break;
        if (meta_basicsize > 0 && meta_basicsize < (1 << 16) && nmembers > 0 &&
            nmembers < MAX_MEMBERS) {
            /* PyHeapType_GET_MEMBERS: the PyMemberDef array after the metatype's basic size */
            for (uint64_t i = 0; i < nmembers && n < 256 && H->member_size <= 64; i++) {
                uint8_t m[64];
                if (mc_read(&w->mc, cur + (uint64_t)meta_basicsize + i * H->member_size, m,
                            H->member_size))
                    break;
                int32_t type;
                memcpy(&type, m + H->member_type, sizeof(type));
                uint64_t off = rd64(m + H->member_offset);
                if (((uint64_t)type != H->member_t_object_ex &&
                     (uint64_t)type != H->member_t_object) ||
                    off < H->object_size || off > (1 << 20) || (off & 7))
                    continue;
                const char *name = hw_cstr(w, rd64(m + H->member_name), MAX_NAME);
                if (!name)
                    continue;
                tmp[n].label = arena_printf(&w->arena, ".%s", name);
                tmp[n].off = off;
                if (tmp[n].label)
                    n++;
            }
        }
        cur = base;
    }
    if (n) {
        ti->slots = arena_memdup(&w->arena, tmp, n * sizeof(tmp[0]));
        ti->nslots = ti->slots ? n : 0;
    }
}

static const char *type_name(struct hw *w, struct tinfo *ti)
{
    if (ti->heap) {
        uint64_t qual, dict, mod;
        const char *q = NULL, *m = NULL;
        if (mc_read_u64(&w->mc, ti->addr + w->H->ht_qualname, &qual) == 0 && qual)
            q = hw_str_text(w, qual, NULL);
        if (mc_read_u64(&w->mc, ti->addr + w->H->tp_dict, &dict) == 0 && dict &&
            (mod = hw_dict_get(w, dict, "__module__")) != 0)
            m = hw_str_text(w, mod, NULL);
        if (q && m)
            return arena_printf(&w->arena, "%s.%s", m, q);
        if (q)
            return q;
    }
    uint64_t tp_name;
    const char *s = NULL;
    if (mc_read_u64(&w->mc, ti->addr + w->L->tp_name, &tp_name) == 0 && tp_name)
        s = hw_cstr(w, tp_name, MAX_NAME);
    if (!s)
        return "<unknown type>";
    if (!strchr(s, '.'))
        return arena_printf(&w->arena, "builtins.%s", s);
    return s;
}

struct tinfo *hw_type(struct hw *w, uint64_t t)
{
    uint64_t v;
    if (!t || (t & 7))
        return NULL;
    struct tinfo **front = &w->type_cache[(t >> 4) & 255];
    if (*front && (*front)->addr == t)
        return *front;
    if (hm_get(&w->types, t, &v)) {
        *front = (struct tinfo *)(uintptr_t)v;
        return *front;
    }
    struct tinfo *ti = arena_alloc(&w->arena, sizeof(*ti));
    if (!ti)
        return NULL;
    ti->addr = t;
    if (hm_put(&w->types, t, (uint64_t)(uintptr_t)ti))
        return NULL;
    uint8_t b[512];
    uint64_t meta;
    if (w->H->sizeof_type > sizeof(b) || mc_read(&w->mc, t, b, w->H->sizeof_type))
        return ti;
    meta = rd64(b + w->L->ob_type);
    ti->flags = rd64(b + w->L->tp_flags);
    ti->basicsize = (int64_t)rd64(b + w->L->tp_basicsize);
    ti->itemsize = (int64_t)rd64(b + w->H->tp_itemsize);
    ti->dictoffset = (int64_t)rd64(b + w->L->tp_dictoffset);
    if (!type_is_type(w, meta) || !(ti->flags & TPFLAGS_READY) ||
        ti->basicsize < (int64_t)w->H->object_size ||
        ti->basicsize > (1 << 24) || ti->itemsize < 0 || ti->itemsize > (1 << 16))
        return ti; /* not a type: ti->valid stays false */
    ti->valid = true;
    ti->heap = (ti->flags & TPFLAGS_HEAPTYPE) != 0;
    ti->gc = (ti->flags & TPFLAGS_HAVE_GC) != 0;
    ti->presize = (uint32_t)((ti->gc ? w->H->preheader_gc : 0) +
                             ((ti->flags & w->H->preheader_flags) ? w->H->preheader_dict : 0));
    if (ti->heap)
        mc_read_u64(&w->mc, t + w->L->ht_cached_keys, &ti->cached_keys);

    /* The nearest known builtin in the tp_base chain decides how instances are traversed. */
    ti->kind = K_OBJECT;
    uint64_t cur = t;
    for (int depth = 0; cur && depth < MAX_TYPE_DEPTH; depth++) {
        enum kind k = builtin_kind(w, cur);
        if ((int)k >= 0) {
            ti->kind = k;
            break;
        }
        if (mc_read_u64(&w->mc, cur + w->H->tp_base, &cur))
            break;
    }
    if (ti->kind == K_OBJECT && (ti->flags & TPFLAGS_BASE_EXC_SUBCLASS))
        ti->kind = K_EXC;
    if (ti->kind == K_OBJECT && (ti->flags & TPFLAGS_TYPE_SUBCLASS))
        ti->kind = K_TYPE;
    if (ti->heap)
        load_slots(w, ti);
    ti->name = type_name(w, ti);
    uint64_t tp_name, base = rd64(b + w->H->tp_base);
    if ((tp_name = rd64(b + w->L->tp_name)) != 0)
        ti->cname = hw_cstr(w, tp_name, MAX_NAME);
    ti->ct = hc_lookup(w->L->minor, ti->cname, ti->basicsize - (int64_t)w->hc.head_delta);
    if (!ti->ct && base && base != t) {
        const struct tinfo *bt = hw_type(w, base);
        if (bt && bt->valid)
            ti->ct = bt->ct;
    }
    return ti;
}

/* ---- C types: known layouts (heap_ctypes.h) and a conservative scan of the others ------------ */

static int hc_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
    return mc_read(&((struct hw *)ctx)->mc, addr, buf, n);
}

static int hc_ref(void *ctx, uint64_t to, int kind, const char *label)
{
    struct hw *w = ctx;
    return hw_ref(w, w->hc_holder, to, (enum hw_edge_kind)kind, label, false);
}

static bool hc_covered(void *ctx, uint64_t off)
{
    const struct hw *w = ctx;
    const struct tinfo *ti = w->hc_type;
    if (ti->kind != K_OBJECT && !ti->heap)
        return false; /* hw_walk_instance does not run: no slot is reported */
    for (uint32_t i = 0; i < ti->nslots; i++)
        if (ti->slots[i].off == off)
            return true;
    return false;
}

static const char *hc_type_name(void *ctx, uint64_t type)
{
    const struct tinfo *ti = hw_type(ctx, type);
    return ti && ti->valid ? ti->cname : NULL;
}

static int hc_buffer(void *ctx, uint64_t addr, uint64_t size)
{
    struct hw *w = ctx;
    return hw_buffer(w, w->hc_holder->from, addr, size);
}

void hw_hc_env_init(struct hw *w)
{
    w->hc = (struct hc_env){w,
                            hc_read,
                            hc_ref,
                            hc_covered,
                            hc_type_name,
                            w->L->tp_basicsize,
                            w->H->tp_base,
                            0,
                            w->H->object_size - 16,
                            hc_buffer,
                            w->L->minor,
                            w->L->ob_type};
}

/* The references and owned native bytes of an object whose type has a known C layout. */
int hw_walk_ctype(struct hw *w, const struct holder *h, uint64_t addr, const struct tinfo *ti,
                      uint64_t *extra)
{
    w->hc_holder = h;
    w->hc_type = ti;
    return hc_walk(ti->ct, &w->hc, addr, extra);
}

/* Every class defined in Python has subtype_dealloc as its tp_dealloc (typeobject.c), so it is
 * learnt from one that is always there: importlib's ModuleSpec. */
void hw_find_subtype_dealloc(struct hw *w, uint64_t interp)
{
    uint64_t modules = 0, mod, md = 0, spec;
    if (mc_read_u64(&w->mc, interp + w->L->is_modules, &modules) || !modules ||
        !(mod = hw_dict_get(w, modules, "_frozen_importlib")) ||
        mc_read_u64(&w->mc, mod + w->L->mod_dict, &md) || !md ||
        !(spec = hw_dict_get(w, md, "ModuleSpec")))
        return;
    const struct tinfo *ti = hw_type(w, spec);
    uint64_t tp;
    if (ti && ti->valid && mc_read_u64(&w->mc, spec + w->L->ob_type, &tp) == 0 &&
        tp == w->rt->types.type && (ti = hw_type(w, tp)) != NULL)
        mc_read_u64(&w->mc, spec + w->H->tp_dealloc, &w->subtype_dealloc);
}

/* The C body of a type's instances: that of its nearest base not defined in Python (whose
 * tp_dealloc is not subtype_dealloc), with that base's weakref and dict slots. */
static void body_of(struct hw *w, struct tinfo *ti)
{
    ti->body_known = true;
    ti->body_size = 0;
    if (!w->subtype_dealloc)
        return;
    uint64_t cur = ti->addr;
    for (int depth = 0; cur && depth < MAX_TYPE_DEPTH; depth++) {
        uint64_t dealloc, base;
        int64_t bs, wl, dict;
        if (mc_read_u64(&w->mc, cur + w->H->tp_dealloc, &dealloc) ||
            mc_read_u64(&w->mc, cur + w->H->tp_base, &base))
            return;
        if (dealloc != w->subtype_dealloc) {
            if (mc_read_u64(&w->mc, cur + w->L->tp_basicsize, (uint64_t *)&bs) ||
                mc_read_u64(&w->mc, cur + w->H->tp_weaklistoffset, (uint64_t *)&wl) ||
                mc_read_u64(&w->mc, cur + w->L->tp_dictoffset, (uint64_t *)&dict) ||
                bs < (int64_t)w->H->object_size ||
                bs > (1 << 16))
                return;
            ti->body_size = bs;
            ti->body_weaklist = wl;
            ti->body_dict = dict;
            return;
        }
        cur = base;
    }
}

/* A conservative collector's view of an extension object with no known layout: each aligned
 * word of its C body that is the address of an object is taken for a reference. Accepted: an
 * object already met (everything on the GC lists is met before any object is walked), or one
 * that is not GC-tracked by its type (never on a GC list: numpy arrays, str, int, ...) and checks
 * out as an object. Never interior pointers; the weakref list, the dict slot (walked exactly)
 * and ob_size are skipped. The edges are marked inferred. */
int hw_scan_body(struct hw *w, const struct holder *h, uint64_t addr, struct tinfo *ti)
{
    if (!ti->body_known)
        body_of(w, ti);
    const struct py_heap_layout *H = w->H;
    uint64_t start = H->object_size; /* the words after ob_refcnt and ob_type */
    if (ti->body_size <= (int64_t)start)
        return 0;
    uint64_t words[1 << 13];
    uint64_t n = ((uint64_t)ti->body_size - start) / sizeof(uint64_t);
    if (n > sizeof(words) / sizeof(uint64_t))
        n = sizeof(words) / sizeof(uint64_t);
    if (mc_read(&w->mc, addr + start, words, n * sizeof(uint64_t)))
        return 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t off = start + sizeof(uint64_t) * i, p = words[i];
        if (p < 4096 || (p & 7) || p >= (1ULL << 47) || p == addr ||
            (int64_t)off == ti->body_weaklist || (int64_t)off == ti->body_dict ||
            (off == H->ob_size && ti->itemsize))
            continue;
        struct seen_page *pg = hw_seen_page(&w->seen, p, false);
        unsigned state = pg ? hw_seen_get(pg, p) : SEEN_NEW;
        if (state == SEEN_NOT_OBJECT)
            continue;
        if (state == SEEN_NEW) {
            uint8_t hdr[32];
            uint64_t refcnt, type;
            const struct tinfo *pt = NULL;
            if (H->object_size <= sizeof(hdr) && mc_read(&w->mc, p, hdr, H->object_size) == 0 &&
                (refcnt = hw_refcnt(w->L, hdr)) != 0 && refcnt < (1ULL << 48) &&
                mc_read_u64(&w->mc, p + w->L->ob_type, &type) == 0)
                pt = hw_type(w, type);
            if (!pt || !pt->valid || pt->gc)
                continue; /* a GC object that is on no GC list is not live */
        }
        char label[32];
        snprintf(label, sizeof(label), ".<inferred +%llu>", (unsigned long long)off);
        int err = hw_ref(w, h, p, (enum hw_edge_kind)(HW_EDGE_ATTR | HW_EDGE_INFERRED), label,
                      false);
        if (err)
            return err;
    }
    return 0;
}

int hw_ref_values(struct hw *w, const struct holder *h, const struct tinfo *ti,
                      uint64_t values, uint64_t capacity)
{
    struct tinfo *mt = (struct tinfo *)ti; /* the caches only */
    if (!ti->cached_keys)
        return 0;
    if (!mt->keys_state) /* the target does not run while it is walked: read once */
        mt->keys_state = hw_dict_keys(w, ti->cached_keys, &mt->keys) == 0 ? 1 : -1;
    const struct py_dict_keys *k = &ti->keys;
    if (ti->keys_state < 0 || k->nentries > MAX_MEMBERS * 16)
        return 0;
    uint64_t n = k->nentries < capacity ? k->nentries : capacity;
    char label[MAX_NAME + 8];
    if (!mt->attr_keys && n) {
        uint32_t cap = n < 64 ? (uint32_t)n : 64;
        mt->attr_keys = arena_alloc(&w->arena, cap * sizeof(uint64_t));
        mt->attr_labels = arena_alloc(&w->arena, cap * sizeof(char *));
        if (mt->attr_keys && mt->attr_labels) {
            memset(mt->attr_keys, 0, cap * sizeof(uint64_t));
            mt->nattr = cap;
        }
    }
    /* The first values in one read (most instances have a few attributes). */
    uint64_t vals[64];
    size_t nv = n < 64 ? (size_t)n : 64;
    if (nv && mc_read(&w->mc, values, vals, nv * PTR))
        nv = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t key, val;
        if (i < nv)
            val = vals[i];
        else if (mc_read_u64(&w->mc, values + i * PTR, &val))
            continue;
        if (!val)
            continue;
        const char *shown, *name;
        if (i < mt->nattr && mt->attr_keys[i]) {
            /* ".name" of the key of entry i, found once: the target does not run meanwhile */
            shown = mt->attr_labels[i];
            name = shown + 1;
        } else if (mc_read_u64(&w->mc, k->entries + i * k->esize + k->key_off, &key)) {
            continue;
        } else {
            name = key ? hw_str_text(w, key, NULL) : NULL;
            /* No snprintf: this runs for every attribute of every instance. */
            size_t len = strnlen(name ? name : "<?>", sizeof(label) - 2);
            label[0] = '.';
            memcpy(label + 1, name ? name : "<?>", len);
            label[len + 1] = 0;
            shown = label;
            char *kept;
            if (name && i < mt->nattr && (kept = arena_alloc(&w->arena, len + 2)) != NULL) {
                memcpy(kept, label, len + 2);
                mt->attr_keys[i] = key;
                mt->attr_labels[i] = kept;
                shown = kept;
            }
        }
        int err = shown == label ? hw_ref(w, h, val, HW_EDGE_ATTR, shown,
                                          hw_sensitive_name(w, name))
                                 : hw_ref_stable(w, h, val, HW_EDGE_ATTR, shown,
                                                 hw_sensitive_name(w, name));
        if (err)
            return err;
    }
    return 0;
}

/* What subtype_traverse visits for instances of classes: __slots__, the instance dict or its
 * split/inline values, and the class. */
int hw_walk_instance(struct hw *w, const struct holder *h, uint64_t obj, const struct tinfo *ti,
                         int64_t ob_size)
{
    int err;
    for (uint32_t i = 0; i < ti->nslots; i++) {
        uint64_t p;
        if (mc_read_u64(&w->mc, obj + ti->slots[i].off, &p) == 0 && p) {
            const char *name = ti->slots[i].label + 1;
            err = hw_ref_stable(w, h, p, HW_EDGE_ATTR, ti->slots[i].label,
                                hw_sensitive_name(w, name));
            if (err)
                return err;
        }
    }
    const struct py_heap_layout *H = w->H;
    uint64_t dict = 0, managed = obj - w->L->managed_dict;
    if (ti->flags & TPFLAGS_MANAGED_DICT) {
        uint64_t word;
        switch (w->L->values_kind) {
        case PY_VALUES_311: /* the values pointer, NULL once a dict exists; the dict */
            if (mc_read_u64(&w->mc, obj - H->managed_values, &word) == 0 && word) {
                err = hw_ref_values(w, h, ti, word + H->dv_values, MAX_ITEMS);
                if (err)
                    return err;
            }
            mc_read_u64(&w->mc, managed, &dict);
            break;
        case PY_VALUES_312: /* the dict, or the values pointer less one (bit 0 set) */
            if (mc_read_u64(&w->mc, managed, &word) == 0 && (word & 1)) {
                err = hw_ref_values(w, h, ti, word + 1 + H->dv_values, MAX_ITEMS);
                if (err)
                    return err;
            } else {
                dict = word;
            }
            break;
        case PY_VALUES_313:
            if (ti->flags & TPFLAGS_INLINE_VALUES) {
                /* PyDictValues right after the type's basic size */
                uint8_t vh[16];
                uint64_t at = obj + (uint64_t)ti->basicsize;
                if (H->dv_values <= sizeof(vh) && mc_read(&w->mc, at, vh, H->dv_values) == 0 &&
                    vh[H->dv_valid]) {
                    err = hw_ref_values(w, h, ti, at + H->dv_values, vh[H->dv_capacity]);
                    if (err)
                        return err;
                }
            }
            mc_read_u64(&w->mc, managed, &dict);
            break;
        }
    } else if (ti->dictoffset > 0) {
        mc_read_u64(&w->mc, obj + (uint64_t)ti->dictoffset, &dict);
    } else if (ti->dictoffset < 0) {
        uint64_t items = (uint64_t)(ob_size < 0 ? -ob_size : ob_size);
        uint64_t size = ((uint64_t)ti->basicsize + items * (uint64_t)ti->itemsize + 7) & ~7ULL;
        mc_read_u64(&w->mc, obj + size + (uint64_t)ti->dictoffset, &dict);
    }
    if (dict && ti->kind != K_TYPE) { /* a metatype's instances: tp_dict is reported already */
        err = hw_ref_stable(w, h, dict, HW_EDGE_ATTR, ".__dict__", false);
        if (err)
            return err;
    }
    if (ti->heap)
        return hw_ref_stable(w, h, ti->addr, HW_EDGE_INTERNAL, ".__class__", false);
    return 0;
}
