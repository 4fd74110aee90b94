/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_budget: limits, the cancel flag, the messages, the default. */
#define _GNU_SOURCE
#include "cflame/fl_budget.h"

#include "cflame/fl_io.h"
#include "cflame/fl_tree.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

static void test_limits(void) {
  fl_budget_t b;
  char msg[256];
  fl_budget_init(&b, 64 << 20);
  b.raise_with = "max_memory=SIZE";
  CHECK_INT(b.max_bytes, 64 << 20);
  CHECK_INT(fl_budget_charge(&b, 32 << 20, 10), 0);
  CHECK_INT(fl_budget_charge(&b, 32 << 20, 10), 0); /* exactly the limit */
  CHECK_INT(b.bytes, 64 << 20);
  CHECK_INT(b.frames, 20);
  fl_budget_message(&b, "x.gz", msg, sizeof msg);
  CHECK_STR(msg, "");
  CHECK_INT(fl_budget_charge(&b, 1, 0), -1);
  CHECK_INT(b.state, FL_BUDGET_OVER_MEMORY);
  CHECK_INT(b.bytes, 64 << 20); /* a refused charge adds nothing */
  fl_budget_message(&b, "x.gz", msg, sizeof msg);
  CHECK_STR(msg,
            "x.gz needs more than the 64 MiB of memory the budget allows; raise it with "
            "max_memory=SIZE");
  /* Once stopped, every charge fails, even of nothing. */
  CHECK_INT(fl_budget_charge(&b, 0, 0), -1);
  CHECK(fl_budget_stopped(&b));

  /* A product past SIZE_MAX is past every limit, not a small charge. */
  fl_budget_init(&b, 1 << 20);
  CHECK_INT(fl_budget_charge_n(&b, SIZE_MAX / 2, 4, 0), -1);
  CHECK_INT(b.state, FL_BUDGET_OVER_MEMORY);

  fl_budget_init(&b, 1 << 20);
  b.max_frames = 10000000;
  CHECK_INT(fl_budget_charge(&b, 0, 10000000), 0);
  CHECK_INT(fl_budget_charge(&b, 0, 1), -1);
  CHECK_INT(b.state, FL_BUDGET_OVER_FRAMES);
  fl_budget_message(&b, "p.pb", msg, sizeof msg);
  CHECK_STR(msg, "p.pb needs more than 10,000,000 frames of work, the most the budget allows");
}

static void test_default(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  size_t quarter = (size_t)pages / 4 * (size_t)page;
  CHECK_INT(fl_budget_default_bytes(), quarter > ((size_t)64 << 20) ? quarter : (size_t)64 << 20);
  fl_budget_t b;
  fl_budget_init(&b, 0);
  CHECK_INT(b.max_bytes, fl_budget_default_bytes());
  /* Not a whole number of GiB: said to a tenth. */
  char msg[256], want[64];
  b.state = FL_BUDGET_OVER_MEMORY;
  b.max_bytes = ((size_t)59 << 30) / 10;
  fl_budget_message(&b, "b.gz", msg, sizeof msg);
  snprintf(want, sizeof want, "the %.1f GiB of memory", (double)b.max_bytes / (1 << 30));
  CHECK(strstr(msg, want) != NULL);
  CHECK(strstr(msg, "5.9 GiB") != NULL);
}

/* Starts fn(arg) on *t and waits until it says it has begun (*started). */
static void start_and_wait(pthread_t *t, void *(*fn)(void *), void *arg, atomic_bool *started) {
  CHECK_INT(pthread_create(t, NULL, fn, arg), 0);
  while (!atomic_load(started)) sched_yield();
}

typedef struct worker {
  fl_budget_t b;
  atomic_bool started;
  uint64_t charges;
} worker_t;

/* Charges until stopped, as a long read does. */
static void *charge_forever(void *arg) {
  worker_t *w = arg;
  atomic_store(&w->started, true);
  while (fl_budget_charge(&w->b, 1, 1) == 0) w->charges++;
  return NULL;
}

/* The flag set on another thread stops the work at its next charge. */
static void test_cancel(void) {
  static fl_cancel_flag_t cancel;
  atomic_store(&cancel, false);
  worker_t w = {0};
  fl_budget_init(&w.b, SIZE_MAX);
  w.b.cancel = &cancel;
  pthread_t t;
  start_and_wait(&t, charge_forever, &w, &w.started);
  atomic_store(&cancel, true);
  CHECK_INT(pthread_join(t, NULL), 0);
  CHECK_INT(w.b.state, FL_BUDGET_CANCELLED);
  char msg[128];
  fl_budget_message(&w.b, "big.folded", msg, sizeof msg);
  CHECK_STR(msg, "big.folded: cancelled");
  CHECK_INT(fl_budget_charge(&w.b, 0, 0), -1);
}

/* A folded line of n frames "a;a;...;a 1". New. */
static char *deep_line(size_t n, size_t *len) {
  char *s = malloc(2 * n + 3);
  for (size_t i = 0; i < n; i++) memcpy(s + 2 * i, "a;", 2);
  memcpy(s + 2 * n - 1, " 1\n", 4);
  *len = 2 * n + 2;
  return s;
}

typedef struct reading {
  const char *data;
  size_t len;
  fl_budget_t budget;
  fl_io_error_t err;
  int rc;
  atomic_bool started;
} reading_t;

static void *read_deep(void *arg) {
  reading_t *r = arg;
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_read_opts_t o;
  fl_read_opts_init(&o);
  o.budget = &r->budget;
  atomic_store(&r->started, true);
  r->rc = fl_read_profile_opts(p, r->data, r->len, "deep.folded", &o, NULL, &r->err);
  fl_profile_destroy(&p);
  return NULL;
}

/* The readers and the tree stop when the budget refuses or is cancelled,
 * with the input's name, and leave the caller's profile as it was. */
static void test_reading_and_drawing(void) {
  size_t len;
  char *deep = deep_line(1000000, &len);
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_budget_t b;
  fl_budget_init(&b, 4 << 20);
  b.raise_with = "max_memory=SIZE";
  fl_read_opts_t o;
  fl_read_opts_init(&o);
  o.budget = &b;
  fl_io_error_t err;
  CHECK_INT(fl_read_profile_opts(p, deep, len, "deep.folded", &o, NULL, &err), -1);
  CHECK_INT(err.code, FL_IO_ERR_BUDGET);
  CHECK_STR(err.message,
            "deep.folded needs more than the 4 MiB of memory the budget allows; "
            "raise it with max_memory=SIZE");
  CHECK_INT(fl_profile_n_samples(p), 0);

  /* Read under the default; its tree refused under 64 MiB. */
  CHECK_INT(fl_read_profile(p, deep, len, "deep.folded", FL_INPUT_AUTO, NULL, &err), 0);
  fl_tree_opts_t t;
  fl_tree_opts_init(&t);
  t.max_memory = 64 << 20;
  char why[512];
  CHECK(fl_tree_build(p, &t, "all", why, sizeof why) == NULL);
  CHECK(strstr(why,
               "the flame graph of deep.folded (folded stacks) needs more than the 64 MiB "
               "of memory the budget allows") != NULL);
  t.max_memory = 1 << 30;
  fl_tree_t *tree = fl_tree_build(p, &t, "all", why, sizeof why);
  CHECK(tree != NULL);
  if (tree) CHECK_INT(fl_tree_max_depth(tree), 1000000);
  fl_tree_destroy(&tree);

  /* Cancelled before: the tree is not built. */
  static fl_cancel_flag_t cancel;
  atomic_store(&cancel, true);
  fl_budget_init(&b, 0);
  b.cancel = &cancel;
  t.budget = &b;
  CHECK(fl_tree_build(p, &t, "all", why, sizeof why) == NULL);
  CHECK_STR(why, "the flame graph of deep.folded (folded stacks): cancelled");
  fl_profile_destroy(&p);

  /* Cancelled while a reading of 2·10^7 frames runs: it stops and says
   * so (the flag is read as the frames are parsed). */
  free(deep);
  deep = deep_line(20000000, &len);
  atomic_store(&cancel, false);
  reading_t r = {.data = deep, .len = len};
  fl_budget_init(&r.budget, 0);
  r.budget.cancel = &cancel;
  pthread_t th;
  start_and_wait(&th, read_deep, &r, &r.started);
  atomic_store(&cancel, true);
  CHECK_INT(pthread_join(th, NULL), 0);
  CHECK_INT(r.rc, -1);
  CHECK_INT(r.err.code, FL_IO_ERR_CANCELLED);
  CHECK_STR(r.err.message, "deep.folded: cancelled");
  free(deep);
}

int main(void) {
  test_limits();
  test_default();
  test_cancel();
  test_reading_and_drawing();
  return TEST_DONE();
}
