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
    {"Worker.crunch", "/app/w.py", 41},
    {"<module>", "/app/w.py", -1},
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

static const struct tl_test tests[] = {
    TL(test_json_writer_compact),
    TL(test_json_writer_pretty),
    TL(test_stacks_text),
    TL(test_stacks_json),
    TL(test_stacks_free_threaded),
};
TL_MAIN(tests)
