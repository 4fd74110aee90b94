/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_render: a flame graph tree drawn three ways, and the MIME bundle that
 * carries all three.
 *
 *   fl_vegalite  a Vega-Lite 5 spec: rectangles with labels that fit,
 *                tooltips, pan and wheel zoom along the sample axis,
 *                click-to-zoom and double-click reset, a search box that
 *                highlights matches and shows their share, a legend.
 *   fl_svg       the same layout and colours as a standalone SVG drawn here
 *                (labels truncated to fit, a <title> per frame), for exports
 *                and viewers without JavaScript.
 *   fl_text_*    the reports of Julia's Profile.print: an indented tree and
 *                a flat table.
 *
 * The Vega-Lite data has one row per drawn frame with the fields id, parent,
 * depth, x0, x1, count, self, pct, func, file, line, module, status (and
 * allocs for allocation profiles); at most max_rows rows.
 *
 * Out of memory aborts with a message, as everywhere in the flame library
 * (docs/LIBRARY.md): no function here returns NULL for it. */
#ifndef FL_RENDER_H
#define FL_RENDER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cflame/fl_api.h"
#include "cflame/fl_diff.h"
#include "cflame/fl_tree.h"

CFLAME_BEGIN_DECLS

/* A view: what a profile is drawn as (the option view=, fl_options.h). The
 * views are the rows of one table (flame/view/fl_views.c), in the order of the
 * HTML page's tabs; each view's tree is built by fl_tree with the options
 * that view sets. */
typedef struct fl_view_info {
  const char *name;  /* "flame": the value of view= and --view */
  const char *label; /* "Flame graph": its tab on the HTML page */
  const char *help;  /* what it shows, one line */
  bool draws_diff;   /* a diff can be drawn as this view */
  bool totals;       /* its figures are totals: drawn with minwidth 0 unless it is given */
} fl_view_info_t;

/* The i-th view of the table, in its order (0: the flame graph, the
 * default); NULL past the last. Static. */
const fl_view_info_t *fl_view_at(size_t i);

typedef struct fl_view_opts {
  int view;          /* the view: its index in the table of views (fl_view_at) */
  int width;         /* pixels */
  int height;        /* pixels; 0: sized to the depth, at most 4,000; levels that
                        would be thinner than 12 px are a band a click opens */
  const char *title; /* NULL: none */
  const char *focus; /* the function a view is about (sandwich, source); NULL: none */
  /* view=source: the directories whose source files may be read (NULL
   * terminated; NULL: none), besides those of a profile recorded here
   * (fl_profile_info_t.recorded_here). */
  const char *const *source_roots;
  double from, to;   /* view=chart: seconds from the start; 0: the start, the end */
  double dpi;        /* PNG output: dots per inch (the SVG's pixels are 96 to the inch) */
  bool png;          /* fl_output_bundle: add an image/png item */
  bool still;        /* a still picture (PNG, PDF): notes say nothing of clicks,
                        drags or wheels */
  const char *note;  /* a line under the title: samples, rate, CPU time */
  bool icicle;       /* root at the top (else at the bottom) */
  bool dark;         /* dark theme */
  size_t max_rows;   /* default 5000 */
  /* Bundles only (fl_bundle, fl_diff_bundle); NULL (default): none. */
  const char *markdown_hint; /* a line under the graph in text/markdown, which
                                front ends without a Vega-Lite renderer show:
                                where the interactive view is */
} fl_view_opts_t;

/* The defaults (of the option table, fl_options.h, where it holds them). */
void fl_view_opts_init(fl_view_opts_t *v);

/* The Vega-Lite 5 spec (with $schema). New reference, never NULL: err is
 * for errors of the input, and a tree has none. */
json_t *fl_vegalite(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);

/* The SVG document. New string (free it). */
char *fl_svg(const fl_tree_t *t, const fl_view_opts_t *v);

typedef struct fl_text_opts {
  int maxdepth;      /* deeper frames are not printed; 0 = no limit */
  uint64_t mincount; /* frames with fewer samples are not printed */
  int cols;          /* line width to cut at */
  size_t max_lines;  /* default 0 = no limit; the bundle uses 200 */
} fl_text_opts_t;

/* The defaults (of the option table, fl_options.h, where it holds them). */
void fl_text_opts_init(fl_text_opts_t *o);

/* Profile.print(format=:tree): a total line, a column header, then one
 * line per visible frame in pre-order, indented two spaces per depth:
 *   "   11     0  cell[1]"
 *   "    7     1    main  cell[1]:5"        (count, self, func, location)
 * Allocation trees print bytes with units and an Allocs column. Lines are
 * cut to cols with "…"; very deep indentation becomes "+DEPTH "; frames
 * deeper than maxdepth or below mincount are skipped; past max_lines a
 * "… N more lines" line ends the list; a last line says how many frames
 * minwidth hid. o NULL: the defaults. New string. */
char *fl_text_tree(const fl_tree_t *t, const fl_text_opts_t *o);

/* Profile.print(format=:flat): one line per distinct frame (the tree's
 * frame identity) with Count, Self, Percent, Function, File:Line, most
 * expensive first, ties by function, file, line. Count is the weight of the
 * samples whose stack holds the frame at least once (a recursive function
 * counts once per sample, unlike Julia's per-occurrence count), so no
 * count exceeds the total. The root is not listed. Made from the tree's
 * visible frames: build it with minwidth 0 for exact figures. maxdepth does
 * not apply. New string. */
char *fl_text_flat(const fl_tree_t *t, const fl_text_opts_t *o);

/* The most fl_text_tree or fl_text_flat of t under o take while they
 * write, in bytes (saturated): a line of cols for each of its nodes (and
 * the headers), its buffer's doubling included. What a drawing charges to
 * its budget (fl_budget.h) before it prints: cols=10000 of 10^6 frames is
 * 20 GB. */
size_t fl_text_bytes(const fl_tree_t *t, const fl_text_opts_t *o);

/* The MIME bundle {"application/vnd.vegalite.v5+json": spec,
 * "text/markdown": the svg in a <div> (for exports: nbconvert 6.5 strips
 * SVG items but not markdown), then v->markdown_hint as a line of its own,
 * "text/plain": v->note and the tree report (fl_text_tree), a
 * line each}: the SVG once (docs/PROFILING.md, "What each front end
 * shows"). New reference, never NULL (err as for fl_vegalite). */
json_t *fl_bundle(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);

/* ---- the top view (view=top) ----
 *
 * The functions (name, file and module: the line is not part of a
 * function, whatever lines= says) where the weight went, as pprof -top
 * lists them: self and total weight (total once per sample, however deep a
 * function recurses) and their shares, the first FL_TOP_ROWS by self and
 * the first FL_TOP_ROWS by total. Made from the tree's visible frames:
 * build it with minwidth 0 for exact figures (fl_output does, unless
 * minwidth is given). The Vega-Lite rows are func, file, module, symbol
 * (when it is not the name), self, total and color; its transforms add
 * selfpct, totalpct, the rank in the chosen order (the param `sort`,
 * "self" or "total") and sumpct. */
#define FL_TOP_ROWS 50
json_t *fl_top_vegalite(const fl_tree_t *t, const fl_view_opts_t *v);
char *fl_top_svg(const fl_tree_t *t, const fl_view_opts_t *v);
/* The report: a total line, what the tables are, then "By self:" and "By
 * total:", each a header and at most FL_TOP_ROWS lines with fixed columns
 * (the sorted weight, its share, the running sum of shares, the other
 * weight and its share, the function and its file or module). New. */
char *fl_text_top(const fl_tree_t *t, const fl_text_opts_t *o);
/* The live table of a profile that is still being recorded (`cflame record
 * --top` redraws it every second): headline (NULL: none), a line of the
 * processes (the root's children that stand for one, FL_FRAME_ROOT) and
 * the threads by their share of the total, the largest first, then one
 * table by self as fl_text_top's, with as many rows as fit in o->max_lines
 * lines in all (0: FL_TOP_ROWS rows), every line cut to o->cols columns.
 * So the whole fits a terminal of max_lines rows and cols columns. New. */
char *fl_text_top_live(const fl_tree_t *t, const char *headline, const fl_text_opts_t *o);
/* The bundle of the three, as fl_bundle's. New reference. */
json_t *fl_top_bundle(const fl_tree_t *t, const fl_view_opts_t *v);
/* The top table of a diff: the functions whose weight changed most (by
 * |delta| of total weight, or of self with delta=self; the diff's scale
 * and noise rule), the first FL_TOP_ROWS, in the diff's colours. Rows:
 * rank, func, file, module, self, total, base_self, base_total (in the
 * drawn profile's units), delta, change and color; usermeta.cflame.diff
 * is true. The text has Delta, the two profiles' weights and Change. */
json_t *fl_top_diff_vegalite(const fl_diff_t *d, const fl_view_opts_t *v);
char *fl_top_diff_svg(const fl_diff_t *d, const fl_view_opts_t *v);
char *fl_text_top_diff(const fl_diff_t *d, const fl_text_opts_t *o);
json_t *fl_top_diff_bundle(const fl_diff_t *d, const fl_view_opts_t *v);

/* ---- the source view (view=source) ----
 *
 * Source lines with the weight spent on each (fl_lines.h: self on the
 * innermost line of a stack, passing over system libraries and the
 * allocator; total once per stack), the files with the most self weight
 * first, at most five (with v->focus, the files of that function's
 * frames); a short file whole, a long one as windows around its sampled
 * lines. The Vega-Lite rows are i, k ("file", "line" or "gap"), file,
 * line, text, self and total (a file row: its heading). A file's text
 * comes from the reader. Made from the tree's visible frames: build it
 * with minwidth 0 for exact figures.
 * Each returns NULL with err when v->focus names no function of the tree
 * (err lists the nearest names). */
typedef struct fl_source_reader {
  /* The whole text of file when the caller holds it (a notebook's
   * "cell[3]"), new; NULL to read it from disk, which is done only for a
   * source file under a source root (v->source_roots; for a profile
   * recorded here, the working directory and its modules' directories).
   * NULL: files from disk alone. */
  char *(*read)(void *ctx, const char *file);
  void *ctx;
} fl_source_reader_t;
json_t *fl_source_vegalite(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                           char *err, size_t err_size);
char *fl_source_svg(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                    char *err, size_t err_size);
/* A pprof list-like table per file: Self, Self%, Total, Total%, Line and
 * the line's text; "." for nothing. */
char *fl_text_source(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                     char *err, size_t err_size);
json_t *fl_source_bundle(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                         char *err, size_t err_size);
/* The source of a diff: the lines of both profiles, each with its weight
 * in both (the other's scaled into the drawn one's units), the delta of
 * total weight (of self with delta=self) and its change by the diff's
 * noise rule; "new" for a line with no weight in the other profile. The
 * file each profile ran (a notebook cell run twice) is one file at two
 * versions, and an edited file's lines are realigned when both versions
 * can be read; the other's lines that are gone follow their file's as
 * rows k "removed", with their old number. The rows add base_self,
 * base_total, delta, change ("" for a line without weight) and color;
 * usermeta.cflame.diff is true. The text has Delta, the two weights,
 * Change, Line and the source. */
json_t *fl_source_diff_vegalite(const fl_diff_t *d, const fl_view_opts_t *v,
                                const fl_source_reader_t *r, char *err, size_t err_size);
char *fl_source_diff_svg(const fl_diff_t *d, const fl_view_opts_t *v, const fl_source_reader_t *r,
                         char *err, size_t err_size);
char *fl_text_source_diff(const fl_diff_t *d, const fl_view_opts_t *v, const fl_source_reader_t *r,
                          char *err, size_t err_size);
json_t *fl_source_diff_bundle(const fl_diff_t *d, const fl_view_opts_t *v,
                              const fl_source_reader_t *r, char *err, size_t err_size);

/* ---- pictures ----
 *
 * A view's SVG drawn by librsvg and cairo: as a PNG at dpi (the SVG's
 * pixels are 96 to the inch: 192 doubles them), or as a PDF whose text and
 * shapes stay vectors, its page the SVG's size in points. Each returns the
 * file's bytes (new; *len of them), or NULL with err (an SVG librsvg cannot
 * read; a picture too large). */
char *fl_picture_png(const char *svg, size_t svg_len, double dpi, size_t *len, char *err,
                     size_t err_size);
char *fl_picture_pdf(const char *svg, size_t svg_len, size_t *len, char *err, size_t err_size);
/* data (len bytes) in base64, as a MIME bundle holds an image. New string. */
char *fl_picture_base64(const char *data, size_t len);

/* ---- the stack chart (view=chart) ----
 *
 * The samples in time order (fl_timeline.h), one lane per thread named by
 * its number and name, each sample's stack drawn at its time with the
 * tree's root left out, a frame over consecutive samples one bar; from and
 * to (v) keep a range of seconds from the start. The Vega-Lite rows are
 * the bars: func, file, line, module, thread (the lane's name), depth (1:
 * under the root), t0 and t1 (seconds from the start), y (pixels), count
 * and color; dragging pans and the wheel zooms the time axis. The text
 * lists each lane's bars three deep. Each returns NULL with err when the
 * samples carry no time stamps (folded stacks) or from and to leave
 * nothing. Build the tree with minwidth 0 to draw every sample. */
json_t *fl_chart_vegalite(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);
char *fl_chart_svg(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);
char *fl_text_chart(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);
json_t *fl_chart_bundle(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);

/* ---- the sandwich (view=sandwich focus=FUNC) ----
 *
 * v->focus's callers above it (a flame graph of its stacks from its
 * innermost frame back to the root) and its callees below (an icicle of
 * its stacks from its outermost frame to the leaf), made from the samples
 * tree t counts, with the function's total and self share in the note.
 * The Vega-Lite spec is the two flame specs in a vconcat (each one's names
 * suffixed _callers and _callees; one search box), the SVG the two SVGs in
 * one, the text the two tree reports. Each returns NULL with err without
 * a focus, or when it names no function of t (err lists the nearest). */
json_t *fl_sandwich_vegalite(const fl_tree_t *t, const fl_view_opts_t *v, char *err,
                             size_t err_size);
char *fl_sandwich_svg(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);
char *fl_text_sandwich(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);
json_t *fl_sandwich_bundle(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);

/* n with thousands separators and its noun: "1 sample", "1,234 samples"
 * (one when n is 1, else many), into out (at most size bytes, cut if it
 * must be). The renderers write their counts so; front ends that write
 * about the same profiles use it too. */
void fl_count_noun(uint64_t n, const char *one, const char *many, char *out, size_t size);

/* ---- differential flame graphs (fl_diff.h) ----
 *
 * The same three renderings of a diff: the drawn tree's layout, each frame
 * coloured by its change — red for growth, blue for shrinkage, saturation by
 * |delta| on a scale symmetric around zero (fl_diff_max_delta), a neutral
 * grey for changes within noise, a distinct colour for new frames — with a
 * legend that says so, and the vanished frames listed under the graph with
 * their baseline counts. Rows add the fields base (null when new), delta and
 * change ("grew", "shrank", "same", "new"); tooltips give target, baseline
 * and delta in samples (or bytes) and percent. */
json_t *fl_vegalite_diff(const fl_diff_t *d, const fl_view_opts_t *v, char *err, size_t err_size);
char *fl_svg_diff(const fl_diff_t *d, const fl_view_opts_t *v);
char *fl_text_diff(const fl_diff_t *d, const fl_text_opts_t *o);
json_t *fl_diff_bundle(const fl_diff_t *d, const fl_view_opts_t *v, char *err, size_t err_size);

CFLAME_END_DECLS

#endif
