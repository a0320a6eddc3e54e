/* `scry view --serve`: the browser view served from 127.0.0.1, so that its "propose" action can
 * ask scry for optimisation proposals (docs/optimize.md) without a key ever living in a file.
 * A minimal HTTP/1.1 server, one request at a time: everything lives under a path made of 32
 * random bytes (hex) that only the printed URL knows; a request without it gets 403, as does one
 * whose Host is not 127.0.0.1:PORT or localhost:PORT (DNS rebinding) and a POST whose Origin is
 * not the page's own or that lacks the token header. Requests and bodies are small and bounded;
 * a slow client is dropped after a few seconds. Ctrl-C ends it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/llm_providers.h"
#include "cli/optimize_prompt.h"
#include "common/error.h"
#include "common/sanitize.h"
#include "render/profile_html.h"

#define SERVE_HEAD_MAX 16384
#define SERVE_BODY_MAX 65536
#define SERVE_READ_MS 5000

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
    (void)sig;
    stop_requested = 1;
}

struct server {
    int fd;
    unsigned port;
    char token[65];
    char host_ip[32], host_name[32];     /* the Host values accepted */
    char origin_ip[48], origin_name[48]; /* the Origin values accepted */
    struct strbuf page;
    const json_t *profile;
};

struct request {
    char method[8];
    char target[512];
    char host[128], origin[128], token[128], type[128];
    long length;
    bool chunked;
    char *body;
};

/* Constant time, so that the token cannot be found a byte at a time. */
static bool same_secret(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    unsigned char d = n != m;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i < m ? i : 0]);
    return d == 0;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void respond(int fd, int status, const char *type, const char *body, size_t len)
{
    const char *reason = status == 200   ? "OK"
                         : status == 400 ? "Bad Request"
                         : status == 403 ? "Forbidden"
                         : status == 404 ? "Not Found"
                         : status == 405 ? "Method Not Allowed"
                         : status == 411 ? "Length Required"
                         : status == 413 ? "Payload Too Large"
                         : status == 431 ? "Request Header Fields Too Large"
                                         : "Bad Gateway";
    struct strbuf h = STRBUF_INIT;
    sb_addf(&h,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
            "Referrer-Policy: no-referrer\r\nX-Frame-Options: DENY\r\n"
            "Cross-Origin-Resource-Policy: same-origin\r\nConnection: close\r\n\r\n",
            status, reason, type, len);
    send_all(fd, sb_str(&h), h.len);
    send_all(fd, body, len);
    sb_release(&h);
}

static void respond_text(int fd, int status, const char *msg)
{
    respond(fd, status, "text/plain; charset=utf-8", msg, strlen(msg));
}

/* {"error": {"code", "message", "hint"}} from the error just recorded, the key cut out. */
static void respond_error(int fd, int status, const char *key)
{
    struct strbuf msg = STRBUF_INIT;
    sb_adds(&msg, err_last_message());
    llm_scrub(&msg, key);
    json_t *doc = json_pack("{s:{s:s,s:s%,s:s}}", "error", "code",
                            err_code_name(err_last_code()), "message", sb_str(&msg), msg.len,
                            "hint", err_last_hint());
    char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (s)
        respond(fd, status, "application/json", s, strlen(s));
    else
        respond_text(fd, 500, "out of memory");
    free(s);
    json_decref(doc);
    sb_release(&msg);
}

/* Reads until the end of the headers and then the body, within SERVE_READ_MS for each read;
 * 0, or the status to answer with (-1: drop the connection). */
static int read_request(int fd, struct request *rq, char *buf, size_t *have)
{
    size_t n = 0;
    char *end = NULL;
    while (!end) {
        if (n == SERVE_HEAD_MAX)
            return 431;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, SERVE_READ_MS) <= 0)
            return -1;
        ssize_t r = recv(fd, buf + n, SERVE_HEAD_MAX - n, 0);
        if (r <= 0)
            return -1;
        n += (size_t)r;
        buf[n] = 0;
        end = strstr(buf, "\r\n\r\n");
    }
    *end = 0;
    char *line = buf, *next = strstr(line, "\r\n");
    if (next)
        *next = 0;
    char version[16];
    if (sscanf(line, "%7s %511s %15s", rq->method, rq->target, version) != 3 ||
        strncmp(version, "HTTP/1.", 7) != 0)
        return 400;
    while (next) {
        line = next + 2;
        next = strstr(line, "\r\n");
        if (next)
            *next = 0;
        char *colon = strchr(line, ':');
        if (!colon)
            return 400;
        *colon = 0;
        char *v = colon + 1 + strspn(colon + 1, " \t");
        struct {
            const char *name;
            char *dst;
        } want[] = {{"host", rq->host},
                    {"origin", rq->origin},
                    {"x-scry-token", rq->token},
                    {"content-type", rq->type}};
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
            if (strcasecmp(line, want[i].name) == 0)
                snprintf(want[i].dst, 128, "%s", v);
        if (strcasecmp(line, "content-length") == 0)
            rq->length = strspn(v, "0123456789") == strlen(v) && strlen(v) < 10 ? atol(v) : -2;
        if (strcasecmp(line, "transfer-encoding") == 0)
            rq->chunked = true;
    }
    if (rq->length == -2)
        return 400;
    if (strcmp(rq->method, "POST") != 0)
        return 0;
    if (rq->chunked || rq->length < 0)
        return 411;
    if (rq->length > SERVE_BODY_MAX)
        return 413;
    size_t head = (size_t)(end + 4 - buf);
    size_t got = n - head;
    rq->body = calloc(1, (size_t)rq->length + 1);
    if (!rq->body)
        return 413;
    memcpy(rq->body, end + 4, got < (size_t)rq->length ? got : (size_t)rq->length);
    while (got < (size_t)rq->length) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, SERVE_READ_MS) <= 0)
            return -1;
        ssize_t r = recv(fd, rq->body + got, (size_t)rq->length - got, 0);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    *have = got;
    return 0;
}

static const char *str_field(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s && *s ? s : NULL;
}

/* POST {file, first_line?, last_line?, function?, provider, model?, base_url?, key?,
 * deployment?, api_version?, region?}: the proposal's JSON, or an error document. */
static void propose(struct server *sv, int fd, const char *body, size_t len)
{
    json_t *in = json_loadb(body, len, 0, NULL);
    struct opt_result res = {0};
    struct opt_request req = {0};
    struct llm_config cfg = {0};
    const char *key = NULL;
    int err = 0;
    if (!json_is_object(in)) {
        err = cli_usage("the request is not a JSON object");
        goto out;
    }
    key = str_field(in, "key");
    req.file = str_field(in, "file");
    req.function = str_field(in, "function");
    json_int_t first = json_integer_value(json_object_get(in, "first_line"));
    json_int_t last = json_integer_value(json_object_get(in, "last_line"));
    if (!req.file) {
        err = cli_usage("the request names no file");
        goto out;
    }
    if (first || last) {
        if (first < 1 || last < first || last > 10000000) {
            err = cli_usage("the lines %lld-%lld are not a region", (long long)first,
                            (long long)last);
            goto out;
        }
        req.first = (long)first;
        req.last = (long)last;
        req.function = NULL;
    }
    if (!(cfg.provider = llm_find(str_field(in, "provider")))) {
        err = cli_usage("unknown provider (%s)", llm_names());
        goto out;
    }
    cfg.model = str_field(in, "model");
    cfg.base_url = str_field(in, "base_url");
    cfg.deployment = str_field(in, "deployment");
    cfg.api_version = str_field(in, "api_version");
    cfg.region = str_field(in, "region");
    cfg.key = key;
    if (key && !llm_takes_key(cfg.provider)) {
        err = cli_usage("bedrock signs with the AWS variables of scry's environment "
                        "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); it takes no typed key");
        goto out;
    }
    err = opt_propose(sv->profile, &req, &cfg, &res);
    if (!err) {
        json_t *doc = opt_result_json(&res);
        char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        if (s)
            respond(fd, 200, "application/json", s, strlen(s));
        else
            respond_text(fd, 500, "out of memory");
        free(s);
        json_decref(doc);
        fprintf(stderr, "scry: proposal of %s for %s:%ld-%ld\n", san_str(res.provider),
                san_str(res.file), res.first, res.last);
    }
out:
    if (err) {
        enum scry_err code = err_last_code();
        respond_error(fd, code == SCRY_E_USAGE || code == SCRY_E_NO_API_KEY ? 400 : 502, key);
        fprintf(stderr, "scry: a proposal failed [%s]\n", err_code_name(code));
    }
    /* The typed key's copy in the parsed request is wiped before it is freed. */
    if (key)
        memset((char *)key, 0, strlen(key));
    opt_result_free(&res);
    json_decref(in);
}

static void serve_one(struct server *sv, int fd)
{
    static char buf[SERVE_HEAD_MAX + 1];
    struct request rq = {.length = -1};
    size_t have = 0;
    int st = read_request(fd, &rq, buf, &have);
    if (st < 0)
        goto out;
    if (st) {
        respond_text(fd, st, "bad request\n");
        goto out;
    }
    if (strcmp(rq.host, sv->host_ip) != 0 && strcmp(rq.host, sv->host_name) != 0) {
        respond_text(fd, 403, "forbidden: wrong Host\n");
        goto out;
    }
    /* The path: /TOKEN/ (the page) or /TOKEN/propose. */
    char *t = rq.target + 1, *rest = strchr(t, '/');
    char tok[sizeof(rq.target)];
    snprintf(tok, sizeof(tok), "%.*s", rest ? (int)(rest - t) : (int)strlen(t), t);
    if (rq.target[0] != '/' || !same_secret(tok, sv->token)) {
        respond_text(fd, 403, "forbidden\n");
        goto out;
    }
    rest = rest ? rest : "/";
    if (strcmp(rest, "/") == 0) {
        if (strcmp(rq.method, "GET") != 0 && strcmp(rq.method, "HEAD") != 0)
            respond_text(fd, 405, "method not allowed\n");
        else
            respond(fd, 200, "text/html; charset=utf-8", sb_str(&sv->page),
                    strcmp(rq.method, "HEAD") == 0 ? 0 : sv->page.len);
        goto out;
    }
    if (strcmp(rest, "/propose") != 0) {
        respond_text(fd, 404, "not found\n");
        goto out;
    }
    if (strcmp(rq.method, "POST") != 0) {
        respond_text(fd, 405, "method not allowed\n");
        goto out;
    }
    if ((strcmp(rq.origin, sv->origin_ip) != 0 && strcmp(rq.origin, sv->origin_name) != 0) ||
        !same_secret(rq.token, sv->token) || strncmp(rq.type, "application/json", 16) != 0) {
        respond_text(fd, 403, "forbidden: a proposal comes from the page only\n");
        goto out;
    }
    propose(sv, fd, rq.body, have);
out:
    if (rq.body) {
        memset(rq.body, 0, (size_t)(rq.length > 0 ? rq.length : 0));
        free(rq.body);
    }
    memset(buf, 0, sizeof(buf));
}

static int listen_local(struct server *sv, unsigned port)
{
    sv->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sv->fd < 0)
        return err_fail(SCRY_E_IO, "cannot make a socket: %s", strerror(errno));
    int one = 1;
    setsockopt(sv->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof(a);
    if (bind(sv->fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(sv->fd, 8) != 0 ||
        getsockname(sv->fd, (struct sockaddr *)&a, &alen) != 0)
        return err_fail_hint(SCRY_E_IO, "pick another port with --port, or none for any free one",
                             "cannot listen on 127.0.0.1:%u: %s", port, strerror(errno));
    sv->port = ntohs(a.sin_port);
    return 0;
}

int cli_view_serve(const char *path, const char *data, size_t len, double threshold,
                   unsigned port)
{
    struct server sv = {.fd = -1, .page = STRBUF_INIT};
    unsigned char rnd[32];
    json_t *profile = NULL;
    int err = 0;
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return err_fail(SCRY_E_INTERNAL, "no random bytes for the page's token: %s",
                        strerror(errno));
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(sv.token + 2 * i, 3, "%02x", rnd[i]);
    struct profile_html_opts ho = {.threshold = threshold, .scry_version = SCRY_VERSION,
                                   .serve_token = sv.token};
    if ((err = profile_html_render_bytes(&profile_html_web_assets, data, len, path, &ho,
                                         &sv.page)))
        goto out;
    profile = json_loadb(data, len, 0, NULL);
    sv.profile = profile;
    if (!profile) {
        err = err_fail(SCRY_E_BAD_PROFILE, "%s is not JSON", path);
        goto out;
    }
    if ((err = listen_local(&sv, port)))
        goto out;
    snprintf(sv.host_ip, sizeof(sv.host_ip), "127.0.0.1:%u", sv.port);
    snprintf(sv.host_name, sizeof(sv.host_name), "localhost:%u", sv.port);
    snprintf(sv.origin_ip, sizeof(sv.origin_ip), "http://127.0.0.1:%u", sv.port);
    snprintf(sv.origin_name, sizeof(sv.origin_name), "http://localhost:%u", sv.port);

    struct sigaction sa = {.sa_handler = on_stop}; /* no SA_RESTART: accept returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    char url[160];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/%s/", sv.port, sv.token);
    printf("%s\n", url);
    fflush(stdout);
    const char *why;
    if (cli_page_open(url, &why))
        fprintf(stderr, "scry: opened the page in the browser; Ctrl-C stops the server\n");
    else
        fprintf(stderr, "scry: serving the profile on 127.0.0.1:%u only; open the URL above "
                        "in a browser on this machine (%s); Ctrl-C stops the server\n",
                sv.port, why);
    while (!stop_requested) {
        int c = accept4(sv.fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE)
                continue;
            err = err_fail(SCRY_E_IO, "the server stopped: %s", strerror(errno));
            break;
        }
        serve_one(&sv, c);
        close(c);
    }
    if (!err)
        fprintf(stderr, "scry: stopped serving\n");
out:
    if (sv.fd >= 0)
        close(sv.fd);
    json_decref(profile);
    sb_release(&sv.page);
    return err;
}
