/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests fl_profile: the table of kinds, frame interning, samples and
 * shared stacks, info counters, copy, merge (also under a root), clear, the
 * threads list, time stamps and thread names, allocation profiles,
 * demangled names, and the memory 10^6 samples take. */
#include "cflame/fl_profile.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_tree.h"
#include "test.h"
#include "fl__common.h"

static uint32_t frame(fl_profile_t *p, const char *func, const char *file, int line,
                      const char *module, uint64_t addr, uint32_t flags) {
  fl_frame_t f = {
      .func = func, .file = file, .line = line, .module = module, .addr = addr, .flags = flags};
  return fl_profile_frame_id(p, &f);
}

static void test_new(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  CHECK(p != NULL);
  const fl_profile_info_t *info = fl_profile_info_const(p);
  CHECK_INT(info->kind, FL_PROFILE_CPU);
  CHECK_INT(info->samples, 0);
  CHECK_INT(info->total_weight, 0);
  CHECK(info->sample_rate == 1);
  CHECK_INT(fl_profile_n_frames(p), 0);
  CHECK_INT(fl_profile_n_samples(p), 0);
  CHECK(fl_profile_info(p) == fl_profile_info_const(p));
  int *threads = NULL;
  CHECK_INT(fl_profile_threads(p, &threads), 0);
  free(threads);
  fl_profile_destroy(&p);
  CHECK(p == NULL);
  fl_profile_destroy(&p); /* harmless on NULL */
}

static void test_interning(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  char name[16], file[16];
  strcpy(name, "work");
  strcpy(file, "cell[1]");
  uint32_t a = frame(p, name, file, 12, "cell[1]", 0x1000, FL_FRAME_CELL);
  /* The strings were copied: changing the caller's buffers changes nothing. */
  strcpy(name, "XXXX");
  strcpy(file, "YYYYYYY");
  const fl_frame_t *f = fl_profile_frame(p, a);
  CHECK_STR(f->func, "work");
  CHECK_STR(f->file, "cell[1]");
  CHECK_STR(f->module, "cell[1]");
  CHECK(f->func != name);
  CHECK_INT(f->line, 12);
  CHECK_INT(f->addr, 0x1000);
  CHECK_INT(f->flags, FL_FRAME_CELL);

  /* Same fields, other buffers: the same id. */
  CHECK_INT(frame(p, "work", "cell[1]", 12, "cell[1]", 0x1000, FL_FRAME_CELL), a);
  /* Any field differing: a new id. */
  uint32_t b = frame(p, "work", "cell[1]", 13, "cell[1]", 0x1000, FL_FRAME_CELL);
  uint32_t c = frame(p, "work", "cell[1]", 12, "cell[1]", 0x1004, FL_FRAME_CELL);
  uint32_t d = frame(p, "work", "cell[1]", 12, "cell[1]", 0x1000, FL_FRAME_CELL | FL_FRAME_INLINED);
  uint32_t e = frame(p, "work", "cell[2]", 12, "cell[1]", 0x1000, FL_FRAME_CELL);
  uint32_t g = frame(p, "work", "cell[1]", 12, "cell[2]", 0x1000, FL_FRAME_CELL);
  uint32_t h = frame(p, "work", NULL, 12, "cell[1]", 0x1000, FL_FRAME_CELL);
  uint32_t i = frame(p, "work", "cell[1]", 12, NULL, 0x1000, FL_FRAME_CELL);
  uint32_t j = frame(p, "Work", "cell[1]", 12, "cell[1]", 0x1000, FL_FRAME_CELL);
  CHECK_INT(a, 0);
  CHECK_INT(b, 1);
  CHECK_INT(c, 2);
  CHECK_INT(d, 3);
  CHECK_INT(e, 4);
  CHECK_INT(g, 5);
  CHECK_INT(h, 6);
  CHECK_INT(i, 7);
  CHECK_INT(j, 8);
  CHECK_INT(fl_profile_n_frames(p), 9);
  CHECK(fl_profile_frame(p, h)->file == NULL);
  CHECK(fl_profile_frame(p, i)->module == NULL);
  /* Equal strings are one copy. */
  CHECK(fl_profile_frame(p, a)->func == fl_profile_frame(p, b)->func);
  CHECK(fl_profile_frame(p, a)->file == fl_profile_frame(p, a)->module);

  /* A missing function name is "[unknown]", and interns like the text. */
  uint32_t u = frame(p, NULL, NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM);
  CHECK_STR(fl_profile_frame(p, u)->func, "[unknown]");
  CHECK_INT(frame(p, "[unknown]", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM), u);

  /* Many frames: the tables grow and ids stay dense and stable. */
  char buf[32];
  uint32_t first = (uint32_t)fl_profile_n_frames(p);
  int bad = 0;
  for (int k = 0; k < 20000; k++) {
    snprintf(buf, sizeof buf, "f%d", k);
    if (frame(p, buf, "x.c", k, "prog", (uint64_t)k, 0) != first + (uint32_t)k) bad++;
  }
  for (int k = 0; k < 20000; k++) {
    snprintf(buf, sizeof buf, "f%d", k);
    if (frame(p, buf, "x.c", k, "prog", (uint64_t)k, 0) != first + (uint32_t)k) bad++;
    if (strcmp(fl_profile_frame(p, first + (uint32_t)k)->func, buf) != 0) bad++;
  }
  CHECK_INT(bad, 0);
  CHECK_INT(fl_profile_n_frames(p), first + 20000);
  fl_profile_destroy(&p);
}

/* A small CPU profile: main:5 -> work:12 (3 + 1), main:5 (1), main:7 ->
 * other:20 (4); threads 1, 2 and 7. */
static fl_profile_t *small_profile(uint32_t ids[4]) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = 1000000;
  ids[0] = frame(p, "main", "cell[1]", 5, "cell[1]", 0, FL_FRAME_CELL);
  ids[1] = frame(p, "work", "cell[1]", 12, "cell[1]", 0, FL_FRAME_CELL);
  ids[2] = frame(p, "main", "cell[1]", 7, "cell[1]", 0, FL_FRAME_CELL);
  ids[3] = frame(p, "other", "cell[1]", 20, "cell[1]", 0, FL_FRAME_CELL);
  uint32_t s1[] = {ids[0], ids[1]}, s2[] = {ids[0]}, s3[] = {ids[2], ids[3]};
  fl_profile_add_sample(p, s1, 2, 3, 0, 1);
  fl_profile_add_sample(p, s2, 1, 1, 0, 7);
  fl_profile_add_sample(p, s3, 2, 4, 0, 2);
  fl_profile_add_sample(p, s1, 2, 1, 0, 2);
  return p;
}

static void test_samples(void) {
  uint32_t ids[4];
  fl_profile_t *p = small_profile(ids);
  const fl_profile_info_t *info = fl_profile_info_const(p);
  CHECK_INT(fl_profile_n_samples(p), 4);
  CHECK_INT(info->samples, 4);
  CHECK_INT(info->total_weight, 9);
  CHECK_INT(info->total_allocs, 0);
  CHECK_INT(info->interval_ns, 1000000);

  fl_sample_t s;
  fl_profile_sample(p, 0, &s);
  CHECK_INT(s.n, 2);
  CHECK_INT(fl_profile_sample_frame(p, &s, 0), ids[0]);
  CHECK_INT(fl_profile_sample_frame(p, &s, 1), ids[1]);
  CHECK_INT(s.weight, 3);
  CHECK_INT(s.allocs, 0);
  CHECK_INT(s.thread, 1);
  uint32_t first_stack = s.stack_id;
  fl_profile_sample(p, 1, &s);
  CHECK_INT(s.n, 1);
  CHECK_INT(fl_profile_sample_frame(p, &s, 0), ids[0]);
  CHECK_INT(s.thread, 7);
  fl_profile_sample(p, 2, &s);
  CHECK_INT(s.n, 2);
  CHECK_INT(fl_profile_sample_frame(p, &s, 0), ids[2]);
  CHECK_INT(fl_profile_sample_frame(p, &s, 1), ids[3]);
  CHECK_INT(s.weight, 4);
  fl_profile_sample(p, 3, &s);
  CHECK_INT(s.weight, 1);
  CHECK_INT(s.thread, 2);
  /* Equal stacks are stored once. */
  CHECK(s.stack_id == first_stack);

  /* An empty stack is a sample too (its weight is the root's self). */
  fl_profile_add_sample(p, NULL, 0, 2, 0, 1);
  fl_profile_sample(p, 4, &s);
  CHECK_INT(s.n, 0);
  CHECK_INT(s.weight, 2);
  CHECK_INT(info->total_weight, 11);

  int *threads = NULL;
  size_t n = fl_profile_threads(p, &threads);
  CHECK_INT(n, 3);
  if (n == 3) {
    CHECK_INT(threads[0], 1);
    CHECK_INT(threads[1], 2);
    CHECK_INT(threads[2], 7);
  }
  free(threads);
  fl_profile_destroy(&p);
}

static void test_threads_many(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t f = frame(p, "f", NULL, 0, NULL, 0, 0);
  static const int order[] = {5, 3, 5, 5, 0, 3, -2, 9, 0, 5};
  for (size_t i = 0; i < FL__ARRAY_SIZE(order); i++)
    fl_profile_add_sample(p, &f, 1, 1, 0, order[i]);
  int *threads = NULL;
  size_t n = fl_profile_threads(p, &threads);
  CHECK_INT(n, 5);
  if (n == 5) {
    CHECK_INT(threads[0], -2);
    CHECK_INT(threads[1], 0);
    CHECK_INT(threads[2], 3);
    CHECK_INT(threads[3], 5);
    CHECK_INT(threads[4], 9);
  }
  free(threads);
  fl_profile_destroy(&p);
}

static void test_copy(void) {
  uint32_t ids[4];
  fl_profile_t *p = small_profile(ids);
  fl_profile_info(p)->cpu_seconds = 0.5;
  strcpy(fl_profile_info(p)->source, "cell[1]");
  fl_profile_t *c = fl_profile_copy(p);
  CHECK(c != NULL);
  /* Nothing of the copy lives in the original. */
  fl_profile_destroy(&p);
  CHECK_INT(fl_profile_n_frames(c), 4);
  CHECK_INT(fl_profile_n_samples(c), 4);
  const fl_profile_info_t *info = fl_profile_info_const(c);
  CHECK_INT(info->samples, 4);
  CHECK_INT(info->total_weight, 9);
  CHECK_INT(info->interval_ns, 1000000);
  CHECK(info->cpu_seconds == 0.5);
  CHECK_STR(info->source, "cell[1]");
  CHECK_STR(fl_profile_frame(c, ids[3])->func, "other");
  CHECK_INT(fl_profile_frame(c, ids[3])->line, 20);
  fl_sample_t s, t;
  fl_profile_sample(c, 2, &s);
  CHECK_INT(s.n, 2);
  CHECK_INT(fl_profile_sample_frame(c, &s, 0), ids[2]);
  CHECK_INT(fl_profile_sample_frame(c, &s, 1), ids[3]);
  CHECK_INT(s.weight, 4);
  CHECK_INT(s.thread, 2);
  /* The copy interns and shares stacks like the original. */
  CHECK_INT(frame(c, "work", "cell[1]", 12, "cell[1]", 0, FL_FRAME_CELL), ids[1]);
  uint32_t st[] = {ids[0], ids[1]};
  fl_profile_add_sample(c, st, 2, 1, 0, 1);
  fl_profile_sample(c, 0, &s);
  fl_profile_sample(c, 4, &t);
  CHECK(s.stack_id == t.stack_id);
  CHECK_INT(fl_profile_n_samples(c), 5);

  /* Changing the copy leaves the original alone. */
  p = small_profile(ids);
  fl_profile_t *c2 = fl_profile_copy(p);
  fl_profile_add_sample(c2, st, 2, 10, 0, 1);
  frame(c2, "new", NULL, 0, NULL, 0, 0);
  CHECK_INT(fl_profile_n_samples(p), 4);
  CHECK_INT(fl_profile_info_const(p)->total_weight, 9);
  CHECK_INT(fl_profile_n_frames(p), 4);
  fl_profile_destroy(&c2);
  fl_profile_destroy(&p);
  fl_profile_destroy(&c);

  /* An empty profile copies. */
  p = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  c = fl_profile_copy(p);
  CHECK_INT(fl_profile_info_const(c)->kind, FL_PROFILE_ALLOC_BYTES);
  CHECK_INT(fl_profile_n_samples(c), 0);
  fl_profile_destroy(&p);
  fl_profile_destroy(&c);
}

static void test_merge(void) {
  uint32_t ids[4];
  fl_profile_t *p = small_profile(ids);
  fl_profile_info(p)->dropped = 1;
  fl_profile_info(p)->cpu_seconds = 1.0;

  /* src has its frames in another order, one frame p lacks, and no interval. */
  fl_profile_t *src = fl_profile_new(FL_PROFILE_CPU);
  uint32_t other = frame(src, "other", "cell[1]", 20, "cell[1]", 0, FL_FRAME_CELL);
  uint32_t extra = frame(src, "extra", "cell[2]", 3, "cell[2]", 0, FL_FRAME_CELL);
  uint32_t main7 = frame(src, "main", "cell[1]", 7, "cell[1]", 0, FL_FRAME_CELL);
  uint32_t s1[] = {main7, other}, s2[] = {main7, extra};
  fl_profile_add_sample(src, s1, 2, 5, 0, 3);
  fl_profile_add_sample(src, s2, 2, 2, 0, 1);
  fl_profile_info(src)->dropped = 2;
  fl_profile_info(src)->cpu_seconds = 0.25;

  fl_profile_merge(p, src);
  CHECK_INT(fl_profile_n_frames(p), 5);
  CHECK_INT(fl_profile_n_samples(p), 6);
  const fl_profile_info_t *info = fl_profile_info_const(p);
  CHECK_INT(info->samples, 6);
  CHECK_INT(info->total_weight, 16);
  CHECK_INT(info->dropped, 3);
  CHECK(info->cpu_seconds == 1.25);
  CHECK_INT(info->interval_ns, 1000000);
  fl_sample_t s, t;
  fl_profile_sample(p, 4, &s);
  CHECK_INT(s.n, 2);
  CHECK_INT(fl_profile_sample_frame(p, &s, 0), ids[2]); /* re-interned to p's ids */
  CHECK_INT(fl_profile_sample_frame(p, &s, 1), ids[3]);
  CHECK_INT(s.weight, 5);
  CHECK_INT(s.thread, 3);
  fl_profile_sample(p, 2, &t);
  CHECK(s.stack_id == t.stack_id); /* the same stack as p's own main:7 -> other */
  fl_profile_sample(p, 5, &s);
  CHECK_STR(fl_profile_frame(p, fl_profile_sample_frame(p, &s, 1))->func, "extra");
  CHECK_STR(fl_profile_frame(p, fl_profile_sample_frame(p, &s, 1))->file, "cell[2]");
  /* src is unchanged. */
  CHECK_INT(fl_profile_n_samples(src), 2);
  CHECK_INT(fl_profile_n_frames(src), 3);

  /* Merging into an empty profile takes the interval. */
  fl_profile_t *empty = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_merge(empty, p);
  CHECK_INT(fl_profile_info_const(empty)->interval_ns, 1000000);
  CHECK_INT(fl_profile_info_const(empty)->total_weight, 16);
  CHECK_INT(fl_profile_n_samples(empty), 6);

  /* Merging a profile into itself doubles it. */
  fl_profile_merge(p, p);
  CHECK_INT(fl_profile_n_samples(p), 12);
  CHECK_INT(info->total_weight, 32);
  CHECK_INT(fl_profile_n_frames(p), 5);
  fl_profile_sample(p, 10, &s);
  fl_profile_sample(p, 4, &t);
  CHECK(s.stack_id == t.stack_id);
  CHECK_INT(s.weight, 5);

  /* Under a root: every stack of src gets it outermost, the empty one too;
   * into itself as well. */
  fl_profile_t *under = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_add_sample(src, NULL, 0, 4, 0, 0);
  fl_frame_t root = {.func = "rank0", .flags = FL_FRAME_ROOT};
  fl_profile_merge_under(under, src, &root);
  CHECK_INT(fl_profile_n_samples(under), 3);
  CHECK_INT(fl_profile_info_const(under)->total_weight, 11);
  for (size_t i = 0; i < 3; i++) {
    fl_profile_sample(under, i, &s);
    CHECK_INT(s.n, i < 2 ? 3 : 1);
    CHECK_STR(fl_profile_frame(under, fl_profile_sample_frame(under, &s, 0))->func, "rank0");
    CHECK_INT(fl_profile_frame(under, fl_profile_sample_frame(under, &s, 0))->flags, FL_FRAME_ROOT);
  }
  fl_profile_sample(under, 0, &s);
  CHECK_STR(fl_profile_frame(under, fl_profile_sample_frame(under, &s, 2))->func, "other");
  fl_profile_merge_under(under, under, &(fl_frame_t){.func = "again", .flags = FL_FRAME_ROOT});
  CHECK_INT(fl_profile_n_samples(under), 6);
  fl_profile_sample(under, 3, &s);
  CHECK_INT(s.n, 4);
  CHECK_STR(fl_profile_frame(under, fl_profile_sample_frame(under, &s, 0))->func, "again");
  CHECK_STR(fl_profile_frame(under, fl_profile_sample_frame(under, &s, 1))->func, "rank0");
  fl_profile_destroy(&under);

  fl_profile_destroy(&empty);
  fl_profile_destroy(&src);
  fl_profile_destroy(&p);
}

/* A profile of n samples of weight 1 on the stack {name}, sampled every
 * interval_ns. */
static fl_profile_t *timed(const char *name, uint64_t interval_ns, int n) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = interval_ns;
  uint32_t id = frame(p, name, NULL, 0, NULL, 0, FL_FRAME_CELL);
  for (int i = 0; i < n; i++) fl_profile_add_sample(p, &id, 1, 1, 0, 0);
  return p;
}

/* The weight of the stack {name} in p. */
static uint64_t weight_of(const fl_profile_t *p, const char *name) {
  uint64_t w = 0;
  fl_sample_t s;
  for (size_t i = 0; i < fl_profile_n_samples(p); i++) {
    fl_profile_sample(p, i, &s);
    if (s.n == 1 && !strcmp(fl_profile_frame(p, fl_profile_sample_frame(p, &s, 0))->func, name))
      w += s.weight;
  }
  return w;
}

/* Profiles sampled at different intervals merge by time: 1 s of CPU at
 * 1 kHz and 0.25 s at 4 kHz are 80/20 of 1.25 s, whichever comes first. */
static void test_merge_by_time(void) {
  for (int order = 0; order < 2; order++) {
    fl_profile_t *a = timed("a", 1000000, 1000), *b = timed("b", 250000, 1000);
    fl_profile_t *p = order ? b : a, *q = order ? a : b;
    CHECK(fl_profile_merge_fits(p, q));
    fl_profile_merge(p, q);
    const fl_profile_info_t *info = fl_profile_info_const(p);
    CHECK_INT(info->interval_ns, 250000);
    CHECK(info->mixed_intervals);
    CHECK_INT(weight_of(p, "a"), 4000);
    CHECK_INT(weight_of(p, "b"), 1000);
    CHECK_INT(info->total_weight, 5000);
    CHECK_INT(info->samples, 2000);
    char note[160];
    fl_mixed_intervals_note(info, note, sizeof note);
    CHECK_STR(note,
              "inputs sampled at different intervals, merged by time: each count is an "
              "interval of 0.25 ms");
    fl_profile_destroy(&a);
    fl_profile_destroy(&b);
  }
  /* 1 ms and 0.3 ms: both exact in intervals of 0.1 ms. */
  fl_profile_t *a = timed("a", 1000000, 10), *b = timed("b", 300000, 10);
  fl_profile_merge(a, b);
  CHECK_INT(fl_profile_info_const(a)->interval_ns, 100000);
  CHECK_INT(weight_of(a, "a"), 100);
  CHECK_INT(weight_of(a, "b"), 30);
  fl_profile_destroy(&a);
  fl_profile_destroy(&b);
  /* 1 ms and 2/3 ms share no useful divisor: counted in the finer, each
   * weight rounded, the rounding carried so the total stays exact to one
   * interval: 1,000 samples of 1.5 intervals are 1,500. */
  a = timed("a", 1000000, 1000), b = timed("b", 666667, 1000);
  fl_profile_merge(b, a);
  CHECK_INT(fl_profile_info_const(b)->interval_ns, 666667);
  CHECK(llabs((long long)weight_of(b, "a") - 1500) <= 1);
  CHECK_INT(weight_of(b, "b"), 1000);
  fl_profile_destroy(&a);
  fl_profile_destroy(&b);
  /* Equal intervals, or one unknown: weights as they are, nothing said. */
  a = timed("a", 1000000, 3), b = timed("b", 0, 3);
  fl_profile_merge(a, b);
  CHECK(!fl_profile_info_const(a)->mixed_intervals);
  CHECK_INT(fl_profile_info_const(a)->total_weight, 6);
  char note[160];
  fl_mixed_intervals_note(fl_profile_info_const(a), note, sizeof note);
  CHECK_STR(note, "");
  fl_profile_destroy(&a);
  fl_profile_destroy(&b);
  /* An emptied profile keeps an interval that no weight has: the first
   * profile merged into it brings its own. */
  a = timed("a", 1000000, 3), b = timed("b", 250000, 3);
  fl_profile_clear(a);
  fl_profile_merge(a, b);
  CHECK_INT(fl_profile_info_const(a)->interval_ns, 250000);
  CHECK_INT(fl_profile_info_const(a)->total_weight, 3);
  CHECK(!fl_profile_info_const(a)->mixed_intervals);
  fl_profile_destroy(&a);
  fl_profile_destroy(&b);
  /* Totals that would pass UINT64_MAX once converted do not fit. */
  a = timed("a", 1000000, 0), b = timed("b", 250000, 1);
  uint32_t id = frame(a, "a", NULL, 0, NULL, 0, FL_FRAME_CELL);
  fl_profile_add_sample(a, &id, 1, UINT64_MAX / 2, 0, 0);
  CHECK(!fl_profile_merge_fits(a, b));
  CHECK(fl_profile_merge_fits(b, b));
  fl_profile_destroy(&a);
  fl_profile_destroy(&b);
}

/* CPU samples split 1:3 between one() and three(), allocations split 1:3
 * by bytes between small() and big(): one profile of two kinds, whose
 * CPU samples are info's (the first collector's). */
static fl_profile_t *two_kinds(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = 1000000;
  uint32_t one = frame(p, "one", NULL, 0, NULL, 0, FL_FRAME_CELL);
  uint32_t three = frame(p, "three", NULL, 0, NULL, 0, FL_FRAME_CELL);
  uint32_t small = frame(p, "small", NULL, 0, NULL, 0, FL_FRAME_CELL);
  uint32_t big = frame(p, "big", NULL, 0, NULL, 0, FL_FRAME_CELL);
  for (int i = 0; i < 10; i++) fl_profile_add_sample(p, &one, 1, 1, 0, 1);
  for (int i = 0; i < 30; i++) fl_profile_add_sample(p, &three, 1, 1, 0, 1);
  for (int i = 0; i < 5; i++) {
    fl_profile_add_sample_of(p, FL_PROFILE_ALLOC_BYTES, &small, 1, 200, 2, 1, 0);
    fl_profile_add_sample_of(p, FL_PROFILE_ALLOC_BYTES, &big, 1, 600, 2, 1, 0);
  }
  return p;
}

/* The weight of the stack {name} in p's samples of kind. */
static uint64_t kind_weight_of(const fl_profile_t *p, fl_profile_kind_t kind, const char *name) {
  uint64_t w = 0;
  fl_sample_t s;
  for (size_t i = 0; i < fl_profile_n_samples(p); i++) {
    fl_profile_sample(p, i, &s);
    if (s.kind == kind && s.n == 1 &&
        !strcmp(fl_profile_frame(p, fl_profile_sample_frame(p, &s, 0))->func, name))
      w += s.weight;
  }
  return w;
}

/* Checks that p holds two_kinds() times times, its CPU weights in
 * intervals of cpu_unit milliseconds. */
static void check_two_kinds(const fl_profile_t *p, uint64_t times, uint64_t cpu_unit) {
  CHECK_INT(fl_profile_kinds(p), 1u << FL_PROFILE_CPU | 1u << FL_PROFILE_ALLOC_BYTES);
  const fl_profile_info_t *info = fl_profile_info_const(p);
  CHECK_INT(info->kind, FL_PROFILE_CPU);
  CHECK_INT(info->samples, 40 * times);
  CHECK_INT(info->total_weight, 40 * times * cpu_unit);
  CHECK_INT(info->total_allocs, 0);
  fl_kind_totals_t t;
  fl_profile_kind_totals(p, FL_PROFILE_ALLOC_BYTES, &t);
  CHECK_INT(t.samples, 10 * times);
  CHECK_INT(t.weight, 4000 * times);
  CHECK_INT(t.allocs, 20 * times);
  fl_profile_kind_totals(p, FL_PROFILE_CPU, &t);
  CHECK_INT(t.weight, info->total_weight);
  fl_profile_kind_totals(p, FL_PROFILE_WALL, &t);
  CHECK_INT(t.samples + t.weight + t.allocs, 0);
  CHECK_INT(kind_weight_of(p, FL_PROFILE_CPU, "one"), 10 * times * cpu_unit);
  CHECK_INT(kind_weight_of(p, FL_PROFILE_CPU, "three"), 30 * times * cpu_unit);
  CHECK_INT(kind_weight_of(p, FL_PROFILE_ALLOC_BYTES, "small"), 1000 * times);
  CHECK_INT(kind_weight_of(p, FL_PROFILE_ALLOC_BYTES, "big"), 3000 * times);
  CHECK_INT(kind_weight_of(p, FL_PROFILE_CPU, "big"), 0);
}

/* Each sample keeps its kind through copy, merge (a profile into itself,
 * into one of one kind either way round, across intervals: only time is
 * converted) and clear. */
static void test_sample_kinds(void) {
  fl_profile_t *p = two_kinds();
  check_two_kinds(p, 1, 1);
  fl_profile_t *c = fl_profile_copy(p);
  check_two_kinds(c, 1, 1);
  fl_profile_merge(c, c);
  check_two_kinds(c, 2, 1);
  CHECK(fl_profile_merge_fits(c, p));
  fl_profile_destroy(&c);

  /* An allocation profile merged into p joins p's allocations; p merged
   * into a CPU profile keeps its allocations apart. */
  fl_profile_t *a = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  uint32_t big = frame(a, "big", NULL, 0, NULL, 0, FL_FRAME_CELL);
  fl_profile_add_sample(a, &big, 1, 1000, 1, 1);
  c = fl_profile_copy(p);
  fl_profile_merge(c, a);
  CHECK_INT(kind_weight_of(c, FL_PROFILE_ALLOC_BYTES, "big"), 4000);
  CHECK_INT(fl_profile_kinds(c), 1u << FL_PROFILE_CPU | 1u << FL_PROFILE_ALLOC_BYTES);
  fl_profile_destroy(&c);
  fl_profile_destroy(&a);
  c = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(c)->interval_ns = 1000000;
  fl_profile_merge(c, p);
  check_two_kinds(c, 1, 1);
  fl_profile_destroy(&c);

  /* At 0.25 ms, p's CPU weights are four times what they were; bytes are
   * bytes. */
  fl_profile_t *fine = timed("fine", 250000, 1);
  fl_profile_merge(fine, p);
  CHECK_INT(kind_weight_of(fine, FL_PROFILE_CPU, "three"), 120);
  CHECK_INT(kind_weight_of(fine, FL_PROFILE_ALLOC_BYTES, "big"), 3000);
  fl_kind_totals_t t;
  fl_profile_kind_totals(fine, FL_PROFILE_ALLOC_BYTES, &t);
  CHECK_INT(t.weight, 4000);
  fl_profile_destroy(&fine);
  fine = timed("fine", 250000, 1);
  fl_profile_merge(p, fine);
  CHECK_INT(kind_weight_of(p, FL_PROFILE_CPU, "three"), 120);
  CHECK_INT(kind_weight_of(p, FL_PROFILE_CPU, "fine"), 1);
  CHECK_INT(fl_profile_info_const(p)->total_weight, 161);
  fl_profile_kind_totals(p, FL_PROFILE_ALLOC_BYTES, &t);
  CHECK_INT(t.weight, 4000);
  CHECK_INT(kind_weight_of(p, FL_PROFILE_ALLOC_BYTES, "big"), 3000);
  CHECK_INT(fl_profile_info_const(p)->interval_ns, 250000);
  fl_profile_destroy(&fine);

  fl_profile_clear(p);
  CHECK_INT(fl_profile_kinds(p), 0);
  fl_profile_kind_totals(p, FL_PROFILE_ALLOC_BYTES, &t);
  CHECK_INT(t.samples, 0);
  fl_profile_destroy(&p);
}

/* A wall-clock profile's samples are CPU time or off-CPU time by their
 * leaf, a frame named as a wait a wait whoever interned it (here without
 * a flag, as a file's reader does); it holds wall-clock time as well, the
 * sum of the two, and keeps each sample's kind through copy and merge. */
static void test_wall_kinds(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_WALL);
  fl_profile_info(p)->interval_ns = 1000000;
  uint32_t run = frame(p, "run", NULL, 0, NULL, 0, FL_FRAME_CELL);
  uint32_t read = frame(p, "[off-CPU: read]", NULL, 0, NULL, 0, 0);
  uint32_t queued = frame(p, "[off-CPU: runnable]", NULL, 0, NULL, 0, 0);
  uint32_t odd = frame(p, "[off-CPU: read", NULL, 0, NULL, 0, 0); /* not closed: a function */
  CHECK_INT(fl_profile_frame(p, read)->flags, FL_FRAME_OFFCPU);
  CHECK_INT(fl_profile_frame(p, queued)->flags, FL_FRAME_OFFCPU | FL_FRAME_RUNNABLE);
  CHECK_INT(fl_profile_frame(p, odd)->flags, 0);
  fl_profile_add_sample(p, &run, 1, 3, 0, 1);
  fl_profile_add_sample(p, &read, 1, 5, 0, 1);
  fl_profile_add_sample(p, &queued, 1, 2, 0, 2);
  fl_profile_add_sample(p, &odd, 1, 7, 0, 2);
  fl_profile_add_sample(p, NULL, 0, 1, 0, 2); /* the root's own time ran */
  for (int round = 0; round < 3; round++) {
    uint64_t times = round == 2 ? 2 : 1;
    CHECK_INT(kind_weight_of(p, FL_PROFILE_CPU, "run"), 3 * times);
    CHECK_INT(kind_weight_of(p, FL_PROFILE_CPU, "[off-CPU: read"), 7 * times);
    CHECK_INT(kind_weight_of(p, FL_PROFILE_OFFCPU, "[off-CPU: read]"), 5 * times);
    CHECK_INT(kind_weight_of(p, FL_PROFILE_OFFCPU, "[off-CPU: runnable]"), 2 * times);
    fl_kind_totals_t cpu, off, wall;
    fl_profile_kind_totals(p, FL_PROFILE_CPU, &cpu);
    fl_profile_kind_totals(p, FL_PROFILE_OFFCPU, &off);
    fl_profile_kind_totals(p, FL_PROFILE_WALL, &wall);
    CHECK_INT(cpu.weight, 11 * times);
    CHECK_INT(off.weight, 7 * times);
    CHECK_INT(wall.weight, 18 * times);
    CHECK_INT(wall.samples, 5 * times);
    CHECK_INT(fl_profile_info_const(p)->total_weight, 18 * times);
    CHECK_INT(fl_profile_info_const(p)->kind, FL_PROFILE_WALL);
    CHECK_INT(fl_profile_kinds(p),
              1u << FL_PROFILE_CPU | 1u << FL_PROFILE_WALL | 1u << FL_PROFILE_OFFCPU);
    fl_thread_weights_t *w;
    CHECK_INT(fl_profile_thread_weights(p, FL_PROFILE_OFFCPU, &w), 2);
    CHECK_INT(w[0].on + w[0].off + w[1].on, 5 * times);
    free(w);
    fl_profile_t *next = round == 0 ? fl_profile_copy(p) : p;
    if (round == 1) fl_profile_merge(p, p);
    if (next != p) fl_profile_destroy(&p);
    p = next;
  }
  /* Samples of CPU time are no wall-clock time without a wall-clock
   * profile. */
  fl_profile_t *c = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_merge(c, p);
  CHECK_INT(fl_profile_kinds(c), 1u << FL_PROFILE_CPU | 1u << FL_PROFILE_OFFCPU);
  CHECK_INT(kind_weight_of(c, FL_PROFILE_OFFCPU, "[off-CPU: read]"), 10);
  fl_profile_destroy(&c);
  CHECK_INT(fl_kind_takes(FL_PROFILE_WALL), 1u << FL_PROFILE_CPU | 1u << FL_PROFILE_OFFCPU);
  CHECK_INT(fl_kind_takes(FL_PROFILE_OFFCPU), 1u << FL_PROFILE_OFFCPU);
  fl_profile_destroy(&p);
}

static void test_clear(void) {
  uint32_t ids[4];
  fl_profile_t *p = small_profile(ids);
  fl_profile_info(p)->dropped = 4;
  fl_profile_info(p)->cpu_seconds = 2;
  strcpy(fl_profile_info(p)->source, "cell[1]");
  fl_profile_clear(p);
  const fl_profile_info_t *info = fl_profile_info_const(p);
  CHECK_INT(fl_profile_n_samples(p), 0);
  CHECK_INT(info->samples, 0);
  CHECK_INT(info->total_weight, 0);
  CHECK_INT(info->dropped, 0);
  CHECK(info->cpu_seconds == 0);
  CHECK_STR(info->source, "");
  CHECK_INT(info->kind, FL_PROFILE_CPU);
  CHECK_INT(info->interval_ns, 1000000);
  /* Frame ids stay valid. */
  CHECK_STR(fl_profile_frame(p, ids[1])->func, "work");
  CHECK_INT(frame(p, "work", "cell[1]", 12, "cell[1]", 0, FL_FRAME_CELL), ids[1]);
  int *threads = NULL;
  CHECK_INT(fl_profile_threads(p, &threads), 0);
  free(threads);
  /* And it fills again. */
  uint32_t st[] = {ids[0], ids[1]};
  fl_profile_add_sample(p, st, 2, 2, 0, 1);
  fl_profile_add_sample(p, st, 2, 3, 0, 1);
  fl_sample_t s, t;
  fl_profile_sample(p, 0, &s);
  fl_profile_sample(p, 1, &t);
  CHECK(s.stack_id == t.stack_id);
  CHECK_INT(fl_profile_sample_frame(p, &s, 1), ids[1]);
  CHECK_INT(info->total_weight, 5);
  CHECK_INT(info->samples, 2);
  fl_profile_destroy(&p);
}

static void test_alloc(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  fl_profile_info(p)->sample_rate = 0.01;
  uint32_t m = frame(p, "main", "cell[1]", 3, "cell[1]", 0, FL_FRAME_CELL);
  uint32_t mal = frame(p, "malloc", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM | FL_FRAME_ALLOC);
  uint32_t st[] = {m, mal};
  fl_profile_add_sample(p, st, 2, 4096, 2, 1);
  fl_profile_add_sample(p, st, 2, 100, 1, 1);
  const fl_profile_info_t *info = fl_profile_info_const(p);
  CHECK_INT(info->kind, FL_PROFILE_ALLOC_BYTES);
  CHECK_INT(info->total_weight, 4196);
  CHECK_INT(info->total_allocs, 3);
  CHECK(info->sample_rate == 0.01);
  fl_sample_t s;
  fl_profile_sample(p, 0, &s);
  CHECK_INT(s.allocs, 2);
  CHECK_INT(s.weight, 4096);

  fl_profile_t *q = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  fl_profile_merge(q, p);
  fl_profile_merge(q, p);
  CHECK_INT(fl_profile_info_const(q)->total_allocs, 6);
  CHECK_INT(fl_profile_info_const(q)->total_weight, 8392);
  fl_profile_clear(q);
  CHECK_INT(fl_profile_info_const(q)->total_allocs, 0);
  CHECK_INT(fl_profile_info_const(q)->kind, FL_PROFILE_ALLOC_BYTES);
  fl_profile_destroy(&q);
  fl_profile_destroy(&p);
}

/* The table of kinds: every kind has its words, and the rows agree with
 * what consumers rely on (time kinds have an interval, allocation kinds
 * counts; live or not does not change what is measured). */
static void test_kinds(void) {
  static const struct {
    fl_profile_kind_t kind;
    const char *name, *label, *one, *many, *pprof_type, *pprof_unit;
    bool time, allocs, bytes, live;
  } rows[] = {
      {FL_PROFILE_CPU, "cpu", "CPU", "sample", "samples", "cpu", "nanoseconds", true, false, false,
       false},
      {FL_PROFILE_WALL, "wall", "wall", "sample", "samples", "wall", "nanoseconds", true, false,
       false, false},
      {FL_PROFILE_OFFCPU, "offcpu", "off-CPU", "sample", "samples", "off_cpu", "nanoseconds", true,
       false, false, false},
      {FL_PROFILE_ALLOC_BYTES, "alloc_bytes", "alloc", "byte", "bytes", "alloc_space", "bytes",
       false, true, true, false},
      {FL_PROFILE_ALLOC_COUNT, "alloc_count", "alloc", "allocation", "allocations", "alloc_objects",
       "count", false, true, false, false},
      {FL_PROFILE_LIVE_BYTES, "live_bytes", "alloc", "byte", "bytes", "inuse_space", "bytes", false,
       true, true, true},
      {FL_PROFILE_LIVE_COUNT, "live_count", "alloc", "allocation", "allocations", "inuse_objects",
       "count", false, true, false, true},
      {FL_PROFILE_EVENT, "event", "event", "event", "events", "events", "count", false, false,
       false, false},
  };
  CHECK_INT(FL__ARRAY_SIZE(rows), FL_PROFILE_N_KINDS);
  for (size_t i = 0; i < FL__ARRAY_SIZE(rows); i++) {
    const fl_kind_info_t *k = fl_kind(rows[i].kind);
    CHECK_STR(k->name, rows[i].name);
    CHECK_STR(k->label, rows[i].label);
    CHECK_STR(k->one, rows[i].one);
    CHECK_STR(k->many, rows[i].many);
    CHECK_STR(k->pprof_type, rows[i].pprof_type);
    CHECK_STR(k->pprof_unit, rows[i].pprof_unit);
    CHECK(k->profile && k->weighs);
    CHECK(k->time == rows[i].time && k->allocs == rows[i].allocs);
    CHECK(k->bytes == rows[i].bytes && k->live == rows[i].live);
    CHECK(fl_kind_comparable(rows[i].kind, rows[i].kind));
    if (k->allocs) CHECK_INT(fl_kind_alloc(!k->bytes, k->live), rows[i].kind);
    /* Two kinds never share a pprof sample type: a file of several reads
     * back each by its type. */
    for (size_t j = 0; j < i; j++) CHECK(strcmp(fl_kind(rows[j].kind)->pprof_type, k->pprof_type));
  }
  CHECK(fl_kind_comparable(FL_PROFILE_ALLOC_BYTES, FL_PROFILE_LIVE_BYTES));
  CHECK(fl_kind_comparable(FL_PROFILE_LIVE_COUNT, FL_PROFILE_ALLOC_COUNT));
  CHECK(!fl_kind_comparable(FL_PROFILE_ALLOC_BYTES, FL_PROFILE_ALLOC_COUNT));
  CHECK(!fl_kind_comparable(FL_PROFILE_CPU, FL_PROFILE_WALL));
  CHECK(!fl_kind_comparable(FL_PROFILE_CPU, FL_PROFILE_ALLOC_BYTES));
}

/* Time stamps stay with their samples, and thread names with their
 * threads, through copy and merge; clear forgets the names. */
static void test_time_and_names(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t a = frame(p, "a", NULL, 0, NULL, 0, 0), b = frame(p, "b", NULL, 0, NULL, 0, 0);
  uint32_t st[] = {a, b};
  fl_profile_add_sample_at(p, st, 2, 1, 0, 1, 1000);
  fl_profile_add_sample_at(p, st, 1, 2, 0, 2, 2000);
  fl_profile_add_sample(p, st, 2, 1, 0, 1);
  fl_sample_t s;
  static const struct {
    uint64_t time_ns;
    int thread;
  } want[] = {{1000, 1}, {2000, 2}, {0, 1}};
  for (size_t i = 0; i < 3; i++) {
    fl_profile_sample(p, i, &s);
    CHECK_INT(s.time_ns, want[i].time_ns);
    CHECK_INT(s.thread, want[i].thread);
  }
  CHECK(fl_profile_thread_name(p, 1) == NULL);
  fl_profile_set_thread_name(p, 1, "main");
  fl_profile_set_thread_name(p, 2, "worker");
  fl_profile_set_thread_name(p, 2, "reader"); /* replaces */
  fl_profile_set_thread_name(p, 3, "gone");
  fl_profile_set_thread_name(p, 3, NULL); /* forgets */
  CHECK_STR(fl_profile_thread_name(p, 1), "main");
  CHECK_STR(fl_profile_thread_name(p, 2), "reader");
  CHECK(fl_profile_thread_name(p, 3) == NULL);

  fl_profile_t *c = fl_profile_copy(p);
  fl_profile_sample(c, 1, &s);
  CHECK_INT(s.time_ns, 2000);
  CHECK_STR(fl_profile_thread_name(c, 2), "reader");
  /* A merge keeps p's names and takes the ones it lacks. */
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_set_thread_name(q, 1, "first");
  fl_profile_merge(q, c);
  CHECK_STR(fl_profile_thread_name(q, 1), "first");
  CHECK_STR(fl_profile_thread_name(q, 2), "reader");
  fl_profile_sample(q, 0, &s);
  CHECK_INT(s.time_ns, 1000);
  fl_profile_merge(q, q);
  fl_profile_sample(q, 4, &s);
  CHECK_INT(s.time_ns, 2000);
  fl_profile_clear(q);
  CHECK(fl_profile_thread_name(q, 2) == NULL);
  fl_profile_destroy(&q);
  fl_profile_destroy(&c);
  fl_profile_destroy(&p);
}

/* Bytes the C library's allocator holds for the program (0 where another
 * allocator, a sanitizer's, answers instead). */
static size_t heap_bytes(void) {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

/* 10^6 samples of depth 30 fit in well under 1 GB, over 10^5 distinct
 * stacks (the size issue 24's views are measured at) and when every stack
 * is distinct (the worst case). The figures are printed: docs/LIBRARY.md
 * quotes them. */
static void test_memory(void) {
  enum { SAMPLES = 1000000, DEPTH = 30, FRAMES = 1000 };
  static const size_t distinct[] = {100000, SAMPLES};
  for (size_t k = 0; k < FL__ARRAY_SIZE(distinct); k++) {
    size_t before = heap_bytes();
    fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
    char name[16];
    for (int i = 0; i < FRAMES; i++) {
      snprintf(name, sizeof name, "f%d", i);
      frame(p, name, "x.c", i, "prog", 0, FL_FRAME_CELL);
    }
    uint32_t st[DEPTH];
    for (size_t i = 0; i < SAMPLES; i++) {
      size_t s = (i * 7919) % distinct[k];
      for (int d = 0; d < DEPTH; d++) st[d] = (uint32_t)((s * (d + 1) + d) % FRAMES);
      st[DEPTH - 1] = (uint32_t)(s % FRAMES); /* the last three tell the stacks apart */
      st[DEPTH - 2] = (uint32_t)(s / FRAMES % FRAMES);
      st[DEPTH - 3] = (uint32_t)(s / FRAMES / FRAMES % FRAMES);
      fl_profile_add_sample_at(p, st, DEPTH, 1, 0, (int)(i % 8) + 1, 1000 * (uint64_t)i);
    }
    size_t used = heap_bytes() - before;
    if (before || used)
      fprintf(stderr, "10^6 samples of depth 30 over %zu distinct stacks: %.1f MB\n", distinct[k],
              (double)used / 1e6);
    else
      fprintf(stderr, "memory not measured: this allocator (a sanitizer's) has no mallinfo2\n");
    CHECK_INT(fl_profile_n_samples(p), SAMPLES);
    if (before || used) CHECK(used < 300u * 1000 * 1000); /* well under 1 GB */
    fl_profile_destroy(&p);
  }
}

/* Many samples over fewer distinct stacks: each distinct stack is shared. */
static void test_many_samples(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t f[64];
  char name[16];
  for (int i = 0; i < 64; i++) {
    snprintf(name, sizeof name, "f%d", i);
    f[i] = frame(p, name, NULL, 0, NULL, 0, 0);
  }
  enum { DISTINCT = 5000, SAMPLES = 50000, DEPTH = 10 };
  uint32_t st[DEPTH];
  for (int i = 0; i < SAMPLES; i++) {
    int s = (i * 7919) % DISTINCT;
    for (int d = 0; d < DEPTH; d++) st[d] = f[(s >> (d * 2 % 13)) % 64];
    st[DEPTH - 1] = (uint32_t)(s % 64);
    st[DEPTH - 2] = (uint32_t)(s / 64 % 64);
    fl_profile_add_sample(p, st, DEPTH, 1, 0, 1);
  }
  CHECK_INT(fl_profile_n_samples(p), SAMPLES);
  int bad = 0;
  fl_sample_t a, b;
  for (int i = 0; i + DISTINCT < SAMPLES; i += 97) {
    fl_profile_sample(p, (size_t)i, &a);
    fl_profile_sample(p, (size_t)i + DISTINCT, &b); /* the same s */
    if (a.stack_id != b.stack_id || a.n != DEPTH) bad++;
  }
  CHECK_INT(bad, 0);
  fl_profile_destroy(&p);
}

/* Stacks that share a prefix share its storage: 10^4 stacks of depth
 * 1,000 that differ only in their leaf are 999 + 10^4 stack nodes, and
 * the profile holds and charges bytes per node, where a word per frame
 * per stack would be 4·10^7 bytes. Each sample still reads back whole,
 * and a copy and a merge under a root keep the sharing. */
static void test_shared_prefixes(void) {
  enum { STACKS = 10000, DEPTH = 1000, WORDS = STACKS * DEPTH };
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_budget_t b;
  fl_budget_init(&b, WORDS * sizeof(uint32_t) / 4); /* a quarter of a word per frame */
  fl_profile_set_budget(p, &b);
  static uint32_t st[DEPTH];
  char name[16];
  for (int d = 0; d < DEPTH - 1; d++) {
    snprintf(name, sizeof name, "f%d", d);
    st[d] = frame(p, name, "x.c", d, "prog", 0, 0);
  }
  int refused = 0;
  for (int i = 0; i < STACKS; i++) {
    snprintf(name, sizeof name, "leaf%d", i);
    st[DEPTH - 1] = frame(p, name, "x.c", 0, "prog", 0, 0);
    refused += fl_profile_add_sample(p, st, DEPTH, 1, 0, 1) < 0;
  }
  CHECK_INT(refused, 0);
  CHECK_INT(fl_profile_n_stacks(p), STACKS);
  CHECK_INT(fl_profile_n_nodes(p), 1 + (DEPTH - 1) + STACKS);
  CHECK(fl_profile_bytes(p) < WORDS * sizeof(uint32_t) / 10);

  /* Read back, root first and leaf to root. */
  static uint32_t got[DEPTH];
  fl_sample_t s;
  fl_profile_sample(p, 1234, &s);
  CHECK_INT(s.n, DEPTH);
  CHECK_INT(s.stack_id, 1234);
  fl_profile_stack_ids(p, s.node, s.n, got);
  CHECK_STR(fl_profile_frame(p, got[DEPTH - 1])->func, "leaf1234");
  int wrong = 0;
  for (int d = 0; d < DEPTH - 1; d++) wrong += got[d] != st[d];
  CHECK_INT(wrong, 0);
  CHECK_INT(fl_profile_sample_frame(p, &s, 0), st[0]);
  CHECK_INT(fl_profile_sample_frame(p, &s, 500), st[500]);
  CHECK_INT(fl_profile_sample_frame(p, &s, DEPTH - 1), got[DEPTH - 1]);
  size_t up = 0;
  for (uint32_t node = s.node; node != FL_PROFILE_EMPTY_STACK;
       node = fl_profile_node_parent(p, node))
    up++;
  CHECK_INT(up, DEPTH);
  CHECK_INT(fl_profile_node_parent(p, FL_PROFILE_EMPTY_STACK), FL_PROFILE_NO_NODE);

  fl_profile_t *c = fl_profile_copy(p);
  CHECK_INT(fl_profile_n_nodes(c), fl_profile_n_nodes(p));
  fl_profile_t *under = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_merge_under(under, p, &(fl_frame_t){.func = "run", .flags = FL_FRAME_ROOT});
  CHECK_INT(fl_profile_n_nodes(under), fl_profile_n_nodes(p) + 1);
  fl_profile_sample(under, 1234, &s);
  CHECK_INT(s.n, DEPTH + 1);
  CHECK_STR(fl_profile_frame(under, fl_profile_sample_frame(under, &s, 0))->func, "run");
  CHECK_STR(fl_profile_frame(under, fl_profile_sample_frame(under, &s, DEPTH))->func, "leaf1234");
  fl_profile_destroy(&under);
  fl_profile_destroy(&c);
  fl_profile_destroy(&p);
}

/* C++ and Rust symbols are read as their readable names, once, whoever
 * gives them; the symbol stays beside the name and tells frames apart;
 * the tree shows symbols with demangle=false. */
static void test_demangled(void) {
  static const struct {
    const char *symbol, *readable;
  } names[] = {
      {"_ZN2ns5KlassIiE6methodEi", "ns::Klass<int>::method(int)"},
      {"_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()() const"},
      {"_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"}, /* Rust, legacy */
      {"_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example"},     /* Rust, v0 */
      {"__ZN2ns5KlassIiE6methodEi", "ns::Klass<int>::method(int)"},
      {"_Znwm@plt", "operator new(unsigned long)@plt"}, /* a PLT stub: the suffix stays */
      {"_ZNSo3putEc@@GLIBCXX_3.4", "std::ostream::put(char)@@GLIBCXX_3.4"}, /* macOS's extra _ */
      {"_Z3maxIiET_S0_S0_", "max<int>(int, int)"}, /* a template's return type left out */
      {"main", NULL},
      {"_ZN", NULL},
      {"_R", NULL},
      {"_", NULL},
      {"[unknown]", NULL}, /* as they are */
  };
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  for (size_t i = 0; i < FL__ARRAY_SIZE(names); i++) {
    uint32_t id = frame(p, names[i].symbol, NULL, 0, "prog", 0, 0);
    const fl_frame_t *f = fl_profile_frame(p, id);
    if (names[i].readable) {
      CHECK_STR(f->func, names[i].readable);
      CHECK_STR(f->system_name, names[i].symbol);
    } else {
      CHECK_STR(f->func, names[i].symbol);
      CHECK(f->system_name == NULL);
    }
    /* Given again, or given with its readable name beside: one frame. */
    CHECK_INT(frame(p, names[i].symbol, NULL, 0, "prog", 0, 0), id);
    fl_frame_t both = {.func = f->func, .system_name = names[i].symbol, .module = "prog"};
    CHECK_INT(fl_profile_frame_id(p, &both), id);
  }
  /* The readable name alone is another frame: its symbol is unknown. */
  size_t n = fl_profile_n_frames(p);
  fl_frame_t plain = {.func = "ns::Klass<int>::method(int)", .module = "prog"};
  CHECK_INT(fl_profile_frame_id(p, &plain), n);
  CHECK(fl_profile_frame(p, (uint32_t)n)->system_name == NULL);

  /* A copy keeps both names and the ids. */
  fl_profile_t *copy = fl_profile_copy(p);
  CHECK_STR(fl_profile_frame(copy, 0)->func, "ns::Klass<int>::method(int)");
  CHECK_STR(fl_profile_frame(copy, 0)->system_name, "_ZN2ns5KlassIiE6methodEi");

  /* The tree: readable names by default, symbols with demangle=false. */
  uint32_t stack[] = {3}; /* mycrate::example */
  fl_profile_add_sample(p, stack, 1, 1, 0, 0);
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  CHECK(o.demangle);
  char err[256];
  fl_tree_t *t = fl_tree_build(p, &o, "prog", err, sizeof err);
  CHECK_STR(fl_tree_node(t, 1)->frame.func, "mycrate::example");
  fl_tree_destroy(&t);
  o.demangle = false;
  t = fl_tree_build(p, &o, "prog", err, sizeof err);
  CHECK_STR(fl_tree_node(t, 1)->frame.func, "_RNvCs15kBYyAo9fc_7mycrate7example");
  fl_tree_destroy(&t);
  fl_profile_destroy(&copy);
  fl_profile_destroy(&p);
}

int main(void) {
  test_new();
  test_kinds();
  test_interning();
  test_samples();
  test_threads_many();
  test_copy();
  test_merge();
  test_merge_by_time();
  test_sample_kinds();
  test_wall_kinds();
  test_clear();
  test_alloc();
  test_many_samples();
  test_shared_prefixes();
  test_time_and_names();
  test_demangled();
  test_memory();
  return TEST_DONE();
}
