/* The C types the heap walker knows by layout (heap_ctypes.h). Each entry is data: the tp_name,
 * its generated table, the object pointers its tp_traverse visits (the row member that holds
 * each offset, a label, a kind) and a walker for what a table cannot say (deque blocks, native
 * buffers that __sizeof__ counts, numpy's data). No offset is typed here: every one is a row of
 * ctype_layouts.h's tables (src/cpython/ctype_layout_<module>.c), which
 * tests/tools/probe_ctypes.py makes by finding each field in the live module of every installed
 * interpreter (the word of an object of known content that holds a known referent's id() or a
 * known value; the deque's block by walking a deque of known items) and
 * tests/e2e/test_ctype_layouts.py checks the same way. A layout is matched on the versions its
 * table has a row for, and past the newest one only when it has never changed. */
#include "cpython/heap_ctypes.h"

#include <stdio.h>
#include <string.h>

#include "cpython/ctype_layouts.h"
#include "cpython/heap_walk.h"

#define MAX_ITEMS (1ULL << 31)
#define MAX_BLOCK 4096 /* a deque block larger than this is not one */

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
    /* offsetof the uint16_t member of the type's row that holds the field's offset (0 in the
     * row: no such field in that version) */
    uint16_t member;
    uint8_t kind; /* enum hw_edge_kind */
    const char *label;
};

struct hc_type {
    const char *name;
    /* its generated table (ctype_layouts.h): a row per version, its tp_basicsize in each */
    const void *rows;
    const size_t *nrows;
    size_t row_size;
    enum hc_special special;
    struct hc_field fields[16];
};

#define A HW_EDGE_ATTR
#define I HW_EDGE_INTERNAL
#define TABLE(t) .rows = t, .nrows = &t##_count, .row_size = sizeof(t[0])
#define F(m) offsetof(struct ctl_future, m)
#define BUFFERED_RAW {offsetof(struct ctl_buffered, raw), A, ".raw"}
#define LRU(m) offsetof(struct ctl_lru_wrapper, m)
#define SIO(m) offsetof(struct ctl_stringio, m)
/* A future's fields (FutureObj_HEAD), in its tp_traverse order: a Task's start the same. */
#define FUTURE_FIELDS                                                                             \
    {F(loop), A, ".loop"}, {F(callback0), A, ".callback0"}, {F(context0), A, ".context0"},        \
        {F(callbacks), A, ".callbacks"}, {F(exception), A, ".exception"},                         \
        {F(exception_tb), A, ".exception_tb"}, {F(result), A, ".result"},                         \
        {F(source_tb), A, ".source_tb"}, {F(cancel_msg), A, ".cancel_msg"},                       \
        {F(cancelled_exc), A, ".cancelled_exc"}, {F(awaited_by), A, ".awaited_by"}

static const struct hc_type types[] = {
    {"collections.deque", TABLE(ctl_collections_deque), .special = HC_DEQUE},
    /* A dict (walked as one) plus a node list and a mirror of the index; od_inst_dict is its
     * tp_dictoffset. */
    {"collections.OrderedDict", TABLE(ctl_collections_odict), .special = HC_ODICT},
    {"collections.defaultdict", TABLE(ctl_collections_defaultdict),
     .fields = {{offsetof(struct ctl_defaultdict, default_factory), A, ".default_factory"}}},
    /* The buffer is a bytes object: an edge, not extra bytes (sys.getsizeof adds it when it is
     * not shared; the bytes object's own node carries it here). */
    {"_io.BytesIO", TABLE(ctl_io_bytesio),
     .fields = {{offsetof(struct ctl_bytesio, buf), I, ".buf"}}},
    {"_io.StringIO", TABLE(ctl_io_stringio), .special = HC_STRINGIO,
     .fields = {{SIO(accu_large), I, ".accu.large"},
                {SIO(accu_small), I, ".accu.small"},
                {SIO(writer_buffer), I, ".writer.buffer"},
                {SIO(decoder), A, ".decoder"},
                {SIO(readnl), I, ".readnl"},
                {SIO(writenl), I, ".writenl"}}},
    {"array.array", TABLE(ctl_array_array), .special = HC_ARRAY},
    /* The read/write buffer: owned native bytes (NULL once closed). */
    {"_io.BufferedReader", TABLE(ctl_io_buffered), .special = HC_BUFFERED,
     .fields = {BUFFERED_RAW}},
    {"_io.BufferedWriter", TABLE(ctl_io_buffered), .special = HC_BUFFERED,
     .fields = {BUFFERED_RAW}},
    {"_io.BufferedRandom", TABLE(ctl_io_buffered), .special = HC_BUFFERED,
     .fields = {BUFFERED_RAW}},
    /* 3.14+: placeholders after the same first fields. */
    {"functools.partial", TABLE(ctl_functools_partial),
     .fields = {{offsetof(struct ctl_partial, fn), A, ".func"},
                {offsetof(struct ctl_partial, args), A, ".args"},
                {offsetof(struct ctl_partial, kw), A, ".keywords"}}},
    {"functools._lru_cache_wrapper", TABLE(ctl_functools_lru_wrapper),
     .fields = {{LRU(cache), A, ".cache"},
                {LRU(wrapped), A, ".__wrapped__"},
                {LRU(kwd_mark), I, ".kwd_mark"},
                {LRU(lru_list_elem_type), I, ".lru_list_elem_type"},
                {LRU(cache_info_type), I, ".cache_info_type"}}},
    /* Not GC: reached from the wrapper's cache dict (bounded caches map key -> link). */
    {"functools._lru_list_elem", TABLE(ctl_functools_lru_elem),
     .fields = {{offsetof(struct ctl_lru_elem, key), A, ".key"},
                {offsetof(struct ctl_lru_elem, result), A, ".result"}}},
    {"itertools.chain", TABLE(ctl_itertools_chain),
     .fields = {{offsetof(struct ctl_chain, source), A, ".source"},
                {offsetof(struct ctl_chain, active), A, ".active"}}},
    {"itertools.cycle", TABLE(ctl_itertools_cycle),
     .fields = {{offsetof(struct ctl_cycle, it), A, ".it"},
                {offsetof(struct ctl_cycle, saved), A, ".saved"}}},
    {"itertools.count", TABLE(ctl_itertools_count),
     .fields = {{offsetof(struct ctl_count, long_cnt), A, ".long_cnt"},
                {offsetof(struct ctl_count, long_step), A, ".long_step"}}},
    {"_asyncio.Future", TABLE(ctl_asyncio_future), .fields = {FUTURE_FIELDS}},
    {"_asyncio.Task", TABLE(ctl_asyncio_task),
     .fields = {FUTURE_FIELDS, {F(fut_waiter), A, ".fut_waiter"}, {F(coro), A, ".coro"},
                {F(name), A, ".name"}, {F(context), A, ".context"}}},
    /* data (owned iff OWNDATA), dimensions+strides (one block of 2 npy_intp per dimension), base,
     * descr, mem_handler; not GC, so only ever reached through references. */
    {"numpy.ndarray", TABLE(ctl_numpy_ndarray), .special = HC_NDARRAY,
     .fields = {{offsetof(struct ctl_ndarray, base), A, ".base"},
                {offsetof(struct ctl_ndarray, descr), I, ".dtype"},
                {offsetof(struct ctl_ndarray, mem_handler), I, ".mem_handler"}}},
};

#undef A
#undef I
#undef F
#undef BUFFERED_RAW
#undef LRU
#undef SIO

/* The type's row for Python 3.<minor>'s default build (the walker reads a free-threaded build's
 * objects at the default build's offsets past env.head_delta), or NULL. */
static const void *row_of(const struct hc_type *t, int minor)
{
    return ctl_row(t->rows, *t->nrows, t->row_size, minor, false, true);
}

/* A field's offset in the object, from the row. */
static uint16_t field_off(const struct hc_field *f, const void *row)
{
    uint16_t off;
    memcpy(&off, (const char *)row + f->member, sizeof(off));
    return off;
}

const struct hc_type *hc_lookup(int minor, const char *tp_name, int64_t basicsize)
{
    if (!tp_name)
        return NULL;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        const struct hc_type *t = &types[i];
        if (strcmp(t->name, tp_name) != 0)
            continue;
        const void *row = row_of(t, minor);
        if (row && ctl_basicsize(row) == basicsize)
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
static int walk_deque(struct hc_env *env, const struct ctl_deque *D, uint64_t obj, uint64_t *extra)
{
    uint64_t len_, left_, block;
    if (env->read(env->ctx, obj + D->len, &len_, 8) ||
        env->read(env->ctx, obj + D->leftindex, &left_, 8) ||
        env->read(env->ctx, obj + D->leftblock, &block, 8))
        return 0;
    int64_t len = (int64_t)len_, left = (int64_t)left_;
    const uint64_t slots = D->block_slots;
    if (len < 0 || (uint64_t)len > MAX_ITEMS || left < 0 || (uint64_t)left >= slots ||
        D->block_size > MAX_BLOCK || D->block_items + 8 * slots > D->block_size ||
        D->block_next + 8u > D->block_size)
        return 0;
    *extra = (((uint64_t)left + (uint64_t)len + slots - 1) / slots) * D->block_size;
    uint8_t b[MAX_BLOCK];
    uint64_t i = 0;
    int64_t idx = left;
    int err = len == 0 ? owned(env, block, D->block_size) : 0; /* the one block of an empty deque */
    if (err)
        return err;
    while (i < (uint64_t)len && block) {
        if (env->read(env->ctx, block, b, D->block_size))
            return 0;
        if ((err = owned(env, block, D->block_size)) != 0)
            return err;
        for (; (uint64_t)idx < slots && i < (uint64_t)len; idx++, i++) {
            uint64_t item = rd64(b + D->block_items + 8 * (uint64_t)idx);
            err = item ? ref_index(env, item, i) : 0;
            if (err)
                return err;
        }
        block = rd64(b + D->block_next);
        idx = 0;
    }
    return 0;
}

/* numpy's descr layout, told by the tp_basicsize of the `numpy.dtype` base of the descr's type
 * (2.x moved elsize to an npy_intp): its ctl_numpy_dtype row, or NULL. */
static const struct ctl_dtype *numpy_descr_row(struct hc_env *env, uint64_t descr)
{
    if (env->numpy_descr)
        return &ctl_numpy_dtype[env->numpy_descr - 1];
    uint64_t t;
    if (env->read(env->ctx, descr + env->ob_type, &t, 8))
        return NULL;
    for (int depth = 0; t && depth < 8; depth++) {
        const char *name = env->type_name(env->ctx, t);
        int64_t bs;
        if (name && strcmp(name, "numpy.dtype") == 0 &&
            env->read(env->ctx, t + env->tp_basicsize, &bs, 8) == 0) {
            bs -= (int64_t)env->head_delta;
            for (size_t i = 0; i < ctl_numpy_dtype_count; i++)
                if (!ctl_numpy_dtype[i].ft && ctl_numpy_dtype[i].dtype_basicsize == bs) {
                    env->numpy_descr = (int)i + 1;
                    return &ctl_numpy_dtype[i];
                }
            return NULL;
        }
        if (env->read(env->ctx, t + env->tp_base, &t, 8))
            return NULL;
    }
    return NULL;
}

/* ndarray: __sizeof__ = basicsize + 16 * nd + (OWNDATA ? nbytes : 0); an owning object array's
 * items are references (numpy has no tp_traverse on arrays: nothing else reports them). */
static int walk_ndarray(struct hc_env *env, const struct ctl_ndarray *N, uint64_t obj,
                        uint64_t *extra)
{
    uint64_t data, dims, descr;
    int32_t nd, flags;
    if (env->read(env->ctx, obj + N->data, &data, 8) ||
        env->read(env->ctx, obj + N->dimensions, &dims, 8) ||
        env->read(env->ctx, obj + N->descr, &descr, 8) ||
        env->read(env->ctx, obj + N->nd, &nd, 4) || env->read(env->ctx, obj + N->flags, &flags, 4))
        return 0;
    if (nd < 0 || nd > 64)
        return 0;
    *extra = 16 * (uint64_t)nd; /* dimensions and strides: two npy_intp each */
    int err = owned(env, dims, 16 * (uint64_t)nd);
    if (err || !(flags & N->owndata) || !descr)
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
    const struct ctl_dtype *T = numpy_descr_row(env, descr);
    int64_t elsize = 0;
    int32_t type_num;
    if (!T || T->elsize_bytes > sizeof(elsize) ||
        env->read(env->ctx, descr + env->head_delta + T->elsize, &elsize, T->elsize_bytes) ||
        env->read(env->ctx, descr + env->head_delta + T->type_num, &type_num, 4))
        return 0;
    if (T->elsize_bytes == 4)
        elsize = (int32_t)elsize; /* an int: its sign */
    if (elsize < 0 || elsize > (1 << 20))
        return 0;
    *extra += count * (uint64_t)elsize;
    if ((err = owned(env, data, count * (uint64_t)elsize)) != 0)
        return err;
    if (type_num != T->object_type_num || elsize != 8 || !data || count > MAX_ITEMS)
        return 0; /* not an array of object pointers */
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
    const void *row = row_of(t, env->minor);
    if (!row)
        return 0;
    for (size_t i = 0; i < sizeof(t->fields) / sizeof(t->fields[0]) && t->fields[i].label; i++) {
        uint16_t off = field_off(&t->fields[i], row);
        uint64_t p;
        if (off && !env->covered(env->ctx, off + delta) &&
            env->read(env->ctx, obj + off, &p, 8) == 0 && p &&
            (err = env->ref(env->ctx, p, t->fields[i].kind, t->fields[i].label)) != 0)
            return err;
    }
    switch (t->special) {
    case HC_DEQUE:
        return walk_deque(env, row, obj, extra);
    case HC_ODICT: {
        /* the nodes, and od_fast_nodes: a pointer per slot of the dict's index */
        const struct ctl_odict *R = row;
        uint64_t used, fast_nodes, fast_size;
        if (env->read(env->ctx, obj + R->used, &used, 8) == 0 &&
            env->read(env->ctx, obj + R->fast_nodes_size, &fast_size, 8) == 0 &&
            used < MAX_ITEMS && fast_size < MAX_ITEMS) {
            *extra = R->node_size * used + 8 * fast_size;
            if (env->read(env->ctx, obj + R->fast_nodes, &fast_nodes, 8) == 0)
                return owned(env, fast_nodes, 8 * fast_size);
        }
        return 0;
    }
    case HC_ARRAY: {
        const struct ctl_array *R = row;
        uint64_t items, allocated, descr;
        int32_t itemsize;
        if (env->read(env->ctx, obj + R->allocated, &allocated, 8) == 0 &&
            env->read(env->ctx, obj + R->ob_descr, &descr, 8) == 0 && descr &&
            env->read(env->ctx, descr + R->descr_itemsize, &itemsize, 4) == 0 && itemsize > 0 &&
            itemsize <= 16 && allocated < MAX_ITEMS) {
            *extra = allocated * (uint64_t)itemsize;
            if (env->read(env->ctx, obj + R->ob_item, &items, 8) == 0)
                return owned(env, items, *extra);
        }
        return 0;
    }
    case HC_STRINGIO: {
        /* Not in sys.getsizeof (StringIO has no __sizeof__), but owned: Py_UCS4[buf_size]. */
        const struct ctl_stringio *R = row;
        uint64_t buf, buf_size;
        if (env->read(env->ctx, obj + R->buf_size, &buf_size, 8) == 0 && buf_size < MAX_ITEMS) {
            *extra = 4 * buf_size;
            if (env->read(env->ctx, obj + R->buf, &buf, 8) == 0)
                return owned(env, buf, *extra);
        }
        return 0;
    }
    case HC_NDARRAY:
        return walk_ndarray(env, row, obj, extra);
    case HC_BUFFERED: {
        const struct ctl_buffered *R = row;
        uint64_t buffer, size;
        if (env->read(env->ctx, obj + R->buffer, &buffer, 8) == 0 && buffer &&
            env->read(env->ctx, obj + R->buffer_size, &size, 8) == 0 && size < MAX_ITEMS) {
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
