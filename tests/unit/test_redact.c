/* Redaction rules: sensitive names and secret-shaped values are caught, ordinary data is not. */
#include "cpython/redact.h"
#include "testlib.h"

static bool name(const char *s) { return redact_name_is_sensitive(s, strlen(s)); }
static bool secret(const char *s) { return redact_text_is_secret(s, strlen(s)); }

static void test_names(void)
{
    const char *yes[] = {"password", "PASSWORD", "db_passwd", "client_secret", "access_token",
                         "api_key", "ApiKey", "Authorization", "auth", "session_id", "cookie",
                         "Set-Cookie", "credentials", "SECRET_KEY", "refresh-Token"};
    const char *no[] = {"name", "payload", "user", "cache", "listeners", "count", "data", "",
                        "pass", "tok", "sess", "value"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        if (!name(yes[i]))
            tl_fail(__FILE__, __LINE__, "name '%s' should be sensitive", yes[i]);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        if (name(no[i]))
            tl_fail(__FILE__, __LINE__, "name '%s' should not be sensitive", no[i]);
}

static void test_values(void)
{
    const char *yes[] = {
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "sk-0123456789abcdefABCDEF",
        "ghp_0123456789abcdefghijABCDEFGHIJ0123",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "AKIAIOSFODNN7EXAMPLE",
        "key=AKIAIOSFODNN7EXAMPLE;",
        "xoxb-123456789012-abcdefghij",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdEFGH",
        "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig0",
        "0123456789abcdef0123456789abcdef",
        "d41d8cd98f00b204e9800998ecf8427e",
        "token: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 end",
        "dGhpcyBpcyBhIHNlY3JldCBrZXkgMTIzNDU2Nzg5MA==",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow...",
        /* HTTP credentials, URL passwords, assignments to secret names */
        "Authorization: Bearer abcdefgh12",
        "authorization=whatever-it-is",
        "Bearer Zm9vYmFyYmF6cXV4",
        "Proxy-Authorization: Basic dXNlcjpwYXNz",
        "Basic dXNlcjpwYXNz",
        "https://user:hunter2pass@db.example.com/x",
        "postgres://app:s3cr3t@10.0.0.1:5432/db",
        "redis://:onlypassword@cache",
        "password=hunter2",
        "dbname=app user=app password='x y z w'",
        "{\"api_key\": \"abcd1234\"}",
        "SECRET_TOKEN: abcd",
        /* identifiers made of a token are still tokens */
        "ghp_R4nd0mT0k3nV4lu3Xx9Yy8Zz7Ww6Vv5Uu4Tt3",
        "_ghp_R4nd0mT0k3nV4lu3Xx9Yy8Zz7Ww6Vv5Uu4Tt3",
        "x_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7",
    };
    const char *no[] = {
        "",
        "hello world",
        "user:8812",
        "internationalization",
        "/usr/lib/python3.11/site-packages/foo.py",
        "The quick brown fox jumps over the lazy dog 1234",
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "12345678901234567890123",
        "sk-short",
        "AKIA-not-a-key",
        "eyJust a sentence",
        "listener-0001",
        "CamelCaseIdentifierWithoutDigits",
        /* identifiers as programs write them, with digits and capitals */
        "HTTP2ConnectionHandler",
        "test_http2_ConnectionHandler",
        "user_id",
        "payload",
        /* words after the HTTP schemes, URLs without a password, names without a value */
        "bearer instruments",
        "Basic Configuration",
        "ssh://git@github.com/org/repo.git",
        "https://example.com/api?user=x",
        "mailto:someone@example.com",
        "author: Jane",
        "monkey=3",
        "password=",
        "the password: ",
        "Authorization: ",
    };
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        if (!secret(yes[i]))
            tl_fail(__FILE__, __LINE__, "'%s' should look secret", yes[i]);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        if (secret(no[i]))
            tl_fail(__FILE__, __LINE__, "'%s' should not look secret", no[i]);
}

static void test_binary_and_bounds(void)
{
    /* Embedded NULs and bytes >= 0x80 are handled, and only len bytes are looked at. */
    const char buf[] = "abc\0\xff\xfe sk-0123456789abcdefABCDEF";
    CHECK(redact_text_is_secret(buf, sizeof(buf) - 1));
    CHECK(!redact_text_is_secret(buf, 6));
    CHECK(!redact_name_is_sensitive("tokenizer", 3));
    CHECK(redact_name_is_sensitive("tokenizer", 5));
}

/* A secret is seen whatever surrounds it, and at any offset. */
static void test_embedded(void)
{
    const char *tok = "ghp_R4nd0mT0k3nV4lu3Xx9Yy8Zz7Ww6Vv5Uu4Tt3";
    char buf[256];
    for (int pad = 0; pad < 120; pad += 7) {
        snprintf(buf, sizeof(buf), "%*s%s tail", pad, "", tok);
        CHECK(redact_text_is_secret(buf, strlen(buf)));
        snprintf(buf, sizeof(buf), "%*sAuthorization: Bearer %s", pad, "", "abcDEF123456");
        CHECK(redact_text_is_secret(buf, strlen(buf)));
    }
    /* A prefix glued to a word is not a token start. */
    CHECK(!secret("mask-0123456789abcdefgh"));
}

static void test_utf8_cut(void)
{
    const char *s = "ab\xc3\xa9" "cd"; /* ab é cd */
    CHECK_EQ_U64(redact_utf8_cut(s, 6, 10), 6);
    CHECK_EQ_U64(redact_utf8_cut(s, 6, 2), 2);
    CHECK_EQ_U64(redact_utf8_cut(s, 6, 3), 2); /* never half of é */
    CHECK_EQ_U64(redact_utf8_cut(s, 6, 4), 4);
    CHECK_EQ_U64(redact_utf8_cut(s, 6, 0), 0);
    CHECK_EQ_U64(redact_utf8_cut("a\x80\x80\x80\x80\x80", 6, 5), 5); /* not UTF-8: cut at max */
    CHECK_EQ_U64(redact_utf8_cut("\xf0\x9f\x98\x80!", 5, 3), 0); /* a 4-byte character */
}

static const struct tl_test tests[] = {TL(test_names), TL(test_values),
                                       TL(test_binary_and_bounds), TL(test_embedded),
                                       TL(test_utf8_cut)};
TL_MAIN(tests)
