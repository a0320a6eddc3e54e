/* The interpreter/thread-list walker (cpython/thread_list.h) over synthetic memory images, for the
 * layout of every supported version (test_layouts.h): interpreters and thread states are built by
 * hand at fixed addresses, linked through each version's fields, and the walk's visits and its
 * reported end are checked: complete lists, loops in either list, a thread state of another
 * interpreter, a read that fails mid-list, the bounds, go_on and a callback's stop. */
#include <stdint.h>
#include <string.h>

#include "cpython/frame_walk.h"
#include "cpython/layout.h"
#include "cpython/thread_list.h"
#include "testlib.h"
#include "test_layouts.h"

#define BASE 0x7f1200000000ULL
#define IMG_SIZE (64 * 1024)
#define INTERP(i) (BASE + 0x1000 * (uint64_t)(i))          /* interpreters 0..3 */
#define TSTATE(i) (BASE + 0x8000 + 0x400 * (uint64_t)(i))  /* thread states 0..15 */

struct img {
    uint8_t mem[IMG_SIZE];
    uint64_t hole; /* a read touching this address fails (0: none) */
};

static struct img g;

static bool img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    struct img *m = ctx;
    if (addr < BASE || addr - BASE + len > IMG_SIZE)
        return false;
    if (m->hole && m->hole >= addr && m->hole < addr + len)
        return false;
    memcpy(buf, m->mem + (addr - BASE), len);
    return true;
}

static void put(uint64_t addr, uint64_t v)
{
    memcpy(g.mem + (addr - BASE), &v, 8);
}

/* An interpreter whose thread list holds the thread states ts[0..n) in that order, next: the
 * next interpreter. */
static void build_interp(const struct py_layout *L, int i, uint64_t next, const int *ts, int n)
{
    put(INTERP(i) + L->is_next, next);
    put(INTERP(i) + L->is_threads_head, n ? TSTATE(ts[0]) : 0);
    for (int k = 0; k < n; k++) {
        put(TSTATE(ts[k]) + L->ts_interp, INTERP(i));
        put(TSTATE(ts[k]) + L->ts_next, k + 1 < n ? TSTATE(ts[k + 1]) : 0);
    }
}

/* What a walk saw: "i<n>" per interpreter, "t<n>" per thread state. */
struct seen {
    char log[256];
    int stop_at; /* stop at this thread state's index (-1: never) */
};

static void log_add(struct seen *s, char c, uint64_t addr, uint64_t base, uint64_t step)
{
    size_t n = strlen(s->log);
    if (n + 4 < sizeof(s->log)) {
        s->log[n] = c;
        s->log[n + 1] = (char)('0' + (addr - base) / step);
        s->log[n + 2] = 0;
    }
}

static int on_interp(void *ctx, uint64_t interp)
{
    log_add(ctx, 'i', interp, INTERP(0), 0x1000);
    return 0;
}

static int on_thread(void *ctx, uint64_t interp, uint64_t tstate)
{
    (void)interp;
    struct seen *s = ctx;
    log_add(s, 't', tstate, TSTATE(0), 0x400);
    return s->stop_at >= 0 && tstate == TSTATE(s->stop_at);
}

static enum py_tl_end walk(const struct py_layout *L, struct py_tl *w, struct seen *s,
                           bool check_owner, bool go_on, size_t max_i, size_t max_t)
{
    static struct py_mem mem = {.read = img_read, .ctx = &g};
    memset(s, 0, sizeof(*s));
    s->stop_at = -1;
    *w = (struct py_tl){.L = L, .mem = &mem, .max_interps = max_i, .max_threads = max_t,
                        .check_owner = check_owner, .go_on = go_on, .on_interp = on_interp,
                        .on_thread = on_thread, .ctx = s};
    return py_tl_walk(w, INTERP(0));
}

#define WALK(L, w, s, owner, go_on) walk(L, w, s, owner, go_on, 64, 64)

static void test_one_interpreter_three_threads(void)
{
    FOR_EACH_VERSION(L)
    {
        memset(&g, 0, sizeof(g));
        build_interp(L, 0, 0, (int[]){0, 1, 2}, 3);
        struct py_tl w;
        struct seen s;
        CHECK_EQ(WALK(L, &w, &s, true, false), PY_TL_COMPLETE);
        CHECK_STR(s.log, "i0t0t1t2");
        CHECK_EQ(WALK(L, &w, &s, false, false), PY_TL_COMPLETE);
        CHECK_STR(s.log, "i0t0t1t2");
        /* An empty walk, and a callback's stop. */
        struct py_tl w0 = w;
        CHECK_EQ(py_tl_walk(&w0, 0), PY_TL_COMPLETE);
        WALK(L, &w, &s, true, false);
        s.log[0] = 0;
        s.stop_at = 1;
        CHECK_EQ(py_tl_walk(&w, INTERP(0)), PY_TL_STOPPED);
        CHECK_STR(s.log, "i0t0t1");
        CHECK_EQ_U64(w.tstate, TSTATE(1));
    }
}

static void test_two_interpreters(void)
{
    FOR_EACH_VERSION(L)
    {
        memset(&g, 0, sizeof(g));
        build_interp(L, 0, INTERP(1), (int[]){0, 1}, 2);
        build_interp(L, 1, 0, (int[]){5, 4, 3}, 3);
        struct py_tl w;
        struct seen s;
        CHECK_EQ(WALK(L, &w, &s, true, false), PY_TL_COMPLETE);
        CHECK_STR(s.log, "i0t0t1i1t5t4t3");
        /* One with no threads in between. */
        build_interp(L, 1, INTERP(2), NULL, 0);
        build_interp(L, 2, 0, (int[]){6}, 1);
        CHECK_EQ(WALK(L, &w, &s, true, false), PY_TL_COMPLETE);
        CHECK_STR(s.log, "i0t0t1i1i2t6");
        /* The interpreters only: no thread list is read. */
        WALK(L, &w, &s, true, false);
        s.log[0] = 0;
        w.on_thread = NULL;
        g.hole = INTERP(1) + L->is_threads_head;
        CHECK_EQ(py_tl_walk(&w, INTERP(0)), PY_TL_COMPLETE);
        CHECK_STR(s.log, "i0i1i2");
        g.hole = 0;
    }
}

static void test_thread_list_loops(void)
{
    FOR_EACH_VERSION(L)
    {
        memset(&g, 0, sizeof(g));
        build_interp(L, 0, INTERP(1), (int[]){0, 1, 2, 3}, 4);
        build_interp(L, 1, 0, (int[]){7}, 1);
        put(TSTATE(3) + L->ts_next, TSTATE(1)); /* 0 1 2 3 1 2 3 ... */
        struct py_tl w;
        struct seen s;
        CHECK_EQ(WALK(L, &w, &s, true, false), PY_TL_THREAD_LOOP);
        CHECK_EQ_U64(w.interp, INTERP(0));
        CHECK(strlen(s.log) < 2 + 2 * 12); /* cut within a few rounds, long before the bound */
        /* go_on: the next interpreter is still walked, and the loop still reported. */
        CHECK_EQ(WALK(L, &w, &s, true, true), PY_TL_THREAD_LOOP);
        CHECK(strstr(s.log, "i1t7") != NULL);
        /* A thread state that is its own next. */
        build_interp(L, 0, 0, (int[]){0}, 1);
        put(TSTATE(0) + L->ts_next, TSTATE(0));
        CHECK_EQ(WALK(L, &w, &s, true, false), PY_TL_THREAD_LOOP);
        CHECK_STR(s.log, "i0t0");
    }
}

static void test_interpreter_list_loops(void)
{
    FOR_EACH_VERSION(L)
    {
        memset(&g, 0, sizeof(g));
        build_interp(L, 0, INTERP(1), (int[]){0}, 1);
        build_interp(L, 1, INTERP(2), (int[]){1}, 1);
        build_interp(L, 2, INTERP(1), (int[]){2}, 1);
        struct py_tl w;
        struct seen s;
        CHECK_EQ(WALK(L, &w, &s, true, true), PY_TL_INTERP_LOOP);
        CHECK(strncmp(s.log, "i0t0i1t1i2t2", 12) == 0);
        CHECK(strlen(s.log) < 4 * 8);
        build_interp(L, 0, INTERP(0), (int[]){0}, 1);
        CHECK_EQ(WALK(L, &w, &s, true, false), PY_TL_INTERP_LOOP);
        CHECK_STR(s.log, "i0t0");
    }
}

static void test_foreign_thread_state(void)
{
    FOR_EACH_VERSION(L)
    {
        memset(&g, 0, sizeof(g));
        build_interp(L, 0, INTERP(1), (int[]){0, 1, 2}, 3);
        build_interp(L, 1, 0, (int[]){3}, 1);
        put(TSTATE(1) + L->ts_interp, INTERP(1));
        struct py_tl w;
        struct seen s;
        CHECK_EQ(WALK(L, &w, &s, true, false), PY_TL_FOREIGN);
        CHECK_STR(s.log, "i0t0");
        CHECK_EQ_U64(w.interp, INTERP(0));
        CHECK_EQ_U64(w.tstate, TSTATE(1));
        CHECK_EQ(WALK(L, &w, &s, true, true), PY_TL_FOREIGN);
        CHECK_STR(s.log, "i0t0i1t3");
        /* Without the check (the signal handler's walk) it is listed. */
        CHECK_EQ(WALK(L, &w, &s, false, false), PY_TL_COMPLETE);
        CHECK_STR(s.log, "i0t0t1t2i1t3");
    }
}

static void test_read_fails_mid_list(void)
{
    FOR_EACH_VERSION(L)
    {
        memset(&g, 0, sizeof(g));
        build_interp(L, 0, INTERP(1), (int[]){0, 1, 2}, 3);
        build_interp(L, 1, 0, (int[]){3}, 1);
        struct py_tl w;
        struct seen s;
        g.hole = TSTATE(1) + L->ts_next;
        CHECK_EQ(WALK(L, &w, &s, true, false), PY_TL_READ_FAILED);
        CHECK_STR(s.log, "i0t0t1");
        CHECK_EQ_U64(w.tstate, TSTATE(1));
        CHECK_EQ(WALK(L, &w, &s, true, true), PY_TL_READ_FAILED);
        CHECK_STR(s.log, "i0t0t1i1t3");
        g.hole = TSTATE(2) + L->ts_interp;
        CHECK_EQ(WALK(L, &w, &s, true, false), PY_TL_READ_FAILED);
        CHECK_STR(s.log, "i0t0t1");
        g.hole = INTERP(1) + L->is_next;
        CHECK_EQ(WALK(L, &w, &s, true, true), PY_TL_READ_FAILED);
        CHECK_STR(s.log, "i0t0t1t2");
        CHECK_EQ_U64(w.interp, INTERP(1));
        CHECK_EQ_U64(w.tstate, 0);
    }
}

static void test_bounds(void)
{
    FOR_EACH_VERSION(L)
    {
        memset(&g, 0, sizeof(g));
        build_interp(L, 0, INTERP(1), (int[]){0, 1, 2}, 3);
        build_interp(L, 1, INTERP(2), (int[]){3}, 1);
        build_interp(L, 2, 0, (int[]){4}, 1);
        struct py_tl w;
        struct seen s;
        CHECK_EQ(walk(L, &w, &s, true, false, 3, 3), PY_TL_COMPLETE);
        CHECK_EQ(walk(L, &w, &s, true, false, 3, 2), PY_TL_THREAD_LONG);
        CHECK_STR(s.log, "i0t0t1");
        CHECK_EQ(walk(L, &w, &s, true, true, 3, 2), PY_TL_THREAD_LONG);
        CHECK_STR(s.log, "i0t0t1i1t3i2t4");
        CHECK_EQ(walk(L, &w, &s, true, false, 2, 3), PY_TL_INTERP_LONG);
        CHECK_STR(s.log, "i0t0t1t2i1t3");
        CHECK_EQ_U64(w.interp, INTERP(2));
        /* A later failure is reported before an earlier list's length. */
        put(TSTATE(4) + L->ts_interp, INTERP(0));
        CHECK_EQ(walk(L, &w, &s, true, true, 3, 2), PY_TL_FOREIGN);
    }
}

static const struct tl_test tests[] = {
    TL(test_one_interpreter_three_threads),
    TL(test_two_interpreters),
    TL(test_thread_list_loops),
    TL(test_interpreter_list_loops),
    TL(test_foreign_thread_state),
    TL(test_read_fails_mid_list),
    TL(test_bounds),
};

TL_MAIN(tests)
