/* The request side of `scry view --serve` (see serve_http.h): parsing a request head from bytes
 * a client chose, deciding what it may reach, and deciding whether a proposal may carry the key
 * of scry's environment. Nothing here touches a socket, so the fuzz target drives all of it. */
#include "http/serve_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Constant time, so that the token cannot be found a byte at a time. */
static bool same_secret(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    unsigned char d = n != m;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i < m ? i : 0]);
    return d == 0 && m > 0;
}

/* A header's value, its surrounding blanks cut, into dst (cut to size - 1 bytes: no accepted
 * value is that long, so a cut one matches nothing). */
static void copy_value(char *dst, size_t size, const char *v, size_t n)
{
    while (n && (*v == ' ' || *v == '\t')) {
        v++;
        n--;
    }
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    snprintf(dst, size, "%.*s", (int)(n < size ? n : size - 1), v);
}

static bool is_name(const char *p, size_t n, const char *name)
{
    return n == strlen(name) && strncasecmp(p, name, n) == 0;
}

/* One header line p[0..n): 0 or 400. */
static int header(struct serve_request *rq, const char *p, size_t n)
{
    const char *colon = memchr(p, ':', n);
    if (!colon || colon == p)
        return 400;
    size_t k = (size_t)(colon - p), vn = n - k - 1;
    const char *v = colon + 1;
    struct {
        const char *name;
        char *dst;
    } want[] = {{"host", rq->host},
                {"origin", rq->origin},
                {"x-scry-token", rq->token},
                {"content-type", rq->type}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (is_name(p, k, want[i].name))
            copy_value(want[i].dst, 128, v, vn);
    if (is_name(p, k, "content-length")) {
        char num[16];
        copy_value(num, sizeof(num), v, vn);
        /* Digits only, at most 9 of them, and one Content-Length (a second could disagree). */
        if (!*num || strspn(num, "0123456789") != strlen(num) || strlen(num) > 9 ||
            rq->length >= 0)
            return 400;
        rq->length = atol(num);
    }
    if (is_name(p, k, "transfer-encoding"))
        rq->chunked = true;
    return 0;
}

int serve_parse_head(const char *buf, size_t n, struct serve_request *rq)
{
    memset(rq, 0, sizeof(*rq));
    rq->length = -1;
    const char *end = n >= 4 ? memmem(buf, n, "\r\n\r\n", 4) : NULL;
    if (!end)
        return n >= SERVE_HEAD_MAX ? 431 : 1;
    rq->head_len = (size_t)(end - buf) + 4;
    if (rq->head_len > SERVE_HEAD_MAX)
        return 431;
    /* Bytes that no header may hold: a NUL would end a copied value early ("Host: 127.0.0.1:P\0x"
     * read as the right host), a bare CR or other control byte could split a line. */
    for (const char *p = buf; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f ||
            (c == '\r' && p[1] != '\n') || (c == '\n' && (p == buf || p[-1] != '\r')))
            return 400;
    }
    const char *line = buf, *eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
    char first[600], version[16];
    if ((size_t)(eol - line) >= sizeof(first))
        return 400;
    snprintf(first, sizeof(first), "%.*s", (int)(eol - line), line);
    char extra;
    if (sscanf(first, "%7s %511s %15s %c", rq->method, rq->target, version, &extra) != 3 ||
        strncmp(version, "HTTP/1.", 7) != 0)
        return 400;
    while (eol < end) {
        line = eol + 2;
        eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
        if (header(rq, line, (size_t)(eol - line)) != 0)
            return 400;
    }
    if (strcmp(rq->method, "POST") != 0)
        return 0;
    if (rq->chunked || rq->length < 0)
        return 411;
    if (rq->length > SERVE_BODY_MAX)
        return 413;
    return 0;
}

size_t serve_request_size(const struct serve_request *rq)
{
    bool body = strcmp(rq->method, "POST") == 0 && rq->length > 0;
    return rq->head_len + (body ? (size_t)rq->length : 0);
}

static bool one_of(const char *s, const char *const v[2])
{
    return (v[0] && strcmp(s, v[0]) == 0) || (v[1] && strcmp(s, v[1]) == 0);
}

int serve_route(const struct serve_site *site, const struct serve_request *rq,
                enum serve_route *route, const char **msg)
{
    if (!one_of(rq->host, site->hosts)) {
        *msg = "forbidden: wrong Host\n"; /* DNS rebinding: a page of another name */
        return 403;
    }
    /* The path: /TOKEN/ (the page) or /TOKEN/propose. */
    const char *t = rq->target + 1, *rest = strchr(t, '/');
    char tok[sizeof(rq->target)];
    snprintf(tok, sizeof(tok), "%.*s", rest ? (int)(rest - t) : (int)strlen(t), t);
    if (rq->target[0] != '/' || !same_secret(tok, site->token)) {
        *msg = "forbidden\n";
        return 403;
    }
    rest = rest ? rest : "/";
    bool get = strcmp(rq->method, "GET") == 0, head = strcmp(rq->method, "HEAD") == 0;
    *msg = "method not allowed\n";
    if (strcmp(rest, "/") == 0) {
        *route = head ? SERVE_ROUTE_PAGE_HEAD : SERVE_ROUTE_PAGE;
        return get || head ? 0 : 405;
    }
    if (strcmp(rest, "/propose") != 0) {
        *msg = "not found\n";
        return 404;
    }
    if (strcmp(rq->method, "POST") != 0)
        return 405;
    if (!one_of(rq->origin, site->origins) || !same_secret(rq->token, site->token) ||
        strncmp(rq->type, "application/json", 16) != 0) {
        *msg = "forbidden: a proposal comes from the page only\n";
        return 403;
    }
    *route = SERVE_ROUTE_PROPOSE;
    return 0;
}

static const char *str_field(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s && *s ? s : NULL;
}

bool serve_same_base(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    while (n && a[n - 1] == '/')
        n--;
    while (m && b[m - 1] == '/')
        m--;
    return n == m && strncmp(a, b, n) == 0;
}

int serve_read_ask(const json_t *in, const struct serve_llm *cl, struct serve_ask *a, char *msg,
                   size_t size)
{
    memset(a, 0, sizeof(*a));
    if (!json_is_object(in)) {
        snprintf(msg, size, "the request is not a JSON object");
        return -1;
    }
    a->key = str_field(in, "key");
    a->file = str_field(in, "file");
    a->function = str_field(in, "function");
    json_int_t first = json_integer_value(json_object_get(in, "first_line"));
    json_int_t last = json_integer_value(json_object_get(in, "last_line"));
    if (!a->file) {
        snprintf(msg, size, "the request names no file");
        return -1;
    }
    if (first || last) {
        if (first < 1 || last < first || last > 10000000) {
            snprintf(msg, size, "the lines %lld-%lld are not a region", (long long)first,
                     (long long)last);
            return -1;
        }
        a->first = (long)first;
        a->last = (long)last;
        a->function = NULL;
    }
    a->provider = str_field(in, "provider");
    if (!a->provider)
        a->provider = cl->provider;
    if (!a->provider) {
        snprintf(msg, size, "the request names no provider");
        return -1;
    }
    a->model = str_field(in, "model");
    a->base_url = str_field(in, "base_url");
    a->deployment = str_field(in, "deployment");
    a->api_version = str_field(in, "api_version");
    a->region = str_field(in, "region");
    bool mine = cl->provider && strcmp(a->provider, cl->provider) == 0;
    if (mine) {
        /* The command line's settings are the defaults of its provider. */
        a->model = a->model ? a->model : cl->model;
        a->deployment = a->deployment ? a->deployment : cl->deployment;
        a->api_version = a->api_version ? a->api_version : cl->api_version;
        a->region = a->region ? a->region : cl->region;
    }
    /* The environment's key goes where the command line says, and nowhere a page names: the
     * command line's base URL for its provider, else a provider's own endpoint. */
    if (!a->base_url)
        a->env_key = mine || !cl->provider;
    else
        a->env_key = mine && cl->base_url && serve_same_base(a->base_url, cl->base_url);
    if (mine && !a->base_url)
        a->base_url = cl->base_url;
    if (a->env_key && mine)
        a->key_env = cl->key_env;
    return 0;
}
