/* Cursor implementation: every read checks the remaining length before touching memory. */
#include "cursor.h"

#include <string.h>

void cur_init(struct cursor *c, const void *data, size_t len)
{
    c->base = data;
    c->len = data ? len : 0;
    c->off = 0;
    c->failed = false;
    c->fail_off = 0;
}

void cur_fail(struct cursor *c)
{
    if (!c->failed) {
        c->failed = true;
        c->fail_off = c->off;
    }
}

static bool need(struct cursor *c, size_t n)
{
    if (c->failed)
        return false;
    if (n > c->len - c->off) {
        cur_fail(c);
        return false;
    }
    return true;
}

struct cursor cur_sub(struct cursor *c, size_t off, size_t len)
{
    struct cursor s;
    if (c->failed || off > c->len || len > c->len - off) {
        if (!c->failed) {
            c->failed = true;
            c->fail_off = off;
        }
        cur_init(&s, NULL, 0);
        s.failed = true;
        s.fail_off = off;
        return s;
    }
    cur_init(&s, c->base + off, len);
    return s;
}

uint8_t cur_u8(struct cursor *c)
{
    if (!need(c, 1))
        return 0;
    return c->base[c->off++];
}

uint16_t cur_u16(struct cursor *c)
{
    if (!need(c, 2))
        return 0;
    const uint8_t *p = c->base + c->off;
    c->off += 2;
    return (uint16_t)(p[0] | (p[1] << 8));
}

uint32_t cur_u32(struct cursor *c)
{
    if (!need(c, 4))
        return 0;
    const uint8_t *p = c->base + c->off;
    c->off += 4;
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

uint64_t cur_u64(struct cursor *c)
{
    /* One bound check for all 8 bytes, so a short read fails at the u64's own offset. */
    if (!need(c, 8))
        return 0;
    uint64_t lo = cur_u32(c);
    uint64_t hi = cur_u32(c);
    return lo | (hi << 32);
}

int64_t cur_i64(struct cursor *c) { return (int64_t)cur_u64(c); }

const uint8_t *cur_bytes(struct cursor *c, size_t n)
{
    if (!need(c, n))
        return NULL;
    const uint8_t *p = c->base + c->off;
    c->off += n;
    return p;
}

void cur_read(struct cursor *c, void *out, size_t n)
{
    const uint8_t *p = cur_bytes(c, n);
    if (p)
        memcpy(out, p, n);
    else
        memset(out, 0, n);
}

void cur_skip(struct cursor *c, size_t n)
{
    if (need(c, n))
        c->off += n;
}

void cur_seek(struct cursor *c, size_t off)
{
    if (c->failed)
        return;
    if (off > c->len) {
        c->failed = true;
        c->fail_off = off;
        return;
    }
    c->off = off;
}

void cur_align(struct cursor *c, size_t align)
{
    size_t pad = (align - (c->off & (align - 1))) & (align - 1);
    cur_skip(c, pad);
}

const char *cur_cstr(struct cursor *c)
{
    if (c->failed)
        return NULL;
    if (c->off == c->len) { /* also keeps memchr and pointer arithmetic off a NULL base */
        cur_fail(c);
        return NULL;
    }
    const uint8_t *p = c->base + c->off;
    const uint8_t *nul = memchr(p, 0, c->len - c->off);
    if (!nul) {
        cur_fail(c);
        return NULL;
    }
    c->off += (size_t)(nul - p) + 1;
    return (const char *)p;
}

uint32_t cur_varint6(struct cursor *c)
{
    uint32_t v = 0;
    unsigned shift = 0;
    for (;;) {
        uint8_t b = cur_u8(c);
        if (c->failed)
            return 0;
        /* The sixth group (shift 30) may carry only 2 bits, and there is no seventh: anything
         * else does not fit 32 bits, and silently dropping bits would give a wrong line. */
        if (shift == 30 && ((b & 63) > 3 || (b & 64))) {
            c->off--;
            cur_fail(c);
            return 0;
        }
        v |= (uint32_t)(b & 63) << shift;
        if (!(b & 64))
            return v;
        shift += 6;
    }
}

int32_t cur_svarint6(struct cursor *c)
{
    uint32_t u = cur_varint6(c);
    return (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
}

size_t cur_remaining(const struct cursor *c) { return c->failed ? 0 : c->len - c->off; }
bool cur_ok(const struct cursor *c) { return !c->failed; }
bool cur_at_end(const struct cursor *c) { return !c->failed && c->off == c->len; }
