/* The CA certificates libcurl checks an https server against (run --push, optimize's providers):
 * $SSL_CERT_FILE, else $CURL_CA_BUNDLE, where set (as curl's own command reads them); else
 * libcurl's built-in default where it has one (Debian's libcurl); else, in the manylinux wheel,
 * whose libcurl has none (scripts/build-manylinux.sh: its build cannot know where the machine it
 * will run on keeps them), the first of the distributions' usual bundle files that can be read. */
#ifndef SCRY_PUSH_TLS_CA_H
#define SCRY_PUSH_TLS_CA_H

#include <stddef.h>

#include <curl/curl.h>

/* The distributions' bundles, in the order they are tried: Debian, Ubuntu, Arch, Gentoo; RHEL,
 * Rocky, CentOS, Fedora, Amazon Linux; RHEL's extracted bundle; SUSE; Alpine. */
#define TLS_CA_FILES                                                                             \
    "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",                   \
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/ca-bundle.pem",          \
        "/etc/ssl/cert.pem"

/* The file to name: ssl_cert_file, else curl_ca_bundle (the environment's: NULL or empty when not
 * set), else the first of files[] that can be read, else NULL (libcurl's default stands). */
const char *tls_ca_pick(const char *ssl_cert_file, const char *curl_ca_bundle,
                        const char *const *files, size_t nfiles);

/* Sets CURLOPT_CAINFO on c by the rule above. */
void tls_ca_apply(CURL *c);

#endif
