/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading back the names of kn_names.h. */
#include "kn_names.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

const char *kn_base_name(const char *path) {
  const char *s = path ? strrchr(path, '/') : NULL;
  return s ? s + 1 : path;
}

/* "cell_12.so" -> 12, else 0. */
static int cell_of_module(const char *module) {
  const char *b = kn_base_name(module);
  const size_t stem = strlen(KN_CELL_STEM);
  if (!b || strncmp(b, KN_CELL_STEM, stem) != 0) return 0;
  char *end;
  long n = strtol(b + stem, &end, 10);
  return (end != b + stem && !strcmp(end, KN_CELL_SO_SUFFIX)) ? (int)n : 0;
}

kn_frame_kind_t kn_frame_classify(const fl_frame_info_t *f, int *cell) {
  int c = cell_of_module(f->module);
  if (cell) *cell = c;
  const char *b = kn_base_name(f->module);
  if (b && !strcmp(b, KN_WORKER_NAME)) return KN_FRAME_WORKER;
  if (f->func && !strncmp(f->func, KN_ENTRY_PREFIX, strlen(KN_ENTRY_PREFIX)))
    return KN_FRAME_ENTRY;
  return c ? KN_FRAME_CELL : KN_FRAME_OTHER;
}

bool kn_is_cell_file(const char *file) {
  return file && !strncmp(file, KN_CELL_FILE_PREFIX, strlen(KN_CELL_FILE_PREFIX));
}

bool kn_is_generated_file(const char *file) {
  return file && !strncmp(file, KN_GEN_FILE_PREFIX, strlen(KN_GEN_FILE_PREFIX));
}

const char *kn_plain_name(const char *symbol) {
  size_t n = strlen(KN_SYMBOL_PREFIX);
  if (strncmp(symbol, KN_SYMBOL_PREFIX, n) != 0 || !isdigit((unsigned char)symbol[n]))
    return symbol;
  const char *p = symbol + n;
  while (isdigit((unsigned char)*p)) p++;
  return *p == '_' ? p + 1 : symbol;
}

bool kn_is_generated_name(const char *name) {
  return !strncmp(name, KN_GENERATED_PREFIX, strlen(KN_GENERATED_PREFIX));
}
