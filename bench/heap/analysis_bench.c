/* Heap analysis benchmark: dominators, retained sizes and top retainers on synthetic heap-like
 * graphs of N objects, timed, with peak memory per object. Run by bench/heap/run.sh; method and
 * results in docs/PERFORMANCE.md ("Heap analysis"). Timing lives here, never in tests.
 *
 *   analysis_bench [N objects, default 1000000] [repetitions, default 3]
 *
 * The graph imitates what `scry dump` records of a Python program: sys.modules (a root) holding
 * module dicts; modules holding functions (whose globals point back: cycles), code objects and
 * classes; thread frames (more roots) holding some of the same containers; big dicts and lists of
 * instances, some nested inside instances, instances with a key string, an int, a bytes payload or
 * a small list, links to other instances (sharing across containers) and back to their container
 * (cycles), and a pool of interned strings and singletons that everything shares. About 1% of the
 * records are garbage that nothing references. The graph is built straight into CSR arrays, as a
 * snapshot reader would hand them over, so peak RSS counts the graph as analyze would hold it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "analysis/dominators.h"
#include "common/error.h"

enum { MODULES = 1000, FUNCS = 8, CLASSES = 500, FRAMES = 8, BIG = 8, TOP = 20 };

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t h(uint64_t a, uint64_t salt) { return mix(a * 0x100000001b3ull + salt); }

struct gen {
    uint32_t n, *off, *succ;
    uint64_t ne, cap, *shallow;
    /* index ranges */
    uint32_t mod, fn, code, cls, str, nstr, frame, cont, ncont, rec, nrec;
    uint32_t *cstart; /* records of container j: [cstart[j], cstart[j+1]) */
};

static void emit(struct gen *g, uint32_t t)
{
    if (g->ne == g->cap) {
        g->cap += g->cap / 4 + 1024;
        g->succ = realloc(g->succ, g->cap * sizeof(*g->succ));
        if (!g->succ) {
            fprintf(stderr, "out of memory building the graph\n");
            exit(1);
        }
    }
    g->succ[g->ne++] = t;
}

static uint32_t inst_of(const struct gen *g, uint32_t r) { return g->rec + 4 * r; }

/* Containers owned by module m: the big ones spread over modules, then every fourth one. */
static void module_containers(struct gen *g, uint32_t m)
{
    for (uint32_t j = 0; j < BIG && j < g->ncont; j++)
        if ((j * 97) % MODULES == m)
            emit(g, g->cont + j);
    for (uint32_t j = m; j < g->ncont; j += MODULES)
        if (j >= BIG && j % 4 == 0)
            emit(g, g->cont + j);
}

static void build(struct gen *g, uint32_t n)
{
    memset(g, 0, sizeof(*g));
    g->n = n;
    g->mod = 1;
    g->fn = g->mod + MODULES;
    g->code = g->fn + MODULES * FUNCS;
    g->cls = g->code + MODULES * FUNCS;
    g->str = g->cls + CLASSES;
    g->nstr = n / 50;
    g->frame = g->str + g->nstr;
    g->cont = g->frame + FRAMES;
    /* Records: 4 objects each; containers hold ~1/60 of them in number. */
    uint32_t left = n - g->cont;
    g->ncont = left / 250;
    g->rec = g->cont + g->ncont;
    g->nrec = (n - g->rec) / 4;
    g->n = n = g->rec + 4 * g->nrec;

    /* Container sizes: eight big ones take 40% of the records, the rest 2..200 each. */
    g->cstart = malloc(((size_t)g->ncont + 1) * sizeof(*g->cstart));
    static const double big[BIG] = {.10, .08, .06, .05, .04, .03, .02, .02};
    uint32_t r = 0;
    for (uint32_t j = 0; j < g->ncont; j++) {
        g->cstart[j] = r;
        uint32_t size = j < BIG ? (uint32_t)(big[j] * g->nrec) : 2 + (uint32_t)(h(j, 1) % 199);
        r = r + size > g->nrec || j == g->ncont - 1 ? g->nrec : r + size;
    }
    g->cstart[g->ncont] = g->nrec;

    g->off = malloc(((size_t)n + 1) * sizeof(*g->off));
    g->shallow = malloc((size_t)n * sizeof(*g->shallow));
    g->cap = (uint64_t)n * 5 / 2;
    g->succ = malloc(g->cap * sizeof(*g->succ));
    if (!g->off || !g->shallow || !g->succ || !g->cstart) {
        fprintf(stderr, "out of memory building the graph\n");
        exit(1);
    }

    uint32_t v = 0;
#define NODE(size) (g->off[v] = (uint32_t)g->ne, g->shallow[v] = (size))
    /* sys.modules */
    NODE(36000);
    for (uint32_t m = 0; m < MODULES; m++)
        emit(g, g->mod + m);
    v++;
    for (uint32_t m = 0; m < MODULES; m++, v++) { /* module dicts */
        NODE(4700);
        for (uint32_t f = 0; f < FUNCS; f++)
            emit(g, g->fn + m * FUNCS + f);
        for (uint32_t c = m; c < CLASSES; c += MODULES)
            emit(g, g->cls + c);
        emit(g, g->str + (uint32_t)(h(m, 2) % g->nstr)); /* __name__ */
        module_containers(g, m);
    }
    for (uint32_t f = 0; f < MODULES * FUNCS; f++, v++) { /* functions */
        NODE(160);
        emit(g, g->code + f);
        emit(g, g->mod + f / FUNCS); /* __globals__: a cycle through the module */
        emit(g, g->str + (uint32_t)(h(f, 3) % g->nstr));
    }
    for (uint32_t f = 0; f < MODULES * FUNCS; f++, v++) { /* code objects */
        NODE(240);
        emit(g, g->str + (uint32_t)(h(f, 4) % g->nstr));
        emit(g, g->str + (uint32_t)(h(f / FUNCS, 5) % g->nstr)); /* co_filename */
    }
    for (uint32_t c = 0; c < CLASSES; c++, v++) { /* classes: base, name, methods */
        NODE(1100);
        if (c)
            emit(g, g->cls);
        emit(g, g->str + (uint32_t)(h(c, 6) % g->nstr));
        emit(g, g->fn + (uint32_t)(h(c, 7) % (MODULES * FUNCS)));
    }
    for (uint32_t s = 0; s < g->nstr; s++, v++) /* interned strings, singletons */
        NODE(50 + h(s, 8) % 30);
    for (uint32_t t = 0; t < FRAMES; t++, v++) { /* thread frames: locals */
        NODE(500);
        emit(g, g->mod + (uint32_t)(h(t, 9) % MODULES));
        for (uint32_t k = 0; k < 6; k++)
            emit(g, g->cont + (uint32_t)(h(t * 8 + k, 10) % g->ncont));
        emit(g, inst_of(g, (uint32_t)(h(t, 11) % g->nrec)));
    }
    for (uint32_t j = 0; j < g->ncont; j++, v++) { /* containers: dicts key->inst, lists */
        uint32_t count = g->cstart[j + 1] - g->cstart[j];
        int is_list = j % 3 == 2;
        NODE(is_list ? 56 + 8 * (uint64_t)count : 64 + 42 * (uint64_t)count);
        for (uint32_t rr = g->cstart[j]; rr < g->cstart[j + 1]; rr++) {
            if (h(rr, 12) % 100 == 0)
                continue; /* garbage: a record nothing in a container holds */
            if (!is_list)
                emit(g, inst_of(g, rr) + 1);
            emit(g, inst_of(g, rr));
        }
    }
    uint32_t cj = 0;
    for (uint32_t rr = 0; rr < g->nrec; rr++) { /* records: inst, str, bytes|list, int */
        while (rr >= g->cstart[cj + 1])
            cj++;
        uint64_t x = h(rr, 13);
        uint32_t base = inst_of(g, rr);
        NODE(56);
        emit(g, g->cls + (uint32_t)(x % CLASSES));
        emit(g, base + 1);
        emit(g, base + 2);
        emit(g, base + 3);
        emit(g, g->str + (uint32_t)((x >> 10) % g->nstr));
        emit(g, g->str + (uint32_t)((x >> 20) % 256)); /* None, True, small ints */
        emit(g, g->str + (uint32_t)((x >> 28) % 256));
        if ((x >> 36) % 4 == 0) { /* a link to another instance, mostly a neighbour */
            uint64_t y = h(rr, 14);
            uint32_t lo = g->cstart[cj], size = g->cstart[cj + 1] - lo;
            emit(g, inst_of(g, y % 10 ? lo + (uint32_t)((y >> 8) % size)
                                      : (uint32_t)((y >> 8) % g->nrec)));
        }
        if ((x >> 40) % 20 == 0) /* back to its container: a cycle */
            emit(g, g->cont + cj);
        if (rr == g->cstart[cj] && cj < g->ncont) /* the first record owns nested containers */
            for (uint32_t k = 1; k < 4; k++) {
                uint64_t j = 4 * (uint64_t)cj + k;
                if (j >= BIG && j < g->ncont)
                    emit(g, g->cont + (uint32_t)j);
            }
        v++;
        NODE(49 + (x >> 44) % 40); /* key / name string */
        v++;
        if ((x >> 50) % 2) { /* a payload */
            NODE(33 + 1024);
        } else { /* a small list */
            NODE(72);
            emit(g, base + 3);
            emit(g, g->str + (uint32_t)((x >> 52) % g->nstr));
            if ((x >> 58) % 10 == 0)
                emit(g, inst_of(g, g->cstart[cj] + (uint32_t)(h(rr, 15) % (g->cstart[cj + 1] -
                                                                         g->cstart[cj]))));
        }
        v++;
        NODE(32); /* an int */
        v++;
    }
#undef NODE
    g->off[v] = (uint32_t)g->ne;
    if (v != n || g->ne > UINT32_MAX) {
        fprintf(stderr, "generator bug: %u of %u nodes, %" PRIu64 " edges\n", v, n, g->ne);
        exit(1);
    }
}

/* Renumbers the objects at random: a snapshot's order follows the GC lists, not the graph, and this
 * is the worst case for locality. perm[] maps old to new indices; the roots are mapped by the
 * caller. */
static uint32_t *shuffle(struct gen *g)
{
    uint32_t n = g->n;
    uint32_t *perm = malloc((size_t)n * sizeof(*perm)), *inv = malloc((size_t)n * sizeof(*inv));
    uint32_t *off = malloc(((size_t)n + 1) * sizeof(*off));
    uint32_t *succ = malloc((g->ne ? g->ne : 1) * sizeof(*succ));
    uint64_t *shallow = malloc((size_t)n * sizeof(*shallow));
    if (!perm || !inv || !off || !succ || !shallow) {
        fprintf(stderr, "out of memory shuffling the graph\n");
        exit(1);
    }
    for (uint32_t v = 0; v < n; v++)
        inv[v] = v;
    for (uint32_t v = n; v > 1; v--) {
        uint32_t j = (uint32_t)(mix(v ^ 0x5eed) % v), t = inv[v - 1];
        inv[v - 1] = inv[j];
        inv[j] = t;
    }
    for (uint32_t v = 0; v < n; v++)
        perm[inv[v]] = v;
    uint32_t e = 0;
    for (uint32_t u = 0; u < n; u++) {
        uint32_t o = inv[u];
        off[u] = e;
        shallow[u] = g->shallow[o];
        for (uint32_t k = g->off[o]; k < g->off[o + 1]; k++)
            succ[e++] = perm[g->succ[k]];
    }
    off[n] = e;
    free(inv);
    free(g->off);
    free(g->succ);
    free(g->shallow);
    g->off = off;
    g->succ = succ;
    g->shallow = shallow;
    return perm;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * 4; /* 4 KiB pages */
}

/* Resets the peak RSS to the current RSS (Linux 4.0+), so that what the generator held for a moment
 * is not counted; returns 0 when it worked. */
static int reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Peak RSS: VmHWM (which reset_peak resets), else getrusage's ru_maxrss. */
static long peak_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    if (kib > 0)
        return kib;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static const char *kind(const struct gen *g, uint32_t v)
{
    if (v == 0)
        return "sys.modules";
    if (v < g->fn)
        return "module dict";
    if (v < g->code)
        return "function";
    if (v < g->cls)
        return "code";
    if (v < g->str)
        return "class";
    if (v < g->frame)
        return "interned str";
    if (v < g->cont)
        return "frame";
    if (v < g->rec)
        return (v - g->cont) % 3 == 2 ? "list" : "dict";
    static const char *rk[4] = {"instance", "str", "bytes|list", "int"};
    return rk[(v - g->rec) % 4];
}

int main(int argc, char **argv)
{
    uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1000000;
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    int shuffled = argc > 3 && strcmp(argv[3], "shuffled") == 0;
    if (n < 100000 || n > 400000000 || reps < 1 || reps > 50 ||
        (argc > 3 && !shuffled)) {
        fprintf(stderr, "usage: analysis_bench [N >= 100000] [repetitions 1..50] [shuffled]\n");
        return 2;
    }
    double t0 = now();
    struct gen g;
    build(&g, n);
    n = g.n;
    uint32_t *perm = shuffled ? shuffle(&g) : NULL;
    uint32_t roots[1 + FRAMES];
    roots[0] = 0;
    for (uint32_t t = 0; t < FRAMES; t++)
        roots[1 + t] = g.frame + t;
    for (uint32_t i = 0; perm && i < 1 + FRAMES; i++)
        roots[i] = perm[roots[i]];
    free(perm);
    double tgen = now() - t0;
    long rss_graph = rss_kib();
    int reset = reset_peak();
    printf("graph%s: %u objects, %" PRIu64 " edges (%.2f per object), %u roots, built in %.2f s, "
           "RSS %.1f MiB (%.1f B/object)\n",
           shuffled ? " (indices shuffled)" : "", n, g.ne, (double)g.ne / n, 1 + FRAMES, tgen, rss_graph / 1024.0,
           rss_graph * 1024.0 / n);


    double tc[50], tr[50], tt[50], tall[50];
    uint32_t top[TOP], ntop = 0, reachable = 0;
    uint64_t total = 0, want = 0;
    for (int rep = 0; rep < reps; rep++) {
        double a = now();
        uint32_t *idom = malloc((size_t)n * sizeof(*idom));
        if (!idom || dom_compute(n, g.off, g.succ, roots, 1 + FRAMES, idom) < 0) {
            fprintf(stderr, "dom_compute: %s\n", err_last_message());
            return 1;
        }
        double b = now();
        uint64_t *retained = malloc((size_t)n * sizeof(*retained));
        if (!retained || dom_retained(n, idom, g.shallow, retained) < 0) {
            fprintf(stderr, "dom_retained: %s\n", err_last_message());
            return 1;
        }
        total = dom_root_retained(n, idom, retained);
        double c = now();
        if (dom_top(retained, NULL, n, idom, TOP, top, &ntop) < 0)
            return 1;
        double d = now();
        tc[rep] = b - a;
        tr[rep] = c - b;
        tt[rep] = d - c;
        tall[rep] = d - a;
        if (rep == reps - 1) {
            reachable = 0;
            want = 0;
            for (uint32_t v = 0; v < n; v++)
                if (idom[v] != DOM_UNREACHABLE)
                    reachable++, want += g.shallow[v];
            printf("reachable: %u objects (%.1f%%), %.1f MiB; top retainers:\n", reachable,
                   100.0 * reachable / n, total / 1048576.0);
            for (uint32_t i = 0; i < ntop && i < 8; i++)
                if (!shuffled)
                    printf("  %10.1f MiB  %-12s #%u  (idom %s #%u)\n",
                           retained[top[i]] / 1048576.0, kind(&g, top[i]), top[i],
                           idom[top[i]] == n ? "super-root" : kind(&g, idom[top[i]]),
                           idom[top[i]]);
                else
                    printf("  %10.1f MiB  #%u\n", retained[top[i]] / 1048576.0, top[i]);
        }
        free(idom);
        free(retained);
    }
    if (total != want) {
        fprintf(stderr, "check failed: super-root retains %" PRIu64 ", reachable is %" PRIu64 "\n",
                total, want);
        return 1;
    }
    qsort(tc, reps, sizeof(double), cmp_double);
    qsort(tr, reps, sizeof(double), cmp_double);
    qsort(tt, reps, sizeof(double), cmp_double);
    qsort(tall, reps, sizeof(double), cmp_double);
    double med = tall[reps / 2];
    long peak = peak_kib();
    printf("analysis (median of %d): dom_compute %.3f s, dom_retained %.3f s, top-%d %.3f s, "
           "total %.3f s = %.2f M objects/s (fastest run %.3f s = %.2f M objects/s)\n",
           reps, tc[reps / 2], tr[reps / 2], TOP, tt[reps / 2], med, n / med / 1e6, tall[0],
           n / tall[0] / 1e6);
    if (reset < 0)
        printf("(could not reset the peak RSS: it includes building the graph)\n");
    printf("peak RSS %.1f MiB = %.1f B/object (graph+shallow %.1f, analysis %.1f)\n",
           peak / 1024.0, peak * 1024.0 / n, rss_graph * 1024.0 / n,
           (peak - rss_graph) * 1024.0 / n);
    printf("RESULT%s n=%u edges_per_object=%.2f seconds=%.3f mobj_per_s=%.2f best_mobj_per_s=%.2f "
           "peak_b_per_obj=%.1f analysis_b_per_obj=%.1f\n",
           shuffled ? "-shuffled" : "", n, (double)g.ne / n, med, n / med / 1e6,
           n / tall[0] / 1e6, peak * 1024.0 / n,
           (peak - rss_graph) * 1024.0 / n);
    free(g.off);
    free(g.succ);
    free(g.shallow);
    free(g.cstart);
    return 0;
}
