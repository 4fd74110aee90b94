/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_top_diff: the top table of a diff (view=top with a baseline): the
 * functions whose weight changed most, as text, Vega-Lite and SVG.
 *
 * The rows, their weights, deltas and changes are the diff's own
 * (fl_diff_functions): functions paired as the graph pairs their frames,
 * by the graph's noise rule, so the table and the graph never disagree on
 * what is new, vanished, grew or shrank. This file only sorts them by
 * |delta|, the largest first, ties by name, and draws the first
 * FL_TOP_ROWS in the diff's colours. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__table.h"

#define ROW_PX 18.0
#define BAR_PX 14.0
enum { X_DELTA = 80, X_DRAWN = 160, X_OTHER = 240, X_CHANGE = 252, X_BARS = 310, BARS_PX = 150 };
enum { X_FUNC = 470 };

typedef fl_diff_func_t drow_t;

#define N_HEADS 5

typedef struct dtop {
  const fl_diff_t *d;
  const fl_tree_t *t;
  drow_t *rows;
  size_t n;
  double total, other_total;
  double max; /* the largest |delta| drawn */
  bool self;
  fl_view_opts_t defaults;
  const fl_view_opts_t *v; /* the caller's, or the defaults */
  char notes[FL__MAX_NOTES][FL__NOTE_SIZE];
  int n_notes;
  char drawn[32], other[32]; /* "Target", "Baseline" */
  fl__table_head_t heads[N_HEADS];
} dtop_t;

static int cmp_abs_delta(const void *pa, const void *pb) {
  const drow_t *a = pa, *b = pb;
  if (fabs(a->delta) != fabs(b->delta)) return fabs(a->delta) > fabs(b->delta) ? -1 : 1;
  int c = fl__cmp_str(a->frame->func, b->frame->func);
  if (!c) c = fl__cmp_str(a->frame->file, b->frame->file);
  return c ? c : fl__cmp_str(a->frame->module, b->frame->module);
}

static size_t shown(const dtop_t *dt);
static void heading(const dtop_t *dt, char *out, size_t size);

/* The rows of d, and what the drawings need (v NULL: the defaults). */
static void dtop_init(dtop_t *dt, const fl_diff_t *d, const fl_view_opts_t *v) {
  *dt = (dtop_t){.d = d, .t = fl_diff_tree(d)};
  v = fl__view_opts(v, &dt->defaults);
  dt->v = v;
  dt->self = fl_diff_options(d)->delta == FL_DELTA_SELF;
  const fl_diff_func_t *funcs;
  dt->n = fl_diff_functions(d, &funcs);
  dt->rows = fl__xmalloc(dt->n + 1, sizeof *dt->rows);
  if (dt->n) memcpy(dt->rows, funcs, dt->n * sizeof *dt->rows);
  qsort(dt->rows, dt->n, sizeof *dt->rows, cmp_abs_delta);
  dt->total = (double)fl_tree_root(dt->t)->count;
  dt->other_total = fl__other_total(d);
  for (size_t k = 0; k < shown(dt); k++) dt->max = fmax(dt->max, fabs(dt->rows[k].delta));
  char line[300];
  heading(dt, line, sizeof line);
  const char *lines[1] = {line};
  dt->n_notes = fl__view_notes(v, lines, 1, dt->notes);
  fl__capitalized(dt->drawn, sizeof dt->drawn, fl__drawn_name(d));
  fl__capitalized(dt->other, sizeof dt->other, fl__other_name(d));
  const fl__table_head_t heads[N_HEADS] = {{"Delta", X_DELTA, true},
                                           {dt->drawn, X_DRAWN, true},
                                           {dt->other, X_OTHER, true},
                                           {"Change", X_CHANGE, false},
                                           {"Function", X_FUNC, false}};
  memcpy(dt->heads, heads, sizeof heads);
}

static size_t shown(const dtop_t *dt) {
  return dt->n < FL_TOP_ROWS ? dt->n : FL_TOP_ROWS;
}

/* "Top changes: the first 50 of 37 functions by |delta| of total weight
 * (target − baseline)". */
static void heading(const dtop_t *dt, char *out, size_t size) {
  const fl_diff_opts_t *o = fl_diff_options(dt->d);
  snprintf(out, size, "Top changes: %s %zu of %zu functions by the change of their %s %s (%s)",
           dt->n > FL_TOP_ROWS ? "the first" : "all", shown(dt), dt->n, dt->self ? "self" : "total",
           fl__unit(dt->t),
           o->negate ? "baseline \xe2\x88\x92 target" : "target \xe2\x88\x92 baseline");
}

/* ---- text ---- */

char *fl_text_top_diff(const fl_diff_t *d, const fl_text_opts_t *o) {
  (void)o;
  dtop_t dt;
  dtop_init(&dt, d, NULL);
  fl__buf_t out = {0};
  char a[48], b[48], line[300];
  fl__amount(dt.total, false, a);
  fl__amount(dt.other_total, false, b);
  fl__buf_printf(&out, "Total: %s %s %s, %s %s %s\n", fl__drawn_name(d), a, fl__unit(dt.t),
                 fl__other_name(d), b, fl__unit(dt.t));
  for (const char *const *note = fl_diff_notes(d); note && *note; note++)
    fl__buf_printf(&out, "%s\n", *note);
  heading(&dt, line, sizeof line);
  fl__buf_printf(&out, "%s\n\n%10s %10s %10s  %-8s  Function  File\n", line, "Delta", dt.drawn,
                 dt.other, "Change");
  for (size_t i = 0; i < shown(&dt); i++) {
    const drow_t *r = &dt.rows[i];
    char delta[48], x[48], y[48];
    fl__amount(r->delta, true, delta);
    fl__amount(dt.self ? r->self : r->total, false, x);
    fl__amount(dt.self ? r->base_self : r->base_total, false, y);
    const char *where = r->frame->file ? r->frame->file : r->frame->module;
    fl__buf_printf(&out, "%10s %10s %10s  %-8s  %s%s%s\n", delta,
                   r->change == FL_CHANGE_VANISHED ? "-" : x, r->change == FL_CHANGE_NEW ? "-" : y,
                   fl__change_name(r->change), r->frame->func ? r->frame->func : "[unknown]",
                   where ? "  " : "", where ? where : "");
  }
  free(dt.rows);
  return fl__buf_take(&out);
}

/* ---- Vega-Lite ---- */

json_t *fl_top_diff_vegalite(const fl_diff_t *d, const fl_view_opts_t *view) {
  dtop_t dt;
  dtop_init(&dt, d, view);
  const fl_view_opts_t *v = dt.v;
  const fl__theme_t *th = fl__theme_of(v);
  double max = dt.max;
  json_t *values = fl__nonnull(json_array());
  for (size_t i = 0; i < shown(&dt); i++) {
    const drow_t *r = &dt.rows[i];
    json_t *o = fl__nonnull(
        json_pack("{s:I,s:o,s:f,s:f,s:f,s:f,s:f,s:s,s:s}", "rank", (json_int_t)(i + 1), "func",
                  fl__json_text(r->frame->func ? r->frame->func : "[unknown]"), "self", r->self,
                  "total", r->total, "base_self", r->base_self, "base_total", r->base_total,
                  "delta", round(r->delta * 100) / 100, "change", fl__change_name(r->change),
                  "color", fl__change_color(r->change)));
    if (r->frame->file) json_object_set_new(o, "file", fl__json_text(r->frame->file));
    if (r->frame->module) json_object_set_new(o, "module", fl__json_text(r->frame->module));
    json_array_append_new(values, o);
  }
  char expr[600];
  json_t *tr = fl__nonnull(json_array());
  snprintf(expr, sizeof expr, "100 * abs(datum.delta) / %.17g", max > 0 ? max : 1);
  json_array_append_new(tr, fl__vl_calculate(expr, "size"));
  json_array_append_new(tr, fl__vl_calculate("(datum.delta > 0 ? '+' : '') + "
                                             "format(datum.delta, ',.2~f')",
                                             "deltas"));
  snprintf(expr, sizeof expr, "datum.change === 'vanished' ? '-' : format(datum.%s, ',.2~f')",
           dt.self ? "self" : "total");
  json_array_append_new(tr, fl__vl_calculate(expr, "xs"));
  snprintf(expr, sizeof expr, "datum.change === 'new' ? '-' : format(datum.%s, ',.2~f')",
           dt.self ? "base_self" : "base_total");
  json_array_append_new(tr, fl__vl_calculate(expr, "ys"));
  json_array_append_new(tr, fl__vl_calculate("datum.file ? datum.func + '  ' + datum.file : "
                                             "datum.module ? datum.func + '  ' + datum.module : "
                                             "datum.func",
                                             "name"));
  snprintf(expr, sizeof expr,
           "{'function': datum.func, 'file': datum.file, '%s': datum.xs + ' %s', '%s': datum.ys, "
           "'delta': datum.deltas, 'change': datum.change}",
           fl__drawn_name(d), fl__unit(dt.t), fl__other_name(d));
  json_array_append_new(tr, fl__vl_calculate(expr, "tip"));
  fl__table_t tb = {.th = th, .y_field = "rank", .row_px = ROW_PX, .bar_px = BAR_PX};
  int width = v->width > X_FUNC + 100 ? v->width : X_FUNC + 100;
  const fl__table_column_t columns[] = {
      {.field = "deltas", .x = X_DELTA, .right = true},
      {.field = "xs", .x = X_DRAWN, .right = true},
      {.field = "ys", .x = X_OTHER, .right = true},
      {.field = "change", .x = X_CHANGE},
      {.field = "name", .x = X_FUNC, .limit = width - X_FUNC},
  };
  json_t *rows_layer = fl__nonnull(json_array());
  json_array_append_new(rows_layer,
                        fl__table_bar(&tb, "size", NULL, "color", NULL, X_BARS, BARS_PX));
  for (size_t i = 0; i < FL__ARRAY_SIZE(columns); i++)
    json_array_append_new(rows_layer, fl__table_text(&tb, &columns[i]));
  json_t *layers = fl__nonnull(json_array());
  json_array_append_new(layers, fl__nonnull(json_pack("{s:{s:o},s:o,s:o}", "data", "values", values,
                                                      "transform", tr, "layer", rows_layer)));
  fl__table_headers(&tb, dt.heads, N_HEADS, layers);
  char description[200];
  snprintf(description, sizeof description, "Top changes of %s: %zu of %zu functions",
           fl_tree_root(dt.t)->frame.func, shown(&dt), dt.n);
  json_t *meta =
      fl__nonnull(json_pack("{s:s,s:b,s:s,s:f,s:f,s:I,s:I}", "view", "top", "diff", 1, "unit",
                            fl__unit(dt.t), "total", dt.total, "other_total", dt.other_total,
                            "functions", (json_int_t)dt.n, "rows", (json_int_t)shown(&dt)));
  json_t *spec =
      fl__table_spec(v, description, width, shown(&dt), ROW_PX, layers, meta, dt.notes, dt.n_notes);
  free(dt.rows);
  return spec;
}

/* ---- SVG ---- */

char *fl_top_diff_svg(const fl_diff_t *d, const fl_view_opts_t *view) {
  dtop_t dt;
  dtop_init(&dt, d, view);
  const fl_view_opts_t *v = dt.v;
  double max = dt.max;
  int width = v->width > X_FUNC + 100 ? v->width : X_FUNC + 100;
  fl__buf_t b = {0};
  fl__svg_table_t l;
  fl__svg_table_open(&b, v, dt.notes, dt.n_notes, width, shown(&dt), ROW_PX, &l);
  fl__svg_table_headers(&b, &l, dt.heads, N_HEADS);
  size_t name_chars = (size_t)((width - X_FUNC) / FL__TABLE_CHAR_PX);
  for (size_t i = 0; i < shown(&dt); i++) {
    const drow_t *r = &dt.rows[i];
    double mid = fl__svg_table_row_y(&l, i);
    char delta[48], x[48], y[48], *title, *name;
    fl__amount(r->delta, true, delta);
    fl__amount(dt.self ? r->self : r->total, false, x);
    fl__amount(dt.self ? r->base_self : r->base_total, false, y);
    const char *func = r->frame->func ? r->frame->func : "[unknown]";
    const char *where = r->frame->file ? r->frame->file : r->frame->module;
    if (r->change == FL_CHANGE_VANISHED) snprintf(x, sizeof x, "-");
    if (asprintf(&title, "%s\n%s %s %s, %s %s\ndelta %s (%s)", func, fl__drawn_name(d), x,
                 fl__unit(dt.t), fl__other_name(d), r->change == FL_CHANGE_NEW ? "-" : y, delta,
                 fl__change_name(r->change)) < 0 ||
        asprintf(&name, "%s%s%s", func, where ? "  " : "", where ? where : "") < 0)
      fl__oom(0);
    fl__svg_hbar(&b, fl__change_color(r->change), BAR_PX, l.x0 + X_BARS, mid,
                 max > 0 ? BARS_PX * fabs(r->delta) / max : 0, title);
    fl__buf_puts(&b, "\n");
    fl__svg_cell(&b, l.x0 + X_DELTA, mid, true, delta);
    fl__svg_cell(&b, l.x0 + X_DRAWN, mid, true, x);
    fl__svg_cell(&b, l.x0 + X_OTHER, mid, true, r->change == FL_CHANGE_NEW ? "-" : y);
    fl__svg_cell(&b, l.x0 + X_CHANGE, mid, false, fl__change_name(r->change));
    char *cut = fl__text_cut(name, name_chars);
    fl__svg_cell(&b, l.x0 + X_FUNC, mid, false, cut);
    free(cut);
    free(name);
    free(title);
  }
  fl__buf_puts(&b, "</g>\n</svg>\n");
  free(dt.rows);
  return fl__buf_take(&b);
}

json_t *fl_top_diff_bundle(const fl_diff_t *d, const fl_view_opts_t *v) {
  fl_view_opts_t defaults;
  v = fl__view_opts(v, &defaults);
  char *svg = fl_top_diff_svg(d, v), *report = fl_text_top_diff(d, NULL);
  json_t *bundle = fl__bundle_assemble(fl_top_diff_vegalite(d, v), svg, report, v);
  free(svg);
  free(report);
  return bundle;
}
