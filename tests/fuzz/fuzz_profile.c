/* Fuzz target: arbitrary bytes as an agent part file (merged, then written as a profile and
 * shown) and as a profile document for the terminal view. Neither may crash on any input. */
#include <stdint.h>
#include <stdlib.h>

#include "analysis/profile.h"
#include "common/strbuf.h"
#include "render/profile_json.h"
#include "render/profile_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct profile_text_opts to = {.color = true, .threshold = 0};
    struct strbuf out = STRBUF_INIT;

    /* As a part: the same bytes twice, as the program's part and a child's. */
    struct profile p;
    prof_init(&p);
    if (prof_add_part_text(&p, (const char *)data, size, "fuzz", 1) == 0) {
        if (prof_add_part_text(&p, (const char *)data, size, "fuzz", 1) != 0)
            abort(); /* a part accepted once is accepted again */
    }
    prof_finish(&p);
    if (p.nfiles > 0)
        prof_set_source(&p, 0, (const char *)data, size < 4096 ? size : 4096);
    struct profile_json_opts jo = {.version = "fuzz", .program = "/p.py", .ncpus = 2};
    profile_json_write(&p, &jo, &out);
    jo.reduced = true;
    jo.cpu_percent_threshold = 1;
    profile_json_write(&p, &jo, &out);
    prof_free(&p);
    /* What the writer produced must be a profile the view reads. */
    struct strbuf text = STRBUF_INIT;
    sb_reset(&out);
    prof_init(&p);
    if (prof_add_part_text(&p, (const char *)data, size, "fuzz", 1) == 0) {
        prof_finish(&p);
        profile_json_write(&p, &jo, &out);
        if (profile_text_render_bytes(out.buf, out.len, "written", &to, &text) != 0)
            abort();
    }
    prof_free(&p);

    /* As a profile document. */
    sb_reset(&text);
    profile_text_render_bytes((const char *)data, size, "fuzz", &to, &text);
    sb_release(&text);
    sb_release(&out);
    return 0;
}
