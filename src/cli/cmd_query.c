/* `scry query app.heap --type T | --retaining-path ADDR | --locate NAME`: questions about one
 * snapshot: a type's instances and who holds them, the path from a root to one object (one
 * labelled hop per line), and where a function, class or module comes from. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/alloc_join.h"
#include "analysis/dominators.h"
#include "analysis/heap_analysis.h"
#include "cli/cli.h"
#include "options/options.h"
#include "cli/reports.h"
#include "common/arena.h"
#include "common/error.h"
#include "common/grow.h"
#include "render/heap_report.h"

#define MAX_HOPS 512
#define MAX_LISTED 20

const char cmd_query_usage[] =
    "usage: scry query app.heap --type T [--allocations] [--json]\n"
    "       scry query app.heap --retaining-path ADDR [--json]\n"
    "       scry query app.heap --locate NAME [--json]\n"
    "\n";

static bool type_matches(const char *type, const char *want)
{
    if (strcmp(type, want) == 0)
        return true;
    size_t lt = strlen(type), lw = strlen(want);
    return lt > lw && type[lt - lw - 1] == '.' && strcmp(type + lt - lw, want) == 0;
}

/* The allocating lines of the instances match[0 .. nmatch) (--allocations). */
static int type_allocations(const struct heap_analysis *a, const uint32_t *match, uint32_t nmatch,
                            struct aj_join *join, struct aj_line **lines, size_t *nlines)
{
    uint8_t *member = calloc((size_t)a->n + 1, 1);
    if (!member)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    for (uint32_t i = 0; i < nmatch; i++)
        member[match[i]] = 1;
    int err = aj_build(a, join);
    if (!err)
        err = aj_lines_of_objects(join, member, lines, nlines);
    free(member);
    return err;
}

static int query_type(const struct heap_analysis *a, const char *want, bool allocations,
                      bool json, struct strbuf *out)
{
    const struct snap *s = a->s;
    uint32_t *match = calloc((size_t)a->n + 1, sizeof(*match));
    uint32_t top[MAX_LISTED], ntop = 0, nmatch = 0;
    uint64_t shallow = 0, retained = 0;
    if (!match)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    for (uint32_t v = 0; v < a->n; v++) {
        if (!type_matches(snap_string(s, s->objects[v].type), want))
            continue;
        match[nmatch++] = v;
        shallow += s->objects[v].size;
        /* Retained by the type: instances not dominated by another instance of it. */
        uint32_t d = a->idom[v];
        bool nested = false;
        for (int hops = 0; d < a->n && hops < 64 && !nested; hops++, d = a->idom[d])
            nested = type_matches(snap_string(s, s->objects[d].type), want);
        if (!nested)
            retained += a->retained[v];
    }
    if (nmatch == 0) {
        free(match);
        return err_fail(SCRY_E_NOT_FOUND, "no object of type '%s' in the snapshot", want);
    }
    dom_top(a->retained, match, nmatch, NULL, MAX_LISTED, top, &ntop);
    struct heap_type_report r = {.a = a, .type = want, .count = nmatch, .shallow = shallow,
                                 .retained = retained, .largest = top, .nlargest = ntop};
    struct aj_join join = {0};
    int err = allocations ? type_allocations(a, match, nmatch, &join, &r.alines, &r.nalines) : 0;
    if (!err && allocations)
        r.join = &join;
    if (!err && json)
        heap_type_json(&r, out);
    else if (!err)
        heap_type_text(&r, out);
    free(r.alines);
    aj_free(&join);
    free(match);
    return err;
}

static int query_path(const struct heap_analysis *a, const char *arg, bool json,
                      struct strbuf *out)
{
    const struct snap *s = a->s;
    char *end;
    uint64_t addr = strtoull(arg, &end, 0);
    if (*end || end == arg)
        return cli_usage("--retaining-path needs an address like 0x7f3a2c41b0d0, "
                         "not '%s'",
                         arg);
    uint32_t v = snap_find(s, addr);
    if (v == SNAP_NONE)
        return err_fail(SCRY_E_NOT_FOUND, "no object at 0x%" PRIx64 " in the snapshot", addr);
    struct ha_hop *hops = calloc(MAX_HOPS, sizeof(*hops));
    if (!hops)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    struct heap_path_report r = {.a = a, .addr = addr, .object = v, .hops = hops,
                                 .nhops = ha_path(a, v, hops, MAX_HOPS)};
    if (json)
        heap_path_json(&r, out);
    else
        heap_path_text(&r, out);
    free(hops);
    return 0;
}

/* The dotted name a path spells, if it is one of names only (module, then attributes and
 * identifier keys): sys.modules['app.session'].__dict__['Session'] -> app.session.Session. */
static bool dotted_name(const struct ha_hop *hops, size_t n, struct strbuf *out)
{
    const char *root = hops[0].label;
    const char *p = strstr(root, "sys.modules['");
    if (p != root)
        return false;
    p += strlen("sys.modules['");
    const char *q = strstr(p, "']");
    if (!q || q[2])
        return false;
    sb_add(out, p, (size_t)(q - p));
    for (size_t i = 1; i < n; i++) {
        const char *l = hops[i].label;
        if (strcmp(l, ".__dict__") == 0)
            continue;
        if (l[0] == '.' && l[1] && !strchr(l + 1, '[') && !strchr(l + 1, '.')) {
            sb_adds(out, l);
        } else if (strncmp(l, "['", 2) == 0 && l[strlen(l) - 1] == ']' && l[2] != '<') {
            size_t len = strlen(l);
            if (len < 5 || l[len - 2] != '\'')
                return false;
            sb_addch(out, '.');
            sb_add(out, l + 2, len - 4);
        } else {
            return false;
        }
    }
    return true;
}

/* A class has no code object of its own: it is placed at the first line of its methods (its
 * __dict__'s functions that have a location), marked approximate. */
static bool class_location(const struct snap *s, uint32_t cls, const char **file, uint32_t *line)
{
    bool found = false;
    for (uint32_t e = s->edge_first[cls]; e < s->edge_first[cls + 1]; e++) {
        if (strcmp(snap_string(s, s->edge_label[e]), ".__dict__") != 0)
            continue;
        uint32_t d = s->edge_target[e];
        for (uint32_t f = s->edge_first[d]; f < s->edge_first[d + 1]; f++) {
            const char *ff;
            uint32_t fl;
            if (s->edge_kind[f] != SNAP_EDGE_DICT_VALUE ||
                !snap_location(s, s->edge_target[f], &ff, &fl) || fl == 0)
                continue;
            if (!found || fl < *line) {
                *file = ff;
                *line = fl;
                found = true;
            }
        }
    }
    return found;
}

static bool name_matches(const char *nm, size_t nl, const char *want, size_t wl)
{
    return (nl == wl && strcmp(nm, want) == 0) ||
           (nl > wl && nm[nl - wl - 1] == '.' && strcmp(nm + nl - wl, want) == 0);
}

static int query_locate(const struct heap_analysis *a, const char *want, bool json,
                        struct strbuf *out)
{
    const struct snap *s = a->s;
    struct ha_hop *hops = calloc(MAX_HOPS, sizeof(*hops));
    struct heap_location *found = NULL;
    size_t nfound = 0, cap = 0, wl = strlen(want);
    struct strbuf name = STRBUF_INIT;
    struct arena names = ARENA_INIT; /* the matches' dotted names */
    int err = hops ? 0 : err_fail(SCRY_E_NO_MEMORY, "out of memory");
    /* Functions, code and modules carry a location; classes are placed by their methods. */
    for (uint32_t v = 0; !err && v < a->n; v++) {
        const struct snap_object *o = &s->objects[v];
        struct heap_location l = {.object = v};
        if (!snap_location(s, v, &l.file, &l.line)) {
            if (!(o->flags & SNAP_OBJ_TYPE) && strcmp(snap_string(s, o->type), "builtins.type"))
                continue;
            if (!class_location(s, v, &l.file, &l.line))
                continue;
            l.approximate = true;
        }
        size_t n = ha_path(a, v, hops, MAX_HOPS);
        sb_reset(&name);
        if (n == 0 || !dotted_name(hops, n, &name) ||
            !name_matches(sb_str(&name), name.len, want, wl))
            continue;
        if (!(l.name = arena_strndup(&names, name.buf, name.len)) ||
            grow_array(&found, &cap, nfound + 1, sizeof(*found)) != 0) {
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
            break;
        }
        found[nfound++] = l;
    }
    if (!err && !nfound)
        err = err_fail(SCRY_E_NOT_FOUND,
                       "no function, class or module named '%s' with a recorded location", want);
    if (!err) {
        struct heap_locate_report r = {.a = a, .name = want, .found = found, .nfound = nfound};
        if (json)
            heap_locate_json(&r, out);
        else
            heap_locate_text(&r, out);
    }
    sb_release(&name);
    arena_free(&names);
    free(found);
    free(hops);
    return err;
}

/* The report; --type's with its allocating lines when allocations (docs/allocations.md). */
static int query_report(const char *path, enum cli_query q, const char *arg, bool allocations,
                        bool json, struct strbuf *out)
{
    struct snap s;
    struct heap_analysis a;
    memset(&s, 0, sizeof(s));
    memset(&a, 0, sizeof(a));
    int err = snap_open(path, &s);
    if (!err)
        err = ha_build(&s, &a);
    if (!err)
        err = q == CLI_QUERY_TYPE   ? query_type(&a, arg, allocations, json, out)
              : q == CLI_QUERY_PATH ? query_path(&a, arg, json, out)
                                    : query_locate(&a, arg, json, out);
    ha_free(&a);
    snap_close(&s);
    return err;
}

int cli_query_report(const char *path, enum cli_query q, const char *arg, bool json,
                     struct strbuf *out)
{
    return query_report(path, q, arg, false, json, out);
}

int cmd_query(int argc, char **argv)
{
    bool json = cli_wants_json(argc, argv);
    int mode = 0;
    bool allocations = false;
    const char *arg = NULL, *path = NULL;
    /* The snapshot may come before or after the options. */
    struct opt_parser p;
    opt_begin(&p, OC_QUERY, argc, argv, OP_PERMUTE);
    int c;
    while ((c = opt_next(&p)) > 0) {
        switch (c) {
        case OPT_TYPE:
        case OPT_RETAINING_PATH:
        case OPT_LOCATE:
            if (mode)
                return cli_usage("give one of --type, --retaining-path, --locate");
            mode = c;
            arg = p.arg;
            break;
        case OPT_JSON:
            json = true;
            break;
        case OPT_ALLOCATIONS_FLAG:
            allocations = true;
            break;
        case OPT_HELP:
            return cli_help();
        }
    }
    if (c < 0)
        return c;
    if (argc - optind != 1)
        return cli_usage("give one snapshot file (scry query app.heap --type T)");
    path = argv[optind];
    if (!mode)
        return cli_usage("give one of --type T, --retaining-path ADDR, --locate NAME");
    if (allocations && mode != OPT_TYPE)
        return cli_usage("--allocations goes with --type T");

    struct strbuf out = STRBUF_INIT;
    enum cli_query q = mode == OPT_TYPE ? CLI_QUERY_TYPE
                       : mode == OPT_RETAINING_PATH ? CLI_QUERY_PATH
                                        : CLI_QUERY_LOCATE;
    return cli_finish_report(query_report(path, q, arg, allocations, json, &out), &out, json);
}
