/* Unit tests for the agent's memory accounting (src/agent/memstats.c), fed with hand-made samples
 * whose true footprint, per-line peak and leak fate are known: malloc samples (what they stand
 * for, the heap's net since the thread's last sample), free samples naming the malloc sample
 * whose allocation went, and net samples for the footprint alone. */
#include <stdlib.h>

#include "agent/memstats.h"
#include "testlib.h"

bool ag_leak_on = true;

static uint64_t next_seq;

/* Flags and block size of the next malloc sample recorded (then back to 0). */
static uint32_t next_mflags;
static uint64_t next_size;

static void record(struct ag_mem_stats *m, enum ag_mem_kind kind, uint64_t bytes,
                   uint64_t python_bytes, int64_t net, uint64_t freed_seq, int tid,
                   uint32_t file, int32_t line)
{
    static struct ag_mem_sample s;
    s.seq = next_seq++;
    s.kind = kind;
    s.mflags = next_mflags;
    s.size = next_size;
    next_mflags = 0;
    next_size = 0;
    s.bytes = bytes;
    s.python_bytes = python_bytes;
    s.net = net;
    s.freed_seq = freed_seq;
    s.ptr = 0x1000 + s.seq * 16;
    s.time_ns = 1000 + s.seq;
    s.tid = tid;
    struct ag_mwhere w = {AG_MW_LINE, false, file, 0, line, 0};
    ag_mem_record(m, &s, &w, 1000); /* the process started at 1000: a sample's time is seq */
}

/* A malloc sample of bytes whose heap grew as much; its seq. */
static uint64_t sample(struct ag_mem_stats *m, uint64_t bytes, uint64_t python_bytes, int tid,
                       uint32_t file, int32_t line)
{
    uint64_t seq = next_seq;
    record(m, AG_M_MALLOC, bytes, python_bytes, (int64_t)bytes, 0, tid, file, line);
    return seq;
}

/* The allocation of sample seq freed on line, the heap shrinking by net. */
static void sample_free(struct ag_mem_stats *m, uint64_t seq, int64_t net, int tid,
                        uint32_t file, int32_t line)
{
    record(m, AG_M_FREE, 0, 0, net, seq, tid, file, line);
}

static const struct ag_mline *line(const struct ag_mem_stats *m, int32_t lineno)
{
    for (size_t i = 0; i < m->nlines; i++)
        if (m->lines[i].line == lineno)
            return &m->lines[i];
    return NULL;
}

#define MB (1ULL << 20)

/* 200 MB kept: malloc bytes, peak and footprint are exactly the samples' sum. */
static void test_kept_allocations(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    for (int i = 0; i < 200; i++)
        sample(&m, MB, MB, 1, 0, 3);
    ag_mem_finish(&m);
    const struct ag_mline *l = line(&m, 3);
    CHECK(l != NULL);
    CHECK_EQ_U64(l->malloc_bytes, 200 * MB);
    CHECK_EQ_U64(l->python_bytes, 200 * MB);
    CHECK_EQ_U64(l->malloc_samples, 200);
    CHECK_EQ_U64(l->peak, 200 * MB);
    CHECK_EQ_U64(l->execs, 1);
    CHECK_EQ_U64(l->hw_sum, 200 * MB);
    CHECK_EQ_U64(m.max_footprint, 200 * MB);
    CHECK_EQ_U64(m.footprint, 200 * MB);
    CHECK(m.max_at_line && m.max_line == 3);
    ag_mem_stats_free(&m);
}

/* 10 MB allocated then freed, 100 times on one line: 1000 MB allocated, peak 10 MB. */
static void test_churn_on_one_line(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    for (int i = 0; i < 100; i++)
        sample_free(&m, sample(&m, 10 * MB, 10 * MB, 1, 0, 4), -(int64_t)(10 * MB), 1, 0, 4);
    ag_mem_finish(&m);
    const struct ag_mline *l = line(&m, 4);
    CHECK_EQ_U64(l->malloc_bytes, 1000 * MB);
    CHECK_EQ_U64(l->free_bytes, 1000 * MB);
    CHECK_EQ_U64(l->peak, 10 * MB);
    CHECK_EQ_U64(m.max_footprint, 10 * MB);
    CHECK_EQ_U64(m.footprint, 0);
    ag_mem_stats_free(&m);
}

/* Allocated on line A, freed on line B, in a loop: A's executions end when the thread moves to
 * B, so A's peak is one allocation, not the sum; B never goes below 0; A holds nothing at the
 * end because its allocations were freed (wherever that happened). */
static void test_alloc_here_free_there(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    for (int i = 0; i < 50; i++) {
        uint64_t seq = sample(&m, 10 * MB, 0, 1, 0, 10);
        sample_free(&m, seq, -(int64_t)(10 * MB), 1, 0, 11);
        ag_mem_end_batch(&m);
    }
    ag_mem_finish(&m);
    const struct ag_mline *a = line(&m, 10), *b = line(&m, 11);
    CHECK_EQ_U64(a->peak, 10 * MB);
    CHECK_EQ_U64(a->execs, 50);
    CHECK_EQ_U64(a->hw_sum, 500 * MB); /* average per execution: 10 MB */
    CHECK_EQ_U64(b->peak, 0);
    CHECK_EQ_U64(b->free_bytes, 500 * MB);
    CHECK_EQ_U64(a->live_bytes, 0);
    CHECK_EQ_U64(m.nlive, 0);
    ag_mem_stats_free(&m);
}

/* Two threads on different lines do not end each other's executions. */
static void test_threads_keep_their_lines(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    for (int i = 0; i < 10; i++) {
        sample(&m, MB, 0, 1, 0, 20);
        sample(&m, MB, 0, 2, 0, 30);
    }
    ag_mem_finish(&m);
    CHECK_EQ_U64(line(&m, 20)->peak, 10 * MB);
    CHECK_EQ_U64(line(&m, 30)->peak, 10 * MB);
    CHECK_EQ_U64(line(&m, 20)->execs, 1);
    ag_mem_stats_free(&m);
}

/* A heap that shrank by more than was sampled never takes the footprint below 0, and a line's
 * current bytes never exceed the footprint; a net sample charges no line. */
static void test_footprint_clamped(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    record(&m, AG_M_NET, 0, 0, -(int64_t)(50 * MB), 0, 1, 0, 5);
    CHECK_EQ_U64(m.footprint, 0);
    CHECK(line(&m, 5) == NULL);
    sample(&m, 5 * MB, 0, 1, 0, 5);
    CHECK_EQ_U64(m.footprint, 5 * MB);
    CHECK_EQ_U64(line(&m, 5)->peak, 5 * MB);
    /* A sample standing for more than the heap grew: the line holds no more than there is. */
    record(&m, AG_M_MALLOC, 8 * MB, 0, (int64_t)MB, 0, 1, 0, 5);
    CHECK_EQ_U64(m.footprint, 6 * MB);
    CHECK_EQ_U64(line(&m, 5)->peak, 6 * MB);
    CHECK_EQ_U64(line(&m, 5)->malloc_bytes, 13 * MB);
    ag_mem_stats_free(&m);
}

/* A free sample takes what its malloc sample stood for (whatever the heap's net), from the line
 * that freed it; one whose malloc sample is unknown frees nothing. Resident pages of mappings
 * join the footprint without a line. */
static void test_free_takes_its_sample(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    uint64_t a = sample(&m, 3 * MB, 0, 1, 0, 40);
    sample_free(&m, a, 0, 1, 0, 41);
    CHECK_EQ_U64(line(&m, 41)->free_bytes, 3 * MB);
    CHECK_EQ_U64(line(&m, 40)->live_bytes, 0);
    CHECK_EQ_U64(m.free_bytes, 3 * MB);
    sample_free(&m, 999999, 0, 1, 0, 41);
    CHECK_EQ_U64(line(&m, 41)->free_bytes, 3 * MB);
    ag_mem_resident(&m, 20 * MB, 5000);
    CHECK_EQ_U64(m.footprint, 23 * MB);
    CHECK_EQ_U64(m.max_footprint, 23 * MB);
    CHECK(!m.max_at_line);
    ag_mem_stats_free(&m);
}

/* The timeline keeps at most 100 points, in time order, and keeps the maximum. */
static void test_timeline_bounded_keeps_max(void)
{
    struct ag_timeline tl = {0};
    for (uint64_t i = 0; i < 100000; i++)
        ag_timeline_add(&tl, i, i == 54321 ? 999999 : i % 7);
    ag_timeline_flush(&tl);
    CHECK(tl.n <= AG_TIMELINE_POINTS);
    CHECK(tl.n >= AG_TIMELINE_POINTS / 2);
    uint64_t max = 0;
    for (uint32_t i = 0; i < tl.n; i++) {
        if (i)
            CHECK(tl.t[i] > tl.t[i - 1]);
        if (tl.v[i] > max)
            max = tl.v[i];
    }
    CHECK_EQ_U64(max, 999999);
    CHECK_EQ_U64(tl.t[tl.n - 1], 99999);
}

/* Leaks: a batch that sets a new maximum (above 100 MiB) offers its last such sample; never
 * freed -> leak_mallocs only; freed before the second next candidate -> reclaimed too. */
static void test_leak_candidates(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    sample(&m, 101 * MB, 0, 1, 0, 1); /* above the gate: first candidate */
    ag_mem_end_batch(&m);
    for (int i = 0; i < 30; i++) { /* leaking line 2: one new maximum per batch */
        sample(&m, 5 * MB, 0, 1, 0, 2);
        ag_mem_end_batch(&m);
    }
    uint64_t prev = 0;
    for (int i = 0; i < 30; i++) { /* line 3: each peak freed right after the next one */
        uint64_t seq = sample(&m, 5 * MB, 0, 1, 0, 3);
        if (i > 0) /* (the heap's net: 0 here, so that each round still sets a maximum) */
            sample_free(&m, prev, 0, 1, 0, 3);
        prev = seq;
        ag_mem_end_batch(&m);
    }
    sample_free(&m, prev, 0, 1, 0, 3);
    ag_mem_end_batch(&m);
    sample(&m, 1, 0, 1, 0, 4); /* one more maximum decides line 3's last but one */
    ag_mem_end_batch(&m);
    ag_mem_finish(&m);
    const struct ag_mline *leaky = line(&m, 2), *fine = line(&m, 3);
    CHECK_EQ_U64(leaky->leak_mallocs, 30);
    CHECK_EQ_U64(leaky->leak_frees, 0);
    CHECK_EQ_U64(fine->leak_mallocs, 29); /* the last two stay undecided */
    CHECK_EQ_U64(fine->leak_frees, 29);
    /* What each line still holds: the leaked line all of it, the other nothing. */
    CHECK_EQ_U64(leaky->live_bytes, 150 * MB);
    CHECK_EQ_U64(fine->live_bytes, 0);
    ag_mem_stats_free(&m);
}

/* Below 100 MiB nothing is a leak candidate; several new maxima in one batch count once. */
static void test_leak_gate_and_batches(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    for (int i = 0; i < 50; i++) {
        sample(&m, MB, 0, 1, 0, 7);
        ag_mem_end_batch(&m);
    }
    CHECK_EQ(m.npending, 0);
    for (int i = 0; i < 100; i++)
        sample(&m, 5 * MB, 0, 1, 0, 7);
    ag_mem_end_batch(&m);
    CHECK_EQ(m.npending, 1);
    ag_mem_stats_free(&m);
}

/* A realloc's growth sampled at the block of an earlier sample carries it (freed_seq: 1 + its
 * seq): one free takes both, wherever and by whichever thread it happens. */
static void test_block_samples_go_together(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    uint64_t first = sample(&m, 3 * MB, 3 * MB, 2, 0, 50);
    record(&m, AG_M_MALLOC, 2 * MB, 2 * MB, (int64_t)(2 * MB), first + 1, 2, 0, 50);
    uint64_t growth = next_seq - 1;
    CHECK_EQ_U64(line(&m, 50)->live_bytes, 5 * MB);
    sample_free(&m, growth, -(int64_t)(5 * MB), 1, 0, 51);
    CHECK_EQ_U64(line(&m, 50)->live_bytes, 0);
    CHECK_EQ_U64(line(&m, 51)->free_bytes, 5 * MB);
    CHECK_EQ_U64(m.free_bytes, 5 * MB);
    CHECK_EQ_U64(m.nlive, 0);
    ag_mem_stats_free(&m);
}

/* A realloc moved (or resized) the block of a chain of samples (a move sample names the newest):
 * every sample of the block is at the new address and size for the heap join, and nothing else
 * changes (no line, footprint or count); a sample of another block stays where it was. */
static void test_block_samples_move_together(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    uint64_t other = sample(&m, MB, MB, 2, 0, 40);
    uint64_t first = sample(&m, 3 * MB, 3 * MB, 2, 0, 50);
    record(&m, AG_M_MALLOC, 2 * MB, 2 * MB, (int64_t)(2 * MB), first + 1, 2, 0, 50);
    uint64_t growth = next_seq - 1, footprint = m.footprint, samples = m.alloc_samples;
    static struct ag_mem_sample mv;
    mv.seq = next_seq++;
    mv.kind = AG_M_MOVE;
    mv.freed_seq = growth;
    mv.ptr = 0x7f0000000000ULL;
    mv.size = 5 * MB;
    struct ag_mwhere w = {.kind = AG_MW_FOOTPRINT_ONLY};
    ag_mem_record(&m, &mv, &w, 0);
    CHECK_EQ_U64(m.nlive, 3);
    for (size_t i = 0; i < m.nlive; i++) {
        const struct ag_live *r = &m.live[i];
        bool moved = r->seq == first || r->seq == growth;
        CHECK_EQ_U64(r->ptr, moved ? 0x7f0000000000ULL : 0x1000 + other * 16);
        CHECK_EQ_U64(r->size, moved ? 5 * MB : 0);
    }
    CHECK_EQ_U64(m.footprint, footprint);
    CHECK_EQ_U64(m.alloc_samples, samples);
    CHECK_EQ_U64(line(&m, 50)->live_bytes, 5 * MB);
    sample_free(&m, growth, -(int64_t)(5 * MB), 1, 0, 51); /* the block's free takes both */
    CHECK_EQ_U64(m.nlive, 1);
    ag_mem_stats_free(&m);
}

/* A mapping's line holds its pages found resident, not its length (which it allocated): 32 MiB
 * mapped with 3 MiB touched keeps 3 MiB; what its sample stood for beyond the mapping (bytes
 * that waited for a sample) is held as any block's. Its free takes the length off the totals
 * and what was held off the line. */
static void test_mapping_holds_its_resident_pages(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    next_mflags = AG_M_MAPPED;
    next_size = 32 * MB;
    uint64_t map = sample(&m, 33 * MB, 0, 2, 0, 60); /* 1 MiB of earlier blocks with it */
    record(&m, AG_M_NET, 0, 0, -(int64_t)(33 * MB) + (int64_t)MB, 0, 2, 0, 0); /* not resident */
    const struct ag_mline *l = line(&m, 60);
    CHECK_EQ_U64(l->malloc_bytes, 33 * MB);
    CHECK_EQ_U64(l->live_bytes, MB);
    CHECK_EQ_U64(l->peak, MB);
    ag_mem_held(&m, map, 3 * MB); /* while the line runs: in its peak */
    ag_mem_resident(&m, 3 * MB, 100);
    CHECK_EQ_U64(l->live_bytes, 4 * MB);
    CHECK_EQ_U64(l->peak, 4 * MB);
    CHECK_EQ_U64(m.footprint, 4 * MB);
    ag_mem_finish(&m);
    ag_mem_held(&m, map, MB); /* after it: held, in no execution's peak */
    CHECK_EQ_U64(l->live_bytes, 5 * MB);
    CHECK_EQ_U64(l->peak, 4 * MB);
    sample_free(&m, map, -(int64_t)(4 * MB), 1, 0, 61);
    CHECK_EQ_U64(l->live_bytes, 0);
    CHECK_EQ_U64(line(&m, 61)->free_bytes, 33 * MB);
    ag_mem_held(&m, map, MB); /* gone: nothing */
    CHECK_EQ_U64(l->live_bytes, 0);
    ag_mem_stats_free(&m);
}

/* Blocks a worker allocates on one line and the main thread frees on another: the worker's line
 * holds one block at a time (each free takes it off the line that allocated it), the freeing
 * line holds nothing. */
static void test_freed_by_another_thread(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    sample(&m, 64 * MB, 0, 3, 0, 72); /* kept elsewhere: the footprint caps nothing here */
    for (int i = 0; i < 10; i++)
        sample_free(&m, sample(&m, 4 * MB, 0, 2, 0, 70), -(int64_t)(4 * MB), 1, 0, 71);
    ag_mem_finish(&m);
    CHECK_EQ_U64(line(&m, 70)->peak, 4 * MB);
    CHECK_EQ_U64(line(&m, 70)->execs, 1);
    CHECK_EQ_U64(line(&m, 70)->live_bytes, 0);
    CHECK_EQ_U64(line(&m, 71)->peak, 0);
    CHECK_EQ_U64(line(&m, 71)->free_bytes, 40 * MB);
    ag_mem_stats_free(&m);
}

/* Issue 27 item 1: each line's own growth, whatever sets the process's peaks. A handler keeps a
 * 1 MiB record a request (line 80, never freed) beside a 5 MiB response cached a request (line
 * 81) and cleared every 25 requests (line 82): the record's line grew to the end and is held
 * (every one of its samples raised it), the cache's fell back at each clearing. */
static void test_growth_steady_leak_beside_trimmed_cache(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    uint64_t cached[25];
    int ncached = 0;
    next_seq = 0; /* the run starts: times are seqs */
    for (int i = 0; i < 210; i++) {
        cached[ncached++] = sample(&m, 5 * MB, 0, 1, 0, 81);
        sample(&m, MB, 0, 1, 0, 80);
        if (ncached == 25) {
            for (int k = 0; k < ncached; k++)
                sample_free(&m, cached[k], -(int64_t)(5 * MB), 1, 0, 82);
            ncached = 0;
        }
        ag_mem_end_batch(&m);
    }
    ag_mem_finish(&m);
    uint64_t end = next_seq; /* ns since the start: the seq of the next sample */
    CHECK_EQ_U64(ag_mem_growth_rises(line(&m, 80), 0, end), 210);
    CHECK_EQ_U64(line(&m, 81)->live_bytes, 10 * 5 * MB); /* held at the end, yet trimmed */
    CHECK_EQ_U64(ag_mem_growth_rises(line(&m, 81), 0, end), 0);
    CHECK_EQ_U64(ag_mem_growth_rises(line(&m, 82), 0, end), 0);
    ag_mem_stats_free(&m);
}

/* A line that grows only in the last quarter of the process's run (a test after long ones):
 * no leak over the whole run, a leak over the window it grew in (a checkpoint's: the time since
 * the previous checkpoint). */
static void test_growth_judged_over_its_window(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    next_seq = 0;
    for (int i = 0; i < 300; i++) { /* time passes: line 96 allocates and frees, no growth */
        uint64_t seq = sample(&m, MB, 0, 1, 0, 96);
        sample_free(&m, seq, -(int64_t)MB, 1, 0, 96);
        ag_mem_end_batch(&m);
    }
    uint64_t window = next_seq;
    for (int i = 0; i < 100; i++) {
        sample(&m, MB, 0, 1, 0, 95);
        ag_mem_end_batch(&m);
    }
    ag_mem_finish(&m);
    uint64_t end = next_seq;
    CHECK_EQ_U64(ag_mem_growth_rises(line(&m, 95), 0, end), 0);
    CHECK_EQ_U64(ag_mem_growth_rises(line(&m, 95), window, end), 100);
    CHECK_EQ_U64(ag_mem_growth_rises(line(&m, 96), window, end), 0);
    CHECK_EQ_U64(ag_mem_growth_rises(line(&m, 95), end, end), 0); /* an empty window */
    ag_mem_stats_free(&m);
}

/* No steady growth to the end: a table built in the first tenth and kept (line 90); a cache
 * filled in the first fifth that then replaces its oldest entry (line 91: it wobbles at its
 * size, each new entry a new top now and then); a list that grows to the end and is let go
 * just before it (line 92: not held at exit); and with the detector off, the leak (line 93). */
static void test_growth_that_is_no_leak(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    uint64_t lru[20], grown[200];
    next_seq = 0;
    for (int i = 0; i < 200; i++) {
        if (i < 20)
            sample(&m, MB, 0, 1, 0, 90);
        if (i < 20) {
            lru[i] = sample(&m, MB, 0, 1, 0, 91);
        } else { /* the oldest goes before the new one comes: the size never passes 20 MiB */
            sample_free(&m, lru[i % 20], -(int64_t)MB, 1, 0, 91);
            lru[i % 20] = sample(&m, MB, 0, 1, 0, 91);
        }
        grown[i] = sample(&m, MB, 0, 1, 0, 92);
        sample(&m, MB, 0, 1, 0, 93);
        ag_mem_end_batch(&m);
    }
    for (int i = 0; i < 200; i++)
        sample_free(&m, grown[i], -(int64_t)MB, 1, 0, 94);
    ag_mem_finish(&m);
    uint64_t end = next_seq;
    CHECK_EQ_U64(ag_mem_growth_rises(line(&m, 90), 0, end), 0);
    CHECK_EQ_U64(ag_mem_growth_rises(line(&m, 91), 0, end), 0);
    CHECK_EQ_U64(ag_mem_growth_rises(line(&m, 92), 0, end), 0);
    CHECK_EQ_U64(ag_mem_growth_rises(line(&m, 93), 0, end), 200); /* a leak, as a control */
    ag_leak_on = false;
    CHECK_EQ_U64(ag_mem_growth_rises(line(&m, 93), 0, end), 0);
    ag_leak_on = true;
    ag_mem_stats_free(&m);
}

/* Issue 27 item 8: a cache line that adds 1 MiB an execution (the loop's other line runs
 * between them) grows to 100 MiB, is trimmed to 10 and grows again to 50: the most it held at
 * once is 100 MiB, while one execution's peak (Scalene's n_peak_mb) is 1 MiB. */
static void test_max_held_over_trims(void)
{
    struct ag_mem_stats m;
    ag_mem_stats_init(&m);
    uint64_t cached[100];
    for (int i = 0; i < 100; i++) {
        cached[i] = sample(&m, MB, 0, 1, 0, 100);
        sample(&m, 4096, 0, 1, 0, 101); /* the loop's next line: the execution is over */
    }
    for (int i = 10; i < 100; i++)
        sample_free(&m, cached[i], -(int64_t)MB, 1, 0, 102);
    for (int i = 0; i < 40; i++) {
        sample(&m, MB, 0, 1, 0, 100);
        sample(&m, 4096, 0, 1, 0, 101);
    }
    ag_mem_finish(&m);
    const struct ag_mline *l = line(&m, 100);
    CHECK_EQ_U64(l->live_bytes, 50 * MB);
    CHECK_EQ_U64(l->max_live, 100 * MB);
    CHECK_EQ_U64(l->peak, MB);
    CHECK_EQ_U64(line(&m, 102)->max_live, 0); /* the line that frees holds nothing */
    ag_mem_stats_free(&m);
}

static const struct tl_test tests[] = {
    TL(test_kept_allocations),   TL(test_churn_on_one_line),
    TL(test_alloc_here_free_there), TL(test_threads_keep_their_lines),
    TL(test_footprint_clamped),  TL(test_timeline_bounded_keeps_max),
    TL(test_leak_candidates),    TL(test_leak_gate_and_batches),
    TL(test_free_takes_its_sample), TL(test_block_samples_go_together),
    TL(test_block_samples_move_together),
    TL(test_mapping_holds_its_resident_pages), TL(test_freed_by_another_thread),
    TL(test_growth_steady_leak_beside_trimmed_cache), TL(test_growth_that_is_no_leak),
    TL(test_growth_judged_over_its_window),
    TL(test_max_held_over_trims),
};
TL_MAIN(tests)
