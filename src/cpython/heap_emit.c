/* The heap walker's texts and reports (heap_walk_int.h): names and keys read from the target
 * (str objects through objects.c's decoder, C strings), each decided on by the redaction rule
 * (redact.h) whole before it is cut; the labels of references (quoted keys, placeholders, list
 * indices); and what the sink is told of each object (size as sys.getsizeof, flags, captured
 * contents). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "cpython/heap_walk_int.h"
#include "cpython/redact.h"

_Alignas(8) const char hw_redacted[] = REDACTED;
/* A str's header through the cache, decoded by objects.c. */
static int str_hdr(struct hw *w, uint64_t obj, struct py_str_hdr *h)
{
    uint8_t b[96];
    size_t n = py_str_hdr_size(w->L);
    if (n > sizeof(b))
        return -SCRY_E_INTERNAL;
    int err = mc_read(&w->mc, obj, b, n);
    return err ? err : py_str_decode(w->L, obj, b, h);
}

/* Appends at most max_bytes of the string as UTF-8 (cut on a character boundary). */
static int str_utf8(struct hw *w, const struct py_str_hdr *h, size_t max_bytes, struct strbuf *out)
{
    uint8_t buf[1024];
    size_t count = h->length < max_bytes ? (size_t)h->length : max_bytes;
    size_t per = sizeof(buf) / (size_t)h->kind, start = out->len;
    for (size_t done = 0; done < count;) {
        size_t chunk = count - done < per ? count - done : per;
        int err = mc_read(&w->mc, h->data + done * (size_t)h->kind, buf, chunk * (size_t)h->kind);
        if (err)
            return err;
        if (!py_utf8_from_chars(out, buf, chunk, h->kind, start, max_bytes))
            return 0;
        done += chunk;
    }
    return 0;
}

/* A code object's name or file as a root label shows it: through the redaction rule, whole as
 * frames.c read it. */
const char *hw_redacted_or(const char *s)
{
    return s && redact_text_is_secret(s, strlen(s)) ? hw_redacted : s;
}

/* The text of a C string (a type's tp_name, a slot's name), decided on by the redaction rule
 * whole (up to REDACT_MARGIN past the cut), then cut to max bytes. */
const char *hw_cstr(struct hw *w, uint64_t addr, size_t max)
{
    if (max > MAX_NAME)
        max = MAX_NAME;
    size_t lim = max + REDACT_MARGIN, n = 0;
    char *buf = malloc(lim + 1);
    if (!buf)
        return NULL;
    /* Read in small steps: a C string may end just before an unmapped page. */
    while (n < lim) {
        size_t step = lim - n < 32 ? lim - n : 32;
        if (mc_read(&w->mc, addr + n, buf + n, step) != 0) {
            /* fall back to a byte at a time near the end of a mapping */
            if (mc_read(&w->mc, addr + n, buf + n, 1) != 0)
                break;
            step = 1;
        }
        void *z = memchr(buf + n, 0, step);
        if (z) {
            n = (size_t)((char *)z - buf);
            break;
        }
        n += step;
    }
    const char *s = NULL;
    if (n && redact_text_is_secret(buf, n))
        s = hw_redacted;
    else if (n)
        s = arena_strndup(&w->arena, buf, redact_utf8_cut(buf, n, max));
    free(buf);
    return s;
}

/* A str object's text (a dict key, an attribute or local name, a type, module or file name),
 * decoded, decided on by the redaction rule whole (up to REDACT_MARGIN past the cut), then cut to
 * MAX_NAME bytes; hw_redacted when the rule flags it. Cached by address; NULL if it is not a
 * str. */
const char *hw_str_text(struct hw *w, uint64_t obj, bool *interned)
{
    uint64_t v;
    struct py_str_hdr h;
    if (interned)
        *interned = false;
    if (hm_get(&w->names, obj, &v)) {
        const char *s = (const char *)(uintptr_t)(v & ~(uint64_t)1);
        if (interned)
            *interned = v & 1;
        return s;
    }
    uint64_t tp;
    if (mc_read_u64(&w->mc, obj + w->L->ob_type, &tp))
        return NULL;
    struct tinfo *ti = hw_type(w, tp);
    if (!ti || !ti->valid || ti->kind != K_STR || str_hdr(w, obj, &h))
        return NULL;
    struct strbuf sb = STRBUF_INIT;
    const char *s = NULL;
    if (str_utf8(w, &h, MAX_NAME + REDACT_MARGIN, &sb) == 0)
        s = redact_text_is_secret(sb_str(&sb), sb.len)
                ? hw_redacted
                : arena_strndup(&w->arena, sb_str(&sb),
                                redact_utf8_cut(sb_str(&sb), sb.len, MAX_NAME));
    sb_release(&sb);
    if (s) {
        hm_put(&w->names, obj, (uint64_t)(uintptr_t)s | (h.interned ? 1 : 0));
        if (interned)
            *interned = h.interned;
    }
    return s;
}
bool hw_sensitive_name(const struct hw *w, const char *name)
{
    return w->opt->capture_contents && name &&
           (name == hw_redacted || redact_name_is_sensitive(name, strlen(name)));
}
void hw_quote(char *out, size_t cap, const char *s)
{
    size_t n = strlen(out);
    if (n + 1 < cap)
        out[n++] = '\'';
    for (; *s && n + 5 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\'' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            n += (size_t)snprintf(out + n, cap - n, "\\x%02x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    if (n + 1 < cap)
        out[n++] = '\'';
    out[n < cap ? n : cap - 1] = 0;
}

/* An int that fits in 64 bits, read from the copy. */
static int read_int(struct hw *w, uint64_t obj, int64_t *value, bool *big)
{
    uint64_t tag, nd;
    bool neg;
    if (mc_read_u64(&w->mc, obj + w->H->long_tag, &tag))
        return -SCRY_E_READ_FAILED;
    py_long_shape(w->L, tag, &nd, &neg);
    uint32_t d[3] = {0, 0, 0}; /* 30-bit digits */
    if (nd > 2 || (nd && mc_read(&w->mc, obj + w->L->long_digits, d, nd * sizeof(d[0]))))
        return -SCRY_E_READ_FAILED; /* over 60 bits: shown as a placeholder */
    uint64_t v = 0;
    for (int i = (int)nd - 1; i >= 0; i--)
        v = (v << 30) | (d[i] & 0x3fffffff);
    *big = false;
    *value = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

/* The label of a dict value under `key`: ['name'] for interned strings (identifiers) and, with
 * captured contents, any str; [<redacted>] for a key the redaction rule flags; placeholders
 * otherwise. *sensitive: the key names a secret (or is one). */
void hw_key_label(struct hw *w, uint64_t key, char *out, size_t cap, bool *sensitive)
{
    uint64_t tp;
    struct tinfo *ti = NULL;
    *sensitive = false;
    if (mc_read_u64(&w->mc, key + w->L->ob_type, &tp) == 0)
        ti = hw_type(w, tp);
    if (!ti || !ti->valid) {
        snprintf(out, cap, "[<?>]");
        return;
    }
    if (ti->kind == K_STR) {
        bool interned;
        const char *s = NULL;
        struct py_str_hdr h;
        if (str_hdr(w, key, &h) == 0 && (h.interned || w->opt->capture_contents))
            s = hw_str_text(w, key, &interned);
        if (s) {
            *sensitive = hw_sensitive_name(w, s);
            out[0] = '[';
            out[1] = 0;
            if (s == hw_redacted)
                strncat(out, hw_redacted, cap - 2);
            else
                hw_quote(out, cap - 1, s);
            strncat(out, "]", cap - strlen(out) - 1);
        } else {
            snprintf(out, cap, "[<str len=%llu>]", (unsigned long long)h.length);
        }
        return;
    }
    if (ti->kind == K_INT && w->opt->capture_contents) {
        int64_t v;
        bool big;
        if (read_int(w, key, &v, &big) == 0) {
            if (big)
                snprintf(out, cap, "[%llu]", (unsigned long long)v);
            else
                snprintf(out, cap, "[%lld]", (long long)v);
            return;
        }
    }
    const char *short_name = strrchr(ti->name, '.');
    snprintf(out, cap, "[<%s>]", short_name ? short_name + 1 : ti->name);
}

/* "[123]" without printf: list and tuple items are most of a dump's references. */
static void index_label(char *out, uint64_t i)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    *out++ = '[';
    while (n)
        *out++ = digits[--n];
    *out++ = ']';
    *out = 0;
}

/* The label of item i: from the table when it is there (a stable pointer), else built in buf. */
const char *hw_index_label(struct hw *w, uint64_t i, char *buf)
{
    if (i < INDEX_LABELS) {
        if (!w->index_labels && (w->index_labels = arena_alloc(&w->arena, INDEX_LABELS * 8)))
            for (uint64_t j = 0; j < INDEX_LABELS; j++)
                index_label(w->index_labels[j], j);
        if (w->index_labels)
            return w->index_labels[i];
    }
    index_label(buf, i);
    return buf;
}
/* ---- one object ------------------------------------------------------------------------------ */

int hw_emit_object(struct hw *w, uint64_t addr, const struct tinfo *ti, uint64_t size,
                       uint64_t seen, uint64_t refcnt, const char *content, size_t content_len)
{
    uint32_t flags = 0;
    if (seen & SEEN_TRACKED)
        flags |= HW_OBJ_GC_TRACKED;
    if (w->L->minor >= 12 && (int32_t)(uint32_t)refcnt < 0)
        flags |= HW_OBJ_IMMORTAL;
    if (ti->kind == K_TYPE)
        flags |= HW_OBJ_TYPE;
    w->st->objects++;
    w->st->bytes += size;
    if (w->label_ids && ti->name) { /* a type's name stays at its address through the walk */
        uint32_t id;
        int err = hw_label_id(w, ti->name, &id);
        return err ? err
                   : w->sink->object_id(w->sink->ctx, addr, id, size, flags, content, content_len);
    }
    return w->sink->object(w->sink->ctx, addr, ti->name, size, flags, content, content_len);
}

/* Appends the k bytes at addr to c (fewer when the memory ends). */
static void copy_bytes(struct hw *w, uint64_t addr, size_t k, struct strbuf *c)
{
    char buf[4096];
    for (size_t done = 0; done < k;) {
        size_t step = k - done < sizeof(buf) ? k - done : sizeof(buf);
        if (mc_read(&w->mc, addr + done, buf, step))
            break;
        sb_add(c, buf, step);
        done += step;
    }
}

/* Size and captured contents of a str/bytes/bytearray, then its report. Contents are read up to
 * REDACT_MARGIN past --max-str, decided on by the redaction rule, and only then cut. */
int hw_emit_leaf(struct hw *w, uint64_t addr, uint64_t seen)
{
    const size_t scan = w->opt->max_str + REDACT_MARGIN;
    const struct tinfo *ti = (const struct tinfo *)(uintptr_t)(seen & ~(uint64_t)SEEN_FLAGS);
    const struct py_heap_layout *H = w->H;
    uint8_t hdr[128];
    uint64_t need = (w->L->bytes_size > H->ob_size ? w->L->bytes_size : H->ob_size) + PTR;
    if (ti->kind == K_BYTEARRAY)
        need = (H->ba_alloc > H->ba_start ? H->ba_alloc : H->ba_start) + PTR;
    if (need > sizeof(hdr) || mc_read(&w->mc, addr, hdr, need))
        return 0;
    uint64_t refcnt = hw_refcnt(w->L, hdr), size = 0;
    bool capture = w->opt->capture_contents;
    struct strbuf *c = &w->content;
    sb_reset(c);
    if (ti->kind == K_STR) {
        struct py_str_hdr h;
        if (str_hdr(w, addr, &h) == 0) {
            size = py_str_sizeof(w->L, &h);
            if (capture && str_utf8(w, &h, scan, c) != 0)
                sb_reset(c);
        }
    } else if (ti->kind == K_BYTES) {
        int64_t n = (int64_t)rd64(hdr + w->L->bytes_size);
        if (n >= 0) {
            size = (uint64_t)ti->basicsize + (uint64_t)n * (uint64_t)ti->itemsize;
            size_t k = (uint64_t)n < scan ? (size_t)n : scan;
            if (capture && k)
                copy_bytes(w, addr + w->L->bytes_sval, k, c);
        }
    } else { /* bytearray */
        int64_t n = (int64_t)rd64(hdr + H->ob_size), alloc = (int64_t)rd64(hdr + H->ba_alloc);
        uint64_t start = rd64(hdr + H->ba_start);
        size = (uint64_t)ti->basicsize + (alloc > 0 ? (uint64_t)alloc + H->ba_bytes_header : 0);
        /* ob_bytes, the block (3.15: a bytes object's text), is the word before ob_start */
        int err = alloc > 0 ? hw_buffer(w, addr, rd64(hdr + H->ba_start - PTR), (uint64_t)alloc)
                            : 0;
        if (err)
            return err;
        if (capture && n > 0 && start)
            copy_bytes(w, start, (uint64_t)n < scan ? (size_t)n : scan, c);
    }
    size += ti->presize;
    const char *content = NULL;
    size_t len = 0;
    if (capture) {
        content = sb_str(c);
        len = c->len;
        if ((seen & SEEN_SENSITIVE) || redact_text_is_secret(content, len)) {
            content = REDACTED;
            len = strlen(REDACTED);
        } else if (ti->kind == K_STR) {
            len = redact_utf8_cut(content, len, w->opt->max_str);
        } else if (len > w->opt->max_str) {
            len = w->opt->max_str;
        }
    }
    return hw_emit_object(w, addr, ti, size, seen, refcnt, content, len);
}
