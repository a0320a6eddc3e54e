/* A bump allocator for data that dies together (one command's strings, one snapshot's tables). */
#ifndef SCRY_COMMON_ARENA_H
#define SCRY_COMMON_ARENA_H

#include <stddef.h>

struct arena_block;

struct arena {
    struct arena_block *head;
    size_t block_size; /* 0 means the default (64 KiB) */
};

#define ARENA_INIT {NULL, 0}

/* Returns 16-byte aligned zeroed memory, or NULL when out of memory or size overflows. */
void *arena_alloc(struct arena *a, size_t size);
void *arena_memdup(struct arena *a, const void *data, size_t size);
/* Copies len bytes and adds a NUL. */
char *arena_strndup(struct arena *a, const char *s, size_t len);
char *arena_strdup(struct arena *a, const char *s);
char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void arena_free(struct arena *a);

#endif
