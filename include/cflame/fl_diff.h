/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_diff: a differential flame graph — a target profile compared with a
 * baseline, after Brendan Gregg's differential flame graphs and
 * ProfileVega's @profdiffview, with what their users ask for: new frames
 * told apart from unchanged ones, vanished frames listed, noise drawn as
 * noise, self and total deltas both available, and baselines taken
 * differently compared fairly or refused.
 *
 * Matching. Both profiles become trees with the same tree options, first
 * with minwidth 0: frames are matched on these whole trees, so a frame that
 * minwidth hides on one side still has its partner (a frame that grew from
 * a sliver is not "new"). Frames match by their path from the root: at each
 * level the children of a matched pair are aligned by function name (the
 * plain name; module, file and line do not count, so a function redefined
 * in another cell, whose lines moved, keeps its partner). The frames of one
 * function at that level (its lines, when lines are on) align as a longest
 * common subsequence in source order: as many pairs as the shorter side
 * has, and among those alignments the one whose subtrees agree most, so a
 * loop inserted between two others is new and the one it pushed down meets
 * its old line. Distinct names pair whatever their relative order (with
 * lines on, siblings sort by file, so redefining a function in a later
 * cell moves it after its siblings). A function of interactively defined
 * cell code (FL_FRAME_REPL) left without a same-named partner then pairs
 * with an unpaired such function on the other side whose subtree agrees best
 * (subtree agreement: the share of weight they have in common, by the
 * names of their descendants; at least 10%), best pair first, and their
 * frames align as above: so `f1` against `f2` compares as the user means,
 * as ProfileVega's rule for REPL-defined functions does. Children of
 * matched frames are matched in turn; unmatched frames of the drawn tree
 * are new, the topmost unmatched frames of the other tree vanished.
 *
 * Roots. The frames right under the tree's root (each stack's outermost
 * frame: the program or process that `cflame record`, perf script and
 * folded stacks put first) match by name too, with two additions, so that
 * two builds of one program compare frame by frame though their programs
 * are named differently (bt against bt_slow):
 *   - when each profile has exactly one such frame and it is not cell code
 *     (FL_FRAME_REPL, which pairs by the rule above), the two match
 *     whatever their names, and a note says so;
 *   - with root_prefix, every such frame whose name starts with it counts
 *     as named root_prefix: "bt" matches bt, bt_slow, "bt (pid 41)" with
 *     each other (several on one side align as frames of one function do),
 *     and a note says so.
 *
 * Deltas. For each matched frame, with base the partner's count scaled to
 * the drawn tree's units:
 *   delta=total  count - base (inclusive), as ProfileVega;
 *   delta=self   self - base_self, as Gregg's difffolded.
 * A new frame's delta is its count (or self).
 * Scaling: CPU profiles with different intervals are compared per unit of
 * time: baseline counts are multiplied by s = base interval / target
 * interval, with a note (an unknown interval, 0, leaves s at 1, with a
 * note). normalize=true multiplies s further so that the baseline's total
 * equals the target's (totals after the tree options' filters). Allocation
 * profiles count bytes and are not scaled by intervals. A CPU profile and
 * an allocation profile are not compared (an error).
 *
 * Noise. A change counts only when it is larger than sampling error: with
 * counts t and b (b scaled by s), z = (t - s b) / sqrt(t + s^2 b) (Poisson
 * counts; with delta=self, of self counts); |z| < noise (0
 * turns this off) or delta 0 makes the frame "same".
 *
 * Layout. The graph is drawn with the target's layout and coloured by the
 * delta; negate=true draws the baseline's layout and colours by
 * baseline - target, as ProfileVega does: then the target's counts are
 * divided by s to come into the baseline's units, target-only frames are
 * the ones listed as vanished, and baseline-only frames are "new". */
#ifndef FL_DIFF_H
#define FL_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_api.h"
#include "cflame/fl_profile.h"
#include "cflame/fl_tree.h"

CFLAME_BEGIN_DECLS

typedef enum fl_delta_kind { FL_DELTA_TOTAL, FL_DELTA_SELF } fl_delta_kind_t;

typedef enum fl_change {
  FL_CHANGE_SAME,     /* matched, and the change is within noise (or zero) */
  FL_CHANGE_GREW,     /* matched, and it grew */
  FL_CHANGE_SHRANK,   /* matched, and it shrank */
  FL_CHANGE_NEW,      /* only in the drawn profile */
  FL_CHANGE_VANISHED, /* only in the other profile: a function of fl_diff_functions
                         (a frame of the other tree is listed by fl_diff_vanished) */
} fl_change_t;

typedef struct fl_diff_opts {
  bool negate;             /* draw the baseline, colour by baseline - target */
  bool normalize;          /* scale the baseline's total to the target's */
  fl_delta_kind_t delta;
  double noise;            /* z-score threshold; 0: off */
  const char *root_prefix; /* NULL (default): roots match by name (see
                              "Roots"); else roots whose names start with
                              it match each other. Borrowed: it must
                              outlive the diff's build. The command line's
                              --root-prefix and the magics' root_prefix= */
} fl_diff_opts_t;

/* The defaults, from the option table (fl_options.h). */
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
  const fl_node_t *node;         /* in fl_diff_other_tree(); its frame, depth, count */
  double count;                  /* scaled to the drawn tree's units */
  const fl_node_t *parent_match; /* the drawn node its parent matched, or NULL */
} fl_vanished_t;

typedef struct fl_diff fl_diff_t;

/* Compares target against base (both must outlive the diff and not change
 * while it lives). Builds both trees with tree_opts (NULL: the defaults)
 * and root_name (NULL: "all"); minwidth applies to the drawn and the other
 * tree as shown, not to matching. opts NULL: the defaults. Returns a new
 * diff, or NULL with err: profiles of different kinds ("a CPU profile
 * cannot be compared with an allocation profile: the baseline is an
 * allocation profile and the target a CPU profile", or the other way
 * round), a bad filter (as fl_tree_build says). Out of memory aborts, as
 * in fl_tree_build. */
fl_diff_t *fl_diff_build(const fl_profile_t *target, const fl_profile_t *base,
                         const fl_tree_opts_t *tree_opts, const fl_diff_opts_t *opts,
                         const char *root_name, char *err, size_t err_size);
void fl_diff_destroy(fl_diff_t **d);

/* The tree that is drawn (the target's; the baseline's with negate). */
const fl_tree_t *fl_diff_tree(const fl_diff_t *d);
/* The other tree (the baseline's; the target's with negate), with the same
 * options: vanished frames point into it. */
const fl_tree_t *fl_diff_other_tree(const fl_diff_t *d);
const fl_diff_opts_t *fl_diff_options(const fl_diff_t *d);

/* The diff of drawn node id; NULL when there is no such node. Borrowed. */
const fl_diff_node_t *fl_diff_node(const fl_diff_t *d, uint32_t id);
/* The narrow children of drawn node id (fl_tree_narrow), summed as the
 * one frame the graph draws for them: base and delta of their inclusive
 * counts (whatever opts.delta: their subtrees are in them), the change of
 * those sums, new when none has a partner. Zero (change same, no base)
 * for a node without any; NULL for an id out of range or a diff without
 * minwidth. */
const fl_diff_node_t *fl_diff_narrow(const fl_diff_t *d, uint32_t id);

/* Frames that vanished (of the other tree, with no partner), widest first;
 * only the topmost of a vanished subtree is listed, and only frames the
 * other tree shows (minwidth). parent_match is NULL when the partner of
 * the vanished frame's parent is hidden by minwidth in the drawn tree.
 * Borrowed array. */
size_t fl_diff_vanished(const fl_diff_t *d, const fl_vanished_t **out);

/* A function of the diff, as every table of it shows it (view=top, its
 * text, Vega-Lite and SVG). A row joins the functions (fl_top's: name,
 * file, module, input) of the two profiles that are the same function, or
 * whose frames the matching paired: so a function redefined in a later
 * cell, a cell's statements against another cell's, f2 against f1, or
 * two programs' roots, are one row as they are one frame in the graph
 * (transitively: a row holds every function linked to it). Its weights
 * follow fl_top's rule (a sample counts once per row, however often its
 * stack holds the row's functions), over the whole trees (minwidth hides
 * nothing here). change: NEW when the other profile has none of its
 * functions (so the graph pairs no frame of it), VANISHED when the drawn
 * one has none, else the noise rule on its delta (of total, or with
 * delta=self of self weight). */
typedef struct fl_diff_func {
  const fl_frame_t *frame;       /* the drawn profile's widest function of the row, else
                                    the other's */
  const fl_frame_t *other_frame; /* the other profile's widest, NULL when NEW */
  double self, total;            /* in the drawn profile */
  double base_self, base_total;  /* in the other, in the drawn tree's units */
  double delta, z;
  fl_change_t change;
} fl_diff_func_t;

/* The diff's functions, in no particular order, built on the first call
 * (a diff is not to be shared between threads). Borrowed. */
size_t fl_diff_functions(const fl_diff_t *d, const fl_diff_func_t **out);

/* The factor baseline counts were multiplied by (interval ratio, times the
 * normalization; with negate, target counts were divided by it), and notes
 * for the user, such as "the baseline was sampled every 0.5 ms and the
 * target every 1 ms: counts are compared per unit of time", "baseline
 * scaled to the target's total (×1.23)" and "each profile is one program:
 * the target's bt_slow is compared with the baseline's bt". Borrowed
 * strings, NULL-terminated
 * (an empty list when there is nothing to say). */
double fl_diff_scale(const fl_diff_t *d);
const char *const *fl_diff_notes(const fl_diff_t *d);
/* What the other tree's counts are multiplied by to come into the drawn
 * tree's units: fl_diff_scale, or its inverse with negate. */
double fl_diff_factor(const fl_diff_t *d);
/* The change of a drawn count x against the other tree's count y (raw,
 * before fl_diff_factor) by the noise rule above, its z-score in *z (NULL:
 * not wanted); for the tables that compare other things than frames
 * (functions, source lines). */
fl_change_t fl_diff_change_of(const fl_diff_t *d, double x, double y, double *z);

/* The largest |delta| among drawn frames that grew or shrank (the colour
 * scale's end; new frames and frames within noise have colours of their
 * own and do not stretch it); 0 when none did. */
double fl_diff_max_delta(const fl_diff_t *d);

/* A frame whose share of its profile's total grew (fl_diff_grown). */
typedef struct fl_grown {
  const fl_node_t *node; /* of fl_diff_tree() */
  double base_share;     /* its partner's share of the baseline's total, 0..1; 0 when new */
  double share;          /* its share of the target's total, 0..1 */
} fl_grown_t;

/* The frames whose share of their profile's total grew by more than
 * min_growth (a share: 0.05 is 5 points of the total), largest growth
 * first: each drawn frame's count (its self count with delta=self) over
 * the drawn tree's root, against its partner's over the other tree's
 * root, so that the two profiles' totals (their length, their rates,
 * normalize) do not matter; a new frame grew from 0. The root is not
 * listed. Only frames the drawn tree shows count: build with minwidth 0
 * for every frame. For a CI gate (cflame --fail-above). d must not be
 * negated (assert). *out is new (free it; NULL when none). Returns the
 * count. */
size_t fl_diff_grown(const fl_diff_t *d, double min_growth, fl_grown_t **out);

/* Share of the drawn profile's weight in frames whose change is "same":
 * the sum of their self counts over the root's count, over the whole tree
 * (frames minwidth hides included), so that the shares of the four changes
 * add up to 1. With an empty drawn profile: 1 if the root is "same", else
 * 0. For tests and summaries. */
double fl_diff_neutral_share(const fl_diff_t *d);

CFLAME_END_DECLS

#endif
