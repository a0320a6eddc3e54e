/* The Scalene-compatible profile writer (src/render/profile_json.c) on a synthetic profile: the
 * field names of both schemas, exact percentages of the total sampled time, one entry per source
 * line, Scalene's escaping of & < >, unreadable sources, and the reduced profile. */
#include <math.h>
#include <string.h>

#include <jansson.h>

#include "analysis/profile.h"
#include "render/profile_json.h"
#include "testlib.h"

/* 4 s sampled in all: 2 Python, 1 native, 1 system; 2.5 s of it on profiled lines. */
static const char part[] =
    "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":100,"
    "\"python_version\":\"3.12.1\",\"argv\":[\"python3\",\"app.py\"],"
    "\"start_time_absolute\":1000.5,\"elapsed_sec\":4.25,\"main_thread_id\":777,"
    "\"sampling_rate_sec\":0.01,"
    "\"totals\":{\"python_sec\":2.0,\"native_sec\":1.0,\"sys_sec\":1.0,\"samples\":400},"
    "\"files\":[\"/app/app.py\",\"/app/gone.py\"],"
    "\"functions\":[[\"f\",0,1],[\"<lambda>\",0,2],[\"g\",1,7]],"
    "\"lines\":[[0,2,0,1.0,0.5,0.0,150],[0,2,1,0.0,0.0,0.0,1],[0,3,0,0.0,0.0,0.5,50],"
    "[1,9,2,0.03,0.0,0.0,3]],"
    "\"excluded\":[[\"/usr/lib/python3.12/os.py\",\"system_library\",1.47]]}";

static const char source[] = "def f():\n    if a < b & c > d:\n    return a\n";

static json_t *write_doc(bool reduced, double threshold, struct strbuf *sb)
{
    struct profile p;
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, part, strlen(part), "part", 100), 0);
    prof_finish(&p);
    CHECK_EQ(prof_set_source(&p, 0, source, strlen(source)), 0);
    static const char *const args[] = {"--fast"};
    struct profile_json_opts o = {
        .version = "9.9.9",
        .program = "/app/app.py",
        .entrypoint_dir = "/app",
        .filename = "/app",
        .args = args,
        .nargs = 1,
        .start_time_perf = 55.5,
        .cpu_percent_threshold = threshold,
        .reduced = reduced,
        .ncpus = 2,
    };
    profile_json_write(&p, &o, sb);
    prof_free(&p);
    return tl_json_parse(sb_str(sb));
}

static void test_top_level(void)
{
    struct strbuf sb = STRBUF_INIT;
    json_t *d = write_doc(false, 1, &sb);
    if (!d)
        return;
    /* Scalene's keys, then scry's. */
    static const char *const keys[] = {
        "program", "entrypoint_dir", "args", "filename", "alloc_samples", "elapsed_time_sec",
        "start_time_absolute", "start_time_perf", "growth_rate", "max_footprint_mb",
        "max_footprint_python_fraction", "max_footprint_fname", "max_footprint_lineno",
        "native_allocations_mb", "files", "gpu", "gpu_device", "memory", "async_profile",
        "samples", "stacks", "main_thread_id", "tool", "version", "python_version",
        "cpu_sampling_rate", "use_virtual_time", "n_samples", "processes", "excluded",
        "sampled_time_sec", "profiled_time_sec", "n_dropped_samples"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!json_object_get(d, keys[i]))
            tl_fail(__FILE__, __LINE__, "missing key %s", keys[i]);
    CHECK_STR(json_string_value(json_object_get(d, "tool")), "scry");
    CHECK_STR(json_string_value(json_object_get(d, "version")), "9.9.9");
    CHECK_STR(json_string_value(json_object_get(d, "program")), "/app/app.py");
    CHECK_STR(json_string_value(json_array_get(json_object_get(d, "args"), 0)), "--fast");
    CHECK_EQ(json_array_size(json_object_get(d, "args")), 1);
    CHECK_STR(json_string_value(json_object_get(d, "python_version")), "3.12.1");
    CHECK(tl_json_num(d, "elapsed_time_sec") == 4.25);
    CHECK(tl_json_num(d, "start_time_absolute") == 1000.5);
    CHECK(tl_json_num(d, "start_time_perf") == 55.5);
    CHECK(tl_json_num(d, "n_samples") == 400);
    CHECK(tl_json_num(d, "processes") == 1);
    CHECK(tl_json_num(d, "main_thread_id") == 777);
    CHECK(tl_json_num(d, "sampled_time_sec") == 4.0);
    CHECK(tl_json_num(d, "cpu_sampling_rate") == 0.01);
    /* Numbers in their shortest exact form, not 0.01000000000000000021. */
    CHECK(strstr(sb_str(&sb), "\"cpu_sampling_rate\": 0.01,") != NULL);
    CHECK(json_is_null(json_object_get(d, "max_footprint_fname")));
    CHECK(json_is_false(json_object_get(d, "gpu")));
    CHECK(json_object_get(d, "note") == NULL);
    const json_t *ex = json_array_get(json_object_get(d, "excluded"), 0);
    CHECK_STR(json_string_value(json_object_get(ex, "rule")), "system_library");
    CHECK(tl_json_num(ex, "seconds") == 1.47);
    /* The files, largest first. */
    const char *first = json_object_iter_key(json_object_iter(json_object_get(d, "files")));
    CHECK_STR(first, "/app/app.py");
    json_decref(d);
    sb_release(&sb);
}

static void test_lines_and_functions(void)
{
    struct strbuf sb = STRBUF_INIT;
    json_t *d = write_doc(false, 1, &sb);
    if (!d)
        return;
    const json_t *f = json_object_get(json_object_get(d, "files"), "/app/app.py");
    CHECK(tl_json_num(f, "percent_cpu_time") == 50.0); /* 2.0 of 4.0 s */
    const json_t *lines = json_object_get(f, "lines");
    CHECK_EQ(json_array_size(lines), 3); /* every source line, zeros included */
    const json_t *l1 = json_array_get(lines, 0), *l2 = json_array_get(lines, 1),
                 *l3 = json_array_get(lines, 2);
    CHECK(tl_json_num(l1, "lineno") == 1 && tl_json_num(l1, "n_cpu_percent_python") == 0);
    CHECK(tl_json_num(l1, "n_samples") == 0 && tl_json_num(l1, "n_core_utilization") == 0);
    CHECK_STR(json_string_value(json_object_get(l1, "line")), "def f():\n");
    /* Line 2: both functions' time on it, summed. */
    CHECK(tl_json_num(l2, "lineno") == 2);
    CHECK(tl_json_num(l2, "n_cpu_percent_python") == 25.0);
    CHECK(tl_json_num(l2, "n_cpu_percent_c") == 12.5);
    CHECK(tl_json_num(l2, "n_sys_percent") == 0);
    CHECK(tl_json_num(l2, "n_samples") == 151);
    CHECK(tl_json_num(l2, "n_core_utilization") == 0.5); /* all on the CPU, over 2 CPUs */
    CHECK_STR(json_string_value(json_object_get(l2, "line")),
              "    if a \\u003c b \\u0026 c \\u003e d:\n");
    CHECK(strstr(sb_str(&sb), "\"    if a \\\\u003c b \\\\u0026 c \\\\u003e d:\\n\"") != NULL);
    CHECK(tl_json_num(l3, "n_sys_percent") == 12.5);
    CHECK(tl_json_num(l3, "start_region_line") == 3 && tl_json_num(l3, "end_region_line") == 3);
    /* The first line of the function that ran the line longest: f (line 1) on line 2, where
     * its lambda also ran, for less; none for a line no sample saw. */
    CHECK(tl_json_num(l3, "start_function_line") == 1);
    CHECK(tl_json_num(l2, "start_function_line") == 1);
    CHECK(tl_json_num(l1, "start_function_line") == 0);
    CHECK(tl_json_num(l3, "end_function_line") == 0);
    static const char *const zero[] = {"n_gpu_percent", "n_malloc_mb", "n_mallocs", "n_peak_mb",
                                       "n_python_fraction", "n_usage_fraction", "n_copy_mb_s"};
    for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
        CHECK(tl_json_num(l2, zero[i]) == 0);
    CHECK(json_is_array(json_object_get(l2, "memory_samples")));
    CHECK(json_is_array(json_object_get(l2, "cpu_samples_list")));
    CHECK(json_is_object(json_object_get(f, "leaks")));
    CHECK(json_is_array(json_object_get(f, "imports")));

    /* Functions by first line: f (lines 2 and 3), then the lambda. */
    const json_t *fns = json_object_get(f, "functions");
    CHECK_EQ(json_array_size(fns), 2);
    const json_t *fn = json_array_get(fns, 0);
    CHECK_STR(json_string_value(json_object_get(fn, "line")), "f");
    CHECK(tl_json_num(fn, "lineno") == 1);
    CHECK(tl_json_num(fn, "n_cpu_percent_python") == 25.0);
    CHECK(tl_json_num(fn, "n_cpu_percent_c") == 12.5);
    CHECK(tl_json_num(fn, "n_sys_percent") == 12.5);
    CHECK(tl_json_num(fn, "n_samples") == 200);
    CHECK(json_object_get(fn, "start_region_line") == NULL);
    CHECK_STR(json_string_value(json_object_get(json_array_get(fns, 1), "line")), "<lambda>");

    /* An unreadable file: only its sampled lines, with no text. */
    const json_t *g = json_object_get(json_object_get(d, "files"), "/app/gone.py");
    CHECK(g != NULL);
    CHECK_EQ(json_array_size(json_object_get(g, "lines")), 1);
    const json_t *gl = json_array_get(json_object_get(g, "lines"), 0);
    CHECK(tl_json_num(gl, "lineno") == 9);
    CHECK_STR(json_string_value(json_object_get(gl, "line")), "");
    CHECK(fabs(tl_json_num(gl, "n_cpu_percent_python") - 0.75) < 1e-12);
    json_decref(d);
    sb_release(&sb);
}

static void test_reduced(void)
{
    struct strbuf sb = STRBUF_INIT;
    json_t *d = write_doc(true, 15, &sb);
    if (!d)
        return;
    const json_t *files = json_object_get(d, "files");
    CHECK(json_object_get(files, "/app/gone.py") == NULL); /* 0.75% < 15% */
    const json_t *f = json_object_get(files, "/app/app.py");
    const json_t *lines = json_object_get(f, "lines");
    CHECK_EQ(json_array_size(lines), 1); /* only line 2 (37.5%); line 3 has 12.5% */
    CHECK(tl_json_num(json_array_get(lines, 0), "lineno") == 2);
    CHECK_EQ(json_array_size(json_object_get(f, "functions")), 1);
    json_decref(d);
    sb_reset(&sb);

    d = write_doc(true, 0, &sb);
    if (!d)
        return;
    f = json_object_get(json_object_get(d, "files"), "/app/app.py");
    CHECK_EQ(json_array_size(json_object_get(f, "lines")), 2); /* lines with time only */
    json_decref(d);
    sb_release(&sb);
}

static void test_empty_profile(void)
{
    struct profile p;
    prof_init(&p);
    prof_finish(&p);
    struct strbuf sb = STRBUF_INIT;
    struct profile_json_opts o = {.version = "1", .program = "/x.py"};
    profile_json_write(&p, &o, &sb);
    json_t *d = json_loads(sb_str(&sb), 0, NULL);
    CHECK(d != NULL);
    CHECK(json_is_string(json_object_get(d, "note")));
    CHECK_EQ(json_object_size(json_object_get(d, "files")), 0);
    CHECK(json_is_null(json_object_get(d, "python_version")));
    json_decref(d);
    sb_release(&sb);
    prof_free(&p);
}

static void test_scalene_line(void)
{
    struct strbuf sb = STRBUF_INIT;
    profile_json_scalene_line(&sb, "a<b>&c");
    CHECK_STR(sb_str(&sb), "a\\u003cb\\u003e\\u0026c");
    sb_release(&sb);
}

static const struct tl_test tests[] = {
    TL(test_top_level), TL(test_lines_and_functions), TL(test_reduced),
    TL(test_empty_profile), TL(test_scalene_line),
};
TL_MAIN(tests)
