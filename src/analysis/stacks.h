/* Weighted call trees: the model behind every flame graph and stack export. A tree is built from
 * stacks (a profile's "stacks" or "memory_stacks", from the profile model of
 * analysis/profile_doc.h; Brendan Gregg's folded lines) or node by node (a heap
 * snapshot's dominator tree); each node carries its own (self) weight and, once finished, its
 * total: self plus its children's totals. A differential tree carries a second weight per node,
 * "before"; `self`/`total` are then "after". Cutting narrow or deep frames into `[other]` builds a
 * new tree in which every frame kept has exactly the total it had. Pure: no files, no processes. */
#ifndef SCRY_ANALYSIS_STACKS_H
#define SCRY_ANALYSIS_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/profile_doc.h"
#include "common/arena.h"
#include "common/hashmap.h"
#include "common/strbuf.h"

#define STK_NONE UINT32_MAX
#define STK_ROOT 0u
/* The frame that stands for every folded frame under one parent. */
#define STK_OTHER "[other]"

struct stk_node {
    uint32_t frame;        /* index into stk_tree.frames; STK_NONE for the root */
    uint32_t parent;       /* STK_NONE for the root */
    uint32_t first_child;  /* STK_NONE: a leaf; after stk_finish siblings are sorted by text */
    uint32_t next_sibling; /* STK_NONE: the last one */
    uint32_t depth;        /* root 0, outermost frames 1 */
    double self, total;    /* weight of this exact stack, and with everything above it */
    double self_before, total_before; /* differential trees only */
};

struct stk_tree {
    struct arena arena; /* frame texts */
    const char **frames;
    size_t nframes, cap_frames;
    uint32_t *ftab; /* open addressing: frame index + 1, 0 empty */
    size_t ftab_cap;
    struct stk_node *nodes; /* nodes[0] is the root; a parent always precedes its children */
    size_t nnodes, cap_nodes;
    struct hashmap children; /* (parent << 32 | frame) + 1 -> node */
    uint32_t max_depth;      /* deepest node, set by stk_finish */
    bool diff;
};

void stk_init(struct stk_tree *t, bool diff);
void stk_free(struct stk_tree *t);

/* The index of a frame text (interned). A ';' inside it becomes ':', a line break or tab a space,
 * other controls are cleaned (common/sanitize.h), and spaces around it are trimmed ("?" if
 * nothing is left), so every frame survives the folded format and no output carries controls. */
int stk_frame(struct stk_tree *t, const char *text, size_t len, uint32_t *out);
/* The child of parent with that frame, made if missing. */
int stk_child(struct stk_tree *t, uint32_t parent, uint32_t frame, uint32_t *out);
/* Adds self weight to a node (before is ignored unless the tree is differential). Weights must
 * be finite and not negative. */
int stk_add(struct stk_tree *t, uint32_t node, double after, double before);
/* Adds one stack, outermost frame first. */
int stk_add_stack(struct stk_tree *t, const char *const *frames, const size_t *lens, size_t n,
                  double after, double before);
/* Computes totals and depths and sorts siblings by frame text; call after the last add. */
int stk_finish(struct stk_tree *t);

struct stk_cut {
    double min_pct;     /* frames narrower than this % of the total are folded (0: none) */
    double min_weight;  /* frames narrower than this absolute weight are folded (0: none) */
    uint32_t max_depth; /* frames deeper than this are folded (0: no limit) */
};

/* Builds `out` (initialised here) from the finished tree `in`: under each parent, the frames
 * narrower than the cutoffs (in a differential tree: narrow on both sides) and those deeper than
 * max_depth are folded, with everything above them, into one `[other]` child. Frames kept keep
 * their totals exactly. */
int stk_cut(const struct stk_tree *in, const struct stk_cut *c, struct stk_tree *out);

/* The most folded text stk_write_folded makes: every line repeats its whole stack, so a deep
 * chain with weight on each frame (a long linked list's retention) needs the square of its
 * depth; past this the output is refused rather than built. */
#define STK_FOLDED_MAX ((uint64_t)256 << 20)
/* Brendan Gregg's folded stacks of a finished tree: one line per stack with a self weight,
 * `frame;frame;frame WEIGHT` (differential: `... BEFORE AFTER`), outermost frame first.
 * Returns 0, or -SCRY_E_TOO_LARGE (recorded; nothing written) past STK_FOLDED_MAX. */
int stk_write_folded(const struct stk_tree *t, struct strbuf *out);
/* Adds folded lines to the tree (not finished). A differential tree wants two numbers per line.
 * Blank lines are skipped; a malformed one gives -SCRY_E_BAD_PROFILE naming `what` and its
 * line number. */
int stk_parse_folded(struct stk_tree *t, const char *text, size_t len, const char *what);

/* Adds the "stacks" of a profile (the model of analysis/profile_doc.h, which checked them;
 * Scalene's format, which `scry run --stacks` writes) weighted by sample count, or with `memory`
 * its "memory_stacks" weighted by MB allocated, to the "before" side when `before` is set. A
 * profile without them gives -SCRY_E_BAD_PROFILE saying to record with --stacks. */
int stk_add_profile(struct stk_tree *t, const struct pdoc *profile, const char *what,
                    bool before, bool memory);

/* A frame string of Scalene's stacks ("FILE QUALNAME:LINE;") as scry's frame text
 * "QUALNAME (FILE:LINE)"; text it cannot split is kept as it is. */
void stk_scalene_frame_text(const char *s, size_t len, struct strbuf *out);

/* The parts of a frame text "NAME (FILE:LINE)" (or "NAME (FILE)"): false if it has none, and
 * then the whole text is the name. Pointers are into text; line is 0 when absent. */
struct stk_frame_parts {
    const char *name, *file;
    size_t name_len, file_len;
    long line;
};
bool stk_frame_split(const char *text, struct stk_frame_parts *p);

enum stk_kind { STK_KIND_PYTHON, STK_KIND_NATIVE, STK_KIND_OTHER };
/* Python: a frame in a .py file (or <string>, <frozen ...>); other: `[other]`, `-`, roots and
 * frames that name no file; native: frames in another file (a shared object). */
enum stk_kind stk_frame_kind(const char *text);

/* A weight as the folded format and JSON want it: integers without a fraction, others with as
 * few digits as read back exactly. */
void stk_format_weight(struct strbuf *out, double w);

#endif
