/* The CA certificates for https where libcurl was built without a default (tls_ca.h). */
#include "push/tls_ca.h"

#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

const char *tls_ca_pick(const char *ssl_cert_file, const char *curl_ca_bundle,
                        const char *const *files, size_t nfiles)
{
    /* A path the user set is taken even when it cannot be read: the transfer's error then says
     * so, rather than a silent fall back on another bundle. */
    if (ssl_cert_file && *ssl_cert_file)
        return ssl_cert_file;
    if (curl_ca_bundle && *curl_ca_bundle)
        return curl_ca_bundle;
    for (size_t i = 0; i < nfiles; i++)
        if (access(files[i], R_OK) == 0)
            return files[i];
    return NULL;
}

void tls_ca_apply(CURL *c)
{
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    bool builtin = v->age >= CURLVERSION_SEVENTH && (v->cainfo || v->capath);
    static const char *const files[] = {TLS_CA_FILES};
    const char *f = tls_ca_pick(getenv("SSL_CERT_FILE"), getenv("CURL_CA_BUNDLE"), files,
                                builtin ? 0 : sizeof(files) / sizeof(files[0]));
    if (f)
        curl_easy_setopt(c, CURLOPT_CAINFO, f);
}
