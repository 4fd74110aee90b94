/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_source_diff: the source view of a diff (view=source with a
 * baseline): each line with its weight in both profiles, the delta and its
 * change by the diff's noise rule, as text, Vega-Lite and SVG.
 *
 * The rows are fl__source's (the lines of both profiles, an edited cell's
 * realigned): a file row, line rows and gaps as in a profile's source, and
 * after a file's lines the lines of its other version that are gone
 * (REMOVED, shown with their old number as "was N"). A line's delta is of
 * total weight, or of self with delta=self, the other profile's weight
 * scaled into the drawn one's units; its bar is |delta| over the largest
 * drawn, in its change's colour. Lines without weight in either profile
 * are dimmed. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_diff.h"
#include "fl__source.h"

#define ROW_PX 16.0
#define BAR_PX 12.0
#define DIM_OPACITY 0.45

enum { X_DELTA = 70, X_DRAWN = 150, X_OTHER = 230, X_CHANGE = 242 };
enum { X_BARS = 300, BARS_PX = 100, X_LINE = 460, X_TEXT = 470 };

#define N_HEADS 6

typedef struct sdiff {
  fl__source_t s;
  bool self; /* deltas of self weight */
  double k;  /* other -> drawn units */
  fl_view_opts_t defaults;
  const fl_view_opts_t *v;
  char notes[FL__MAX_NOTES][FL__NOTE_SIZE];
  int n_notes;
  char drawn[32], other[32]; /* "Target", "Baseline" */
  fl__table_head_t heads[N_HEADS];
} sdiff_t;

/* Whether a row has weight in either profile. */
static bool weighs(const fl__src_row_t *r) {
  return r->total || r->base_total;
}

/* "Source changes: the change of each line's total samples (target −
 * baseline)" and what else the reader needs. */
static void heading(const sdiff_t *sd, char *out, size_t size) {
  const fl_diff_opts_t *o = fl_diff_options(sd->s.d);
  snprintf(out, size, "Source changes: the change of each line's %s %s (%s)%s%s",
           sd->self ? "self" : "total", fl__unit(sd->s.t),
           o->negate ? "baseline \xe2\x88\x92 target" : "target \xe2\x88\x92 baseline",
           sd->v->focus ? "; the files of " : "", sd->v->focus ? sd->v->focus : "");
}

/* "the baseline's lines moved to where they are in this version ..." */
static void more_line(const sdiff_t *sd, char *out, size_t size) {
  const fl__source_t *s = &sd->s;
  fl__buf_t b = {0};
  fl__buf_add(&b, "", 0);
  if (s->realigned)
    fl__buf_printf(&b, "the %s's lines are placed where they are in the %s's version of the file",
                   fl__other_name(s->d), fl__drawn_name(s->d));
  if (s->removed)
    fl__buf_printf(&b, "%s%zu line%s of the %s's version %s gone (\"was N\")", b.len ? "; " : "",
                   s->removed, s->removed == 1 ? "" : "s", fl__other_name(s->d),
                   s->removed == 1 ? "is" : "are");
  if (s->n_files > s->files_shown)
    fl__buf_printf(&b, "%s%zu of %zu files with self %s shown", b.len ? "; " : "", s->files_shown,
                   s->n_files, fl__unit(s->t));
  if (s->unreadable)
    fl__buf_printf(&b, "%s%zu file%s could not be read", b.len ? "; " : "", s->unreadable,
                   s->unreadable == 1 ? "" : "s");
  if (s->outside && b.len) fl__buf_puts(&b, "; ");
  fl__source_outside_note(s, &b);
  snprintf(out, size, "%s", b.data);
  fl__buf_free(&b);
}

/* Builds sd for d (v NULL: the defaults). -1 with err (a focus that names
 * nothing). */
static int sdiff_init(sdiff_t *sd, const fl_diff_t *d, const fl_view_opts_t *v,
                      const fl_source_reader_t *r, char *err, size_t err_size) {
  *sd = (sdiff_t){.self = fl_diff_options(d)->delta == FL_DELTA_SELF, .k = fl_diff_factor(d)};
  v = fl__view_opts(v, &sd->defaults);
  sd->v = v;
  if (fl__source_build(&sd->s, NULL, d, v, r, err, err_size) < 0) {
    fl__source_free(&sd->s);
    return -1;
  }
  char what[400], more[400];
  heading(sd, what, sizeof what);
  more_line(sd, more, sizeof more);
  const char *lines[2] = {what, more};
  sd->n_notes = fl__view_notes(v, lines, more[0] ? 2 : 1, sd->notes);
  fl__capitalized(sd->drawn, sizeof sd->drawn, fl__drawn_name(d));
  fl__capitalized(sd->other, sizeof sd->other, fl__other_name(d));
  const fl__table_head_t heads[N_HEADS] = {{"Delta", X_DELTA, true},   {sd->drawn, X_DRAWN, true},
                                           {sd->other, X_OTHER, true}, {"Change", X_CHANGE, false},
                                           {"Line", X_LINE, true},     {"Source", X_TEXT, false}};
  memcpy(sd->heads, heads, sizeof heads);
  return 0;
}

/* The row's drawn weight, its other weight in drawn units. */
static double drawn_of(const sdiff_t *sd, const fl__src_row_t *r) {
  return (double)(sd->self ? r->self : r->total);
}
static double other_of(const sdiff_t *sd, const fl__src_row_t *r) {
  return sd->k * (double)(sd->self ? r->base_self : r->base_total);
}

/* The cells of a line or removed row: delta, drawn, other, line. */
static void cells(const sdiff_t *sd, const fl__src_row_t *r, char delta[48], char x[48], char y[48],
                  char line[24]) {
  bool any = weighs(r);
  if (any)
    fl__amount(r->delta, true, delta);
  else
    snprintf(delta, 48, ".");
  if (r->kind == FL__SRC_REMOVED)
    snprintf(x, 48, "-");
  else if (any)
    fl__amount(drawn_of(sd, r), false, x);
  else
    snprintf(x, 48, ".");
  if (r->change == FL_CHANGE_NEW)
    snprintf(y, 48, "-");
  else if (any)
    fl__amount(other_of(sd, r), false, y);
  else
    snprintf(y, 48, ".");
  snprintf(line, 24, r->kind == FL__SRC_REMOVED ? "was %d" : "%d", r->line);
}

/* "cell[5]  self: target 900 samples, baseline 450". */
static void file_heading(const sdiff_t *sd, const fl__src_row_t *r, char *out, size_t size) {
  char x[48], y[48];
  fl__amount((double)r->self, false, x);
  fl__amount(sd->k * (double)r->base_self, false, y);
  snprintf(out, size, "%s  self: %s %s %s, %s %s", r->file, fl__drawn_name(sd->s.d), x,
           fl__unit(sd->s.t), fl__other_name(sd->s.d), y);
}

/* ---- text ---- */

static char *text_of(void *state) {
  sdiff_t *sd = state;
  const fl__source_t *s = &sd->s;
  fl__buf_t out = {0};
  char a[48], b[48], line[400];
  fl__amount((double)s->total, false, a);
  fl__amount(sd->k * (double)s->other_total, false, b);
  fl__buf_printf(&out, "Total: %s %s %s, %s %s %s\n", fl__drawn_name(s->d), a, fl__unit(s->t),
                 fl__other_name(s->d), b, fl__unit(s->t));
  for (const char *const *note = fl_diff_notes(s->d); note && *note; note++)
    fl__buf_printf(&out, "%s\n", *note);
  heading(sd, line, sizeof line);
  fl__buf_printf(&out, "%s\n", line);
  more_line(sd, line, sizeof line);
  if (line[0]) fl__buf_printf(&out, "(%s)\n", line);
  if (s->n == 0) fl__buf_puts(&out, "No sample has a source line.\n");
  for (size_t i = 0; i < s->n; i++) {
    const fl__src_row_t *r = &s->rows[i];
    if (r->kind == FL__SRC_FILE) {
      char h[600];
      file_heading(sd, r, h, sizeof h);
      fl__buf_printf(&out, "\n%s\n%10s %10s %10s  %-6s %8s  Source\n", h, "Delta", sd->drawn,
                     sd->other, "Change", "Line");
      continue;
    }
    if (r->kind == FL__SRC_GAP) {
      fl__buf_printf(&out, "%*s\xe2\x8b\xae\n", 10 + 1 + 10 + 1 + 10 + 2 + 6 + 1 + 8 + 2, "");
      continue;
    }
    char delta[48], x[48], y[48], ln[24];
    cells(sd, r, delta, x, y, ln);
    char *text = r->text ? fl__source_text(r->text, r->len) : NULL;
    fl__buf_printf(&out, "%10s %10s %10s  %-6s %8s  %s\n", delta, x, y,
                   weighs(r) ? fl__change_name(r->change) : "", ln, text ? text : "");
    free(text);
  }
  return fl__buf_take(&out);
}

/* ---- Vega-Lite ---- */

static json_t *row_value(const sdiff_t *sd, const fl__src_row_t *r, size_t i) {
  json_t *o = fl__nonnull(json_pack("{s:I,s:s,s:o}", "i", (json_int_t)i, "k",
                                    fl__source_kind_name(r->kind), "file", fl__json_text(r->file)));
  if (r->kind == FL__SRC_GAP) return o;
  char h[600];
  if (r->kind == FL__SRC_FILE) file_heading(sd, r, h, sizeof h);
  json_object_set_new(o, "self", json_integer((json_int_t)r->self));
  json_object_set_new(o, "total", json_integer((json_int_t)r->total));
  json_object_set_new(o, "base_self", json_real(round(sd->k * (double)r->base_self * 100) / 100));
  json_object_set_new(o, "base_total", json_real(round(sd->k * (double)r->base_total * 100) / 100));
  if (r->kind == FL__SRC_FILE) {
    json_object_set_new(o, "heading", fl__json_text(h));
    return o;
  }
  char delta[48], x[48], y[48], ln[24];
  cells(sd, r, delta, x, y, ln);
  char *text = r->text ? fl__source_text(r->text, r->len) : fl__xstrdup("");
  json_object_set_new(o, "line", json_integer(r->line));
  json_object_set_new(o, "ln", json_string(ln));
  json_object_set_new(o, "text", fl__json_text(text));
  json_object_set_new(o, "delta", json_real(round(r->delta * 100) / 100));
  json_object_set_new(o, "deltas", json_string(delta));
  json_object_set_new(o, "xs", json_string(x));
  json_object_set_new(o, "ys", json_string(y));
  json_object_set_new(o, "change", json_string(weighs(r) ? fl__change_name(r->change) : ""));
  json_object_set_new(o, "color", json_string(fl__change_color(r->change)));
  free(text);
  return o;
}

static json_t *transform(const sdiff_t *sd) {
  char expr[600];
  json_t *tr = fl__nonnull(json_array());
  snprintf(expr, sizeof expr, "100 * abs(datum.delta || 0) / %.17g",
           sd->s.max_delta > 0 ? sd->s.max_delta : 1);
  json_array_append_new(tr, fl__vl_calculate(expr, "size"));
  snprintf(expr, sizeof expr, "datum.change === '' ? %g : 1", DIM_OPACITY);
  json_array_append_new(tr, fl__vl_calculate(expr, "op"));
  json_array_append_new(tr, fl__source_src());
  json_array_append_new(tr, fl__source_indent(X_TEXT));
  snprintf(
      expr, sizeof expr,
      "{'file:line': datum.file + (datum.line ? ':' + datum.line : '') + (datum.k === 'removed' "
      "? ' (gone)' : ''), '%s': datum.xs ? datum.xs + ' %s' : datum.none, '%s': datum.ys, "
      "'delta': datum.deltas, 'change': datum.change}",
      fl__drawn_name(sd->s.d), fl__unit(sd->s.t), fl__other_name(sd->s.d));
  json_array_append_new(tr, fl__vl_calculate(expr, "tip"));
  return tr;
}

static json_t *vegalite_of(void *state) {
  sdiff_t *sd = state;
  const fl__source_t *s = &sd->s;
  const fl_view_opts_t *v = sd->v;
  const fl__theme_t *th = fl__theme_of(v);
  json_t *values = fl__nonnull(json_array());
  for (size_t i = 0; i < s->n; i++) json_array_append_new(values, row_value(sd, &s->rows[i], i));
  int width = fl__source_width(v, X_TEXT);
  fl__table_t tb = {.th = th, .y_field = "i", .row_px = ROW_PX, .bar_px = BAR_PX};
  const char *lines = "datum.k === 'line' || datum.k === 'removed'";
  const fl__table_column_t columns[] = {
      {.field = "deltas", .x = X_DELTA, .right = true, .filter = lines, .opacity_field = "op"},
      {.field = "xs", .x = X_DRAWN, .right = true, .filter = lines, .opacity_field = "op"},
      {.field = "ys", .x = X_OTHER, .right = true, .filter = lines, .opacity_field = "op"},
      {.field = "change", .x = X_CHANGE, .filter = lines, .opacity_field = "op"},
      {.field = "ln", .x = X_LINE, .right = true, .filter = lines, .opacity_field = "op"},
  };
  json_t *rows_layer = fl__nonnull(json_array());
  json_array_append_new(rows_layer,
                        fl__table_bar(&tb, "size", NULL, "color",
                                      "(datum.k === 'line' || datum.k === 'removed') && "
                                      "datum.change !== ''",
                                      X_BARS, BARS_PX));
  json_t *layers = fl__source_layers(&tb, columns, FL__ARRAY_SIZE(columns), width, X_TEXT,
                                     rows_layer, values, transform(sd), sd->heads, N_HEADS);
  char description[200];
  snprintf(description, sizeof description, "Source changes of %s: %zu rows of %zu files",
           fl_tree_root(s->t)->frame.func, s->n, s->files_shown);
  json_t *meta = fl__nonnull(json_pack(
      "{s:s,s:b,s:s,s:I,s:f,s:I,s:I,s:I}", "view", "source", "diff", 1, "unit", fl__unit(s->t),
      "total", (json_int_t)s->total, "other_total", sd->k * (double)s->other_total, "files",
      (json_int_t)s->n_files, "rows", (json_int_t)s->n, "removed", (json_int_t)s->removed));
  return fl__table_spec(v, description, width, s->n, ROW_PX, layers, meta, sd->notes, sd->n_notes);
}

/* ---- SVG ---- */

static char *svg_of(void *state) {
  sdiff_t *sd = state;
  const fl__source_t *s = &sd->s;
  const fl_view_opts_t *v = sd->v;
  int width = fl__source_width(v, X_TEXT);
  size_t text_chars = (size_t)((width - X_TEXT) / FL__TABLE_CHAR_PX);
  fl__buf_t b = {0};
  fl__svg_table_t l;
  fl__svg_table_open(&b, v, sd->notes, sd->n_notes, width, s->n, ROW_PX, &l);
  fl__svg_table_headers(&b, &l, sd->heads, N_HEADS);
  for (size_t i = 0; i < s->n; i++) {
    const fl__src_row_t *r = &s->rows[i];
    double mid = fl__svg_table_row_y(&l, i);
    char heading[600] = "";
    if (r->kind == FL__SRC_FILE) file_heading(sd, r, heading, sizeof heading);
    if (fl__source_svg_aside(&b, &l, r, mid, X_TEXT, heading)) continue;
    char delta[48], x[48], y[48], ln[24];
    cells(sd, r, delta, x, y, ln);
    bool any = weighs(r);
    if (!any) fl__buf_printf(&b, "<g opacity='%g'>\n", DIM_OPACITY);
    if (any) {
      char *title;
      if (asprintf(&title, "%s:%d%s\n%s %s %s, %s %s\ndelta %s (%s)", r->file, r->line,
                   r->kind == FL__SRC_REMOVED ? " (gone)" : "", fl__drawn_name(s->d), x,
                   fl__unit(s->t), fl__other_name(s->d), y, delta, fl__change_name(r->change)) < 0)
        fl__oom(0);
      fl__svg_hbar(&b, fl__change_color(r->change), BAR_PX, l.x0 + X_BARS, mid,
                   s->max_delta > 0 ? BARS_PX * fabs(r->delta) / s->max_delta : 0, title);
      fl__buf_puts(&b, "\n");
      free(title);
    }
    fl__svg_cell(&b, l.x0 + X_DELTA, mid, true, delta);
    fl__svg_cell(&b, l.x0 + X_DRAWN, mid, true, x);
    fl__svg_cell(&b, l.x0 + X_OTHER, mid, true, y);
    if (any) fl__svg_cell(&b, l.x0 + X_CHANGE, mid, false, fl__change_name(r->change));
    fl__svg_cell(&b, l.x0 + X_LINE, mid, true, ln);
    fl__source_svg_text(&b, &l, r, mid, X_TEXT, text_chars);
    if (!any) fl__buf_puts(&b, "</g>\n");
  }
  fl__buf_puts(&b, "</g>\n</svg>\n");
  return fl__buf_take(&b);
}

/* ---- the entry points ---- */

static const fl__source_drawings_t drawings = {vegalite_of, svg_of, text_of};

fl__drawn_t fl__source_diff_draw(const fl_diff_t *d, const fl_view_opts_t *v,
                                 const fl_source_reader_t *r, fl__drawing_t what, char *err,
                                 size_t err_size) {
  fl__drawn_t out = {0};
  sdiff_t sd;
  if (sdiff_init(&sd, d, v, r, err, err_size) < 0) return out;
  fl__source_draw(&drawings, &sd, sd.v, what, &out);
  fl__source_free(&sd.s);
  return out;
}

json_t *fl_source_diff_vegalite(const fl_diff_t *d, const fl_view_opts_t *v,
                                const fl_source_reader_t *r, char *err, size_t err_size) {
  return fl__source_diff_draw(d, v, r, FL__DRAW_VEGALITE, err, err_size).json;
}

char *fl_source_diff_svg(const fl_diff_t *d, const fl_view_opts_t *v, const fl_source_reader_t *r,
                         char *err, size_t err_size) {
  return fl__source_diff_draw(d, v, r, FL__DRAW_SVG, err, err_size).text;
}

char *fl_text_source_diff(const fl_diff_t *d, const fl_view_opts_t *v, const fl_source_reader_t *r,
                          char *err, size_t err_size) {
  return fl__source_diff_draw(d, v, r, FL__DRAW_TEXT, err, err_size).text;
}

json_t *fl_source_diff_bundle(const fl_diff_t *d, const fl_view_opts_t *v,
                              const fl_source_reader_t *r, char *err, size_t err_size) {
  return fl__source_diff_draw(d, v, r, FL__DRAW_BUNDLE, err, err_size).json;
}
