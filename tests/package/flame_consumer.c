/* SPDX-License-Identifier: BSD-3-Clause */
/* A program built against an installed cflame, as a user would build one:
 * reads a profile of folded stacks, prints its text report and writes its
 * flame graph as SVG. Running out of memory ends it its own way
 * (fl_set_oom_handler).
 *
 *   flame_consumer PROFILE.folded OUT.svg */
#include <cflame/fl_alloc.h>
#include <cflame/fl_io.h>
#include <cflame/fl_render.h>
#include <stdio.h>
#include <stdlib.h>

static void out_of_memory(size_t bytes) {
  fprintf(stderr, "flame_consumer: out of memory (%zu bytes)\n", bytes);
  exit(70);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PROFILE.folded OUT.svg\n", argv[0]);
    return 2;
  }
  fl_set_oom_handler(out_of_memory);
  fl_profile_t *profile = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t io_err;
  if (fl_read_profile_file(profile, argv[1], FL_INPUT_AUTO, NULL, &io_err) < 0) {
    fprintf(stderr, "%s:%zu: %s\n", io_err.file, io_err.line, io_err.message);
    return 1;
  }
  char err[256];
  fl_tree_t *tree = fl_tree_build(profile, NULL, "all", err, sizeof err);
  if (!tree) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  char *text = fl_text_tree(tree, NULL);
  fputs(text, stdout);
  char *svg = fl_svg(tree, NULL);
  FILE *out = fopen(argv[2], "w");
  if (!out || fputs(svg, out) < 0 || fclose(out) != 0) {
    perror(argv[2]);
    return 1;
  }
  free(svg);
  free(text);
  fl_tree_destroy(&tree);
  fl_profile_destroy(&profile);
  return 0;
}
