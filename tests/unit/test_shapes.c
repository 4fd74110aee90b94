/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests the shapes built from a profile's samples beside the merged tree
 * (test_tree.c has it and the callers' tree): the timeline (samples per
 * thread in time order, merged into spans) and the totals per source
 * line, on hand-made profiles with known answers. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_lines.h"
#include "cflame/fl_timeline.h"
#include "test.h"
#include "fl__common.h"

#define MS 1000000ull

static uint32_t frame(fl_profile_t *p, const char *func, const char *file, int line,
                      uint32_t flags) {
  fl_frame_t f = {.func = func, .file = file, .line = line, .module = "prog", .flags = flags};
  return fl_profile_frame_id(p, &f);
}

/* Adds a sample of n frames given after n. */
static void sample(fl_profile_t *p, uint64_t weight, int thread, uint64_t time_ns, int n, ...) {
  uint32_t st[16];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) st[i] = va_arg(ap, uint32_t);
  va_end(ap);
  fl_profile_add_sample_at(p, st, (size_t)n, weight, 0, thread, time_ns);
}

static fl_tree_t *tree(const fl_profile_t *p, const int *thread) {
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  o.minwidth = 0;
  if (thread) {
    o.threads = thread;
    o.n_threads = 1;
  }
  char err[128];
  fl_tree_t *t = fl_tree_build(p, &o, NULL, err, sizeof err);
  CHECK(t != NULL);
  return t;
}

/* The lanes as text: "thread name: func [start,end) weight/samples; ..." in
 * milliseconds, a lane per line. */
static const char *lanes_text(const fl_timeline_t *tl) {
  static char buf[2048];
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < fl_timeline_n_lanes(tl); i++) {
    const fl_lane_t *l = fl_timeline_lane(tl, i);
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%d %s %llu:", l->thread,
                            l->name ? l->name : "-", (unsigned long long)l->weight);
    for (size_t k = 0; k < l->n_spans; k++) {
      const fl_span_t *s = &l->spans[k];
      len += (size_t)snprintf(buf + len, sizeof buf - len, " %s [%g,%g) %llu/%zu",
                              s->node->frame.func, (double)s->start_ns / MS, (double)s->end_ns / MS,
                              (unsigned long long)s->weight, s->samples);
    }
    len += (size_t)snprintf(buf + len, sizeof buf - len, "\n");
  }
  return buf;
}

/* Thread 1 runs phase_a, then phase_b, pauses and runs phase_b again;
 * thread 2's samples come out of order; one sample has no time. */
static fl_profile_t *two_phases(uint64_t interval_ns) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = interval_ns;
  uint32_t m = frame(p, "main", "m.c", 10, FL_FRAME_CELL);
  uint32_t a = frame(p, "phase_a", "m.c", 3, FL_FRAME_CELL);
  uint32_t b = frame(p, "phase_b", "m.c", 5, FL_FRAME_CELL);
  uint32_t h = frame(p, "helper", "m.c", 20, FL_FRAME_CELL);
  sample(p, 1, 1, 1 * MS, 2, m, a);
  sample(p, 1, 2, 5 * MS / 2, 1, h);
  sample(p, 1, 1, 2 * MS, 2, m, a);
  sample(p, 1, 2, 3 * MS / 2, 1, h);
  sample(p, 1, 1, 3 * MS, 2, m, a);
  sample(p, 1, 1, 4 * MS, 2, m, b);
  sample(p, 2, 1, 6 * MS, 2, m, b);
  sample(p, 1, 1, 20 * MS, 2, m, b);
  sample(p, 1, 2, 0, 1, h);
  fl_profile_set_thread_name(p, 2, "worker");
  return p;
}

static void test_timeline(void) {
  static const struct {
    uint64_t interval_ns;
    int thread; /* the tree's filter, 0: none */
    const char *want;
  } rows[] = {
      /* a sample covers [time - weight x interval, time); a gap ends a span */
      {MS, 0,
       "1 - 7: phase_a [0,3) 3/3 phase_b [3,6) 3/2 phase_b [19,20) 1/1\n"
       "2 worker 2: helper [0.5,2.5) 2/2\n"},
      {MS, 2, "2 worker 2: helper [0.5,2.5) 2/2\n"},
      /* no interval: a sample covers the time since the thread's last one */
      {0, 1, "1 - 7: phase_a [1,3) 3/3 phase_b [3,20) 4/3\n"},
  };
  for (size_t r = 0; r < FL__ARRAY_SIZE(rows); r++) {
    fl_profile_t *p = two_phases(rows[r].interval_ns);
    fl_tree_t *t = tree(p, rows[r].thread ? &rows[r].thread : NULL);
    char err[256];
    fl_timeline_t *tl = fl_timeline_build(t, err, sizeof err);
    CHECK(tl != NULL);
    if (tl) {
      CHECK_STR(lanes_text(tl), rows[r].want);
      CHECK_INT(fl_timeline_left_out(tl), rows[r].thread == 1 ? 0 : 1);
      if (r == 0) {
        CHECK_INT(fl_timeline_start_ns(tl), 0);
        CHECK_INT(fl_timeline_end_ns(tl), 20 * MS);
      }
    }
    fl_timeline_destroy(&tl);
    fl_tree_destroy(&t);
    fl_profile_destroy(&p);
  }
  /* Without time stamps (folded stacks) there is no timeline. */
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t m = frame(p, "main", NULL, 0, FL_FRAME_CELL);
  fl_profile_add_sample(p, &m, 1, 3, 0, 0);
  fl_tree_t *t = tree(p, NULL);
  char err[256] = "";
  CHECK(fl_timeline_build(t, err, sizeof err) == NULL);
  CHECK(strstr(err, "no time stamps") != NULL);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* The lines as text: "file:line self/total", a line each. */
static const char *lines_text(const fl_line_total_t *l, size_t n) {
  static char buf[1024];
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n; i++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s:%d %llu/%llu\n", l[i].file, l[i].line,
                            (unsigned long long)l[i].self, (unsigned long long)l[i].total);
  return buf;
}

static void test_lines(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t m = frame(p, "main", "m.c", 10, FL_FRAME_CELL);
  uint32_t a = frame(p, "phase_a", "m.c", 3, FL_FRAME_CELL);
  uint32_t q = frame(p, "qsort", "qsort.c", 40, FL_FRAME_SYSTEM);
  uint32_t c = frame(p, "cmp", "m.c", 1, FL_FRAME_CELL);
  uint32_t f = frame(p, "f", "m.c", 7, FL_FRAME_CELL);
  uint32_t sq = frame(p, "square", "m.h", 2, FL_FRAME_CELL | FL_FRAME_INLINED);
  uint32_t u = frame(p, "[unknown]", NULL, 0, 0);
  sample(p, 2, 1, 0, 2, m, a);
  sample(p, 3, 1, 0, 2, m, q);
  sample(p, 1, 1, 0, 3, m, q, c);
  sample(p, 4, 1, 0, 3, m, f, f);  /* recursion: f:7 counts once */
  sample(p, 1, 1, 0, 2, m, u);     /* no line: self goes to main */
  sample(p, 5, 2, 0, 3, m, a, sq); /* inlined: its own line */
  sample(p, 2, 1, 0, 2, m, a);     /* the same stack again */
  static const struct {
    uint32_t skip;
    int thread;
    const char *want;
  } rows[] = {
      {FL_FRAME_SYSTEM, 0,
       "m.c:1 1/1\nm.c:3 4/9\nm.c:7 4/4\nm.c:10 4/18\nm.h:2 5/5\nqsort.c:40 0/4\n"},
      {0, 0, "m.c:1 1/1\nm.c:3 4/9\nm.c:7 4/4\nm.c:10 1/18\nm.h:2 5/5\nqsort.c:40 3/4\n"},
      {FL_FRAME_SYSTEM, 2, "m.c:3 0/5\nm.c:10 0/5\nm.h:2 5/5\n"},
  };
  for (size_t r = 0; r < FL__ARRAY_SIZE(rows); r++) {
    fl_tree_t *t = tree(p, rows[r].thread ? &rows[r].thread : NULL);
    fl_line_total_t *lines = NULL;
    size_t n = fl_lines_totals(t, rows[r].skip, &lines);
    CHECK_STR(lines_text(lines, n), rows[r].want);
    free(lines);
    fl_tree_destroy(&t);
  }
  fl_profile_destroy(&p);
}

int main(void) {
  test_timeline();
  test_lines();
  return TEST_DONE();
}
