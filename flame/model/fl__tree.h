/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__tree: the work of building one tree, shared by its steps: the
 * roles, stacks, paths and trie of fl_tree_paths.c and the layout and
 * orchestration of fl_tree.c (whose top comment tells the steps). */
#ifndef FL__TREE_H
#define FL__TREE_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_budget.h"
#include "cflame/fl_tree.h"
#include "fl__common.h"

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

/* Which of a profile's samples a tree takes: those its kind takes (its
 * own; wall-clock time's, CPU and off-CPU time), on its threads. The one
 * rule: the tree's sums and fl_tree_node_of, and so every shape built
 * from a tree, follow it. */
typedef struct fl__select {
  fl_profile_kind_t kind;
  uint32_t takes;     /* fl_kind_takes(kind) */
  const int *threads; /* sorted; NULL: all */
  size_t n_threads;
} fl__select_t;

static inline bool fl__select_takes(const fl__select_t *sel, const fl_sample_t *s) {
  if (!(sel->takes & 1u << s->kind)) return false;
  if (!sel->threads) return true;
  size_t lo = 0, hi = sel->n_threads; /* the thread, by bisection */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (sel->threads[mid] == s->thread) return true;
    if (sel->threads[mid] < s->thread)
      lo = mid + 1;
    else
      hi = mid;
  }
  return false;
}

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

typedef struct stack_sum {
  uint32_t node; /* the stack's leaf in the profile's prefix tree */
  size_t n;
  uint64_t weight, allocs;
  uint32_t stack_id;
} stack_sum_t;

/* How often the loops that charge nothing as they go (over samples, over
 * stacks) read the cancel flag: every this many (a mask). */
#define CANCEL_EVERY 0xffff

/* What a drawn node costs: the tree's node, its parent's pointer to it,
 * and what the renderers take per node they are given (rows, widths,
 * labels), measured on a stack of 2·10^6 frames (docs/PERFORMANCE.md). */
#define RENDER_NODE_BYTES 64
#define DRAWN_NODE_BYTES (sizeof(fl_node_t) + sizeof(fl_node_t *) + RENDER_NODE_BYTES)

static inline int fl__tree_cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Step 1: the role and key of each of the profile's frames, into b. */
void fl__tree_roles(builder_t *b);
/* Step 2: sums the samples sel takes per distinct stack, in the order the
 * stacks first appear; *sums is new, *max_len the longest stack. Returns
 * the count; stops early when budget is cancelled (the caller asks it). */
size_t fl__tree_sum_stacks(const fl_profile_t *p, const fl__select_t *sel, fl_budget_t *budget,
                           stack_sum_t **sums, size_t *max_len);
/* Step 3: every stack that passes the filter as a path of keys, into b;
 * stops early when the budget is cancelled (the caller asks it). */
void fl__tree_paths(builder_t *b, const stack_sum_t *sums, size_t n_sums, size_t max_len);
/* Step 4: the nodes of the sorted paths, in pre-order, into b. Returns 0,
 * or -1 when the budget refused them. */
int fl__tree_nodes(builder_t *b, const stack_sum_t *sums, size_t max_len);

#endif
