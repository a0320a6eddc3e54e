/* Is a thread on an operator instruction running a C type's code? (operators.h) The generic
 * operator instructions per CPython version, the slots each may call, and the test of a frame's
 * value-stack values against the interpreter's address ranges. Numbers from each interpreter's
 * opcode.opmap (3.11's adaptive forms from dis._all_opmap), by hand: tests/e2e/test_opcodes.py
 * checks the names behind them against every installed interpreter. */
#include "cpython/operators.h"

#include <string.h>

#include "cpython/frames.h"
#include "reader/reader.h"

#define PY_OPS_KNOWN (1ULL << 63) /* a cached type's bits were read */
#define MAX_STACK_SLOTS 32        /* value-stack slots looked at (deeper ones are rare) */
#define MAX_TYPES 8               /* distinct types tested per sample */

enum op_kind {
    K_BINARY,
    K_SUBSCR,
    K_STORE_SUBSCR,
    K_COMPARE,
    K_CONTAINS,
    K_ITER,
    K_LOAD_ATTR,
    K_STORE_ATTR
};

struct op_entry {
    uint8_t opcode;
    uint8_t kind;
};

/* Generic forms (and 3.11's adaptive ones, which stay in place when specialising fails); the
 * specialised forms run inline in the eval loop. */
static const struct op_entry ops_311[] = {
    {122, K_BINARY},      {3, K_BINARY},         {25, K_SUBSCR},    {17, K_SUBSCR},
    {60, K_STORE_SUBSCR}, {168, K_STORE_SUBSCR}, {107, K_COMPARE},  {26, K_COMPARE},
    {118, K_CONTAINS},    {93, K_ITER},          {106, K_LOAD_ATTR}, {39, K_LOAD_ATTR},
    {160, K_LOAD_ATTR},   {56, K_LOAD_ATTR},     {95, K_STORE_ATTR}, {153, K_STORE_ATTR},
};
static const struct op_entry ops_312[] = {
    {122, K_BINARY},  {25, K_SUBSCR}, {60, K_STORE_SUBSCR}, {107, K_COMPARE}, {118, K_CONTAINS},
    {93, K_ITER},     {248, K_ITER},  {106, K_LOAD_ATTR},   {95, K_STORE_ATTR},
};
static const struct op_entry ops_313[] = {
    {45, K_BINARY}, {5, K_SUBSCR}, {39, K_STORE_SUBSCR}, {58, K_COMPARE}, {59, K_CONTAINS},
    {72, K_ITER},   {243, K_ITER}, {82, K_LOAD_ATTR},    {108, K_STORE_ATTR},
};
static const struct op_entry ops_314[] = {
    {44, K_BINARY}, {38, K_STORE_SUBSCR}, {56, K_COMPARE}, {57, K_CONTAINS},
    {70, K_ITER},   {237, K_ITER},        {80, K_LOAD_ATTR}, {110, K_STORE_ATTR},
};
static const struct op_entry ops_315[] = {
    {42, K_BINARY}, {36, K_STORE_SUBSCR}, {54, K_COMPARE}, {55, K_CONTAINS},
    {68, K_ITER},   {236, K_ITER},        {79, K_LOAD_ATTR}, {109, K_STORE_ATTR},
};

/* BINARY_OP's oparg (NB_ADD ... NB_XOR, alphabetical, the same 3.11-3.15) -> the index of its
 * function in PyNumberMethods; NB_INPLACE_* (13-25) -> the in-place one, whose absence falls
 * back to the binary one. */
static const uint8_t nb_binary[13] = {0, 13, 29, 11, 34, 2, 3, 15, 5, 12, 1, 30, 14};
static const uint8_t nb_inplace[13] = {19, 26, 31, 24, 35, 21, 22, 28, 23, 25, 20, 32, 27};
#define NB_SUBSCR 26 /* 3.14+: BINARY_OP also does subscripts */

#define OPS(minor, table) {minor, table, sizeof(table) / sizeof(*table)}
static const struct {
    int minor;
    const struct op_entry *ops;
    size_t n;
} versions[] = {OPS(11, ops_311), OPS(12, ops_312), OPS(13, ops_313), OPS(14, ops_314),
                OPS(15, ops_315)};

uint64_t py_operator_slots(int minor, uint8_t opcode, uint8_t oparg)
{
    const struct op_entry *t = NULL;
    size_t n = 0;
    for (size_t v = 0; v < sizeof(versions) / sizeof(*versions); v++)
        if (versions[v].minor == minor) {
            t = versions[v].ops;
            n = versions[v].n;
        }
    for (size_t i = 0; i < n; i++) {
        if (t[i].opcode != opcode)
            continue;
        switch (t[i].kind) {
        case K_BINARY:
            if (oparg < 13)
                return 1ULL << nb_binary[oparg];
            if (oparg < 26)
                return 1ULL << nb_inplace[oparg - 13] | 1ULL << nb_binary[oparg - 13];
            return oparg == NB_SUBSCR && minor >= 14 ? 1ULL << PY_OPS_MP_SUBSCRIPT : 0;
        case K_SUBSCR:
            return 1ULL << PY_OPS_MP_SUBSCRIPT;
        case K_STORE_SUBSCR:
            return 1ULL << PY_OPS_MP_ASS_SUBSCRIPT;
        case K_COMPARE:
            return 1ULL << PY_OPS_RICHCOMPARE;
        case K_CONTAINS:
            return 1ULL << PY_OPS_SQ_CONTAINS;
        case K_ITER:
            return 1ULL << PY_OPS_ITERNEXT;
        case K_LOAD_ATTR:
            return 1ULL << PY_OPS_GETATTRO;
        default:
            return 1ULL << PY_OPS_SETATTRO;
        }
    }
    return 0;
}

void py_op_cache_init(struct py_op_cache *c)
{
    memset(c, 0, sizeof(*c));
    c->types = (struct hashmap)HASHMAP_INIT;
}

void py_op_cache_clear(struct py_op_cache *c)
{
    hm_clear(&c->types);
}

void py_op_cache_free(struct py_op_cache *c)
{
    hm_free(&c->types);
}

/* The frame walker's facts and the executable mappings of the interpreter's image and
 * executable, once: a function there is the interpreter's own (Python time, as for the agent). */
static bool prepare(struct py_runtime *rt, struct py_op_cache *c)
{
    if (c->ready || c->failed)
        return c->ready;
    c->failed = true;
    if (py_runtime_fw(rt, &c->fw) != 0 || !c->fw.co_nlocalsplus)
        return false;
    size_t nm;
    const struct rd_mapping *m = rd_mappings(rt->rd, &nm);
    const char *exe = rd_exe_path(rt->rd);
    for (size_t i = 0; i < nm && c->nranges < 16; i++) {
        if (!(m[i].prot & RD_PROT_X) || !m[i].path || !m[i].path[0])
            continue;
        if (strcmp(m[i].path, rt->image_path) != 0 && !(exe && strcmp(m[i].path, exe) == 0))
            continue;
        c->ranges[c->nranges][0] = m[i].start;
        c->ranges[c->nranges][1] = m[i].end;
        c->nranges++;
    }
    c->ready = c->nranges > 0;
    c->failed = !c->ready;
    return c->ready;
}

/* A function pointer that is set and not the interpreter's own. */
static bool outside(const struct py_op_cache *c, uint64_t fn)
{
    if (!fn)
        return false;
    for (int i = 0; i < c->nranges; i++)
        if (fn >= c->ranges[i][0] && fn < c->ranges[i][1])
            return false;
    return true;
}

/* Reads a method table (tp_as_number & co.) of n pointers; a missing table has none. */
static void table_bits(struct py_runtime *rt, const struct py_op_cache *c, uint64_t table,
                       const int *index, const int *bit, int n, uint64_t *bits)
{
    uint64_t fn[36];
    int last = 0;
    for (int i = 0; i < n; i++)
        last = index[i] > last ? index[i] : last;
    if (!table || rd_read(rt->rd, table, fn, 8 * (size_t)(last + 1)) != 0)
        return;
    for (int i = 0; i < n; i++)
        if (outside(c, fn[index[i]]))
            *bits |= 1ULL << bit[i];
}

/* Whether head (a type's first bytes) is a type object: ready (Py_TPFLAGS_READY), of type `type`
 * or of a metaclass whose type is `type`. A stale value-stack slot can point at freed memory
 * whose "type" is any word: its "slots" must not be taken for an extension's code. */
static bool is_type(struct py_runtime *rt, const uint8_t *head)
{
    uint64_t meta = py_u64_at(head + rt->layout.ob_type), metameta;
    if (!(py_u64_at(head + rt->layout.tp_flags) & (1ULL << 12)) || !rt->types.type)
        return false;
    if (meta == rt->types.type)
        return true;
    return meta >= 4096 && rd_read(rt->rd, meta + rt->layout.ob_type, &metameta, 8) == 0 &&
           metameta == rt->types.type;
}

/* A type's slot bits, read once: PyTypeObject's fields keep their order on every version (the
 * stable ABI), so they are found from tp_flags' offset, which the layout has. */
static uint64_t type_bits(struct py_runtime *rt, struct py_op_cache *c, uint64_t type)
{
    uint64_t bits;
    if (hm_get(&c->types, type, &bits))
        return bits;
    bits = PY_OPS_KNOWN;
    uint64_t f = rt->layout.tp_flags;
    uint8_t head[512];
    if (f < 72 || f + 64 > sizeof(head) || rd_read(rt->rd, type, head, f + 64) != 0 ||
        !is_type(rt, head))
        goto out;
    static const int nb_index[36] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                     12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
                                     24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35};
    table_bits(rt, c, py_u64_at(head + f - 72), nb_index, nb_index, 36, &bits);
    static const int mp_index[2] = {1, 2}, mp_bit[2] = {PY_OPS_MP_SUBSCRIPT,
                                                        PY_OPS_MP_ASS_SUBSCRIPT};
    table_bits(rt, c, py_u64_at(head + f - 56), mp_index, mp_bit, 2, &bits);
    static const int sq_index[1] = {7}, sq_bit[1] = {PY_OPS_SQ_CONTAINS};
    table_bits(rt, c, py_u64_at(head + f - 64), sq_index, sq_bit, 1, &bits);
    if (outside(c, py_u64_at(head + f - 24)))
        bits |= 1ULL << PY_OPS_GETATTRO;
    if (outside(c, py_u64_at(head + f - 16)))
        bits |= 1ULL << PY_OPS_SETATTRO;
    if (outside(c, py_u64_at(head + f + 32)))
        bits |= 1ULL << PY_OPS_RICHCOMPARE;
    if (outside(c, py_u64_at(head + f + 56)))
        bits |= 1ULL << PY_OPS_ITERNEXT;
out:
    hm_put(&c->types, type, bits); /* out of memory: asked again next time */
    return bits;
}

bool py_operator_in_c(struct py_runtime *rt, struct py_op_cache *c, uint64_t frame_addr,
                      uint64_t code, uint64_t slots)
{
    if (!slots || !prepare(rt, c))
        return false;
    const struct py_layout *L = &rt->layout;
    int32_t nlocalsplus, stacksize;
    if (rd_read(rt->rd, code + c->fw.co_nlocalsplus, &nlocalsplus, 4) != 0 ||
        rd_read(rt->rd, code + c->fw.co_stacksize, &stacksize, 4) != 0 || nlocalsplus < 0 ||
        stacksize <= 0)
        return false;
    size_t n = stacksize < MAX_STACK_SLOTS ? (size_t)stacksize : MAX_STACK_SLOTS;
    uint64_t refs[MAX_STACK_SLOTS], seen[MAX_TYPES];
    size_t nseen = 0;
    if (rd_read(rt->rd, frame_addr + L->fr_localsplus + 8 * (uint64_t)nlocalsplus, refs, 8 * n))
        return false;
    for (size_t i = 0; i < n && nseen < MAX_TYPES; i++) {
        uint64_t obj = py_fw_object(L, refs[i]), type;
        if (obj < 4096 || rd_read(rt->rd, obj + L->ob_type, &type, 8) != 0 || type < 4096)
            continue;
        bool dup = false;
        for (size_t k = 0; k < nseen && !dup; k++)
            dup = seen[k] == type;
        if (dup)
            continue;
        seen[nseen++] = type;
        if (type_bits(rt, c, type) & slots)
            return true;
    }
    return false;
}
