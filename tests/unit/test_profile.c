/* The merge of agent part files (src/analysis/profile.c) on synthetic parts: sums per (file, line,
 * function), totals, elapsed as the maximum, the program's own part chosen by pid, excluded
 * files, notes for empty profiles, and damaged parts refused whole with a clear message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analysis/profile.h"
#include "common/error.h"
#include "render/profile_json.h"
#include "testlib.h"

/* The program's process (pid 100): two functions in app.py, one line in util.py. */
static const char part_a[] =
    "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":100,\"ppid\":1,"
    "\"python_version\":\"3.12.1\",\"argv\":[\"python3\",\"app.py\",\"--fast\"],"
    "\"start_time_absolute\":1000.5,\"elapsed_sec\":2.0,\"main_thread_id\":777,"
    "\"virtual_time\":false,\"sampling_rate_sec\":0.01,"
    "\"totals\":{\"python_sec\":1.0,\"native_sec\":0.5,\"sys_sec\":0.5,\"samples\":200,"
    "\"dropped\":1},"
    "\"files\":[\"/app/app.py\",\"/app/util.py\"],"
    "\"functions\":[[\"main\",0,10],[\"helper\",1,3]],"
    "\"lines\":[[0,12,0,0.5,0.25,0.0,75],[1,4,1,0.25,0.0,0.25,50]],"
    "\"excluded\":[[\"/usr/lib/python3.12/json/encoder.py\",\"system_library\",0.25]]}";

/* A child (pid 101): the same line of main again, a new line, and the same excluded file. Its
 * file list is in another order, so the merge must map indexes. */
static const char part_b[] =
    "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":101,\"ppid\":100,"
    "\"python_version\":\"3.12.1\",\"argv\":[\"python3\",\"-c\",\"child\"],"
    "\"start_time_absolute\":1001.0,\"elapsed_sec\":3.5,\"main_thread_id\":888,"
    "\"totals\":{\"python_sec\":0.5,\"native_sec\":0.25,\"sys_sec\":0.0,\"samples\":80,"
    "\"dropped\":0},"
    "\"files\":[\"/app/util.py\",\"/app/app.py\"],"
    "\"functions\":[[\"main\",1,10]],"
    "\"lines\":[[1,12,0,0.25,0.25,0.0,50],[1,13,0,0.25,0.0,0.0,25]],"
    "\"excluded\":[[\"/usr/lib/python3.12/json/encoder.py\",\"system_library\",0.125],"
    "[\"<frozen importlib._bootstrap>\",\"not_a_file\",0.5]]}";

static const struct prof_line *find_line(const struct profile *p, const char *file,
                                         uint32_t line, const char *func)
{
    for (size_t i = 0; i < p->nlines; i++) {
        const struct prof_line *l = &p->lines[i];
        if (strcmp(p->files[l->file].name, file) == 0 && l->line == line &&
            strcmp(p->funcs[l->func].qualname, func) == 0)
            return l;
    }
    return NULL;
}

static void test_merge_two_parts(void)
{
    struct profile p;
    prof_init(&p);
    /* The child's part comes first: the program's must still win once it arrives. */
    CHECK_EQ(prof_add_part_text(&p, part_b, strlen(part_b), "part-101.json", 100), 0);
    CHECK_EQ(p.pid, 101);
    CHECK_EQ(prof_add_part_text(&p, part_a, strlen(part_a), "part-100.json", 100), 0);
    prof_finish(&p);

    CHECK_EQ(p.nparts, 2);
    CHECK_EQ(p.pid, 100);
    CHECK_STR(p.python_version, "3.12.1");
    CHECK_EQ(p.argc, 3);
    CHECK_STR(p.argv[1], "app.py");
    CHECK(p.start_time_absolute == 1000.5);
    CHECK_EQ(p.main_thread_id, 777);
    CHECK(p.elapsed_sec == 3.5);
    CHECK(p.sampling_rate_sec == 0.01);
    CHECK(p.python_sec == 1.5 && p.native_sec == 0.75 && p.sys_sec == 0.5);
    CHECK_EQ(p.samples, 280);
    CHECK_EQ(p.dropped, 1);
    CHECK(prof_total_sec(&p) == 2.75);
    CHECK(prof_charged_sec(&p) == 2.0);

    CHECK_EQ(p.nfiles, 2);
    CHECK_EQ(p.nfuncs, 2);
    CHECK_EQ(p.nlines, 3);
    const struct prof_line *l = find_line(&p, "/app/app.py", 12, "main");
    CHECK(l != NULL);
    if (l) {
        CHECK(l->python_sec == 0.75 && l->native_sec == 0.5 && l->sys_sec == 0);
        CHECK_EQ(l->samples, 125);
        CHECK_EQ(p.funcs[l->func].first_line, 10);
    }
    l = find_line(&p, "/app/app.py", 13, "main");
    CHECK(l && l->python_sec == 0.25 && l->samples == 25);
    l = find_line(&p, "/app/util.py", 4, "helper");
    CHECK(l && l->sys_sec == 0.25 && l->samples == 50);
    /* Sorted by (file, line, function). */
    for (size_t i = 1; i < p.nlines; i++)
        CHECK(p.lines[i - 1].file < p.lines[i].file ||
              (p.lines[i - 1].file == p.lines[i].file && p.lines[i - 1].line < p.lines[i].line));

    /* Excluded: summed per (file, rule), largest first. */
    CHECK_EQ(p.nexcluded, 2);
    CHECK_STR(p.excluded[0].file, "<frozen importlib._bootstrap>");
    CHECK(p.excluded[0].sec == 0.5);
    CHECK_STR(p.excluded[1].rule, "system_library");
    CHECK(p.excluded[1].sec == 0.375);
    CHECK(p.note == NULL);
    prof_free(&p);
}

static void test_primary_falls_back_to_first(void)
{
    struct profile p;
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, part_b, strlen(part_b), "b", 4242), 0);
    CHECK_EQ(prof_add_part_text(&p, part_a, strlen(part_a), "a", 4242), 0);
    prof_finish(&p);
    CHECK_EQ(p.pid, 101); /* no part is the program's: the first merged stands in */
    CHECK_EQ(p.main_thread_id, 888);
    prof_free(&p);
}

static void test_bad_parts_are_skipped(void)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"format\":\"scry-part\"", "not JSON"},
        {"[1,2]", "not a JSON object"},
        {"{\"format\":\"other\",\"format_version\":1}", "\"format\" is not \"scry-part\""},
        {"{\"format\":\"scry-part\",\"format_version\":2}", "format_version 2"},
        {"{\"format\":\"scry-part\",\"format_version\":1,\"pid\":-3}", "\"pid\""},
        {"{\"format\":\"scry-part\",\"format_version\":1,\"pid\":5,\"totals\":{\"python_sec\":-1,"
         "\"native_sec\":0,\"sys_sec\":0,\"samples\":0}}",
         "totals.python_sec"},
        /* A line pointing past the function table. */
        {"{\"format\":\"scry-part\",\"format_version\":1,\"pid\":5,\"totals\":{\"python_sec\":1,"
         "\"native_sec\":0,\"sys_sec\":0,\"samples\":1},\"files\":[\"/a.py\"],\"functions\":[],"
         "\"lines\":[[0,1,0,1.0,0,0,1]]}",
         "lines[0]"},
        /* A function pointing past the file table. */
        {"{\"format\":\"scry-part\",\"format_version\":1,\"pid\":5,\"totals\":{\"python_sec\":1,"
         "\"native_sec\":0,\"sys_sec\":0,\"samples\":1},\"files\":[],"
         "\"functions\":[[\"f\",3,1]],\"lines\":[]}",
         "functions[0]"},
        {"{\"format\":\"scry-part\",\"format_version\":1,\"pid\":5,\"totals\":{\"python_sec\":1,"
         "\"native_sec\":0,\"sys_sec\":0,\"samples\":1},\"files\":[],\"functions\":[],"
         "\"lines\":[],\"excluded\":[[\"/x.py\",3,1.0]]}",
         "excluded[0]"},
    };
    struct profile p;
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, part_a, strlen(part_a), "part-100.json", 100), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int err = prof_add_part_text(&p, cases[i].json, strlen(cases[i].json), "part-5.json", 100);
        CHECK_EQ(err, -SCRY_E_BAD_PROFILE);
        CHECK(strstr(err_last_message(), "part-5.json") != NULL);
        if (!strstr(err_last_message(), cases[i].want))
            tl_fail(__FILE__, __LINE__, "case %zu: \"%s\" lacks \"%s\"", i, err_last_message(),
                    cases[i].want);
    }
    /* Nothing of the bad parts was merged. */
    prof_finish(&p);
    CHECK_EQ(p.nparts, 1);
    CHECK_EQ(p.samples, 200);
    CHECK_EQ(p.nlines, 2);
    CHECK_EQ(p.nfiles, 2);
    prof_free(&p);
}

static void test_notes(void)
{
    struct profile p;
    prof_init(&p);
    prof_finish(&p);
    CHECK(p.note && strstr(p.note, "no process wrote profile data"));
    prof_free(&p);

    static const char none[] =
        "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":5,\"elapsed_sec\":0.004,"
        "\"sampling_rate_sec\":0.01,\"totals\":{\"python_sec\":0,\"native_sec\":0,\"sys_sec\":0,"
        "\"samples\":0},\"files\":[],\"functions\":[],\"lines\":[]}";
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, none, strlen(none), "n", 5), 0);
    prof_finish(&p);
    CHECK_STR(p.note, "the program ran for 0.004 s, too short to sample at the sampling rate "
                      "(mean 0.01 s): nothing was recorded");
    prof_free(&p);

    static const char filtered[] =
        "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":5,\"elapsed_sec\":1,"
        "\"totals\":{\"python_sec\":0.5,\"native_sec\":0,\"sys_sec\":0,\"samples\":50},"
        "\"files\":[],\"functions\":[],\"lines\":[],"
        "\"excluded\":[[\"/usr/lib/python3.12/json/encoder.py\",\"system_library\",0.5]]}";
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, filtered, strlen(filtered), "f", 5), 0);
    prof_finish(&p);
    CHECK_STR(p.note, "all 50 samples (0.500 s) were filtered out: none landed in a profiled "
                      "file; the time went to /usr/lib/python3.12/json/encoder.py "
                      "(system_library, 0.500 s); use --profile-all to profile every file, or "
                      "--profile-only a,b to choose files by name");
    prof_free(&p);
}

static void test_excluded_capped(void)
{
    struct profile p;
    prof_init(&p);
    char part[8192];
    size_t n = (size_t)snprintf(part, sizeof(part),
                                "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":5,"
                                "\"totals\":{\"python_sec\":1,\"native_sec\":0,\"sys_sec\":0,"
                                "\"samples\":1},\"files\":[],\"functions\":[],\"lines\":[],"
                                "\"excluded\":[");
    for (int i = 0; i < 60; i++)
        n += (size_t)snprintf(part + n, sizeof(part) - n, "%s[\"/f%d.py\",\"excluded\",%d]",
                              i ? "," : "", i, i);
    snprintf(part + n, sizeof(part) - n, "]}");
    CHECK_EQ(prof_add_part_text(&p, part, strlen(part), "x", 5), 0);
    prof_finish(&p);
    CHECK_EQ(p.nexcluded, PROF_MAX_EXCLUDED);
    CHECK_STR(p.excluded[0].file, "/f59.py");
    CHECK(p.excluded[PROF_MAX_EXCLUDED - 1].sec == 10);
    prof_free(&p);
}

/* run_queue: summed over the parts that have it, absent from older ones (null in the profile);
 * oversubscribed from 10% of the CPU time and 20 ms of waiting. */
#define RQ_PART(pid, rq)                                                                        \
    "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":" pid "," rq                       \
    "\"totals\":{\"python_sec\":1,\"native_sec\":0,\"sys_sec\":0,\"samples\":1},"             \
    "\"files\":[],\"functions\":[],\"lines\":[]}"

static void rq_profile(const char *a, const char *b, struct profile *p)
{
    prof_init(p);
    CHECK_EQ(prof_add_part_text(p, a, strlen(a), "a", 100), 0);
    if (b)
        CHECK_EQ(prof_add_part_text(p, b, strlen(b), "b", 100), 0);
    prof_finish(p);
}

static void test_run_queue(void)
{
    struct profile p;
    /* 0.0625 + 0.0625 s waited of 0.5 + 0.75 s run: 10%, and 125 ms: oversubscribed. */
    rq_profile(RQ_PART("100", "\"run_queue\":{\"delay_sec\":0.0625,\"cpu_sec\":0.5},"),
               RQ_PART("101", "\"run_queue\":{\"delay_sec\":0.0625,\"cpu_sec\":0.75},"), &p);
    CHECK(p.have_run_queue);
    CHECK(p.run_queue_delay_sec == 0.125 && p.run_queue_cpu_sec == 1.25);
    CHECK(prof_oversubscribed(&p));
    prof_free(&p);
    /* Just under 10%: not. */
    rq_profile(RQ_PART("100", "\"run_queue\":{\"delay_sec\":0.1249,\"cpu_sec\":1.25},"), NULL,
               &p);
    CHECK(!prof_oversubscribed(&p));
    prof_free(&p);
    /* 100% of a short run, but under 20 ms in all: not. */
    rq_profile(RQ_PART("100", "\"run_queue\":{\"delay_sec\":0.015,\"cpu_sec\":0.015},"), NULL,
               &p);
    CHECK(!prof_oversubscribed(&p));
    prof_free(&p);
    /* No part could read it: unknown, written as null, never marked. */
    rq_profile(RQ_PART("100", ""), NULL, &p);
    CHECK(!p.have_run_queue && !prof_oversubscribed(&p));
    struct strbuf sb = STRBUF_INIT;
    struct profile_json_opts o = {.version = "1"};
    profile_json_write(&p, &o, &sb);
    json_error_t err;
    json_t *d = json_loads(sb_str(&sb), 0, &err);
    CHECK(d && json_is_null(json_object_get(d, "run_queue_delay_sec")) &&
          json_is_false(json_object_get(d, "oversubscribed")));
    json_decref(d);
    sb_release(&sb);
    prof_free(&p);
    /* A malformed one refuses the part. */
    prof_init(&p);
    const char *bad = RQ_PART("100", "\"run_queue\":{\"delay_sec\":-1,\"cpu_sec\":0.5},");
    CHECK_EQ(prof_add_part_text(&p, bad, strlen(bad), "x", 100), -SCRY_E_BAD_PROFILE);
    CHECK(strstr(err_last_message(), "run_queue") != NULL);
    prof_free(&p);
}

/* scry record's "threads": each part's threads kept with its pid and written under "threads";
 * a part without them writes none; a malformed entry refuses the part. */
static void test_threads(void)
{
    struct profile p;
    rq_profile(RQ_PART("100", "\"threads\":[{\"native_id\":100,\"thread_id\":7,\"name\":"
                              "\"MainThread\",\"samples\":300,\"gil_samples\":180}],"),
               RQ_PART("101", "\"threads\":[{\"native_id\":101,\"thread_id\":8,\"name\":"
                              "\"\",\"samples\":10,\"gil_samples\":0}],"),
               &p);
    CHECK(p.have_threads);
    CHECK_EQ(p.nthreads, 2);
    CHECK(p.nthreads == 2 && p.threads[0].pid == 100 && p.threads[0].gil_samples == 180 &&
          p.threads[1].pid == 101 && p.threads[1].thread_id == 8);
    struct strbuf sb = STRBUF_INIT;
    struct profile_json_opts o = {.version = "1"};
    profile_json_write(&p, &o, &sb);
    json_t *d = json_loads(sb_str(&sb), 0, NULL);
    json_t *t = json_array_get(json_object_get(d, "threads"), 0);
    CHECK(t && json_integer_value(json_object_get(t, "gil_samples")) == 180 &&
          json_integer_value(json_object_get(t, "samples")) == 300 &&
          !strcmp(json_string_value(json_object_get(t, "name")), "MainThread"));
    json_decref(d);
    sb_release(&sb);
    prof_free(&p);
    rq_profile(RQ_PART("100", ""), NULL, &p);
    profile_json_write(&p, &o, &sb);
    d = json_loads(sb_str(&sb), 0, NULL);
    CHECK(d && !json_object_get(d, "threads"));
    json_decref(d);
    sb_release(&sb);
    prof_free(&p);
    static const char *const bad[] = {
        RQ_PART("100", "\"threads\":{},"),
        RQ_PART("100", "\"threads\":[{\"native_id\":1,\"thread_id\":7,\"name\":\"a\","
                       "\"samples\":1,\"gil_samples\":2}],"),
        RQ_PART("100", "\"threads\":[{\"native_id\":1,\"thread_id\":7,\"samples\":1,"
                       "\"gil_samples\":0}],"),
    };
    prof_init(&p);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_EQ(prof_add_part_text(&p, bad[i], strlen(bad[i]), "x", 100), -SCRY_E_BAD_PROFILE);
        CHECK(strstr(err_last_message(), "threads") != NULL);
    }
    CHECK(p.nparts == 0 && !p.have_threads);
    prof_free(&p);
}

static void test_set_source(void)
{
    struct profile p;
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, part_a, strlen(part_a), "a", 100), 0);
    prof_finish(&p);
    const char src[] = "a = 1\n\nb = 2";
    CHECK_EQ(prof_set_source(&p, 0, src, strlen(src)), 0);
    CHECK(p.files[0].src_read);
    CHECK_EQ(p.files[0].nsrc, 3);
    CHECK_STR(p.files[0].src[0], "a = 1\n");
    CHECK_STR(p.files[0].src[1], "\n");
    CHECK_STR(p.files[0].src[2], "b = 2");
    CHECK_EQ(prof_set_source(&p, 1, "", 0), 0);
    CHECK_EQ(p.files[1].nsrc, 0);
    CHECK(prof_set_source(&p, 9, "x", 1) < 0);
    prof_free(&p);
}

/* Native and combined stacks (scry run --stacks) of two processes: the same code at other
 * addresses (ASLR) is one native frame; a Python frame is [file, function, line], a native
 * one [native frame index]. */
#define NATIVE_HEAD(pid)                                                                        \
    "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":" pid ","                              \
    "\"totals\":{\"python_sec\":0,\"native_sec\":1,\"sys_sec\":0,\"samples\":10},"              \
    "\"files\":[\"/app/z.py\"],\"functions\":[[\"work\",0,3]],\"lines\":[[0,5,0,0,1,0,10]],"
static const char native_a[] = NATIVE_HEAD("100")
    "\"native_frames\":[[\"/lib/libz.so.1\",\"deflate\",4096,396],"
    "[\"/lib/zlib.so\",\"\",8192,34771]],"
    "\"native_stacks\":[[[1,0],7]],\"native_stacks_overflow\":2,"
    "\"combined_stacks\":[[[[0,0,5],[1],[0]],7]],\"combined_stacks_overflow\":1}";
static const char native_b[] = NATIVE_HEAD("101")
    "\"native_frames\":[[\"/lib/zlib.so\",\"\",99999,34771],"
    "[\"/lib/libz.so.1\",\"deflate\",5000,396]],"
    "\"native_stacks\":[[[0,1],3]],"
    "\"combined_stacks\":[[[[0,0,5],[0],[1]],3]]}";

static void test_native_stacks(void)
{
    struct profile p;
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, native_a, strlen(native_a), "a", 100), 0);
    CHECK_EQ(prof_add_part_text(&p, native_b, strlen(native_b), "b", 100), 0);
    prof_finish(&p);
    CHECK(p.have_native);
    CHECK_EQ(p.nnframes, 2);
    CHECK_EQ(p.nnative_stacks, 1);
    CHECK_EQ(p.native_stacks[0].hits, 10);
    CHECK_EQ(p.ncombined_stacks, 1);
    CHECK_EQ(p.combined_stacks[0].hits, 10);
    CHECK_EQ(p.native_stacks_overflow, 2);
    CHECK_EQ(p.combined_stacks_overflow, 1);

    struct strbuf sb = STRBUF_INIT;
    struct profile_json_opts o = {.version = "1"};
    profile_json_write(&p, &o, &sb);
    json_t *d = json_loads(sb_str(&sb), 0, NULL);
    CHECK(d != NULL);
    const json_t *cs = json_object_get(d, "combined_stacks");
    CHECK_EQ(json_array_size(cs), 1);
    const json_t *st = json_array_get(json_array_get(cs, 0), 0);
    CHECK_EQ(json_integer_value(json_array_get(json_array_get(cs, 0), 1)), 10);
    CHECK_EQ(json_array_size(st), 3);
    const json_t *py = json_array_get(st, 0), *zmod = json_array_get(st, 1),
                 *defl = json_array_get(st, 2);
    CHECK_STR(json_string_value(json_object_get(py, "kind")), "py");
    CHECK_STR(json_string_value(json_object_get(py, "display_name")), "work");
    CHECK_STR(json_string_value(json_object_get(py, "filename_or_module")), "/app/z.py");
    CHECK_EQ(json_integer_value(json_object_get(py, "line")), 5);
    CHECK(json_is_null(json_object_get(py, "ip")) && json_is_null(json_object_get(py, "offset")));
    CHECK_STR(json_string_value(json_object_get(zmod, "kind")), "native");
    CHECK_STR(json_string_value(json_object_get(zmod, "display_name")), "zlib.so+0x87d3");
    CHECK_EQ(json_integer_value(json_object_get(zmod, "offset")), 34771);
    CHECK(json_is_null(json_object_get(zmod, "line")));
    CHECK_STR(json_string_value(json_object_get(defl, "display_name")), "deflate");
    CHECK_STR(json_string_value(json_object_get(defl, "filename_or_module")), "/lib/libz.so.1");
    CHECK_EQ(json_integer_value(json_object_get(defl, "ip")), 4096); /* the first seen */
    const json_t *ns = json_array_get(json_array_get(json_object_get(d, "native_stacks"), 0), 0);
    CHECK_EQ(json_array_size(ns), 2);
    CHECK_STR(json_string_value(json_array_get(json_array_get(ns, 0), 0)), "/lib/zlib.so");
    CHECK_STR(json_string_value(json_array_get(json_array_get(ns, 1), 1)), "deflate");
    json_decref(d);
    sb_release(&sb);
    prof_free(&p);

    /* Indexes out of range are refused, the part skipped whole. */
    static const char *const bad_parts[] = {
        NATIVE_HEAD("5") "\"native_frames\":[],\"native_stacks\":[[[0],1]]}",
        NATIVE_HEAD("5") "\"native_frames\":[[\"m\",\"s\",1,1]],"
                         "\"combined_stacks\":[[[[0,0]],1]]}",
        NATIVE_HEAD("5") "\"native_frames\":[[\"m\",\"s\",-1,1]]}",
        NATIVE_HEAD("5") "\"combined_stacks\":[[[[0,3,5]],1]]}",
    };
    prof_init(&p);
    for (size_t i = 0; i < sizeof(bad_parts) / sizeof(bad_parts[0]); i++)
        CHECK_EQ(prof_add_part_text(&p, bad_parts[i], strlen(bad_parts[i]), "x", 0),
                 -SCRY_E_BAD_PROFILE);
    CHECK_EQ(p.nparts, 0);
    CHECK(!p.have_native);
    prof_free(&p);
}

/* A part of a free-threaded build that was asked for memory says it profiled CPU only: the
 * profile keeps the flag whichever part says it; anything but a boolean is a damaged part. */
static void test_memory_unsupported(void)
{
    static const char marked[] =
        "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":101,\"ppid\":100,"
        "\"python_version\":\"3.13.15\",\"memory_unsupported\":true,"
        "\"totals\":{\"python_sec\":0.5,\"native_sec\":0,\"sys_sec\":0,\"samples\":50,"
        "\"dropped\":0},\"files\":[],\"functions\":[],\"lines\":[],\"excluded\":[]}";
    struct profile p;
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, part_a, strlen(part_a), "part-100.json", 100), 0);
    CHECK(!p.memory_unsupported);
    CHECK_EQ(prof_add_part_text(&p, marked, strlen(marked), "part-101.json", 100), 0);
    CHECK(p.memory_unsupported);
    prof_finish(&p);
    prof_free(&p);

    char bad[sizeof(marked)];
    memcpy(bad, marked, sizeof(marked));
    memcpy(strstr(bad, "true"), "4   ", 4);
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, bad, strlen(bad), "x", 100), -SCRY_E_BAD_PROFILE);
    CHECK(strstr(err_last_message(), "memory_unsupported") != NULL);
    prof_free(&p);
}

/* A part with a sample stream: `base` with "sample_stream" added before its closing brace. */
static char *with_stream(const char *base, const char *stream)
{
    size_t n = strlen(base);
    char *out = malloc(n + strlen(stream) + 32);
    memcpy(out, base, n - 1);
    sprintf(out + n - 1, ",\"sample_stream\":%s}", stream);
    return out;
}

static void test_sample_stream(void)
{
    /* The program (start 1000.5) and its child (start 1001.0): the child's files are in
     * another order; its samples come 0.5 s later on the program's clock. */
    char *a = with_stream(part_a, "{\"max\":100,\"stride\":1,\"seen\":3,\"lost\":0,"
                                  "\"threads\":[[100,\"python3\"],[105,\"worker\"]],"
                                  "\"samples\":[[1000,0,0,10000,0,0,12,-1],"
                                  "[600000,1,2,20000,1,1,4,-1],[2000,0,1,5000,0,0,12,-1]]}");
    char *b = with_stream(part_b, "{\"max\":100,\"stride\":4,\"seen\":9,\"lost\":0,"
                                  "\"threads\":[[101,\"\"]],"
                                  "\"samples\":[[100,0,0,10000,1,0,13,-1]]}");
    struct profile p;
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, b, strlen(b), "part-101.json", 100), 0);
    CHECK_EQ(prof_add_part_text(&p, a, strlen(a), "part-100.json", 100), 0);
    prof_finish(&p);
    const struct prof_sstream *ss = &p.ss;
    CHECK(ss->on);
    CHECK_EQ(ss->nthreads, 3);
    CHECK_EQ(ss->nsamples, 4);
    CHECK_EQ(ss->threads[0].pid, 101);
    CHECK_EQ(ss->threads[0].stride, 4);
    CHECK_STR(ss->threads[2].name, "worker");
    /* Sorted by time, relative to the program's start. */
    int64_t want_t[4] = {1000000, 2000000, 500100000, 600000000};
    uint32_t want_thread[4] = {1, 1, 0, 2};
    for (size_t i = 0; i < 4; i++) {
        CHECK_EQ(ss->samples[i].t, want_t[i]);
        CHECK_EQ(ss->samples[i].thread, want_thread[i]);
    }
    CHECK_EQ(ss->samples[1].kind, 1);
    CHECK_EQ(ss->samples[1].weight_ns, 5000000);
    /* One-frame stacks (no --stacks): the same line of both processes is one stack. */
    CHECK_EQ(ss->samples[0].stack, ss->samples[1].stack);
    const struct prof_ssstack *st = &ss->stacks[ss->samples[2].stack];
    CHECK_EQ(st->depth, 1);
    const struct prof_sframe *f = &ss->frames[st->off];
    CHECK_STR(p.files[f->file].name, "/app/app.py");
    CHECK_STR(p.funcs[f->func].qualname, "main");
    CHECK_EQ(f->line, 13);
    f = &ss->frames[ss->stacks[ss->samples[3].stack].off];
    CHECK_STR(p.files[f->file].name, "/app/util.py");
    CHECK_STR(p.funcs[f->func].qualname, "helper");
    prof_free(&p);

    /* A sample of a thread the part does not list: the whole part is refused. */
    char *bad = with_stream(part_a, "{\"max\":100,\"stride\":1,\"seen\":1,\"lost\":0,"
                                    "\"threads\":[],\"samples\":[[1,0,0,1,0,0,12,-1]]}");
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, bad, strlen(bad), "part-100.json", 100),
             -SCRY_E_BAD_PROFILE);
    CHECK(strstr(err_last_message(), "sample_stream.samples[0]") != NULL);
    CHECK_EQ(p.nlines, 0);
    prof_free(&p);
    free(a);
    free(b);
    free(bad);
}

/* GPU (docs/agent-protocol.md, "GPU"): gpu_lines summed per line over parts, n_gpu_percent the
 * load-weighted mean, memory's mean and peak; sources merged ("mixed" when parts differ), notes
 * kept; a part with GPU lines but no device, or a load above 1, is refused. */
#define GPU_PART(pid, gpu)                                                                        \
    "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":" pid ",\"ppid\":1,"                   \
    "\"elapsed_sec\":2.0,\"sampling_rate_sec\":0.01,"                                             \
    "\"totals\":{\"python_sec\":1.0,\"native_sec\":0.0,\"sys_sec\":1.0,\"samples\":200,"           \
    "\"dropped\":0},\"files\":[\"/app/app.py\"],\"functions\":[[\"main\",0,10]],"                  \
    "\"lines\":[[0,12,0,1.0,0.0,0.0,100],[0,13,0,0.0,0.0,1.0,100]]," gpu "}"

static void test_gpu(void)
{
    const char *a = GPU_PART("100", "\"gpu\":{\"device\":\"H200\",\"devices\":1,"
                                    "\"utilization_source\":\"process\",\"memory_source\":"
                                    "\"process\",\"sampler_cpu_sec\":0.25},"
                                    "\"gpu_lines\":[[0,12,0,1.0,0.9,8192.0,8192.0],"
                                    "[0,13,0,1.0,0.0,0.0,0.0]]");
    const char *b = GPU_PART("101", "\"gpu\":{\"device\":\"H200\",\"utilization_source\":"
                                    "\"device\",\"memory_source\":\"process\","
                                    "\"note\":\"GPU: device 0 lost\"},"
                                    "\"gpu_lines\":[[0,12,0,1.0,0.5,0.0,100.0]]");
    struct profile p;
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, a, strlen(a), "a", 100), 0);
    CHECK_EQ(prof_add_part_text(&p, b, strlen(b), "b", 100), 0);
    prof_finish(&p);
    CHECK(p.gpu && strcmp(p.gpu_device, "H200") == 0);
    CHECK(strcmp(p.gpu_util_source, "mixed") == 0 && strcmp(p.gpu_mem_source, "process") == 0);
    CHECK(p.gpu_note && strcmp(p.gpu_note, "GPU: device 0 lost") == 0);
    const struct prof_line *l = find_line(&p, "/app/app.py", 12, "main");
    CHECK(l && l->gpu_sec == 2.0 && fabs(l->gpu_load_sec - 1.4) < 1e-12 &&
          l->gpu_peak_mb == 8192.0 && l->gpu_mem_mb_sec == 8192.0);
    struct strbuf sb = STRBUF_INIT;
    struct profile_json_opts o = {.version = "1"};
    profile_json_write(&p, &o, &sb);
    json_error_t jerr;
    json_t *d = json_loads(sb_str(&sb), 0, &jerr);
    CHECK(d && json_is_true(json_object_get(d, "gpu")));
    CHECK(strcmp(json_string_value(json_object_get(d, "gpu_device")), "H200") == 0);
    CHECK(strcmp(json_string_value(json_object_get(d, "gpu_note")), "GPU: device 0 lost") == 0);
    const json_t *f = json_object_get(json_object_get(d, "files"), "/app/app.py");
    const json_t *lines = json_object_get(f, "lines");
    for (size_t i = 0; i < json_array_size(lines); i++) {
        const json_t *e = json_array_get(lines, i);
        json_int_t no = json_integer_value(json_object_get(e, "lineno"));
        double pct = json_number_value(json_object_get(e, "n_gpu_percent"));
        double avg = json_number_value(json_object_get(e, "n_gpu_avg_memory_mb"));
        double peak = json_number_value(json_object_get(e, "n_gpu_peak_memory_mb"));
        if (no == 12)
            CHECK(fabs(pct - 70.0) < 1e-9 && fabs(avg - 4096.0) < 1e-9 && peak == 8192.0);
        else if (no == 13)
            CHECK(pct == 0 && avg == 0 && peak == 0);
    }
    /* The function: both lines, 1.4 of 3 load-seconds. */
    const json_t *fn = json_array_get(json_object_get(f, "functions"), 0);
    CHECK(fabs(json_number_value(json_object_get(fn, "n_gpu_percent")) - 100 * 1.4 / 3) < 1e-9);
    json_decref(d);
    sb_release(&sb);
    prof_free(&p);

    const char *bad[] = {
        GPU_PART("100", "\"gpu_lines\":[[0,12,0,1.0,0.5,0.0,0.0]]"),
        GPU_PART("100", "\"gpu\":{\"device\":\"H200\"},\"gpu_lines\":[[0,12,0,1.0,1.5,0,0]]"),
        GPU_PART("100", "\"gpu\":{\"device\":\"H200\"},\"gpu_lines\":[[3,12,0,1.0,0.5,0,0]]"),
        GPU_PART("100", "\"gpu\":[]"),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        prof_init(&p);
        CHECK_EQ(prof_add_part_text(&p, bad[i], strlen(bad[i]), "x", 100), -SCRY_E_BAD_PROFILE);
        CHECK(strstr(err_last_message(), "gpu") != NULL);
        prof_free(&p);
    }
    /* A part with only a note: no GPU, the note kept, no GPU key in the JSON but the note. */
    const char *noted = GPU_PART("100", "\"gpu\":{\"note\":\"GPU: nvmlInit failed\"}");
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, noted, strlen(noted), "n", 100), 0);
    prof_finish(&p);
    CHECK(!p.gpu && strcmp(p.gpu_note, "GPU: nvmlInit failed") == 0);
    profile_json_write(&p, &o, &sb);
    d = json_loads(sb_str(&sb), 0, &jerr);
    CHECK(d && json_is_false(json_object_get(d, "gpu")) &&
          !json_object_get(d, "gpu_utilization_source") &&
          strcmp(json_string_value(json_object_get(d, "gpu_device")), "") == 0);
    json_decref(d);
    sb_release(&sb);
    prof_free(&p);
}

static const struct tl_test tests[] = {
    TL(test_sample_stream),
    TL(test_native_stacks), TL(test_run_queue), TL(test_memory_unsupported),
    TL(test_merge_two_parts), TL(test_primary_falls_back_to_first), TL(test_bad_parts_are_skipped),
    TL(test_notes),           TL(test_excluded_capped),             TL(test_set_source),
    TL(test_threads),        TL(test_gpu),
};
TL_MAIN(tests)
