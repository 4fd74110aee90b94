/* SPDX-License-Identifier: BSD-3-Clause */
/* What the renderer tests (test_render.c, test_render_diff.c) share: where
 * their specs are written for the real consumers (tests/render), reading
 * specs back, and a deterministic generator for their big profiles.
 * Header-only, like test.h; include it after test.h. */
#ifndef CFLAME_RENDER_OUT_H
#define CFLAME_RENDER_OUT_H

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cflame/fl_tree.h"

/* Where write_out puts its files: DIR or $CFLAME_RENDER_OUT; NULL: nowhere. */
static const char *out_dir;

/* Takes the output directory from the command line (argv[1]) or the
 * environment, and makes it. Returns 0, or -1 having said why. */
static inline int out_dir_init(int argc, char **argv) {
  out_dir = argc > 1 ? argv[1] : getenv("CFLAME_RENDER_OUT");
  if (out_dir && !out_dir[0]) out_dir = NULL;
  if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
    perror(out_dir);
    return -1;
  }
  return 0;
}

/* Writes j as compact JSON to out_dir/name (a failed check if it cannot). */
static inline void write_out(const char *name, const json_t *j) {
  if (!out_dir) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", out_dir, name);
  if (json_dump_file(j, path, JSON_COMPACT) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    test_failures++;
  }
}

/* The tree of p rooted at "cell[1]", with C and minwidth, the other
 * options the defaults (a failed check when it cannot be built). */
static inline fl_tree_t *tree_of(const fl_profile_t *p, bool C, double minwidth) {
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  o.C = C;
  o.minwidth = minwidth;
  char err[256] = "";
  fl_tree_t *t = fl_tree_build(p, &o, "cell[1]", err, sizeof err);
  if (!t) fprintf(stderr, "fl_tree_build: %s\n", err);
  CHECK(t != NULL);
  return t;
}

/* How many times needle occurs in s, without overlaps. */
static inline size_t count_of(const char *s, const char *needle) {
  size_t n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* What is wrong with the location lines of an SVG's tooltips (<title>s),
 * or NULL: a line that is only "?" (a location not known, said as if it
 * were), or a location that repeats its module ("cell[1]:5 (cell[1])"). The
 * titles hold no markup, so they are read between their tags. */
static inline const char *svg_titles_problem(const char *svg) {
  static char why[300];
  for (const char *p = svg; (p = strstr(p, "<title>"));) {
    p += strlen("<title>");
    const char *end = strstr(p, "</title>");
    if (!end) return "a <title> is not closed";
    for (const char *line = p; line < end;) {
      const char *nl = memchr(line, '\n', (size_t)(end - line));
      size_t n = (size_t)((nl ? nl : end) - line);
      /* "X:N (X)" or "X (X)": the part before " (" (without ":N") is what
       * the parentheses hold. */
      const char *open = n > 3 && line[n - 1] == ')' ? strstr(line, " (") : NULL;
      size_t file_len = open ? (size_t)(open - line) : 0;
      const char *colon = open ? memchr(line, ':', file_len) : NULL;
      if (colon && colon > line && colon[-1] != ']') colon = NULL; /* "cell[1]:5" */
      if (colon) file_len = (size_t)(colon - line);
      bool repeats = open && open + 2 + file_len + 1 == line + n && file_len > 0 &&
                     strncmp(open + 2, line, file_len) == 0;
      if ((n == 1 && line[0] == '?') || repeats) {
        snprintf(why, sizeof why, "tooltip line \"%.*s\" in <title>%.*s</title>", (int)n, line,
                 (int)(end - p < 120 ? end - p : 120), p);
        return why;
      }
      line = nl ? nl + 1 : end;
    }
    p = end;
  }
  return NULL;
}

/* The layer of spec named name, or NULL. Borrowed. */
static inline json_t *layer_named(json_t *spec, const char *name) {
  size_t i;
  json_t *layer;
  json_array_foreach(json_object_get(spec, "layer"), i, layer) {
    const char *s = json_string_value(json_object_get(layer, "name"));
    if (s && strcmp(s, name) == 0) return layer;
  }
  return NULL;
}

/* A deterministic pseudo-random generator (xorshift); RNG_SEED starts it
 * over. */
#define RNG_SEED 88172645463325252u
static uint64_t rng_state = RNG_SEED;
static inline uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

#endif
