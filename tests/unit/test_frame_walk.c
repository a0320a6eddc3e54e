/* The frame walker (cpython/frame_walk.h) over synthetic memory images, for the layout of every
 * supported version: 3.11 and 3.12 from their tables, 3.13, 3.14 and 3.15 from the real
 * _Py_DebugOffsets blocks of pyenv's 3.13.0, 3.14.10 and 3.15.2 (read from _PyRuntime in the
 * running interpreters, ctypes.string_at). Each test builds thread states, frames and code
 * objects by hand in a buffer that a fake memory interface reads (failing outside it and in a
 * chosen hole) and checks what the walker finds: code addresses, instruction offsets and lines,
 * owners, eval-loop groups, and clean ends on faults, loops and limits; and `scry stacks`' walk
 * (py_thread_stack) over the same image through a reader, with names and lines resolved. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "cpython/frame_walk.h"
#include "cpython/frames.h"
#include "cpython/layout.h"
#include "cpython/linetable.h"
#include "reader/reader_impl.h"
#include "testlib.h"
#include "test_layouts.h"

/* ---- a memory image ---------------------------------------------------------------------------- */

#define BASE 0x7f1200000000ULL
#define IMG_SIZE (256 * 1024)
#define TSTATE (BASE + 0x100)
#define CFRAME (BASE + 0x1000)
#define CHUNK (BASE + 0x2000) /* frames on the data stack, 0x100 apart */
#define GENS (BASE + 0x8000)  /* frames embedded in generators, elsewhere */
#define CODES (BASE + 0x10000) /* code objects, 0x400 apart */
#define CODE_TYPE 0x55aa00001000ULL
#define NOT_CODE_TYPE 0x55aa00002000ULL

struct img {
    uint8_t mem[IMG_SIZE];
    uint64_t hole_lo, hole_hi; /* reads touching [lo, hi) fail */
    int reads;                 /* reads that reached the interface */
};

static struct img g_img;

static bool img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    struct img *m = ctx;
    m->reads++;
    if (addr < BASE || addr - BASE > IMG_SIZE || len > IMG_SIZE - (addr - BASE))
        return false;
    if (addr < m->hole_hi && addr + len > m->hole_lo)
        return false;
    memcpy(buf, m->mem + (addr - BASE), len);
    return true;
}

static struct img *img_new(void)
{
    memset(&g_img, 0, sizeof(g_img));
    return &g_img;
}

static void put64(struct img *m, uint64_t addr, uint64_t v) { memcpy(m->mem + (addr - BASE), &v, 8); }
static void put32(struct img *m, uint64_t addr, int32_t v) { memcpy(m->mem + (addr - BASE), &v, 4); }
static void put8(struct img *m, uint64_t addr, uint8_t v) { m->mem[addr - BASE] = v; }

static uint64_t code_at(int i) { return CODES + (uint64_t)i * 0x400; }
static uint64_t chunk_frame(int i) { return CHUNK + 0x40 + (uint64_t)i * 0x100; }

/* A code object of nunits code units whose first traceable instruction is firsttraceable. */
static void put_code(struct img *m, const struct py_layout *L, uint64_t code, uint64_t type,
                     uint64_t nunits, int32_t firsttraceable)
{
    put64(m, code + L->ob_type, type);
    put64(m, code + L->co_nunits, nunits);
    put32(m, code + L->co_firsttraceable, firsttraceable);
}

/* The address of code unit `unit` of a code object: what a frame's instruction pointer holds. */
static uint64_t instr_at(const struct py_layout *L, uint64_t code, int64_t unit)
{
    return code + L->co_code_adaptive + (uint64_t)(unit * 2);
}

enum { PLAIN, ENTRY }; /* 3.11: the first frame of one C call of the eval loop */

/* A frame; code_tag: low bits or'ed into the code pointer (3.14+ _PyStackRef). */
static void put_frame(struct img *m, const struct py_layout *L, uint64_t frame, uint64_t code,
                      uint64_t code_tag, int64_t unit, uint64_t prev, int owner, int entry)
{
    put64(m, frame + L->fr_code, code ? code | code_tag : 0);
    put64(m, frame + L->fr_previous, prev);
    put64(m, frame + L->fr_instr, code ? instr_at(L, code, unit) : 0);
    put8(m, frame + L->fr_owner, (uint8_t)owner);
    if (L->fr_is_entry)
        put8(m, frame + L->fr_is_entry, entry == ENTRY);
}

/* The frame under a C call's first frame that later versions push (a shim, owned by the C
 * stack / interpreter); on 3.11 the first frame is flagged instead and this writes nothing. */
static bool has_shims(const struct py_layout *L) { return L->owner_cstack >= 0; }

/* The thread state: its current frame (through a cframe on 3.11/3.12), native id 4242 and the
 * data-stack chunk in use up to top. */
static void put_tstate(struct img *m, const struct py_layout *L, uint64_t frame, uint64_t top)
{
    put64(m, TSTATE + L->ts_native_thread_id, 4242);
    if (L->ts_cframe) {
        put64(m, TSTATE + L->ts_cframe, CFRAME);
        put64(m, CFRAME + L->cframe_current_frame, frame);
    } else {
        put64(m, TSTATE + L->ts_current_frame, frame);
    }
    put64(m, TSTATE + L->ts_datastack_chunk, CHUNK);
    put64(m, TSTATE + L->ts_datastack_chunk + 8, top);
}

static struct py_mem mem_of(struct img *m)
{
    return (struct py_mem){.read = img_read, .ctx = m};
}

static void fw_for(struct py_fw *fw, const struct py_layout *L)
{
    CHECK_EQ(py_fw_init(fw, L, py_heap_layout_table(L->minor, L->free_threaded), CODE_TYPE), 0);
}

/* A fresh image and the walker for layout L. */
static struct img *setup(const struct py_layout *L, struct py_fw *fw)
{
    struct img *m = img_new();
    fw_for(fw, L);
    return m;
}

/* chunk_frame(top) <- ... <- chunk_frame(0), all running code 0 (unit i in frame i). */
static void linear_chain(struct img *m, const struct py_layout *L, int top)
{
    put_code(m, L, code_at(0), CODE_TYPE, 20, 0);
    for (int i = top; i > 0; i--)
        put_frame(m, L, chunk_frame(i), code_at(0), 0, i, chunk_frame(i - 1), 0, PLAIN);
    put_frame(m, L, chunk_frame(0), code_at(0), 0, 0, 0, 0, PLAIN);
}

/* ---- tests ------------------------------------------------------------------------------------- */

static void test_layouts_load(void)
{
    for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
        const struct py_layout *L = layout(minors[i]);
        CHECK(L != NULL);
        if (L)
            CHECK_EQ(L->minor, minors[i]);
    }
    /* the real frame layouts the walker reads (offsetof() in the headers) */
    CHECK_EQ(layout(13)->fr_owner, 70);
    CHECK_EQ(layout(14)->fr_owner, 74);
    CHECK_EQ(layout(15)->fr_localsplus, 80);
    CHECK_EQ(layout(14)->co_code_adaptive, 208);
}

/* innermost A (line 12 of code 0) <- [shim] <- B (code 1) <- [shim] <- C (code 2): a Python
 * function called from C (A), its caller B, run by another C call than C's. */
static void test_normal_chain(void)
{
    FOR_EACH_VERSION(L)
    {
        struct py_fw fw;
        struct img *m = setup(L, &fw);
        uint64_t tag = L->fr_code_tagged ? 1 : 0; /* Py_TAG_DEFERRED */
        for (int i = 0; i < 4; i++)
            put_code(m, L, code_at(i), CODE_TYPE, 40, 2);
        uint64_t a = chunk_frame(5), s1 = chunk_frame(4), b = chunk_frame(3), s2 = chunk_frame(2),
                 c = chunk_frame(1);
        bool shims = has_shims(L);
        put_frame(m, L, a, code_at(0), tag, 5, shims ? s1 : b, 0, ENTRY);
        put_frame(m, L, s1, code_at(3), tag, 1, b, L->owner_cstack, PLAIN);
        put_frame(m, L, b, code_at(1), tag, 7, shims ? s2 : c, 0, ENTRY);
        put_frame(m, L, s2, code_at(3), tag, 1, c, L->owner_cstack, PLAIN);
        put_frame(m, L, c, code_at(2), 0, 30, 0, 0, PLAIN);
        put_tstate(m, L, a, chunk_frame(6));

        struct py_mem mem = mem_of(m);
        struct py_fw_thread th;
        CHECK(py_fw_thread(&fw, &mem, TSTATE, &th));
        CHECK_EQ(th.native_id, 4242);
        CHECK_EQ_U64(th.frame, a);
        CHECK_EQ_U64(th.chunk, CHUNK);
        CHECK_EQ_U64(th.top, chunk_frame(6));

        struct py_fw_frame out[8];
        unsigned flags = 99;
        size_t n = py_fw_walk(&fw, &mem, th.frame, out, 8, 32, &flags);
        CHECK_EQ(n, 3);
        CHECK_EQ(flags, 0);
        const uint64_t addrs[3] = {a, b, c};
        const int units[3] = {5, 7, 30}, groups[3] = {0, 1, 2};
        for (size_t i = 0; i < 3 && i < n; i++) {
            CHECK_EQ_U64(out[i].addr, addrs[i]);
            CHECK_EQ_U64(out[i].code, code_at((int)i)); /* tag bits cleared */
            CHECK_EQ(out[i].owner, 0);
            CHECK_EQ(out[i].group, groups[i]);
            CHECK_EQ(py_fw_lasti(&fw, out[i].code, out[i].instr), units[i]);
            struct py_fw_code facts;
            py_fw_code_facts(&fw, m->mem + (out[i].code - BASE), &facts);
            CHECK(facts.is_code);
            CHECK_EQ(facts.nunits, 40);
            CHECK_EQ(facts.firsttraceable, 2);
            CHECK(py_fw_shown(&fw, &out[i], &facts, units[i]));
        }
        /* the line of A's instruction: firstlineno 10, units 0-3 on line 12, 4-7 on line 15 */
        static const uint8_t table[] = {0x80 | (13 << 3) | 3, 0x04, 0x80 | (13 << 3) | 3, 0x06};
        CHECK_EQ(py_linetable_line(table, sizeof(table), 10,
                                   py_fw_lasti(&fw, out[0].code, out[0].instr)),
                 15);
    }
}

/* The copy of the chunk serves the frames inside it; frames outside (a generator's) are read. */
static void test_chunk_copy_and_generator(void)
{
    FOR_EACH_VERSION(L)
    {
        struct py_fw fw;
        struct img *m = setup(L, &fw);
        put_code(m, L, code_at(0), CODE_TYPE, 20, 4);
        put_code(m, L, code_at(1), CODE_TYPE, 20, 4);
        uint64_t gen = GENS + 0x48, caller = chunk_frame(0);
        /* a generator's frame, suspended before its first instruction, resumed by caller */
        put_frame(m, L, gen, code_at(1), 0, -1, caller, L->owner_generator, PLAIN);
        put_frame(m, L, caller, code_at(0), 0, 9, 0, 0, PLAIN);
        struct py_mem mem = mem_of(m);
        mem.copy_base = CHUNK;
        mem.copy = m->mem + (CHUNK - BASE);
        mem.copy_len = 0x200;
        m->reads = 0;
        struct py_fw_frame out[4];
        unsigned flags;
        size_t n = py_fw_walk(&fw, &mem, gen, out, 4, 16, &flags);
        CHECK_EQ(n, 2);
        CHECK_EQ(flags, 0);
        CHECK_EQ(m->reads, 1); /* the generator's frame only */
        CHECK_EQ(out[0].owner, L->owner_generator);
        CHECK_EQ_U64(out[1].addr, caller);
        struct py_fw_code facts;
        py_fw_code_facts(&fw, m->mem + (code_at(1) - BASE), &facts);
        int64_t lasti = py_fw_lasti(&fw, out[0].code, out[0].instr);
        CHECK_EQ(lasti, -1);
        CHECK(py_fw_shown(&fw, &out[0], &facts, lasti)); /* a generator's frame always shows */
    }
}

/* A frame pushed and not started (lasti before co_firsttraceable), an instruction past the code,
 * a code pointer to something else than a code object: hidden, as CPython hides them. */
static void test_incomplete_frames_hidden(void)
{
    FOR_EACH_VERSION(L)
    {
        struct py_fw fw;
        struct img *m = setup(L, &fw);
        put_code(m, L, code_at(0), CODE_TYPE, 20, 3);
        put_code(m, L, code_at(1), NOT_CODE_TYPE, 20, 0);
        struct py_fw_code c0, c1;
        py_fw_code_facts(&fw, m->mem + (code_at(0) - BASE), &c0);
        py_fw_code_facts(&fw, m->mem + (code_at(1) - BASE), &c1);
        struct py_fw_frame f = {chunk_frame(0), code_at(0), 0, 0, 0};
        CHECK(!py_fw_shown(&fw, &f, &c0, 2));
        CHECK(py_fw_shown(&fw, &f, &c0, 3));
        CHECK(py_fw_shown(&fw, &f, &c0, 19));
        CHECK(!py_fw_shown(&fw, &f, &c0, 20));
        CHECK(!c1.is_code);
        CHECK(!py_fw_shown(&fw, &f, &c1, 5));
        f.owner = (uint8_t)L->owner_generator;
        CHECK(py_fw_shown(&fw, &f, &c0, 0));
    }
}

/* The innermost frame's own slots end below the thread's data-stack top: a frame above it is
 * being set up or cleared. */
static void test_frame_above(void)
{
    FOR_EACH_VERSION(L)
    {
        struct py_fw fw;
        struct img *m = setup(L, &fw);
        const struct py_heap_layout *H = py_heap_layout_table(L->minor, L->free_threaded);
        uint64_t code = code_at(0), frame = chunk_frame(0);
        put_code(m, L, code, CODE_TYPE, 20, 0);
        put32(m, code + H->co_nlocalsplus, 3);
        put32(m, code + H->co_stacksize, 5);
        const uint8_t *hdr = m->mem + (code - BASE);
        uint64_t end = frame + L->fr_localsplus + 8 * 8;
        struct py_fw_frame f = {frame, code, 0, 0, 0};
        CHECK(!py_fw_frame_above(&fw, &f, hdr, CHUNK, end));
        CHECK(py_fw_frame_above(&fw, &f, hdr, CHUNK, end + 8));
        CHECK(!py_fw_frame_above(&fw, &f, hdr, 0, end + 8));
        f.addr = GENS; /* not in the chunk: unknown */
        CHECK(!py_fw_frame_above(&fw, &f, hdr, CHUNK, end + 8));
    }
}

/* Shim frames (and 3.14's other C-stack frames) are skipped, frames without code too; only the
 * shims count as entries. */
static void test_skipped_frames(void)
{
    FOR_EACH_VERSION(L)
    {
        struct py_fw fw;
        struct img *m = setup(L, &fw);
        put_code(m, L, code_at(0), CODE_TYPE, 20, 0);
        uint64_t f0 = chunk_frame(0), f1 = chunk_frame(1), f2 = chunk_frame(2),
                 f3 = chunk_frame(3);
        put_frame(m, L, f3, code_at(0), 0, 1, f2, 0, PLAIN);
        put_frame(m, L, f2, 0, 0, 0, f1, 0, PLAIN); /* no code */
        int other = L->owner_interpreter >= 0 ? L->owner_interpreter : 0;
        put_frame(m, L, f1, other ? code_at(0) : 0, 0, 1, f0, other, PLAIN);
        put_frame(m, L, f0, code_at(0), 0, 2, 0, 0, PLAIN);
        struct py_mem mem = mem_of(m);
        struct py_fw_frame out[8];
        unsigned flags;
        size_t n = py_fw_walk(&fw, &mem, f3, out, 8, 16, &flags);
        CHECK_EQ(n, 2);
        CHECK_EQ(flags, 0);
        CHECK_EQ_U64(out[0].addr, f3);
        CHECK_EQ_U64(out[1].addr, f0);
        CHECK_EQ(out[1].group, 0); /* none of the skipped frames is an entry */
        if (L->fr_code_tagged) {
            /* a code slot holding a tagged int is no code object */
            put64(m, f3 + L->fr_code, (7 << 2) | 3);
            n = py_fw_walk(&fw, &mem, f3, out, 8, 16, &flags);
            CHECK_EQ(n, 1);
            CHECK_EQ_U64(out[0].addr, f0);
        }
    }
}

/* A frame that cannot be read ends the walk; the frames before it stay. */
static void test_fault_mid_chain(void)
{
    FOR_EACH_VERSION(L)
    {
        struct py_fw fw;
        struct img *m = setup(L, &fw);
        linear_chain(m, L, 5);
        struct py_mem mem = mem_of(m);
        m->hole_lo = chunk_frame(2);
        m->hole_hi = chunk_frame(2) + 1;
        struct py_fw_frame out[8];
        unsigned flags;
        size_t n = py_fw_walk(&fw, &mem, chunk_frame(5), out, 8, 16, &flags);
        CHECK_EQ(n, 3);
        CHECK_EQ(flags, PY_FW_FAULT);
        CHECK_EQ_U64(out[2].addr, chunk_frame(3));
        /* a previous pointer into nowhere */
        put64(m, chunk_frame(4) + L->fr_previous, 0xdead0000);
        n = py_fw_walk(&fw, &mem, chunk_frame(5), out, 8, 16, &flags);
        CHECK_EQ(n, 2);
        CHECK_EQ(flags, PY_FW_FAULT);
        /* the thread state itself unreadable, and (3.11/3.12) its cframe */
        m->hole_lo = TSTATE;
        m->hole_hi = TSTATE + 1024;
        struct py_fw_thread th;
        CHECK(!py_fw_thread(&fw, &mem, TSTATE, &th));
        m->hole_lo = m->hole_hi = 0;
        put_tstate(m, L, chunk_frame(5), chunk_frame(6));
        if (L->ts_cframe) {
            m->hole_lo = CFRAME;
            m->hole_hi = CFRAME + 64;
            CHECK(!py_fw_thread(&fw, &mem, TSTATE, &th));
            m->hole_lo = m->hole_hi = 0;
            put64(m, TSTATE + L->ts_cframe, 0); /* no cframe: no frame */
            CHECK(py_fw_thread(&fw, &mem, TSTATE, &th));
            CHECK_EQ(th.frame, 0);
        }
    }
}

/* A chain that loops ends before the first frame seen twice, whatever the loop's length and the
 * length of the chain before it. */
static void test_cycles(void)
{
    FOR_EACH_VERSION(L)
    {
        struct py_fw fw;
        struct img *m = setup(L, &fw);
        put_code(m, L, code_at(0), CODE_TYPE, 20, 0);
        struct py_mem mem = mem_of(m);
        struct py_fw_frame out[64];
        unsigned flags;
        /* a frame its own previous */
        put_frame(m, L, chunk_frame(0), code_at(0), 0, 0, chunk_frame(0), 0, PLAIN);
        size_t n = py_fw_walk(&fw, &mem, chunk_frame(0), out, 64, 256, &flags);
        CHECK_EQ(n, 1);
        CHECK_EQ(flags, PY_FW_CYCLE);
        /* tails and loops of several lengths: 0x100-spaced frames in the chunk and beyond */
        static const int shapes[][2] = {{0, 2}, {1, 3}, {5, 7}, {20, 1}, {3, 17}, {13, 30}};
        for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
            int tail = shapes[s][0], loop = shapes[s][1], total = tail + loop;
            for (int i = 0; i < total; i++) {
                int next = i + 1 < total ? i + 1 : tail;
                put_frame(m, L, chunk_frame(i), code_at(0), 0, i, chunk_frame(next), 0, PLAIN);
            }
            n = py_fw_walk(&fw, &mem, chunk_frame(0), out, 64, 256, &flags);
            CHECK_EQ(n, total);
            CHECK_EQ(flags, PY_FW_CYCLE);
            for (size_t i = 0; i < n; i++)
                CHECK_EQ_U64(out[i].addr, chunk_frame((int)i));
        }
        /* a loop through frames that are not kept (shims) */
        if (has_shims(L)) {
            put_frame(m, L, chunk_frame(0), code_at(0), 0, 0, chunk_frame(1), 0, PLAIN);
            put_frame(m, L, chunk_frame(1), code_at(0), 0, 0, chunk_frame(2), L->owner_cstack,
                      PLAIN);
            put_frame(m, L, chunk_frame(2), code_at(0), 0, 0, chunk_frame(1), L->owner_cstack,
                      PLAIN);
            n = py_fw_walk(&fw, &mem, chunk_frame(0), out, 64, 256, &flags);
            CHECK_EQ(n, 1);
            CHECK_EQ(flags, PY_FW_CYCLE);
        }
    }
}

static void test_limits(void)
{
    FOR_EACH_VERSION(L)
    {
        struct py_fw fw;
        struct img *m = setup(L, &fw);
        linear_chain(m, L, 9);
        struct py_mem mem = mem_of(m);
        struct py_fw_frame out[10];
        unsigned flags;
        CHECK_EQ(py_fw_walk(&fw, &mem, chunk_frame(9), out, 10, 10, &flags), 10);
        CHECK_EQ(flags, 0);
        CHECK_EQ(py_fw_walk(&fw, &mem, chunk_frame(9), out, 4, 100, &flags), 4);
        CHECK_EQ(flags, PY_FW_LIMIT);
        CHECK_EQ(py_fw_walk(&fw, &mem, chunk_frame(9), out, 10, 6, &flags), 6);
        CHECK_EQ(flags, PY_FW_LIMIT);
        CHECK_EQ(py_fw_walk(&fw, &mem, 0, out, 10, 6, &flags), 0);
        CHECK_EQ(flags, 0);
    }
}

/* Object pointers held by frames: tagged on 3.14+ (_PyStackRef), plain before. */
static void test_object_refs(void)
{
    FOR_EACH_VERSION(L)
    {
        uint64_t obj = 0x7f0000123450ULL;
        CHECK_EQ_U64(py_fw_object(L, obj), obj);
        CHECK_EQ_U64(py_fw_object(L, 0), 0);
        if (L->fr_code_tagged) {
            CHECK_EQ_U64(py_fw_object(L, obj | 1), obj);
            CHECK_EQ_U64(py_fw_object(L, (42 << 2) | 3), 0);
        } else {
            CHECK_EQ_U64(py_fw_object(L, obj | 1), obj | 1);
        }
    }
}

/* A suspended frame's slots in use: a count (3.11-3.13) or a stack pointer (3.14+). */
static void test_stack_used(void)
{
    FOR_EACH_VERSION(L)
    {
        struct py_fw fw;
        fw_for(&fw, L);
        const struct py_heap_layout *H = py_heap_layout_table(L->minor, L->free_threaded);
        uint8_t fr[PY_FW_MAX_FRAME_BYTES] = {0};
        uint64_t frame = GENS;
        CHECK(H->fr_stacktop + 8 <= sizeof(fr));
        if (H->fr_stackpointer)
            memcpy(fr + H->fr_stacktop, &(uint64_t){frame + L->fr_localsplus + 6 * 8}, 8);
        else
            memcpy(fr + H->fr_stacktop, &(int32_t){6}, 4);
        CHECK_EQ(py_fw_stack_used(&fw, frame, fr, 4, 3), 6);
        CHECK_EQ(py_fw_stack_used(&fw, frame, fr, 2, 3), -1); /* past the frame's slots */
        CHECK_EQ(py_fw_stack_used(&fw, frame, fr, 4, -1), -1);
    }
}

static void test_init_bounds(void)
{
    struct py_layout bad = *py_layout_table(12);
    struct py_fw fw;
    CHECK_EQ(py_fw_init(&fw, &bad, NULL, CODE_TYPE), 0);
    CHECK_EQ(fw.co_nlocalsplus, 0); /* without the heap table: no frame-above answer */
    bad.fr_owner = 4000;
    CHECK_EQ(py_fw_init(&fw, &bad, NULL, CODE_TYPE), -1);
    bad = *py_layout_table(12);
    bad.ts_datastack_chunk = 4000;
    CHECK_EQ(py_fw_init(&fw, &bad, NULL, CODE_TYPE), -1);
    bad = *py_layout_table(12);
    bad.co_firsttraceable = bad.co_size;
    CHECK_EQ(py_fw_init(&fw, &bad, NULL, CODE_TYPE), -1);
}


/* ---- scry stacks' walk through a reader ------------------------------------------------------- */

#define STR_TYPE 0x55aa00003000ULL
#define STRS (BASE + 0x20000)

static int fake_read(struct rd_reader *rd, uint64_t addr, void *buf, size_t len)
{
    (void)rd;
    if (!img_read(&g_img, addr, buf, len))
        return err_fail(SCRY_E_READ_FAILED, "cannot read %zu bytes at 0x%llx", len,
                        (unsigned long long)addr);
    return 0;
}

static const struct rd_ops fake_ops = {.read = fake_read};

/* A compact ASCII str at addr. */
static void put_str(struct img *m, const struct py_layout *L, uint64_t addr, const char *text)
{
    put64(m, addr + L->ob_type, STR_TYPE);
    put64(m, addr + L->str_length, strlen(text));
    put32(m, addr + L->str_state, (1 << 2) | (1 << 5) | (1 << 6)); /* kind 1, compact, ascii */
    memcpy(m->mem + (addr + L->str_ascii_size - BASE), text, strlen(text));
}

/* Code object i named name in /app/t.py, first line 10: units 0-3 on line 12, 4-7 on line 15. */
static void put_named_code(struct img *m, const struct py_layout *L, int i, const char *name,
                           int32_t firsttraceable)
{
    static const uint8_t table[] = {0x80 | (13 << 3) | 3, 0x04, 0x80 | (13 << 3) | 3, 0x06};
    uint64_t code = code_at(i), file = STRS + 0x800, qual = STRS + (uint64_t)i * 0x100,
             lines = STRS + 0x1000 + (uint64_t)i * 0x100;
    put_code(m, L, code, CODE_TYPE, 8, firsttraceable);
    put_str(m, L, file, "/app/t.py");
    put_str(m, L, qual, name);
    put64(m, lines + L->bytes_size, sizeof(table));
    memcpy(m->mem + (lines + L->bytes_sval - BASE), table, sizeof(table));
    put64(m, code + L->co_filename, file);
    put64(m, code + L->co_qualname, qual);
    put64(m, code + L->co_linetable, lines);
    put32(m, code + L->co_firstlineno, 10);
}

static void test_thread_stack_through_reader(void)
{
    FOR_EACH_VERSION(L)
    {
        struct py_fw fw;
        struct img *m = setup(L, &fw);
        struct py_runtime *rt = calloc(1, sizeof(*rt));
        rt->rd = rd_alloc(RD_CORE, &fake_ops);
        rt->layout = *L;
        rt->minor = L->minor;
        rt->types.code = CODE_TYPE;
        rt->types.str = STR_TYPE;
        put_named_code(m, L, 0, "inner", 1);
        put_named_code(m, L, 1, "outer", 1);
        put_named_code(m, L, 2, "pushed", 1);
        /* pushed (not started) <- inner <- [shim] <- outer */
        uint64_t p = chunk_frame(3), a = chunk_frame(2), s = chunk_frame(1), b = chunk_frame(0);
        put_frame(m, L, p, code_at(2), 0, 0, a, 0, PLAIN);
        put_frame(m, L, a, code_at(0), 0, 5, has_shims(L) ? s : b, 0, ENTRY);
        put_frame(m, L, s, code_at(0), 0, 0, b, L->owner_cstack, PLAIN);
        put_frame(m, L, b, code_at(1), 0, 2, 0, 0, PLAIN);
        put_tstate(m, L, p, chunk_frame(4));

        struct py_code_cache cc;
        py_code_cache_init(&cc);
        struct py_frame frames[8];
        size_t n = 99;
        bool truncated = true;
        CHECK_EQ(py_thread_stack(rt, &cc, TSTATE, frames, 8, &n, &truncated), 0);
        CHECK_EQ(n, 2);
        CHECK(!truncated);
        if (n == 2) {
            CHECK_EQ_U64(frames[0].addr, a);
            CHECK_STR(frames[0].code->qualname, "inner");
            CHECK_STR(frames[0].code->filename, "/app/t.py");
            CHECK_EQ(frames[0].lasti, 5);
            CHECK_EQ(frames[0].line, 15);
            CHECK_STR(frames[1].code->qualname, "outer");
            CHECK_EQ(frames[1].line, 12);
        }
        /* a loop: outer's previous is inner */
        put64(m, b + L->fr_previous, a);
        CHECK_EQ(py_thread_stack(rt, &cc, TSTATE, frames, 8, &n, &truncated), 0);
        CHECK_EQ(n, 2);
        CHECK(truncated);
        /* outer's previous unreadable: the reader's error, the frames before it kept */
        put64(m, b + L->fr_previous, 0xdead0000);
        CHECK_EQ(py_thread_stack(rt, &cc, TSTATE, frames, 8, &n, &truncated),
                 -SCRY_E_READ_FAILED);
        CHECK_EQ(n, 2);
        py_code_cache_free(&cc);
        rd_close(rt->rd);
        free(rt);
    }
}

static const struct tl_test tests[] = {
    TL(test_layouts_load),
    TL(test_normal_chain),
    TL(test_chunk_copy_and_generator),
    TL(test_incomplete_frames_hidden),
    TL(test_frame_above),
    TL(test_skipped_frames),
    TL(test_fault_mid_chain),
    TL(test_cycles),
    TL(test_limits),
    TL(test_object_refs),
    TL(test_stack_used),
    TL(test_init_bounds),
    TL(test_thread_stack_through_reader),
};
TL_MAIN(tests)
