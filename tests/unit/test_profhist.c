/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_profhist: the session's profiled runs are kept within their budget,
 * counted by what their profiles really hold, deep stacks included. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_profile.h"
#include "kn_profhist.h"
#include "test.h"

#ifdef __SANITIZE_ADDRESS__
/* AddressSanitizer's allocator, which glibc's mallinfo2 does not see
 * (declared here: gcc ships no sanitizer/allocator_interface.h). */
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_in_use(void) {
  return __sanitizer_get_current_allocated_bytes();
}
#else
/* Large blocks are mmapped, and counted apart from the arena's. */
static size_t heap_in_use(void) {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}
#endif

/* A run of `stacks` distinct stacks, each `depth` frames deep: the frames'
 * ids, not their count, are what such a profile holds. */
static fl_profile_t *deep_run(size_t stacks, size_t depth) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t *ids = malloc(depth * sizeof *ids);
  char name[32];
  for (size_t d = 0; d < depth; d++) {
    snprintf(name, sizeof name, "level%zu", d);
    fl_frame_t f = {.func = name};
    ids[d] = fl_profile_frame_id(p, &f);
  }
  for (size_t s = 0; s < stacks; s++) {
    snprintf(name, sizeof name, "leaf%zu", s);
    fl_frame_t f = {.func = name};
    ids[depth - 1] = fl_profile_frame_id(p, &f);
    fl_profile_add_sample(p, ids, depth, 1, 0, 1);
  }
  free(ids);
  return p;
}

/* The megabytes the history says it keeps: "N profiled runs kept (about
 * X of Y MB; ...". */
static double listed_mb(const kn_profhist_t *h) {
  char *text = kn_profhist_list(h);
  double mb = -1;
  const char *at = text ? strstr(text, "(about ") : NULL;
  if (!at || sscanf(at, "(about %lf of", &mb) != 1) mb = -1;
  free(text);
  return mb;
}

static void test_deep_runs_are_counted(void) {
  enum { BUDGET = 16 << 20, RUNS = 60 };
  fl_profile_t *run = deep_run(400, 480); /* about 0.8 MB of frame ids */
  size_t before = heap_in_use();
  kn_profhist_t *h = kn_profhist_new(BUDGET);
  for (int i = 0; i < RUNS; i++) kn_profhist_add(h, run, "id:cell", i + 1);
  double grown_mb = (double)(heap_in_use() - before) / (1 << 20);
  double said_mb = listed_mb(h);
  /* What it says it holds is what the heap grew by, within malloc's own
   * overhead; and both stay within the budget, the newest run kept. */
  CHECK(said_mb > 0 && said_mb <= (double)BUDGET / (1 << 20));
  CHECK(said_mb >= 0.8 * grown_mb && said_mb <= 1.2 * grown_mb);
  if (!(said_mb >= 0.8 * grown_mb && said_mb <= 1.2 * grown_mb))
    fprintf(stderr, "  the history says it keeps %.1f MB; the heap grew %.1f MB\n", said_mb,
            grown_mb);
  CHECK(grown_mb <= 1.2 * BUDGET / (1 << 20));
  kn_profhist_found_t found = {0};
  CHECK(kn_profhist_prev(h, "id:cell", &found, NULL, 0) != NULL && found.cell == RUNS);
  kn_profhist_destroy(&h);
  fl_profile_destroy(&run);
}

/* The list counts a run's samples as its graph's header does: a stack
 * the sampler recorded late stands for several samples. */
static void test_samples_not_stacks(void) {
  fl_profile_t *run = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(run)->interval_ns = 1000000;
  uint32_t id = fl_profile_frame_id(run, &(fl_frame_t){.func = "work"});
  for (int i = 0; i < 363; i++) fl_profile_add_sample(run, &id, 1, 1, 0, 1);
  fl_profile_add_sample(run, &id, 1, 22, 0, 1); /* 364 stacks, 385 samples */
  kn_profhist_t *h = kn_profhist_new(1 << 20);
  kn_profhist_add(h, run, "id:cell", 7);
  char *text = kn_profhist_list(h);
  CHECK(text && strstr(text, "cell[7]") && strstr(text, "  385  "));
  if (text && !strstr(text, "  385  ")) fprintf(stderr, "%s", text);
  free(text);
  kn_profhist_destroy(&h);
  fl_profile_destroy(&run);
}

/* Without a cell id a cell is its code: the same code finds its last run,
 * an edit the run of the code most like it, and code like none is told
 * apart, saying what was closest. */
static void test_prev_by_code(void) {
  fl_profile_t *run = deep_run(1, 2);
  kn_profhist_t *h = kn_profhist_new(1 << 20);
  kn_profhist_add(h, run, "code:double t = work(100);\nprintf(\"%f\", t);", 3);
  kn_profhist_add(h, run, "code:other_thing(42);", 4);
  kn_profhist_add(h, run, "id:some-cell", 5);
  kn_profhist_found_t found = {0};
  char why[300] = "";
  CHECK(kn_profhist_prev(h, "code:other_thing(42);", &found, why, sizeof why) != NULL);
  CHECK(found.number == 2 && found.cell == 4 && !found.alike);
  CHECK(kn_profhist_prev(h, "code:double t = work2(100);\nprintf(\"%f\", t);", &found, why,
                         sizeof why) != NULL);
  CHECK(found.number == 1 && found.cell == 3 && found.alike);
  CHECK(kn_profhist_prev(h, "code:zzzzqqqq", &found, why, sizeof why) == NULL);
  CHECK(strstr(why, "no cell id") && strstr(why, "closest"));
  CHECK(kn_profhist_prev(h, "id:another-cell", &found, why, sizeof why) == NULL);
  CHECK(strstr(why, "cell id") != NULL);
  kn_profhist_destroy(&h);
  fl_profile_destroy(&run);
}

int main(void) {
  test_prev_by_code();
  test_deep_runs_are_counted();
  test_samples_not_stacks();
  return TEST_DONE();
}
