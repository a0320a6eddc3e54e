/* The heap walker (heap_walk.h). Seeds are every object on the GC lists of every interpreter
 * (three generations and the permanent one) and the roots (sys.modules and its modules, the sys
 * and builtins dicts, gc.garbage, each thread's frame locals and thread-state objects). From
 * there references are followed the way each type's tp_traverse would, with an explicit work
 * stack (never recursion) and a set of the addresses met (two bits per 8 bytes of the address
 * space touched), so each object is reported exactly once.
 *
 * Every pointer read from the target is checked before it is followed: 8-byte aligned, readable,
 * and its ob_type must be a type whose own type is `type` or a metatype. Memory is read through a
 * block cache (memcache.h): the target is stopped, so its memory is copied in 64 KiB blocks.
 *
 * Labels follow heapspy's notation: `.attr`, `['key']`, `[<str len=9>]`, `[3]`,
 * `.__closure__[0]`, `.cell_contents`, `.locals['x']`. Dict keys are shown by content only when
 * they are interned strings (identifiers: attribute names, module globals, keyword names) or
 * when contents are captured; otherwise a placeholder gives their type and length. Every text
 * taken from the target (names, keys, type and file names, contents) goes through the redaction
 * rule (redact.h) whole, before it is cut: a flagged one is stored as <redacted>.
 *
 * Sizes mirror sys.getsizeof (the type's __sizeof__ plus the GC and managed-dict pre-header).
 * The C containers of the standard library and numpy.ndarray are walked from their layouts
 * (heap_ctypes.h), with the native memory they own; other GC-tracked extension objects get a
 * conservative scan of their C body, whose edges are marked HW_EDGE_INFERRED. Known
 * approximations: other C types that override __sizeof__ are sized as object.__sizeof__ would
 * (tp_basicsize + itemsize * size); 3.11's cached wchar_t copies of str objects are not counted;
 * a code object's co_extra is. */
#include "heap_walk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/arena.h"
#include "common/error.h"
#include "common/hashmap.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "cpython/frame_walk.h"
#include "cpython/frames.h"
#include "cpython/heap_ctypes.h"
#include "cpython/memcache.h"
#include "cpython/objects.h"
#include "cpython/redact.h"
#include "cpython/threads.h"

#define TPFLAGS_INLINE_VALUES (1UL << 2)
#define TPFLAGS_MANAGED_WEAKREF (1UL << 3)
#define TPFLAGS_MANAGED_DICT (1UL << 4)
#define TPFLAGS_HEAPTYPE (1UL << 9)
#define TPFLAGS_READY (1UL << 12)
#define TPFLAGS_HAVE_GC (1UL << 14)
#define TPFLAGS_BASE_EXC_SUBCLASS (1UL << 30)
#define TPFLAGS_TYPE_SUBCLASS (1UL << 31)

#define T_OBJECT 6
#define T_OBJECT_EX 16

#define MAX_NAME 256          /* bytes of a name or key shown in a label */
#define MAX_ITEMS (1ULL << 31) /* items in one container: more means a damaged header */
#define MAX_MEMBERS 4096
#define MAX_TYPE_DEPTH 64
#define CHUNK 512 /* pointers read at once from an item array */

/* What an object is, for traversal: its own type or nearest known builtin ancestor. */
enum kind {
    K_OBJECT, /* no references known (object, unknown C types) */
    K_STR,
    K_BYTES,
    K_BYTEARRAY,
    K_INT,
    K_FLOAT,
    K_NONE,
    K_CODE,
    K_DICT,
    K_LIST,
    K_TUPLE,
    K_SET,
    K_CELL,
    K_FUNCTION,
    K_METHOD,
    K_CFUNCTION,
    K_CLASSMETHOD,
    K_PROPERTY,
    K_MODULE,
    K_TYPE,
    K_FRAME,
    K_GEN,
    K_WEAKREF,
    K_EXC,
    K_TRACEBACK,
};

struct slot {
    const char *label; /* ".name" */
    uint64_t off;
};

struct tinfo {
    uint64_t addr;
    const char *name;
    enum kind kind;
    bool valid, heap, gc;
    uint64_t flags;
    int64_t basicsize, itemsize, dictoffset;
    uint32_t presize;
    uint64_t cached_keys;
    uint32_t nslots;
    struct slot *slots;
    /* ".name" labels of the cached keys' entries (ref_values), built once: the same pointer
     * each time lets the writer find its string id without hashing the text. */
    uint32_t nattr;
    uint64_t *attr_keys;
    const char **attr_labels;
    const char *cname;            /* tp_name as the type object has it */
    const struct hc_type *ct;     /* its own or its nearest base's known C layout, or NULL */
    bool body_known;              /* the fields below are set */
    int64_t body_size;            /* the C body of its nearest non-Python-class base */
    int64_t body_weaklist, body_dict; /* that base's tp_weaklistoffset, tp_dictoffset */
};

/* "[0]" ... "[4095]" in 8-byte slots, built once per walk (index_label_of). */
#define INDEX_LABELS 4096

/* Flags carried with an object on the work stack, in the low bits of its struct tinfo * (the
 * arena gives 16-byte alignment). */
#define SEEN_TRACKED 1u
#define SEEN_PERMANENT 2u
#define SEEN_SENSITIVE 4u /* captured contents under a secret-sounding name */
#define SEEN_FLAGS 15u

/* The set of addresses met so far: two bits per 8-byte-aligned address (the walker follows no
 * other), in pages that each cover 64 KiB of the target's address space, found by page number
 * in a small open-addressing table with a one-entry front. Objects of one pymalloc arena or one
 * malloc chunk share a page, so the set costs 2 KiB per 64 KiB of heap touched, and a lookup is
 * mostly a hit in the last page or in a table that stays in cache; a hash set keyed by address
 * took a cache miss per reference, 16-32 bytes per object and rehashes as it grew. The tinfo of
 * an object travels with it on the work stack instead. */
#define SEEN_PAGE_SHIFT 16
#define SEEN_SLOTS (1u << (SEEN_PAGE_SHIFT - 3)) /* 8-byte addresses per page */
#define SEEN_NEW 0u
#define SEEN_OBJECT 1u
#define SEEN_NOT_OBJECT 2u /* not an object: no edge to it */
#define SEEN_ON_GC_LIST 3u /* an object met on a GC list (a second meeting means a loop) */

struct seen_page {
    uint64_t bits[SEEN_SLOTS * 2 / 64];
};

struct seenset {
    uint64_t *keys; /* page number + 1; 0: empty */
    struct seen_page **pages;
    size_t cap, count; /* cap: power of two */
    uint64_t last_key;
    struct seen_page *last;
};

static size_t seen_index(const struct seenset *m, uint64_t key)
{
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 40) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int seen_grow(struct seenset *m)
{
    struct seenset n = {NULL, NULL, m->cap ? m->cap * 2 : 1024, m->count, 0, NULL};
    n.keys = calloc(n.cap, sizeof(*n.keys));
    n.pages = calloc(n.cap, sizeof(*n.pages));
    if (!n.keys || !n.pages) {
        free(n.keys);
        free(n.pages);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t j = seen_index(&n, m->keys[i]);
            n.keys[j] = m->keys[i];
            n.pages[j] = m->pages[i];
        }
    free(m->keys);
    free(m->pages);
    n.last_key = m->last_key;
    n.last = m->last;
    *m = n;
    return 0;
}

/* The page holding addr's bits, made (all SEEN_NEW) if create; NULL when absent or out of
 * memory (then with the error set). */
static struct seen_page *seen_page_of(struct seenset *m, uint64_t addr, bool create)
{
    uint64_t key = (addr >> SEEN_PAGE_SHIFT) + 1;
    if (key == m->last_key)
        return m->last;
    if (m->cap) {
        size_t i = seen_index(m, key);
        if (m->keys[i]) {
            m->last_key = key;
            return m->last = m->pages[i];
        }
    }
    if (!create)
        return NULL;
    if ((m->count + 1) * 2 > m->cap && seen_grow(m))
        return NULL;
    struct seen_page *p = calloc(1, sizeof(*p));
    if (!p) {
        err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
        return NULL;
    }
    size_t i = seen_index(m, key);
    m->keys[i] = key;
    m->pages[i] = p;
    m->count++;
    m->last_key = key;
    return m->last = p;
}

static unsigned seen_get(const struct seen_page *p, uint64_t addr)
{
    unsigned slot = (unsigned)(addr >> 3) & (SEEN_SLOTS - 1);
    return (unsigned)(p->bits[slot >> 5] >> ((slot & 31) * 2)) & 3u;
}

static void seen_set(struct seen_page *p, uint64_t addr, unsigned state)
{
    unsigned slot = (unsigned)(addr >> 3) & (SEEN_SLOTS - 1), shift = (slot & 31) * 2;
    p->bits[slot >> 5] = (p->bits[slot >> 5] & ~(3ULL << shift)) | ((uint64_t)state << shift);
}

static void seen_free(struct seenset *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->pages[i]);
    free(m->keys);
    free(m->pages);
}

struct code_names {
    uint32_t n;
    const char **names;
};

struct thread_item {
    uint64_t addr; /* an _PyInterpreterFrame, or the PyThreadState */
    const char *prefix;
    bool is_tstate;
};

struct hw {
    struct py_runtime *rt;
    const struct py_layout *L;
    const struct py_heap_layout *H;
    struct py_fw fw; /* the frame rules (cpython/frame_walk.h) */
    const struct hw_options *opt;
    const struct hw_sink *sink;
    struct hw_stats *st;
    struct memcache mc;
    struct arena arena;
    struct seenset seen;  /* addresses met so far */
    struct hashmap sensitive; /* captured contents: objects under secret-sounding names */
    struct hashmap types; /* type address -> struct tinfo * */
    struct tinfo *type_cache[256]; /* direct-mapped front of `types` */
    char (*index_labels)[8];       /* INDEX_LABELS of them, or NULL */
    struct hashmap names; /* str address -> const char * (decoded, capped) */
    struct hashmap codes; /* code address -> struct code_names * */
    uint64_t *stack;
    size_t nstack, capstack;
    uint64_t *deferred; /* (address, tinfo | flags) of str/bytes objects reported at the
                           end (captured contents) */
    size_t ndeferred, capdeferred;
    uint64_t set_dummy;
    struct strbuf content;
    struct thread_item *thread_items;
    size_t nthread_items, capthread_items;
    void (*resume)(void *ctx); /* not NULL until the target has been let go */
    void *resume_ctx;
    uint64_t subtype_dealloc; /* tp_dealloc of every class defined in Python, or 0 */
    struct hc_env hc;
    const struct holder *hc_holder; /* the object hc_walk is walking, and its type */
    const struct tinfo *hc_type;
};

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static int32_t rd32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static int push_u64(uint64_t **arr, size_t *n, size_t *cap, uint64_t v)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4096;
        uint64_t *na = realloc(*arr, nc * sizeof(*na));
        if (!na)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = v;
    return 0;
}

/* What every text the rule flags is stored as (redact.h); aligned: the names cache keeps a flag
 * in the low bit of its pointers, and callers compare with it to show a placeholder. */
static _Alignas(8) const char redacted_text[] = REDACTED;

/* ---- strings ---------------------------------------------------------------------------------- */

struct str_hdr {
    uint64_t length, data, utf8, utf8_length;
    int kind;
    bool ascii, compact, interned;
};

static int read_str_hdr(struct hw *w, uint64_t obj, struct str_hdr *h)
{
    const struct py_layout *L = w->L;
    uint8_t b[96];
    size_t n = L->str_compact_size + 8;
    if (n > sizeof(b))
        return -SCRY_E_INTERNAL;
    int err = mc_read(&w->mc, obj, b, n);
    if (err)
        return err;
    uint32_t state;
    memcpy(&state, b + L->str_state, 4);
    h->length = rd64(b + L->str_length);
    h->interned = (state & 3) != 0;
    h->kind = (int)((state >> 2) & 7);
    h->compact = (state >> 5) & 1;
    h->ascii = (state >> 6) & 1;
    if (h->length > (1ULL << 40) || (h->kind != 1 && h->kind != 2 && h->kind != 4))
        return err_fail(SCRY_E_READ_FAILED, "str at 0x%llx has an invalid header",
                        (unsigned long long)obj);
    h->utf8 = h->utf8_length = 0;
    if (h->compact && h->ascii) {
        h->data = obj + L->str_ascii_size;
    } else {
        h->utf8_length = rd64(b + L->str_ascii_size);
        h->utf8 = rd64(b + L->str_ascii_size + 8);
        h->data = h->compact ? obj + L->str_compact_size : rd64(b + L->str_compact_size);
    }
    return 0;
}

static uint64_t str_sizeof(const struct hw *w, const struct str_hdr *h)
{
    const struct py_layout *L = w->L;
    uint64_t size;
    if (h->compact && h->ascii)
        size = L->str_ascii_size + h->length + 1;
    else if (h->compact)
        size = L->str_compact_size + (h->length + 1) * (uint64_t)h->kind;
    else
        size = L->str_compact_size + 8 + (h->data ? (h->length + 1) * (uint64_t)h->kind : 0);
    if (!(h->compact && h->ascii) && h->utf8 && h->utf8 != h->data)
        size += h->utf8_length + 1;
    return size;
}

/* Appends at most max_bytes of the string as UTF-8 (cut on a character boundary). */
static int str_utf8(struct hw *w, const struct str_hdr *h, size_t max_bytes, struct strbuf *out)
{
    uint8_t buf[1024];
    size_t count = h->length < max_bytes ? (size_t)h->length : max_bytes;
    size_t per = sizeof(buf) / (size_t)h->kind, start = out->len;
    for (size_t done = 0; done < count;) {
        size_t chunk = count - done < per ? count - done : per;
        int err = mc_read(&w->mc, h->data + done * (size_t)h->kind, buf, chunk * (size_t)h->kind);
        if (err)
            return err;
        for (size_t i = 0; i < chunk; i++) {
            uint32_t cp;
            if (h->kind == 1) {
                cp = buf[i];
            } else if (h->kind == 2) {
                uint16_t u;
                memcpy(&u, buf + 2 * i, 2);
                cp = u;
            } else {
                memcpy(&cp, buf + 4 * i, 4);
            }
            char e[4];
            size_t n;
            if (cp >= 0xd800 && cp <= 0xdfff)
                cp = 0xfffd;
            if (cp < 0x80) {
                e[0] = (char)cp;
                n = 1;
            } else if (cp < 0x800) {
                e[0] = (char)(0xc0 | (cp >> 6));
                e[1] = (char)(0x80 | (cp & 63));
                n = 2;
            } else if (cp < 0x10000) {
                e[0] = (char)(0xe0 | (cp >> 12));
                e[1] = (char)(0x80 | ((cp >> 6) & 63));
                e[2] = (char)(0x80 | (cp & 63));
                n = 3;
            } else {
                if (cp > 0x10ffff)
                    cp = 0xfffd;
                e[0] = (char)(0xf0 | (cp >> 18));
                e[1] = (char)(0x80 | ((cp >> 12) & 63));
                e[2] = (char)(0x80 | ((cp >> 6) & 63));
                e[3] = (char)(0x80 | (cp & 63));
                n = 4;
            }
            if (out->len - start + n > max_bytes)
                return 0;
            sb_add(out, e, n);
        }
        done += chunk;
    }
    return 0;
}

/* A code object's name or file as a root label shows it: through the redaction rule, whole as
 * frames.c read it. */
static const char *redacted_or(const char *s)
{
    return s && redact_text_is_secret(s, strlen(s)) ? redacted_text : s;
}

/* ---- types ------------------------------------------------------------------------------------ */

static struct tinfo *get_type(struct hw *w, uint64_t t);

/* The text of a C string (a type's tp_name, a slot's name), decided on by the redaction rule
 * whole (up to REDACT_MARGIN past the cut), then cut to max bytes. */
static const char *read_cstr(struct hw *w, uint64_t addr, size_t max)
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
        s = redacted_text;
    else if (n)
        s = arena_strndup(&w->arena, buf, redact_utf8_cut(buf, n, max));
    free(buf);
    return s;
}

/* A str object's text (a dict key, an attribute or local name, a type, module or file name),
 * decoded, decided on by the redaction rule whole (up to REDACT_MARGIN past the cut), then cut to
 * MAX_NAME bytes; redacted_text when the rule flags it. Cached by address; NULL if it is not a
 * str. */
static const char *str_text(struct hw *w, uint64_t obj, bool *interned)
{
    uint64_t v;
    struct str_hdr h;
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
    struct tinfo *ti = get_type(w, tp);
    if (!ti || !ti->valid || ti->kind != K_STR || read_str_hdr(w, obj, &h))
        return NULL;
    struct strbuf sb = STRBUF_INIT;
    const char *s = NULL;
    if (str_utf8(w, &h, MAX_NAME + REDACT_MARGIN, &sb) == 0)
        s = redact_text_is_secret(sb_str(&sb), sb.len)
                ? redacted_text
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

/* Value of a str key in a dict (combined or split), by content; 0 when absent. */
static uint64_t dict_get(struct hw *w, uint64_t dict, const char *key)
{
    uint8_t d[48], k[32];
    if (mc_read(&w->mc, dict, d, sizeof(d)))
        return 0;
    uint64_t keys = rd64(d + w->L->dict_keys), values = rd64(d + w->L->dict_values);
    if (!keys || mc_read(&w->mc, keys, k, sizeof(k)))
        return 0;
    uint64_t n = rd64(k + w->H->dk_nentries);
    int kind = k[10];
    if (k[9] > 40 || n > 1 << 20)
        return 0;
    uint64_t entries = keys + 32 + (1ULL << k[9]);
    size_t esize = kind == 0 ? 24 : 16;
    if (values && w->L->values_kind == PY_VALUES_313)
        values += 8;
    for (uint64_t i = 0; i < n; i++) {
        uint8_t e[24];
        if (mc_read(&w->mc, entries + i * esize, e, esize))
            return 0;
        uint64_t kobj = kind == 0 ? rd64(e + 8) : rd64(e);
        uint64_t val = kind == 0 ? rd64(e + 16) : rd64(e + 8);
        if (!kobj)
            continue;
        const char *s = str_text(w, kobj, NULL);
        if (s && strcmp(s, key) == 0) {
            if (values && mc_read_u64(&w->mc, values + i * 8, &val))
                return 0;
            return val;
        }
    }
    return 0;
}

static bool type_is_type(struct hw *w, uint64_t meta)
{
    /* `type`, or a metatype (ABCMeta, EnumType, ...) whose type is `type`, a few levels deep. */
    for (int depth = 0; depth < 4 && meta; depth++) {
        if (meta == w->rt->types.type)
            return true;
        if (mc_read_u64(&w->mc, meta + w->L->ob_type, &meta))
            return false;
    }
    return false;
}

static enum kind builtin_kind(struct hw *w, uint64_t t)
{
    const struct py_types *T = &w->rt->types;
    if (!t)
        return K_OBJECT;
    if (t == T->str)
        return K_STR;
    if (t == T->bytes)
        return K_BYTES;
    if (t == T->bytearray)
        return K_BYTEARRAY;
    if (t == T->long_ || t == T->bool_)
        return K_INT;
    if (t == T->float_)
        return K_FLOAT;
    if (t == T->none_type)
        return K_NONE;
    if (t == T->code)
        return K_CODE;
    if (t == T->dict || t == T->odict)
        return K_DICT;
    if (t == T->list)
        return K_LIST;
    if (t == T->tuple)
        return K_TUPLE;
    if (t == T->set || t == T->frozenset)
        return K_SET;
    if (t == T->cell)
        return K_CELL;
    if (t == T->function)
        return K_FUNCTION;
    if (t == T->method)
        return K_METHOD;
    if (t == T->cfunction || t == T->cmethod)
        return K_CFUNCTION;
    if (t == T->classmethod || t == T->staticmethod)
        return K_CLASSMETHOD;
    if (t == T->property)
        return K_PROPERTY;
    if (t == T->module)
        return K_MODULE;
    if (t == T->type)
        return K_TYPE;
    if (t == T->frame)
        return K_FRAME;
    if (t == T->gen || t == T->coro || t == T->async_gen)
        return K_GEN;
    if (t == T->weakref || t == T->weakproxy || t == T->weakcallableproxy)
        return K_WEAKREF;
    if (t == T->traceback)
        return K_TRACEBACK;
    return (enum kind)-1;
}

/* The __slots__ members of a heap type (those of its heap-type bases too). */
static void load_slots(struct hw *w, struct tinfo *ti)
{
    struct slot tmp[256];
    uint32_t n = 0;
    uint64_t cur = ti->addr;
    for (int depth = 0; cur && depth < MAX_TYPE_DEPTH && n < 256; depth++) {
        uint64_t flags, meta, nmembers, base;
        int64_t meta_basicsize;
        if (mc_read_u64(&w->mc, cur + w->L->tp_flags, &flags) || !(flags & TPFLAGS_HEAPTYPE))
            break;
        if (mc_read_u64(&w->mc, cur + w->L->ob_type, &meta) ||
            mc_read_u64(&w->mc, meta + w->L->tp_basicsize, (uint64_t *)&meta_basicsize) ||
            mc_read_u64(&w->mc, cur + 16, &nmembers) ||
            mc_read_u64(&w->mc, cur + w->H->tp_base, &base))
            break;
        if (meta_basicsize > 0 && meta_basicsize < (1 << 16) && nmembers > 0 &&
            nmembers < MAX_MEMBERS) {
            for (uint64_t i = 0; i < nmembers && n < 256; i++) {
                uint8_t m[40];
                if (mc_read(&w->mc, cur + (uint64_t)meta_basicsize + i * 40, m, sizeof(m)))
                    break;
                int type = rd32(m + 8);
                uint64_t off = rd64(m + 16);
                if ((type != T_OBJECT_EX && type != T_OBJECT) || off < 16 || off > (1 << 20) ||
                    (off & 7))
                    continue;
                const char *name = read_cstr(w, rd64(m), MAX_NAME);
                if (!name)
                    continue;
                tmp[n].label = arena_printf(&w->arena, ".%s", name);
                tmp[n].off = off;
                if (tmp[n].label)
                    n++;
            }
        }
        cur = base;
    }
    if (n) {
        ti->slots = arena_memdup(&w->arena, tmp, n * sizeof(tmp[0]));
        ti->nslots = ti->slots ? n : 0;
    }
}

static const char *type_name(struct hw *w, struct tinfo *ti)
{
    if (ti->heap) {
        uint64_t qual, dict, mod;
        const char *q = NULL, *m = NULL;
        if (mc_read_u64(&w->mc, ti->addr + w->H->ht_qualname, &qual) == 0 && qual)
            q = str_text(w, qual, NULL);
        if (mc_read_u64(&w->mc, ti->addr + w->H->tp_dict, &dict) == 0 && dict &&
            (mod = dict_get(w, dict, "__module__")) != 0)
            m = str_text(w, mod, NULL);
        if (q && m)
            return arena_printf(&w->arena, "%s.%s", m, q);
        if (q)
            return q;
    }
    uint64_t tp_name;
    const char *s = NULL;
    if (mc_read_u64(&w->mc, ti->addr + w->L->tp_name, &tp_name) == 0 && tp_name)
        s = read_cstr(w, tp_name, MAX_NAME);
    if (!s)
        return "<unknown type>";
    if (!strchr(s, '.'))
        return arena_printf(&w->arena, "builtins.%s", s);
    return s;
}

static struct tinfo *get_type(struct hw *w, uint64_t t)
{
    uint64_t v;
    if (!t || (t & 7))
        return NULL;
    struct tinfo **front = &w->type_cache[(t >> 4) & 255];
    if (*front && (*front)->addr == t)
        return *front;
    if (hm_get(&w->types, t, &v)) {
        *front = (struct tinfo *)(uintptr_t)v;
        return *front;
    }
    struct tinfo *ti = arena_alloc(&w->arena, sizeof(*ti));
    if (!ti)
        return NULL;
    ti->addr = t;
    if (hm_put(&w->types, t, (uint64_t)(uintptr_t)ti))
        return NULL;
    uint8_t b[512];
    uint64_t meta;
    if (w->H->sizeof_type > sizeof(b) || mc_read(&w->mc, t, b, w->H->sizeof_type))
        return ti;
    meta = rd64(b + w->L->ob_type);
    ti->flags = rd64(b + w->L->tp_flags);
    ti->basicsize = (int64_t)rd64(b + w->L->tp_basicsize);
    ti->itemsize = (int64_t)rd64(b + w->H->tp_itemsize);
    ti->dictoffset = (int64_t)rd64(b + w->L->tp_dictoffset);
    if (!type_is_type(w, meta) || !(ti->flags & TPFLAGS_READY) || ti->basicsize < 16 ||
        ti->basicsize > (1 << 24) || ti->itemsize < 0 || ti->itemsize > (1 << 16))
        return ti; /* not a type: ti->valid stays false */
    ti->valid = true;
    ti->heap = (ti->flags & TPFLAGS_HEAPTYPE) != 0;
    ti->gc = (ti->flags & TPFLAGS_HAVE_GC) != 0;
    uint64_t preheader = w->L->minor == 11 ? TPFLAGS_MANAGED_DICT
                                           : TPFLAGS_MANAGED_DICT | TPFLAGS_MANAGED_WEAKREF;
    ti->presize = (ti->gc ? 16 : 0) + ((ti->flags & preheader) ? 16 : 0);
    if (ti->heap)
        mc_read_u64(&w->mc, t + w->L->ht_cached_keys, &ti->cached_keys);

    /* The nearest known builtin in the tp_base chain decides how instances are traversed. */
    ti->kind = K_OBJECT;
    uint64_t cur = t;
    for (int depth = 0; cur && depth < MAX_TYPE_DEPTH; depth++) {
        enum kind k = builtin_kind(w, cur);
        if ((int)k >= 0) {
            ti->kind = k;
            break;
        }
        if (mc_read_u64(&w->mc, cur + w->H->tp_base, &cur))
            break;
    }
    if (ti->kind == K_OBJECT && (ti->flags & TPFLAGS_BASE_EXC_SUBCLASS))
        ti->kind = K_EXC;
    if (ti->kind == K_OBJECT && (ti->flags & TPFLAGS_TYPE_SUBCLASS))
        ti->kind = K_TYPE;
    if (ti->heap)
        load_slots(w, ti);
    ti->name = type_name(w, ti);
    uint64_t tp_name, base = rd64(b + w->H->tp_base);
    if ((tp_name = rd64(b + w->L->tp_name)) != 0)
        ti->cname = read_cstr(w, tp_name, MAX_NAME);
    ti->ct = hc_lookup(w->L->minor, ti->cname, ti->basicsize);
    if (!ti->ct && base && base != t) {
        const struct tinfo *bt = get_type(w, base);
        if (bt && bt->valid)
            ti->ct = bt->ct;
    }
    return ti;
}

/* ---- objects, edges, roots -------------------------------------------------------------------- */

/* 1 when addr is an object, 0 when it is not (or a negative error); the first time it is met
 * it is checked and pushed on the work stack with its tinfo and flags. */
static int add_flags(struct hw *w, uint64_t addr, uint64_t flags)
{
    uint64_t tp;
    if (addr < 4096 || (addr & 7))
        return 0;
    struct seen_page *p = seen_page_of(&w->seen, addr, true);
    if (!p)
        return -SCRY_E_NO_MEMORY;
    unsigned state = seen_get(p, addr);
    if (state != SEEN_NEW)
        return state != SEEN_NOT_OBJECT;
    struct tinfo *ti = NULL;
    if (mc_read_u64(&w->mc, addr + w->L->ob_type, &tp) == 0)
        ti = get_type(w, tp);
    if (!ti || !ti->valid) {
        w->st->unreadable++;
        seen_set(p, addr, SEEN_NOT_OBJECT);
        return 0;
    }
    seen_set(p, addr, (flags & SEEN_TRACKED) ? SEEN_ON_GC_LIST : SEEN_OBJECT);
    /* The stack holds (address, tinfo | flags) pairs: no lookup when the object is walked. */
    if (w->nstack + 2 > w->capstack) {
        size_t nc = w->capstack ? w->capstack * 2 : 8192;
        uint64_t *ns = realloc(w->stack, nc * sizeof(*ns));
        if (!ns)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
        w->stack = ns;
        w->capstack = nc;
    }
    w->stack[w->nstack++] = addr;
    w->stack[w->nstack++] = (uint64_t)(uintptr_t)ti | flags;
    return 1;
}

/* With captured contents, what is held under a secret-sounding name (or a name that is itself
 * redacted) is stored as <redacted>. */
static bool sensitive_name(const struct hw *w, const char *name)
{
    return w->opt->capture_contents && name &&
           (name == redacted_text || redact_name_is_sensitive(name, strlen(name)));
}

static int mark_sensitive(struct hw *w, uint64_t addr)
{
    if (hm_put(&w->sensitive, addr, 1))
        return err_fail(SCRY_E_NO_MEMORY, "out of memory walking the heap");
    return 0;
}

/* The flags of an object on the work stack, with what was learnt of it since it was pushed. */
static uint64_t current_flags(const struct hw *w, uint64_t addr, uint64_t v)
{
    if (w->opt->capture_contents && hm_has(&w->sensitive, addr))
        v |= SEEN_SENSITIVE;
    return v;
}

/* A reference from `from` (an object), or a root when from is 0 (label is then prefix + label). */
struct holder {
    uint64_t from;
    const char *prefix; /* roots: "Thread 4242 main (app.py:10)" */
    bool sensitive;     /* captured contents below are redacted */
};

static int ref(struct hw *w, const struct holder *h, uint64_t to, enum hw_edge_kind kind,
               const char *label, bool sensitive)
{
    if (!to)
        return 0;
    int err = add_flags(w, to, 0);
    if (err <= 0)
        return err;
    if (w->opt->capture_contents && (sensitive || h->sensitive) &&
        (err = mark_sensitive(w, to)) != 0)
        return err;
    if (h->from) {
        w->st->edges++;
        return w->sink->edge(w->sink->ctx, h->from, to, kind, label);
    }
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s%s%s", h->prefix ? h->prefix : "", h->prefix ? " " : "",
             label);
    w->st->roots++;
    return w->sink->root(w->sink->ctx, to, buf);
}

static int root(struct hw *w, uint64_t to, const char *label)
{
    struct holder h = {0, NULL, false};
    return ref(w, &h, to, HW_EDGE_INTERNAL, label, false);
}

/* ---- C types: known layouts (heap_ctypes.h) and a conservative scan of the others ------------- */

static int hc_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
    return mc_read(&((struct hw *)ctx)->mc, addr, buf, n);
}

static int hc_ref(void *ctx, uint64_t to, int kind, const char *label)
{
    struct hw *w = ctx;
    return ref(w, w->hc_holder, to, (enum hw_edge_kind)kind, label, false);
}

static bool hc_covered(void *ctx, uint64_t off)
{
    const struct hw *w = ctx;
    const struct tinfo *ti = w->hc_type;
    if (ti->kind != K_OBJECT && !ti->heap)
        return false; /* walk_instance does not run: no slot is reported */
    for (uint32_t i = 0; i < ti->nslots; i++)
        if (ti->slots[i].off == off)
            return true;
    return false;
}

static const char *hc_type_name(void *ctx, uint64_t type)
{
    const struct tinfo *ti = get_type(ctx, type);
    return ti && ti->valid ? ti->cname : NULL;
}

/* The references and owned native bytes of an object whose type has a known C layout. */
static int walk_ctype(struct hw *w, const struct holder *h, uint64_t addr, const struct tinfo *ti,
                      uint64_t *extra)
{
    w->hc_holder = h;
    w->hc_type = ti;
    return hc_walk(ti->ct, &w->hc, addr, extra);
}

/* Every class defined in Python has subtype_dealloc as its tp_dealloc (typeobject.c), so it is
 * learnt from one that is always there: importlib's ModuleSpec. */
#define TP_DEALLOC 48 /* PyTypeObject.tp_dealloc, the same in every version */

static void find_subtype_dealloc(struct hw *w, uint64_t interp)
{
    uint64_t modules = 0, mod, md = 0, spec;
    if (mc_read_u64(&w->mc, interp + w->L->is_modules, &modules) || !modules ||
        !(mod = dict_get(w, modules, "_frozen_importlib")) ||
        mc_read_u64(&w->mc, mod + w->L->mod_dict, &md) || !md ||
        !(spec = dict_get(w, md, "ModuleSpec")))
        return;
    const struct tinfo *ti = get_type(w, spec);
    uint64_t tp;
    if (ti && ti->valid && mc_read_u64(&w->mc, spec + w->L->ob_type, &tp) == 0 &&
        tp == w->rt->types.type && (ti = get_type(w, tp)) != NULL)
        mc_read_u64(&w->mc, spec + TP_DEALLOC, &w->subtype_dealloc);
}

/* The C body of a type's instances: that of its nearest base not defined in Python (whose
 * tp_dealloc is not subtype_dealloc), with that base's weakref and dict slots. */
static void body_of(struct hw *w, struct tinfo *ti)
{
    ti->body_known = true;
    ti->body_size = 0;
    if (!w->subtype_dealloc)
        return;
    uint64_t cur = ti->addr;
    for (int depth = 0; cur && depth < MAX_TYPE_DEPTH; depth++) {
        uint64_t dealloc, base;
        int64_t bs, wl, dict;
        if (mc_read_u64(&w->mc, cur + TP_DEALLOC, &dealloc) ||
            mc_read_u64(&w->mc, cur + w->H->tp_base, &base))
            return;
        if (dealloc != w->subtype_dealloc) {
            if (mc_read_u64(&w->mc, cur + w->L->tp_basicsize, (uint64_t *)&bs) ||
                mc_read_u64(&w->mc, cur + w->H->tp_weaklistoffset, (uint64_t *)&wl) ||
                mc_read_u64(&w->mc, cur + w->L->tp_dictoffset, (uint64_t *)&dict) || bs < 16 ||
                bs > (1 << 16))
                return;
            ti->body_size = bs;
            ti->body_weaklist = wl;
            ti->body_dict = dict;
            return;
        }
        cur = base;
    }
}

/* A conservative collector's view of an extension object with no known layout: each aligned
 * word of its C body that is the address of an object is taken for a reference. Accepted: an
 * object already met (everything on the GC lists is met before any object is walked), or one
 * that is not GC-tracked by its type (never on a GC list: numpy arrays, str, int, ...) and checks
 * out as an object. Never interior pointers; the weakref list, the dict slot (walked exactly)
 * and ob_size are skipped. The edges are marked inferred. */
static int scan_body(struct hw *w, const struct holder *h, uint64_t addr, struct tinfo *ti)
{
    if (!ti->body_known)
        body_of(w, ti);
    if (ti->body_size <= 16)
        return 0;
    uint64_t words[1 << 13];
    uint64_t n = ((uint64_t)ti->body_size - 16) / 8;
    if (n > sizeof(words) / 8)
        n = sizeof(words) / 8;
    if (mc_read(&w->mc, addr + 16, words, n * 8))
        return 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t off = 16 + 8 * i, p = words[i];
        if (p < 4096 || (p & 7) || p >= (1ULL << 47) || p == addr ||
            (int64_t)off == ti->body_weaklist || (int64_t)off == ti->body_dict ||
            (off == 16 && ti->itemsize))
            continue;
        struct seen_page *pg = seen_page_of(&w->seen, p, false);
        unsigned state = pg ? seen_get(pg, p) : SEEN_NEW;
        if (state == SEEN_NOT_OBJECT)
            continue;
        if (state == SEEN_NEW) {
            uint64_t hdr[2];
            const struct tinfo *pt = NULL;
            if (mc_read(&w->mc, p, hdr, sizeof(hdr)) == 0 && hdr[0] && hdr[0] < (1ULL << 48))
                pt = get_type(w, hdr[1]);
            if (!pt || !pt->valid || pt->gc)
                continue; /* a GC object that is on no GC list is not live */
        }
        char label[32];
        snprintf(label, sizeof(label), ".<inferred +%llu>", (unsigned long long)off);
        int err = ref(w, h, p, (enum hw_edge_kind)(HW_EDGE_ATTR | HW_EDGE_INFERRED), label,
                      false);
        if (err)
            return err;
    }
    return 0;
}

/* Fixed pointer fields of an object, as listed in the layout table. */
static int ref_fields(struct hw *w, const struct holder *h, uint64_t base,
                      const struct py_ref_field *f, size_t max)
{
    for (size_t i = 0; i < max && f[i].label; i++) {
        uint64_t p;
        if (mc_read_u64(&w->mc, base + f[i].off, &p) == 0 && p) {
            int err = ref(w, h, p, (enum hw_edge_kind)f[i].kind, f[i].label, false);
            if (err)
                return err;
        }
    }
    return 0;
}

#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

/* Appends s to a label as a Python-like quoted string: 'a\'b'. */
static void quote(char *out, size_t cap, const char *s)
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
    uint8_t hdr[40];
    if (mc_read(&w->mc, obj, hdr, 24))
        return -SCRY_E_READ_FAILED;
    uint64_t nd;
    bool neg;
    if (w->L->long_has_lv_tag) {
        uint64_t tag = rd64(hdr + 16);
        nd = tag >> 3;
        neg = (tag & 3) == 2;
    } else {
        int64_t size = (int64_t)rd64(hdr + 16);
        neg = size < 0;
        nd = neg ? (uint64_t)-size : (uint64_t)size;
    }
    uint32_t d[3] = {0, 0, 0};
    if (nd > 2 || (nd && mc_read(&w->mc, obj + w->L->long_digits, d, nd * 4)))
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
static void key_label(struct hw *w, uint64_t key, char *out, size_t cap, bool *sensitive)
{
    uint64_t tp;
    struct tinfo *ti = NULL;
    *sensitive = false;
    if (mc_read_u64(&w->mc, key + w->L->ob_type, &tp) == 0)
        ti = get_type(w, tp);
    if (!ti || !ti->valid) {
        snprintf(out, cap, "[<?>]");
        return;
    }
    if (ti->kind == K_STR) {
        bool interned;
        const char *s = NULL;
        struct str_hdr h;
        if (read_str_hdr(w, key, &h) == 0 && (h.interned || w->opt->capture_contents))
            s = str_text(w, key, &interned);
        if (s) {
            *sensitive = sensitive_name(w, s);
            out[0] = '[';
            out[1] = 0;
            if (s == redacted_text)
                strncat(out, redacted_text, cap - 2);
            else
                quote(out, cap - 1, s);
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

/* ---- containers ------------------------------------------------------------------------------- */

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
static const char *index_label_of(struct hw *w, uint64_t i, char *buf)
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

static int ref_items(struct hw *w, const struct holder *h, uint64_t items, uint64_t n)
{
    uint64_t buf[CHUNK];
    char label[32];
    for (uint64_t i = 0; i < n; i += CHUNK) {
        size_t k = n - i < CHUNK ? (size_t)(n - i) : CHUNK;
        int err = mc_read(&w->mc, items + i * 8, buf, k * 8);
        if (err) {
            w->st->unreadable++;
            return 0;
        }
        for (size_t j = 0; j < k; j++) {
            if (!buf[j])
                continue;
            err = ref(w, h, buf[j], HW_EDGE_INDEX, index_label_of(w, i + j, label), false);
            if (err)
                return err;
        }
    }
    return 0;
}

static uint64_t keys_size(uint8_t log2_size, uint8_t log2_index_bytes, int kind)
{
    uint64_t usable = ((1ULL << log2_size) << 1) / 3;
    return 32 + (1ULL << log2_index_bytes) + usable * (kind == 0 ? 24 : 16);
}

/* A dict's entries; returns its __sizeof__ in *size. */
static int walk_dict(struct hw *w, const struct holder *h, uint64_t dict, int64_t basicsize,
                     uint64_t *size)
{
    uint8_t d[48], k[32];
    *size = (uint64_t)basicsize;
    if (mc_read(&w->mc, dict, d, sizeof(d)))
        return 0;
    uint64_t keys = rd64(d + w->L->dict_keys), values = rd64(d + w->L->dict_values);
    if (!keys || mc_read(&w->mc, keys, k, sizeof(k))) {
        w->st->unreadable++;
        return 0;
    }
    uint64_t refcnt = rd64(k), usable = rd64(k + w->H->dk_usable);
    uint64_t nentries = rd64(k + w->H->dk_nentries);
    uint8_t log2_size = k[8], log2_index_bytes = k[9], kind = k[10];
    if (log2_index_bytes > 40 || log2_size > 40 || kind > 2 || nentries > MAX_ITEMS ||
        usable > MAX_ITEMS) {
        w->st->unreadable++;
        return 0;
    }
    if (values)
        *size += (nentries + usable) * 8;
    if (refcnt == 1)
        *size += keys_size(log2_size, log2_index_bytes, kind);
    bool embedded = false;
    if (values && w->L->values_kind == PY_VALUES_313) {
        uint8_t vh[4];
        if (mc_read(&w->mc, values, vh, sizeof(vh)) == 0)
            embedded = vh[2] != 0;
        values += 8;
    }
    if (embedded)
        return 0; /* the owning instance reports its inline values, as dict_traverse skips them */

    uint64_t entries = keys + 32 + (1ULL << log2_index_bytes);
    size_t esize = kind == 0 ? 24 : 16;
    uint8_t buf[CHUNK * 24];
    uint64_t vals[CHUNK];
    char label[MAX_NAME * 2 + 64];
    for (uint64_t i = 0; i < nentries; i += CHUNK) {
        size_t n = nentries - i < CHUNK ? (size_t)(nentries - i) : CHUNK;
        if (mc_read(&w->mc, entries + i * esize, buf, n * esize) ||
            (values && mc_read(&w->mc, values + i * 8, vals, n * 8))) {
            w->st->unreadable++;
            return 0;
        }
        for (size_t j = 0; j < n; j++) {
            const uint8_t *e = buf + j * esize;
            uint64_t key = kind == 0 ? rd64(e + 8) : rd64(e);
            uint64_t val = values ? vals[j] : (kind == 0 ? rd64(e + 16) : rd64(e + 8));
            if (!key || !val)
                continue;
            bool sensitive;
            key_label(w, key, label, sizeof(label), &sensitive);
            int err = ref(w, h, val, HW_EDGE_DICT_VALUE, label, sensitive);
            if (!err && !values) { /* split keys belong to the type's shared keys */
                char klabel[sizeof(label) + 8];
                snprintf(klabel, sizeof(klabel), "<key>%s", label);
                err = ref(w, h, key, HW_EDGE_DICT_KEY, klabel, false);
            }
            if (err)
                return err;
        }
    }
    return 0;
}

static int walk_set(struct hw *w, const struct holder *h, uint64_t set, uint64_t *size)
{
    uint64_t mask, table;
    if (mc_read_u64(&w->mc, set + w->H->set_mask, &mask) ||
        mc_read_u64(&w->mc, set + w->H->set_table, &table) || mask >= MAX_ITEMS) {
        w->st->unreadable++;
        return 0;
    }
    if (table != set + w->H->set_smalltable)
        *size += (mask + 1) * 16;
    uint64_t buf[CHUNK * 2];
    for (uint64_t i = 0; i <= mask; i += CHUNK) {
        size_t n = mask + 1 - i < CHUNK ? (size_t)(mask + 1 - i) : CHUNK;
        if (mc_read(&w->mc, table + i * 16, buf, n * 16)) {
            w->st->unreadable++;
            return 0;
        }
        for (size_t j = 0; j < n; j++) {
            uint64_t key = buf[2 * j];
            if (!key || key == w->set_dummy)
                continue;
            int err = ref(w, h, key, HW_EDGE_INDEX, "<member>", false);
            if (err)
                return err;
        }
    }
    return 0;
}

/* Instance attributes kept in split or inline values, named by the type's shared keys. */
static int ref_values(struct hw *w, const struct holder *h, const struct tinfo *ti,
                      uint64_t values, uint64_t capacity)
{
    uint8_t k[32];
    if (!ti->cached_keys || mc_read(&w->mc, ti->cached_keys, k, sizeof(k)))
        return 0;
    uint64_t n = rd64(k + w->H->dk_nentries);
    if (k[9] > 40 || n > MAX_MEMBERS * 16)
        return 0;
    if (n > capacity)
        n = capacity;
    uint64_t entries = ti->cached_keys + 32 + (1ULL << k[9]);
    char label[MAX_NAME + 8];
    struct tinfo *mt = (struct tinfo *)ti; /* the label cache only */
    if (!mt->attr_keys && n) {
        uint32_t cap = n < 64 ? (uint32_t)n : 64;
        mt->attr_keys = arena_alloc(&w->arena, cap * sizeof(uint64_t));
        mt->attr_labels = arena_alloc(&w->arena, cap * sizeof(char *));
        if (mt->attr_keys && mt->attr_labels) {
            memset(mt->attr_keys, 0, cap * sizeof(uint64_t));
            mt->nattr = cap;
        }
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t key, val;
        if (mc_read_u64(&w->mc, values + i * 8, &val) || !val)
            continue;
        if (mc_read_u64(&w->mc, entries + i * 16, &key))
            continue;
        const char *shown, *name;
        if (key && i < mt->nattr && mt->attr_keys[i] == key) {
            shown = mt->attr_labels[i]; /* ".name" of a key whose text was found */
            name = shown + 1;
        } else {
            name = key ? str_text(w, key, NULL) : NULL;
            /* No snprintf: this runs for every attribute of every instance. */
            size_t len = strnlen(name ? name : "<?>", sizeof(label) - 2);
            label[0] = '.';
            memcpy(label + 1, name ? name : "<?>", len);
            label[len + 1] = 0;
            shown = label;
            char *kept;
            if (name && i < mt->nattr && (kept = arena_alloc(&w->arena, len + 2)) != NULL) {
                memcpy(kept, label, len + 2);
                mt->attr_keys[i] = key;
                mt->attr_labels[i] = kept;
                shown = kept;
            }
        }
        int err = ref(w, h, val, HW_EDGE_ATTR, shown,
                      sensitive_name(w, name));
        if (err)
            return err;
    }
    return 0;
}

/* What subtype_traverse visits for instances of classes: __slots__, the instance dict or its
 * split/inline values, and the class. */
static int walk_instance(struct hw *w, const struct holder *h, uint64_t obj, const struct tinfo *ti,
                         int64_t ob_size)
{
    int err;
    for (uint32_t i = 0; i < ti->nslots; i++) {
        uint64_t p;
        if (mc_read_u64(&w->mc, obj + ti->slots[i].off, &p) == 0 && p) {
            const char *name = ti->slots[i].label + 1;
            err = ref(w, h, p, HW_EDGE_ATTR, ti->slots[i].label,
                      sensitive_name(w, name));
            if (err)
                return err;
        }
    }
    uint64_t dict = 0;
    if (ti->flags & TPFLAGS_MANAGED_DICT) {
        uint64_t word;
        switch (w->L->values_kind) {
        case PY_VALUES_311:
            if (mc_read_u64(&w->mc, obj - 32, &word) == 0 && word) {
                err = ref_values(w, h, ti, word, MAX_ITEMS);
                if (err)
                    return err;
            }
            mc_read_u64(&w->mc, obj - 24, &dict);
            break;
        case PY_VALUES_312:
            if (mc_read_u64(&w->mc, obj - 24, &word) == 0 && (word & 1)) {
                err = ref_values(w, h, ti, word + 1, MAX_ITEMS);
                if (err)
                    return err;
            } else {
                dict = word;
            }
            break;
        case PY_VALUES_313:
            if (ti->flags & TPFLAGS_INLINE_VALUES) {
                uint8_t vh[4];
                uint64_t at = obj + (uint64_t)ti->basicsize;
                if (mc_read(&w->mc, at, vh, sizeof(vh)) == 0 && vh[3] /* valid */) {
                    err = ref_values(w, h, ti, at + 8, vh[0]);
                    if (err)
                        return err;
                }
            }
            mc_read_u64(&w->mc, obj - 24, &dict);
            break;
        }
    } else if (ti->dictoffset > 0) {
        mc_read_u64(&w->mc, obj + (uint64_t)ti->dictoffset, &dict);
    } else if (ti->dictoffset < 0) {
        uint64_t items = (uint64_t)(ob_size < 0 ? -ob_size : ob_size);
        uint64_t size = ((uint64_t)ti->basicsize + items * (uint64_t)ti->itemsize + 7) & ~7ULL;
        mc_read_u64(&w->mc, obj + size + (uint64_t)ti->dictoffset, &dict);
    }
    if (dict && ti->kind != K_TYPE) { /* a metatype's instances: tp_dict is reported already */
        err = ref(w, h, dict, HW_EDGE_ATTR, ".__dict__", false);
        if (err)
            return err;
    }
    if (ti->heap)
        return ref(w, h, ti->addr, HW_EDGE_INTERNAL, ".__class__", false);
    return 0;
}

/* ---- code, frames, generators ----------------------------------------------------------------- */

static const struct code_names *code_names(struct hw *w, uint64_t code)
{
    uint64_t v, names;
    if (hm_get(&w->codes, code, &v))
        return (const struct code_names *)(uintptr_t)v;
    struct code_names *cn = arena_alloc(&w->arena, sizeof(*cn));
    if (!cn)
        return NULL;
    int32_t n = 0;
    int64_t tn = 0;
    if (mc_read(&w->mc, code + w->H->co_nlocalsplus, &n, 4) == 0 &&
        mc_read_u64(&w->mc, code + w->H->co_localsplusnames, &names) == 0 && names &&
        mc_read_u64(&w->mc, names + 16, (uint64_t *)&tn) == 0 && n > 0 && n < 65536 &&
        tn >= n) {
        cn->names = arena_alloc(&w->arena, (size_t)n * sizeof(char *));
        for (int32_t i = 0; cn->names && i < n; i++) {
            uint64_t s;
            if (mc_read_u64(&w->mc, names + w->H->tuple_items + (uint64_t)i * 8, &s) == 0)
                cn->names[i] = str_text(w, s, NULL);
        }
        if (cn->names)
            cn->n = (uint32_t)n;
    }
    hm_put(&w->codes, code, (uint64_t)(uintptr_t)cn);
    return cn;
}

static int emit_code_location(struct hw *w, uint64_t at, uint64_t code)
{
    uint64_t file;
    int32_t line = 0;
    if (!w->sink->location || mc_read_u64(&w->mc, code + w->L->co_filename, &file) ||
        mc_read(&w->mc, code + w->L->co_firstlineno, &line, 4))
        return 0;
    const char *f = file ? str_text(w, file, NULL) : NULL;
    return f ? w->sink->location(w->sink->ctx, at, f, line) : 0;
}

/* The locals (and, for suspended frames, the value stack) of an _PyInterpreterFrame. */
static int walk_iframe(struct hw *w, const struct holder *h, uint64_t frame, bool suspended,
                       uint64_t *code_out)
{
    const struct py_layout *L = w->L;
    const struct py_heap_layout *H = w->H;
    uint8_t fr[128];
    uint64_t code;
    if (L->fr_localsplus > sizeof(fr) || mc_read(&w->mc, frame, fr, L->fr_localsplus))
        return 0;
    code = py_fw_object(L, rd64(fr + L->fr_code));
    if (code_out)
        *code_out = code;
    uint64_t ct;
    if (!code || mc_read_u64(&w->mc, code + L->ob_type, &ct) || ct != w->rt->types.code)
        return 0;
    const struct code_names *cn = code_names(w, code);
    uint64_t nlocals = cn ? cn->n : 0, nslots = nlocals;
    if (suspended) {
        int32_t stacksize = 0;
        mc_read(&w->mc, code + H->co_stacksize, &stacksize, 4);
        int64_t top = py_fw_stack_used(&w->fw, frame, fr, nlocals, stacksize);
        if (top >= 0)
            nslots = (uint64_t)top;
    }
    uint64_t slots[CHUNK];
    char label[MAX_NAME + 32];
    for (uint64_t i = 0; i < nslots; i += CHUNK) {
        size_t n = nslots - i < CHUNK ? (size_t)(nslots - i) : CHUNK;
        if (mc_read(&w->mc, frame + L->fr_localsplus + i * 8, slots, n * 8))
            break;
        for (size_t j = 0; j < n; j++) {
            uint64_t p = py_fw_object(L, slots[j]); /* 0: NULL or a tagged int */
            if (!p)
                continue;
            uint64_t idx = i + j;
            const char *name = idx < nlocals ? cn->names[idx] : NULL;
            if (idx < nlocals) {
                label[0] = 0;
                strcpy(label, ".locals[");
                if (name == redacted_text)
                    strcat(label, redacted_text);
                else
                    quote(label, sizeof(label) - 1, name ? name : "?");
                strcat(label, "]");
            } else {
                snprintf(label, sizeof(label), ".stack[%llu]",
                         (unsigned long long)(idx - nlocals));
            }
            int err = ref(w, h, p, HW_EDGE_LOCAL, label,
                          sensitive_name(w, name));
            if (err)
                return err;
        }
    }
    uint64_t locals = rd64(fr + H->fr_locals), globals = rd64(fr + H->fr_globals);
    int err = 0;
    if (locals && locals != globals)
        err = ref(w, h, locals, HW_EDGE_ATTR, ".f_locals", false);
    if (!err && h->from) { /* thread frames: module dicts are reached through sys.modules */
        uint64_t func = py_fw_object(L, rd64(fr + H->fr_func));
        err = ref(w, h, globals, HW_EDGE_INTERNAL, ".f_globals", false);
        if (!err)
            err = ref(w, h, func, HW_EDGE_INTERNAL, ".f_func", false);
        if (!err)
            err = ref(w, h, code, HW_EDGE_INTERNAL, ".f_code", false);
    }
    return err;
}

/* ---- one object ------------------------------------------------------------------------------- */

static int emit_object(struct hw *w, uint64_t addr, const struct tinfo *ti, uint64_t size,
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
    return w->sink->object(w->sink->ctx, addr, ti->name, size, flags, content, content_len);
}

/* Size and captured contents of a str/bytes/bytearray, then its report. Contents are read up to
 * REDACT_MARGIN past --max-str, decided on by the redaction rule, and only then cut. */
static int emit_leaf(struct hw *w, uint64_t addr, uint64_t seen)
{
    const size_t scan = w->opt->max_str + REDACT_MARGIN;
    const struct tinfo *ti = (const struct tinfo *)(uintptr_t)(seen & ~(uint64_t)SEEN_FLAGS);
    uint8_t hdr[48];
    if (mc_read(&w->mc, addr, hdr, ti->kind == K_BYTEARRAY ? 48 : 24))
        return 0;
    uint64_t refcnt = rd64(hdr), size = 0;
    bool capture = w->opt->capture_contents;
    struct strbuf *c = &w->content;
    sb_reset(c);
    if (ti->kind == K_STR) {
        struct str_hdr h;
        if (read_str_hdr(w, addr, &h) == 0) {
            size = str_sizeof(w, &h);
            if (capture && str_utf8(w, &h, scan, c) != 0)
                sb_reset(c);
        }
    } else if (ti->kind == K_BYTES) {
        int64_t n = (int64_t)rd64(hdr + w->L->bytes_size);
        if (n >= 0) {
            size = (uint64_t)ti->basicsize + (uint64_t)n * (uint64_t)ti->itemsize;
            size_t k = (uint64_t)n < scan ? (size_t)n : scan;
            if (capture && k) {
                char buf[4096];
                for (size_t done = 0; done < k;) {
                    size_t step = k - done < sizeof(buf) ? k - done : sizeof(buf);
                    if (mc_read(&w->mc, addr + w->L->bytes_sval + done, buf, step))
                        break;
                    sb_add(c, buf, step);
                    done += step;
                }
            }
        }
    } else { /* bytearray */
        int64_t n = (int64_t)rd64(hdr + 16), alloc = (int64_t)rd64(hdr + w->H->ba_alloc);
        uint64_t start = rd64(hdr + w->H->ba_start);
        size = (uint64_t)ti->basicsize + (alloc > 0 ? (uint64_t)alloc + w->H->ba_bytes_header : 0);
        if (capture && n > 0 && start) {
            size_t k = (uint64_t)n < scan ? (size_t)n : scan;
            char buf[4096];
            for (size_t done = 0; done < k;) {
                size_t step = k - done < sizeof(buf) ? k - done : sizeof(buf);
                if (mc_read(&w->mc, start + done, buf, step))
                    break;
                sb_add(c, buf, step);
                done += step;
            }
        }
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
    return emit_object(w, addr, ti, size, seen, refcnt, content, len);
}

static int walk_object(struct hw *w, uint64_t addr, uint64_t seen)
{
    const struct tinfo *ti = (const struct tinfo *)(uintptr_t)(seen & ~(uint64_t)SEEN_FLAGS);
    const struct py_heap_layout *H = w->H;
    struct holder h = {addr, NULL, (seen & SEEN_SENSITIVE) != 0};
    uint8_t hdr[24];
    int err = 0;
    if (mc_read(&w->mc, addr, hdr, sizeof(hdr)) && mc_read(&w->mc, addr, hdr, 16))
        return 0;
    uint64_t refcnt = rd64(hdr);
    int64_t ob_size = (int64_t)rd64(hdr + 16);

    if (ti->kind == K_STR || ti->kind == K_BYTES || ti->kind == K_BYTEARRAY) {
        if (ti->heap) {
            err = walk_instance(w, &h, addr, ti, ob_size);
            if (err)
                return err;
        }
        if (w->opt->capture_contents) /* after the walk: sensitivity is known then */
            return push_u64(&w->deferred, &w->ndeferred, &w->capdeferred, addr) ||
                           push_u64(&w->deferred, &w->ndeferred, &w->capdeferred, seen)
                       ? -SCRY_E_NO_MEMORY
                       : 0;
        return emit_leaf(w, addr, seen);
    }

    /* object.__sizeof__, refined per kind below. */
    uint64_t items = ti->itemsize ? (uint64_t)(ob_size < 0 ? -ob_size : ob_size) : 0;
    if (items > MAX_ITEMS)
        items = 0; /* not a variable-size object after all */
    uint64_t size = (uint64_t)ti->basicsize + items * (uint64_t)ti->itemsize;
    uint64_t presize = ti->presize;
    uint64_t code = 0;

    /* Report the object before its references (sinks may rely on it for nothing, but it reads
     * naturally in a trace); sizes that need the walk are computed first. */
    switch (ti->kind) {
    case K_INT: {
        uint64_t nd;
        if (w->L->long_has_lv_tag)
            nd = (uint64_t)ob_size >> 3;
        else
            nd = (uint64_t)(ob_size < 0 ? -ob_size : ob_size);
        size = w->L->long_digits + 4 * (nd ? nd : 1);
        break;
    }
    case K_GEN:
    case K_FRAME: {
        /* Not variable-size objects in 3.12+ (no ob_size): the slots come from the code. */
        uint64_t f = addr + H->gi_iframe, c = 0;
        int32_t nl = 0, ns = 0;
        if (ti->kind == K_FRAME && mc_read_u64(&w->mc, addr + H->frobj_frame, &f))
            f = 0;
        if (f && mc_read_u64(&w->mc, f + w->L->fr_code, &c) == 0 &&
            (c = py_fw_object(w->L, c)) != 0) {
            mc_read(&w->mc, c + H->co_nlocalsplus, &nl, 4);
            mc_read(&w->mc, c + H->co_stacksize, &ns, 4);
        }
        size = (uint64_t)ti->basicsize;
        if (nl >= 0 && ns >= 0 && nl + ns < (1 << 20))
            size += (uint64_t)(nl + ns) * 8;
        break;
    }
    case K_LIST: {
        uint64_t alloc;
        if (mc_read_u64(&w->mc, addr + H->list_allocated, &alloc) == 0 && alloc < MAX_ITEMS)
            size = (uint64_t)ti->basicsize + alloc * 8;
        break;
    }
    case K_CODE: {
        uint64_t extra;
        size = ((uint64_t)ti->basicsize + items * (uint64_t)ti->itemsize + 7) & ~7ULL;
        if (mc_read_u64(&w->mc, addr + H->co_extra, &extra) == 0 && extra) {
            int64_t ce_size;
            if (mc_read_u64(&w->mc, extra, (uint64_t *)&ce_size) == 0 && ce_size > 0 &&
                ce_size < 4096)
                size += 16 + (uint64_t)(ce_size - 1) * 8;
        }
        break;
    }
    default:
        break;
    }

    switch (ti->kind) {
    case K_DICT:
    case K_SET: {
        /* Sizes depend on the tables read while walking: walk first, report after. */
        uint64_t sz = size;
        if (ti->kind == K_DICT)
            err = walk_dict(w, &h, addr, ti->basicsize, &sz);
        else
            err = walk_set(w, &h, addr, &sz);
        if (!err && ti->ct) { /* OrderedDict's nodes, defaultdict's factory */
            uint64_t extra = 0;
            err = walk_ctype(w, &h, addr, ti, &extra);
            sz += extra;
        }
        if (!err && (ti->heap || ti->dictoffset > 0)) /* OrderedDict's od_inst_dict */
            err = walk_instance(w, &h, addr, ti, ob_size);
        if (!err)
            err = emit_object(w, addr, ti, sz + presize, seen, refcnt, NULL, 0);
        return err;
    }
    case K_TYPE: {
        /* A type object: its size is type.__sizeof__ of itself. */
        uint64_t flags = 0, ck = 0;
        mc_read_u64(&w->mc, addr + w->L->tp_flags, &flags);
        if (flags & TPFLAGS_HEAPTYPE) {
            size = H->sizeof_heaptype;
            if (mc_read_u64(&w->mc, addr + w->L->ht_cached_keys, &ck) == 0 && ck) {
                uint8_t k[32];
                if (mc_read(&w->mc, ck, k, sizeof(k)) == 0 && k[8] <= 40 && k[9] <= 40)
                    size += keys_size(k[8], k[9], k[10]);
            }
            presize = ti->presize;
        } else {
            size = H->sizeof_type;
            presize = H->static_type_presize ? 16 : 0;
        }
        err = emit_object(w, addr, ti, size + presize, seen, refcnt, NULL, 0);
        if (err)
            return err;
        if (flags & TPFLAGS_HEAPTYPE) {
            err = ref_fields(w, &h, addr, H->type_fields, NFIELDS(H->type_fields));
        } else {
            err = ref_fields(w, &h, addr, H->type_fields, 4); /* dict, mro, bases, base */
        }
        if (!err && ti->heap)
            err = walk_instance(w, &h, addr, ti, ob_size);
        return err;
    }
    default:
        break;
    }

    if (ti->ct) { /* known C layouts: references and owned memory before the report */
        uint64_t extra = 0;
        err = walk_ctype(w, &h, addr, ti, &extra);
        if (err)
            return err;
        size += extra;
    }
    err = emit_object(w, addr, ti, size + presize, seen, refcnt, NULL, 0);
    if (err)
        return err;

    switch (ti->kind) {
    case K_TUPLE:
        err = ref_items(w, &h, addr + H->tuple_items, items);
        break;
    case K_LIST: {
        uint64_t arr;
        if (ob_size > 0 && (uint64_t)ob_size < MAX_ITEMS &&
            mc_read_u64(&w->mc, addr + H->list_items, &arr) == 0 && arr)
            err = ref_items(w, &h, arr, (uint64_t)ob_size);
        break;
    }
    case K_CELL:
        err = ref_fields(w, &h, addr, H->cell, NFIELDS(H->cell));
        break;
    case K_FUNCTION: {
        err = ref_fields(w, &h, addr, H->func, NFIELDS(H->func));
        uint64_t closure, code_obj;
        /* Each closure cell also hangs off the function directly, as heapspy shows it. */
        if (!err && mc_read_u64(&w->mc, addr + 72, &closure) == 0 && closure) {
            int64_t n;
            if (mc_read_u64(&w->mc, closure + 16, (uint64_t *)&n) == 0 && n > 0 && n < 65536) {
                for (int64_t i = 0; i < n && !err; i++) {
                    uint64_t cell;
                    char label[48];
                    if (mc_read_u64(&w->mc, closure + H->tuple_items + (uint64_t)i * 8, &cell))
                        break;
                    snprintf(label, sizeof(label), ".__closure__[%lld]", (long long)i);
                    err = ref(w, &h, cell, HW_EDGE_CELL, label, false);
                }
            }
        }
        if (!err && mc_read_u64(&w->mc, addr + 48, &code_obj) == 0 && code_obj)
            err = emit_code_location(w, addr, code_obj);
        break;
    }
    case K_METHOD:
        err = ref_fields(w, &h, addr, H->method, NFIELDS(H->method));
        break;
    case K_CFUNCTION:
        err = ref_fields(w, &h, addr, H->cfunc, NFIELDS(H->cfunc));
        break;
    case K_CLASSMETHOD:
        err = ref_fields(w, &h, addr, H->classmethod, NFIELDS(H->classmethod));
        break;
    case K_PROPERTY:
        err = ref_fields(w, &h, addr, H->property, NFIELDS(H->property));
        break;
    case K_MODULE: {
        err = ref_fields(w, &h, addr, H->module, NFIELDS(H->module));
        uint64_t md, file;
        if (!err && w->sink->location && mc_read_u64(&w->mc, addr + 16, &md) == 0 && md &&
            (file = dict_get(w, md, "__file__")) != 0) {
            const char *f = str_text(w, file, NULL);
            if (f)
                err = w->sink->location(w->sink->ctx, addr, f, 0);
        }
        break;
    }
    case K_EXC:
        err = ref_fields(w, &h, addr, H->exc, NFIELDS(H->exc));
        break;
    case K_TRACEBACK:
        err = ref_fields(w, &h, addr, H->tb, NFIELDS(H->tb));
        break;
    case K_WEAKREF: {
        uint64_t referent;
        err = ref_fields(w, &h, addr, H->weakref_cb, NFIELDS(H->weakref_cb));
        if (!err && mc_read_u64(&w->mc, addr + 16, &referent) == 0 && referent &&
            referent != w->rt->types.none_struct)
            err = ref(w, &h, referent, HW_EDGE_WEAK, "<weakref>", false);
        break;
    }
    case K_CODE:
        err = emit_code_location(w, addr, addr);
        break;
    case K_FRAME: {
        err = ref_fields(w, &h, addr, H->frobj, NFIELDS(H->frobj));
        uint64_t f;
        uint8_t owner = 0;
        /* Locals belong to the frame object only once it owns its interpreter frame. */
        if (!err && mc_read_u64(&w->mc, addr + H->frobj_frame, &f) == 0 &&
            f == addr + H->frobj_data &&
            mc_read(&w->mc, f + w->L->fr_owner, &owner, 1) == 0 &&
            owner == H->frame_owned_by_frame_object)
            err = walk_iframe(w, &h, f, true, NULL);
        break;
    }
    case K_GEN: {
        err = ref_fields(w, &h, addr,
                         (const struct py_ref_field[]){{(uint16_t)H->gi_name, HW_EDGE_INTERNAL,
                                                        ".__name__"},
                                                       {(uint16_t)H->gi_qualname,
                                                        HW_EDGE_INTERNAL, ".__qualname__"},
                                                       {(uint16_t)H->gi_exc_value,
                                                        HW_EDGE_ATTR, ".gi_exc_value"}},
                         3);
        int8_t state = 0;
        if (!err && mc_read(&w->mc, addr + H->gi_frame_state, &state, 1) == 0 &&
            state < H->gen_state_cleared) {
            /* locals, value stack, f_globals, f_func, f_code */
            err = walk_iframe(w, &h, addr + H->gi_iframe, true, &code);
            if (!err && code)
                err = emit_code_location(w, addr, code);
        }
        break;
    }
    case K_OBJECT:
        if (!ti->ct && ti->gc)
            err = scan_body(w, &h, addr, (struct tinfo *)ti);
        break;
    default:
        break;
    }
    if (!err && (ti->heap || ti->kind == K_OBJECT) && ti->kind != K_FUNCTION &&
        ti->kind != K_MODULE && ti->kind != K_EXC && ti->kind != K_CLASSMETHOD)
        err = walk_instance(w, &h, addr, ti, ob_size);
    else if (!err && ti->heap)
        err = ref(w, &h, ti->addr, HW_EDGE_INTERNAL, ".__class__", false);
    return err;
}

/* ---- seeds ------------------------------------------------------------------------------------ */

static int walk_gc_list(struct hw *w, uint64_t head, bool permanent)
{
    uint64_t g;
    int err = mc_read_u64(&w->mc, head, &g);
    if (err)
        return err;
    g &= ~(uint64_t)3;
    for (uint64_t n = 0; g != head; n++) {
        if (!g || n > (1ULL << 32))
            return err_fail(SCRY_E_READ_FAILED, "the GC list at 0x%llx is damaged",
                            (unsigned long long)head);
        uint64_t obj = g + 16;
        struct seen_page *p = seen_page_of(&w->seen, obj, false);
        if (p && !(obj & 7) && seen_get(p, obj) == SEEN_ON_GC_LIST)
            return err_fail(SCRY_E_READ_FAILED,
                            "the GC list at 0x%llx loops (object 0x%llx seen twice)",
                            (unsigned long long)head, (unsigned long long)obj);
        err = add_flags(w, obj, SEEN_TRACKED | (permanent ? SEEN_PERMANENT : 0));
        if (err < 0)
            return err;
        if (err) {
            w->st->gc_tracked++;
            if (permanent)
                w->st->permanent++;
        }
        err = mc_read_u64(&w->mc, g, &g);
        if (err)
            return err;
        g &= ~(uint64_t)3;
    }
    return 0;
}

static int interp_roots(struct hw *w, uint64_t interp, int64_t id)
{
    char prefix[64] = "", label[MAX_NAME * 2 + 64];
    uint64_t modules = 0, sysdict = 0, builtins = 0, garbage = 0;
    if (id != 0)
        snprintf(prefix, sizeof(prefix), "interp %lld: ", (long long)id);
    mc_read_u64(&w->mc, interp + w->L->is_modules, &modules);
    mc_read_u64(&w->mc, interp + w->L->is_sysdict, &sysdict);
    mc_read_u64(&w->mc, interp + w->L->is_builtins, &builtins);
    mc_read_u64(&w->mc, interp + w->L->is_gc + w->H->gc_garbage, &garbage);
    int err;
    snprintf(label, sizeof(label), "%ssys.modules", prefix);
    if ((err = root(w, modules, label)) != 0)
        return err;
    /* Each module is a root of its own, so that paths read sys.modules['app.cache'] first. */
    if (modules) {
        uint8_t d[48], k[32];
        if (mc_read(&w->mc, modules, d, sizeof(d)) == 0) {
            uint64_t keys = rd64(d + w->L->dict_keys);
            if (keys && mc_read(&w->mc, keys, k, sizeof(k)) == 0 && k[9] <= 40 && k[10] <= 2) {
                uint64_t n = rd64(k + w->H->dk_nentries);
                uint64_t entries = keys + 32 + (1ULL << k[9]);
                size_t esize = k[10] == 0 ? 24 : 16;
                for (uint64_t i = 0; i < n && i < (1 << 20); i++) {
                    uint8_t e[24];
                    if (mc_read(&w->mc, entries + i * esize, e, esize))
                        break;
                    uint64_t key = k[10] == 0 ? rd64(e + 8) : rd64(e);
                    uint64_t mod = k[10] == 0 ? rd64(e + 16) : rd64(e + 8);
                    const char *name = key ? str_text(w, key, NULL) : NULL;
                    if (!mod || !name)
                        continue;
                    snprintf(label, sizeof(label), "%ssys.modules[", prefix);
                    if (name == redacted_text)
                        strcat(label, redacted_text);
                    else
                        quote(label, sizeof(label) - 1, name);
                    strcat(label, "]");
                    if ((err = root(w, mod, label)) != 0)
                        return err;
                }
            }
        }
    }
    snprintf(label, sizeof(label), "%ssys.__dict__", prefix);
    if ((err = root(w, sysdict, label)) != 0)
        return err;
    snprintf(label, sizeof(label), "%sbuiltins.__dict__", prefix);
    if ((err = root(w, builtins, label)) != 0)
        return err;
    snprintf(label, sizeof(label), "%sgc.garbage", prefix);
    return root(w, garbage, label);
}

/* Each thread's frames and state, found while the target is stopped (through the reader: the
 * frame walk validates every step) and walked later from the copy. */
static int collect_threads(struct hw *w)
{
    struct arena a = ARENA_INIT;
    struct py_thread *threads;
    size_t nthreads;
    struct py_code_cache cc;
    struct py_frame *frames = malloc(PY_MAX_STACK_DEPTH * sizeof(*frames));
    py_code_cache_init(&cc);
    int err = frames ? py_list_threads(w->rt, &a, &threads, &nthreads)
                     : err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if (err)
        goto out;
    for (size_t t = 0; t < nthreads && !err; t++) {
        size_t n;
        bool truncated;
        if (py_thread_stack(w->rt, &cc, threads[t].tstate, frames, PY_MAX_STACK_DEPTH, &n,
                            &truncated) != 0) {
            log_debug("thread %lld: %s", (long long)threads[t].native_id, err_last_message());
            n = 0;
        }
        for (size_t f = 0; f <= n && !err; f++) {
            /* n frames, then the thread state itself */
            const char *prefix =
                f < n ? arena_printf(&w->arena, "Thread %lld %s (%s:%d)",
                                     (long long)threads[t].native_id,
                                     redacted_or(frames[f].code->qualname),
                                     redacted_or(frames[f].code->filename), frames[f].line)
                      : arena_printf(&w->arena, "Thread %lld", (long long)threads[t].native_id);
            struct thread_item *it = NULL;
            if (w->nthread_items == w->capthread_items) {
                size_t nc = w->capthread_items ? w->capthread_items * 2 : 64;
                it = realloc(w->thread_items, nc * sizeof(*it));
                if (it) {
                    w->thread_items = it;
                    w->capthread_items = nc;
                }
            }
            if (!prefix || w->nthread_items == w->capthread_items) {
                err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
                break;
            }
            it = &w->thread_items[w->nthread_items++];
            it->addr = f < n ? frames[f].addr : threads[t].tstate;
            it->prefix = prefix;
            it->is_tstate = f == n;
        }
    }
out:
    free(frames);
    py_code_cache_free(&cc);
    arena_free(&a);
    return err;
}

static int thread_roots(struct hw *w)
{
    const struct py_heap_layout *H = w->H;
    static const struct {
        size_t off;
        const char *label;
    } fields[] = {
        {offsetof(struct py_heap_layout, ts_dict), "threadstate.dict"},
        {offsetof(struct py_heap_layout, ts_async_exc), "threadstate.async_exc"},
        {offsetof(struct py_heap_layout, ts_context), "threadstate.context"},
        {offsetof(struct py_heap_layout, ts_current_exception), "threadstate.exception"},
    };
    int err = 0;
    for (size_t k = 0; k < w->nthread_items && !err; k++) {
        const struct thread_item *it = &w->thread_items[k];
        struct holder hd = {0, it->prefix, false};
        uint64_t p;
        if (!it->is_tstate) {
            err = walk_iframe(w, &hd, it->addr, false, NULL);
            if (!err && mc_read_u64(&w->mc, it->addr + H->fr_frame_obj, &p) == 0 && p)
                err = ref(w, &hd, p, HW_EDGE_INTERNAL, ".f_frame", false);
            continue;
        }
        for (size_t i = 0; i < NFIELDS(fields) && !err; i++) {
            uint64_t off;
            memcpy(&off, (const uint8_t *)H + fields[i].off, 8);
            if (off && mc_read_u64(&w->mc, it->addr + off, &p) == 0 && p)
                err = ref(w, &hd, p, HW_EDGE_INTERNAL, fields[i].label, false);
        }
        uint64_t exc_info;
        if (!err && mc_read_u64(&w->mc, it->addr + H->ts_exc_info, &exc_info) == 0 && exc_info &&
            mc_read_u64(&w->mc, exc_info, &p) == 0 && p)
            err = ref(w, &hd, p, HW_EDGE_INTERNAL, "threadstate.exc_info", false);
    }
    return err;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void let_go(struct hw *w)
{
    if (w->resume) {
        void (*resume)(void *) = w->resume;
        w->resume = NULL;
        resume(w->resume_ctx);
    }
}

static int walk_impl(struct py_runtime *rt, const struct hw_options *opt,
                     const struct hw_sink *sink, struct hw_stats *stats, uint64_t max_copy,
                     void (*resume)(void *ctx), void *resume_ctx)
{
    struct hw w;
    struct hw_stats local;
    int err = 0;
    memset(&w, 0, sizeof(w));
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof(*stats));
    w.rt = rt;
    w.L = &rt->layout;
    w.H = py_heap_layout_table(rt->minor, rt->layout.free_threaded);
    w.opt = opt;
    w.sink = sink;
    w.st = stats;
    w.resume = resume;
    w.resume_ctx = resume_ctx;
    if (rt->layout.free_threaded)
        return py_runtime_refuse_free_threaded(rt, HW_FREE_THREADED_MISSING);
    if (!w.H)
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON, "no heap layout for Python 3.%d", rt->minor);
    if (py_fw_init(&w.fw, w.L, w.H, rt->types.code) != 0)
        return err_fail(SCRY_E_INTERNAL, "frame layout out of range");
    if (!rt->types.type || !rt->types.str || !rt->types.dict)
        return err_fail(SCRY_E_NOT_PYTHON, "the Python image does not export its type objects");
    mc_init(&w.mc, rt->rd, 0);
    double t_start = now_ms(), t_copied = t_start, t_seeds = t_start;
    bool copied = false;
    if (resume) {
        mc_use_pool(&w.mc, opt->copy_pool);
        err = mc_prefetch_writable(&w.mc, max_copy);
        if (err < 0)
            goto out;
        copied = err == 0;
        t_copied = now_ms();
        log_debug("heap walk: %s (%zu bytes copied)",
                  copied ? "walking a copy of the writable memory" : "walking the stopped target",
                  w.mc.bytes);
    }
    if (rt->types.set_dummy_ptr)
        mc_read_u64(&w.mc, rt->types.set_dummy_ptr, &w.set_dummy);

    uint64_t interps[PY_MAX_INTERPRETERS];
    int64_t ids[PY_MAX_INTERPRETERS];
    size_t ninterps = 0;
    uint64_t interp;
    err = py_interp_head(rt, &interp);
    if (err)
        goto out;
    if (!interp) {
        err = err_fail(SCRY_E_NOT_PYTHON,
                       "the Python runtime has no interpreter (not started yet, or finalized)");
        goto out;
    }
    for (; interp && ninterps < PY_MAX_INTERPRETERS; ninterps++) {
        int32_t collecting = 0;
        interps[ninterps] = interp;
        ids[ninterps] = 0;
        mc_read(&w.mc, interp + w.L->is_id, &ids[ninterps], 8);
        err = mc_read(&w.mc, interp + w.L->is_gc + w.H->gc_collecting, &collecting, 4);
        if (err)
            goto out;
        if (collecting) {
            stats->gc_running = true;
            err = err_fail(SCRY_E_READ_FAILED, "a garbage collection is running; try again");
            goto out;
        }
        err = mc_read_u64(&w.mc, interp + w.L->is_next, &interp);
        if (err)
            goto out;
    }
    w.hc = (struct hc_env){&w,           hc_read,          hc_ref, hc_covered, hc_type_name,
                           w.L->tp_basicsize, w.H->tp_base, 0};
    find_subtype_dealloc(&w, interps[0]);
    if ((err = collect_threads(&w)) != 0)
        goto out;
    if (copied)
        let_go(&w);
    /* GC lists first, so that every tracked object is flagged before any is reported. */
    for (size_t i = 0; i < ninterps; i++) {
        uint64_t gc = interps[i] + w.L->is_gc;
        for (int g = 0; g < 3 && !err; g++)
            err = walk_gc_list(&w, gc + w.H->gc_generations[g], false);
        if (!err)
            err = walk_gc_list(&w, gc + w.H->gc_permanent, true);
        if (err)
            goto out;
    }
    for (size_t i = 0; i < ninterps; i++)
        if ((err = interp_roots(&w, interps[i], ids[i])) != 0)
            goto out;
    if ((err = thread_roots(&w)) != 0)
        goto out;

    t_seeds = now_ms();
    while (w.nstack) {
        uint64_t v = w.stack[--w.nstack], addr = w.stack[--w.nstack];
        if (opt->capture_contents) /* sensitivity may have been learnt since the push */
            v = current_flags(&w, addr, v);
        if ((err = walk_object(&w, addr, v)) != 0)
            goto out;
    }
    for (size_t i = 0; i + 1 < w.ndeferred; i += 2) {
        uint64_t addr = w.deferred[i], v = current_flags(&w, addr, w.deferred[i + 1]);
        if ((err = emit_leaf(&w, addr, v)) != 0)
            goto out;
    }
    log_debug("heap walk: copy %.1f ms, GC lists and roots %.1f ms, objects %.1f ms",
              t_copied - t_start, t_seeds - t_copied, now_ms() - t_seeds);
    log_debug("heap walk: %llu objects, %llu edges, %llu roots; %llu blocks read, %llu direct "
              "reads, %zu types",
              (unsigned long long)stats->objects, (unsigned long long)stats->edges,
              (unsigned long long)stats->roots, (unsigned long long)w.mc.block_reads,
              (unsigned long long)w.mc.direct_reads, w.types.count);
out:
    let_go(&w);
    mc_free(&w.mc);
    free(w.thread_items);
    seen_free(&w.seen);
    hm_free(&w.sensitive);
    hm_free(&w.types);
    hm_free(&w.names);
    hm_free(&w.codes);
    free(w.stack);
    free(w.deferred);
    sb_release(&w.content);
    arena_free(&w.arena);
    return err;
}

int hw_walk(struct py_runtime *rt, const struct hw_options *opt, const struct hw_sink *sink,
            struct hw_stats *stats)
{
    return walk_impl(rt, opt, sink, stats, 0, NULL, NULL);
}

int hw_walk_resuming(struct py_runtime *rt, const struct hw_options *opt,
                     const struct hw_sink *sink, struct hw_stats *stats, uint64_t max_copy,
                     void (*resume)(void *ctx), void *resume_ctx)
{
    return walk_impl(rt, opt, sink, stats, max_copy, resume, resume_ctx);
}
