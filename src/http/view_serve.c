/* `scry view --serve`: the browser view served from 127.0.0.1, so that its "propose" action can
 * ask scry for optimisation proposals (docs/optimize.md) without a key ever living in a file.
 * A small HTTP/1.1 server: everything lives under a path made of 32 random bytes (hex) that only
 * the printed URL knows; a request without it gets 403, as does one whose Host is not
 * 127.0.0.1:PORT or localhost:PORT (DNS rebinding) and a POST whose Origin is not the page's own
 * or that lacks the token header (serve_http.c decides). Each connection has a thread of its own
 * (up to SERVE_CONN_MAX at once, more are refused) and SERVE_REQUEST_MS for its whole request,
 * so a client that trickles bytes holds one slot for a few seconds and nobody else waits. The
 * browser is given a private file that redirects to the URL, never the URL itself: a command
 * line is readable by every user of the machine. Ctrl-C ends it. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cli/cli.h"
#include "common/error.h"
#include "common/sanitize.h"
#include "http/serve_http.h"
#include "llm/llm_providers.h"
#include "llm/optimize_prompt.h"
#include "platform/browser.h"
#include "platform/outfile.h"
#include "platform/random.h"
#include "render/profile_html.h"

#define SERVE_REQUEST_MS 3000 /* the whole request, head and body, from the connection's start */
#define SERVE_WRITE_MS 10000  /* the whole answer */
#define SERVE_CONN_MAX 32     /* connections served at once */

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
    struct serve_site site;
    const struct serve_llm *llm;
    struct strbuf page;
    const struct pdoc *profile;
    pthread_mutex_t lock; /* active */
    pthread_cond_t idle;  /* signalled when a connection ends */
    int active;
    pthread_mutex_t propose_lock; /* one proposal at a time: libcurl and the prompt builder */
};

struct conn {
    struct server *sv;
    int fd;
    long long start_ms;
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for ev or the deadline passes; false on the deadline or an error. */
static bool wait_fd(int fd, short ev, long long deadline)
{
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {fd, ev, 0};
        int r = poll(&p, 1, (int)left);
        if (r > 0)
            return true;
        if (r == 0 || errno != EINTR)
            return false;
    }
}

/* Sends everything before SERVE_WRITE_MS has passed: a client that does not read is dropped. */
static void send_all(int fd, const char *p, size_t n, long long deadline)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_fd(fd, POLLOUT, deadline))
                return;
            continue;
        }
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
                         : status == 408 ? "Request Timeout"
                         : status == 411 ? "Length Required"
                         : status == 413 ? "Payload Too Large"
                         : status == 431 ? "Request Header Fields Too Large"
                         : status == 503 ? "Service Unavailable"
                                         : "Bad Gateway";
    struct strbuf h = STRBUF_INIT;
    sb_addf(&h,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
            "Referrer-Policy: no-referrer\r\nX-Frame-Options: DENY\r\n"
            "Cross-Origin-Resource-Policy: same-origin\r\nConnection: close\r\n\r\n",
            status, reason, type, len);
    long long deadline = now_ms() + SERVE_WRITE_MS;
    send_all(fd, sb_str(&h), h.len, deadline);
    send_all(fd, body, len, deadline);
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

/* Reads the whole request (head, and a POST's body) into buf (SERVE_HEAD_MAX + SERVE_BODY_MAX
 * bytes) before SERVE_REQUEST_MS has passed since the connection came: 0, or the status to
 * answer with (408 when the time is up), or -1 to drop the connection (closed, or an error). */
static int read_request(struct conn *c, char *buf, struct serve_request *rq)
{
    long long deadline = c->start_ms + SERVE_REQUEST_MS;
    size_t n = 0, want = SERVE_HEAD_MAX;
    bool head = false;
    for (;;) {
        if (!head) {
            int st = serve_parse_head(buf, n, rq);
            if (st > 1)
                return st;
            if (st == 0) {
                head = true;
                want = serve_request_size(rq);
            }
        }
        if (head && n >= want)
            return 0;
        if (!wait_fd(c->fd, POLLIN, deadline))
            return now_ms() >= deadline ? 408 : -1;
        ssize_t r = recv(c->fd, buf + n, want - n, MSG_DONTWAIT);
        if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (r <= 0)
            return -1;
        n += (size_t)r;
    }
}

/* A proposal's settings from the page's request and the command line: 0, or a recorded usage
 * error. */
static int ask_config(const struct server *sv, const json_t *in, struct serve_ask *a,
                      struct opt_request *req, struct llm_config *cfg)
{
    char msg[256];
    if (serve_read_ask(in, sv->llm, a, msg, sizeof(msg)) != 0)
        return cli_usage("%s", msg);
    req->file = a->file;
    req->function = a->function;
    req->first = a->first;
    req->last = a->last;
    if (!(cfg->provider = llm_find(a->provider)))
        return cli_usage("unknown provider (%s)", llm_names());
    cfg->model = a->model;
    cfg->base_url = a->base_url;
    cfg->deployment = a->deployment;
    cfg->api_version = a->api_version;
    cfg->region = a->region;
    cfg->key_env = a->key_env;
    cfg->key = a->key;
    cfg->env_key_refused = !a->env_key;
    if (a->key && !llm_takes_key(cfg->provider))
        return cli_usage("bedrock signs with the AWS variables of scry's environment "
                         "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY); it takes no typed key");
    return 0;
}

/* POST {file, first_line?, last_line?, function?, provider, model?, base_url?, key?,
 * deployment?, api_version?, region?}: the proposal's JSON, or an error document. */
static void propose(struct server *sv, int fd, const char *body, size_t len)
{
    json_t *in = json_loadb(body, len, 0, NULL);
    struct opt_result res = {0};
    struct opt_request req = {0};
    struct llm_config cfg = {0};
    struct serve_ask a = {0};
    int err = ask_config(sv, in, &a, &req, &cfg);
    if (!err) {
        pthread_mutex_lock(&sv->propose_lock);
        err = opt_propose(sv->profile, &req, &cfg, &res);
        pthread_mutex_unlock(&sv->propose_lock);
    }
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
    } else {
        enum scry_err code = err_last_code();
        respond_error(fd, code == SCRY_E_USAGE || code == SCRY_E_NO_API_KEY ? 400 : 502, a.key);
        fprintf(stderr, "scry: a proposal failed [%s]\n", err_code_name(code));
    }
    /* The typed key's copy in the parsed request is wiped before it is freed. */
    if (a.key)
        memset((char *)a.key, 0, strlen(a.key));
    opt_result_free(&res);
    json_decref(in);
}

static void serve_one(struct conn *c)
{
    struct server *sv = c->sv;
    struct serve_request rq;
    char *buf = malloc(SERVE_HEAD_MAX + SERVE_BODY_MAX);
    if (!buf)
        return;
    int st = read_request(c, buf, &rq);
    if (st < 0)
        goto out;
    if (st) {
        respond_text(c->fd, st, st == 408 ? "request timeout\n" : "bad request\n");
        goto out;
    }
    enum serve_route route;
    const char *msg;
    if ((st = serve_route(&sv->site, &rq, &route, &msg)) != 0)
        respond_text(c->fd, st, msg);
    else if (route == SERVE_ROUTE_PROPOSE)
        propose(sv, c->fd, buf + rq.head_len, (size_t)rq.length);
    else
        respond(c->fd, 200, "text/html; charset=utf-8", sb_str(&sv->page),
                route == SERVE_ROUTE_PAGE_HEAD ? 0 : sv->page.len);
out:
    /* A request may hold a typed key. */
    memset(buf, 0, SERVE_HEAD_MAX + SERVE_BODY_MAX);
    free(buf);
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    struct server *sv = c->sv;
    serve_one(c);
    close(c->fd);
    free(c);
    pthread_mutex_lock(&sv->lock);
    sv->active--;
    pthread_cond_signal(&sv->idle);
    pthread_mutex_unlock(&sv->lock);
    return NULL;
}

/* A thread for the new connection fd, or a quick 503 when SERVE_CONN_MAX are open. */
static void serve_conn(struct server *sv, int fd)
{
    pthread_mutex_lock(&sv->lock);
    bool room = sv->active < SERVE_CONN_MAX;
    if (room)
        sv->active++;
    pthread_mutex_unlock(&sv->lock);
    struct conn *c = room ? malloc(sizeof(*c)) : NULL;
    pthread_attr_t at;
    pthread_t t;
    if (c) {
        *c = (struct conn){sv, fd, now_ms()};
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int e = pthread_create(&t, &at, conn_main, c);
        pthread_attr_destroy(&at);
        if (e == 0)
            return;
        free(c);
    }
    if (room) {
        pthread_mutex_lock(&sv->lock);
        sv->active--;
        pthread_mutex_unlock(&sv->lock);
    }
    static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                               "Connection: close\r\n\r\n";
    ssize_t w = send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)w;
    close(fd);
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
    if (bind(sv->fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(sv->fd, 64) != 0 ||
        getsockname(sv->fd, (struct sockaddr *)&a, &alen) != 0)
        return err_fail_hint(SCRY_E_IO, "pick another port with --port, or none for any free one",
                             "cannot listen on 127.0.0.1:%u: %s", port, strerror(errno));
    sv->port = ntohs(a.sin_port);
    return 0;
}

/* The file the browser is given: in a new directory of mode 0700 (mkdtemp), a 0600 page that
 * sends the browser on to the URL. Its path goes to file, the directory's to dir. */
static int write_opener(const char *url, char *dir, size_t dsize, char *file, size_t fsize)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    if ((size_t)snprintf(dir, dsize, "%s/scry-serve-XXXXXX", tmp) >= dsize || !mkdtemp(dir)) {
        int e = errno;
        *dir = 0;
        return err_fail_hint(SCRY_E_IO, "set TMPDIR to a directory of yours",
                             "cannot make a private directory in %s: %s", san_str(tmp),
                             strerror(e));
    }
    struct strbuf page = STRBUF_INIT;
    sb_addf(&page,
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            "<meta name=\"referrer\" content=\"no-referrer\">"
            "<meta http-equiv=\"refresh\" content=\"0;url=%s\"><title>scry</title></head>\n"
            "<body><a href=\"%s\">Open the profile served by scry</a></body></html>\n",
            url, url);
    int err = outfile_write_new(dir, "open-", ".html", sb_str(&page), page.len, file, fsize);
    memset(page.buf, 0, page.len);
    sb_release(&page);
    if (err) {
        rmdir(dir);
        *dir = 0;
    }
    return err;
}

static void remove_opener(const char *dir, const char *file)
{
    if (*file)
        unlink(file);
    if (*dir)
        rmdir(dir);
}

/* The browser launched for the page: reaped once it exits, whenever that is; a launcher that
 * failed is reported (the URL is on the terminal). */
static void reap_browser(pid_t *pid)
{
    int st;
    if (*pid <= 0 || waitpid(*pid, &st, WNOHANG) != *pid)
        return;
    *pid = -1;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr, "scry: the browser command failed; open the URL above in a browser on "
                        "this machine\n");
}

static bool has_display(void)
{
    const char *d = getenv("DISPLAY"), *w = getenv("WAYLAND_DISPLAY");
    return (d && *d) || (w && *w);
}

static void open_browser(struct server *sv, const char *file, pid_t *pid)
{
    const char *why = "there is no display here (DISPLAY and WAYLAND_DISPLAY are unset)";
    *pid = *file ? pf_browser_start(file, &why) : -1;
    if (!*file && has_display())
        why = "no page for a browser could be written in TMPDIR";
    if (*pid > 0)
        fprintf(stderr, "scry: opening the page in the browser; Ctrl-C stops the server\n");
    else
        fprintf(stderr, "scry: serving the profile on 127.0.0.1:%u only; open the URL above "
                        "in a browser on this machine (%s); Ctrl-C stops the server\n",
                sv->port, why);
}

/* Accepts until SIGINT or SIGTERM; polls so that the browser is reaped meanwhile. */
static int accept_loop(struct server *sv, pid_t *browser)
{
    while (!stop_requested) {
        reap_browser(browser);
        struct pollfd p = {sv->fd, POLLIN, 0};
        if (poll(&p, 1, 200) <= 0)
            continue;
        int c = accept4(sv->fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
                errno == ENFILE || errno == EAGAIN)
                continue;
            return err_fail(SCRY_E_IO, "the server stopped: %s", strerror(errno));
        }
        serve_conn(sv, c);
    }
    return 0;
}

/* Waits up to a second for the connections in flight; false if some remain (a proposal waiting
 * for its provider): then what they read must not be freed, and the process exits anyway. */
static bool wait_idle(struct server *sv)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_mutex_lock(&sv->lock);
    while (sv->active > 0)
        if (pthread_cond_timedwait(&sv->idle, &sv->lock, &ts) != 0)
            break;
    bool idle = sv->active == 0;
    pthread_mutex_unlock(&sv->lock);
    return idle;
}

static void set_names(struct server *sv)
{
    snprintf(sv->host_ip, sizeof(sv->host_ip), "127.0.0.1:%u", sv->port);
    snprintf(sv->host_name, sizeof(sv->host_name), "localhost:%u", sv->port);
    snprintf(sv->origin_ip, sizeof(sv->origin_ip), "http://127.0.0.1:%u", sv->port);
    snprintf(sv->origin_name, sizeof(sv->origin_name), "http://localhost:%u", sv->port);
    sv->site = (struct serve_site){sv->token,
                                   {sv->host_ip, sv->host_name},
                                   {sv->origin_ip, sv->origin_name}};
}

int cli_view_serve(const char *path, const char *data, size_t len, double threshold,
                   unsigned port, const struct serve_llm *llm)
{
    static struct server sv = {.fd = -1, .page = STRBUF_INIT,
                               .lock = PTHREAD_MUTEX_INITIALIZER,
                               .idle = PTHREAD_COND_INITIALIZER,
                               .propose_lock = PTHREAD_MUTEX_INITIALIZER};
    unsigned char rnd[32];
    char dir[PATH_MAX] = "", file[PATH_MAX] = "", url[160];
    pid_t browser = -1;
    struct pdoc *profile = NULL;
    int err = 0;
    sv.llm = llm;
    if (pf_random(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return err_fail(SCRY_E_INTERNAL, "no random bytes for the page's token: %s",
                        strerror(errno));
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(sv.token + 2 * i, 3, "%02x", rnd[i]);
    struct profile_html_opts ho = {.threshold = threshold, .scry_version = SCRY_VERSION,
                                   .serve_token = sv.token, .serve_provider = llm->provider,
                                   .serve_base_url = llm->base_url};
    if ((err = profile_html_render_bytes(&profile_html_web_assets, data, len, path, &ho,
                                         &sv.page)))
        goto out;
    /* On the heap: threads still in flight when serving ends keep reading it. */
    profile = calloc(1, sizeof(*profile));
    if (!profile) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
        goto out;
    }
    if ((err = pdoc_load_bytes(profile, data, len, path)))
        goto out;
    sv.profile = profile;
    /* Before any thread: libcurl's global setup is not thread-safe. */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if ((err = listen_local(&sv, port)))
        goto out;
    set_names(&sv);

    struct sigaction sa = {.sa_handler = on_stop}; /* no SA_RESTART: poll returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/%s/", sv.port, sv.token);
    /* scry's own terminal may show the URL; no command line or environment may hold it. */
    printf("%s\n", url);
    fflush(stdout);
    if (has_display())
        write_opener(url, dir, sizeof(dir), file, sizeof(file));
    open_browser(&sv, file, &browser);
    err = accept_loop(&sv, &browser);
    close(sv.fd);
    sv.fd = -1;
    remove_opener(dir, file);
    reap_browser(&browser);
    if (!err)
        fprintf(stderr, "scry: stopped serving\n");
    if (!wait_idle(&sv))
        return err; /* the threads still in flight read the page and the profile */
out:
    remove_opener(dir, file);
    if (sv.fd >= 0)
        close(sv.fd);
    if (profile)
        pdoc_free(profile);
    free(profile);
    sb_release(&sv.page);
    return err;
}
