/* fl_diff: a differential flame graph — a target profile compared with a
 * baseline, after Brendan Gregg's differential flame graphs and
 * ProfileVega's @profdiffview, with what their users ask for: new frames
 * told apart from unchanged ones, vanished frames listed, noise drawn as
 * noise, self and total deltas both available, and baselines taken
 * differently compared fairly or refused.
 *
 * Matching. Both profiles become trees with the same tree options. Frames
 * match by their path from the root: at each level the children of a
 * matched pair are aligned as a longest common subsequence of their names
 * (func, and line when lines are on) in source order. A frame of cell code
 * (FL_FRAME_CELL) left without a same-named partner then pairs with the
 * unmatched cell-code sibling on the other side whose subtree agrees best
 * (the most shared weight among their descendants' names), so `f1` against
 * `f2`, or a function redefined in a later cell, compares as the user means.
 * Children of matched frames are matched in turn; unmatched target frames
 * are new, unmatched baseline frames vanished.
 *
 * Deltas. For each matched frame, with base the baseline count scaled to the
 * target's units:
 *   delta=total  target count - base count (inclusive), as ProfileVega;
 *   delta=self   target self - base self, as Gregg's difffolded.
 * Scaling: baselines with another interval are compared per unit of time
 * (counts times interval), with a note; normalize=true also scales the
 * baseline's total to the target's. A CPU profile and an allocation profile
 * are not compared (an error).
 *
 * Noise. A change counts only when it is larger than sampling error: with
 * counts t and b (b scaled by s), z = (t - s b) / sqrt(t + s^2 b) (Poisson
 * counts); |z| < noise (default 2; 0 turns this off) makes the frame "same".
 *
 * Layout. The graph is drawn with the target's layout and coloured by the
 * delta; negate=true draws the baseline's layout and colours by
 * baseline - target, as ProfileVega does (then target-only frames are the
 * ones listed as vanished, and baseline-only frames are "new"). */
#ifndef FL_DIFF_H
#define FL_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_profile.h"
#include "cflame/fl_tree.h"

typedef enum fl_delta_kind { FL_DELTA_TOTAL, FL_DELTA_SELF } fl_delta_kind_t;

typedef enum fl_change {
  FL_CHANGE_SAME,   /* matched, and the change is within noise (or zero) */
  FL_CHANGE_GREW,   /* matched, and it grew */
  FL_CHANGE_SHRANK, /* matched, and it shrank */
  FL_CHANGE_NEW,    /* only in the drawn profile */
} fl_change_t;

typedef struct fl_diff_opts {
  bool negate;           /* draw the baseline, colour by baseline - target */
  bool normalize;        /* scale the baseline's total to the target's */
  fl_delta_kind_t delta; /* default FL_DELTA_TOTAL */
  double noise;          /* z-score threshold; default 2; 0: off */
} fl_diff_opts_t;

void fl_diff_opts_init(fl_diff_opts_t *o);

/* Per drawn node (indexed by fl_node_t.id of fl_diff_tree()). */
typedef struct fl_diff_node {
  bool has_base;   /* false: the frame is new (no partner) */
  double base;     /* the partner's count, in the drawn tree's units (scaled) */
  double base_self;
  double delta;    /* by opts.delta: count - base, or self - base_self */
  double z;        /* the change over its sampling error (0 when new) */
  fl_change_t change;
} fl_diff_node_t;

/* A frame of the other profile with no partner in the drawn one. */
typedef struct fl_vanished {
  const fl_node_t *node; /* in fl_diff_other_tree(); its frame, depth, count */
  double count;          /* scaled to the drawn tree's units */
  const fl_node_t *parent_match; /* the drawn node its parent matched, or NULL */
} fl_vanished_t;

typedef struct fl_diff fl_diff_t;

/* Compares target against base (both must outlive the diff). Builds both
 * trees with tree_opts (minwidth is applied to the drawn tree after
 * matching). Returns a new diff, or NULL with err: profiles of different
 * kinds ("a CPU profile cannot be compared with an allocation profile"),
 * or a bad filter. */
fl_diff_t *fl_diff_build(const fl_profile_t *target, const fl_profile_t *base,
                         const fl_tree_opts_t *tree_opts, const fl_diff_opts_t *opts,
                         const char *root_name, char *err, size_t err_size);
void fl_diff_destroy(fl_diff_t **d);

/* The tree that is drawn (the target's; the baseline's with negate). */
const fl_tree_t *fl_diff_tree(const fl_diff_t *d);
/* The other tree. */
const fl_tree_t *fl_diff_other_tree(const fl_diff_t *d);
const fl_diff_opts_t *fl_diff_options(const fl_diff_t *d);

/* The diff of drawn node id. Borrowed. */
const fl_diff_node_t *fl_diff_node(const fl_diff_t *d, uint32_t id);

/* Frames that vanished (of the other tree, with no partner), widest first;
 * only the topmost of a vanished subtree is listed. Borrowed array. */
size_t fl_diff_vanished(const fl_diff_t *d, const fl_vanished_t **out);

/* The factor baseline counts were multiplied by (interval ratio, times the
 * normalization), and notes for the user ("the baseline was sampled every
 * 0.5 ms; counts are compared per unit of time"). Borrowed strings,
 * NULL-terminated. */
double fl_diff_scale(const fl_diff_t *d);
const char *const *fl_diff_notes(const fl_diff_t *d);

/* The largest |delta| among drawn frames (the colour scale's end). */
double fl_diff_max_delta(const fl_diff_t *d);

/* Share of drawn frames (by count) whose change is "same". For tests and
 * summaries. */
double fl_diff_neutral_share(const fl_diff_t *d);

#endif
