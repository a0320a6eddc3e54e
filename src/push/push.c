/* The sender of `scry run --push` (see push.h). The launcher's main thread makes the profiles;
 * this thread alone talks to the server. The queue is a ring of PUSH_QUEUE_SLOTS under one
 * mutex: submitting never waits for the network (a full queue drops its oldest profile), and
 * the sender holds the mutex only to take a profile. The request is Pyroscope's
 * POST /ingest?name=SERVICE{TAGS}&from=&until=&spyName=scry&sampleRate= with a multipart body:
 * the profile and the sample types' configuration (docs/export-formats.md). No format=pprof:
 * with it the server takes the whole body for one raw pprof and answers 422 (the multipart
 * Content-Type is what tells it a pprof comes in parts). */
#include "push/push.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/profile.h"
#include "analysis/profile_delta.h"
#include "cli/cli.h"
#include "options/options.h"
#include "common/error.h"
#include "common/sanitize.h"
#include "push/tls_ca.h"
#include "render/pprof.h"
#include "render/profile_json.h"

/* Each of scry's sample types (render/pprof.c) as Pyroscope should add them up: the times are
 * sums in nanoseconds shown as CPU-like "samples", allocated bytes a sum, kept bytes what the
 * interval ends with (an average when intervals are merged). */
static const char sample_type_config[] =
    "{\"samples\":{\"units\":\"samples\",\"aggregation\":\"sum\",\"display-name\":\"samples\"},"
    "\"python\":{\"units\":\"samples\",\"aggregation\":\"sum\",\"display-name\":\"python\","
    "\"sampled\":true},"
    "\"native\":{\"units\":\"samples\",\"aggregation\":\"sum\",\"display-name\":\"native\","
    "\"sampled\":true},"
    "\"system\":{\"units\":\"samples\",\"aggregation\":\"sum\",\"display-name\":\"system\","
    "\"sampled\":true},"
    "\"wall\":{\"units\":\"samples\",\"aggregation\":\"sum\",\"display-name\":\"wall\","
    "\"sampled\":true},"
    "\"cpu\":{\"units\":\"samples\",\"aggregation\":\"sum\",\"display-name\":\"cpu\","
    "\"sampled\":true},"
    "\"alloc_space\":{\"units\":\"bytes\",\"aggregation\":\"sum\","
    "\"display-name\":\"alloc_space\"},"
    "\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\","
    "\"display-name\":\"inuse_space\"}}";

struct push_item {
    char *body;
    size_t len;
    long long from, until;
};

struct pusher {
    pthread_mutex_t mu;
    pthread_cond_t cv;     /* work for the sender, or closing */
    pthread_cond_t idle;   /* the sender finished a profile */
    struct push_item q[PUSH_QUEUE_SLOTS];
    size_t head, n;
    bool closing, busy;
    _Atomic bool abort; /* past the flush deadline: the transfer in flight stops */
    unsigned long long made, sent, dropped;
    char last_error[256];
    char *ingest;  /* the /ingest URL without its query */
    char *shown;   /* scheme://host[:port], for the report (no credentials, no path) */
    char *name;    /* service{tags}, escaped for the query */
    struct curl_slist *headers; /* X-Scope-OrgID with --push-tenant, else NULL */
    char *user, *password;      /* basic authentication (the environment), else NULL */
    long sample_rate;
    CURL *curl;
    pthread_t thread;
};

static bool label_name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && ((c >= '0' && c <= '9') || c == '.'));
}

bool push_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("_.:/@+-", c) != NULL;
}

/* Whether a tag's key (len bytes) is the label `name` on the server, which reads a '.' in a
 * label name as '_' (Prometheus' label names have no '.'). */
static bool same_label(const char *key, size_t len, const char *name)
{
    if (strlen(name) != len)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((key[i] == '.' ? '_' : key[i]) != (name[i] == '.' ? '_' : name[i]))
            return false;
    return true;
}

int push_check_tag(const char *tag)
{
    const char *eq = strchr(tag, '=');
    if (!eq || eq == tag || !eq[1] || strlen(tag) > 200)
        return cli_usage("--tag needs key=value (such as --tag env=prod), not '%s'", tag);
    for (const char *c = tag; c < eq; c++)
        if (!label_name_char(*c, c == tag))
            return cli_usage("--tag '%s': the key is not a label name (a letter or '_', then "
                             "letters, digits, '_' or '.')",
                             tag);
    /* Labels the server sets itself: a tag of the same name would make every push a 422. */
    if (strncmp(tag, "__", 2) == 0 || same_label(tag, eq - tag, "service_name") ||
        same_label(tag, eq - tag, "pyroscope_spy"))
        return cli_usage("--tag '%s': the key is reserved (the server sets service_name, "
                         "from --service-name, pyroscope_spy and the __ labels)",
                         tag);
    for (const char *c = eq + 1; *c; c++)
        if (!push_name_char(*c))
            return cli_usage("--tag '%s': the value has a character a label cannot have "
                             "(letters, digits and _ . : / @ + - only)",
                             tag);
    return 0;
}

int push_check_tenant(const char *id)
{
    size_t len = strlen(id);
    bool ok = len > 0 && len <= 150 && strcmp(id, ".") != 0 && strcmp(id, "..") != 0;
    for (size_t i = 0; ok && i < len; i++)
        ok = (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
             (id[i] >= '0' && id[i] <= '9') || strchr("!-_.*'()", id[i]) != NULL;
    if (!ok)
        return cli_usage("--push-tenant needs a tenant id such as team-a (1 to 150 letters, "
                         "digits and ! - _ . * ' ( )), not '%s'",
                         id);
    return 0;
}

/* A character Pyroscope takes in an application name: one of : / @ + (which a tag's value may
 * have) makes every push a 400. */
static bool service_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

int push_check_service(const char *name)
{
    size_t len = strlen(name);
    bool ok = len > 0 && len <= 200;
    for (size_t i = 0; ok && i < len; i++)
        ok = service_char(name[i]);
    if (!ok)
        return cli_usage("--service-name needs a name such as my-app (letters, digits and "
                         "_ . - only), not '%s'",
                         name);
    return 0;
}

enum push_url_kind push_url_kind(const char *url, bool *user)
{
    CURLU *h = curl_url();
    char *scheme = NULL, *host = NULL, *part = NULL;
    enum push_url_kind k = PUSH_URL_OK;
    if (!h)
        return PUSH_URL_NO_MEMORY;
    if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host ||
        (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0))
        k = PUSH_URL_BAD;
    else if (curl_url_get(h, CURLUPART_QUERY, &part, 0) == CURLUE_OK ||
             curl_url_get(h, CURLUPART_FRAGMENT, &part, 0) == CURLUE_OK)
        k = PUSH_URL_QUERY;
    if (user) {
        curl_free(part);
        part = NULL;
        *user = curl_url_get(h, CURLUPART_USER, &part, 0) == CURLUE_OK;
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(part);
    curl_url_cleanup(h);
    return k;
}

/* Parses url into h; a usage error unless it is http(s)://host[:port][/path] with no query. */
static int parse_url(CURLU *h, const char *url)
{
    enum push_url_kind k = push_url_kind(url, NULL);
    if (!h || k == PUSH_URL_NO_MEMORY)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if (k == PUSH_URL_BAD)
        return cli_usage("--push needs the URL of a Pyroscope server, such as "
                         "http://localhost:4040, not '%s'",
                         url);
    if (k == PUSH_URL_QUERY)
        return cli_usage("--push takes the server's URL without a query or fragment (scry adds "
                         "the query), not '%s'",
                         url);
    return curl_url_set(h, CURLUPART_URL, url, 0) == CURLUE_OK
               ? 0
               : err_fail(SCRY_E_NO_MEMORY, "out of memory");
}

int push_check_url(const char *url)
{
    CURLU *h = curl_url();
    int err = parse_url(h, url);
    curl_url_cleanup(h);
    return err;
}

/* The /ingest URL (the path given, with /ingest added unless it ends so; credentials kept, for
 * a proxy in front of the server) and scheme://host[:port] for the report. */
static int ingest_urls(struct pusher *ps, const char *url)
{
    CURLU *h = curl_url();
    char *path = NULL, *full = NULL, *scheme = NULL, *host = NULL, *port = NULL;
    struct strbuf p = STRBUF_INIT, s = STRBUF_INIT;
    int err = parse_url(h, url);
    if (err)
        goto out;
    if (curl_url_get(h, CURLUPART_PATH, &path, 0) == CURLUE_OK)
        sb_adds(&p, path);
    while (p.len && p.buf[p.len - 1] == '/')
        p.buf[--p.len] = 0;
    if (p.len < 7 || strcmp(p.buf + p.len - 7, "/ingest") != 0)
        sb_adds(&p, "/ingest");
    if (curl_url_get(h, CURLUPART_PORT, &port, 0) != CURLUE_OK)
        port = NULL;
    if (curl_url_set(h, CURLUPART_PATH, sb_str(&p), 0) != CURLUE_OK ||
        curl_url_get(h, CURLUPART_URL, &full, 0) != CURLUE_OK ||
        curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
        goto out;
    }
    sb_addf(&s, "%s://%s%s%s", scheme, host, port ? ":" : "", port ? port : "");
    ps->shown = strdup(sb_str(&s));
    ps->ingest = strdup(full);
    if (!ps->shown || !ps->ingest)
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
out:
    sb_release(&p);
    sb_release(&s);
    curl_free(path);
    curl_free(full);
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(h);
    return err;
}

static int abort_check(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    const struct pusher *ps = arg;
    return atomic_load(&ps->abort) ? 1 : 0;
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p, (void)arg;
    return size * n;
}

enum post_result { POST_SENT, POST_RETRY, POST_REFUSED };

/* One POST: sent (2xx), worth another try (no connection, no answer, 408, 429, 5xx), or refused
 * (any other answer: the same request would be refused again). */
static enum post_result post(struct pusher *ps, const struct push_item *it)
{
    char query[128];
    snprintf(query, sizeof(query), "&from=%lld&until=%lld&spyName=scry&sampleRate=%ld", it->from,
             it->until, ps->sample_rate);
    struct strbuf url = STRBUF_INIT;
    sb_addf(&url, "%s?name=%s%s", ps->ingest, ps->name, query);
    CURL *c = ps->curl;
    curl_easy_reset(c);
    curl_mime *mime = curl_mime_init(c);
    curl_mimepart *part = curl_mime_addpart(mime);
    curl_mime_name(part, "profile");
    curl_mime_filename(part, "profile.pprof");
    curl_mime_type(part, "application/octet-stream");
    curl_mime_data(part, it->body, it->len);
    part = curl_mime_addpart(mime);
    curl_mime_name(part, "sample_type_config");
    curl_mime_filename(part, "sample_type_config.json");
    curl_mime_type(part, "application/json");
    curl_mime_data(part, sample_type_config, CURL_ZERO_TERMINATED);
    curl_easy_setopt(c, CURLOPT_URL, sb_str(&url));
    curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)PUSH_CONNECT_MS);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)PUSH_REQUEST_MS);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "scry/" SCRY_VERSION);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, abort_check);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, ps);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    tls_ca_apply(c);
    if (ps->headers)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, ps->headers);
    if (ps->user) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, ps->user);
        curl_easy_setopt(c, CURLOPT_PASSWORD, ps->password);
    }
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    enum post_result res = POST_SENT;
    if (rc != CURLE_OK || status == 408 || status == 429 || status >= 500)
        res = POST_RETRY;
    else if (status < 200 || status >= 300)
        res = POST_REFUSED;
    if (res != POST_SENT) {
        pthread_mutex_lock(&ps->mu);
        if (rc == CURLE_ABORTED_BY_CALLBACK)
            snprintf(ps->last_error, sizeof(ps->last_error),
                     "no answer within %.0f s of the program's end", PUSH_FLUSH_SEC);
        else if (rc != CURLE_OK)
            snprintf(ps->last_error, sizeof(ps->last_error), "%s", curl_easy_strerror(rc));
        else
            snprintf(ps->last_error, sizeof(ps->last_error), "the server answered HTTP %ld",
                     status);
        pthread_mutex_unlock(&ps->mu);
    }
    curl_mime_free(mime);
    sb_release(&url);
    return res;
}

static void deadline_in(struct timespec *ts, double sec)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    double whole = floor(sec);
    ts->tv_sec += (time_t)whole;
    ts->tv_nsec += (long)((sec - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void *sender_main(void *arg)
{
    struct pusher *ps = arg;
    pthread_mutex_lock(&ps->mu);
    for (;;) {
        while (ps->n == 0 && !ps->closing)
            pthread_cond_wait(&ps->cv, &ps->mu);
        if (ps->n == 0 || atomic_load(&ps->abort))
            break;
        struct push_item it = ps->q[ps->head];
        ps->head = (ps->head + 1) % PUSH_QUEUE_SLOTS;
        ps->n--;
        ps->busy = true;
        enum post_result res = POST_RETRY;
        double backoff = 0.5;
        for (int attempt = 0;
             attempt < PUSH_ATTEMPTS && res == POST_RETRY && !atomic_load(&ps->abort);
             attempt++) {
            if (attempt) {
                /* Back-off: woken early only to give up (abort). */
                struct timespec ts;
                deadline_in(&ts, backoff);
                backoff *= 2;
                while (!atomic_load(&ps->abort) &&
                       pthread_cond_timedwait(&ps->cv, &ps->mu, &ts) != ETIMEDOUT)
                    ;
                if (atomic_load(&ps->abort))
                    break;
            }
            pthread_mutex_unlock(&ps->mu);
            res = post(ps, &it);
            pthread_mutex_lock(&ps->mu);
        }
        if (res == POST_SENT)
            ps->sent++;
        else
            ps->dropped++;
        free(it.body);
        ps->busy = false;
        pthread_cond_broadcast(&ps->idle);
    }
    pthread_mutex_unlock(&ps->mu);
    return NULL;
}

static void name_param(struct pusher *ps, const struct push_cfg *cfg, const char *service)
{
    struct strbuf s = STRBUF_INIT;
    sb_adds(&s, service);
    sb_addch(&s, '{');
    for (size_t i = 0; i < cfg->ntags; i++) {
        if (i)
            sb_addch(&s, ',');
        sb_adds(&s, cfg->tags[i]);
    }
    sb_addch(&s, '}');
    ps->name = curl_easy_escape(ps->curl, sb_str(&s), (int)s.len);
    sb_release(&s);
}

/* The tenant header (--push-tenant) and basic authentication from the environment. */
static int auth_headers(struct pusher *ps, const struct push_cfg *cfg)
{
    if (cfg->tenant) {
        struct strbuf h = STRBUF_INIT;
        sb_addf(&h, "X-Scope-OrgID: %s", cfg->tenant);
        ps->headers = curl_slist_append(NULL, sb_str(&h));
        sb_release(&h);
        if (!ps->headers)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    const char *user = getenv(PUSH_AUTH_USER_ENV), *pass = getenv(PUSH_AUTH_PASSWORD_ENV);
    if (user && *user && pass) {
        ps->user = strdup(user);
        ps->password = strdup(pass);
        if (!ps->user || !ps->password)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    return 0;
}

static void pusher_free(struct pusher *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->q[(ps->head + i) % PUSH_QUEUE_SLOTS].body);
    if (ps->curl)
        curl_easy_cleanup(ps->curl);
    curl_free(ps->name);
    curl_slist_free_all(ps->headers);
    free(ps->user);
    free(ps->password);
    free(ps->ingest);
    free(ps->shown);
    pthread_mutex_destroy(&ps->mu);
    pthread_cond_destroy(&ps->cv);
    pthread_cond_destroy(&ps->idle);
    free(ps);
    curl_global_cleanup();
}

int push_start(struct pusher **out, const struct push_cfg *cfg, const char *service,
               double rate_sec)
{
    *out = NULL;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return err_fail(SCRY_E_INTERNAL, "cannot initialize libcurl for --push");
    struct pusher *ps = calloc(1, sizeof(*ps));
    if (!ps) {
        curl_global_cleanup();
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    pthread_mutex_init(&ps->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ps->cv, &ca);
    pthread_cond_init(&ps->idle, &ca);
    pthread_condattr_destroy(&ca);
    ps->sample_rate = lround(1.0 / rate_sec);
    if (ps->sample_rate < 1)
        ps->sample_rate = 1;
    int err = ingest_urls(ps, cfg->url);
    if (!err && !(ps->curl = curl_easy_init()))
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if (!err) {
        name_param(ps, cfg, service);
        if (!ps->name)
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    if (!err)
        err = auth_headers(ps, cfg);
    if (!err) {
        /* The sender takes no signals: the launcher's handlers forward them to the program. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&ps->thread, NULL, sender_main, ps);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0)
            err = err_fail(SCRY_E_INTERNAL, "cannot start the --push thread: %s", strerror(rc));
    }
    if (err) {
        pusher_free(ps);
        return err;
    }
    *out = ps;
    return 0;
}

void push_submit(struct pusher *ps, struct strbuf *body, double from, double until)
{
    struct push_item it = {body->buf, body->len, (long long)floor(from), (long long)floor(until)};
    if (it.until <= it.from)
        it.until = it.from + 1;
    *body = (struct strbuf)STRBUF_INIT;
    pthread_mutex_lock(&ps->mu);
    ps->made++;
    if (ps->n == PUSH_QUEUE_SLOTS) {
        /* Full: the server has been slow for a while; the newest interval is worth more. */
        free(ps->q[ps->head].body);
        ps->head = (ps->head + 1) % PUSH_QUEUE_SLOTS;
        ps->n--;
        ps->dropped++;
    }
    ps->q[(ps->head + ps->n) % PUSH_QUEUE_SLOTS] = it;
    ps->n++;
    pthread_cond_broadcast(&ps->cv);
    pthread_mutex_unlock(&ps->mu);
}

void push_count_dropped(struct pusher *ps, const char *why)
{
    pthread_mutex_lock(&ps->mu);
    ps->made++;
    ps->dropped++;
    snprintf(ps->last_error, sizeof(ps->last_error), "%s", why ? why : "");
    pthread_mutex_unlock(&ps->mu);
}

int push_take_option(int id, const char *arg, double num, struct push_cfg *cfg)
{
    switch (id) {
    case OPT_PUSH:
        if (push_check_url(arg) != 0)
            return -SCRY_E_USAGE;
        cfg->url = arg;
        return 0;
    case OPT_PUSH_INTERVAL:
        cfg->interval_sec = num;
        break;
    case OPT_TAG:
        if (push_check_tag(arg) != 0)
            return -SCRY_E_USAGE;
        cfg->tags[cfg->ntags++] = arg;
        break;
    case OPT_SERVICE_NAME:
        if (push_check_service(arg) != 0)
            return -SCRY_E_USAGE;
        cfg->service = arg;
        break;
    case OPT_PUSH_TENANT:
        if (push_check_tenant(arg) != 0)
            return -SCRY_E_USAGE;
        cfg->tenant = arg;
        break;
    default:
        return 1;
    }
    cfg->extras = true;
    return 0;
}

int push_check_options(const struct push_cfg *cfg)
{
    if (cfg->extras && !cfg->url)
        return cli_usage("--push-interval, --tag, --service-name and --push-tenant go with "
                         "--push URL");
    /* Two tags of one label (the same key, or a.b and a_b) make every push a 422 on the
     * server: refused before the program starts. Checked tags have their '='. */
    for (size_t i = 0; i < cfg->ntags; i++)
        for (size_t j = 0; j < i; j++) {
            const char *a = cfg->tags[i], *b = cfg->tags[j];
            size_t len = (size_t)(strchr(b, '=') - b);
            char key[201];
            snprintf(key, sizeof(key), "%.*s", (int)len, b);
            if (same_label(a, (size_t)(strchr(a, '=') - a), key))
                return cli_usage("--tag '%s' and --tag '%s' name the same label (a '.' in a "
                                 "key is '_' on the server)",
                                 b, a);
        }
    return 0;
}

void push_default_service(const char *name, char *out, size_t n)
{
    const char *slash = strrchr(name, '/');
    if (slash && slash[1])
        name = slash + 1;
    snprintf(out, n, "%s", name);
    size_t len = strlen(out);
    if (len > 3 && strcmp(out + len - 3, ".py") == 0)
        out[len - 3] = 0;
    for (char *c = out; *c; c++)
        if (!service_char(*c))
            *c = '_';
    if (!out[0])
        snprintf(out, n, "python");
}

void push_profile(struct pusher *ps, struct push_delta *st, const struct profile *p,
                  const struct profile_json_opts *jo)
{
    struct strbuf json = STRBUF_INIT, body = STRBUF_INIT;
    struct pdoc cum, d;
    memset(&cum, 0, sizeof(cum));
    memset(&d, 0, sizeof(d));
    if (p->nparts == 0) /* no process has profiled yet: nothing to say */
        goto out;
    profile_json_write(p, jo, &json);
    if (pdoc_load_bytes(&cum, json.buf, json.len, "the profile so far") != 0 ||
        pdoc_load_bytes(&d, json.buf, json.len, "the profile so far") != 0 ||
        (st->have_prev && pdoc_subtract(&d, &st->prev) != 0)) {
        push_count_dropped(ps, err_last_message());
        pdoc_free(&cum);
        goto out;
    }
    double from = st->have_prev ? st->prev_until : cum.start_time_absolute;
    double until = cum.start_time_absolute + cum.elapsed_sec;
    if (until < from)
        until = from;
    d.start_time_absolute = from;
    d.elapsed_sec = until - from;
    /* Two profiles with a memory profile: Pyroscope names each after its sample types, and
     * one would put the memory types under `wall` (pprof.h). */
    for (int part = PPROF_TIME; part <= (d.memory ? PPROF_MEMORY : PPROF_TIME); part++) {
        struct pprof_opts po = {.exporter = "scry " SCRY_VERSION, .part = part};
        if (pprof_write(&d, &po, &body) != 0)
            push_count_dropped(ps, err_last_message());
        else
            push_submit(ps, &body, from, until);
        sb_reset(&body);
    }
    push_delta_free(st);
    st->prev = cum;
    st->have_prev = true;
    st->prev_until = until;
out:
    pdoc_free(&d);
    sb_release(&json);
    sb_release(&body);
}

void push_delta_free(struct push_delta *st)
{
    if (st->have_prev)
        pdoc_free(&st->prev);
    st->have_prev = false;
}

void push_end(struct pusher *ps, bool report)
{
    if (!ps)
        return;
    struct timespec deadline;
    deadline_in(&deadline, PUSH_FLUSH_SEC);
    pthread_mutex_lock(&ps->mu);
    ps->closing = true;
    pthread_cond_broadcast(&ps->cv);
    while ((ps->n || ps->busy) &&
           pthread_cond_timedwait(&ps->idle, &ps->mu, &deadline) != ETIMEDOUT)
        ;
    if (ps->n || ps->busy) {
        atomic_store(&ps->abort, true);
        pthread_cond_broadcast(&ps->cv);
    }
    pthread_mutex_unlock(&ps->mu);
    pthread_join(ps->thread, NULL);
    ps->dropped += ps->n; /* never tried: the flush's time was up */
    unsigned long long sent = ps->sent, dropped = ps->dropped;
    if (report && dropped)
        fprintf(stderr, "scry: push: %llu of %llu profiles sent to %s, %llu dropped (%s)\n", sent,
                ps->made, san_str(ps->shown), dropped,
                san_str(ps->last_error[0] ? ps->last_error : "not sent in time"));
    else if (report)
        fprintf(stderr, "scry: push: %llu of %llu profiles sent to %s, 0 dropped\n", sent,
                ps->made, san_str(ps->shown));
    pusher_free(ps);
}
