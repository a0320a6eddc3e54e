/* `scry run --config FILE`: a YAML mapping of `scry run`'s long option names to values, turned
 * into the command-line arguments it stands for, checked against the same getopt table as the
 * command line (so every option the table has works here, with no second list). The arguments go
 * before the command line's, which therefore wins. Parsed with libyaml's document loader, after a
 * first pass over libyaml's events that bounds the file's shape (depth, nodes, no aliases): the
 * loader and the scanner under it take time that grows faster than the file with nesting (a
 * 1 MiB file of `[[[[` took half an hour), and a config may come from an untrusted repository.
 * Every error names the file, the line and the key. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "cli/cli.h"
#include "common/error.h"
#include "common/grow.h"
#include "platform/infile.h"
#include "run/run_config.h"

/* A config is a few lines; anything this big is not one. */
#define CONFIG_MAX_BYTES ((uint64_t)1 << 20)
#define CONFIG_MAX_NAME 64
/* A config is a mapping of options to scalars or lists of scalars: depth 2, some tens of nodes.
 * The bounds leave room for any config and stop a hostile one after a few hundred events. */
#define CONFIG_MAX_DEPTH 64
#define CONFIG_MAX_NODES 10000
#define CONFIG_STR_(x) #x
#define CONFIG_STR(x) CONFIG_STR_(x)

static int cfg_error(const struct cli_config *cfg, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int cfg_error(const struct cli_config *cfg, size_t line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return cli_usage("%s:%zu: %s", cfg->path, line, msg);
}

static int syntax_error(const struct cli_config *cfg, const yaml_parser_t *p)
{
    return cfg_error(cfg, p->problem_mark.line + 1, "not valid YAML: %s%s%s",
                     p->problem ? p->problem : "cannot be parsed", p->context ? ", " : "",
                     p->context ? p->context : "");
}

static int shape_error(const struct cli_config *cfg, const yaml_event_t *ev, const char *what)
{
    return err_fail(SCRY_E_BAD_CONFIG, "%s:%zu: %s", cfg->path, ev->start_mark.line + 1, what);
}

/* The first pass: libyaml's events, counted as they arrive, so that parsing stops at the bound
 * before the scanner reads further or the loader builds anything. Aliases are refused: a config
 * has no use for them, and each one costs the loader a search of every anchor. */
static int check_shape(const struct cli_config *cfg, const char *data, size_t len)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    size_t depth = 0, nodes = 0;
    int err = 0;
    if (!yaml_parser_initialize(&parser))
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    for (;;) {
        if (!yaml_parser_parse(&parser, &ev)) {
            err = syntax_error(cfg, &parser);
            break;
        }
        yaml_event_type_t type = ev.type;
        if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
            if (++depth > CONFIG_MAX_DEPTH)
                err = shape_error(cfg, &ev, "nested deeper than " CONFIG_STR(CONFIG_MAX_DEPTH)
                                            " levels: a config is options and their values");
        } else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) {
            depth--;
        } else if (type == YAML_ALIAS_EVENT) {
            err = shape_error(cfg, &ev, "an alias (*name): a config does not use anchors and "
                                        "aliases; write the value out");
        }
        if (!err && (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT ||
                     type == YAML_SCALAR_EVENT) &&
            ++nodes > CONFIG_MAX_NODES)
            err = shape_error(cfg, &ev, "more than " CONFIG_STR(CONFIG_MAX_NODES)
                                        " values: a config is options and their values");
        yaml_event_delete(&ev);
        if (err || type == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&parser);
    return err;
}

static int add_arg(struct cli_config *cfg, size_t line, const char *name, const char *value)
{
    size_t cap = cfg->cap;
    if (grow_array(&cfg->args, &cap, cfg->nargs + 1, sizeof(*cfg->args)) != 0 ||
        grow_array(&cfg->lines, &cfg->cap, cfg->nargs + 1, sizeof(*cfg->lines)) != 0)
        return -SCRY_E_NO_MEMORY;
    size_t n = strlen(name) + (value ? strlen(value) : 0) + 4;
    char *a = malloc(n);
    if (!a)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if (value)
        snprintf(a, n, "--%s=%s", name, value);
    else
        snprintf(a, n, "--%s", name);
    cfg->args[cfg->nargs] = a;
    cfg->lines[cfg->nargs++] = line;
    return 0;
}

static const struct option *find_option(const struct option *opts, const char *name)
{
    for (const struct option *o = opts; o->name; o++)
        if (strcmp(o->name, name) == 0)
            return o;
    return NULL;
}

static bool listed(const char *const *names, const char *name)
{
    for (; names && *names; names++)
        if (strcmp(*names, name) == 0)
            return true;
    return false;
}

static size_t line_of(const yaml_node_t *n)
{
    return n->start_mark.line + 1;
}

static const char *scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* YAML 1.2's booleans, as plain (unquoted) scalars only: "true" in quotes is a string. */
static int boolean(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return -1;
    static const char *const t[] = {"true", "True", "TRUE", NULL}, *const f[] = {"false", "False",
                                                                                "FALSE", NULL};
    return listed(t, scalar(n)) ? 1 : listed(f, scalar(n)) ? 0 : -1;
}

/* null, ~ and an empty plain value. */
static bool is_null(const yaml_node_t *n)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           listed(nulls, scalar(n));
}

/* One value of an option that takes one: a scalar that is neither null nor a boolean. */
static int add_value(struct cli_config *cfg, const char *name, const yaml_node_t *v, size_t line)
{
    if (v->type != YAML_SCALAR_NODE || is_null(v) || boolean(v) >= 0)
        return cfg_error(cfg, line, "%s needs a value (such as %s: VALUE), not %s", name, name,
                         v->type == YAML_MAPPING_NODE    ? "a mapping"
                         : v->type == YAML_SEQUENCE_NODE ? "a list"
                         : is_null(v)                    ? "nothing"
                                                         : "true or false");
    return add_arg(cfg, line, name, scalar(v));
}

static int add_pair(struct cli_config *cfg, yaml_document_t *doc, const yaml_node_pair_t *pair,
                    const struct option *opts, const char *const *repeatable,
                    const char *const *skip, char (*seen)[CONFIG_MAX_NAME], size_t *lines)
{
    yaml_node_t *k = yaml_document_get_node(doc, pair->key);
    yaml_node_t *v = yaml_document_get_node(doc, pair->value);
    size_t line = line_of(k);
    if (k->type != YAML_SCALAR_NODE)
        return cfg_error(cfg, line, "a key is an option's long name, not a list or a mapping");
    char name[CONFIG_MAX_NAME];
    if (snprintf(name, sizeof(name), "%s", scalar(k)) >= (int)sizeof(name) || !name[0])
        return cfg_error(cfg, line, "'%.64s' is not an option of scry run", scalar(k));
    for (char *c = name; *c; c++)
        if (*c == '_')
            *c = '-';
    const struct option *o = find_option(opts, name);
    if (!o || listed(skip, name))
        return cfg_error(cfg, line, "'%s' is not an option of scry run in a config file "
                                    "(the keys are scry run's long options; see scry run --help)",
                         scalar(k));
    for (size_t j = 0; lines[j]; j++)
        if (strcmp(seen[j], name) == 0)
            return cfg_error(cfg, line, "%s is given twice (first on line %zu)", name, lines[j]);
    size_t n = 0;
    while (lines[n])
        n++;
    snprintf(seen[n], CONFIG_MAX_NAME, "%s", name);
    lines[n] = line;

    if (o->has_arg == no_argument) {
        int b = boolean(v);
        if (b < 0)
            return cfg_error(cfg, line, "%s is a flag: give true or false, not %s%.64s%s", name,
                             v->type == YAML_SCALAR_NODE ? "'" : "a list or a mapping",
                             v->type == YAML_SCALAR_NODE ? scalar(v) : "",
                             v->type == YAML_SCALAR_NODE ? "'" : "");
        if (b)
            return add_arg(cfg, line, name, NULL);
        /* false: the flag's twin, --no-NAME (or NAME for a no-NAME flag). */
        char twin[CONFIG_MAX_NAME + 3];
        if (strncmp(name, "no-", 3) == 0)
            snprintf(twin, sizeof(twin), "%s", name + 3);
        else
            snprintf(twin, sizeof(twin), "no-%s", name);
        const struct option *t = find_option(opts, twin);
        if (!t || t->has_arg != no_argument)
            return cfg_error(cfg, line,
                             "%s: false has no meaning: scry run has no --%s; leave the key out "
                             "to keep the default",
                             name, twin);
        return add_arg(cfg, line, twin, NULL);
    }
    if (v->type != YAML_SEQUENCE_NODE)
        return add_value(cfg, name, v, line);
    if (!listed(repeatable, name))
        return cfg_error(cfg, line, "%s takes one value, not a list", name);
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *e = yaml_document_get_node(doc, *it);
        int err = add_value(cfg, name, e, line_of(e));
        if (err)
            return err;
    }
    return 0;
}

int cli_config_load(const char *path, const struct option *opts, const char *const *repeatable,
                    const char *const *skip, struct cli_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    char *data = NULL;
    size_t len = 0;
    yaml_parser_t parser;
    yaml_document_t doc;
    bool have_parser = false, have_doc = false;
    char (*seen)[CONFIG_MAX_NAME] = NULL;
    size_t *lines = NULL;
    int err;
    cfg->path = strdup(path);
    if (!cfg->path) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
        goto out;
    }
    if ((err = infile_read_all(path, "config file", CONFIG_MAX_BYTES, &data, &len)) != 0)
        goto out;
    if ((err = check_shape(cfg, data, len)) != 0)
        goto out;
    if (!yaml_parser_initialize(&parser)) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
        goto out;
    }
    have_parser = true;
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    if (!yaml_parser_load(&parser, &doc)) {
        err = syntax_error(cfg, &parser);
        goto out;
    }
    have_doc = true;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || is_null(root))
        goto out; /* an empty file: no options */
    if (root->type != YAML_MAPPING_NODE) {
        err = cfg_error(cfg, line_of(root),
                        "a config is a mapping of scry run's option names to values "
                        "(such as cpu-sampling-rate: 0.01), not %s",
                        root->type == YAML_SEQUENCE_NODE ? "a list" : "a single value");
        goto out;
    }
    size_t npairs = (size_t)(root->data.mapping.pairs.top - root->data.mapping.pairs.start);
    seen = calloc(npairs + 1, sizeof(*seen));
    lines = calloc(npairs + 1, sizeof(*lines));
    if (!seen || !lines) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
        goto out;
    }
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++)
        if ((err = add_pair(cfg, &doc, p, opts, repeatable, skip, seen, lines)) != 0)
            goto out;
    /* One document: a second one would go unread. */
    yaml_document_t next;
    if (!yaml_parser_load(&parser, &next)) {
        err = syntax_error(cfg, &parser);
        goto out;
    }
    yaml_node_t *second = yaml_document_get_root_node(&next);
    size_t second_line = second ? line_of(second) : 0;
    yaml_document_delete(&next);
    if (second)
        err = cfg_error(cfg, second_line, "a config is one YAML document; this is a second one");
out:
    if (have_doc)
        yaml_document_delete(&doc);
    if (have_parser)
        yaml_parser_delete(&parser);
    free(data);
    free(seen);
    free(lines);
    if (err)
        cli_config_free(cfg);
    return err;
}

void cli_config_blame(const struct cli_config *cfg, size_t i)
{
    if (i >= cfg->nargs || err_last_code() != SCRY_E_USAGE)
        return;
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s", err_last_message());
    cli_usage("%s:%zu: %s", cfg->path, cfg->lines[i], msg);
}

void cli_config_free(struct cli_config *cfg)
{
    for (size_t i = 0; i < cfg->nargs; i++)
        free(cfg->args[i]);
    free(cfg->args);
    free(cfg->lines);
    free(cfg->path);
    memset(cfg, 0, sizeof(*cfg));
}
