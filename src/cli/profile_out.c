/* The end of a CPU profile's life in the CLI: the source text of every profiled file, then the
 * document (render/profile_json.c) written through common/outfile.c. `scry record` and
 * `scry collect` finish with it; `scry run` reads the sources with it (it keeps the document for
 * its views). */
#include <stdio.h>
#include <sys/stat.h>

#include "analysis/profile.h"
#include "cli/cli.h"
#include "render/profile_json.h"
#include <stdlib.h>
#include "common/error.h"
#include "common/sanitize.h"
#include "platform/outfile.h"

void cli_profile_read_sources(struct profile *p)
{
    for (size_t i = 0; i < p->nfiles; i++) {
        struct stat st;
        const char *name = p->files[i].name;
        if (stat(name, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20))
            continue;
        char *data;
        size_t len;
        if (cli_read_file(name, &data, &len) != 0)
            continue;
        if (prof_set_source(p, i, data, len) != 0)
            fprintf(stderr, "scry: warning: %s\n", san_str(err_last_message()));
        free(data);
    }
}

int cli_profile_write(struct profile *p, const struct profile_json_opts *jo, struct outfile *out)
{
    struct strbuf json = STRBUF_INIT;
    cli_profile_read_sources(p);
    profile_json_write(p, jo, &json);
    int err = outfile_write(out, json.buf ? json.buf : "", json.len);
    if (err)
        outfile_abort(out);
    else
        err = outfile_commit(out);
    sb_release(&json);
    return err;
}
