/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_source: the source view (view=source), each source line with the
 * weight spent on it, as pprof list and perf annotate show it, drawn as a
 * text report, a Vega-Lite spec and an SVG.
 *
 * The weights per line are fl_lines's: self goes to the line of the
 * innermost frame that has one, passing over system libraries and the
 * allocator (a call into libc counts on the line that made it); total to
 * every line on the stack once. Inlined code counts on the line it came
 * from, since the symbolizer records inlined frames with their lines.
 *
 * Which lines, and which files may be read, is fl__source.c's: the rows
 * are built there, for this file and for a diff's (fl_source_diff.c).
 * Lines with no samples are drawn dimmed.
 *
 * Rows: a file row (k "file": its name, self, total and heading), then line rows
 * (k "line": line, text, self, total) and gap rows (k "gap"); the
 * Vega-Lite data holds them in order with their index i. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__source.h"

#define ROW_PX 16.0
#define BAR_PX 12.0
#define HEAT_COLOR "#e0452c"
#define DIM_OPACITY 0.45

enum { X_SELF = 60, X_SELFPCT = 115, X_TOTAL = 185, X_TOTALPCT = 240 };
enum { X_BARS = 252, BARS_PX = 100, X_LINE = 395, X_TEXT = 405 };
static const fl__table_head_t heads[] = {{"Self", X_SELF, true},   {"Self%", X_SELFPCT, true},
                                         {"Total", X_TOTAL, true}, {"Total%", X_TOTALPCT, true},
                                         {"Line", X_LINE, true},   {"Source", X_TEXT, false}};
#define N_HEADS (FL__ARRAY_SIZE(heads))

/* A profile's source table: its rows and the options it is drawn with. */
typedef struct psource {
  fl__source_t s;
  const fl_view_opts_t *v;
  fl_view_opts_t defaults;
} psource_t;

/* The lines under the title. */
static int source_notes(const fl_tree_t *t, const fl_view_opts_t *v, const fl__source_t *s,
                        char notes[FL__MAX_NOTES][FL__NOTE_SIZE]) {
  char what[300], more[200];
  const char *lines[3] = {what, more};
  size_t n_lines = 1;
  snprintf(what, sizeof what,
           "source: the %s spent on each line (self: in the line itself, with the libraries it "
           "calls; total: with the functions it calls)%s%s",
           fl__unit(t), v->focus ? "; the files of " : "", v->focus ? v->focus : "");
  if (s->n_files > s->files_shown || s->unreadable) {
    snprintf(more, sizeof more, "%zu of %zu files with self %s shown%s", s->files_shown, s->n_files,
             fl__unit(t),
             s->unreadable ? "; a file that could not be read shows its sampled lines without "
                             "their text"
                           : "");
    n_lines++;
  }
  fl__buf_t outside = FL__BUF_INIT;
  fl__source_outside_note(s, &outside);
  if (outside.len) lines[n_lines++] = outside.data;
  int n = fl__view_notes(v, lines, n_lines, notes);
  fl__buf_free(&outside);
  return n;
}

/* "12.34%", or "." for nothing. */
static void share_text(char out[16], uint64_t n, uint64_t total) {
  if (n == 0)
    snprintf(out, 16, ".");
  else
    snprintf(out, 16, "%.2f%%", 100.0 * (double)n / (double)(total ? total : 1));
}

/* A count as the table prints it: "." for nothing, bytes with units. */
static void count_text(char out[48], const fl_tree_t *t, uint64_t n) {
  if (n == 0)
    snprintf(out, 48, ".");
  else if (fl__is_alloc(t) && !fl__alloc_counts(t))
    fl__bytes(out, 48, n);
  else
    fl__thousands(n, out);
}

/* "cell[3]  self 947 samples (75.04%), hottest line 947 (75.04%)". */
static void file_heading(char *out, size_t size, const fl_tree_t *t, const fl__src_row_t *r,
                         uint64_t total) {
  char self[48], share[16];
  if (r->self == 0) { /* a file of callers only */
    snprintf(out, size, "%s  no self %s", r->file, fl__unit(t));
    return;
  }
  count_text(self, t, r->self);
  share_text(share, r->self, total);
  snprintf(out, size, "%s  self %s %s (%s)", r->file, self, fl__unit(t), share);
}

/* ---- text ---- */

static char *text_of(void *state) {
  const psource_t *p = state;
  const fl_tree_t *t = p->s.t;
  const fl_view_opts_t *v = p->v;
  const fl__source_t s = p->s; /* read only */
  fl__buf_t out = {0};
  char total[48];
  count_text(total, t, s.total);
  fl__buf_printf(&out, "Total: %s %s\n", total, fl__unit(t));
  fl__buf_printf(&out, "Source: the %s spent on each line, self and total%s%s\n", fl__unit(t),
                 v->focus ? "; the files of " : "", v->focus ? v->focus : "");
  if (s.n_files > s.files_shown)
    fl__buf_printf(&out, "(%zu of %zu files with self %s shown)\n", s.files_shown, s.n_files,
                   fl__unit(t));
  if (s.unreadable)
    fl__buf_printf(&out, "(%zu file%s could not be read: %s sampled lines without their text)\n",
                   s.unreadable, s.unreadable == 1 ? "" : "s", s.unreadable == 1 ? "its" : "their");
  if (s.outside) {
    fl__buf_puts(&out, "(");
    fl__source_outside_note(&s, &out);
    fl__buf_puts(&out, ")\n");
  }
  if (s.n == 0) fl__buf_puts(&out, "No sample has a source line.\n");
  for (size_t i = 0; i < s.n; i++) {
    const fl__src_row_t *row = &s.rows[i];
    char a[48], b[16], c[48], d[16];
    if (row->kind == FL__SRC_FILE) {
      char heading[600];
      file_heading(heading, sizeof heading, t, row, s.total);
      fl__buf_printf(&out, "\n%s\n%10s %7s %10s %7s %6s  Source\n", heading, "Self", "Self%",
                     "Total", "Total%", "Line");
      continue;
    }
    if (row->kind == FL__SRC_GAP) {
      fl__buf_printf(&out, "%*s\xe2\x8b\xae\n", 10 + 1 + 7 + 1 + 10 + 1 + 7 + 1 + 6 + 2, "");
      continue;
    }
    count_text(a, t, row->self);
    share_text(b, row->self, s.total);
    count_text(c, t, row->total);
    share_text(d, row->total, s.total);
    char *text = row->text ? fl__source_text(row->text, row->len) : NULL;
    fl__buf_printf(&out, "%10s %7s %10s %7s %6d  %s\n", a, b, c, d, row->line, text ? text : "");
    free(text);
  }
  return fl__buf_take(&out);
}

/* ---- Vega-Lite ---- */

static json_t *row_value(const fl_tree_t *t, const fl__source_t *s, const fl__src_row_t *r,
                         size_t i) {
  json_t *o = fl__nonnull(json_pack("{s:I,s:s,s:o,s:I,s:I}", "i", (json_int_t)i, "k",
                                    fl__source_kind_name(r->kind), "file", fl__json_text(r->file),
                                    "self", (json_int_t)r->self, "total", (json_int_t)r->total));
  if (r->kind == FL__SRC_FILE) {
    char heading[600];
    file_heading(heading, sizeof heading, t, r, s->total);
    json_object_set_new(o, "heading", fl__json_text(heading));
  }
  if (r->kind == FL__SRC_LINE) {
    json_object_set_new(o, "line", json_integer(r->line));
    char *text = r->text ? fl__source_text(r->text, r->len) : fl__xstrdup("");
    json_object_set_new(o, "text", fl__json_text(text));
    free(text);
  }
  return o;
}

static json_t *source_transform(const fl_tree_t *t, uint64_t total_weight) {
  char expr[600];
  double total = total_weight ? (double)total_weight : 1;
  const char *fmt = fl__is_alloc(t) && !fl__alloc_counts(t) ? "'.3~s'" : "','";
  json_t *tr = fl__nonnull(json_array());
  snprintf(expr, sizeof expr, "100 * datum.self / %.17g", total);
  json_array_append_new(tr, fl__vl_calculate(expr, "selfpct"));
  snprintf(expr, sizeof expr, "100 * datum.total / %.17g", total);
  json_array_append_new(tr, fl__vl_calculate(expr, "totalpct"));
  snprintf(expr, sizeof expr, "datum.self ? format(datum.self, %s) : '.'", fmt);
  json_array_append_new(tr, fl__vl_calculate(expr, "selfs"));
  snprintf(expr, sizeof expr, "datum.total ? format(datum.total, %s) : '.'", fmt);
  json_array_append_new(tr, fl__vl_calculate(expr, "totals"));
  json_array_append_new(
      tr, fl__vl_calculate("datum.self ? format(datum.selfpct, '.2f') + '%' : '.'", "selfpcts"));
  json_array_append_new(
      tr, fl__vl_calculate("datum.total ? format(datum.totalpct, '.2f') + '%' : '.'", "totalpcts"));
  snprintf(expr, sizeof expr, "datum.k === 'line' && datum.total === 0 ? %g : 1", DIM_OPACITY);
  json_array_append_new(tr, fl__vl_calculate(expr, "op"));
  json_array_append_new(tr, fl__source_src());
  json_array_append_new(tr, fl__source_indent(X_TEXT));
  json_array_append_new(tr, fl__vl_calculate("datum.k === 'line' ? '' + datum.line : ''", "ln"));
  snprintf(expr, sizeof expr,
           "{'file:line': datum.file + (datum.line ? ':' + datum.line : ''), 'self': datum.selfs "
           "+ ' %s (' + datum.selfpcts + ')', 'total': datum.totals + ' %s (' + datum.totalpcts "
           "+ ')'}",
           fl__unit(t), fl__unit(t));
  json_array_append_new(tr, fl__vl_calculate(expr, "tip"));
  return tr;
}

static const char *total_bar_color(const fl_view_opts_t *v) {
  return v->dark ? "#4a4a4a" : "#e4e4e4";
}

static json_t *vegalite_of(void *state) {
  const psource_t *p = state;
  const fl_tree_t *t = p->s.t;
  const fl_view_opts_t *v = p->v;
  const fl__source_t *s = &p->s;
  const fl__theme_t *th = fl__theme_of(v);
  json_t *values = fl__nonnull(json_array());
  for (size_t i = 0; i < s->n; i++) json_array_append_new(values, row_value(t, s, &s->rows[i], i));
  int width = fl__source_width(v, X_TEXT);
  fl__table_t tb = {.th = th, .y_field = "i", .row_px = ROW_PX, .bar_px = BAR_PX};
  const char *lines = "datum.k === 'line'";
  const fl__table_column_t columns[] = {
      {.field = "selfs", .x = X_SELF, .right = true, .filter = lines, .opacity_field = "op"},
      {.field = "selfpcts", .x = X_SELFPCT, .right = true, .filter = lines, .opacity_field = "op"},
      {.field = "totals", .x = X_TOTAL, .right = true, .filter = lines, .opacity_field = "op"},
      {.field = "totalpcts",
       .x = X_TOTALPCT,
       .right = true,
       .filter = lines,
       .opacity_field = "op"},
      {.field = "ln", .x = X_LINE, .right = true, .filter = lines, .opacity_field = "op"},
  };
  json_t *rows_layer = fl__nonnull(json_array());
  json_array_append_new(
      rows_layer, fl__table_bar(&tb, "totalpct", total_bar_color(v), NULL, lines, X_BARS, BARS_PX));
  json_array_append_new(rows_layer,
                        fl__table_bar(&tb, "selfpct", HEAT_COLOR, NULL, lines, X_BARS, BARS_PX));
  json_t *layers =
      fl__source_layers(&tb, columns, FL__ARRAY_SIZE(columns), width, X_TEXT, rows_layer, values,
                        source_transform(t, s->total), heads, N_HEADS);

  char description[200];
  snprintf(description, sizeof description, "Source lines of %s: %zu rows of %zu files",
           fl_tree_root(t)->frame.func, s->n, s->files_shown);
  char notes[FL__MAX_NOTES][FL__NOTE_SIZE];
  int n_notes = source_notes(t, v, s, notes);
  json_t *meta = fl__nonnull(json_pack("{s:s,s:s,s:I,s:I,s:I}", "view", "source", "unit",
                                       fl__unit(t), "total", (json_int_t)s->total, "files",
                                       (json_int_t)s->n_files, "rows", (json_int_t)s->n));
  return fl__table_spec(v, description, width, s->n, ROW_PX, layers, meta, notes, n_notes);
}

/* ---- SVG ---- */

static char *svg_of(void *state) {
  const psource_t *p = state;
  const fl_tree_t *t = p->s.t;
  const fl_view_opts_t *v = p->v;
  const fl__source_t *s = &p->s;
  char notes[FL__MAX_NOTES][FL__NOTE_SIZE];
  int n_notes = source_notes(t, v, s, notes);
  int width = fl__source_width(v, X_TEXT);
  double total = s->total ? (double)s->total : 1;
  size_t text_chars = (size_t)((width - X_TEXT) / FL__TABLE_CHAR_PX);
  fl__buf_t b = {0};
  fl__svg_table_t l;
  fl__svg_table_open(&b, v, notes, n_notes, width, s->n, ROW_PX, &l);
  fl__svg_table_headers(&b, &l, heads, N_HEADS);
  for (size_t i = 0; i < s->n; i++) {
    const fl__src_row_t *row = &s->rows[i];
    double mid = fl__svg_table_row_y(&l, i);
    char heading[600] = "";
    if (row->kind == FL__SRC_FILE) file_heading(heading, sizeof heading, t, row, s->total);
    if (fl__source_svg_aside(&b, &l, row, mid, X_TEXT, heading)) continue;
    bool dim = row->total == 0;
    if (dim) fl__buf_printf(&b, "<g opacity='%g'>\n", DIM_OPACITY);
    char num[48], share[16];
    if (row->total) {
      /* The bars, total pale with the line's tooltip, then self. */
      char *title;
      if (asprintf(&title, "%s:%d\nself %" PRIu64 " %s (%.2f%%), total %" PRIu64 " %s (%.2f%%)",
                   row->file, row->line, row->self, fl__unit(t), 100.0 * (double)row->self / total,
                   row->total, fl__unit(t), 100.0 * (double)row->total / total) < 0)
        fl__oom(0);
      fl__svg_hbar(&b, total_bar_color(v), BAR_PX, l.x0 + X_BARS, mid,
                   BARS_PX * (double)row->total / total, title);
      free(title);
      if (row->self)
        fl__svg_hbar(&b, HEAT_COLOR, BAR_PX, l.x0 + X_BARS, mid,
                     BARS_PX * (double)row->self / total, NULL);
      fl__buf_puts(&b, "\n");
    }
    count_text(num, t, row->self);
    fl__svg_cell(&b, l.x0 + X_SELF, mid, true, num);
    share_text(share, row->self, s->total);
    fl__svg_cell(&b, l.x0 + X_SELFPCT, mid, true, share);
    count_text(num, t, row->total);
    fl__svg_cell(&b, l.x0 + X_TOTAL, mid, true, num);
    share_text(share, row->total, s->total);
    fl__svg_cell(&b, l.x0 + X_TOTALPCT, mid, true, share);
    snprintf(num, sizeof num, "%d", row->line);
    fl__svg_cell(&b, l.x0 + X_LINE, mid, true, num);
    fl__source_svg_text(&b, &l, row, mid, X_TEXT, text_chars);
    if (dim) fl__buf_puts(&b, "</g>\n");
  }
  fl__buf_puts(&b, "</g>\n</svg>\n");
  return fl__buf_take(&b);
}

/* ---- the entry points ---- */

static const fl__source_drawings_t drawings = {vegalite_of, svg_of, text_of};

/* The drawing what of t's source with v (NULL: the defaults); nothing
 * drawn, with err, for a focus that names no function. */
static fl__drawn_t draw(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                        fl__drawing_t what, char *err, size_t err_size) {
  fl__drawn_t out = {0};
  psource_t p;
  p.v = fl__view_opts(v, &p.defaults);
  if (fl__source_build(&p.s, t, NULL, p.v, r, err, err_size) == 0)
    fl__source_draw(&drawings, &p, p.v, what, &out);
  fl__source_free(&p.s);
  return out;
}

json_t *fl_source_vegalite(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                           char *err, size_t err_size) {
  return draw(t, v, r, FL__DRAW_VEGALITE, err, err_size).json;
}

char *fl_source_svg(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                    char *err, size_t err_size) {
  return draw(t, v, r, FL__DRAW_SVG, err, err_size).text;
}

char *fl_text_source(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                     char *err, size_t err_size) {
  return draw(t, v, r, FL__DRAW_TEXT, err, err_size).text;
}

json_t *fl_source_bundle(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                         char *err, size_t err_size) {
  return draw(t, v, r, FL__DRAW_BUNDLE, err, err_size).json;
}

/* ---- view=source (fl__view.h): a tree's lines, or a diff's (fl_source_diff.c) ---- */

int fl__view_source(const fl__view_in_t *in, fl__drawing_t what, fl__drawn_t *out) {
  *out = in->diff
             ? fl__source_diff_draw(in->diff, in->view, in->source, what, in->err, in->err_size)
             : draw(in->tree, in->view, in->source, what, in->err, in->err_size);
  return out->json || out->text ? 0 : -1;
}
