/* The request side of `scry view --serve` without sockets (serve_http.c): the head parser, the
 * checks that decide what a request may reach (Host, path token, Origin, token header), and the
 * rule that decides whether a proposal may carry the key of scry's environment. Kept apart from
 * the server's sockets and threads so that a fuzz target (tests/fuzz/fuzz_serve.c) can drive it
 * with arbitrary bytes. */
#ifndef SCRY_HTTP_SERVE_HTTP_H
#define SCRY_HTTP_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define SERVE_HEAD_MAX 16384 /* bytes of a request's line and headers */
#define SERVE_BODY_MAX 65536 /* bytes of a POST body */

struct serve_request {
    char method[8];
    char target[512];
    char host[128], origin[128], token[128], type[128];
    long length;     /* Content-Length; -1 when none was given */
    bool chunked;    /* a Transfer-Encoding was given (refused for a POST) */
    size_t head_len; /* bytes of the head, the blank line included */
};

/* What the page's server accepts: its token and the Host and Origin values of 127.0.0.1:PORT
 * and localhost:PORT. */
struct serve_site {
    const char *token;
    const char *hosts[2];
    const char *origins[2];
};

enum serve_route { SERVE_ROUTE_PAGE, SERVE_ROUTE_PAGE_HEAD, SERVE_ROUTE_PROPOSE };

/* Parses the head at the start of buf[0..n): 0 when it is whole and well formed (rq filled),
 * 1 when more bytes are needed, else the HTTP status to answer with (400: malformed, a NUL or
 * control byte, a bad Content-Length; 411: a POST without a length; 413: a body over
 * SERVE_BODY_MAX; 431: no end of head within SERVE_HEAD_MAX). */
int serve_parse_head(const char *buf, size_t n, struct serve_request *rq);

/* Bytes the whole request takes (head, and for a POST its body) once the head is parsed. */
size_t serve_request_size(const struct serve_request *rq);

/* What a parsed request reaches: 0 with *route set, else the status to answer (403 wrong Host,
 * token or, for a proposal, Origin, token header or content type; 404; 405) with *msg. */
int serve_route(const struct serve_site *site, const struct serve_request *rq,
                enum serve_route *route, const char **msg);

/* The provider settings given on scry's command line (`view --serve --provider ...`). */
struct serve_llm {
    const char *provider; /* NULL: any provider, each at its own endpoint */
    const char *base_url, *model, *deployment, *api_version, *region, *key_env;
};

/* A proposal request of the page, with the command line's settings filled in. Its strings
 * point into the parsed JSON document (or into the serve_llm). */
struct serve_ask {
    const char *file, *function, *provider, *model, *base_url, *deployment, *api_version;
    const char *region, *key_env, *key;
    long first, last; /* 0, 0: the function (or the hottest one) */
    /* Whether the key (or the AWS credentials) of scry's environment may go with the request:
     * only to the provider and base URL of the command line, or to a provider's own endpoint
     * when the command line named none. A base URL from the page gets only a key typed there. */
    bool env_key;
};

/* Two base URLs name the same endpoint: equal but for trailing slashes. */
bool serve_same_base(const char *a, const char *b);

/* Reads a proposal request {file, first_line?, last_line?, function?, provider?, model?,
 * base_url?, key?, deployment?, api_version?, region?} against the command line's settings:
 * 0, or -1 with msg (size bytes) saying what is wrong with it. */
int serve_read_ask(const json_t *in, const struct serve_llm *cl, struct serve_ask *a, char *msg,
                   size_t size);

#endif
