/* What a heap snapshot must not store. One rule decides on every text the heap walker takes
 * from a process: str/bytes contents (--capture-contents), dict keys, attribute, slot and local
 * names, type, module and function names, file paths. It is applied to the whole text (or, for a
 * long one, to everything up to REDACT_MARGIN past the cut) before the text is cut to what is
 * stored; a text it flags is stored as <redacted>, whole. Pure functions over bytes, in one place
 * so that they can be read, tested and tightened together (docs/SECURITY.md, "Redaction"). */
#ifndef SCRY_CPYTHON_REDACT_H
#define SCRY_CPYTHON_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#define REDACTED "<redacted>"

/* Bytes looked at past the point where a text is cut. Each shape below is decided from at most
 * about 1 KiB after where it starts (a JWT's header, a Basic or Bearer token, a run of base64 is
 * judged on what is seen): a secret that starts in the stored part is seen as far as the rule
 * needs, so the answer is the one the whole text would give it. */
#define REDACT_MARGIN ((size_t)4 * 1024)

/* The rule. True when a text looks like, or holds, a secret:
 * - a known token prefix at a word start, with enough token characters after it: sk-, sk_live_,
 *   rk_live_, ghp_/gho_/ghu_/ghs_/ghr_, github_pat_, xox?-, AKIA/ASIA + 16 capitals or digits,
 *   a JWT eyJ...x.y; a PEM private key;
 * - a run of at least 20 hex digits with a letter and a digit; a run of at least 20 base64
 *   characters with a digit, a capital and a small letter that changes between these three
 *   classes at least once every three characters (random text does twice as often; CamelCase
 *   identifiers such as HTTP2ConnectionHandler do not);
 * - HTTP credentials: "Authorization:" (or Proxy-Authorization) with a value, "Bearer " and a
 *   token of 8+ characters that is not all small letters, "Basic " and base64 that decodes to
 *   user:password;
 * - a URL with a password: scheme://user:password@host;
 * - an assignment to a secret-named field: password, passwd, secret, token, api_key, apikey,
 *   access_key, private_key or credential (any case, inside a name) followed by = or : and a
 *   value of 4+ characters. */
bool redact_text_is_secret(const char *s, size_t len);

/* True when an attribute or key name suggests its value is secret: it contains, ignoring case,
 * password, passwd, secret, token, key, auth, cookie, session or credential. Used only with
 * --capture-contents: the contents under such a name are stored as <redacted>. */
bool redact_name_is_sensitive(const char *name, size_t len);

/* The longest prefix of s[0..len) that is at most max bytes and does not cut a UTF-8 sequence
 * (bytes that are not UTF-8 are cut at max). */
size_t redact_utf8_cut(const char *s, size_t len, size_t max);

#endif
