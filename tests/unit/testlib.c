/* The unit-test harness: runs every test (or those named on the command line). */
#include "testlib.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

int tl_failures;
static char tmpdir[256];
static int any_failed;

void tl_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "  %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    tl_failures++;
}

json_t *tl_json_parse(const char *text)
{
    json_error_t err;
    json_t *doc = json_loads(text, 0, &err);
    if (!doc)
        tl_fail(__FILE__, __LINE__, "not JSON: %s", err.text);
    return doc;
}

double tl_json_num(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v)) {
        tl_fail(__FILE__, __LINE__, "no number %s", key);
        return NAN;
    }
    return json_number_value(v);
}

const char *tl_tmpdir(void)
{
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/scry-unit-XXXXXX");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return tmpdir;
}

static void cleanup(void)
{
    if (tmpdir[0] && !any_failed) {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
}

int tl_run(const struct tl_test *tests, size_t n, int argc, char **argv)
{
    int passed = 0, failed = 0;
    atexit(cleanup);
    for (size_t i = 0; i < n; i++) {
        if (argc > 1) {
            int wanted = 0;
            for (int a = 1; a < argc; a++)
                wanted |= strcmp(argv[a], tests[i].name) == 0;
            if (!wanted)
                continue;
        }
        tl_failures = 0;
        tests[i].fn();
        if (tl_failures) {
            fprintf(stderr, "FAIL %s\n", tests[i].name);
            failed++;
        } else {
            passed++;
        }
    }
    any_failed = failed > 0;
    printf("results: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

/* Resident kB of the mapping that holds addr, from /proc/self/smaps; -1 if not found. */
long tl_mapping_rss_kb(const void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    bool in = false;
    long kb = -1;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
            continue;
        }
        if (in && sscanf(line, "Rss: %ld kB", &kb) == 1)
            break;
    }
    fclose(f);
    return kb;
}
