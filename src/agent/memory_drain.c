/* The collector's side of the memory samples (memhooks.c queues them): each charged to the line,
 * function and stack its Python frames say (threads with none to <native>), then recorded in the
 * memory statistics (memstats.c); and, every RESIDENT_SCAN_NS, the resident pages of the sampled
 * mappings. Collector thread only (collector_internal.h). */
#include "agent/collector_internal.h"
#include "agent/memory.h"

static uint32_t native_file = UINT32_MAX, native_func; /* the <native> pseudo-file, once seen */

/* At start, and in a forked child: the statistics are new. */
void ag_col_memory_reset(void)
{
    native_file = UINT32_MAX;
}

static enum ag_rule always_profiled(const char *path)
{
    (void)path;
    return AG_RULE_PROFILED;
}

/* Threads with no Python frame charge the pseudo-file <native>, line 0. */
static bool native_where(struct ag_mwhere *w)
{
    if (native_file == UINT32_MAX) {
        uint32_t f, fn;
        if (ag_stats_file(&ag_col_stats, "<native>", always_profiled, &f) ||
            ag_stats_func(&ag_col_stats, "<native>", f, 0, &fn))
            return false;
        native_file = f;
        native_func = fn;
    }
    *w = (struct ag_mwhere){AG_MW_LINE, true, native_file, native_func, 0, 0};
    return true;
}

#define RESIDENT_SCAN_NS 50000000ULL /* how often mappings are checked for resident pages */

static void mapping_held(void *ctx, uint64_t seq, uint64_t bytes)
{
    ag_mem_held(ctx, seq, bytes);
}

void ag_col_drain_memory(bool flush)
{
    struct ag_mem_sample *s;
    while ((s = ag_memq_peek())) {
        struct ag_mwhere w = {.kind = AG_MW_FOOTPRINT_ONLY};
        if (s->kind == AG_M_NET || s->kind == AG_M_MOVE) {
            /* the footprint only, or where a sample's block is now */
        } else if (s->mflags & AG_M_NO_PYTHON) {
            native_where(&w);
        } else if (!(s->mflags & AG_M_STARTUP)) {
            ag_col_pychain.n = 0;
            struct ag_attr a = ag_col_attribute(&s->s, s->kind == AG_M_MALLOC);
            uint32_t at = 0; /* a live sample's stack, for the heap join (out of memory: none) */
            if (a.kind == AG_ATTR_LINE && s->kind == AG_M_MALLOC && ag_col_pychain.n)
                (void)ag_chains_hit_at(&ag_col_stats.alloc_stacks, ag_col_pychain.f,
                                       ag_col_pychain.n, &at);
            if (a.kind == AG_ATTR_LINE)
                w = (struct ag_mwhere){AG_MW_LINE, false, a.file, a.func, a.line, at};
            if (a.kind == AG_ATTR_LINE && a.stack && s->kind == AG_M_MALLOC)
                ag_col_stats.stacks[a.stack - 1].malloc_bytes += s->bytes; /* memory flame graph */
        }
        ag_mem_record(&ag_col_mstats, s, &w, ag_col_start_mono_ns);
        ag_memq_pop();
    }
    ag_mem_end_batch(&ag_col_mstats);
    /* After the samples: the pages of a mapping go to the line of its sample, taken by now. */
    static uint64_t last_resident_scan;
    uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
    if (!last_resident_scan) /* not in the first ticks, which install the Python hooks */
        last_resident_scan = now;
    if (flush || now - last_resident_scan >= RESIDENT_SCAN_NS) {
        ag_mem_resident(&ag_col_mstats, ag_maps_scan_resident(mapping_held, &ag_col_mstats),
                        now - ag_col_start_mono_ns);
        last_resident_scan = now;
    }
}
