/* Weighted call trees (see stacks.h): interned frame texts, nodes in creation order (so a parent
 * always precedes its children and totals are one backward pass), children found through a hash
 * map on (parent, frame). */
#include "analysis/stacks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "common/sanitize.h"

/* Without libm: the binary links none. */
static double max_d(double a, double b)
{
    return a > b ? a : b;
}

/* Room for any weight stk_format_weight writes (DBL_MAX has 309 digits). */
#define STK_WEIGHT_MAX 400

static int oom(void)
{
    return err_fail(SCRY_E_NO_MEMORY, "out of memory building a call tree");
}

static uint64_t str_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static int new_node(struct stk_tree *t, uint32_t parent, uint32_t frame, uint32_t *out)
{
    if (t->nnodes >= UINT32_MAX - 1)
        return err_fail(SCRY_E_NO_MEMORY, "call tree too large");
    if (grow_array(&t->nodes, &t->cap_nodes, t->nnodes + 1, sizeof(*t->nodes)))
        return oom();
    uint32_t id = (uint32_t)t->nnodes++;
    struct stk_node *n = &t->nodes[id];
    memset(n, 0, sizeof(*n));
    n->frame = frame;
    n->parent = parent;
    n->first_child = STK_NONE;
    n->next_sibling = STK_NONE;
    if (parent != STK_NONE) {
        n->depth = t->nodes[parent].depth + 1;
        n->next_sibling = t->nodes[parent].first_child;
        t->nodes[parent].first_child = id;
    }
    *out = id;
    return 0;
}

void stk_init(struct stk_tree *t, bool diff)
{
    memset(t, 0, sizeof(*t));
    t->diff = diff;
    uint32_t root;
    if (new_node(t, STK_NONE, STK_NONE, &root) != 0)
        t->nnodes = 0; /* reported by the first add */
}

void stk_free(struct stk_tree *t)
{
    arena_free(&t->arena);
    free(t->frames);
    free(t->ftab);
    free(t->nodes);
    hm_free(&t->children);
    memset(t, 0, sizeof(*t));
}

static int ftab_grow(struct stk_tree *t)
{
    size_t cap = t->ftab_cap ? t->ftab_cap * 2 : 1024;
    uint32_t *tab = calloc(cap, sizeof(*tab));
    if (!tab)
        return oom();
    for (size_t i = 0; i < t->nframes; i++) {
        const char *s = t->frames[i];
        size_t j = str_hash(s, strlen(s)) & (cap - 1);
        while (tab[j])
            j = (j + 1) & (cap - 1);
        tab[j] = (uint32_t)i + 1;
    }
    free(t->ftab);
    t->ftab = tab;
    t->ftab_cap = cap;
    return 0;
}

int stk_frame(struct stk_tree *t, const char *text, size_t len, uint32_t *out)
{
    /* The text as stored: separators and line breaks replaced, spaces around it trimmed (the
     * folded format cannot keep them on a leaf), "?" for nothing. */
    while (len > 0 && (text[0] == ' ' || text[0] == '\t' || text[0] == '\n' || text[0] == '\r' ||
                       text[0] == '\0')) {
        text++;
        len--;
    }
    while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\n' ||
                       text[len - 1] == '\r' || text[len - 1] == '\0'))
        len--;
    if (len == 0) {
        text = "?";
        len = 1;
    }
    /* Control characters, bidirectional controls and bytes that are not UTF-8 are cleaned by
     * common/sanitize.h's rule, so no output of the tree (folded lines on a terminal, the SVG,
     * speedscope) carries them; each replacement takes at most 3 bytes. */
    char small[256];
    char *s = len < sizeof(small) / 3 ? small : malloc(3 * len + 1);
    if (!s)
        return oom();
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        char c = text[i];
        if (c == ';' || c == '\n' || c == '\r' || c == '\0' || c == '\t') {
            s[o++] = c == ';' ? ':' : ' ';
            i++;
            continue;
        }
        const char *repl;
        size_t n = san_next(text + i, len - i, &repl);
        if (repl) {
            memcpy(s + o, repl, strlen(repl));
            o += strlen(repl);
        } else {
            memcpy(s + o, text + i, n);
            o += n;
        }
        i += n;
    }
    len = o;
    s[len] = '\0';
    int err = 0;
    if ((t->nframes + 1) * 2 > t->ftab_cap && (err = ftab_grow(t)) != 0)
        goto out;
    size_t j = str_hash(s, len) & (t->ftab_cap - 1);
    while (t->ftab[j]) {
        const char *f = t->frames[t->ftab[j] - 1];
        if (strncmp(f, s, len) == 0 && f[len] == '\0') {
            *out = t->ftab[j] - 1;
            goto out;
        }
        j = (j + 1) & (t->ftab_cap - 1);
    }
    if (grow_array(&t->frames, &t->cap_frames, t->nframes + 1, sizeof(*t->frames))) {
        err = oom();
        goto out;
    }
    char *copy = arena_strndup(&t->arena, s, len);
    if (!copy) {
        err = oom();
        goto out;
    }
    t->frames[t->nframes] = copy;
    t->ftab[j] = (uint32_t)t->nframes + 1;
    *out = (uint32_t)t->nframes++;
out:
    if (s != small)
        free(s);
    return err;
}

int stk_child(struct stk_tree *t, uint32_t parent, uint32_t frame, uint32_t *out)
{
    if (t->nnodes == 0)
        return oom();
    uint64_t key = (((uint64_t)parent << 32) | frame) + 1;
    uint64_t v;
    if (hm_get(&t->children, key, &v)) {
        *out = (uint32_t)v;
        return 0;
    }
    uint32_t id;
    int err = new_node(t, parent, frame, &id);
    if (err)
        return err;
    if (hm_put(&t->children, key, id) != 0)
        return oom();
    *out = id;
    return 0;
}

static bool weight_ok(double w)
{
    return isfinite(w) && w >= 0;
}

int stk_add(struct stk_tree *t, uint32_t node, double after, double before)
{
    if (node >= t->nnodes)
        return err_fail(SCRY_E_INTERNAL, "no call-tree node %u", node);
    if (!weight_ok(after) || (t->diff && !weight_ok(before)))
        return err_fail(SCRY_E_BAD_PROFILE, "a stack's weight is negative or not a number");
    t->nodes[node].self += after;
    if (t->diff)
        t->nodes[node].self_before += before;
    return 0;
}

int stk_add_stack(struct stk_tree *t, const char *const *frames, const size_t *lens, size_t n,
                  double after, double before)
{
    uint32_t node = STK_ROOT;
    for (size_t i = 0; i < n; i++) {
        uint32_t f;
        int err = stk_frame(t, frames[i], lens ? lens[i] : strlen(frames[i]), &f);
        if (!err)
            err = stk_child(t, node, f, &node);
        if (err)
            return err;
    }
    return stk_add(t, node, after, before);
}

static const struct stk_tree *sort_tree; /* qsort has no context argument */

static int cmp_child(const void *a, const void *b)
{
    const struct stk_node *na = &sort_tree->nodes[*(const uint32_t *)a];
    const struct stk_node *nb = &sort_tree->nodes[*(const uint32_t *)b];
    const char *ta = sort_tree->frames[na->frame], *tb = sort_tree->frames[nb->frame];
    /* [other] last: it stands for what is left over. */
    bool oa = strcmp(ta, STK_OTHER) == 0, ob = strcmp(tb, STK_OTHER) == 0;
    if (oa != ob)
        return oa ? 1 : -1;
    return strcmp(ta, tb);
}

int stk_finish(struct stk_tree *t)
{
    if (t->nnodes == 0)
        return oom();
    for (size_t i = 0; i < t->nnodes; i++) {
        t->nodes[i].total = t->nodes[i].self;
        t->nodes[i].total_before = t->nodes[i].self_before;
    }
    t->max_depth = 0;
    for (size_t i = t->nnodes; i-- > 1;) {
        struct stk_node *n = &t->nodes[i];
        t->nodes[n->parent].total += n->total;
        t->nodes[n->parent].total_before += n->total_before;
        if (n->depth > t->max_depth)
            t->max_depth = n->depth;
    }
    /* Siblings sorted by text, [other] last: the same input always draws the same picture. */
    uint32_t *kids = NULL;
    size_t cap = 0;
    sort_tree = t;
    for (size_t i = 0; i < t->nnodes; i++) {
        size_t k = 0;
        for (uint32_t c = t->nodes[i].first_child; c != STK_NONE; c = t->nodes[c].next_sibling) {
            if (grow_array(&kids, &cap, k + 1, sizeof(*kids))) {
                free(kids);
                return oom();
            }
            kids[k++] = c;
        }
        if (k < 2)
            continue;
        qsort(kids, k, sizeof(*kids), cmp_child);
        t->nodes[i].first_child = kids[0];
        for (size_t j = 0; j < k; j++)
            t->nodes[kids[j]].next_sibling = j + 1 < k ? kids[j + 1] : STK_NONE;
    }
    free(kids);
    return 0;
}

int stk_cut(const struct stk_tree *in, const struct stk_cut *c, struct stk_tree *out)
{
    stk_init(out, in->diff);
    if (in->nnodes == 0 || out->nnodes == 0)
        return oom();
    const struct stk_node *root = &in->nodes[STK_ROOT];
    double lim = max_d(c->min_pct / 100.0 * root->total, c->min_weight);
    double lim_before = max_d(c->min_pct / 100.0 * root->total_before, c->min_weight);
    /* dest[i]: the node of `out` that receives node i's self weight; folded[i]: it is an
     * [other] frame made by the cut, so everything above i goes there too. */
    uint32_t *dest = malloc(in->nnodes * sizeof(*dest));
    bool *folded = calloc(in->nnodes, sizeof(*folded));
    uint32_t other;
    int err = 0;
    if (!dest || !folded) {
        err = oom();
        goto out;
    }
    if ((err = stk_frame(out, STK_OTHER, strlen(STK_OTHER), &other)) != 0)
        goto out;
    dest[STK_ROOT] = STK_ROOT;
    for (size_t i = 1; i < in->nnodes && !err; i++) {
        const struct stk_node *n = &in->nodes[i];
        uint32_t p = dest[n->parent];
        if (folded[n->parent]) {
            dest[i] = p;
            folded[i] = true;
            continue;
        }
        bool narrow = n->total < lim && (!in->diff || n->total_before < lim_before);
        bool deep = c->max_depth && n->depth > c->max_depth;
        if (narrow || deep) {
            folded[i] = true;
            err = stk_child(out, p, other, &dest[i]);
        } else {
            uint32_t f;
            const char *text = in->frames[n->frame];
            err = stk_frame(out, text, strlen(text), &f);
            if (!err)
                err = stk_child(out, p, f, &dest[i]);
        }
    }
    for (size_t i = 0; i < in->nnodes && !err; i++) {
        const struct stk_node *n = &in->nodes[i];
        if (n->self != 0 || n->self_before != 0)
            err = stk_add(out, dest[i], n->self, n->self_before);
    }
    if (!err)
        err = stk_finish(out);
out:
    free(dest);
    free(folded);
    return err;
}

void stk_format_weight(struct strbuf *out, double w)
{
    /* Plain decimals only (flamegraph.pl reads no exponent); %.0f of an integral double is
     * exact, and a fraction gets the fewest digits that read back as the same double. */
    char buf[STK_WEIGHT_MAX];
    if (fabs(w) >= 9007199254740992.0 || w == (double)(int64_t)w) {
        snprintf(buf, sizeof(buf), "%.0f", w);
    } else {
        for (int prec = 1; prec <= 60; prec++) {
            snprintf(buf, sizeof(buf), "%.*f", prec, w);
            if (strtod(buf, NULL) == w)
                break;
        }
    }
    sb_adds(out, buf);
}

/* The exact size of stk_write_folded's text: each line repeats its whole path, so a tree of n
 * nodes can need O(n^2) bytes (a chain with weight on every frame). */
static int folded_size(const struct stk_tree *t, uint64_t *size)
{
    uint64_t *path = malloc(t->nnodes * sizeof(*path)); /* bytes of a node's path, ';'s in */
    if (!path)
        return oom();
    uint64_t total = 0;
    char buf[STK_WEIGHT_MAX];
    path[STK_ROOT] = 0;
    for (size_t i = 1; i < t->nnodes; i++) {
        const struct stk_node *n = &t->nodes[i];
        /* A parent always precedes its children. */
        path[i] = path[n->parent] + (n->parent == STK_ROOT ? 0 : 1) + strlen(t->frames[n->frame]);
        if (n->self != 0 || (t->diff && n->self_before != 0)) {
            total += path[i] + 2; /* the space and the newline */
            total += (uint64_t)snprintf(buf, sizeof(buf), "%.17g", n->self) + 8;
            if (t->diff)
                total += (uint64_t)snprintf(buf, sizeof(buf), "%.17g", n->self_before) + 9;
        }
    }
    free(path);
    *size = total;
    return 0;
}

int stk_write_folded(const struct stk_tree *t, struct strbuf *out)
{
    if (t->nnodes == 0)
        return 0;
    uint64_t size;
    int err = folded_size(t, &size);
    if (err)
        return err;
    if (size > STK_FOLDED_MAX)
        return err_fail_hint(SCRY_E_TOO_LARGE,
                             "give a smaller --max-depth or a larger --min-pct, or draw the SVG",
                             "the folded stacks would take about %.1f GiB, more than the %llu MiB "
                             "scry writes (each line repeats its whole stack, so deep chains "
                             "grow with the square of their depth)",
                             (double)size / (1 << 30),
                             (unsigned long long)(STK_FOLDED_MAX >> 20));
    uint32_t depth = 0;
    for (size_t i = 0; i < t->nnodes; i++)
        depth = t->nodes[i].depth > depth ? t->nodes[i].depth : depth;
    /* Depth-first in sibling order, keeping the path of the node being visited. */
    uint32_t *path = malloc((depth + 2) * sizeof(*path));
    if (!path)
        return oom();
    uint32_t node = t->nodes[STK_ROOT].first_child;
    while (node != STK_NONE) {
        const struct stk_node *n = &t->nodes[node];
        path[n->depth] = node;
        if (n->self != 0 || (t->diff && n->self_before != 0)) {
            for (uint32_t d = 1; d <= n->depth; d++) {
                if (d > 1)
                    sb_addch(out, ';');
                sb_adds(out, t->frames[t->nodes[path[d]].frame]);
            }
            sb_addch(out, ' ');
            if (t->diff) {
                stk_format_weight(out, n->self_before);
                sb_addch(out, ' ');
            }
            stk_format_weight(out, n->self);
            sb_addch(out, '\n');
        }
        if (n->first_child != STK_NONE) {
            node = n->first_child;
            continue;
        }
        while (node != STK_NONE && t->nodes[node].next_sibling == STK_NONE)
            node = t->nodes[node].parent == STK_ROOT ? STK_NONE : t->nodes[node].parent;
        if (node != STK_NONE)
            node = t->nodes[node].next_sibling;
    }
    free(path);
    return 0;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Takes the number that ends s[0..*len) off it (flamegraph.pl: the last field, digits with an
 * optional fraction), leaving *len at the end of the text before the spaces. */
static bool take_number(const char *s, size_t *len, double *out)
{
    size_t end = *len, i = end;
    while (i > 0 && ((s[i - 1] >= '0' && s[i - 1] <= '9') || s[i - 1] == '.'))
        i--;
    if (i == end || i == 0 || !is_space(s[i - 1]) || !(s[i] >= '0' && s[i] <= '9'))
        return false;
    char buf[STK_WEIGHT_MAX];
    if (end - i >= sizeof(buf))
        return false;
    memcpy(buf, s + i, end - i);
    buf[end - i] = '\0';
    if (strchr(buf, '.') != strrchr(buf, '.'))
        return false;
    char *stop;
    double v = strtod(buf, &stop);
    if (*stop || !isfinite(v))
        return false;
    while (i > 0 && is_space(s[i - 1]))
        i--;
    *len = i;
    *out = v;
    return true;
}

int stk_parse_folded(struct stk_tree *t, const char *text, size_t len, const char *what)
{
    size_t lineno = 0, pos = 0;
    const char **frames = NULL;
    size_t *lens = NULL, cap = 0;
    int err = 0;
    while (pos < len && !err) {
        lineno++;
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + (nl ? 1 : 0);
        while (n > 0 && (line[n - 1] == '\r' || is_space(line[n - 1])))
            n--;
        size_t start = 0;
        while (start < n && is_space(line[start]))
            start++;
        if (start == n)
            continue;
        double after = 0, before = 0;
        size_t slen = n;
        if (!take_number(line, &slen, &after) || (t->diff && !take_number(line, &slen, &before))) {
            err = err_fail(SCRY_E_BAD_PROFILE,
                           "%s line %zu is not a folded stack: it should read "
                           "'frame;frame;frame %s'",
                           what, lineno, t->diff ? "BEFORE AFTER" : "COUNT");
            break;
        }
        if (slen <= start) {
            err = err_fail(SCRY_E_BAD_PROFILE, "%s line %zu has a count but no stack", what,
                           lineno);
            break;
        }
        size_t k = 0;
        for (size_t i = start; i <= slen; i++) {
            if (i < slen && line[i] != ';')
                continue;
            size_t cap_lens = cap; /* parallel arrays: one capacity */
            if (grow_array(&lens, &cap_lens, k + 1, sizeof(*lens)) ||
                grow_array(&frames, &cap, k + 1, sizeof(*frames))) {
                err = oom();
                break;
            }
            frames[k] = line + start;
            lens[k] = i - start;
            if (lens[k] == 0) {
                err = err_fail(SCRY_E_BAD_PROFILE, "%s line %zu has an empty frame", what,
                               lineno);
                break;
            }
            k++;
            start = i + 1;
        }
        if (!err)
            err = stk_add_stack(t, frames, lens, k, after, before);
    }
    free(frames);
    free(lens);
    return err;
}

void stk_scalene_frame_text(const char *s, size_t len, struct strbuf *out)
{
    /* "FILE QUALNAME:LINE;": the line after the last ':', the qualname after the last space
     * before it (file names may hold spaces, qualnames do not). */
    size_t n = len;
    if (n > 0 && s[n - 1] == ';')
        n--;
    size_t colon = n;
    while (colon > 0 && s[colon - 1] >= '0' && s[colon - 1] <= '9')
        colon--;
    if (colon == n || colon == 0 || s[colon - 1] != ':')
        goto asis;
    colon--;
    size_t sp = colon;
    while (sp > 0 && s[sp - 1] != ' ')
        sp--;
    if (sp <= 1 || sp == colon)
        goto asis;
    sb_add(out, s + sp, colon - sp);
    sb_adds(out, " (");
    sb_add(out, s, sp - 1);
    sb_addch(out, ':');
    sb_add(out, s + colon + 1, n - colon - 1);
    sb_addch(out, ')');
    return;
asis:
    sb_add(out, s, n);
}

int stk_add_profile(struct stk_tree *t, const struct pdoc *d, const char *what, bool before,
                    bool memory)
{
    size_t nstacks = memory ? d->nmstacks : d->nstacks;
    if (nstacks == 0)
        return memory ? err_fail_hint(SCRY_E_BAD_PROFILE,
                                      "record it with 'scry run --stacks' (memory is on by "
                                      "default; not with --cpu-only)",
                                      "this profile has no memory call stacks (%s): record it "
                                      "with scry run --stacks",
                                      what)
                      : err_fail_hint(SCRY_E_BAD_PROFILE,
                                      "record it with 'scry run --stacks' (Scalene: --stacks)",
                                      "this profile has no call stacks (%s): record it with scry "
                                      "run --stacks",
                                      what);
    struct strbuf frame = STRBUF_INIT;
    const char **frames = NULL;
    size_t *lens = NULL;
    size_t *offs = NULL;
    int err = 0;
    for (size_t i = 0; i < nstacks && !err; i++) {
        size_t n = memory ? d->mstacks[i].depth : d->stacks[i].depth;
        double w = memory ? d->mstacks[i].mb : d->stacks[i].samples;
        if (memory) /* MB to the hundredth: short labels; samples are 1 MiB or more */
            w = w < 9e13 ? (double)(int64_t)(w * 100 + 0.5) / 100 : w;
        if (n == 0 || w == 0)
            continue;
        free(frames);
        free(lens);
        free(offs);
        frames = malloc(n * sizeof(*frames));
        lens = malloc(n * sizeof(*lens));
        offs = malloc(n * sizeof(*offs));
        if (!frames || !lens || !offs) {
            err = oom();
            break;
        }
        sb_reset(&frame);
        for (size_t j = 0; j < n; j++) {
            offs[j] = frame.len;
            if (memory) {
                const struct pdoc_mframe *f = &d->mframes[d->mstacks[i].off + j];
                sb_addf(&frame, "%s (%s", f->name, f->file);
                if (f->has_line)
                    sb_addf(&frame, ":%lld", f->line);
                sb_addch(&frame, ')');
            } else {
                const struct pdoc_frame *f = &d->frames[d->stacks[i].off + j];
                stk_scalene_frame_text(f->text, f->text_len, &frame);
            }
            lens[j] = frame.len - offs[j];
        }
        for (size_t j = 0; j < n; j++)
            frames[j] = sb_str(&frame) + offs[j];
        err = stk_add_stack(t, frames, lens, n, before ? 0 : w, before ? w : 0);
    }
    sb_release(&frame);
    free(frames);
    free(lens);
    free(offs);
    return err;
}

bool stk_frame_split(const char *text, struct stk_frame_parts *p)
{
    size_t len = strlen(text);
    p->name = text;
    p->name_len = len;
    p->file = NULL;
    p->file_len = 0;
    p->line = 0;
    if (len < 4 || text[len - 1] != ')')
        return false;
    /* The last " (" opens the location. */
    size_t open = len - 1;
    while (open > 0 && !(text[open] == '(' && text[open - 1] == ' '))
        open--;
    if (open < 2)
        return false;
    const char *loc = text + open + 1;
    size_t loc_len = len - 1 - (open + 1);
    if (loc_len == 0)
        return false;
    size_t colon = loc_len;
    while (colon > 0 && loc[colon - 1] >= '0' && loc[colon - 1] <= '9')
        colon--;
    if (colon < loc_len && colon > 1 && loc[colon - 1] == ':') {
        p->line = strtol(loc + colon, NULL, 10);
        p->file_len = colon - 1;
    } else {
        p->file_len = loc_len;
    }
    p->file = loc;
    p->name_len = open - 1;
    return true;
}

enum stk_kind stk_frame_kind(const char *text)
{
    struct stk_frame_parts p;
    if (!stk_frame_split(text, &p) || p.file_len == 0)
        return STK_KIND_OTHER;
    if (p.file[0] == '<')
        return STK_KIND_PYTHON;
    if (p.file_len >= 3 && memcmp(p.file + p.file_len - 3, ".py", 3) == 0)
        return STK_KIND_PYTHON;
    if (p.file_len >= 4 && memcmp(p.file + p.file_len - 4, ".pyw", 4) == 0)
        return STK_KIND_PYTHON;
    return STK_KIND_NATIVE;
}
