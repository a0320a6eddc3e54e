/* A minimal unit-test harness: TEST() functions registered in a table, CHECK macros that report
 * file:line and keep going, and a main that prints "results: N passed, M failed". */
#ifndef SCRY_TESTLIB_H
#define SCRY_TESTLIB_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

extern int tl_failures; /* failures in the current test */

void tl_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            tl_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                                       \
    } while (0)

#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long _a = (long long)(a), _b = (long long)(b);                                        \
        if (_a != _b)                                                                              \
            tl_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, _a, _b);                 \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
    do {                                                                                           \
        uint64_t _a = (uint64_t)(a), _b = (uint64_t)(b);                                           \
        if (_a != _b)                                                                              \
            tl_fail(__FILE__, __LINE__, "%s == %s: 0x%" PRIx64 " != 0x%" PRIx64, #a, #b, _a, _b);  \
    } while (0)

#define CHECK_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *_a = (a), *_b = (b);                                                           \
        if (!_a || !_b || strcmp(_a, _b) != 0)                                                     \
            tl_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, _a ? _a : "(null)",  \
                    _b ? _b : "(null)");                                                           \
    } while (0)

struct tl_test {
    const char *name;
    void (*fn)(void);
};

/* Each test file defines: static const struct tl_test tests[] = {TL(name), ...}; TL_MAIN(tests) */
#define TL(fn) {#fn, fn}
int tl_run(const struct tl_test *tests, size_t n, int argc, char **argv);
#define TL_MAIN(tests)                                                                             \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        return tl_run(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);                        \
    }

/* A test file that measures memory (a mapping's resident pages, its own malloc counts) is
 * meaningless under AddressSanitizer, whose shadow memory and allocator change both: such a file
 * wraps its tests in #if !TL_UNDER_ASAN and ends with TL_MAIN_SKIPPED_UNDER_ASAN(why) in #else,
 * which reports 0 tests and says why (make check's sanitizer build). */
#if defined(__SANITIZE_ADDRESS__)
#define TL_UNDER_ASAN 1
#else
#define TL_UNDER_ASAN 0
#endif
#define TL_MAIN_SKIPPED_UNDER_ASAN(why)                                                            \
    int main(void)                                                                                 \
    {                                                                                              \
        printf("skipped under AddressSanitizer: %s\nresults: 0 passed, 0 failed\n", why);         \
        return 0;                                                                                  \
    }

/* JSON documents a test wrote (jansson): the parsed text (NULL, and a failure, if it is not
 * JSON), and a number field of an object (NAN, and a failure, if it is not a number: no
 * comparison with it holds). */
json_t *tl_json_parse(const char *text);
double tl_json_num(const json_t *obj, const char *key);

/* A fresh temporary directory for this test binary (removed at exit unless the test failed). */
const char *tl_tmpdir(void);

/* Resident kB of the mapping that holds addr, from /proc/self/smaps; -1 if not found. */
long tl_mapping_rss_kb(const void *addr);

#endif
