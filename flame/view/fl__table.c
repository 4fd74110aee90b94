/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__table: what the table views (fl_top.c, fl_source.c) share, declared
 * in fl__table.h: a Vega-Lite table's rows, columns, headers and bars,
 * and an SVG table's cells, bars and layout. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__table.h"

/* ---- Vega-Lite ---- */

json_t *fl__vl_calculate(const char *expr, const char *as) {
  return fl__nonnull(json_pack("{s:s,s:s}", "calculate", expr, "as", as));
}

/* A row's y: its place by the ordinal field, its bars bar_px of row_px. */
static json_t *row_y(const fl__table_t *tb) {
  return fl__nonnull(json_pack("{s:s,s:s,s:n,s:{s:f}}", "field", tb->y_field, "type", "ordinal",
                               "axis", "scale", "paddingInner", 1 - tb->bar_px / tb->row_px));
}

json_t *fl__table_text(const fl__table_t *tb, const fl__table_column_t *c) {
  json_t *mark = fl__nonnull(json_pack(
      "{s:s,s:s,s:s,s:f,s:s,s:s}", "type", "text", "align", c->right ? "right" : "left", "baseline",
      "middle", "fontSize", FL__TABLE_FONT_PX, "font", FL__MONOSPACE, "color", tb->th->text));
  if (c->limit > 0) json_object_set_new(mark, "limit", json_integer(c->limit));
  if (c->bold) json_object_set_new(mark, "fontWeight", json_string("bold"));
  json_t *x = c->x_field
                  ? json_pack("{s:s,s:s,s:n}", "field", c->x_field, "type", "quantitative", "scale")
                  : json_pack("{s:i}", "value", c->x);
  json_t *layer = fl__nonnull(json_pack(
      "{s:o,s:{s:o,s:o,s:{s:s,s:s},s:{s:s}}}", "mark", mark, "encoding", "y", row_y(tb), "x",
      fl__nonnull(x), "text", "field", c->field, "type", "nominal", "tooltip", "field", "tip"));
  if (c->filter)
    json_object_set_new(layer, "transform", fl__nonnull(json_pack("[{s:s}]", "filter", c->filter)));
  if (c->opacity_field)
    json_object_set_new(json_object_get(layer, "encoding"), "opacity",
                        fl__nonnull(json_pack("{s:s,s:s,s:n}", "field", c->opacity_field, "type",
                                              "quantitative", "scale")));
  return layer;
}

json_t *fl__table_header(const fl__table_t *tb, const char *text_expr, int x, bool right) {
  return fl__nonnull(json_pack("{s:{s:[{}]},s:{s:s,s:i,s:f,s:s,s:s,s:f,s:s,s:s,s:{s:s}}}", "data",
                               "values", "mark", "type", "text", "x", x, "y",
                               -FL__TABLE_HEADER_PX / 2, "align", right ? "right" : "left",
                               "baseline", "middle", "fontSize", FL__TABLE_FONT_PX, "fontWeight",
                               "bold", "color", tb->th->text, "text", "expr", text_expr));
}

void fl__table_headers(const fl__table_t *tb, const fl__table_head_t *h, size_t n, json_t *layers) {
  for (size_t i = 0; i < n; i++) {
    char expr[64];
    snprintf(expr, sizeof expr, "'%s'", h[i].text);
    json_array_append_new(layers, fl__table_header(tb, expr, h[i].x, h[i].right));
  }
}

json_t *fl__table_bar(const fl__table_t *tb, const char *share_field, const char *color,
                      const char *color_field, const char *filter, int x0, int px) {
  json_t *encoding =
      fl__nonnull(json_pack("{s:o,s:{s:s,s:s,s:{s:[i,i],s:[i,i]},s:n},s:{s:s}}", "y", row_y(tb),
                            "x", "field", share_field, "type", "quantitative", "scale", "domain", 0,
                            100, "range", x0, x0 + px, "axis", "tooltip", "field", "tip"));
  json_t *mark = fl__nonnull(json_pack("{s:s}", "type", "bar"));
  if (color_field)
    json_object_set_new(
        encoding, "color",
        fl__nonnull(json_pack("{s:s,s:s,s:n}", "field", color_field, "type", "nominal", "scale")));
  else
    json_object_set_new(mark, "color", json_string(color));
  json_t *layer = fl__nonnull(json_pack("{s:o,s:o}", "mark", mark, "encoding", encoding));
  if (filter)
    json_object_set_new(layer, "transform", fl__nonnull(json_pack("[{s:s}]", "filter", filter)));
  return layer;
}

json_t *fl__table_title(const fl_view_opts_t *v, char notes[][FL__NOTE_SIZE], int n_notes) {
  json_t *title = fl__vl_title(v, notes, n_notes);
  /* Room for the column headers between the title and the rows. */
  if (title) json_object_set_new(title, "offset", json_real(FL__TABLE_HEADER_PX + 4));
  return title;
}

json_t *fl__table_spec(const fl_view_opts_t *v, const char *description, int width, size_t rows,
                       double row_px, json_t *layers, json_t *meta, char notes[][FL__NOTE_SIZE],
                       int n_notes) {
  // clang-format off
  json_t *spec = fl__nonnull(json_pack(
      "{s:s,s:o,s:i,s:f,s:s,s:o,s:o,s:{s:o}}",
      "$schema", "https://vega.github.io/schema/vega-lite/v5.json",
      "description", fl__json_text(description),
      "width", width,
      "height", row_px * (double)(rows ? rows : 1),
      "background", fl__theme_of(v)->background,
      "config", fl__vl_config(v),
      "layer", layers,
      "usermeta", "cflame", meta));
  // clang-format on
  json_t *title = fl__table_title(v, notes, n_notes);
  if (title) json_object_set_new(spec, "title", title);
  return spec;
}

/* ---- SVG ---- */

void fl__svg_table_headers(fl__buf_t *b, const fl__svg_table_t *layout, const fl__table_head_t *h,
                           size_t n) {
  fl__buf_puts(b, "<g font-weight='bold'>\n");
  for (size_t i = 0; i < n; i++)
    fl__svg_cell(b, layout->x0 + h[i].x, layout->header_y, h[i].right, h[i].text);
  fl__buf_puts(b, "</g>\n");
}

void fl__svg_cell(fl__buf_t *b, double x, double y, bool right, const char *s) {
  fl__buf_puts(b, "<text x='");
  fl__svg_px(b, x);
  fl__buf_puts(b, "' y='");
  fl__svg_px(b, y);
  fl__buf_puts(b, right ? "' text-anchor='end'>" : "' xml:space='preserve'>");
  fl__svg_text(b, s);
  fl__buf_puts(b, "</text>\n");
}

void fl__svg_hbar(fl__buf_t *b, const char *color, double thick, double x, double y, double w,
                  const char *title) {
  fl__buf_printf(b, "<path stroke='%s'", color);
  if (thick > 0) fl__buf_printf(b, " stroke-width='%g'", thick);
  fl__buf_puts(b, " d='M");
  fl__svg_px(b, x);
  fl__buf_puts(b, " ");
  fl__svg_px(b, y);
  fl__buf_puts(b, "h");
  fl__svg_px(b, fmax(0.1, w));
  if (!title) {
    fl__buf_puts(b, "'/>");
    return;
  }
  fl__buf_puts(b, "'><title>");
  char *clean = fl__clean_text(title, true); /* a tooltip's lines stay lines */
  fl__svg_escaped(b, clean, strlen(clean));
  free(clean);
  fl__buf_puts(b, "</title></path>");
}

char *fl__text_cut(const char *s, size_t chars) {
  char *clean = fl__clean_text(s, false);
  size_t n = 0;
  for (size_t i = 0; clean[i] && chars > 0; i++) {
    if (((unsigned char)clean[i] & 0xc0) == 0x80 || n++ != chars - 1) continue;
    size_t rest = 0;
    for (size_t k = i; clean[k]; k++) rest += ((unsigned char)clean[k] & 0xc0) != 0x80;
    if (rest <= 1) break;
    clean[i] = '\0';
    char *out;
    if (asprintf(&out, "%s\xe2\x80\xa6", clean) < 0) fl__oom(0);
    free(clean);
    return out;
  }
  return clean;
}

void fl__svg_table_open(fl__buf_t *b, const fl_view_opts_t *v, char notes[][FL__NOTE_SIZE],
                        int n_notes, int width, size_t rows, double row_px,
                        fl__svg_table_t *layout) {
  bool has_title = v->title && v->title[0];
  double y = FL__SVG_MARGIN;
  double title_y = has_title ? (y += 16) : 0;
  double note_y[FL__MAX_NOTES];
  for (int i = 0; i < n_notes; i++) note_y[i] = (y += 16);
  layout->x0 = FL__SVG_MARGIN;
  layout->header_y = y + 12 + FL__TABLE_HEADER_PX / 2;
  layout->rows_top = y + 12 + FL__TABLE_HEADER_PX;
  layout->row_px = row_px;
  double full_h = layout->rows_top + row_px * (double)rows + 8 + FL__SVG_MARGIN;
  const fl__theme_t *th = fl__theme_of(v);
  fl__svg_opening(b, th, v, FL__SVG_TABLE, width + 2 * FL__SVG_MARGIN, full_h, title_y, notes,
                  note_y, n_notes);
  fl__buf_printf(b, "<g font-family='%s' font-size='%g' fill='%s' dominant-baseline='middle'>\n",
                 FL__MONOSPACE, FL__TABLE_FONT_PX, th->text);
}

double fl__svg_table_row_y(const fl__svg_table_t *layout, size_t i) {
  return layout->rows_top + layout->row_px * ((double)i + 0.5);
}
