/* SPDX-License-Identifier: BSD-3-Clause */
// A C++ program built against an installed cflame: every installed header
// compiles as C++ and links with C linkage (CFLAME_BEGIN_DECLS), and the
// version macros and the library's fl_version() are those of the build. Prints the text report of a
// folded profile, as flame_consumer does.
//
//   cxx_consumer PROFILE.folded VERSION
#include <cflame/fl_allocs.h>
#include <cflame/fl_api.h>
#include <cflame/fl_collect.h>
#include <cflame/fl_diff.h>
#include <cflame/fl_io.h>
#include <cflame/fl_profile.h>
#include <cflame/fl_render.h>
#include <cflame/fl_sampler.h>
#include <cflame/fl_symbol.h>
#include <cflame/fl_tree.h>
#include <cflame/fl_version.h>

#include <cstdio>
#include <cstdlib>
#include <string>

static_assert(CFLAME_VERSION_HEX == ((CFLAME_VERSION_MAJOR << 16) | (CFLAME_VERSION_MINOR << 8) |
                                     CFLAME_VERSION_PATCH),
              "CFLAME_VERSION_HEX is made of the three numbers");

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s PROFILE.folded VERSION\n", argv[0]);
    return 2;
  }
  const std::string numbers = std::to_string(CFLAME_VERSION_MAJOR) + "." +
                              std::to_string(CFLAME_VERSION_MINOR) + "." +
                              std::to_string(CFLAME_VERSION_PATCH);
  if (numbers != argv[2] || std::string(CFLAME_VERSION_STRING) != argv[2]) {
    std::fprintf(stderr, "the headers say %s (%s), the build is %s\n", CFLAME_VERSION_STRING,
                 numbers.c_str(), argv[2]);
    return 1;
  }
  if (fl_version() != CFLAME_VERSION_HEX || std::string(fl_version_string()) != argv[2]) {
    std::fprintf(stderr, "the library says %s (0x%06x), the headers %s\n", fl_version_string(),
                 fl_version(), CFLAME_VERSION_STRING);
    return 1;
  }
  fl_profile_t *profile = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t io_err;
  if (fl_read_profile_file(profile, argv[1], FL_INPUT_AUTO, nullptr, &io_err) < 0) {
    std::fprintf(stderr, "%s:%zu: %s\n", io_err.file, io_err.line, io_err.message);
    return 1;
  }
  char err[256];
  fl_tree_t *tree = fl_tree_build(profile, nullptr, "all", err, sizeof err);
  if (!tree) {
    std::fprintf(stderr, "%s\n", err);
    return 1;
  }
  char *text = fl_text_tree(tree, nullptr);
  std::fputs(text, stdout);
  std::free(text);
  fl_tree_destroy(&tree);
  fl_profile_destroy(&profile);
  return 0;
}
