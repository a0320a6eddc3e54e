/* The exports and `scry compare` on synthetic profiles: the protobuf encoder against the spec's
 * worked bytes, the pprof message decoded back field by field, the document model's function
 * attribution and stacks, and the comparison's error model (numbers computed by hand). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "analysis/compare.h"
#include "analysis/profile_doc.h"
#include "common/error.h"
#include "render/firefox_profile.h"
#include "render/pprof.h"
#include "render/protobuf.h"
#include "render/trace_event.h"
#include "testlib.h"

static bool bytes_eq(const struct strbuf *sb, const unsigned char *want, size_t n)
{
    return sb->len == n && memcmp(sb->buf, want, n) == 0;
}

static void test_varints(void)
{
    struct strbuf sb = STRBUF_INIT;
    pb_varint(&sb, 30000000);
    static const unsigned char a[] = {0x80, 0x87, 0xa7, 0x0e};
    CHECK(bytes_eq(&sb, a, sizeof(a)));
    sb_reset(&sb);
    pb_int(&sb, 2, -5); /* key 0x10, then ten bytes */
    static const unsigned char b[] = {0x10, 0xfb, 0xff, 0xff, 0xff, 0xff,
                                      0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK(bytes_eq(&sb, b, sizeof(b)));
    sb_reset(&sb);
    pb_uint(&sb, 3, 0); /* proto3: zero omitted */
    CHECK_EQ(sb.len, 0);
    pb_bytes(&sb, 6, "", 0); /* but an empty string is written */
    static const unsigned char c[] = {0x32, 0x00};
    CHECK(bytes_eq(&sb, c, sizeof(c)));
    sb_reset(&sb);
    /* The worked sample of docs: location_id packed [2, 1], value packed [3, 30000000]. */
    int64_t locs[] = {2, 1}, vals[] = {3, 30000000};
    struct strbuf s = STRBUF_INIT;
    pb_packed(&s, 1, locs, 2);
    pb_packed(&s, 2, vals, 2);
    pb_bytes(&sb, 2, s.buf, s.len);
    static const unsigned char d[] = {0x12, 0x0b, 0x0a, 0x02, 0x02, 0x01, 0x12, 0x05,
                                      0x03, 0x80, 0x87, 0xa7, 0x0e};
    CHECK(bytes_eq(&sb, d, sizeof(d)));
    sb_release(&s);
    sb_release(&sb);
}

/* A minimal protobuf reader for the test: the fields of one message. */
struct field {
    uint32_t num;
    int wire;
    uint64_t v;
    const unsigned char *p;
    size_t len;
};

static size_t read_varint(const unsigned char *p, size_t n, uint64_t *v)
{
    *v = 0;
    for (size_t i = 0; i < n && i < 10; i++) {
        *v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80))
            return i + 1;
    }
    return 0;
}

static size_t fields(const unsigned char *p, size_t n, struct field *out, size_t max)
{
    size_t k = 0, i = 0;
    while (i < n && k < max) {
        uint64_t key, v;
        size_t a = read_varint(p + i, n - i, &key);
        if (!a)
            return SIZE_MAX;
        i += a;
        struct field f = {(uint32_t)(key >> 3), (int)(key & 7), 0, NULL, 0};
        a = read_varint(p + i, n - i, &v);
        if (!a)
            return SIZE_MAX;
        i += a;
        if (f.wire == 0) {
            f.v = v;
        } else if (f.wire == 2 && v <= n - i) {
            f.p = p + i;
            f.len = (size_t)v;
            i += (size_t)v;
        } else {
            return SIZE_MAX;
        }
        out[k++] = f;
    }
    return i == n ? k : SIZE_MAX;
}

static const char doc_text[] =
    "{\"program\":\"/app/a.py\",\"elapsed_time_sec\":2.0,\"sampled_time_sec\":2.0,"
    "\"cpu_sampling_rate\":0.01,\"start_time_absolute\":1700000000.5,\"n_samples\":200,"
    "\"memory\":true,\"memory_sampling_window\":1048576,"
    "\"samples\":[[0,1.0],[1000000,3.5]],"
    "\"stacks\":[[[\"/app/a.py <module>:9;\",\"/app/a.py work:3;\"],"
    "{\"count\":150,\"python_time\":0.5,\"c_time\":0.25,\"sys_time\":0.0}],"
    "[[\"/app/a.py <module>:10;\",\"/app/a.py Cls.run:6;\"],"
    "{\"count\":50,\"python_time\":0.25,\"c_time\":0,\"sys_time\":0}]],"
    "\"files\":{\"/app/a.py\":{\"lines\":["
    "{\"lineno\":3,\"n_cpu_percent_python\":50,\"n_cpu_percent_c\":25,\"n_sys_percent\":0,"
    "\"n_samples\":150,\"n_malloc_mb\":2,\"n_growth_mb\":1,"
    "\"memory_samples\":[[500000,2.0],[900000,3.0]]},"
    "{\"lineno\":6,\"n_cpu_percent_python\":25,\"n_cpu_percent_c\":0,\"n_sys_percent\":0,"
    "\"n_samples\":50,\"n_malloc_mb\":0,\"n_growth_mb\":0},"
    "{\"lineno\":8,\"n_cpu_percent_python\":0,\"n_samples\":0,\"start_function_line\":2},"
    "{\"lineno\":9,\"n_cpu_percent_python\":0,\"n_samples\":0}],"
    "\"functions\":[{\"line\":\"work\",\"lineno\":2,\"n_cpu_percent_python\":50,"
    "\"n_cpu_percent_c\":25,\"n_samples\":150,\"n_malloc_mb\":2,\"n_growth_mb\":1},"
    "{\"line\":\"Cls.run\",\"lineno\":5,\"n_cpu_percent_python\":25,\"n_samples\":50}]}}}";

static void test_doc_model(void)
{
    struct pdoc d;
    CHECK_EQ(pdoc_load_bytes(&d, doc_text, strlen(doc_text), "t.json"), 0);
    CHECK_EQ(d.nlines, 4);
    CHECK_EQ(d.nfuncs, 2);
    CHECK_EQ(d.nstacks, 2);
    /* Lines take the function their start_function_line names (line 8: work, below the def
     * of Cls.run that a nested class or def would put there), else the one that starts last at
     * or before them. */
    for (size_t i = 0; i < d.nlines; i++) {
        const struct pdoc_entry *l = &d.lines[i];
        if (l->line == 3)
            CHECK_STR(l->func, "work");
        if (l->line == 6)
            CHECK_STR(l->func, "Cls.run");
        if (l->line == 8)
            CHECK_STR(l->func, "work");
        if (l->line == 9)
            CHECK_STR(l->func, "Cls.run");
        if (l->line == 3) {
            CHECK(fabs(l->python_sec - 1.0) < 1e-12 && fabs(l->native_sec - 0.5) < 1e-12);
            CHECK(fabs(l->malloc_bytes - 2 * 1048576.0) < 1e-6);
        }
    }
    const struct pdoc_frame *f = &d.frames[d.stacks[1].off + 1];
    CHECK_EQ(f->func_len, strlen("Cls.run"));
    CHECK(memcmp(f->func, "Cls.run", f->func_len) == 0);
    CHECK_EQ(f->line, 6);
    CHECK_EQ(pdoc_first_line(&d, f->file, f->file_len, f->func, f->func_len), 5);
    CHECK(fabs(d.stacks[0].native_sec - 0.5) < 1e-12);
    pdoc_free(&d);
    /* Bad documents are refused with a message, not read. */
    CHECK_EQ(pdoc_load_bytes(&d, "[]", 2, "x"), -SCRY_E_BAD_PROFILE);
    CHECK_EQ(pdoc_load_bytes(&d, "{\"files\":{\"a\":{\"lines\":[{\"lineno\":\"x\"}]}}}", 42, "x"),
             -SCRY_E_BAD_PROFILE);
}

static void test_pprof_decoded(void)
{
    struct pdoc d;
    CHECK_EQ(pdoc_load_bytes(&d, doc_text, strlen(doc_text), "t.json"), 0);
    struct strbuf raw = STRBUF_INIT, gz = STRBUF_INIT;
    struct pprof_opts o = {.exporter = "scry test", .raw = true};
    CHECK_EQ(pprof_write(&d, &o, &raw), 0);
    o.raw = false;
    CHECK_EQ(pprof_write(&d, &o, &gz), 0);
    /* The gzipped form inflates to the raw one. */
    unsigned char *back = malloc(raw.len + 16);
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    CHECK_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
    zs.next_in = (Bytef *)gz.buf;
    zs.avail_in = (uInt)gz.len;
    zs.next_out = back;
    zs.avail_out = (uInt)raw.len + 16;
    CHECK_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END);
    CHECK_EQ(zs.total_out, raw.len);
    CHECK(memcmp(back, raw.buf, raw.len) == 0);
    inflateEnd(&zs);
    free(back);

    static struct field fs[4096];
    size_t n = fields((const unsigned char *)raw.buf, raw.len, fs, 4096);
    CHECK(n != SIZE_MAX);
    if (n == SIZE_MAX)
        goto out;
    const char *strs[64];
    size_t lens[64], nstr = 0, ntypes = 0, nsamples = 0, nlocs = 0, nfuncs = 0, ntime = 0;
    int64_t sums[7] = {0};
    for (size_t i = 0; i < n; i++) {
        if (fs[i].num == 6 && nstr < 64) {
            strs[nstr] = (const char *)fs[i].p;
            lens[nstr++] = fs[i].len;
        }
        ntypes += fs[i].num == 1;
        nlocs += fs[i].num == 4;
        nfuncs += fs[i].num == 5;
        ntime += fs[i].num == 9;
        if (fs[i].num == 2) {
            nsamples++;
            struct field sf[8];
            size_t m = fields(fs[i].p, fs[i].len, sf, 8);
            CHECK(m == 2);
            if (m != 2)
                continue;
            uint64_t v;
            size_t k = 0;
            for (size_t at = 0; at < sf[1].len; k++) {
                size_t a = read_varint(sf[1].p + at, sf[1].len - at, &v);
                CHECK(a > 0);
                if (!a || k >= 7)
                    break;
                sums[k] += (int64_t)v;
                at += a;
            }
            CHECK_EQ(k, 7);
        }
    }
    CHECK(nstr > 0 && lens[0] == 0); /* string_table[0] == "" */
    CHECK_EQ(ntypes, 7);             /* samples python native system wall alloc inuse */
    CHECK_EQ(ntime, 1);
    CHECK_EQ(nsamples, 3);           /* two stacks + one line that allocated */
    CHECK_EQ(nlocs, 4);              /* <module>:9, work:3, <module>:10, Cls.run:6 */
    CHECK_EQ(nfuncs, 3);             /* <module>, work, Cls.run */
    CHECK_EQ(sums[0], 200);
    CHECK_EQ(sums[1], 1500000000);   /* python: (0.5 + 0.25) × 2 s */
    CHECK_EQ(sums[2], 500000000);
    CHECK_EQ(sums[3], 0);
    CHECK_EQ(sums[4], 2000000000);
    CHECK_EQ(sums[5], 2 * 1048576);
    CHECK_EQ(sums[6], 1048576);
    bool found = false;
    for (size_t i = 0; i < nstr; i++)
        found |= lens[i] == 7 && memcmp(strs[i], "Cls.run", 7) == 0;
    CHECK(found);
out:
    sb_release(&raw);
    sb_release(&gz);
    pdoc_free(&d);
}

/* A push's two parts (pprof.h): the time types alone, and the memory types alone with Go's
 * heap profile's period type (space/bytes), so that Pyroscope names them `wall` and `memory`. */
struct pprof_summary {
    size_t ntypes, nsamples, nvalues; /* nvalues: of every sample (SIZE_MAX when they differ) */
    int64_t sums[8];
    char period_type[16], default_type[16];
};

static void pprof_summarize(const struct strbuf *raw, struct pprof_summary *ps)
{
    static struct field fs[4096];
    const char *strs[64];
    size_t lens[64], nstr = 0;
    uint64_t period = 0, deflt = 0;
    memset(ps, 0, sizeof(*ps));
    size_t n = fields((const unsigned char *)raw->buf, raw->len, fs, 4096);
    CHECK(n != SIZE_MAX);
    for (size_t i = 0; n != SIZE_MAX && i < n; i++) {
        if (fs[i].num == 6 && nstr < 64) {
            strs[nstr] = (const char *)fs[i].p;
            lens[nstr++] = fs[i].len;
        }
        ps->ntypes += fs[i].num == 1;
        if (fs[i].num == 14)
            deflt = fs[i].v;
        if (fs[i].num == 11) {
            struct field vt[2];
            CHECK(fields(fs[i].p, fs[i].len, vt, 2) == 2);
            period = vt[0].v;
        }
        if (fs[i].num != 2)
            continue;
        ps->nsamples++;
        struct field sf[2];
        CHECK(fields(fs[i].p, fs[i].len, sf, 2) == 2);
        size_t k = 0;
        uint64_t v;
        for (size_t at = 0, a; at < sf[1].len && k < 8; at += a, k++) {
            a = read_varint(sf[1].p + at, sf[1].len - at, &v);
            CHECK(a > 0);
            if (!a)
                break;
            ps->sums[k] += (int64_t)v;
        }
        ps->nvalues = ps->nsamples == 1 || ps->nvalues == k ? k : SIZE_MAX;
    }
    if (period < nstr && lens[period] < sizeof(ps->period_type))
        memcpy(ps->period_type, strs[period], lens[period]);
    if (deflt < nstr && lens[deflt] < sizeof(ps->default_type))
        memcpy(ps->default_type, strs[deflt], lens[deflt]);
}

static void test_pprof_parts(void)
{
    struct pdoc d;
    CHECK_EQ(pdoc_load_bytes(&d, doc_text, strlen(doc_text), "t.json"), 0);
    struct strbuf raw = STRBUF_INIT;
    struct pprof_summary ps;
    struct pprof_opts o = {.exporter = "scry test", .raw = true, .part = PPROF_TIME};
    CHECK_EQ(pprof_write(&d, &o, &raw), 0);
    pprof_summarize(&raw, &ps);
    CHECK_EQ(ps.ntypes, 5); /* samples python native system wall */
    CHECK_EQ(ps.nsamples, 2);
    CHECK_EQ(ps.nvalues, 5);
    CHECK_EQ(ps.sums[0], 200);
    CHECK_EQ(ps.sums[4], 2000000000);
    CHECK_STR(ps.period_type, "wall");
    CHECK_STR(ps.default_type, "wall");

    sb_reset(&raw);
    o.part = PPROF_MEMORY;
    CHECK_EQ(pprof_write(&d, &o, &raw), 0);
    pprof_summarize(&raw, &ps);
    CHECK_EQ(ps.ntypes, 2); /* alloc_space inuse_space */
    CHECK_EQ(ps.nsamples, 1);
    CHECK_EQ(ps.nvalues, 2);
    CHECK_EQ(ps.sums[0], 2 * 1048576);
    CHECK_EQ(ps.sums[1], 1048576);
    CHECK_STR(ps.period_type, "space");
    CHECK_STR(ps.default_type, "alloc_space");

    /* The export (PPROF_ALL) is unchanged: all seven types in one profile. */
    sb_reset(&raw);
    o.part = PPROF_ALL;
    CHECK_EQ(pprof_write(&d, &o, &raw), 0);
    pprof_summarize(&raw, &ps);
    CHECK_EQ(ps.ntypes, 7);
    CHECK_EQ(ps.nsamples, 3);
    CHECK_STR(ps.period_type, "wall");
    pdoc_free(&d);

    /* The memory part of a profile not marked as memory: its two types (not none), with what
     * its lines hold. */
    char *text = strdup(doc_text);
    char *m = strstr(text, "\"memory\":true");
    CHECK(m != NULL);
    memcpy(m, "\"memory\":0   ", 13);
    CHECK_EQ(pdoc_load_bytes(&d, text, strlen(text), "t.json"), 0);
    CHECK(!d.memory);
    sb_reset(&raw);
    o.part = PPROF_MEMORY;
    CHECK_EQ(pprof_write(&d, &o, &raw), 0);
    pprof_summarize(&raw, &ps);
    CHECK_EQ(ps.ntypes, 2);
    CHECK_EQ(ps.nsamples, 1);
    CHECK_EQ(ps.nvalues, 2);
    CHECK_STR(ps.default_type, "alloc_space");
    free(text);
    sb_release(&raw);
    pdoc_free(&d);
}

static void test_trace_and_firefox_parse(void)
{
    struct pdoc d;
    CHECK_EQ(pdoc_load_bytes(&d, doc_text, strlen(doc_text), "t.json"), 0);
    struct strbuf sb = STRBUF_INIT;
    struct trace_opts to = {.exporter = "scry@test"};
    trace_event_write(&d, &to, &sb);
    json_t *t = tl_json_parse(sb_str(&sb));
    json_t *ev = json_object_get(t, "traceEvents");
    CHECK(json_array_size(ev) == 7); /* 2 metadata, the run, 2 counter points, 2 instants */
    json_t *in = json_array_get(ev, 6);
    CHECK_STR(json_string_value(json_object_get(in, "ph")), "i");
    CHECK_STR(json_string_value(json_object_get(in, "name")), "memory sample /app/a.py:3");
    CHECK(tl_json_num(in, "ts") == 900.0);
    CHECK(tl_json_num(json_object_get(in, "args"), "footprint_mb") == 3.0);
    json_t *c = json_array_get(ev, 4);
    CHECK_STR(json_string_value(json_object_get(c, "ph")), "C");
    CHECK(tl_json_num(c, "ts") == 1000.0);
    CHECK(tl_json_num(json_object_get(c, "args"), "MB") == 3.5);
    json_decref(t);
    sb_reset(&sb);
    struct firefox_opts fo = {.exporter = "scry test"};
    CHECK_EQ(firefox_profile_write(&d, &fo, &sb), 0);
    json_t *f = tl_json_parse(sb_str(&sb));
    json_t *th = json_object_get(f, "threads");
    CHECK_EQ(json_array_size(th), 2);
    json_t *s = json_object_get(json_array_get(th, 0), "samples");
    double ms = 0;
    for (size_t i = 0; i < json_array_size(json_object_get(s, "weight")); i++)
        ms += json_number_value(json_array_get(json_object_get(s, "weight"), i));
    CHECK(fabs(ms - 2000.0) < 1e-6); /* every sampled millisecond, once */
    CHECK_EQ(tl_json_num(s, "length"), 3); /* work: python + native rows; Cls.run: python */
    json_decref(f);
    sb_release(&sb);
    pdoc_free(&d);
}

/* A one-file profile with two functions: seconds and samples of each. */
static void make_doc(struct pdoc *d, double a_sec, double a_n, double b_sec, double b_n)
{
    char text[2048];
    double total = a_sec + b_sec;
    snprintf(text, sizeof(text),
             "{\"sampled_time_sec\":%.17g,\"n_samples\":%.17g,\"cpu_sampling_rate\":0.01,"
             "\"files\":{\"p.py\":{\"lines\":["
             "{\"lineno\":2,\"n_cpu_percent_python\":%.17g,\"n_samples\":%.17g},"
             "{\"lineno\":6,\"n_cpu_percent_python\":%.17g,\"n_samples\":%.17g}],"
             "\"functions\":["
             "{\"line\":\"a\",\"lineno\":1,\"n_cpu_percent_python\":%.17g,\"n_samples\":%.17g},"
             "{\"line\":\"b\",\"lineno\":5,\"n_cpu_percent_python\":%.17g,\"n_samples\":%.17g}"
             "]}}}",
             total, a_n + b_n, 100 * a_sec / total, a_n, 100 * b_sec / total, b_n,
             100 * a_sec / total, a_n, 100 * b_sec / total, b_n);
    CHECK_EQ(pdoc_load_bytes(d, text, strlen(text), "gen"), 0);
}

static void test_compare_error_model(void)
{
    struct pdoc b, a;
    make_doc(&b, 1.0, 100, 1.0, 100);
    make_doc(&a, 1.3, 130, 1.0, 100); /* a() 30% slower, same 10 ms per sample */
    struct cmp_result r;
    CHECK_EQ(cmp_profiles(&b, &a, false, &r), 0);
    CHECK_EQ(r.nrows, 4);
    CHECK_EQ(r.nfuncs, 2);
    const struct cmp_row *top = &r.rows[0];
    CHECK(top->function);
    CHECK_STR(top->func, "a");
    /* var = s × w: 1.0 × 0.01 + 1.3 × 0.01; σ = √0.023; z = 0.3 / σ = 1.978. */
    const struct cmp_change *c = &top->c[CMP_TIME];
    CHECK(fabs(c->sigma - sqrt(0.023)) < 1e-9);
    CHECK(fabs(c->z - 0.3 / sqrt(0.023)) < 1e-9);
    CHECK(fabs(c->pct - 30.0) < 1e-9);
    CHECK(!cmp_significant(top)); /* 100 samples cannot tell 30% apart at 3 σ */
    CHECK(!cmp_regressed(top, 10, NULL));
    CHECK(fabs(r.rows[1].c[CMP_TIME].z) < 1e-9);
    cmp_free(&r);
    pdoc_free(&a);
    /* Ten times the samples: z grows by √10 and the change counts. */
    pdoc_free(&b);
    make_doc(&b, 10.0, 1000, 10.0, 1000);
    make_doc(&a, 13.0, 1300, 10.0, 1000);
    CHECK_EQ(cmp_profiles(&b, &a, false, &r), 0);
    CHECK_STR(r.rows[0].func, "a");
    CHECK(fabs(r.rows[0].c[CMP_TIME].z - 3.0 / sqrt(0.23)) < 1e-9);
    CHECK(cmp_significant(&r.rows[0]));
    enum cmp_kind k = CMP_NKINDS;
    CHECK(cmp_regressed(&r.rows[0], 10, &k));
    CHECK_EQ(k, CMP_TIME);
    CHECK(!cmp_regressed(&r.rows[0], 30, NULL)); /* 30% is not more than 30% */
    CHECK(!cmp_significant(&r.rows[1]));
    /* Lines follow the functions: line 2 of a() first. */
    CHECK(!r.rows[2].function && r.rows[2].line == 2 && cmp_significant(&r.rows[2]));
    cmp_free(&r);
    pdoc_free(&a);
    pdoc_free(&b);
    /* An entry on one side only: the other side's variance is one sample's (w²). */
    make_doc(&b, 1.0, 100, 0.0, 0);
    make_doc(&a, 1.0, 100, 0.05, 5);
    CHECK_EQ(cmp_profiles(&b, &a, false, &r), 0);
    for (size_t i = 0; i < r.nfuncs; i++) {
        if (strcmp(r.rows[i].func, "b") != 0)
            continue;
        c = &r.rows[i].c[CMP_TIME];
        /* before: w = 1.0/100 s, var 0.01²; after: 0.05 × 0.01. */
        CHECK(fabs(c->sigma - sqrt(0.0001 + 0.0005)) < 1e-9);
        CHECK(isinf(c->pct));
    }
    cmp_free(&r);
    pdoc_free(&a);
    pdoc_free(&b);
}

static void test_compare_normalized(void)
{
    /* The after machine is 20% slower overall, and a() 30% slower on top of it: a() is 10%
     * of the time, b() 90%, so the median function is b(), k = 1.2. */
    struct pdoc b, a;
    make_doc(&b, 10.0, 1000, 90.0, 9000);
    make_doc(&a, 10.0 * 1.2 * 1.3, 1300, 90.0 * 1.2, 9000);
    struct cmp_result r;
    CHECK_EQ(cmp_profiles(&b, &a, true, &r), 0);
    CHECK(r.normalized && fabs(r.scale - 1.2) < 1e-12);
    /* rel_var(k) = w_b/s_b + w_a/s_a of b(): 0.01/90 + 0.012/108. */
    CHECK(fabs(r.scale_rel_sigma - sqrt(0.01 / 90 + 0.012 / 108)) < 1e-12);
    CHECK_STR(r.rows[0].func, "a");
    const struct cmp_change *c = &r.rows[0].c[CMP_TIME];
    CHECK(fabs(c->after - 13.0) < 1e-9 && fabs(c->pct - 30.0) < 1e-9);
    double rv = 0.01 / 90 + 0.012 / 108;
    double va = 15.6 * (15.6 / 1300) / (1.44) + 13.0 * 13.0 * rv;
    CHECK(fabs(c->sigma - sqrt(10.0 * 0.01 + va)) < 1e-9);
    CHECK(cmp_regressed(&r.rows[0], 10, NULL));
    CHECK(fabs(r.rows[1].c[CMP_TIME].delta) < 1e-9); /* b() is the reference: no change */
    cmp_free(&r);
    /* Without normalizing both got slower. */
    CHECK_EQ(cmp_profiles(&b, &a, false, &r), 0);
    CHECK(!r.normalized && r.scale == 1);
    CHECK(cmp_regressed(&r.rows[0], 10, NULL) && cmp_regressed(&r.rows[1], 10, NULL));
    cmp_free(&r);
    pdoc_free(&a);
    pdoc_free(&b);
}

static const struct tl_test tests[] = {
    TL(test_compare_normalized),
    TL(test_varints),
    TL(test_doc_model),
    TL(test_pprof_decoded),
    TL(test_pprof_parts),
    TL(test_trace_and_firefox_parse),
    TL(test_compare_error_model),
};
TL_MAIN(tests)
