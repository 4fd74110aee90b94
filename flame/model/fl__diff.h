/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__diff: what fl_diff.c and fl_diff_match.c share: the matching of
 * two full trees, frame by frame (step 3 in fl_diff.c's top comment). */
#ifndef FL__DIFF_H
#define FL__DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_tree.h"
#include "fl__common.h"

#define NONE UINT32_MAX

/* One side of the matching. */
typedef struct side {
  const fl_tree_t *t; /* a full tree */
  size_t n;
  const char **name; /* by id: func interned in the matcher's set, shared by both sides */
  uint32_t *end;     /* by id: the subtree of i is the ids [i, end[i]) (pre-order) */
  uint32_t *partner; /* by id: the partner's id on the other side, or NONE */
} side_t;

typedef struct pair {
  uint32_t d, o;
} pair_t;

typedef struct matcher {
  side_t d, o;       /* the drawn and the other full tree */
  pair_t *work;      /* matched pairs whose children are still to be matched */
  size_t n_work;     /* room for min(d.n, o.n): each node is matched once */
  bool single_roots; /* the only roots paired across names */
} matcher_t;

void fl__diff_side_free(side_t *s);
/* Names frames by their function, but a root (depth 1) whose name starts
 * with root_prefix (not NULL) by root_prefix, so that such roots pair. */
void fl__diff_side_init(side_t *s, const fl_tree_t *t, fl__strset_t *names,
                        const char *root_prefix);
/* Matches the two full trees from their roots. */
void fl__diff_match_trees(matcher_t *m);

#endif
