/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for kn_prof's session side: how a profiled run enters the
 * session profile by its mode (%%profile adds each run once, %%profview
 * and %%profdiffview replace it, baselines and allocation runs leave it,
 * whatever their mode),
 * the last graph shown for %profsave, the settings, the baselines, and the
 * summary sentence under every graph. Runs are small profiles made with
 * the flame library. */
#define _GNU_SOURCE
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kn_prof.h"
#include "test.h"
#include "fl__common.h"

static char dir[] = "/tmp/cflame-test-kprof-XXXXXX";

/* A run of a cell: samples with these weights, over three stacks under
 * "main", and what the run reported. */
typedef struct run_spec {
  uint64_t weights[8];
  size_t n;
  uint64_t interval_ns, dropped;
  double cpu_seconds, wall_seconds;
} run_spec_t;

static const char *const leaves[] = {"work_0", "work_1", "work_2"};

static fl_profile_t *make_run(const run_spec_t *spec) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_frame_t root = {.func = "main", .file = "cell[1]", .line = 3, .module = "cell[1]"};
  uint32_t stack[2] = {fl_profile_frame_id(p, &root), 0};
  for (size_t i = 0; i < spec->n; i++) {
    fl_frame_t leaf = {.func = leaves[i % 3], .file = "cell[1]", .line = 10, .module = "cell[1]"};
    stack[1] = fl_profile_frame_id(p, &leaf);
    fl_profile_add_sample(p, stack, 2, spec->weights[i], 0, 1);
  }
  fl_profile_info_t *info = fl_profile_info(p);
  info->interval_ns = spec->interval_ns;
  info->dropped = spec->dropped;
  info->cpu_seconds = spec->cpu_seconds;
  info->wall_seconds = spec->wall_seconds;
  return p;
}

/* The weight of the samples whose leaf is func. */
static uint64_t weight_of(const fl_profile_t *p, const char *func) {
  uint64_t w = 0;
  for (size_t i = 0; i < fl_profile_n_samples(p); i++) {
    fl_sample_t s;
    fl_profile_sample(p, i, &s);
    if (s.n && !strcmp(fl_profile_frame(p, fl_profile_sample_frame(p, &s, s.n - 1))->func, func))
      w += s.weight;
  }
  return w;
}

/* Whether a and b hold the same samples (frames by name) and the same
 * counts and times. */
static bool same_profile(const fl_profile_t *a, const fl_profile_t *b) {
  const fl_profile_info_t *x = fl_profile_info_const(a), *y = fl_profile_info_const(b);
  if (x->kind != y->kind || x->interval_ns != y->interval_ns || x->samples != y->samples ||
      x->total_weight != y->total_weight || x->dropped != y->dropped ||
      x->cpu_seconds != y->cpu_seconds || x->wall_seconds != y->wall_seconds ||
      fl_profile_n_samples(a) != fl_profile_n_samples(b))
    return false;
  for (size_t i = 0; i < fl_profile_n_samples(a); i++) {
    fl_sample_t s, t;
    fl_profile_sample(a, i, &s);
    fl_profile_sample(b, i, &t);
    if (s.n != t.n || s.weight != t.weight || s.thread != t.thread) return false;
    for (size_t k = 0; k < s.n; k++)
      if (strcmp(fl_profile_frame(a, fl_profile_sample_frame(a, &s, k))->func,
                 fl_profile_frame(b, fl_profile_sample_frame(b, &t, k))->func))
        return false;
  }
  return true;
}

static const run_spec_t run_a = {{1, 2, 3}, 3, 1000000, 1, 0.5, 0.75};
static const run_spec_t run_b = {{10, 20}, 2, 250000, 2, 1.25, 2.0};

/* The regression that made this test: %%profile twice, and the session
 * holds each run's samples and times once. The runs were sampled every
 * 1 ms and every 0.25 ms: the session counts time, in intervals of
 * 0.25 ms, so each of run a's samples weighs four. */
static void test_accumulate_counts_once(void) {
  kn_prof_t *p = kn_prof_new(dir);
  fl_profile_t *a = make_run(&run_a), *b = make_run(&run_b);
  kn_prof_session_take(p, a, KN_PROF_ACCUMULATE);
  kn_prof_session_take(p, b, KN_PROF_ACCUMULATE);
  const fl_profile_info_t *s = fl_profile_info_const(kn_prof_session(p));
  CHECK_INT(s->total_weight, 4 * (1 + 2 + 3) + 10 + 20);
  CHECK_INT(s->samples, 5);
  CHECK_INT(s->dropped, 1 + 2);
  CHECK(fabs(s->cpu_seconds - 1.75) < 1e-9);
  CHECK(fabs(s->wall_seconds - 2.75) < 1e-9);
  CHECK_INT(s->interval_ns, run_b.interval_ns); /* the finer */
  CHECK(s->mixed_intervals);
  CHECK_INT(weight_of(kn_prof_session(p), "work_0"), 4 * 1 + 10);
  CHECK_INT(weight_of(kn_prof_session(p), "work_1"), 4 * 2 + 20);
  CHECK_INT(weight_of(kn_prof_session(p), "work_2"), 4 * 3);
  /* The runs are the caller's, unchanged. */
  CHECK_INT(fl_profile_info_const(a)->total_weight, 6);
  CHECK(fabs(fl_profile_info_const(a)->cpu_seconds - 0.5) < 1e-9);
  fl_profile_destroy(&a);
  fl_profile_destroy(&b);
  CHECK_INT(fl_profile_info_const(kn_prof_session(p))->total_weight, 54); /* a copy */
  kn_prof_destroy(&p);
  CHECK(p == NULL);
}

/* Each run enters the session by its mode. From an empty session, two
 * runs taken in turn; the session is then the sum of the runs marked, by
 * time (run a's intervals are four of run b's). */
static void test_modes(void) {
  static const struct {
    kn_profmode_t first, second;
    bool has_a, has_b; /* which runs the session holds */
  } cases[] = {
      {KN_PROF_ACCUMULATE, KN_PROF_ACCUMULATE, true, true},
      {KN_PROF_VIEW, KN_PROF_ACCUMULATE, true, true},
      {KN_PROF_ACCUMULATE, KN_PROF_VIEW, false, true},
      {KN_PROF_ACCUMULATE, KN_PROF_DIFF, false, true},
      {KN_PROF_DIFF, KN_PROF_VIEW, false, true},
      {KN_PROF_VIEW, KN_PROF_BASE, true, false},
      {KN_PROF_ACCUMULATE, KN_PROF_NONE, true, false},
      {KN_PROF_NONE, KN_PROF_ACCUMULATE, false, true},
  };
  fl_profile_t *a = make_run(&run_a), *b = make_run(&run_b);
  const fl_profile_info_t *ia = fl_profile_info_const(a), *ib = fl_profile_info_const(b);
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    kn_prof_t *p = kn_prof_new(dir);
    kn_prof_session_take(p, a, cases[i].first);
    kn_prof_session_take(p, b, cases[i].second);
    const fl_profile_t *session = kn_prof_session(p);
    const fl_profile_info_t *s = fl_profile_info_const(session);
    bool has_a = cases[i].has_a, has_b = cases[i].has_b;
    if (has_a != has_b) {
      /* Exactly one run: the session is that run. */
      CHECK(same_profile(session, has_a ? a : b));
    } else {
      uint64_t scale = has_a && has_b ? ia->interval_ns / ib->interval_ns : 1;
      CHECK_INT(s->total_weight,
                (has_a ? scale * ia->total_weight : 0) + (has_b ? ib->total_weight : 0));
      CHECK_INT(s->samples, (has_a ? ia->samples : 0) + (has_b ? ib->samples : 0));
      CHECK_INT(s->dropped, (has_a ? ia->dropped : 0) + (has_b ? ib->dropped : 0));
      double cpu = (has_a ? ia->cpu_seconds : 0) + (has_b ? ib->cpu_seconds : 0);
      double wall = (has_a ? ia->wall_seconds : 0) + (has_b ? ib->wall_seconds : 0);
      CHECK(fabs(s->cpu_seconds - cpu) < 1e-9);
      CHECK(fabs(s->wall_seconds - wall) < 1e-9);
      for (size_t k = 0; k < 3; k++)
        CHECK_INT(weight_of(session, leaves[k]), (has_a ? scale * weight_of(a, leaves[k]) : 0) +
                                                     (has_b ? weight_of(b, leaves[k]) : 0));
    }
    if (!has_a && !has_b) CHECK_INT(fl_profile_n_samples(session), 0);
    kn_prof_destroy(&p);
  }
  fl_profile_destroy(&a);
  fl_profile_destroy(&b);
}

/* A run enters the session by its kind as well as its mode: an
 * allocation run never does, whatever its mode (%%profallocs is a view);
 * a %%profile run of a kind the session cannot be merged with
 * (fl_kind_comparable: a loaded allocation profile) starts it again. */
static void test_kinds(void) {
  static const struct {
    fl_profile_kind_t session, run;
    kn_profmode_t mode;
    bool has_a, has_b;
  } cases[] = {
      {FL_PROFILE_CPU, FL_PROFILE_CPU, KN_PROF_ACCUMULATE, true, true},
      {FL_PROFILE_CPU, FL_PROFILE_ALLOC_BYTES, KN_PROF_VIEW, true, false},
      {FL_PROFILE_CPU, FL_PROFILE_LIVE_COUNT, KN_PROF_DIFF, true, false},
      {FL_PROFILE_CPU, FL_PROFILE_ALLOC_COUNT, KN_PROF_ACCUMULATE, true, false},
      {FL_PROFILE_ALLOC_BYTES, FL_PROFILE_CPU, KN_PROF_ACCUMULATE, false, true},
      {FL_PROFILE_ALLOC_BYTES, FL_PROFILE_CPU, KN_PROF_VIEW, false, true},
      {FL_PROFILE_ALLOC_BYTES, FL_PROFILE_ALLOC_BYTES, KN_PROF_VIEW, true, false},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    kn_prof_t *p = kn_prof_new(dir);
    fl_profile_t *a = make_run(&run_a), *b = make_run(&run_b);
    fl_profile_info(a)->kind = cases[i].session;
    fl_profile_info(b)->kind = cases[i].run;
    kn_prof_session_replace(p, fl_profile_copy(a));
    kn_prof_session_take(p, b, cases[i].mode);
    const fl_profile_t *session = kn_prof_session(p);
    if (cases[i].has_a && cases[i].has_b)
      CHECK_INT(fl_profile_info_const(session)->total_weight, /* by time: a's weigh 4 of b's */
                4 * fl_profile_info_const(a)->total_weight + fl_profile_info_const(b)->total_weight);
    else
      CHECK(same_profile(session, cases[i].has_a ? a : b));
    CHECK_INT(fl_profile_info_const(session)->kind,
              cases[i].has_b ? cases[i].run : cases[i].session);
    fl_profile_destroy(&a);
    fl_profile_destroy(&b);
    kn_prof_destroy(&p);
  }
}

/* %profclear empties the session; what comes next starts from nothing.
 * %profload replaces it with the profile it read. */
static void test_clear_and_replace(void) {
  kn_prof_t *p = kn_prof_new(dir);
  fl_profile_t *a = make_run(&run_a), *b = make_run(&run_b);
  kn_prof_session_take(p, a, KN_PROF_ACCUMULATE);
  kn_prof_session_take(p, b, KN_PROF_ACCUMULATE);
  kn_prof_session_clear(p);
  const fl_profile_info_t *s = fl_profile_info_const(kn_prof_session(p));
  CHECK_INT(fl_profile_n_samples(kn_prof_session(p)), 0);
  CHECK_INT(s->total_weight, 0);
  CHECK_INT(s->samples, 0);
  CHECK_INT(s->dropped, 0);
  CHECK(s->cpu_seconds == 0 && s->wall_seconds == 0);
  kn_prof_session_take(p, a, KN_PROF_ACCUMULATE);
  CHECK(same_profile(kn_prof_session(p), a));

  fl_profile_t *loaded = make_run(&run_b);
  kn_prof_session_replace(p, loaded); /* stolen */
  CHECK(kn_prof_session(p) == loaded);
  CHECK(same_profile(kn_prof_session(p), b));
  kn_prof_destroy(&p);
  fl_profile_destroy(&a);
  fl_profile_destroy(&b);
}

/* The last graph shown, for %profsave: copies of what was shown; shown
 * again (a redraw hands back what it got), nothing is copied or freed. */
static void test_remember(void) {
  kn_prof_t *p = kn_prof_new(dir);
  kn_prof_shown_t last;
  CHECK(!kn_prof_last_shown(p, &last));

  fl_profile_t *a = make_run(&run_a), *b = make_run(&run_b);
  json_t *bundle = json_pack("{s:s}", "text/plain", "a flame graph");
  char args[] = "width=600", root[] = "cell[3]";
  kn_prof_shown_t shown = {.profile = a, .args = args, .root = root, .bundle = bundle};
  kn_prof_remember(p, &shown);
  strcpy(args, "changed");
  CHECK(kn_prof_last_shown(p, &last));
  CHECK(last.profile != a && same_profile(last.profile, a));
  CHECK(last.baseline == NULL && last.baseline_name == NULL);
  CHECK_STR(last.args, "width=600");
  CHECK_STR(last.root, "cell[3]");
  CHECK(last.bundle == bundle);
  CHECK_INT(bundle->refcount, 2);

  /* The redraw: the remembered pointers themselves. */
  const fl_profile_t *kept = last.profile;
  const char *kept_args = last.args;
  kn_prof_remember(p, &last);
  CHECK(kn_prof_last_shown(p, &last));
  CHECK(last.profile == kept);
  CHECK(same_profile(last.profile, a));
  CHECK(last.args == kept_args);
  CHECK_STR(last.args, "width=600");
  CHECK_INT(bundle->refcount, 2);

  /* A diff: its baseline and name too; then a plain graph forgets them. */
  json_t *diff_bundle = json_object();
  kn_prof_shown_t diff = {.profile = a,
                          .baseline = b,
                          .baseline_name = "before",
                          .args = "noise=0.1",
                          .root = "cell[4]",
                          .bundle = diff_bundle};
  kn_prof_remember(p, &diff);
  CHECK_INT(bundle->refcount, 1); /* the last graph's bundle is let go */
  CHECK(kn_prof_last_shown(p, &last));
  CHECK(last.baseline && last.baseline != b && same_profile(last.baseline, b));
  CHECK_STR(last.baseline_name, "before");
  CHECK_STR(last.args, "noise=0.1");
  CHECK(last.bundle == diff_bundle);
  kn_prof_remember(p, &last); /* the diff redrawn */
  CHECK(kn_prof_last_shown(p, &last));
  CHECK(same_profile(last.baseline, b));
  CHECK_STR(last.baseline_name, "before");
  shown.args = args;
  kn_prof_remember(p, &shown);
  CHECK(kn_prof_last_shown(p, &last));
  CHECK(last.baseline == NULL && last.baseline_name == NULL);
  CHECK_STR(last.args, "changed");
  CHECK_INT(diff_bundle->refcount, 1);

  fl_profile_destroy(&a); /* what was remembered is the kernel's own */
  CHECK(kn_prof_last_shown(p, &last));
  CHECK_INT(fl_profile_info_const(last.profile)->total_weight, 6);
  kn_prof_destroy(&p);
  CHECK_INT(bundle->refcount, 1);
  json_decref(bundle);
  json_decref(diff_bundle);
  fl_profile_destroy(&b);
}

static void test_settings(void) {
  kn_prof_t *p = kn_prof_new(dir);
  kn_prof_settings_t s = kn_prof_settings(p);
  /* the option table's defaults: delay=0.001, n=1000000, width=800 */
  CHECK_INT(s.delay_ns, 1000000);
  CHECK_INT(s.n_words, 1000000);
  CHECK_INT(s.width, 800);
  CHECK_INT(s.height, 0); /* sized to the depth */
  int width = s.width;

  kn_prof_set_sampling(p, 5000, 250000);
  s = kn_prof_settings(p);
  CHECK_INT(s.n_words, 5000);
  CHECK_INT(s.delay_ns, 250000);
  CHECK_INT(s.width, width);
  kn_prof_set_size(p, 600, 300);
  s = kn_prof_settings(p);
  CHECK_INT(s.width, 600);
  CHECK_INT(s.height, 300);
  CHECK_INT(s.n_words, 5000);
  CHECK_INT(s.delay_ns, 250000);

  /* The worker's files are in the session directory, and follow it. */
  size_t n = strlen(dir);
  const char *buffer = kn_prof_buffer_path(p), *allocs = kn_prof_allocs_path(p);
  CHECK(!strncmp(buffer, dir, n) && buffer[n] == '/');
  CHECK(!strncmp(allocs, dir, n) && allocs[n] == '/');
  CHECK(strcmp(buffer, allocs) != 0);
  kn_prof_set_dir(p, "/tmp/elsewhere");
  CHECK(!strncmp(kn_prof_buffer_path(p), "/tmp/elsewhere/", 15));
  CHECK(!strncmp(kn_prof_allocs_path(p), "/tmp/elsewhere/", 15));
  kn_prof_destroy(&p);
}

/* Number of lines in s. */
static size_t count_lines(const char *s) {
  size_t n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

static void test_baselines(void) {
  kn_prof_t *p = kn_prof_new(dir);
  CHECK(kn_prof_baseline(p, "a") == NULL);
  char *names = kn_prof_baseline_names(p), *list = kn_prof_baseline_list(p);
  CHECK(!strncmp(names, "none yet", 8));
  CHECK(strstr(list, "No baselines yet") != NULL);
  free(names);
  free(list);

  fl_profile_t *a = make_run(&run_a), *b = make_run(&run_b);
  kn_prof_set_baseline(p, "before", a);
  kn_prof_set_baseline(p, "after", b);
  fl_profile_destroy(&a); /* baselines are copies */
  CHECK(kn_prof_baseline(p, "before") && kn_prof_baseline(p, "before") != b);
  CHECK_INT(fl_profile_info_const(kn_prof_baseline(p, "before"))->total_weight, 6);
  CHECK(same_profile(kn_prof_baseline(p, "after"), b));
  CHECK(kn_prof_baseline(p, "befor") == NULL);
  names = kn_prof_baseline_names(p);
  CHECK_STR(names, "before, after");
  free(names);

  /* The same name again replaces it, in its place. */
  kn_prof_set_baseline(p, "before", b);
  CHECK(same_profile(kn_prof_baseline(p, "before"), b));
  names = kn_prof_baseline_names(p);
  CHECK_STR(names, "before, after");
  free(names);

  /* %profbase's table: a heading, then one row per baseline, by name. */
  list = kn_prof_baseline_list(p);
  CHECK_INT(count_lines(list), 3);
  const char *row = strchr(list, '\n');
  CHECK(row && !strncmp(row + 1, "before ", 7));
  row = row ? strchr(row + 1, '\n') : NULL;
  CHECK(row && !strncmp(row + 1, "after ", 6));
  free(list);
  kn_prof_destroy(&p);
  fl_profile_destroy(&b);
}

/* The sentence under each graph, for runs whose numbers are known. */
static void test_summary(void) {
  static const struct {
    uint64_t ones, last; /* samples of weight 1, then one of weight last */
    uint64_t interval_ns, dropped;
    double cpu_seconds, wall_seconds;
    const char *sentence;
  } cases[] = {
      {1179, 55, 1000000, 0, 1.24, 1.25,
       "1,234 samples every 1 ms of CPU represent 1.234 s of CPU, from 1,180 stacks recorded (952 "
       "per CPU-second); the run used 1.240 s CPU, 1.250 s wall"},
      {3999, 1, 250000, 0, 5.0, 5.5,
       "4,000 samples every 0.25 ms of CPU represent 1.000 s of CPU, from 4,000 stacks recorded "
       "(800 per CPU-second); the run used 5.000 s CPU, 5.500 s wall"},
      {9, 1, 2000000, 0, 0.05, 0.5,
       "10 samples every 2 ms of CPU represent 0.020 s of CPU, from 10 stacks recorded (200 per "
       "CPU-second); the run used 0.050 s CPU, 0.500 s wall"},
      {499, 1, 1000000, 7, 2.0, 2.0,
       "500 samples every 1 ms of CPU represent 0.500 s of CPU, from 500 stacks recorded (250 per "
       "CPU-second); the run used 2.000 s CPU, 2.000 s wall; the sample buffer filled up and "
       "sampling stopped early, so the graph covers 0.500 s of the run's CPU (raise n=, or "
       "%profinit n=)"},
      /* A file that kept only the run's length (pprof), or only its CPU. */
      {99, 1, 1000000, 0, 0, 0.25,
       "100 samples every 1 ms of CPU represent 0.100 s of CPU, from 100 stacks recorded; the "
       "run lasted 0.250 s"},
      {99, 1, 1000000, 0, 0.125, 0,
       "100 samples every 1 ms of CPU represent 0.100 s of CPU, from 100 stacks recorded (800 per "
       "CPU-second); the run used 0.125 s CPU"},
      /* One of each, in the singular. */
      {0, 1, 1000000, 0, 0.001, 0.002,
       "1 sample every 1 ms of CPU represents 0.001 s of CPU, from 1 stack recorded (1000 per "
       "CPU-second); the run used 0.001 s CPU, 0.002 s wall"},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    fl_profile_t *prof = fl_profile_new(FL_PROFILE_CPU);
    fl_frame_t f = {.func = "f", .module = "cell[1]"};
    uint32_t id = fl_profile_frame_id(prof, &f);
    for (uint64_t k = 0; k < cases[i].ones; k++) fl_profile_add_sample(prof, &id, 1, 1, 0, 1);
    fl_profile_add_sample(prof, &id, 1, cases[i].last, 0, 1);
    fl_profile_info_t *info = fl_profile_info(prof);
    info->interval_ns = cases[i].interval_ns;
    info->dropped = cases[i].dropped;
    info->cpu_seconds = cases[i].cpu_seconds;
    info->wall_seconds = cases[i].wall_seconds;
    char *sentence = kn_prof_summary(NULL, prof);
    CHECK_STR(sentence, cases[i].sentence);
    free(sentence);
    fl_profile_destroy(&prof);
  }
}

int main(void) {
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_accumulate_counts_once();
  test_modes();
  test_kinds();
  test_clear_and_replace();
  test_remember();
  test_settings();
  test_baselines();
  test_summary();
  rmdir(dir);
  return TEST_DONE();
}
