/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_diff: a differential flame graph.
 *
 * Building a diff takes five steps:
 *
 *  1. Kinds and scale. A CPU profile and an allocation profile are refused.
 *     CPU profiles count sampling intervals, so a baseline taken with
 *     another interval is compared per unit of time: its counts are
 *     multiplied by s = base interval / target interval (unknown intervals,
 *     0, leave s at 1, with a note). normalize=true multiplies s further so
 *     that the baseline's total equals the target's. Allocation profiles
 *     count bytes and are not scaled by any interval.
 *  2. Trees. A function that both profiles ran from different definitions
 *     (cell code redefined in a later cell; see redefined_functions) is
 *     drawn one frame per call, without lines, in both trees: the lines of
 *     two definitions do not correspond, and pairing them line by line
 *     would count the same work twice, as new frames of the target and
 *     vanished frames of the baseline. Each profile becomes a tree with
 *     the caller's options but
 *     minwidth 0 (the "full" trees), and, when minwidth is set, again with
 *     it (the trees that are shown). Matching uses the full trees, so a
 *     frame that minwidth hides on one side still matches its partner: a
 *     frame that shrank to a sliver is not "vanished", one that grew from a
 *     sliver is not "new". A shown node is mapped to its full node by its
 *     path (same profile, same options: same frames in the same order).
 *     So a diff with minwidth costs four tree builds, which dominate its
 *     time (matching two trees of 10^6 nodes takes about 0.1 s).
 *  3. Matching (fl_diff_match.c), level by level from the roots (which
 *     always match). The children of a matched pair are grouped by
 *     function name (the plain
 *     name: module, file and line are ignored, so a function redefined in
 *     another cell, whose lines moved, keeps its partner):
 *      - a name present on both sides pairs its frames in source order, as
 *        a longest common subsequence of the frames of that function: as
 *        many pairs as the shorter side has frames, and among alignments
 *        with that many, the one whose pairs' subtrees agree most (see
 *        "agreement"), then the one with most equal lines. So with lines
 *        on, a loop line that moved still meets its old self, and a loop
 *        inserted between two others is new;
 *      - names on one side only that are cell code defined interactively
 *        (FL_FRAME_REPL; not a program's functions read from a file) pair
 *        across names, the pair of groups whose subtrees agree most first
 *        (ties: the nearest in position, then the earlier), when they agree
 *        on at least MIN_AGREEMENT of their weight; their frames align as
 *        above. This is ProfileVega's wildcard rule for REPL-defined
 *        functions, and what makes f1 against f2 compare as the user means.
 *        Two leaf functions (all self weight) agree fully, so a renamed
 *        leaf pairs with its new name too.
 *     The roots' children (each stack's outermost frame, a program) are
     named by root_prefix where they start with it, and when each side has
     one, not cell code, left unpaired, the two pair (fl_diff.h, "Roots").
     Distinct names are paired regardless of their relative order: with
 *     lines on, siblings are ordered by (file, line), so redefining a
 *     function in a later cell moves it after its siblings, and a strict
 *     LCS over all names would then call one of them new.
 *  4. Deltas and noise, per node of the full drawn tree (see the header),
 *     copied to the shown nodes.
 *  5. Vanished frames: the topmost unmatched frames of the other full tree
 *     that its shown tree draws, widest first.
 *
 * Agreement of two sets of frames (one per side) is the overlap of their
 * subtrees' weight by function name: each frame contributes its own self
 * weight under a common "self" key and its descendants' self weights under
 * their names (down to AGREE_DEPTH levels; a frame at that depth brings its
 * whole count), each side divided by its total, and the overlap is the sum
 * of the smaller shares: 1 for the same shape, 0 for nothing in common.
 *
 * Negate draws the baseline: the roles swap (drawn = baseline, other =
 * target), the other side's counts are divided by s instead, and deltas are
 * baseline - target in the baseline's units. */
#define _GNU_SOURCE
#include "cflame/fl_diff.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__common.h"
#include "fl__diff.h"
#include "fl__totals.h"

enum { MAX_NOTES = 4 };

struct fl_diff {
  fl_diff_opts_t opts;
  fl_tree_t *full_drawn, *full_other; /* minwidth 0: what is matched */
  fl_tree_t *drawn, *other;           /* as shown; may be the full trees */
  fl_diff_node_t *nodes;              /* by drawn id */
  fl_diff_node_t *narrow;             /* by drawn id: its narrow children's, summed
                                         (fl_diff_narrow); NULL when none is hidden */
  fl_vanished_t *vanished;
  size_t n_vanished;
  uint32_t *partner; /* full drawn id -> full other id, or NONE: for the functions */
  /* fl_diff_functions' rows, built when first asked for (a graph never
   * needs them, and they cost a fifth of a large diff's build): state of
   * its own, so that a const diff can fill it. */
  struct funcs {
    fl_diff_func_t *rows;
    size_t n;
    bool built;
  } * funcs;
  double scale;
  double max_delta;
  double neutral_share;
  char note_text[MAX_NOTES][256];
  const char *notes[MAX_NOTES + 1];
  size_t n_notes;
};

/* ---- shown trees against full trees ---- */

static bool same_frame(const fl_frame_t *a, const fl_frame_t *b) {
  return a->func == b->func && a->file == b->file && a->module == b->module && a->line == b->line &&
         a->addr == b->addr && a->flags == b->flags;
}

/* Maps every node of shown (the tree of the same profile and options as
 * full, with minwidth) to its node in full: vis_to_full by shown id,
 * full_to_vis by full id (NONE for hidden nodes). Frames are the same
 * interned representatives in both, and children keep their order, so one
 * forward scan per level finds them. Returns 0, or -1 if a node has no
 * counterpart (which would be a bug). */
static int map_shown(const fl_tree_t *full, const fl_tree_t *shown, uint32_t *vis_to_full,
                     uint32_t *full_to_vis) {
  size_t nf = fl_tree_n_nodes(full), ns = fl_tree_n_nodes(shown);
  for (size_t i = 0; i < nf; i++) full_to_vis[i] = NONE;
  vis_to_full[0] = 0;
  full_to_vis[0] = 0;
  /* Pre-order: a shown node's parent is mapped before it. */
  for (size_t v = 0; v < ns; v++) {
    const fl_node_t *sn = fl_tree_node(shown, v);
    const fl_node_t *fn = fl_tree_node(full, vis_to_full[v]);
    size_t at = 0;
    for (size_t c = 0; c < sn->n_children; c++) {
      const fl_node_t *want = sn->children[c];
      while (at < fn->n_children && !same_frame(&fn->children[at]->frame, &want->frame)) at++;
      if (at == fn->n_children) return -1;
      vis_to_full[want->id] = fn->children[at]->id;
      full_to_vis[fn->children[at]->id] = want->id;
      at++;
    }
  }
  return 0;
}

/* ---- scale and notes ---- */

static void add_note(fl_diff_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(fl_diff_t *d, const char *fmt, ...) {
  if (d->n_notes == MAX_NOTES) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->note_text[d->n_notes], sizeof d->note_text[0], fmt, ap);
  va_end(ap);
  d->notes[d->n_notes] = d->note_text[d->n_notes];
  d->n_notes++;
  d->notes[d->n_notes] = NULL;
}

/* Sets d->scale (what baseline counts are multiplied by) and the notes. */
static void compute_scale(fl_diff_t *d, const fl_profile_info_t *ti, const fl_profile_info_t *bi,
                          uint64_t target_total, uint64_t base_total) {
  double s = 1;
  if (fl_kind(ti->kind)->time) {
    if (ti->interval_ns && bi->interval_ns && ti->interval_ns != bi->interval_ns) {
      char tb[32], bb[32];
      fl_interval_text(ti->interval_ns, tb, sizeof tb);
      fl_interval_text(bi->interval_ns, bb, sizeof bb);
      s = (double)bi->interval_ns / (double)ti->interval_ns;
      add_note(d,
               "the baseline was sampled every %s and the target every %s: counts are compared "
               "per unit of time",
               bb, tb);
    } else if (!ti->interval_ns != !bi->interval_ns) {
      add_note(d, "the %s's sampling interval is unknown: counts are compared as they are",
               ti->interval_ns ? "baseline" : "target");
    }
  }
  if (d->opts.normalize) {
    if (!target_total || !base_total) {
      add_note(d, "the %s has no samples: it cannot be scaled to the other's total",
               base_total ? "target" : "baseline");
    } else {
      double norm = (double)target_total / ((double)base_total * s);
      s *= norm;
      if (d->opts.negate)
        add_note(d, "target scaled to the baseline's total (×%.3g)", 1 / norm);
      else
        add_note(d, "baseline scaled to the target's total (×%.3g)", norm);
    }
  }
  d->scale = s;
}

/* "fib was redefined in another cell: it is compared as a whole function,
 * without lines." */
static void note_redefined(fl_diff_t *d, const char *const *names) {
  char list[160] = "";
  size_t n = 0, len = 0;
  for (; names[n]; n++) {
    int w = snprintf(list + len, sizeof list - len, "%s%s", n ? ", " : "", names[n]);
    if (w < 0 || (size_t)w >= sizeof list - len) {
      snprintf(list + len, sizeof list - len, ", ...");
      while (names[n]) n++;
      break;
    }
    len += (size_t)w;
  }
  add_note(d, "%s %s redefined in another cell: %s compared as a whole function, without lines",
           list, n == 1 ? "was" : "were", n == 1 ? "it is" : "each is");
}

/* Says which roots were paired across names: "each profile is one
 * program: the target's bt_slow is compared with the baseline's bt", or
 * "roots whose names start with "bt" are compared with each other". */
static void note_roots(fl_diff_t *d, const matcher_t *m) {
  const fl_node_t *root = fl_tree_root(m->d.t);
  const fl_node_t *renamed = NULL; /* a drawn root paired across names */
  for (size_t i = 0; i < root->n_children && !renamed; i++) {
    const fl_node_t *a = root->children[i];
    uint32_t p = m->d.partner[a->id];
    if (p != NONE && strcmp(a->frame.func, fl_tree_node(m->o.t, p)->frame.func)) renamed = a;
  }
  if (!renamed) return;
  if (m->single_roots) {
    const char *drawn = renamed->frame.func;
    const char *other = fl_tree_node(m->o.t, m->d.partner[renamed->id])->frame.func;
    add_note(d, "each profile is one program: the target's %s is compared with the baseline's %s",
             d->opts.negate ? other : drawn, d->opts.negate ? drawn : other);
  } else {
    add_note(d, "roots whose names start with \"%s\" are compared with each other",
             d->opts.root_prefix);
  }
}

/* ---- deltas ---- */

/* The diff of drawn node x against its partner y (NULL: none), whose
 * counts are multiplied by k to be in x's units. */
/* The noise rule: the change of count x against y (raw, multiplied by k
 * into x's units), its z-score in *z. */
static fl_change_t change_of(const fl_diff_opts_t *o, double x, double y, double k, double *z) {
  double delta = x - k * y, var = x + k * k * y;
  *z = var > 0 ? delta / sqrt(var) : 0;
  if (delta == 0 || (o->noise > 0 && fabs(*z) < o->noise)) return FL_CHANGE_SAME;
  return delta > 0 ? FL_CHANGE_GREW : FL_CHANGE_SHRANK;
}

static fl_diff_node_t node_diff(const fl_diff_opts_t *o, const fl_node_t *x, const fl_node_t *y,
                                double k) {
  fl_diff_node_t r = {0};
  bool self = o->delta == FL_DELTA_SELF;
  double xv = (double)(self ? x->self : x->count);
  if (!y) {
    r.delta = xv;
    r.change = FL_CHANGE_NEW;
    return r;
  }
  r.has_base = true;
  r.base = k * (double)y->count;
  r.base_self = k * (double)y->self;
  double yv = (double)(self ? y->self : y->count);
  r.delta = xv - k * yv;
  r.change = change_of(o, xv, yv, k, &r.z);
  return r;
}

static int cmp_vanished(const void *pa, const void *pb) {
  const fl_vanished_t *a = pa, *b = pb;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  return (a->node->id > b->node->id) - (a->node->id < b->node->id);
}

/* ---- functions redefined between the two profiles ---- */

typedef struct definition {
  const char *func, *module;
  int side; /* 0 target, 1 baseline */
} definition_t;

static int cmp_definition(const void *pa, const void *pb) {
  const definition_t *a = pa, *b = pb;
  int c = strcmp(a->func, b->func);
  if (!c) c = strcmp(a->module, b->module);
  return c ? c : a->side - b->side;
}

/* The functions defined interactively (FL_FRAME_REPL; not a cell's own
 * statements) that both profiles ran, but from no common definition
 * (module): a cell function redefined in a later cell. The lines of two
 * definitions do not correspond, so the diff compares such a function as a
 * whole. Returns a new NULL-terminated array of names borrowed from the
 * profiles. */
static const char **redefined_functions(const fl_profile_t *target, const fl_profile_t *base) {
  const fl_profile_t *side[2] = {target, base};
  size_t n = 0, cap = 0;
  for (int s = 0; s < 2; s++) cap += fl_profile_n_frames(side[s]);
  definition_t *defs = fl__xmalloc(cap, sizeof *defs);
  for (int s = 0; s < 2; s++)
    for (size_t id = 0; id < fl_profile_n_frames(side[s]); id++) {
      const fl_frame_t *f = fl_profile_frame(side[s], (uint32_t)id);
      if ((f->flags & (FL_FRAME_REPL | FL_FRAME_CELL_BODY)) == FL_FRAME_REPL && f->func &&
          f->module)
        defs[n++] = (definition_t){.func = f->func, .module = f->module, .side = s};
    }
  qsort(defs, n, sizeof *defs, cmp_definition);
  size_t n_names = 0;
  const char **names = fl__xmalloc(n + 1, sizeof *names);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    bool sides[2] = {false, false}, common = false;
    for (; j < n && !strcmp(defs[j].func, defs[i].func); j++) {
      sides[defs[j].side] = true;
      if (j > i && defs[j].side != defs[j - 1].side && !strcmp(defs[j].module, defs[j - 1].module))
        common = true;
    }
    if (sides[0] && sides[1] && !common) names[n_names++] = defs[i].func;
    i = j;
  }
  names[n_names] = NULL;
  free(defs);
  return names;
}

/* ---- the diff ---- */

/* Whether profiles of kinds ti and bi can be compared. Returns 0, or -1
 * with err. */
static int check_kinds(const fl_profile_info_t *ti, const fl_profile_info_t *bi, char *err,
                       size_t err_size) {
  const fl_kind_info_t *tk = fl_kind(ti->kind), *bk = fl_kind(bi->kind);
  if (strcmp(tk->profile, bk->profile) != 0) {
    /* The kinds named in the table's order, whichever is the baseline. */
    const fl_kind_info_t *first = ti->kind < bi->kind ? tk : bk, *second = first == tk ? bk : tk;
    snprintf(err, err_size, "%s cannot be compared with %s: the baseline is %s and the target %s",
             first->profile, second->profile, bk->profile, tk->profile);
    return -1;
  }
  if (!fl_kind_comparable(ti->kind, bi->kind)) {
    snprintf(err, err_size,
             "%ss weighed differently cannot be compared: the baseline weighs %s and the target "
             "%s; take both with the same weight=bytes|count",
             strchr(tk->profile, ' ') + 1, bk->weighs, tk->weighs);
    return -1;
  }
  return 0;
}

/* Deltas over the whole drawn tree (for the neutral share), then the
 * shown nodes (vis_to_full: shown drawn id -> full drawn id). k converts
 * the other side's counts to drawn units. */
/* The diff of the narrow children of each shown node (full_to_vis NONE:
 * hidden), summed as one frame: inclusive counts on both sides whatever
 * opts.delta (a merged frame stands for whole subtrees, where the self
 * deltas sum to about the inclusive one), new when none has a partner. */
static void compute_narrow(fl_diff_t *d, const matcher_t *m, const uint32_t *vis_to_full,
                           const uint32_t *full_to_vis, double k) {
  size_t nsd = fl_tree_n_nodes(d->drawn);
  d->narrow = fl__xcalloc(nsd, sizeof *d->narrow);
  for (size_t v = 0; v < nsd; v++) {
    const fl_node_t *f = fl_tree_node(d->full_drawn, vis_to_full[v]);
    double x = 0, y = 0;
    bool any = false, paired = false;
    for (size_t c = 0; c < f->n_children; c++) {
      const fl_node_t *kid = f->children[c];
      if (full_to_vis[kid->id] != NONE) continue;
      uint32_t p = m->d.partner[kid->id];
      any = true;
      x += (double)kid->count;
      if (p == NONE) continue;
      paired = true;
      y += (double)fl_tree_node(d->full_other, p)->count;
    }
    if (!any) continue;
    fl_diff_node_t *r = &d->narrow[v];
    r->has_base = paired;
    r->base = k * y;
    r->delta = x - k * y;
    r->change = paired ? change_of(&d->opts, x, y, k, &r->z) : FL_CHANGE_NEW;
  }
}

static void compute_deltas(fl_diff_t *d, const matcher_t *m, const uint32_t *vis_to_full,
                           double k) {
  size_t nfd = m->d.n, nsd = fl_tree_n_nodes(d->drawn);
  fl_diff_node_t *full_nodes = fl__xmalloc(nfd, sizeof *full_nodes);
  d->nodes = fl__xmalloc(nsd, sizeof *d->nodes);
  double same_weight = 0;
  for (size_t i = 0; i < nfd; i++) {
    const fl_node_t *x = fl_tree_node(d->full_drawn, i);
    uint32_t p = m->d.partner[i];
    full_nodes[i] = node_diff(&d->opts, x, p == NONE ? NULL : fl_tree_node(d->full_other, p), k);
    if (full_nodes[i].change == FL_CHANGE_SAME) same_weight += (double)x->self;
  }
  uint64_t root_count = fl_tree_root(d->full_drawn)->count;
  if (root_count)
    d->neutral_share = same_weight / (double)root_count;
  else
    d->neutral_share = full_nodes[0].change == FL_CHANGE_SAME ? 1 : 0;
  d->max_delta = 0;
  for (size_t v = 0; v < nsd; v++) {
    d->nodes[v] = full_nodes[vis_to_full[v]];
    fl_change_t c = d->nodes[v].change;
    if ((c == FL_CHANGE_GREW || c == FL_CHANGE_SHRANK) && fabs(d->nodes[v].delta) > d->max_delta)
      d->max_delta = fabs(d->nodes[v].delta);
  }
  free(full_nodes);
}

/* Vanished: shown nodes of the other tree with no partner whose parent
 * has one, widest first (full_to_vis_d and full_to_vis_o: full id ->
 * shown id of each side). */
static void find_vanished(fl_diff_t *d, const matcher_t *m, const uint32_t *full_to_vis_d,
                          const uint32_t *full_to_vis_o, double k) {
  size_t nfo = m->o.n, nv = 0;
  for (size_t i = 1; i < nfo; i++)
    if (m->o.partner[i] == NONE && full_to_vis_o[i] != NONE &&
        m->o.partner[fl_tree_node(d->full_other, i)->parent->id] != NONE)
      nv++;
  d->vanished = fl__xmalloc(nv, sizeof *d->vanished);
  for (size_t i = 1; i < nfo; i++) {
    const fl_node_t *y = fl_tree_node(d->full_other, i);
    uint32_t parent_partner = m->o.partner[y->parent->id];
    if (m->o.partner[i] != NONE || full_to_vis_o[i] == NONE || parent_partner == NONE) continue;
    uint32_t pm = full_to_vis_d[parent_partner];
    d->vanished[d->n_vanished++] = (fl_vanished_t){
        .node = fl_tree_node(d->other, full_to_vis_o[i]),
        .count = k * (double)y->count,
        .parent_match = pm == NONE ? NULL : fl_tree_node(d->drawn, pm),
    };
  }
  qsort(d->vanished, d->n_vanished, sizeof *d->vanished, cmp_vanished);
}

/* ---- functions ---- */

static uint32_t uf_find(uint32_t *up, uint32_t x) {
  while (up[x] != x) x = up[x] = up[up[x]];
  return x;
}

/* Joins x's and y's sets, under the smaller root: a drawn row's first. */
static void uf_join(uint32_t *up, uint32_t x, uint32_t y) {
  x = uf_find(up, x);
  y = uf_find(up, y);
  if (x != y) up[x > y ? x : y] = x < y ? x : y;
}

static int cmp_row_function(const void *pa, const void *pb) {
  return fl__flat_row_cmp_function(*(const fl__flat_row_t *const *)pa,
                                   *(const fl__flat_row_t *const *)pb);
}

/* Joins the rows of a[0..na) and b[0..nb) (at na + j in up) that are the
 * same function. */
static void join_same_functions(uint32_t *up, fl__flat_row_t *a, size_t na, fl__flat_row_t *b,
                                size_t nb) {
  fl__flat_row_t **pa = fl__xmalloc(na + 1, sizeof *pa), **pb = fl__xmalloc(nb + 1, sizeof *pb);
  for (size_t i = 0; i < na; i++) pa[i] = &a[i];
  for (size_t j = 0; j < nb; j++) pb[j] = &b[j];
  qsort(pa, na, sizeof *pa, cmp_row_function);
  qsort(pb, nb, sizeof *pb, cmp_row_function);
  for (size_t i = 0, j = 0; i < na && j < nb;) {
    int c = fl__flat_row_cmp_function(pa[i], pb[j]);
    if (c == 0) uf_join(up, (uint32_t)(pa[i] - a), (uint32_t)(na + (size_t)(pb[j] - b)));
    if (c <= 0) i++;
    if (c >= 0) j++;
  }
  free(pa);
  free(pb);
}

/* d->funcs's rows: the rows of fl_diff_functions, from the full trees' functions
 * (fl__flat_rows_of by function) joined when they are the same function or
 * the matching paired frames of them (union-find over the drawn rows, then
 * the other rows), summed per row on each side by fl__group_sums. */
static void build_functions(const fl_diff_t *d) {
  double k = fl_diff_factor(d);
  size_t nfd = fl_tree_n_nodes(d->full_drawn), nfo = fl_tree_n_nodes(d->full_other);
  fl__flat_row_t *a = NULL, *b = NULL;
  uint32_t *row_a = NULL, *row_b = NULL;
  size_t na = fl__flat_rows_of(d->full_drawn, true, &a, &row_a);
  size_t nb = fl__flat_rows_of(d->full_other, true, &b, &row_b);
  size_t n = na + nb;
  uint32_t *up = fl__xmalloc(n ? n : 1, sizeof *up), *comp = fl__xmalloc(n ? n : 1, sizeof *comp);
  for (size_t i = 0; i < n; i++) up[i] = (uint32_t)i;
  join_same_functions(up, a, na, b, nb);
  for (size_t i = 1; i < nfd; i++) {
    uint32_t p = d->partner[i];
    if (p != NONE && p != 0) uf_join(up, row_a[i], (uint32_t)na + row_b[p]);
  }
  /* Rows numbered by their first member: drawn rows by width, then other ones. */
  size_t nc = 0;
  for (size_t i = 0; i < n; i++) comp[i] = NONE;
  for (size_t i = 0; i < n; i++) {
    uint32_t r = uf_find(up, (uint32_t)i);
    if (comp[r] == NONE) comp[r] = (uint32_t)nc++;
    comp[i] = comp[r];
  }
  fl_diff_func_t *rows = fl__xcalloc(nc ? nc : 1, sizeof *rows);
  /* The widest member of each side names the row: rows come sorted by count. */
  for (size_t i = n; i-- > 0;) {
    fl_diff_func_t *f = &rows[comp[i]];
    if (i >= na)
      f->other_frame = &b[i - na].node->frame;
    else
      f->frame = &a[i].node->frame;
  }
  /* Each node's row, for the sums (a tree without frames has no row_of). */
  fl__group_sum_t *sd = fl__xcalloc(nc + 1, sizeof *sd), *so = fl__xcalloc(nc + 1, sizeof *so);
  for (size_t i = 1; i < nfd; i++) row_a[i] = comp[row_a[i]];
  for (size_t i = 1; i < nfo; i++) row_b[i] = comp[na + row_b[i]];
  if (row_a) fl__group_sums(d->full_drawn, row_a, nc, sd);
  if (row_b) fl__group_sums(d->full_other, row_b, nc, so);
  bool self = d->opts.delta == FL_DELTA_SELF;
  for (size_t c = 0; c < nc; c++) {
    fl_diff_func_t *f = &rows[c];
    f->self = (double)sd[c].self;
    f->total = (double)sd[c].count;
    f->base_self = k * (double)so[c].self;
    f->base_total = k * (double)so[c].count;
    f->delta = self ? f->self - f->base_self : f->total - f->base_total;
    if (!f->other_frame) {
      f->change = FL_CHANGE_NEW;
    } else if (!f->frame) {
      f->frame = f->other_frame;
      f->change = FL_CHANGE_VANISHED;
    } else {
      f->change = change_of(&d->opts, self ? f->self : f->total,
                            (double)(self ? so[c].self : so[c].count), k, &f->z);
    }
  }
  *d->funcs = (struct funcs){.rows = rows, .n = nc, .built = true};
  free(sd);
  free(so);
  free(up);
  free(comp);
  free(row_a);
  free(row_b);
  free(a);
  free(b);
}

fl_diff_t *fl_diff_build(const fl_profile_t *target, const fl_profile_t *base,
                         const fl_tree_opts_t *tree_opts, const fl_diff_opts_t *opts,
                         const char *root_name, char *err, size_t err_size) {
  fl_diff_t *d = NULL;
  fl__strset_t names = {0};
  matcher_t m = {0};
  uint32_t *vis_to_full_d = NULL, *full_to_vis_d = NULL, *vis_to_full_o = NULL,
           *full_to_vis_o = NULL;
  const char **redefined = NULL;

  /* The kinds compared: the profiles' own, or the one kind= draws of both. */
  fl_profile_info_t tinfo = *fl_profile_info_const(target), binfo = *fl_profile_info_const(base);
  if (tree_opts && tree_opts->kind != FL_TREE_KIND_MAIN)
    tinfo.kind = binfo.kind = (fl_profile_kind_t)tree_opts->kind;
  const fl_profile_info_t *ti = &tinfo, *bi = &binfo;
  if (check_kinds(ti, bi, err, err_size) < 0) {
    /* Profiles of several kinds may share one that compares. */
    uint32_t both = fl_profile_kinds(target) & fl_profile_kinds(base);
    if (both) {
      const fl_kind_info_t *k = fl_kind((fl_profile_kind_t)__builtin_ctz(both));
      size_t len = strlen(err);
      snprintf(err + len, err_size - len, "; both hold %s: kind=%s compares them", k->what,
               k->name);
    }
    return NULL;
  }

  fl_tree_opts_t shown_opts, full_opts;
  if (tree_opts)
    shown_opts = *tree_opts;
  else
    fl_tree_opts_init(&shown_opts);
  if (shown_opts.lines != FL_LINES_OFF) { /* cells' code is drawn by line */
    redefined = redefined_functions(target, base);
    shown_opts.whole_functions = redefined;
  }
  full_opts = shown_opts;
  full_opts.minwidth = 0;
  bool hide = shown_opts.minwidth > 0;

  d = fl__xcalloc(1, sizeof *d);
  if (opts)
    d->opts = *opts;
  else
    fl_diff_opts_init(&d->opts);
  const fl_profile_t *pd = d->opts.negate ? base : target, *po = d->opts.negate ? target : base;
  if (!(d->full_drawn = fl_tree_build(pd, &full_opts, root_name, err, err_size)) ||
      !(d->full_other = fl_tree_build(po, &full_opts, root_name, err, err_size)))
    goto fail;
  if (hide) {
    if (!(d->drawn = fl_tree_build(pd, &shown_opts, root_name, err, err_size)) ||
        !(d->other = fl_tree_build(po, &shown_opts, root_name, err, err_size)))
      goto fail;
  } else {
    d->drawn = d->full_drawn;
    d->other = d->full_other;
  }

  const fl_tree_t *full_t = d->opts.negate ? d->full_other : d->full_drawn;
  const fl_tree_t *full_b = d->opts.negate ? d->full_drawn : d->full_other;
  compute_scale(d, ti, bi, fl_tree_root(full_t)->count, fl_tree_root(full_b)->count);
  if (redefined && redefined[0]) note_redefined(d, redefined);
  double k = fl_diff_factor(d); /* other units -> drawn units */

  /* Matching. */
  fl__diff_side_init(&m.d, d->full_drawn, &names, d->opts.root_prefix);
  fl__diff_side_init(&m.o, d->full_other, &names, d->opts.root_prefix);
  fl__diff_match_trees(&m);
  note_roots(d, &m);

  /* Shown ids against full ids. */
  size_t nfd = m.d.n, nfo = m.o.n, nsd = fl_tree_n_nodes(d->drawn), nso = fl_tree_n_nodes(d->other);
  vis_to_full_d = fl__xmalloc(nsd, sizeof *vis_to_full_d);
  full_to_vis_d = fl__xmalloc(nfd, sizeof *full_to_vis_d);
  vis_to_full_o = fl__xmalloc(nso, sizeof *vis_to_full_o);
  full_to_vis_o = fl__xmalloc(nfo, sizeof *full_to_vis_o);
  if (map_shown(d->full_drawn, d->drawn, vis_to_full_d, full_to_vis_d) < 0 ||
      map_shown(d->full_other, d->other, vis_to_full_o, full_to_vis_o) < 0) {
    snprintf(err, err_size, "internal error: the shown flame graph differs from the full one");
    goto fail;
  }

  compute_deltas(d, &m, vis_to_full_d, k);
  if (d->drawn != d->full_drawn) compute_narrow(d, &m, vis_to_full_d, full_to_vis_d, k);
  find_vanished(d, &m, full_to_vis_d, full_to_vis_o, k);
  d->partner = m.d.partner; /* kept for the functions */
  m.d.partner = NULL;
  d->funcs = fl__xcalloc(1, sizeof *d->funcs);
  goto done;

fail:
  fl_diff_destroy(&d);
done:
  free(vis_to_full_d);
  free(full_to_vis_d);
  free(vis_to_full_o);
  free(full_to_vis_o);
  free(m.work);
  fl__diff_side_free(&m.d);
  fl__diff_side_free(&m.o);
  fl__strset_free(&names);
  free(redefined);
  return d;
}

void fl_diff_destroy(fl_diff_t **dp) {
  fl_diff_t *d = *dp;
  if (!d) return;
  if (d->drawn != d->full_drawn) fl_tree_destroy(&d->drawn);
  if (d->other != d->full_other) fl_tree_destroy(&d->other);
  fl_tree_destroy(&d->full_drawn);
  fl_tree_destroy(&d->full_other);
  free(d->nodes);
  free(d->narrow);
  free(d->vanished);
  if (d->funcs) free(d->funcs->rows);
  free(d->funcs);
  free(d->partner);
  free(d);
  *dp = NULL;
}

const fl_tree_t *fl_diff_tree(const fl_diff_t *d) {
  return d->drawn;
}
const fl_tree_t *fl_diff_other_tree(const fl_diff_t *d) {
  return d->other;
}
const fl_diff_opts_t *fl_diff_options(const fl_diff_t *d) {
  return &d->opts;
}

const fl_diff_node_t *fl_diff_narrow(const fl_diff_t *d, uint32_t id) {
  return d->narrow && id < fl_tree_n_nodes(d->drawn) ? &d->narrow[id] : NULL;
}

const fl_diff_node_t *fl_diff_node(const fl_diff_t *d, uint32_t id) {
  return id < fl_tree_n_nodes(d->drawn) ? &d->nodes[id] : NULL;
}

size_t fl_diff_vanished(const fl_diff_t *d, const fl_vanished_t **out) {
  *out = d->vanished;
  return d->n_vanished;
}

size_t fl_diff_functions(const fl_diff_t *d, const fl_diff_func_t **out) {
  if (!d->funcs->built) build_functions(d);
  *out = d->funcs->rows;
  return d->funcs->n;
}

double fl_diff_scale(const fl_diff_t *d) {
  return d->scale;
}

double fl_diff_factor(const fl_diff_t *d) {
  return d->opts.negate ? 1 / d->scale : d->scale;
}

fl_change_t fl_diff_change_of(const fl_diff_t *d, double x, double y, double *z) {
  double ignored;
  return change_of(&d->opts, x, y, fl_diff_factor(d), z ? z : &ignored);
}

const char *const *fl_diff_notes(const fl_diff_t *d) {
  return d->notes;
}

double fl_diff_max_delta(const fl_diff_t *d) {
  return d->max_delta;
}

static int cmp_grown(const void *pa, const void *pb) {
  const fl_grown_t *a = pa, *b = pb;
  double ga = a->share - a->base_share, gb = b->share - b->base_share;
  if (ga != gb) return ga > gb ? -1 : 1;
  return (a->node->id > b->node->id) - (a->node->id < b->node->id);
}

/* The partner's count is base = scale * its own (fl_diff_build), so its
 * share of the other tree's total is base / (scale * that total). */
size_t fl_diff_grown(const fl_diff_t *d, double min_growth, fl_grown_t **out) {
  assert(!d->opts.negate);
  bool self = d->opts.delta == FL_DELTA_SELF;
  double total = (double)fl_tree_root(d->drawn)->count;
  double base_total = d->scale * (double)fl_tree_root(d->other)->count;
  size_t n = 0, n_nodes = fl_tree_n_nodes(d->drawn);
  *out = NULL;
  for (size_t i = 1; i < n_nodes && total > 0; i++) {
    const fl_node_t *node = fl_tree_node(d->drawn, i);
    const fl_diff_node_t *dn = &d->nodes[i];
    double share = (double)(self ? node->self : node->count) / total;
    double base_share = 0;
    if (dn->has_base && base_total > 0) base_share = (self ? dn->base_self : dn->base) / base_total;
    if (share - base_share <= min_growth) continue;
    *out = fl__xrealloc(*out, n + 1, sizeof **out);
    (*out)[n++] = (fl_grown_t){.node = node, .base_share = base_share, .share = share};
  }
  if (n) qsort(*out, n, sizeof **out, cmp_grown);
  return n;
}

double fl_diff_neutral_share(const fl_diff_t *d) {
  return d->neutral_share;
}
