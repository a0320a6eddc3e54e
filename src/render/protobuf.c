/* The protocol-buffers wire encoder and gzip wrapper (see protobuf.h). */
#include "render/protobuf.h"

#include <string.h>

#include <zlib.h>

#include "common/error.h"

void pb_varint(struct strbuf *b, uint64_t v)
{
    unsigned char buf[10];
    size_t n = 0;
    do {
        unsigned char c = v & 0x7f;
        v >>= 7;
        buf[n++] = c | (v ? 0x80 : 0);
    } while (v);
    sb_add(b, buf, n);
}

void pb_key(struct strbuf *b, uint32_t field, int wire)
{
    pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wire);
}

void pb_uint(struct strbuf *b, uint32_t field, uint64_t v)
{
    if (!v)
        return;
    pb_key(b, field, PB_VARINT);
    pb_varint(b, v);
}

void pb_int(struct strbuf *b, uint32_t field, int64_t v)
{
    pb_uint(b, field, (uint64_t)v);
}

void pb_bytes(struct strbuf *b, uint32_t field, const void *data, size_t len)
{
    pb_key(b, field, PB_LEN);
    pb_varint(b, len);
    if (len)
        sb_add(b, data, len);
}

void pb_packed(struct strbuf *b, uint32_t field, const int64_t *v, size_t n)
{
    if (!n)
        return;
    struct strbuf tmp = STRBUF_INIT;
    for (size_t i = 0; i < n; i++)
        pb_varint(&tmp, (uint64_t)v[i]);
    pb_bytes(b, field, tmp.buf, tmp.len);
    sb_release(&tmp);
}

int pb_gzip(const void *in, size_t len, struct strbuf *out)
{
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    /* 15 + 16: a gzip header and trailer around the deflate stream. */
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
        return err_fail(SCRY_E_NO_MEMORY, "cannot start gzip compression");
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)len;
    unsigned char buf[65536];
    int rc;
    do {
        zs.next_out = buf;
        zs.avail_out = sizeof(buf);
        rc = deflate(&zs, Z_FINISH);
        if (rc == Z_STREAM_ERROR) {
            deflateEnd(&zs);
            return err_fail(SCRY_E_NO_MEMORY, "gzip compression failed");
        }
        sb_add(out, buf, sizeof(buf) - zs.avail_out);
    } while (rc != Z_STREAM_END);
    deflateEnd(&zs);
    return 0;
}
