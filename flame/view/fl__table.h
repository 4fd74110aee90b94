/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__table: what the table views (fl_top.c, fl_source.c, fl_chart.c)
 * share, defined in fl__table.c: a Vega-Lite table's rows, columns,
 * headers and bars, and an SVG table's cells, bars and layout. */
#ifndef FL__TABLE_H
#define FL__TABLE_H

#include "fl__render.h"

#define FL__MONOSPACE "Menlo, Consolas, DejaVu Sans Mono, monospace"
#define FL__TABLE_FONT_PX 11.0
#define FL__TABLE_CHAR_PX (0.6 * FL__TABLE_FONT_PX) /* a monospace character */
#define FL__TABLE_HEADER_PX 18.0                    /* the column headers' row */

/* A Vega-Lite table: a row's y is its place by the ordinal field y_field,
 * its bars bar_px tall in a row of row_px; every mark's tooltip is the
 * rows' field "tip". */
typedef struct fl__table {
  const fl__theme_t *th;
  const char *y_field;
  double row_px, bar_px;
} fl__table_t;

typedef struct fl__table_column {
  const char *field;         /* the text */
  int x;                     /* pixels from the plot's left edge */
  const char *x_field;       /* instead of x: a field of pixels; NULL: x */
  bool right;                /* aligned at its right edge, else its left */
  int limit;                 /* pixels, cut with "…"; 0: none */
  const char *filter;        /* the rows it shows (a Vega expression); NULL: all */
  const char *opacity_field; /* NULL: opaque */
  bool bold;
} fl__table_column_t;

/* {"calculate": expr, "as": as}. New. */
json_t *fl__vl_calculate(const char *expr, const char *as);
/* A layer of text marks: column c of the rows. New. */
json_t *fl__table_text(const fl__table_t *tb, const fl__table_column_t *c);
/* A column's header above the rows, its text a Vega expression. New. */
json_t *fl__table_header(const fl__table_t *tb, const char *text_expr, int x, bool right);
/* A column's header: its text (no quotes), where it stands (pixels from
 * the plot's left edge), and whether it is aligned at its right edge. */
typedef struct fl__table_head {
  const char *text;
  int x;
  bool right;
} fl__table_head_t;
/* The n headers h as layers, appended to layers. */
void fl__table_headers(const fl__table_t *tb, const fl__table_head_t *h, size_t n, json_t *layers);
/* A layer of bars, share_field (0 to 100) drawn over px pixels from x0, in
 * color or by color_field; filter as a column's. New. */
json_t *fl__table_bar(const fl__table_t *tb, const char *share_field, const char *color,
                      const char *color_field, const char *filter, int x0, int px);
/* fl__vl_title, with room for the headers under it. */
json_t *fl__table_title(const fl_view_opts_t *v, char notes[][FL__NOTE_SIZE], int n_notes);
/* A table view's spec: description, width, rows of row_px, the layers
 * (taken), usermeta.cflame meta (taken, with the view's name and figures)
 * and the title with its notes. New. */
json_t *fl__table_spec(const fl_view_opts_t *v, const char *description, int width, size_t rows,
                       double row_px, json_t *layers, json_t *meta, char notes[][FL__NOTE_SIZE],
                       int n_notes);

/* An SVG table: where its header and rows are. */
typedef struct fl__svg_table {
  double x0;       /* the plot's left edge */
  double header_y; /* the headers' middle */
  double rows_top, row_px;
} fl__svg_table_t;

/* The svg element with the title and notes (fl__svg_opening), sized for
 * width and rows, then an open group of monospace text in the theme's
 * colour, which the caller closes with the svg. */
void fl__svg_table_open(fl__buf_t *b, const fl_view_opts_t *v, char notes[][FL__NOTE_SIZE],
                        int n_notes, int width, size_t rows, double row_px,
                        fl__svg_table_t *layout);
/* The middle of row i. */
double fl__svg_table_row_y(const fl__svg_table_t *layout, size_t i);
/* The n headers h of an SVG table, bold. */
void fl__svg_table_headers(fl__buf_t *b, const fl__svg_table_t *layout, const fl__table_head_t *h,
                           size_t n);
/* A cell's text at (x, y), anchored at its right (else its left, its
 * spaces kept). */
void fl__svg_cell(fl__buf_t *b, double x, double y, bool right, const char *s);
/* A horizontal bar from (x, y), w long and thick tall (0: as thick as the
 * group it is in says), with title (NULL: none; lines kept) as its
 * tooltip. */
void fl__svg_hbar(fl__buf_t *b, const char *color, double thick, double x, double y, double w,
                  const char *title);
/* s cleaned and cut to at most chars characters, the last one "…" when
 * cut. New. */
char *fl__text_cut(const char *s, size_t chars);

#endif
