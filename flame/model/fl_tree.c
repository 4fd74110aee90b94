/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_tree: the flame graph tree of a profile.
 *
 * Building a tree takes five steps, none of which probes a hash table per
 * sample or per frame of a sample:
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
 *  - Whether a frame is drawn by line is decided per frame, in by_line, the
 *    one place lines=auto is made into a rule (see fl_tree.h).
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

#include "fl__common.h"

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
  bool inverted; /* the callers' tree */
};

/* ---- identities ---- */

/* The fields that decide whether two frames share a node. Strings are the
 * profile's interned pointers, so equal strings are equal pointers. */
typedef struct ident {
  const char *func, *file, *module;
  int line;
  uint64_t addr;
  uint32_t kind; /* the frame's FL_FRAME_SYSTEM, _ALLOC and _KERNEL bits: a
                    module's name can stand for a system library and for a
                    program's own (libfoo.so in /usr/lib and in ~/build),
                    and C=false folds one and not the other */
} ident_t;

/* A set of identities, numbered in order of addition: an fl__index over
 * the items. */
typedef struct ident_set {
  ident_t *items; /* room for as many as it was sized for */
  size_t n;
  fl__index_t index;
} ident_set_t;

static uint64_t hash_ident(const ident_t *k) {
  uint64_t h = fl__mix64((uint64_t)(uintptr_t)k->func);
  h = fl__mix64(h ^ (uint64_t)(uintptr_t)k->file);
  h = fl__mix64(h ^ (uint64_t)(uintptr_t)k->module);
  h = fl__mix64(h ^ (uint64_t)(uint32_t)k->line ^ (uint64_t)k->kind << 32);
  return fl__mix64(h ^ k->addr);
}

static bool ident_equal(const ident_t *a, const ident_t *b) {
  return a->func == b->func && a->file == b->file && a->module == b->module && a->line == b->line &&
         a->addr == b->addr && a->kind == b->kind;
}

static void ident_set_free(ident_set_t *s) {
  free(s->items);
  fl__index_free(&s->index);
  memset(s, 0, sizeof *s);
}

/* Sizes the set for up to n identities. */
static void ident_set_init(ident_set_t *s, size_t n) {
  s->items = fl__xmalloc(n, sizeof *s->items);
  s->n = 0;
  fl__index_init(&s->index, n);
}

/* The number of k in s, added if new (the set was sized for it);
 * *added says whether it was. */
static uint32_t ident_set_add(ident_set_t *s, const ident_t *k, bool *added) {
  uint64_t h = hash_ident(k);
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&s->index, h, &pr); i != FL__NONE;
       i = fl__index_next(&s->index, &pr))
    if (ident_equal(&s->items[i], k)) {
      *added = false;
      return i;
    }
  uint32_t id = (uint32_t)s->n++;
  s->items[id] = *k;
  fl__index_add(&s->index, h, id);
  *added = true;
  return id;
}

/* ---- roles of frames ---- */

typedef struct frame_role {
  uint32_t key;  /* node identity: index into keys, in drawing order */
  uint32_t func; /* function identity (func, module), for recur=flat */
  uint32_t fold; /* C=false: the FL_STATUS_* bits it gives its caller; 0: kept */
  bool wait;     /* a wait's leaf (FL_FRAME_OFFCPU), not a wait for a CPU */
  bool pruned;
  bool match; /* the filter matches its function */
} frame_role_t;

/* A path of keys from the root (the root itself not included); small, for
 * sorting. */
typedef struct path {
  const uint32_t *keys; /* len keys in path_keys; status and call lines at
                           the same offset in path_status and path_calls */
  uint32_t len;
  uint32_t stack; /* the stack it came from: index into sums and root_status */
} path_t;

typedef struct bnode {
  uint64_t count, self, allocs, self_allocs; /* count, allocs: set by lay_out */
  uint32_t parent;
  uint32_t key;
  uint32_t status;
  int call_line; /* smallest line of the parent frame seen calling it */
} bnode_t;

/* The work of one build; freed at its end. */
typedef struct builder {
  const fl_profile_t *p;
  const fl_tree_opts_t *o;
  fl_budget_t *budget; /* charged for what the tree takes */
  frame_role_t *roles;
  fl_frame_t *keys; /* the representative frame of each key */
  size_t n_keys;
  size_t n_funcs;
  bool any_line; /* some frame is drawn by line: children in source order */
  regex_t re;
  bool re_ok;

  path_t *paths;
  size_t n_paths;
  size_t n_path_keys;
  uint32_t *path_keys; /* every path's keys, back to back */
  uint8_t *path_status;
  int *path_calls;      /* the line in the parent element where it was called */
  uint8_t *root_status; /* by stack: what was folded into the root */

  bnode_t *nodes; /* index 0 is the root; children after their parents */
  size_t n_nodes, nodes_cap;
  uint32_t *sum_node; /* by stack sum: the node its path ends in, or UINT32_MAX */
} builder_t;

static bool in_list(const char *const *names, const char *s) {
  if (!names) return false;
  for (; *names; names++)
    if (strcmp(*names, s) == 0) return true;
  return false;
}

static int cmp_str(const char *a, const char *b) {
  if (a == b) return 0;
  if (!a) return -1;
  if (!b) return 1;
  return strcmp(a, b);
}

typedef struct ranked {
  fl_frame_t frame;
  uint32_t key;
} ranked_t;

/* Source order of frames with lines: file (NULL first), line, func, module,
 * addr. */
static int cmp_by_line(const void *pa, const void *pb) {
  const fl_frame_t *a = &((const ranked_t *)pa)->frame, *b = &((const ranked_t *)pb)->frame;
  int c = cmp_str(a->file, b->file);
  if (c) return c;
  if (a->line != b->line) return a->line < b->line ? -1 : 1;
  if ((c = cmp_str(a->func, b->func)) != 0) return c;
  if ((c = cmp_str(a->module, b->module)) != 0) return c;
  return (a->addr > b->addr) - (a->addr < b->addr);
}

/* Functions without lines: by name, then module. */
static int cmp_by_name(const void *pa, const void *pb) {
  const fl_frame_t *a = &((const ranked_t *)pa)->frame, *b = &((const ranked_t *)pb)->frame;
  int c = cmp_str(a->func, b->func);
  return c ? c : cmp_str(a->module, b->module);
}

/* Renumbers the keys in the order of cmp_by_line (lines on) or cmp_by_name
 * (lines off), so that comparing key numbers compares frames. */
static void rank_keys(builder_t *b) {
  size_t n = b->n_keys, n_frames = fl_profile_n_frames(b->p);
  ranked_t *r = fl__xmalloc(n, sizeof *r);
  uint32_t *rank = fl__xmalloc(n, sizeof *rank);
  for (size_t k = 0; k < n; k++) r[k] = (ranked_t){.frame = b->keys[k], .key = (uint32_t)k};
  qsort(r, n, sizeof *r, b->any_line ? cmp_by_line : cmp_by_name);
  for (size_t k = 0; k < n; k++) {
    rank[r[k].key] = (uint32_t)k;
    b->keys[k] = r[k].frame;
  }
  for (size_t id = 0; id < n_frames; id++) b->roles[id].key = rank[b->roles[id].key];
  free(r);
  free(rank);
}

/* Whether frame f is drawn one node per source line: lines=auto draws a
 * notebook cell's code by line (a line is what its user edits) and the
 * rest, code the user did not write there, by function. */
static bool by_line(const fl_tree_opts_t *o, const fl_frame_t *f) {
  if (o->lines == FL_LINES_OFF) return false;
  if (o->lines == FL_LINES_AUTO && !(f->flags & FL_FRAME_REPL)) return false;
  return !in_list(o->whole_functions, f->func);
}

/* Fills b->roles and b->keys. */
static void compute_roles(builder_t *b) {
  const fl_tree_opts_t *o = b->o;
  size_t n = fl_profile_n_frames(b->p);
  ident_set_t keys, funcs;
  b->roles = fl__xcalloc(n, sizeof *b->roles);
  b->keys = fl__xmalloc(n, sizeof *b->keys);
  ident_set_init(&keys, n);
  ident_set_init(&funcs, n);
  for (uint32_t id = 0; id < n; id++) {
    fl_frame_t shown = *fl_profile_frame(b->p, id);
    if (!o->demangle && shown.system_name) shown.func = shown.system_name;
    const fl_frame_t *f = &shown;
    frame_role_t *r = &b->roles[id];
    bool added;
    ident_t k = {.func = f->func,
                 .module = f->module,
                 .kind = f->flags & (FL_FRAME_SYSTEM | FL_FRAME_ALLOC | FL_FRAME_KERNEL)};
    r->func = ident_set_add(&funcs, &k, &added);
    if (by_line(o, f)) {
      b->any_line = true;
      k.file = f->file;
      k.line = f->line;
      if (!o->combine) k.addr = f->addr;
    }
    r->key = ident_set_add(&keys, &k, &added);
    fl_frame_t *rep = &b->keys[r->key];
    if (added) {
      *rep = *f;
      rep->line = k.line;
      rep->addr = k.addr;
    } else if (!rep->file && f->file) {
      rep->file = f->file; /* by function: a function's first known file */
    }
    if (!o->C)
      r->fold = (f->flags & FL_FRAME_SYSTEM ? FL_STATUS_SYSTEM : 0) |
                (f->flags & FL_FRAME_ALLOC ? FL_STATUS_ALLOC : 0);
    r->wait = (f->flags & FL_FRAME_OFFCPU) && !(f->flags & FL_FRAME_RUNNABLE);
    r->pruned = in_list(o->pruned, f->func);
    if (o->filter && o->filter_is_regex)
      r->match = regexec(&b->re, f->func, 0, NULL, 0) == 0;
    else if (o->filter)
      r->match = strstr(f->func, o->filter) != NULL;
  }
  b->n_keys = keys.n;
  b->n_funcs = funcs.n;
  ident_set_free(&keys);
  ident_set_free(&funcs);
  rank_keys(b);
}

/* C=false: whether stack[i], a frame folded away, is the call the program
 * made into the system libraries (the first of a run of folded frames)
 * whose run ends in a wait's leaf. That call is kept, so that the wait
 * reads "[off-CPU: futex]" under pthread_mutex_lock under the caller; the
 * frames between are folded into it. */
static bool keeps_waiting_call(const frame_role_t *roles, const uint32_t *stack, size_t n,
                               size_t i) {
  if (i > 0 && roles[stack[i - 1]].fold) return false;
  size_t j = i + 1;
  while (j < n && roles[stack[j]].fold) j++;
  return j < n && roles[stack[j]].wait;
}

/* ---- distinct stacks ---- */

typedef struct stack_sum {
  uint32_t node; /* the stack's leaf in the profile's prefix tree */
  size_t n;
  uint64_t weight, allocs;
  uint32_t stack_id;
} stack_sum_t;

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* How often the loops that charge nothing as they go (over samples, over
 * stacks) read the cancel flag: every this many (a mask). */
#define CANCEL_EVERY 0xffff

/* Sums the samples that pass the thread filter per distinct stack, in the
 * order the stacks first appear. *sums is new. Returns the count; stops
 * early when budget is cancelled (the caller asks it). */
static size_t sum_stacks(const fl_profile_t *p, const fl_tree_opts_t *o, fl_budget_t *budget,
                         stack_sum_t **sums, size_t *max_len) {
  size_t n_samples = fl_profile_n_samples(p), n = 0, cap = 0;
  stack_sum_t *s = NULL;
  size_t n_stacks = fl_profile_n_stacks(p);
  uint32_t *sum_of = fl__xmalloc(n_stacks ? n_stacks : 1, sizeof *sum_of); /* by stack id */
  memset(sum_of, 0xff, n_stacks * sizeof *sum_of);
  int *threads = NULL;
  if (o->threads) {
    threads = fl__xmalloc(o->n_threads, sizeof *threads);
    if (o->n_threads) memcpy(threads, o->threads, o->n_threads * sizeof *threads);
    qsort(threads, o->n_threads, sizeof *threads, cmp_int);
  }
  *max_len = 0;
  for (size_t i = 0; i < n_samples; i++) {
    if (!(i & CANCEL_EVERY) && fl_budget_stopped(budget)) break;
    fl_sample_t smp;
    fl_profile_sample(p, i, &smp);
    if (threads && !bsearch(&smp.thread, threads, o->n_threads, sizeof *threads, cmp_int)) continue;
    uint32_t k = sum_of[smp.stack_id];
    if (k == FL__NONE) {
      s = fl__grow(s, &cap, n + 1, sizeof *s);
      k = sum_of[smp.stack_id] = (uint32_t)n++;
      s[k] = (stack_sum_t){.node = smp.node, .n = smp.n, .stack_id = smp.stack_id};
      if (smp.n > *max_len) *max_len = smp.n;
    }
    s[k].weight += smp.weight;
    s[k].allocs += smp.allocs;
  }
  free(sum_of);
  free(threads);
  *sums = s;
  return n;
}

/* ---- paths ---- */

/* Turns every stack that passes the filter into a path (see the file
 * comment); stops early when the budget is cancelled (the caller asks
 * it). */
static void make_paths(builder_t *b, const stack_sum_t *sums, size_t n_sums, size_t max_len) {
  bool flat = b->o->recur == FL_RECUR_FLAT;
  size_t total = 0;
  for (size_t s = 0; s < n_sums; s++) total += sums[s].n;
  /* One path per stack; by level (0 is the root): key, status, the raw
   * line of the frame (for its children's call line), call line, func. */
  size_t levels = max_len + 1;
  uint32_t *lk = fl__xmalloc(levels, sizeof *lk);
  uint32_t *ls = fl__xmalloc(levels, sizeof *ls);
  int *lline = fl__xmalloc(levels, sizeof *lline);
  int *lcall = fl__xmalloc(levels, sizeof *lcall);
  uint32_t *lfunc = fl__xmalloc(levels, sizeof *lfunc);
  uint32_t *on_path = flat ? fl__xcalloc(b->n_funcs + 1, sizeof *on_path) : NULL; /* level, 0: no */
  uint32_t *stack = fl__xmalloc(levels, sizeof *stack); /* the stack's frame ids, root first */
  b->paths = fl__xmalloc(n_sums, sizeof *b->paths);
  b->path_keys = fl__xmalloc(total, sizeof *b->path_keys);
  b->path_status = fl__xmalloc(total, 1);
  b->path_calls = fl__xmalloc(total, sizeof *b->path_calls);
  b->root_status = fl__xmalloc(n_sums, 1);
  size_t used = 0;
  b->n_paths = 0;
  for (size_t s = 0; s < n_sums; s++) {
    if (!(s & CANCEL_EVERY) && fl_budget_stopped(b->budget)) break;
    size_t n = sums[s].n;
    fl_profile_stack_ids(b->p, sums[s].node, n, stack);
    if (b->o->filter) {
      bool match = false;
      for (size_t i = 0; i < n && !match; i++) match = b->roles[stack[i]].match;
      if (!match) continue;
    }
    size_t depth = 0;
    ls[0] = 0;
    lline[0] = 0;
    for (size_t i = 0; i < n; i++) {
      const frame_role_t *r = &b->roles[stack[i]];
      if (r->fold && !keeps_waiting_call(b->roles, stack, n, i)) {
        ls[depth] |= r->fold;
        continue;
      }
      int line = fl_profile_frame(b->p, stack[i])->line;
      bool again = false; /* recur=flat: rewound to an element of this very key */
      if (flat && on_path[r->func]) {
        size_t level = on_path[r->func];
        size_t target = lk[level] == r->key ? level : level - 1;
        for (; depth > target; depth--) on_path[lfunc[depth]] = 0;
        if (target == level) {
          lline[depth] = line;
          again = true;
        }
      }
      if (!again) {
        depth++;
        lk[depth] = r->key;
        ls[depth] = 0;
        lcall[depth] = lline[depth - 1];
        lline[depth] = line;
        lfunc[depth] = r->func;
        if (flat) on_path[r->func] = (uint32_t)depth;
      }
      if (r->pruned) break;
    }
    b->paths[b->n_paths++] =
        (path_t){.keys = b->path_keys + used, .len = (uint32_t)depth, .stack = (uint32_t)s};
    b->root_status[s] = (uint8_t)ls[0];
    bool inverted = b->o->inverted;
    for (size_t d = 1; d <= depth; d++, used++) {
      size_t from = inverted ? depth + 1 - d : d; /* inverted: leaf first */
      b->path_keys[used] = lk[from];
      b->path_status[used] = (uint8_t)ls[from];
      b->path_calls[used] = inverted ? 0 : lcall[from];
      if (flat) on_path[lfunc[d]] = 0;
    }
  }
  b->n_path_keys = used;
  free(lk);
  free(ls);
  free(lline);
  free(lcall);
  free(lfunc);
  free(on_path);
  free(stack);
}

/* ---- the trie ---- */

/* Lexicographic order of key sequences, a prefix first. */
static int cmp_path(const void *pa, const void *pb) {
  const path_t *a = pa, *b = pb;
  uint32_t n = a->len < b->len ? a->len : b->len;
  for (uint32_t i = 0; i < n; i++)
    if (a->keys[i] != b->keys[i]) return a->keys[i] < b->keys[i] ? -1 : 1;
  return (a->len > b->len) - (a->len < b->len);
}

/* What a node costs beside its builder's record while it is laid out:
 * lay_out's arrays first and fill (a size_t each), kids (a kid_t: two
 * uint32_t and an int), id_of, order and todo (a uint32_t each). */
#define LAYOUT_NODE_BYTES \
  (2 * sizeof(size_t) + 2 * sizeof(uint32_t) + sizeof(int) + 3 * sizeof(uint32_t))
/* What a drawn node costs: the tree's node, its parent's pointer to it,
 * and what the renderers take per node they are given (rows, widths,
 * labels), measured on a stack of 2·10^6 frames (docs/PERFORMANCE.md). */
#define RENDER_NODE_BYTES 64
#define DRAWN_NODE_BYTES (sizeof(fl_node_t) + sizeof(fl_node_t *) + RENDER_NODE_BYTES)

/* Makes b->nodes from the sorted paths: each path shares the nodes of its
 * common prefix with the path before it and adds the rest. A child is
 * never added twice, since every path through it follows the first one
 * without a break. The nodes a path adds are charged to the budget before
 * they are made: -1 when it refuses. */
static int make_nodes(builder_t *b, const stack_sum_t *sums, size_t max_len) {
  qsort(b->paths, b->n_paths, sizeof *b->paths, cmp_path);
  uint32_t *at = fl__xmalloc(max_len + 1, sizeof *at); /* the node of each level */
  /* At most one node per key of a path, and the root. Node numbers are
   * 32 bits. */
  if (b->n_path_keys >= UINT32_MAX) fl__oom(0);
  b->nodes = fl__grow_charged(b->budget, NULL, &b->nodes_cap, 1, sizeof *b->nodes);
  if (!b->nodes) goto refused;
  b->nodes[0] = (bnode_t){.call_line = 0};
  b->n_nodes = 1;
  at[0] = 0;
  const path_t *prev = NULL;
  for (size_t i = 0; i < b->n_paths; i++) {
    const path_t *path = &b->paths[i];
    uint32_t same = 0;
    if (prev)
      while (same < path->len && same < prev->len && path->keys[same] == prev->keys[same]) same++;
    size_t added = path->len - same;
    bnode_t *grown =
        fl__grow_charged(b->budget, b->nodes, &b->nodes_cap, b->n_nodes + added, sizeof *b->nodes);
    if (!grown) goto refused;
    b->nodes = grown;
    if (fl_budget_charge_n(b->budget, added, LAYOUT_NODE_BYTES, 0) < 0) goto refused;
    for (uint32_t d = same; d < path->len; d++) {
      b->nodes[b->n_nodes] = (bnode_t){.parent = at[d], .key = path->keys[d], .call_line = INT_MAX};
      at[d + 1] = (uint32_t)b->n_nodes++;
    }
    size_t off = (size_t)(path->keys - b->path_keys);
    b->nodes[0].status |= b->root_status[path->stack];
    for (uint32_t d = 0; d < path->len; d++) {
      bnode_t *node = &b->nodes[at[d + 1]];
      node->status |= b->path_status[off + d];
      if (b->path_calls[off + d] < node->call_line) node->call_line = b->path_calls[off + d];
    }
    b->sum_node[path->stack] = at[path->len];
    bnode_t *last = &b->nodes[at[path->len]];
    last->self += sums[path->stack].weight;
    last->self_allocs += sums[path->stack].allocs;
    prev = path;
  }
  free(at);
  return 0;
refused:
  free(at);
  return -1;
}

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

/* opts NULL: the defaults; root_name NULL: "all". */
fl_tree_t *fl_tree_build(const fl_profile_t *p, const fl_tree_opts_t *opts, const char *root_name,
                         char *err, size_t err_size) {
  fl_tree_opts_t defaults;
  if (!opts) {
    fl_tree_opts_init(&defaults);
    opts = &defaults;
  }
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
  compute_roles(&b);
  size_t max_len = 0;
  stack_sum_t *sums = NULL;
  size_t n_sums = sum_stacks(p, opts, b.budget, &sums, &max_len);
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
  make_paths(&b, sums, n_sums, max_len);
  if (fl_budget_stopped(b.budget) || make_nodes(&b, sums, max_len) < 0) goto refused_sums;
  if (lay_out(&b, t, sums, n_sums) < 0) goto refused_sums;
  if (opts->threads) {
    t->n_threads = opts->n_threads;
    t->threads = fl__xmalloc(t->n_threads ? t->n_threads : 1, sizeof *t->threads);
    if (t->n_threads) memcpy(t->threads, opts->threads, t->n_threads * sizeof *t->threads);
    qsort(t->threads, t->n_threads, sizeof *t->threads, cmp_int);
  }
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

const fl_node_t *fl_tree_node_of(const fl_tree_t *t, const fl_sample_t *s) {
  if (s->stack_id >= t->n_stacks || t->stack_node[s->stack_id] == UINT32_MAX) return NULL;
  if (t->threads && !bsearch(&s->thread, t->threads, t->n_threads, sizeof *t->threads, cmp_int))
    return NULL;
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
