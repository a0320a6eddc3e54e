/* The heap walker's containers (heap_walk_int.h): dicts of every layout (keys decoded by
 * objects.c), sets, the item arrays of lists and tuples, and the fixed pointer fields that the
 * layout tables list per kind. */
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "cpython/heap_walk_int.h"

int hw_dict_keys(struct hw *w, uint64_t keys, struct py_dict_keys *k)
{
    uint8_t hdr[64];
    if (w->H->dk_indices > sizeof(hdr))
        return -SCRY_E_INTERNAL;
    int err = mc_read(&w->mc, keys, hdr, w->H->dk_indices);
    return err ? err : py_dict_keys_decode(w->H, keys, hdr, k);
}

int hw_dict_tables(struct hw *w, uint64_t dict, uint64_t *keys, uint64_t *values)
{
    int err = mc_read_u64(&w->mc, dict + w->L->dict_keys, keys);
    return err ? err : mc_read_u64(&w->mc, dict + w->L->dict_values, values);
}

int hw_dict_entry(struct hw *w, const struct py_dict_keys *k, uint64_t values, uint64_t i,
                  uint64_t *key, uint64_t *value)
{
    uint8_t e[64];
    if (k->esize > sizeof(e))
        return -SCRY_E_INTERNAL;
    int err = mc_read(&w->mc, k->entries + i * k->esize, e, k->esize);
    if (err)
        return err;
    *key = rd64(e + k->key_off);
    *value = rd64(e + k->value_off);
    return values ? mc_read_u64(&w->mc, values + w->H->dv_values + i * PTR, value) : 0;
}

uint64_t hw_dict_get(struct hw *w, uint64_t dict, const char *key)
{
    uint64_t keys, values;
    struct py_dict_keys k;
    if (hw_dict_tables(w, dict, &keys, &values) || !keys || hw_dict_keys(w, keys, &k) ||
        k.nentries > 1 << 20)
        return 0;
    for (uint64_t i = 0; i < k.nentries; i++) {
        uint64_t kobj, val;
        if (hw_dict_entry(w, &k, 0, i, &kobj, &val))
            return 0;
        if (!kobj)
            continue;
        const char *s = hw_str_text(w, kobj, NULL);
        if (s && strcmp(s, key) == 0) {
            if (values && mc_read_u64(&w->mc, values + w->H->dv_values + i * PTR, &val))
                return 0;
            return val;
        }
    }
    return 0;
}

int hw_ref_fields(struct hw *w, const struct holder *h, uint64_t base,
                  const struct py_ref_field *f, size_t max)
{
    for (size_t i = 0; i < max && f[i].label; i++) {
        uint64_t p;
        if (mc_read_u64(&w->mc, base + f[i].off, &p) == 0 && p) {
            int err = hw_ref_stable(w, h, p, (enum hw_edge_kind)f[i].kind, f[i].label, false);
            if (err)
                return err;
        }
    }
    return 0;
}

int hw_ref_items(struct hw *w, const struct holder *h, uint64_t items, uint64_t n)
{
    uint64_t buf[CHUNK];
    char label[32];
    for (uint64_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? (size_t)(n - i) : CHUNK;
        int err = mc_read(&w->mc, items + i * PTR, buf, k * PTR);
        if (err) {
            w->st->unreadable++;
            return 0;
        }
        for (size_t j = 0; j < k; j++) {
            if (!buf[j])
                continue;
            const char *l = hw_index_label(w, i + j, label);
            err = l == label ? hw_ref(w, h, buf[j], HW_EDGE_INDEX, l, false)
                             : hw_ref_stable(w, h, buf[j], HW_EDGE_INDEX, l, false);
            if (err)
                return err;
        }
    }
    return 0;
}

/* A dict's entries; returns its __sizeof__ in *size. */
int hw_walk_dict(struct hw *w, const struct holder *h, uint64_t dict, int64_t basicsize,
                 uint64_t *size)
{
    const struct py_heap_layout *H = w->H;
    uint64_t keys, values;
    struct py_dict_keys k;
    *size = (uint64_t)basicsize;
    if (hw_dict_tables(w, dict, &keys, &values))
        return 0;
    if (!keys || hw_dict_keys(w, keys, &k) || k.nentries > MAX_ITEMS || k.usable > MAX_ITEMS) {
        w->st->unreadable++;
        return 0;
    }
    if (values)
        *size += (k.nentries + k.usable) * PTR;
    if (k.refcnt == 1) { /* not a class's shared keys */
        uint64_t ksize = py_dict_keys_sizeof(H, k.log2_size, k.log2_index_bytes, k.kind);
        *size += ksize;
        int err = hw_buffer(w, dict, keys, ksize);
        if (err)
            return err;
    }
    if (values && w->L->values_kind == PY_VALUES_313) {
        uint8_t embedded = 0;
        if (mc_read(&w->mc, values + H->dv_embedded, &embedded, 1) == 0 && embedded)
            return 0; /* the owning instance reports its inline values, as dict_traverse does */
    }
    if (values) { /* split values of their own (3.11, 3.12: after a prefix of a few bytes) */
        int err = hw_buffer(w, dict, values, (k.nentries + k.usable) * PTR);
        if (err)
            return err;
    }
    if (values)
        values += H->dv_values;

    uint8_t buf[CHUNK * 24];
    uint64_t vals[CHUNK];
    char label[MAX_NAME * 2 + 64];
    size_t per = sizeof(buf) / k.esize < CHUNK ? sizeof(buf) / k.esize : CHUNK;
    for (uint64_t i = 0; i < k.nentries; i += per) {
        size_t n = k.nentries - i < per ? (size_t)(k.nentries - i) : per;
        if (mc_read(&w->mc, k.entries + i * k.esize, buf, n * k.esize) ||
            (values && mc_read(&w->mc, values + i * PTR, vals, n * PTR))) {
            w->st->unreadable++;
            return 0;
        }
        for (size_t j = 0; j < n; j++) {
            const uint8_t *e = buf + j * k.esize;
            uint64_t key = rd64(e + k.key_off);
            uint64_t val = values ? vals[j] : rd64(e + k.value_off);
            if (!key || !val)
                continue;
            bool sensitive;
            hw_key_label(w, key, label, sizeof(label), &sensitive);
            int err = hw_ref(w, h, val, HW_EDGE_DICT_VALUE, label, sensitive);
            if (!err && !values) { /* split keys belong to the type's shared keys */
                char klabel[sizeof(label) + 8];
                snprintf(klabel, sizeof(klabel), "<key>%s", label);
                err = hw_ref(w, h, key, HW_EDGE_DICT_KEY, klabel, false);
            }
            if (err)
                return err;
        }
    }
    return 0;
}

int hw_walk_set(struct hw *w, const struct holder *h, uint64_t set, uint64_t *size)
{
    const struct py_heap_layout *H = w->H;
    uint64_t mask, table;
    if (mc_read_u64(&w->mc, set + H->set_mask, &mask) ||
        mc_read_u64(&w->mc, set + H->set_table, &table) || mask >= MAX_ITEMS ||
        H->setentry_size > 64) {
        w->st->unreadable++;
        return 0;
    }
    if (table != set + H->set_smalltable) {
        *size += (mask + 1) * H->setentry_size;
        int err = hw_buffer(w, set, table, (mask + 1) * H->setentry_size);
        if (err)
            return err;
    }
    uint8_t buf[CHUNK * 16];
    size_t per = sizeof(buf) / H->setentry_size;
    for (uint64_t i = 0; i <= mask; i += per) {
        size_t n = mask + 1 - i < per ? (size_t)(mask + 1 - i) : per;
        if (mc_read(&w->mc, table + i * H->setentry_size, buf, n * H->setentry_size)) {
            w->st->unreadable++;
            return 0;
        }
        for (size_t j = 0; j < n; j++) {
            uint64_t key = rd64(buf + j * H->setentry_size + H->setentry_key);
            if (!key || key == w->set_dummy)
                continue;
            int err = hw_ref_stable(w, h, key, HW_EDGE_INDEX, "<member>", false);
            if (err)
                return err;
        }
    }
    return 0;
}
