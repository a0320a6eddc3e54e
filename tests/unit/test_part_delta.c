/* A window of one process (src/analysis/part_delta.c, `scry collect --part AFTER --since
 * BEFORE`): the GPU lines of two checkpoints subtracted, a peak kept when it rose in the window
 * and otherwise the window's mean, lines with no GPU time in the window dropped. */
#include <math.h>
#include <string.h>

#include <jansson.h>

#include "analysis/part_delta.h"
#include "testlib.h"

#define CKPT(elapsed, gpu_lines)                                                                  \
    "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":7,\"start_time_absolute\":100.0,"   \
    "\"elapsed_sec\":" elapsed ",\"totals\":{\"python_sec\":1,\"native_sec\":0,\"sys_sec\":0,"  \
    "\"samples\":10,\"dropped\":0},\"files\":[\"/a.py\"],\"functions\":[[\"f\",0,1]],"            \
    "\"lines\":[],\"gpu\":{\"device\":\"G\"},\"gpu_lines\":" gpu_lines "}"

static const json_t *entry(const json_t *lines, json_int_t lineno)
{
    for (size_t i = 0; i < json_array_size(lines); i++)
        if (json_integer_value(json_array_get(json_array_get(lines, i), 1)) == lineno)
            return json_array_get(lines, i);
    return NULL;
}

static double item(const json_t *e, size_t i)
{
    return json_number_value(json_array_get(e, i));
}

static void test_gpu_lines_of_the_window(void)
{
    json_error_t err;
    /* Line 2: 1 s at 90% holding 100 MiB before; 1 s more at 50% holding 300 MiB (a new peak).
     * Line 3: 1 s holding 8192 MiB before, 1 s holding 1024 MiB in the window (peak unknown: the
     * window's mean). Line 4: nothing in the window. Line 5: new in the window. */
    json_t *before = json_loads(CKPT("1.0", "[[0,2,0,1.0,0.9,100.0,100.0],"
                                            "[0,3,0,1.0,0.0,8192.0,8192.0],"
                                            "[0,4,0,1.0,1.0,0.0,0.0]]"),
                                0, &err);
    json_t *after = json_loads(CKPT("3.0", "[[0,2,0,2.0,1.4,400.0,300.0],"
                                           "[0,3,0,2.0,0.0,9216.0,8192.0],"
                                           "[0,4,0,1.0,1.0,0.0,0.0],"
                                           "[0,5,0,0.5,0.25,10.0,20.0]]"),
                               0, &err);
    CHECK(before && after);
    CHECK_EQ(part_subtract(after, before), 0);
    const json_t *gl = json_object_get(after, "gpu_lines");
    CHECK_EQ(json_array_size(gl), 3);
    const json_t *l2 = entry(gl, 2), *l3 = entry(gl, 3), *l5 = entry(gl, 5);
    CHECK(l2 && fabs(item(l2, 3) - 1.0) < 1e-12 && fabs(item(l2, 4) - 0.5) < 1e-12 &&
          fabs(item(l2, 5) - 300.0) < 1e-9 && item(l2, 6) == 300.0);
    CHECK(l3 && fabs(item(l3, 5) - 1024.0) < 1e-9 && fabs(item(l3, 6) - 1024.0) < 1e-9);
    CHECK(l5 && item(l5, 3) == 0.5 && item(l5, 6) == 20.0);
    CHECK(entry(gl, 4) == NULL);
    json_decref(before);
    json_decref(after);
}

#define MCKPT(elapsed, memory_lines)                                                               \
    "{\"format\":\"scry-part\",\"format_version\":1,\"pid\":7,\"start_time_absolute\":100.0,"   \
    "\"elapsed_sec\":" elapsed ",\"totals\":{\"python_sec\":1,\"native_sec\":0,\"sys_sec\":0,"  \
    "\"samples\":10,\"dropped\":0},\"files\":[\"/a.py\"],\"functions\":[[\"f\",0,1]],"            \
    "\"lines\":[],\"memory\":{},\"memory_lines\":" memory_lines "}"

/* Issue 27 item 8: a line's most held at once (the 17th item) in a window. Line 2 held 100 at
 * most before, 40 at the window's start, 60 at its end, never above 100 in it: at least 60 (the
 * window's top is not known). Line 3 rose to 300 in the window: 300. */
static void test_max_held_of_the_window(void)
{
    json_error_t err;
    json_t *before = json_loads(MCKPT("1.0", "[[0,2,0,100,0,10,60,10,10,10,0,0,0,[],40,0,100],"
                                             "[0,3,0,100,0,10,0,10,10,10,0,0,0,[],100,0,100]]"),
                                0, &err);
    json_t *after = json_loads(MCKPT("3.0", "[[0,2,0,120,0,12,60,10,10,12,0,0,0,[],60,0,100],"
                                            "[0,3,0,300,0,30,0,10,10,30,0,0,0,[],300,0,300]]"),
                               0, &err);
    CHECK(before && after);
    CHECK_EQ(part_subtract(after, before), 0);
    const json_t *ml = json_object_get(after, "memory_lines");
    const json_t *l2 = entry(ml, 2), *l3 = entry(ml, 3);
    CHECK(l2 && item(l2, 16) == 60);
    CHECK(l3 && item(l3, 16) == 300);
    json_decref(before);
    json_decref(after);
}

static const struct tl_test tests[] = {
    TL(test_gpu_lines_of_the_window),
    TL(test_max_held_of_the_window),
};
TL_MAIN(tests)
