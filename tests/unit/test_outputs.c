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
    {"svg", "<svg"},     {"html", "<!DOCTYPE html>"}, {"vegalite", "{"},  {"folded", "main;"},
    {"text", "Total: "}, {"pprof", "\x1f\x8b"},       {"png", "\x89PNG"}, {"pdf", "%PDF-"},
};

static void test_every_format(void) {
  fl_profile_t *p = folded("main;work;spin 99\nmain;tiny 1\n");
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
  CHECK_INT(n, sizeof starts / sizeof *starts);
  CHECK(!fl_output_format_known("jpeg"));
  CHECK_STR(fl_output_formats(true), "svg, html, vegalite, folded, text, pprof, png or pdf");
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
            "unknown format 'jpeg'; valid: svg, html, vegalite, folded, text, pprof, png or pdf");
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

int main(void) {
  test_bundle();
  test_every_format();
  test_every_sample();
  test_diff();
  return TEST_DONE();
}
