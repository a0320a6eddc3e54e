/* Unit tests for the dominator tree and retained sizes: hand-checked graphs (diamond, chain, cycle,
 * self loop, several roots, unreachable nodes, the Lengauer-Tarjan paper's example), thousands of
 * seeded random graphs against a brute-force reference (v's dominators are the nodes whose removal
 * makes v unreachable from the super-root), million-node chains that would overflow any recursive
 * implementation, malformed input, and the tree/top-N helpers. */
#include <stdlib.h>

#include "analysis/dominators.h"
#include "common/error.h"
#include "testlib.h"

#define NONE DOM_UNREACHABLE

struct graph {
    uint32_t n, nedges, nroots;
    uint32_t *off; /* n + 1 */
    uint32_t *succ;
    uint32_t *roots;
    uint64_t *shallow;
};

/* Builds a graph from an edge list of pairs (from, to). */
static void graph_from_edges(struct graph *g, uint32_t n, const uint32_t (*edges)[2], uint32_t ne,
                             const uint32_t *roots, uint32_t nroots)
{
    g->n = n;
    g->nedges = ne;
    g->nroots = nroots;
    g->off = calloc((size_t)n + 2, sizeof(*g->off));
    g->succ = malloc(((size_t)ne + 1) * sizeof(*g->succ));
    g->roots = malloc(((size_t)nroots + 1) * sizeof(*g->roots));
    g->shallow = malloc(((size_t)n + 1) * sizeof(*g->shallow));
    for (uint32_t i = 0; i < ne; i++)
        g->off[edges[i][0] + 1]++;
    for (uint32_t v = 1; v <= n; v++)
        g->off[v] += g->off[v - 1];
    uint32_t *cur = malloc(((size_t)n + 1) * sizeof(*cur));
    memcpy(cur, g->off, (size_t)n * sizeof(*cur));
    for (uint32_t i = 0; i < ne; i++) /* keeps each node's edges in list order */
        g->succ[cur[edges[i][0]]++] = edges[i][1];
    free(cur);
    memcpy(g->roots, roots, (size_t)nroots * sizeof(*roots));
    for (uint32_t v = 0; v < n; v++)
        g->shallow[v] = (uint64_t)1 << (v % 40);
}

static void graph_free(struct graph *g)
{
    free(g->off);
    free(g->succ);
    free(g->roots);
    free(g->shallow);
}

/* Marks what the super-root reaches when node `skip` is removed (skip >= n removes nothing). */
static void reach(const struct graph *g, uint32_t skip, uint8_t *seen, uint32_t *queue)
{
    uint32_t head = 0, tail = 0;
    memset(seen, 0, g->n);
    for (uint32_t i = 0; i < g->nroots; i++) {
        uint32_t r = g->roots[i];
        if (r != skip && !seen[r]) {
            seen[r] = 1;
            queue[tail++] = r;
        }
    }
    while (head < tail) {
        uint32_t v = queue[head++];
        for (uint32_t e = g->off[v]; e < g->off[v + 1]; e++) {
            uint32_t s = g->succ[e];
            if (s != skip && !seen[s]) {
                seen[s] = 1;
                queue[tail++] = s;
            }
        }
    }
}

/* The reference: d dominates v iff removing d makes v unreachable. Dominators form a chain, so
 * the immediate one is the strict dominator with exactly one dominator fewer than v. */
static void brute_force(const struct graph *g, uint32_t *idom, uint64_t *retained)
{
    uint32_t n = g->n;
    uint8_t *all = malloc(n + 1), *dom = malloc((size_t)n * n + 1); /* dom[d * n + v] */
    uint8_t *seen = malloc(n + 1);
    uint32_t *queue = malloc(((size_t)n + 1) * sizeof(*queue));
    uint32_t *ndom = calloc((size_t)n + 1, sizeof(*ndom));
    reach(g, n, all, queue);
    for (uint32_t d = 0; d < n; d++) {
        reach(g, d, seen, queue);
        retained[d] = 0;
        for (uint32_t v = 0; v < n; v++) {
            dom[(size_t)d * n + v] = all[v] && !seen[v];
            if (dom[(size_t)d * n + v]) {
                ndom[v]++;
                retained[d] += g->shallow[v];
            }
        }
    }
    for (uint32_t v = 0; v < n; v++) {
        idom[v] = all[v] ? n : NONE;
        for (uint32_t d = 0; d < n && all[v]; d++)
            if (d != v && dom[(size_t)d * n + v] && ndom[d] == ndom[v] - 1)
                idom[v] = d;
    }
    free(all);
    free(dom);
    free(seen);
    free(queue);
    free(ndom);
}

/* Runs dom_compute and dom_retained on g and compares them with the brute force; returns the
 * number of mismatches so that a random-graph loop can stop after the first bad graph. */
static int check_against_brute(const struct graph *g, const char *what, uint64_t seed)
{
    uint32_t n = g->n;
    uint32_t *idom = malloc(((size_t)n + 1) * sizeof(*idom));
    uint32_t *want = malloc(((size_t)n + 1) * sizeof(*want));
    uint64_t *ret = malloc(((size_t)n + 1) * sizeof(*ret));
    uint64_t *want_ret = malloc(((size_t)n + 1) * sizeof(*want_ret));
    int bad = 0;
    brute_force(g, want, want_ret);
    int rc = dom_compute(n, g->off, g->succ, g->roots, g->nroots, idom);
    CHECK_EQ(rc, 0);
    for (uint32_t v = 0; v < n && !bad; v++) {
        if (idom[v] != want[v]) {
            tl_fail(__FILE__, __LINE__, "%s seed %llu n=%u: idom[%u] = %u, want %u", what,
                    (unsigned long long)seed, n, v, idom[v], want[v]);
            bad++;
        }
    }
    if (!bad) {
        CHECK_EQ(dom_retained(n, idom, g->shallow, ret), 0);
        uint64_t reachable = 0;
        for (uint32_t v = 0; v < n && !bad; v++) {
            uint64_t w = want[v] == NONE ? 0 : want_ret[v];
            if (want[v] != NONE)
                reachable += g->shallow[v];
            if (ret[v] != w) {
                tl_fail(__FILE__, __LINE__, "%s seed %llu n=%u: retained[%u] = %llu, want %llu",
                        what, (unsigned long long)seed, n, v, (unsigned long long)ret[v],
                        (unsigned long long)w);
                bad++;
            }
        }
        CHECK_EQ_U64(dom_root_retained(n, idom, ret), reachable);
    }
    free(idom);
    free(want);
    free(ret);
    free(want_ret);
    return bad;
}

/* Computes idom for a small graph given as an edge list. */
static void small(uint32_t n, const uint32_t (*edges)[2], uint32_t ne, const uint32_t *roots,
                  uint32_t nroots, uint32_t *idom)
{
    struct graph g;
    graph_from_edges(&g, n, edges, ne, roots, nroots);
    CHECK_EQ(dom_compute(n, g.off, g.succ, g.roots, g.nroots, idom), 0);
    CHECK_EQ(check_against_brute(&g, "small", 0), 0);
    graph_free(&g);
}

#define N_(a) (sizeof(a) / sizeof((a)[0]))

static void test_diamond(void)
{
    static const uint32_t e[][2] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}};
    static const uint32_t r[] = {0};
    uint32_t idom[5];
    small(5, e, N_(e), r, 1, idom);
    CHECK_EQ(idom[0], 5);
    CHECK_EQ(idom[1], 0);
    CHECK_EQ(idom[2], 0);
    CHECK_EQ(idom[3], 0);
    CHECK_EQ(idom[4], 3);

    const uint64_t shallow[5] = {1, 2, 4, 8, 16};
    uint64_t ret[5];
    CHECK_EQ(dom_retained(5, idom, shallow, ret), 0);
    CHECK_EQ(ret[0], 31);
    CHECK_EQ(ret[1], 2);
    CHECK_EQ(ret[2], 4);
    CHECK_EQ(ret[3], 24);
    CHECK_EQ(ret[4], 16);
    CHECK_EQ(dom_root_retained(5, idom, ret), 31);
}

static void test_chain_and_cycle(void)
{
    static const uint32_t chain[][2] = {{0, 1}, {1, 2}, {2, 3}};
    static const uint32_t r0[] = {0};
    uint32_t idom[4];
    small(4, chain, N_(chain), r0, 1, idom);
    CHECK_EQ(idom[0], 4);
    CHECK_EQ(idom[1], 0);
    CHECK_EQ(idom[2], 1);
    CHECK_EQ(idom[3], 2);

    /* A cycle entered at 1: its members are still dominated along the cycle from the entry. */
    static const uint32_t cyc[][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 1}};
    small(4, cyc, N_(cyc), r0, 1, idom);
    CHECK_EQ(idom[1], 0);
    CHECK_EQ(idom[2], 1);
    CHECK_EQ(idom[3], 2);

    /* The same cycle entered at two points: neither entry dominates the other. */
    static const uint32_t cyc2[][2] = {{0, 1}, {0, 3}, {1, 2}, {2, 3}, {3, 1}};
    small(4, cyc2, N_(cyc2), r0, 1, idom);
    CHECK_EQ(idom[1], 0);
    CHECK_EQ(idom[2], 1);
    CHECK_EQ(idom[3], 0);

    /* A root inside the cycle: the cycle back to the root adds nothing. */
    static const uint32_t cyc3[][2] = {{0, 1}, {1, 2}, {2, 0}};
    uint32_t i3[3];
    small(3, cyc3, N_(cyc3), r0, 1, i3);
    CHECK_EQ(i3[0], 3);
    CHECK_EQ(i3[1], 0);
    CHECK_EQ(i3[2], 1);
}

static void test_self_loop_and_repeats(void)
{
    static const uint32_t e[][2] = {{0, 0}, {0, 1}, {0, 1}, {1, 1}, {1, 2}, {1, 2}, {2, 2}};
    static const uint32_t r[] = {0, 0};
    uint32_t idom[3];
    small(3, e, N_(e), r, 2, idom);
    CHECK_EQ(idom[0], 3);
    CHECK_EQ(idom[1], 0);
    CHECK_EQ(idom[2], 1);
}

static void test_roots_and_unreachable(void)
{
    /* roots 0 and 3; 2 is reached from both (-> super-root); 1 only from 0; 4 (and the 5<->6
     * cycle) from no root; 3 is also reached from 0 but is a root itself. */
    static const uint32_t e[][2] = {{0, 1}, {1, 2}, {3, 2}, {0, 3}, {4, 0}, {5, 6}, {6, 5}, {6, 2}};
    static const uint32_t r[] = {0, 3};
    uint32_t idom[7];
    small(7, e, N_(e), r, 2, idom);
    CHECK_EQ(idom[0], 7);
    CHECK_EQ(idom[1], 0);
    CHECK_EQ(idom[2], 7);
    CHECK_EQ(idom[3], 7);
    CHECK_EQ(idom[4], NONE);
    CHECK_EQ(idom[5], NONE);
    CHECK_EQ(idom[6], NONE);

    uint64_t shallow[7] = {1, 2, 4, 8, 16, 32, 64}, ret[7];
    CHECK_EQ(dom_retained(7, idom, shallow, ret), 0);
    CHECK_EQ(ret[0], 3);
    CHECK_EQ(ret[2], 4);
    CHECK_EQ(ret[3], 8);
    CHECK_EQ(ret[4], 0);
    CHECK_EQ(ret[5], 0);
    CHECK_EQ(dom_root_retained(7, idom, ret), 15);

    /* No roots at all: nothing is reachable. */
    uint32_t off[3] = {0, 1, 1}, succ[1] = {1};
    CHECK_EQ(dom_compute(2, off, succ, NULL, 0, idom), 0);
    CHECK_EQ(idom[0], NONE);
    CHECK_EQ(idom[1], NONE);
    /* An empty graph. */
    uint32_t off0[1] = {0};
    CHECK_EQ(dom_compute(0, off0, succ, NULL, 0, idom), 0);
    CHECK_EQ(dom_retained(0, idom, shallow, ret), 0);
}

/* Figure 1 of Lengauer and Tarjan (1979): R A B C D E F G H I J K L. */
static void test_lengauer_tarjan_example(void)
{
    enum { R, A, B, C, D, E, F, G, H, I, J, K, L, NN };
    static const uint32_t e[][2] = {{R, A}, {R, B}, {R, C}, {A, D}, {B, A}, {B, D}, {B, E},
                                    {C, F}, {C, G}, {D, L}, {E, H}, {F, I}, {G, I}, {G, J},
                                    {H, E}, {H, K}, {I, K}, {J, I}, {K, I}, {K, R}, {L, H}};
    static const uint32_t r[] = {R};
    static const uint32_t want[NN] = {NN, R, R, R, R, R, C, C, R, R, G, R, D};
    uint32_t idom[NN];
    small(NN, e, N_(e), r, 1, idom);
    for (int v = 0; v < NN; v++)
        CHECK_EQ(idom[v], want[v]);
}

static uint64_t rng_next(uint64_t *s)
{
    /* splitmix64: fixed seeds give the same graphs on every machine */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t rng_below(uint64_t *s, uint32_t bound)
{
    return bound ? (uint32_t)(rng_next(s) % bound) : 0;
}

/* A random graph of one of several shapes: uniform edges; mostly-forward edges with a few back
 * edges (deep DFS trees, loops); a chain with shortcuts; sparse trees with cross links. */
static void random_graph(struct graph *g, uint64_t seed, uint32_t maxn)
{
    uint64_t s = seed;
    uint32_t n = 1 + rng_below(&s, maxn);
    uint32_t shape = rng_below(&s, 4);
    uint32_t density = rng_below(&s, 6); /* mean out-degree about density / 2 + shape effects */
    uint32_t cap = n * 8 + 16, ne = 0;
    uint32_t(*edges)[2] = malloc((size_t)cap * sizeof(*edges));
    for (uint32_t v = 0; v < n; v++) {
        uint32_t deg = rng_below(&s, density + 1);
        if (shape == 2 && v + 1 < n)
            edges[ne][0] = v, edges[ne][1] = v + 1, ne++;
        if (shape == 3 && v > 0) /* a random tree with parents before children */
            edges[ne][0] = rng_below(&s, v), edges[ne][1] = v, ne++;
        for (uint32_t k = 0; k < deg && ne < cap; k++) {
            uint32_t t;
            if (shape == 1 || shape == 2) {
                t = rng_below(&s, 8) == 0 ? rng_below(&s, n) : v + 1 + rng_below(&s, 4);
                if (t >= n)
                    t = rng_below(&s, n);
            } else if (shape == 3) {
                if (rng_below(&s, 3) != 0)
                    continue;
                t = rng_below(&s, n);
            } else {
                t = rng_below(&s, n);
            }
            edges[ne][0] = v, edges[ne][1] = t, ne++;
        }
    }
    uint32_t nroots = rng_below(&s, 16) == 0 ? 0 : 1 + rng_below(&s, rng_below(&s, 3) ? 2 : 6);
    uint32_t roots[8];
    for (uint32_t i = 0; i < nroots; i++)
        roots[i] = (i == 0 && shape >= 2) ? 0 : rng_below(&s, n);
    /* Shuffle the node indices so that index order says nothing about DFS order. */
    if (rng_below(&s, 2)) {
        uint32_t *perm = malloc((size_t)n * sizeof(*perm));
        for (uint32_t v = 0; v < n; v++)
            perm[v] = v;
        for (uint32_t v = n; v > 1; v--) {
            uint32_t j = rng_below(&s, v), t = perm[v - 1];
            perm[v - 1] = perm[j];
            perm[j] = t;
        }
        for (uint32_t i = 0; i < ne; i++)
            edges[i][0] = perm[edges[i][0]], edges[i][1] = perm[edges[i][1]];
        for (uint32_t i = 0; i < nroots; i++)
            roots[i] = perm[roots[i]];
        free(perm);
    }
    graph_from_edges(g, n, (const uint32_t(*)[2])edges, ne, roots, nroots);
    for (uint32_t v = 0; v < n; v++)
        g->shallow[v] = 16 + rng_below(&s, 1000);
    free(edges);
}

static void test_random_graphs_against_brute_force(void)
{
    int bad = 0;
    uint32_t graphs = 0;
    for (uint64_t seed = 1; seed <= 4000 && bad < 3; seed++) {
        struct graph g;
        random_graph(&g, seed, seed % 10 == 0 ? 200 : 40);
        bad += check_against_brute(&g, "random", seed);
        graph_free(&g);
        graphs++;
    }
    CHECK_EQ(graphs, 4000);
}

/* Fewer, bigger graphs: long DFS paths where path compression does real work. */
static void test_larger_random_graphs_against_brute_force(void)
{
    int bad = 0;
    for (uint64_t seed = 100001; seed <= 100006 && !bad; seed++) {
        struct graph g;
        random_graph(&g, seed, 2500);
        bad += check_against_brute(&g, "large random", seed);
        graph_free(&g);
    }
}

/* A million-node chain, walked in both index directions, with and without extra edges. */
static void test_deep_chains(void)
{
    const uint32_t n = 1000000;
    uint32_t *off = malloc(((size_t)n + 1) * sizeof(*off));
    uint32_t *succ = malloc(2 * (size_t)n * sizeof(*succ));
    uint32_t *idom = malloc((size_t)n * sizeof(*idom));
    uint64_t *shallow = malloc((size_t)n * sizeof(*shallow));
    uint64_t *ret = malloc((size_t)n * sizeof(*ret));
    for (uint32_t v = 0; v < n; v++)
        shallow[v] = 1 + v % 7;

    for (int variant = 0; variant < 4; variant++) {
        /* 0: v -> v+1; 1: v -> v-1 from root n-1; 2: v -> v+1 and v -> 0 (a cycle per node);
         * 3: v -> v+1 and v -> v+2 (every node past 1 has two entries: idom 0 for all). */
        uint32_t ne = 0;
        for (uint32_t v = 0; v < n; v++) {
            off[v] = ne;
            if (variant == 1) {
                if (v > 0)
                    succ[ne++] = v - 1;
                continue;
            }
            if (v + 1 < n)
                succ[ne++] = v + 1;
            if (variant == 2)
                succ[ne++] = 0;
            if (variant == 3 && v + 2 < n)
                succ[ne++] = v + 2;
        }
        off[n] = ne;
        uint32_t root = variant == 1 ? n - 1 : 0;
        CHECK_EQ(dom_compute(n, off, succ, &root, 1, idom), 0);
        uint32_t wrong = 0;
        for (uint32_t v = 0; v < n; v++) {
            uint32_t want;
            if (v == root)
                want = n;
            else if (variant == 1)
                want = v + 1;
            else if (variant == 3)
                want = 0;
            else
                want = v - 1;
            wrong += idom[v] != want;
        }
        CHECK_EQ(wrong, 0);
        CHECK_EQ(dom_retained(n, idom, shallow, ret), 0);
        uint64_t total = 0;
        for (uint32_t v = 0; v < n; v++)
            total += shallow[v];
        CHECK_EQ_U64(ret[root], total);
        CHECK_EQ_U64(dom_root_retained(n, idom, ret), total);
        if (variant == 0)
            CHECK_EQ_U64(ret[n - 2], shallow[n - 2] + shallow[n - 1]);
    }
    free(off);
    free(succ);
    free(idom);
    free(shallow);
    free(ret);
}

static void test_malformed_input(void)
{
    uint32_t idom[3];
    uint32_t off[4] = {0, 1, 2, 2}, succ[2] = {1, 7};
    uint32_t root = 0, bad_root = 3;
    CHECK_EQ(dom_compute(3, off, succ, &root, 1, idom), -SCRY_E_BAD_SNAPSHOT);
    CHECK_EQ(idom[0], NONE);
    succ[1] = 2;
    CHECK_EQ(dom_compute(3, off, succ, &bad_root, 1, idom), -SCRY_E_BAD_SNAPSHOT);
    CHECK_EQ(dom_compute(3, off, succ, &root, 1, idom), 0);
    uint32_t bad_off[4] = {0, 2, 1, 2};
    CHECK_EQ(dom_compute(3, bad_off, succ, &root, 1, idom), -SCRY_E_BAD_SNAPSHOT);
    uint32_t far_off[4] = {0, 1, 9, 2};
    CHECK_EQ(dom_compute(3, far_off, succ, &root, 1, idom), -SCRY_E_BAD_SNAPSHOT);

    uint64_t shallow[3] = {1, 1, 1}, ret[3];
    uint32_t cyc[3] = {3, 2, 1}; /* 1 and 2 dominate each other */
    CHECK_EQ(dom_retained(3, cyc, shallow, ret), -SCRY_E_BAD_SNAPSHOT);
    uint32_t self[3] = {3, 1, 0};
    CHECK_EQ(dom_retained(3, self, shallow, ret), -SCRY_E_BAD_SNAPSHOT);
    uint32_t range[3] = {3, 9, 0};
    CHECK_EQ(dom_retained(3, range, shallow, ret), -SCRY_E_BAD_SNAPSHOT);
    uint32_t under_unreachable[3] = {3, NONE, 1};
    CHECK_EQ(dom_retained(3, under_unreachable, shallow, ret), -SCRY_E_BAD_SNAPSHOT);
    struct dom_children c;
    CHECK_EQ(dom_children_build(3, range, &c), -SCRY_E_BAD_SNAPSHOT);
}

static void test_children(void)
{
    for (uint64_t seed = 7001; seed <= 7200; seed++) {
        struct graph g;
        random_graph(&g, seed, 120);
        uint32_t n = g.n, *idom = malloc((size_t)n * sizeof(*idom));
        CHECK_EQ(dom_compute(n, g.off, g.succ, g.roots, g.nroots, idom), 0);
        struct dom_children c;
        CHECK_EQ(dom_children_build(n, idom, &c), 0);
        uint32_t seen = 0, reachable = 0;
        for (uint32_t v = 0; v < n; v++)
            reachable += idom[v] != NONE;
        for (uint32_t p = 0; p <= n; p++) {
            const uint32_t *ch = dom_children_of(&c, p);
            for (uint32_t i = 0; i < dom_children_count(&c, p); i++) {
                CHECK_EQ(idom[ch[i]], p);
                if (i > 0)
                    CHECK(ch[i - 1] < ch[i]);
                seen++;
            }
        }
        CHECK_EQ(seen, reachable);
        CHECK_EQ(c.off[n + 1], reachable);
        dom_children_free(&c);
        free(idom);
        graph_free(&g);
    }
}

static int cmp_ref(const void *a, const void *b, void *ctx)
{
    const uint64_t *key = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (key[x] != key[y])
        return key[x] > key[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

static void test_top(void)
{
    uint64_t s = 42;
    const uint32_t n = 5000;
    uint64_t *key = malloc(n * sizeof(*key));
    uint32_t *idom = malloc(n * sizeof(*idom));
    uint32_t *ref = malloc(n * sizeof(*ref)), *out = malloc(n * sizeof(*out));
    for (int round = 0; round < 20; round++) {
        uint32_t range = round % 2 ? 50 : 1000000; /* many ties, or few */
        uint32_t nref = 0;
        for (uint32_t v = 0; v < n; v++) {
            key[v] = rng_below(&s, range);
            idom[v] = rng_below(&s, 10) == 0 ? NONE : n;
            if (idom[v] != NONE)
                ref[nref++] = v;
        }
        qsort_r(ref, nref, sizeof(*ref), cmp_ref, key);
        uint32_t k = round < 10 ? 1 + rng_below(&s, 100) : rng_below(&s, n + 10), got = 99;
        CHECK_EQ(dom_top(key, NULL, n, idom, k, out, &got), 0);
        CHECK_EQ(got, k < nref ? k : nref);
        for (uint32_t i = 0; i < got; i++)
            if (out[i] != ref[i]) {
                CHECK_EQ(out[i], ref[i]);
                break;
            }
    }
    /* Over a subset, without an idom filter. */
    uint32_t nodes[4] = {10, 3, 7, 1}, got;
    key[10] = 5, key[3] = 9, key[7] = 5, key[1] = 0;
    CHECK_EQ(dom_top(key, nodes, 4, NULL, 3, out, &got), 0);
    CHECK_EQ(got, 3);
    CHECK_EQ(out[0], 3);
    CHECK_EQ(out[1], 7);
    CHECK_EQ(out[2], 10);
    CHECK_EQ(dom_top(key, nodes, 4, NULL, 0, out, &got), 0);
    CHECK_EQ(got, 0);
    free(key);
    free(idom);
    free(ref);
    free(out);
}

static const struct tl_test tests[] = {
    TL(test_diamond),
    TL(test_chain_and_cycle),
    TL(test_self_loop_and_repeats),
    TL(test_roots_and_unreachable),
    TL(test_lengauer_tarjan_example),
    TL(test_random_graphs_against_brute_force),
    TL(test_larger_random_graphs_against_brute_force),
    TL(test_deep_chains),
    TL(test_malformed_input),
    TL(test_children),
    TL(test_top),
};
TL_MAIN(tests)
