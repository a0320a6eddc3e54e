/* Unit tests of heap_ctypes.c on synthetic memory: which type a name, basicsize and version
 * select; a deque's items across blocks (in order, from leftindex) and its __sizeof__ blocks;
 * array.array's buffer; numpy's data size with numpy 1.x and 2.x dtype layouts, views counting
 * none, an owning object array's items; members a heap type reports itself are not repeated. */
#include <stdlib.h>
#include <string.h>

#include "cpython/ctype_layouts.h"
#include "cpython/heap_ctypes.h"
#include "cpython/heap_walk.h"
#include "testlib.h"

/* A little fake address space: one buffer at BASE. */
#define BASE 0x100000ULL
#define SPACE (64 * 1024)

struct fake {
    uint8_t mem[SPACE];
    uint64_t to[256];
    char labels[256][32];
    int kinds[256];
    int n;
    uint64_t covered_off; /* 0: nothing covered */
    uint64_t buf_addr[8], buf_size[8]; /* owned blocks reported */
    int nbuf;
};

static int f_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
    struct fake *f = ctx;
    if (addr < BASE || addr + n > BASE + SPACE)
        return -1;
    memcpy(buf, f->mem + (addr - BASE), n);
    return 0;
}

static int f_ref(void *ctx, uint64_t to, int kind, const char *label)
{
    struct fake *f = ctx;
    if (f->n < 256) {
        f->to[f->n] = to;
        f->kinds[f->n] = kind;
        snprintf(f->labels[f->n], sizeof(f->labels[0]), "%s", label);
        f->n++;
    }
    return 0;
}

static int f_buffer(void *ctx, uint64_t addr, uint64_t size)
{
    struct fake *f = ctx;
    if (f->nbuf < 8) {
        f->buf_addr[f->nbuf] = addr;
        f->buf_size[f->nbuf++] = size;
    }
    return 0;
}

static bool f_covered(void *ctx, uint64_t off)
{
    const struct fake *f = ctx;
    return f->covered_off && off == f->covered_off;
}

/* Type names: a type object at address T has its name at NAMES + (T - TYPES). */
#define TYPES (BASE + 0x8000)
#define T_DTYPE1 (TYPES + 0x000) /* numpy.dtype of numpy 1.x: basicsize 96 */
#define T_DTYPE2 (TYPES + 0x400) /* numpy.dtype of numpy 2.x: basicsize 88 */
#define T_F8 (TYPES + 0x800)     /* numpy.dtypes.Float64DType, base numpy.dtype (2.x) */

static const char *f_type_name(void *ctx, uint64_t t)
{
    (void)ctx;
    if (t == T_DTYPE1 || t == T_DTYPE2)
        return "numpy.dtype";
    if (t == T_F8)
        return "numpy.dtypes.Float64DType";
    return NULL;
}

static void put64(struct fake *f, uint64_t addr, uint64_t v) { memcpy(f->mem + (addr - BASE), &v, 8); }
static void put32(struct fake *f, uint64_t addr, uint32_t v) { memcpy(f->mem + (addr - BASE), &v, 4); }

static struct hc_env env_of(struct fake *f)
{
    return (struct hc_env){f, f_read, f_ref, f_covered, f_type_name, 32, 256, 0, 0, f_buffer,
                           12, 8};
}

static struct fake *fake_new(void)
{
    struct fake *f = calloc(1, sizeof(*f));
    put64(f, T_DTYPE1 + 32, 96);
    put64(f, T_DTYPE2 + 32, 88);
    put64(f, T_F8 + 32, 120);
    put64(f, T_F8 + 256, T_DTYPE2);
    return f;
}

static void test_lookup(void)
{
    CHECK(hc_lookup(12, "collections.deque", 216) != NULL);
    CHECK(hc_lookup(12, "collections.deque", 224) == NULL); /* a name alone is not enough */
    CHECK(hc_lookup(12, "deque", 216) == NULL);
    CHECK(hc_lookup(11, "_asyncio.Future", 128) != NULL);
    CHECK(hc_lookup(13, "_asyncio.Future", 128) == NULL); /* 3.13's is 104 */
    CHECK(hc_lookup(13, "_asyncio.Future", 104) != NULL);
    CHECK(hc_lookup(14, "_asyncio.Future", 104) == NULL); /* not checked on 3.14 */
    CHECK(hc_lookup(16, "array.array", 64) != NULL);     /* a layout that never changed holds on */
    CHECK(hc_lookup(16, "_asyncio.Future", 112) == NULL); /* one that changed: not past 3.15 */
    CHECK(hc_lookup(10, "array.array", 64) == NULL);
    CHECK(hc_lookup(12, NULL, 64) == NULL);
    CHECK_STR(hc_name(hc_lookup(12, "_io.StringIO", 168)), "_io.StringIO");
    CHECK(hc_lookup(11, "_io.StringIO", 168) == NULL);
}

/* A deque of 100 items starting at leftindex 60: blocks 60..63, 0..63, 0..31; behind the
 * default build's 16-byte header, then a free-threaded build's 32-byte one (head_delta 16). */
static void test_deque(void)
{
    for (uint64_t delta = 0; delta <= 16; delta += 16) {
        struct fake *f = fake_new();
        struct hc_env env = env_of(f);
        env.head_delta = delta;
        uint64_t obj = BASE, d = obj + delta, b[3] = {BASE + 0x1000, BASE + 0x2000, BASE + 0x3000};
        put64(f, d + 16, 100);
        put64(f, d + 24, b[0]);
        put64(f, d + 32, b[2]);
        put64(f, d + 40, 60);
        put64(f, d + 48, 31);
        put64(f, b[0] + 520, b[1]);
        put64(f, b[1] + 520, b[2]);
        for (int i = 0; i < 100; i++) {
            int pos = 60 + i, blk = pos / 64, slot = pos % 64;
            put64(f, b[blk] + 8 + 8 * (uint64_t)slot, 0x700000 + 16 * (uint64_t)i);
        }
        uint64_t extra;
        CHECK_EQ(hc_walk(hc_lookup(12, "collections.deque", 216), &env, obj, &extra), 0);
        CHECK_EQ(extra, 3 * 528); /* (60 + 100 + 63) / 64 blocks */
        CHECK_EQ(f->nbuf, 3);     /* each block, owned */
        for (int i = 0; i < 3 && i < f->nbuf; i++) {
            CHECK_EQ_U64(f->buf_addr[i], b[i]);
            CHECK_EQ_U64(f->buf_size[i], 528);
        }
        CHECK_EQ(f->n, 100);
        CHECK_EQ_U64(f->to[0], 0x700000);
        CHECK_EQ_U64(f->to[99], 0x700000 + 16 * 99);
        CHECK_STR(f->labels[99], "[99]");
        CHECK_EQ(f->kinds[4], HW_EDGE_INDEX);
        /* A damaged length reports nothing. */
        f->n = 0;
        put64(f, d + 16, (uint64_t)-5);
        CHECK_EQ(hc_walk(hc_lookup(12, "collections.deque", 216), &env, obj, &extra), 0);
        CHECK_EQ(f->n, 0);
        CHECK_EQ(extra, 0);
        free(f);
    }
}

static void test_array_and_partial(void)
{
    struct fake *f = fake_new();
    struct hc_env env = env_of(f);
    uint64_t obj = BASE, descr = BASE + 0x100;
    put64(f, obj + 32, 1000); /* allocated */
    put64(f, obj + 40, descr);
    put32(f, descr + 4, 8); /* 'd' */
    put64(f, obj + 24, 0x600000); /* ob_item */
    uint64_t extra;
    CHECK_EQ(hc_walk(hc_lookup(12, "array.array", 64), &env, obj, &extra), 0);
    CHECK_EQ(extra, 8000);
    CHECK_EQ(f->n, 0);
    CHECK_EQ(f->nbuf, 1);
    CHECK_EQ_U64(f->buf_addr[0], 0x600000);
    CHECK_EQ_U64(f->buf_size[0], 8000);
    f->nbuf = 0;

    /* partial: fn, args, kw; a heap type whose tp_members the caller follows itself. */
    put64(f, obj + 16, 0x500000);
    put64(f, obj + 24, 0x500010);
    put64(f, obj + 32, 0x500020);
    f->covered_off = 24;
    CHECK_EQ(hc_walk(hc_lookup(12, "functools.partial", 64), &env, obj, &extra), 0);
    CHECK_EQ(extra, 0);
    CHECK_EQ(f->n, 2);
    CHECK_STR(f->labels[0], ".func");
    CHECK_STR(f->labels[1], ".keywords");
    free(f);
}

static void ndarray(struct fake *f, uint64_t obj, int nd, const int64_t *dims, uint64_t descr,
                    int flags, uint64_t data)
{
    uint64_t dimv = obj + 0x100;
    put64(f, obj + 16, data);
    put32(f, obj + 24, (uint32_t)nd);
    put64(f, obj + 32, dimv);
    for (int i = 0; i < nd; i++)
        put64(f, dimv + 8 * (uint64_t)i, (uint64_t)dims[i]);
    put64(f, obj + 48, 0);
    put64(f, obj + 56, descr);
    put32(f, obj + 64, (uint32_t)flags);
}

static void test_ndarray(void)
{
    const struct hc_type *t = hc_lookup(12, "numpy.ndarray", 96);
    struct fake *f = fake_new();
    struct hc_env env = env_of(f);
    /* numpy 2.x: float64 descr of type Float64DType (base numpy.dtype, 88): elsize at 40. */
    uint64_t d2 = BASE + 0x4000;
    put64(f, d2 + 8, T_F8);
    put64(f, d2 + 40, 8);
    put32(f, d2 + 28, 12);
    int64_t dims[2] = {4, 6};
    ndarray(f, BASE, 2, dims, d2, 0x4 | 0x1, BASE + 0x6000);
    uint64_t extra;
    CHECK_EQ(hc_walk(t, &env, BASE, &extra), 0);
    CHECK_EQ(extra, 32 + 4 * 6 * 8); /* getsizeof 4x6 f8 owner: 96 + 32 + 192 = 320 */
    CHECK(env.numpy_descr > 0 && ctl_numpy_dtype[env.numpy_descr - 1].numpy_major == 2);
    /* owned: the dimensions and strides, then the data */
    CHECK_EQ(f->nbuf, 2);
    CHECK_EQ_U64(f->buf_addr[0], BASE + 0x100);
    CHECK_EQ_U64(f->buf_size[0], 32);
    CHECK_EQ_U64(f->buf_addr[1], BASE + 0x6000);
    CHECK_EQ_U64(f->buf_size[1], 4 * 6 * 8);
    /* A view: no data of its own. */
    f->nbuf = 0;
    ndarray(f, BASE, 2, dims, d2, 0x1, BASE + 0x6000);
    CHECK_EQ(hc_walk(t, &env, BASE, &extra), 0);
    CHECK_EQ(extra, 32);
    CHECK_EQ(f->nbuf, 1); /* its dimensions only */
    /* 0-d: no dimensions block. */
    ndarray(f, BASE, 0, dims, d2, 0x4, BASE + 0x6000);
    CHECK_EQ(hc_walk(t, &env, BASE, &extra), 0);
    CHECK_EQ(extra, 8);
    free(f);

    /* numpy 1.x: every descr is a numpy.dtype of 96 bytes; elsize is an int at 32. An object
     * array (type_num 17) that owns its data refers to its items. */
    f = fake_new();
    env = env_of(f);
    uint64_t d1 = BASE + 0x4000, data = BASE + 0x6000;
    put64(f, d1 + 8, T_DTYPE1);
    put32(f, d1 + 32, 8);
    put32(f, d1 + 28, 17);
    int64_t n[1] = {3};
    ndarray(f, BASE, 1, n, d1, 0x4 | 0x1, data);
    put64(f, data, 0x900000);
    put64(f, data + 8, 0);
    put64(f, data + 16, 0x900100);
    CHECK_EQ(hc_walk(t, &env, BASE, &extra), 0);
    CHECK(env.numpy_descr > 0 && ctl_numpy_dtype[env.numpy_descr - 1].numpy_major == 1);
    CHECK_EQ(extra, 16 + 24);
    CHECK_EQ(f->n, 3); /* .dtype (no base, no mem_handler here), then the items */
    CHECK_STR(f->labels[0], ".dtype");
    CHECK_EQ_U64(f->to[0], d1);
    CHECK_EQ_U64(f->to[1], 0x900000);
    CHECK_STR(f->labels[2], "[2]");
    CHECK_EQ_U64(f->to[2], 0x900100);
    free(f);
}

static const struct tl_test tests[] = {
    TL(test_lookup),
    TL(test_deque),
    TL(test_array_and_partial),
    TL(test_ndarray),
};
TL_MAIN(tests)
