/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__render: what the flame graph renderers share, defined in fl__render.c
 * and imported by the renderers (fl_vegalite.c, fl_svg.c, fl_text.c,
 * fl_html.c) and by fl_bundle.c, which assembles their output: so that the
 * Vega-Lite view and the SVG draw the same frames at the same places in the
 * same colours.
 *
 *   rows     the frames to draw: fl_tree_rows, at most FL__MAX_ROWS, and a
 *            merged frame for each one's narrow children (fl_tree_narrow).
 *   layout   plot width and height, pixels per level, from the view options
 *            and the deepest drawn frame; and how many levels are drawn, the
 *            deeper ones collapsed into a band that a click opens.
 *   kinds    what kind of code a frame is (root, cell code, system library,
 *            allocator, kernel, other), its legend label and colour: one
 *            table in fl__render.c.
 *   colours  a frame's colour: its kind's, varied a little by a hash of the
 *            function name (as flamegraph.pl does), so that neighbours differ
 *            and a function has one colour everywhere, and every frame looks
 *            like its kind's swatch in the legend.
 *   notes    the lines under the title: the caller's note, a diff's notes
 *            and summary, and how many frames are not drawn.
 *   diffs    what a differential flame graph adds (fl_diff.h): its colours
 *            (by change, saturation by |delta|), legend, the words for the
 *            drawn and the other profile, and the list of vanished frames.
 *   amounts  counts, bytes and shares in words (text itself: fl__text.h;
 *            totals per function: fl__totals.h).
 *
 * A diff is drawn by the same code as a plain graph: rows of its drawn tree
 * (fl_diff_tree) with rows.diff set, which switches colours, tooltips,
 * legend and notes to the diff's, and adds the vanished list. */
#ifndef FL__RENDER_H
#define FL__RENDER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_render.h"
#include "fl__common.h"
#include "fl__text.h"
#include "fl__totals.h"

/* The Vega-Lite data holds at most this many rows, whatever the profile, so
 * that a notebook stays usable (docs/PROFILING.md). */
#define FL__MAX_ROWS 5000
/* A bundle stays under this many bytes as compact JSON: under 1 MB with
 * room for the display_data message around it. */
#define FL__BUNDLE_MAX_BYTES 1000000

/* ---- rows ---- */

typedef struct fl__rows {
  const fl_node_t **rows; /* pre-order, the root first; borrowed nodes and
                             the merged frames below */
  size_t n;
  size_t n_merged;       /* visible nodes left out to stay within max_rows */
  int levels;            /* deepest drawn depth + 1 */
  int *deep;             /* per row: the deepest depth among its drawn descendants
                            (its own depth for a leaf) */
  uint64_t total;        /* the root's count */
  const fl_diff_t *diff; /* a diff's rows (of fl_diff_tree), or NULL */
  const fl_tree_t *tree;
  /* The merged frames (FL_STATUS_MERGED): one after the drawn children of
   * each row whose narrow children minwidth hid (fl_tree_narrow), as wide
   * as they are together, named "N narrow frames" and coloured as the
   * widest of them. Its id is past the tree's; its parent the row. */
  fl_node_t *merged;
  char (*merged_names)[40];
  size_t n_merged_frames;
  size_t n_held; /* the narrow frames they hold */
  uint64_t held_weight;
} fl__rows_t;

/* Fills r with the rows to draw of t (d's drawn tree when d is not NULL):
 * at most max_rows (0 or more than FL__MAX_ROWS: FL__MAX_ROWS), merged
 * frames included. */
void fl__rows_get(const fl_tree_t *t, const fl_diff_t *d, size_t max_rows, fl__rows_t *r);
/* The narrow frames merged frame n (FL_STATUS_MERGED) of r holds, widest
 * first: *items borrowed. */
size_t fl__rows_held(const fl__rows_t *r, const fl_node_t *n, const fl_narrow_t **items);
/* How many of a merged frame's widest frames its tooltip names. */
#define FL__HELD_LISTED 5
/* What merged frame n holds, for its tooltip: its FL__HELD_LISTED widest
 * frames, each "name (P%)" of the total, then "… and K more", each item
 * after sep; raw text (escape it for the format). */
void fl__held_text(const fl__rows_t *r, const fl_node_t *n, const char *sep, fl__buf_t *out);
void fl__rows_free(fl__rows_t *r);

/* ---- layout ---- */

typedef struct fl__layout {
  int width;       /* plot width, pixels */
  double height;   /* plot height, pixels: shown levels of level_px */
  double level_px; /* height of one level */
  int shown;       /* levels drawn, the band's included: r->levels, or fewer */
  bool band;       /* level shown - 1 is the band: each frame of that depth
                      with deeper ones is drawn collapsed, its subtree with it */
  bool labels;     /* levels are tall enough for labels */
} fl__layout_t;

/* Levels never get thinner than this, so that every frame wide enough for
 * text is labelled (11 px text), unless an explicit height is too small
 * for two levels. */
#define FL__MIN_LEVEL_PX 12.0

/* v->height 0: 18 pixels a level up to a 2,000-pixel plot, then thinner
 * levels down to FL__MIN_LEVEL_PX, then a taller plot up to
 * FL__MAX_AUTO_HEIGHT; otherwise v->height split among the levels, down to
 * FL__MIN_LEVEL_PX. Levels that do not fit go into the band (l->band):
 * the last level drawn, where each frame with deeper ones stands for its
 * whole subtree, and opens it when clicked: a zoom into a frame whose
 * subtree reaches the band lays the levels out afresh from that frame up. */
#define FL__MAX_AUTO_HEIGHT 4000.0
void fl__layout_of(const fl_view_opts_t *v, const fl__rows_t *r, fl__layout_t *l);

/* Whether row i of r is drawn collapsed in the band (of the whole graph,
 * before a click moves it): it stands on the band's level and has deeper
 * frames. */
static inline bool fl__row_in_band(const fl__layout_t *l, const fl__rows_t *r, size_t i) {
  return l->band && r->rows[i]->depth == l->shown - 1 && r->deep[i] > r->rows[i]->depth;
}

/* The band's label for a frame at depth with its deepest descendant at
 * deep, in at most fit characters (0: any): "… 812 more levels (click to
 * open)", else "… 812 more levels", else "… 812" (cut where even that is
 * too long); the number is what a reader needs most. A still picture
 * (PNG, PDF) cannot be clicked: its label never says to. The SVG's script
 * writes the same words when a zoom moves the band. */
void fl__band_label(int depth, int deep, size_t fit, bool still, char *out, size_t size);
/* The band's fill; a dashed outline in the theme's text colour sets it
 * apart from a grey frame. */
#define FL__BAND_COLOR "#d8d8d8"

/* Frames at least this many pixels wide get a thin outline in the
 * background colour that sets them apart; narrower ones would be all
 * outline. */
#define FL__OUTLINE_MIN_PX 2

/* ---- kinds and colours ---- */

typedef enum fl__kind {
  FL__KIND_CELL,    /* code of a notebook cell (FL_FRAME_REPL) */
  FL__KIND_PROGRAM, /* a program's own code, read from a file: coloured as cell code */
  FL__KIND_SYSTEM,
  FL__KIND_ALLOC,
  FL__KIND_KERNEL,
  FL__KIND_OTHER,
  FL__KIND_OFFCPU, /* a wait (FL_FRAME_OFFCPU) */
  FL__KIND_ROOT,
  FL__N_KINDS
} fl__kind_t;

fl__kind_t fl__kind_of(const fl_node_t *n);
/* "cell code", "program code", "system library", "allocator", "kernel",
 * "other code", "root". */
const char *fl__kind_label(fl__kind_t k);
/* The kind's colour, "#rrggbb": the legend's swatch, which each frame of
 * the kind's colour (fl__node_color) is within 20 of on each channel. */
const char *fl__kind_color(fl__kind_t k);
/* A bit (1 << kind) for each kind among the rows. */
unsigned fl__kinds_present(const fl__rows_t *r);

/* The node's fill colour as "#rrggbb" into hex. */
void fl__node_color(const fl_node_t *n, char hex[8]);
/* The frame's symbol where it is not its name (a mangled C++ or Rust
 * name), else NULL: what the renderings show as "symbol". */
static inline const char *fl__frame_symbol(const fl_frame_t *f) {
  return f->system_name && f->system_name != f->func ? f->system_name : NULL;
}

/* The diff of row n of a diff's rows: a merged frame's is its parent's
 * fl_diff_narrow, any other's fl_diff_node. NULL: none. */
const fl_diff_node_t *fl__row_diff(const fl_diff_t *d, const fl_node_t *n);

/* A row's fill: fl__diff_color for a diff's rows, else fl__node_color. */
void fl__row_color(const fl__rows_t *r, const fl_node_t *n, char hex[8]);

typedef struct fl__theme {
  const char *background;
  const char *text;       /* titles, notes, legend, axis */
  const char *frame_text; /* labels on frames */
  const char *highlight;  /* the outline of frames that match a search */
} fl__theme_t;

/* v, or (v NULL) the defaults, written into *defaults: what every drawing
 * entry point draws with. */
static inline const fl_view_opts_t *fl__view_opts(const fl_view_opts_t *v,
                                                  fl_view_opts_t *defaults) {
  if (v) return v;
  fl_view_opts_init(defaults);
  return defaults;
}

const fl__theme_t *fl__theme_of(const fl_view_opts_t *v);

/* ---- words and notes ---- */

bool fl__is_alloc(const fl_tree_t *t);
/* An allocation profile weighed by allocation counts, not bytes. */
bool fl__alloc_counts(const fl_tree_t *t);
/* What the x axis counts: "samples", "bytes" or "allocations". */
const char *fl__unit(const fl_tree_t *t);
/* The unit for an amount n of it: "sample" when n is 1, else fl__unit. */
const char *fl__unit_for(const fl_tree_t *t, double n);

#define FL__MAX_NOTES 12
#define FL__NOTE_SIZE 512

/* The lines under the title: v->note; for a diff (r->diff), its notes
 * (fl_diff_notes), "baseline layout, …" when negated, and the summary
 * (fl__diff_summary); and how many narrow frames are merged (minwidth)
 * and left out to stay within the rows. Each is wrapped at spaces
 * to the plot's width. Returns how many lines were written. */
int fl__notes(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r,
              char lines[FL__MAX_NOTES][FL__NOTE_SIZE]);

/* "1,234,567". */
void fl__thousands(uint64_t n, char out[32]);
/* "512 B", "1.5 KiB", "12.0 MiB", "3.2 GiB" into buf. */
void fl__bytes(char *buf, size_t size, uint64_t bytes);
/* v with thousands separators and at most two decimals, trailing zeros
 * dropped ("1,234", "12.5", "-0.25"); with sign, "+" before positive
 * values and zero. */
void fl__amount(double v, bool sign, char out[48]);

/* ---- diffs ---- */

/* The fills of a diff (docs/DIFF.md): a change's colour runs from a
 * pale tint (the smallest change) to the full colour (|delta| equal to
 * fl_diff_max_delta): white mixed with the full colour, its share
 * FL__DIFF_MIN_TINT + (1 - FL__DIFF_MIN_TINT) |delta| / max, the same for
 * red and blue, so equal changes either way are equally saturated. Frames
 * whose change is within noise are neutral grey, new frames teal: neither
 * red, blue nor grey, and readable with black labels on both themes. */
#define FL__DIFF_GREW_COLOR "#d72828"   /* the full red */
#define FL__DIFF_SHRANK_COLOR "#2864d7" /* the full blue */
#define FL__DIFF_SAME_COLOR "#c8c8c8"
#define FL__DIFF_NEW_COLOR "#2aa198"
#define FL__DIFF_MIN_TINT 0.2

/* The fill of node n of d's drawn tree, by its change and |delta|. */
void fl__diff_color(const fl_diff_t *d, const fl_node_t *n, char hex[8]);
/* The rows' change field: "grew", "shrank", "same", "new". */
const char *fl__change_name(fl_change_t c);
/* A table's colour of change c: the full one of its frames. */
const char *fl__change_color(fl_change_t c);
/* "Target" for "target": a column's header. */
void fl__capitalized(char *out, size_t size, const char *word);

/* What the drawn tree is ("target", or "baseline" when negated) and what
 * the other one is. */
const char *fl__drawn_name(const fl_diff_t *d);
const char *fl__other_name(const fl_diff_t *d);

/* The legend: a title that says what the colours measure ("target −
 * baseline", or "baseline − target, baseline layout"), and one entry per
 * change in the order grew, shrank, same, new, each label starting with the
 * change's name. */
#define FL__N_CHANGES 4
typedef struct fl__legend_entry {
  fl_change_t change;
  const char *label;
  const char *color;
} fl__legend_entry_t;
const char *fl__diff_legend_title(const fl_diff_t *d);
void fl__diff_legend(const fl_diff_t *d, fl__legend_entry_t out[FL__N_CHANGES]);

/* "grew: 3 frames, shrank: 2, new: 1, vanished: 1; 85% of the target
 * within noise": the frames drawn, the root included, by change (the rows
 * r, or every node of the drawn tree when r is NULL), the vanished ones,
 * and fl_diff_neutral_share. So each count is of frames in that change's
 * colour. */
void fl__diff_summary(const fl_diff_t *d, const fl__rows_t *r, char *out, size_t size);

/* The vanished list under a diff: a header ("Vanished (in the baseline
 * only):", or "Only in the target (not drawn):" when negated), then at most
 * FL__VANISHED_MAX lines, widest first, then "… and K more". */
#define FL__VANISHED_MAX 20
const char *fl__vanished_header(const fl_diff_t *d);
/* "func  file:line  — baseline 12 samples (3.4%)": the frame, its count
 * (scaled to the drawn tree's units) and its share of the other profile.
 * Raw: the caller cleans it for JSON or XML. */
void fl__vanished_line(const fl_diff_t *d, const fl_vanished_t *v, char *out, size_t size);
/* The other profile's total, scaled to the drawn tree's units (the root's
 * base); 0 when empty. */
double fl__other_total(const fl_diff_t *d);

/* ---- legends ---- */

/* An SVG legend's swatch and its label at x, on the line whose baseline is
 * y; returns the x of the next one. */
double fl__svg_swatch(fl__buf_t *b, double x, double y, const char *color, const char *label);
/* The kinds of code in kinds (bits of fl__kind_t) as one SVG line of
 * swatches at y, from the left margin. */
void fl__svg_kinds_legend(fl__buf_t *b, unsigned kinds, double y);
/* The same as a Vega-Lite layer named "legend": an empty layer whose colour
 * scale names the kinds, shown as a legend under the plot. New. */
json_t *fl__vl_kinds_legend(unsigned kinds);
/* A layer named "legend" that draws no mark: its colour scale, of field's
 * values domain in the colours range, shown as legend says (a Vega-Lite
 * legend object). Steals domain, range and legend; new. */
json_t *fl__vl_legend_layer(const char *field, json_t *domain, json_t *range, json_t *legend);

/* ---- pieces of every Vega-Lite spec ---- */


/* The title: v->title with the notes as its subtitle (without a title,
 * the first note in the subtitle's style); NULL when there are neither.
 * New. */
json_t *fl__vl_title(const fl_view_opts_t *v, char notes[][FL__NOTE_SIZE], int n_notes);
/* config: no view outline, axis and legend text in the theme's colour. */
json_t *fl__vl_config(const fl_view_opts_t *v);

/* ---- pieces of every SVG ---- */

#define FL__SVG_MARGIN 10.0
#define FL__SVG_SANS "Helvetica, Arial, sans-serif"
/* The smallest share of its width a page may scale a picture to: 11 px
 * labels stay at 7.7 px or more. */
#define FL__SVG_MIN_SCALE 0.7

/* s (n bytes), escaped for XML text and attribute values. */
void fl__svg_escaped(fl__buf_t *b, const char *s, size_t n);
/* s (any bytes; NULL as "") cleaned to valid UTF-8 without control
 * characters, then escaped. */
void fl__svg_text(fl__buf_t *b, const char *s);
/* A pixel value with one decimal, without a trailing ".0". */
void fl__svg_px(fl__buf_t *b, double px);
/* What the interactive SVG's script (flame/draw/fl_svg_script.js) is told of
 * an SVG: the kind of drawing in its data-cflame attribute. A graph's and
 * a chart's frames zoom along x, inside the plot from FL__SVG_MARGIN to
 * the width less FL__SVG_MARGIN (data-plot); a table's rows do not. */
typedef enum fl__svg_kind { FL__SVG_GRAPH, FL__SVG_CHART, FL__SVG_TABLE } fl__svg_kind_t;

/* The svg element (marked with its kind), its background, then the title
 * (at title_y) and the notes (at note_y[i]), in the theme's text colour. */
void fl__svg_opening(fl__buf_t *b, const fl__theme_t *th, const fl_view_opts_t *v,
                     fl__svg_kind_t kind, double full_w, double full_h, double title_y,
                     char notes[][FL__NOTE_SIZE], const double *note_y, int n_notes);

/* svg (what a view's SVG renderer wrote) made interactive by itself: the
 * script of flame/draw/fl_svg_script.js before its closing tag, and when hint
 * is not NULL, that line at its top right, which the script takes away
 * (what a viewer without scripts shows instead). New string. */
char *fl__svg_interactive(const char *svg, const char *hint);

/* ---- notes of any view ---- */

/* v->note, then lines (n_lines of them), each wrapped to the plot's width
 * (v->width), into out; returns how many lines were written. */
int fl__view_notes(const fl_view_opts_t *v, const char *const *lines, size_t n_lines,
                   char out[FL__MAX_NOTES][FL__NOTE_SIZE]);

/* err when budget b refused what drawing t would take: "WHAT of x.gz
 * (pprof) needs more than ..." (fl_budget_message). */
void fl__budget_refused(const fl_budget_t *b, const fl_tree_t *t, const char *what, char *err,
                        size_t err_size);

/* ---- bundles ---- */

/* The bundle of a view already drawn: spec (taken), the SVG in text/markdown
 * with v->markdown_hint, and text/plain: v->note, a line
 * each, then report. New. */
json_t *fl__bundle_assemble(json_t *spec, const char *svg, const char *report,
                            const fl_view_opts_t *v);

/* ---- the renderers, on rows already chosen ---- */

/* New; never NULL. */
json_t *fl__vegalite_rows(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r);
char *fl__svg_rows(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r);

#endif
