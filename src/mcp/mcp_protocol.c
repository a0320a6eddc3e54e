/* JSON-RPC framing of `scry mcp` (mcp_protocol.h). */
#include "mcp/mcp_protocol.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/sanitize.h"

#define READ_CHUNK 65536

static int out_fd = 1;

void mcp_set_output(int fd)
{
    out_fd = fd;
}

enum mcp_read mcp_read_line(struct mcp_reader *r, char **line, size_t *len)
{
    if (r->consumed) {
        memmove(r->buf, r->buf + r->consumed, r->len - r->consumed);
        r->len -= r->consumed;
        r->consumed = 0;
        r->scanned = 0;
    }
    for (;;) {
        char *nl = r->len > r->scanned ? memchr(r->buf + r->scanned, '\n', r->len - r->scanned)
                                       : NULL;
        if (nl || (r->eof && r->len > 0)) {
            size_t n = nl ? (size_t)(nl - r->buf) : r->len;
            /* Over the cap: a line that was being dropped, or one whose end came in the same
             * read that took it past the cap. */
            bool skipped = r->discarding || n > MCP_MAX_LINE;
            r->discarding = false;
            r->consumed = nl ? n + 1 : n;
            if (skipped)
                return MCP_TOO_LONG;
            r->buf[n] = 0; /* the newline, or the spare byte kept below */
            *line = r->buf;
            *len = n;
            return MCP_LINE;
        }
        if (r->eof)
            return MCP_EOF;
        r->scanned = r->len;
        if (r->len >= MCP_MAX_LINE) {
            /* Too long: forget what we have, and everything up to the next newline. */
            r->discarding = true;
            r->len = r->scanned = 0;
        }
        if (r->cap - r->len < READ_CHUNK + 1) {
            size_t cap = r->len + READ_CHUNK + 1;
            char *b = realloc(r->buf, cap);
            if (!b)
                return MCP_READ_ERROR;
            r->buf = b;
            r->cap = cap;
        }
        ssize_t got = read(r->fd, r->buf + r->len, READ_CHUNK);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            log_warn("mcp: reading the input: %s", strerror(errno));
            return MCP_READ_ERROR;
        }
        if (got == 0)
            r->eof = true;
        r->len += (size_t)got;
    }
}

void mcp_reader_free(struct mcp_reader *r)
{
    free(r->buf);
    r->buf = NULL;
    r->len = r->cap = 0;
}

bool mcp_send(json_t *msg)
{
    /* Compact: no raw newline inside a message; escapes keep any in strings. */
    char *text = json_dumps(msg, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(msg);
    if (!text)
        return false;
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) {
        free(text);
        return false;
    }
    line[n] = '\n';
    size_t off = 0;
    while (off < n + 1) {
        ssize_t w = write(out_fd, line + off, n + 1 - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            log_info("mcp: the client is gone (%s)", strerror(errno));
            free(line);
            return false;
        }
        off += (size_t)w;
    }
    free(line);
    return true;
}

/* Whether n bytes of s are shown as they are, newlines aside. */
static bool clean_but_newlines(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        const char *repl;
        size_t len = san_next(s + i, n - i, &repl);
        if (repl && s[i] != '\n')
            return false;
        i += len;
    }
    return true;
}

/* A cleaned copy of the string s (n bytes), or NULL when it needs none (or memory ran out). */
static json_t *cleaned(const char *s, size_t n)
{
    if (clean_but_newlines(s, n))
        return NULL;
    struct strbuf sb = STRBUF_INIT;
    san_addn_lines(&sb, s, n);
    json_t *v = sb_failed(&sb) ? NULL : json_stringn(sb.buf ? sb.buf : "", sb.len);
    sb_release(&sb);
    return v;
}

void mcp_clean(json_t *v)
{
    size_t i;
    json_t *x;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x) {
            json_t *c = json_is_string(x) ? cleaned(json_string_value(x), json_string_length(x))
                                          : NULL;
            if (c)
                json_array_set_new(v, i, c);
            else
                mcp_clean(x);
        }
        return;
    }
    if (!json_is_object(v))
        return;
    const char *k;
    void *tmp;
    json_t *renamed = NULL; /* members whose names needed cleaning, under their clean names */
    json_object_foreach_safe(v, tmp, k, x) {
        json_t *c = json_is_string(x) ? cleaned(json_string_value(x), json_string_length(x))
                                      : NULL;
        if (c) {
            json_object_set_new(v, k, c);
            x = c;
        } else {
            mcp_clean(x);
        }
        if (san_is_clean(k, strlen(k)))
            continue;
        struct strbuf name = STRBUF_INIT;
        san_add(&name, k);
        if (!renamed)
            renamed = json_object();
        json_object_set(renamed, sb_str(&name), x);
        sb_release(&name);
        json_object_del(v, k);
    }
    json_object_update(v, renamed);
    json_decref(renamed);
}

static json_t *envelope(const json_t *id)
{
    json_t *m = json_pack("{s:s}", "jsonrpc", "2.0");
    if (m && id)
        json_object_set(m, "id", (json_t *)id);
    return m;
}

bool mcp_send_result(const json_t *id, json_t *result)
{
    json_t *m = envelope(id);
    if (!m || !result) {
        json_decref(m);
        json_decref(result);
        return mcp_send_error(id, MCP_INTERNAL_ERROR, "out of memory", NULL);
    }
    /* What a tool answers is shown to a person by the client: names, paths, command lines
     * and a program's output come from elsewhere (the id is the client's own, echoed). */
    mcp_clean(result);
    json_object_set_new(m, "result", result);
    return mcp_send(m);
}

bool mcp_send_error(const json_t *id, int code, const char *message, json_t *data)
{
    json_t *m = envelope(id);
    json_t *e = json_pack("{s:i,s:s}", "code", code, "message", san_str(message));
    if (!m || !e) {
        json_decref(m);
        json_decref(e);
        json_decref(data);
        return false;
    }
    if (data) {
        mcp_clean(data);
        json_object_set_new(e, "data", data);
    }
    json_object_set_new(m, "error", e);
    return mcp_send(m);
}
