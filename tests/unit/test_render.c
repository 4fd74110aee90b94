/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests the flame graph renderers (fl_vegalite, fl_svg, fl_bundle) on trees
 * built with fl_profile and fl_tree: the structure of the Vega-Lite spec
 * (rows, fields, bounds, layers, interactions), that the SVG is well-formed
 * XML with one titled frame (a path) per row in the rows' colours, themes and icicles,
 * allocation profiles, hostile function names, an empty profile, and the
 * size bounds on a big tree (at most 5,000 rows, a bundle under 1 MB: see
 * docs/PROFILING.md, "The data behind the graph").
 *
 *   test_render [DIR]
 *
 * With DIR (or $CFLAME_RENDER_OUT), the bundles and one 5,000-row spec are
 * also written there as JSON files, for the real consumers:
 * node tests/render/check_spec.mjs DIR (vega-lite, vega and an XML parser)
 * and node tests/render/browser_test.mjs DIR (Chromium). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_xml_check(void) {
  CHECK(xml_check("<a x='1'><b/>t &amp; u</a>") == NULL);
  CHECK(xml_check("<?xml version='1.0'?>\n<a>\n</a>\n") == NULL);
  CHECK(xml_check("<a><b></a>") != NULL);
  CHECK(xml_check("<a>x & y</a>") != NULL);
  CHECK(xml_check("<a>x < y</a>") != NULL);
  CHECK(xml_check("<a x=1/>") != NULL);
  CHECK(xml_check("<a/><b/>") != NULL);
  CHECK(xml_check("<a>\x01</a>") != NULL);
  CHECK(xml_check("<a>\xff</a>") != NULL);
  CHECK(xml_check("<a x='<'/>") != NULL);
}

/* ---- helpers on the outputs ---- */

/* Checks the rows against the tree: one per node (when all fit), the
 * fields and their values, bounds. */
static void check_rows(json_t *spec, const fl_tree_t *t, bool alloc) {
  json_t *rows = frames_of(spec);
  CHECK(json_is_array(rows));
  size_t n = json_array_size(rows);
  CHECK(n >= 1 && n <= 5000);
  const fl_node_t *root = fl_tree_root(t);
  static const char *const fields[] = {"id",    "parent", "depth",  "x0",   "x1",
                                       "count", "self",   "pct",    "func", "file",
                                       "line",  "module", "status", "color"};
  size_t i;
  json_t *row;
  int max_depth = 0;
  json_array_foreach(rows, i, row) {
    for (size_t f = 0; f < FL__ARRAY_SIZE(fields); f++) {
      if (!json_object_get(row, fields[f])) {
        fprintf(stderr, "row %zu has no %s\n", i, fields[f]);
        CHECK(0);
      }
    }
    CHECK(alloc == (json_object_get(row, "allocs") != NULL));
    json_int_t id = json_integer_value(json_object_get(row, "id"));
    if (json_integer_value(json_object_get(row, "status")) & FL_STATUS_MERGED) {
      /* A merged frame: its parent's narrow children, after its drawn
       * children, as wide as they are together. */
      const fl_node_t *parent =
          fl_tree_node(t, (size_t)json_integer_value(json_object_get(row, "parent")));
      const fl_narrow_t *items;
      uint64_t weight = 0;
      size_t held = parent ? fl_tree_narrow(t, parent, &items, &weight) : 0;
      char name[48];
      fl_count_noun(held, "narrow frame", "narrow frames", name, sizeof name);
      CHECK(held > 0 && (size_t)id >= fl_tree_n_nodes(t));
      CHECK_STR(json_string_value(json_object_get(row, "func")), name);
      CHECK_INT(json_integer_value(json_object_get(row, "count")), weight);
      CHECK_INT(json_integer_value(json_object_get(row, "x1")), parent ? parent->x1 - parent->self : 0);
      CHECK_INT(json_integer_value(json_object_get(row, "depth")), parent ? parent->depth + 1 : 0);
      continue;
    }
    const fl_node_t *node = fl_tree_node(t, (size_t)id);
    CHECK(node != NULL);
    if (!node) continue;
    CHECK_INT(json_integer_value(json_object_get(row, "x0")), node->x0);
    CHECK_INT(json_integer_value(json_object_get(row, "x1")), node->x1);
    CHECK_INT(json_integer_value(json_object_get(row, "count")), node->count);
    CHECK_INT(json_integer_value(json_object_get(row, "self")), node->self);
    CHECK_INT(json_integer_value(json_object_get(row, "depth")), node->depth);
    CHECK_INT(json_integer_value(json_object_get(row, "status")), node->status);
    CHECK_STR(json_string_value(json_object_get(row, "func")), node->frame.func);
    CHECK(node->x1 - node->x0 == node->count);
    CHECK(node->x0 >= root->x0 && node->x1 <= root->x1);
    if (i == 0) {
      CHECK(json_is_null(json_object_get(row, "parent")));
      CHECK(node == root);
    } else {
      CHECK_INT(json_integer_value(json_object_get(row, "parent")), node->parent->id);
    }
    double pct = json_number_value(json_object_get(row, "pct"));
    double want = root->count ? 100.0 * (double)node->count / (double)root->count : 0;
    CHECK(pct > want - 0.001 && pct < want + 0.001);
    const char *color = json_string_value(json_object_get(row, "color"));
    CHECK(color && strlen(color) == 7 && color[0] == '#');
    if (alloc) CHECK_INT(json_integer_value(json_object_get(row, "allocs")), node->allocs);
    if (node->depth > max_depth) max_depth = node->depth;
  }
  /* The y scale spans the drawn levels; with a band (fewer shown than
   * there are), as many as are shown from the depth a click picked. */
  json_t *ydomain = json_object_get(
      json_object_get(
          json_object_get(json_object_get(layer_named(spec, "frames"), "encoding"), "y"), "scale"),
      "domain");
  json_t *meta = json_object_get(json_object_get(spec, "usermeta"), "cflame");
  CHECK_INT(json_integer_value(json_object_get(meta, "levels")), max_depth + 1);
  if (json_integer_value(json_object_get(meta, "shown")) < max_depth + 1)
    CHECK(json_is_string(json_object_get(ydomain, "expr")));
  else
    CHECK_INT(json_integer_value(json_array_get(ydomain, 1)), max_depth + 1);
  json_decref(rows);
}

/* Whether a line of the spec's subtitle holds needle. */
static bool subtitle_has(json_t *spec, const char *needle) {
  json_t *lines = json_object_get(json_object_get(spec, "title"), "subtitle");
  for (size_t i = 0; i < json_array_size(lines); i++) {
    const char *line = json_string_value(json_array_get(lines, i));
    if (line && strstr(line, needle)) return true;
  }
  return false;
}

/* The SVG draws each row in the row's colour (bundle_read.h). */
static void check_svg_matches(const char *svg, json_t *spec) {
  const char *problem = svg_frames_problem(svg, spec);
  if (problem) fprintf(stderr, "SVG: %s\n", problem);
  CHECK(problem == NULL);
}

/* ---- profiles ---- */

/* A cell that calls work (two lines), qsort with a comparator, and malloc. */
static fl_profile_t *small_profile(fl_profile_kind_t kind) {
  fl_profile_t *p = fl_profile_new(kind);
  uint32_t main_ = frame(p, "main", "cell[1]", 3, "cell[1]", FL_FRAME_CELL | FL_FRAME_REPL);
  uint32_t work5 = frame(p, "work", "cell[1]", 5, "cell[1]", FL_FRAME_CELL | FL_FRAME_REPL);
  uint32_t work6 = frame(p, "work", "cell[1]", 6, "cell[1]", FL_FRAME_CELL | FL_FRAME_REPL);
  uint32_t qsort_ = frame(p, "qsort", NULL, 0, "libc.so.6", FL_FRAME_SYSTEM);
  uint32_t cmp = frame(p, "cmp_doubles", "cell[1]", 9, "cell[1]", FL_FRAME_CELL | FL_FRAME_REPL);
  uint32_t malloc_ = frame(p, "malloc", NULL, 0, "libc.so.6", FL_FRAME_SYSTEM | FL_FRAME_ALLOC);
  uint32_t s1[] = {main_, work5}, s2[] = {main_, work6}, s3[] = {main_, qsort_, cmp},
           s4[] = {main_, qsort_}, s5[] = {main_, malloc_}, s6[] = {main_};
  bool alloc = fl_kind(kind)->allocs;
  fl_profile_add_sample(p, s1, 2, alloc ? 4096 : 40, alloc ? 2 : 0, 1);
  fl_profile_add_sample(p, s2, 2, alloc ? 1024 : 25, alloc ? 1 : 0, 1);
  fl_profile_add_sample(p, s3, 3, alloc ? 64 : 20, alloc ? 4 : 0, 1);
  fl_profile_add_sample(p, s4, 2, alloc ? 16 : 8, alloc ? 1 : 0, 1);
  fl_profile_add_sample(p, s5, 2, alloc ? 2048 : 5, alloc ? 1 : 0, 1);
  fl_profile_add_sample(p, s6, 1, alloc ? 8 : 2, alloc ? 1 : 0, 1);
  return p;
}

/* The bundle of t drawn with the default view options; NULL (a failed
 * check) when fl_bundle fails. */
static json_t *default_bundle(const fl_tree_t *t) {
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  char err[256] = "";
  json_t *bundle = fl_bundle(t, &v, err, sizeof err);
  if (!bundle) fprintf(stderr, "fl_bundle: %s\n", err);
  CHECK(bundle != NULL);
  return bundle;
}

/* ---- merged frames ---- */

/* Narrow children are drawn as one merged frame per parent, after the
 * drawn children, in the SVG and the spec alike: weight the sum of what it
 * holds, its tooltip naming the widest first. */
static void test_merged(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t F = FL_FRAME_CELL | FL_FRAME_REPL;
  uint32_t m = frame(p, "main", "cell[1]", 1, "cell[1]", F), o = frame(p, "other", "cell[1]", 2, "cell[1]", F);
  struct {
    uint32_t parent;
    const char *name;
    uint64_t weight;
  } kids[] = {{m, "big", 900}, {m, "n_a", 3}, {m, "n_b", 5}, {m, "n_c", 2},
              {o, "big2", 80}, {o, "t1", 4},  {o, "t2", 6}};
  for (size_t i = 0; i < FL__ARRAY_SIZE(kids); i++) {
    uint32_t st[] = {kids[i].parent, frame(p, kids[i].name, "cell[1]", 10 + (int)i, "cell[1]", F)};
    fl_profile_add_sample(p, st, 2, kids[i].weight, 0, 1);
  }
  fl_tree_t *t = tree_of(p, true, 0.01); /* 10 of 1,000 */
  json_t *bundle = default_bundle(t);
  json_t *spec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
  check_rows(spec, t, false);
  json_t *rows = frames_of(spec), *row;
  size_t i, merged = 0;
  json_array_foreach(rows, i, row) merged += (json_integer_value(json_object_get(row, "status")) & FL_STATUS_MERGED) != 0;
  CHECK_INT(merged, 2);
  json_decref(rows);
  char *title = json_dumps(json_object_get(spec, "title"), 0);
  CHECK(title && strstr(title, "5 narrow frames merged into 2 frames (2% of samples)"));
  free(title);
  char *svg = svg_of(bundle);
  check_svg_matches(svg, spec);
  CHECK(svg && strstr(svg, "<title>3 narrow frames\n10 samples (1%), the widest:\n"
                           "n_b (0.5%)\nn_a (0.3%)\nn_c (0.2%)</title>") != NULL);
  CHECK(svg && strstr(svg, "<title>2 narrow frames\n10 samples (1%), the widest:\n"
                           "t2 (0.6%)\nt1 (0.4%)</title>") != NULL);
  /* The spec's tooltip says the same. */
  json_t *strings = json_object_get(json_object_get(spec, "datasets"), "strings");
  CHECK(strstr(json_string_value(strings), "n_b (0.5%); n_a (0.3%); n_c (0.2%)") != NULL);
  free(svg);
  write_out("merged.json", bundle);
  json_decref(bundle);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* ---- tests ---- */

static void test_view_opts(void) {
  fl_view_opts_t v;
  memset(&v, 0x5a, sizeof v);
  fl_view_opts_init(&v);
  CHECK_INT(v.width, 800);
  CHECK_INT(v.height, 0);
  CHECK(v.title == NULL && v.note == NULL);
  CHECK(!v.icicle && !v.dark);
  CHECK_INT(v.max_rows, 5000);
}

static void test_small(void) {
  fl_profile_t *p = small_profile(FL_PROFILE_CPU);
  fl_tree_t *t = tree_of(p, true, 0);
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.title = "cell[1]";
  v.note = "100 samples at 1 ms, 0.100 s CPU";
  char err[256] = "";
  json_t *spec = fl_vegalite(t, &v, err, sizeof err);
  CHECK(spec != NULL);
  if (!spec) goto done;
  CHECK_STR(json_string_value(json_object_get(spec, "$schema")),
            "https://vega.github.io/schema/vega-lite/v5.json");
  CHECK_INT(n_frames(spec), fl_tree_n_nodes(t));
  check_rows(spec, t, false);
  CHECK_INT(json_integer_value(json_object_get(spec, "width")), 800);
  /* 18 pixels a level: root, main, qsort, cmp_doubles. */
  CHECK(json_number_value(json_object_get(spec, "height")) == 4 * 18);
  json_t *title = json_object_get(spec, "title");
  CHECK_STR(json_string_value(json_object_get(title, "text")), "cell[1]");
  CHECK_STR(json_string_value(json_array_get(json_object_get(title, "subtitle"), 0)), v.note);

  /* The search box. */
  json_t *search = json_array_get(json_object_get(spec, "params"), 0);
  CHECK_STR(json_string_value(json_object_get(search, "name")), "search");
  CHECK_STR(json_string_value(json_object_get(json_object_get(search, "bind"), "input")), "search");
  /* Pan and zoom: an interval on x bound to the scales; click-zoom. */
  json_t *frames = layer_named(spec, "frames");
  CHECK(frames != NULL);
  json_t *pan = json_array_get(json_object_get(frames, "params"), 0);
  CHECK_STR(json_string_value(json_object_get(pan, "bind")), "scales");
  json_t *sel = json_object_get(pan, "select");
  CHECK_STR(json_string_value(json_object_get(sel, "type")), "interval");
  CHECK_INT(json_array_size(json_object_get(sel, "encodings")), 1);
  CHECK_STR(json_string_value(json_array_get(json_object_get(sel, "encodings"), 0)), "x");
  json_t *pick = json_array_get(json_object_get(frames, "params"), 1);
  CHECK_STR(json_string_value(json_object_get(pick, "name")), "pick");
  CHECK_STR(json_string_value(json_object_get(json_object_get(pick, "select"), "clear")),
            "dblclick");
  /* The tooltip gives function, file:line, module, samples, self and
   * percent, in that order (docs/PROFILING.md, "Reading a flame graph"). */
  const char *tooltip = tooltip_expr(spec);
  CHECK(tooltip != NULL);
  if (!tooltip) tooltip = "";
  const char *want[] = {
      "'function':", "'file:line':", "'module':", "'samples':", "'self':", "'percent':"};
  const char *at = tooltip;
  for (size_t i = 0; i < FL__ARRAY_SIZE(want); i++) {
    at = at ? strstr(at, want[i]) : NULL;
    CHECK(at != NULL);
  }
  CHECK(strstr(tooltip, "'folded in'") != NULL);
  CHECK(strstr(tooltip, "bytes") == NULL);
  CHECK(layer_named(spec, "labels") != NULL);
  CHECK(layer_named(spec, "share") != NULL);
  /* The legend names the kinds drawn: root, cell code, system library,
   * allocator (malloc is both; the allocator wins). */
  json_t *legend = layer_named(spec, "legend");
  json_t *domain = json_object_get(
      json_object_get(json_object_get(json_object_get(legend, "encoding"), "color"), "scale"),
      "domain");
  CHECK_INT(json_array_size(domain), 4);
  CHECK_STR(json_string_value(json_array_get(domain, 0)), "cell code");
  CHECK_STR(json_string_value(json_array_get(domain, 1)), "system library");
  CHECK_STR(json_string_value(json_array_get(domain, 2)), "allocator");
  CHECK_STR(json_string_value(json_array_get(domain, 3)), "root");

  /* The SVG: well-formed, a titled frame per row in the row's colour. */
  char *svg = fl_svg(t, &v);
  CHECK(svg != NULL);
  if (svg) {
    const char *why = xml_check(svg);
    if (why) fprintf(stderr, "SVG: %s\n", why);
    CHECK(why == NULL);
    CHECK(strstr(svg, "xmlns='http://www.w3.org/2000/svg'") != NULL);
    CHECK_INT(count_of(svg, "<title>"), fl_tree_n_nodes(t));
    CHECK_INT(count_of(svg, "</path>"), fl_tree_n_nodes(t));
    check_svg_matches(svg, spec);
    CHECK(strstr(svg, ">cell[1]</text>") != NULL);                  /* the title */
    CHECK(strstr(svg, "100 samples at 1 ms, 0.100 s CPU") != NULL); /* the note */
    /* Tooltips say where a frame is only as far as that is known, and
     * a cell's module (its file) once. */
    CHECK(strstr(svg, "<title>work:5\ncell[1]:5\n40 samples (40%), self 40</title>"));
    CHECK(strstr(svg, "<title>qsort\nlibc.so.6\n28 samples (28%), self 8</title>"));
    CHECK(strstr(svg, "<title>cell[1]\n100 samples (100%), self 0</title>"));
    const char *titles = svg_titles_problem(svg);
    if (titles) fprintf(stderr, "SVG: %s\n", titles);
    CHECK(titles == NULL);
    CHECK(strstr(svg, ">system library</text>") != NULL); /* the legend */
    CHECK(strstr(svg, "fill='#ffffff'") != NULL);
  }
  free(svg);

  /* The bundle. */
  json_t *bundle = fl_bundle(t, &v, err, sizeof err);
  CHECK(bundle != NULL);
  if (bundle) {
    CHECK(json_is_object(json_object_get(bundle, "application/vnd.vegalite.v5+json")));
    CHECK(json_object_get(bundle, "image/svg+xml") == NULL); /* the markdown holds it */
    const char *text = json_string_value(json_object_get(bundle, "text/plain"));
    CHECK(text && strstr(text, "cmp_doubles") != NULL);
    CHECK(text && strchr(text, '\n') != NULL); /* the report keeps its lines */
    write_out("small.json", bundle);
  }
  json_decref(bundle);
done:
  json_decref(spec);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

static void test_dark_icicle_folded(void) {
  fl_profile_t *p = small_profile(FL_PROFILE_CPU);
  fl_tree_t *t = tree_of(p, false, 0); /* qsort and malloc folded into main */
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.dark = true;
  v.icicle = true;
  v.width = 600;
  v.height = 300;
  char err[256] = "";
  json_t *bundle = fl_bundle(t, &v, err, sizeof err);
  CHECK(bundle != NULL);
  if (!bundle) goto done;
  json_t *spec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
  check_rows(spec, t, false);
  CHECK_STR(json_string_value(json_object_get(spec, "background")), "#1e1e1e");
  CHECK_INT(json_integer_value(json_object_get(spec, "width")), 600);
  CHECK(json_number_value(json_object_get(spec, "height")) == 300);
  json_t *y = json_object_get(json_object_get(layer_named(spec, "frames"), "encoding"), "y");
  CHECK(json_is_true(json_object_get(json_object_get(y, "scale"), "reverse")));
  char *svg = svg_of(bundle);
  CHECK(svg && xml_check(svg) == NULL);
  CHECK(svg && strstr(svg, "fill='#1e1e1e'") != NULL);
  CHECK(svg && strstr(svg, "folded in: system libraries, allocator") != NULL);
  /* Icicle: the root is at the top of the plot, main right under it. */
  const char *root_frame = svg ? strstr(svg, "<path d='M") : NULL;
  const char *next_frame = root_frame ? strstr(root_frame + 1, "<path d='M") : NULL;
  double root_x = -1, root_y = -1, next_y = -1;
  CHECK(root_frame && sscanf(root_frame, "<path d='M%lf %lf", &root_x, &root_y) == 2);
  CHECK(next_frame && sscanf(next_frame, "<path d='M%*f %lf", &next_y) == 1);
  CHECK(root_x == 10 && root_y < next_y);
  free(svg);
  write_out("dark-icicle.json", bundle);
done:
  json_decref(bundle);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* Every frame looks like its kind's swatch in the legend: within 20 of it
 * on each of red, green and blue, whatever the function's name (a cell's
 * "top-level scope" was drawn bright yellow beside an orange "cell code"
 * swatch). The spec's legend gives the swatches, its rows the frames'
 * colours, which the SVG draws too. */
static void test_kind_colours_match_the_legend(void) {
  static const struct {
    uint32_t flags;
    const char *label;
  } kinds[] = {{FL_FRAME_CELL | FL_FRAME_REPL, "cell code"},
               {FL_FRAME_CELL, "program code"},
               {FL_FRAME_SYSTEM, "system library"},
               {FL_FRAME_SYSTEM | FL_FRAME_ALLOC, "allocator"},
               {FL_FRAME_KERNEL, "kernel"},
               {0, "other code"}};
  enum { N_KINDS = FL__ARRAY_SIZE(kinds), N_NAMES = 60 };
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  char name[64];
  for (size_t k = 0; k < N_KINDS; k++) {
    for (int i = 0; i < N_NAMES; i++) {
      if (i == 0)
        snprintf(name, sizeof name, "top-level scope");
      else
        snprintf(name, sizeof name, "%s_%d", i % 2 ? "work" : "f", i);
      /* A module per kind keeps same-named frames of two kinds apart. */
      uint32_t id = frame(p, name, NULL, 0, kinds[k].label, kinds[k].flags);
      fl_profile_add_sample(p, &id, 1, 1, 0, 1);
    }
  }
  fl_tree_t *t = tree_of(p, true, 0);
  json_t *spec = fl_vegalite(t, NULL, NULL, 0);
  json_t *legend = json_object_get(
      json_object_get(json_object_get(layer_named(spec, "legend"), "encoding"), "color"), "scale");
  json_t *scale = json_object_get(legend, "domain"), *range = json_object_get(legend, "range");
  json_t *rows = frames_of(spec);
  size_t i, checked = 0;
  json_t *row;
  json_array_foreach(rows, i, row) {
    const fl_node_t *n = fl_tree_node(t, (size_t)json_integer_value(json_object_get(row, "id")));
    const char *label = "root";
    for (size_t k = 0; k < N_KINDS && n->depth > 0; k++)
      if (n->frame.flags == kinds[k].flags) label = kinds[k].label;
    const char *swatch = NULL;
    for (size_t j = 0; j < json_array_size(scale); j++)
      if (!strcmp(json_string_value(json_array_get(scale, j)), label))
        swatch = json_string_value(json_array_get(range, j));
    CHECK(swatch != NULL);
    if (!swatch) break;
    const char *fill = json_string_value(json_object_get(row, "color"));
    unsigned a[3], b[3];
    CHECK(sscanf(fill, "#%02x%02x%02x", &a[0], &a[1], &a[2]) == 3);
    CHECK(sscanf(swatch, "#%02x%02x%02x", &b[0], &b[1], &b[2]) == 3);
    int worst = 0;
    for (int c = 0; c < 3; c++) {
      int d = abs((int)a[c] - (int)b[c]);
      if (d > worst) worst = d;
    }
    if (worst > 20)
      fprintf(stderr, "%s (%s) is %s, %d from its legend swatch %s\n", n->frame.func, label, fill,
              worst, swatch);
    CHECK(worst <= 20);
    checked++;
  }
  CHECK_INT(checked, 1 + N_KINDS * N_NAMES);
  json_decref(rows);
  json_t *bundle = default_bundle(t);
  if (bundle) write_out("kinds.json", bundle);
  json_decref(bundle);
  json_decref(spec);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* A wait's frame is the legend's slate, lighter or darker, never another
 * hue: [off-CPU: futex] was drawn #a795bc, nearer the allocator's violet
 * than the slate of the legend that names it. */
static void test_wait_colours_keep_the_legends_hue(void) {
  static const char *const reasons[] = {"sleep", "futex",   "read",   "poll",     "waitpid",
                                        "write", "accept",  "connect", "signal", "runnable"};
  enum { N = FL__ARRAY_SIZE(reasons) };
  fl_profile_t *p = fl_profile_new(FL_PROFILE_WALL);
  char name[64];
  for (size_t i = 0; i < N; i++) {
    snprintf(name, sizeof name, "[off-CPU: %s]", reasons[i]);
    uint32_t id = frame(p, name, NULL, 0, NULL, FL_FRAME_OFFCPU);
    fl_profile_add_sample(p, &id, 1, 1, 0, 1);
  }
  fl_tree_t *t = tree_of(p, true, 0);
  json_t *spec = fl_vegalite(t, NULL, NULL, 0);
  json_t *scale = json_object_get(
      json_object_get(json_object_get(layer_named(spec, "legend"), "encoding"), "color"), "scale");
  const char *slate = NULL;
  for (size_t j = 0; j < json_array_size(json_object_get(scale, "domain")); j++)
    if (!strcmp(json_string_value(json_array_get(json_object_get(scale, "domain"), j)),
                "off-CPU (waiting)"))
      slate = json_string_value(json_array_get(json_object_get(scale, "range"), j));
  CHECK(slate != NULL);
  unsigned s[3] = {0, 0, 0};
  CHECK(slate && sscanf(slate, "#%02x%02x%02x", &s[0], &s[1], &s[2]) == 3);
  json_t *rows = frames_of(spec), *row;
  size_t i, checked = 0;
  json_array_foreach(rows, i, row) {
    const fl_node_t *n = fl_tree_node(t, (size_t)json_integer_value(json_object_get(row, "id")));
    if (n->depth == 0) continue;
    const char *fill = json_string_value(json_object_get(row, "color"));
    unsigned c[3];
    CHECK(sscanf(fill, "#%02x%02x%02x", &c[0], &c[1], &c[2]) == 3);
    /* The same offset on every channel: the hue of the swatch. */
    int dr = (int)c[0] - (int)s[0], dg = (int)c[1] - (int)s[1], db = (int)c[2] - (int)s[2];
    if (dr != dg || dg != db)
      fprintf(stderr, "%s is %s, not a shade of the legend's %s\n", n->frame.func, fill, slate);
    CHECK(dr == dg && dg == db);
    checked++;
  }
  CHECK_INT(checked, N);
  json_decref(rows);
  json_decref(spec);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* A bundle's text/plain leads with the note, then the report; its
 * markdown ends with markdown_hint, a paragraph inside the
 * graph's one HTML block. Without them, neither is there. */
static void test_bundle_note_and_hint(void) {
  fl_profile_t *p = small_profile(FL_PROFILE_CPU);
  fl_tree_t *t = tree_of(p, true, 0);
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.note = "100 samples at 1 ms";
  v.markdown_hint = "Interactive view: open in JupyterLab <here> & there.";
  json_t *bundle = fl_bundle(t, &v, NULL, 0);
  const char *text = json_string_value(json_object_get(bundle, "text/plain"));
  const char *md = json_string_value(json_object_get(bundle, "text/markdown"));
  static const char lead[] = "100 samples at 1 ms\nTotal: 100 samples";
  CHECK(text && strncmp(text, lead, strlen(lead)) == 0);
  CHECK(md && strstr(md,
                     "</svg>\n<p class=\"cflame-hint\" style=\"font-size:12px;opacity:0.75\">"
                     "Interactive view: open in JupyterLab &lt;here&gt; &amp; there.</p>\n"
                     "</div>\n") != NULL);
  CHECK(md && strstr(md, "\n\n") == NULL); /* one HTML block */
  write_out("lead-and-hint.json", bundle);
  json_decref(bundle);
  fl_view_opts_init(&v);
  bundle = fl_bundle(t, &v, NULL, 0);
  text = json_string_value(json_object_get(bundle, "text/plain"));
  md = json_string_value(json_object_get(bundle, "text/markdown"));
  CHECK(text && strncmp(text, "Total: 100 samples", 18) == 0);
  CHECK(md && !strstr(md, "<p class=\"cflame-hint\""));
  json_decref(bundle);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* A program's functions read from a file (cell code without FL_FRAME_REPL)
 * are coloured as cell code but named "program code" in the legend. */
static void test_program_code_legend(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t m = frame(p, "main", "prog.c", 3, "prog", FL_FRAME_CELL);
  uint32_t w = frame(p, "work", "prog.c", 9, "prog", FL_FRAME_CELL);
  uint32_t s[] = {m, w};
  fl_profile_add_sample(p, s, 2, 10, 0, 1);
  fl_tree_t *t = tree_of(p, true, 0);
  json_t *bundle = default_bundle(t);
  char *svg = bundle ? svg_of(bundle) : NULL;
  CHECK(svg && strstr(svg, "program code") && !strstr(svg, "cell code"));
  free(svg);
  json_decref(bundle);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

static void test_alloc(void) {
  fl_profile_t *p = small_profile(FL_PROFILE_ALLOC_BYTES);
  fl_tree_t *t = tree_of(p, true, 0);
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.title = "allocations of cell[1]";
  char err[256] = "";
  json_t *bundle = fl_bundle(t, &v, err, sizeof err);
  CHECK(bundle != NULL);
  if (!bundle) goto done;
  json_t *spec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
  check_rows(spec, t, true);
  json_t *frames = layer_named(spec, "frames");
  json_t *x = json_object_get(json_object_get(frames, "encoding"), "x");
  CHECK_STR(json_string_value(json_object_get(json_object_get(x, "axis"), "title")), "bytes");
  const char *tooltip = tooltip_expr(spec);
  CHECK(tooltip != NULL);
  if (!tooltip) tooltip = "";
  CHECK(strstr(tooltip, "'bytes': format(datum.count") != NULL);
  CHECK(strstr(tooltip, "'self bytes': format(datum.self") != NULL);
  CHECK(strstr(tooltip, "'allocations': format(datum.allocs") != NULL);
  CHECK(strstr(tooltip, "'samples'") == NULL);
  char *svg = svg_of(bundle);
  CHECK(svg && xml_check(svg) == NULL);
  CHECK(svg && strstr(svg, "4,096 bytes (56.") != NULL);
  CHECK(svg && strstr(svg, "2 allocations") != NULL);
  free(svg);
  write_out("alloc.json", bundle);
done:
  json_decref(bundle);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* weight=count: widths are allocation counts, and every label says so. */
static void test_alloc_counts(void) {
  fl_profile_t *p = small_profile(FL_PROFILE_ALLOC_COUNT);
  fl_tree_t *t = tree_of(p, true, 0);
  json_t *bundle = default_bundle(t);
  if (!bundle) goto done;
  json_t *spec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
  json_t *frames = layer_named(spec, "frames");
  json_t *x = json_object_get(json_object_get(frames, "encoding"), "x");
  CHECK_STR(json_string_value(json_object_get(json_object_get(x, "axis"), "title")), "allocations");
  const char *tooltip = tooltip_expr(spec);
  CHECK(tooltip != NULL);
  if (!tooltip) tooltip = "";
  CHECK(strstr(tooltip, "'allocations': format(datum.count") != NULL);
  CHECK(strstr(tooltip, "'self allocations': format(datum.self") != NULL);
  CHECK(strstr(tooltip, "bytes") == NULL);
  char *svg = svg_of(bundle);
  CHECK(svg && xml_check(svg) == NULL);
  CHECK(svg && strstr(svg, " bytes") == NULL);
  CHECK(svg && strstr(svg, " allocations (") != NULL);
  free(svg);
  const char *text = json_string_value(json_object_get(bundle, "text/plain"));
  CHECK(text && strstr(text, "allocations") != NULL && strstr(text, "Bytes") == NULL);
  write_out("alloc-counts.json", bundle);
done:
  json_decref(bundle);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* Names that break naive JSON and XML writers. */
static void test_hostile_names(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t a = frame(p, "operator<<&'\"]]>", "a&b<c>.c", 1, "lib\x01x.so", FL_FRAME_CELL);
  uint32_t b = frame(p, "bad\xff\xfeutf8\xc3", NULL, 0, NULL, FL_FRAME_CELL);
  uint32_t c = frame(p, "caf\xc3\xa9_\xe6\x97\xa5\xe6\x9c\xac_a_rather_long_function_name",
                     "cell[2]", 7, "cell[2]", FL_FRAME_CELL);
  uint32_t s1[] = {a, b}, s2[] = {a, c};
  fl_profile_add_sample(p, s1, 2, 30, 0, 1);
  fl_profile_add_sample(p, s2, 2, 70, 0, 1);
  fl_tree_t *t = tree_of(p, true, 0);
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.title = "<script>alert('x')</script> & \xff";
  v.note = "note\twith\ncontrols\x01";
  char err[256] = "";
  json_t *bundle = fl_bundle(t, &v, err, sizeof err);
  CHECK(bundle != NULL);
  if (!bundle) goto done;
  char *dumped = json_dumps(bundle, JSON_COMPACT);
  CHECK(dumped != NULL); /* every string is valid UTF-8 */
  json_t *again = dumped ? json_loads(dumped, 0, NULL) : NULL;
  CHECK(again != NULL);
  json_decref(again);
  free(dumped);
  char *svg = svg_of(bundle);
  const char *why = svg ? xml_check(svg) : "no SVG";
  if (why) fprintf(stderr, "SVG: %s\n", why);
  CHECK(why == NULL);
  CHECK(svg && strstr(svg, "operator&lt;&lt;&amp;&apos;&quot;]]&gt;") != NULL);
  /* The one script is the SVG's own (fl_svg_script.js). */
  CHECK(svg && strstr(svg, "&lt;script&gt;") != NULL && count_of(svg, "<script") == 1);
  CHECK(svg && strstr(svg, ">note with controls?</text>") != NULL);
  CHECK(svg && strstr(svg, "caf\xc3\xa9_\xe6\x97\xa5\xe6\x9c\xac_a_rather_long") != NULL);
  free(svg);
  write_out("hostile.json", bundle);
done:
  json_decref(bundle);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* A long note is cut between characters, never inside one. */
static void test_long_note(void) {
  fl_profile_t *p = small_profile(FL_PROFILE_CPU);
  fl_tree_t *t = tree_of(p, true, 0);
  char note[2000] = "";
  /* é is two bytes: a cut at the odd byte FL__NOTE_SIZE - 1 would split one. */
  while (strlen(note) + 2 < sizeof note) strcat(note, "\xc3\xa9");
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.note = note;
  char err[256] = "";
  json_t *bundle = fl_bundle(t, &v, err, sizeof err);
  CHECK(bundle != NULL);
  if (bundle) {
    json_t *spec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
    /* Without a title, the note is the title's text (Vega draws nothing for
     * an empty title, subtitle included). */
    const char *shown = json_string_value(json_object_get(json_object_get(spec, "title"), "text"));
    CHECK(shown && strlen(shown) > 400);
    char *svg = svg_of(bundle);
    CHECK(svg && xml_check(svg) == NULL);
    free(svg);
  }
  json_decref(bundle);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

static void test_empty(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_tree_t *t = tree_of(p, false, 0.001);
  char err[256] = "";
  json_t *bundle = fl_bundle(t, NULL, err, sizeof err);
  CHECK(bundle != NULL);
  if (bundle) {
    json_t *spec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
    CHECK_INT(n_frames(spec), 1);
    char *svg = svg_of(bundle);
    CHECK(svg && xml_check(svg) == NULL);
    free(svg);
    write_out("empty.json", bundle);
  }
  json_decref(bundle);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* Hundreds of functions in thousands of distinct stacks, and a recursion
 * `recursion` deep: far more frames than 5,000 rows. */
static fl_profile_t *big_profile(size_t recursion) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  enum { N_FUNCS = 400, N_STACKS = 30000, MAX_RECURSION = 1000 };
  uint32_t funcs[N_FUNCS];
  for (int i = 0; i < N_FUNCS; i++) {
    char name[64], file[64];
    uint32_t flags = i % 5 == 0 ? FL_FRAME_SYSTEM : FL_FRAME_CELL;
    snprintf(name, sizeof name, "%s_function_%03d", flags == FL_FRAME_SYSTEM ? "lib" : "cell", i);
    snprintf(file, sizeof file, "cell[%d]", 1 + i % 7);
    funcs[i] = frame(p, name, flags == FL_FRAME_SYSTEM ? NULL : file,
                     flags == FL_FRAME_SYSTEM ? 0 : 1 + i % 90,
                     flags == FL_FRAME_SYSTEM ? "libbig.so.1" : file, flags);
  }
  uint32_t main_ = frame(p, "main", "cell[1]", 1, "cell[1]", FL_FRAME_CELL);
  uint32_t fib = frame(p, "fib", "cell[1]", 4, "cell[1]", FL_FRAME_CELL);
  uint32_t stack[MAX_RECURSION + 64];
  if (recursion > MAX_RECURSION) recursion = MAX_RECURSION;
  for (int s = 0; s < N_STACKS; s++) {
    size_t n = 0;
    stack[n++] = main_;
    size_t depth = 2 + rng() % 40;
    uint64_t path = rng() % 6; /* a few hot prefixes, so stacks share nodes */
    for (size_t d = 0; d < depth; d++) {
      uint64_t pick = d < 4 ? (path * 7 + d) % N_FUNCS : rng() % N_FUNCS;
      stack[n++] = funcs[pick];
    }
    fl_profile_add_sample(p, stack, n, 1 + rng() % 20, 0, 1);
  }
  for (int s = 0; s < 200; s++) {
    size_t n = 0;
    stack[n++] = main_;
    size_t depth = recursion - (size_t)(rng() % (recursion / 5 + 1));
    for (size_t d = 0; d < depth; d++) stack[n++] = fib;
    fl_profile_add_sample(p, stack, n, 3, 0, 1);
  }
  return p;
}

/* A stack 1,000 frames deep under the root, a branch off it at 400 and a
 * shallow one: deeper than any default height holds. */
static void test_deep(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  enum { DEPTH = 1000 };
  uint32_t stack[DEPTH];
  for (int i = 0; i < DEPTH; i++) {
    char name[32];
    snprintf(name, sizeof name, i ? "level_%04d" : "main", i);
    stack[i] = frame(p, name, "cell[1]", 1 + i, "cell[1]", FL_FRAME_CELL);
  }
  fl_profile_add_sample(p, stack, DEPTH, 100, 0, 1);
  stack[400] = frame(p, "branch_x", "cell[1]", 2000, "cell[1]", FL_FRAME_CELL);
  fl_profile_add_sample(p, stack, 401, 20, 0, 1);
  stack[1] = frame(p, "side_a", "cell[1]", 2001, "cell[1]", FL_FRAME_CELL);
  fl_profile_add_sample(p, stack, 2, 30, 0, 1);
  fl_tree_t *t = tree_of(p, true, 0);
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  for (int icicle = 0; icicle < 2; icicle++) {
    v.icicle = icicle;
    v.dark = icicle;
    char err[256] = "";
    json_t *bundle = fl_bundle(t, &v, err, sizeof err);
    CHECK(bundle != NULL);
    if (!bundle) continue;
    json_t *spec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
    check_rows(spec, t, false);
    /* Levels stay tall enough for labels: the deepest are the band, whose
     * layers draw them collapsed, and the notes say how to see them. */
    json_t *meta = json_object_get(json_object_get(spec, "usermeta"), "cflame");
    json_int_t levels = json_integer_value(json_object_get(meta, "levels"));
    json_int_t shown = json_integer_value(json_object_get(meta, "shown"));
    double height = json_number_value(json_object_get(spec, "height"));
    CHECK_INT(levels, DEPTH + 1);
    CHECK(shown > 100 && shown < levels);
    CHECK(height / (double)shown >= 12 && height <= 4000);
    CHECK(layer_named(spec, "labels") != NULL);
    CHECK(layer_named(spec, "band") != NULL && layer_named(spec, "band_words") != NULL);
    CHECK(subtitle_has(spec, "height=") && subtitle_has(spec, "recur=flat"));
    /* The SVG: the root labelled, the band saying how many levels it
     * holds (the branch's and the chain's), the notes the same. */
    char *svg = svg_of(bundle);
    CHECK(svg && xml_check(svg) == NULL);
    char words[96];
    snprintf(words, sizeof words, ">\xe2\x80\xa6 %d more levels (click to open)</text>",
             (int)(levels - shown + 1));
    CHECK(svg && strstr(svg, ">cell[1]</text>") != NULL);
    CHECK(svg && strstr(svg, words) != NULL);
    CHECK(svg && strstr(svg, "height=") != NULL && strstr(svg, "recur=flat") != NULL);
    free(svg);
    /* A still picture's band says how many levels, never to click. */
    fl_view_opts_t still = v;
    still.still = true;
    svg = fl_svg(t, &still);
    snprintf(words, sizeof words, ">\xe2\x80\xa6 %d more levels</text>", (int)(levels - shown + 1));
    CHECK(strstr(svg, words) != NULL);
    CHECK(strstr(svg, "click to open") == NULL);
    free(svg);
    write_out(icicle ? "deep-icicle-dark.json" : "deep.json", bundle);
    json_decref(bundle);
  }
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

static void test_big(void) {
  fl_profile_t *p = big_profile(600);
  fl_tree_t *t = tree_of(p, true, 0); /* minwidth 0: every frame visible */
  fprintf(stderr, "big tree: %zu nodes, max depth %d\n", fl_tree_n_nodes(t), fl_tree_max_depth(t));
  CHECK(fl_tree_n_nodes(t) > 20000);
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.title = "big";
  char err[256] = "";

  double t0 = now_ms();
  json_t *spec = fl_vegalite(t, &v, err, sizeof err);
  double t1 = now_ms();
  char *svg = fl_svg(t, &v);
  double t2 = now_ms();
  CHECK(spec != NULL && svg != NULL);
  if (spec) {
    CHECK_INT(n_frames(spec), 5000);
    check_rows(spec, t, false);
    /* The note says what is not drawn. */
    CHECK(subtitle_has(spec, "left out to draw at most 5,000"));
    size_t bytes = json_dumpb(spec, NULL, 0, JSON_COMPACT);
    fprintf(stderr, "5000 rows: spec %zu bytes in %.1f ms, SVG %zu bytes in %.1f ms\n", bytes,
            t1 - t0, svg ? strlen(svg) : 0, t2 - t1);
  }
  if (svg) {
    CHECK(xml_check(svg) == NULL);
    CHECK_INT(count_of(svg, "<title>"), 5000);
  }
  json_decref(spec);
  free(svg);

  /* The bundle stays under 1 MB, with as many rows as fit. */
  double t3 = now_ms();
  json_t *bundle = fl_bundle(t, &v, err, sizeof err);
  double t4 = now_ms();
  CHECK(bundle != NULL);
  if (bundle) {
    size_t bytes = json_dumpb(bundle, NULL, 0, JSON_COMPACT);
    json_t *bspec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
    size_t n = n_frames(bspec);
    fprintf(stderr, "bundle: %zu bytes, %zu rows, %.1f ms\n", bytes, n, t4 - t3);
    CHECK(bytes < 1000000);
    CHECK(n <= 5000 && n >= 1000);
    check_rows(bspec, t, false);
    char *svgb = svg_of(bundle);
    CHECK(svgb && xml_check(svgb) == NULL);
    CHECK(svgb && count_of(svgb, "<title>") == n);
    free(svgb);
    write_out("big.json", bundle);
  }
  json_decref(bundle);

  /* A shallower recursion, with the default minwidth: the narrow frames
   * are merged, and said so. */
  fl_profile_t *p2 = big_profile(30);
  fl_tree_t *t2_ = tree_of(p2, true, 0.001);
  bundle = fl_bundle(t2_, &v, err, sizeof err);
  CHECK(bundle != NULL);
  if (bundle) {
    CHECK(json_dumpb(bundle, NULL, 0, JSON_COMPACT) < 1000000);
    json_t *bspec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
    const char *note = json_string_value(
        json_array_get(json_object_get(json_object_get(bspec, "title"), "subtitle"), 0));
    CHECK(note && strstr(note, "narrow frames merged into") != NULL);
    write_out("big-minwidth.json", bundle);
  }
  json_decref(bundle);
  fl_tree_destroy(&t2_);

  /* The same shallow profile with every frame: the spec alone has 5,000
   * rows; the bundle keeps as many as fit in 1 MB. */
  t2_ = tree_of(p2, true, 0);
  v.title = "every frame";
  double t5 = now_ms();
  json_t *spec5000 = fl_vegalite(t2_, &v, err, sizeof err);
  double t6 = now_ms();
  CHECK(spec5000 != NULL);
  if (spec5000) {
    CHECK_INT(n_frames(spec5000), 5000);
    fprintf(stderr, "shallow tree, %zu nodes: 5000-row spec in %.1f ms\n", fl_tree_n_nodes(t2_),
            t6 - t5);
    write_out("big-5000.vl.json", spec5000);
  }
  json_decref(spec5000);
  bundle = fl_bundle(t2_, &v, err, sizeof err);
  CHECK(bundle != NULL);
  if (bundle) {
    CHECK(json_dumpb(bundle, NULL, 0, JSON_COMPACT) < 1000000);
    write_out("big-shallow.json", bundle);
  }
  json_decref(bundle);
  fl_tree_destroy(&t2_);
  fl_profile_destroy(&p2);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

int main(int argc, char **argv) {
  if (out_dir_init(argc, argv) < 0) return 1;
  test_xml_check();
  test_view_opts();
  test_small();
  test_dark_icicle_folded();
  test_alloc();
  test_program_code_legend();
  test_kind_colours_match_the_legend();
  test_wait_colours_keep_the_legends_hue();
  test_bundle_note_and_hint();
  test_alloc_counts();
  test_hostile_names();
  test_long_note();
  test_empty();
  test_merged();
  test_deep();
  test_big();
  return TEST_DONE();
}
