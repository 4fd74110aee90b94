/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_lines: weight per source line (see include/cflame/fl_lines.h).
 *
 * The samples the tree counts are summed per distinct stack first (the
 * profile numbers its distinct stacks), so a profile of 10^6 samples over
 * 10^5 stacks walks 10^5 stacks. Each frame's line is found once: frames
 * map to a line number (or none) through a table built over the profile's
 * frames, and a stamp per line says whether the stack being walked has
 * counted it already. */
#define _GNU_SOURCE
#include "cflame/fl_lines.h"

#include <stdlib.h>
#include <string.h>

#include "fl__common.h"

/* The line of each frame: an index into lines, or FL__NONE when the frame
 * has no file and line. Strings are the profile's interned pointers, so a
 * line is found by (file pointer, line). */
static uint32_t *line_of_frames(const fl_profile_t *p, fl_line_total_t **lines, size_t *n_lines) {
  size_t n = fl_profile_n_frames(p), cap = 0;
  uint32_t *of = fl__xmalloc(n ? n : 1, sizeof *of);
  fl__index_t index;
  fl__index_init(&index, 64);
  *lines = NULL;
  *n_lines = 0;
  for (uint32_t id = 0; id < n; id++) {
    const fl_frame_t *f = fl_profile_frame(p, id);
    of[id] = FL__NONE;
    if (!f->file || f->line <= 0) continue;
    uint64_t h = fl__mix64((uint64_t)(uintptr_t)f->file ^ (uint64_t)f->line << 40);
    fl__probe_t pr;
    uint32_t i;
    for (i = fl__index_find(&index, h, &pr); i != FL__NONE; i = fl__index_next(&index, &pr))
      if ((*lines)[i].file == f->file && (*lines)[i].line == f->line) break;
    if (i == FL__NONE) {
      *lines = fl__grow(*lines, &cap, *n_lines + 1, sizeof **lines);
      i = (uint32_t)(*n_lines)++;
      (*lines)[i] = (fl_line_total_t){.file = f->file, .line = f->line};
      fl__index_add(&index, h, i);
    }
    of[id] = i;
  }
  fl__index_free(&index);
  return of;
}

/* The weight of t's samples per distinct stack (by stack id). New. */
static uint64_t *stack_weights(const fl_tree_t *t, const fl_profile_t *p) {
  uint64_t *w = fl__xcalloc(fl_profile_n_stacks(p) + 1, sizeof *w);
  fl_sample_t s;
  for (size_t i = 0, n = fl_profile_n_samples(p); i < n; i++) {
    fl_profile_sample(p, i, &s);
    if (fl_tree_node_of(t, &s)) w[s.stack_id] += s.weight;
  }
  return w;
}

static int cmp_line(const void *pa, const void *pb) {
  const fl_line_total_t *a = pa, *b = pb;
  int c = a->file == b->file ? 0 : strcmp(a->file, b->file);
  if (c) return c;
  return (a->line > b->line) - (a->line < b->line);
}

size_t fl_lines_totals(const fl_tree_t *t, uint32_t skip_flags, fl_line_total_t **out) {
  const fl_profile_t *p = fl_tree_profile(t);
  fl_line_total_t *lines;
  size_t n_lines;
  uint32_t *of = line_of_frames(p, &lines, &n_lines);
  uint64_t *weights = stack_weights(t, p);
  uint32_t *stamp = fl__xcalloc(n_lines + 1, sizeof *stamp); /* stack id + 1 that counted it */
  /* Stacks are met through their samples: the first sample of each
   * distinct stack walks it. */
  fl_sample_t s;
  for (size_t i = 0, n = fl_profile_n_samples(p); i < n; i++) {
    fl_profile_sample(p, i, &s);
    uint64_t w = weights[s.stack_id];
    if (!w) continue;
    weights[s.stack_id] = 0; /* walked */
    bool self_found = false;
    /* Leaf to root, up the profile's prefix tree of stacks. */
    for (uint32_t node = s.node; node != FL_PROFILE_EMPTY_STACK;
         node = fl_profile_node_parent(p, node)) {
      uint32_t id = fl_profile_node_frame(p, node), l = of[id];
      if (l == FL__NONE) continue;
      if (!self_found && !(fl_profile_frame(p, id)->flags & skip_flags)) {
        lines[l].self += w;
        self_found = true;
      }
      if (stamp[l] != s.stack_id + 1) {
        stamp[l] = s.stack_id + 1;
        lines[l].total += w;
      }
    }
  }
  /* Only the lines some counted sample passed through. */
  size_t m = 0;
  for (size_t i = 0; i < n_lines; i++)
    if (lines[i].total) lines[m++] = lines[i];
  if (m) qsort(lines, m, sizeof *lines, cmp_line);
  free(of);
  free(weights);
  free(stamp);
  if (!m) {
    free(lines);
    lines = NULL;
  }
  *out = lines;
  return m;
}
