/* What `scry dump --capture-contents` must not store: values kept under names that say they are
 * secret (password, token, api_key, cookie, ...) and strings shaped like keys or tokens (long
 * hex or base64 runs, sk-..., ghp_..., AKIA..., JWTs, PEM private keys). Rules in one place so
 * that they can be read, tested and tightened together. Pure functions over bytes. */
#ifndef SCRY_CPYTHON_REDACT_H
#define SCRY_CPYTHON_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#define REDACTED "<redacted>"

/* True when an attribute or key name suggests its value is secret: it contains, ignoring case,
 * password, passwd, secret, token, key, auth, cookie, session or credential. */
bool redact_name_is_sensitive(const char *name, size_t len);

/* True when a string looks like a secret itself: a known token prefix (sk-, ghp_/gho_/ghu_/ghs_/
 * ghr_, github_pat_, AKIA/ASIA + 16 capitals or digits, xox?-, a JWT eyJ...x.y), a PEM private
 * key, a run of at least 20 hex digits with a letter and a digit, or a run of at least 20
 * base64 characters with a digit, a capital and a small letter. */
bool redact_value_looks_secret(const char *s, size_t len);

#endif
