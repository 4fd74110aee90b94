/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests the renderings of differential flame graphs (fl_vegalite_diff,
 * fl_svg_diff, fl_text_diff, fl_diff_bundle) on diffs built by fl_diff from
 * hand-made profiles: the rows' diff fields against fl_diff_node, colours
 * by change (red grew, blue shrank, saturation growing with |delta| on one
 * scale for both, neutral grey within noise, teal for new frames), the
 * legend, the notes and summary, the vanished list in each rendering,
 * tooltips, negate (baseline layout), allocation diffs, self deltas with a
 * scaled baseline, hostile names, an empty diff, and the size bounds on a
 * big diff (at most 5,000 rows, a bundle under 1 MB: docs/PROFILING.md).
 *
 *   test_render_diff [DIR]
 *
 * With DIR (or $CFLAME_RENDER_OUT, shared with test_render), the bundles and
 * specs are also written there as diff-*.json, for the real consumers:
 * node tests/render/check_spec.mjs DIR and browser_test.mjs DIR. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cflame/fl_diff.h"
#include "cflame/fl_profile.h"
#include "cflame/fl_render.h"
#include "cflame/fl_tree.h"
#include "test.h"
#include "bundle_read.h"
#include "render_out.h"
#include "xml_check.h"

#define VL_MIME "application/vnd.vegalite.v5+json"
#define SAME_COLOR "#c8c8c8"
#define NEW_COLOR "#2aa198"
#define GREW_COLOR "#d72828"
#define SHRANK_COLOR "#2864d7"
#define MINUS "\xe2\x88\x92" /* − */

/* ---- profiles ---- */

/* Adds a sample of weight w whose stack is spec, root first, frames split by
 * ';'. A frame is "func:line" (cell code of cell[1]) or "~func" (libc). */
static void add(fl_profile_t *p, uint64_t w, const char *spec) {
  uint32_t ids[64];
  size_t n = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *save = NULL, *tok = strtok_r(buf, ";", &save); tok && n < 64;
       tok = strtok_r(NULL, ";", &save)) {
    fl_frame_t f = {0};
    if (tok[0] == '~') {
      f.func = tok + 1;
      f.module = "libc.so.6";
      f.flags = FL_FRAME_SYSTEM;
    } else {
      char *colon = strchr(tok, ':');
      if (colon) {
        f.line = atoi(colon + 1);
        *colon = '\0';
      }
      f.func = tok;
      f.file = "cell[1]";
      f.module = "cell[1]";
      f.flags = FL_FRAME_CELL | FL_FRAME_REPL;
    }
    ids[n++] = fl_profile_frame_id(p, &f);
  }
  bool alloc = fl_kind(fl_profile_info_const(p)->kind)->allocs;
  fl_profile_add_sample(p, ids, n, w, alloc ? 1 : 0, 0);
}

static fl_profile_t *profile(fl_profile_kind_t kind, uint64_t interval_ns) {
  fl_profile_t *p = fl_profile_new(kind);
  if (kind == FL_PROFILE_CPU) fl_profile_info(p)->interval_ns = interval_ns;
  return p;
}

/* Before and after a change: work grew, parse shrank (and its tokenize
 * vanished), sort stayed the same, memcpy is new, strlen vanished. Counts
 * times k (bytes for allocation profiles). */
static void baseline_of(fl_profile_t *p, uint64_t k) {
  add(p, 100 * k, "main:3;work:5");
  add(p, 140 * k, "main:3;parse:8");
  add(p, 60 * k, "main:3;parse:8;tokenize:20");
  add(p, 150 * k, "main:3;~qsort;cmp:12");
  add(p, 50 * k, "main:3;~strlen");
  add(p, 10 * k, "main:3");
}

static void target_of(fl_profile_t *p, uint64_t k) {
  add(p, 300 * k, "main:3;work:5");
  add(p, 80 * k, "main:3;parse:8");
  add(p, 152 * k, "main:3;~qsort;cmp:12");
  add(p, 60 * k, "main:3;~memcpy");
  add(p, 10 * k, "main:3");
}

static fl_diff_t *diff_of(const fl_profile_t *target, const fl_profile_t *base,
                          const fl_diff_opts_t *o, double minwidth) {
  fl_tree_opts_t to;
  fl_tree_opts_init(&to);
  to.C = true;
  to.minwidth = minwidth;
  char err[256] = "";
  fl_diff_t *d = fl_diff_build(target, base, &to, o, "cell[2]", err, sizeof err);
  if (!d) fprintf(stderr, "fl_diff_build: %s\n", err);
  CHECK(d != NULL);
  return d;
}

/* ---- helpers on the outputs ---- */

/* What rows_of and svg_text read, kept until the end of the run so that
 * they can be handed out borrowed, as the spec's own parts are. */
static json_t *kept;

static json_t *keep(json_t *j) {
  if (!kept) kept = json_array();
  json_array_append_new(kept, j);
  return j;
}

/* The spec's frames as rows (bundle_read.h). Borrowed. */
static json_t *rows_of(json_t *spec) {
  return keep(frames_of(spec));
}

/* The bundle's SVG, from its markdown item. Borrowed. */
static const char *svg_text(json_t *bundle) {
  char *svg = svg_of(bundle);
  const char *s = svg ? json_string_value(keep(json_string(svg))) : NULL;
  free(svg);
  return s;
}

/* The row of the drawn frame named func, or NULL. Borrowed. */
static json_t *row_named(json_t *spec, const char *func) {
  size_t i;
  json_t *rows = rows_of(spec), *row;
  json_array_foreach(rows, i, row) {
    const char *s = json_string_value(json_object_get(row, "func"));
    if (s && strcmp(s, func) == 0) return row;
  }
  return NULL;
}

static const char *str_of(json_t *obj, const char *key) {
  const char *s = json_string_value(json_object_get(obj, key));
  return s ? s : "";
}

typedef struct rgb {
  int r, g, b;
} rgb_t;

static rgb_t rgb_of(const char *hex) {
  rgb_t c = {-1, -1, -1};
  if (hex && strlen(hex) == 7 && hex[0] == '#') sscanf(hex + 1, "%2x%2x%2x", &c.r, &c.g, &c.b);
  return c;
}

/* How far from grey: max - min of the channels. */
static int chroma_of(rgb_t c) {
  int hi = c.r > c.g ? (c.r > c.b ? c.r : c.b) : (c.g > c.b ? c.g : c.b);
  int lo = c.r < c.g ? (c.r < c.b ? c.r : c.b) : (c.g < c.b ? c.g : c.b);
  return hi - lo;
}

static const char *change_name(fl_change_t c) {
  switch (c) {
    case FL_CHANGE_GREW: return "grew";
    case FL_CHANGE_SHRANK: return "shrank";
    case FL_CHANGE_NEW: return "new";
    case FL_CHANGE_VANISHED: return "vanished";
    case FL_CHANGE_SAME: break;
  }
  return "same";
}

/* Checks every row against the diff: the plain fields against the drawn
 * tree, base, delta and change against fl_diff_node, and the colour
 * against the change: grey, teal, red (r over g = b) or blue (b over g over
 * r), with a chroma that never falls as |delta| grows, reaching the full
 * colour at fl_diff_max_delta. */
static size_t n_merged_rows; /* merged frames check_diff_rows saw */

static void check_diff_rows(json_t *spec, const fl_diff_t *d) {
  const fl_tree_t *t = fl_diff_tree(d);
  json_t *rows = rows_of(spec);
  CHECK(json_is_array(rows) && json_array_size(rows) >= 1 && json_array_size(rows) <= 5000);
  bool self = fl_diff_options(d)->delta == FL_DELTA_SELF;
  double max = fl_diff_max_delta(d);
  /* (|delta|, chroma) of the grew and shrank rows, to check the order. */
  size_t n = json_array_size(rows), n_changed = 0;
  double *mags = calloc(n + 1, sizeof *mags);
  int *chromas = calloc(n + 1, sizeof *chromas);
  size_t i;
  json_t *row;
  json_array_foreach(rows, i, row) {
    const fl_node_t *node = fl_tree_node(t, (size_t)json_integer_value(json_object_get(row, "id")));
    const fl_diff_node_t *dn;
    if (json_integer_value(json_object_get(row, "status")) & FL_STATUS_MERGED) {
      /* A merged frame: its parent's narrow children, their diff summed. */
      const fl_node_t *parent =
          fl_tree_node(t, (size_t)json_integer_value(json_object_get(row, "parent")));
      const fl_narrow_t *items;
      uint64_t weight = 0;
      CHECK(parent && fl_tree_narrow(t, parent, &items, &weight) > 0);
      if (!parent) continue;
      CHECK_INT(json_integer_value(json_object_get(row, "count")), weight);
      dn = fl_diff_narrow(d, parent->id);
      n_merged_rows++;
    } else {
      CHECK(node != NULL);
      if (!node) continue;
      dn = fl_diff_node(d, node->id);
      CHECK_INT(json_integer_value(json_object_get(row, "count")), node->count);
      CHECK_STR(str_of(row, "func"), node->frame.func);
    }
    json_t *base = json_object_get(row, "base");
    CHECK(base != NULL);
    CHECK(dn->has_base ? json_is_number(base) : json_is_null(base));
    if (dn->has_base) CHECK(fabs(json_number_value(base) - dn->base) < 1e-3);
    CHECK(json_is_number(json_object_get(row, "delta")));
    CHECK(fabs(json_number_value(json_object_get(row, "delta")) - dn->delta) < 1e-3);
    CHECK(self == (json_object_get(row, "base_self") != NULL));
    CHECK_STR(str_of(row, "change"), change_name(dn->change));
    const char *color = str_of(row, "color");
    rgb_t c = rgb_of(color);
    CHECK(c.r >= 0);
    switch (dn->change) {
      case FL_CHANGE_SAME: CHECK_STR(color, SAME_COLOR); break;
      case FL_CHANGE_NEW: CHECK_STR(color, NEW_COLOR); break;
      case FL_CHANGE_VANISHED: CHECK(!"a drawn frame is never vanished"); break;
      case FL_CHANGE_GREW: CHECK(c.r > c.g && c.g == c.b); break;
      case FL_CHANGE_SHRANK: CHECK(c.b > c.g && c.g > c.r); break;
    }
    if (dn->change == FL_CHANGE_GREW || dn->change == FL_CHANGE_SHRANK) {
      mags[n_changed] = fabs(dn->delta);
      chromas[n_changed++] = chroma_of(c);
      if (fabs(fabs(dn->delta) - max) < 1e-9)
        CHECK_STR(color, dn->change == FL_CHANGE_GREW ? GREW_COLOR : SHRANK_COLOR);
      CHECK(chroma_of(c) >= 0.15 * chroma_of(rgb_of(GREW_COLOR))); /* never near grey */
    }
  }
  /* One scale for both: a bigger |delta| is never paler, red or blue. */
  for (size_t a = 0; a < n_changed; a++)
    for (size_t b = 0; b < n_changed; b++)
      if (mags[a] > mags[b] + 1e-9 && chromas[a] + 1 < chromas[b]) {
        fprintf(stderr, "|delta| %g has chroma %d, |delta| %g has %d\n", mags[a], chromas[a],
                mags[b], chromas[b]);
        CHECK(0);
      }
  free(mags);
  free(chromas);
}

/* The diff legend names the four changes in order, in their colours, and
 * says what the colours measure. */
static void check_legend(json_t *spec, bool negate) {
  json_t *legend = layer_named(spec, "legend");
  CHECK(legend != NULL);
  json_t *color = json_object_get(json_object_get(legend, "encoding"), "color");
  json_t *scale = json_object_get(color, "scale");
  json_t *domain = json_object_get(scale, "domain"), *range = json_object_get(scale, "range");
  static const char *const names[] = {"grew", "shrank", "same", "new"};
  static const char *const colors[] = {GREW_COLOR, SHRANK_COLOR, SAME_COLOR, NEW_COLOR};
  CHECK_INT(json_array_size(domain), 4);
  for (size_t i = 0; i < 4; i++) {
    const char *label = json_string_value(json_array_get(domain, i));
    CHECK(label && strncmp(label, names[i], strlen(names[i])) == 0);
    CHECK_STR(json_string_value(json_array_get(range, i)), colors[i]);
  }
  const char *title = str_of(json_object_get(color, "legend"), "title");
  CHECK_STR(title,
            negate ? "baseline " MINUS " target (baseline layout)" : "target " MINUS " baseline");
}

/* The title's lines (text and subtitle), joined by newlines. New. */
static char *title_lines(json_t *spec) {
  json_t *title = json_object_get(spec, "title");
  size_t size = 1;
  char *s = calloc(1, 1);
  const char *text = str_of(title, "text");
  size_t i;
  json_t *line;
  s = realloc(s, size += strlen(text) + 1);
  strcat(strcat(s, text), "\n");
  json_array_foreach(json_object_get(title, "subtitle"), i, line) {
    const char *l = json_string_value(line);
    s = realloc(s, size += strlen(l) + 1);
    strcat(strcat(s, l), "\n");
  }
  return s;
}

/* The vanished layer lists what fl_diff_vanished says, widest first, after
 * its header, at most 20 of them and "… and K more". */
static void check_vanished_layer(json_t *spec, const fl_diff_t *d) {
  const fl_vanished_t *vanished;
  size_t n = fl_diff_vanished(d, &vanished);
  json_t *layer = layer_named(spec, "vanished");
  CHECK((layer != NULL) == (n > 0));
  json_t *meta =
      json_object_get(json_object_get(json_object_get(spec, "usermeta"), "cflame"), "diff");
  CHECK_INT(json_integer_value(json_object_get(meta, "vanished")), n);
  if (!layer) return;
  json_t *values = json_object_get(json_object_get(layer, "data"), "values");
  size_t shown = n < 20 ? n : 20;
  CHECK_INT(json_array_size(values), 1 + shown + (n > shown));
  CHECK_STR(str_of(json_array_get(values, 0), "text"), fl_diff_options(d)->negate
                                                           ? "Only in the target (not drawn):"
                                                           : "Vanished (in the baseline only):");
  for (size_t i = 0; i < shown; i++) {
    json_t *row = json_array_get(values, i + 1);
    json_t *func = json_string(vanished[i].node->frame.func); /* NULL: not UTF-8 */
    if (func) CHECK_STR(str_of(row, "func"), json_string_value(func));
    json_decref(func);
    CHECK(fabs(json_number_value(json_object_get(row, "count")) - vanished[i].count) < 1e-3);
    const char *text = str_of(row, "text"), *name = str_of(row, "func");
    CHECK(name[0] && strncmp(text, name, strlen(name)) == 0);
    CHECK(strstr(str_of(row, "text"),
                 fl_diff_options(d)->negate ? "\xe2\x80\x94 target " : "\xe2\x80\x94 baseline "));
    if (i) CHECK(vanished[i].count <= vanished[i - 1].count);
  }
  if (n > shown) {
    /* "… and 1,234 more" */
    const char *more = str_of(json_array_get(values, shown + 1), "text");
    CHECK(strncmp(more, "\xe2\x80\xa6 and ", 8) == 0 && strstr(more, " more"));
    size_t k = 0;
    for (const char *c = more + 8; *c && *c != ' '; c++)
      if (*c != ',') k = 10 * k + (size_t)(*c - '0');
    CHECK_INT(k, n - shown);
  }
  /* The frames stay the main data: no vanished frame among the rows. */
  size_t i;
  json_t *rows = rows_of(spec), *row;
  json_array_foreach(rows, i, row) CHECK(json_object_get(row, "text") == NULL);
}

/* One titled frame (a path) per row, in the row's colour. */
static void check_svg(const char *svg, json_t *spec) {
  const char *why = svg ? xml_check(svg) : "no SVG";
  if (why) fprintf(stderr, "SVG: %s\n", why);
  CHECK(why == NULL);
  if (!svg) return;
  const char *titles = svg_titles_problem(svg);
  if (titles) fprintf(stderr, "SVG: %s\n", titles);
  CHECK(titles == NULL);
  CHECK_INT(count_of(svg, "<title>"), n_frames(spec));
  const char *problem = svg_frames_problem(svg, spec);
  if (problem) fprintf(stderr, "SVG: %s\n", problem);
  CHECK(problem == NULL);
}

/* ---- tests ---- */

static void test_small(void) {
  fl_profile_t *base = profile(FL_PROFILE_CPU, 1000000), *target = profile(FL_PROFILE_CPU, 1000000);
  baseline_of(base, 1);
  target_of(target, 1);
  fl_diff_opts_t o;
  fl_diff_opts_init(&o);
  fl_diff_t *d = diff_of(target, base, &o, 0);
  if (!d) goto done;
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.title = "cell[2] against baseline before";
  v.note = "602 samples at 1 ms";
  char err[256] = "";

  json_t *spec = fl_vegalite_diff(d, &v, err, sizeof err);
  CHECK(spec != NULL);
  if (!spec) goto done;
  CHECK_STR(str_of(spec, "$schema"), "https://vega.github.io/schema/vega-lite/v5.json");
  CHECK_INT(n_frames(spec), fl_tree_n_nodes(fl_diff_tree(d)));
  check_diff_rows(spec, d);
  /* What fl_diff says about these frames, as the rows carry it. */
  CHECK_STR(str_of(row_named(spec, "work"), "change"), "grew");
  CHECK_STR(str_of(row_named(spec, "parse"), "change"), "shrank");
  CHECK_STR(str_of(row_named(spec, "cmp"), "change"), "same");
  CHECK_STR(str_of(row_named(spec, "memcpy"), "change"), "new");
  CHECK(json_is_null(json_object_get(row_named(spec, "memcpy"), "base")));
  CHECK_INT(json_integer_value(json_object_get(row_named(spec, "work"), "base")), 100);
  CHECK_INT(json_integer_value(json_object_get(row_named(spec, "work"), "delta")), 200);
  CHECK(row_named(spec, "strlen") == NULL && row_named(spec, "tokenize") == NULL);
  check_legend(spec, false);
  check_vanished_layer(spec, d);
  /* Labels, search, pan and zoom are the plain graph's. */
  CHECK(layer_named(spec, "frames") && layer_named(spec, "labels") && layer_named(spec, "share"));
  CHECK_STR(str_of(json_array_get(json_object_get(spec, "params"), 0), "name"), "search");

  /* The tooltip: target, baseline (or "new"), delta with its share, change. */
  const char *tooltip = tooltip_expr(spec);
  CHECK(tooltip != NULL);
  const char *want[] = {"'function':", "'file:line':", "'module':", "'target':",
                        "'baseline':", "'new'",        "'delta':",  "% of the target)",
                        "'change':",   "'folded in'"};
  const char *at = tooltip;
  for (size_t i = 0; i < FL__ARRAY_SIZE(want); i++) {
    at = at ? strstr(at, want[i]) : NULL;
    if (!at) fprintf(stderr, "tooltip lacks %s in order\n", want[i]);
    CHECK(at != NULL);
  }

  /* Notes: the caller's, then the summary. */
  char *lines = title_lines(spec);
  CHECK(strstr(lines, "602 samples at 1 ms\n") != NULL);
  CHECK(strstr(lines, "grew: 3 frames, shrank: 1, new: 1, vanished: 2; ") != NULL);
  CHECK(strstr(lines, "% of the target within noise") != NULL);
  CHECK(strstr(lines, "baseline layout") == NULL);
  free(lines);
  json_t *meta =
      json_object_get(json_object_get(json_object_get(spec, "usermeta"), "cflame"), "diff");
  CHECK(json_is_false(json_object_get(meta, "negate")));
  CHECK_STR(str_of(meta, "delta"), "total");
  CHECK_STR(str_of(json_object_get(meta, "colors"), "same"), SAME_COLOR);
  CHECK_STR(str_of(json_object_get(meta, "colors"), "new"), NEW_COLOR);
  CHECK(json_number_value(json_object_get(meta, "max_delta")) == fl_diff_max_delta(d));
  write_out("diff-small.vl.json", spec);

  /* The SVG: the rows' colours, the diff's titles, legend and list. */
  char *svg = fl_svg_diff(d, &v);
  check_svg(svg, spec);
  if (svg) {
    CHECK(strstr(svg,
                 "<title>work\ncell[1]:5\ntarget: 300 samples (49.83%)\n"
                 "baseline: 100 samples (19.61%)\n"
                 "delta: +200 samples (+33.2% of the target), grew</title>") != NULL);
    CHECK(strstr(svg, "\nbaseline: new\n") != NULL);
    CHECK(strstr(svg, ">target " MINUS " baseline:</text>") != NULL);
    CHECK(strstr(svg, ">same (within noise)</text>") != NULL);
    CHECK(strstr(svg, ">Vanished (in the baseline only):</text>") != NULL);
    CHECK(strstr(svg,
                 "xml:space='preserve'>tokenize  cell[1]:20  \xe2\x80\x94 baseline 60 samples "
                 "(11.8%)</text>"));
    CHECK(strstr(svg, ">strlen  libc.so.6  \xe2\x80\x94 baseline 50 samples (9.8%)</text>"));
    CHECK(strstr(svg, "grew: 3 frames, shrank: 1, new: 1, vanished: 2; ") != NULL);
  }
  free(svg);

  /* The text report. */
  char *text = fl_text_diff(d, NULL);
  CHECK(text != NULL);
  if (text) {
    fputs(text, stderr);
    CHECK(strncmp(text, "Total: target 602 samples, baseline 510 samples (interval 1 ms)\n",
                  strlen("Total: target 602 samples, baseline 510 samples (interval 1 ms)\n")) ==
          0);
    CHECK(strstr(text, "  Target Baseline    Delta  Change  Frame\n") != NULL);
    CHECK(strstr(text, "     300      100     +200  grew        work  cell[1]:5\n") != NULL);
    CHECK(strstr(text, "      60        -      +60  new         memcpy  libc.so.6\n") != NULL);
    CHECK(strstr(text, "\nVanished (in the baseline only):\n  tokenize  cell[1]:20  ") != NULL);
    CHECK(strstr(text, "  strlen  libc.so.6  \xe2\x80\x94 baseline 50 samples (9.8%)\n") != NULL);
  }
  free(text);

  /* The bundle. */
  json_t *bundle = fl_diff_bundle(d, &v, err, sizeof err);
  CHECK(bundle != NULL);
  if (bundle) {
    json_t *bspec = json_object_get(bundle, VL_MIME);
    check_diff_rows(bspec, d);
    check_legend(bspec, false);
    check_vanished_layer(bspec, d);
    check_svg(svg_text(bundle), bspec);
    const char *btext = json_string_value(json_object_get(bundle, "text/plain"));
    CHECK(btext && strstr(btext, "Vanished (in the baseline only):") != NULL);
    CHECK(json_dumpb(bundle, NULL, 0, JSON_COMPACT) < 1000000);
    write_out("diff-small.json", bundle);
  }
  json_decref(bundle);
  json_decref(spec);
done:
  fl_diff_destroy(&d);
  fl_profile_destroy(&target);
  fl_profile_destroy(&base);
}

/* negate: the baseline's layout, coloured by baseline − target; frames only
 * in the baseline are "new", those only in the target listed. Dark icicle. */
static void test_negate(void) {
  fl_profile_t *base = profile(FL_PROFILE_CPU, 1000000), *target = profile(FL_PROFILE_CPU, 1000000);
  baseline_of(base, 1);
  target_of(target, 1);
  fl_diff_opts_t o;
  fl_diff_opts_init(&o);
  o.negate = true;
  fl_diff_t *d = diff_of(target, base, &o, 0);
  if (!d) goto done;
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.dark = true;
  v.icicle = true;
  char err[256] = "";
  json_t *bundle = fl_diff_bundle(d, &v, err, sizeof err);
  CHECK(bundle != NULL);
  if (!bundle) goto done;
  json_t *spec = json_object_get(bundle, VL_MIME);
  check_diff_rows(spec, d);
  CHECK_INT(json_integer_value(json_object_get(json_array_get(rows_of(spec), 0), "count")), 510);
  CHECK_STR(str_of(row_named(spec, "work"), "change"), "shrank");
  CHECK_STR(str_of(row_named(spec, "parse"), "change"), "grew");
  CHECK_STR(str_of(row_named(spec, "tokenize"), "change"), "new");
  CHECK_STR(str_of(row_named(spec, "strlen"), "change"), "new");
  CHECK(row_named(spec, "memcpy") == NULL);
  check_legend(spec, true);
  check_vanished_layer(spec, d);
  char *lines = title_lines(spec);
  CHECK(strstr(lines, "baseline layout, coloured by baseline " MINUS " target\n") != NULL);
  CHECK(strstr(lines, "% of the baseline within noise") != NULL);
  free(lines);
  const char *tooltip = tooltip_expr(spec);
  CHECK(tooltip && strstr(tooltip, "'baseline': format(datum.count") != NULL);
  CHECK(tooltip &&
        strstr(tooltip, "'target': datum.base === null ? 'none (only in the baseline)'"));
  const char *svg = svg_text(bundle);
  check_svg(svg, spec);
  CHECK(svg && strstr(svg, ">Only in the target (not drawn):</text>") != NULL);
  CHECK(svg && strstr(svg, ">memcpy  libc.so.6  \xe2\x80\x94 target 60 samples (9.97%)</text>"));
  CHECK(svg && strstr(svg, "fill='#1e1e1e'") != NULL);
  const char *text = json_string_value(json_object_get(bundle, "text/plain"));
  CHECK(text && strstr(text, "Total: baseline 510 samples, target 602 samples") == text);
  CHECK(text && strstr(text, "Baseline layout, coloured by baseline " MINUS " target\n"));
  CHECK(text && strstr(text, "Baseline   Target    Delta  Change  Frame\n") != NULL);
  write_out("diff-negate.json", bundle);
  json_decref(bundle);
done:
  fl_diff_destroy(&d);
  fl_profile_destroy(&target);
  fl_profile_destroy(&base);
}

/* Allocation diffs count bytes. */
static void test_alloc(void) {
  fl_profile_t *base = profile(FL_PROFILE_ALLOC_BYTES, 0),
               *target = profile(FL_PROFILE_ALLOC_BYTES, 0);
  baseline_of(base, 1024);
  target_of(target, 1024);
  fl_diff_opts_t o;
  fl_diff_opts_init(&o);
  fl_diff_t *d = diff_of(target, base, &o, 0);
  if (!d) goto done;
  char err[256] = "";
  json_t *bundle = fl_diff_bundle(d, NULL, err, sizeof err);
  CHECK(bundle != NULL);
  if (!bundle) goto done;
  json_t *spec = json_object_get(bundle, VL_MIME);
  check_diff_rows(spec, d);
  CHECK(json_object_get(json_array_get(rows_of(spec), 0), "allocs") != NULL);
  const char *tooltip = tooltip_expr(spec);
  CHECK(tooltip && strstr(tooltip,
                          "(abs(datum.count) === 1 ? ' byte' : ' bytes') + ' (' + "
                          "format(datum.pct") != NULL);
  CHECK(tooltip && strstr(tooltip, "'allocations': format(datum.allocs") != NULL);
  CHECK(tooltip && strstr(tooltip, "samples") == NULL);
  const char *svg = svg_text(bundle);
  check_svg(svg, spec);
  CHECK(svg && strstr(svg,
                      "target: 307,200 bytes (49.83%)\nbaseline: 102,400 bytes (19.61%)\n"
                      "delta: +204,800 bytes (+33.2% of the target), grew") != NULL);
  CHECK(svg && strstr(svg, "\xe2\x80\x94 baseline 51,200 bytes (9.8%)") != NULL);
  const char *text = json_string_value(json_object_get(bundle, "text/plain"));
  CHECK(text && strstr(text, "Total: target 602.0 KiB, baseline 510.0 KiB\n") == text);
  CHECK(text && strstr(text, "300.0 KiB  100.0 KiB  +200.0 KiB  grew        work") != NULL);
  write_out("diff-alloc.json", bundle);
  json_decref(bundle);
done:
  fl_diff_destroy(&d);
  fl_profile_destroy(&target);
  fl_profile_destroy(&base);
}

/* delta=self against a baseline sampled twice as often (counts halved:
 * fractional), with hostile names among the vanished frames. */
static void test_self_scaled_hostile(void) {
  fl_profile_t *base = profile(FL_PROFILE_CPU, 500000), *target = profile(FL_PROFILE_CPU, 1000000);
  baseline_of(base, 2);
  add(base, 41, "main:3;~operator<<&'\"]]>");
  add(base, 7, "main:3;~bad\xff\xfeutf8");
  target_of(target, 1);
  add(target, 9, "main:3;work:5;~caf\xc3\xa9_<new>");
  fl_diff_opts_t o;
  fl_diff_opts_init(&o);
  o.delta = FL_DELTA_SELF;
  fl_diff_t *d = diff_of(target, base, &o, 0);
  if (!d) goto done;
  CHECK(fl_diff_notes(d)[0] != NULL); /* the intervals differ */
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.title = "<script>self</script>";
  char err[256] = "";
  json_t *bundle = fl_diff_bundle(d, &v, err, sizeof err);
  CHECK(bundle != NULL);
  if (!bundle) goto done;
  char *dumped = json_dumps(bundle, JSON_COMPACT);
  CHECK(dumped != NULL); /* every string is valid UTF-8 */
  free(dumped);
  json_t *spec = json_object_get(bundle, VL_MIME);
  check_diff_rows(spec, d);
  check_vanished_layer(spec, d);
  /* A fractional baseline count, rounded to four decimals at most. */
  json_t *op = NULL;
  size_t i;
  json_t *row;
  json_array_foreach(
      json_object_get(json_object_get(layer_named(spec, "vanished"), "data"), "values"), i, row) {
    if (strstr(str_of(row, "func"), "operator<<")) op = row;
  }
  CHECK(op && fabs(json_number_value(json_object_get(op, "count")) - 20.5) < 1e-9);
  CHECK(op && strstr(str_of(op, "text"), "\xe2\x80\x94 baseline 20.5 samples (") != NULL);
  char *lines = title_lines(spec);
  CHECK(strstr(lines, fl_diff_notes(d)[0]) != NULL);
  free(lines);
  const char *tooltip = tooltip_expr(spec);
  CHECK(tooltip && strstr(tooltip, "'baseline self':") != NULL);
  CHECK(tooltip && strstr(tooltip,
                          "' self' + (abs(datum.delta) === 1 ? ' sample' : ' samples') "
                          "+ ' (") != NULL);
  CHECK_STR(
      str_of(json_object_get(json_object_get(json_object_get(spec, "usermeta"), "cflame"), "diff"),
             "delta"),
      "self");
  const char *svg = svg_text(bundle);
  check_svg(svg, spec);
  CHECK(svg && strstr(svg, ">operator&lt;&lt;&amp;&apos;&quot;]]&gt;  libc.so.6  ") != NULL);
  /* The one script is the SVG's own (fl_svg_script.js). */
  CHECK(svg && strstr(svg, "&lt;script&gt;") != NULL && count_of(svg, "<script") == 1);
  const char *text = json_string_value(json_object_get(bundle, "text/plain"));
  CHECK(text && strstr(text, "; deltas of self counts\n") != NULL);
  write_out("diff-self-hostile.json", bundle);
  json_decref(bundle);
done:
  fl_diff_destroy(&d);
  fl_profile_destroy(&target);
  fl_profile_destroy(&base);
}

static void test_empty(void) {
  fl_profile_t *base = profile(FL_PROFILE_CPU, 1000000), *target = profile(FL_PROFILE_CPU, 1000000);
  fl_diff_opts_t o;
  fl_diff_opts_init(&o);
  fl_diff_t *d = diff_of(target, base, &o, 0.001);
  if (!d) goto done;
  char err[256] = "";
  json_t *bundle = fl_diff_bundle(d, NULL, err, sizeof err);
  CHECK(bundle != NULL);
  if (bundle) {
    json_t *spec = json_object_get(bundle, VL_MIME);
    CHECK_INT(n_frames(spec), 1);
    check_diff_rows(spec, d);
    CHECK(layer_named(spec, "vanished") == NULL);
    check_svg(svg_text(bundle), spec);
    write_out("diff-empty.json", bundle);
  }
  json_decref(bundle);
done:
  fl_diff_destroy(&d);
  fl_profile_destroy(&target);
  fl_profile_destroy(&base);
}

/* Thousands of distinct stacks over a few hundred functions; variant 1
 * shifts some weights and swaps some functions for others, so the diff
 * has frames of every change and dozens vanished. */
static fl_profile_t *big_profile(int variant) {
  fl_profile_t *p = profile(FL_PROFILE_CPU, 1000000);
  enum { N_FUNCS = 300, N_STACKS = 20000 };
  rng_state = RNG_SEED;
  uint32_t funcs[N_FUNCS + 40];
  for (int i = 0; i < N_FUNCS + 40; i++) {
    char name[64];
    /* Functions past N_FUNCS stand in for some in variant 1 only. */
    snprintf(name, sizeof name, "%s_%03d", i < N_FUNCS ? "function" : "renamed", i);
    fl_frame_t f = {.func = name,
                    .file = "cell[1]",
                    .line = 1 + i,
                    .module = "cell[1]",
                    .flags = i % 4 ? FL_FRAME_CELL : FL_FRAME_SYSTEM};
    if (f.flags == FL_FRAME_SYSTEM) f.file = NULL, f.line = 0, f.module = "libbig.so";
    funcs[i] = fl_profile_frame_id(p, &f);
  }
  uint32_t stack[48];
  for (int s = 0; s < N_STACKS; s++) {
    size_t n = 0, depth = 2 + rng() % 30;
    uint64_t path = rng() % 5;
    for (size_t k = 0; k < depth; k++) {
      uint64_t pick = k < 3 ? (path * 11 + k) % N_FUNCS : rng() % N_FUNCS;
      if (variant && k >= 3 && pick % 37 == 0) pick = N_FUNCS + pick % 40;
      stack[n++] = funcs[pick];
    }
    uint64_t w = 1 + rng() % 20;
    if (variant && path == 2) w = w * 3; /* a hot path that grew */
    if (variant && path == 4) w = (w + 1) / 3;
    fl_profile_add_sample(p, stack, n, w, 0, 1);
  }
  return p;
}

/* A diff with minwidth draws each parent's narrow frames merged, coloured
 * by their summed delta (check_diff_rows), in the spec and the SVG alike. */
static void test_merged(void) {
  fl_profile_t *base = big_profile(0), *target = big_profile(1);
  fl_diff_opts_t o;
  fl_diff_opts_init(&o);
  fl_diff_t *d = diff_of(target, base, &o, 0.002);
  if (!d) goto done;
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.title = "diff, merged";
  char err[256] = "";
  json_t *bundle = fl_diff_bundle(d, &v, err, sizeof err);
  CHECK(bundle != NULL);
  if (bundle) {
    json_t *bspec = json_object_get(bundle, VL_MIME);
    n_merged_rows = 0;
    check_diff_rows(bspec, d);
    CHECK(n_merged_rows > 0);
    check_svg(svg_text(bundle), bspec);
    char *lines = title_lines(bspec);
    CHECK(strstr(lines, "narrow frames merged into") != NULL);
    free(lines);
    CHECK(strstr(svg_text(bundle), "\nof the narrow frames, the widest:\n") != NULL);
    write_out("diff-merged.json", bundle);
  }
  json_decref(bundle);
done:
  fl_diff_destroy(&d);
  fl_profile_destroy(&target);
  fl_profile_destroy(&base);
}

static void test_big(void) {
  fl_profile_t *base = big_profile(0), *target = big_profile(1);
  fl_diff_opts_t o;
  fl_diff_opts_init(&o);
  fl_diff_t *d = diff_of(target, base, &o, 0);
  if (!d) goto done;
  const fl_vanished_t *vanished;
  size_t n_vanished = fl_diff_vanished(d, &vanished);
  fprintf(stderr, "big diff: %zu drawn nodes, %zu vanished\n", fl_tree_n_nodes(fl_diff_tree(d)),
          n_vanished);
  CHECK(fl_tree_n_nodes(fl_diff_tree(d)) > 5000);
  CHECK(n_vanished > 20);
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  v.title = "big diff";
  char err[256] = "";
  json_t *spec = fl_vegalite_diff(d, &v, err, sizeof err);
  CHECK(spec != NULL);
  if (spec) {
    CHECK_INT(n_frames(spec), 5000);
    check_diff_rows(spec, d);
    check_vanished_layer(spec, d);
    char *lines = title_lines(spec);
    CHECK(strstr(lines, "left out to draw at most 5,000") != NULL);
    free(lines);
    fprintf(stderr, "big diff spec: %zu bytes\n", json_dumpb(spec, NULL, 0, JSON_COMPACT));
  }
  json_decref(spec);
  char *svg = fl_svg_diff(d, &v);
  CHECK(svg && xml_check(svg) == NULL);
  CHECK(svg && count_of(svg, "<title>") == 5000);
  free(svg);
  json_t *bundle = fl_diff_bundle(d, &v, err, sizeof err);
  CHECK(bundle != NULL);
  if (bundle) {
    size_t bytes = json_dumpb(bundle, NULL, 0, JSON_COMPACT);
    json_t *bspec = json_object_get(bundle, VL_MIME);
    size_t n = n_frames(bspec);
    fprintf(stderr, "big diff bundle: %zu bytes, %zu rows\n", bytes, n);
    CHECK(bytes < 1000000);
    CHECK(n <= 5000 && n >= 1000);
    check_diff_rows(bspec, d);
    check_vanished_layer(bspec, d);
    check_svg(svg_text(bundle), bspec);
    const char *text = json_string_value(json_object_get(bundle, "text/plain"));
    CHECK(text && strstr(text, "more lines\n") != NULL);
    CHECK(text && strstr(text, "  \xe2\x80\xa6 and ") != NULL);
    write_out("diff-big.json", bundle);
  }
  json_decref(bundle);
done:
  fl_diff_destroy(&d);
  fl_profile_destroy(&target);
  fl_profile_destroy(&base);
}

int main(int argc, char **argv) {
  if (out_dir_init(argc, argv) < 0) return 1;
  test_small();
  test_negate();
  test_alloc();
  test_self_scaled_hostile();
  test_empty();
  test_big();
  test_merged();
  json_decref(kept);
  return TEST_DONE();
}
