/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__totals: a tree's totals per frame or per function, counted once per
 * sample, and the names nearest to a name (fl__totals.c). */
#ifndef FL__TOTALS_H
#define FL__TOTALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_tree.h"
#include "fl__common.h"
#include "fl__text.h"

typedef struct fl__flat_row {
  const fl_node_t *node; /* a node of the group: its frame and colour */
  uint64_t count, self, allocs;
  size_t by_count;   /* its place in fl__flat_rows's order, from 0 */
  const char *input; /* by_function: the input it was read from (the name of the
                        FL_FRAME_ROOT frame it is under, one per file of
                        --per-input), or NULL */
  const char *from;  /* by_function: what tells it from another row of the same
                        function and place (func, file or else module): its input,
                        else its module; NULL when no row shares them */
} fl__flat_row_t;

/* Rows of every distinct frame among t's nodes (the tree's frame identity:
 * function, file, line, module, address), or with by_function of every
 * distinct function (function, file, module, and the input it was read
 * from: the same function of two files drawn per input is two rows), the
 * root left out. A row's
 * count is the weight of the samples whose stack holds it at least once
 * (a recursive function counts once per sample), its self the weight of
 * the samples that end in it. Sorted by count, the largest first, ties by
 * identity. *rows is new (NULL when there are none); returns how many. */
size_t fl__flat_rows(const fl_tree_t *t, bool by_function, fl__flat_row_t **rows);
/* fl__flat_rows, and *row_of (new; NULL when there are no rows): the row
 * of each node by its id (the root's is FL__NONE). */
size_t fl__flat_rows_of(const fl_tree_t *t, bool by_function, fl__flat_row_t **rows,
                        uint32_t **row_of);

/* The one rule every table counts by: the weights of t's nodes summed by
 * group (group[id] in [0, n_groups) for each node but the root), a node's
 * self always, its count (and allocs) only when no ancestor is of its group,
 * so that a sample counts once for a group however often its stack holds
 * it (recursion). sums[0 .. n_groups) are overwritten. */
typedef struct fl__group_sum {
  uint64_t count, self, allocs;
} fl__group_sum_t;
void fl__group_sums(const fl_tree_t *t, const uint32_t *group, size_t n_groups,
                    fl__group_sum_t *sums);
/* Orders by-function rows of two trees (of two profiles: strings
 * compared, not pointers) by the function they are: 0 for the same. */
int fl__flat_row_cmp_function(const fl__flat_row_t *a, const fl__flat_row_t *b);
/* Sorts rows by self, the largest first, ties in fl__flat_rows's order. */
void fl__flat_sort_by_self(fl__flat_row_t *rows, size_t n);
/* A row's function as the top tables show it: "diffuse", or with the row's
 * from "diffuse (A.pb.gz)". New string. */
char *fl__flat_row_name(const fl__flat_row_t *row);

/* The tree's function names nearest to name, for an error that says what
 * was meant: those that contain it (ignoring case) first, then the others
 * by how few edits make them name; at most five, comma-separated, into out
 * ("" only when the tree has no function). */
void fl__nearest_names(const fl_tree_t *t, const char *name, char *out, size_t size);

#endif
