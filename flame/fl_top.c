/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_top: the top view (view=top), a table of the functions where the
 * time went, as pprof -top prints it, drawn as a Vega-Lite spec and an SVG
 * (the text report is fl_text_top, in fl_text.c, beside the other reports).
 *
 * A function is its name, file and module (fl__flat_rows by function): the
 * line is not part of it, whatever lines= says, so a function's lines add
 * up (view=source gives the lines). Each row has the function's self
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

#include "fl__render.h"

#define ROW_PX 18.0
#define BAR_PX 14.0
#define HEADER_PX 18.0
#define FONT_PX 11.0
#define CHAR_PX (0.6 * FONT_PX) /* a monospace character at FONT_PX */
#define MONOSPACE "Menlo, Consolas, DejaVu Sans Mono, monospace"

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
    char h[32];
    fl__thousands(hidden, h);
    snprintf(hidden_line, sizeof hidden_line,
             "%s narrow frames hidden by minwidth (%.2g%% of %s) are not counted", h,
             top->total ? 100.0 * (double)hidden_weight / (double)top->total : 0, fl__unit(t));
    lines[n_lines++] = hidden_line;
  }
  return fl__view_notes(v, lines, n_lines, notes);
}

/* What both drawings start from: the rows, the view options (v NULL: the
 * defaults), the theme and the notes. */
static void top_init(top_t *top, const fl_tree_t *t, const fl_view_opts_t *v) {
  if (!v) {
    fl_view_opts_init(&top->defaults);
    v = &top->defaults;
  }
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
  const char *sym = fl__frame_symbol(f);
  if (sym) json_object_set_new(o, "symbol", fl__json_text(sym));
  return o;
}

static json_t *calculate(const char *expr, const char *as) {
  return fl__nonnull(json_pack("{s:s,s:s}", "calculate", expr, "as", as));
}

/* The row's y: its rank in the chosen order. */
static json_t *y_of(void) {
  return fl__nonnull(json_pack("{s:s,s:s,s:n,s:{s:f}}", "field", "rank", "type", "ordinal", "axis",
                               "scale", "paddingInner", 1 - BAR_PX / ROW_PX));
}

/* A text column of the rows: field at x, right-aligned (else left). */
static json_t *text_column(const char *field, int x, bool right, const fl__theme_t *th, int limit) {
  json_t *mark = fl__nonnull(json_pack("{s:s,s:s,s:s,s:f,s:s,s:s}", "type", "text", "align",
                                       right ? "right" : "left", "baseline", "middle", "fontSize",
                                       FONT_PX, "font", MONOSPACE, "color", th->text));
  if (limit > 0) json_object_set_new(mark, "limit", json_integer(limit));
  return fl__nonnull(json_pack("{s:o,s:{s:o,s:{s:i},s:{s:s,s:s},s:{s:s}}}", "mark", mark,
                               "encoding", "y", y_of(), "x", "value", x, "text", "field", field,
                               "type", "nominal", "tooltip", "field", "tip"));
}

/* A column's header above the rows; key: the sort order it marks with ▼. */
static json_t *header(const char *label, const char *key, int x, bool right,
                      const fl__theme_t *th) {
  char expr[160];
  if (key)
    snprintf(expr, sizeof expr, "'%s' + (sort === '%s' ? ' \xe2\x96\xbc' : '')", label, key);
  else
    snprintf(expr, sizeof expr, "'%s'", label);
  return fl__nonnull(json_pack(
      "{s:{s:[{}]},s:{s:s,s:i,s:f,s:s,s:s,s:f,s:s,s:s,s:{s:s}}}", "data", "values", "mark", "type",
      "text", "x", x, "y", -HEADER_PX / 2, "align", right ? "right" : "left", "baseline", "middle",
      "fontSize", FONT_PX, "fontWeight", "bold", "color", th->text, "text", "expr", expr));
}

json_t *fl_top_vegalite(const fl_tree_t *t, const fl_view_opts_t *view) {
  top_t top;
  top_init(&top, t, view);
  const fl_view_opts_t *v = top.v;
  const fl__theme_t *th = top.th;
  json_t *values = fl__nonnull(json_array());
  for (size_t i = 0; i < top.n_shown; i++)
    json_array_append_new(values, row_value(&top.rows[top.shown[i]]));

  char expr[512];
  double total = top.total ? (double)top.total : 1;
  json_t *transform = fl__nonnull(json_array());
  snprintf(expr, sizeof expr, "100 * datum.self / %.17g", total);
  json_array_append_new(transform, calculate(expr, "selfpct"));
  snprintf(expr, sizeof expr, "100 * datum.total / %.17g", total);
  json_array_append_new(transform, calculate(expr, "totalpct"));
  json_array_append_new(transform, calculate("sort === 'total' ? datum.total : datum.self", "key"));
  json_array_append_new(transform,
                        calculate("sort === 'total' ? datum.self : datum.total", "key2"));
  json_array_append_new(
      transform, fl__nonnull(json_pack("{s:[{s:s,s:s}],s:[{s:s,s:s},{s:s,s:s},{s:s}]}", "window",
                                       "op", "row_number", "as", "rank", "sort", "field", "key",
                                       "order", "descending", "field", "key2", "order",
                                       "descending", "field", "func")));
  snprintf(expr, sizeof expr, "datum.rank <= %d", FL_TOP_ROWS);
  json_array_append_new(transform, fl__nonnull(json_pack("{s:s}", "filter", expr)));
  json_array_append_new(
      transform,
      fl__nonnull(json_pack("{s:[{s:s,s:s,s:s}],s:[{s:s}],s:[n,i]}", "window", "op", "sum", "field",
                            "self", "as", "running", "sort", "field", "rank", "frame", 0)));
  snprintf(expr, sizeof expr, "100 * datum.running / %.17g", total);
  json_array_append_new(transform, calculate(expr, "sumpct"));
  json_array_append_new(transform, calculate("format(datum.self, ',')", "selfs"));
  json_array_append_new(transform, calculate("format(datum.total, ',')", "totals"));
  json_array_append_new(transform, calculate("format(datum.selfpct, '.2f') + '%'", "selfpcts"));
  json_array_append_new(transform, calculate("format(datum.sumpct, '.2f') + '%'", "sumpcts"));
  json_array_append_new(transform, calculate("format(datum.totalpct, '.2f') + '%'", "totalpcts"));
  json_array_append_new(transform,
                        calculate("datum.file ? datum.func + '  ' + datum.file : datum.module ? "
                                  "datum.func + '  ' + datum.module : datum.func",
                                  "name"));
  snprintf(expr, sizeof expr,
           "{'function': datum.func, 'file': datum.file, 'module': datum.module != datum.file ? "
           "datum.module : datum.none, 'symbol': datum.symbol, 'self': datum.selfs + ' %s (' + "
           "datum.selfpcts + ')', 'total': datum.totals + ' %s (' + datum.totalpcts + ')'}",
           fl__unit(t), fl__unit(t));
  json_array_append_new(transform, calculate(expr, "tip"));

  json_t *x_scale = fl__nonnull(
      json_pack("{s:[i,i],s:[i,i]}", "domain", 0, 100, "range", X_BARS, X_BARS + BARS_PX));
  json_t *rows_layer = fl__nonnull(json_array());
  json_array_append_new(
      rows_layer, fl__nonnull(json_pack("{s:{s:s,s:s},s:{s:o,s:{s:s,s:s,s:O,s:n},s:{s:s}}}", "mark",
                                        "type", "bar", "color", total_bar_color(v), "encoding", "y",
                                        y_of(), "x", "field", "totalpct", "type", "quantitative",
                                        "scale", x_scale, "axis", "tooltip", "field", "tip")));
  json_array_append_new(
      rows_layer,
      fl__nonnull(json_pack("{s:{s:s},s:{s:o,s:{s:s,s:s,s:O,s:n},s:{s:s,s:s,s:n},s:{s:s}}}", "mark",
                            "type", "bar", "encoding", "y", y_of(), "x", "field", "selfpct", "type",
                            "quantitative", "scale", x_scale, "axis", "color", "field", "color",
                            "type", "nominal", "scale", "tooltip", "field", "tip")));
  json_decref(x_scale);
  json_array_append_new(rows_layer, text_column("selfs", X_SELF, true, th, 0));
  json_array_append_new(rows_layer, text_column("selfpcts", X_SELFPCT, true, th, 0));
  json_array_append_new(rows_layer, text_column("sumpcts", X_SUMPCT, true, th, 0));
  json_array_append_new(rows_layer, text_column("totals", X_TOTAL, true, th, 0));
  json_array_append_new(rows_layer, text_column("totalpcts", X_TOTALPCT, true, th, 0));
  int width = v->width > X_FUNC + 100 ? v->width : X_FUNC + 100;
  json_array_append_new(rows_layer, text_column("name", X_FUNC, false, th, width - X_FUNC));

  json_t *layers = fl__nonnull(json_array());
  json_array_append_new(
      layers, fl__nonnull(json_pack("{s:{s:o},s:o,s:o}", "data", "values", values, "transform",
                                    transform, "layer", rows_layer)));
  json_array_append_new(layers, header("Self", "self", X_SELF, true, th));
  json_array_append_new(layers, header("Self%", NULL, X_SELFPCT, true, th));
  json_array_append_new(layers, header("Sum%", NULL, X_SUMPCT, true, th));
  json_array_append_new(layers, header("Total", "total", X_TOTAL, true, th));
  json_array_append_new(layers, header("Total%", NULL, X_TOTALPCT, true, th));
  json_array_append_new(layers, header("Function", NULL, X_FUNC, false, th));

  char description[200];
  snprintf(description, sizeof description, "Top functions of %s: %zu of %zu functions",
           fl_tree_root(t)->frame.func, table_rows(&top), top.n);
  // clang-format off
  json_t *spec = fl__nonnull(json_pack(
      "{s:s,s:o,s:i,s:f,s:s,s:o,s:[{s:s,s:s,s:{s:s,s:[s,s],s:s}}],s:o,"
      "s:{s:{s:s,s:s,s:I,s:I,s:I}}}",
      "$schema", "https://vega.github.io/schema/vega-lite/v5.json",
      "description", fl__json_text(description),
      "width", width,
      "height", ROW_PX * (double)(table_rows(&top) ? table_rows(&top) : 1),
      "background", th->background,
      "config", fl__vl_config(v),
      "params", "name", "sort", "value", "self",
                "bind", "input", "radio", "options", "self", "total", "name", "sort by ",
      "layer", layers,
      "usermeta", "cflame", "view", "top", "unit", fl__unit(t), "total", (json_int_t)top.total,
                            "functions", (json_int_t)top.n, "rows", (json_int_t)top.n_shown));
  // clang-format on
  json_t *title = fl__vl_title(v, top.notes, top.n_notes);
  if (title) {
    /* Room for the column headers between the title and the rows. */
    json_object_set_new(title, "offset", json_real(HEADER_PX + 4));
    json_object_set_new(spec, "title", title);
  }
  top_free(&top);
  return spec;
}

/* ---- SVG ---- */

static void put_cell(fl__buf_t *b, double x, double y, bool right, const char *s) {
  fl__buf_puts(b, "<text x='");
  fl__svg_px(b, x);
  fl__buf_puts(b, "' y='");
  fl__svg_px(b, y);
  fl__buf_puts(b, right ? "' text-anchor='end'>" : "'>");
  fl__svg_text(b, s);
  fl__buf_puts(b, "</text>\n");
}

/* s cut to at most chars characters, the last one "…" when cut. New. */
static char *cut_to(const char *s, size_t chars) {
  char *clean = fl__clean_text(s, false);
  size_t n = 0, i = 0;
  for (; clean[i]; i++) {
    if (((unsigned char)clean[i] & 0xc0) != 0x80 && n++ == chars - 1) {
      size_t rest = 0;
      for (size_t k = i; clean[k]; k++) rest += ((unsigned char)clean[k] & 0xc0) != 0x80;
      if (rest > 1) {
        clean[i] = '\0';
        char *out;
        if (asprintf(&out, "%s\xe2\x80\xa6", clean) < 0) fl__oom(0);
        free(clean);
        return out;
      }
      break;
    }
  }
  return clean;
}

char *fl_top_svg(const fl_tree_t *t, const fl_view_opts_t *view) {
  top_t top;
  top_init(&top, t, view);
  const fl_view_opts_t *v = top.v;
  const fl__theme_t *th = top.th;
  int n_notes = top.n_notes;
  bool has_title = v->title && v->title[0];
  double y = FL__SVG_MARGIN;
  double title_y = has_title ? (y += 16) : 0;
  double note_y[FL__MAX_NOTES];
  for (int i = 0; i < n_notes; i++) note_y[i] = (y += 16);
  double header_y = y + 12 + HEADER_PX / 2, plot_top = y + 12 + HEADER_PX;
  size_t rows = table_rows(&top);
  int width = v->width > X_FUNC + 100 ? v->width : X_FUNC + 100;
  double full_w = width + 2 * FL__SVG_MARGIN;
  double full_h = plot_top + ROW_PX * (double)rows + 8 + FL__SVG_MARGIN;
  double x0 = FL__SVG_MARGIN, total = top.total ? (double)top.total : 1;

  fl__buf_t b = {0};
  fl__svg_opening(&b, th, v, full_w, full_h, title_y, top.notes, note_y, n_notes);
  fl__buf_printf(&b, "<g font-family='%s' font-size='%g' fill='%s' dominant-baseline='middle'>\n",
                 MONOSPACE, FONT_PX, th->text);
  fl__buf_puts(&b, "<g font-weight='bold'>\n");
  put_cell(&b, x0 + X_SELF, header_y, true, "Self \xe2\x96\xbc");
  put_cell(&b, x0 + X_SELFPCT, header_y, true, "Self%");
  put_cell(&b, x0 + X_SUMPCT, header_y, true, "Sum%");
  put_cell(&b, x0 + X_TOTAL, header_y, true, "Total");
  put_cell(&b, x0 + X_TOTALPCT, header_y, true, "Total%");
  put_cell(&b, x0 + X_FUNC, header_y, false, "Function");
  fl__buf_puts(&b, "</g>\n");
  uint64_t running = 0;
  size_t name_chars = (size_t)((width - X_FUNC) / CHAR_PX);
  for (size_t i = 0; i < rows; i++) {
    const fl__flat_row_t *row = &top.rows[i];
    const fl_frame_t *f = &row->node->frame;
    double mid = plot_top + ROW_PX * ((double)i + 0.5);
    running += row->self;
    char num[48], color[8];
    /* The bars: the total pale, with the row's tooltip as its title (a
     * titled path, as a frame of the flame graph's SVG), then the self in
     * the function's colour. */
    fl__node_color(row->node, color);
    fl__buf_printf(&b, "<path stroke='%s' stroke-width='%g' d='M", total_bar_color(v), BAR_PX);
    fl__svg_px(&b, x0 + X_BARS);
    fl__buf_puts(&b, " ");
    fl__svg_px(&b, mid);
    fl__buf_puts(&b, "h");
    fl__svg_px(&b, fmax(0.1, BARS_PX * (double)row->count / total));
    fl__buf_puts(&b, "'><title>");
    fl__svg_text(&b, f->func ? f->func : "[unknown]");
    if (where_of(f)) {
      fl__buf_puts(&b, "\n");
      fl__svg_text(&b, where_of(f));
    }
    fl__buf_printf(&b,
                   "\nself %" PRIu64 " %s (%.2f%%), total %" PRIu64 " %s (%.2f%%)</title></path>",
                   row->self, fl__unit(t), 100.0 * (double)row->self / total, row->count,
                   fl__unit(t), 100.0 * (double)row->count / total);
    fl__buf_printf(&b, "<path stroke='%s' stroke-width='%g' d='M", color, BAR_PX);
    fl__svg_px(&b, x0 + X_BARS);
    fl__buf_puts(&b, " ");
    fl__svg_px(&b, mid);
    fl__buf_puts(&b, "h");
    fl__svg_px(&b, fmax(0.1, BARS_PX * (double)row->self / total));
    fl__buf_puts(&b, "'/>\n");
    fl__thousands(row->self, num);
    put_cell(&b, x0 + X_SELF, mid, true, num);
    snprintf(num, sizeof num, "%.2f%%", 100.0 * (double)row->self / total);
    put_cell(&b, x0 + X_SELFPCT, mid, true, num);
    snprintf(num, sizeof num, "%.2f%%", 100.0 * (double)running / total);
    put_cell(&b, x0 + X_SUMPCT, mid, true, num);
    fl__thousands(row->count, num);
    put_cell(&b, x0 + X_TOTAL, mid, true, num);
    snprintf(num, sizeof num, "%.2f%%", 100.0 * (double)row->count / total);
    put_cell(&b, x0 + X_TOTALPCT, mid, true, num);
    char *name;
    if (asprintf(&name, "%s%s%s", f->func ? f->func : "[unknown]", where_of(f) ? "  " : "",
                 where_of(f) ? where_of(f) : "") < 0)
      fl__oom(0);
    char *shown = cut_to(name, name_chars);
    fl__buf_puts(&b, "<text xml:space='preserve' x='");
    fl__svg_px(&b, x0 + X_FUNC);
    fl__buf_puts(&b, "' y='");
    fl__svg_px(&b, mid);
    fl__buf_puts(&b, "'>");
    fl__svg_text(&b, shown);
    fl__buf_puts(&b, "</text>\n");
    free(shown);
    free(name);
  }
  fl__buf_puts(&b, "</g>\n</svg>\n");
  top_free(&top);
  return fl__buf_take(&b);
}

/* ---- the bundle ---- */

json_t *fl_top_bundle(const fl_tree_t *t, const fl_view_opts_t *v) {
  fl_view_opts_t defaults;
  if (!v) {
    fl_view_opts_init(&defaults);
    v = &defaults;
  }
  fl_text_opts_t to;
  fl_text_opts_init(&to);
  char *svg = fl_top_svg(t, v), *report = fl_text_top(t, &to);
  json_t *bundle = fl__bundle_assemble(fl_top_vegalite(t, v), svg, report, v);
  free(svg);
  free(report);
  return bundle;
}
