/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests the views other than the flame graph, on profiles whose answers are
 * known: view=top (fl_top_vegalite, fl_top_svg, fl_text_top, fl_top_bundle)
 * and its path through fl_output (the option view=, minwidth 0 unless
 * given, the formats); view=source, chart and sandwich; view=icicle, the
 * flame graph upside down.
 *
 *   test_views [DIR]
 *
 * With DIR (or $CFLAME_RENDER_OUT), the bundles are also written there as
 * JSON files (view-*.json), for the real consumers: tests/render's
 * check_spec.mjs (vega-lite, vega, an XML parser) and browser_test.mjs
 * (Chromium). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_diff.h"
#include "cflame/fl_options.h"
#include "cflame/fl_output.h"
#include "cflame/fl_profile.h"
#include "cflame/fl_render.h"
#include "cflame/fl_tree.h"
#include "test.h"
#include "bundle_read.h"
#include "render_out.h"
#include "xml_check.h"

static uint32_t frame(fl_profile_t *p, const char *func, const char *file, int line,
                      const char *module, uint32_t flags) {
  fl_frame_t f = {.func = func, .file = file, .line = line, .module = module, .flags = flags};
  return fl_profile_frame_id(p, &f);
}

#define CELL (FL_FRAME_CELL | FL_FRAME_REPL)

/* main calls work (at two lines: one function), rec (recursing three
 * deep), qsort with a comparator, and spends 2 samples itself. Self:
 * work 65, rec 30, cmp 20, qsort 8, main 2; total: main 125, work 65,
 * rec 30 (once per sample, not 90), qsort 28, cmp 20. */
static fl_profile_t *known_profile(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t main_ = frame(p, "main", "cell[1]", 3, "cell[1]", CELL);
  uint32_t work5 = frame(p, "work", "cell[1]", 5, "cell[1]", CELL);
  uint32_t work6 = frame(p, "work", "cell[1]", 6, "cell[1]", CELL);
  uint32_t rec = frame(p, "rec", "cell[1]", 12, "cell[1]", CELL);
  uint32_t qsort_ = frame(p, "qsort", NULL, 0, "libc.so.6", FL_FRAME_SYSTEM);
  uint32_t cmp = frame(p, "cmp", "cell[1]", 9, "cell[1]", CELL);
  uint32_t s1[] = {main_, work5}, s2[] = {main_, work6}, s3[] = {main_, rec, rec, rec},
           s4[] = {main_, qsort_, cmp}, s5[] = {main_, qsort_}, s6[] = {main_};
  fl_profile_add_sample(p, s1, 2, 40, 0, 1);
  fl_profile_add_sample(p, s2, 2, 25, 0, 1);
  fl_profile_add_sample(p, s3, 4, 30, 0, 1);
  fl_profile_add_sample(p, s4, 3, 20, 0, 1);
  fl_profile_add_sample(p, s5, 2, 8, 0, 1);
  fl_profile_add_sample(p, s6, 1, 2, 0, 1);
  return p;
}

/* The lines of the table under header (e.g. "By self:") of a top report:
 * each "self total func", written into out (at most max), until a blank
 * line. Returns how many. */
static size_t table_of(const char *report, const char *header, char out[][80], size_t max) {
  const char *p = strstr(report, header);
  if (!p) return 0;
  p = strchr(p, '\n');
  if (p) p = strchr(p + 1, '\n'); /* past the column header */
  size_t n = 0;
  while (p && p[1] && p[1] != '\n' && n < max) {
    p++;
    unsigned long long self, total;
    double a, b, c;
    char func[64];
    if (sscanf(p, "%llu %lf%% %lf%% %llu %lf%% %63s", &self, &a, &b, &total, &c, func) == 6)
      snprintf(out[n++], 80, "%llu %llu %s", self, total, func);
    p = strchr(p, '\n');
  }
  return n;
}

/* The data rows of a top spec by function: "self total". */
static const char *row_of(json_t *spec, const char *func) {
  static char out[64];
  json_t *values = json_object_get(
      json_object_get(json_array_get(json_object_get(spec, "layer"), 0), "data"), "values");
  size_t i;
  json_t *row;
  json_array_foreach(values, i, row) {
    if (strcmp(json_string_value(json_object_get(row, "func")), func) == 0) {
      snprintf(out, sizeof out, "%lld %lld", json_integer_value(json_object_get(row, "self")),
               json_integer_value(json_object_get(row, "total")));
      return out;
    }
  }
  return "missing";
}

static size_t n_values(json_t *spec) {
  return json_array_size(json_object_get(
      json_object_get(json_array_get(json_object_get(spec, "layer"), 0), "data"), "values"));
}

static void test_top_known_answers(void) {
  fprintf(stderr, "top: known self and total\n");
  fl_profile_t *p = known_profile();
  fl_tree_t *t = tree_of(p, true, 0);
  char *text = fl_text_top(t, NULL);
  char rows[8][80];
  size_t n = table_of(text, "By self:", rows, 8);
  CHECK_INT(n, 5);
  const char *by_self[] = {"65 65 work", "30 30 rec",  "20 20 cmp",
                           "8 28 qsort", "2 125 main", NULL};
  for (size_t i = 0; i < 5 && i < n; i++) CHECK_STR(rows[i], by_self[i]);
  n = table_of(text, "By total:", rows, 8);
  CHECK_INT(n, 5);
  const char *by_total[] = {"2 125 main", "65 65 work", "30 30 rec", "8 28 qsort", "20 20 cmp"};
  for (size_t i = 0; i < 5 && i < n; i++) CHECK_STR(rows[i], by_total[i]);
  /* Sum% runs over the self shares: work 52%, then rec 76%. */
  CHECK(strstr(text, "52.00%  ") != NULL && strstr(text, "76.00%  ") != NULL);
  CHECK(strstr(text, "Total: 125 samples") == text);
  CHECK(strstr(text, "Top: the 5 functions by self, then by total") != NULL);
  /* The same report twice: stable. */
  char *again = fl_text_top(t, NULL);
  CHECK_STR(again, text);
  free(again);

  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.title = "cell[1]";
  v.note = "125 samples every 1 ms";
  json_t *spec = fl_top_vegalite(t, &v);
  CHECK_INT(n_values(spec), 5);
  CHECK_STR(row_of(spec, "work"), "65 65");
  CHECK_STR(row_of(spec, "rec"), "30 30");
  CHECK_STR(row_of(spec, "main"), "2 125");
  CHECK_STR(json_string_value(json_object_get(
                json_object_get(json_object_get(spec, "usermeta"), "cflame"), "view")),
            "top");
  json_t *sort = json_array_get(json_object_get(spec, "params"), 0);
  CHECK_STR(json_string_value(json_object_get(sort, "name")), "sort");
  CHECK_STR(json_string_value(json_object_get(sort, "value")), "self");
  json_decref(spec);

  char *svg = fl_top_svg(t, &v);
  const char *bad = xml_check(svg);
  if (bad) fprintf(stderr, "SVG: %s\n", bad);
  CHECK(bad == NULL);
  CHECK_INT(count_of(svg, "<title>"), 5);
  CHECK(strstr(svg, "work  cell[1]") != NULL);
  free(svg);

  json_t *bundle = fl_top_bundle(t, &v);
  CHECK(strstr(json_string_value(json_object_get(bundle, "text/plain")), "By total:") != NULL);
  CHECK(strstr(json_string_value(json_object_get(bundle, "text/plain")), v.note) != NULL);
  write_out("view-top-small.json", bundle);
  json_decref(bundle);
  free(text);
  fl_tree_destroy(&t);

  /* C=false folds qsort into its caller, as the flame graph does: main's
   * self is then its 2 and qsort's 8. */
  t = tree_of(p, false, 0);
  text = fl_text_top(t, NULL);
  n = table_of(text, "By self:", rows, 8);
  CHECK_INT(n, 4);
  if (n == 4) CHECK_STR(rows[3], "10 125 main");
  CHECK(strstr(text, "qsort") == NULL);
  free(text);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* One program's run read from two files (per input, as --per-input and
 * per_input=true merge them: each under a root frame of its own), and a
 * function of one name and file in two modules: every rendering of the top
 * table tells the rows apart, by input, else by module. */
static void test_top_same_names(void) {
  fprintf(stderr, "top: same-named functions of two inputs or modules told apart\n");
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  static const char *const inputs[] = {"A.pb.gz", "B.pb.gz"};
  for (int k = 0; k < 2; k++) {
    fl_profile_t *in = fl_profile_new(FL_PROFILE_CPU);
    uint32_t m = frame(in, "main", "solver.c", 0, "solver", FL_FRAME_CELL);
    uint32_t d = frame(in, "diffuse", "solver.c", 0, "solver", FL_FRAME_CELL);
    uint32_t a = frame(in, "advect", "solver.c", 0, "solver", FL_FRAME_CELL);
    uint32_t i1 = frame(in, "init", "init.c", 0, "liba.so", 0);
    uint32_t i2 = frame(in, "init", "init.c", 0, "libb.so", 0);
    uint32_t s1[] = {m, d}, s2[] = {m, a}, s3[] = {m, k ? i2 : i1};
    fl_profile_add_sample(in, s1, 2, k ? 20 : 30, 0, 1);
    fl_profile_add_sample(in, s2, 2, k ? 25 : 10, 0, 1);
    fl_profile_add_sample(in, s3, 2, 5, 0, 1);
    fl_frame_t root = {.func = inputs[k], .flags = FL_FRAME_ROOT};
    fl_profile_merge_under(p, in, &root);
    fl_profile_destroy(&in);
  }
  fl_tree_t *t = tree_of(p, true, 0);
  char *text = fl_text_top(t, NULL);
  CHECK(strstr(text, "  diffuse (A.pb.gz)  solver.c\n") != NULL);
  CHECK(strstr(text, "  diffuse (B.pb.gz)  solver.c\n") != NULL);
  CHECK(strstr(text, "  advect (A.pb.gz)   solver.c\n") != NULL);
  CHECK(strstr(text, "  advect (B.pb.gz)   solver.c\n") != NULL);
  /* init of liba.so is only in A, of libb.so only in B: told apart by input */
  CHECK(strstr(text, "  init (A.pb.gz)     init.c\n") != NULL);
  CHECK(strstr(text, "  diffuse  ") == NULL && strstr(text, "  advect  ") == NULL);
  char rows[16][80];
  size_t n = table_of(text, "By self:", rows, 16);
  CHECK_INT(n, 10); /* per input: its root, main, diffuse, advect, init */
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  char *svg = fl_top_svg(t, &v);
  CHECK(strstr(svg, ">diffuse (A.pb.gz)  solver.c<") != NULL);
  CHECK(strstr(svg, ">diffuse (B.pb.gz)  solver.c<") != NULL);
  CHECK(strstr(svg, "<title>diffuse (B.pb.gz)\nsolver.c\n") != NULL);
  free(svg);
  json_t *spec = fl_top_vegalite(t, &v);
  json_t *values = json_object_get(
      json_object_get(json_array_get(json_object_get(spec, "layer"), 0), "data"), "values");
  size_t i, with_from = 0;
  json_t *row;
  json_array_foreach(values, i, row) {
    const char *func = json_string_value(json_object_get(row, "func"));
    const char *from = json_string_value(json_object_get(row, "from"));
    if (!strcmp(func, "diffuse") || !strcmp(func, "advect")) {
      CHECK(from && (!strcmp(from, "A.pb.gz") || !strcmp(from, "B.pb.gz")));
      with_from++;
    }
  }
  CHECK_INT(with_from, 4);
  /* The table's text shows the function with it. */
  char *dump = json_dumps(spec, 0);
  CHECK(strstr(dump, "datum.func + ' (' + datum.from + ')'") != NULL);
  free(dump);
  json_decref(spec);
  free(text);
  fl_tree_destroy(&t);

  /* Merged, the same function of two inputs is one row; init of two
   * modules stays two, told apart by module. */
  fl_profile_t *merged = fl_profile_new(FL_PROFILE_CPU);
  uint32_t m = frame(merged, "main", "solver.c", 0, "solver", FL_FRAME_CELL);
  uint32_t i1 = frame(merged, "init", "init.c", 0, "liba.so", 0);
  uint32_t i2 = frame(merged, "init", "init.c", 0, "libb.so", 0);
  uint32_t s1[] = {m, i1}, s2[] = {m, i2};
  fl_profile_add_sample(merged, s1, 2, 5, 0, 1);
  fl_profile_add_sample(merged, s2, 2, 7, 0, 1);
  t = tree_of(merged, true, 0);
  text = fl_text_top(t, NULL);
  CHECK(strstr(text, "  init (liba.so)  init.c\n") != NULL);
  CHECK(strstr(text, "  init (libb.so)  init.c\n") != NULL);
  CHECK(strstr(text, "  main            solver.c\n") != NULL);
  free(text);
  fl_tree_destroy(&t);
  fl_profile_destroy(&merged);
  fl_profile_destroy(&p);
}

/* 120 leaf functions under main, f000 weighing 1 ... f119 weighing 120, and
 * caller functions c00 ... c59 each above two leaves (c_k weighs 4k + 3):
 * the first 50 by self are the leaves f119 ... f070; the first 50 by total
 * are main, the callers c59 ... c26 (239 down to 107) and leaves that are
 * among the first by self too. The data holds both: 85 rows; the tables
 * 50 lines each. */
static void test_top_many(void) {
  fprintf(stderr, "top: the first 50 by self and by total\n");
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t main_ = frame(p, "main", "cell[2]", 1, "cell[2]", CELL);
  char names[180][8];
  for (int i = 0; i < 120; i++) {
    snprintf(names[i], sizeof names[i], "f%03d", i);
    snprintf(names[120 + i / 2], sizeof names[0], "c%02d", i / 2);
    uint32_t caller = frame(p, names[120 + i / 2], "cell[2]", 2, "cell[2]", CELL);
    uint32_t leaf = frame(p, names[i], "cell[2]", 3, "cell[2]", CELL);
    uint32_t stack[] = {main_, caller, leaf};
    fl_profile_add_sample(p, stack, 3, (uint64_t)i + 1, 0, 1);
  }
  fl_tree_t *t = tree_of(p, true, 0);
  char *text = fl_text_top(t, NULL);
  char rows[60][80];
  size_t n = table_of(text, "By self:", rows, 60);
  CHECK_INT(n, 50);
  if (n) CHECK_STR(rows[0], "120 120 f119");
  n = table_of(text, "By total:", rows, 60);
  CHECK_INT(n, 50);
  if (n > 1) {
    CHECK(strncmp(rows[0], "0 7260 main", 11) == 0);
    CHECK_STR(rows[1], "0 239 c59");
  }
  CHECK(strstr(text, "Top: the first 50 of 181 functions") != NULL);
  json_t *bundle = fl_top_bundle(t, NULL);
  json_t *spec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
  CHECK_INT(n_values(spec), 85);
  CHECK_STR(row_of(spec, "c26"), "0 107");
  CHECK_STR(row_of(spec, "c25"), "missing");
  CHECK_STR(row_of(spec, "f070"), "71 71");
  CHECK_STR(row_of(spec, "f069"), "missing");
  write_out("view-top-many.json", bundle);
  json_decref(bundle);
  free(text);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* Through fl_output, as the magics, %profsave and the CLI draw: view=top
 * picks the top renderers in every format, takes minwidth 0 unless given,
 * and refuses a diff with a message that lists what is valid. */
static void test_top_output(void) {
  fprintf(stderr, "top: through fl_output\n");
  fl_profile_t *p = known_profile();
  fl_options_t o;
  fl_options_init(&o, FL_FRONT_NOTEBOOK);
  char err[256] = "";
  CHECK(fl_options_set(&o, "view", "top", err, sizeof err) == 0);
  CHECK(fl_options_set(&o, "minwidth", "0.5", err, sizeof err) == 0);
  fl_output_req_t r = {.profile = p, .opts = &o, .format = "text"};
  size_t len;
  char *text = fl_output_render(&r, &len, err, sizeof err);
  CHECK(text && strstr(text, "narrow frames hidden by minwidth") != NULL);
  free(text);
  fl_options_free(&o);
  fl_options_init(&o, FL_FRONT_NOTEBOOK);
  CHECK(fl_options_set(&o, "view", "top", err, sizeof err) == 0);
  /* Without minwidth given, the default (0.001) does not apply: a function
   * of 1 sample in 5,001 is counted. */
  fl_profile_t *wide = fl_profile_new(FL_PROFILE_CPU);
  uint32_t big[] = {frame(wide, "big", "cell[1]", 1, "cell[1]", CELL)};
  uint32_t tiny[] = {big[0], frame(wide, "tiny", "cell[1]", 2, "cell[1]", CELL)};
  fl_profile_add_sample(wide, big, 1, 5000, 0, 1);
  fl_profile_add_sample(wide, tiny, 2, 1, 0, 1);
  r.profile = wide;
  text = fl_output_render(&r, &len, err, sizeof err);
  CHECK(text && strstr(text, "tiny") != NULL && strstr(text, "narrow frames") == NULL);
  free(text);
  /* One frame hidden is said in the singular, in the table and in the
   * flame graph's notes. */
  CHECK(fl_options_set(&o, "minwidth", "0.001", err, sizeof err) == 0);
  text = fl_output_render(&r, &len, err, sizeof err);
  CHECK(text && strstr(text, "1 narrow frame hidden by minwidth") != NULL);
  CHECK(text && strstr(text, "1 narrow frames") == NULL);
  free(text);
  CHECK(fl_options_set(&o, "view", "flame", err, sizeof err) == 0);
  r.format = "svg";
  text = fl_output_render(&r, &len, err, sizeof err);
  CHECK(text && strstr(text, "1 narrow frame merged into 1 frame (") != NULL);
  CHECK(text && strstr(text, "1 narrow frames") == NULL);
  /* ... drawn as a merged frame after big's drawn children, as wide as
   * tiny, whose tooltip names it. */
  CHECK(text && strstr(text, "<title>1 narrow frame\n1 sample (0.02%), that is:\ntiny (0.02%)") != NULL);
  free(text);
  r.format = "text";
  CHECK(fl_options_set(&o, "view", "top", err, sizeof err) == 0);
  fl_profile_destroy(&wide);
  r.profile = p;
  r.format = "svg";
  char *svg = fl_output_render(&r, &len, err, sizeof err);
  CHECK(svg && strstr(svg, "Self%") != NULL);
  /* A still table: no header carries a sort arrow that looks clickable. */
  CHECK(svg && strstr(svg, ">Self</text>") != NULL && strstr(svg, "\xe2\x96\xbc") == NULL);
  free(svg);
  json_t *bundle = fl_output_bundle(&r, err, sizeof err);
  CHECK(bundle && strstr(json_string_value(json_object_get(bundle, "text/plain")), "By self:"));
  json_decref(bundle);
  /* A diff as a table: the known profile against itself with main's own
   * samples doubled: main grew by 2 and is first; every other function
   * is the same. view=source refuses a diff, naming the views that draw
   * one. */
  fl_profile_t *more = known_profile();
  uint32_t main_only[] = {frame(more, "main", "cell[1]", 3, "cell[1]", CELL)};
  fl_profile_add_sample(more, main_only, 1, 2, 0, 1);
  fl_diff_opts_t dopts;
  fl_diff_opts_init(&dopts);
  dopts.noise = 0;
  fl_tree_opts_t topts;
  fl_tree_opts_init(&topts);
  topts.minwidth = 0;
  fl_diff_t *d = fl_diff_build(more, p, &topts, &dopts, NULL, err, sizeof err);
  CHECK(d != NULL);
  char *dt = d ? fl_text_top_diff(d, NULL) : NULL;
  CHECK(dt && strstr(dt, "\n        +2        127        125  grew      main  cell[1]\n") != NULL);
  CHECK(dt && strstr(dt, "        +0         65         65  same      work  cell[1]\n") != NULL);
  free(dt);
  json_t *dspec = d ? fl_top_diff_vegalite(d, NULL) : NULL;
  CHECK(dspec && json_is_true(json_object_get(
                     json_object_get(json_object_get(dspec, "usermeta"), "cflame"), "diff")));
  json_t *dbundle = d ? fl_top_diff_bundle(d, NULL) : NULL;
  write_out("view-top-diff.json", dbundle);
  json_decref(dbundle);
  json_decref(dspec);
  fl_diff_destroy(&d);
  fl_profile_destroy(&more);
  r.baseline = p;
  fl_options_set(&o, "view", "chart", err, sizeof err);
  err[0] = '\0';
  CHECK(fl_output_bundle(&r, err, sizeof err) == NULL);
  CHECK(strstr(err, "view=chart") != NULL &&
        strstr(err, "flame, icicle, callers, top, source") != NULL);
  fl_options_free(&o);
  fl_profile_destroy(&p);
}

/* ---- view=source ---- */

/* The reader of the source tests: cell[1] is a short cell, long.c a file
 * of 400 lines ("line N"), anything else cannot be read. */
static const char cell1[] =
    "%%profview view=source\n"
    "int main_(void) {\n"
    "  work();\n"
    "\n"
    "  spin();\n"
    "}\n";

static char *test_reader(void *ctx, const char *file) {
  (void)ctx;
  if (!strcmp(file, "cell[1]")) return strdup(cell1);
  if (strcmp(file, "long.c") != 0) return NULL;
  char *text = malloc(400 * 10), *at = text;
  for (int i = 1; i <= 400; i++) at += sprintf(at, "line %d\n", i);
  return text;
}

/* main_ (cell[1]:2) calls work at line 3 (work's own lines in long.c, 100
 * and 300) and spin at line 5, whose time goes into memset (a system
 * library, no lines): its self counts on line 5. lost.c cannot be read. */
static fl_profile_t *source_profile(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t main3 = frame(p, "main_", "cell[1]", 3, "cell[1]", CELL);
  uint32_t main5 = frame(p, "main_", "cell[1]", 5, "cell[1]", CELL);
  uint32_t w100 = frame(p, "work", "long.c", 100, "prog", FL_FRAME_CELL);
  uint32_t w300 = frame(p, "work", "long.c", 300, "prog", FL_FRAME_CELL);
  uint32_t spin = frame(p, "spin", "lost.c", 7, "prog", FL_FRAME_CELL);
  uint32_t memset_ = frame(p, "memset", NULL, 0, "libc.so.6", FL_FRAME_SYSTEM);
  uint32_t s1[] = {main3, w100}, s2[] = {main3, w300}, s3[] = {main5, spin, memset_},
           s4[] = {main5, spin}, s5[] = {main3};
  fl_profile_add_sample(p, s1, 2, 50, 0, 1);
  fl_profile_add_sample(p, s2, 2, 20, 0, 1);
  fl_profile_add_sample(p, s3, 3, 25, 0, 1);
  fl_profile_add_sample(p, s4, 2, 4, 0, 1);
  fl_profile_add_sample(p, s5, 1, 1, 0, 1);
  return p;
}

/* The text report's line for file's line n: "self total" or "missing". */
static const char *source_line(const char *text, const char *file, int line) {
  static char out[64];
  const char *p = strstr(text, file);
  char want[16];
  snprintf(want, sizeof want, " %d  ", line);
  for (; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    char self[32], selfp[16], total[32], totalp[16];
    int n;
    if (sscanf(p, "%31s %15s %31s %15s %d", self, selfp, total, totalp, &n) == 5 && n == line &&
        (self[0] == '.' || (self[0] >= '0' && self[0] <= '9'))) {
      snprintf(out, sizeof out, "%s %s", self, total);
      return out;
    }
    if (p != strstr(text, file) && strncmp(p, "\n", 1) == 0) break;
  }
  return "missing";
}

static void test_source_known_answers(void) {
  fprintf(stderr, "source: lines, windows, unreadable files\n");
  fl_profile_t *p = source_profile();
  fl_tree_t *t = tree_of(p, false, 0);
  fl_source_reader_t r = {.read = test_reader};
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  char err[512] = "";
  char *text = fl_text_source(t, &v, &r, err, sizeof err);
  CHECK(text != NULL);
  if (!text) text = strdup("");
  /* long.c has the most self (70), then lost.c (spin: 4, and memset's 25
   * on the line of spin's frame that called it), then cell[1] (1). */
  const char *lg = strstr(text, "long.c"), *lost = strstr(text, "lost.c"),
             *cell = strstr(text, "cell[1]");
  CHECK(lg && lost && cell && lg < lost && lost < cell);
  CHECK_STR(source_line(text, "long.c", 100), "50 50");
  CHECK_STR(source_line(text, "long.c", 300), "20 20");
  CHECK_STR(source_line(text, "long.c", 97), ". .");
  CHECK_STR(source_line(text, "long.c", 96), "missing"); /* outside the window */
  CHECK_STR(source_line(text, "lost.c", 7), "29 29");
  CHECK_STR(source_line(text, "cell[1]", 3), "1 71");
  CHECK_STR(source_line(text, "cell[1]", 5), ". 29");
  CHECK_STR(source_line(text, "cell[1]", 4), ". .");
  CHECK(strstr(text, "  work();\n") != NULL); /* the cell's text, indented */
  CHECK(strstr(text, "1 file could not be read") != NULL);

  json_t *spec = fl_source_vegalite(t, &v, &r, err, sizeof err);
  json_t *values = json_object_get(
      json_object_get(json_array_get(json_object_get(spec, "layer"), 0), "data"), "values");
  /* long.c: its row, 97-103, a gap, 297-303, a gap; lost.c: its row and
   * line 7; cell[1]: its row and 6 lines. */
  CHECK_INT(json_array_size(values), 1 + 7 + 1 + 7 + 1 + 2 + 1 + 6);
  json_t *gap = json_array_get(values, 8);
  CHECK_STR(json_string_value(json_object_get(gap, "k")), "gap");
  json_t *last = json_array_get(values, json_array_size(values) - 1);
  CHECK_STR(json_string_value(json_object_get(last, "text")), "}");
  CHECK_INT(json_integer_value(json_object_get(last, "line")), 6);
  json_decref(spec);
  json_t *bundle = fl_source_bundle(t, &v, &r, err, sizeof err);
  CHECK(bundle != NULL);
  char *svg = bundle ? svg_of(bundle) : NULL;
  const char *bad = svg ? xml_check(svg) : "no SVG";
  if (bad) fprintf(stderr, "SVG: %s\n", bad);
  CHECK(bad == NULL);
  /* A titled bar for each line with samples: 100, 300, 7, 3, 5. */
  CHECK_INT(svg ? count_of(svg, "<title>") : 0, 5);
  free(svg);
  write_out("view-source.json", bundle);
  json_decref(bundle);
  free(text);

  /* focus: the files of a function; a name that matches none is an error
   * that names the nearest. */
  v.focus = "work";
  text = fl_text_source(t, &v, &r, err, sizeof err);
  CHECK(text && strstr(text, "long.c") && !strstr(text, "cell[1]"));
  free(text);
  v.focus = "wrok";
  err[0] = '\0';
  CHECK(fl_source_vegalite(t, &v, &r, err, sizeof err) == NULL);
  CHECK(strstr(err, "focus=wrok matches no function") && strstr(err, "the nearest: work"));
  /* A name far from every function still gets the closest there are. */
  v.focus = "no_such_function";
  err[0] = '\0';
  CHECK(fl_source_vegalite(t, &v, &r, err, sizeof err) == NULL);
  CHECK(strstr(err, "focus=no_such_function matches no function") &&
        strstr(err, "; the nearest: ") && strstr(err, "work"));
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* ---- view=source of a diff ---- */

/* A cell run twice: cell[1] first, then edited into cell[2] (a comment
 * line inserted, gone() changed into fresh(), also_gone() dropped). */
static const char cell_v1[] =
    "%%profbase before\n"
    "for (int i = 0; i < n; i++) hot();\n"
    "for (int i = 0; i < n; i++) cold();\n"
    "gone();\n"
    "also_gone();\n";
static const char cell_v2[] =
    "%%profdiffview prev\n"
    "// hot() now does half the work\n"
    "for (int i = 0; i < n; i++) hot();\n"
    "for (int i = 0; i < n; i++) cold();\n"
    "fresh();\n";

static char *versions_reader(void *ctx, const char *file) {
  (void)ctx;
  if (!strcmp(file, "cell[1]")) return strdup(cell_v1);
  if (!strcmp(file, "cell[2]")) return strdup(cell_v2);
  return NULL;
}

/* A profile of cell[cell] with weights[k] samples on the cell's line k + 1
 * (0: none). */
static fl_profile_t *cell_run(int cell, const uint64_t *weights, size_t n) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  char name[16];
  snprintf(name, sizeof name, "cell[%d]", cell);
  snprintf(fl_profile_info(p)->source, sizeof fl_profile_info(p)->source, "%s", name);
  for (size_t k = 0; k < n; k++) {
    if (!weights[k]) continue;
    uint32_t top = frame(p, "top-level scope", name, (int)k + 1, name, CELL | FL_FRAME_CELL_BODY);
    fl_profile_add_sample(p, &top, 1, weights[k], 0, 1);
  }
  return p;
}

/* The report's row for a line ("was N" for a removed one): its first
 * five fields, or "missing". */
static const char *diff_line(const char *text, const char *line_field) {
  static char out[128];
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    char f[6][32];
    int n = sscanf(p, "%31s %31s %31s %31s %31s %31s", f[0], f[1], f[2], f[3], f[4], f[5]);
    if (n < 5) continue;
    bool removed = !strncmp(line_field, "was ", 4);
    if (removed ? !strcmp(f[4], "was") && !strcmp(f[5], line_field + 4)
                : !strcmp(f[4], line_field) && strcmp(f[3], "was")) {
      snprintf(out, sizeof out, "%s %s %s %s", f[0], f[1], f[2], f[3]);
      return out;
    }
  }
  return "missing";
}

static void test_source_diff(void) {
  fprintf(stderr, "source of a diff: an edited cell, line by line\n");
  /* Baseline: hot 60, cold 20, gone 10, also_gone 5. Target: hot 30 (now
   * line 3), cold 20 (line 4), fresh 15 (line 5, where gone was). */
  const uint64_t w1[] = {0, 60, 20, 10, 5}, w2[] = {0, 0, 30, 20, 15};
  fl_profile_t *base = cell_run(1, w1, 5), *target = cell_run(2, w2, 5);
  fl_diff_opts_t dopts;
  fl_diff_opts_init(&dopts);
  dopts.noise = 0;
  fl_tree_opts_t topts;
  fl_tree_opts_init(&topts);
  topts.minwidth = 0;
  char err[512] = "";
  fl_diff_t *d = fl_diff_build(target, base, &topts, &dopts, NULL, err, sizeof err);
  CHECK(d != NULL);
  fl_source_reader_t r = {.read = versions_reader};
  char *text = d ? fl_text_source_diff(d, NULL, &r, err, sizeof err) : NULL;
  CHECK(text != NULL);
  if (!text) text = strdup("");
  CHECK_STR(diff_line(text, "3"), "-30 30 60 shrank");
  CHECK_STR(diff_line(text, "4"), "+0 20 20 same");
  CHECK_STR(diff_line(text, "5"), "+5 15 10 grew");
  CHECK_STR(diff_line(text, "was 5"), "-5 - 5 shrank");
  /* The comment has no weight in either: no change, dimmed. */
  const char *comment =
      strstr(text, "\n         .          .          .                2  // hot()");
  CHECK(comment != NULL);
  CHECK(strstr(text, "cell[2]  self: target 65 samples, baseline 95") != NULL);
  CHECK(strstr(text, "the baseline's lines are placed where they are") != NULL);
  CHECK(strstr(text, "1 line of the baseline's version is gone") != NULL);
  CHECK(strstr(text, "also_gone();") != NULL);
  free(text);

  json_t *bundle = d ? fl_source_diff_bundle(d, NULL, &r, err, sizeof err) : NULL;
  CHECK(bundle != NULL);
  json_t *spec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
  json_t *meta = json_object_get(json_object_get(spec, "usermeta"), "cflame");
  CHECK(json_is_true(json_object_get(meta, "diff")));
  CHECK_INT(json_integer_value(json_object_get(meta, "removed")), 1);
  json_t *values = json_object_get(
      json_object_get(json_array_get(json_object_get(spec, "layer"), 0), "data"), "values");
  /* cell[2]: its row, its 5 lines, then the removed line. */
  CHECK_INT(json_array_size(values), 1 + 5 + 1);
  json_t *gone = json_array_get(values, 6);
  CHECK_STR(json_string_value(json_object_get(gone, "k")), "removed");
  CHECK_STR(json_string_value(json_object_get(gone, "text")), "also_gone();");
  CHECK_STR(json_string_value(json_object_get(gone, "change")), "shrank");
  char *svg = bundle ? svg_of(bundle) : NULL;
  const char *bad = svg ? xml_check(svg) : "no SVG";
  if (bad) fprintf(stderr, "SVG: %s\n", bad);
  CHECK(bad == NULL);
  /* A titled bar for each line with weight: 3, 4, 5 and the removed one. */
  CHECK_INT(svg ? count_of(svg, "<title>") : 0, 4);
  free(svg);
  write_out("view-source-diff.json", bundle);
  json_decref(bundle);

  /* Without the texts, lines pair by number: the baseline's line 2 (hot)
   * meets the target's line 2, which has no weight. */
  text = d ? fl_text_source_diff(d, NULL, NULL, err, sizeof err) : NULL;
  CHECK_STR(text ? diff_line(text, "2") : "", "-60 0 60 shrank");
  free(text);
  fl_diff_destroy(&d);
  fl_profile_destroy(&base);
  fl_profile_destroy(&target);
}

/* ---- view=chart ---- */

#define MS 1000000ull

/* Thread 1 runs main -> phase_a for 100 samples (1 ms each), then main ->
 * phase_b for 200; thread 2 ("worker") runs worker -> spin for 50 samples
 * from 20 ms, then, after a pause of 100 ms, 30 more. */
static fl_profile_t *timed_profile(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = MS;
  uint32_t main_ = frame(p, "main", "cell[1]", 2, "cell[1]", CELL);
  uint32_t a = frame(p, "phase_a", "cell[1]", 5, "cell[1]", CELL);
  uint32_t b = frame(p, "phase_b", "cell[1]", 9, "cell[1]", CELL);
  uint32_t worker = frame(p, "worker", "cell[1]", 12, "cell[1]", CELL);
  uint32_t spin = frame(p, "spin", "cell[1]", 14, "cell[1]", CELL);
  uint32_t sa[] = {main_, a}, sb[] = {main_, b}, sw[] = {worker, spin};
  uint64_t t0 = 1000 * MS;
  for (uint64_t i = 1; i <= 300; i++)
    fl_profile_add_sample_at(p, i <= 100 ? sa : sb, 2, 1, 0, 1, t0 + i * MS);
  for (uint64_t i = 1; i <= 80; i++)
    fl_profile_add_sample_at(p, sw, 2, 1, 0, 2, t0 + (20 + i + (i > 50 ? 100 : 0)) * MS);
  fl_profile_set_thread_name(p, 2, "worker");
  return p;
}

/* The chart's bars from its spec: "thread depth func t0 t1 count". */
static size_t chart_bars(json_t *spec, char out[][96], size_t max) {
  json_t *layer = json_array_get(json_object_get(spec, "layer"), 0);
  json_t *values = json_object_get(json_object_get(layer, "data"), "values");
  json_t *strings = json_object_get(json_object_get(spec, "datasets"), "strings");
  size_t i, n = 0;
  json_t *row;
  json_array_foreach(values, i, row) {
    if (n == max) break;
    const char *func = json_string_value(json_object_get(
        json_array_get(strings, (size_t)json_integer_value(json_object_get(row, "f"))), "s"));
    const char *thread = json_string_value(json_object_get(
        json_array_get(strings, (size_t)json_integer_value(json_object_get(row, "th"))), "s"));
    snprintf(out[n++], 96, "%s %lld %s %.3f %.3f %lld", thread,
             json_integer_value(json_object_get(row, "d")), func,
             json_real_value(json_object_get(row, "t0")),
             json_real_value(json_object_get(row, "t1")),
             json_integer_value(json_object_get(row, "n")));
  }
  return n;
}

/* The chart's colours are explained: a legend names the kinds of code its
 * bars are of (a wait's slate among them), in Vega-Lite and in the SVG. */
static void test_chart_legend(void) {
  fprintf(stderr, "chart: the colours' legend\n");
  fl_profile_t *p = fl_profile_new(FL_PROFILE_WALL);
  fl_profile_info(p)->interval_ns = MS;
  uint32_t st[] = {frame(p, "main", "cell[1]", 2, "cell[1]", CELL),
                   frame(p, "pthread_mutex_lock", NULL, 0, "libc.so.6", FL_FRAME_SYSTEM),
                   frame(p, "[off-CPU: futex]", NULL, 0, NULL, FL_FRAME_OFFCPU)};
  for (uint64_t i = 1; i <= 50; i++)
    fl_profile_add_sample_at(p, st, i <= 10 ? 1 : 3, 1, 0, 1, i * MS);
  fl_tree_t *t = tree_of(p, true, 0);
  char err[512] = "";
  json_t *spec = fl_chart_vegalite(t, NULL, err, sizeof err);
  json_t *domain = json_object_get(
      json_object_get(
          json_object_get(json_object_get(layer_named(spec, "legend"), "encoding"), "color"),
          "scale"),
      "domain");
  char said[256] = "";
  for (size_t i = 0; i < json_array_size(domain); i++)
    snprintf(said + strlen(said), sizeof said - strlen(said), "%s;",
             json_string_value(json_array_get(domain, i)));
  CHECK_STR(said, "cell code;system library;off-CPU (waiting);");
  char *svg = fl_chart_svg(t, NULL, err, sizeof err);
  CHECK(svg && strstr(svg, ">off-CPU (waiting)</text>") && strstr(svg, ">cell code</text>"));
  CHECK(svg && xml_check(svg) == NULL);
  free(svg);
  json_decref(spec);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

static void test_chart_known_answers(void) {
  fprintf(stderr, "chart: lanes, bars in time order, from and to\n");
  fl_profile_t *p = timed_profile();
  fl_tree_t *t = tree_of(p, false, 0);
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  char err[512] = "";
  json_t *spec = fl_chart_vegalite(t, &v, err, sizeof err);
  CHECK(spec != NULL);
  if (!spec) fprintf(stderr, "%s\n", err);
  char bars[16][96];
  size_t n = spec ? chart_bars(spec, bars, 16) : 0;
  /* Time 0 is the first sample's start (thread 1's, at 1 ms - 1 ms). */
  const char *want[] = {"1 1 main 0.000 0.300 300",        "1 2 phase_a 0.000 0.100 100",
                        "1 2 phase_b 0.100 0.300 200",     "2: worker 1 worker 0.020 0.070 50",
                        "2: worker 2 spin 0.020 0.070 50", "2: worker 1 worker 0.170 0.200 30",
                        "2: worker 2 spin 0.170 0.200 30"};
  CHECK_INT(n, 7);
  for (size_t i = 0; i < n && i < 7; i++) CHECK_STR(bars[i], want[i]);
  CHECK_INT(json_integer_value(json_object_get(
                json_object_get(json_object_get(spec, "usermeta"), "cflame"), "lanes")),
            2);
  json_t *bundle = fl_chart_bundle(t, &v, err, sizeof err);
  CHECK(bundle != NULL);
  const char *text = bundle ? json_string_value(json_object_get(bundle, "text/plain")) : "";
  CHECK(strstr(text, "thread 2: worker (80 samples)") != NULL);
  CHECK(strstr(text, "    0.000     0.100        100    phase_a\n") != NULL);
  char *svg = bundle ? svg_of(bundle) : NULL;
  const char *bad = svg ? xml_check(svg) : "no SVG";
  CHECK(bad == NULL);
  CHECK_INT(svg ? count_of(svg, "<title>") : 0, 7);
  free(svg);
  write_out("view-chart.json", bundle);
  json_decref(bundle);
  json_decref(spec);

  /* from and to: the bars cut to 0.05 .. 0.15 s. */
  v.from = 0.05;
  v.to = 0.15;
  spec = fl_chart_vegalite(t, &v, err, sizeof err);
  n = spec ? chart_bars(spec, bars, 16) : 0;
  const char *cut[] = {"1 1 main 0.050 0.150 100", "1 2 phase_a 0.050 0.100 50",
                       "1 2 phase_b 0.100 0.150 50", "2: worker 1 worker 0.050 0.070 20",
                       "2: worker 2 spin 0.050 0.070 20"};
  CHECK_INT(n, 5);
  for (size_t i = 0; i < n && i < 5; i++) CHECK_STR(bars[i], cut[i]);
  json_decref(spec);
  v.from = 0.5;
  v.to = 0;
  err[0] = '\0';
  CHECK(fl_chart_vegalite(t, &v, err, sizeof err) == NULL);
  CHECK(strstr(err, "from=0.5") && strstr(err, "0.300 s"));
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);

  /* Samples without time stamps (folded stacks) cannot be charted. */
  p = known_profile();
  t = tree_of(p, false, 0);
  v.from = 0;
  err[0] = '\0';
  CHECK(fl_chart_vegalite(t, &v, err, sizeof err) == NULL);
  CHECK(err[0] != '\0');
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* ---- view=sandwich ---- */

/* f called from a (10 samples, into x) and from b (30, into y; 5 more
 * through f recursing into y), and from main itself (5, its self). */
static void test_sandwich(void) {
  fprintf(stderr, "sandwich: callers above, callees below\n");
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t m = frame(p, "main", "c.c", 1, "prog", FL_FRAME_CELL);
  uint32_t a = frame(p, "a", "c.c", 2, "prog", FL_FRAME_CELL);
  uint32_t b = frame(p, "b", "c.c", 3, "prog", FL_FRAME_CELL);
  uint32_t f = frame(p, "f", "c.c", 4, "prog", FL_FRAME_CELL);
  uint32_t x = frame(p, "x", "c.c", 5, "prog", FL_FRAME_CELL);
  uint32_t y = frame(p, "y", "c.c", 6, "prog", FL_FRAME_CELL);
  uint32_t s1[] = {m, a, f, x}, s2[] = {m, b, f, y}, s3[] = {m, f}, s4[] = {m, b, f, f, y},
           s5[] = {m, x};
  fl_profile_add_sample(p, s1, 4, 10, 0, 1);
  fl_profile_add_sample(p, s2, 4, 30, 0, 1);
  fl_profile_add_sample(p, s3, 2, 5, 0, 1);
  fl_profile_add_sample(p, s4, 5, 5, 0, 1);
  fl_profile_add_sample(p, s5, 2, 50, 0, 1);
  fl_tree_t *t = tree_of(p, true, 0);
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.focus = "f";
  char err[512] = "";
  char *text = fl_text_sandwich(t, &v, err, sizeof err);
  CHECK(text != NULL);
  if (!text) text = strdup(err);
  /* f: 50 of 100 samples, 5 its own. */
  CHECK(strstr(text, "Sandwich of f: total 50 samples (50.0%), self 5 (5.0%)") == text);
  const char *callees = strstr(text, "Callees:");
  CHECK(callees != NULL);
  if (callees) {
    /* The callers: f, then b (35: the recursion once), a, main (5). */
    CHECK(strstr(text, "   35     0      b  c.c\n") != NULL);
    CHECK(strstr(text, "   10     0      a  c.c\n") != NULL);
    /* The callees: f (50), under it y 30 and f 5 (recursion) and x 10. */
    CHECK(strstr(callees, "   50     5    f  c.c\n") != NULL);
    CHECK(strstr(callees, "   30    30      y  c.c\n") != NULL);
    CHECK(strstr(callees, "    5     0      f  c.c\n") != NULL);
  }
  free(text);
  json_t *bundle = fl_sandwich_bundle(t, &v, err, sizeof err);
  CHECK(bundle != NULL);
  json_t *spec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
  CHECK_INT(json_array_size(json_object_get(spec, "vconcat")), 2);
  char *svg = bundle ? svg_of(bundle) : NULL;
  const char *bad = svg ? xml_check(svg) : "no SVG";
  if (bad) fprintf(stderr, "SVG: %s\n", bad);
  CHECK(bad == NULL);
  free(svg);
  write_out("view-sandwich.json", bundle);
  json_decref(bundle);
  v.focus = NULL;
  CHECK(fl_sandwich_vegalite(t, &v, err, sizeof err) == NULL && strstr(err, "needs focus=FUNC"));
  v.focus = "g";
  CHECK(fl_sandwich_vegalite(t, &v, err, sizeof err) == NULL &&
        strstr(err, "focus=g matches no function"));
  v.focus = "no_such_function";
  CHECK(fl_sandwich_vegalite(t, &v, err, sizeof err) == NULL &&
        strstr(err, "focus=no_such_function matches no function of the profile; the nearest: "));
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* ---- view=icicle ---- */

static json_t *meta_of(json_t *spec, const char *key) {
  return json_object_get(json_object_get(json_object_get(spec, "usermeta"), "cflame"), key);
}

/* The spec fl_output draws of r, parsed. New. */
static json_t *spec_rendered(const fl_output_req_t *r) {
  char err[512] = "";
  size_t len;
  char *text = fl_output_render(r, &len, err, sizeof err);
  json_t *spec = text ? json_loads(text, 0, NULL) : NULL;
  if (!text) fprintf(stderr, "  %s\n", err);
  free(text);
  return spec;
}

/* view=icicle through fl_output: the flame graph's frames (the same data,
 * the same layout) with the root at the top, which its spec says; its text
 * is the flame graph's tree; a diff draws so too. The bundles go to
 * check_spec.mjs, where vega must draw each frame below its parent. */
static void test_icicle(void) {
  fprintf(stderr, "icicle: the flame graph upside down, in every drawing\n");
  char err[512] = "";
  fl_options_t o;
  fl_options_init(&o, FL_FRONT_NOTEBOOK);
  fl_profile_t *p = known_profile();
  fl_output_req_t r = {.profile = p, .opts = &o, .format = "vegalite"};
  json_t *flame = spec_rendered(&r);
  CHECK(fl_options_set(&o, "view", "icicle", err, sizeof err) == 0);
  json_t *icicle = spec_rendered(&r);
  CHECK(flame && icicle);
  CHECK(json_is_false(meta_of(flame, "icicle")) && json_is_true(meta_of(icicle, "icicle")));
  CHECK(json_equal(json_object_get(flame, "datasets"), json_object_get(icicle, "datasets")));
  CHECK(json_equal(meta_of(flame, "levels"), meta_of(icicle, "levels")));
  json_decref(flame);
  json_decref(icicle);
  r.format = "text";
  size_t len;
  char *upside_down = fl_output_render(&r, &len, err, sizeof err);
  fl_options_set(&o, "view", "flame", err, sizeof err);
  char *tree = fl_output_render(&r, &len, err, sizeof err);
  CHECK(upside_down && tree && !strcmp(upside_down, tree));
  free(upside_down);
  free(tree);
  fl_options_set(&o, "view", "icicle", err, sizeof err);
  json_t *bundle = fl_output_bundle(&r, err, sizeof err);
  CHECK(bundle && json_is_true(meta_of(json_object_get(bundle, "application/vnd.vegalite.v5+json"),
                                       "icicle")));
  write_out("view-icicle.json", bundle);
  json_decref(bundle);
  /* Of a diff: main's own samples doubled. */
  fl_profile_t *more = known_profile();
  uint32_t main_only[] = {frame(more, "main", "cell[1]", 3, "cell[1]", CELL)};
  fl_profile_add_sample(more, main_only, 1, 2, 0, 1);
  r.profile = more;
  r.baseline = p;
  bundle = fl_output_bundle(&r, err, sizeof err);
  json_t *spec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
  CHECK(bundle && json_is_true(meta_of(spec, "icicle")) && json_is_object(meta_of(spec, "diff")));
  write_out("view-icicle-diff.json", bundle);
  json_decref(bundle);
  fl_options_free(&o);
  fl_profile_destroy(&more);
  fl_profile_destroy(&p);
}

int main(int argc, char **argv) {
  if (out_dir_init(argc, argv) < 0) return 1;
  test_top_known_answers();
  test_top_many();
  test_top_same_names();
  test_top_output();
  test_source_known_answers();
  test_source_diff();
  test_chart_known_answers();
  test_chart_legend();
  test_sandwich();
  test_icicle();
  return TEST_DONE();
}
