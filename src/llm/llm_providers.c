/* The providers' wire formats (see llm_providers.h, docs/optimize.md): one row per provider
 * with its endpoint, key variables, default model and three functions (the URL, the headers and
 * body, the answer's text). The request goes out through libcurl with no signals, bounded
 * timeouts, no redirects (a key never follows one to another host) and verbose output off. */
#include "llm/llm_providers.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "common/error.h"
#include "push/push.h"
#include "push/tls_ca.h"

#define LLM_ANSWER_MAX (8u << 20) /* bytes of an answer read */
#define LLM_MAX_TOKENS 4096
#define LLM_DEFAULT_TIMEOUT 120.0
#define LLM_CONNECT_MS 10000L
#define AZURE_API_VERSION "2024-10-21"

struct llm_provider {
    const char *name;
    const char *base;         /* the endpoint when --base-url is not given; NULL: required */
    const char *key_envs[3];  /* tried in order; bedrock: none (AWS_* below) */
    const char *model;        /* the default model; NULL: --model (azure: --deployment) */
    /* The URL from the base (no trailing '/'): 0 or a recorded usage error. */
    int (*url)(const struct llm_config *c, const char *base, struct strbuf *url);
    /* The key's header(s) and the JSON body. */
    json_t *(*body)(const struct llm_config *c, const char *system, const char *user);
    const char *key_header; /* "Authorization: Bearer ", "x-api-key: ", ...; NULL: SigV4 */
    const char *extra_header;
    /* The answer's text, appended to out; false when the document holds none. */
    bool (*text)(const json_t *root, struct strbuf *out);
};

/* ---- URLs ---------------------------------------------------------------------------------- */

static int url_openai(const struct llm_config *c, const char *base, struct strbuf *url)
{
    (void)c;
    sb_addf(url, "%s/chat/completions", base);
    return 0;
}

static int url_anthropic(const struct llm_config *c, const char *base, struct strbuf *url)
{
    (void)c;
    sb_addf(url, "%s/v1/messages", base);
    return 0;
}

/* A path segment: the name as it is when it is made of safe characters, else refused (a model
 * or deployment name never needs escaping, and a '/' or '?' in one would change the URL). */
static int add_segment(struct strbuf *url, const char *what, const char *s)
{
    if (!*s || strlen(s) > 200 || strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789-_.:@") != strlen(s))
        return cli_usage("the %s '%s' has a character a name cannot have (letters, digits and "
                         "- _ . : @ only)",
                         what, s);
    sb_adds(url, s);
    return 0;
}

static int url_azure(const struct llm_config *c, const char *base, struct strbuf *url)
{
    const char *dep = c->deployment ? c->deployment : c->model;
    if (!dep)
        return cli_usage("azure needs --deployment NAME (the model deployment's name)");
    sb_addf(url, "%s/openai/deployments/", base);
    int err = add_segment(url, "deployment", dep);
    if (!err) {
        sb_adds(url, "/chat/completions?api-version=");
        err = add_segment(url, "API version", c->api_version ? c->api_version : AZURE_API_VERSION);
    }
    return err;
}

static int url_gemini(const struct llm_config *c, const char *base, struct strbuf *url)
{
    sb_addf(url, "%s/v1beta/models/", base);
    int err = add_segment(url, "model", llm_model(c));
    sb_adds(url, ":generateContent");
    return err;
}

static int url_bedrock(const struct llm_config *c, const char *base, struct strbuf *url)
{
    sb_addf(url, "%s/model/", base);
    int err = add_segment(url, "model", llm_model(c));
    sb_adds(url, "/converse");
    return err;
}

/* ---- bodies -------------------------------------------------------------------------------- */

static json_t *body_chat(const struct llm_config *c, const char *system, const char *user)
{
    json_t *b = json_pack("{s:[{s:s,s:s},{s:s,s:s}],s:f}", "messages", "role", "system",
                          "content", system, "role", "user", "content", user, "temperature", 0.2);
    if (b && c->provider->model)
        json_object_set_new(b, "model", json_string(llm_model(c)));
    return b;
}

static json_t *body_anthropic(const struct llm_config *c, const char *system, const char *user)
{
    return json_pack("{s:s,s:i,s:s,s:[{s:s,s:s}]}", "model", llm_model(c), "max_tokens",
                     LLM_MAX_TOKENS, "system", system, "messages", "role", "user", "content",
                     user);
}

static json_t *body_gemini(const struct llm_config *c, const char *system, const char *user)
{
    (void)c;
    return json_pack("{s:{s:[{s:s}]},s:[{s:s,s:[{s:s}]}],s:{s:f,s:i}}", "systemInstruction",
                     "parts", "text", system, "contents", "role", "user", "parts", "text", user,
                     "generationConfig", "temperature", 0.2, "maxOutputTokens", LLM_MAX_TOKENS);
}

static json_t *body_bedrock(const struct llm_config *c, const char *system, const char *user)
{
    (void)c;
    return json_pack("{s:[{s:s}],s:[{s:s,s:[{s:s}]}],s:{s:i,s:f}}", "system", "text", system,
                     "messages", "role", "user", "content", "text", user, "inferenceConfig",
                     "maxTokens", LLM_MAX_TOKENS, "temperature", 0.2);
}

/* ---- answers ------------------------------------------------------------------------------- */

/* Appends the "text" string of every element of parts (an array of objects); true if any. */
static bool add_parts(const json_t *parts, struct strbuf *out)
{
    bool any = false;
    size_t i;
    const json_t *p;
    json_array_foreach(parts, i, p)
    {
        const json_t *t = json_object_get(p, "text");
        if (json_is_string(t)) {
            sb_add(out, json_string_value(t), json_string_length(t));
            any = true;
        }
    }
    return any;
}

static bool text_chat(const json_t *root, struct strbuf *out)
{
    const json_t *m = json_object_get(json_array_get(json_object_get(root, "choices"), 0),
                                      "message");
    const json_t *t = json_object_get(m, "content");
    if (json_is_string(t)) {
        sb_add(out, json_string_value(t), json_string_length(t));
        return true;
    }
    return add_parts(t, out); /* content as an array of parts */
}

static bool text_anthropic(const json_t *root, struct strbuf *out)
{
    return add_parts(json_object_get(root, "content"), out);
}

static bool text_gemini(const json_t *root, struct strbuf *out)
{
    const json_t *cand = json_array_get(json_object_get(root, "candidates"), 0);
    return add_parts(json_object_get(json_object_get(cand, "content"), "parts"), out);
}

static bool text_bedrock(const json_t *root, struct strbuf *out)
{
    const json_t *m = json_object_get(json_object_get(root, "output"), "message");
    return add_parts(json_object_get(m, "content"), out);
}

static const struct llm_provider providers[] = {
    {"openai", "https://api.openai.com/v1", {"OPENAI_API_KEY"}, "gpt-4o-mini", url_openai,
     body_chat, "Authorization: Bearer ", NULL, text_chat},
    {"anthropic", "https://api.anthropic.com", {"ANTHROPIC_API_KEY"}, "claude-sonnet-4-5",
     url_anthropic, body_anthropic, "x-api-key: ", "anthropic-version: 2023-06-01",
     text_anthropic},
    {"azure", NULL, {"AZURE_OPENAI_API_KEY"}, NULL, url_azure, body_chat, "api-key: ", NULL,
     text_chat},
    {"gemini", "https://generativelanguage.googleapis.com", {"GEMINI_API_KEY", "GOOGLE_API_KEY"},
     "gemini-2.5-flash", url_gemini, body_gemini, "x-goog-api-key: ", NULL, text_gemini},
    {"bedrock", NULL, {NULL}, "anthropic.claude-3-5-sonnet-20240620-v1:0", url_bedrock,
     body_bedrock, NULL, NULL, text_bedrock},
};
#define NPROVIDERS (sizeof(providers) / sizeof(providers[0]))

const struct llm_provider *llm_find(const char *name)
{
    for (size_t i = 0; name && i < NPROVIDERS; i++)
        if (strcmp(providers[i].name, name) == 0)
            return &providers[i];
    return NULL;
}

const char *llm_names(void) { return "openai, anthropic, azure, gemini, bedrock"; }

const char *llm_name(const struct llm_provider *p) { return p->name; }

bool llm_takes_key(const struct llm_provider *p) { return p->key_header != NULL; }

const char *llm_model(const struct llm_config *c)
{
    if (c->model && *c->model)
        return c->model;
    if (!c->provider->model && c->deployment)
        return c->deployment;
    return c->provider->model ? c->provider->model : "";
}

void llm_scrub(struct strbuf *sb, const char *key)
{
    size_t n = key ? strlen(key) : 0;
    if (n < 8 || !sb->len)
        return;
    struct strbuf out = STRBUF_INIT;
    const char *p = sb->buf, *end = sb->buf + sb->len, *m;
    while ((m = memmem(p, (size_t)(end - p), key, n)) != NULL) {
        sb_add(&out, p, (size_t)(m - p));
        sb_adds(&out, "[key]");
        p = m + n;
    }
    sb_add(&out, p, (size_t)(end - p));
    sb_release(sb);
    *sb = out;
}

/* ---- the request --------------------------------------------------------------------------- */

/* The endpoint: --base-url (checked: http or https, a host, no query, no credentials), else the
 * provider's, else (azure) AZURE_OPENAI_ENDPOINT; without a trailing '/'. */
static int endpoint(const struct llm_config *c, struct strbuf *base)
{
    const char *b = c->base_url, *what = "--base-url";
    if (!b && strcmp(c->provider->name, "azure") == 0) {
        b = getenv("AZURE_OPENAI_ENDPOINT");
        what = "AZURE_OPENAI_ENDPOINT";
        if (!b || !*b)
            return cli_usage("azure needs the resource's endpoint: --base-url "
                             "https://NAME.openai.azure.com or AZURE_OPENAI_ENDPOINT");
    }
    if (!b && strcmp(c->provider->name, "bedrock") == 0) {
        const char *r = c->region;
        if (!r || !*r)
            r = getenv("AWS_REGION");
        if (!r || !*r)
            r = getenv("AWS_DEFAULT_REGION");
        if (!r || !*r)
            return cli_usage("bedrock needs a region: --region R, AWS_REGION or "
                             "AWS_DEFAULT_REGION");
        if (strspn(r, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(r))
            return cli_usage("the region '%s' is not an AWS region name", r);
        sb_addf(base, "https://bedrock-runtime.%s.amazonaws.com", r);
        return 0;
    }
    if (!b)
        b = c->provider->base;
    bool user = false;
    enum push_url_kind k = push_url_kind(b, &user);
    int err = 0;
    if (k == PUSH_URL_NO_MEMORY)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if (k != PUSH_URL_OK || user)
        err = cli_usage("%s needs http(s)://host[:port][/path] without a query or credentials, "
                        "not '%s'",
                        what, b);
    if (!err) {
        sb_adds(base, b);
        while (base->len && base->buf[base->len - 1] == '/')
            base->buf[--base->len] = 0;
    }
    return err;
}

/* The key: the page's, else the variable's, unless the served page named an endpoint of its own
 * (env_key_refused: then only the page's). A provider reached at its own endpoint needs one;
 * an OpenAI-compatible server of the user's (--base-url: Ollama, vLLM) may take none. */
static int find_key(const struct llm_config *c, const char **key, const char **var)
{
    *key = NULL;
    *var = c->key_env ? c->key_env : c->provider->key_envs[0];
    if (c->key && *c->key) {
        *key = c->key;
        return 0;
    }
    if (c->env_key_refused) {
        /* An OpenAI-compatible server of the page's may take none; the others need the typed
         * one. */
        if (strcmp(c->provider->name, "openai") == 0)
            return 0;
        return err_fail_hint(SCRY_E_NO_API_KEY,
                             "type a key in the page, or start scry view --serve with "
                             "--provider and --base-url naming this endpoint",
                             "no key for %s at this base URL: the key of scry's environment "
                             "goes only to the provider and base URL of scry's command line",
                             c->provider->name);
    }
    if (c->key_env) {
        *key = getenv(c->key_env);
    } else {
        for (size_t i = 0; i < 3 && c->provider->key_envs[i] && !(*key && **key); i++)
            *key = getenv(c->provider->key_envs[i]);
    }
    if (*key && **key)
        return 0;
    *key = NULL;
    if (strcmp(c->provider->name, "openai") == 0 && c->base_url)
        return 0;
    if (strcmp(c->provider->name, "gemini") == 0 && !c->key_env)
        return err_fail(SCRY_E_NO_API_KEY, "no key for gemini: GEMINI_API_KEY and "
                                           "GOOGLE_API_KEY are unset or empty");
    return err_fail(SCRY_E_NO_API_KEY, "no key for %s: %s is unset or empty", c->provider->name,
                    *var);
}

struct answer_buf {
    struct strbuf sb;
    bool too_big;
};

static size_t collect(char *p, size_t size, size_t n, void *arg)
{
    struct answer_buf *a = arg;
    if (a->sb.len + size * n > LLM_ANSWER_MAX) {
        a->too_big = true;
        return 0;
    }
    sb_add(&a->sb, p, size * n);
    return size * n;
}

/* The provider's own error message from an error document: error.message (OpenAI, Azure,
 * Anthropic, Gemini), error as a string, message or Message (Bedrock); else the body's start. */
static void error_message(const struct strbuf *body, struct strbuf *out)
{
    json_t *root = json_loadb(body->buf ? body->buf : "", body->len, 0, NULL);
    const json_t *e = json_object_get(root, "error");
    const json_t *m = json_is_string(e) ? e : json_object_get(e, "message");
    if (!json_is_string(m))
        m = json_object_get(root, "message");
    if (!json_is_string(m))
        m = json_object_get(root, "Message");
    if (json_is_string(m))
        sb_add(out, json_string_value(m), json_string_length(m) > 500 ? 500
                                                                     : json_string_length(m));
    else
        sb_add(out, sb_str(body), body->len > 200 ? 200 : body->len);
    json_decref(root);
}

/* Bedrock: signed with SigV4 by libcurl from the AWS variables (the session token a header). */
static int aws_auth(CURL *curl, const char *base, const struct llm_config *c,
                    struct curl_slist **hdrs, struct strbuf *userpwd, struct strbuf *sigv4)
{
    const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY"),
               *token = getenv("AWS_SESSION_TOKEN");
    if (!id || !*id || !secret || !*secret)
        return err_fail(SCRY_E_NO_API_KEY, "no AWS credentials for bedrock: %s is unset or empty",
                        !id || !*id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY");
    const char *r = c->region && *c->region ? c->region : getenv("AWS_REGION");
    if (!r || !*r)
        r = getenv("AWS_DEFAULT_REGION");
    if (!r || !*r) {
        /* The region of the endpoint's name, else us-east-1 (a --base-url stand-in). */
        const char *h = strstr(base, "bedrock-runtime.");
        static char from_host[64];
        snprintf(from_host, sizeof(from_host), "%s", h ? h + 16 : "us-east-1");
        from_host[strcspn(from_host, ".")] = 0;
        r = from_host;
    }
    sb_addf(sigv4, "aws:amz:%s:bedrock", r);
    sb_addf(userpwd, "%s:%s", id, secret);
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sb_str(sigv4));
    curl_easy_setopt(curl, CURLOPT_USERPWD, sb_str(userpwd));
    if (token && *token) {
        struct strbuf h = STRBUF_INIT;
        sb_addf(&h, "x-amz-security-token: %s", token);
        *hdrs = curl_slist_append(*hdrs, sb_str(&h));
        sb_release(&h);
    }
    return 0;
}

int llm_complete(const struct llm_config *c, const char *system, const char *user,
                 struct strbuf *answer)
{
    struct strbuf base = STRBUF_INIT, url = STRBUF_INIT, keyh = STRBUF_INIT,
                  userpwd = STRBUF_INIT, sigv4 = STRBUF_INIT, msg = STRBUF_INIT;
    struct answer_buf a = {STRBUF_INIT, false};
    struct curl_slist *hdrs = NULL;
    json_t *body = NULL, *root = NULL;
    char *text = NULL;
    CURL *curl = NULL;
    const char *key = NULL, *var = NULL;
    int err;
    if ((err = endpoint(c, &base)) || (err = c->provider->url(c, sb_str(&base), &url)))
        goto out;
    if (c->provider->key_header && (err = find_key(c, &key, &var)))
        goto out;
    body = c->provider->body(c, system, user);
    text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    curl = curl_easy_init();
    if (!text || !curl) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
        goto out;
    }
    hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    if (c->provider->extra_header)
        hdrs = curl_slist_append(hdrs, c->provider->extra_header);
    if (key) {
        sb_addf(&keyh, "%s%s", c->provider->key_header, key);
        hdrs = curl_slist_append(hdrs, sb_str(&keyh));
    }
    if (!c->provider->key_header && c->env_key_refused) {
        err = err_fail_hint(SCRY_E_NO_API_KEY,
                            "start scry view --serve with --provider bedrock and this "
                            "--base-url",
                            "bedrock signs with the AWS credentials of scry's environment, which "
                            "go only to the endpoint of scry's command line");
        goto out;
    }
    if (!c->provider->key_header && (err = aws_auth(curl, sb_str(&base), c, &hdrs, &userpwd,
                                                    &sigv4)))
        goto out;
    long timeout_ms = (long)((c->timeout_sec > 0 ? c->timeout_sec : LLM_DEFAULT_TIMEOUT) * 1000);
    curl_easy_setopt(curl, CURLOPT_URL, sb_str(&url));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_VERBOSE, 0L);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     timeout_ms < LLM_CONNECT_MS ? timeout_ms : LLM_CONNECT_MS);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "scry/" SCRY_VERSION);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    tls_ca_apply(curl);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a);
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK && !a.too_big) {
        /* libcurl's message names the failure, never a header. */
        err = err_fail(SCRY_E_PROVIDER_UNREACHABLE, "%s could not be reached at %s: %s",
                       c->provider->name, sb_str(&base), curl_easy_strerror(rc));
        goto out;
    }
    if (a.too_big) {
        err = err_fail(SCRY_E_BAD_ANSWER, "%s's answer is larger than %u MiB", c->provider->name,
                       LLM_ANSWER_MAX >> 20);
        goto out;
    }
    if (status < 200 || status >= 300) {
        error_message(&a.sb, &msg);
        llm_scrub(&msg, key);
        err = err_fail(SCRY_E_PROVIDER_ERROR, "%s answered HTTP %ld: %s", c->provider->name,
                       status, sb_str(&msg));
        goto out;
    }
    root = json_loadb(a.sb.buf ? a.sb.buf : "", a.sb.len, 0, NULL);
    if (!root || !c->provider->text(root, answer)) {
        err = err_fail(SCRY_E_BAD_ANSWER, "%s's answer is not a %s response with text",
                       c->provider->name, c->provider->name);
        goto out;
    }
    llm_scrub(answer, key);
out:
    if (curl)
        curl_easy_cleanup(curl);
    for (struct curl_slist *h = hdrs; h; h = h->next)
        memset(h->data, 0, strlen(h->data));
    curl_slist_free_all(hdrs);
    json_decref(body);
    json_decref(root);
    free(text);
    /* The key's copies are wiped before they are freed. */
    if (keyh.buf)
        memset(keyh.buf, 0, keyh.len);
    if (userpwd.buf)
        memset(userpwd.buf, 0, userpwd.len);
    sb_release(&keyh);
    sb_release(&userpwd);
    sb_release(&sigv4);
    sb_release(&base);
    sb_release(&url);
    sb_release(&msg);
    sb_release(&a.sb);
    return err;
}
