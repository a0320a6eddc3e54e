/* The validator of `scry mcp`'s tool arguments (mcp_schema.h). */
#include "mcp/mcp_schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *type_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    default:
        return "null";
    }
}

static bool type_ok(const char *want, const json_t *v)
{
    if (strcmp(want, "number") == 0)
        return json_is_number(v);
    if (strcmp(want, "integer") == 0)
        return json_is_integer(v);
    return strcmp(want, type_of(v)) == 0;
}

/* The name of what is checked, for the message: "argument 'x'" or "the arguments". */
static void name(struct strbuf *why, const char *path)
{
    if (*path)
        sb_addf(why, "argument '%s'", path);
    else
        sb_adds(why, "the arguments");
}

static bool fail(struct strbuf *why, const char *path, const char *fmt, const char *detail)
{
    name(why, path);
    sb_addf(why, fmt, detail);
    return false;
}

static bool check(const json_t *schema, const json_t *v, const char *path, struct strbuf *why);

static bool check_object(const json_t *schema, const json_t *v, const char *path,
                         struct strbuf *why)
{
    const json_t *props = json_object_get(schema, "properties");
    const json_t *req = json_object_get(schema, "required");
    const json_t *extra = json_object_get(schema, "additionalProperties");
    size_t i;
    const json_t *r;
    json_array_foreach(req, i, r) {
        if (json_is_string(r) && !json_object_get(v, json_string_value(r))) {
            struct strbuf p = STRBUF_INIT;
            sb_addf(&p, "%s%s%s", path, *path ? "." : "", json_string_value(r));
            bool ok = fail(why, sb_str(&p), " is required%s", "");
            sb_release(&p);
            return ok;
        }
    }
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)v, key, val) {
        struct strbuf p = STRBUF_INIT;
        sb_addf(&p, "%s%s%s", path, *path ? "." : "", key);
        const json_t *sub = json_object_get(props, key);
        bool ok = true;
        if (sub)
            ok = check(sub, val, sb_str(&p), why);
        else if (json_is_false(extra))
            ok = fail(why, sb_str(&p), " is not an argument of this tool%s", "");
        sb_release(&p);
        if (!ok)
            return false;
    }
    return true;
}

static bool check_bounds(const json_t *schema, const json_t *v, const char *path,
                         struct strbuf *why)
{
    const json_t *lo = json_object_get(schema, "minimum"), *hi = json_object_get(schema, "maximum");
    double x = json_number_value(v);
    char num[64];
    if (json_is_number(lo) && x < json_number_value(lo)) {
        snprintf(num, sizeof(num), "%.17g", json_number_value(lo));
        return fail(why, path, " must be at least %s", num);
    }
    if (json_is_number(hi) && x > json_number_value(hi)) {
        snprintf(num, sizeof(num), "%.17g", json_number_value(hi));
        return fail(why, path, " must be at most %s", num);
    }
    return true;
}

static bool check_length(const json_t *schema, size_t n, const char *lo_key, const char *hi_key,
                         const char *unit, const char *path, struct strbuf *why)
{
    const json_t *lo = json_object_get(schema, lo_key), *hi = json_object_get(schema, hi_key);
    char msg[96];
    if (json_is_integer(lo) && (json_int_t)n < json_integer_value(lo)) {
        snprintf(msg, sizeof(msg), "at least %lld %s", (long long)json_integer_value(lo), unit);
        return fail(why, path, " must have %s", msg);
    }
    if (json_is_integer(hi) && (json_int_t)n > json_integer_value(hi)) {
        snprintf(msg, sizeof(msg), "at most %lld %s", (long long)json_integer_value(hi), unit);
        return fail(why, path, " must have %s", msg);
    }
    return true;
}

static bool check(const json_t *schema, const json_t *v, const char *path, struct strbuf *why)
{
    const char *type = json_string_value(json_object_get(schema, "type"));
    if (type && !type_ok(type, v)) {
        name(why, path);
        sb_addf(why, " must be %s %s, not %s", strchr("aeiou", type[0]) ? "an" : "a", type,
                type_of(v));
        return false;
    }
    const json_t *en = json_object_get(schema, "enum");
    if (json_is_array(en)) {
        size_t i;
        const json_t *e;
        bool found = false;
        json_array_foreach(en, i, e) found = found || json_equal((json_t *)e, (json_t *)v);
        if (!found) {
            char *list = json_dumps(en, JSON_COMPACT);
            bool ok = fail(why, path, " must be one of %s", list ? list : "the listed values");
            free(list);
            return ok;
        }
    }
    if (json_is_number(v))
        return check_bounds(schema, v, path, why);
    if (json_is_string(v))
        return check_length(schema, json_string_length(v), "minLength", "maxLength",
                            "characters", path, why);
    if (json_is_object(v))
        return check_object(schema, v, path, why);
    if (json_is_array(v)) {
        if (!check_length(schema, json_array_size(v), "minItems", "maxItems", "items", path,
                          why))
            return false;
        const json_t *items = json_object_get(schema, "items");
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e) {
            if (!items)
                break;
            struct strbuf p = STRBUF_INIT;
            sb_addf(&p, "%s[%zu]", path, i);
            bool ok = check(items, e, sb_str(&p), why);
            sb_release(&p);
            if (!ok)
                return false;
        }
    }
    return true;
}

bool mcp_schema_check(const json_t *schema, const json_t *value, struct strbuf *why)
{
    return check(schema, value, "", why);
}
