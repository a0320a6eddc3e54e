/* Fuzz target: arbitrary bytes as a profile document for the exports (pprof, trace, Firefox)
 * and for `scry compare` (against itself). A document that loads must export and compare. */
#include <stdint.h>
#include <stdlib.h>

#include "analysis/compare.h"
#include "analysis/profile_doc.h"
#include "common/strbuf.h"
#include "render/compare_render.h"
#include "render/firefox_profile.h"
#include "render/pprof.h"
#include "render/trace_event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pdoc d;
    if (pdoc_load_bytes(&d, (const char *)data, size, "fuzz") != 0)
        return 0;
    struct strbuf out = STRBUF_INIT;
    struct pprof_opts po = {.exporter = "fuzz"};
    if (pprof_write(&d, &po, &out) != 0)
        abort();
    sb_reset(&out);
    struct trace_opts to = {.exporter = "fuzz"};
    trace_event_write(&d, &to, &out);
    sb_reset(&out);
    struct firefox_opts fo = {.exporter = "fuzz"};
    if (firefox_profile_write(&d, &fo, &out) != 0)
        abort();
    for (int norm = 0; norm < 2; norm++) {
        struct cmp_result r;
        if (cmp_profiles(&d, &d, norm, &r) != 0)
            abort();
        struct compare_render_opts co = {.before_path = "a", .after_path = "b", .before = &d,
                                         .after = &d, .fail_above = 10, .top = 5};
        sb_reset(&out);
        compare_render_text(&r, &co, &out);
        sb_reset(&out);
        if (compare_render_json(&r, &co, &out) != 0)
            abort(); /* a profile against itself never regresses */
        cmp_free(&r);
    }
    sb_release(&out);
    pdoc_free(&d);
    return 0;
}
