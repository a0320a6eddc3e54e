/* Checkpoints: what the program did in a window of its run (a notebook cell, a test), for the
 * Python package's Jupyter magics and pytest plugin. A window is a checkpoint before, the code,
 * a checkpoint after; `scry collect --part AFTER --since BEFORE` makes the window's profile from
 * the two files (docs/agent-protocol.md, "Checkpoints"). The totals and the peak since a mark
 * are the cheap form, for a figure per test without a file. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"

/* The statistics so far, settled, as a part document in a new file at path (0600; nothing
 * there is opened or followed). 0, or -1 (errno set) when this process is not profiled or the
 * file cannot be written. */
AG_EXPORT int scry_agent_checkpoint(const char *path)
{
    if (!path || !path[0]) {
        errno = EINVAL;
        return -1;
    }
    errno = 0;
    if (ag_collector_checkpoint(path) != 0) {
        if (!errno)
            errno = ENOTSUP;
        return -1;
    }
    return 0;
}

/* The settled totals as a JSON object in buf (NUL-terminated). Its length, or -1 (not profiled
 * here, or buf too small: errno ERANGE). */
AG_EXPORT int scry_agent_totals(char *buf, size_t size)
{
    struct ag_totals t;
    if (!buf || ag_collector_totals(&t) != 0) {
        errno = buf ? ENOTSUP : EINVAL;
        return -1;
    }
    int n = snprintf(buf, size,
                     "{\"profiling\": %s, \"memory\": %s, \"python_sec\": %.9f, "
                     "\"native_sec\": %.9f, \"system_sec\": %.9f, \"samples\": %llu, "
                     "\"malloc_bytes\": %llu, \"free_bytes\": %llu, \"python_bytes\": %llu, "
                     "\"copy_bytes\": %llu, \"footprint_bytes\": %llu, "
                     "\"max_footprint_bytes\": %llu, \"peak_since_mark_bytes\": %llu}",
                     t.profiling ? "true" : "false", t.memory ? "true" : "false",
                     t.sec[0], t.sec[1], t.sec[2], (unsigned long long)t.samples,
                     (unsigned long long)t.malloc_bytes, (unsigned long long)t.free_bytes,
                     (unsigned long long)t.python_bytes, (unsigned long long)t.copy_bytes,
                     (unsigned long long)t.footprint, (unsigned long long)t.max_footprint,
                     (unsigned long long)t.mark_peak);
    if (n < 0 || (size_t)n >= size) {
        errno = ERANGE;
        return -1;
    }
    return n;
}

/* The peak since the mark starts again at the current footprint. 0, or -1. */
AG_EXPORT int scry_agent_mark_peak(void)
{
    if (ag_collector_mark_peak() != 0) {
        errno = ENOTSUP;
        return -1;
    }
    return 0;
}
