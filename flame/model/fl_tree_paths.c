/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_tree_paths: steps 1 to 4 of building a tree (fl_tree.c's top comment
 * tells them): each frame's role under the options, the samples summed per
 * distinct stack, each stack's path of keys, and the trie of the sorted
 * paths, into the builder (fl__tree.h) that fl_tree.c lays out. */
#define _GNU_SOURCE
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__text.h"
#include "fl__tree.h"

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

static bool in_list(const char *const *names, const char *s) {
  if (!names) return false;
  for (; *names; names++)
    if (strcmp(*names, s) == 0) return true;
  return false;
}

typedef struct ranked {
  fl_frame_t frame;
  uint32_t key;
} ranked_t;

/* Source order of frames with lines: file (NULL first), line, func, module,
 * addr. */
static int cmp_by_line(const void *pa, const void *pb) {
  const fl_frame_t *a = &((const ranked_t *)pa)->frame, *b = &((const ranked_t *)pb)->frame;
  int c = fl__cmp_str(a->file, b->file);
  if (c) return c;
  if (a->line != b->line) return a->line < b->line ? -1 : 1;
  if ((c = fl__cmp_str(a->func, b->func)) != 0) return c;
  if ((c = fl__cmp_str(a->module, b->module)) != 0) return c;
  return (a->addr > b->addr) - (a->addr < b->addr);
}

/* Functions without lines: by name, then module. */
static int cmp_by_name(const void *pa, const void *pb) {
  const fl_frame_t *a = &((const ranked_t *)pa)->frame, *b = &((const ranked_t *)pb)->frame;
  int c = fl__cmp_str(a->func, b->func);
  return c ? c : fl__cmp_str(a->module, b->module);
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
void fl__tree_roles(builder_t *b) {
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

/* Sums the samples sel takes per distinct stack, in the order the stacks
 * first appear. *sums is new. Returns the count; stops early when budget
 * is cancelled (the caller asks it). */
size_t fl__tree_sum_stacks(const fl_profile_t *p, const fl__select_t *sel, fl_budget_t *budget,
                           stack_sum_t **sums, size_t *max_len) {
  size_t n_samples = fl_profile_n_samples(p), n = 0, cap = 0;
  stack_sum_t *s = NULL;
  size_t n_stacks = fl_profile_n_stacks(p);
  uint32_t *sum_of = fl__xmalloc(n_stacks ? n_stacks : 1, sizeof *sum_of); /* by stack id */
  memset(sum_of, 0xff, n_stacks * sizeof *sum_of);
  *max_len = 0;
  for (size_t i = 0; i < n_samples; i++) {
    if (!(i & CANCEL_EVERY) && fl_budget_stopped(budget)) break;
    fl_sample_t smp;
    fl_profile_sample(p, i, &smp);
    if (!fl__select_takes(sel, &smp)) continue;
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
  *sums = s;
  return n;
}

/* ---- paths ---- */

/* Turns every stack that passes the filter into a path (see the file
 * comment); stops early when the budget is cancelled (the caller asks
 * it). */
void fl__tree_paths(builder_t *b, const stack_sum_t *sums, size_t n_sums, size_t max_len) {
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
/* Makes b->nodes from the sorted paths: each path shares the nodes of its
 * common prefix with the path before it and adds the rest. A child is
 * never added twice, since every path through it follows the first one
 * without a break. The nodes a path adds are charged to the budget before
 * they are made: -1 when it refuses. */
int fl__tree_nodes(builder_t *b, const stack_sum_t *sums, size_t max_len) {
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
