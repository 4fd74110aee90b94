/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_tree: the flame graph tree of a profile.
 *
 * Building a tree takes five steps, none of which probes a hash table per
 * sample or per frame of a sample; steps 1 to 4 are fl_tree_paths.c's,
 * step 5 and the reading of a built tree this file's:
 *
 *  1. Roles. Each distinct frame of the profile is looked at once: which
 *     node identity ("key") it has under the options (lines, combine), which
 *     function it belongs to (for recur=flat), whether C=false folds it away
 *     and with which status bits, whether it is pruned, whether it matches
 *     the filter. Keys are numbered in the order their children should be
 *     drawn in (see "children order").
 *  2. Stacks. Samples that pass the thread filter are summed per distinct
 *     stack (the profile numbers its distinct stacks: fl_sample_t.stack_id),
 *     so a profile of 10^6 samples over 10^5 stacks goes on with 10^5
 *     stacks.
 *  3. Paths. Each stack that passes the filter (its frames read from the
 *     profile's prefix tree, one stack at a time) becomes its path of keys
 *     from the root: folded frames are dropped and mark the element above them,
 *     recursion rewinds, a pruned frame ends the path.
 *  4. Trie. The paths are sorted, so that paths with a common prefix are
 *     neighbours, and the nodes are made from each path's difference to the
 *     one before it: nodes come out in depth-first pre-order, each child
 *     after its parent. A path's weight goes to the self count of its last
 *     node; inclusive counts are summed afterwards, children into parents.
 *  5. Layout. Children are put in order, frames narrower than minwidth are
 *     hidden, and the visible nodes are laid out in pre-order into one array
 *     (ids are indexes into it), each child's range packed from its
 *     parent's x0, its parent's self range last.
 *
 * Decisions where FlameGraphs.jl leaves room:
 *  - lines=false wins over combine=false: one node per function.
 *  - Whether a frame is drawn by line is decided per frame, in by_line
 *    (fl_tree_paths.c), the one place lines=auto is made into a rule (see
 *    fl_tree.h).
 *  - A node's frame is the first profile frame (by id) with its key, with
 *    addr 0 under combine=true and line 0 for a frame drawn by function
 *    (and file the first non-NULL file seen for the function).
 *  - C=false: a folded frame's status bits go to the element of the path
 *    that is last when the frame is met (the nearest kept caller, or the
 *    root), so a comparator called by qsort hangs under the cell frame that
 *    called qsort, which is marked FL_STATUS_SYSTEM. FL_FRAME_SYSTEM gives
 *    FL_STATUS_SYSTEM and FL_FRAME_ALLOC gives FL_STATUS_ALLOC (malloc in
 *    libc, flagged both, gives both). A wait keeps the call that waited:
 *    the first frame of a folded run that ends in a wait's leaf (not a
 *    wait for a CPU) stays, the rest of the run folded into it.
 *  - The filter looks at every frame of the sample as recorded, including
 *    frames that C=false folds away and frames below a pruned one, so
 *    filter=qsort keeps the stacks that went through qsort.
 *  - recur=flat: when the function of a frame (same func and module) is
 *    already on the path, the path rewinds to that earlier element if the
 *    frame has the same key, else to the earlier element's parent and goes
 *    on from there (so with lines on, f:5 inside a recursion started at f:3
 *    becomes a sibling of f:3, as the lines of a loop body are). Status bits
 *    of elements a rewind removes are dropped with them.
 *  - Children order: where some frame is drawn by line, by the child's
 *    (file, line, func, module, addr), NULL files first (a frame drawn by
 *    function has line 0); where none is, by the smallest line
 *    of the parent frame at which the call was seen (the call site), then
 *    func and module.
 *  - minwidth: a node with count < minwidth * (root count) is hidden with
 *    its subtree; the parent keeps its self count, so the hidden weight
 *    leaves a gap after the drawn children, which the drawings fill with
 *    one merged frame per parent from its list of hidden children
 *    (fl_tree_narrow). fl_tree_hidden counts every hidden node
 *    (descendants included) and the weight of the topmost ones. */
#define _GNU_SOURCE
#include "cflame/fl_tree.h"

#include <inttypes.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__tree.h"

struct fl_tree {
  const fl_profile_t *profile;
  fl_node_t *nodes; /* n_nodes, in pre-order; nodes[i].id == i */
  size_t n_nodes;
  fl_node_t **child_ptrs; /* every node's children, back to back */
  char *root_name;
  int max_depth;
  size_t hidden;
  uint64_t hidden_weight;
  fl_narrow_t *narrow;  /* every drawn node's hidden children, node by node */
  size_t *narrow_first; /* n_nodes + 1: node i's are [narrow_first[i], [i + 1]) */
  uint32_t *stack_node; /* by the profile's stack id: the drawn node its
                           samples end in, or UINT32_MAX */
  size_t n_stacks;
  int *threads; /* the thread filter, sorted; NULL: all */
  size_t n_threads;
  fl__select_t sel;       /* the samples it takes: its kind, on threads */
  fl_profile_info_t info; /* the profile's, with sel.kind and its totals */
  bool inverted;          /* the callers' tree */
};

/* ---- layout ---- */

typedef struct kid {
  uint32_t node;
  uint32_t key;
  int call_line;
} kid_t;

/* Children without lines: by call site, then name and module (the key
 * order). With lines, the key order alone, which the trie already gives. */
static int cmp_kid_by_call(const void *pa, const void *pb) {
  const kid_t *a = pa, *b = pb;
  if (a->call_line != b->call_line) return a->call_line < b->call_line ? -1 : 1;
  return (a->key > b->key) - (a->key < b->key);
}

static int cmp_child_frame(const void *pa, const void *pb) {
  const fl_frame_t *a = &(*(const fl_node_t *const *)pa)->frame;
  const fl_frame_t *b = &(*(const fl_node_t *const *)pb)->frame;
  if (a->func != b->func) return (uintptr_t)a->func < (uintptr_t)b->func ? -1 : 1;
  if (a->line != b->line) return a->line < b->line ? -1 : 1;
  if (a->module != b->module) return (uintptr_t)a->module < (uintptr_t)b->module ? -1 : 1;
  return (a->addr > b->addr) - (a->addr < b->addr);
}

/* Sets each child's label_detail from its siblings. Strings are interned
 * by the profile, so equal names are equal pointers. */
static void set_label_details(fl_tree_t *t) {
  size_t most = 0;
  for (size_t i = 0; i < t->n_nodes; i++)
    if (t->nodes[i].n_children > most) most = t->nodes[i].n_children;
  if (most < 2) return;
  fl_node_t **kids = fl__xmalloc(most, sizeof *kids);
  for (size_t i = 0; i < t->n_nodes; i++) {
    const fl_node_t *n = &t->nodes[i];
    size_t k = n->n_children;
    if (k < 2) continue;
    memcpy(kids, n->children, k * sizeof *kids);
    qsort(kids, k, sizeof *kids, cmp_child_frame);
    /* Runs of one name, and within them runs of one line. */
    for (size_t a = 0, b; a < k; a = b) {
      for (b = a + 1; b < k && kids[b]->frame.func == kids[a]->frame.func;) b++;
      if (b - a < 2) continue;
      for (size_t c = a, e; c < b; c = e) {
        bool modules = false;
        for (e = c + 1; e < b && kids[e]->frame.line == kids[c]->frame.line; e++)
          modules |= kids[e]->frame.module != kids[c]->frame.module;
        uint8_t detail = e - c < 2 ? FL_LABEL_LINE : modules ? FL_LABEL_MODULE : FL_LABEL_ADDR;
        for (size_t q = c; q < e; q++) kids[q]->label_detail = detail;
      }
    }
  }
  free(kids);
}

char *fl_node_label(const fl_node_t *n) {
  const fl_frame_t *f = &n->frame;
  const char *func = f->func ? f->func : "[unknown]";
  char line[32] = "";
  if (f->line > 0) snprintf(line, sizeof line, ":%d", f->line);
  fl__buf_t out = {0};
  switch (n->label_detail) {
    case FL_LABEL_LINE: fl__buf_printf(&out, "%s%s", func, line); break;
    case FL_LABEL_MODULE:
      fl__buf_printf(&out, "%s%s (%s)", func, line, f->module ? f->module : "?");
      break;
    case FL_LABEL_ADDR: fl__buf_printf(&out, "%s%s @0x%" PRIx64, func, line, f->addr); break;
    default: fl__buf_puts(&out, func);
  }
  return fl__buf_take(&out);
}

/* Widest first, then by name and line: pointers into one profile's
 * interned strings are compared by their text, so that the order does not
 * depend on where the strings lie. */
static int cmp_narrow(const void *pa, const void *pb) {
  const fl_narrow_t *a = pa, *b = pb;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  int c = strcmp(a->frame.func ? a->frame.func : "", b->frame.func ? b->frame.func : "");
  if (c) return c;
  return (a->frame.line > b->frame.line) - (a->frame.line < b->frame.line);
}

/* Lays the build nodes out into t: sums inclusive counts, orders children,
 * hides narrow ones, numbers the visible ones in pre-order. The drawn
 * nodes are charged to the budget once they are known: -1 when it
 * refuses. */
static int lay_out(builder_t *b, fl_tree_t *t, const stack_sum_t *sums, size_t n_sums) {
  size_t nb = b->n_nodes;
  bnode_t *bn = b->nodes;
  size_t *first = fl__xcalloc(nb + 1, sizeof *first); /* kids of i: [first[i], first[i + 1]) */
  size_t *fill = fl__xmalloc(nb, sizeof *fill);
  kid_t *kids = fl__xmalloc(nb, sizeof *kids);
  uint32_t *id_of = fl__xmalloc(nb, sizeof *id_of); /* UINT32_MAX: not drawn */
  uint32_t *order = fl__xmalloc(nb, sizeof *order);
  uint32_t *todo = fl__xmalloc(nb, sizeof *todo);

  /* Inclusive counts: children come after their parents. */
  for (size_t i = 0; i < nb; i++) {
    bn[i].count = bn[i].self;
    bn[i].allocs = bn[i].self_allocs;
  }
  for (size_t i = nb; i-- > 1;) {
    bn[bn[i].parent].count += bn[i].count;
    bn[bn[i].parent].allocs += bn[i].allocs;
  }

  /* Children lists, in the order the nodes were made. */
  for (size_t i = 1; i < nb; i++) first[bn[i].parent + 1]++;
  for (size_t i = 0; i < nb; i++) first[i + 1] += first[i];
  memcpy(fill, first, nb * sizeof *fill);
  for (size_t i = 1; i < nb; i++)
    kids[fill[bn[i].parent]++] =
        (kid_t){.node = (uint32_t)i, .key = bn[i].key, .call_line = bn[i].call_line};
  if (!b->any_line) {
    for (size_t i = 0; i < nb; i++) {
      kid_t *k = kids + first[i];
      size_t n = first[i + 1] - first[i], j = 1;
      while (j < n && cmp_kid_by_call(&k[j - 1], &k[j]) <= 0) j++;
      if (j < n) qsort(k, n, sizeof *k, cmp_kid_by_call);
    }
  }

  /* What is drawn: see the file comment on minwidth. A node with no
   * weight (only from samples of weight 0) is neither drawn nor hidden. */
  double minwidth = b->o->minwidth > 0 ? b->o->minwidth : 0;
  double threshold = minwidth * (double)bn[0].count;
  id_of[0] = 0;
  t->hidden = 0;
  t->hidden_weight = 0;
  for (size_t i = 1; i < nb; i++) {
    bool drawn = bn[i].count && !((double)bn[i].count < threshold);
    id_of[i] = drawn ? 0 : UINT32_MAX;
    if (bn[i].count && !drawn) {
      t->hidden++;
      uint32_t parent = bn[i].parent;
      if (parent == 0 || !((double)bn[parent].count < threshold)) t->hidden_weight += bn[i].count;
    }
  }

  /* Pre-order numbering. */
  size_t n_todo = 0, n = 0;
  todo[n_todo++] = 0;
  while (n_todo) {
    uint32_t i = todo[--n_todo];
    id_of[i] = (uint32_t)n;
    order[n++] = i;
    for (size_t k = first[i + 1]; k-- > first[i];)
      if (id_of[kids[k].node] != UINT32_MAX) todo[n_todo++] = kids[k].node;
  }
  int rc = -1;
  if (fl_budget_charge_n(b->budget, n, DRAWN_NODE_BYTES, 0) < 0) goto done;
  /* The narrow lists: a hidden node under a drawn parent each. */
  size_t n_narrow = 0;
  for (size_t i = 1; i < nb; i++)
    n_narrow += id_of[i] == UINT32_MAX && bn[i].count && id_of[bn[i].parent] != UINT32_MAX;
  if (fl_budget_charge_n(b->budget, n_narrow, sizeof(fl_narrow_t), 0) < 0 ||
      fl_budget_charge_n(b->budget, n + 1, sizeof(size_t), 0) < 0)
    goto done;
  t->narrow = fl__xmalloc(n_narrow ? n_narrow : 1, sizeof *t->narrow);
  t->narrow_first = fl__xcalloc(n + 1, sizeof *t->narrow_first);
  n_narrow = 0;

  t->nodes = fl__xcalloc(n, sizeof *t->nodes);
  t->child_ptrs = fl__xmalloc(n > 1 ? n - 1 : 1, sizeof *t->child_ptrs);
  t->n_nodes = n;
  t->max_depth = 0;
  size_t next_child = 0;
  for (size_t id = 0; id < n; id++) {
    const bnode_t *src = &bn[order[id]];
    fl_node_t *node = &t->nodes[id];
    /* parent, depth and x0 were set by the parent (the root's are 0) */
    if (id == 0)
      node->frame = (fl_frame_t){.func = t->root_name, .flags = FL_FRAME_ROOT};
    else
      node->frame = b->keys[src->key];
    node->count = src->count;
    node->self = src->self;
    node->allocs = src->allocs;
    node->self_allocs = src->self_allocs;
    node->x1 = node->x0 + node->count;
    node->status = src->status;
    node->id = (uint32_t)id;
    if (node->depth > t->max_depth) t->max_depth = node->depth;
    node->children = t->child_ptrs + next_child;
    uint64_t x = node->x0;
    t->narrow_first[id] = n_narrow;
    for (size_t k = first[order[id]]; k < first[order[id] + 1]; k++) {
      uint32_t cid = id_of[kids[k].node];
      const bnode_t *kid = &bn[kids[k].node];
      if (cid == UINT32_MAX && kid->count)
        t->narrow[n_narrow++] =
            (fl_narrow_t){.frame = b->keys[kid->key], .count = kid->count, .allocs = kid->allocs};
      if (cid == UINT32_MAX) continue;
      fl_node_t *child = &t->nodes[cid];
      child->parent = node;
      child->depth = node->depth + 1;
      child->x0 = x;
      x += bn[kids[k].node].count;
      t->child_ptrs[next_child++] = child;
      node->n_children++;
    }
    if (!node->n_children) node->children = NULL;
    qsort(t->narrow + t->narrow_first[id], n_narrow - t->narrow_first[id], sizeof *t->narrow,
          cmp_narrow);
  }
  t->narrow_first[n] = n_narrow;
  set_label_details(t);
  t->n_stacks = fl_profile_n_stacks(b->p);
  t->stack_node = fl__xmalloc(t->n_stacks ? t->n_stacks : 1, sizeof *t->stack_node);
  memset(t->stack_node, 0xff, t->n_stacks * sizeof *t->stack_node);
  for (size_t s = 0; s < n_sums; s++)
    if (b->sum_node[s] != UINT32_MAX) t->stack_node[sums[s].stack_id] = id_of[b->sum_node[s]];
  rc = 0;
done:
  free(first);
  free(fill);
  free(kids);
  free(id_of);
  free(order);
  free(todo);
  return rc;
}

/* ---- the tree ---- */

static void builder_free(builder_t *b) {
  if (b->re_ok) regfree(&b->re);
  free(b->roles);
  free(b->keys);
  free(b->paths);
  free(b->path_keys);
  free(b->path_status);
  free(b->path_calls);
  free(b->root_status);
  free(b->nodes);
  free(b->sum_node);
}

/* Why budget stopped the tree of p: "the flame graph of x.gz (folded
 * stacks) needs more than ...". */
static void refused_message(const fl_profile_t *p, const fl_budget_t *budget, char *err,
                            size_t err_size) {
  const char *source = fl_profile_info_const(p)->source;
  char subject[300];
  snprintf(subject, sizeof subject, "the flame graph%s%s", *source ? " of " : "", source);
  fl_budget_message(budget, subject, err, err_size);
}

/* The kind opts ask p's samples of into *kind. Returns 0, or -1 with err
 * naming the kinds p holds when it holds samples, none of that kind. */
static int choose_kind(const fl_profile_t *p, const fl_tree_opts_t *opts, fl_profile_kind_t *kind,
                       char *err, size_t err_size) {
  *kind = opts->kind == FL_TREE_KIND_MAIN ? fl_profile_info_const(p)->kind
                                          : (fl_profile_kind_t)opts->kind;
  uint32_t held = fl_profile_kinds(p);
  if (!held || held & (1u << *kind)) return 0;
  fl__buf_t b = FL__BUF_INIT;
  fl__buf_printf(&b, "kind: the profile holds no %s (%s); choose", fl_kind(*kind)->what,
                 fl_kind(*kind)->name);
  unsigned n = (unsigned)__builtin_popcount(held), i = 0;
  for (unsigned k = 0; k < FL_PROFILE_N_KINDS; k++)
    if (held & (1u << k))
      fl__buf_printf(&b, "%s %s (%s)",
                     !i++     ? ""
                     : i == n ? " or"
                              : ",",
                     fl_kind(k)->name, fl_kind(k)->what);
  snprintf(err, err_size, "%s", b.data);
  fl__buf_free(&b);
  return -1;
}

/* opts NULL: the defaults; root_name NULL: "all". */
fl_tree_t *fl_tree_build(const fl_profile_t *p, const fl_tree_opts_t *opts, const char *root_name,
                         char *err, size_t err_size) {
  fl_tree_opts_t defaults;
  if (!opts) {
    fl_tree_opts_init(&defaults);
    opts = &defaults;
  }
  fl_profile_kind_t kind;
  if (choose_kind(p, opts, &kind, err, err_size) < 0) return NULL;
  fl_budget_t own;
  fl_budget_init(&own, opts->max_memory);
  builder_t b = {.p = p, .o = opts, .budget = opts->budget ? opts->budget : &own};
  if (fl_budget_stopped(b.budget)) {
    refused_message(p, b.budget, err, err_size);
    return NULL;
  }
  fl_tree_t *t = fl__xcalloc(1, sizeof *t);
  t->root_name = fl__xstrdup(root_name ? root_name : "all");
  t->profile = p;
  t->inverted = opts->inverted;
  t->info = *fl_profile_info_const(p);
  t->info.kind = kind;
  fl_kind_totals_t totals;
  fl_profile_kind_totals(p, kind, &totals);
  t->info.samples = totals.samples;
  t->info.total_weight = totals.weight;
  t->info.total_allocs = totals.allocs;
  if (opts->threads) {
    t->n_threads = opts->n_threads;
    t->threads = fl__xmalloc(t->n_threads ? t->n_threads : 1, sizeof *t->threads);
    if (t->n_threads) memcpy(t->threads, opts->threads, t->n_threads * sizeof *t->threads);
    qsort(t->threads, t->n_threads, sizeof *t->threads, fl__tree_cmp_int);
  }
  t->sel = (fl__select_t){
      .kind = kind, .takes = fl_kind_takes(kind), .threads = t->threads, .n_threads = t->n_threads};
  if (opts->filter && opts->filter_is_regex) {
    int rc = regcomp(&b.re, opts->filter, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char why[256];
      regerror(rc, &b.re, why, sizeof why);
      snprintf(err, err_size, "filter: bad regular expression \"%s\": %s", opts->filter, why);
      fl_tree_destroy(&t);
      return NULL;
    }
    b.re_ok = true;
  }
  /* The frames' roles and keys, and a sum of each distinct stack: what the
   * profile holds already decides them, charged all the same (a view
   * is drawn under its own budget). */
  size_t n_frames = fl_profile_n_frames(p), n_stacks = fl_profile_n_stacks(p);
  if (fl_budget_charge_n(b.budget, n_frames,
                         sizeof(frame_role_t) + sizeof(fl_frame_t) + sizeof(ident_t) + 16, 0) < 0 ||
      fl_budget_charge_n(b.budget, n_stacks, 2 * sizeof(stack_sum_t) + 2 * sizeof(uint32_t), 0) < 0)
    goto refused;
  fl__tree_roles(&b);
  size_t max_len = 0;
  stack_sum_t *sums = NULL;
  size_t n_sums = fl__tree_sum_stacks(p, &t->sel, b.budget, &sums, &max_len);
  if (fl_budget_stopped(b.budget)) goto refused_sums;
  b.sum_node = fl__xmalloc(n_sums ? n_sums : 1, sizeof *b.sum_node);
  memset(b.sum_node, 0xff, n_sums * sizeof *b.sum_node);
  /* The paths: a key, a status and a call line for each frame of each
   * distinct stack, every frame walked once (the work), and the levels of
   * the deepest. */
  size_t frames = 0;
  for (size_t s = 0; s < n_sums; s++) frames += sums[s].n;
  if (fl_budget_charge_n(b.budget, frames, sizeof(uint32_t) + 1 + sizeof(int), frames) < 0 ||
      fl_budget_charge_n(b.budget, n_sums, sizeof(path_t) + 1, 0) < 0 ||
      fl_budget_charge_n(b.budget, max_len + 1, 6 * sizeof(uint32_t) + sizeof(uint32_t), 0) < 0)
    goto refused_sums;
  fl__tree_paths(&b, sums, n_sums, max_len);
  if (fl_budget_stopped(b.budget) || fl__tree_nodes(&b, sums, max_len) < 0) goto refused_sums;
  if (lay_out(&b, t, sums, n_sums) < 0) goto refused_sums;
  builder_free(&b);
  free(sums);
  return t;
refused_sums:
  free(sums);
refused:
  refused_message(p, b.budget, err, err_size);
  builder_free(&b);
  fl_tree_destroy(&t);
  return NULL;
}

void fl_tree_destroy(fl_tree_t **tp) {
  fl_tree_t *t = *tp;
  if (!t) return;
  free(t->nodes);
  free(t->child_ptrs);
  free(t->root_name);
  free(t->stack_node);
  free(t->threads);
  free(t->narrow);
  free(t->narrow_first);
  free(t);
  *tp = NULL;
}

const fl_node_t *fl_tree_root(const fl_tree_t *t) {
  return &t->nodes[0];
}
const fl_profile_t *fl_tree_profile(const fl_tree_t *t) {
  return t->profile;
}
size_t fl_tree_n_nodes(const fl_tree_t *t) {
  return t->n_nodes;
}

const fl_node_t *fl_tree_node(const fl_tree_t *t, size_t i) {
  return i < t->n_nodes ? &t->nodes[i] : NULL;
}

fl_profile_kind_t fl_tree_kind(const fl_tree_t *t) {
  return t->sel.kind;
}

const fl_profile_info_t *fl_tree_info(const fl_tree_t *t) {
  return &t->info;
}

const fl_node_t *fl_tree_node_of(const fl_tree_t *t, const fl_sample_t *s) {
  if (s->stack_id >= t->n_stacks || t->stack_node[s->stack_id] == UINT32_MAX) return NULL;
  if (!fl__select_takes(&t->sel, s)) return NULL;
  return &t->nodes[t->stack_node[s->stack_id]];
}

bool fl_tree_inverted(const fl_tree_t *t) {
  return t->inverted;
}

int fl_tree_max_depth(const fl_tree_t *t) {
  return t->max_depth;
}

size_t fl_tree_hidden(const fl_tree_t *t, uint64_t *hidden_weight) {
  if (hidden_weight) *hidden_weight = t->hidden_weight;
  return t->hidden;
}

size_t fl_tree_narrow(const fl_tree_t *t, const fl_node_t *n, const fl_narrow_t **items,
                      uint64_t *weight) {
  size_t id = n->id, a = t->narrow_first[id], z = t->narrow_first[id + 1];
  uint64_t sum = 0;
  for (size_t i = a; i < z; i++) sum += t->narrow[i].count;
  if (weight) *weight = sum;
  *items = z > a ? t->narrow + a : NULL;
  return z - a;
}

/* ---- rows ---- */

typedef struct width {
  uint64_t count;
  uint32_t id;
} width_t;

/* Widest first; among equals, the smaller id (so a parent, which is never
 * narrower than its child, always comes before it). */
static int cmp_by_width(const void *pa, const void *pb) {
  const width_t *a = pa, *b = pb;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

/* max_rows 0: no limit. Keeping the max_rows widest nodes keeps every
 * kept node's parent: a parent's count is at least its child's and it sorts
 * first among equals. */
size_t fl_tree_rows(const fl_tree_t *t, size_t max_rows, const fl_node_t ***rows,
                    size_t *n_merged) {
  size_t n = t->n_nodes, keep = max_rows && max_rows < n ? max_rows : n;
  const fl_node_t **out = fl__xmalloc(keep, sizeof *out);
  width_t *by_width = NULL;
  bool *kept = NULL;
  if (keep == n) {
    for (size_t i = 0; i < n; i++) out[i] = &t->nodes[i];
  } else {
    by_width = fl__xmalloc(n, sizeof *by_width);
    kept = fl__xcalloc(n, sizeof *kept);
    for (size_t i = 0; i < n; i++)
      by_width[i] = (width_t){.count = t->nodes[i].count, .id = (uint32_t)i};
    qsort(by_width, n, sizeof *by_width, cmp_by_width);
    for (size_t i = 0; i < keep; i++) kept[by_width[i].id] = true;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
      if (kept[i]) out[k++] = &t->nodes[i];
  }
  free(by_width);
  free(kept);
  *rows = out;
  if (n_merged) *n_merged = n - keep;
  return keep;
}
