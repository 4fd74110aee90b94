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

/* Where write_out puts its files: DIR or $CFLAME_RENDER_OUT; NULL: nowhere. */
static const char *out_dir;

/* Takes the output directory from the command line (argv[1]) or the
 * environment, and makes it. Returns 0, or -1 having said why. */
static int out_dir_init(int argc, char **argv) {
  out_dir = argc > 1 ? argv[1] : getenv("CFLAME_RENDER_OUT");
  if (out_dir && !out_dir[0]) out_dir = NULL;
  if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
    perror(out_dir);
    return -1;
  }
  return 0;
}

/* Writes j as compact JSON to out_dir/name (a failed check if it cannot). */
static void write_out(const char *name, const json_t *j) {
  if (!out_dir) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", out_dir, name);
  if (json_dump_file(j, path, JSON_COMPACT) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    test_failures++;
  }
}

/* How many times needle occurs in s, without overlaps. */
static size_t count_of(const char *s, const char *needle) {
  size_t n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* The layer of spec named name, or NULL. Borrowed. */
static json_t *layer_named(json_t *spec, const char *name) {
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
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

#endif
