/* The error table and the per-thread "last error" record behind err_fail(). */
#include "error.h"

#include <stdio.h>
#include <string.h>

static const char *const code_names[] = {
#define SCRY_ERR_NAME(name, code, hint) code,
    SCRY_ERRORS(SCRY_ERR_NAME)
#undef SCRY_ERR_NAME
};

static const char *const default_hints[] = {
#define SCRY_ERR_HINT(name, code, hint) hint,
    SCRY_ERRORS(SCRY_ERR_HINT)
#undef SCRY_ERR_HINT
};

/* The agent's texts are shorter: its whole thread-local block is static TLS (memhooks.c's
 * initial-exec counters), which a late dlopen (scry.start(), record --pid --memory) must fit
 * into the surplus glibc keeps for all such libraries together (1664 bytes from glibc 2.32 on,
 * less what others took): at 512 each, this block alone took all of it. */
#ifdef SCRY_AGENT
#define ERR_TEXT_MAX 256
#else
#define ERR_TEXT_MAX 512
#endif

static _Thread_local enum scry_err last_code;
static _Thread_local char last_message[ERR_TEXT_MAX];
static _Thread_local char last_hint[ERR_TEXT_MAX];

int err_failv(enum scry_err code, const char *hint, const char *fmt, va_list ap)
{
    if (code <= SCRY_E_OK || code >= SCRY_E__COUNT)
        code = SCRY_E_INTERNAL;
    last_code = code;
    vsnprintf(last_message, sizeof(last_message), fmt, ap);
    snprintf(last_hint, sizeof(last_hint), "%s", hint ? hint : default_hints[code]);
    return -(int)code;
}

int err_fail(enum scry_err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int ret = err_failv(code, NULL, fmt, ap);
    va_end(ap);
    return ret;
}

int err_fail_hint(enum scry_err code, const char *hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int ret = err_failv(code, hint, fmt, ap);
    va_end(ap);
    return ret;
}

enum scry_err err_last_code(void) { return last_code; }

const char *err_last_message(void)
{
    if (last_code == SCRY_E_OK)
        return "";
    return last_message[0] ? last_message : code_names[last_code];
}

const char *err_last_hint(void) { return last_code == SCRY_E_OK ? "" : last_hint; }

void err_clear(void)
{
    last_code = SCRY_E_OK;
    last_message[0] = 0;
    last_hint[0] = 0;
}

const char *err_code_name(enum scry_err code)
{
    if (code < SCRY_E_OK || code >= SCRY_E__COUNT)
        code = SCRY_E_INTERNAL;
    return code_names[code];
}

const char *err_default_hint(enum scry_err code)
{
    if (code < SCRY_E_OK || code >= SCRY_E__COUNT)
        code = SCRY_E_INTERNAL;
    return default_hints[code];
}

enum scry_err err_from_ret(int ret)
{
    if (ret >= 0)
        return SCRY_E_OK;
    if (ret <= -SCRY_E__COUNT) /* compared this way round: -INT_MIN overflows */
        return SCRY_E_INTERNAL;
    return (enum scry_err)(-ret);
}
