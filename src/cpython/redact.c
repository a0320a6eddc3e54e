/* Redaction rules for captured contents (see redact.h). Over-redacting an id that happens to look
 * like a token is the accepted cost of never writing a real one into a snapshot. */
#include "redact.h"

#include <ctype.h>
#include <string.h>

static const char *const sensitive_names[] = {
    "password", "passwd", "secret", "token", "key", "auth", "cookie", "session", "credential",
};

static bool contains_nocase(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (strncasecmp(s + i, needle, n) == 0)
            return true;
    return false;
}

bool redact_name_is_sensitive(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(sensitive_names) / sizeof(sensitive_names[0]); i++)
        if (contains_nocase(name, len, sensitive_names[i]))
            return true;
    return false;
}

static bool is_b64(unsigned char c)
{
    return isalnum(c) || c == '+' || c == '/' || c == '=' || c == '_' || c == '-';
}

/* Length of the run of token characters (letters, digits, - _) starting at s. */
static size_t token_run(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '-' || s[i] == '_'))
        i++;
    return i;
}

static bool starts_with(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

/* A known token prefix at s, followed by enough token characters. */
static bool prefixed_token(const char *s, size_t len)
{
    static const struct {
        const char *prefix;
        size_t min_tail;
    } prefixes[] = {
        {"sk-", 16},   {"sk_live_", 16}, {"rk_live_", 16}, {"ghp_", 20}, {"gho_", 20},
        {"ghu_", 20},  {"ghs_", 20},     {"ghr_", 20},     {"github_pat_", 20},
        {"xoxb-", 10}, {"xoxp-", 10},    {"xoxa-", 10},    {"xoxs-", 10},
    };
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        size_t n = strlen(prefixes[i].prefix);
        if (starts_with(s, len, prefixes[i].prefix) &&
            token_run(s + n, len - n) >= prefixes[i].min_tail)
            return true;
    }
    /* AWS access key ids: AKIA or ASIA and 16 capitals or digits. */
    if (len >= 20 && (starts_with(s, len, "AKIA") || starts_with(s, len, "ASIA"))) {
        size_t k = 4;
        while (k < 20 && (isupper((unsigned char)s[k]) || isdigit((unsigned char)s[k])))
            k++;
        if (k == 20)
            return true;
    }
    /* JWT: eyJ<base64url>.<base64url>[.<base64url>] */
    if (starts_with(s, len, "eyJ")) {
        size_t a = token_run(s, len);
        if (a >= 10 && a < len && s[a] == '.' && token_run(s + a + 1, len - a - 1) >= 4)
            return true;
    }
    return false;
}

bool redact_value_looks_secret(const char *s, size_t len)
{
    if (contains_nocase(s, len, "PRIVATE KEY-----"))
        return true;
    for (size_t i = 0; i < len;) {
        if ((i == 0 || !isalnum((unsigned char)s[i - 1])) && prefixed_token(s + i, len - i))
            return true;
        if (!is_b64((unsigned char)s[i])) {
            i++;
            continue;
        }
        size_t j = i, hex = 0;
        bool digit = false, upper = false, lower = false, hexletter = false;
        while (j < len && is_b64((unsigned char)s[j])) {
            unsigned char c = (unsigned char)s[j];
            digit |= isdigit(c) != 0;
            upper |= isupper(c) != 0;
            lower |= islower(c) != 0;
            if (isxdigit(c)) {
                hex++;
                hexletter |= isalpha(c) != 0;
            }
            j++;
        }
        size_t run = j - i;
        if (run >= 20 && digit && upper && lower)
            return true;
        /* Hex digests and keys: the whole run is hex (or hex with - separators, as UUID-like
         * keys are), with letters and digits both. */
        if (run >= 20 && digit && hexletter && hex * 10 >= run * 9)
            return true;
        i = j;
    }
    return false;
}
