/* Object readers over the layout tables. Limits: strings are cut at the caller's maximum, dicts
 * with absurd sizes are refused, so a corrupt target cannot make scry loop or allocate without
 * bound. */
#include "objects.h"

#include <string.h>

#include "common/error.h"

#define TPFLAGS_INLINE_VALUES (1UL << 2)
#define TPFLAGS_MANAGED_DICT (1UL << 4)
#define TPFLAGS_HEAPTYPE (1UL << 9)

#define DICT_MAX_ENTRIES (1ULL << 32)
#define DICT_KIND_GENERAL 0
#define DICT_KIND_SPLIT 2

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

int py_type_of(struct py_runtime *rt, uint64_t obj, uint64_t *type)
{
    return rd_read_u64(rt->rd, obj + rt->layout.ob_type, type);
}

/* Where a str's characters are, how wide each is and how many there are. */
struct str_info {
    uint64_t data;
    int64_t length;
    int kind;
};

static int str_info(struct py_runtime *rt, uint64_t obj, struct str_info *si)
{
    const struct py_layout *L = &rt->layout;
    uint8_t hdr[96];
    size_t n = L->str_compact_size + 8;
    if (n > sizeof(hdr))
        return err_fail(SCRY_E_INTERNAL, "str header too large");
    int err = rd_read(rt->rd, obj, hdr, n);
    if (err)
        return err;
    if (rt->types.str && rd64(hdr + L->ob_type) != rt->types.str) {
        /* A str subclass has another type: accept it only if its state word looks sane. */
        uint64_t tp = rd64(hdr + L->ob_type), flags;
        if (!tp || rd_read_u64(rt->rd, tp + L->tp_flags, &flags) || !(flags & (1UL << 28)))
            return err_fail(SCRY_E_READ_FAILED, "object at 0x%llx is not a str",
                            (unsigned long long)obj);
    }
    uint32_t state;
    memcpy(&state, hdr + L->str_state, 4);
    si->length = (int64_t)rd64(hdr + L->str_length);
    si->kind = (state >> 2) & 7;
    bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
    if (si->length < 0 || (si->kind != 1 && si->kind != 2 && si->kind != 4))
        return err_fail(SCRY_E_READ_FAILED, "str at 0x%llx has an invalid header",
                        (unsigned long long)obj);
    if (compact && ascii)
        si->data = obj + L->str_ascii_size;
    else if (compact)
        si->data = obj + L->str_compact_size;
    else
        si->data = rd64(hdr + L->str_compact_size);
    return 0;
}

static void add_utf8(struct strbuf *out, uint32_t cp)
{
    char b[4];
    if (cp >= 0xd800 && cp <= 0xdfff) /* lone surrogates cannot be encoded: U+FFFD */
        cp = 0xfffd;
    if (cp < 0x80) {
        sb_addch(out, (char)cp);
    } else if (cp < 0x800) {
        b[0] = (char)(0xc0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 63));
        sb_add(out, b, 2);
    } else if (cp < 0x10000) {
        b[0] = (char)(0xe0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 63));
        b[2] = (char)(0x80 | (cp & 63));
        sb_add(out, b, 3);
    } else {
        if (cp > 0x10ffff)
            cp = 0xfffd;
        b[0] = (char)(0xf0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 63));
        b[2] = (char)(0x80 | ((cp >> 6) & 63));
        b[3] = (char)(0x80 | (cp & 63));
        sb_add(out, b, 4);
    }
}

int py_read_str(struct py_runtime *rt, uint64_t obj, size_t max_chars, struct strbuf *out)
{
    struct str_info si;
    int err = str_info(rt, obj, &si);
    if (err)
        return err;
    size_t count = (uint64_t)si.length < max_chars ? (size_t)si.length : max_chars;
    uint8_t buf[1024];
    size_t per = sizeof(buf) / (size_t)si.kind;
    for (size_t done = 0; done < count;) {
        size_t chunk = count - done < per ? count - done : per;
        err = rd_read(rt->rd, si.data + done * (size_t)si.kind, buf, chunk * (size_t)si.kind);
        if (err)
            return err;
        for (size_t i = 0; i < chunk; i++) {
            uint32_t cp;
            if (si.kind == 1) {
                cp = buf[i];
            } else if (si.kind == 2) {
                uint16_t u;
                memcpy(&u, buf + 2 * i, 2);
                cp = u;
            } else {
                memcpy(&cp, buf + 4 * i, 4);
            }
            add_utf8(out, cp);
        }
        done += chunk;
    }
    if (sb_failed(out)) /* the agent, out of memory */
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading a string");
    return 0;
}

int py_str_equals(struct py_runtime *rt, uint64_t obj, const char *s, bool *equal)
{
    struct str_info si;
    *equal = false;
    int err = str_info(rt, obj, &si);
    if (err)
        return err;
    size_t len = strlen(s);
    /* Names compared here are ASCII, so a match needs a 1-byte kind and the same length. */
    if (si.kind != 1 || (uint64_t)si.length != len || len > 4096)
        return 0;
    char buf[4096];
    err = rd_read(rt->rd, si.data, buf, len);
    if (err)
        return err;
    *equal = memcmp(buf, s, len) == 0;
    return 0;
}

int py_read_int(struct py_runtime *rt, uint64_t obj, int64_t *value, bool *is_unsigned_large)
{
    const struct py_layout *L = &rt->layout;
    uint8_t word[8];
    /* lv_tag (3.12+) or the signed ob_size (3.11) is the word before the digits */
    int err = rd_read(rt->rd, obj + L->long_digits - 8, word, sizeof(word));
    if (err)
        return err;
    uint64_t ndigits;
    bool negative;
    if (L->long_has_lv_tag) {
        uint64_t tag = rd64(word);
        ndigits = tag >> 3;
        negative = (tag & 3) == 2;
    } else {
        int64_t size = (int64_t)rd64(word);
        negative = size < 0;
        ndigits = negative ? (uint64_t)-size : (uint64_t)size;
    }
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

/* Points `it` at a keys object; `values` is the split-values array (0 for a combined table). */
static int iter_keys(struct py_runtime *rt, uint64_t keys, uint64_t values,
                     struct py_dict_iter *it)
{
    uint8_t kh[32];
    int err = rd_read(rt->rd, keys, kh, sizeof(kh));
    if (err)
        return err;
    uint8_t log2_index_bytes = kh[9];
    it->kind = kh[10];
    it->nentries = rd64(kh + 24);
    if (log2_index_bytes > 40 || it->kind > 2 || it->nentries > DICT_MAX_ENTRIES)
        return err_fail(SCRY_E_READ_FAILED, "dict keys at 0x%llx have an invalid header",
                        (unsigned long long)keys);
    it->keys = keys;
    it->entries = keys + 32 + (1ULL << log2_index_bytes);
    it->values = values;
    it->index = 0;
    return 0;
}

static uint64_t values_array(struct py_runtime *rt, uint64_t values)
{
    /* 3.13+ PyDictValues has a 8-byte header (capacity, size, embedded, valid) before values[]. */
    return rt->layout.values_kind == PY_VALUES_313 ? values + 8 : values;
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
    return iter_keys(rt, keys, values ? values_array(rt, values) : 0, it);
}

int py_dict_next(struct py_runtime *rt, struct py_dict_iter *it, uint64_t *key, uint64_t *value)
{
    while (it->index < it->nentries) {
        uint64_t i = it->index++;
        uint8_t e[24];
        int err;
        if (it->kind == DICT_KIND_GENERAL) {
            err = rd_read(rt->rd, it->entries + i * 24, e, 24);
            if (err)
                return err;
            *key = rd64(e + 8);
            *value = rd64(e + 16);
        } else {
            err = rd_read(rt->rd, it->entries + i * 16, e, 16);
            if (err)
                return err;
            *key = rd64(e);
            *value = rd64(e + 8);
            if (it->values) {
                err = rd_read_u64(rt->rd, it->values + i * 8, value);
                if (err)
                    return err;
            }
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
    for (uint64_t i = 0; i < it.nentries && i < capacity; i++) {
        uint64_t k;
        bool eq = false;
        err = rd_read_u64(rt->rd, it.entries + i * 16, &k);
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
            err = rd_read_u64(rt->rd, managed - 8, &values);
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
                uint8_t hdr[8];
                err = rd_read_u64(rt->rd, type + L->tp_basicsize, &basicsize);
                if (!err && basicsize > (1u << 20))
                    err = err_fail(SCRY_E_READ_FAILED, "type at 0x%llx has a bad basic size",
                                   (unsigned long long)type);
                values = obj + basicsize;
                if (!err)
                    err = rd_read(rt->rd, values, hdr, sizeof(hdr));
                if (err)
                    return err;
                if (hdr[3] /* valid */ && (flags & TPFLAGS_HEAPTYPE))
                    return values_attr(rt, type, values + 8, hdr[0], name, value);
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
