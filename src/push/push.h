/* `scry run --push URL`: continuous profiling into a Pyroscope server (docs/export-formats.md).
 * The launcher hands each interval's pprof profile to a sender thread through a bounded queue;
 * the thread posts it to the server's /ingest with libcurl, retrying with back-off, and drops
 * what it cannot send (counted), so that a server that is down or slow never holds up the
 * program or scry. */
#ifndef SCRY_PUSH_PUSH_H
#define SCRY_PUSH_PUSH_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/profile_doc.h"
#include "common/strbuf.h"

struct profile;
struct profile_json_opts;

#define PUSH_QUEUE_SLOTS 8     /* profiles waiting to be sent; the oldest is dropped beyond */
#define PUSH_ATTEMPTS 4        /* tries per profile (back-off 0.5 s, 1 s, 2 s between them) while
                                * the server cannot be reached or answers 408, 429 or 5xx */
#define PUSH_CONNECT_MS 2000   /* connecting to the server */
#define PUSH_REQUEST_MS 10000  /* one whole request */
#define PUSH_FLUSH_SEC 3.0     /* after the program ended: the longest scry waits for sends */

struct push_cfg {
    const char *url;      /* the server: http(s)://host[:port][/prefix] */
    double interval_sec;  /* --push-interval */
    const char *service;  /* --service-name (NULL: the program's name) */
    const char **tags;    /* --tag k=v, checked */
    size_t ntags;
    const char *tenant;   /* --push-tenant: sent as X-Scope-OrgID (NULL: none) */
    bool extras;          /* an option that goes with --push was given */
};

/* The options of --push, shared by scry run and scry record (their definitions and help are the
 * option table's, cli/option_table.c): one option's value into cfg (cfg->tags has room for one
 * per argument; num: --push-interval's value, checked by the table): 0, 1 when id is not one of
 * them, or a usage error (-SCRY_E_USAGE, recorded with cli_usage). */
int push_take_option(int id, const char *arg, double num, struct push_cfg *cfg);
/* After the options: --push-interval, --tag, --service-name or --push-tenant without --push is
 * a usage error. */
int push_check_options(const struct push_cfg *cfg);

/* Basic authentication from the environment (never the command line, never shown): both set,
 * each request carries them. */
#define PUSH_AUTH_USER_ENV "PYROSCOPE_BASIC_AUTH_USER"
#define PUSH_AUTH_PASSWORD_ENV "PYROSCOPE_BASIC_AUTH_PASSWORD"

/* Usage errors (-SCRY_E_USAGE, recorded with cli_usage) for a URL that is not
 * http(s)://host[:port][/path] or has a query, a tag that is not key=value with a label name as
 * key, and a service name with characters Pyroscope's application names cannot have (other than
 * letters, digits and _ . -). */
int push_check_url(const char *url);
/* What url is (no message recorded): http(s)://host[:port][/path] (OK), that with a query or a
 * fragment (QUERY), or anything else (BAD); *user, when user is not NULL, says whether it holds
 * credentials. Also for the language-model providers' --base-url (llm/llm_providers.c). */
enum push_url_kind { PUSH_URL_OK, PUSH_URL_BAD, PUSH_URL_QUERY, PUSH_URL_NO_MEMORY };
enum push_url_kind push_url_kind(const char *url, bool *user);
int push_check_tag(const char *tag);
int push_check_service(const char *name);
/* A tenant id (Grafana Mimir/Pyroscope's rule): 1 to 150 letters, digits and ! - _ . * ' ( ),
 * neither "." nor "..". */
int push_check_tenant(const char *id);
/* A character of a tag's value: letters, digits and _ . : / @ + - (a service name has only
 * letters, digits and _ . -: Pyroscope's application names). */
bool push_name_char(char c);

struct pusher;
/* Starts the sender thread. service is the application name to use; rate_sec the CPU sampling
 * interval (sampleRate). */
int push_start(struct pusher **out, const struct push_cfg *cfg, const char *service,
               double rate_sec);
/* Queues one interval's gzipped pprof (taken: body is reset), covering [from, until) in Unix
 * seconds; never blocks on the network. */
void push_submit(struct pusher *ps, struct strbuf *body, double from, double until);
/* Counts an interval that could not be made into a profile as dropped (why: for the report). */
void push_count_dropped(struct pusher *ps, const char *why);
/* The application name made of a program's name (a script's path, a module): its file name
 * without .py, characters a name cannot have made '_' ("python" when nothing is left). */
void push_default_service(const char *name, char *out, size_t n);

/* The deltas of a run's pushes: the whole profile at the previous push. */
struct push_delta {
    struct pdoc prev;
    bool have_prev;
    double prev_until;
};
/* Queues what p (every process so far, finished; nothing when it has no part) gained since the
 * previous call, as one interval's pprof (written with jo) from the previous call's end (the
 * first: the profile's start) to the profile's end. The one path of run --push and record
 * --push; a profile that cannot be made is counted dropped. */
void push_profile(struct pusher *ps, struct push_delta *st, const struct profile *p,
                  const struct profile_json_opts *jo);
void push_delta_free(struct push_delta *st);

/* Waits at most PUSH_FLUSH_SEC for what is queued, stops the thread, prints the one-line
 * report on stderr (when report is set: not when the program could not even start), frees
 * everything. NULL does nothing. */
void push_end(struct pusher *ps, bool report);

#endif
