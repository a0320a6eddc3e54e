/* Linear probing with tombstones; grows at 70% load (tombstones included). */
#include "hashmap.h"

#include <stdlib.h>

#include "error.h"

#define TOMBSTONE UINT64_MAX

uint64_t hm_hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static int rehash(struct hashmap *m, size_t newcap)
{
    uint64_t *nk = calloc(newcap, sizeof(*nk));
    uint64_t *nv = calloc(newcap, sizeof(*nv));
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -SCRY_E_NO_MEMORY;
    }
    for (size_t i = 0; i < m->cap; i++) {
        uint64_t k = m->keys[i];
        if (k == 0 || k == TOMBSTONE)
            continue;
        size_t j = hm_hash64(k) & (newcap - 1);
        while (nk[j])
            j = (j + 1) & (newcap - 1);
        nk[j] = k;
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = newcap;
    m->tombstones = 0;
    return 0;
}

/* Slot holding key, or SIZE_MAX. */
static size_t find(const struct hashmap *m, uint64_t key)
{
    if (!m->cap || key == 0 || key == TOMBSTONE)
        return SIZE_MAX;
    size_t i = hm_hash64(key) & (m->cap - 1);
    for (;;) {
        uint64_t k = m->keys[i];
        if (k == key)
            return i;
        if (k == 0)
            return SIZE_MAX;
        i = (i + 1) & (m->cap - 1);
    }
}

int hm_put(struct hashmap *m, uint64_t key, uint64_t val)
{
    if (key == 0 || key == TOMBSTONE)
        return -SCRY_E_INTERNAL;
    size_t at = find(m, key);
    if (at != SIZE_MAX) {
        m->vals[at] = val;
        return 0;
    }
    if ((m->count + m->tombstones + 1) * 10 > m->cap * 7) {
        size_t newcap = m->cap ? m->cap : 16;
        while ((m->count + 1) * 10 > newcap * 5)
            newcap *= 2;
        int err = rehash(m, newcap);
        if (err)
            return err;
    }
    size_t i = hm_hash64(key) & (m->cap - 1);
    while (m->keys[i] != 0 && m->keys[i] != TOMBSTONE)
        i = (i + 1) & (m->cap - 1);
    if (m->keys[i] == TOMBSTONE)
        m->tombstones--;
    m->keys[i] = key;
    m->vals[i] = val;
    m->count++;
    return 0;
}

bool hm_get(const struct hashmap *m, uint64_t key, uint64_t *val)
{
    size_t at = find(m, key);
    if (at == SIZE_MAX)
        return false;
    if (val)
        *val = m->vals[at];
    return true;
}

bool hm_has(const struct hashmap *m, uint64_t key) { return find(m, key) != SIZE_MAX; }

bool hm_del(struct hashmap *m, uint64_t key)
{
    size_t at = find(m, key);
    if (at == SIZE_MAX)
        return false;
    m->keys[at] = TOMBSTONE;
    m->count--;
    m->tombstones++;
    return true;
}

bool hm_next(const struct hashmap *m, size_t *iter, uint64_t *key, uint64_t *val)
{
    for (size_t i = *iter; i < m->cap; i++) {
        uint64_t k = m->keys[i];
        if (k == 0 || k == TOMBSTONE)
            continue;
        if (key)
            *key = k;
        if (val)
            *val = m->vals[i];
        *iter = i + 1;
        return true;
    }
    *iter = m->cap;
    return false;
}

void hm_clear(struct hashmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        m->keys[i] = 0;
    m->count = m->tombstones = 0;
}

void hm_free(struct hashmap *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = m->vals = NULL;
    m->cap = m->count = m->tombstones = 0;
}
