/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for kn_names: how the kernel tells a cell's code from its own
 * machinery and from libraries in a symbolized frame, and the plain names
 * tracebacks and graphs show. */
#include <stdio.h>

#include "kn_names.h"
#include "test.h"
#include "fl__common.h"

static const char *kind_name(kn_frame_kind_t k) {
  switch (k) {
    case KN_FRAME_OTHER: return "OTHER";
    case KN_FRAME_CELL: return "CELL";
    case KN_FRAME_ENTRY: return "ENTRY";
    case KN_FRAME_WORKER: return "WORKER";
  }
  return "?";
}

static void test_classify(void) {
  static const struct {
    const char *module, *func;
    kn_frame_kind_t kind;
    int cell;
  } cases[] = {
      {"/tmp/s/cell_12.so", "cflame_c12_fib", KN_FRAME_CELL, 12},
      {"/tmp/s/cell_12.so", "cflame_run_12", KN_FRAME_ENTRY, 12},
      {"/tmp/s/cell_3.so", NULL, KN_FRAME_CELL, 3}, /* no symbol: still the cell's code */
      {"cell_7.so", "helper", KN_FRAME_CELL, 7},
      {"/usr/lib/cflame/cflame-worker", "kw_run_cell", KN_FRAME_WORKER, 0},
      {"/usr/lib/cflame/cflame-worker", "main", KN_FRAME_WORKER, 0},
      {"/lib/x86_64-linux-gnu/libc.so.6", "qsort", KN_FRAME_OTHER, 0},
      {"/lib/x86_64-linux-gnu/libc.so.6", NULL, KN_FRAME_OTHER, 0},
      {NULL, NULL, KN_FRAME_OTHER, 0},
      {"/tmp/s/cell_x.so", "f", KN_FRAME_OTHER, 0},
      {"/tmp/s/cell_12.so.bak", "f", KN_FRAME_OTHER, 0},
      {"/tmp/s/cell_.so", "f", KN_FRAME_OTHER, 0},
      {"/tmp/s/cell_12.sox", "f", KN_FRAME_OTHER, 0},
      {"/tmp/s/mycell_12.so", "f", KN_FRAME_OTHER, 0},
      {"/tmp/cell_12.so/libm.so.6", "sin", KN_FRAME_OTHER, 0}, /* a directory of that name */
      {"/usr/bin/cflame-worker-old", "main", KN_FRAME_OTHER, 0},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    fl_frame_info_t f = {.func = cases[i].func, .file = NULL, .module = cases[i].module};
    int cell = -1;
    kn_frame_kind_t kind = kn_frame_classify(&f, &cell);
    CHECK_STR(kind_name(kind), kind_name(cases[i].kind));
    CHECK_INT(cell, cases[i].cell);
    CHECK_INT(kn_frame_classify(&f, NULL), cases[i].kind); /* cell may be NULL */
    if (kind != cases[i].kind || cell != cases[i].cell)
      fprintf(stderr, "  case %zu: %s %s\n", i, cases[i].module ? cases[i].module : "(null)",
              cases[i].func ? cases[i].func : "(null)");
  }
}

/* The names kn_names.h's formats write are the ones its readers take back. */
static void test_written_names_read_back(void) {
  for (int n = 1; n <= 1000; n *= 10) {
    char so[64], entry[64], symbol[64], file[64], gen[64], module[128];
    snprintf(so, sizeof so, KN_CELL_SO_FMT, n);
    snprintf(module, sizeof module, "/tmp/cflame-session/%s", so);
    snprintf(entry, sizeof entry, KN_ENTRY_FMT, n);
    snprintf(symbol, sizeof symbol, KN_SYMBOL_PREFIX "%d_fib", n);
    snprintf(file, sizeof file, KN_CELL_FILE_FMT, n);
    snprintf(gen, sizeof gen, KN_GEN_FILE_FMT, n);

    int cell = 0;
    fl_frame_info_t f = {.func = symbol, .module = module};
    CHECK_INT(kn_frame_classify(&f, &cell), KN_FRAME_CELL);
    CHECK_INT(cell, n);
    f.func = entry;
    CHECK_INT(kn_frame_classify(&f, &cell), KN_FRAME_ENTRY);
    CHECK_STR(kn_plain_name(symbol), "fib");
    CHECK(kn_is_cell_file(file));
    CHECK(!kn_is_generated_file(file));
    CHECK(kn_is_generated_file(gen));
    CHECK(!kn_is_cell_file(gen));
  }
  fl_frame_info_t w = {.func = "main", .module = "/opt/cflame/libexec/" KN_WORKER_NAME};
  CHECK_INT(kn_frame_classify(&w, NULL), KN_FRAME_WORKER);
}

static void test_plain_name(void) {
  static const struct {
    const char *symbol, *plain;
  } cases[] = {
      {"cflame_c3_fib", "fib"},
      {"cflame_c12_main_loop", "main_loop"},
      {"cflame_c3_cflame_c4_x", "cflame_c4_x"}, /* only the kernel's prefix comes off */
      {"fib", "fib"},
      {"cflame_c_fib", "cflame_c_fib"},
      {"cflame_c3fib", "cflame_c3fib"},
      {"cflame_cx3_fib", "cflame_cx3_fib"},
      {"cflame_run_3", "cflame_run_3"},
      {"my_cflame_c3_fib", "my_cflame_c3_fib"},
      {"", ""},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++)
    CHECK_STR(kn_plain_name(cases[i].symbol), cases[i].plain);
}

static void test_files(void) {
  static const struct {
    const char *file;
    bool cell, generated;
  } cases[] = {
      {"cell[3]", true, false},
      {"cell[123]", true, false},
      {"<cflame cell 3>", false, true},
      {"/tmp/x/cell_3.c", false, false},
      {"/usr/include/stdio.h", false, false},
      {"cell.c", false, false},
      {"", false, false},
      {NULL, false, false},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    CHECK_INT(kn_is_cell_file(cases[i].file), cases[i].cell);
    CHECK_INT(kn_is_generated_file(cases[i].file), cases[i].generated);
  }
}

/* Every identifier the kernel writes into a cell's unit is one completion
 * hides (kn_is_generated_name), and the hook the kernel calls by its string
 * is the identifier the worker defines. */
static void test_generated_identifiers(void) {
  static const char *const names[] = {
      KN_ENTRY_PREFIX "1", KN_SYMBOL_PREFIX "1_f", KN_SYMBOL_MACRO, KN_MAIN_IS_MACRO,
      KN_MAIN_ENTRY,       KN_MAIN_ARG0,           KN_MAIN_ARGV,    KN_VALUE_VAR,
      KN_VALUE_TYPE_VAR,   KN_VALUE_HOOK,
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(names); i++) {
    CHECK(kn_is_generated_name(names[i]));
    CHECK_STR(kn_plain_name(names[i]), i == 1 ? "f" : names[i]);
  }
  CHECK_STR(KN_VALUE_HOOK, "cflame_value_hook");
  CHECK(!kn_is_generated_name("value"));
}

static void test_base_name(void) {
  static const struct {
    const char *path, *base;
  } cases[] = {
      {"/a/b/c.so", "c.so"}, {"c.so", "c.so"}, {"/c.so", "c.so"},
      {"/a/b/", ""},         {"", ""},         {NULL, NULL},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++)
    CHECK_STR(kn_base_name(cases[i].path), cases[i].base);
}

int main(void) {
  test_classify();
  test_written_names_read_back();
  test_plain_name();
  test_files();
  test_generated_identifiers();
  test_base_name();
  return TEST_DONE();
}
