/* The CA file scry names to libcurl (src/push/tls_ca.c): the environment's first, then the first
 * readable file of the list, none when none can be read. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "push/tls_ca.h"
#include "testlib.h"

static void test_pick(void)
{
    char missing[512], in_missing_dir[512], present[512];
    snprintf(missing, sizeof(missing), "%s/missing.pem", tl_tmpdir());
    snprintf(in_missing_dir, sizeof(in_missing_dir), "%s/dir.pem/x", tl_tmpdir());
    snprintf(present, sizeof(present), "%s/present.pem", tl_tmpdir());
    FILE *f = fopen(present, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    const char *const files[] = {missing, in_missing_dir, present};
    CHECK_STR(tls_ca_pick(NULL, NULL, files, 3), present);
    CHECK_STR(tls_ca_pick("", "", files, 3), present);
    CHECK(tls_ca_pick(NULL, NULL, files, 2) == NULL);
    CHECK(tls_ca_pick(NULL, NULL, files, 0) == NULL);
    /* The environment's path wins, readable or not (the transfer's error then names it). */
    CHECK_STR(tls_ca_pick("/env/cert.pem", "/env/bundle.pem", files, 3), "/env/cert.pem");
    CHECK_STR(tls_ca_pick(NULL, "/env/bundle.pem", files, 3), "/env/bundle.pem");
    CHECK_STR(tls_ca_pick("", "/env/bundle.pem", files, 0), "/env/bundle.pem");
}

static void test_list(void)
{
    /* The Debian and RHEL bundles are both on the list, Debian's first. */
    static const char *const files[] = {TLS_CA_FILES};
    CHECK_STR(files[0], "/etc/ssl/certs/ca-certificates.crt");
    CHECK_STR(files[1], "/etc/pki/tls/certs/ca-bundle.crt");
}

static const struct tl_test tests[] = {TL(test_pick), TL(test_list)};
TL_MAIN(tests)
