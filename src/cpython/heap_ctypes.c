/* The C types the heap walker knows by layout (heap_ctypes.h). Each entry is data: the tp_name,
 * the tp_basicsize and the versions it was checked on, the object pointers its tp_traverse visits
 * (offset, label, kind), and a walker for what a table cannot say (deque blocks, native buffers
 * that __sizeof__ counts, numpy's data). Offsets are from reference/c-types.md, read back from
 * live objects of 3.11.7, 3.12.1 and 3.13.0, and for 3.14.10 and 3.15.2 found the same way (each
 * object's words matched against id() of what gc.get_referents() returns, ctypes on the live
 * interpreter); those the same everywhere are matched on every version, the others only on the
 * versions checked. */
#include "cpython/heap_ctypes.h"

#include <stdio.h>
#include <string.h>

#include "cpython/heap_walk.h"

#define MAX_ITEMS (1ULL << 31)

enum hc_special {
    HC_NONE,
    HC_DEQUE,
    HC_ODICT,
    HC_ARRAY,
    HC_STRINGIO,
    HC_NDARRAY,
    HC_BUFFERED,
};

struct hc_field {
    uint16_t off;
    uint8_t kind; /* enum hw_edge_kind */
    const char *label;
};

struct hc_type {
    const char *name;
    int64_t basicsize;
    int minor_lo, minor_hi; /* versions this layout holds for (99: any later one too) */
    enum hc_special special;
    struct hc_field fields[12];
};

#define A HW_EDGE_ATTR
#define I HW_EDGE_INTERNAL

static const struct hc_type types[] = {
    /* Items live in 528-byte blocks: 64 slots at +8, links at +0 and +520. */
    {"collections.deque", 216, 11, 99, HC_DEQUE, {{0}}},
    /* A dict (walked as one) plus a node list and a mirror of the index; od_inst_dict at 96 is
     * its tp_dictoffset. */
    {"collections.OrderedDict", 112, 11, 99, HC_ODICT, {{0}}},
    {"collections.defaultdict", 56, 11, 99, HC_NONE, {{48, A, ".default_factory"}}},
    /* The buffer is a bytes object: an edge, not extra bytes (sys.getsizeof adds it when it is
     * not shared; the bytes object's own node carries it here). */
    {"_io.BytesIO", 64, 11, 99, HC_NONE, {{16, I, ".buf"}}},
    {"_io.StringIO", 120, 11, 11, HC_STRINGIO,
     {{56, I, ".accu.large"}, {64, I, ".accu.small"}, {80, A, ".decoder"}, {88, I, ".readnl"},
      {96, I, ".writenl"}}},
    {"_io.StringIO", 168, 12, 13, HC_STRINGIO,
     {{56, I, ".writer.buffer"}, {120, A, ".decoder"}, {128, I, ".readnl"}, {136, I, ".writenl"}}},
    /* 3.14+: the writer at 56 is a PyUnicodeWriter* (PyMem memory, not an object). */
    {"_io.StringIO", 120, 14, 15, HC_STRINGIO,
     {{72, A, ".decoder"}, {80, I, ".readnl"}, {88, I, ".writenl"}}},
    {"array.array", 64, 11, 99, HC_ARRAY, {{0}}},
    /* The read/write buffer: `buffer` (char *) at 56, `buffer_size` at 120 (NULL once closed). */
    {"_io.BufferedReader", 152, 11, 15, HC_BUFFERED, {{16, A, ".raw"}}},
    {"_io.BufferedWriter", 152, 11, 15, HC_BUFFERED, {{16, A, ".raw"}}},
    {"_io.BufferedRandom", 152, 11, 15, HC_BUFFERED, {{16, A, ".raw"}}},
    {"functools.partial", 64, 11, 13, HC_NONE,
     {{16, A, ".func"}, {24, A, ".args"}, {32, A, ".keywords"}}},
    /* 3.14+: placeholders; the same first fields. */
    {"functools.partial", 80, 14, 15, HC_NONE,
     {{16, A, ".func"}, {24, A, ".args"}, {32, A, ".keywords"}}},
    {"functools._lru_cache_wrapper", 152, 11, 15, HC_NONE,
     {{72, A, ".cache"},
      {88, A, ".__wrapped__"},
      {112, I, ".kwd_mark"},
      {120, I, ".lru_list_elem_type"},
      {128, I, ".cache_info_type"}}},
    /* Not GC: reached from the wrapper's cache dict (bounded caches map key -> link). */
    {"functools._lru_list_elem", 56, 11, 13, HC_NONE, {{40, A, ".key"}, {48, A, ".result"}}},
    {"itertools.chain", 32, 11, 99, HC_NONE, {{16, A, ".source"}, {24, A, ".active"}}},
    {"itertools.cycle", 48, 11, 99, HC_NONE, {{16, A, ".it"}, {24, A, ".saved"}}},
    {"itertools.count", 40, 11, 99, HC_NONE, {{24, A, ".long_cnt"}, {32, A, ".long_step"}}},
    {"_asyncio.Future", 128, 11, 12, HC_NONE,
     {{16, A, ".loop"}, {24, A, ".callback0"}, {32, A, ".context0"}, {40, A, ".callbacks"},
      {48, A, ".exception"}, {56, A, ".exception_tb"}, {64, A, ".result"},
      {72, A, ".source_tb"}, {80, A, ".cancel_msg"}, {120, A, ".cancelled_exc"}}},
    {"_asyncio.Future", 104, 13, 13, HC_NONE,
     {{16, A, ".loop"}, {24, A, ".callback0"}, {32, A, ".context0"}, {40, A, ".callbacks"},
      {48, A, ".exception"}, {56, A, ".exception_tb"}, {64, A, ".result"},
      {72, A, ".source_tb"}, {80, A, ".cancel_msg"}, {88, A, ".cancelled_exc"}}},
    {"_asyncio.Task", 176, 11, 12, HC_NONE,
     {{16, A, ".loop"}, {24, A, ".callback0"}, {32, A, ".context0"}, {40, A, ".callbacks"},
      {48, A, ".exception"}, {56, A, ".exception_tb"}, {64, A, ".result"},
      {72, A, ".source_tb"}, {80, A, ".cancel_msg"}, {120, A, ".cancelled_exc"},
      {128, A, ".fut_waiter"}, {136, A, ".coro"}}},
    {"_asyncio.Task", 144, 13, 13, HC_NONE,
     {{16, A, ".loop"}, {24, A, ".callback0"}, {32, A, ".context0"}, {40, A, ".callbacks"},
      {48, A, ".exception"}, {56, A, ".exception_tb"}, {64, A, ".result"},
      {72, A, ".source_tb"}, {80, A, ".cancel_msg"}, {88, A, ".cancelled_exc"},
      {112, A, ".fut_waiter"}, {120, A, ".coro"}}},
    /* 3.14+: awaited_by (the awaiting task, or a set of them) after cancelled_exc. */
    {"_asyncio.Future", 112, 14, 15, HC_NONE,
     {{16, A, ".loop"}, {24, A, ".callback0"}, {32, A, ".context0"}, {40, A, ".callbacks"},
      {48, A, ".exception"}, {56, A, ".exception_tb"}, {64, A, ".result"},
      {72, A, ".source_tb"}, {80, A, ".cancel_msg"}, {88, A, ".cancelled_exc"},
      {96, A, ".awaited_by"}}},
    {"_asyncio.Task", 168, 14, 15, HC_NONE,
     {{16, A, ".loop"}, {24, A, ".callback0"}, {32, A, ".context0"}, {40, A, ".callbacks"},
      {48, A, ".exception"}, {56, A, ".exception_tb"}, {64, A, ".result"},
      {72, A, ".source_tb"}, {80, A, ".cancel_msg"}, {88, A, ".cancelled_exc"},
      {96, A, ".awaited_by"}, {120, A, ".fut_waiter"}}},
    /* data (owned iff OWNDATA), dimensions+strides (one block of 16 * nd), base, descr,
     * mem_handler; not GC, so only ever reached through references. */
    {"numpy.ndarray", 96, 11, 99, HC_NDARRAY,
     {{48, A, ".base"}, {56, I, ".dtype"}, {88, I, ".mem_handler"}}},
};

/* Task's fields past the 12 an entry holds (coro, name, context), by the Task's basicsize. */
static const struct {
    int64_t basicsize;
    struct hc_field fields[3];
} task_more[] = {
    {176, {{144, A, ".name"}, {152, A, ".context"}}},                       /* 3.11, 3.12 */
    {144, {{128, A, ".name"}, {136, A, ".context"}}},                       /* 3.13 */
    {168, {{128, A, ".coro"}, {136, A, ".name"}, {144, A, ".context"}}}, /* 3.14, 3.15 */
};

#undef A
#undef I

const struct hc_type *hc_lookup(int minor, const char *tp_name, int64_t basicsize)
{
    if (!tp_name)
        return NULL;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        const struct hc_type *t = &types[i];
        if (t->basicsize == basicsize && minor >= t->minor_lo &&
            (minor <= t->minor_hi || t->minor_hi == 99) && strcmp(t->name, tp_name) == 0)
            return t;
    }
    return NULL;
}

const char *hc_name(const struct hc_type *t) { return t->name; }

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* A native block the object owns, to the caller when it wants them. */
static int owned(struct hc_env *env, uint64_t addr, uint64_t size)
{
    return env->buffer && addr && size ? env->buffer(env->ctx, addr, size) : 0;
}

static int ref_index(struct hc_env *env, uint64_t to, uint64_t i)
{
    char label[32];
    snprintf(label, sizeof(label), "[%llu]", (unsigned long long)i);
    return env->ref(env->ctx, to, HW_EDGE_INDEX, label);
}

/* deque: items from leftblock[leftindex], len of them across the block chain, in order. */
static int walk_deque(struct hc_env *env, uint64_t obj, uint64_t *extra)
{
    uint8_t d[56];
    if (env->read(env->ctx, obj, d, sizeof(d)))
        return 0;
    int64_t len = (int64_t)rd64(d + 16), left = (int64_t)rd64(d + 40);
    uint64_t block = rd64(d + 24);
    if (len < 0 || (uint64_t)len > MAX_ITEMS || left < 0 || left > 63)
        return 0;
    *extra = (((uint64_t)left + (uint64_t)len + 63) / 64) * 528;
    uint8_t b[528];
    uint64_t i = 0;
    int64_t idx = left;
    int err = len == 0 ? owned(env, block, sizeof(b)) : 0; /* the one block of an empty deque */
    if (err)
        return err;
    while (i < (uint64_t)len && block) {
        if (env->read(env->ctx, block, b, sizeof(b)))
            return 0;
        if ((err = owned(env, block, sizeof(b))) != 0)
            return err;
        for (; idx < 64 && i < (uint64_t)len; idx++, i++) {
            uint64_t item = rd64(b + 8 + 8 * (uint64_t)idx);
            err = item ? ref_index(env, item, i) : 0;
            if (err)
                return err;
        }
        block = rd64(b + 520);
        idx = 0;
    }
    return 0;
}

/* numpy's dtype layout: 2.x moved elsize to an npy_intp at 40 (1.x: an int at 32). Told by the
 * basicsize of the `numpy.dtype` base of the descr's type: 96 in 1.x, 88 in 2.x. */
static int numpy_descr_kind(struct hc_env *env, uint64_t descr)
{
    if (env->numpy_descr)
        return env->numpy_descr;
    uint64_t t;
    if (env->read(env->ctx, descr + 8 + env->head_delta, &t, 8)) /* ob_type */
        return 0;
    for (int depth = 0; t && depth < 8; depth++) {
        const char *name = env->type_name(env->ctx, t);
        int64_t bs;
        if (name && strcmp(name, "numpy.dtype") == 0 &&
            env->read(env->ctx, t + env->tp_basicsize, &bs, 8) == 0) {
            bs -= (int64_t)env->head_delta;
            env->numpy_descr = bs == 96 ? 1 : bs == 88 ? 2 : 0;
            return env->numpy_descr;
        }
        if (env->read(env->ctx, t + env->tp_base, &t, 8))
            return 0;
    }
    return 0;
}

/* ndarray: __sizeof__ = basicsize + 16 * nd + (OWNDATA ? nbytes : 0); an owning object array's
 * items are references (numpy has no tp_traverse on arrays: nothing else reports them). */
static int walk_ndarray(struct hc_env *env, uint64_t obj, uint64_t *extra)
{
    uint8_t a[72];
    if (env->read(env->ctx, obj, a, sizeof(a)))
        return 0;
    uint64_t data = rd64(a + 16), dims = rd64(a + 32), descr = rd64(a + 56);
    int32_t nd, flags;
    memcpy(&nd, a + 24, 4);
    memcpy(&flags, a + 64, 4);
    if (nd < 0 || nd > 64)
        return 0;
    *extra = 16 * (uint64_t)nd;
    int err = owned(env, dims, 16 * (uint64_t)nd);
    if (err || !(flags & 0x4) || !descr) /* NPY_ARRAY_OWNDATA */
        return err;
    uint64_t count = 1;
    for (int32_t i = 0; i < nd; i++) {
        int64_t n;
        if (env->read(env->ctx, dims + 8 * (uint64_t)i, &n, 8) || n < 0)
            return 0;
        if (n && count > (1ULL << 48) / (uint64_t)n)
            return 0;
        count *= (uint64_t)n;
    }
    uint8_t d[48];
    int kind = numpy_descr_kind(env, descr);
    if (!kind || env->read(env->ctx, descr + env->head_delta, d, sizeof(d)))
        return 0;
    int64_t elsize;
    if (kind == 1) {
        int32_t e;
        memcpy(&e, d + 32, 4);
        elsize = e;
    } else {
        elsize = (int64_t)rd64(d + 40);
    }
    if (elsize < 0 || elsize > (1 << 20))
        return 0;
    *extra += count * (uint64_t)elsize;
    if ((err = owned(env, data, count * (uint64_t)elsize)) != 0)
        return err;
    int32_t type_num;
    memcpy(&type_num, d + 28, 4);
    if (type_num != 17 || elsize != 8 || !data || count > MAX_ITEMS) /* NPY_OBJECT */
        return 0;
    uint64_t buf[512];
    for (uint64_t i = 0; i < count; i += 512) {
        size_t k = count - i < 512 ? (size_t)(count - i) : 512;
        if (env->read(env->ctx, data + 8 * i, buf, 8 * k))
            return 0;
        for (size_t j = 0; j < k; j++) {
            err = buf[j] ? ref_index(env, buf[j], i + j) : 0;
            if (err)
                return err;
        }
    }
    return 0;
}

int hc_walk(const struct hc_type *t, struct hc_env *env, uint64_t obj, uint64_t *extra)
{
    *extra = 0;
    int err = 0;
    const uint64_t delta = env->head_delta;
    obj += delta; /* from here on, offsets are the default build's */
    for (size_t i = 0; i < sizeof(t->fields) / sizeof(t->fields[0]) && t->fields[i].label; i++) {
        uint64_t p;
        if (!env->covered(env->ctx, t->fields[i].off + delta) &&
            env->read(env->ctx, obj + t->fields[i].off, &p, 8) == 0 && p &&
            (err = env->ref(env->ctx, p, t->fields[i].kind, t->fields[i].label)) != 0)
            return err;
    }
    if (strcmp(t->name, "_asyncio.Task") == 0) {
        const struct hc_field *more = NULL;
        for (size_t k = 0; k < sizeof(task_more) / sizeof(task_more[0]); k++)
            if (task_more[k].basicsize == t->basicsize)
                more = task_more[k].fields;
        for (int i = 0; more && i < 3 && more[i].label; i++) {
            uint64_t p;
            if (!env->covered(env->ctx, more[i].off + delta) &&
                env->read(env->ctx, obj + more[i].off, &p, 8) == 0 && p &&
                (err = env->ref(env->ctx, p, more[i].kind, more[i].label)) != 0)
                return err;
        }
    }
    switch (t->special) {
    case HC_DEQUE:
        return walk_deque(env, obj, extra);
    case HC_ODICT: {
        /* nodes: 32 bytes per item; od_fast_nodes: 8 per slot of the dict's index */
        uint64_t used, fast_nodes, fast_size;
        if (env->read(env->ctx, obj + 16, &used, 8) == 0 &&
            env->read(env->ctx, obj + 72, &fast_size, 8) == 0 && used < MAX_ITEMS &&
            fast_size < MAX_ITEMS) {
            *extra = 32 * used + 8 * fast_size;
            if (env->read(env->ctx, obj + 64, &fast_nodes, 8) == 0)
                return owned(env, fast_nodes, 8 * fast_size);
        }
        return 0;
    }
    case HC_ARRAY: {
        uint64_t items, allocated, descr;
        int32_t itemsize;
        if (env->read(env->ctx, obj + 32, &allocated, 8) == 0 &&
            env->read(env->ctx, obj + 40, &descr, 8) == 0 && descr &&
            env->read(env->ctx, descr + 4, &itemsize, 4) == 0 && itemsize > 0 &&
            itemsize <= 16 && allocated < MAX_ITEMS) {
            *extra = allocated * (uint64_t)itemsize;
            if (env->read(env->ctx, obj + 24, &items, 8) == 0) /* ob_item */
                return owned(env, items, *extra);
        }
        return 0;
    }
    case HC_STRINGIO: {
        /* Not in sys.getsizeof (StringIO has no __sizeof__), but owned: Py_UCS4[buf_size]. */
        uint64_t buf, buf_size;
        if (env->read(env->ctx, obj + 40, &buf_size, 8) == 0 && buf_size < MAX_ITEMS) {
            *extra = 4 * buf_size;
            if (env->read(env->ctx, obj + 16, &buf, 8) == 0)
                return owned(env, buf, *extra);
        }
        return 0;
    }
    case HC_NDARRAY:
        return walk_ndarray(env, obj, extra);
    case HC_BUFFERED: {
        uint64_t buffer, size;
        if (env->read(env->ctx, obj + 56, &buffer, 8) == 0 && buffer &&
            env->read(env->ctx, obj + 120, &size, 8) == 0 && size < MAX_ITEMS) {
            *extra = size;
            return owned(env, buffer, size);
        }
        return 0;
    }
    case HC_NONE:
        break;
    }
    return 0;
}
