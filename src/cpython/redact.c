/* The redaction rule (see redact.h). Over-redacting an id that happens to look like a token is
 * the accepted cost of never writing a real one into a snapshot; identifiers as programs write
 * them (payload, user_id, HTTP2ConnectionHandler) stay readable. */
#include "redact.h"

#include <string.h>
#include <strings.h>

static const char *const sensitive_names[] = {
    "password", "passwd", "secret", "token", "key", "auth", "cookie", "session", "credential",
};

/* Names whose assigned value (name=value, name: value) inside a text is a secret. */
static const char *const assigned_names[] = {
    "password", "passwd", "secret", "token", "api_key", "apikey", "access_key", "private_key",
    "credential",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static bool contains_nocase(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (strncasecmp(s + i, needle, n) == 0)
            return true;
    return false;
}

static bool starts_with(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

static bool starts_with_nocase(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && strncasecmp(s, prefix, n) == 0;
}

bool redact_name_is_sensitive(const char *name, size_t len)
{
    for (size_t i = 0; i < NELEM(sensitive_names); i++)
        if (contains_nocase(name, len, sensitive_names[i]))
            return true;
    return false;
}

/* ASCII classes without <ctype.h>: no locale, no call per byte (this runs over every captured
 * string). */
static bool is_digit(unsigned char c) { return (unsigned)(c - '0') < 10u; }
static bool is_upper(unsigned char c) { return (unsigned)(c - 'A') < 26u; }
static bool is_lower(unsigned char c) { return (unsigned)(c - 'a') < 26u; }
static bool is_alpha(unsigned char c) { return is_upper(c) || is_lower(c); }
static bool is_xdigit(unsigned char c) { return is_digit(c) || (unsigned)((c | 0x20) - 'a') < 6u; }
static bool is_alnum(unsigned char c) { return is_digit(c) || is_alpha(c); }
static bool is_white(unsigned char c) { return c == ' ' || (unsigned)(c - '\t') < 5u; }
static bool in_set(unsigned char c, const char *set) { return c && strchr(set, c); }
static bool is_space(unsigned char c) { return c == ' ' || c == '\t'; }

/* Length of the run of token characters (letters, digits, - _) starting at s, up to max: every
 * scan from a position is bounded, so that the rule stays linear in the text. */
static size_t token_run(const char *s, size_t len, size_t max)
{
    size_t i = 0;
    if (len > max)
        len = max;
    while (i < len && (is_alnum((unsigned char)s[i]) || s[i] == '-' || s[i] == '_'))
        i++;
    return i;
}

/* Length of the run of RFC 7235 token68 characters (letters, digits, - . _ ~ + /, then =), up to
 * 1024: enough to decide. */
static size_t token68_run(const char *s, size_t len)
{
    size_t i = 0;
    if (len > 1024)
        len = 1024;
    while (i < len && (is_alnum((unsigned char)s[i]) || in_set((unsigned char)s[i], "-._~+/")))
        i++;
    while (i < len && s[i] == '=')
        i++;
    return i;
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
    for (size_t i = 0; i < NELEM(prefixes); i++) {
        size_t n = strlen(prefixes[i].prefix);
        if (starts_with(s, len, prefixes[i].prefix) &&
            token_run(s + n, len - n, prefixes[i].min_tail) >= prefixes[i].min_tail)
            return true;
    }
    /* AWS access key ids: AKIA or ASIA and 16 capitals or digits. */
    if (len >= 20 && (starts_with(s, len, "AKIA") || starts_with(s, len, "ASIA"))) {
        size_t k = 4;
        while (k < 20 && (is_upper((unsigned char)s[k]) || is_digit((unsigned char)s[k])))
            k++;
        if (k == 20)
            return true;
    }
    /* JWT: eyJ<base64url>.<base64url>[.<base64url>] */
    if (starts_with(s, len, "eyJ")) {
        size_t a = token_run(s, len, 1024); /* a JWT's header is short */
        if (a >= 10 && a < len && s[a] == '.' && token_run(s + a + 1, len - a - 1, 4) >= 4)
            return true;
    }
    return false;
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

/* HTTP Basic credentials: base64 (4+ characters) of user:password. */
static bool basic_credentials(const char *s, size_t len)
{
    unsigned acc = 0, bits = 0;
    size_t out = 0;
    bool colon = false;
    for (size_t i = 0; i < len && i < 1024; i++) {
        int v = b64_value((unsigned char)s[i]);
        if (v < 0)
            break;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            unsigned char c = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
            if (c == ':' && out > 0)
                colon = true;
            out++;
        }
    }
    return colon && out >= 3;
}

/* An HTTP authorization at s (a word start): "Authorization: x", "Bearer <token>",
 * "Basic <user:password in base64>". */
static bool http_credentials(const char *s, size_t len)
{
    size_t n = 0;
    if (starts_with_nocase(s, len, "authorization"))
        n = strlen("authorization");
    if (n) {
        while (n < len && is_space((unsigned char)s[n]))
            n++;
        if (n < len && (s[n] == ':' || s[n] == '=')) {
            n++;
            while (n < len && (is_space((unsigned char)s[n]) || s[n] == '"' || s[n] == '\''))
                n++;
            size_t v = 0;
            while (v < 4 && n + v < len && !is_white((unsigned char)s[n + v]) && s[n + v] != '"' &&
                   s[n + v] != '\'')
                v++;
            if (v >= 4)
                return true;
        }
        return false;
    }
    bool bearer = starts_with_nocase(s, len, "bearer"), basic = starts_with_nocase(s, len, "basic");
    if (!bearer && !basic)
        return false;
    n = bearer ? 6 : 5;
    if (n >= len || !is_space((unsigned char)s[n]))
        return false;
    while (n < len && is_space((unsigned char)s[n]))
        n++;
    size_t t = token68_run(s + n, len - n);
    if (basic)
        return t >= 4 && basic_credentials(s + n, t);
    if (t < 8)
        return false;
    for (size_t i = 0; i < t; i++)
        if (!is_lower((unsigned char)s[n + i]))
            return true;
    return false; /* "bearer instruments": a word, not a token */
}

/* scheme://user:password@host: at s, just past "://". */
static bool url_password(const char *s, size_t len)
{
    size_t end = 0, at = 0;
    bool has_at = false;
    if (len > 1024)
        len = 1024; /* an authority longer than that is no host name */
    while (end < len && s[end] && !in_set((unsigned char)s[end], "/?#\"'<> \t\r\n"))
        end++;
    for (size_t i = 0; i < end; i++)
        if (s[i] == '@') {
            at = i;
            has_at = true;
        }
    if (!has_at)
        return false;
    const char *colon = memchr(s, ':', at);
    return colon && (size_t)(colon - s) + 1 < at;
}

/* name=value or name: value at s[j] (the = or :), the name being secret-sounding. */
static bool secret_assignment(const char *s, size_t len, size_t j)
{
    size_t b = j;
    while (b > 0 && is_space((unsigned char)s[b - 1]))
        b--;
    if (b > 0 && (s[b - 1] == '"' || s[b - 1] == '\''))
        b--; /* "password": "..." */
    size_t e = b;
    while (b > 0 && (is_alnum((unsigned char)s[b - 1]) || in_set((unsigned char)s[b - 1], "_-.")))
        b--;
    if (b == e)
        return false;
    bool named = false;
    for (size_t i = 0; i < NELEM(assigned_names) && !named; i++)
        named = contains_nocase(s + b, e - b, assigned_names[i]);
    if (!named)
        return false;
    size_t k = j + 1;
    if (k < len && s[k] == '/')
        return false; /* a URL's scheme (token://...): url_password decides */
    while (k < len && is_space((unsigned char)s[k]))
        k++;
    size_t v = 0;
    if (k < len && (s[k] == '"' || s[k] == '\'')) { /* a quoted value: up to the same quote */
        char q = s[k++];
        while (v < 4 && k + v < len && s[k + v] != q)
            v++;
    } else {
        while (v < 4 && k + v < len && !is_white((unsigned char)s[k + v]) &&
               !in_set((unsigned char)s[k + v], "\"',;&"))
            v++;
    }
    return v >= 4;
}

/* The class of a base64 character: 0 capital, 1 small letter, 2 digit, 3 + / = _ -; -1 for
 * any other byte (it ends a run). */
static int b64_class(unsigned char c)
{
    if (is_upper(c))
        return 0;
    if (is_lower(c))
        return 1;
    if (is_digit(c))
        return 2;
    return c == '+' || c == '/' || c == '=' || c == '_' || c == '-' ? 3 : -1;
}

bool redact_text_is_secret(const char *s, size_t len)
{
    /* One pass looks for the shapes that start at a given character; each check is entered only
     * on the characters that can start it (this runs over every captured string). */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        bool word_start = i == 0 || !is_alnum((unsigned char)s[i - 1]);
        switch (c) {
        case 's': /* sk-, sk_live_ */
        case 'r': /* rk_live_ */
        case 'g': /* ghp_, github_pat_, ... */
        case 'x': /* xoxb-, ... */
        case 'A': /* AKIA, ASIA */
        case 'e': /* eyJ (JWT) */
            if (word_start && prefixed_token(s + i, len - i))
                return true;
            break;
        default:
            break;
        }
        switch (c | 0x20) {
        case 'a': /* Authorization */
        case 'b': /* Bearer, Basic */
            if (word_start && http_credentials(s + i, len - i))
                return true;
            break;
        case 'p':
            if (starts_with_nocase(s + i, len - i, "PRIVATE KEY-----"))
                return true;
            break;
        default:
            break;
        }
        if (c == ':' && i + 2 < len && s[i + 1] == '/' && s[i + 2] == '/' && i > 0 &&
            is_alnum((unsigned char)s[i - 1]) && url_password(s + i + 3, len - i - 3))
            return true;
        if ((c == '=' || c == ':') && secret_assignment(s, len, i))
            return true;
    }
    for (size_t i = 0; i < len;) {
        int prev = b64_class((unsigned char)s[i]);
        if (prev < 0) {
            i++;
            continue;
        }
        size_t j = i, hex = 0, changes = 0;
        bool digit = false, upper = false, lower = false, hexletter = false;
        for (int k = prev; j < len && (k = b64_class((unsigned char)s[j])) >= 0; j++) {
            unsigned char c = (unsigned char)s[j];
            digit |= k == 2;
            upper |= k == 0;
            lower |= k == 1;
            if (is_xdigit(c)) {
                hex++;
                hexletter |= k < 2;
            }
            changes += k != prev;
            prev = k;
        }
        size_t run = j - i;
        /* Random base64: mixed classes, changing often (about two pairs in three). */
        if (run >= 20 && digit && upper && lower && changes * 3 >= run)
            return true;
        /* Hex digests and keys: the whole run is hex (or hex with - separators, as UUID-like
         * keys are), with letters and digits both. */
        if (run >= 20 && digit && hexletter && hex * 10 >= run * 9)
            return true;
        i = j;
    }
    return false;
}

size_t redact_utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    /* Back over continuation bytes to the start of the character that would be cut: at most 3
     * in UTF-8. More is not UTF-8 at all: cut at max. */
    size_t n = max;
    for (int k = 0; k < 3 && n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80; k++)
        n--;
    return ((unsigned char)s[n] & 0xc0) == 0x80 ? max : n;
}
