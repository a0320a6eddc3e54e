/* The JSON writer and the stacks renderers on a synthetic report: exact output. */
#include <string.h>

#include "render/json_writer.h"
#include "render/stacks_render.h"
#include "testlib.h"

static void test_json_writer_compact(void)
{
    struct strbuf sb = STRBUF_INIT;
    struct json_writer w;
    jw_init(&w, &sb, false);
    jw_obj_begin(&w);
    jw_key(&w, "a");
    jw_int(&w, -5);
    jw_key(&w, "b");
    jw_arr_begin(&w);
    jw_str(&w, "x\"y");
    jw_null(&w);
    jw_bool(&w, true);
    jw_double(&w, 0.5);
    jw_arr_end(&w);
    jw_key(&w, "c");
    jw_obj_begin(&w);
    jw_obj_end(&w);
    jw_key(&w, "d");
    jw_uint(&w, UINT64_MAX);
    jw_obj_end(&w);
    CHECK_STR(sb_str(&sb), "{\"a\":-5,\"b\":[\"x\\\"y\",null,true,0.5],\"c\":{},\"d\":18446744073709551615}");
    sb_release(&sb);
}

static void test_json_writer_pretty(void)
{
    struct strbuf sb = STRBUF_INIT;
    struct json_writer w;
    jw_init(&w, &sb, true);
    jw_obj_begin(&w);
    jw_key(&w, "a");
    jw_arr_begin(&w);
    jw_int(&w, 1);
    jw_int(&w, 2);
    jw_arr_end(&w);
    jw_key(&w, "e");
    jw_arr_begin(&w);
    jw_arr_end(&w);
    jw_obj_end(&w);
    CHECK_STR(sb_str(&sb), "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"e\": []\n}");
    sb_release(&sb);
}

static struct stacks_frame frames_a[] = {
    {.function = "Worker.crunch", .file = "/app/w.py", .line = 41},
    {.function = "<module>", .file = "/app/w.py", .line = -1},
};

static struct stacks_thread threads[] = {
    {.thread_id = 140000000000001ULL, .native_id = 11, .interpreter_id = 0, .name = "wörker",
     .idle = false, .gil = true, .frames = frames_a, .nframes = 2},
    {.thread_id = 2, .native_id = 10, .interpreter_id = 0, .name = NULL, .idle = true,
     .gil = false, .frames = NULL, .nframes = 0},
};

static const struct stacks_report report = {
    .pid = 10,
    .source = NULL,
    .command = "python3 w.py",
    .python_version = "3.12.1",
    .python_path = "/lib/libpython3.12.so",
    .threads = threads,
    .nthreads = 2,
};

static void test_stacks_text(void)
{
    struct strbuf sb = STRBUF_INIT;
    stacks_render_text(&report, false, &sb);
    CHECK_STR(sb_str(&sb), "Process 10: python3 w.py\n"
                           "Python 3.12.1 (/lib/libpython3.12.so)\n"
                           "\n"
                           "Thread 11 (active, gil): \"wörker\"\n"
                           "    Worker.crunch (/app/w.py:41)\n"
                           "    <module> (/app/w.py:?)\n"
                           "\n"
                           "Thread 10 (idle)\n"
                           "    (no Python frames)\n");
    sb_reset(&sb);
    stacks_render_text(&report, true, &sb);
    CHECK(strstr(sb_str(&sb), "\033[") != NULL);
    sb_release(&sb);
}

static void test_stacks_json(void)
{
    struct strbuf sb = STRBUF_INIT;
    stacks_render_json(&report, &sb);
    CHECK_STR(sb_str(&sb),
              "{\"pid\":10,\"python_version\":\"3.12.1\",\"free_threaded\":false,\"threads\":["
              "{\"thread_id\":140000000000001,\"native_id\":11,\"interpreter_id\":0,"
              "\"name\":\"wörker\",\"idle\":false,\"gil\":true,\"truncated\":false,\"frames\":["
              "{\"function\":\"Worker.crunch\",\"file\":\"/app/w.py\",\"line\":41},"
              "{\"function\":\"<module>\",\"file\":\"/app/w.py\",\"line\":null}]},"
              "{\"thread_id\":2,\"native_id\":10,\"interpreter_id\":0,\"name\":null,"
              "\"idle\":true,\"gil\":false,\"truncated\":false,\"frames\":[]}]}\n");
    sb_release(&sb);
}

/* A free-threaded build without a GIL: no thread is said to hold one (gil null, no ", gil"). */
static void test_stacks_free_threaded(void)
{
    struct stacks_thread ft[2];
    memcpy(ft, threads, sizeof(ft));
    ft[0].no_gil = ft[1].no_gil = true;
    struct stacks_report r = report;
    r.threads = ft;
    r.free_threaded = true;
    r.python_version = "3.13.15";
    struct strbuf sb = STRBUF_INIT;
    stacks_render_text(&r, false, &sb);
    CHECK(strstr(sb_str(&sb), "Python 3.13.15 free-threaded (") != NULL);
    CHECK(strstr(sb_str(&sb), "Thread 11 (active): ") != NULL);
    CHECK(strstr(sb_str(&sb), "gil") == NULL);
    sb_reset(&sb);
    stacks_render_json(&r, &sb);
    CHECK(strstr(sb_str(&sb), "\"free_threaded\":true,") != NULL);
    CHECK(strstr(sb_str(&sb), "\"idle\":false,\"gil\":null,") != NULL);
    CHECK(strstr(sb_str(&sb), "\"idle\":true,\"gil\":null,") != NULL);
    sb_release(&sb);
}

/* --locals and --native: locals under their frame, native frames by symbol+offset (module). */
static void test_stacks_locals_native(void)
{
    struct stacks_local locals[] = {
        {"count", "int", "12345", false, false},
        {"password", "str", "<redacted>", true, false},
        {"shared", "str", "'x'", false, true},
    };
    struct stacks_frame fr[] = {
        {.function = "clock_nanosleep", .file = "/lib/libc.so.6", .line = -1, .native = true,
         .offset = 0x65},
        {.function = "", .file = "/lib/x.so", .line = -1, .native = true, .offset = 0x10},
        {.function = "park", .file = "/app/p.py", .line = 7, .locals = locals, .nlocals = 3,
         .locals_cut = true},
    };
    struct stacks_thread th = {.native_id = 5, .idle = true, .frames = fr, .nframes = 3};
    struct stacks_report r = {.pid = 5, .python_version = "3.12.1", .threads = &th,
                              .nthreads = 1, .with_locals = true, .with_native = true};
    struct strbuf sb = STRBUF_INIT;
    stacks_render_text(&r, false, &sb);
    CHECK_STR(sb_str(&sb), "Process 5\n"
                           "Python 3.12.1\n"
                           "\n"
                           "Thread 5 (idle)\n"
                           "    clock_nanosleep+0x65 (native: /lib/libc.so.6)\n"
                           "    ??+0x10 (native: /lib/x.so)\n"
                           "    park (/app/p.py:7)\n"
                           "        count = 12345\n"
                           "        password = <redacted>\n"
                           "        shared (cell) = 'x'\n"
                           "        ... (more locals)\n");
    sb_reset(&sb);
    stacks_render_json(&r, &sb);
    CHECK(strstr(sb_str(&sb),
                 "{\"function\":\"clock_nanosleep\",\"file\":\"/lib/libc.so.6\",\"line\":null,"
                 "\"kind\":\"native\",\"offset\":101}") != NULL);
    CHECK(strstr(sb_str(&sb),
                 "{\"function\":\"park\",\"file\":\"/app/p.py\",\"line\":7,\"kind\":\"python\","
                 "\"locals\":[{\"name\":\"count\",\"type\":\"int\",\"value\":\"12345\","
                 "\"redacted\":false,\"cell\":false},{\"name\":\"password\",\"type\":\"str\","
                 "\"value\":\"<redacted>\",\"redacted\":true,\"cell\":false},{\"name\":"
                 "\"shared\",\"type\":\"str\",\"value\":\"'x'\",\"redacted\":false,\"cell\":true}"
                 "],\"locals_truncated\":true}") != NULL);
    sb_release(&sb);
}

/* --async: the tree by who awaits whom (main -> A -> B; C alone), a task two tasks await drawn
 * once, a cycle of awaits drawn from its first task; the table and JSON. */
static void test_stacks_tasks(void)
{
    struct stacks_frame cm = {.function = "main_coro", .file = "/a.py", .line = 3};
    struct stacks_frame ca = {.function = "a", .file = "/a.py", .line = 5};
    struct stacks_frame cc[] = {{.function = "c", .file = "/a.py", .line = 9},
                                {.function = "sleep", .file = "/t.py", .line = 1}};
    struct stacks_task t[] = {
        {.addr = 0xa0, .loop = 0x1, .name = "A", .state = "pending", .awaits = 0xb0,
         .coro = &ca, .ncoro = 1},
        {.addr = 0xb0, .loop = 0x1, .name = "B", .state = "pending",
         .awaits_type = "_asyncio.Future"},
        {.addr = 0x10, .loop = 0x1, .name = "main", .state = "pending", .awaits = 0xa0,
         .coro = &cm, .ncoro = 1},
        {.addr = 0xc0, .loop = 0x1, .name = "C", .state = "finished", .coro = cc, .ncoro = 2},
        {.addr = 0xd0, .loop = 0x1, .name = "D", .state = "pending", .awaits = 0xb0},
    };
    struct stacks_report r = {.pid = 1, .python_version = "3.12.1", .with_async = true,
                              .tasks = t, .ntasks = 5};
    struct strbuf sb = STRBUF_INIT;
    stacks_render_text(&r, false, &sb);
    const char *tree = strstr(sb_str(&sb), "Asyncio tasks (5)\n");
    CHECK(tree != NULL);
    CHECK_STR(tree,
              "Asyncio tasks (5)\n"
              "\u2514\u2500\u2500 (T) main [pending] 0x10\n"
              "    \u2514\u2500\u2500 main_coro (/a.py:3)\n"
              "        \u2514\u2500\u2500 (T) A [pending] 0xa0\n"
              "            \u2514\u2500\u2500 a (/a.py:5)\n"
              "                \u2514\u2500\u2500 (T) B [pending, awaits _asyncio.Future] 0xb0\n"
              "\u2514\u2500\u2500 (T) C [finished] 0xc0\n"
              "    \u2514\u2500\u2500 c (/a.py:9)\n"
              "        \u2514\u2500\u2500 sleep (/t.py:1)\n"
              "\u2514\u2500\u2500 (T) D [pending] 0xd0\n"
              "    \u2514\u2500\u2500 (T) B [pending, awaits _asyncio.Future] 0xb0\n"
              "        \u2514\u2500\u2500 (shown above)\n"
              "\n"
              "task                name                      state      awaits                "
              "    coroutine chain\n"
              "0xa0                A                         pending    task 0xb0             "
              "    a\n"
              "0xb0                B                         pending    _asyncio.Future       "
              "    \n"
              "0x10                main                      pending    task 0xa0             "
              "    main_coro\n"
              "0xc0                C                         finished   -                     "
              "    c -> sleep\n"
              "0xd0                D                         pending    task 0xb0             "
              "    \n");
    sb_reset(&sb);
    stacks_render_json(&r, &sb);
    CHECK(strstr(sb_str(&sb),
                 "\"async_tasks\":[{\"address\":\"0xa0\",\"loop\":\"0x1\",\"name\":\"A\","
                 "\"state\":\"pending\",\"awaits_task\":\"0xb0\",\"awaits_type\":null,"
                 "\"gathers\":[],\"coroutine_stack\":[{\"function\":\"a\",\"file\":\"/a.py\","
                 "\"line\":5}]},"
                 "{\"address\":\"0xb0\",\"loop\":\"0x1\",\"name\":\"B\",\"state\":\"pending\","
                 "\"awaits_task\":null,\"awaits_type\":\"_asyncio.Future\",\"gathers\":[],"
                 "\"coroutine_stack\":[]}") != NULL);

    /* a cycle (no root): drawn from its first task, each task once */
    t[1].awaits = 0x10;
    t[1].awaits_type = NULL;
    r.ntasks = 3;
    sb_reset(&sb);
    stacks_render_text(&r, false, &sb);
    tree = strstr(sb_str(&sb), "Asyncio tasks (3)\n");
    CHECK(tree && strstr(tree, "(T) A [pending] 0xa0\n") == strstr(tree, "(T) A"));
    CHECK(tree && strstr(tree, "(shown above)") != NULL);
    sb_release(&sb);
}

/* --subprocesses: each child under its own header; one that runs no Python with its error. */
static void test_stacks_children(void)
{
    struct stacks_report kids[] = {
        {.pid = 21, .parent_pid = 20, .command = "python3 c.py", .python_version = "3.12.1"},
        {.pid = 22, .parent_pid = 20, .command = "sleep 9", .error_code = "not_python",
         .error_message = "process 22 is not a Python process"},
    };
    struct stacks_report r = {.pid = 20, .python_version = "3.12.1", .with_subprocesses = true,
                              .children = kids, .nchildren = 2};
    struct strbuf sb = STRBUF_INIT;
    stacks_render_text(&r, false, &sb);
    CHECK_STR(sb_str(&sb), "Process 20\nPython 3.12.1\n\nNo Python threads.\n"
                           "\nProcess 21 (child of 20): python3 c.py\nPython 3.12.1\n\n"
                           "No Python threads.\n"
                           "\nProcess 22 (child of 20): sleep 9\n"
                           "    process 22 is not a Python process (not_python)\n");
    sb_reset(&sb);
    stacks_render_json(&r, &sb);
    CHECK(strstr(sb_str(&sb),
                 "\"subprocesses\":[{\"pid\":21,\"parent_pid\":20,\"command\":\"python3 c.py\","
                 "\"python_version\":\"3.12.1\",\"free_threaded\":false,\"threads\":[]},"
                 "{\"pid\":22,\"parent_pid\":20,\"command\":\"sleep 9\",\"error\":{\"code\":"
                 "\"not_python\",\"message\":\"process 22 is not a Python process\"}}]}") != NULL);
    sb_release(&sb);
}

static const struct tl_test tests[] = {
    TL(test_json_writer_compact),
    TL(test_json_writer_pretty),
    TL(test_stacks_text),
    TL(test_stacks_json),
    TL(test_stacks_free_threaded),
    TL(test_stacks_locals_native),
    TL(test_stacks_tasks),
    TL(test_stacks_children),
};
TL_MAIN(tests)
