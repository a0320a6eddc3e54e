/* The heap walker (cpython/heap_walk.h) over synthetic memory images, for the layout of every
 * supported version (test_layouts.h: 3.11 and 3.12 from their tables, 3.13-3.15 from real
 * _Py_DebugOffsets blocks; the heap walker's own table per version). Each image is built by hand
 * through the layout tables at chosen addresses and read through a fake reader: a runtime with
 * one interpreter, its GC generation 0 list, type objects (static ones and classes defined in
 * Python, one with shared keys), sys.modules, dicts with unicode keys, a list, a tuple, an int,
 * str objects, an instance whose attributes live in its managed dict's values (3.11's values
 * pointer, 3.12's tagged word, 3.13+'s inline values), one with __slots__, a function with a
 * closure cell, a set, a weak reference, and a thread whose frame holds a local (found by the
 * frame walker). The test checks the objects the walk reports (type names, sizes as
 * sys.getsizeof gives them, GC flags), their labelled edges and the roots, that every object is
 * reported once, and captured contents (cut, and redacted under a secret-sounding name).
 * A 3.13t image (the real _Py_DebugOffsets of 3.13.15t) has no GC lists: its objects lie in
 * mimalloc pages of a thread's heaps and of the interpreter's abandoned pool, among free blocks
 * that still look like objects (test_walk_free_threaded). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "cpython/heap_walk.h"
#include "cpython/layout.h"
#include "cpython/mimalloc_layout.h"
#include "cpython/redact.h"
#include "cpython/runtime.h"
#include "reader/reader_impl.h"
#include "testlib.h"
#include "test_layouts.h"

#define BASE 0x7f3400000000ULL
#define IMG_SIZE (4u << 20)
#define RUNTIME BASE
#define INTERP (BASE + 0x100000)
#define TYPES (BASE + 0x200000) /* type objects, 0x1000 apart */
#define OBJS (BASE + 0x300000)  /* objects, allocated upwards */
#define TSTATE (BASE + 0x180000)
#define CFRAME (BASE + 0x181000)
#define STACK (BASE + 0x190000) /* the thread's data-stack chunk */

#define TPF_INLINE_VALUES (1UL << 2)
#define TPF_MANAGED_DICT (1UL << 4)
#define TPF_HEAPTYPE (1UL << 9)
#define TPF_READY (1UL << 12)
#define TPF_HAVE_GC (1UL << 14)

#define NFIELDS_OF(a) (sizeof(a) / sizeof((a)[0]))

enum {
    T_TYPE,
    T_STR,
    T_DICT,
    T_LIST,
    T_TUPLE,
    T_INT,
    T_CODE,
    T_NODE,
    T_SLOTTED,
    T_FUNCTION,
    T_CELL,
    T_SET,
    T_WEAKREF,
    NTYPES
};

struct img {
    uint8_t *mem;
    uint64_t next; /* the next free address in OBJS */
    const struct py_layout *L;
    const struct py_heap_layout *H;
};

static struct img g_img;

static int fake_read(struct rd_reader *rd, uint64_t addr, void *buf, size_t len)
{
    (void)rd;
    if (addr < BASE || addr - BASE > IMG_SIZE || len > IMG_SIZE - (addr - BASE))
        return err_fail(SCRY_E_READ_FAILED, "cannot read %zu bytes at 0x%llx", len,
                        (unsigned long long)addr);
    memcpy(buf, g_img.mem + (addr - BASE), len);
    return 0;
}

static const struct rd_ops fake_ops = {.read = fake_read};

static void put64(uint64_t addr, uint64_t v) { memcpy(g_img.mem + (addr - BASE), &v, 8); }
static void put32(uint64_t addr, uint32_t v) { memcpy(g_img.mem + (addr - BASE), &v, 4); }
static void put8(uint64_t addr, uint8_t v) { g_img.mem[addr - BASE] = v; }

static uint64_t get64(uint64_t addr)
{
    uint64_t v;
    memcpy(&v, g_img.mem + (addr - BASE), 8);
    return v;
}

static uint64_t type_at(int t) { return TYPES + (uint64_t)t * 0x1000; }

/* Room for an object of size bytes with pre bytes before it (GC head, managed dict words). */
static uint64_t alloc(uint64_t pre, uint64_t size)
{
    uint64_t addr = g_img.next + pre;
    g_img.next = (addr + size + 64 + 15) & ~15ULL;
    return addr;
}

/* A GC object's header: its PyGC_Head right before it, linked after `prev` (a list head or the
 * head of the previous object), and the list closed back to `head`, both ways. */
static void gc_link(uint64_t head, uint64_t *prev, uint64_t obj)
{
    const struct py_heap_layout *H = g_img.H;
    uint64_t g = obj - H->gc_head_size;
    put64(*prev + H->gc_next, g);
    put64(g + H->gc_prev, *prev);
    put64(g + H->gc_next, head);
    put64(head + H->gc_prev, g);
    *prev = g;
}

/* A compact ASCII str (interned: an identifier). */
static uint64_t put_str(const char *text, bool interned)
{
    const struct py_layout *L = g_img.L;
    uint64_t s = alloc(0, L->str_ascii_size + strlen(text) + 1);
    put64(s, 1);
    put64(s + L->ob_type, type_at(T_STR));
    put64(s + L->str_length, strlen(text));
    put32(s + L->str_state, (interned ? 1u : 0u) | (1u << 2) | (1u << 5) | (1u << 6));
    memcpy(g_img.mem + (s + L->str_ascii_size - BASE), text, strlen(text) + 1);
    return s;
}

/* A type object: flags, basic and item size, tp_name (a C string) and its metatype `type`. */
static void put_type(int t, const char *name, uint64_t flags, uint64_t basicsize,
                     uint64_t itemsize)
{
    const struct py_layout *L = g_img.L;
    const struct py_heap_layout *H = g_img.H;
    uint64_t addr = type_at(t), cname = addr + 0xf00;
    put64(addr, 1);
    put64(addr + L->ob_type, type_at(T_TYPE));
    put64(addr + L->tp_flags, flags | TPF_READY);
    put64(addr + L->tp_basicsize, basicsize);
    put64(addr + H->tp_itemsize, itemsize);
    put64(addr + L->tp_name, cname);
    memcpy(g_img.mem + (cname - BASE), name, strlen(name) + 1);
}

/* A keys object with n unicode (or split: values 0) entries; 8 slots, as CPython makes for up
 * to 5 keys. */
static uint64_t put_keys(int n, const uint64_t *keys, const uint64_t *values, bool split)
{
    const struct py_heap_layout *H = g_img.H;
    uint64_t k = alloc(0, H->dk_indices + 8 + 5 * H->dkue_size);
    put64(k + H->dk_refcnt, 1);
    put8(k + H->dk_log2_size, 3);
    put8(k + H->dk_log2_index_bytes, 3);
    put8(k + H->dk_kind, split ? 2 : 1);
    put64(k + H->dk_usable, (uint64_t)(5 - n));
    put64(k + H->dk_nentries, (uint64_t)n);
    uint64_t entries = k + H->dk_indices + 8;
    for (int i = 0; i < n; i++) {
        put8(k + H->dk_indices + (uint64_t)i, (uint8_t)i);
        put64(entries + (uint64_t)i * H->dkue_size + H->dkue_key, keys[i]);
        put64(entries + (uint64_t)i * H->dkue_size + H->dkue_value, split ? 0 : values[i]);
    }
    return k;
}

static uint64_t put_dict(int n, const uint64_t *keys, const uint64_t *values)
{
    const struct py_layout *L = g_img.L;
    uint64_t d = alloc(g_img.H->gc_head_size, 48);
    put64(d, 1);
    put64(d + L->ob_type, type_at(T_DICT));
    put64(d + L->dict_keys, put_keys(n, keys, values, false));
    return d;
}

struct rec_edge {
    uint64_t from, to;
    char label[64];
};

struct rec_object {
    uint64_t addr, size;
    uint32_t flags;
    char type[64];
    char content[32]; /* captured contents, cut */
};

struct rec {
    struct rec_object objects[64];
    struct rec_edge edges[128], roots[16], buffers[32]; /* buffers: from, to, label = size */
    size_t nobjects, nedges, nroots, nbuffers;
};

static int on_object(void *ctx, uint64_t addr, const char *type_name, uint64_t size,
                     uint32_t flags, const char *content, size_t content_len)
{
    struct rec *r = ctx;
    if (r->nobjects == 64)
        return -SCRY_E_INTERNAL;
    struct rec_object *o = &r->objects[r->nobjects++];
    o->addr = addr;
    o->size = size;
    o->flags = flags;
    snprintf(o->type, sizeof(o->type), "%s", type_name);
    snprintf(o->content, sizeof(o->content), "%.*s", (int)content_len, content ? content : "");
    return 0;
}

static int on_edge(void *ctx, uint64_t from, uint64_t to, enum hw_edge_kind kind,
                   const char *label)
{
    struct rec *r = ctx;
    if (r->nedges == 128)
        return -SCRY_E_INTERNAL;
    struct rec_edge *e = &r->edges[r->nedges++];
    e->from = from;
    e->to = to;
    snprintf(e->label, sizeof(e->label), "%s", label);
    return 0;
}

static int on_root(void *ctx, uint64_t addr, const char *label)
{
    struct rec *r = ctx;
    if (r->nroots == 16)
        return -SCRY_E_INTERNAL;
    struct rec_edge *e = &r->roots[r->nroots++];
    e->to = addr;
    snprintf(e->label, sizeof(e->label), "%s", label);
    return 0;
}

static int on_buffer(void *ctx, uint64_t owner, uint64_t addr, uint64_t size)
{
    struct rec *r = ctx;
    if (r->nbuffers == 32)
        return -SCRY_E_INTERNAL;
    struct rec_edge *e = &r->buffers[r->nbuffers++];
    e->from = owner;
    e->to = addr;
    snprintf(e->label, sizeof(e->label), "%llu", (unsigned long long)size);
    return 0;
}

/* The size of the block at addr reported as owner's, or 0. */
static uint64_t buffer_size(const struct rec *r, uint64_t owner, uint64_t addr)
{
    for (size_t i = 0; i < r->nbuffers; i++)
        if (r->buffers[i].from == owner && r->buffers[i].to == addr)
            return strtoull(r->buffers[i].label, NULL, 10);
    return 0;
}

static const struct rec_object *object_at(const struct rec *r, uint64_t addr)
{
    const struct rec_object *found = NULL;
    for (size_t i = 0; i < r->nobjects; i++)
        if (r->objects[i].addr == addr) {
            CHECK(found == NULL); /* reported once */
            found = &r->objects[i];
        }
    return found;
}

static bool has_edge(const struct rec *r, uint64_t from, uint64_t to, const char *label)
{
    for (size_t i = 0; i < r->nedges; i++)
        if (r->edges[i].from == from && r->edges[i].to == to &&
            strcmp(r->edges[i].label, label) == 0)
            return true;
    return false;
}

static bool has_root(const struct rec *r, uint64_t to, const char *label)
{
    for (size_t i = 0; i < r->nroots; i++)
        if (r->roots[i].to == to && strcmp(r->roots[i].label, label) == 0)
            return true;
    return false;
}

#define CHECK_OBJECT(r, addr, type_name, sz)                                                       \
    do {                                                                                           \
        const struct rec_object *o_ = object_at(r, addr);                                          \
        CHECK(o_ != NULL);                                                                         \
        if (o_) {                                                                                  \
            CHECK_STR(o_->type, type_name);                                                        \
            CHECK_EQ_U64(o_->size, sz);                                                            \
        }                                                                                          \
    } while (0)

/* What the image holds, for the checks. */
struct world {
    uint64_t mods, app, list, tuple, hello, answer, node, node_name, slotted, slot_value, local;
    uint64_t func, code, closure, cell, set, weakref;
};

/* A thread (native id 4242) running `work` in /app/t.py (line 9), its local x holding `local`. */
static void put_thread(uint64_t local)
{
    const struct py_layout *L = g_img.L;
    const struct py_heap_layout *H = g_img.H;
    uint64_t code = alloc(0, L->co_size + 16), names = alloc(H->gc_head_size, 32);
    put64(code, 1);
    put64(code + L->ob_type, type_at(T_CODE));
    put64(code + L->co_nunits, 4);
    put32(code + L->co_firsttraceable, 0);
    put32(code + L->co_firstlineno, 7);
    put64(code + L->co_filename, put_str("/app/t.py", false));
    put64(code + L->co_qualname, put_str("work", true));
    /* co_linetable (a bytes object): code units 0-3 on line 7 + 2 */
    static const uint8_t table[] = {0x80 | (13 << 3) | 3, 0x04};
    uint64_t lines = alloc(0, L->bytes_sval + sizeof(table));
    put64(lines + L->bytes_size, sizeof(table));
    memcpy(g_img.mem + (lines + L->bytes_sval - BASE), table, sizeof(table));
    put64(code + L->co_linetable, lines);
    put32(code + H->co_nlocalsplus, 1);
    put32(code + H->co_stacksize, 2);
    put64(code + H->co_localsplusnames, names);
    put64(names, 1);
    put64(names + L->ob_type, type_at(T_TUPLE));
    put64(names + H->ob_size, 1);
    put64(names + H->tuple_items, put_str("x", true));

    uint64_t frame = STACK + 0x40;
    put64(frame + L->fr_code, code);
    put64(frame + L->fr_instr, code + L->co_code_adaptive + 2);
    put64(frame + L->fr_localsplus, local);
    if (L->fr_is_entry)
        put8(frame + L->fr_is_entry, 1);
    put64(INTERP + L->is_threads_head, TSTATE);
    put64(TSTATE + L->ts_interp, INTERP);
    put64(TSTATE + L->ts_thread_id, 0x7f00aa);
    put64(TSTATE + L->ts_native_thread_id, 4242);
    if (L->ts_cframe) {
        put64(TSTATE + L->ts_cframe, CFRAME);
        put64(CFRAME + L->cframe_current_frame, frame);
    } else {
        put64(TSTATE + L->ts_current_frame, frame);
    }
    put64(TSTATE + L->ts_datastack_chunk, STACK);
    put64(TSTATE + L->ts_datastack_chunk + 8, frame + L->fr_localsplus + 3 * 8);
}

/* The offset of the reference labelled `label` in a table's list (0 when absent). */
static uint64_t ref_off(const struct py_ref_field *f, size_t n, const char *label)
{
    for (size_t i = 0; i < n && f[i].label; i++)
        if (strcmp(f[i].label, label) == 0)
            return f[i].off;
    return 0;
}

/* def f(): return captured (a closure over one cell holding the int), and a set
 * {hello, weakref.ref(node)}. */
static void put_function_set_weakref(struct world *w)
{
    const struct py_layout *L = g_img.L;
    const struct py_heap_layout *H = g_img.H;
    w->code = alloc(0, L->co_size + 16);
    put64(w->code, 1);
    put64(w->code + L->ob_type, type_at(T_CODE));
    w->cell = alloc(H->gc_head_size, 24);
    put64(w->cell, 1);
    put64(w->cell + L->ob_type, type_at(T_CELL));
    put64(w->cell + ref_off(H->cell, NFIELDS_OF(H->cell), ".cell_contents"), w->answer);
    w->closure = alloc(H->gc_head_size, H->tuple_items + 8);
    put64(w->closure, 1);
    put64(w->closure + L->ob_type, type_at(T_TUPLE));
    put64(w->closure + H->ob_size, 1);
    put64(w->closure + H->tuple_items, w->cell);
    w->func = alloc(H->gc_head_size, 256);
    put64(w->func, 1);
    put64(w->func + L->ob_type, type_at(T_FUNCTION));
    put64(w->func + H->func_code, w->code);
    put64(w->func + H->func_closure, w->closure);

    w->set = alloc(H->gc_head_size, H->set_smalltable + 8 * H->setentry_size);
    put64(w->set, 1);
    put64(w->set + L->ob_type, type_at(T_SET));
    put64(w->set + H->set_mask, 7);
    put64(w->set + H->set_table, w->set + H->set_smalltable);
    w->weakref = alloc(H->gc_head_size, 64);
    put64(w->weakref, 1);
    put64(w->weakref + L->ob_type, type_at(T_WEAKREF));
    put64(w->weakref + H->weakref_object, w->node);
    put64(w->set + H->set_smalltable + 3 * H->setentry_size + H->setentry_key, w->hello);
    put64(w->set + H->set_smalltable + 6 * H->setentry_size + H->setentry_key, w->weakref);
}

/* A runtime over the image, reading through the fake reader, its type objects at type_at(). */
static struct py_runtime *new_runtime(const struct py_layout *L)
{
    struct py_runtime *rt = calloc(1, sizeof(*rt));
    rt->rd = rd_alloc(RD_CORE, &fake_ops);
    rt->layout = *L;
    rt->major = 3;
    rt->minor = L->minor;
    rt->runtime_addr = RUNTIME;
    rt->types.type = type_at(T_TYPE);
    rt->types.str = type_at(T_STR);
    rt->types.dict = type_at(T_DICT);
    rt->types.list = type_at(T_LIST);
    rt->types.tuple = type_at(T_TUPLE);
    rt->types.long_ = type_at(T_INT);
    rt->types.code = type_at(T_CODE);
    rt->types.function = type_at(T_FUNCTION);
    rt->types.cell = type_at(T_CELL);
    rt->types.set = type_at(T_SET);
    rt->types.weakref = type_at(T_WEAKREF);
    return rt;
}

/* Builds the image for one version. */
static struct py_runtime *build(const struct py_layout *L, struct world *w)
{
    const struct py_heap_layout *H = py_heap_layout_table(L->minor, false);
    memset(g_img.mem, 0, IMG_SIZE);
    g_img.next = OBJS;
    g_img.L = L;
    g_img.H = H;
    uint64_t gc = INTERP + L->is_gc;
    put64(RUNTIME + L->rt_interpreters_head, INTERP);
    for (int g = 0; g < 4; g++) { /* empty lists point at themselves */
        uint64_t head = gc + (g < 3 ? H->gc_generations[g] : H->gc_permanent);
        put64(head + H->gc_next, head);
        put64(head + H->gc_prev, head);
    }

    put_type(T_TYPE, "type", TPF_HAVE_GC, H->sizeof_heaptype, 40);
    put_type(T_STR, "str", 0, L->str_ascii_size + 1, 1);
    put_type(T_DICT, "dict", TPF_HAVE_GC, 48, 0);
    put_type(T_LIST, "list", TPF_HAVE_GC, 40, 0);
    put_type(T_TUPLE, "tuple", TPF_HAVE_GC, 24, 8);
    put_type(T_INT, "int", 0, L->long_digits, 4);
    put_type(T_CODE, "code", 0, L->co_size, 2);
    put_type(T_FUNCTION, "function", TPF_HAVE_GC, 160, 0);
    put_type(T_CELL, "cell", TPF_HAVE_GC, 24, 0);
    put_type(T_SET, "set", TPF_HAVE_GC, 200, 0);
    put_type(T_WEAKREF, "weakref.ReferenceType", TPF_HAVE_GC, 64, 0);

    /* class Node (module app) with attributes name and items in its shared keys */
    uint64_t node_flags = TPF_HEAPTYPE | TPF_HAVE_GC | TPF_MANAGED_DICT |
                          (L->values_kind == PY_VALUES_313 ? TPF_INLINE_VALUES : 0);
    put_type(T_NODE, "Node", node_flags, H->object_size, 0);
    uint64_t attr_keys[2] = {put_str("name", true), put_str("items", true)};
    uint64_t mod_key = put_str("__module__", true), app_name = put_str("app", true);
    put64(type_at(T_NODE) + H->ht_qualname, put_str("Node", true));
    put64(type_at(T_NODE) + H->tp_dict, put_dict(1, &mod_key, &app_name));
    put64(type_at(T_NODE) + L->ht_cached_keys, put_keys(2, attr_keys, NULL, true));

    /* class Slotted: __slots__ = ('password',), one PyMemberDef after its metatype's basic size */
    put_type(T_SLOTTED, "Slotted", TPF_HEAPTYPE | TPF_HAVE_GC, H->object_size + 8, 0);
    put64(type_at(T_SLOTTED) + H->ht_qualname, put_str("Slotted", true));
    put64(type_at(T_SLOTTED) + H->tp_dict, put_dict(1, &mod_key, &app_name));
    put64(type_at(T_SLOTTED) + H->ob_size, 1);
    uint64_t member = type_at(T_SLOTTED) + H->sizeof_heaptype, member_name = member + 0x80;
    put64(member + H->member_name, member_name);
    memcpy(g_img.mem + (member_name - BASE), "password", 9);
    put32(member + H->member_type, (uint32_t)H->member_t_object_ex);
    put64(member + H->member_offset, H->object_size);

    w->hello = put_str("hello", false);
    w->answer = alloc(0, L->long_digits + 4);
    put64(w->answer, 1);
    put64(w->answer + L->ob_type, type_at(T_INT));
    put64(w->answer + H->long_tag, L->long_has_lv_tag ? 1u << 3 : 1u); /* one digit, positive */
    put32(w->answer + L->long_digits, 42);

    w->tuple = alloc(H->gc_head_size, H->tuple_items + 8);
    put64(w->tuple, 1);
    put64(w->tuple + L->ob_type, type_at(T_TUPLE));
    put64(w->tuple + H->ob_size, 1);
    put64(w->tuple + H->tuple_items, w->hello);

    uint64_t items = alloc(0, 4 * 8);
    w->list = alloc(H->gc_head_size, 40);
    put64(w->list, 1);
    put64(w->list + L->ob_type, type_at(T_LIST));
    put64(w->list + H->ob_size, 3);
    put64(w->list + H->list_items, items);
    put64(w->list + H->list_allocated, 4);
    put64(items, w->hello);
    put64(items + 8, w->answer);
    put64(items + 16, w->tuple);

    /* a Node whose attributes are in values: name='x', items=the list */
    w->node_name = put_str("x", false);
    uint64_t pre = H->gc_head_size + L->managed_dict + 8;
    w->node = alloc(pre, H->object_size + H->dv_values + 16);
    put64(w->node, 1);
    put64(w->node + L->ob_type, type_at(T_NODE));
    uint64_t values;
    switch (L->values_kind) {
    case PY_VALUES_311:
        values = alloc(0, 16);
        put64(w->node - H->managed_values, values);
        break;
    case PY_VALUES_312:
        values = alloc(0, 16);
        put64(w->node - L->managed_dict, values - 1); /* tagged */
        break;
    default: /* inline, after the basic size */
        values = w->node + H->object_size;
        put8(values + H->dv_capacity, 2);
        put8(values + H->dv_embedded, 1);
        put8(values + H->dv_valid, 1);
        break;
    }
    put64(values + H->dv_values, w->node_name);
    put64(values + H->dv_values + 8, w->list);

    w->slot_value = put_str("slot text", false);
    w->slotted = alloc(H->gc_head_size, H->object_size + 8);
    put64(w->slotted, 1);
    put64(w->slotted + L->ob_type, type_at(T_SLOTTED));
    put64(w->slotted + H->object_size, w->slot_value);

    /* GC generation 0: the list and the Node */
    uint64_t head = gc + H->gc_generations[0], prev = head;
    gc_link(head, &prev, w->list);
    gc_link(head, &prev, w->node);

    /* sys.modules = {'app': {'cache': list, 'node': node, 'obj': slotted, 'f': function,
     * 's': set}}, the function's globals being the app dict */
    put_function_set_weakref(w);
    uint64_t app_keys[5] = {put_str("cache", true), put_str("node", true), put_str("obj", true),
                            put_str("f", true), put_str("s", true)};
    uint64_t app_values[5] = {w->list, w->node, w->slotted, w->func, w->set};
    w->app = put_dict(5, app_keys, app_values);
    put64(w->func + ref_off(H->func, NFIELDS_OF(H->func), ".__globals__"), w->app);
    w->mods = put_dict(1, &app_name, &w->app);
    put64(INTERP + L->is_modules, w->mods);
    w->local = put_str("a local", false);
    put_thread(w->local);
    return new_runtime(L);
}

static void test_walk_every_layout(void)
{
    g_img.mem = calloc(1, IMG_SIZE);
    FOR_EACH_VERSION(L)
    {
        struct world w;
        struct py_runtime *rt = build(L, &w);
        const struct py_heap_layout *H = g_img.H;
        struct rec *r = calloc(1, sizeof(*r));
        struct hw_options opt = {.capture_contents = false, .max_str = 64};
        struct hw_sink sink = {r, on_object, on_edge, on_root, NULL, on_buffer, NULL, NULL, NULL};
        struct hw_stats st;
        CHECK_EQ(hw_walk(rt, &opt, &sink, &st), 0);

        /* sizes as sys.getsizeof gives them on CPython 3.11-3.15 */
        CHECK_OBJECT(r, w.list, "builtins.list", 88);           /* [a, b, c], room for 4 */
        CHECK_OBJECT(r, w.tuple, "builtins.tuple", 48);         /* (a,) */
        CHECK_OBJECT(r, w.answer, "builtins.int", 28);          /* 42 */
        CHECK_OBJECT(r, w.app, "builtins.dict", 184);           /* five keys */
        CHECK_OBJECT(r, w.hello, "builtins.str", L->minor == 11 ? 54 : 46); /* 'hello' */
        CHECK_OBJECT(r, w.node, "app.Node", 48);                /* GC head, dict pre-header */
        CHECK_OBJECT(r, w.slotted, "app.Slotted", 40);          /* one slot */
        CHECK_OBJECT(r, type_at(T_NODE), "builtins.type",
                     H->sizeof_heaptype + H->dk_indices + 8 + 5 * H->dkue_size +
                         H->preheader_gc);
        const struct rec_object *o = object_at(r, w.list);
        CHECK(o && (o->flags & HW_OBJ_GC_TRACKED));
        o = object_at(r, w.tuple);
        CHECK(o && !(o->flags & HW_OBJ_GC_TRACKED)); /* on no GC list in this image */
        CHECK_EQ(st.gc_tracked, 2);
        /* owned blocks: the list's item array (room for 4), the dict's keys table (its size
         * less the dict's own 48 bytes and GC header); never a class's shared keys */
        const struct py_layout *Lv = g_img.L;
        CHECK_EQ(buffer_size(r, w.list, get64(w.list + H->list_items)), 32);
        CHECK_EQ(buffer_size(r, w.app, get64(w.app + Lv->dict_keys)),
                 184 - 48 - H->gc_head_size);
        for (size_t i = 0; i < r->nbuffers; i++)
            CHECK(object_at(r, r->buffers[i].from) != NULL);

        CHECK(has_root(r, w.mods, "sys.modules"));
        CHECK(has_root(r, w.app, "sys.modules['app']"));
        /* the thread's frame, found by the frame walker: its local by name */
        CHECK(has_root(r, w.local, "Thread 4242 work (/app/t.py:9) .locals['x']"));
        CHECK_OBJECT(r, w.local, "builtins.str", L->str_ascii_size + 8);
        CHECK(has_edge(r, w.mods, w.app, "['app']"));
        CHECK(has_edge(r, w.app, w.list, "['cache']"));
        CHECK(has_edge(r, w.app, w.node, "['node']"));
        CHECK(has_edge(r, w.app, w.slotted, "['obj']"));
        CHECK(has_edge(r, w.list, w.hello, "[0]"));
        CHECK(has_edge(r, w.list, w.answer, "[1]"));
        CHECK(has_edge(r, w.list, w.tuple, "[2]"));
        CHECK(has_edge(r, w.tuple, w.hello, "[0]"));
        CHECK(has_edge(r, w.node, w.node_name, ".name"));
        CHECK(has_edge(r, w.node, w.list, ".items"));
        CHECK(has_edge(r, w.node, type_at(T_NODE), ".__class__"));
        CHECK(has_edge(r, w.slotted, w.slot_value, ".password"));
        /* a function, its closure and cell, a set, a weak reference */
        CHECK(has_edge(r, w.app, w.func, "['f']"));
        CHECK(has_edge(r, w.func, w.code, ".__code__"));
        CHECK(has_edge(r, w.func, w.app, ".__globals__"));
        CHECK(has_edge(r, w.func, w.closure, ".__closure__"));
        CHECK(has_edge(r, w.func, w.cell, ".__closure__[0]"));
        CHECK(has_edge(r, w.cell, w.answer, ".cell_contents"));
        CHECK(has_edge(r, w.set, w.hello, "<member>"));
        CHECK(has_edge(r, w.set, w.weakref, "<member>"));
        CHECK(has_edge(r, w.weakref, w.node, "<weakref>"));
        CHECK_OBJECT(r, w.set, "builtins.set", 216); /* sys.getsizeof({1, 2}) */
        CHECK_OBJECT(r, w.cell, "builtins.cell", 40);
        CHECK_OBJECT(r, w.weakref, "weakref.ReferenceType", 80);
        /* nothing else hangs off the list, the tuple or the instance */
        size_t from_list = 0, from_node = 0;
        for (size_t i = 0; i < r->nedges; i++) {
            from_list += r->edges[i].from == w.list;
            from_node += r->edges[i].from == w.node;
        }
        CHECK_EQ(from_list, 3);
        CHECK_EQ(from_node, 3);
        CHECK_EQ(st.objects, r->nobjects);
        CHECK_EQ(st.edges, r->nedges);
        free(r);
        rd_close(rt->rd);
        free(rt);
    }
    free(g_img.mem);
}

/* --capture-contents: str contents kept, and what a secret-sounding name holds redacted. */
static void test_capture_contents(void)
{
    g_img.mem = calloc(1, IMG_SIZE);
    FOR_EACH_VERSION(L)
    {
        struct world w;
        struct py_runtime *rt = build(L, &w);
        struct rec *r = calloc(1, sizeof(*r));
        struct hw_options opt = {.capture_contents = true, .max_str = 4};
        struct hw_sink sink = {r, on_object, on_edge, on_root, NULL, NULL, NULL, NULL, NULL};
        CHECK_EQ(hw_walk(rt, &opt, &sink, NULL), 0);
        const struct rec_object *o = object_at(r, w.hello);
        CHECK(o && strcmp(o->content, "hell") == 0); /* cut at --max-str */
        o = object_at(r, w.slot_value);
        CHECK(o && strcmp(o->content, REDACTED) == 0); /* under .password */
        o = object_at(r, w.node_name);
        CHECK(o && strcmp(o->content, "x") == 0);
        free(r);
        rd_close(rt->rd);
        free(rt);
    }
    free(g_img.mem);
}

/* Counts what a walk reports (more objects than struct rec holds). */
static int count_object(void *ctx, uint64_t addr, const char *type_name, uint64_t size,
                        uint32_t flags, const char *content, size_t content_len)
{
    (void)addr, (void)type_name, (void)size, (void)flags, (void)content, (void)content_len;
    ++*(uint64_t *)ctx;
    return 0;
}

static int count_edge(void *ctx, uint64_t from, uint64_t to, enum hw_edge_kind kind,
                      const char *label)
{
    (void)ctx, (void)from, (void)to, (void)kind, (void)label;
    return 0;
}

static int count_root(void *ctx, uint64_t to, const char *label)
{
    (void)ctx, (void)to, (void)label;
    return 0;
}

/* The GC lists' objects are walked one at a time from the lists, last first (the order of a
 * work stack they were all pushed on), not all pushed before the first is walked: the work stack
 * stays small however many objects are tracked. Damaged backward links lose no object. */
static void test_gc_lists_walked_one_by_one(void)
{
    g_img.mem = calloc(1, IMG_SIZE);
    FOR_EACH_VERSION(L)
    {
        struct world w;
        struct py_runtime *rt = build(L, &w);
        const struct py_heap_layout *H = g_img.H;
        struct hw_options opt = {.capture_contents = false, .max_str = 64};
        struct rec *r = calloc(1, sizeof(*r));
        struct hw_sink sink = {r, on_object, on_edge, on_root, NULL, NULL, NULL, NULL, NULL};
        struct hw_stats st;
        CHECK_EQ(hw_walk(rt, &opt, &sink, &st), 0);
        size_t at_list = SIZE_MAX, at_node = SIZE_MAX, nobjects = r->nobjects;
        for (size_t i = 0; i < r->nobjects; i++) {
            at_list = r->objects[i].addr == w.list ? i : at_list;
            at_node = r->objects[i].addr == w.node ? i : at_node;
        }
        CHECK(at_node < at_list); /* generation 0 is [list, node] */

        /* node's backward link damaged: the forward links are followed instead */
        put64(w.node - H->gc_head_size + H->gc_prev, 0x1230);
        memset(r, 0, sizeof(*r));
        CHECK_EQ(hw_walk(rt, &opt, &sink, &st), 0);
        CHECK_EQ(r->nobjects, nobjects);
        CHECK_EQ(st.gc_tracked, 2);
        for (size_t i = 0; i < r->nobjects; i++)
            for (size_t j = i + 1; j < r->nobjects; j++)
                CHECK(r->objects[i].addr != r->objects[j].addr);
        const struct rec_object *o = object_at(r, w.node);
        CHECK(o && (o->flags & HW_OBJ_GC_TRACKED));
        o = object_at(r, w.list);
        CHECK(o && (o->flags & HW_OBJ_GC_TRACKED));
        free(r);

        /* 3000 empty tuples on generation 2: walked one by one, the stack stays short */
        uint64_t head = INTERP + L->is_gc + H->gc_generations[2], prev = head, n = 0;
        for (int i = 0; i < 3000; i++) {
            uint64_t t = alloc(H->gc_head_size, H->tuple_items);
            put64(t, 1);
            put64(t + L->ob_type, type_at(T_TUPLE));
            gc_link(head, &prev, t);
        }
        struct hw_sink counting = {
            .ctx = &n, .object = count_object, .edge = count_edge, .root = count_root};
        CHECK_EQ(hw_walk(rt, &opt, &counting, &st), 0);
        CHECK_EQ(st.gc_tracked, 3002);
        CHECK_EQ(st.objects, n);
        CHECK(n > 3000);
        CHECK(st.max_waiting < 64);
        rd_close(rt->rd);
        free(rt);
    }
    free(g_img.mem);
}
/* A sink that takes ids: its string table, and how often the walker asked for an id. */
static char g_strs[256][64];
static uint32_t g_nstrs, g_interns;

static int on_intern(void *ctx, const char *s, uint32_t *id)
{
    (void)ctx;
    g_interns++;
    for (*id = 0; *id < g_nstrs; ++*id)
        if (strcmp(g_strs[*id], s) == 0)
            return 0;
    if (g_nstrs == 256)
        return -SCRY_E_INTERNAL;
    snprintf(g_strs[g_nstrs], sizeof(g_strs[0]), "%s", s);
    *id = g_nstrs++;
    return 0;
}

static int on_object_id(void *ctx, uint64_t addr, uint32_t type, uint64_t size, uint32_t flags,
                        const char *content, size_t content_len)
{
    if (type >= g_nstrs)
        return -SCRY_E_INTERNAL;
    return on_object(ctx, addr, g_strs[type], size, flags, content, content_len);
}

static int on_edge_id(void *ctx, uint64_t from, uint64_t to, enum hw_edge_kind kind,
                      uint32_t label)
{
    if (label >= g_nstrs)
        return -SCRY_E_INTERNAL;
    return on_edge(ctx, from, to, kind, g_strs[label]);
}

/* A sink that takes ids gets what a sink of texts gets, in the same order, with an id asked for
 * once per text rather than once per object and reference. */
static void test_walk_with_ids(void)
{
    g_img.mem = calloc(1, IMG_SIZE);
    FOR_EACH_VERSION(L)
    {
        struct world w;
        struct py_runtime *rt = build(L, &w);
        struct hw_options opt = {.capture_contents = false, .max_str = 64};
        struct rec *texts = calloc(1, sizeof(*texts)), *ids = calloc(1, sizeof(*ids));
        struct hw_sink by_text = {.ctx = texts, .object = on_object, .edge = on_edge,
                                  .root = on_root};
        struct hw_sink by_id = {.ctx = ids, .object = on_object, .edge = on_edge,
                                .root = on_root, .intern = on_intern,
                                .object_id = on_object_id, .edge_id = on_edge_id};
        CHECK_EQ(hw_walk(rt, &opt, &by_text, NULL), 0);
        g_nstrs = g_interns = 0;
        CHECK_EQ(hw_walk(rt, &opt, &by_id, NULL), 0);
        CHECK_EQ(ids->nobjects, texts->nobjects);
        CHECK_EQ(ids->nedges, texts->nedges);
        CHECK(memcmp(ids->objects, texts->objects, sizeof(ids->objects)) == 0);
        CHECK(memcmp(ids->edges, texts->edges, sizeof(ids->edges)) == 0);
        CHECK(g_nstrs > 5);
        CHECK(g_interns < g_nstrs + 4); /* the world's types and labels repeat */
        CHECK(g_interns * 2 < ids->nobjects + ids->nedges);
        free(texts);
        free(ids);
        rd_close(rt->rd);
        free(rt);
    }
    free(g_img.mem);
}

/* ---- 3.13t: objects in mimalloc pages -------------------------------------------------------- */

/* 3.13.15t's _Py_DebugOffsets (ctypes.string_at(_PyRuntime) in the live interpreter). */
static const uint64_t dbg_313t[73] = {
    0x7970677562656478, 51187696, 1, 328384, 608, 632, 215616, 7272, 7264, 7344, 7400, 7664,
    7648, 7656, 16, 7760, 0, 7784, 7776, 312, 0, 8, 16, 72, 152, 160, 232, 32, 80, 8, 0, 56,
    72, 70, 224, 128, 136, 144, 152, 84, 68, 112, 120, 216, 32, 24, 432, 40, 104, 184, 48, 40,
    32, 56, 40, 32, 64, 48, 56, 40, 32, 48, 32, 40, 56, 32, 48, 80, 48, 32, 56, 248, 200};

#define SEGMENT BASE /* 32 MiB aligned: the image's first 4 MiB are its first slices */
#define SLICE(i) (SEGMENT + PY_MI_SEG_SLICES + (uint64_t)(i) * PY_MI_SLICE_SIZE)
#define HEAP_OF(ts, id) ((ts) + PY_MI_TSTATE + PY_MI_TS_HEAPS + (uint64_t)(id) * PY_MI_HEAP_SIZE)

/* A page at slice idx (one slice) of blocks of bsize bytes, capacity of them, tag its heap; the
 * address of its first block. */
static uint64_t ft_page(unsigned idx, uint32_t bsize, uint16_t capacity, uint32_t used,
                        unsigned tag)
{
    uint64_t page = SLICE(idx);
    put32(page + PY_MI_PAGE_SLICE_COUNT, 1);
    put8(page + PY_MI_PAGE_TAG_BYTE, (uint8_t)(tag << PY_MI_PAGE_TAG_SHIFT));
    memcpy(g_img.mem + (page + PY_MI_PAGE_CAPACITY - BASE), &capacity, 2);
    put32(page + PY_MI_PAGE_USED, used);
    put32(page + PY_MI_PAGE_XBLOCK_SIZE, bsize);
    uint64_t skip = bsize <= 64 ? 3 * bsize : bsize <= 512 ? bsize : 0;
    return SEGMENT + (uint64_t)idx * (1u << PY_MI_SLICE_SHIFT) + skip;
}

/* A free-threaded object header: tracked/frozen bits, local refcount, type; ob_tid and the
 * shared count set as a live object has them. */
static void ft_object(uint64_t obj, int t, uint8_t gc_bits, uint32_t ref_local)
{
    put64(obj, 0x7f00aa); /* ob_tid: the owning thread */
    put8(obj + PY_FT_OB_GC_BITS, gc_bits);
    put32(obj + PY_FT_OB_REF_LOCAL, ref_local);
    put64(obj + PY_FT_OB_REF_SHARED, 4); /* one shared reference */
    put64(obj + g_img.L->ob_type, type_at(t));
}

static void ft_list(uint64_t obj, uint8_t gc_bits, uint64_t n, uint64_t items)
{
    ft_object(obj, T_LIST, gc_bits, 1);
    put64(obj + g_img.H->ob_size, n);
    put64(obj + g_img.H->list_items, items);
    put64(obj + g_img.H->list_allocated, n);
}

static void test_walk_free_threaded(void)
{
    struct py_layout L;
    CHECK_EQ(py_layout_from_debug_offsets(13, true, (const uint8_t *)dbg_313t, sizeof(dbg_313t),
                                          &L),
             0);
    const struct py_heap_layout *H = py_heap_layout_table(13, true);
    CHECK(H != NULL && H->object_size == 32 && L.ob_type == 24);
    g_img.mem = calloc(1, IMG_SIZE);
    g_img.next = OBJS;
    g_img.L = &L;
    g_img.H = H;
    put64(RUNTIME + L.rt_interpreters_head, INTERP);
    put_type(T_TYPE, "type", TPF_HAVE_GC, H->sizeof_heaptype, 40);
    put_type(T_STR, "str", 0, L.str_ascii_size + 1, 1);
    put_type(T_DICT, "dict", TPF_HAVE_GC, 64, 0);
    put_type(T_LIST, "list", TPF_HAVE_GC, 56, 0);
    put_type(T_TUPLE, "tuple", TPF_HAVE_GC, 40, 8);
    put_type(T_CODE, "code", 0, L.co_size, 2);

    /* One thread, its mimalloc state bound, with one page in its GC heap's queue 5. */
    put64(INTERP + L.is_threads_head, TSTATE);
    put64(TSTATE + L.ts_interp, INTERP);
    put64(TSTATE + L.ts_thread_id, 0x7f00aa);
    put64(TSTATE + L.ts_native_thread_id, 4242);
    put32(TSTATE + PY_MI_TSTATE + PY_MI_TS_INITIALIZED, 1);
    for (int id = 0; id < 4; id++)
        put64(HEAP_OF(TSTATE, id) + PY_MI_HEAP_THREAD_ID, 0x7f00aa);
    put64(HEAP_OF(TSTATE, PY_MI_HEAP_GC) + PY_MI_HEAP_PAGES + 5 * PY_MI_QUEUE_SIZE, SLICE(40));

    /* Its page: 8 blocks of 64 bytes. 0: a list holding block 6; 2: an empty tuple, frozen;
     * 6: a tuple that is not tracked (immortal); 7: an empty list. Blocks 1, 3, 4 and 5 are free
     * (on free, local_free, xthread_free (tagged) and the heap's thread_delayed_free lists) and
     * still hold what looks like a tracked tuple: stale objects the walk must not report. */
    uint64_t b = ft_page(40, 64, 8, 6, PY_MI_HEAP_GC);
    uint64_t items = alloc(0, 8), l1 = b, t2 = b + 2 * 64, t6 = b + 6 * 64, l7 = b + 7 * 64;
    ft_list(l1, PY_FT_GC_TRACKED, 1, items);
    put64(items, t6);
    ft_object(t2, T_TUPLE, PY_FT_GC_TRACKED | PY_FT_GC_FROZEN, 1);
    ft_object(t6, T_TUPLE, 0, UINT32_MAX);
    ft_list(l7, PY_FT_GC_TRACKED, 0, 0);
    for (int i = 1; i <= 5; i += (i == 1 ? 2 : 1)) {
        ft_object(b + (uint64_t)i * 64, T_TUPLE, PY_FT_GC_TRACKED, 0);
        put64(b + (uint64_t)i * 64, 0); /* the next free block: none */
    }
    put64(SLICE(40) + PY_MI_PAGE_FREE, b + 64);
    put64(SLICE(40) + PY_MI_PAGE_LOCAL_FREE, b + 3 * 64);
    put64(SLICE(40) + PY_MI_PAGE_XTHREAD_FREE, (b + 4 * 64) | 1);
    put64(HEAP_OF(TSTATE, PY_MI_HEAP_GC) + PY_MI_HEAP_DELAYED_FREE, b + 5 * 64);

    /* The abandoned pool (its head tagged in the low bits): this segment, whose slices are its
     * header (0), a free span (1-40: the live thread's page above lies in it here), a page of
     * the pre-header heap (41: one list 16 bytes into its first block, a stale one in the
     * second, free) and a page of non-GC objects (42: not the collector's, whatever its bits
     * say). */
    put64(INTERP + PY_MI_INTERP_POOL + PY_MI_POOL_ABANDONED, SEGMENT | 3);
    put64(SEGMENT + PY_MI_SEG_SLICE_ENTRIES, 43);
    put32(SLICE(0) + PY_MI_PAGE_SLICE_COUNT, 1);
    put32(SLICE(1) + PY_MI_PAGE_SLICE_COUNT, 40);
    uint64_t pre = ft_page(41, 80, 2, 1, PY_MI_HEAP_GC_PRE), lpre = pre + 16;
    ft_list(lpre, PY_FT_GC_TRACKED, 0, 0);
    ft_object(pre + 80 + 16, T_TUPLE, PY_FT_GC_TRACKED, 1);
    put64(pre + 80, 0);
    put64(SLICE(41) + PY_MI_PAGE_FREE, pre + 80);
    uint64_t plain = ft_page(42, 64, 1, 1, 1);
    ft_object(plain, T_TUPLE, PY_FT_GC_TRACKED, 1);

    struct py_runtime *rt = new_runtime(&L);

    struct rec *r = calloc(1, sizeof(*r));
    struct hw_options opt = {.capture_contents = false, .max_str = 64};
    struct hw_sink sink = {r, on_object, on_edge, on_root, NULL, NULL, NULL, NULL, NULL};
    struct hw_stats st;
    CHECK_EQ(hw_walk(rt, &opt, &sink, &st), 0);
    CHECK_EQ(st.gc_tracked, 4); /* l1, t2, l7 and lpre */
    CHECK_EQ(st.permanent, 1);  /* t2 */
    CHECK_EQ(st.objects, 5);    /* and t6, through l1 */
    CHECK(st.max_waiting <= 2); /* the seeds walked one by one: l1, then t6 */
    CHECK_EQ(r->nobjects, 5);
    CHECK_OBJECT(r, l1, "builtins.list", 64); /* sys.getsizeof([x]) on 3.13t */
    CHECK_OBJECT(r, t2, "builtins.tuple", 40);
    CHECK_OBJECT(r, t6, "builtins.tuple", 40);
    CHECK_OBJECT(r, l7, "builtins.list", 56);
    CHECK_OBJECT(r, lpre, "builtins.list", 56);
    CHECK(has_edge(r, l1, t6, "[0]"));
    const struct rec_object *o = object_at(r, t6);
    CHECK(o && !(o->flags & HW_OBJ_GC_TRACKED) && (o->flags & HW_OBJ_IMMORTAL));
    o = object_at(r, l1);
    CHECK(o && (o->flags & HW_OBJ_GC_TRACKED) && !(o->flags & HW_OBJ_IMMORTAL));

    /* A heap that is not its thread's: another build's layout, refused. */
    put64(HEAP_OF(TSTATE, PY_MI_HEAP_GC) + PY_MI_HEAP_THREAD_ID, 0x1234);
    memset(r, 0, sizeof(*r));
    CHECK_EQ(hw_walk(rt, &opt, &sink, &st), -SCRY_E_UNSUPPORTED_PYTHON);
    free(r);
    rd_close(rt->rd);
    free(rt);
    free(g_img.mem);
}

static const struct tl_test tests[] = {
    TL(test_walk_every_layout),
    TL(test_capture_contents),
    TL(test_gc_lists_walked_one_by_one),
    TL(test_walk_with_ids),
    TL(test_walk_free_threaded),
};

TL_MAIN(tests)
