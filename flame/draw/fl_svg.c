/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_svg: a flame graph as a standalone SVG document, for exports and for
 * viewers without JavaScript.
 *
 * The same rows, layout and colours as the Vega-Lite view (fl__render.h):
 * one <path> per frame (put_frames) with a <title> child that holds the tooltip text
 * (function, file:line and module where known, samples or bytes with the percent of the
 * total, self, and what C=false folded in), the function name drawn inside
 * where three characters fit and cut with "…" to the frame's width, the
 * title and notes above, a legend of the kinds of code below.
 *
 * A diff (fl_svg_diff) is drawn the same way with the diff's colours; each
 * title adds the other profile's count, the delta and the change, the legend
 * names the changes, and the frames that vanished are listed under it.
 *
 * Labels are measured, not rendered: at 11 px in a monospace font a
 * character is 0.6 em wide, so a label of n characters needs 6.6 n pixels.
 * Styles are presentation attributes on groups rather than a <style>
 * element, so that an SVG pasted inline into an HTML page (nbconvert does)
 * styles nothing else on the page. Attribute values are single-quoted, which
 * saves escaping them in the JSON bundle.
 *
 * fl__svg_interactive makes any view's SVG interactive by itself: it adds
 * the script of fl_svg_script.js, which reads what the drawing already
 * holds (each frame's path and title, the data-cflame marks of
 * fl__svg_opening), so the data is not written twice. Pictures (PNG, PDF)
 * are drawn from the SVG without it. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__render.h"

#define LABEL_FONT_PX 11.0
#define LABEL_CHAR_PX (0.6 * LABEL_FONT_PX)
#define LABEL_PAD_PX 3.0
#define LABEL_MIN_CHARS 3
#define MONOSPACE "Menlo, Consolas, DejaVu Sans Mono, monospace"
#define VANISHED_LINE_PX 15
#define GAP_PX 0.5

/* The byte length of the first `chars` characters of valid UTF-8 s. */
static size_t utf8_prefix(const char *s, size_t chars) {
  size_t i = 0;
  while (s[i] && chars > 0) {
    i++;
    while (((unsigned char)s[i] & 0xc0) == 0x80) i++;
    chars--;
  }
  return i;
}

/* The first lines of a tooltip: the frame's label (the function, with
 * what tells it apart from a sibling of the same name), then where it is, when that
 * is known: file:line, with the module where it is not the file (a cell's
 * module is its file), or the module alone. A frame with neither (the
 * root, a frame of folded stacks without lines) has no location line. */
static void put_frame_id(fl__buf_t *b, const fl_node_t *n) {
  const fl_frame_t *f = &n->frame;
  char *label = fl_node_label(n);
  fl__svg_text(b, label);
  free(label);
  if (fl__frame_symbol(f)) {
    fl__buf_puts(b, "\nsymbol ");
    fl__svg_text(b, f->system_name);
  }
  if (f->file) {
    fl__buf_puts(b, "\n");
    fl__svg_text(b, f->file);
    if (f->line > 0) fl__buf_printf(b, ":%d", f->line);
    if (f->module && strcmp(f->module, f->file) != 0) {
      fl__buf_puts(b, " (");
      fl__svg_text(b, f->module);
      fl__buf_puts(b, ")");
    }
  } else if (f->module) {
    fl__buf_puts(b, "\n");
    fl__svg_text(b, f->module);
  }
}

static void put_folded(fl__buf_t *b, const fl_node_t *n) {
  if (!(n->status & (FL_STATUS_SYSTEM | FL_STATUS_ALLOC))) return;
  fl__buf_puts(b, "\nfolded in: ");
  if (n->status & FL_STATUS_SYSTEM) fl__buf_puts(b, "system libraries");
  if ((n->status & FL_STATUS_SYSTEM) && (n->status & FL_STATUS_ALLOC)) fl__buf_puts(b, ", ");
  if (n->status & FL_STATUS_ALLOC) fl__buf_puts(b, "allocator");
}

/* What merged frame n holds: ", the widest:" (", that is:" for one), then
 * a line each. */
static void put_held(fl__buf_t *b, const fl__rows_t *r, const fl_node_t *n) {
  const fl_narrow_t *items;
  fl__buf_printf(b, ", %s:", fl__rows_held(r, n, &items) > 1 ? "the widest" : "that is");
  fl__buf_t held = {0};
  fl__held_text(r, n, "\n", &held);
  /* A line each: fl__svg_text would make the line breaks spaces. */
  for (char *line = held.data, *end; line; line = end ? end + 1 : NULL) {
    end = strchr(line, '\n');
    if (end) *end = '\0';
    fl__buf_puts(b, "\n");
    fl__svg_text(b, line);
  }
  fl__buf_free(&held);
}

/* The tooltip: function; location and module; weight, percent and self;
 * what was folded in. A merged frame's: "N narrow frames", their weight
 * and percent, and the widest of them with their percents (a diff's adds
 * them to its own). */
static void put_title(fl__buf_t *b, const fl_tree_t *t, const fl__rows_t *r, const fl_node_t *n,
                      uint64_t total, bool alloc, bool counts) {
  char count[64], self[64], allocs[64];
  const char *one = fl__unit_for(t, 1), *many = fl__unit(t);
  fl_count_noun(n->count, one, many, count, sizeof count);
  if (alloc && !counts)
    fl_count_noun(n->self, one, many, self, sizeof self);
  else
    fl__thousands(n->self, self);
  fl_count_noun(n->allocs, "allocation", "allocations", allocs, sizeof allocs);
  double pct = total ? 100.0 * (double)n->count / (double)total : 0;

  fl__buf_puts(b, "<title>");
  put_frame_id(b, n);
  if (n->status & FL_STATUS_MERGED) {
    /* Its count first: the script's search and share read the first percent. */
    fl__buf_printf(b, "\n%s (%.4g%%)", count, pct);
    put_held(b, r, n);
    fl__buf_puts(b, "</title>");
    return;
  }
  fl__buf_printf(b, "\n%s (%.4g%%), self %s", count, pct, self);
  if (alloc && !counts) fl__buf_printf(b, ", %s", allocs);
  put_folded(b, n);
  fl__buf_puts(b, "</title>");
}

/* The tooltip of a diff's frame: function; location and module; the drawn
 * profile's count and percent; the other's (or "new"); the delta with its
 * share of the drawn profile's total ("of the target"), and the change;
 * with delta=self the self counts; what was folded in. */
static void put_diff_title(fl__buf_t *b, const fl_diff_t *d, const fl__rows_t *r,
                           const fl_node_t *n, uint64_t total, bool alloc) {
  const fl_diff_node_t *dn = fl__row_diff(d, n);
  const fl_diff_opts_t *o = fl_diff_options(d);
  const fl_tree_t *t = fl_diff_tree(d);
  bool self = o->delta == FL_DELTA_SELF;
  fl__legend_entry_t legend[FL__N_CHANGES];
  fl__diff_legend(d, legend);
  char count[48], base[48], delta[48];
  fl__amount((double)n->count, false, count);
  fl__amount(dn ? dn->delta : 0, true, delta);
  double pct = total ? 100.0 * (double)n->count / (double)total : 0;
  double other_total = fl__other_total(d);

  fl__buf_puts(b, "<title>");
  put_frame_id(b, n);
  fl__buf_printf(b, "\n%s: %s %s (%.4g%%)", fl__drawn_name(d), count,
                 fl__unit_for(t, (double)n->count), pct);
  if (self) {
    fl__amount((double)n->self, false, count);
    fl__buf_printf(b, ", self %s", count);
  }
  fl__buf_printf(b, "\n%s: ", fl__other_name(d));
  if (!dn || !dn->has_base) {
    fl__buf_puts(b, o->negate ? "none (only in the baseline)" : "new");
  } else {
    fl__amount(dn->base, false, base);
    fl__buf_printf(b, "%s %s", base, fl__unit_for(t, dn->base));
    if (other_total > 0) fl__buf_printf(b, " (%.4g%%)", 100 * dn->base / other_total);
    if (self) {
      fl__amount(dn->base_self, false, base);
      fl__buf_printf(b, ", self %s", base);
    }
  }
  fl__buf_printf(b, "\ndelta: %s %s%s (%+.3g%% of the %s), ", delta, self ? "self " : "",
                 fl__unit_for(t, dn ? dn->delta : 0),
                 total ? 100.0 * (dn ? dn->delta : 0) / (double)total : 0.0, fl__drawn_name(d));
  fl_change_t change = dn ? dn->change : FL_CHANGE_SAME;
  for (int i = 0; i < FL__N_CHANGES; i++)
    if (legend[i].change == change) fl__buf_puts(b, legend[i].label);
  put_folded(b, n);
  if (n->status & FL_STATUS_MERGED) {
    fl__buf_puts(b, "\nof the narrow frames");
    put_held(b, r, n);
  }
  fl__buf_puts(b, "</title>");
}

/* How many characters of a label fit in a frame w pixels wide. */
static size_t label_fit(double w) {
  /* A hair added: a frame exactly n characters wide divides to a hair
   * under n in floating point, and holds n. */
  return (size_t)fmax(0, floor((w - 2 * LABEL_PAD_PX) / LABEL_CHAR_PX + 1e-9));
}

/* A label of a frame w pixels wide at (x, y): text cut to fit; nothing
 * when fewer than LABEL_MIN_CHARS characters fit. */
static void put_label(fl__buf_t *b, const char *text, double x, double y, double w) {
  size_t fit = label_fit(w);
  if (fit < LABEL_MIN_CHARS) return;
  char *name = fl__clean_text(text, false);
  size_t chars = fl__utf8_chars(name);
  fl__buf_puts(b, "<text x='");
  fl__svg_px(b, x + LABEL_PAD_PX);
  fl__buf_puts(b, "' y='");
  fl__svg_px(b, y);
  fl__buf_puts(b, "'>");
  if (chars <= fit) {
    fl__svg_escaped(b, name, strlen(name));
  } else {
    fl__svg_escaped(b, name, utf8_prefix(name, fit - 1));
    fl__buf_puts(b, "\xe2\x80\xa6"); /* … */
  }
  fl__buf_puts(b, "</text>\n");
  free(name);
}

/* "target − baseline:" then the changes in their full colours. */
static void put_diff_legend(fl__buf_t *b, const fl_diff_t *d, double y) {
  const char *title = fl__diff_legend_title(d);
  fl__buf_printf(b, "<text x='%g' y='%g' font-weight='bold'>", FL__SVG_MARGIN, y);
  fl__svg_text(b, title);
  fl__buf_puts(b, ":</text>\n");
  double x = FL__SVG_MARGIN + 7 * (double)(fl__utf8_chars(title) + 1) + 12;
  fl__legend_entry_t entries[FL__N_CHANGES];
  fl__diff_legend(d, entries);
  for (int i = 0; i < FL__N_CHANGES; i++)
    x = fl__svg_swatch(b, x, y, entries[i].color, entries[i].label);
}

/* A frame's colour and row, to draw the frames by colour. */
typedef struct colored {
  char color[8];
  size_t row;
} colored_t;

static int cmp_colored(const void *pa, const void *pb) {
  const colored_t *a = pa, *b = pb;
  int c = strcmp(a->color, b->color);
  return c ? c : (a->row > b->row) - (a->row < b->row);
}

/* Whether row i is drawn as a frame: below the band, or on its level with
 * nothing deeper. */
static bool drawn_as_frame(const fl__layout_t *l, const fl__rows_t *r, size_t i) {
  return r->rows[i]->depth < l->shown && !fl__row_in_band(l, r, i);
}

/* The band (fl__layout_t): a dashed box over each frame that stands for
 * its deeper subtree, labelled with how many levels it holds, in a group
 * whose data-rows says where depth 0 is, how far apart levels are (less:
 * upwards) and how many are drawn, from which the script lays the levels
 * out afresh when a click opens a subtree. */
static void put_band(fl__buf_t *b, const fl_view_opts_t *v, const fl__theme_t *th,
                     const fl__rows_t *r, const fl__layout_t *l, double plot_top, double scale) {
  double y0 = plot_top + ((v->icicle ? 0 : l->shown - 1) + 0.5) * l->level_px;
  double step = v->icicle ? l->level_px : -l->level_px;
  fl__buf_puts(b, "<g class='cflame-band' data-rows='");
  fl__svg_px(b, y0);
  fl__buf_puts(b, " ");
  fl__svg_px(b, step);
  fl__buf_printf(b,
                 " %d' fill='%s' stroke='%s' stroke-dasharray='3 2' font-family='%s' "
                 "font-size='%g'>\n",
                 l->shown, FL__BAND_COLOR, th->text, MONOSPACE, LABEL_FONT_PX);
  double band_mid = y0 + (l->shown - 1) * step;
  for (int pass = 0; pass < 2; pass++) {
    if (pass) fl__buf_printf(b, "<g stroke='none' fill='%s'>\n", th->frame_text);
    for (size_t i = 0; i < r->n; i++) {
      if (!fl__row_in_band(l, r, i)) continue;
      const fl_node_t *n = r->rows[i];
      double x = FL__SVG_MARGIN + (double)(n->x0 - r->rows[0]->x0) * scale;
      double w = fmax(0.1, (double)n->count * scale - GAP_PX);
      if (pass) {
        char label[96];
        fl__band_label(n->depth, r->deep[i], label_fit(w), v->still, label, sizeof label);
        put_label(b, label, x, band_mid + 0.36 * LABEL_FONT_PX, w);
        continue;
      }
      fl__buf_puts(b, "<rect x='");
      fl__svg_px(b, x);
      fl__buf_puts(b, "' y='");
      fl__svg_px(b, band_mid - (l->level_px - GAP_PX) / 2);
      fl__buf_puts(b, "' width='");
      fl__svg_px(b, w);
      fl__buf_puts(b, "' height='");
      fl__svg_px(b, l->level_px - GAP_PX);
      fl__buf_puts(b, "'/>\n");
    }
  }
  fl__buf_puts(b, "</g>\n</g>\n");
}

/* The frames: a path with its title each, then their labels on top, which
 * let the pointer through to the frame's title. A graph has thousands of
 * frames, so each is written short: a horizontal line "M x y h w" through
 * the middle of its level, stroked as wide as the level is tall (less
 * GAP_PX, the background showing through between levels), inside a group
 * that gives the stroke colour to every frame of that colour; frames do
 * not overlap, so their order does not matter, and a function's frames
 * share its colour. A frame at least FL__OUTLINE_MIN_PX wide also leaves
 * GAP_PX on its right, the outline the Vega-Lite view strokes; narrower
 * ones fill their whole width, so that they show. Frames in the band or
 * past it are written at the level their depth would have in a plot tall
 * enough, and not displayed: the script shows them when the band opens. */
static void put_frames(fl__buf_t *b, const fl_tree_t *t, const fl_view_opts_t *v,
                       const fl__theme_t *th, const fl__rows_t *r, const fl__layout_t *l,
                       double plot_top, double scale) {
  bool alloc = fl__is_alloc(t);
  bool tall = l->level_px >= FL__OUTLINE_MIN_PX;
  colored_t *by_color = fl__xmalloc(r->n ? r->n : 1, sizeof *by_color);
  for (size_t i = 0; i < r->n; i++) {
    fl__row_color(r, r->rows[i], by_color[i].color);
    by_color[i].row = i;
  }
  qsort(by_color, r->n, sizeof *by_color, cmp_colored);
  fl__buf_puts(b, "<g stroke-width='");
  fl__svg_px(b, tall ? l->level_px - GAP_PX : l->level_px);
  fl__buf_puts(b, "'>\n");
  for (size_t i = 0; i < r->n; i++) {
    if (i == 0 || strcmp(by_color[i].color, by_color[i - 1].color) != 0)
      fl__buf_printf(b, "%s<g stroke='%s'>\n", i ? "</g>\n" : "", by_color[i].color);
    size_t row = by_color[i].row;
    const fl_node_t *n = r->rows[row];
    int level = v->icicle ? n->depth : l->shown - 1 - n->depth;
    double w = (double)n->count * scale;
    fl__buf_puts(b, "<path d='M");
    fl__svg_px(b, FL__SVG_MARGIN + (double)(n->x0 - r->rows[0]->x0) * scale);
    fl__buf_puts(b, " ");
    fl__svg_px(b, plot_top + (level + 0.5) * l->level_px);
    fl__buf_puts(b, "h");
    fl__svg_px(b, fmax(0.1, w >= FL__OUTLINE_MIN_PX ? w - GAP_PX : w));
    fl__buf_puts(b, drawn_as_frame(l, r, row) ? "'>" : "' display='none'>");
    if (r->diff)
      put_diff_title(b, r->diff, r, n, r->total, alloc);
    else
      put_title(b, t, r, n, r->total, alloc, fl__alloc_counts(t));
    fl__buf_puts(b, "</path>\n");
  }
  fl__buf_puts(b, r->n ? "</g>\n</g>\n" : "</g>\n");
  free(by_color);
  if (l->labels) {
    fl__buf_printf(b, "<g font-family='%s' font-size='%g' fill='%s' pointer-events='none'>\n",
                   MONOSPACE, LABEL_FONT_PX, th->frame_text);
    for (size_t i = 0; i < r->n; i++) {
      const fl_node_t *n = r->rows[i];
      if (!drawn_as_frame(l, r, i)) continue;
      int level = v->icicle ? n->depth : l->shown - 1 - n->depth;
      double x = FL__SVG_MARGIN + (double)(n->x0 - r->rows[0]->x0) * scale;
      double mid = plot_top + (level + 0.5) * l->level_px;
      char *label = fl_node_label(n);
      put_label(b, label, x, mid + 0.36 * LABEL_FONT_PX, (double)n->count * scale);
      free(label);
    }
    fl__buf_puts(b, "</g>\n");
  }
  if (l->band) put_band(b, v, th, r, l, plot_top, scale);
}

/* A diff's vanished list: a header, the first shown lines, "… and K more". */
static void put_vanished(fl__buf_t *b, const fl_diff_t *d, const fl__theme_t *th,
                         const fl_vanished_t *vanished, size_t n_vanished, size_t shown, double y) {
  fl__buf_printf(b, "<g font-size='11' fill='%s'>\n", th->text);
  fl__buf_printf(b, "<text x='%g' y='%g' font-weight='bold'>", FL__SVG_MARGIN, y);
  fl__svg_text(b, fl__vanished_header(d));
  fl__buf_puts(b, "</text>\n");
  char line[1024];
  for (size_t i = 0; i < shown; i++) {
    fl__vanished_line(d, &vanished[i], line, sizeof line);
    /* xml:space keeps the two spaces between a name and its location
     * (browsers heed it on the text element only). */
    fl__buf_printf(b, "<text x='%g' y='%g' xml:space='preserve'>", FL__SVG_MARGIN,
                   y + VANISHED_LINE_PX * (i + 1.0));
    fl__svg_text(b, line);
    fl__buf_puts(b, "</text>\n");
  }
  if (n_vanished > shown) {
    char more[32];
    fl__thousands(n_vanished - shown, more);
    fl__buf_printf(b, "<text x='%g' y='%g'>\xe2\x80\xa6 and %s more</text>\n", FL__SVG_MARGIN,
                   y + VANISHED_LINE_PX * (shown + 1.0), more);
  }
  fl__buf_puts(b, "</g>\n");
}

extern const char fl__svg_script[]; /* flame/draw/fl_svg_script.js, generated */

char *fl__svg_interactive(const char *svg, const char *hint) {
  const char *end = NULL;
  for (const char *p = svg; (p = strstr(p, "</svg>")); p++) end = p;
  if (!end) end = svg + strlen(svg);
  fl__buf_t b = {0};
  fl__buf_add(&b, svg, (size_t)(end - svg));
  if (hint && hint[0]) {
    fl__buf_puts(&b,
                 "<text class='cflame-hint' x='100%' dx='-10' y='12' font-size='10' "
                 "text-anchor='end' fill='#888888'>");
    fl__svg_text(&b, hint);
    fl__buf_puts(&b, "</text>\n");
  }
  /* CDATA: the script's text is not markup, in an SVG file and in SVG
   * inline in HTML (foreign content) alike. */
  fl__buf_puts(&b, "<script><![CDATA[\n");
  fl__buf_puts(&b, fl__svg_script);
  fl__buf_puts(&b, "]]></script>\n");
  fl__buf_puts(&b, end);
  return fl__buf_take(&b);
}

char *fl__svg_rows(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r) {
  const fl__theme_t *th = fl__theme_of(v);
  fl__layout_t l;
  fl__layout_of(v, r, &l);
  char notes[FL__MAX_NOTES][FL__NOTE_SIZE];
  int n_notes = fl__notes(t, v, r, notes);
  bool has_title = v->title && v->title[0];

  /* Vertical layout: title, notes, plot, legend. */
  double y = FL__SVG_MARGIN;
  double title_y = has_title ? (y += 16) : 0;
  double note_y[FL__MAX_NOTES];
  for (int i = 0; i < n_notes; i++) note_y[i] = (y += 16);
  double plot_top = y + (has_title || n_notes ? 12 : 0);
  double legend_y = plot_top + l.height + 22;
  /* A diff's vanished list: a header, the lines, "… and K more". */
  const fl_vanished_t *vanished = NULL;
  size_t n_vanished = r->diff ? fl_diff_vanished(r->diff, &vanished) : 0;
  size_t shown = n_vanished < FL__VANISHED_MAX ? n_vanished : FL__VANISHED_MAX;
  double vanished_y = legend_y + 26;
  size_t vanished_lines = n_vanished ? 1 + shown + (n_vanished > shown) : 0;
  double bottom = vanished_lines ? vanished_y + VANISHED_LINE_PX * (vanished_lines - 1) : legend_y;
  double full_w = l.width + 2 * FL__SVG_MARGIN, full_h = bottom + 8 + FL__SVG_MARGIN;
  double scale = r->total ? l.width / (double)r->total : 0;

  fl__buf_t b = {0};
  fl__svg_opening(&b, th, v, FL__SVG_GRAPH, full_w, full_h, title_y, notes, note_y, n_notes);
  put_frames(&b, t, v, th, r, &l, plot_top, scale);

  /* Legend: a swatch and a name per kind of code drawn, or per change. */
  fl__buf_printf(&b, "<g font-size='11' fill='%s'>\n", th->text);
  if (r->diff)
    put_diff_legend(&b, r->diff, legend_y);
  else
    fl__svg_kinds_legend(&b, fl__kinds_present(r), legend_y);
  fl__buf_puts(&b, "</g>\n");
  if (vanished_lines) put_vanished(&b, r->diff, th, vanished, n_vanished, shown, vanished_y);
  fl__buf_puts(&b, "</svg>\n");
  return fl__buf_take(&b);
}

/* The SVG of tree t, whose diff d is (NULL: a profile's). */
static char *svg_of(const fl_tree_t *t, const fl_diff_t *d, const fl_view_opts_t *v) {
  fl_view_opts_t defaults;
  v = fl__view_opts(v, &defaults);
  fl__rows_t r;
  fl__rows_get(t, d, v->max_rows, &r);
  char *svg = fl__svg_rows(t, v, &r);
  fl__rows_free(&r);
  return svg;
}

char *fl_svg(const fl_tree_t *t, const fl_view_opts_t *v) { return svg_of(t, NULL, v); }

char *fl_svg_diff(const fl_diff_t *d, const fl_view_opts_t *v) {
  return svg_of(fl_diff_tree(d), d, v);
}
