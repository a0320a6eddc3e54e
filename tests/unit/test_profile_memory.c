/* Memory in the profile (src/analysis/profile.c, src/render/profile_json.c) on synthetic parts
 * with known numbers: sums and maxima over two processes, timelines rebased to the program's
 * start and summed as step functions, the <native> pseudo-file, the leak rule at its edges,
 * damaged memory keys refused, the reduced profile, and CPU-only output left as it was. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "analysis/profile.h"
#include "common/error.h"
#include "render/profile_json.h"
#include "render/profile_text.h"
#include "testlib.h"

#define MB 1048576LL

/* The program (pid 100, 2 s from Unix time 1000.5): line 12 allocates 40 MiB in 40 peak-setting
 * samples that are never freed; line 14 only allocates, frees and copies (no CPU sample; its
 * live_bytes disagrees with its own frees); a
 * thread without Python frames allocates 2 MiB (<native>). Its footprint: 2 MiB at 0.5 s,
 * 42 MiB at 1 s, 32 MiB at 1.8 s. */
static const char part_a[] =
    "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":100,"
    "\"argv\":[\"python3\",\"app.py\"],\"start_time_absolute\":1000.5,\"elapsed_sec\":2.0,"
    "\"totals\":{\"python_sec\":2.0,\"native_sec\":0.0,\"sys_sec\":0.0,\"samples\":200},"
    "\"files\":[\"/app/app.py\",\"<native>\"],"
    "\"functions\":[[\"main\",0,10],[\"<native>\",1,0]],"
    "\"lines\":[[0,12,0,1.0,0.0,0.0,100],[0,13,0,0.01,0.0,0.0,1]],"
    "\"memory\":{\"window\":1048576,\"copy_window\":8388608,\"leak_detector\":true,"
    "\"alloc_samples\":52,\"copy_samples\":2,\"malloc_bytes\":54525952,\"free_bytes\":10485760,"
    "\"python_bytes\":20971520,\"copy_bytes\":16777216,\"native_malloc_bytes\":2097152,"
    "\"startup_malloc_bytes\":1048576,\"max_footprint_bytes\":44040192,"
    "\"max_footprint_at\":[0,12],\"max_footprint_python_fraction\":0.5,"
    "\"final_footprint_bytes\":33554432,"
    "\"timeline\":[[500000000,2097152],[1000000000,44040192],[1800000000,33554432]]},"
    "\"memory_lines\":["
    "[0,12,0,41943040,10485760,40,0,41943040,41943040,2,0,40,0,[[1000000000,44040192]],"
    "41943040],"
    "[0,14,0,10485760,10485760,10,10485760,5242880,10485760,4,16777216,0,0,"
    "[[1800000000,33554432]],10485760],"
    "[1,0,1,2097152,0,2,0,2097152,2097152,1,0,0,0,[[500000000,2097152]],2097152]]}";

/* A child (pid 101) started 0.5 s after the program and ran 1 s: 20 MiB more on line 12 at its
 * 0.1 s (the program's 0.6 s), 12 MiB of which another line freed (live_bytes 8 MiB); its file list has only app.py. */
static const char part_b[] =
    "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":101,"
    "\"start_time_absolute\":1001.0,\"elapsed_sec\":1.0,"
    "\"totals\":{\"python_sec\":0.0,\"native_sec\":0.0,\"sys_sec\":0.0,\"samples\":0},"
    "\"files\":[\"/app/app.py\"],\"functions\":[[\"main\",0,10]],\"lines\":[],"
    "\"memory\":{\"window\":65536,\"alloc_samples\":20,\"malloc_bytes\":20971520,"
    "\"free_bytes\":0,\"max_footprint_bytes\":20971520,\"max_footprint_at\":[0,12],"
    "\"max_footprint_python_fraction\":0.25,\"timeline\":[[100000000,20971520]]},"
    "\"memory_lines\":[[0,12,0,20971520,0,20,0,20971520,20971520,1,0,0,0,"
    "[[100000000,20971520]],8388608]]}";

static const char source[] = "def main():\n"
                             "\n"
                             "\n"
                             "\n"
                             "\n"
                             "\n"
                             "\n"
                             "\n"
                             "\n"
                             "def main():\n"
                             "    x = []\n"
                             "    x.append(bytearray(1 << 20))\n"
                             "    y = 1\n"
                             "    z = bytes(x[0])\n";

static const struct prof_line *find_line(const struct profile *p, const char *file,
                                         uint32_t line)
{
    for (size_t i = 0; i < p->nlines; i++)
        if (strcmp(p->files[p->lines[i].file].name, file) == 0 && p->lines[i].line == line)
            return &p->lines[i];
    return NULL;
}

/* Child first: the program's part must still set the origin of every timeline. */
static void merge_ab(struct profile *p)
{
    prof_init(p);
    CHECK_EQ(prof_add_part_text(p, part_b, strlen(part_b), "b", 100), 0);
    CHECK_EQ(prof_add_part_text(p, part_a, strlen(part_a), "a", 100), 0);
    prof_finish(p);
}

static void check_points(const struct prof_timeline *tl, const int64_t (*want)[2], size_t n,
                         int line)
{
    if (tl->n != n) {
        tl_fail(__FILE__, line, "%zu points, not %zu", tl->n, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (tl->pts[i].t != want[i][0] || (int64_t)tl->pts[i].bytes != want[i][1])
            tl_fail(__FILE__, line, "point %zu is [%lld, %llu], not [%lld, %lld]", i,
                    (long long)tl->pts[i].t, (unsigned long long)tl->pts[i].bytes,
                    (long long)want[i][0], (long long)want[i][1]);
}

static void test_merge(void)
{
    struct profile p;
    merge_ab(&p);
    const struct prof_memory *m = &p.mem;
    CHECK(m->on);
    CHECK_EQ(m->window, 1048576); /* the program's, not the child's 65536 */
    CHECK_EQ(m->alloc_samples, 72);
    CHECK_EQ(m->copy_samples, 2);
    CHECK_EQ(m->malloc_bytes, 72 * MB);
    CHECK_EQ(m->free_bytes, 10 * MB);
    CHECK_EQ(m->python_bytes, 20 * MB);
    CHECK_EQ(m->copy_bytes, 16 * MB);
    CHECK_EQ(m->native_malloc_bytes, 2 * MB);
    CHECK_EQ(m->startup_malloc_bytes, 1 * MB);
    /* Both processes together: 42 MiB of the program and the child's 20 MiB at 1 s; the child
     * has ended (1.5 s) by the program's last point; the run ends with the program (2 s), which
     * held its 32 MiB until then: the timeline spans the whole run. */
    static const int64_t fp[][2] = {{500000000, 2 * MB},
                                    {600000000, 22 * MB},
                                    {1000000000, 62 * MB},
                                    {1800000000, 32 * MB},
                                    {2000000000, 32 * MB}};
    check_points(&m->footprint, fp, 5, __LINE__);
    CHECK_EQ(m->max_footprint, 62 * MB);
    CHECK_EQ(m->part_max_footprint, 42 * MB);
    CHECK(m->have_at);
    CHECK_STR(p.files[m->at_file].name, "/app/app.py");
    CHECK_EQ(m->at_line, 12);
    CHECK(m->max_footprint_python_fraction == 0.5);

    const struct prof_line *l = find_line(&p, "/app/app.py", 12);
    CHECK(l != NULL);
    if (l) {
        CHECK(l->python_sec == 1.0 && l->samples == 100);
        CHECK_EQ(l->malloc_bytes, 60 * MB);
        CHECK_EQ(l->python_bytes, 10 * MB);
        CHECK_EQ(l->malloc_samples, 60);
        CHECK_EQ(l->peak_bytes, 40 * MB); /* the larger, not the sum */
        CHECK_EQ(l->hw_sum_bytes, 60 * MB);
        CHECK_EQ(l->execs, 3);
        CHECK_EQ(l->leak_mallocs, 40);
        CHECK_EQ(l->live_bytes, 48 * MB); /* 40 - 0 of the program's, 8 of the child's */
        static const int64_t tl[][2] = {{600000000, 20 * MB}, {1000000000, 42 * MB}};
        check_points(&l->timeline, tl, 2, __LINE__);
    }
    /* A line with memory and no CPU sample is a line all the same. */
    l = find_line(&p, "/app/app.py", 14);
    CHECK(l && l->samples == 0 && l->python_sec == 0 && l->copy_bytes == 16 * MB);
    l = find_line(&p, "<native>", 0);
    CHECK(l && l->malloc_bytes == 2 * MB && strcmp(p.funcs[l->func].qualname, "<native>") == 0);
    CHECK(p.note == NULL);
    prof_free(&p);
}

static void test_timeline_reduce(void)
{
    struct prof_timeline tl = {0};
    for (int i = 149; i >= 0; i--) { /* out of order: reduce sorts */
        struct prof_point pt = {(int64_t)i * 1000, (uint64_t)(i % 7)};
        CHECK_EQ(prof_timeline_append(&tl, &pt, 1), 0);
    }
    prof_timeline_reduce(&tl, PROF_MAX_POINTS);
    /* 150 points, runs of 2: 75 points with the later time and the larger value. */
    CHECK_EQ(tl.n, 75);
    CHECK(tl.pts[0].t == 1000 && tl.pts[0].bytes == 1);
    CHECK(tl.pts[3].t == 7000 && tl.pts[3].bytes == 6); /* 6 and 7 % 7 = 0 */
    CHECK(tl.pts[74].t == 149000 && tl.pts[74].bytes == 2);
    prof_timeline_free(&tl);

    /* Two processes with 100 points each on one line: 100 after the merge. */
    char *parts[2];
    for (int k = 0; k < 2; k++) {
        struct strbuf sb = STRBUF_INIT;
        sb_addf(&sb,
                "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":%d,"
                "\"start_time_absolute\":%d,\"totals\":{\"python_sec\":0,\"native_sec\":0,"
                "\"sys_sec\":0,\"samples\":0},\"files\":[\"/a.py\"],\"functions\":[[\"f\",0,1]],"
                "\"lines\":[],\"memory\":{},\"memory_lines\":[[0,1,0,1,0,1,0,1,1,1,0,0,0,[",
                10 + k, 100 + k);
        for (int i = 0; i < 100; i++)
            sb_addf(&sb, "%s[%d,%d]", i ? "," : "", i * 1000, k * 100 + i);
        sb_adds(&sb, "],1]]}");
        parts[k] = sb_detach(&sb);
    }
    struct profile p;
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, parts[0], strlen(parts[0]), "a", 10), 0);
    CHECK_EQ(prof_add_part_text(&p, parts[1], strlen(parts[1]), "b", 10), 0);
    prof_finish(&p);
    CHECK_EQ(p.nlines, 1);
    if (p.nlines == 1) {
        const struct prof_timeline *t = &p.lines[0].timeline;
        CHECK_EQ(t->n, 100);
        /* The second process started 1 s later: its points follow the first's. */
        CHECK(t->n == 100 && t->pts[0].t == 1000 && t->pts[0].bytes == 1);
        CHECK(t->n == 100 && t->pts[99].t == 1000000000 + 99000 && t->pts[99].bytes == 199);
    }
    /* No elapsed time: each process's last footprint holds to the end. */
    CHECK_EQ(p.mem.footprint.n, 0); /* the parts had no timeline */
    prof_free(&p);
    free(parts[0]);
    free(parts[1]);
}

static json_t *write_doc(const struct profile *p, bool reduced, double threshold,
                         struct strbuf *sb)
{
    struct profile_json_opts o = {
        .version = "9.9.9",
        .program = "/app/app.py",
        .cpu_percent_threshold = threshold,
        .reduced = reduced,
        .ncpus = 1,
    };
    profile_json_write(p, &o, sb);
    return tl_json_parse(sb_str(sb));
}

static const json_t *line_entry(const json_t *file, long lineno)
{
    const json_t *lines = json_object_get(file, "lines");
    for (size_t i = 0; i < json_array_size(lines); i++)
        if (json_integer_value(json_object_get(json_array_get(lines, i), "lineno")) == lineno)
            return json_array_get(lines, i);
    return NULL;
}

static void test_json(void)
{
    struct profile p;
    merge_ab(&p);
    CHECK_EQ(prof_set_source(&p, 0, source, strlen(source)), 0);
    struct strbuf sb = STRBUF_INIT;
    json_t *d = write_doc(&p, false, 1, &sb);
    prof_free(&p);
    if (!d) {
        sb_release(&sb);
        return;
    }
    CHECK(json_is_true(json_object_get(d, "memory")));
    CHECK(tl_json_num(d, "alloc_samples") == 72);
    CHECK(tl_json_num(d, "growth_rate") == 100.0 * (62 * MB) / (double)(72 * MB));
    CHECK(tl_json_num(d, "max_footprint_mb") == 62);
    CHECK(tl_json_num(d, "max_footprint_python_fraction") == 0.5);
    CHECK_STR(json_string_value(json_object_get(d, "max_footprint_fname")), "/app/app.py");
    CHECK(tl_json_num(d, "max_footprint_lineno") == 12);
    CHECK(tl_json_num(d, "native_allocations_mb") == 2);
    CHECK(tl_json_num(d, "memory_sampling_window") == 1048576);
    CHECK(tl_json_num(d, "copy_mb") == 16);
    const json_t *s = json_object_get(d, "samples");
    CHECK_EQ(json_array_size(s), 5);
    CHECK(json_integer_value(json_array_get(json_array_get(s, 2), 0)) == 1000000000);
    CHECK(json_number_value(json_array_get(json_array_get(s, 2), 1)) == 62);
    /* The last point is the end of the run (2 s), with what the program held until then. */
    CHECK(json_integer_value(json_array_get(json_array_get(s, 4), 0)) == 2000000000);
    CHECK(json_number_value(json_array_get(json_array_get(s, 4), 1)) == 32);

    const json_t *files = json_object_get(d, "files");
    const json_t *f = json_object_get(files, "/app/app.py");
    const json_t *l12 = line_entry(f, 12);
    CHECK(l12 != NULL);
    CHECK(tl_json_num(l12, "n_malloc_mb") == 60);
    CHECK(tl_json_num(l12, "n_mallocs") == 60);
    CHECK(tl_json_num(l12, "n_python_fraction") == 10.0 / 60.0);
    CHECK(tl_json_num(l12, "n_usage_fraction") == 60.0 / 72.0);
    CHECK(tl_json_num(l12, "n_peak_mb") == 40);
    CHECK(tl_json_num(l12, "n_avg_mb") == 20); /* 60 MiB over 3 executions */
    CHECK(tl_json_num(l12, "n_growth_mb") == 48); /* live bytes, below malloc - free */
    CHECK(tl_json_num(l12, "n_free_mb") == 0);
    CHECK(tl_json_num(l12, "n_copy_mb_s") == 0);
    CHECK(tl_json_num(l12, "n_cpu_percent_python") == 50);
    const json_t *ms = json_object_get(l12, "memory_samples");
    CHECK_EQ(json_array_size(ms), 2);
    CHECK(json_integer_value(json_array_get(json_array_get(ms, 0), 0)) == 600000000);
    CHECK(json_number_value(json_array_get(json_array_get(ms, 0), 1)) == 20);

    const json_t *l14 = line_entry(f, 14);
    CHECK(l14 != NULL);
    CHECK(tl_json_num(l14, "n_cpu_percent_python") == 0 && tl_json_num(l14, "n_samples") == 0);
    CHECK(tl_json_num(l14, "n_malloc_mb") == 10);
    CHECK(tl_json_num(l14, "n_free_mb") == 10);
    /* It freed what it allocated: no growth, whatever live_bytes (10 MiB) says. */
    CHECK(tl_json_num(l14, "n_growth_mb") == 0);
    CHECK(tl_json_num(l14, "n_python_fraction") == 1);
    CHECK(tl_json_num(l14, "n_avg_mb") == 2.5);
    CHECK(tl_json_num(l14, "n_peak_mb") == 5);
    CHECK(tl_json_num(l14, "n_copy_mb_s") == 8); /* 16 MiB over 2 s */
    const json_t *l13 = line_entry(f, 13);
    CHECK(l13 && tl_json_num(l13, "n_malloc_mb") == 0 &&
          json_array_size(json_object_get(l13, "memory_samples")) == 0);

    /* main: lines 12 and 14 summed, the larger peak, every point. */
    const json_t *fn = json_array_get(json_object_get(f, "functions"), 0);
    CHECK_STR(json_string_value(json_object_get(fn, "line")), "main");
    CHECK(tl_json_num(fn, "n_malloc_mb") == 70);
    CHECK(tl_json_num(fn, "n_peak_mb") == 40);
    CHECK(tl_json_num(fn, "n_avg_mb") == 10);
    CHECK(tl_json_num(fn, "n_growth_mb") == 48);
    CHECK(tl_json_num(fn, "n_copy_mb_s") == 8);
    CHECK_EQ(json_array_size(json_object_get(fn, "memory_samples")), 3);

    /* 40 peak-setting allocations, none freed: 1 - 1/42; 48 MiB grown over 2 s. */
    const json_t *leaks = json_object_get(f, "leaks");
    CHECK_EQ(json_object_size(leaks), 1);
    const json_t *lk = json_object_get(leaks, "12");
    CHECK(lk && tl_json_num(lk, "likelihood") == 1.0 - 1.0 / 42.0);
    CHECK(lk && tl_json_num(lk, "velocity_mb_s") == 24);

    /* <native>: no source, only the line with data. */
    const json_t *nat = json_object_get(files, "<native>");
    CHECK(nat != NULL);
    CHECK_EQ(json_array_size(json_object_get(nat, "lines")), 1);
    const json_t *nl = json_array_get(json_object_get(nat, "lines"), 0);
    CHECK(tl_json_num(nl, "lineno") == 0 && tl_json_num(nl, "n_malloc_mb") == 2);
    CHECK_STR(json_string_value(json_object_get(nl, "line")), "");
    CHECK_STR(json_string_value(json_object_get(
                  json_array_get(json_object_get(nat, "functions"), 0), "line")),
              "<native>");
    json_decref(d);
    sb_release(&sb);
}

static void test_reduced_keeps_memory(void)
{
    struct profile p;
    merge_ab(&p);
    CHECK_EQ(prof_set_source(&p, 0, source, strlen(source)), 0);
    struct strbuf sb = STRBUF_INIT;
    json_t *d = write_doc(&p, true, 1, &sb);
    prof_free(&p);
    if (!d) {
        sb_release(&sb);
        return;
    }
    const json_t *files = json_object_get(d, "files");
    const json_t *f = json_object_get(files, "/app/app.py");
    const json_t *lines = json_object_get(f, "lines");
    /* 12 (50% of the time), 14 (memory, no time); not 13 (0.5%) nor the empty lines. */
    CHECK_EQ(json_array_size(lines), 2);
    CHECK(line_entry(f, 12) && line_entry(f, 14) && !line_entry(f, 13));
    CHECK(json_object_get(files, "<native>") != NULL); /* no time at all, but memory */
    json_decref(d);
    sb_release(&sb);
}

/* --malloc-threshold: a row under the time threshold stays for its memory only with at least
 * that many MB allocated or copied. Line 14 allocates 10 MiB and copies 16 MiB, <native> 2 MiB. */
static void test_reduced_malloc_threshold(void)
{
    static const struct {
        double mb;
        bool line14, native;
    } cases[] = {{0, true, true}, {2, true, true}, {12, true, false}, {16, true, false},
                 {16.5, false, false}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct profile p;
        merge_ab(&p);
        struct profile_json_opts o = {.version = "9.9.9", .program = "/app/app.py",
                                      .cpu_percent_threshold = 1, .reduced = true, .ncpus = 1,
                                      .malloc_threshold_mb = cases[i].mb};
        struct strbuf sb = STRBUF_INIT;
        profile_json_write(&p, &o, &sb);
        prof_free(&p);
        json_t *d = tl_json_parse(sb_str(&sb));
        if (d) {
            const json_t *files = json_object_get(d, "files");
            const json_t *f = json_object_get(files, "/app/app.py");
            CHECK(line_entry(f, 12) != NULL); /* its time keeps it */
            CHECK_EQ(line_entry(f, 14) != NULL, cases[i].line14);
            CHECK_EQ(json_object_get(files, "<native>") != NULL, cases[i].native);
            json_decref(d);
        }
        sb_release(&sb);
    }
}

/* One process of 4 s allocating `malloc` bytes, freeing `freed`, with one line of `m`
 * peak-setting allocations of which `f` were freed, and the line's timeline `tl`. */
static void leak_doc_tl(long long malloc, long long freed, int m, int f, const char *tl,
                        struct strbuf *sb)
{
    char part[1024];
    snprintf(part, sizeof(part),
             "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":7,\"elapsed_sec\":4,"
             "\"totals\":{\"python_sec\":1,\"native_sec\":0,\"sys_sec\":0,\"samples\":1},"
             "\"files\":[\"/a.py\"],\"functions\":[[\"f\",0,1]],\"lines\":[],"
             "\"memory\":{\"malloc_bytes\":%lld,\"free_bytes\":%lld},"
             "\"memory_lines\":[[0,3,0,%lld,0,1,0,1,1,1,0,%d,%d,%s,%lld]]}",
             malloc, freed, malloc, m, f, tl, malloc);
    struct profile p;
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, part, strlen(part), "x", 7), 0);
    prof_finish(&p);
    struct profile_json_opts o = {.version = "1"};
    profile_json_write(&p, &o, sb);
    prof_free(&p);
}

static void leak_doc(long long malloc, long long freed, int m, int f, struct strbuf *sb)
{
    leak_doc_tl(malloc, freed, m, f, "[]", sb);
}

static const json_t *leaks_of(json_t *d)
{
    return json_object_get(json_object_get(json_object_get(d, "files"), "/a.py"), "leaks");
}

static void test_leak_rule(void)
{
    struct strbuf sb = STRBUF_INIT;
    json_error_t err;
    /* 18 of 18 unfreed is exactly 0.95: reported; velocity = growth (8 MiB) / 4 s. */
    leak_doc(8 * MB, 0, 18, 0, &sb);
    json_t *d = json_loads(sb_str(&sb), 0, &err);
    const json_t *lk = json_object_get(leaks_of(d), "3");
    CHECK(lk && tl_json_num(lk, "likelihood") == 1.0 - 1.0 / 20.0 && tl_json_num(lk, "velocity_mb_s") == 2);
    json_decref(d);
    /* 17: 0.947, not reported. */
    sb_reset(&sb);
    leak_doc(8 * MB, 0, 17, 0, &sb);
    d = json_loads(sb_str(&sb), 0, &err);
    CHECK(d && json_object_size(leaks_of(d)) == 0);
    json_decref(d);
    /* A freed peak counts against: 40 with 1 freed is 1 - 2/41 = 0.951, reported; 2 freed
     * (1 - 3/40 = 0.925) not. */
    sb_reset(&sb);
    leak_doc(8 * MB, 0, 40, 1, &sb);
    d = json_loads(sb_str(&sb), 0, &err);
    lk = json_object_get(leaks_of(d), "3");
    CHECK(lk && tl_json_num(lk, "likelihood") == 1.0 - 2.0 / 41.0);
    json_decref(d);
    sb_reset(&sb);
    leak_doc(8 * MB, 0, 40, 2, &sb);
    d = json_loads(sb_str(&sb), 0, &err);
    CHECK(d && json_object_size(leaks_of(d)) == 0);
    json_decref(d);
    /* The program grew by 0.5% of what it allocated: below 1%, no leak anywhere. */
    sb_reset(&sb);
    leak_doc(200 * MB, 199 * MB, 40, 0, &sb);
    d = json_loads(sb_str(&sb), 0, &err);
    CHECK(d && tl_json_num(d, "growth_rate") == 0.5);
    CHECK(d && json_object_size(leaks_of(d)) == 0);
    json_decref(d);
    sb_release(&sb);
}

/* Growth over the whole run: a line whose last memory sample came in the first half of the run
 * (a table built early and kept) is not reported, however many unfreed peaks it set; one that
 * allocated in the second half (from 2 s of the 4 s) is. */
static void test_leak_rule_late_growth(void)
{
    static const struct {
        const char *tl;
        bool reported;
    } cases[] = {
        {"[[100000000,1048576],[400000000,8388608]]", false}, /* stopped at 10% */
        {"[[1999999999,8388608]]", false},                    /* just before half */
        {"[[2000000000,8388608]]", true},                     /* half */
        {"[[100000000,1048576],[3900000000,8388608]]", true}, /* until the end */
    };
    struct strbuf sb = STRBUF_INIT;
    json_error_t err;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sb_reset(&sb);
        leak_doc_tl(8 * MB, 0, 18, 0, cases[i].tl, &sb);
        json_t *d = json_loads(sb_str(&sb), 0, &err);
        CHECK(d != NULL);
        if (!d)
            continue;
        if ((json_object_get(leaks_of(d), "3") != NULL) != cases[i].reported)
            tl_fail(__FILE__, __LINE__, "timeline %s: reported %d, want %d", cases[i].tl,
                    json_object_get(leaks_of(d), "3") != NULL, cases[i].reported);
        json_decref(d);
    }
    sb_release(&sb);
}

/* Issue 27 item 1: a part that judges its lines' own growth (growth_rises, the 16th item) is
 * taken at its word: 18 rises are exactly 0.95 and reported, 17 are not, and 0 is no leak
 * whatever the peaks said (30 unfreed new peaks, which alone would be reported). */
static void test_leak_rule_own_growth(void)
{
    static const struct {
        int leak_mallocs, rises;
        bool reported;
    } cases[] = {{0, 18, true}, {0, 17, false}, {30, 0, false}, {30, 40, true}};
    struct strbuf sb = STRBUF_INIT;
    json_error_t err;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char part[1024];
        /* the timeline's last point is early: the old rule's lateness is not what decides */
        snprintf(part, sizeof(part),
                 "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":7,\"elapsed_sec\":4,"
                 "\"totals\":{\"python_sec\":1,\"native_sec\":0,\"sys_sec\":0,\"samples\":1},"
                 "\"files\":[\"/a.py\"],\"functions\":[[\"f\",0,1]],\"lines\":[],"
                 "\"memory\":{\"malloc_bytes\":%lld,\"free_bytes\":0},\"memory_lines\":"
                 "[[0,3,0,%lld,0,1,0,1,1,1,0,%d,0,[[100000000,1048576]],%lld,%d]]}",
                 8 * MB, 8 * MB, cases[i].leak_mallocs, 8 * MB, cases[i].rises);
        struct profile p;
        prof_init(&p);
        CHECK_EQ(prof_add_part_text(&p, part, strlen(part), "x", 7), 0);
        prof_finish(&p);
        struct profile_json_opts o = {.version = "1"};
        sb_reset(&sb);
        profile_json_write(&p, &o, &sb);
        prof_free(&p);
        json_t *d = json_loads(sb_str(&sb), 0, &err);
        CHECK(d != NULL);
        const json_t *lk = d ? json_object_get(leaks_of(d), "3") : NULL;
        if ((lk != NULL) != cases[i].reported)
            tl_fail(__FILE__, __LINE__, "case %zu: reported %d", i, lk != NULL);
        if (lk)
            CHECK(tl_json_num(lk, "likelihood") == 1.0 - 1.0 / (cases[i].rises + 2.0));
        json_decref(d);
    }
    sb_release(&sb);
}

#define MEM_HEAD                                                                                   \
    "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":5,"                                    \
    "\"totals\":{\"python_sec\":0,\"native_sec\":0,\"sys_sec\":0,\"samples\":0},"                  \
    "\"files\":[\"/a.py\"],\"functions\":[[\"f\",0,1]],\"lines\":[],"

static void test_bad_memory_keys(void)
{
    static const char *const bad_parts[] = {
        MEM_HEAD "\"memory\":[]}",
        MEM_HEAD "\"memory\":{\"malloc_bytes\":-1}}",
        MEM_HEAD "\"memory\":{\"free_bytes\":1.5}}",
        MEM_HEAD "\"memory\":{\"leak_detector\":1}}",
        MEM_HEAD "\"memory\":{\"max_footprint_python_fraction\":1.5}}",
        MEM_HEAD "\"memory\":{\"max_footprint_at\":[1,3]}}",
        MEM_HEAD "\"memory\":{\"timeline\":[[1]]}}",
        MEM_HEAD "\"memory\":{\"timeline\":[[-1,5]]}}",
        MEM_HEAD "\"memory_lines\":[]}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":{}}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":[[0,3,0,1,0,1,0,1,1,1,0,0,0]]}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":[[0,3,0,1,0,1,0,1,1,1,0,0,0,[]]]}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":[[0,3,1,1,0,1,0,1,1,1,0,0,0,[],1]]}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":[[0,3,0,1,0,1,0,1,1,1,0,2,3,[],1]]}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":[[0,3,0,1,0,\"1\",0,1,1,1,0,0,0,[],1]]}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":[[0,3,0,1,0,1,0,1,1,1,0,0,0,[[5,-5]],1]]}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":[[0,3,0,1,0,1,0,1,1,1,0,0,0,[],-1]]}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":[[0,3,0,1,0,1,0,1,1,1,0,0,0,[],1,1,1,1]]}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":[[0,3,0,1,0,1,0,1,1,1,0,0,0,[],1,0,-1]]}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":[[0,3,0,1,0,1,0,1,1,1,0,0,0,[],1,0,\"9\"]]}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":[[0,3,0,1,0,1,0,1,1,1,0,0,0,[],1,-1]]}",
        MEM_HEAD "\"memory\":{},\"memory_lines\":[[0,3,0,1,0,1,0,1,1,1,0,0,0,[],1,0.5]]}",
    };
    struct profile p;
    prof_init(&p);
    for (size_t i = 0; i < sizeof(bad_parts) / sizeof(bad_parts[0]); i++)
        if (prof_add_part_text(&p, bad_parts[i], strlen(bad_parts[i]), "x", 0) !=
            -SCRY_E_BAD_PROFILE)
            tl_fail(__FILE__, __LINE__, "bad part %zu accepted", i);
    CHECK_EQ(p.nparts, 0);
    CHECK(!p.mem.on);
    CHECK_EQ(p.nlines, 0);
    /* The same shape, well formed, is taken: the refusals above are about their faults. */
    static const char good[] =
        MEM_HEAD "\"memory\":{\"max_footprint_at\":null,\"timeline\":[]},"
                 "\"memory_lines\":[[0,3,0,1,0,1,0,1,1,1,0,2,2,[[5,5]],1]]}";
    CHECK_EQ(prof_add_part_text(&p, good, strlen(good), "x", 0), 0);
    CHECK(p.mem.on && !p.mem.have_at);
    prof_free(&p);
}

/* Without memory the placeholders stay exactly what they were. */
static void test_cpu_only_unchanged(void)
{
    static const char part[] =
        "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":5,"
        "\"totals\":{\"python_sec\":1,\"native_sec\":0,\"sys_sec\":0,\"samples\":1},"
        "\"files\":[\"/a.py\"],\"functions\":[[\"f\",0,1]],\"lines\":[[0,1,0,1,0,0,1]]}";
    struct profile p;
    prof_init(&p);
    CHECK_EQ(prof_add_part_text(&p, part, strlen(part), "x", 5), 0);
    prof_finish(&p);
    CHECK(!p.mem.on);
    struct strbuf sb = STRBUF_INIT;
    struct profile_json_opts o = {.version = "1"};
    profile_json_write(&p, &o, &sb);
    prof_free(&p);
    const char *s = sb_str(&sb);
    static const char *const want[] = {
        "\"alloc_samples\": 0,\n  \"growth_rate\": 0,\n  \"max_footprint_mb\": 0,\n"
        "  \"max_footprint_python_fraction\": 0,\n  \"max_footprint_fname\": null,\n"
        "  \"max_footprint_lineno\": null,\n  \"native_allocations_mb\": 0,\n",
        "\"memory\": false,",
        "\"samples\": [],",
        "\"n_malloc_mb\": 0,\n          \"n_mallocs\": 0,\n          \"n_avg_mb\": 0,\n"
        "          \"n_peak_mb\": 0,\n          \"n_growth_mb\": 0,\n"
        "          \"n_python_fraction\": 0,\n          \"n_usage_fraction\": 0,\n"
        "          \"n_copy_mb_s\": 0,\n          \"memory_samples\": [],",
        "\"leaks\": {},",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(s, want[i]))
            tl_fail(__FILE__, __LINE__, "CPU-only output lacks %s", want[i]);
    CHECK(strstr(s, "n_free_mb") == NULL);
    CHECK(strstr(s, "memory_sampling_window") == NULL);
    CHECK(strstr(s, "copy_mb\"") == NULL);
    sb_release(&sb);
}

/* The terminal view of the same profile: the footprint line, the memory columns, memory-only
 * lines and files shown at the CPU threshold, the leak line. */
static void test_text(void)
{
    struct profile p;
    merge_ab(&p);
    CHECK_EQ(prof_set_source(&p, 0, source, strlen(source)), 0);
    struct strbuf sb = STRBUF_INIT, out = STRBUF_INIT;
    struct profile_json_opts jo = {.version = "1", .program = "/app/app.py"};
    profile_json_write(&p, &jo, &sb);
    prof_free(&p);
    struct profile_text_opts o = {.threshold = 1};
    CHECK_EQ(profile_text_render_bytes(sb_str(&sb), sb.len, "x", &o, &out), 0);
    const char *t = sb_str(&out);
    static const char *const want[] = {
        /* samples 2 (0.5 s), 22 (0.6 s), 62 (1 s), 32 MB (1.8 s, held until the end at 2 s)
         * scaled to the 62 MB maximum, in 27 bars of 2 s / 27 each: the whole run */
        "Memory usage: ▁▁▁▁▁▁▁▁▃▃▃▃▃████████████▅▅ (max: 62.00 MB, growth rate: 86%, 2.00 MB "
        "from native threads)\n",
        "  Line │ Python │ native │ system │ Python │ net MB │   peak │ timeline/%     │   MB/s │ "
        "source\n",
        /* 17% Python, 48 MB grown, 40 MB peak, 20 and 42 of 62 MB, 83% of all bytes */
        "    12 │    50% │        │        │    17% │    48M │    40M │ ▃▆         83% │        │"
        "     x.append(bytearray(1 << 20))\n",
        /* no time, but memory: shown */
        "    14 │        │        │        │   100% │        │     5M │ ▅          14% │      8 │"
        "     z = bytes(x[0])\n",
        "Possible memory leak at line 12 (likelihood 98%, velocity 24.00 MB/s)\n",
        "    10 │    50% │        │        │    29% │    48M │    40M │ ▃▆▅        97% │      8 │"
        " main\n",
        "<native>: 0.0% of the time",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(t, want[i]))
            tl_fail(__FILE__, __LINE__, "the view lacks \"%s\":\n%s", want[i], t);
    CHECK(strstr(t, "    13 │") == NULL); /* 0.5% of the time, no memory */
    /* Colour: line 12 is hot by time, line 14 is not hot (14% of the bytes). */
    sb_reset(&out);
    o.color = true;
    CHECK_EQ(profile_text_render_bytes(sb_str(&sb), sb.len, "x", &o, &out), 0);
    CHECK(strstr(sb_str(&out), "\033[1;31m    12 │") != NULL);
    CHECK(strstr(sb_str(&out), "\033[1;31m    14 │") == NULL);
    sb_release(&out);
    sb_release(&sb);
}

/* Issue 27 item 8: the most a line held at once (max_live, the 17th item) over two processes is
 * the larger of theirs (100 MiB, a lower bound), shown beside one execution's 1 MiB peak in the
 * JSON and the text view; a part of an older agent (16 items) has no such figure anywhere. */
static void test_max_held(void)
{
    struct strbuf sb = STRBUF_INIT, out = STRBUF_INIT;
    for (int old = 0; old < 2; old++) {
        struct profile p;
        prof_init(&p);
        for (int pid = 7; pid < 9; pid++) {
            char part[1024];
            snprintf(part, sizeof(part),
                     "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":%d,"
                     "\"elapsed_sec\":4,\"totals\":{\"python_sec\":1,\"native_sec\":0,"
                     "\"sys_sec\":0,\"samples\":1},\"files\":[\"/a.py\"],"
                     "\"functions\":[[\"f\",0,1]],\"lines\":[[0,3,0,1,0,0,1]],"
                     "\"memory\":{\"malloc_bytes\":%lld,\"free_bytes\":%lld},\"memory_lines\":"
                     "[[0,3,0,%lld,0,150,0,%lld,%lld,150,0,0,0,[[100000000,1048576]],%lld,0%s]]}",
                     pid, 150 * MB, 100 * MB, 150 * MB, MB, 150 * MB, 50 * MB,
                     old ? "" : pid == 7 ? ",104857600" : ",62914560");
            CHECK_EQ(prof_add_part_text(&p, part, strlen(part), "x", pid), 0);
        }
        prof_finish(&p);
        struct profile_json_opts o = {.version = "1"};
        sb_reset(&sb);
        profile_json_write(&p, &o, &sb);
        prof_free(&p);
        json_t *d = tl_json_parse(sb_str(&sb));
        const json_t *f = json_object_get(json_object_get(d, "files"), "/a.py");
        const json_t *l = line_entry(f, 3);
        const json_t *fn = json_array_get(json_object_get(f, "functions"), 0);
        CHECK(l != NULL && fn != NULL);
        CHECK(tl_json_num(l, "n_peak_mb") == 1.0);
        if (old) {
            CHECK(json_object_get(l, "n_max_held_mb") == NULL);
            CHECK(json_object_get(fn, "n_max_held_mb") == NULL);
        } else {
            CHECK(tl_json_num(l, "n_max_held_mb") == 100.0);
            CHECK(tl_json_num(fn, "n_max_held_mb") == 100.0);
        }
        json_decref(d);
        struct profile_text_opts to = {.threshold = 1};
        sb_reset(&out);
        CHECK_EQ(profile_text_render_bytes(sb_str(&sb), sb.len, "x", &to, &out), 0);
        const char *t = sb_str(&out);
        if (old) {
            CHECK(strstr(t, "   held │") == NULL);
            CHECK(strstr(t, "│     1M │ ") != NULL);
        } else {
            CHECK(strstr(t, " Python │ net MB │   peak │   held │ timeline/%") != NULL);
            CHECK(strstr(t, "│     1M │   100M │ ") != NULL);
        }
    }
    sb_release(&out);
    sb_release(&sb);
}

static const struct tl_test tests[] = {
    TL(test_max_held),
    TL(test_text),
    TL(test_merge),     TL(test_timeline_reduce),    TL(test_json),
    TL(test_leak_rule), TL(test_leak_rule_late_growth), TL(test_leak_rule_own_growth),
    TL(test_reduced_keeps_memory), TL(test_reduced_malloc_threshold), TL(test_bad_memory_keys),
    TL(test_cpu_only_unchanged),
};
TL_MAIN(tests)
