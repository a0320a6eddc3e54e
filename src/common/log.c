/* SCRY_LOG-filtered logging; one write(2) per message so lines from threads do not interleave. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int threshold = -1;
static void (*before_write)(void);

void log_set_before_write(void (*fn)(void))
{
    before_write = fn;
}

static int parse_level(const char *s)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (!s || !*s)
        return LOG_WARN;
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    if (s[0] >= '0' && s[0] <= '3' && s[1] == 0)
        return s[0] - '0';
    return LOG_WARN;
}

int log_enabled(enum log_level level)
{
    if (threshold < 0)
        threshold = parse_level(getenv("SCRY_LOG"));
    return (int)level <= threshold;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    static const char *const prefix[] = {"error", "warning", "info", "debug"};
    if (!log_enabled(level))
        return;
    char buf[1024];
    int n = snprintf(buf, sizeof(buf), "scry: %s: ", prefix[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof(buf) - 2)
        len = sizeof(buf) - 2;
    buf[len++] = '\n';
    if (before_write)
        before_write();
    ssize_t w = write(2, buf, len);
    (void)w;
}
