/* SPDX-License-Identifier: BSD-3-Clause */
/* The one output function (fl_output.h): every format of its table, of a
 * profile and of a diff, with the rules the front ends share. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_io.h"
#include "cflame/fl_output.h"
#include "test.h"
#include "fl__common.h"

static fl_profile_t *folded(const char *text) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t e;
  CHECK_INT(fl_read_profile(p, text, strlen(text), "test", FL_INPUT_FOLDED, NULL, &e), 0);
  return p;
}

/* What each format's output starts with (pprof: gzip's magic; the
 * pictures': PNG's and PDF's). */
static const struct {
  const char *format, *start;
} starts[] = {
    {"svg", "<svg"},
    {"html", "<!DOCTYPE html>"},
    {"vegalite", "{"},
    {"folded", "main;"},
    {"text", "Total: "},
    {"pprof", "\x1f\x8b"},
    {"speedscope", "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""},
    {"trace", "{\"displayTimeUnit\""},
    {"png", "\x89PNG"},
    {"pdf", "%PDF-"},
};

/* main;work;spin 99 and main;tiny 1 with time stamps, as a recording has
 * them (the trace's time line needs them). */
static fl_profile_t *timed(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = 1000000;
  uint32_t main_ = fl_profile_frame_id(p, &(fl_frame_t){.func = "main"});
  uint32_t spin[] = {main_, fl_profile_frame_id(p, &(fl_frame_t){.func = "work"}),
                     fl_profile_frame_id(p, &(fl_frame_t){.func = "spin"})};
  uint32_t tiny[] = {main_, fl_profile_frame_id(p, &(fl_frame_t){.func = "tiny"})};
  for (uint64_t i = 1; i <= 99; i++) fl_profile_add_sample_at(p, spin, 3, 1, 0, 1, i * 1000000);
  fl_profile_add_sample_at(p, tiny, 2, 1, 0, 1, 100 * 1000000);
  return p;
}

static void test_every_format(void) {
  fl_profile_t *p = timed();
  fl_options_t o;
  fl_options_init(&o, FL_FRONT_COMMAND);
  const fl_output_format_t *f;
  size_t n = 0;
  for (size_t i = 0; (f = fl_output_format_at(i)) != NULL; i++, n++) {
    CHECK_STR(f->name, starts[i].format);
    CHECK(f->ending && f->help && fl_output_format_known(f->name));
    char path[64];
    snprintf(path, sizeof path, "dir/X%s", f->ending);
    CHECK_STR(fl_output_format_of_path(path), f->name);
    fl_output_req_t r = {.profile = p, .opts = &o, .format = f->name};
    size_t len = 0;
    char err[256] = "";
    char *out = fl_output_render(&r, &len, err, sizeof err);
    CHECK(out && len > 0 && !memcmp(out, starts[i].start, strlen(starts[i].start)));
    free(out);
  }
  CHECK_INT(n, FL__ARRAY_SIZE(starts));
  CHECK(!fl_output_format_known("jpeg"));
  CHECK_STR(fl_output_formats(true),
            "svg, html, vegalite, folded, text, pprof, speedscope, trace, png or pdf");
  fl_options_free(&o);
  fl_profile_destroy(&p);
}

/* Folded stacks and pprof hold every sample: minwidth 0 unless given. */
static void test_every_sample(void) {
  fl_profile_t *p = folded("main;work 9999\nmain;tiny 1\n");
  fl_options_t o;
  fl_options_init(&o, FL_FRONT_NOTEBOOK);
  fl_output_req_t r = {.profile = p, .opts = &o, .format = "folded"};
  size_t len;
  char err[256];
  char *out = fl_output_render(&r, &len, err, sizeof err);
  CHECK(out && strstr(out, "main;tiny 1\n"));
  free(out);
  CHECK_INT(fl_options_set(&o, "minwidth", "0.01", err, sizeof err), 0);
  out = fl_output_render(&r, &len, err, sizeof err);
  CHECK(out && !strstr(out, "tiny"));
  free(out);
  r.format = "svg";
  fl_options_free(&o);
  out = fl_output_render(&r, &len, err, sizeof err);
  CHECK(out && !strstr(out, ">tiny<")); /* 1 in 10,000: under 0.001 */
  free(out);
  fl_profile_destroy(&p);
}

/* A diff: folded as difffolded.pl's two counts, the baseline scaled under
 * normalize; no pprof. */
static void test_diff(void) {
  fl_profile_t *base = folded("main;a 10\nmain;b 10\n"), *target = folded("main;a 30\nmain;c 10\n");
  fl_options_t o;
  fl_options_init(&o, FL_FRONT_COMMAND);
  fl_output_req_t r = {.profile = target, .baseline = base, .opts = &o, .format = "folded"};
  size_t len;
  char err[256] = "";
  char *out = fl_output_render(&r, &len, err, sizeof err);
  CHECK_STR(out, "main;a 10 30\nmain;b 10 0\nmain;c 0 10\n");
  free(out);
  CHECK_INT(fl_options_set(&o, "normalize", "true", err, sizeof err), 0);
  out = fl_output_render(&r, &len, err, sizeof err);
  CHECK_STR(out, "main;a 20 30\nmain;b 20 0\nmain;c 0 10\n");
  free(out);
  r.format = "pprof";
  CHECK(fl_output_render(&r, &len, err, sizeof err) == NULL);
  CHECK(strstr(err, "a pprof file holds one profile") != NULL);
  r.format = "svg";
  out = fl_output_render(&r, &len, err, sizeof err);
  CHECK(out && strstr(out, "<svg"));
  free(out);
  r.format = "jpeg";
  CHECK(fl_output_render(&r, &len, err, sizeof err) == NULL);
  CHECK_STR(err,
            "unknown format 'jpeg'; valid: svg, html, vegalite, folded, text, pprof, speedscope, "
            "trace, png or pdf");
  fl_options_free(&o);
  fl_profile_destroy(&base);
  fl_profile_destroy(&target);
}

/* The bundle a notebook displays comes from the same request. */
static void test_bundle(void) {
  fl_profile_t *base = folded("main;a 10\n"), *target = folded("main;a 30\nmain;c 10\n");
  fl_options_t o;
  fl_options_init(&o, FL_FRONT_NOTEBOOK);
  o.view.note = "the note";
  char err[256] = "";
  for (int diff = 0; diff < 2; diff++) {
    fl_output_req_t r = {.profile = target, .baseline = diff ? base : NULL, .opts = &o};
    json_t *b = fl_output_bundle(&r, err, sizeof err);
    CHECK(b && json_object_get(b, "application/vnd.vegalite.v5+json") &&
          json_object_get(b, "text/markdown") && !json_object_get(b, "image/svg+xml"));
    const char *text = json_string_value(json_object_get(b, "text/plain"));
    CHECK(text && !strncmp(text, "the note\n", 9));
    json_decref(b);
  }
  CHECK_INT(fl_options_set(&o, "filter", "/(/", err, sizeof err), 0);
  fl_output_req_t r = {.profile = target, .opts = &o};
  CHECK(fl_output_bundle(&r, err, sizeof err) == NULL && err[0]);
  fl_options_free(&o);
  fl_profile_destroy(&base);
  fl_profile_destroy(&target);
}

/* A filter that leaves no sample says so in every view and format, naming
 * itself as the front end writes it and what it was matched against: the
 * threads there are, the functions there are. */
static void test_filter_leaves_nothing(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = 1000000;
  fl_frame_t fm = {.func = "main"}, fw = {.func = "work"}, fs = {.func = "solve"};
  uint32_t m = fl_profile_frame_id(p, &fm), w = fl_profile_frame_id(p, &fw),
           sv = fl_profile_frame_id(p, &fs);
  uint32_t s1[] = {m, w}, s2[] = {m, sv};
  fl_profile_add_sample_at(p, s1, 2, 400, 0, 2, 1000000); /* time stamps: the chart's */
  fl_profile_add_sample_at(p, s2, 2, 257, 0, 3, 2000000);
  fl_profile_set_thread_name(p, 2, "worker");
  fl_options_t o;
  fl_options_init(&o, FL_FRONT_NOTEBOOK);
  char err[256] = "";
  CHECK_INT(fl_options_set(&o, "threads", "1", err, sizeof err), 0);
  const char *want =
      "threads=1 leaves no sample: the profile's threads are 2 (worker) with 400 samples, 3 "
      "with 257 samples";
  static const char *const formats[] = {"svg", "vegalite", "text"};
  /* Every view of the table. The chart (lanes of samples) and the sandwich
   * draw nothing without samples: they are refused with the same words. */
  const fl_view_info_t *view;
  for (size_t i = 0; (view = fl_view_at(i)) != NULL; i++) {
    CHECK_INT(fl_options_set(&o, "view", view->name, err, sizeof err), 0);
    bool refused = !strcmp(view->name, "chart") || !strcmp(view->name, "sandwich");
    if (!strcmp(view->name, "sandwich")) /* the table's last: focus= is source's too */
      CHECK_INT(fl_options_set(&o, "focus", "work", err, sizeof err), 0);
    for (size_t k = 0; k < FL__ARRAY_SIZE(formats); k++) {
      fl_output_req_t r = {.profile = p, .opts = &o, .format = formats[k]};
      size_t len = 0;
      err[0] = '\0';
      char *out = fl_output_render(&r, &len, err, sizeof err);
      const char *said = refused ? err : out ? out : "";
      CHECK(refused ? out == NULL : out != NULL);
      /* the SVG writes the apostrophe as &apos; */
      CHECK(strstr(said, "threads=1 leaves no sample: the profile") != NULL);
      CHECK(strstr(said, "2 (worker) with 400 samples, 3 with 257 samples") != NULL);
      if (!strstr(said, "threads=1 leaves no sample"))
        fprintf(stderr, "  view=%s format=%s: %s\n", view->name, formats[k], said);
      if (k == 2 || refused) CHECK(strncmp(said, want, strlen(want)) == 0);
      free(out);
    }
    fl_output_req_t r = {.profile = p, .opts = &o};
    err[0] = '\0';
    json_t *b = fl_output_bundle(&r, err, sizeof err);
    CHECK(refused ? b == NULL && !strcmp(err, want)
                  : b && strstr(json_string_value(json_object_get(b, "text/plain")), want));
    json_decref(b);
  }
  fl_options_free(&o);
  /* The command's spelling; a filter matched against the functions. */
  fl_options_init(&o, FL_FRONT_COMMAND);
  CHECK_INT(fl_options_set(&o, "filter", "fft", err, sizeof err), 0);
  fl_output_req_t r = {.profile = p, .opts = &o, .format = "text"};
  size_t len;
  char *out = fl_output_render(&r, &len, err, sizeof err);
  CHECK(out && !strncmp(out,
                        "--filter fft leaves no sample: none of the profile's 3 functions "
                        "contains \"fft\"\n",
                        strlen("--filter fft leaves no sample: none of the profile's 3 functions "
                               "contains \"fft\"\n")));
  free(out);
  /* A filter that keeps samples says nothing of the kind. */
  CHECK_INT(fl_options_set(&o, "filter", "work", err, sizeof err), 0);
  out = fl_output_render(&r, &len, err, sizeof err);
  CHECK(out && !strstr(out, "leaves no sample"));
  free(out);
  fl_options_free(&o);
  fl_profile_destroy(&p);
}

/* CPU samples split 1:3 between one() and three(), allocations split 1:3
 * by bytes between small() and big(), in one profile: kind= draws each
 * split, the default the first (CPU); each drawing says what it shows and
 * what else the profile holds; a kind it does not hold is refused naming
 * those it does, a word that is no kind naming every kind. */
static void test_two_kinds(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = 1000000;
  const char *names[] = {"main", "one", "three", "small", "big"};
  uint32_t id[5];
  for (int i = 0; i < 5; i++) id[i] = fl_profile_frame_id(p, &(fl_frame_t){.func = names[i]});
  for (int i = 0; i < 40; i++) {
    uint32_t st[] = {id[0], id[i < 10 ? 1 : 2]};
    fl_profile_add_sample_at(p, st, 2, 1, 0, 1, 1000000 * (uint64_t)(i + 1));
  }
  for (int i = 0; i < 8; i++) {
    uint32_t st[] = {id[0], id[i < 4 ? 3 : 4]};
    fl_profile_add_sample_of(p, FL_PROFILE_ALLOC_BYTES, st, 2, i < 4 ? 250 : 750, 1, 1,
                             1000000 * (uint64_t)(i + 1));
  }
  static const struct {
    const char *kind, *folded, *note;
  } cases[] = {
      {NULL, "main;one 10\nmain;three 30\n",
       "CPU time (kind=cpu); also holds: allocated bytes (kind=alloc_bytes)"},
      {"cpu", "main;one 10\nmain;three 30\n",
       "CPU time (kind=cpu); also holds: allocated bytes (kind=alloc_bytes)"},
      {"alloc_bytes", "main;big 3000\nmain;small 1000\n",
       "allocated bytes (kind=alloc_bytes); also holds: CPU time (kind=cpu)"},
  };
  char err[256];
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    fl_options_t o;
    fl_options_init(&o, FL_FRONT_NOTEBOOK);
    if (cases[i].kind) CHECK_INT(fl_options_set(&o, "kind", cases[i].kind, err, sizeof err), 0);
    fl_output_req_t r = {.profile = p, .opts = &o, .format = "folded"};
    size_t len;
    char *out = fl_output_render(&r, &len, err, sizeof err);
    CHECK_STR(out, cases[i].folded);
    free(out);
    r.format = "text";
    out = fl_output_render(&r, &len, err, sizeof err);
    CHECK(out && !strncmp(out, cases[i].note, strlen(cases[i].note)));
    free(out);
    r.format = NULL;
    json_t *b = fl_output_bundle(&r, err, sizeof err);
    const char *plain = b ? json_string_value(json_object_get(b, "text/plain")) : NULL;
    CHECK(plain && strstr(plain, cases[i].note));
    json_decref(b);
    fl_options_free(&o);
  }
  /* The command's spelling. */
  fl_options_t o;
  fl_options_init(&o, FL_FRONT_COMMAND);
  CHECK_INT(fl_options_set(&o, "kind", "alloc_bytes", err, sizeof err), 0);
  fl_output_req_t r = {.profile = p, .opts = &o, .format = "text"};
  size_t len;
  char *out = fl_output_render(&r, &len, err, sizeof err);
  CHECK(out && strstr(out,
                      "allocated bytes (--kind alloc_bytes); also holds: CPU time "
                      "(--kind cpu)\nTotal: "));
  free(out);
  CHECK_INT(fl_options_set(&o, "kind", "live_bytes", err, sizeof err), 0);
  err[0] = '\0';
  CHECK(fl_output_render(&r, &len, err, sizeof err) == NULL);
  CHECK_STR(err,
            "kind: the profile holds no bytes still allocated at the end (live_bytes); "
            "choose cpu (CPU time) or alloc_bytes (allocated bytes)");
  CHECK_INT(fl_options_set(&o, "kind", "heap", err, sizeof err), -1);
  CHECK_STR(err,
            "--kind heap is not valid; choose cpu, wall, offcpu, alloc_bytes, alloc_count, "
            "live_bytes, live_count or event");
  fl_options_free(&o);
  /* A profile of one kind says nothing of kinds. */
  fl_profile_t *one = folded("main;one 3\n");
  fl_options_init(&o, FL_FRONT_NOTEBOOK);
  r = (fl_output_req_t){.profile = one, .opts = &o, .format = "text"};
  out = fl_output_render(&r, &len, err, sizeof err);
  CHECK(out && !strncmp(out, "Total: 3 samples", 16) && !strstr(out, "also holds"));
  free(out);
  fl_options_free(&o);
  fl_profile_destroy(&one);
  fl_profile_destroy(&p);
}

/* A wall-clock profile's waits as trace events: the wait's bars marked
 * off-cpu and runnable by category, the rest on-cpu; read back, the
 * thread's waiting weighs what it did. */
static void test_trace_waits(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_WALL);
  fl_profile_info(p)->interval_ns = 1000000;
  uint32_t main_ = fl_profile_frame_id(p, &(fl_frame_t){.func = "main"});
  uint32_t run[] = {main_, fl_profile_frame_id(p, &(fl_frame_t){.func = "work"})};
  uint32_t sleep_[] = {main_, fl_profile_frame_id(p, &(fl_frame_t){.func = "[off-CPU: sleep]",
                                                                   .flags = FL_FRAME_OFFCPU})};
  uint32_t cpu[] = {
      main_, fl_profile_frame_id(p, &(fl_frame_t){.func = "[off-CPU: runnable]",
                                                  .flags = FL_FRAME_OFFCPU | FL_FRAME_RUNNABLE})};
  uint64_t t = 0;
  for (int i = 0; i < 10; i++) fl_profile_add_sample_at(p, run, 2, 1, 0, 1, t += 1000000);
  for (int i = 0; i < 6; i++) fl_profile_add_sample_at(p, sleep_, 2, 1, 0, 1, t += 1000000);
  for (int i = 0; i < 3; i++) fl_profile_add_sample_at(p, cpu, 2, 1, 0, 1, t += 1000000);
  fl_options_t o;
  fl_options_init(&o, FL_FRONT_COMMAND);
  fl_output_req_t r = {.profile = p, .opts = &o, .format = "trace"};
  size_t len;
  char err[256] = "";
  char *out = fl_output_render(&r, &len, err, sizeof err);
  CHECK(out != NULL);
  json_t *doc = out ? json_loadb(out, len, 0, NULL) : NULL, *e;
  size_t i;
  int seen = 0;
  json_array_foreach(json_object_get(doc, "traceEvents"), i, e) {
    const char *name = json_string_value(json_object_get(e, "name"));
    const char *cat = json_string_value(json_object_get(e, "cat"));
    if (!cat) continue;
    const char *want = !strcmp(name, "[off-CPU: sleep]")      ? "off-cpu"
                       : !strcmp(name, "[off-CPU: runnable]") ? "runnable"
                                                              : "on-cpu";
    CHECK_STR(cat, want);
    seen++;
  }
  CHECK_INT(seen, 4); /* main, work, and the two waits */
  fl_profile_t *back = fl_profile_new(FL_PROFILE_WALL);
  fl_io_error_t e2;
  CHECK_INT(fl_read_profile(back, out, len, "w.trace.json", FL_INPUT_AUTO, NULL, &e2), 0);
  fl_thread_weights_t *w = NULL;
  CHECK_INT(fl_profile_thread_weights(back, FL_PROFILE_WALL, &w), 1);
  if (w) {
    CHECK_INT(w[0].on, 10);
    CHECK_INT(w[0].off, 9);
    CHECK_INT(w[0].runnable, 3);
  }
  free(w);
  fl_profile_destroy(&back);
  json_decref(doc);
  free(out);
  fl_options_free(&o);
  fl_profile_destroy(&p);
}

int main(void) {
  test_trace_waits();
  test_two_kinds();
  test_bundle();
  test_every_format();
  test_every_sample();
  test_diff();
  test_filter_leaves_nothing();
  return TEST_DONE();
}
