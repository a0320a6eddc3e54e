/* The collector's accounting of memory samples (docs/agent-protocol.md, "Memory"). Runs on the
 * collector thread only, whose own allocations the hooks never count. */
#include "agent/memstats.h"
#include "common/grow.h"

#include <stdlib.h>
#include <string.h>

/* Appends the point being built, halving the points first when they are all taken. */
static void push(struct ag_timeline *tl)
{
    if (tl->n == AG_TIMELINE_POINTS) {
        for (uint32_t i = 0; i < AG_TIMELINE_POINTS / 2; i++) {
            uint64_t a = tl->v[2 * i], b = tl->v[2 * i + 1];
            tl->t[i] = tl->t[2 * i + 1];
            tl->v[i] = a > b ? a : b;
        }
        tl->n = AG_TIMELINE_POINTS / 2;
        tl->stride *= 2;
    }
    tl->t[tl->n] = tl->pend_t;
    tl->v[tl->n] = tl->pend_v;
    tl->n++;
    tl->pend_count = 0;
}

void ag_timeline_add(struct ag_timeline *tl, uint64_t t, uint64_t v)
{
    if (!tl->stride)
        tl->stride = 1;
    if (tl->pend_count == 0 || v > tl->pend_v)
        tl->pend_v = v;
    tl->pend_t = t;
    if (++tl->pend_count >= tl->stride)
        push(tl);
}

void ag_timeline_flush(struct ag_timeline *tl)
{
    if (tl->pend_count)
        push(tl);
}

void ag_mem_stats_init(struct ag_mem_stats *m)
{
    memset(m, 0, sizeof(*m));
}

void ag_mem_stats_free(struct ag_mem_stats *m)
{
    for (size_t i = 0; i < m->nlines; i++) {
        free(m->lines[i].timeline);
        free(m->lines[i].grow);
    }
    free(m->lines);
    free(m->live);
    hm_free(&m->live_by_seq);
    hm_free(&m->line_by_key);
    hm_free(&m->last_by_tid);
    ag_mem_stats_init(m);
}

static struct ag_mline *line_of(struct ag_mem_stats *m, const struct ag_mwhere *w)
{
    uint64_t key = ((uint64_t)(w->file + 1) << 32) | (uint32_t)w->line, v;
    if (hm_get(&m->line_by_key, key, &v))
        return &m->lines[v - 1];
    if (grow_array(&m->lines, &m->cap, m->nlines + 1, sizeof(*m->lines)) != 0)
        return NULL;
    struct ag_timeline *tl = calloc(1, sizeof(*tl));
    if (!tl || hm_put(&m->line_by_key, key, m->nlines + 1) != 0) {
        free(tl);
        return NULL;
    }
    struct ag_mline *l = &m->lines[m->nlines++];
    *l = (struct ag_mline){.file = w->file, .func = w->func, .line = w->line, .timeline = tl};
    return l;
}

/* The line's live bytes rose (a malloc sample at t): a new top is one more step of its growth.
 * Out of memory, the growth keeps its count without its times (and cannot be judged). */
static void grow_rose(struct ag_mline *l, uint64_t t)
{
    if (l->live_bytes > l->max_live)
        l->max_live = l->live_bytes;
    if (l->live_bytes <= l->grow_top)
        return;
    l->grow_top = l->live_bytes;
    l->grow_rises++;
    if (!l->grow)
        l->grow = calloc(1, sizeof(*l->grow));
    if (l->grow)
        ag_timeline_add(l->grow, t, l->live_bytes);
}

/* The line's live bytes went down (a free sample): below half their top, what grew is
 * gone (a cache trimmed back, a buffer replaced), and its growth starts again from there. */
static void grow_fell(struct ag_mline *l)
{
    if (l->live_bytes >= l->grow_top / 2)
        return;
    l->grow_top = l->live_bytes;
    l->grow_rises = 0;
    if (l->grow)
        memset(l->grow, 0, sizeof(*l->grow));
}

static void close_execution(struct ag_mline *l)
{
    if (!l->open)
        return;
    l->hw_sum += l->cur_hw;
    l->execs++;
    l->cur = l->cur_hw = 0;
    l->open = false;
}

/* A thread's consecutive samples on different lines: the first line's execution is over. */
static void moved_to(struct ag_mem_stats *m, int tid, struct ag_mline *l)
{
    uint64_t idx = (uint64_t)(l - m->lines) + 1, last;
    uint64_t key = (uint64_t)(uint32_t)tid + 1;
    if (hm_get(&m->last_by_tid, key, &last) && last != idx)
        close_execution(&m->lines[last - 1]);
    (void)hm_put(&m->last_by_tid, key, idx);
}

/* The oldest waiting new-maximum sample is decided once two more batches have set a new
 * maximum: reclaimed if its allocation was freed before the second of them was sampled. */
static void leak_candidate(struct ag_mem_stats *m)
{
    m->pending[m->npending].line = m->batch_max.line;
    m->pending[m->npending].seq = m->batch_max.seq;
    m->pending[m->npending].tracked = m->batch_max.tracked;
    m->pending[m->npending].freed = m->batch_max.freed;
    m->pending[m->npending].freed_at = m->batch_max.freed_at;
    if (++m->npending < 3)
        return;
    struct ag_mline *l = &m->lines[m->pending[0].line];
    if (m->pending[0].tracked) {
        l->leak_mallocs++;
        if (m->pending[0].freed && m->pending[0].freed_at <= m->pending[2].seq)
            l->leak_frees++;
    }
    m->pending[0] = m->pending[1];
    m->pending[1] = m->pending[2];
    m->npending = 2;
}

static void remember_live(struct ag_mem_stats *m, const struct ag_mem_sample *s, uint64_t held,
                          uint32_t line, uint32_t stack)
{
    if (grow_array(&m->live, &m->cap_live, m->nlive + 1, sizeof(*m->live)) != 0)
        return; /* its bytes stay charged to its line */
    if (hm_put(&m->live_by_seq, s->seq + 1, m->nlive + 1) != 0)
        return;
    m->live[m->nlive++] =
        (struct ag_live){s->seq, s->ptr, s->bytes, held, s->freed_seq, s->size, line, stack};
}

/* Sample seq's allocation was freed at queue position freed_at: the bytes it stood for (0 if the
 * sample is not known: it could not be remembered); *prev: the earlier sample of its block. */
static uint64_t forget_live(struct ag_mem_stats *m, uint64_t seq, uint64_t freed_at,
                            uint64_t *prev)
{
    uint64_t idx;
    *prev = 0;
    if (!hm_get(&m->live_by_seq, seq + 1, &idx))
        return 0;
    struct ag_live *r = &m->live[idx - 1];
    uint64_t bytes = r->bytes;
    *prev = r->prev;
    if (r->line != UINT32_MAX) { /* the line that allocated it holds it no more */
        struct ag_mline *l = &m->lines[r->line];
        l->live_bytes = l->live_bytes > r->held ? l->live_bytes - r->held : 0;
        l->cur = l->cur > r->held ? l->cur - r->held : 0;
        grow_fell(l);
    }
    for (int k = 0; k < m->npending; k++)
        if (m->pending[k].seq == seq) {
            m->pending[k].freed = true;
            m->pending[k].freed_at = freed_at;
        }
    if (m->batch_max.valid && m->batch_max.seq == seq) {
        m->batch_max.freed = true; /* freed within its own batch */
        m->batch_max.freed_at = freed_at;
    }
    hm_del(&m->live_by_seq, seq + 1);
    if (idx != m->nlive) { /* the last record takes its place */
        *r = m->live[m->nlive - 1];
        (void)hm_put(&m->live_by_seq, r->seq + 1, idx);
    }
    m->nlive--;
    return bytes;
}

/* The block of sample seq was freed: its samples (a realloc's growth carries the block's earlier
 * sample, which always comes first) are gone together; the bytes they stood for. */
static uint64_t freed(struct ag_mem_stats *m, uint64_t seq, uint64_t freed_at)
{
    uint64_t bytes = 0, next = seq + 1;
    while (next) {
        uint64_t prev;
        bytes += forget_live(m, next - 1, freed_at, &prev);
        next = prev && prev - 1 < next - 1 ? prev : 0;
    }
    return bytes;
}

/* A realloc moved or resized the block of sample seq: its samples (the growth samples carry the
 * earlier ones, as for a free) are at ptr now, size bytes, for the heap join. */
static void moved(struct ag_mem_stats *m, uint64_t seq, uint64_t ptr, uint64_t size)
{
    uint64_t next = seq + 1, idx;
    while (next && hm_get(&m->live_by_seq, next, &idx)) {
        struct ag_live *r = &m->live[idx - 1];
        r->ptr = ptr;
        r->size = size;
        next = r->prev && r->prev < next ? r->prev : 0;
    }
}

void ag_mem_held(struct ag_mem_stats *m, uint64_t seq, uint64_t bytes)
{
    uint64_t idx;
    if (!hm_get(&m->live_by_seq, seq + 1, &idx))
        return; /* gone already */
    struct ag_live *r = &m->live[idx - 1];
    r->held += bytes;
    if (r->line == UINT32_MAX)
        return;
    struct ag_mline *l = &m->lines[r->line];
    l->live_bytes += bytes;
    if (l->live_bytes > l->max_live)
        l->max_live = l->live_bytes;
    if (l->live_bytes > l->grow_top) /* pages of a mapping: held, but no sample of growth */
        l->grow_top = l->live_bytes;
    if (!l->open) /* found after the execution that touched them: in no execution's peak */
        return;
    l->cur += bytes;
    if (l->cur > l->cur_hw)
        l->cur_hw = l->cur;
    if (l->cur > l->peak)
        l->peak = l->cur;
}

/* The footprint moved (by a sample's net, or by resident pages). */
static bool footprint_add(struct ag_mem_stats *m, int64_t net)
{
    if (net >= 0)
        m->footprint += (uint64_t)net;
    else
        m->footprint = m->footprint > (uint64_t)-net ? m->footprint - (uint64_t)-net : 0;
    if (m->footprint > m->mark_peak)
        m->mark_peak = m->footprint;
    if (m->footprint <= m->max_footprint)
        return false;
    m->max_footprint = m->footprint;
    return true;
}

void ag_mem_resident(struct ag_mem_stats *m, uint64_t bytes, uint64_t t_ns)
{
    if (!bytes)
        return;
    if (footprint_add(m, (int64_t)bytes)) {
        m->max_at_line = false; /* pages touched somewhere, seen by the collector */
        m->max_python_fraction = 0;
    }
    ag_timeline_add(&m->timeline, t_ns, m->footprint);
}

void ag_mem_record(struct ag_mem_stats *m, const struct ag_mem_sample *s,
                   const struct ag_mwhere *w, uint64_t start_ns)
{
    if (s->kind == AG_M_MOVE) {
        moved(m, s->freed_seq, s->ptr, s->size);
        return;
    }
    struct ag_mline *l = w->kind == AG_MW_LINE && s->kind != AG_M_NET ? line_of(m, w) : NULL;
    if (s->kind == AG_M_COPY) {
        m->copy_samples++;
        m->copy_bytes += s->bytes;
        if (l)
            l->copy_bytes += s->bytes;
        return;
    }
    uint64_t t = s->time_ns > start_ns ? s->time_ns - start_ns : 0;
    m->alloc_samples++;
    bool new_max = footprint_add(m, s->net);
    if (new_max) {
        m->max_at_line = l != NULL && !w->native;
        m->max_file = w->file;
        m->max_line = w->line;
        m->max_python_fraction = s->kind == AG_M_MALLOC && s->bytes
                                     ? (double)s->python_bytes / (double)s->bytes
                                     : 0;
    }
    uint64_t bytes = s->bytes;
    /* A mapping's line holds its resident pages (ag_mem_held), not its length. */
    uint64_t held = s->mflags & AG_M_MAPPED ? bytes - (s->size < bytes ? s->size : bytes) : bytes;
    if (s->kind == AG_M_MALLOC) {
        m->malloc_bytes += bytes;
        m->python_bytes += s->python_bytes;
        if (s->mflags & AG_M_STARTUP)
            m->startup_malloc_bytes += bytes;
        if (l && w->native)
            m->native_malloc_bytes += bytes;
    } else if (s->kind == AG_M_FREE) {
        bytes = freed(m, s->freed_seq, s->seq);
        m->free_bytes += bytes;
    }
    ag_timeline_add(&m->timeline, t, m->footprint);
    if (s->kind == AG_M_MALLOC && !(s->mflags & AG_M_UNTRACKED))
        remember_live(m, s, held, l ? (uint32_t)(l - m->lines) : UINT32_MAX, l ? w->stack : 0);
    if (!l)
        return;
    moved_to(m, s->tid, l);
    if (s->kind == AG_M_MALLOC) {
        l->live_bytes += held;
        grow_rose(l, t);
        l->malloc_bytes += bytes;
        l->python_bytes += s->python_bytes;
        l->malloc_samples++;
        l->cur += held;
        if (l->cur > m->footprint) /* a line cannot hold more than there is */
            l->cur = m->footprint;
    } else {
        l->free_bytes += bytes;
    }
    l->open = true;
    if (l->cur > l->cur_hw)
        l->cur_hw = l->cur;
    if (l->cur > l->peak)
        l->peak = l->cur;
    ag_timeline_add(l->timeline, t, m->footprint);
    if (new_max && s->kind == AG_M_MALLOC && ag_leak_on &&
        m->max_footprint > AG_LEAK_MIN_FOOTPRINT) {
        m->batch_max.valid = true;
        m->batch_max.tracked = !(s->mflags & AG_M_UNTRACKED);
        m->batch_max.line = (uint32_t)(l - m->lines);
        m->batch_max.seq = s->seq;
        m->batch_max.freed = false;
    }
}

void ag_mem_end_batch(struct ag_mem_stats *m)
{
    if (m->batch_max.valid) {
        leak_candidate(m);
        m->batch_max.valid = false;
    }
}

void ag_mem_finish(struct ag_mem_stats *m)
{
    for (size_t i = 0; i < m->nlines; i++) {
        close_execution(&m->lines[i]);
        ag_timeline_flush(m->lines[i].timeline);
    }
    ag_timeline_flush(&m->timeline);
    hm_clear(&m->last_by_tid);
}

/* The value of the growth's last point at or before t (0: none). */
static uint64_t grow_value_at(const struct ag_timeline *g, uint64_t t)
{
    uint64_t v = 0;
    for (uint32_t i = 0; i < g->n && g->t[i] <= t; i++)
        v = g->v[i];
    if (g->pend_count && g->pend_t <= t)
        v = g->pend_v;
    return v;
}

uint64_t ag_mem_growth_rises(const struct ag_mline *l, uint64_t start_ns, uint64_t end_ns)
{
    const struct ag_timeline *g = l->grow;
    if (!ag_leak_on || !g || !l->grow_rises || (!g->n && !g->pend_count) || end_ns <= start_ns)
        return 0;
    uint64_t first = g->n ? g->t[0] : g->pend_t;
    uint64_t last = g->pend_count ? g->pend_t : g->t[g->n - 1];
    uint64_t span = end_ns - start_ns, half = start_ns + span / 2;
    uint64_t top = l->grow_top, mid = grow_value_at(g, half);
    bool held = l->live_bytes >= top - top / 4;
    bool from_first_half = first <= half, to_last_quarter = last >= end_ns - span / 4;
    bool grew_late = mid <= top - top / 5; /* a full cache that only wobbles did not */
    return held && from_first_half && to_last_quarter && grew_late ? l->grow_rises : 0;
}
