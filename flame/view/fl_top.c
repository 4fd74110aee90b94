/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_top: the top view (view=top), a table of the functions where the
 * time went, as pprof -top prints it, drawn as a Vega-Lite spec and an SVG
 * (the text report is fl_text_top, in fl_text.c, beside the other reports).
 *
 * A function is its name, file and module, and the input it was read from
 * where inputs are drawn apart (fl__flat_rows by function): the line is not
 * part of it, whatever lines= says, so a function's lines add up
 * (view=source gives the lines). Rows that would read alike carry what
 * tells them apart (fl__flat_row_t.from) after the name, in every
 * rendering. Each row has the function's self
 * weight, its total (once per sample, however deep it recurses) and their
 * shares of the whole profile; the rows drawn are the first FL_TOP_ROWS by
 * self and the first FL_TOP_ROWS by total.
 *
 * Every row is one line of the table: Self, Self%, Sum% (the running sum
 * of the self shares in the table's order, as pprof's), Total, Total%, two bars (total pale,
 * self in the function's colour, as its frames in the flame graph), then
 * the function and where it is. The Vega-Lite view sorts by self or total
 * (the radio button `sort`, a param): a window transform ranks the rows by
 * the chosen column and keeps the first FL_TOP_ROWS. The SVG is sorted by
 * self. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__table.h"
#include "fl__view.h"

#define ROW_PX 18.0
#define BAR_PX 14.0

/* Columns, in pixels from the plot's left edge: the right edges of the
 * numbers, the bars' span, and the left edge of the function's name. */
enum { X_SELF = 70, X_SELFPCT = 130, X_SUMPCT = 190, X_TOTAL = 260, X_TOTALPCT = 320 };
enum { X_BARS = 335, BARS_PX = 150, X_FUNC = 495 };

/* The bar of a function's total, behind its self bar. */
static const char *total_bar_color(const fl_view_opts_t *v) {
  return v->dark ? "#4a4a4a" : "#dcdcdc";
}

/* ---- the rows ---- */

typedef struct top {
  fl_view_opts_t defaults;
  const fl_view_opts_t *v; /* the caller's, or the defaults */
  const fl__theme_t *th;
  char notes[FL__MAX_NOTES][FL__NOTE_SIZE]; /* under the title */
  int n_notes;
  fl__flat_row_t *rows; /* every function, by self */
  size_t n;
  size_t *shown; /* indexes into rows: the first FL_TOP_ROWS by self or by total */
  size_t n_shown;
  uint64_t total; /* the root's weight */
} top_t;

static void top_free(top_t *top) {
  free(top->rows);
  free(top->shown);
}

/* "cell[3]", "libc.so.6": where a function is, or NULL. */
static const char *where_of(const fl_frame_t *f) {
  return f->file ? f->file : f->module;
}

static size_t table_rows(const top_t *top) {
  return top->n < FL_TOP_ROWS ? top->n : FL_TOP_ROWS;
}

/* The lines under the title: what the table is. */
static int top_notes(const fl_tree_t *t, const fl_view_opts_t *v, const top_t *top,
                     char notes[FL__MAX_NOTES][FL__NOTE_SIZE]) {
  char line[256], n[32];
  fl__thousands(top->n, n);
  if (top->n > FL_TOP_ROWS)
    snprintf(line, sizeof line,
             "top: the first %d of %s functions by self %s (or by total), as pprof -top",
             FL_TOP_ROWS, n, fl__unit(t));
  else
    snprintf(line, sizeof line, "top: the %s function%s by self %s (or by total), as pprof -top", n,
             top->n == 1 ? "" : "s", fl__unit(t));
  const char *lines[2] = {line, NULL};
  size_t n_lines = 1;
  uint64_t hidden_weight = 0;
  size_t hidden = fl_tree_hidden(t, &hidden_weight);
  char hidden_line[160];
  if (hidden) {
    char h[48];
    fl_count_noun(hidden, "narrow frame", "narrow frames", h, sizeof h);
    snprintf(hidden_line, sizeof hidden_line, "%s hidden by minwidth (%.2g%% of %s) %s not counted",
             h, top->total ? 100.0 * (double)hidden_weight / (double)top->total : 0, fl__unit(t),
             hidden == 1 ? "is" : "are");
    lines[n_lines++] = hidden_line;
  }
  return fl__view_notes(v, lines, n_lines, notes);
}

/* What both drawings start from: the rows, the view options (v NULL: the
 * defaults), the theme and the notes. */
static void top_init(top_t *top, const fl_tree_t *t, const fl_view_opts_t *v) {
  v = fl__view_opts(v, &top->defaults);
  top->v = v;
  top->th = fl__theme_of(v);
  top->n = fl__flat_rows(t, true, &top->rows);
  top->total = fl_tree_root(t)->count;
  fl__flat_sort_by_self(top->rows, top->n);
  top->shown = fl__xmalloc(top->n ? top->n : 1, sizeof *top->shown);
  top->n_shown = 0;
  for (size_t i = 0; i < top->n; i++)
    if (i < FL_TOP_ROWS || top->rows[i].by_count < FL_TOP_ROWS) top->shown[top->n_shown++] = i;
  top->n_notes = top_notes(t, v, top, top->notes);
}

/* ---- Vega-Lite ---- */

static json_t *row_value(const fl__flat_row_t *row) {
  const fl_frame_t *f = &row->node->frame;
  char color[8];
  fl__node_color(row->node, color);
  json_t *o = fl__nonnull(
      json_pack("{s:o,s:I,s:I,s:s}", "func", fl__json_text(f->func ? f->func : "[unknown]"), "self",
                (json_int_t)row->self, "total", (json_int_t)row->count, "color", color));
  if (f->file) json_object_set_new(o, "file", fl__json_text(f->file));
  if (f->module) json_object_set_new(o, "module", fl__json_text(f->module));
  if (row->from) json_object_set_new(o, "from", fl__json_text(row->from));
  const char *sym = fl__frame_symbol(f);
  if (sym) json_object_set_new(o, "symbol", fl__json_text(sym));
  return o;
}

/* The transforms: shares, the rank in the chosen order (the first
 * FL_TOP_ROWS kept), the running sum of self shares, the cells' texts and
 * the tooltip. */
static json_t *top_transform(const fl_tree_t *t, uint64_t total_weight) {
  char expr[512];
  double total = total_weight ? (double)total_weight : 1;
  json_t *tr = fl__nonnull(json_array());
  snprintf(expr, sizeof expr, "100 * datum.self / %.17g", total);
  json_array_append_new(tr, fl__vl_calculate(expr, "selfpct"));
  snprintf(expr, sizeof expr, "100 * datum.total / %.17g", total);
  json_array_append_new(tr, fl__vl_calculate(expr, "totalpct"));
  json_array_append_new(tr, fl__vl_calculate("sort === 'total' ? datum.total : datum.self", "key"));
  json_array_append_new(tr,
                        fl__vl_calculate("sort === 'total' ? datum.self : datum.total", "key2"));
  json_array_append_new(
      tr, fl__nonnull(json_pack("{s:[{s:s,s:s}],s:[{s:s,s:s},{s:s,s:s},{s:s}]}", "window", "op",
                                "row_number", "as", "rank", "sort", "field", "key", "order",
                                "descending", "field", "key2", "order", "descending", "field",
                                "func")));
  snprintf(expr, sizeof expr, "datum.rank <= %d", FL_TOP_ROWS);
  json_array_append_new(tr, fl__nonnull(json_pack("{s:s}", "filter", expr)));
  json_array_append_new(tr, fl__nonnull(json_pack("{s:[{s:s,s:s,s:s}],s:[{s:s}],s:[n,i]}", "window",
                                                  "op", "sum", "field", "self", "as", "running",
                                                  "sort", "field", "rank", "frame", 0)));
  snprintf(expr, sizeof expr, "100 * datum.running / %.17g", total);
  json_array_append_new(tr, fl__vl_calculate(expr, "sumpct"));
  json_array_append_new(tr, fl__vl_calculate("format(datum.self, ',')", "selfs"));
  json_array_append_new(tr, fl__vl_calculate("format(datum.total, ',')", "totals"));
  json_array_append_new(tr, fl__vl_calculate("format(datum.selfpct, '.2f') + '%'", "selfpcts"));
  json_array_append_new(tr, fl__vl_calculate("format(datum.sumpct, '.2f') + '%'", "sumpcts"));
  json_array_append_new(tr, fl__vl_calculate("format(datum.totalpct, '.2f') + '%'", "totalpcts"));
  json_array_append_new(tr, fl__vl_calculate("datum.from ? datum.func + ' (' + datum.from + ')' : "
                                             "datum.func",
                                             "funcs"));
  json_array_append_new(tr, fl__vl_calculate("datum.file ? datum.funcs + '  ' + datum.file : "
                                             "datum.module ? datum.funcs + '  ' + datum.module : "
                                             "datum.funcs",
                                             "name"));
  snprintf(expr, sizeof expr,
           "{'function': datum.funcs, 'file': datum.file, 'module': datum.module != datum.file ? "
           "datum.module : datum.none, 'symbol': datum.symbol, 'self': datum.selfs + ' %s (' + "
           "datum.selfpcts + ')', 'total': datum.totals + ' %s (' + datum.totalpcts + ')'}",
           fl__unit(t), fl__unit(t));
  json_array_append_new(tr, fl__vl_calculate(expr, "tip"));
  return tr;
}

static int top_width(const fl_view_opts_t *v) {
  return v->width > X_FUNC + 100 ? v->width : X_FUNC + 100;
}

json_t *fl_top_vegalite(const fl_tree_t *t, const fl_view_opts_t *view) {
  top_t top;
  top_init(&top, t, view);
  const fl_view_opts_t *v = top.v;
  json_t *values = fl__nonnull(json_array());
  for (size_t i = 0; i < top.n_shown; i++)
    json_array_append_new(values, row_value(&top.rows[top.shown[i]]));
  int width = top_width(v);
  fl__table_t tb = {.th = top.th, .y_field = "rank", .row_px = ROW_PX, .bar_px = BAR_PX};
  static const struct {
    const char *field, *header;
    int x;
    bool right;
  } columns[] = {
      {"selfs", "Self", X_SELF, true},           {"selfpcts", "Self%", X_SELFPCT, true},
      {"sumpcts", "Sum%", X_SUMPCT, true},       {"totals", "Total", X_TOTAL, true},
      {"totalpcts", "Total%", X_TOTALPCT, true}, {"name", "Function", X_FUNC, false},
  };
  json_t *rows_layer = fl__nonnull(json_array());
  json_array_append_new(
      rows_layer, fl__table_bar(&tb, "totalpct", total_bar_color(v), NULL, NULL, X_BARS, BARS_PX));
  json_array_append_new(rows_layer,
                        fl__table_bar(&tb, "selfpct", NULL, "color", NULL, X_BARS, BARS_PX));
  json_t *layers = fl__nonnull(json_array());
  for (size_t i = 0; i < FL__ARRAY_SIZE(columns); i++) {
    fl__table_column_t c = {.field = columns[i].field,
                            .x = columns[i].x,
                            .right = columns[i].right,
                            .limit = columns[i].right ? 0 : width - columns[i].x};
    json_array_append_new(rows_layer, fl__table_text(&tb, &c));
    /* Headers carry no sort arrow: clicking one does nothing, and the
     * radio buttons under the view say the order. */
    char expr[64];
    snprintf(expr, sizeof expr, "'%s'", columns[i].header);
    json_array_append_new(layers, fl__table_header(&tb, expr, columns[i].x, columns[i].right));
  }
  json_array_insert_new(
      layers, 0,
      fl__nonnull(json_pack("{s:{s:o},s:o,s:o}", "data", "values", values, "transform",
                            top_transform(t, top.total), "layer", rows_layer)));

  char description[200];
  snprintf(description, sizeof description, "Top functions of %s: %zu of %zu functions",
           fl_tree_root(t)->frame.func, table_rows(&top), top.n);
  json_t *meta = fl__nonnull(json_pack("{s:s,s:s,s:I,s:I,s:I}", "view", "top", "unit", fl__unit(t),
                                       "total", (json_int_t)top.total, "functions",
                                       (json_int_t)top.n, "rows", (json_int_t)top.n_shown));
  json_t *spec = fl__table_spec(v, description, width, table_rows(&top), ROW_PX, layers, meta,
                                top.notes, top.n_notes);
  /* The sort order, chosen by radio buttons under the view. */
  json_object_set_new(spec, "params",
                      fl__nonnull(json_pack("[{s:s,s:s,s:{s:s,s:[s,s],s:s}}]", "name", "sort",
                                            "value", "self", "bind", "input", "radio", "options",
                                            "self", "total", "name", "sort by ")));
  top_free(&top);
  return spec;
}

/* ---- SVG ---- */

char *fl_top_svg(const fl_tree_t *t, const fl_view_opts_t *view) {
  top_t top;
  top_init(&top, t, view);
  const fl_view_opts_t *v = top.v;
  size_t rows = table_rows(&top);
  int width = top_width(v);
  double total = top.total ? (double)top.total : 1;
  fl__buf_t b = {0};
  fl__svg_table_t l;
  fl__svg_table_open(&b, v, top.notes, top.n_notes, width, rows, ROW_PX, &l);
  /* Sorted by self, as the note says; a still table, whose headers carry
   * no arrow that would look clickable. */
  static const fl__table_head_t heads[] = {
      {"Self", X_SELF, true},   {"Self%", X_SELFPCT, true},   {"Sum%", X_SUMPCT, true},
      {"Total", X_TOTAL, true}, {"Total%", X_TOTALPCT, true}, {"Function", X_FUNC, false}};
  fl__svg_table_headers(&b, &l, heads, FL__ARRAY_SIZE(heads));
  uint64_t running = 0;
  size_t name_chars = (size_t)((width - X_FUNC) / FL__TABLE_CHAR_PX);
  for (size_t i = 0; i < rows; i++) {
    const fl__flat_row_t *row = &top.rows[i];
    const fl_frame_t *f = &row->node->frame;
    char *func = fl__flat_row_name(row);
    double mid = fl__svg_table_row_y(&l, i);
    running += row->self;
    /* The bars: the total pale, with the row's tooltip as its title (a
     * titled path, as a frame of the flame graph's SVG), then the self in
     * the function's colour. */
    char *title, *name, color[8], num[48];
    if (asprintf(&title, "%s%s%s\nself %" PRIu64 " %s (%.2f%%), total %" PRIu64 " %s (%.2f%%)",
                 func, where_of(f) ? "\n" : "", where_of(f) ? where_of(f) : "", row->self,
                 fl__unit(t), 100.0 * (double)row->self / total, row->count, fl__unit(t),
                 100.0 * (double)row->count / total) < 0 ||
        asprintf(&name, "%s%s%s", func, where_of(f) ? "  " : "", where_of(f) ? where_of(f) : "") <
            0)
      fl__oom(0);
    fl__svg_hbar(&b, total_bar_color(v), BAR_PX, l.x0 + X_BARS, mid,
                 BARS_PX * (double)row->count / total, title);
    fl__node_color(row->node, color);
    fl__svg_hbar(&b, color, BAR_PX, l.x0 + X_BARS, mid, BARS_PX * (double)row->self / total, NULL);
    fl__buf_puts(&b, "\n");
    fl__thousands(row->self, num);
    fl__svg_cell(&b, l.x0 + X_SELF, mid, true, num);
    snprintf(num, sizeof num, "%.2f%%", 100.0 * (double)row->self / total);
    fl__svg_cell(&b, l.x0 + X_SELFPCT, mid, true, num);
    snprintf(num, sizeof num, "%.2f%%", 100.0 * (double)running / total);
    fl__svg_cell(&b, l.x0 + X_SUMPCT, mid, true, num);
    fl__thousands(row->count, num);
    fl__svg_cell(&b, l.x0 + X_TOTAL, mid, true, num);
    snprintf(num, sizeof num, "%.2f%%", 100.0 * (double)row->count / total);
    fl__svg_cell(&b, l.x0 + X_TOTALPCT, mid, true, num);
    char *shown = fl__text_cut(name, name_chars);
    fl__svg_cell(&b, l.x0 + X_FUNC, mid, false, shown);
    free(shown);
    free(name);
    free(func);
    free(title);
  }
  fl__buf_puts(&b, "</g>\n</svg>\n");
  top_free(&top);
  return fl__buf_take(&b);
}

/* ---- the bundle ---- */

json_t *fl_top_bundle(const fl_tree_t *t, const fl_view_opts_t *v) {
  fl_view_opts_t defaults;
  v = fl__view_opts(v, &defaults);
  fl_text_opts_t to;
  fl_text_opts_init(&to);
  char *svg = fl_top_svg(t, v), *report = fl_text_top(t, &to);
  json_t *bundle = fl__bundle_assemble(fl_top_vegalite(t, v), svg, report, v);
  free(svg);
  free(report);
  return bundle;
}

/* ---- view=top (fl__view.h): a tree's table, or a diff's (fl_top_diff.c) ---- */

int fl__view_top(const fl__view_in_t *in, fl__drawing_t what, fl__drawn_t *out) {
  const fl_diff_t *d = in->diff;
  const fl_tree_t *t = in->tree;
  const fl_view_opts_t *v = in->view;
  switch (what) {
    case FL__DRAW_VEGALITE:
      out->json = d ? fl_top_diff_vegalite(d, v) : fl_top_vegalite(t, v);
      break;
    case FL__DRAW_SVG: out->text = d ? fl_top_diff_svg(d, v) : fl_top_svg(t, v); break;
    case FL__DRAW_TEXT:
      out->text = d ? fl_text_top_diff(d, in->text) : fl_text_top(t, in->text);
      break;
    case FL__DRAW_BUNDLE: out->json = d ? fl_top_diff_bundle(d, v) : fl_top_bundle(t, v); break;
  }
  return 0;
}
