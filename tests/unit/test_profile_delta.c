/* pdoc_subtract (run --push): a profile less an earlier one of the same run, on two synthetic
 * documents whose differences are known. */
#include <math.h>
#include <string.h>

#include "analysis/profile_delta.h"
#include "testlib.h"

/* Earlier: 1 s sampled; line 3 of work 0.5 s python, line 6 of Cls.run 0.25 s python + 0.25 s
 * system; two stacks. */
static const char before[] =
    "{\"elapsed_time_sec\":1.0,\"sampled_time_sec\":1.0,\"n_samples\":100,\"memory\":true,"
    "\"stacks\":[[[\"/a.py <module>:9;\",\"/a.py work:3;\"],"
    "{\"count\":50,\"python_time\":0.5,\"c_time\":0,\"sys_time\":0}],"
    "[[\"/a.py <module>:10;\",\"/a.py Cls.run:6;\"],"
    "{\"count\":50,\"python_time\":0.25,\"c_time\":0,\"sys_time\":0.25}]],"
    "\"files\":{\"/a.py\":{\"lines\":["
    "{\"lineno\":3,\"n_cpu_percent_python\":50,\"n_samples\":50,\"n_malloc_mb\":1,"
    "\"n_growth_mb\":1},"
    "{\"lineno\":6,\"n_cpu_percent_python\":25,\"n_sys_percent\":25,\"n_samples\":50,"
    "\"n_malloc_mb\":3,\"n_growth_mb\":2}],"
    "\"functions\":[{\"line\":\"work\",\"lineno\":2},{\"line\":\"Cls.run\",\"lineno\":5}]}}}";

/* Later: 4 s sampled (a stack's times are fractions of it); line 3 now 2 s python + 1 s native, line 6 unchanged, line 12 (Cls.run)
 * new; the first stack grew, a third is new. */
static const char after[] =
    "{\"elapsed_time_sec\":4.0,\"sampled_time_sec\":4.0,\"n_samples\":400,\"memory\":true,"
    "\"stacks\":[[[\"/a.py <module>:9;\",\"/a.py work:3;\"],"
    "{\"count\":300,\"python_time\":0.5,\"c_time\":0.25,\"sys_time\":0}],"
    "[[\"/a.py <module>:10;\",\"/a.py Cls.run:6;\"],"
    "{\"count\":50,\"python_time\":0.0625,\"c_time\":0,\"sys_time\":0.0625}],"
    "[[\"/a.py <module>:10;\",\"/a.py Cls.run:12;\"],"
    "{\"count\":50,\"python_time\":0.125,\"c_time\":0,\"sys_time\":0}]],"
    "\"files\":{\"/a.py\":{\"lines\":["
    "{\"lineno\":3,\"n_cpu_percent_python\":50,\"n_cpu_percent_c\":25,\"n_samples\":300,"
    "\"n_malloc_mb\":5,\"n_growth_mb\":0.5},"
    "{\"lineno\":6,\"n_cpu_percent_python\":6.25,\"n_sys_percent\":6.25,\"n_samples\":50,"
    "\"n_malloc_mb\":3,\"n_growth_mb\":2},"
    "{\"lineno\":12,\"n_cpu_percent_python\":12.5,\"n_samples\":50}],"
    "\"functions\":[{\"line\":\"work\",\"lineno\":2},{\"line\":\"Cls.run\",\"lineno\":5}]}}}";

static bool near(double a, double b)
{
    return fabs(a - b) < 1e-9;
}

static const struct pdoc_entry *line(const struct pdoc *d, uint32_t n)
{
    for (size_t i = 0; i < d->nlines; i++)
        if (d->lines[i].line == n)
            return &d->lines[i];
    return NULL;
}

static void test_subtract(void)
{
    struct pdoc a, b;
    CHECK_EQ(pdoc_load_bytes(&a, before, strlen(before), "before"), 0);
    CHECK_EQ(pdoc_load_bytes(&b, after, strlen(after), "after"), 0);
    CHECK_EQ(pdoc_subtract(&b, &a), 0);
    const struct pdoc_entry *l3 = line(&b, 3), *l6 = line(&b, 6), *l12 = line(&b, 12);
    CHECK(l3 && l6 && l12);
    if (l3 && l6 && l12) {
        /* Line 3: 2 - 0.5 s python, 1 - 0 native, 300 - 50 samples, 5 - 1 MB allocated; what it
         * keeps is the later value. */
        CHECK(near(l3->python_sec, 1.5) && near(l3->native_sec, 1.0) && near(l3->sys_sec, 0));
        CHECK(near(l3->samples, 250));
        CHECK(near(l3->malloc_bytes, 4 * 1048576.0));
        CHECK(near(l3->kept_bytes, 0.5 * 1048576.0));
        /* Line 6 did nothing since. */
        CHECK(near(l6->python_sec, 0) && near(l6->sys_sec, 0) && near(l6->samples, 0));
        CHECK(near(l6->malloc_bytes, 0) && near(l6->kept_bytes, 2 * 1048576.0));
        /* Line 12 is new: all of it. */
        CHECK(near(l12->python_sec, 0.5) && near(l12->samples, 50));
    }
    CHECK_EQ(b.nstacks, 3);
    CHECK(near(b.stacks[0].samples, 250) && near(b.stacks[0].python_sec, 1.5) &&
          near(b.stacks[0].native_sec, 1.0));
    CHECK(near(b.stacks[1].samples, 0) && near(b.stacks[1].sys_sec, 0));
    CHECK(near(b.stacks[2].samples, 50) && near(b.stacks[2].python_sec, 0.5));
    CHECK(near(b.n_samples, 300) && near(b.sampled_sec, 3.0));
    /* The other way round nothing goes below 0. */
    struct pdoc c;
    CHECK_EQ(pdoc_load_bytes(&c, before, strlen(before), "before"), 0);
    CHECK_EQ(pdoc_subtract(&c, &a), 0);
    for (size_t i = 0; i < c.nlines; i++)
        CHECK(near(c.lines[i].python_sec, 0) && near(c.lines[i].samples, 0));
    pdoc_free(&c);
    pdoc_free(&a);
    pdoc_free(&b);
}

static const struct tl_test tests[] = {
    TL(test_subtract),
};
TL_MAIN(tests)
