/* Arena: a list of blocks; big requests get a block of their own so small ones are not wasted. */
#include "arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
    struct arena_block *next;
    size_t used;
    size_t size;
    _Alignas(16) unsigned char data[];
};

void *arena_alloc(struct arena *a, size_t size)
{
    size_t bs = a->block_size ? a->block_size : 64 * 1024;
    /* Leaves room for the rounding below and the block header, so calloc's size cannot wrap. */
    if (size > SIZE_MAX - sizeof(struct arena_block) - 16)
        return NULL;
    size = (size + 15) & ~(size_t)15;
    if (size == 0)
        size = 16;
    struct arena_block *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t want = size > bs / 4 ? size : bs;
        struct arena_block *nb = calloc(1, sizeof(*nb) + want);
        if (!nb)
            return NULL;
        nb->size = want;
        if (b && want == size && b->size - b->used >= 64) {
            /* A dedicated block for a big request: keep the current block at the head. */
            nb->next = b->next;
            b->next = nb;
            nb->used = size;
            return nb->data;
        }
        nb->next = b;
        a->head = nb;
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += size;
    return p;
}

void *arena_memdup(struct arena *a, const void *data, size_t size)
{
    void *p = arena_alloc(a, size);
    if (p && size)
        memcpy(p, data, size);
    return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t len)
{
    if (len == SIZE_MAX)
        return NULL;
    char *p = arena_alloc(a, len + 1);
    if (!p)
        return NULL;
    memcpy(p, s, len);
    p[len] = 0;
    return p;
}

char *arena_strdup(struct arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_printf(struct arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = arena_alloc(a, (size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void arena_free(struct arena *a)
{
    struct arena_block *b = a->head;
    while (b) {
        struct arena_block *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
}
