/* fl__render: what the flame graph renderers share (fl_vegalite.c,
 * fl_svg.c, fl_bundle.c), so that the Vega-Lite view and the SVG draw the
 * same frames at the same places in the same colours.
 *
 *   rows     the frames to draw: fl_tree_rows, at most FL__MAX_ROWS.
 *   layout   plot width and height, pixels per level, from the view options
 *            and the deepest drawn frame.
 *   kinds    what kind of code a frame is (root, cell code, system library,
 *            allocator, kernel, other), its legend label and base colour.
 *   colours  a frame's colour: its kind's palette, varied by a hash of the
 *            function name (as flamegraph.pl does), so that neighbours differ
 *            and a function has one colour everywhere.
 *   notes    the lines under the title: the caller's note, and how many
 *            frames are not drawn.
 *   text     a valid UTF-8 copy of a string, for JSON and XML.
 *   buf      a growing string. */
#ifndef FL__RENDER_H
#define FL__RENDER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_render.h"

/* SPEC.md section 4: the Vega-Lite data holds at most this many rows. */
#define FL__MAX_ROWS 5000

/* ---- rows ---- */

typedef struct fl__rows {
  const fl_node_t **rows; /* pre-order, the root first; borrowed nodes */
  size_t n;
  size_t n_merged; /* visible nodes left out to stay within max_rows */
  int levels;      /* deepest drawn depth + 1 */
  uint64_t total;  /* the root's count */
} fl__rows_t;

/* Fills r with the rows to draw: at most max_rows (0 or more than
 * FL__MAX_ROWS: FL__MAX_ROWS). Returns 0, or -1 out of memory. */
int fl__rows_get(const fl_tree_t *t, size_t max_rows, fl__rows_t *r);
void fl__rows_free(fl__rows_t *r);

/* ---- layout ---- */

typedef struct fl__layout {
  int width;       /* plot width, pixels */
  double height;   /* plot height, pixels */
  double level_px; /* height of one level */
  bool labels;     /* levels are tall enough for labels */
} fl__layout_t;

/* v->height 0: 18 pixels a level, the plot at most 2000 pixels tall (and at
 * least one pixel a level); otherwise v->height split among the levels. */
void fl__layout_of(const fl_view_opts_t *v, const fl__rows_t *r, fl__layout_t *l);

/* Frames at least this many pixels wide get a thin outline in the
 * background colour that sets them apart; narrower ones would be all
 * outline. */
#define FL__OUTLINE_MIN_PX 2

/* ---- kinds and colours ---- */

typedef enum fl__kind {
  FL__KIND_CELL,
  FL__KIND_SYSTEM,
  FL__KIND_ALLOC,
  FL__KIND_KERNEL,
  FL__KIND_OTHER,
  FL__KIND_ROOT,
  FL__N_KINDS
} fl__kind_t;

fl__kind_t fl__kind_of(const fl_node_t *n);
/* "cell code", "system library", "allocator", "kernel", "other code", "root". */
const char *fl__kind_label(fl__kind_t k);
/* The kind's middle colour, "#rrggbb", for the legend. */
const char *fl__kind_color(fl__kind_t k);
/* A bit (1 << kind) for each kind among the rows. */
unsigned fl__kinds_present(const fl__rows_t *r);

/* The node's fill colour as "#rrggbb" into hex. */
void fl__node_color(const fl_node_t *n, char hex[8]);

typedef struct fl__theme {
  const char *background;
  const char *text;       /* titles, notes, legend, axis */
  const char *frame_text; /* labels on frames */
  const char *highlight;  /* the outline of frames that match a search */
} fl__theme_t;

const fl__theme_t *fl__theme_of(const fl_view_opts_t *v);

/* ---- words and notes ---- */

bool fl__is_alloc(const fl_tree_t *t);
/* What the x axis counts: "samples" or "bytes". */
const char *fl__unit(const fl_tree_t *t);

#define FL__MAX_NOTES 2
#define FL__NOTE_SIZE 512

/* The lines under the title: v->note, and how many frames are not drawn
 * (hidden by minwidth, left out to stay within the rows). Returns how many
 * lines were written. */
int fl__notes(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r,
              char lines[FL__MAX_NOTES][FL__NOTE_SIZE]);

/* "1,234,567". */
void fl__thousands(uint64_t n, char out[32]);

/* A copy of s (NULL: "") that is valid UTF-8 without control characters,
 * for JSON and XML: each invalid byte and each control character becomes
 * '?', except tabs and line breaks, which stay when lines is true and
 * become spaces otherwise. New, or NULL out of memory. */
char *fl__clean_text(const char *s, bool lines);

/* ---- a growing string ---- */

typedef struct fl__buf {
  char *data;
  size_t len, cap;
  bool oom;
} fl__buf_t;

void fl__buf_add(fl__buf_t *b, const char *s, size_t n);
void fl__buf_puts(fl__buf_t *b, const char *s);
void fl__buf_printf(fl__buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The string, now the caller's (free it); NULL if memory ran out. The buffer
 * is left empty. */
char *fl__buf_take(fl__buf_t *b);

/* ---- the renderers, on rows already chosen ---- */

json_t *fl__vegalite_rows(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r,
                          char *err, size_t err_size);
char *fl__svg_rows(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r);

#endif
