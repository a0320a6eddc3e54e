/* The request side of `scry view --serve` (src/http/serve_http.c): the head parser's answers to
 * whole, partial and malformed heads, what each request may reach, and the rule that keeps the
 * key of scry's environment away from a base URL the page names. */
#include <string.h>

#include "http/serve_http.h"
#include "testlib.h"

#define TOKEN "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

static const struct serve_site site = {TOKEN,
                                       {"127.0.0.1:8123", "localhost:8123"},
                                       {"http://127.0.0.1:8123", "http://localhost:8123"}};

static int parse(const char *s, struct serve_request *rq)
{
    return serve_parse_head(s, strlen(s), rq);
}

static void test_parse(void)
{
    struct serve_request rq;
    const char *get = "GET /" TOKEN "/ HTTP/1.1\r\nHost:  127.0.0.1:8123 \r\n\r\nextra";
    CHECK_EQ(parse(get, &rq), 0);
    CHECK_STR(rq.method, "GET");
    CHECK_STR(rq.host, "127.0.0.1:8123");
    CHECK_EQ(rq.length, -1);
    CHECK_EQ(rq.head_len, strlen(get) - 5);
    CHECK_EQ(serve_request_size(&rq), rq.head_len);
    /* Every prefix before the blank line needs more bytes. */
    for (size_t n = 0; n < rq.head_len; n++)
        CHECK_EQ(serve_parse_head(get, n, &rq), 1);
    const char *post = "POST /x HTTP/1.1\r\nContent-Length: 12\r\nX-Scry-Token: t\r\n\r\n";
    CHECK_EQ(parse(post, &rq), 0);
    CHECK_EQ(rq.length, 12);
    CHECK_STR(rq.token, "t");
    CHECK_EQ(serve_request_size(&rq), strlen(post) + 12);
}

static void test_refused(void)
{
    struct serve_request rq;
    CHECK_EQ(parse("POST /x HTTP/1.1\r\n\r\n", &rq), 411);
    CHECK_EQ(parse("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
                   &rq),
             411);
    CHECK_EQ(parse("POST /x HTTP/1.1\r\nContent-Length: 65537\r\n\r\n", &rq), 413);
    CHECK_EQ(parse("POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", &rq),
             400);
    CHECK_EQ(parse("POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n", &rq), 400);
    CHECK_EQ(parse("POST /x HTTP/1.1\r\nContent-Length: 9999999999\r\n\r\n", &rq), 400);
    CHECK_EQ(parse("GET /x HTTP/2\r\n\r\n", &rq), 400);
    CHECK_EQ(parse("GET /x HTTP/1.1 more\r\n\r\n", &rq), 400);
    CHECK_EQ(parse("GET /x HTTP/1.1\r\nno colon\r\n\r\n", &rq), 400);
    CHECK_EQ(parse("GET /x HTTP/1.1\r\nHost: a\rb\r\n\r\n", &rq), 400);
    CHECK_EQ(parse("GET /x HTTP/1.1\r\nHost: a\nb\r\n\r\n", &rq), 400);
    /* A NUL would end the copied Host early: "127.0.0.1:8123\0evil" is not the right host. */
    static const char nul[] = "GET /x HTTP/1.1\r\nHost: 127.0.0.1:8123\0evil\r\n\r\n";
    CHECK_EQ(serve_parse_head(nul, sizeof(nul) - 1, &rq), 400);
    char big[SERVE_HEAD_MAX + 10];
    memset(big, 'a', sizeof(big));
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    CHECK_EQ(serve_parse_head(big, SERVE_HEAD_MAX - 1, &rq), 1);
    CHECK_EQ(serve_parse_head(big, SERVE_HEAD_MAX, &rq), 431);
    memcpy(big + SERVE_HEAD_MAX + 2, "\r\n\r\n", 4);
    CHECK_EQ(serve_parse_head(big, sizeof(big), &rq), 431);
}

static int route(const char *head, enum serve_route *r)
{
    struct serve_request rq;
    const char *msg = NULL;
    CHECK_EQ(parse(head, &rq), 0);
    int st = serve_route(&site, &rq, r, &msg);
    CHECK(st == 0 || msg != NULL);
    return st;
}

static void test_route(void)
{
    enum serve_route r;
    CHECK_EQ(route("GET /" TOKEN "/ HTTP/1.1\r\nHost: localhost:8123\r\n\r\n", &r), 0);
    CHECK_EQ(r, SERVE_ROUTE_PAGE);
    CHECK_EQ(route("HEAD /" TOKEN " HTTP/1.1\r\nHost: 127.0.0.1:8123\r\n\r\n", &r), 0);
    CHECK_EQ(r, SERVE_ROUTE_PAGE_HEAD);
    CHECK_EQ(route("GET /" TOKEN "/ HTTP/1.1\r\nHost: evil.example:8123\r\n\r\n", &r), 403);
    CHECK_EQ(route("GET /" TOKEN "/ HTTP/1.1\r\n\r\n", &r), 403);
    CHECK_EQ(route("GET / HTTP/1.1\r\nHost: 127.0.0.1:8123\r\n\r\n", &r), 403);
    CHECK_EQ(route("GET /" TOKEN "0/ HTTP/1.1\r\nHost: 127.0.0.1:8123\r\n\r\n", &r), 403);
    CHECK_EQ(route("GET /" TOKEN "/nosuch HTTP/1.1\r\nHost: 127.0.0.1:8123\r\n\r\n", &r), 404);
    CHECK_EQ(route("GET /" TOKEN "/propose HTTP/1.1\r\nHost: 127.0.0.1:8123\r\n\r\n", &r), 405);
    CHECK_EQ(route("DELETE /" TOKEN "/ HTTP/1.1\r\nHost: 127.0.0.1:8123\r\n\r\n", &r), 405);
#define POST_HEAD                                                                                  \
    "POST /" TOKEN "/propose HTTP/1.1\r\nHost: 127.0.0.1:8123\r\nContent-Length: 2\r\n"
    CHECK_EQ(route(POST_HEAD "Origin: http://127.0.0.1:8123\r\nX-Scry-Token: " TOKEN
                             "\r\nContent-Type: application/json\r\n\r\n",
                   &r),
             0);
    CHECK_EQ(r, SERVE_ROUTE_PROPOSE);
    CHECK_EQ(route(POST_HEAD "Origin: http://evil.example\r\nX-Scry-Token: " TOKEN
                             "\r\nContent-Type: application/json\r\n\r\n",
                   &r),
             403);
    CHECK_EQ(route(POST_HEAD "Origin: http://127.0.0.1:8123\r\nContent-Type: application/json"
                             "\r\n\r\n",
                   &r),
             403);
    CHECK_EQ(route(POST_HEAD "Origin: http://127.0.0.1:8123\r\nX-Scry-Token: " TOKEN
                             "\r\nContent-Type: text/plain\r\n\r\n",
                   &r),
             403);
}

static void ask(const char *doc, const struct serve_llm *cl, struct serve_ask *a, int want)
{
    json_t *in = json_loads(doc, 0, NULL);
    char msg[256] = "";
    CHECK_EQ(serve_read_ask(in, cl, a, msg, sizeof(msg)), want);
    json_decref(in);
}

static void test_env_key_rule(void)
{
    struct serve_ask a;
    const struct serve_llm none = {0};
    const struct serve_llm mine = {"openai", "http://127.0.0.1:9000/v1", "m", NULL, NULL, NULL,
                                   "MY_KEY"};
    /* No provider on the command line: each provider's own endpoint gets its key. */
    ask("{\"file\":\"a.py\",\"provider\":\"anthropic\"}", &none, &a, 0);
    CHECK(a.env_key && !a.base_url);
    ask("{\"file\":\"a.py\",\"provider\":\"openai\",\"base_url\":\"http://evil.example\"}", &none,
        &a, 0);
    CHECK(!a.env_key);
    ask("{\"file\":\"a.py\"}", &none, &a, -1); /* no provider anywhere */
    /* The command line's provider: its base URL and settings, with the key. */
    ask("{\"file\":\"a.py\",\"first_line\":2,\"last_line\":3}", &mine, &a, 0);
    CHECK(a.env_key);
    CHECK_STR(a.provider, "openai");
    CHECK_STR(a.base_url, "http://127.0.0.1:9000/v1");
    CHECK_STR(a.model, "m");
    CHECK_STR(a.key_env, "MY_KEY");
    CHECK_EQ(a.first, 2);
    ask("{\"file\":\"a.py\",\"provider\":\"openai\",\"base_url\":\"http://127.0.0.1:9000/v1//\"}",
        &mine, &a, 0);
    CHECK(a.env_key);
    /* Another base URL, another provider: no key from the environment, no --api-key-env. */
    ask("{\"file\":\"a.py\",\"provider\":\"openai\",\"base_url\":\"http://127.0.0.1:9000/v2\"}",
        &mine, &a, 0);
    CHECK(!a.env_key && !a.key_env);
    ask("{\"file\":\"a.py\",\"provider\":\"openai\",\"base_url\":\"http://127.0.0.1:9000\"}",
        &mine, &a, 0);
    CHECK(!a.env_key);
    ask("{\"file\":\"a.py\",\"provider\":\"anthropic\"}", &mine, &a, 0);
    CHECK(!a.env_key && !a.key_env && !a.model);
    /* Bad requests. */
    ask("[1]", &mine, &a, -1);
    ask("{\"first_line\":1}", &mine, &a, -1);
    ask("{\"file\":\"a.py\",\"first_line\":5,\"last_line\":3}", &mine, &a, -1);
}

static const struct tl_test tests[] = {TL(test_parse), TL(test_refused), TL(test_route),
                                       TL(test_env_key_rule)};
TL_MAIN(tests)
