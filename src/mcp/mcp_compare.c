/* compare_profiles' answer (mcp_compare.h): scry compare's JSON report reduced to what changed.
 * The report gives every metric of every row with its before, after, delta, sigma, interval,
 * z and pct (7 KB for 4 functions); an agent asked "what changed" needs the significant
 * changes alone, one row each, and the count of what did not change. */
#include "mcp/mcp_compare.h"

#include <math.h>
#include <string.h>

static double round_to(double x, double unit)
{
    return round(x / unit) * unit;
}

static json_t *number(const json_t *v, double unit)
{
    if (!json_is_number(v))
        return json_null();
    return json_real(round_to(json_number_value(v), unit));
}

/* One row per significant metric of a report row: where, which metric, before -> after. */
static void add_changes(json_t *out, const json_t *row, double z_sig, bool function)
{
    const char *key;
    const json_t *m;
    bool any = false;
    const char *main_kind = json_string_value(json_object_get(row, "main"));
    for (int pass = 0; pass < 2 && !any; pass++) {
        json_object_foreach((json_t *)row, key, m) {
            const json_t *z = json_object_get(m, "z");
            if (!json_is_object(m) || !json_is_number(z))
                continue;
            /* The second pass (no metric reached z_sig, the row's score did): its main kind. */
            bool take = pass == 0 ? fabs(json_number_value(z)) >= z_sig
                                  : main_kind && strncmp(key, main_kind, strlen(main_kind)) == 0;
            if (!take)
                continue;
            double unit = strstr(key, "_bytes") ? 1 : 1e-6;
            const char *at = function ? "first_line" : "line";
            json_t *r = json_pack(
                "{s:O,s:O,s:O,s:s,s:o,s:o,s:o,s:o,s:o}", "file", json_object_get(row, "file"),
                "function", json_object_get(row, "function"), at, json_object_get(row, at),
                "metric", key, "before", number(json_object_get(m, "before"), unit), "after",
                number(json_object_get(m, "after"), unit), "delta",
                number(json_object_get(m, "delta"), unit), "pct",
                number(json_object_get(m, "pct"), 0.1), "z", number(z, 0.01));
            if (r)
                json_array_append_new(out, r);
            any = true;
        }
    }
}

json_t *mcp_compare_changes(const json_t *report)
{
    const json_t *zs = json_object_get(report, "z_significant");
    double z_sig = json_is_number(zs) ? json_number_value(zs) : 3;
    json_t *doc = json_object();
    static const char *const keep[] = {"before", "after", "normalized", "scale", "z_significant",
                                       "significant", "regressed"};
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
        json_t *v = json_object_get(report, keep[i]);
        if (v && !(strcmp(keep[i], "scale") == 0 &&
                   !json_is_true(json_object_get(report, "normalized"))))
            json_object_set(doc, keep[i], v);
    }
    json_t *unchanged = json_object();
    for (int g = 0; g < 2; g++) {
        const char *name = g == 0 ? "functions" : "lines";
        json_t *out = json_array();
        size_t same = 0, i;
        const json_t *row;
        json_array_foreach(json_object_get(report, name), i, row) {
            if (json_is_true(json_object_get(row, "significant")))
                add_changes(out, row, z_sig, g == 0);
            else
                same++;
        }
        json_object_set_new(doc, name, out);
        json_object_set_new(unchanged, name, json_integer((json_int_t)same));
    }
    json_object_set_new(doc, "unchanged", unchanged);
    return doc;
}
