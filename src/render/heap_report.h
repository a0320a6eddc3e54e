/* Text and JSON of the heap report commands (analyze, query, diff): each report is a plain
 * model over an analysed snapshot (analysis/heap_analysis.h), built by the command and rendered
 * here (docs/json-schema.md). Text is cleaned for the terminal (common/sanitize.h). */
#ifndef SCRY_RENDER_HEAP_REPORT_H
#define SCRY_RENDER_HEAP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/alloc_join.h"
#include "analysis/heap_analysis.h"
#include "analysis/heap_diff.h"
#include "common/strbuf.h"

/* `scry analyze`: the top retainers, the types by retained size (at most limit), the totals. */
struct heap_analyze_report {
    const char *path; /* the snapshot */
    const struct heap_analysis *a;
    const uint32_t *top; /* the top retainers, largest first */
    size_t ntop;
    /* The order shown (ha_nest_order): order[k] a position in top, depth[k] how many listed
     * retainers it lies inside (its text row indented, its JSON entry in the outer one's
     * "dominates"); NULL: list order, none nested. */
    const size_t *order, *depth;
    uint64_t listed_total; /* ha_retainers_total: what the listed retainers hold, each byte once */
    const struct ha_type *types; /* by retained size */
    size_t ntypes, limit;
    /* --allocations: the join, and per top retainer its allocating lines (NULL: without). */
    const struct aj_join *join;
    struct aj_line *const *alines;
    const size_t *nalines;
};
void heap_analyze_text(const struct heap_analyze_report *r, struct strbuf *out);
void heap_analyze_json(const struct heap_analyze_report *r, struct strbuf *out);

/* `scry query --type T`: the instances of a type. */
struct heap_type_report {
    const struct heap_analysis *a;
    const char *type;   /* as asked */
    uint32_t count;     /* instances */
    uint64_t shallow;   /* their shallow sizes */
    uint64_t retained;  /* retained by the instances not dominated by another instance */
    const uint32_t *largest; /* by retained size */
    size_t nlargest;
    /* --allocations: the allocating lines of the instances (join NULL: without). */
    const struct aj_join *join;
    struct aj_line *alines;
    size_t nalines;
};
void heap_type_text(const struct heap_type_report *r, struct strbuf *out);
void heap_type_json(const struct heap_type_report *r, struct strbuf *out);

/* `scry query --retaining-path ADDR`: the path from a root to one object. */
struct heap_path_report {
    const struct heap_analysis *a;
    uint64_t addr;
    uint32_t object;
    const struct ha_hop *hops; /* root first; none when the object is unreachable */
    size_t nhops;
};
void heap_path_text(const struct heap_path_report *r, struct strbuf *out);
void heap_path_json(const struct heap_path_report *r, struct strbuf *out);

/* `scry query --locate NAME`: where functions, classes and modules of that name are defined. */
struct heap_location {
    const char *name; /* dotted, as its retaining path spells it */
    uint32_t object;
    const char *file;
    uint32_t line;
    bool approximate; /* a class, placed at its first method */
};
struct heap_locate_report {
    const struct heap_analysis *a;
    const char *name; /* as asked */
    const struct heap_location *found;
    size_t nfound;
};
void heap_locate_text(const struct heap_locate_report *r, struct strbuf *out);
void heap_locate_json(const struct heap_locate_report *r, struct strbuf *out);

/* `scry diff`: growth between two snapshots, by retaining site and by type (at most limit each). */
struct heap_diff_side {
    const char *path;
    const struct heap_analysis *a; /* a->s is the snapshot */
};
struct heap_diff_report {
    struct heap_diff_side before, after;
    const struct heap_diff *d;
    size_t limit;
};
void heap_diff_text(const struct heap_diff_report *r, struct strbuf *out);
void heap_diff_json(const struct heap_diff_report *r, struct strbuf *out);

#endif
