/* A bounds-checked little-endian reader over untrusted bytes. The first failure sticks: every
 * later read returns zero, and the offset where it happened is kept for the error message, so a
 * parser can read a whole record and check once at the end. */
#ifndef SCRY_COMMON_CURSOR_H
#define SCRY_COMMON_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cursor {
    const uint8_t *base;
    size_t len;
    size_t off;
    bool failed;
    size_t fail_off; /* offset of the first read that did not fit */
};

void cur_init(struct cursor *c, const void *data, size_t len);
/* A cursor over [off, off+len) of c, or a failed one (and c failed) if that is out of range. */
struct cursor cur_sub(struct cursor *c, size_t off, size_t len);

uint8_t cur_u8(struct cursor *c);
uint16_t cur_u16(struct cursor *c);
uint32_t cur_u32(struct cursor *c);
uint64_t cur_u64(struct cursor *c);
int64_t cur_i64(struct cursor *c);
/* Pointer to the next n bytes (and skips them), or NULL after a failure. */
const uint8_t *cur_bytes(struct cursor *c, size_t n);
void cur_read(struct cursor *c, void *out, size_t n);
void cur_skip(struct cursor *c, size_t n);
void cur_seek(struct cursor *c, size_t off);
/* Skips to the next multiple of align (a power of two) counted from base. */
void cur_align(struct cursor *c, size_t align);
/* A NUL-terminated string inside the buffer; returns NULL (and fails) if no NUL before the end. */
const char *cur_cstr(struct cursor *c);
/* Varints of CPython's location table: 6-bit groups, low first, bit 6 = more. */
uint32_t cur_varint6(struct cursor *c);
int32_t cur_svarint6(struct cursor *c);

size_t cur_remaining(const struct cursor *c);
bool cur_ok(const struct cursor *c);
bool cur_at_end(const struct cursor *c);
/* Marks the cursor failed at its current offset (for semantic errors found by the caller). */
void cur_fail(struct cursor *c);

#endif
