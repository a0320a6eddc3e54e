/* The language-model providers behind `scry optimize` and the served page's "propose" action
 * (docs/optimize.md): one table saying, for each wire format, how the request's URL, headers and
 * JSON body are made and how the answer's text is found. Keys come from the environment (or,
 * for the served page, from the page); they go into a header only, never into a URL, a body, a
 * file, a log or a message. */
#ifndef SCRY_LLM_LLM_PROVIDERS_H
#define SCRY_LLM_LLM_PROVIDERS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"

struct llm_provider;

/* What a proposal is sent with. NULL fields take the provider's defaults. */
struct llm_config {
    const struct llm_provider *provider;
    const char *model;       /* openai, anthropic, gemini, bedrock (modelId); azure: unused */
    const char *base_url;    /* replaces the provider's endpoint (scheme://host[:port][/path]) */
    const char *deployment;  /* azure */
    const char *api_version; /* azure */
    const char *region;      /* bedrock */
    const char *key_env;     /* the variable holding the key instead of the provider's own */
    const char *key;         /* a key given by the served page (not for bedrock); NULL: env */
    /* The served page named an endpoint that scry's command line did not: the environment's
     * key (and AWS credentials) must not go there; only a key typed in the page does. */
    bool env_key_refused;
    double timeout_sec;      /* the whole request; 0: 120 s */
};

/* The provider named name (openai, anthropic, azure, gemini, bedrock), NULL if none. */
const struct llm_provider *llm_find(const char *name);
/* "openai, anthropic, azure, gemini, bedrock", for messages. */
const char *llm_names(void);
const char *llm_name(const struct llm_provider *p);
/* Whether the provider takes one key (a header); false for bedrock (SigV4 from AWS_*). */
bool llm_takes_key(const struct llm_provider *p);
/* The model the request names: cfg's, else the provider's default (azure: the deployment). */
const char *llm_model(const struct llm_config *cfg);

/* Sends the system and user messages and puts the model's text in *answer. Errors (recorded):
 * usage (a bad --base-url, a missing --deployment), no_api_key (naming the variable),
 * provider_unreachable (no connection, no answer in time), provider_error (an HTTP error: the
 * provider's own message, with the key cut out), bad_answer (no text in the answer). */
int llm_complete(const struct llm_config *cfg, const char *system, const char *user,
                 struct strbuf *answer);

/* Replaces every occurrence of the key (when it is at least 8 bytes) in sb with "[key]": for
 * any text that came back from a provider and is shown. */
void llm_scrub(struct strbuf *sb, const char *key);

#endif
