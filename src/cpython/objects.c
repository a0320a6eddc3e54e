/* Object layouts read through the layout tables: decoders over bytes the caller read (the heap
 * walker's block cache, or the readers below), and readers through the runtime's reader. Limits:
 * strings are cut at the caller's maximum, dicts with absurd sizes are refused, so a corrupt
 * target cannot make scry loop or allocate without bound. */
#include "objects.h"

#include <stdint.h>
#include <string.h>

#include "common/error.h"

#define DICT_MAX_ENTRIES (1ULL << 32)
#define STR_MAX_LENGTH (1ULL << 40)

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The object layouts beyond struct py_layout (dict keys and values, int tags): the heap
 * layout table of the target's version. */
static const struct py_heap_layout *heap_layout(struct py_runtime *rt)
{
    return py_runtime_heap_layout(rt);
}

int py_type_of(struct py_runtime *rt, uint64_t obj, uint64_t *type)
{
    return rd_read_u64(rt->rd, obj + rt->layout.ob_type, type);
}

size_t py_str_hdr_size(const struct py_layout *L)
{
    /* the compact header, then the data pointer of a legacy (not compact) str */
    return L->str_compact_size + 8;
}

int py_str_decode(const struct py_layout *L, uint64_t obj, const uint8_t *hdr,
                  struct py_str_hdr *h)
{
    /* PyASCIIObject.state: interned:2, kind:3, compact:1, ascii:1 (the same bits 3.11-3.15) */
    uint32_t state;
    memcpy(&state, hdr + L->str_state, 4);
    h->length = rd64(hdr + L->str_length);
    h->interned = (state & 3) != 0;
    h->kind = (int)((state >> 2) & 7);
    h->compact = (state >> 5) & 1;
    h->ascii = (state >> 6) & 1;
    if (h->length > STR_MAX_LENGTH || (h->kind != 1 && h->kind != 2 && h->kind != 4))
        return err_fail(SCRY_E_READ_FAILED, "str at 0x%llx has an invalid header",
                        (unsigned long long)obj);
    h->utf8 = h->utf8_length = 0;
    if (h->compact && h->ascii) {
        h->data = obj + L->str_ascii_size;
    } else {
        /* PyCompactUnicodeObject: utf8_length, then utf8, right after the ASCII header */
        h->utf8_length = rd64(hdr + L->str_ascii_size);
        h->utf8 = rd64(hdr + L->str_ascii_size + 8);
        h->data = h->compact ? obj + L->str_compact_size : rd64(hdr + L->str_compact_size);
    }
    return 0;
}

uint64_t py_str_sizeof(const struct py_layout *L, const struct py_str_hdr *h)
{
    uint64_t size;
    if (h->compact && h->ascii)
        size = L->str_ascii_size + h->length + 1;
    else if (h->compact)
        size = L->str_compact_size + (h->length + 1) * (uint64_t)h->kind;
    else /* PyUnicodeObject: the compact header and its data pointer */
        size = L->str_compact_size + 8 + (h->data ? (h->length + 1) * (uint64_t)h->kind : 0);
    if (!(h->compact && h->ascii) && h->utf8 && h->utf8 != h->data)
        size += h->utf8_length + 1;
    return size;
}

/* The str header of obj through the reader; a str subclass is accepted when its type says so. */
static int str_info(struct py_runtime *rt, uint64_t obj, struct py_str_hdr *si)
{
    const struct py_layout *L = &rt->layout;
    uint8_t hdr[96];
    size_t n = py_str_hdr_size(L);
    if (n > sizeof(hdr))
        return err_fail(SCRY_E_INTERNAL, "str header too large");
    int err = rd_read(rt->rd, obj, hdr, n);
    if (err)
        return err;
    if (rt->types.str && rd64(hdr + L->ob_type) != rt->types.str) {
        /* A str subclass has another type: accept it only if its state word looks sane. */
        uint64_t tp = rd64(hdr + L->ob_type), flags;
        if (!tp || rd_read_u64(rt->rd, tp + L->tp_flags, &flags) ||
            !(flags & TPFLAGS_UNICODE_SUBCLASS))
            return err_fail(SCRY_E_READ_FAILED, "object at 0x%llx is not a str",
                            (unsigned long long)obj);
    }
    return py_str_decode(L, obj, hdr, si);
}

static size_t utf8_encode(uint32_t cp, char *b)
{
    if (cp >= 0xd800 && cp <= 0xdfff) /* lone surrogates cannot be encoded: U+FFFD */
        cp = 0xfffd;
    if (cp < 0x80) {
        b[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        b[0] = (char)(0xc0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 63));
        return 2;
    }
    if (cp < 0x10000) {
        b[0] = (char)(0xe0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 63));
        b[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    if (cp > 0x10ffff)
        cp = 0xfffd;
    b[0] = (char)(0xf0 | (cp >> 18));
    b[1] = (char)(0x80 | ((cp >> 12) & 63));
    b[2] = (char)(0x80 | ((cp >> 6) & 63));
    b[3] = (char)(0x80 | (cp & 63));
    return 4;
}

bool py_utf8_from_chars(struct strbuf *out, const uint8_t *chars, size_t n, int kind, size_t start,
                        size_t max_bytes)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t cp;
        if (kind == 1) {
            cp = chars[i];
        } else if (kind == 2) {
            uint16_t u;
            memcpy(&u, chars + 2 * i, 2);
            cp = u;
        } else {
            memcpy(&cp, chars + 4 * i, 4);
        }
        char e[4];
        size_t len = utf8_encode(cp, e);
        if (out->len - start + len > max_bytes)
            return false;
        sb_add(out, e, len);
    }
    return true;
}

int py_read_str(struct py_runtime *rt, uint64_t obj, size_t max_chars, struct strbuf *out)
{
    struct py_str_hdr si;
    int err = str_info(rt, obj, &si);
    if (err)
        return err;
    size_t count = si.length < max_chars ? (size_t)si.length : max_chars;
    uint8_t buf[1024];
    size_t per = sizeof(buf) / (size_t)si.kind;
    for (size_t done = 0; done < count;) {
        size_t chunk = count - done < per ? count - done : per;
        err = rd_read(rt->rd, si.data + done * (size_t)si.kind, buf, chunk * (size_t)si.kind);
        if (err)
            return err;
        py_utf8_from_chars(out, buf, chunk, si.kind, out->len, SIZE_MAX);
        done += chunk;
    }
    if (sb_failed(out)) /* the agent, out of memory */
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading a string");
    return 0;
}

int py_str_equals(struct py_runtime *rt, uint64_t obj, const char *s, bool *equal)
{
    struct py_str_hdr si;
    *equal = false;
    int err = str_info(rt, obj, &si);
    if (err)
        return err;
    size_t len = strlen(s);
    /* Names compared here are ASCII, so a match needs a 1-byte kind and the same length. */
    if (si.kind != 1 || si.length != len || len > 4096)
        return 0;
    char buf[4096];
    err = rd_read(rt->rd, si.data, buf, len);
    if (err)
        return err;
    *equal = memcmp(buf, s, len) == 0;
    return 0;
}

void py_long_shape(const struct py_layout *L, uint64_t tag, uint64_t *ndigits, bool *negative)
{
    if (L->long_has_lv_tag) { /* digit count << 3 | sign (0 positive, 1 zero, 2 negative) */
        *ndigits = tag >> 3;
        *negative = (tag & 3) == 2;
    } else {
        int64_t size = (int64_t)tag;
        *negative = size < 0;
        *ndigits = *negative ? (uint64_t)-size : (uint64_t)size;
    }
}

int py_read_int(struct py_runtime *rt, uint64_t obj, int64_t *value, bool *is_unsigned_large)
{
    const struct py_layout *L = &rt->layout;
    const struct py_heap_layout *H = heap_layout(rt);
    uint64_t tag;
    if (!H)
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON, "no object layout for Python 3.%d", rt->minor);
    int err = rd_read_u64(rt->rd, obj + H->long_tag, &tag);
    if (err)
        return err;
    uint64_t ndigits;
    bool negative;
    py_long_shape(L, tag, &ndigits, &negative);
    if (ndigits > 3)
        return err_fail(SCRY_E_READ_FAILED, "int at 0x%llx does not fit in 64 bits",
                        (unsigned long long)obj);
    uint32_t digits[3] = {0, 0, 0};
    if (ndigits) {
        err = rd_read(rt->rd, obj + L->long_digits, digits, ndigits * 4);
        if (err)
            return err;
    }
    unsigned __int128 v = 0;
    for (int i = (int)ndigits - 1; i >= 0; i--)
        v = (v << 30) | (digits[i] & 0x3fffffff);
    if (v > UINT64_MAX || (negative && v > (unsigned __int128)INT64_MAX + 1))
        return err_fail(SCRY_E_READ_FAILED, "int at 0x%llx does not fit in 64 bits",
                        (unsigned long long)obj);
    if (is_unsigned_large)
        *is_unsigned_large = !negative && v > INT64_MAX;
    *value = negative ? (int64_t)(0 - (uint64_t)v) : (int64_t)(uint64_t)v;
    return 0;
}

int py_dict_keys_decode(const struct py_heap_layout *H, uint64_t keys, const uint8_t *hdr,
                        struct py_dict_keys *k)
{
    k->refcnt = rd64(hdr + H->dk_refcnt);
    k->usable = rd64(hdr + H->dk_usable);
    k->nentries = rd64(hdr + H->dk_nentries);
    k->log2_size = hdr[H->dk_log2_size];
    k->log2_index_bytes = hdr[H->dk_log2_index_bytes];
    k->kind = hdr[H->dk_kind];
    if (k->log2_size > 40 || k->log2_index_bytes > 40 || k->kind > 2 ||
        k->nentries > DICT_MAX_ENTRIES || k->usable > DICT_MAX_ENTRIES)
        return err_fail(SCRY_E_READ_FAILED, "dict keys at 0x%llx have an invalid header",
                        (unsigned long long)keys);
    k->entries = keys + H->dk_indices + (1ULL << k->log2_index_bytes);
    bool general = k->kind == PY_DICT_KIND_GENERAL;
    k->esize = (uint32_t)(general ? H->dke_size : H->dkue_size);
    k->key_off = (uint32_t)(general ? H->dke_key : H->dkue_key);
    k->value_off = (uint32_t)(general ? H->dke_value : H->dkue_value);
    return 0;
}

uint64_t py_dict_keys_sizeof(const struct py_heap_layout *H, uint8_t log2_size,
                             uint8_t log2_index_bytes, int kind)
{
    uint64_t usable = ((1ULL << log2_size) << 1) / 3; /* USABLE_FRACTION */
    return H->dk_indices + (1ULL << log2_index_bytes) +
           usable * (kind == PY_DICT_KIND_GENERAL ? H->dke_size : H->dkue_size);
}

/* Points `it` at a keys object; `values` is the split-values array (0 for a combined table). */
static int iter_keys(struct py_runtime *rt, uint64_t keys, uint64_t values,
                     struct py_dict_iter *it)
{
    const struct py_heap_layout *H = heap_layout(rt);
    uint8_t kh[64];
    if (!H || H->dk_indices > sizeof(kh))
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON, "no dict layout for Python 3.%d", rt->minor);
    int err = rd_read(rt->rd, keys, kh, H->dk_indices);
    if (!err)
        err = py_dict_keys_decode(H, keys, kh, &it->k);
    if (err)
        return err;
    it->values = values;
    it->index = 0;
    return 0;
}

/* The array of a split dict's (or an instance's) values: after PyDictValues' header (3.13+). */
static uint64_t values_array(struct py_runtime *rt, uint64_t values)
{
    return values + heap_layout(rt)->dv_values;
}

int py_dict_iter_init(struct py_runtime *rt, uint64_t dict, struct py_dict_iter *it)
{
    const struct py_layout *L = &rt->layout;
    uint64_t keys, values;
    memset(it, 0, sizeof(*it));
    it->dict = dict;
    int err = rd_read_u64(rt->rd, dict + L->dict_keys, &keys);
    if (!err)
        err = rd_read_u64(rt->rd, dict + L->dict_values, &values);
    if (err)
        return err;
    if (!keys)
        return err_fail(SCRY_E_READ_FAILED, "dict at 0x%llx has no keys",
                        (unsigned long long)dict);
    if (!heap_layout(rt))
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON, "no dict layout for Python 3.%d", rt->minor);
    return iter_keys(rt, keys, values ? values_array(rt, values) : 0, it);
}

int py_dict_next(struct py_runtime *rt, struct py_dict_iter *it, uint64_t *key, uint64_t *value)
{
    const struct py_dict_keys *k = &it->k;
    while (it->index < k->nentries) {
        uint64_t i = it->index++;
        uint8_t e[64];
        if (k->esize > sizeof(e))
            return err_fail(SCRY_E_INTERNAL, "dict entry too large");
        int err = rd_read(rt->rd, k->entries + i * k->esize, e, k->esize);
        if (err)
            return err;
        *key = rd64(e + k->key_off);
        *value = rd64(e + k->value_off);
        if (k->kind != PY_DICT_KIND_GENERAL && it->values) {
            err = rd_read_u64(rt->rd, it->values + i * 8, value);
            if (err)
                return err;
        }
        if (*key && *value)
            return 1;
    }
    return 0;
}

int py_dict_get_str(struct py_runtime *rt, uint64_t dict, const char *key, uint64_t *value)
{
    struct py_dict_iter it;
    uint64_t k, v;
    int err = py_dict_iter_init(rt, dict, &it), more;
    *value = 0;
    if (err)
        return err;
    while ((more = py_dict_next(rt, &it, &k, &v)) > 0) {
        bool eq = false;
        /* Keys of other types (ints in a general dict) are simply not equal. */
        if (py_str_equals(rt, k, key, &eq) == 0 && eq) {
            *value = v;
            return 0;
        }
    }
    return more;
}

/* Looks name up in split or inline values, whose keys are the type's shared keys. */
static int values_attr(struct py_runtime *rt, uint64_t type, uint64_t values, uint64_t capacity,
                       const char *name, uint64_t *value)
{
    uint64_t keys;
    struct py_dict_iter it;
    int err = rd_read_u64(rt->rd, type + rt->layout.ht_cached_keys, &keys);
    if (err || !keys)
        return err;
    err = iter_keys(rt, keys, 0, &it);
    if (err)
        return err;
    for (uint64_t i = 0; i < it.k.nentries && i < capacity; i++) {
        uint64_t k;
        bool eq = false;
        err = rd_read_u64(rt->rd, it.k.entries + i * it.k.esize + it.k.key_off, &k);
        if (err)
            return err;
        if (k && py_str_equals(rt, k, name, &eq) == 0 && eq)
            return rd_read_u64(rt->rd, values + i * 8, value);
    }
    return 0;
}

int py_instance_attr(struct py_runtime *rt, uint64_t obj, const char *name, uint64_t *value)
{
    const struct py_layout *L = &rt->layout;
    uint64_t type, flags, dict = 0;
    *value = 0;
    int err = py_type_of(rt, obj, &type);
    if (!err)
        err = rd_read_u64(rt->rd, type + L->tp_flags, &flags);
    if (err)
        return err;
    if (flags & TPFLAGS_MANAGED_DICT) {
        uint64_t w;
        uint64_t managed = obj - L->managed_dict;
        switch (L->values_kind) {
        case PY_VALUES_311: {
            uint64_t values;
            err = rd_read_u64(rt->rd, obj - heap_layout(rt)->managed_values, &values);
            if (!err && values && (flags & TPFLAGS_HEAPTYPE))
                return values_attr(rt, type, values, DICT_MAX_ENTRIES, name, value);
            if (!err)
                err = rd_read_u64(rt->rd, managed, &dict);
            break;
        }
        case PY_VALUES_312:
            err = rd_read_u64(rt->rd, managed, &w);
            if (!err && (w & 1) && (flags & TPFLAGS_HEAPTYPE))
                return values_attr(rt, type, w + 1, DICT_MAX_ENTRIES, name, value);
            dict = w & 1 ? 0 : w;
            break;
        case PY_VALUES_313:
            if (flags & TPFLAGS_INLINE_VALUES) {
                /* _PyObject_InlineValues: right after the type's basic size */
                uint64_t basicsize, values;
                const struct py_heap_layout *H = heap_layout(rt);
                uint8_t hdr[8];
                err = rd_read_u64(rt->rd, type + L->tp_basicsize, &basicsize);
                if (!err && basicsize > (1u << 20))
                    err = err_fail(SCRY_E_READ_FAILED, "type at 0x%llx has a bad basic size",
                                   (unsigned long long)type);
                values = obj + basicsize;
                if (!err && H->dv_values > sizeof(hdr))
                    err = err_fail(SCRY_E_INTERNAL, "dict values header too large");
                if (!err)
                    err = rd_read(rt->rd, values, hdr, H->dv_values);
                if (err)
                    return err;
                if (hdr[H->dv_valid] && (flags & TPFLAGS_HEAPTYPE))
                    return values_attr(rt, type, values + H->dv_values, hdr[H->dv_capacity], name,
                                       value);
            }
            err = rd_read_u64(rt->rd, managed, &dict);
            break;
        }
    } else {
        int64_t off;
        err = rd_read_u64(rt->rd, type + L->tp_dictoffset, (uint64_t *)&off);
        if (!err && off > 0)
            err = rd_read_u64(rt->rd, obj + (uint64_t)off, &dict);
    }
    if (err || !dict)
        return err;
    return py_dict_get_str(rt, dict, name, value);
}

int py_module_dict(struct py_runtime *rt, uint64_t interp, const char *name, uint64_t *dict)
{
    uint64_t modules, module;
    *dict = 0;
    int err = rd_read_u64(rt->rd, interp + rt->layout.is_modules, &modules);
    if (err || !modules)
        return err;
    err = py_dict_get_str(rt, modules, name, &module);
    if (err || !module)
        return err;
    return rd_read_u64(rt->rd, module + rt->layout.mod_dict, dict);
}
