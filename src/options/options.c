/* The option table's engine (options.h): getopt_long's tables built from a command's uses, each
 * value checked against its definition, a command's option help, --config's keys, the agent's
 * settings and MCP schemas. The table itself is option_table.c. */
#include "options/options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/error.h"

/* getopt_long's value of a long option is this plus its index in the parser's table, above
 * every character a short option can be. */
#define OPT_VAL_BASE 1000

const struct opt_def *opt_def_of(enum opt_id id)
{
    for (size_t i = 0; i < opt_ndefs; i++)
        if (opt_defs[i].id == id)
            return &opt_defs[i];
    return NULL;
}

static bool takes_value(const struct opt_def *d)
{
    return d->type != OT_FLAG;
}

/* Whether the use gives its option's short form (a command may leave it out: top's -s is
 * --sort, not --subprocesses). */
static char use_short(const struct opt_use *u, const struct opt_def *d)
{
    return u->no_short ? 0 : d->short_name;
}

void opt_begin(struct opt_parser *p, unsigned cmd, int argc, char **argv, unsigned mode)
{
    memset(p, 0, sizeof(*p));
    p->cmd = cmd;
    p->argc = argc;
    p->argv = argv;
    size_t ns = 0;
    if (mode & OP_STOP_AT_OPERAND)
        p->shortopts[ns++] = '+';
    p->shortopts[ns++] = ':'; /* a missing value is ':', not '?' */
    for (size_t i = 0; i < opt_nuses; i++) {
        const struct opt_use *u = &opt_uses[i];
        const struct opt_def *d = opt_def_of(u->id);
        if (!(u->cmds & cmd) || !d || p->n == OPT_MAX_PER_COMMAND)
            continue;
        bool seen = false;
        for (size_t j = 0; j < p->n && !seen; j++)
            seen = p->by_val[j] == d;
        if (seen)
            continue;
        p->by_val[p->n] = d;
        p->shorts[p->n] = use_short(u, d);
        if (d->name)
            p->longopts[p->n] = (struct option){
                d->name,
                takes_value(d) ? required_argument : no_argument,
                NULL, OPT_VAL_BASE + (int)p->n};
        else
            p->longopts[p->n] = (struct option){"", no_argument, NULL, 0}; /* never matched */
        char s = p->shorts[p->n];
        if (s && ns + 3 < sizeof(p->shortopts)) {
            p->shortopts[ns++] = s;
            if (takes_value(d))
                p->shortopts[ns++] = ':';
        }
        p->n++;
    }
    /* getopt_long stops at the first entry without a name: those of short-only options go. */
    size_t k = 0;
    for (size_t j = 0; j < p->n; j++)
        if (p->longopts[j].name[0])
            p->longopts[k++] = p->longopts[j];
    p->longopts[k] = (struct option){NULL, 0, NULL, 0};
    p->shortopts[ns] = '\0';
    opterr = 0;
    optind = 0; /* glibc's full reset: a parse in another mode (OP_STOP_AT_OPERAND) before this
                 * one in the process (run's --config pass, the tests) leaves nothing behind */
}

/* The option's name as the usage errors spell it. */
static void spelled(const struct opt_def *d, char *buf, size_t n)
{
    if (d->name)
        snprintf(buf, n, "--%s", d->name);
    else
        snprintf(buf, n, "-%c", d->short_name);
}

int opt_bad_value(const struct opt_parser *p)
{
    char name[80];
    spelled(p->def, name, sizeof(name));
    const char *needs = p->def->needs ? p->def->needs : "a value";
    if (!p->arg || !*p->arg)
        return cli_usage("%s needs %s", name, needs);
    return cli_usage("%s needs %s, not '%s'", name, needs, p->arg);
}

/* Checks p->arg against p->def, filling in num and ival. */
static int check_value(struct opt_parser *p)
{
    const struct opt_def *d = p->def;
    const char *s = p->arg;
    char *end;
    switch (d->type) {
    case OT_FLAG:
    case OT_TEXT:
        return 0;
    case OT_NAME:
        return s && *s ? 0 : opt_bad_value(p);
    case OT_PID: {
        int pid;
        if (!s || !cli_parse_pid(s, &pid))
            return opt_bad_value(p);
        p->ival = pid;
        p->num = pid;
        return 0;
    }
    case OT_INT: {
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno || end == s || *end || (double)v < d->min || (double)v > d->max)
            return opt_bad_value(p);
        p->ival = v;
        p->num = (double)v;
        return 0;
    }
    case OT_NUMBER: {
        errno = 0;
        double v = strtod(s, &end);
        if (errno || end == s || *end || !isfinite(v) || v < d->min || v > d->max ||
            ((d->flags & OF_ABOVE_MIN) && v == d->min))
            return opt_bad_value(p);
        p->num = v;
        p->ival = (long long)v;
        return 0;
    }
    }
    return 0;
}

/* getopt's '?' for a long option that is the start of several (--alloc: --allocations and
 * --allocation-sampling-window) says which it could be; -SCRY_E_USAGE, or 0 when it is not
 * that case. */
static int ambiguous(const struct opt_parser *p)
{
    const char *arg = optind > 0 && optind <= p->argc ? p->argv[optind - 1] : NULL;
    if (!arg || strncmp(arg, "--", 2) != 0)
        return 0;
    size_t n = strcspn(arg + 2, "=");
    char names[512] = "";
    size_t len = 0;
    int matches = 0;
    for (const struct option *o = p->longopts; o->name; o++) {
        if (strncmp(o->name, arg + 2, n) != 0)
            continue;
        if (strlen(o->name) == n)
            return 0; /* an exact name is not ambiguous */
        int w = snprintf(names + len, sizeof(names) - len, "%s--%s", matches ? ", " : "",
                         o->name);
        if (w > 0 && (size_t)w < sizeof(names) - len)
            len += (size_t)w;
        matches++;
    }
    if (matches < 2)
        return 0;
    return cli_usage("option '%.*s' is ambiguous: it could be %s", (int)(n + 2), arg, names);
}

int opt_next(struct opt_parser *p)
{
    p->def = NULL;
    p->arg = NULL;
    p->num = 0;
    p->ival = 0;
    int c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, NULL);
    if (c == -1)
        return OPT_END;
    if (c == '?') {
        int err = ambiguous(p);
        if (err)
            return err;
    }
    if (c == ':' || c == '?')
        return cli_option_error(c, p->argv);
    if (c >= OPT_VAL_BASE && c < OPT_VAL_BASE + (int)p->n) {
        p->def = p->by_val[c - OPT_VAL_BASE];
    } else {
        for (size_t j = 0; j < p->n && !p->def; j++)
            if (p->shorts[j] == c)
                p->def = p->by_val[j];
    }
    if (!p->def)
        return cli_option_error('?', p->argv);
    p->arg = optarg;
    int err = check_value(p);
    return err ? err : (int)p->def->id;
}

int opt_operand(const struct opt_parser *p)
{
    (void)p;
    return optind > 0 ? optind : 1; /* 0 until the first opt_next: nothing read yet */
}

/* ---- help ---------------------------------------------------------------------------------- */

static void add_spaces(struct strbuf *out, int n)
{
    for (int i = 0; i < n; i++)
        sb_addch(out, ' ');
}

void opt_help(unsigned cmd, int column, struct strbuf *out)
{
    for (size_t i = 0; i < opt_nuses; i++) {
        const struct opt_use *u = &opt_uses[i];
        const struct opt_def *d = opt_def_of(u->id);
        if (!(u->cmds & cmd) || !u->help || !d)
            continue;
        size_t start = out->len;
        sb_adds(out, "  ");
        if (u->label) {
            sb_adds(out, u->label);
        } else {
            char s = use_short(u, d);
            if (s && d->name)
                sb_addf(out, "-%c, --%s", s, d->name);
            else if (s)
                sb_addf(out, "-%c", s);
            else
                sb_addf(out, "    --%s", d->name);
            if (d->value_name)
                sb_addf(out, " %s", d->value_name);
        }
        int width = (int)(out->len - start);
        if (width < column) {
            add_spaces(out, column - width);
        } else {
            sb_addch(out, '\n');
            add_spaces(out, column);
        }
        for (const char *h = u->help; *h;) {
            const char *nl = strchr(h, '\n');
            size_t n = nl ? (size_t)(nl - h) : strlen(h);
            sb_add(out, h, n);
            sb_addch(out, '\n');
            if (!nl)
                break;
            h = nl + 1;
            add_spaces(out, column);
        }
    }
}

/* ---- --config, the agent, MCP -------------------------------------------------------------- */

void opt_config_keys(unsigned cmd, struct opt_config_keys *k)
{
    struct opt_parser p;
    char *argv[] = {"", NULL};
    opt_begin(&p, cmd, 1, argv, 0);
    memcpy(k->longopts, p.longopts, sizeof(k->longopts));
    size_t nr = 0, ns = 0;
    for (size_t j = 0; j < p.n; j++) {
        const struct opt_def *d = p.by_val[j];
        if (!d->name)
            continue;
        if (d->flags & OF_REPEAT)
            k->repeatable[nr++] = d->name;
        if (d->flags & OF_NO_CONFIG)
            k->skip[ns++] = d->name;
    }
    k->repeatable[nr] = NULL;
    k->skip[ns] = NULL;
}

const char *opt_agent_env(enum opt_id id)
{
    const struct opt_def *d = opt_def_of(id);
    return d ? d->agent_env : NULL;
}

/* The help of id's first use, its lines joined by spaces. */
static void first_help(enum opt_id id, struct strbuf *sb)
{
    for (size_t i = 0; i < opt_nuses; i++) {
        if (opt_uses[i].id != id || !opt_uses[i].help)
            continue;
        for (const char *h = opt_uses[i].help; *h; h++) {
            if (*h != '\n') {
                sb_addch(sb, *h);
                continue;
            }
            sb_addch(sb, ' ');
            while (h[1] == ' ')
                h++;
        }
        return;
    }
}

json_t *opt_schema(enum opt_id id, const char *description)
{
    const struct opt_def *d = opt_def_of(id);
    if (!d)
        return NULL;
    json_t *s = json_object();
    if (!s)
        return NULL;
    switch (d->type) {
    case OT_FLAG:
        json_object_set_new(s, "type", json_string("boolean"));
        if (d->dflt)
            json_object_set_new(s, "default", json_boolean(strcmp(d->dflt, "true") == 0));
        break;
    case OT_PID:
        json_object_set_new(s, "type", json_string("integer"));
        json_object_set_new(s, "minimum", json_integer(1));
        json_object_set_new(s, "maximum", json_integer(4194304)); /* Linux's largest pid_max */
        break;
    case OT_INT:
        json_object_set_new(s, "type", json_string("integer"));
        json_object_set_new(s, "minimum", json_integer((json_int_t)d->min));
        json_object_set_new(s, "maximum", json_integer((json_int_t)d->max));
        if (d->dflt)
            json_object_set_new(s, "default", json_integer(strtoll(d->dflt, NULL, 10)));
        break;
    case OT_NUMBER:
        json_object_set_new(s, "type", json_string("number"));
        json_object_set_new(s, d->flags & OF_ABOVE_MIN ? "exclusiveMinimum" : "minimum",
                            json_real(d->min));
        json_object_set_new(s, "maximum", json_real(d->max));
        if (d->dflt)
            json_object_set_new(s, "default", json_real(strtod(d->dflt, NULL)));
        break;
    case OT_TEXT:
    case OT_NAME:
        json_object_set_new(s, "type", json_string("string"));
        if (d->type == OT_NAME)
            json_object_set_new(s, "minLength", json_integer(1));
        json_object_set_new(s, "maxLength", json_integer(4096));
        if (d->dflt)
            json_object_set_new(s, "default", json_string(d->dflt));
        break;
    }
    struct strbuf sb = STRBUF_INIT;
    if (!description)
        first_help(id, &sb);
    json_object_set_new(s, "description", json_string(description ? description : sb_str(&sb)));
    sb_release(&sb);
    return s;
}
