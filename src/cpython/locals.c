/* Frame locals and short value texts (locals.h). Every pointer comes from the target and is read
 * through the reader with sizes capped; a value that cannot be read shows as <unreadable>. */
#include "locals.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "cpython/frame_walk.h"
#include "cpython/objects.h"
#include "cpython/redact.h"

#define MAX_NAME_CHARS 256
#define MAX_TYPE_NAME 128

const char *py_type_name(struct py_runtime *rt, struct arena *a, uint64_t type)
{
    char buf[MAX_TYPE_NAME + 1];
    uint64_t p;
    if (!type || rd_read_u64(rt->rd, type + rt->layout.tp_name, &p) || !p)
        return "?";
    size_t n = 0;
    /* byte by byte up to the NUL: the name may end just before an unmapped page */
    for (; n < MAX_TYPE_NAME; n++)
        if (rd_read(rt->rd, p + n, buf + n, 1) || buf[n] == 0)
            break;
    buf[n] = 0;
    const char *s = redact_text_is_secret(buf, n) ? REDACTED : buf;
    const char *r = arena_strdup(a, s);
    return r ? r : "?";
}

/* Appends text[0..len) as a Python literal body: quote escaped, controls as \n \t \r \xNN, at
 * most PY_VALUE_MAX_CHARS characters (UTF-8 sequences kept whole), then "..." when longer. */
static void add_literal(struct strbuf *out, const char *text, size_t len, bool more)
{
    size_t shown = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if ((c & 0xc0) != 0x80 && shown++ == PY_VALUE_MAX_CHARS)
            break;
        if (c == '\\' || c == '\'')
            sb_addf(out, "\\%c", c);
        else if (c == '\n')
            sb_adds(out, "\\n");
        else if (c == '\t')
            sb_adds(out, "\\t");
        else if (c == '\r')
            sb_adds(out, "\\r");
        else if (c < 0x20 || c == 0x7f)
            sb_addf(out, "\\x%02x", c);
        else
            sb_addch(out, (char)c);
    }
    if (more || shown > PY_VALUE_MAX_CHARS)
        sb_adds(out, "...");
}

/* The shortest text that reads back as d, as Python's repr writes a float (2.0, 0.1, 1e+100). */
static void add_float(struct strbuf *out, double d)
{
    char buf[64];
    if (isnan(d)) {
        sb_adds(out, "nan");
        return;
    }
    if (isinf(d)) {
        sb_adds(out, d < 0 ? "-inf" : "inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    sb_adds(out, buf);
    if (!strpbrk(buf, ".e"))
        sb_adds(out, ".0");
}

/* A str: the rule judges the text up to REDACT_MARGIN past the cut, as the snapshot does. */
static int str_value(struct py_runtime *rt, uint64_t obj, struct strbuf *out, bool *secret)
{
    struct strbuf sb = STRBUF_INIT;
    int err = py_read_str(rt, obj, PY_VALUE_MAX_CHARS + REDACT_MARGIN, &sb);
    if (!err) {
        int64_t length = 0;
        rd_read_u64(rt->rd, obj + rt->layout.str_length, (uint64_t *)&length);
        if (redact_text_is_secret(sb_str(&sb), sb.len)) {
            *secret = true;
            sb_adds(out, REDACTED);
        } else {
            sb_addch(out, '\'');
            add_literal(out, sb_str(&sb), sb.len,
                        length > (int64_t)(PY_VALUE_MAX_CHARS + REDACT_MARGIN));
            sb_addch(out, '\'');
        }
    }
    sb_release(&sb);
    return err;
}

static int bytes_value(struct py_runtime *rt, uint64_t obj, struct strbuf *out, bool *secret)
{
    const struct py_layout *L = &rt->layout;
    int64_t size;
    int err = rd_read_u64(rt->rd, obj + L->bytes_size, (uint64_t *)&size);
    if (err)
        return err;
    if (size < 0)
        return err_fail(SCRY_E_READ_FAILED, "bytes at 0x%" PRIx64 " have a bad size", obj);
    size_t n = (uint64_t)size < PY_VALUE_MAX_CHARS + REDACT_MARGIN
                   ? (size_t)size
                   : PY_VALUE_MAX_CHARS + REDACT_MARGIN;
    char buf[PY_VALUE_MAX_CHARS + REDACT_MARGIN];
    err = rd_read(rt->rd, obj + L->bytes_sval, buf, n);
    if (err)
        return err;
    if (redact_text_is_secret(buf, n)) {
        *secret = true;
        sb_adds(out, REDACTED);
        return 0;
    }
    sb_adds(out, "b'");
    size_t shown = n < PY_VALUE_MAX_CHARS ? n : PY_VALUE_MAX_CHARS;
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c == '\\' || c == '\'')
            sb_addf(out, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            sb_addch(out, (char)c);
        else
            sb_addf(out, "\\x%02x", c);
    }
    sb_adds(out, (uint64_t)size > shown ? "...'" : "'");
    return 0;
}

/* The length word of a container: ob_size of list and tuple, ma_used of dict (right after the
 * object header), `used` of set and frozenset (after `fill`). */
static int container_value(struct py_runtime *rt, uint64_t obj, uint64_t off, const char *kind,
                           struct strbuf *out)
{
    int64_t n;
    int err = rd_read_u64(rt->rd, obj + rt->layout.ob_type + off, (uint64_t *)&n);
    if (!err)
        sb_addf(out, "%s[len=%" PRId64 "]", kind, n);
    return err;
}

int py_value_short(struct py_runtime *rt, struct arena *a, uint64_t obj, struct strbuf *out,
                   const char **type, bool *secret)
{
    const struct py_types *T = &rt->types;
    uint64_t tp;
    *secret = false;
    *type = "?";
    int err = py_type_of(rt, obj, &tp);
    if (err)
        return err;
    *type = py_type_name(rt, a, tp);
    if (obj == T->none_struct) {
        sb_adds(out, "None");
    } else if (obj == T->true_struct || obj == T->false_struct) {
        sb_adds(out, obj == T->true_struct ? "True" : "False");
    } else if (tp == T->long_) {
        int64_t v;
        bool large;
        if (py_read_int(rt, obj, &v, &large) == 0)
            sb_addf(out, large ? "%" PRIu64 : "%" PRId64, v);
        else
            sb_adds(out, "<int over 64 bits>");
    } else if (tp == T->float_) {
        double d;
        err = rd_read(rt->rd, obj + rt->layout.ob_type + 8, &d, sizeof(d)); /* ob_fval */
        if (!err)
            add_float(out, d);
    } else if (tp == T->str) {
        err = str_value(rt, obj, out, secret);
    } else if (tp == T->bytes) {
        err = bytes_value(rt, obj, out, secret);
    } else if (tp == T->list || tp == T->tuple || tp == T->dict) {
        err = container_value(rt, obj, 8, *type, out);
    } else if (tp == T->set || tp == T->frozenset) {
        err = container_value(rt, obj, 16, *type, out);
    } else {
        sb_addf(out, "<%s at 0x%" PRIx64 ">", *type, obj);
    }
    if (err) {
        sb_adds(out, "<unreadable>");
        err = 0;
    }
    return sb_failed(out) ? err_fail(SCRY_E_NO_MEMORY, "out of memory") : 0;
}

static const char *name_text(struct py_runtime *rt, struct arena *a, uint64_t s)
{
    struct strbuf sb = STRBUF_INIT;
    const char *r = "?";
    if (s && py_read_str(rt, s, MAX_NAME_CHARS, &sb) == 0)
        r = redact_text_is_secret(sb_str(&sb), sb.len) ? REDACTED
                                                       : arena_strndup(a, sb_str(&sb), sb.len);
    sb_release(&sb);
    return r ? r : "?";
}

int py_frame_locals(struct py_runtime *rt, struct arena *a, uint64_t frame, uint64_t code,
                    struct py_local **out, size_t *count, bool *cut)
{
    const struct py_layout *L = &rt->layout;
    const struct py_heap_layout *H = py_runtime_heap_layout(rt);
    int32_t n = 0;
    uint64_t names;
    int64_t nnames;
    *out = NULL;
    *count = 0;
    *cut = false;
    if (!H)
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON, "no code layout for Python 3.%d", rt->minor);
    int err = rd_read(rt->rd, code + H->co_nlocalsplus, &n, 4);
    if (!err)
        err = rd_read_u64(rt->rd, code + H->co_localsplusnames, &names);
    if (!err && names)
        err = rd_read_u64(rt->rd, names + L->ob_type + 8, (uint64_t *)&nnames);
    if (err)
        return err;
    if (n <= 0 || !names)
        return 0;
    if (n > 65535 || nnames < n)
        return err_fail(SCRY_E_READ_FAILED, "code at 0x%" PRIx64 " has bad local names", code);
    struct py_local *locals = arena_alloc(a, (size_t)n * sizeof(*locals));
    uint64_t *slots = arena_alloc(a, (size_t)n * 8);
    uint64_t *name_objs = arena_alloc(a, (size_t)n * 8);
    if (!locals || !slots || !name_objs)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading locals");
    err = rd_read(rt->rd, frame + L->fr_localsplus, slots, (size_t)n * 8);
    if (!err)
        err = rd_read(rt->rd, names + H->tuple_items, name_objs, (size_t)n * 8);
    if (err)
        return err;
    size_t k = 0;
    struct strbuf sb = STRBUF_INIT;
    for (int32_t i = 0; i < n; i++) {
        uint64_t ref = slots[i], obj = py_fw_object(L, ref);
        bool tagged_int = L->fr_code_tagged && (ref & 3) == 3;
        if (!obj && !tagged_int)
            continue; /* unbound */
        if (k == PY_MAX_LOCALS) {
            *cut = true;
            break;
        }
        struct py_local *l = &locals[k];
        memset(l, 0, sizeof(*l));
        l->name = name_text(rt, a, name_objs[i]);
        uint64_t tp = 0;
        if (obj && rt->types.cell && py_type_of(rt, obj, &tp) == 0 && tp == rt->types.cell) {
            uint64_t inner;
            l->cell = true;
            if (rd_read_u64(rt->rd, obj + H->cell[0].off, &inner) || !inner)
                continue; /* an empty cell: unbound */
            obj = inner;
        }
        sb_reset(&sb);
        bool secret = false;
        if (strcmp(l->name, REDACTED) == 0 || redact_name_is_sensitive(l->name, strlen(l->name))) {
            secret = true;
            l->type = tagged_int                     ? "int"
                      : py_type_of(rt, obj, &tp) != 0 ? "?"
                                                      : py_type_name(rt, a, tp);
        } else if (tagged_int) {
            l->type = "int";
            sb_addf(&sb, "%" PRId64, (int64_t)ref >> 2); /* 3.14+: (value << 2) | 3 */
        } else {
            err = py_value_short(rt, a, obj, &sb, &l->type, &secret);
            if (err == -SCRY_E_NO_MEMORY)
                break;
            if (err) { /* its type cannot be read: the others still show */
                sb_reset(&sb);
                sb_adds(&sb, "<unreadable>");
                err = 0;
            }
        }
        l->redacted = secret;
        l->value = secret ? REDACTED : arena_strndup(a, sb_str(&sb), sb.len);
        if (!l->value) {
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory reading locals");
            break;
        }
        k++;
    }
    sb_release(&sb);
    *out = locals;
    *count = k;
    return err;
}
