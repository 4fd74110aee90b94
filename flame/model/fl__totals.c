/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__totals: totals per frame or per function of a tree, by the one rule
 * every table counts by (fl__group_sums: a sample counts once however
 * often its stack holds the function), and the names of a tree nearest to
 * a name (fl__totals.h). The top and sandwich views, the flat text report,
 * a diff's functions and the source view count with them: a view chooses
 * what to show, never how to count. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__totals.h"

/* Orders frames by identity: func, file, line, module, addr; by_function:
 * func, file, module. */
static int cmp_frame(const fl_frame_t *a, const fl_frame_t *b, bool by_function) {
  int c;
  if ((c = fl__cmp_str(a->func, b->func)) != 0) return c;
  if ((c = fl__cmp_str(a->file, b->file)) != 0) return c;
  if (!by_function && a->line != b->line) return a->line < b->line ? -1 : 1;
  if ((c = fl__cmp_str(a->module, b->module)) != 0) return c;
  return by_function ? 0 : (a->addr > b->addr) - (a->addr < b->addr);
}

static uint64_t str_hash(const char *s) {
  return s ? fl__hash_bytes(s, strlen(s)) : 0;
}

/* A hash of what cmp_frame compares. */
static uint64_t frame_hash(const fl_frame_t *f, bool by_function) {
  uint64_t h =
      str_hash(f->func) ^ fl__mix64(str_hash(f->file) + 1) ^ fl__mix64(str_hash(f->module) + 2);
  if (!by_function) h ^= fl__mix64((uint64_t)(uint32_t)f->line << 8 | 3) ^ fl__mix64(f->addr + 4);
  return fl__mix64(h);
}

static int cmp_flat_row(const void *pa, const void *pb, void *by_function) {
  const fl__flat_row_t *a = pa, *b = pb;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  int c = cmp_frame(&a->node->frame, &b->node->frame, *(bool *)by_function);
  return c ? c : fl__cmp_str(a->input, b->input);
}

/* Where a top table says a function is: its file, else its module. */
static const char *place_of(const fl_frame_t *f) {
  return f->file ? f->file : f->module;
}

/* By the columns a top table shows: function, then place. */
static int cmp_shown(const void *pa, const void *pb) {
  const fl_frame_t *a = &(*(fl__flat_row_t *const *)pa)->node->frame;
  const fl_frame_t *b = &(*(fl__flat_row_t *const *)pb)->node->frame;
  int c = fl__cmp_str(a->func, b->func);
  return c ? c : fl__cmp_str(place_of(a), place_of(b));
}

/* Sets each row's from where another row shows the same function and
 * place: the inputs when they differ, else the modules. */
static void set_from(fl__flat_row_t *r, size_t n) {
  fl__flat_row_t **p = fl__xmalloc(n, sizeof *p);
  for (size_t i = 0; i < n; i++) p[i] = &r[i];
  qsort(p, n, sizeof *p, cmp_shown);
  for (size_t a = 0, b; a < n; a = b) {
    bool inputs = false, modules = false;
    for (b = a + 1; b < n && cmp_shown(&p[a], &p[b]) == 0; b++) {
      inputs |= fl__cmp_str(p[a]->input, p[b]->input) != 0;
      modules |= fl__cmp_str(p[a]->node->frame.module, p[b]->node->frame.module) != 0;
    }
    for (size_t k = a; b - a > 1 && k < b; k++)
      p[k]->from = inputs && p[k]->input ? p[k]->input : modules ? p[k]->node->frame.module : NULL;
  }
  free(p);
}

/* Pre-order: a node counts unless a node of its group is among its
 * ancestors, found by marking the groups on the current path. */
void fl__group_sums(const fl_tree_t *t, const uint32_t *group, size_t n_groups,
                    fl__group_sum_t *sums) {
  size_t n = fl_tree_n_nodes(t);
  bool *on_path = fl__xcalloc(n_groups ? n_groups : 1, sizeof *on_path);
  uint32_t *path = fl__xmalloc(n + 1, sizeof *path); /* groups, by depth */
  bool *owns = fl__xmalloc(n + 1, sizeof *owns);
  memset(sums, 0, n_groups * sizeof *sums);
  /* path[1 .. depth]: the groups of the current node's ancestors; owns[d]:
   * whether the node at depth d set its group's mark (the outermost one). */
  size_t depth = 0;
  for (size_t i = 1; i < n; i++) {
    const fl_node_t *node = fl_tree_node(t, i);
    for (; depth >= (size_t)node->depth; depth--)
      if (owns[depth]) on_path[path[depth]] = false;
    uint32_t g = group[i];
    bool outer = on_path[g];
    sums[g].self += node->self;
    if (!outer) {
      sums[g].count += node->count;
      sums[g].allocs += node->allocs;
      on_path[g] = true;
    }
    depth++;
    path[depth] = g;
    owns[depth] = !outer;
  }
  free(on_path);
  free(path);
  free(owns);
}

/* Nodes are grouped by identity (a hash table of frames), then summed by
 * fl__group_sums. */
size_t fl__flat_rows_of(const fl_tree_t *t, bool by_function, fl__flat_row_t **rows,
                        uint32_t **row_of) {
  size_t n = fl_tree_n_nodes(t);
  *rows = NULL;
  if (row_of) *row_of = NULL;
  if (n < 2) return 0;
  uint32_t *group = fl__xmalloc(n, sizeof *group);    /* by node id */
  const char **input = fl__xcalloc(n, sizeof *input); /* by node id; by_function */
  fl__flat_row_t *r = fl__xcalloc(n, sizeof *r);
  size_t n_rows = 0;
  fl__index_t ix;
  fl__index_init(&ix, n);
  group[0] = FL__NONE;
  for (size_t i = 1; i < n; i++) {
    const fl_node_t *node = fl_tree_node(t, i);
    /* An input's root frame is a child of the tree's root. */
    if (by_function && node->depth == 1)
      input[i] = node->frame.flags & FL_FRAME_ROOT ? node->frame.func : NULL;
    else if (by_function)
      input[i] = input[node->parent->id];
    uint64_t h = frame_hash(&node->frame, by_function) ^ fl__mix64(str_hash(input[i]) + 5);
    fl__probe_t pr;
    uint32_t g = fl__index_find(&ix, h, &pr);
    for (; g != FL__NONE; g = fl__index_next(&ix, &pr))
      if (cmp_frame(&r[g].node->frame, &node->frame, by_function) == 0 &&
          fl__cmp_str(r[g].input, input[i]) == 0)
        break;
    if (g == FL__NONE) { /* a new function (or line): its first node in pre-order */
      g = (uint32_t)n_rows++;
      r[g].node = node;
      r[g].input = input[i];
      fl__index_add(&ix, h, g);
    }
    group[i] = g;
  }
  fl__index_free(&ix);
  free(input);
  fl__group_sum_t *sums = fl__xmalloc(n_rows, sizeof *sums);
  fl__group_sums(t, group, n_rows, sums);
  for (size_t g = 0; g < n_rows; g++) {
    r[g].self = sums[g].self;
    r[g].count = sums[g].count;
    r[g].allocs = sums[g].allocs;
    r[g].by_count = g; /* the group, until the rows are sorted */
  }
  free(sums);
  if (by_function) set_from(r, n_rows);
  qsort_r(r, n_rows, sizeof *r, cmp_flat_row, &by_function);
  uint32_t *place = fl__xmalloc(n_rows, sizeof *place); /* by group */
  for (size_t i = 0; i < n_rows; i++) {
    place[r[i].by_count] = (uint32_t)i;
    r[i].by_count = i;
  }
  if (row_of) {
    for (size_t i = 1; i < n; i++) group[i] = place[group[i]];
    *row_of = group;
  } else {
    free(group);
  }
  free(place);
  *rows = r;
  return n_rows;
}

size_t fl__flat_rows(const fl_tree_t *t, bool by_function, fl__flat_row_t **rows) {
  return fl__flat_rows_of(t, by_function, rows, NULL);
}

int fl__flat_row_cmp_function(const fl__flat_row_t *a, const fl__flat_row_t *b) {
  int c = cmp_frame(&a->node->frame, &b->node->frame, true);
  return c ? c : fl__cmp_str(a->input, b->input);
}

char *fl__flat_row_name(const fl__flat_row_t *row) {
  const char *func = row->node->frame.func ? row->node->frame.func : "[unknown]";
  fl__buf_t b = FL__BUF_INIT;
  if (row->from)
    fl__buf_printf(&b, "%s (%s)", func, row->from);
  else
    fl__buf_puts(&b, func);
  return fl__buf_take(&b);
}

static int cmp_by_self(const void *pa, const void *pb) {
  const fl__flat_row_t *a = pa, *b = pb;
  if (a->self != b->self) return a->self > b->self ? -1 : 1;
  return (a->by_count > b->by_count) - (a->by_count < b->by_count);
}

void fl__flat_sort_by_self(fl__flat_row_t *rows, size_t n) {
  if (n) qsort(rows, n, sizeof *rows, cmp_by_self);
}

/* ---- names ---- */

/* The edit distance between a and b (Levenshtein), up to 64 characters of
 * b; larger than limit is reported as limit + 1. */
static size_t edit_distance(const char *a, const char *b, size_t limit) {
  size_t n = strlen(b) < 64 ? strlen(b) : 64, row[65];
  for (size_t j = 0; j <= n; j++) row[j] = j;
  for (size_t i = 1; a[i - 1]; i++) {
    size_t diag = row[0], best = row[0] = i;
    for (size_t j = 1; j <= n; j++) {
      size_t up = row[j];
      size_t sub = diag + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
      row[j] = sub < up + 1 ? sub : up + 1;
      if (row[j - 1] + 1 < row[j]) row[j] = row[j - 1] + 1;
      if (row[j] < best) best = row[j];
      diag = up;
    }
    if (best > limit) return limit + 1;
  }
  return row[n] > limit ? limit + 1 : row[n];
}

typedef struct near_name {
  const char *name;
  size_t score; /* 0: contains the name; else 1 + edits */
} near_name_t;

static int cmp_near(const void *pa, const void *pb) {
  const near_name_t *a = pa, *b = pb;
  if (a->score != b->score) return a->score < b->score ? -1 : 1;
  return strcmp(a->name, b->name);
}

void fl__nearest_names(const fl_tree_t *t, const char *name, char *out, size_t size) {
  /* Every name is scored, however far: a name that matches nothing is
   * answered with the closest there are, never with none. */
  size_t n = fl_tree_n_nodes(t), n_near = 0, limit = strlen(name) + 64;
  near_name_t *near = fl__xmalloc(n ? n : 1, sizeof *near);
  for (size_t i = 1; i < n; i++) {
    const char *func = fl_tree_node(t, i)->frame.func;
    if (!func) continue;
    bool seen = false;
    for (size_t k = 0; k < n_near && !seen; k++) seen = !strcmp(near[k].name, func);
    if (seen) continue;
    size_t score = strcasestr(func, name) ? 0 : 1 + edit_distance(name, func, limit);
    near[n_near++] = (near_name_t){func, score};
  }
  qsort(near, n_near, sizeof *near, cmp_near);
  size_t used = 0;
  if (size) out[0] = '\0';
  for (size_t k = 0; k < n_near && k < 5 && used < size; k++)
    used += (size_t)snprintf(out + used, size - used, "%s%s", k ? ", " : "", near[k].name);
  free(near);
}
