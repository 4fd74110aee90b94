/* SPDX-License-Identifier: BSD-3-Clause */
/* What the fuzz targets of the profile readers (fuzz_folded.c,
 * fuzz_perfscript.c) check on every input, whatever its kind:
 *
 *  - the input is copied to a heap block of exactly its size, so
 *    AddressSanitizer catches any read past its end;
 *  - the profile read into already holds one sample: a failed read must
 *    leave it as it was (samples, weight, frames) and fill in an error
 *    with a NUL-terminated message, the input's name, and a line number
 *    no larger than the input's line count;
 *  - a successful read must add at least one unit of weight, and the tree
 *    of what was read must weigh as much;
 *  - its folded stacks, read back as folded stacks, must give the same
 *    folded stacks again (fl_folded's output is a fixed point of reading
 *    and writing), and the same total weight;
 *  - written as pprof and read back, it must give the same folded stacks
 *    (when its total weight fits pprof's int64 values), and so must it
 *    written as speedscope's file.
 * Reading and each tree run under a budget of FUZZ_IO_BUDGET bytes (and
 * inputs unzip to no more), as the kernel and the command run under
 * theirs: a refusal is one more error, which must leave the profile as it
 * was; a tree the budget refuses ends the checks of that input. So no
 * input may take more memory than the budgets, and the fuzzers run with
 * libFuzzer's -rss_limit_mb and -malloc_limit_mb (scripts/test): an input
 * that passes them is a leak in the budget, reported as an out-of-memory.
 * A gzipped input's error lines count the lines of what it holds. Any
 * failure aborts. Header-only: each target includes it once. */
#ifndef CFLAME_FUZZ_IO_H
#define CFLAME_FUZZ_IO_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_io.h"
#include "fl__io.h" /* fl__is_gzip, fl__gunzip */

/* What a read, and each tree, may take: far below the fuzzers' memory
 * limits under AddressSanitizer. */
#define FUZZ_IO_BUDGET ((size_t)64 << 20)

static void fuzz_io_fail(const char *what, const char *detail) {
  fprintf(stderr, "fuzz: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

/* fl_read_profile under a budget of FUZZ_IO_BUDGET, unzipping to no more. */
static int fuzz_io_read_into(fl_profile_t *p, const char *data, size_t size, const char *name,
                             fl_input_kind_t kind, fl_input_kind_t *got, fl_io_error_t *err) {
  fl_budget_t budget;
  fl_budget_init(&budget, FUZZ_IO_BUDGET);
  fl_read_opts_t o;
  fl_read_opts_init(&o);
  o.kind = kind;
  o.max_bytes = FUZZ_IO_BUDGET;
  o.budget = &budget;
  return fl_read_profile_opts(p, data, size, name, &o, got, err);
}

/* The tree of every frame of p (with lines when asked, minwidth 0) under
 * a budget of FUZZ_IO_BUDGET; NULL when the budget refuses it. */
static fl_tree_t *fuzz_io_tree_C(const fl_profile_t *p, bool lines, bool C) {
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  o.C = C;
  o.lines = lines ? FL_LINES_ON : FL_LINES_OFF;
  o.minwidth = 0;
  o.max_memory = FUZZ_IO_BUDGET;
  char err[512];
  fl_tree_t *t = fl_tree_build(p, &o, "all", err, sizeof err);
  if (!t && !strstr(err, "the budget allows")) fuzz_io_fail("fl_tree_build failed", err);
  return t;
}

/* The tree with system libraries folded, as the notebook draws it. */
static fl_tree_t *fuzz_io_tree(const fl_profile_t *p, bool lines) {
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  return fuzz_io_tree_C(p, lines, o.C);
}

/* Folded stacks of p (every frame, with lines when asked, minwidth 0);
 * NULL when the budget refuses its tree. */
static char *fuzz_io_folded(const fl_profile_t *p, bool lines, uint64_t *root_count) {
  fl_tree_t *t = fuzz_io_tree(p, lines);
  if (!t) return NULL;
  *root_count = fl_tree_root(t)->count;
  char *text = fl_folded(t);
  if (!text) fuzz_io_fail("fl_folded returned NULL", NULL);
  fl_tree_destroy(&t);
  return text;
}

/* Folded stacks of p's tree with every frame, system libraries' included
 * (C=true). */
static char *fuzz_io_folded_all(const fl_profile_t *p, bool lines) {
  fl_tree_t *t = fuzz_io_tree_C(p, lines, true);
  if (!t) return NULL;
  char *text = fl_folded(t);
  fl_tree_destroy(&t);
  return text;
}

/* p written as pprof (the tree with every frame) and read back gives the
 * same folded stacks, when its weights fit pprof's int64 values. Compared
 * with every frame shown (C=true): pprof has no field for a frame's kind
 * of code, which readers take from the mapping's name (docs/CLI.md), so a
 * hostile module name that says otherwise than its path (a kernel frame
 * in "[kerne_64-linux-gnu/libc.so.6)") reads back by its name, and C=false
 * would fold it where the first reading did not. */
/* file (size bytes, written by format's writer, new: freed here), read
 * back, gives the folded stacks folded (lines as asked). */
static void fuzz_io_reads_back(char *file, size_t size, const char *format, const char *folded,
                               bool lines) {
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t err;
  int rc = fuzz_io_read_into(q, file, size, format, FL_INPUT_AUTO, NULL, &err);
  if (rc < 0 && err.code != FL_IO_ERR_BUDGET) fuzz_io_fail("an output does not read back", format);
  char *again = rc < 0 ? NULL : fuzz_io_folded_all(q, lines);
  if (again && strcmp(folded, again) != 0)
    fuzz_io_fail("folded stacks changed through an output", format);
  free(again);
  free(file);
  fl_profile_destroy(&q);
}

static void fuzz_io_pprof_round_trip(const fl_profile_t *p, bool lines) {
  if (fl_profile_info_const(p)->total_weight > INT64_MAX) return; /* fl_pprof caps them */
  char *folded = fuzz_io_folded_all(p, lines);
  fl_tree_t *t = folded ? fuzz_io_tree_C(p, lines, true) : NULL;
  if (t) {
    size_t size;
    char *file = fl_pprof(t, &size);
    fuzz_io_reads_back(file, size, "pprof", folded, lines);
  }
  fl_tree_destroy(&t);
  free(folded);
}

/* p written as speedscope's file (the tree with every frame) and read
 * back gives the same folded stacks: its frames are (function, file,
 * line), which is all folded stacks say of a frame, and its weights,
 * scaled to nanoseconds by the interval, scale back. JSON holds integers
 * to INT64_MAX, and text as UTF-8 (other bytes are written cleaned). */
static void fuzz_io_speedscope_round_trip(const fl_profile_t *p, bool lines) {
  if (fl_profile_info_const(p)->total_weight > INT64_MAX) return;
  char *folded = fuzz_io_folded_all(p, lines);
  json_t *utf8 = folded ? json_string(folded) : NULL;
  fl_tree_t *t = utf8 ? fuzz_io_tree_C(p, lines, true) : NULL;
  json_decref(utf8);
  fl_budget_t budget;
  fl_budget_init(&budget, FUZZ_IO_BUDGET);
  size_t size;
  char *file = t ? fl_speedscope(t, NULL, &budget, &size) : NULL;
  if (file) fuzz_io_reads_back(file, size, "speedscope", folded, lines);
  fl_tree_destroy(&t);
  free(folded);
}

/* Folded stacks written from a profile read under the budget read back
 * under the same budget: what the tree took, their reading takes too (a
 * frame's text for each frame of each distinct stack, written once). */
static void fuzz_io_round_trip(const fl_profile_t *p, bool lines) {
  uint64_t total = fl_profile_info_const(p)->total_weight, weight1, weight2;
  char *first = fuzz_io_folded(p, lines, &weight1);
  if (!first) return;
  if (weight1 != total) fuzz_io_fail("the tree does not weigh what was read", NULL);
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t err;
  if (fuzz_io_read_into(q, first, strlen(first), "folded", FL_INPUT_FOLDED, NULL, &err) < 0) {
    if (err.code != FL_IO_ERR_BUDGET)
      fuzz_io_fail("fl_folded's output does not read back", err.message);
    free(first);
    fl_profile_destroy(&q);
    return;
  }
  char *second = fuzz_io_folded(q, lines, &weight2);
  if (second && weight2 != total) fuzz_io_fail("the weight changed in the round trip", NULL);
  if (second && strcmp(first, second) != 0)
    fuzz_io_fail("folded stacks changed in the round trip", NULL);
  if (second) fuzz_io_pprof_round_trip(p, lines);
  if (second) fuzz_io_speedscope_round_trip(p, lines);
  free(first);
  free(second);
  fl_profile_destroy(&q);
}

/* Reads data as kind into a profile that holds one sample already, and
 * checks the outcome as the file comment says. */
static void fuzz_io_read(const uint8_t *data, size_t size, fl_input_kind_t kind) {
  char *copy = malloc(size ? size : 1);
  if (!copy) abort();
  if (size) memcpy(copy, data, size);
  size_t lines = 1;
  char *plain = NULL, why[200];
  size_t plain_len = 0;
  const char *text = copy;
  size_t text_len = size;
  if (fl__is_gzip(copy, size) &&
      fl__gunzip(copy, size, FUZZ_IO_BUDGET, &plain, &plain_len, why, sizeof why) == 0) {
    text = plain;
    text_len = plain_len;
  }
  for (size_t i = 0; i < text_len; i++) lines += text[i] == '\n';
  free(plain);

  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_frame_t f = {.func = "before", .flags = FL_FRAME_CELL};
  uint32_t id = fl_profile_frame_id(p, &f);
  fl_profile_add_sample(p, &id, 1, 7, 0, 0);

  fl_io_error_t err;
  memset(&err, 0x55, sizeof err); /* no NUL unless the reader writes one */
  fl_input_kind_t got;
  int rc = fuzz_io_read_into(p, copy, size, "fuzz-input", kind, &got, &err);
  const fl_profile_info_t *info = fl_profile_info_const(p);
  if (kind != FL_INPUT_AUTO && got != kind) fuzz_io_fail("kind_out is not the kind asked", NULL);
  if (rc < 0) {
    if (!memchr(err.message, '\0', sizeof err.message) || !err.message[0])
      fuzz_io_fail("no error message", NULL);
    if (strcmp(err.file, "fuzz-input") != 0) fuzz_io_fail("the error names another file", NULL);
    if (err.line > lines) fuzz_io_fail("the error's line is past the end", err.message);
    if (fl_profile_n_samples(p) != 1 || info->total_weight != 7 || fl_profile_n_frames(p) != 1)
      fuzz_io_fail("a failed read changed the profile", err.message);
  } else {
    if (rc != 0) fuzz_io_fail("fl_read_profile returned neither 0 nor -1", NULL);
    if (info->total_weight <= 7) fuzz_io_fail("a successful read added no weight", NULL);
    fuzz_io_round_trip(p, false);
    fuzz_io_round_trip(p, true);
  }
  fl_profile_destroy(&p);
  free(copy);
}

#endif
