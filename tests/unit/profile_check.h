/* SPDX-License-Identifier: BSD-3-Clause */
/* What the tests of the readers and writers (test_io.c, test_pprof.c, the
 * fuzz targets' fuzz_io.h) look at a profile through: its whole tree, its
 * folded stacks, a frame by name. Header-only; each includes it once. */
#ifndef CFLAME_PROFILE_CHECK_H
#define CFLAME_PROFILE_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cflame/fl_io.h"

/* The tree of p with every frame: C and lines as given, minwidth 0. New;
 * NULL after printing why. */
static inline fl_tree_t *whole_tree(const fl_profile_t *p, bool lines, bool C) {
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  o.C = C;
  o.lines = lines ? FL_LINES_ON : FL_LINES_OFF;
  o.minwidth = 0;
  char err[256];
  fl_tree_t *t = fl_tree_build(p, &o, "all", err, sizeof err);
  if (!t) fprintf(stderr, "fl_tree_build: %s\n", err);
  return t;
}

/* Folded stacks of whole_tree(p, lines, C). New; NULL when it failed. */
static inline char *folded_of(const fl_profile_t *p, bool lines, bool C) {
  fl_tree_t *t = whole_tree(p, lines, C);
  char *out = t ? fl_folded(t) : NULL;
  fl_tree_destroy(&t);
  return out;
}

/* The frame of p whose function is func (the first), or NULL. */
static inline const fl_frame_t *frame_named(const fl_profile_t *p, const char *func) {
  for (size_t i = 0; i < fl_profile_n_frames(p); i++)
    if (strcmp(fl_profile_frame(p, (uint32_t)i)->func, func) == 0)
      return fl_profile_frame(p, (uint32_t)i);
  return NULL;
}

#endif
