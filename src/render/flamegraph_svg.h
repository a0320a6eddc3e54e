/* The flame graph of a weighted call tree (analysis/stacks.h) as one self-contained interactive
 * SVG: its script and style are embedded and it references nothing outside itself. One frame is
 * a <g class="f"> holding a <title> (name, weight, share), a <rect> whose width is the frame's
 * total over the root's total times the drawing width, and a <text>; the root ("all") is the
 * bottom row. Click zooms (the frame fills the width, its ancestors stay visible), Ctrl-F or the
 * Search button highlights matches and shows their share, Escape or Reset Zoom undoes both.
 * A differential tree colours each frame by its change: red grew, blue shrank, width after. */
#ifndef SCRY_RENDER_FLAMEGRAPH_SVG_H
#define SCRY_RENDER_FLAMEGRAPH_SVG_H

#include <stdbool.h>

#include "analysis/stacks.h"
#include "common/strbuf.h"

/* Drawing width and the margin either side of the frames: the rects span width - 2 * FG_XPAD. */
#define FG_DEFAULT_WIDTH 1200
#define FG_XPAD 10
#define FG_FRAME_HEIGHT 16

enum fg_palette {
    FG_PALETTE_KIND, /* Python warm, native blue, other grey (CPU profiles) */
    FG_PALETTE_HASH, /* flamegraph.pl's "hot": a colour per name */
    FG_PALETTE_MEM,  /* greens per name (memory and retention) */
};

struct fg_opts {
    const char *title;    /* NULL: "Flame Graph" */
    const char *subtitle; /* NULL: none */
    const char *unit;     /* what the weights count: "samples" (default), "bytes", ... */
    bool bytes;           /* show weights as KiB/MiB/GiB in tooltips */
    enum fg_palette palette;
    unsigned width; /* 0: FG_DEFAULT_WIDTH */
};

/* Writes the SVG of a finished tree. */
void fg_write_svg(const struct stk_tree *t, const struct fg_opts *o, struct strbuf *out);

/* The fill of a frame: deterministic for a name (and, in diff mode, for its change). Exposed for
 * tests. rgb is written as "rgb(R,G,B)". */
void fg_frame_color(const char *name, enum fg_palette palette, struct strbuf *rgb);
void fg_diff_color(double before, double after, double max_delta, struct strbuf *rgb);

#endif
