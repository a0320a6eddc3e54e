/* Fuzz target: arbitrary bytes as a request to `scry view --serve` (http/serve_http.h): the head
 * parser, the checks of what a request may reach and the rule for the environment's key. Nothing
 * may crash or read past the bytes (they are copied into a buffer of exactly their size); the
 * same bytes give the same answer; a head is never taken as whole before its blank line; what
 * is parsed stays within its bounds; a request routed to a proposal carries the right Host,
 * Origin and token; and a proposal naming a base URL of its own never gets the environment's
 * key. The input is also read as a proposal's JSON body on its own.
 * fuzz-links: src/http/serve_http.c */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/serve_http.h"

#define TOKEN "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct serve_site site = {TOKEN,
                                       {"127.0.0.1:8123", "localhost:8123"},
                                       {"http://127.0.0.1:8123", "http://localhost:8123"}};

static bool bounded(const char *s, size_t size)
{
    return memchr(s, 0, size) != NULL;
}

/* The body as a proposal, against a command line without a provider and one with openai at a
 * base URL of its own. */
static void check_ask(const char *body, size_t len)
{
    json_t *in = json_loadb(body, len, 0, NULL);
    if (!in)
        return;
    static const struct serve_llm cls[] = {
        {0},
        {"openai", "http://127.0.0.1:9000/v1", "m", NULL, NULL, NULL, "MY_KEY"},
    };
    for (size_t i = 0; i < sizeof(cls) / sizeof(cls[0]); i++) {
        struct serve_ask a;
        char msg[256];
        if (serve_read_ask(in, &cls[i], &a, msg, sizeof(msg)) != 0) {
            if (!bounded(msg, sizeof(msg)))
                abort();
            continue;
        }
        if (!a.file || !a.provider || (a.first && (a.first < 1 || a.last < a.first)))
            abort();
        const char *page_base = json_string_value(json_object_get(in, "base_url"));
        bool page_named = page_base && *page_base;
        /* The environment's key never goes to a base URL the page named unless the command line
         * named the same one for the same provider. */
        if (a.env_key && page_named &&
            !(cls[i].provider && strcmp(a.provider, cls[i].provider) == 0 && cls[i].base_url &&
              serve_same_base(page_base, cls[i].base_url)))
            abort();
        if (!a.env_key && a.key_env)
            abort(); /* --api-key-env names the command line's provider's variable only */
    }
    json_decref(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    struct serve_request rq, again;
    int st = serve_parse_head(buf, size, &rq);
    if (serve_parse_head(buf, size, &again) != st || (st == 0 && memcmp(&rq, &again, sizeof(rq))))
        abort();
    if (st != 0 && st != 1 && st != 400 && st != 411 && st != 413 && st != 431)
        abort();
    if (st == 1 && size >= SERVE_HEAD_MAX)
        abort(); /* a head that long is refused, not waited for */
    if (st == 0) {
        if (rq.head_len < 4 || rq.head_len > size || rq.head_len > SERVE_HEAD_MAX ||
            memcmp(buf + rq.head_len - 4, "\r\n\r\n", 4) != 0)
            abort();
        if (serve_parse_head(buf, rq.head_len - 1, &again) == 0)
            abort(); /* whole before its blank line */
        if (!bounded(rq.method, sizeof(rq.method)) || !bounded(rq.target, sizeof(rq.target)) ||
            !bounded(rq.host, sizeof(rq.host)) || !bounded(rq.origin, sizeof(rq.origin)) ||
            !bounded(rq.token, sizeof(rq.token)) || !bounded(rq.type, sizeof(rq.type)))
            abort();
        if (serve_request_size(&rq) > (size_t)SERVE_HEAD_MAX + SERVE_BODY_MAX)
            abort();
        enum serve_route route;
        const char *msg = NULL;
        int rs = serve_route(&site, &rq, &route, &msg);
        if (rs != 0 && (!msg || (rs != 403 && rs != 404 && rs != 405)))
            abort();
        if (rs == 0 && strcmp(rq.host, site.hosts[0]) != 0 && strcmp(rq.host, site.hosts[1]) != 0)
            abort();
        if (rs == 0 && strncmp(rq.target, "/" TOKEN, 65) != 0)
            abort();
        if (rs == 0 && route == SERVE_ROUTE_PROPOSE) {
            if (strcmp(rq.token, TOKEN) != 0 || strcmp(rq.method, "POST") != 0 ||
                (strcmp(rq.origin, site.origins[0]) != 0 &&
                 strcmp(rq.origin, site.origins[1]) != 0))
                abort();
            size_t have = size - rq.head_len;
            check_ask(buf + rq.head_len, have < (size_t)rq.length ? have : (size_t)rq.length);
        }
    }
    check_ask(buf, size);
    free(buf);
    return 0;
}
