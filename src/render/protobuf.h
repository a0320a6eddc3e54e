/* A protocol-buffers wire encoder, written against the encoding spec
 * (https://protobuf.dev/programming-guides/encoding/), for the few message shapes pprof needs:
 * varint fields (int64, uint64, bool), length-delimited fields (strings, sub-messages) and
 * packed repeated varints. A sub-message is encoded into its own buffer first, then added with
 * its length. Negative int64 values are sign-extended to 64 bits (ten bytes), as the spec says. */
#ifndef SCRY_RENDER_PROTOBUF_H
#define SCRY_RENDER_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

enum { PB_VARINT = 0, PB_LEN = 2 };

void pb_varint(struct strbuf *b, uint64_t v);
void pb_key(struct strbuf *b, uint32_t field, int wire);
/* A varint field; proto3 omits zero scalars, so v == 0 writes nothing. */
void pb_uint(struct strbuf *b, uint32_t field, uint64_t v);
void pb_int(struct strbuf *b, uint32_t field, int64_t v);
/* A length-delimited field, written even when empty (pprof's string_table[0] must be ""). */
void pb_bytes(struct strbuf *b, uint32_t field, const void *data, size_t len);
/* A packed repeated int64/uint64 field (nothing when n == 0). */
void pb_packed(struct strbuf *b, uint32_t field, const int64_t *v, size_t n);

/* gzip (RFC 1952) of in into out (zlib); 0 or -SCRY_E_NO_MEMORY. */
int pb_gzip(const void *in, size_t len, struct strbuf *out);

#endif
