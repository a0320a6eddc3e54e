/* The heap walker's insides, shared by its files (heap_walk.h is its interface):
 *   heap_walk.c       the driver: seeds (GC lists, roots), the work list and the set of
 *                     addresses met, references, one object's traversal by kind
 *   heap_containers.c dicts (through objects.c's keys decoder), sets, lists/tuples, fixed fields
 *   heap_types.c      type objects (struct tinfo), instances (__slots__, __dict__, managed dicts,
 *                     split and inline values), C layouts and the conservative scan
 *   heap_frames.c     code objects, frames and generators (through frame_walk.c), thread roots
 *   heap_emit.c       texts (redacted), labels and the sink's object reports
 *   heap_mimalloc.c   a free-threaded build's seeds: the objects of its mimalloc heaps
 * Every offset comes from the layout tables (struct py_layout, struct py_heap_layout). */
#ifndef SCRY_CPYTHON_HEAP_WALK_INT_H
#define SCRY_CPYTHON_HEAP_WALK_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/arena.h"
#include "common/error.h"
#include "common/hashmap.h"
#include "common/strbuf.h"
#include "cpython/frame_walk.h"
#include "cpython/heap_ctypes.h"
#include "cpython/heap_walk.h"
#include "cpython/layout.h"
#include "cpython/memcache.h"
#include "cpython/mimalloc_layout.h"
#include "cpython/objects.h"

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
    /* ".name" labels of the cached keys' entries (hw_ref_values), built once: the same pointer
     * each time lets the writer find its string id without hashing the text. */
    uint32_t nattr;
    uint64_t *attr_keys;
    const char **attr_labels;
    const char *cname;            /* tp_name as the type object has it */
    const struct hc_type *ct;     /* its own or its nearest base's known C layout, or NULL */
    bool body_known;              /* the fields below are set */
    int64_t body_size;            /* the C body of its nearest non-Python-class base */
    int64_t body_weaklist, body_dict; /* that base's tp_weaklistoffset, tp_dictoffset */
    int keys_state;               /* cached_keys read into keys: 1, unreadable: -1, not yet: 0 */
    struct py_dict_keys keys;
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

/* Ids of texts that stay the same through the walk (the sink's intern), by the text's address:
 * direct-mapped, a miss asks the sink again (it gives the same id). */
#define LABEL_IDS 1024

struct label_id {
    const char *text;
    uint32_t id;
};

/* A free-threaded build's mimalloc page that held seeds, in the order its seeds were met. */
struct ft_page {
    uint64_t start, bsize, obj_offset; /* block i's object: start + i * bsize + obj_offset */
    uint32_t capacity;
};

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
    struct label_id *label_ids;    /* LABEL_IDS of them; NULL: the sink takes texts only */
    char (*index_labels)[8];       /* INDEX_LABELS of them, or NULL */
    struct hashmap names; /* str address -> const char * (decoded, capped) */
    struct hashmap codes; /* code address -> struct code_names * */
    uint64_t *stack; /* (address, tinfo | flags) of objects to walk */
    size_t nstack, capstack;
    unsigned popped; /* objects taken off the stack: the progress report's clock */
    uint64_t *deferred; /* (address, tinfo | flags) of str/bytes objects reported at the
                           end (captured contents) */
    size_t ndeferred, capdeferred;
    uint64_t set_dummy;
    struct strbuf content;
    struct ft_page *ft_pages; /* hw_ft_seeds' pages, walked again by hw_ft_walk_seeds */
    size_t nft_pages, capft_pages;
    struct thread_item *thread_items;
    size_t nthread_items, capthread_items;
    void (*resume)(void *ctx); /* not NULL until the target has been let go */
    void *resume_ctx;
    uint64_t subtype_dealloc; /* tp_dealloc of every class defined in Python, or 0 */
    struct hc_env hc;
    const struct holder *hc_holder; /* the object hc_walk is walking, and its type */
    const struct tinfo *hc_type;
};
static inline uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline unsigned hw_seen_get(const struct seen_page *p, uint64_t addr)
{
    unsigned slot = (unsigned)(addr >> 3) & (SEEN_SLOTS - 1);
    return (unsigned)(p->bits[slot >> 5] >> ((slot & 31) * 2)) & 3u;
}

/* The reference count of the object whose header is at hdr, as far as the walker uses it (zero
 * or not, immortal when negative as an int32_t): ob_refcnt, or on a free-threaded build
 * ob_ref_local (UINT32_MAX when immortal) plus ob_ref_shared's count (signed: other threads'
 * decrements may outnumber their increments until the counts are merged), capped below 2^31. */
static inline uint64_t hw_refcnt(const struct py_layout *L, const uint8_t *hdr)
{
    if (!L->free_threaded)
        return rd64(hdr);
    uint32_t local;
    memcpy(&local, hdr + PY_FT_OB_REF_LOCAL, sizeof(local));
    if (local == UINT32_MAX)
        return UINT32_MAX;
    int64_t total = (int64_t)local + (int64_t)(rd64(hdr + PY_FT_OB_REF_SHARED) & ~3ULL) / 4;
    return total <= 0 ? 0 : total > INT32_MAX ? INT32_MAX : (uint64_t)total;
}

/* A reference from `from` (an object), or a root when from is 0 (label is then prefix + label). */
struct holder {
    uint64_t from;
    const char *prefix; /* roots: "Thread 4242 main (app.py:10)" */
    bool sensitive;     /* captured contents below are redacted */
};

/* A pointer slot of an item, values or locals array (PyObject *, _PyStackRef) */
#define PTR sizeof(uint64_t)

#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

/* What every text the rule flags is stored as (redact.h); aligned: the names cache keeps a flag
 * in the low bit of its pointers, and callers compare with it to show a placeholder. */
extern const char hw_redacted[];

/* ---- heap_walk.c: the work list, references and roots ---- */

/* The page holding addr's bits, made (all SEEN_NEW) if create; NULL when absent or out of
 * memory (then with the error set). */
struct seen_page *hw_seen_page(struct seenset *m, uint64_t addr, bool create);
/* The first meeting of addr (SEEN_NEW in page p): checked, and pushed on the work list with its
 * tinfo and flags when it is an object (1), else marked as no object (0); or an error. */
int hw_add_new(struct hw *w, struct seen_page *p, uint64_t addr, uint64_t flags);
/* hw_ref past the check of `to`: sensitivity, then the edge or the root. */
int hw_ref_slow(struct hw *w, const struct holder *h, uint64_t to, enum hw_edge_kind kind,
                const char *label, bool sensitive);

/* 1 when addr is an object, 0 when it is not (or a negative error); the first time it is met
 * it is checked and pushed on the work list with its tinfo and flags. Inline: every reference
 * goes through it, and most meet an address of the page met last. */
static inline int hw_add(struct hw *w, uint64_t addr, uint64_t flags)
{
    if (addr < 4096 || (addr & 7))
        return 0;
    struct seen_page *p = (addr >> SEEN_PAGE_SHIFT) + 1 == w->seen.last_key
                              ? w->seen.last
                              : hw_seen_page(&w->seen, addr, true);
    if (!p)
        return -SCRY_E_NO_MEMORY;
    unsigned state = hw_seen_get(p, addr);
    if (state != SEEN_NEW)
        return state != SEEN_NOT_OBJECT;
    return hw_add_new(w, p, addr, flags);
}

/* A labelled reference from h to `to` (an edge, or a root when h->from is 0); sensitive: what
 * `to` holds is redacted when contents are captured. */
static inline int hw_ref(struct hw *w, const struct holder *h, uint64_t to,
                         enum hw_edge_kind kind, const char *label, bool sensitive)
{
    if (!to)
        return 0;
    int err = hw_add(w, to, 0);
    if (err <= 0)
        return err;
    if (h->from && !w->opt->capture_contents) {
        w->st->edges++;
        return w->sink->edge(w->sink->ctx, h->from, to, kind, label);
    }
    return hw_ref_slow(w, h, to, kind, label, sensitive);
}

int hw_root(struct hw *w, uint64_t to, const char *label);

/* The sink's id of a text that stays the same at its address through the walk (label_ids). */
int hw_label_id_slow(struct hw *w, const char *text, uint32_t *id);

static inline int hw_label_id(struct hw *w, const char *text, uint32_t *id)
{
    struct label_id *l = &w->label_ids[((uintptr_t)text >> 3) & (LABEL_IDS - 1)];
    if (l->text == text) {
        *id = l->id;
        return 0;
    }
    return hw_label_id_slow(w, text, id);
}

/* hw_ref for a label that stays the same at its address through the walk (a literal, a layout
 * table's field label, a type's attribute, slot or index label): passed to the sink as an id. */
static inline int hw_ref_stable(struct hw *w, const struct holder *h, uint64_t to,
                                enum hw_edge_kind kind, const char *label, bool sensitive)
{
    if (!w->label_ids || !h->from || w->opt->capture_contents)
        return hw_ref(w, h, to, kind, label, sensitive);
    if (!to)
        return 0;
    uint32_t id;
    int err = hw_add(w, to, 0);
    if (err <= 0)
        return err;
    if ((err = hw_label_id(w, label, &id)) != 0)
        return err;
    w->st->edges++;
    return w->sink->edge_id(w->sink->ctx, h->from, to, kind, id);
}

/* A native block that owner alone holds, to the sink when it wants them (heap_walk.h). */
static inline int hw_buffer(struct hw *w, uint64_t owner, uint64_t addr, uint64_t size)
{
    return w->sink->buffer && owner && addr && size
               ? w->sink->buffer(w->sink->ctx, owner, addr, size)
               : 0;
}

/* ---- heap_emit.c: texts, labels and the sink's object reports ---- */

/* A code object's name or file as a root label shows it (redaction rule, whole). */
const char *hw_redacted_or(const char *s);
/* The text of a C string, redacted whole, then cut to max bytes; NULL when unreadable. */
const char *hw_cstr(struct hw *w, uint64_t addr, size_t max);
/* A str object's text, decoded, redacted whole, cut to MAX_NAME bytes; hw_redacted when the
 * rule flags it; cached by address; NULL if it is not a str. */
const char *hw_str_text(struct hw *w, uint64_t obj, bool *interned);
/* With captured contents: what is held under a secret-sounding (or redacted) name. */
bool hw_sensitive_name(const struct hw *w, const char *name);
/* Appends s to a label as a Python-like quoted string: 'a\'b'. */
void hw_quote(char *out, size_t cap, const char *s);
/* The label of a dict value under `key` (heap_emit.c says which keys show their text). */
void hw_key_label(struct hw *w, uint64_t key, char *out, size_t cap, bool *sensitive);
/* "[i]": a stable pointer for small i, else built in buf (32 bytes). */
const char *hw_index_label(struct hw *w, uint64_t i, char *buf);
int hw_emit_object(struct hw *w, uint64_t addr, const struct tinfo *ti, uint64_t size,
                   uint64_t seen, uint64_t refcnt, const char *content, size_t content_len);
/* A str/bytes/bytearray: its size and captured contents, then its report. */
int hw_emit_leaf(struct hw *w, uint64_t addr, uint64_t seen);

/* ---- heap_types.c: type objects, instances, C layouts ---- */

struct tinfo *hw_type(struct hw *w, uint64_t t);
void hw_find_subtype_dealloc(struct hw *w, uint64_t interp);
void hw_hc_env_init(struct hw *w);
int hw_walk_ctype(struct hw *w, const struct holder *h, uint64_t addr, const struct tinfo *ti,
                  uint64_t *extra);
int hw_scan_body(struct hw *w, const struct holder *h, uint64_t addr, struct tinfo *ti);
int hw_walk_instance(struct hw *w, const struct holder *h, uint64_t obj, const struct tinfo *ti,
                     int64_t ob_size);

/* ---- heap_containers.c: dicts, sets, item arrays, fixed fields ---- */

/* A keys object's header through the cache (objects.h's decoder); 0 or an error. */
int hw_dict_keys(struct hw *w, uint64_t keys, struct py_dict_keys *k);
/* The keys and split values (0: combined) of a dict. */
int hw_dict_tables(struct hw *w, uint64_t dict, uint64_t *keys, uint64_t *values);
/* Entry i of a keys object: its key and value (from the split values when values is not 0). */
int hw_dict_entry(struct hw *w, const struct py_dict_keys *k, uint64_t values, uint64_t i,
                  uint64_t *key, uint64_t *value);
/* Value of a str key in a dict (combined or split), by content; 0 when absent. */
uint64_t hw_dict_get(struct hw *w, uint64_t dict, const char *key);
int hw_ref_fields(struct hw *w, const struct holder *h, uint64_t base,
                  const struct py_ref_field *f, size_t max);
int hw_ref_items(struct hw *w, const struct holder *h, uint64_t items, uint64_t n);
int hw_walk_dict(struct hw *w, const struct holder *h, uint64_t dict, int64_t basicsize,
                 uint64_t *size);
int hw_walk_set(struct hw *w, const struct holder *h, uint64_t set, uint64_t *size);
/* Instance attributes kept in split or inline values, named by the type's shared keys. */
int hw_ref_values(struct hw *w, const struct holder *h, const struct tinfo *ti, uint64_t values,
                  uint64_t capacity);

/* ---- heap_frames.c: code objects, frames, threads (through the frame walker) ---- */

int hw_code_location(struct hw *w, uint64_t at, uint64_t code);
int hw_walk_iframe(struct hw *w, const struct holder *h, uint64_t frame, bool suspended,
                   uint64_t *code_out);
int hw_collect_threads(struct hw *w);
int hw_thread_roots(struct hw *w);

/* A seed (an object of a GC list, or of a free-threaded build's heaps) met for the first time
 * (SEEN_NEW in page p): its tinfo when it is an object, marked SEEN_ON_GC_LIST (known as
 * tracked, not walked yet; references to it do not push it), else NULL, marked as no object. */
struct tinfo *hw_mark_seed(struct hw *w, struct seen_page *p, uint64_t obj);
/* Walks obj (and what it leads to) when it is a seed nothing has walked yet; 0 or an error. */
int hw_walk_seed(struct hw *w, uint64_t obj, bool frozen);

/* ---- heap_mimalloc.c: a free-threaded build's seeds (it has no GC lists) ---- */

/* Every object of interp's mimalloc heaps that its collector would visit (tracked GC objects),
 * marked as mark_gc_list marks a GC list's objects; the pages that held them are kept. */
int hw_ft_seeds(struct hw *w, uint64_t interp);

/* The walk's cache (w->mc) as a struct py_mem (ctx a struct hw_mem) for the list walker
 * (cpython/thread_list.h); the first error is kept. */
struct hw_mem {
    struct hw *w;
    int err;
};
bool hw_mem_read(void *ctx, uint64_t addr, void *buf, size_t len);
/* The seeds again, each walked (hw_walk_seed), last page and block first: the order of a work
 * stack onto which they were pushed as hw_ft_seeds met them. */
int hw_ft_walk_seeds(struct hw *w);

#endif
