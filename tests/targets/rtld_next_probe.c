/* A library of the program's that looks symbols up with RTLD_NEXT and RTLD_DEFAULT (issue 11,
 * item 6: scry interposes dlsym, and must keep what these mean). Built at -O0 by
 * tests/e2e/test_run_hostile.py, so that its calls to dlsym are real calls from here, and loaded
 * with RTLD_GLOBAL by tests/targets/rtld_next.py. RTLD_NEXT from this library searches the
 * objects after it: none defines scry_probe_symbol, so the answer is NULL; an interposer that
 * passed the look-up on as its own would search after the agent, which this library follows,
 * and find the library's own symbol. */
#define _GNU_SOURCE
#include <dlfcn.h>

int scry_probe_symbol = 42;

void *scry_probe_next(void)
{
    return dlsym(RTLD_NEXT, "scry_probe_symbol");
}

void *scry_probe_vnext(void)
{
    return dlvsym(RTLD_NEXT, "scry_probe_symbol", "GLIBC_2.2.5");
}

void *scry_probe_default(void)
{
    return dlsym(RTLD_DEFAULT, "scry_probe_symbol");
}

void *scry_probe_address(void)
{
    return &scry_probe_symbol;
}
