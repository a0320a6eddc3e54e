/* An open-addressing hash map from 64-bit keys (remote addresses, ids) to 64-bit values.
 * Keys 0 ("empty") and UINT64_MAX ("deleted") are reserved: hm_put refuses them and lookups of
 * them find nothing; callers with such a real key must offset it. */
#ifndef SCRY_COMMON_HASHMAP_H
#define SCRY_COMMON_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap {
    uint64_t *keys;
    uint64_t *vals;
    size_t cap; /* power of two, or 0 */
    size_t count;
    size_t tombstones;
};

#define HASHMAP_INIT {NULL, NULL, 0, 0, 0}

/* Inserts or replaces. Returns 0, or -SCRY_E_NO_MEMORY; key must not be 0. */
int hm_put(struct hashmap *m, uint64_t key, uint64_t val);
bool hm_get(const struct hashmap *m, uint64_t key, uint64_t *val);
bool hm_has(const struct hashmap *m, uint64_t key);
bool hm_del(struct hashmap *m, uint64_t key);
/* Iteration: for (size_t i = 0; hm_next(m, &i, &k, &v);) ... ; order is unspecified. */
bool hm_next(const struct hashmap *m, size_t *iter, uint64_t *key, uint64_t *val);
void hm_clear(struct hashmap *m);
void hm_free(struct hashmap *m);

/* The 64-bit mixer used by the map, exported for other hash users. */
uint64_t hm_hash64(uint64_t x);

#endif
