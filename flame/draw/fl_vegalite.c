/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_vegalite: a flame graph as a Vega-Lite 5 spec.
 *
 * One data row per drawn frame (fields in docs/PROFILING.md, with its fill
 * colour, "color", which the SVG uses too), written as CSV tables that the
 * spec's transforms read (frames_data, below), and four layers:
 *
 *   frames  rect marks from x0 to x1 along the sample axis, one level of
 *           height per depth (root at the bottom, or at the top for an
 *           icicle), filled with the row's colour, with the tooltip.
 *           Interactions, all on the x axis only:
 *             pan    an interval selection bound to the x scale: drag pans,
 *                    the wheel zooms.
 *             pick   a point selection of the clicked frame's [x0, x1]; the
 *                    x scale's domain is that range (or the whole run), so a
 *                    click zooms to the frame, and double-click, which
 *                    clears it, resets. The same click clears pan, whose
 *                    range would otherwise override the domain. A click only
 *                    counts when the pointer did not move along x since it
 *                    went down: the click that ends a drag is no zoom.
 *           A search box (the param "search") dims the frames whose function
 *           does not contain the text (case-insensitive) and outlines the
 *           ones that do.
 *   labels  the frame's label (fl_node_label) in each frame, where at least a few
 *           characters fit, cut to the frame's current width in pixels
 *           (computed from the x scale, so labels appear as one zooms in).
 *   share   "matched: P%" above the plot while searching: the count of the
 *           matching frames that have no matching ancestor, over the root's.
 *           Frames' ranges nest, so that is the length of the union of the
 *           matching ranges: sort by (x0, depth) and count a match only if
 *           it ends after every earlier match.
 *   legend  an empty layer whose colour scale names the kinds of code drawn
 *           (the frames' own colours vary within each kind's palette).
 *
 * A diff (fl_vegalite_diff) is the same view of its drawn tree: the rows add
 * base (null for new frames), delta and change (and base_self when deltas
 * are of self counts), their colour is the change's (fl__diff_color), the
 * tooltip gives target, baseline and delta in samples (bytes) and percent,
 * and the legend names the changes. It is placed at a fixed distance under
 * the plot, so that a fifth layer can list the vanished frames under it:
 *
 *   vanished  text marks with a dataset of their own (a header, a line per
 *             frame with its func, file, line, module, count and pct, and
 *             "… and K more"), so that data.values stays the frames.
 *
 * A merged frame (status 4: a parent's narrow frames, fl__rows_t) is a row
 * like any other, with a "held" string its tooltip shows as "the widest".
 *
 * usermeta.cflame.icicle says that the root is at the top (icicle=true,
 * view=icicle): each frame is drawn below its parent, not above.
 *
 * usermeta.cflame.diff says how the diff was made (negate, delta, noise,
 * scale, max_delta, the other profile's total, how many frames vanished)
 * and its colours, for tests and for whoever reads the spec.
 *
 * Everything is checked by the real vega-lite and vega, headless and in
 * Chromium: tests/render/check_spec.mjs and browser_test.mjs. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__render.h"

/* True for a row that matches the search text. */
#define MATCH "search && indexof(lower(datum.func), lower(search)) >= 0"

/* A click on a frame (a rect or its label, whose datum has x1) that does
 * not end a drag. Filters cannot read signals, so this uses the stream's
 * own "between" window: a move with no button pressed opens it, a move
 * along x with a button pressed (a drag) closes it. Pointer moves only:
 * vega 5.23 and later suppress the mouse events that follow a pointerdown,
 * and listening to pointerdown would do the same to the mouse events that
 * older vega (older JupyterLab 4 builds) pans with. */
#define FRAME_CLICK                                                                 \
  "[pointermove[!event.buttons], pointermove[event.buttons && event.movementX]] > " \
  "click[event.item && event.item.datum && isValid(event.item.datum.x1)]"

/* The pixel extent of a frame's visible part, left and right. */
#define VIS_LEFT "max(0, scale('x', datum.x0))"
#define VIS_RIGHT "min(width, scale('x', datum.x1))"

/* Where the marks find their tooltip object: computed once per row, by
 * the spec's transforms (frames_data). */
#define TOOLTIP_FIELD "tip"

/* Labels need this many pixels: about three characters. */
#define LABEL_MIN_PX 24

/* ---- the frames' data ----
 *
 * data.values is a CSV table (format.type "csv"), a line per frame under a
 * header that names the columns, and format.parse reads every column as a
 * number: a notebook stores the table as one string, where it would write
 * an array or an object per frame on lines of their own. Strings
 * (functions, labels, files, modules, colours, symbols, changes) are held
 * once, in datasets.strings, a CSV table too ("k,s": a string's number and
 * the string); a column holds their numbers, which lookup transforms turn
 * into the strings under their own names. An empty cell is null: the root
 * has no parent, a frame no file. Then calculate transforms add what
 * follows from the rest: x1 = x0 + count, pct = 100 count / total,
 * depth1 = depth + 1, and tip, the tooltip object, which the frames and
 * their labels both show. docs/PROFILING.md ("The data behind the graph")
 * names the fields that result; tests/lib, tests/render and tests/unit
 * read the tables the same way. */

typedef enum col {
  COL_ID,
  COL_PARENT,
  COL_DEPTH,
  COL_X0,
  COL_COUNT,
  COL_SELF,
  COL_LINE,
  COL_STATUS,
  COL_ALLOCS,    /* allocation profiles */
  COL_BASE,      /* diffs */
  COL_BASE_SELF, /* diffs of self counts */
  COL_DELTA,     /* diffs */
  COL_DEEP,      /* graphs with a band: the deepest depth under the frame */
  COL_FUNC,
  COL_LABEL,
  COL_FILE,
  COL_MODULE,
  COL_COLOR,
  COL_SYM,    /* where a frame's symbol is not its name (C++, Rust) */
  COL_CHANGE, /* diffs */
  COL_HELD,   /* where there are merged frames: what each holds */
  N_COLS
} col_t;

/* Each column's name in the table and, for strings, the field its lookup
 * gives. */
static const struct {
  const char *name;
  const char *string;
} cols[N_COLS] = {
    [COL_ID] = {"id", NULL},
    [COL_PARENT] = {"parent", NULL},
    [COL_DEPTH] = {"depth", NULL},
    [COL_X0] = {"x0", NULL},
    [COL_COUNT] = {"count", NULL},
    [COL_SELF] = {"self", NULL},
    [COL_LINE] = {"line", NULL},
    [COL_STATUS] = {"status", NULL},
    [COL_ALLOCS] = {"allocs", NULL},
    [COL_BASE] = {"base", NULL},
    [COL_BASE_SELF] = {"base_self", NULL},
    [COL_DELTA] = {"delta", NULL},
    [COL_DEEP] = {"deep", NULL},
    [COL_FUNC] = {"f", "func"},
    [COL_LABEL] = {"l", "label"},
    [COL_FILE] = {"fi", "file"},
    [COL_MODULE] = {"m", "module"},
    [COL_COLOR] = {"c", "color"},
    [COL_SYM] = {"sy", "sym"},
    [COL_CHANGE] = {"ch", "change"},
    [COL_HELD] = {"h", "held"},
};

typedef struct frames_data {
  bool on[N_COLS];       /* the columns written */
  char cell[N_COLS][32]; /* the row being written: "" is null */
  fl__buf_t csv;
  fl__strset_t strings;
} frames_data_t;

/* A count as JSON: an integer when it is one (unscaled counts), else a
 * real with four decimals. New. */
static json_t *number_of(double v) {
  if (v == floor(v) && fabs(v) < 9007199254740992.0) return json_integer((json_int_t)v);
  return json_real(round(v * 1e4) / 1e4);
}

static void put_int(frames_data_t *fd, col_t c, long long v) {
  snprintf(fd->cell[c], sizeof fd->cell[c], "%lld", v);
}

/* A count: an integer when it is one, else with at most four decimals. */
static void put_count(frames_data_t *fd, col_t c, double v) {
  int n = snprintf(fd->cell[c], sizeof fd->cell[c], "%.4f", v);
  while (n > 0 && fd->cell[c][n - 1] == '0') fd->cell[c][--n] = '\0';
  if (n > 0 && fd->cell[c][n - 1] == '.') fd->cell[c][--n] = '\0';
  if (!strcmp(fd->cell[c], "-0")) strcpy(fd->cell[c], "0");
}

/* The string's number in the table; null for NULL or "". */
static void put_string(frames_data_t *fd, col_t c, const char *s) {
  if (s && s[0])
    put_int(fd, c, fl__strset_add(&fd->strings, s));
  else
    fd->cell[c][0] = '\0';
}

static void put_row(frames_data_t *fd, const fl__rows_t *r, size_t i) {
  const fl_node_t *n = r->rows[i];
  const fl_frame_t *f = &n->frame;
  char color[8];
  fl__row_color(r, n, color);
  put_int(fd, COL_ID, n->id);
  if (n->parent)
    put_int(fd, COL_PARENT, n->parent->id);
  else
    fd->cell[COL_PARENT][0] = '\0';
  put_int(fd, COL_DEPTH, n->depth);
  put_int(fd, COL_X0, (long long)n->x0);
  put_int(fd, COL_COUNT, (long long)n->count);
  put_int(fd, COL_SELF, (long long)n->self);
  put_int(fd, COL_LINE, f->line > 0 ? f->line : 0);
  put_int(fd, COL_STATUS, n->status);
  put_int(fd, COL_ALLOCS, (long long)n->allocs);
  put_int(fd, COL_DEEP, r->deep[i]);
  put_string(fd, COL_FUNC, f->func ? f->func : "[unknown]");
  char *label = fl_node_label(n);
  put_string(fd, COL_LABEL, label);
  free(label);
  put_string(fd, COL_FILE, f->file);
  put_string(fd, COL_MODULE, f->module);
  put_string(fd, COL_COLOR, color);
  if (fd->on[COL_SYM]) put_string(fd, COL_SYM, fl__frame_symbol(f));
  if (fd->on[COL_HELD]) {
    fl__buf_t held = {0};
    if (n->status & FL_STATUS_MERGED) fl__held_text(r, n, "; ", &held);
    put_string(fd, COL_HELD, held.data);
    fl__buf_free(&held);
  }
  if (r->diff) {
    const fl_diff_node_t *dn = fl__row_diff(r->diff, n);
    bool base = dn && dn->has_base;
    fd->cell[COL_BASE][0] = fd->cell[COL_BASE_SELF][0] = '\0';
    if (base) {
      put_count(fd, COL_BASE, dn->base);
      put_count(fd, COL_BASE_SELF, dn->base_self);
    }
    put_count(fd, COL_DELTA, dn ? dn->delta : 0);
    put_string(fd, COL_CHANGE, fl__change_name(dn ? dn->change : FL_CHANGE_SAME));
  }
  const char *sep = "";
  for (int c = 0; c < N_COLS; c++) {
    if (!fd->on[c]) continue;
    fl__buf_printf(&fd->csv, "%s%s", sep, fd->cell[c]);
    sep = ",";
  }
  fl__buf_putc(&fd->csv, '\n');
}

/* True when a frame's symbol is not its name: only then is the column
 * written. */
static bool any_symbol(const fl__rows_t *r) {
  for (size_t i = 0; i < r->n; i++)
    if (fl__frame_symbol(&r->rows[i]->frame)) return true;
  return false;
}

/* s as a CSV field: quoted where it holds a comma or a quote, whose quotes
 * are then doubled (RFC 4180). s has no line breaks (fl__clean_text). */
static void put_csv_field(fl__buf_t *b, const char *s) {
  if (!strpbrk(s, ",\"")) {
    fl__buf_puts(b, s);
    return;
  }
  fl__buf_putc(b, '"');
  for (; *s; s++) {
    if (*s == '"') fl__buf_putc(b, '"');
    fl__buf_putc(b, *s);
  }
  fl__buf_putc(b, '"');
}

/* The data of r's frames (spec's data), the strings they name (spec's
 * datasets) and the transforms that read them, ending with the tooltip
 * object, whose expression is tooltip. New references. */
static void frames_data(const fl__rows_t *r, const fl__layout_t *l, bool alloc, const char *tooltip,
                        json_t **data, json_t **datasets, json_t **transform) {
  frames_data_t fd = {0};
  bool diff = r->diff != NULL;
  bool self = diff && fl_diff_options(r->diff)->delta == FL_DELTA_SELF;
  for (int c = 0; c < N_COLS; c++)
    fd.on[c] = c == COL_ALLOCS                                      ? alloc
               : c == COL_DEEP                                      ? l->band
               : c == COL_SYM                                       ? any_symbol(r)
               : c == COL_HELD                                      ? r->n_merged_frames > 0
               : c == COL_BASE_SELF                                 ? self
               : c == COL_BASE || c == COL_DELTA || c == COL_CHANGE ? diff
                                                                    : true;
  json_t *parse = fl__nonnull(json_object());
  json_t *tr = fl__nonnull(json_array());
  const char *sep = "";
  for (int c = 0; c < N_COLS; c++) {
    if (!fd.on[c]) continue;
    fl__buf_printf(&fd.csv, "%s%s", sep, cols[c].name);
    sep = ",";
    json_object_set_new(parse, cols[c].name, fl__nonnull(json_string("number")));
    if (cols[c].string)
      json_array_append_new(
          tr, fl__nonnull(json_pack("{s:s,s:{s:{s:s,s:{s:s,s:{s:s}}},s:s,s:[s]},s:[s]}", "lookup",
                                    cols[c].name, "from", "data", "name", "strings", "format",
                                    "type", "csv", "parse", "k", "number", "key", "k", "fields",
                                    "s", "as", cols[c].string)));
  }
  fl__buf_putc(&fd.csv, '\n');
  for (size_t i = 0; i < r->n; i++) put_row(&fd, r, i);

  char pct[64];
  snprintf(pct, sizeof pct, "100 * datum.count / %llu",
           (unsigned long long)(r->total ? r->total : 1));
  static const char *const calculated[][2] = {{"datum.x0 + datum.count", "x1"},
                                              {NULL, "pct"},
                                              {"datum.depth + 1", "depth1"},
                                              {NULL, TOOLTIP_FIELD}};
  for (size_t i = 0; i < FL__ARRAY_SIZE(calculated); i++) {
    const char *expr = calculated[i][0] ? calculated[i][0] : i == 1 ? pct : tooltip;
    json_array_append_new(
        tr, fl__nonnull(json_pack("{s:s,s:s}", "calculate", expr, "as", calculated[i][1])));
  }

  fl__buf_t strings = {0};
  fl__buf_puts(&strings, "k,s\n");
  for (size_t i = 0; i < fd.strings.n; i++) {
    char *clean = fl__clean_text(fd.strings.strs[i], false);
    fl__buf_printf(&strings, "%zu,", i);
    put_csv_field(&strings, clean);
    fl__buf_putc(&strings, '\n');
    free(clean);
  }
  fl__strset_free(&fd.strings);
  *data = fl__nonnull(json_pack("{s:s,s:s%,s:{s:s,s:o}}", "name", "frames", "values", fd.csv.data,
                                fd.csv.len, "format", "type", "csv", "parse", parse));
  *datasets = fl__nonnull(json_pack("{s:s%}", "strings", strings.data, strings.len));
  *transform = tr;
  fl__buf_free(&fd.csv);
  fl__buf_free(&strings);
}

/* The json_pack calls below are laid out by hand, one JSON key (with its
 * value) per line, in the order of their format strings. */
// clang-format off

/* The tooltip: an object vega-tooltip shows key by key, in order. Its
 * first fields are the function, its symbol where that differs, and where
 * the frame is, as far as that is known: 'file:line', and 'module' where
 * it is not the file (a cell's module is its file); then fields (the
 * counts), then for frames with code folded in, folded. vega-tooltip
 * leaves out a key whose value is undefined, and vega's expressions have
 * no literal for it, but a field no row has (datum.none) reads as
 * undefined: so a key without a value is left out, never shown as "null".
 * New string. */
static char *tooltip_object(const char *fields, const char *folded) {
  return fl__xasprintf(
      "{'function': datum.func, 'symbol': datum.sym || datum.none, "
      "'file:line': datum.file ? datum.file + (datum.line ? ':' + datum.line : '') : datum.none, "
      "'module': datum.module && datum.module !== datum.file ? datum.module : datum.none, "
      "%s, 'folded in': datum.status & 3 ? %s : datum.none, "
      "'the widest': datum.held || datum.none}",
      fields, folded);
}

/* What frames with code folded in add to their tooltip. */
#define FOLDED_FIELD                                            \
  "(datum.status & 1 ? 'system libraries' : '') + "            \
  "(datum.status === 3 ? ', ' : '') + (datum.status & 2 ? 'allocator' : '')"

/* The tooltip of a plain graph: function and location, then the weight in
 * the kind's unit ("samples", "bytes"), self ("self bytes" where the unit
 * is a quantity), allocations where weights are bytes, percent, and what
 * was folded in. New. */
static char *tooltip_of(const fl_kind_info_t *kind) {
  fl__buf_t fields = {0};
  fl__buf_printf(&fields, "'%s': format(datum.count, ','), 'self%s%s': format(datum.self, ','), ",
                 kind->many, kind->time ? "" : " ", kind->time ? "" : kind->many);
  if (kind->allocs && kind->bytes) fl__buf_puts(&fields, "'allocations': format(datum.allocs, ','), ");
  fl__buf_puts(&fields, "'percent': format(datum.pct, '.4~r') + '%'");
  char *expr = tooltip_object(fields.data, FOLDED_FIELD);
  fl__buf_free(&fields);
  return expr;
}

/* The tooltip of a diff's frame: function, file:line and module as for a
 * plain graph, then the drawn profile's count with its percent, the other
 * profile's (or what a frame without a partner shows), the delta with its
 * share of the drawn profile's total ("of the target", "of the baseline"),
 * the change in the legend's words, and what was folded
 * in. With delta=self, self counts too. "target" and "baseline" swap places
 * when negated (the drawn profile comes first). New. */
static char *diff_tooltip_of(const fl_diff_t *d, bool alloc, uint64_t total) {
  const fl_diff_opts_t *o = fl_diff_options(d);
  if (fl__alloc_counts(fl_diff_tree(d))) alloc = false; /* the counts are the allocations */
  bool self = o->delta == FL_DELTA_SELF;
  double other_total = fl__other_total(d);
  fl__legend_entry_t legend[FL__N_CHANGES];
  fl__diff_legend(d, legend);
  const char *missing = o->negate ? "none (only in the baseline)" : "new";

  /* The unit after an amount: one or many, as the amount says. */
  char unit[5][96];
  const char *fields_of[5] = {"datum.count", "datum.self", "datum.base", "datum.base_self",
                              "datum.delta"};
  for (int i = 0; i < 5; i++)
    snprintf(unit[i], sizeof unit[i], "(abs(%s) === 1 ? ' %s' : ' %s')", fields_of[i],
             fl__unit_for(fl_diff_tree(d), 1), fl__unit(fl_diff_tree(d)));
  fl__buf_t b = {0};
  fl__buf_printf(&b, "'%s': format(datum.count, ',') + %s + ' (' + format(datum.pct, '.4~r') + '%%)', ",
                 fl__drawn_name(d), unit[0]);
  if (self) fl__buf_printf(&b, "'self': format(datum.self, ',') + %s, ", unit[1]);
  if (alloc) fl__buf_puts(&b, "'allocations': format(datum.allocs, ','), ");
  fl__buf_printf(&b, "'%s': datum.base === null ? '%s' : format(datum.base, ',.2~f') + %s",
                 fl__other_name(d), missing, unit[2]);
  if (other_total > 0)
    fl__buf_printf(&b, " + ' (' + format(100 * datum.base / %.17g, '.4~r') + '%%)', ", other_total);
  else
    fl__buf_puts(&b, ", ");
  if (self)
    fl__buf_printf(&b, "'%s self': datum.base_self === null ? '%s' : "
                   "format(datum.base_self, ',.2~f') + %s, ",
                   fl__other_name(d), missing, unit[3]);
  fl__buf_printf(&b, "'delta': format(datum.delta, '+,.2~f') + %s%s + ' (' + "
                 "format(100 * datum.delta / %llu, '+.3~r') + '%% of the %s)', ",
                 self ? "' self' + " : "", unit[4], (unsigned long long)(total ? total : 1),
                 fl__drawn_name(d));
  fl__buf_puts(&b, "'change': ");
  for (int i = 0; i < FL__N_CHANGES - 1; i++)
    fl__buf_printf(&b, "datum.change === '%s' ? '%s' : ", fl__change_name(legend[i].change),
                   legend[i].label);
  fl__buf_printf(&b, "'%s'", legend[FL__N_CHANGES - 1].label);
  char *fields = fl__buf_take(&b);
  char *expr = tooltip_object(fields, FOLDED_FIELD);
  free(fields);
  return expr;
}

/* 1 for a match (or no search), dimmed otherwise. */
static json_t *opacity_of(void) {
  return json_pack("{s:{s:s,s:i},s:f}",
                   "condition", "test", "!search || (" MATCH ")", "value", 1,
                   "value", 0.35);
}

/* ---- the band (fl__layout_t) ----
 *
 * A graph too deep for its height draws l->shown levels from a base depth:
 * 0, or while a click has zoomed into a frame whose subtree reaches the
 * band from the root's, that frame's depth (pick holds its depth and its
 * deepest descendant's, "deep", a column written only then). So a click
 * on the band's piece over a frame opens it, as far as the levels go, and
 * the rest is a band again; a double-click closes it with the zoom. The
 * frames layer and its labels draw the levels below the band's and the
 * band's frames that have nothing deeper; the band layers draw the others,
 * a dashed box each, labelled with how many levels it holds. */

typedef struct band_exprs {
  char base[160];   /* the base depth */
  char drawn[768];  /* a frame drawn as a frame */
  char pieces[512]; /* a frame drawn as a piece of the band */
} band_exprs_t;

static void band_exprs(const fl__layout_t *l, band_exprs_t *e) {
  int cut = l->shown - 1;
  snprintf(e->base, sizeof e->base,
           "(pick.deep && isValid(pick.deep[0]) && pick.deep[0] > %d ? pick.depth[0] : 0)", cut);
  snprintf(e->drawn, sizeof e->drawn,
           "datum.depth >= %s && (datum.depth < %s + %d || "
           "datum.depth === %s + %d && datum.deep === datum.depth)",
           e->base, e->base, cut, e->base, cut);
  snprintf(e->pieces, sizeof e->pieces, "datum.depth === %s + %d && datum.deep > datum.depth",
           e->base, cut);
}

/* The layer's filter: only when there is a band. */
static void filter_drawn(json_t *layer, const fl__layout_t *l) {
  if (!l->band) return;
  band_exprs_t e;
  band_exprs(l, &e);
  json_object_set_new(layer, "transform", json_pack("[{s:s}]", "filter", e.drawn));
}

/* The band's two layers: its pieces, and their words. */
static void band_layers(const fl_view_opts_t *v, const fl__layout_t *l, json_t *layers) {
  const fl__theme_t *th = fl__theme_of(v);
  band_exprs_t e;
  band_exprs(l, &e);
  char fits[128];
  snprintf(fits, sizeof fits, VIS_RIGHT " - " VIS_LEFT " >= %d", LABEL_MIN_PX);
  json_array_append_new(layers, json_pack(
      "{s:s,s:[{s:s}],s:{s:s,s:s,s:s,s:s,s:[i,i],s:i,s:{s:s}},"
      "s:{s:{s:{s:s}},s:{s:{s:s}},s:{s:{s:s}},s:{s:{s:s}}}}",
      "name", "band",
      "transform", "filter", e.pieces,
      "mark", "type", "rect", "cursor", "pointer", "fill", FL__BAND_COLOR, "stroke", th->text,
              "strokeDash", 3, 2, "strokeWidth", 1, "tooltip", "expr", "datum." TOOLTIP_FIELD,
      "encoding", "x", "value", "expr", VIS_LEFT,
                  "x2", "value", "expr", VIS_RIGHT,
                  "y", "value", "expr", "scale('y', datum.depth)",
                  "y2", "value", "expr", "scale('y', datum.depth1)"));
  json_array_append_new(layers, json_pack(
      "{s:s,s:[{s:s},{s:s,s:s}],s:{s:s,s:s,s:s,s:s,s:i,s:s,s:b,s:{s:s},s:{s:s}},"
      "s:{s:{s:{s:s}},s:{s:{s:s}},s:{s:{s:s,s:s},s:s}}}",
      "name", "band_words",
      "transform", "filter", e.pieces,
                   "calculate", "'\xe2\x80\xa6 ' + format(datum.deep - datum.depth + 1, ',') + "
                                "' more levels (click to open)'",
                   "as", "words",
      "mark", "type", "text", "align", "left", "baseline", "middle", "cursor", "pointer",
              "fontSize", 11, "fill", th->frame_text, "clip", 1,
              "limit", "expr", VIS_RIGHT " - " VIS_LEFT " - 6",
              "tooltip", "expr", "datum." TOOLTIP_FIELD,
      "encoding", "x", "value", "expr", VIS_LEFT " + 3",
                  "y", "value", "expr", "scale('y', datum.depth + 0.5)",
                  "text", "condition", "test", fits, "field", "words", "value", ""));
}

static json_t *frames_layer(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r,
                            const fl__layout_t *l) {
  const fl__theme_t *th = fl__theme_of(v);
  char domain[256];
  snprintf(domain, sizeof domain,
           "pick.x0 && isValid(pick.x0[0]) ? [pick.x0[0], pick.x1[0]] : [0, %llu]",
           (unsigned long long)(r->total ? r->total : 1));
  char outline[128];
  snprintf(outline, sizeof outline, VIS_RIGHT " - " VIS_LEFT " >= %d ? 0.5 : 0",
           FL__OUTLINE_MIN_PX);
  json_t *params = json_pack(
      "[{s:s,s:{s:s,s:[s],s:s},s:s},{s:s,s:{s:s,s:[s,s],s:s,s:s,s:b}}]",
      "name", "pan",
      "select", "type", "interval", "encodings", "x", "clear", FRAME_CLICK ", dblclick",
      "bind", "scales",
      "name", "pick",
      "select", "type", "point", "fields", "x0", "x1", "on", FRAME_CLICK, "clear", "dblclick",
                "toggle", 0);
  if (l->band) {
    json_t *fields = json_object_get(json_object_get(json_array_get(params, 1), "select"), "fields");
    json_array_append_new(fields, json_string("depth"));
    json_array_append_new(fields, json_string("deep"));
  }
  json_t *x = json_pack(
      "{s:s,s:s,s:{s:{s:s},s:b,s:b},s:{s:s,s:s,s:b,s:s,s:i}}",
      "field", "x0",
      "type", "quantitative",
      "scale", "domain", "expr", domain, "nice", 0, "zero", 0,
      "axis", "title", fl__unit(t), "format", "~s", "grid", 0,
              "orient", v->icicle ? "top" : "bottom", "tickCount", 8);
  json_t *y = json_pack(
      "{s:s,s:s,s:{s:[i,i],s:b,s:b,s:b},s:n}",
      "field", "depth",
      "type", "quantitative",
      "scale", "domain", 0, r->levels, "reverse", v->icicle, "nice", 0, "zero", 1,
      "axis");
  if (l->band) {
    band_exprs_t e;
    band_exprs(l, &e);
    char domain_expr[512];
    snprintf(domain_expr, sizeof domain_expr, "[%s, %s + %d]", e.base, e.base, l->shown);
    json_t *scale = json_object_get(y, "scale");
    json_object_set_new(scale, "domain", json_pack("{s:s}", "expr", domain_expr));
    json_object_set_new(scale, "zero", json_false());
  }
  json_t *enc = json_pack(
      "{s:o,s:{s:s},s:o,s:{s:s},s:{s:s,s:s,s:n,s:n},s:o,"
      "s:{s:{s:s,s:s},s:s},s:{s:{s:s,s:f},s:{s:s}}}",
      "x", x,
      "x2", "field", "x1",
      "y", y,
      "y2", "field", "depth1",
      "fill", "field", "color", "type", "nominal", "scale", "legend",
      "opacity", opacity_of(),
      "stroke", "condition", "test", MATCH, "value", th->highlight,
                "value", th->background,
      "strokeWidth", "condition", "test", MATCH, "value", 2.0,
                     "value", "expr", outline);
  json_t *layer = json_pack(
      "{s:s,s:o,s:{s:s,s:s,s:{s:s}},s:o}",
      "name", "frames",
      "params", params,
      "mark", "type", "rect", "cursor", "pointer", "tooltip", "expr", "datum." TOOLTIP_FIELD,
      "encoding", enc);
  filter_drawn(layer, l);
  return layer;
}

static json_t *labels_layer(const fl_view_opts_t *v, const fl__layout_t *l) {
  const fl__theme_t *th = fl__theme_of(v);
  char fits[128];
  snprintf(fits, sizeof fits, VIS_RIGHT " - " VIS_LEFT " >= %d", LABEL_MIN_PX);
  json_t *mark = json_pack(
      "{s:s,s:s,s:s,s:i,s:s,s:b,s:{s:s},s:{s:s}}",
      "type", "text",
      "align", "left",
      "baseline", "middle",
      "fontSize", 11,
      "fill", th->frame_text,
      "clip", 1,
      "limit", "expr", VIS_RIGHT " - " VIS_LEFT " - 6",
      "tooltip", "expr", "datum." TOOLTIP_FIELD);
  json_t *enc = json_pack(
      "{s:{s:{s:s}},s:{s:{s:s}},s:{s:{s:s,s:s},s:s},s:o}",
      "x", "value", "expr", VIS_LEFT " + 3",
      "y", "value", "expr", "scale('y', datum.depth + 0.5)",
      "text", "condition", "test", fits, "field", "label",
              "value", "",
      "opacity", opacity_of());
  json_t *layer = json_pack("{s:s,s:o,s:o}", "name", "labels", "mark", mark, "encoding", enc);
  filter_drawn(layer, l);
  return layer;
}

static json_t *share_layer(const fl_view_opts_t *v, uint64_t total) {
  const fl__theme_t *th = fl__theme_of(v);
  char share[160];
  snprintf(share, sizeof share,
           "search ? 'matched: ' + format(100 * datum.matched / %llu, '.2f') + '%%' : ' '",
           (unsigned long long)(total ? total : 1));
  json_t *by_position = json_pack("[{s:s},{s:s}]", "field", "x0", "field", "depth");
  json_t *tr = json_pack(
      "[{s:s,s:s},"
      "{s:[{s:s,s:s,s:s}],s:O,s:[n,i],s:b},"
      "{s:[{s:s,s:s,s:s}],s:O},"
      "{s:s,s:s},"
      "{s:[{s:s,s:s,s:s}]},"
      "{s:s,s:s}]",
      "calculate", MATCH " ? datum.x1 : -1", "as", "match_end",
      "window", "op", "max", "field", "match_end", "as", "ends_upto",
        "sort", by_position, "frame", 0, "ignorePeers", 1,
      "window", "op", "lag", "field", "ends_upto", "as", "ends_before",
        "sort", by_position,
      "calculate", "datum.match_end > 0 && !(datum.ends_before >= datum.x1) ? datum.count : 0",
        "as", "outermost",
      "aggregate", "op", "sum", "field", "outermost", "as", "matched",
      "calculate", share, "as", "share");
  json_decref(by_position);
  /* On the side of the plot away from the axis, right-aligned, a blank
   * keeping its place while there is no search (so the chart does not jump
   * as one types); not clipped
   * to the plot, as marks of views with scales bound to a selection are by
   * default. */
  return json_pack(
      "{s:s,s:o,s:{s:s,s:s,s:s,s:i,s:i,s:s,s:s,s:b},s:{s:{s:s},s:{s:o},s:{s:s}}}",
      "name", "share",
      "transform", tr,
      "mark", "type", "text", "align", "right", "baseline", v->icicle ? "top" : "bottom",
              "dy", v->icicle ? 6 : -6, "fontSize", 12, "fontWeight", "bold",
              "fill", th->text, "clip", 0,
      "encoding", "x", "value", "width",
                  "y", "value", v->icicle ? json_string("height") : json_integer(0),
                  "text", "field", "share");
}

/* Where a diff's legend goes: under the plot and its axis, at a fixed
 * place (vega would put a bottom legend under every mark, the vanished list
 * included), and the vanished list under it. */
static double diff_legend_y(const fl_view_opts_t *v, const fl__layout_t *l) {
  return round(l->height) + (v->icicle ? 14 : 44);
}
#define VANISHED_GAP_PX 44 /* from the legend's top to the list's */
#define VANISHED_LINE_PX 15

/* The legend of a diff: the four changes in their full colours, titled by
 * what the colours measure. */
static json_t *diff_legend_layer(const fl_diff_t *d, const fl_view_opts_t *v,
                                 const fl__layout_t *l) {
  fl__legend_entry_t entries[FL__N_CHANGES];
  fl__diff_legend(d, entries);
  json_t *domain = json_array(), *range = json_array();
  for (int i = 0; i < FL__N_CHANGES; i++) {
    json_array_append_new(domain, json_string(entries[i].label));
    json_array_append_new(range, json_string(entries[i].color));
  }
  return fl__vl_legend_layer(
      "change", domain, range,
      fl__nonnull(json_pack("{s:s,s:s,s:s,s:s,s:i,s:f}", "title", fl__diff_legend_title(d),
                            "orient", "none", "direction", "horizontal", "symbolType", "square",
                            "legendX", 0, "legendY", diff_legend_y(v, l))));
}

/* One row of the vanished list: its line number, its text, and for a frame
 * what it is. New. */
static json_t *vanished_row(int i, const char *text, const fl_vanished_t *vn, double other_total) {
  json_t *row = json_pack("{s:i,s:o}", "i", i, "text", fl__json_text(text));
  if (row && vn) {
    const fl_frame_t *f = &vn->node->frame;
    double pct = other_total > 0 ? round(1e6 * vn->count / other_total) / 1e4 : 0;
    json_object_set_new(row, "func", fl__json_text(f->func ? f->func : "[unknown]"));
    json_object_set_new(row, "file", fl__json_text(f->file));
    json_object_set_new(row, "line", json_integer(f->line > 0 ? f->line : 0));
    json_object_set_new(row, "module", fl__json_text(f->module));
    json_object_set_new(row, "count", number_of(vn->count));
    json_object_set_new(row, "pct", json_real(pct));
  }
  return row;
}

/* The frames that vanished, as text under the legend; NULL when none did.
 * New. */
static json_t *vanished_layer(const fl_diff_t *d, const fl_view_opts_t *v,
                              const fl__layout_t *l) {
  const fl_vanished_t *vanished;
  size_t n = fl_diff_vanished(d, &vanished);
  if (n == 0) return NULL;
  const fl__theme_t *th = fl__theme_of(v);
  double other_total = fl__other_total(d);
  json_t *values = json_array();
  json_array_append_new(values, vanished_row(0, fl__vanished_header(d), NULL, 0));
  size_t shown = n < FL__VANISHED_MAX ? n : FL__VANISHED_MAX;
  char line[1024];
  for (size_t i = 0; i < shown; i++) {
    fl__vanished_line(d, &vanished[i], line, sizeof line);
    json_array_append_new(values, vanished_row((int)i + 1, line, &vanished[i], other_total));
  }
  if (n > shown) {
    char more[32];
    fl__thousands(n - shown, more);
    snprintf(line, sizeof line, "\xe2\x80\xa6 and %s more", more);
    json_array_append_new(values, vanished_row((int)shown + 1, line, NULL, 0));
  }
  char y[96];
  snprintf(y, sizeof y, "%g + %d * datum.i", diff_legend_y(v, l) + VANISHED_GAP_PX,
           VANISHED_LINE_PX);
  return json_pack(
      "{s:s,s:{s:o},s:{s:s,s:s,s:s,s:i,s:s,s:b,s:{s:s},s:i},"
      "s:{s:{s:i},s:{s:{s:s}},s:{s:s,s:s}}}",
      "name", "vanished",
      "data", "values", values,
      "mark", "type", "text", "align", "left", "baseline", "top", "fontSize", 11,
              "fill", th->text, "clip", 0,
              "fontWeight", "expr", "datum.i === 0 ? 'bold' : 'normal'",
              "limit", l->width,
      "encoding", "x", "value", 0,
                  "y", "value", "expr", y,
                  "text", "field", "text", "type", "nominal");
}

/* usermeta.cflame.diff: how the diff was made, and its colours. New. */
static json_t *diff_meta(const fl_diff_t *d) {
  const fl_diff_opts_t *o = fl_diff_options(d);
  const fl_vanished_t *vanished;
  size_t n = fl_diff_vanished(d, &vanished);
  return json_pack(
      "{s:b,s:s,s:f,s:f,s:f,s:o,s:I,s:{s:s,s:s,s:s,s:s}}",
      "negate", o->negate,
      "delta", o->delta == FL_DELTA_SELF ? "self" : "total",
      "noise", o->noise,
      "scale", fl_diff_scale(d),
      "max_delta", fl_diff_max_delta(d),
      "other_total", number_of(fl__other_total(d)),
      "vanished", (json_int_t)n,
      "colors", "grew", FL__DIFF_GREW_COLOR, "shrank", FL__DIFF_SHRANK_COLOR,
                "same", FL__DIFF_SAME_COLOR, "new", FL__DIFF_NEW_COLOR);
}

json_t *fl__vegalite_rows(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r) {
  bool alloc = fl__is_alloc(t);
  fl__layout_t l;
  fl__layout_of(v, r, &l);
  uint64_t hidden_weight;
  size_t hidden = fl_tree_hidden(t, &hidden_weight);
  char description[300];
  bool callers = fl_tree_inverted(t);
  snprintf(description, sizeof description, "%s of %s: %zu frames",
           r->diff ? (callers ? "Differential callers graph" : "Differential flame graph")
                   : (callers ? "Callers graph" : "Flame graph"),
           fl_tree_root(t)->frame.func, r->n);
  char *clean_description = fl__clean_text(description, false);

  json_t *layers = json_array();
  if (layers) {
    json_array_append_new(layers, frames_layer(t, v, r, &l));
    if (l.labels) json_array_append_new(layers, labels_layer(v, &l));
    if (l.band) band_layers(v, &l, layers);
    json_array_append_new(layers, share_layer(v, r->total));
    if (r->diff) {
      json_array_append_new(layers, diff_legend_layer(r->diff, v, &l));
      json_t *vanished = vanished_layer(r->diff, v, &l);
      if (vanished) json_array_append_new(layers, vanished);
    } else {
      json_array_append_new(layers, fl__vl_kinds_legend(fl__kinds_present(r)));
    }
  }
  char *tooltip = r->diff ? diff_tooltip_of(r->diff, alloc, r->total)
                          : tooltip_of(fl_kind(fl_tree_info(t)->kind));
  json_t *data, *datasets, *transform;
  frames_data(r, &l, alloc, tooltip, &data, &datasets, &transform);
  free(tooltip);
  json_t *spec = json_pack(
      "{s:s,s:s?,s:i,s:f,s:s,s:o,s:o,s:o,s:o,"
      "s:[{s:s,s:s,s:{s:s,s:s,s:s}}],s:o,"
      "s:{s:{s:s,s:I,s:I,s:I,s:I,s:i,s:i,s:b}}}",
      "$schema", "https://vega.github.io/schema/vega-lite/v5.json",
      "description", clean_description,
      "width", l.width,
      "height", round(l.height * 100) / 100,
      "background", fl__theme_of(v)->background,
      "config", fl__vl_config(v),
      "datasets", datasets,
      "data", data,
      "transform", transform,
      "params", "name", "search", "value", "",
                "bind", "input", "search", "name", "search ", "placeholder", "function name",
      "layer", layers,
      "usermeta", "cflame", "unit", fl__unit(t), "total", (json_int_t)r->total,
                            "hidden", (json_int_t)hidden, "merged", (json_int_t)r->n_merged,
                            "rows", (json_int_t)r->n, "levels", r->levels, "shown", l.shown,
                            "icicle", v->icicle);
  free(clean_description);
  if (spec) {
    char notes[FL__MAX_NOTES][FL__NOTE_SIZE];
    json_t *title = fl__vl_title(v, notes, fl__notes(t, v, r, notes));
    if (title) json_object_set_new(spec, "title", title);
    if (r->diff)
      json_object_set_new(json_object_get(json_object_get(spec, "usermeta"), "cflame"), "diff",
                          diff_meta(r->diff));
  }
  /* Every string in the spec is valid UTF-8 and every format matches its
   * values: jansson fails only when memory runs out. */
  return fl__nonnull(spec);
}

// clang-format on

/* The spec of tree t, whose diff d is (NULL: a profile's). */
static json_t *vegalite_of(const fl_tree_t *t, const fl_diff_t *d, const fl_view_opts_t *v) {
  fl_view_opts_t defaults;
  v = fl__view_opts(v, &defaults);
  fl__rows_t r;
  fl__rows_get(t, d, v->max_rows, &r);
  json_t *spec = fl__vegalite_rows(t, v, &r);
  fl__rows_free(&r);
  return spec;
}

json_t *fl_vegalite(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size) {
  return vegalite_of(t, NULL, v);
}

json_t *fl_vegalite_diff(const fl_diff_t *d, const fl_view_opts_t *v, char *err, size_t err_size) {
  return vegalite_of(fl_diff_tree(d), d, v);
}
