/* The terminal view (src/render/profile_text.c) on synthetic profile documents: the exact output
 * of a small case, lines and files under the threshold hidden with `...` for the gaps, hot lines
 * coloured only when asked, the notes of empty profiles, control characters neutralised, and
 * documents that are not profiles refused with the field named. */
#include <string.h>

#include "common/error.h"
#include "render/profile_text.h"
#include "testlib.h"

static const char doc[] =
    "{\"tool\":\"scry\",\"program\":\"/app/app.py\",\"args\":[\"-v\"],\"python_version\":\"3.12.1\","
    "\"elapsed_time_sec\":2.5,\"sampled_time_sec\":2.0,\"profiled_time_sec\":2.0,"
    "\"n_samples\":200,\"processes\":1,\"cpu_sampling_rate\":0.01,\"use_virtual_time\":false,"
    "\"files\":{"
    "\"/app/lib.py\":{\"percent_cpu_time\":0.5,\"lines\":[{\"lineno\":1,\"line\":\"x\\n\","
    "\"n_cpu_percent_python\":0.5}],\"functions\":[]},"
    "\"/app/app.py\":{\"percent_cpu_time\":99.5,\"lines\":["
    "{\"lineno\":1,\"line\":\"def f():\\n\",\"n_cpu_percent_python\":0,\"n_cpu_percent_c\":0,"
    "\"n_sys_percent\":0},"
    "{\"lineno\":2,\"line\":\"    if a \\\\u003c b:\\n\",\"n_cpu_percent_python\":60.2,"
    "\"n_cpu_percent_c\":0.3,\"n_sys_percent\":0},"
    "{\"lineno\":3,\"line\":\"    pass\\n\",\"n_cpu_percent_python\":0.2},"
    "{\"lineno\":4,\"line\":\"\\tz = sorted(y)\\n\",\"n_cpu_percent_c\":39,"
    "\"n_sys_percent\":0},"
    "{\"lineno\":5,\"line\":\"\\n\"}],"
    "\"functions\":[{\"lineno\":1,\"line\":\"f\",\"n_cpu_percent_python\":60.4,"
    "\"n_cpu_percent_c\":39.3,\"n_sys_percent\":0}]}}}";

static int render(const char *json, bool color, double threshold, struct strbuf *out)
{
    struct profile_text_opts o = {.color = color, .threshold = threshold};
    sb_reset(out);
    return profile_text_render_bytes(json, strlen(json), "p.json", &o, out);
}

static void test_small_profile_exact(void)
{
    struct strbuf sb = STRBUF_INIT;
    CHECK_EQ(render(doc, false, 1, &sb), 0);
    CHECK_STR(sb_str(&sb),
              "profile of /app/app.py -v (Python 3.12.1)\n"
              "\n"
              "shares of the time are of 2.000 s sampled (every thread of every process, on and "
              "off the CPU); the program ran 2.500 s\n"
              "\n"
              "/app/app.py: 99.5% of the time (1.990 s of 2.000 s sampled)\n"
              "       │   Time │        │        │\n"
              "  Line │ Python │ native │ system │ source\n"
              "───────┼────────┼────────┼────────┼────────────────────────────────────────\n"
              "   ... │        │        │        │\n"
              "     2 │    60% │    <1% │        │     if a < b:\n"
              "   ... │        │        │        │\n"
              "     4 │        │    39% │        │         z = sorted(y)\n"
              "   ... │        │        │        │\n"
              "\n"
              "function summary for /app/app.py\n"
              "       │   Time │        │        │\n"
              "  Line │ Python │ native │ system │ function\n"
              "───────┼────────┼────────┼────────┼────────────────────────────────────────\n"
              "     1 │    60% │    39% │        │ f\n"
              "\n"
              "1 file under 1% of the time not shown (--cpu-percent-threshold)\n"
              "elapsed 2.500 s, 200 samples, 1 process; sampled every 0.01 s on average (wall "
              "clock)\n");
    sb_release(&sb);
}

static void test_threshold_zero_shows_all(void)
{
    struct strbuf sb = STRBUF_INIT;
    CHECK_EQ(render(doc, false, 0, &sb), 0);
    CHECK(strstr(sb_str(&sb), "     1 │        │        │        │ def f():\n") != NULL);
    CHECK(strstr(sb_str(&sb), "     3 │    <1% │        │        │     pass\n") != NULL);
    CHECK(strstr(sb_str(&sb), "     5 │        │        │        │\n") != NULL);
    CHECK(strstr(sb_str(&sb), "   ... ") == NULL);
    CHECK(strstr(sb_str(&sb), "/app/lib.py: 0.5% of the time") != NULL);
    CHECK(strstr(sb_str(&sb), "not shown") == NULL);
    sb_release(&sb);
}

static void test_high_threshold(void)
{
    struct strbuf sb = STRBUF_INIT;
    CHECK_EQ(render(doc, false, 50, &sb), 0);
    CHECK(strstr(sb_str(&sb), "     2 │    60%") != NULL);
    CHECK(strstr(sb_str(&sb), "     4 │") == NULL);
    CHECK(strstr(sb_str(&sb), "function summary") != NULL); /* f has 99.7% */
    sb_release(&sb);
}

static void test_color_only_when_asked(void)
{
    struct strbuf sb = STRBUF_INIT;
    CHECK_EQ(render(doc, true, 1, &sb), 0);
    /* Line 2 (60%) and line 4 (39%) are hot; nothing else is red. */
    CHECK(strstr(sb_str(&sb), "\033[1;31m     2 │") != NULL);
    CHECK(strstr(sb_str(&sb), "\033[1;31m     4 │") != NULL);
    CHECK_EQ(render(doc, false, 1, &sb), 0);
    CHECK(strchr(sb_str(&sb), '\033') == NULL);
    sb_release(&sb);
}

static void test_empty_notes(void)
{
    struct strbuf sb = STRBUF_INIT;
    const char *note_doc =
        "{\"tool\":\"scry\",\"elapsed_time_sec\":0.004,\"n_samples\":0,\"processes\":1,"
        "\"note\":\"the program ran for 0.004 s, too short to sample at the sampling rate (mean "
        "0.01 s): nothing was recorded\",\"files\":{}}";
    CHECK_EQ(render(note_doc, false, 1, &sb), 0);
    CHECK_STR(sb_str(&sb), "elapsed 0.004 s, 0 samples, 1 process\n"
                           "note: the program ran for 0.004 s, too short to sample at the "
                           "sampling rate (mean 0.01 s): nothing was recorded\n");
    /* Scalene writes {} for an empty profile. */
    CHECK_EQ(render("{}", false, 1, &sb), 0);
    CHECK_STR(sb_str(&sb), "elapsed 0.000 s\nnote: the profile holds no files: nothing was "
                           "recorded\n");
    sb_release(&sb);
}

static void test_few_samples_warned(void)
{
    struct strbuf sb = STRBUF_INIT;
    const char *few = "{\"n_samples\":4,\"files\":{\"/a.py\":{\"percent_cpu_time\":100,"
                      "\"lines\":[{\"lineno\":1,\"line\":\"x\",\"n_cpu_percent_python\":100}]}}}";
    CHECK_EQ(render(few, false, 1, &sb), 0);
    CHECK(strstr(sb_str(&sb), "only 4 samples: the shares are rough") != NULL);
    CHECK_EQ(render(doc, false, 1, &sb), 0);
    CHECK(strstr(sb_str(&sb), "only ") == NULL);
    sb_release(&sb);
}

/* The oversubscription warning (issue 27, item 7): the view prints the sentence that `scry run`
 * repeats as its last line, from the same function, and only when the profile is marked. */
static void test_oversubscribed_warned(void)
{
    struct strbuf sb = STRBUF_INIT, said = STRBUF_INIT;
    const char *busy = "{\"n_samples\":400,\"oversubscribed\":true,\"run_queue_delay_sec\":0.5,"
                       "\"run_queue_cpu_sec\":2,\"files\":{\"/a.py\":{\"percent_cpu_time\":100,"
                       "\"lines\":[{\"lineno\":1,\"line\":\"x\",\"n_cpu_percent_python\":100}]}}}";
    profile_text_oversubscribed(&said, 0.5, 2.0);
    CHECK_STR(sb_str(&said), "the machine was oversubscribed: the program's threads waited 0.500 s "
                             "for a CPU (25% of the 2.000 s they ran); a thread waiting for a CPU "
                             "is off it, so that wait counts as system time: system shares may be "
                             "no I/O or sleep at all");
    CHECK_EQ(render(busy, false, 1, &sb), 0);
    const char *w = strstr(sb_str(&sb), "warning: ");
    CHECK(w != NULL && strncmp(w + 9, sb_str(&said), said.len) == 0);
    CHECK_EQ(render(doc, false, 1, &sb), 0);
    CHECK(strstr(sb_str(&sb), "oversubscribed") == NULL);
    sb_release(&sb);
    sb_release(&said);
}

static void test_control_characters_neutralised(void)
{
    struct strbuf sb = STRBUF_INIT;
    const char *evil = "{\"files\":{\"/a\\u001b[2J.py\":{\"percent_cpu_time\":100,\"lines\":["
                       "{\"lineno\":1,\"line\":\"x = '\\u001b]0;pwned\\u0007'\\n\","
                       "\"n_cpu_percent_python\":100}]}},\"note\":\"\\u001b[31m\"}";
    CHECK_EQ(render(evil, false, 1, &sb), 0);
    CHECK(strchr(sb_str(&sb), '\033') == NULL);
    CHECK(strchr(sb_str(&sb), '\007') == NULL);
    CHECK(strstr(sb_str(&sb), "/a?[2J.py") != NULL);
    sb_release(&sb);
}

static void test_not_a_profile(void)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"[1]", "p.json is not a profile: it is not a JSON object"},
        {"{\"files\":[]}", "\"files\" is not an object"},
        {"{\"files\":{\"a\":{\"lines\":[{\"lineno\":\"x\"}]}}}", "files[\"a\"].lines[0].lineno"},
        {"{\"files\":{\"a\":{\"lines\":[{\"lineno\":1,\"n_sys_percent\":\"1\"}]}}}",
         "files[\"a\"].lines[0].n_sys_percent is not a number"},
        {"{\"files\":{\"a\":{\"functions\":7}}}", "files[\"a\"].functions is not an array"},
        {"{\"elapsed_time_sec\":\"long\"}", "elapsed_time_sec is not a number"},
        {"{", "p.json is not a profile: not JSON"},
        /* The model's checks (analysis/profile_doc.c) are the view's: every field, whether the
         * view shows it or not. */
        {"{\"elapsed_time_sec\":1}", "p.json is not a profile: \"files\" is missing"},
        {"{\"files\":{\"a\":{\"functions\":[{\"lineno\":1}]}}}",
         "files[\"a\"].functions[0].line is not a string"},
        {"{\"files\":{\"a\":{\"leaks\":{\"x\":{}}}}}", "files[\"a\"].leaks[\"x\"] is not a line's leak"},
        {"{\"files\":{\"a\":{\"lines\":[{\"lineno\":1,\"memory_samples\":[[1]]}]}}}",
         "files[\"a\"].lines[0].memory_samples is not [[ns, MB], ...]"},
        {"{\"files\":{},\"stacks\":[[[\"x\"],{\"count\":1}]]}",
         "stacks[0] has a frame that is not \"FILE QUALNAME:LINE;\""},
        {"{\"files\":{},\"note\":5}", "p.json is not a profile: note is not a string"},
    };
    struct strbuf sb = STRBUF_INIT;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CHECK_EQ(render(cases[i].json, false, 1, &sb), -SCRY_E_BAD_PROFILE);
        if (!strstr(err_last_message(), cases[i].want))
            tl_fail(__FILE__, __LINE__, "case %zu: \"%s\" lacks \"%s\"", i, err_last_message(),
                    cases[i].want);
    }
    sb_release(&sb);
}

/* With GPU data: the device and the sources in the header, GPU util and memory columns (a line
 * shown for its GPU share alone), the GPU note at the end; none of it without. */
#define GPU_DOC(flag)                                                                             \
    "{\"program\":\"/app/g.py\",\"elapsed_time_sec\":2.0,\"sampled_time_sec\":2.0,"               \
    "\"gpu\":" flag ",\"gpu_device\":\"NVIDIA H200\",\"gpu_utilization_source\":\"process\","   \
    "\"gpu_memory_source\":\"device\",\"gpu_note\":\"GPU: device 0 lost\",\"files\":{"           \
    "\"/app/g.py\":{\"percent_cpu_time\":100,\"lines\":["                                        \
    "{\"lineno\":1,\"line\":\"mm()\\n\",\"n_cpu_percent_c\":50,\"n_gpu_percent\":91.6,"         \
    "\"n_gpu_peak_memory_mb\":256},"                                                            \
    "{\"lineno\":2,\"line\":\"wait()\\n\",\"n_cpu_percent_c\":0.2,\"n_gpu_percent\":40,"        \
    "\"n_gpu_peak_memory_mb\":8448}],\"functions\":[]}}}"

/* "first_file" (a notebook cell's own file) comes first whatever its share; the others by
 * share. Threshold 0: lib.py (0.5%) is shown. */
static void test_first_file_first(void)
{
    struct strbuf sb = STRBUF_INIT, d = STRBUF_INIT;
    sb_add(&d, doc, strlen(doc) - 1); /* without its closing brace */
    sb_adds(&d, ",\"first_file\":\"/app/lib.py\"}");
    CHECK_EQ(render(sb_str(&d), false, 0, &sb), 0);
    const char *lib = strstr(sb_str(&sb), "/app/lib.py: 0.5% of the time");
    const char *app = strstr(sb_str(&sb), "/app/app.py: 99.5% of the time");
    CHECK(lib && app && lib < app);
    CHECK_EQ(render(doc, false, 0, &sb), 0); /* without it: by share */
    lib = strstr(sb_str(&sb), "/app/lib.py: 0.5% of the time");
    app = strstr(sb_str(&sb), "/app/app.py: 99.5% of the time");
    CHECK(lib && app && app < lib);
    sb_release(&sb);
    sb_release(&d);
}

static void test_gpu_columns(void)
{
    struct strbuf sb = STRBUF_INIT;
    CHECK_EQ(render(GPU_DOC("true"), false, 1, &sb), 0);
    const char *t = sb_str(&sb);
    CHECK(strstr(t, "GPU: NVIDIA H200; utilisation of this program's processes, memory the "
                    "device's growth since the start\n") != NULL);
    CHECK(strstr(t, "       │   Time │        │        │    GPU │        │\n"
                    "  Line │ Python │ native │ system │   util │ memory │ source\n") != NULL);
    CHECK(strstr(t, "     1 │        │    50% │        │    92% │   256M │ mm()\n") != NULL);
    /* Under the time threshold, shown for its GPU share. */
    CHECK(strstr(t, "     2 │        │    <1% │        │    40% │  8.25G │ wait()\n") != NULL);
    CHECK(strstr(t, "note: GPU: device 0 lost\n") != NULL);
    /* "gpu": false: no GPU header or column, the line under the threshold hidden. */
    CHECK_EQ(render(GPU_DOC("false"), false, 1, &sb), 0);
    t = sb_str(&sb);
    CHECK(strstr(t, "GPU: NVIDIA") == NULL && strstr(t, "util") == NULL);
    CHECK(strstr(t, "wait()") == NULL && strstr(t, "mm()") != NULL);
    sb_release(&sb);
}

static const struct tl_test tests[] = {
    TL(test_small_profile_exact),  TL(test_threshold_zero_shows_all),
    TL(test_high_threshold),       TL(test_color_only_when_asked),
    TL(test_empty_notes),          TL(test_few_samples_warned),
    TL(test_oversubscribed_warned),
    TL(test_control_characters_neutralised),
    TL(test_not_a_profile),        TL(test_gpu_columns),
    TL(test_first_file_first),
};
TL_MAIN(tests)
