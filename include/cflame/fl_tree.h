/* fl_tree: the flame graph of a profile.
 *
 * Each node is a frame at a position in the call tree: its count is the
 * weight of every sample whose stack passes through it (inclusive), its self
 * count the weight of samples that end in it. Children are ordered as the
 * source is (by the line in the parent where the call happens, then by
 * name), and each node occupies the sample range [x0, x1) of the axis, the
 * children packed from the parent's x0. The root (depth 0) stands for the
 * whole run.
 *
 * Options follow FlameGraphs.jl's flamegraph():
 *   C        false: frames of system libraries (FL_FRAME_SYSTEM,
 *            FL_FRAME_ALLOC) are folded into the nearest caller that is not
 *            one; the caller's status records what was folded in
 *            (FL_STATUS_SYSTEM, FL_STATUS_ALLOC).
 *   combine  true: one frame per source line; false: one per instruction
 *            address.
 *   lines    false: one frame per function (file and line dropped), as
 *            perf-style flame graphs draw them.
 *   recur    FL_RECUR_FLAT: a function already on the stack rewinds to its
 *            earlier frame, so self-recursion looks like a loop.
 *   pruned   function names whose subtrees are cut (the frame stays and
 *            takes its subtree's weight as self).
 *   filter   keep only samples whose stack has a frame whose function name
 *            contains the text (or matches the POSIX extended regex when
 *            filter_is_regex).
 *   threads  keep only samples of these threads (NULL: all).
 *   minwidth hide frames narrower than this share of the total (their
 *            weight stays in the parent's count; the number hidden is
 *            reported). */
#ifndef FL_TREE_H
#define FL_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_profile.h"

enum {
  FL_STATUS_SYSTEM = 1u << 0, /* system-library frames were folded into this one */
  FL_STATUS_ALLOC = 1u << 1,  /* allocator frames were folded into this one */
};

typedef enum fl_recur { FL_RECUR_OFF, FL_RECUR_FLAT } fl_recur_t;

typedef struct fl_tree_opts {
  bool C;       /* default false */
  bool combine; /* default true */
  bool lines;   /* default true */
  fl_recur_t recur;
  const char *const *pruned; /* NULL-terminated, or NULL */
  const char *filter;        /* NULL: no filter */
  bool filter_is_regex;
  const int *threads; /* NULL: all threads */
  size_t n_threads;
  double minwidth; /* default 0.001 */
} fl_tree_opts_t;

/* The defaults: C false, combine true, lines true, recur off, minwidth 0.001. */
void fl_tree_opts_init(fl_tree_opts_t *opts);

typedef struct fl_node fl_node_t;
struct fl_node {
  fl_frame_t frame;     /* strings borrowed from the profile */
  uint64_t count;       /* inclusive weight */
  uint64_t self;        /* exclusive weight */
  uint64_t allocs;      /* allocation profiles: inclusive allocation count */
  uint64_t self_allocs;
  uint64_t x0, x1;      /* sample range; x1 - x0 == count */
  int depth;            /* root 0 */
  uint32_t status;      /* FL_STATUS_* */
  uint32_t id;          /* 0 for the root, then in depth-first pre-order */
  fl_node_t *parent;
  fl_node_t **children; /* in source order */
  size_t n_children;
};

typedef struct fl_tree fl_tree_t;

/* Builds the tree of profile p (which must outlive the tree). root_name
 * names the root frame ("cell[5]", a program). Returns a new tree, or NULL
 * with err (a bad filter regex). */
fl_tree_t *fl_tree_build(const fl_profile_t *p, const fl_tree_opts_t *opts,
                         const char *root_name, char *err, size_t err_size);
void fl_tree_destroy(fl_tree_t **t);

const fl_node_t *fl_tree_root(const fl_tree_t *t);
const fl_profile_t *fl_tree_profile(const fl_tree_t *t);
/* Nodes in depth-first pre-order (the root first); borrowed. */
size_t fl_tree_n_nodes(const fl_tree_t *t);
const fl_node_t *fl_tree_node(const fl_tree_t *t, size_t i);
int fl_tree_max_depth(const fl_tree_t *t);
/* How many frames minwidth hid, and their total weight. */
size_t fl_tree_hidden(const fl_tree_t *t, uint64_t *hidden_weight);

/* Nodes to draw, at most max_rows: the visible nodes in pre-order; when
 * there are more, the narrowest are dropped (a dropped node's descendants
 * go too) until max_rows remain. *rows is new (free it; the nodes are
 * borrowed). Returns the count; *n_merged says how many were left out. */
size_t fl_tree_rows(const fl_tree_t *t, size_t max_rows, const fl_node_t ***rows,
                    size_t *n_merged);

#endif
