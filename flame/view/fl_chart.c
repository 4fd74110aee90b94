/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_chart: the time-ordered stack chart (view=chart), one lane per thread,
 * as speedscope's "time order" and the Firefox Profiler's stack chart draw
 * it: x is time from the start of the run, and each sample's stack is drawn
 * at its time, the root frame of the tree (the whole run) left out, its
 * callers above its callees.
 *
 * The shape is fl_timeline's: per thread, the samples in time order merged
 * into spans of one node. A bar is a function at one depth over
 * consecutive spans whose stacks hold that function there under the same
 * bar above, with no gap longer than one interval between them (the thread
 * ran on). So a bar contains the bars under it, and a loop that calls a()
 * then b() over and over draws one bar for the loop and alternating bars
 * for a and b. Bars are of functions (whatever lines= says): a function's
 * lines are the source view's.
 *
 * from= and to= (seconds from the start) keep what lies between them, the
 * bars cut to it. At most MAX_BARS bars are drawn: the shortest go first,
 * which never leaves a bar without the one above it (a bar is never longer
 * than its caller's). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_io.h"
#include "cflame/fl_timeline.h"
#include "fl__io.h"
#include "fl__table.h"
#include "fl__view.h"

#define MAX_BARS 1500
#define LEVEL_PX 16.0
#define LANE_LABEL_PX 18.0
#define LANE_GAP_PX 8.0
#define LABEL_MIN_PX 24
/* The text report lists the bars this deep (1: the frames under the root). */
#define TEXT_DEPTH 3
#define TEXT_BARS_PER_LANE 40
/* What a trace event's text takes, its names aside (charged per bar). */
#define TRACE_EVENT_BYTES 160

typedef struct bar {
  size_t lane;
  int depth; /* 1: a frame under the root */
  const fl_node_t *node;
  uint64_t t0, t1; /* ns since the chart's start */
  uint64_t weight;
  uint64_t seq; /* the order bars were made in: by lane, then by time */
} bar_t;

typedef struct lane {
  int thread;
  const char *name;
  uint64_t weight; /* its samples' weights within the window */
  int depth;       /* its deepest bar */
  double top;      /* pixels: its label's top */
} lane_t;

typedef struct chart {
  fl_timeline_t *tl;
  bar_t *bars; /* while building, a heap of the longest bars (its root the
                  shortest kept); then those bars in the order made */
  size_t n, cap;
  uint64_t made; /* bars made */
  lane_t *lanes;
  size_t n_lanes;
  uint64_t start_ns; /* the timeline's start: time 0 */
  uint64_t from, to; /* the window, ns since start */
  size_t max_bars;
  size_t dropped; /* bars left out to stay within max_bars */
  uint64_t total; /* the window's weight */
  double height;  /* pixels */
  /* max_bars SIZE_MAX (every bar, for trace events): each bar charged
   * here as it is made, what it takes and its event's text; refused
   * once the budget says no, and no bar is kept after that */
  fl_budget_t *budget;
  bool refused;
} chart_t;

/* Whether bar a ranks after bar b, by length, then depth (a bar before
 * the ones under it, which are never longer), then the order made. */
static bool ranks_after(const bar_t *a, const bar_t *b) {
  uint64_t da = a->t1 - a->t0, db = b->t1 - b->t0;
  if (da != db) return da < db;
  if (a->depth != b->depth) return a->depth > b->depth;
  return a->seq > b->seq;
}

static void sift_down(bar_t *h, size_t n, size_t i) {
  for (;;) {
    size_t worst = i, l = 2 * i + 1, r = l + 1;
    if (l < n && ranks_after(&h[l], &h[worst])) worst = l;
    if (r < n && ranks_after(&h[r], &h[worst])) worst = r;
    if (worst == i) return;
    bar_t t = h[i];
    h[i] = h[worst];
    h[worst] = t;
    i = worst;
  }
}

/* A finished bar: kept while it is among the max_bars longest (a heap
 * whose root ranks last), so that a profile of millions of samples never
 * holds more. */
static void finish_bar(chart_t *c, const bar_t *b) {
  if (c->max_bars == 0 || c->refused) return;
  if (c->max_bars == SIZE_MAX) {
    /* Every bar: no heap, bars_in_order sorts them. */
    if (fl_budget_charge(c->budget, sizeof *b + TRACE_EVENT_BYTES, 0) < 0) {
      c->refused = true;
      return;
    }
    c->bars = fl__grow(c->bars, &c->cap, c->n + 1, sizeof *c->bars);
    c->bars[c->n++] = *b;
    return;
  }
  if (c->n < c->max_bars) {
    c->bars = fl__grow(c->bars, &c->cap, c->n + 1, sizeof *c->bars);
    size_t i = c->n++;
    c->bars[i] = *b;
    while (i > 0 && ranks_after(&c->bars[(i - 1) / 2], &c->bars[i])) {
      bar_t t = c->bars[i];
      c->bars[i] = c->bars[(i - 1) / 2];
      c->bars[(i - 1) / 2] = t;
      i = (i - 1) / 2;
    }
  } else if (ranks_after(&c->bars[0], b)) {
    c->bars[0] = *b;
    sift_down(c->bars, c->n, 0);
  }
}

static bool same_string(const char *a, const char *b) {
  return a == b || (a && b && !strcmp(a, b));
}

/* One function, whatever its line: bars are of functions, so that a loop
 * over several lines of a function draws one bar. */
static bool same_function(const fl_frame_t *a, const fl_frame_t *b) {
  return same_string(a->func, b->func) && same_string(a->file, b->file) &&
         same_string(a->module, b->module);
}

/* The lane's bars from its spans within the window: open[d] is the bar
 * at depth d still growing (its node NULL when there is none). A bar goes
 * on only while the bar above it does. */
static void lane_bars(chart_t *c, size_t li, const fl_lane_t *lane, int max_depth,
                      uint64_t tolerance) {
  bar_t *open = fl__xcalloc((size_t)max_depth + 1, sizeof *open);
  /* chain[1..chain_depth]: the last span's node and its ancestors by depth. */
  const fl_node_t **chain = fl__xmalloc((size_t)max_depth + 1, sizeof *chain);
  int chain_depth = 0;
  for (size_t i = 0; i < lane->n_spans; i++) {
    const fl_span_t *sp = &lane->spans[i];
    uint64_t a = sp->start_ns - c->start_ns, b = sp->end_ns - c->start_ns;
    /* A span of no length (a lane's first sample where weights are not
     * time) counts where it lies, the window's ends included. */
    if (a == b ? a < c->from || a > c->to : b <= c->from || a >= c->to) continue;
    /* The part of the span in the window, and its share of the weight. */
    uint64_t a_in = a < c->from ? c->from : a, b_in = b > c->to ? c->to : b;
    uint64_t w =
        b > a ? (uint64_t)llround((double)sp->weight * (double)(b_in - a_in) / (double)(b - a))
              : sp->weight;
    c->lanes[li].weight += w;
    c->total += w;
    int depth = sp->node->depth;
    /* Up to the first ancestor the last span's stack shares: consecutive
     * stacks share their callers. */
    for (const fl_node_t *n = sp->node; n && n->depth > 0; n = n->parent) {
      if (n->depth <= chain_depth && chain[n->depth] == n) break;
      chain[n->depth] = n;
    }
    chain_depth = depth;
    bool caller_goes_on = true; /* the bar above goes on (the root's does) */
    for (int d = 1; d <= max_depth; d++) {
      bar_t *o = &open[d];
      if (d > depth) {
        if (!o->node) break; /* none deeper either */
        finish_bar(c, o);
        o->node = NULL;
        continue;
      }
      if (o->node && caller_goes_on && same_function(&o->node->frame, &chain[d]->frame) &&
          a_in <= o->t1 + tolerance) {
        o->t1 = b_in;
        o->weight += w;
      } else {
        caller_goes_on = false;
        if (o->node) finish_bar(c, o);
        *o = (bar_t){.lane = li,
                     .depth = d,
                     .node = chain[d],
                     .t0 = a_in,
                     .t1 = b_in,
                     .weight = w,
                     .seq = c->made++};
      }
    }
  }
  for (int d = 1; d <= max_depth; d++)
    if (open[d].node) finish_bar(c, &open[d]);
  free(open);
  free(chain);
}

static int cmp_seq(const void *pa, const void *pb) {
  const bar_t *a = pa, *b = pb;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

/* The bars kept, in the order made; each lane as deep as its deepest. */
static void bars_in_order(chart_t *c) {
  if (c->n) qsort(c->bars, c->n, sizeof *c->bars, cmp_seq);
  c->dropped = (size_t)(c->made - c->n);
  for (size_t i = 0; i < c->n; i++) {
    lane_t *l = &c->lanes[c->bars[i].lane];
    if (c->bars[i].depth > l->depth) l->depth = c->bars[i].depth;
  }
}

static void chart_free(chart_t *c) {
  fl_timeline_destroy(&c->tl);
  free(c->bars);
  free(c->lanes);
}

static int chart_build(chart_t *c, const fl_tree_t *t, const fl_view_opts_t *v, size_t max_bars,
                       char *err, size_t err_size) {
  fl_budget_t *budget = c->budget;
  *c = (chart_t){.budget = budget};
  c->tl = fl_timeline_build(t, err, err_size);
  if (!c->tl) return -1;
  c->start_ns = fl_timeline_start_ns(c->tl);
  uint64_t length = fl_timeline_end_ns(c->tl) - c->start_ns;
  c->from = v->from > 0 ? (uint64_t)llround(v->from * 1e9) : 0;
  c->to = v->to > 0 ? (uint64_t)llround(v->to * 1e9) : length;
  if (c->to > length) c->to = length;
  if (c->from >= c->to) {
    snprintf(err, err_size,
             "from=%g to=%g leave nothing of the run, which lasted %.3f s: from must be less "
             "than to, and less than the run's length",
             v->from, v->to, (double)length / 1e9);
    chart_free(c);
    return -1;
  }
  c->max_bars = max_bars;
  c->n_lanes = fl_timeline_n_lanes(c->tl);
  c->lanes = fl__xcalloc(c->n_lanes ? c->n_lanes : 1, sizeof *c->lanes);
  const fl_profile_info_t *info = fl_tree_info(t);
  int max_depth = fl_tree_max_depth(t);
  for (size_t i = 0; i < c->n_lanes; i++) {
    const fl_lane_t *lane = fl_timeline_lane(c->tl, i);
    c->lanes[i].thread = lane->thread;
    c->lanes[i].name = lane->name;
    lane_bars(c, i, lane, max_depth, info->interval_ns);
  }
  bars_in_order(c);
  double y = 0;
  for (size_t i = 0; i < c->n_lanes; i++) {
    c->lanes[i].top = y;
    y += LANE_LABEL_PX + LEVEL_PX * c->lanes[i].depth + LANE_GAP_PX;
  }
  c->height = y > 0 ? y : LEVEL_PX;
  return 0;
}

/* "thread 2: worker (1,234 samples)". */
static void lane_label(char *out, size_t size, const fl_tree_t *t, const lane_t *l) {
  char n[32];
  fl__thousands(l->weight, n);
  if (l->name && l->name[0])
    snprintf(out, size, "thread %d: %s (%s %s)", l->thread, l->name, n, fl__unit(t));
  else
    snprintf(out, size, "thread %d (%s %s)", l->thread, n, fl__unit(t));
}

/* The kinds of code the bars are of (bits of fl__kind_t), for the legend. */
static unsigned bar_kinds(const chart_t *c) {
  unsigned kinds = 0;
  for (size_t i = 0; i < c->n; i++) kinds |= 1u << fl__kind_of(c->bars[i].node);
  return kinds;
}

static double bar_top(const chart_t *c, const bar_t *b) {
  return c->lanes[b->lane].top + LANE_LABEL_PX + LEVEL_PX * (b->depth - 1);
}

/* The notes above the chart; hint (NULL: none) says what the drawing
 * answers to, which differs between Vega-Lite and the SVG's own script. */
static int chart_notes(const fl_tree_t *t, const fl_view_opts_t *v, const chart_t *c,
                       const char *hint, char notes[FL__MAX_NOTES][FL__NOTE_SIZE]) {
  char what[300], more[200];
  const char *lines[2] = {what, more};
  size_t n_lines = 1;
  snprintf(what, sizeof what,
           "chart: the samples in time order, %.3f s to %.3f s from the start, one lane per "
           "thread%s%s",
           (double)c->from / 1e9, (double)c->to / 1e9, hint ? "; " : "", hint ? hint : "");
  size_t left_out = fl_timeline_left_out(c->tl);
  if (c->dropped || left_out) {
    char a[32], b[32];
    fl__thousands(c->dropped, a);
    fl__thousands(left_out, b);
    char most[32];
    fl__thousands(c->max_bars, most);
    snprintf(more, sizeof more, "%s%s%s%s%s%s", c->dropped ? a : "",
             c->dropped ? " shortest bars left out to draw at most " : "", c->dropped ? most : "",
             c->dropped && left_out ? "; " : "", left_out ? b : "",
             left_out ? " samples without a time stamp left out" : "");
    n_lines++;
  }
  return fl__view_notes(v, lines, n_lines, notes);
}

/* ---- text ---- */

static char *text_of(const fl_tree_t *t, const chart_t *c) {
  fl__buf_t out = {0};
  char n[32];
  fl__thousands(c->total, n);
  fl__buf_printf(&out, "Total: %s %s\n", n, fl__unit(t));
  fl__buf_printf(&out, "Chart: the samples in time order, %.3f s to %.3f s, one lane per thread\n",
                 (double)c->from / 1e9, (double)c->to / 1e9);
  for (size_t li = 0; li < c->n_lanes; li++) {
    char label[300];
    lane_label(label, sizeof label, t, &c->lanes[li]);
    fl__buf_printf(&out, "\n%s\n%9s %9s %10s  Frame\n", label, "Start", "End",
                   fl__is_alloc(t) ? "Weight" : "Samples");
    size_t shown = 0, more = 0;
    for (size_t i = 0; i < c->n; i++) {
      const bar_t *b = &c->bars[i];
      if (b->lane != li || b->depth > TEXT_DEPTH) continue;
      if (shown == TEXT_BARS_PER_LANE) {
        more++;
        continue;
      }
      fl__thousands(b->weight, n);
      fl__buf_printf(&out, "%9.3f %9.3f %10s  %*s%s\n", (double)b->t0 / 1e9, (double)b->t1 / 1e9, n,
                     2 * (b->depth - 1), "", b->node->frame.func);
      shown++;
    }
    if (more) fl__buf_printf(&out, "… %zu more bars\n", more);
  }
  return fl__buf_take(&out);
}

/* ---- Vega-Lite ---- */

/* The strings of the rows, each once: datasets.strings, {k, s} rows that
 * lookup transforms name the rows' string columns by. */
typedef struct strings {
  fl__strset_t set;
  json_t *rows;
} strings_t;

static json_int_t string_index(strings_t *st, const char *s) {
  size_t before = st->set.n;
  size_t i = fl__strset_add(&st->set, s ? s : "");
  if (i == before)
    json_array_append_new(st->rows, fl__nonnull(json_pack("{s:I,s:o}", "k", (json_int_t)i, "s",
                                                          fl__json_text(s ? s : ""))));
  return (json_int_t)i;
}

/* A bar's row: f, fi, m (function, file, module), th (thread) and co
 * (colour) as indexes into the strings; d (depth), t0 and t1 (seconds) and
 * n (its weight). Its top, y, is made from its depth and its lane's top,
 * which the dataset "lanetops" gives by th (vegalite_of). A page holds up
 * to MAX_BARS of them: their keys are short. */
static json_t *bar_value(const chart_t *c, const bar_t *b, strings_t *st) {
  const fl_frame_t *f = &b->node->frame;
  char color[8], thread[200];
  fl__node_color(b->node, color);
  const lane_t *l = &c->lanes[b->lane];
  if (l->name && l->name[0])
    snprintf(thread, sizeof thread, "%d: %s", l->thread, l->name);
  else
    snprintf(thread, sizeof thread, "%d", l->thread);
  json_t *o = fl__nonnull(json_pack(
      "{s:I,s:I,s:i,s:f,s:f,s:I,s:I}", "f", string_index(st, f->func ? f->func : "[unknown]"), "th",
      string_index(st, thread), "d", b->depth, "t0", round((double)b->t0 / 1e3) / 1e6, "t1",
      round((double)b->t1 / 1e3) / 1e6, "n", (json_int_t)b->weight, "co", string_index(st, color)));
  if (f->file) json_object_set_new(o, "fi", json_integer(string_index(st, f->file)));
  if (f->module && (!f->file || strcmp(f->module, f->file) != 0))
    json_object_set_new(o, "m", json_integer(string_index(st, f->module)));
  return o;
}

/* {"lookup": field, ...strings...: "as": as}. */
static json_t *lookup(const char *field, const char *as) {
  return fl__nonnull(json_pack("{s:s,s:{s:{s:s},s:s,s:[s]},s:[s]}", "lookup", field, "from", "data",
                               "name", "strings", "key", "k", "fields", "s", "as", as));
}

#define VIS_LEFT "max(0, scale('x', datum.t0))"
#define VIS_RIGHT "min(width, scale('x', datum.t1))"

static json_t *vegalite_of(const fl_tree_t *t, const fl_view_opts_t *v, const chart_t *c) {
  const fl__theme_t *th = fl__theme_of(v);
  strings_t st = {.rows = fl__nonnull(json_array())};
  json_t *values = fl__nonnull(json_array());
  json_t *tops = fl__nonnull(json_array());
  for (size_t i = 0; i < c->n; i++) {
    json_t *row = bar_value(c, &c->bars[i], &st);
    if (i == 0 || c->bars[i].lane != c->bars[i - 1].lane)
      json_array_append_new(
          tops, fl__nonnull(json_pack("{s:O,s:f}", "k", json_object_get(row, "th"), "ly",
                                      c->lanes[c->bars[i].lane].top)));
    json_array_append_new(values, row);
  }
  fl__strset_free(&st.set);
  json_t *lanes = fl__nonnull(json_array());
  for (size_t i = 0; i < c->n_lanes; i++) {
    char label[300];
    lane_label(label, sizeof label, t, &c->lanes[i]);
    json_array_append_new(lanes, fl__nonnull(json_pack("{s:o,s:f}", "label", fl__json_text(label),
                                                       "y", c->lanes[i].top)));
  }
  char expr[600];
  json_t *tr = fl__nonnull(json_array());
  json_array_append_new(tr, lookup("f", "func"));
  json_array_append_new(tr, lookup("fi", "file"));
  json_array_append_new(tr, lookup("m", "module"));
  json_array_append_new(tr, lookup("th", "thread"));
  json_array_append_new(tr, lookup("co", "color"));
  json_array_append_new(
      tr, fl__nonnull(json_pack("{s:s,s:{s:{s:s},s:s,s:[s]}}", "lookup", "th", "from", "data",
                                "name", "lanetops", "key", "k", "fields", "ly")));
  snprintf(expr, sizeof expr, "datum.ly + %g + %g * (datum.d - 1)", LANE_LABEL_PX, LEVEL_PX);
  json_array_append_new(tr, fl__vl_calculate(expr, "y"));
  snprintf(expr, sizeof expr, "datum.y + %g", LEVEL_PX - 1);
  json_array_append_new(tr, fl__vl_calculate(expr, "y2"));
  snprintf(expr, sizeof expr,
           "{'function': datum.func, 'file': datum.file || datum.none, "
           "'module': datum.module || datum.none, "
           "'thread': datum.thread, "
           "'time': format(datum.t0, '.3f') + ' s to ' + format(datum.t1, '.3f') + ' s', "
           "'%s': format(datum.n, ',')}",
           fl__unit(t));
  json_array_append_new(tr, fl__vl_calculate(expr, "tip"));

  double from = (double)c->from / 1e9, to = (double)c->to / 1e9;
  // clang-format off
  json_t *bars = fl__nonnull(json_pack(
      "{s:s,s:[{s:s,s:{s:s,s:[s]},s:s}],s:{s:s,s:f,s:s},"
      "s:{s:{s:s,s:s,s:{s:[f,f],s:b,s:b},s:{s:s,s:s,s:b}},s:{s:s},"
      "s:{s:s,s:s,s:n},s:{s:s},s:{s:s,s:s,s:n,s:n}}}",
      "name", "bars",
      "params", "name", "zoom", "select", "type", "interval", "encodings", "x",
                "bind", "scales",
      "mark", "type", "rect", "strokeWidth", 0.5, "stroke", th->background,
      "encoding",
        "x", "field", "t0", "type", "quantitative",
             "scale", "domain", from, to, "nice", 0, "zero", 0,
             "axis", "title", "seconds from the start", "format", ".3~f", "grid", 0,
        "x2", "field", "t1",
        "y", "field", "y", "type", "quantitative", "scale",
        "y2", "field", "y2",
        "fill", "field", "color", "type", "nominal", "scale", "legend"));
  // clang-format on
  json_object_set_new(json_object_get(bars, "encoding"), "tooltip",
                      fl__nonnull(json_pack("{s:s}", "field", "tip")));
  char fits[128];
  snprintf(fits, sizeof fits, VIS_RIGHT " - " VIS_LEFT " >= %d", LABEL_MIN_PX);
  snprintf(expr, sizeof expr, "datum.y + %g", LEVEL_PX / 2);
  // clang-format off
  json_t *labels = fl__nonnull(json_pack(
      "{s:{s:s,s:s,s:s,s:i,s:s,s:s,s:b,s:{s:s}},"
      "s:{s:{s:{s:s}},s:{s:s,s:s,s:n},s:{s:{s:s,s:s},s:s},s:{s:s}}}",
      "mark", "type", "text", "align", "left", "baseline", "middle", "fontSize", 11,
              "font", FL__MONOSPACE, "fill", th->frame_text, "clip", 1,
              "limit", "expr", VIS_RIGHT " - " VIS_LEFT " - 6",
      "encoding",
        "x", "value", "expr", VIS_LEFT " + 3",
        "y", "field", "ym", "type", "quantitative", "scale",
        "text", "condition", "test", fits, "field", "func", "value", "",
        "tooltip", "field", "tip"));
  // clang-format on
  json_object_set_new(labels, "transform",
                      fl__nonnull(json_pack("[{s:s,s:s}]", "calculate", expr, "as", "ym")));
  json_t *lane_layer = fl__nonnull(
      json_pack("{s:{s:o},s:{s:s,s:s,s:s,s:s,s:i,s:s},s:{s:{s:i},s:{s:s,s:s,s:n},s:{s:s}}}", "data",
                "values", lanes, "mark", "type", "text", "align", "left", "baseline", "top",
                "fontWeight", "bold", "fontSize", 11, "color", th->text, "encoding", "x", "value",
                0, "y", "field", "y", "type", "quantitative", "scale", "text", "field", "label"));

  json_t *layers = fl__nonnull(json_array());
  json_array_append_new(
      layers, fl__nonnull(json_pack("{s:{s:o},s:o,s:[o,o]}", "data", "values", values, "transform",
                                    tr, "layer", bars, labels)));
  json_array_append_new(layers, lane_layer);
  /* The colours' legend, under the time axis; its layer draws no mark. */
  json_t *legend = fl__vl_kinds_legend(bar_kinds(c));
  json_object_set_new(legend, "data", fl__nonnull(json_pack("{s:[]}", "values")));
  json_array_append_new(layers, legend);
  char description[200];
  snprintf(description, sizeof description, "Stack chart of %s: %zu bars in %zu lanes",
           fl_tree_root(t)->frame.func, c->n, c->n_lanes);
  char notes[FL__MAX_NOTES][FL__NOTE_SIZE];
  int n_notes = chart_notes(t, v, c, "drag to pan, wheel to zoom, double-click to reset", notes);
  // clang-format off
  json_t *spec = fl__nonnull(json_pack(
      "{s:s,s:o,s:i,s:f,s:s,s:o,s:{s:o,s:o},s:o,s:{s:{s:s,s:s,s:I,s:I,s:f,s:f}}}",
      "$schema", "https://vega.github.io/schema/vega-lite/v5.json",
      "description", fl__json_text(description),
      "width", v->width > 200 ? v->width : 200,
      "height", c->height,
      "background", th->background,
      "config", fl__vl_config(v),
      "datasets", "strings", st.rows, "lanetops", tops,
      "layer", layers,
      "usermeta", "cflame", "view", "chart", "unit", fl__unit(t), "total", (json_int_t)c->total,
                            "lanes", (json_int_t)c->n_lanes, "from", from, "to", to));
  // clang-format on
  json_t *title = fl__vl_title(v, notes, n_notes);
  if (title) json_object_set_new(spec, "title", title);
  return spec;
}

/* ---- SVG ---- */

/* A bar: a horizontal line as thick as a level (its lane's group says
 * how thick), titled with its function, thread, time and weight. */
static void put_bar(fl__buf_t *b, const fl_tree_t *t, const chart_t *c, const bar_t *bar, double x0,
                    double top, double scale) {
  const fl_frame_t *f = &bar->node->frame;
  char color[8], *title, n[32];
  fl__node_color(bar->node, color);
  fl__thousands(bar->weight, n);
  double total = (double)fl_tree_root(t)->count;
  if (asprintf(&title, "%s\nthread %d\n%.3f s to %.3f s\n%s %s (%.4g%%)",
               f->func ? f->func : "[unknown]", c->lanes[bar->lane].thread, (double)bar->t0 / 1e9,
               (double)bar->t1 / 1e9, n, fl__unit(t),
               total > 0 ? 100.0 * (double)bar->weight / total : 0.0) < 0)
    fl__oom(0);
  fl__svg_hbar(b, color, 0, x0 + (double)(bar->t0 - c->from) * scale,
               top + bar_top(c, bar) + LEVEL_PX / 2, (double)(bar->t1 - bar->t0) * scale, title);
  fl__buf_puts(b, "\n");
  free(title);
}

static char *svg_of(const fl_tree_t *t, const fl_view_opts_t *v, const chart_t *c) {
  const fl__theme_t *th = fl__theme_of(v);
  char notes[FL__MAX_NOTES][FL__NOTE_SIZE];
  /* The SVG's script zooms to a bar on a click; the page keeps the wheel
   * and the drag (docs/PERFORMANCE.md: the script's byte budget). */
  int n_notes = chart_notes(
      t, v, c, v->still ? NULL : "click a bar to zoom to it, double-click to reset", notes);
  int width = v->width > 200 ? v->width : 200;
  bool has_title = v->title && v->title[0];
  double y = FL__SVG_MARGIN;
  double title_y = has_title ? (y += 16) : 0;
  double note_y[FL__MAX_NOTES];
  for (int i = 0; i < n_notes; i++) note_y[i] = (y += 16);
  double top = y + 12, axis_y = top + c->height + 14, legend_y = axis_y + 24;
  double full_h = legend_y + 8 + FL__SVG_MARGIN, x0 = FL__SVG_MARGIN;
  double span = (double)(c->to - c->from), scale = span > 0 ? width / span : 0;
  fl__buf_t b = {0};
  fl__svg_opening(&b, th, v, FL__SVG_CHART, width + 2 * FL__SVG_MARGIN, full_h, title_y, notes,
                  note_y, n_notes);
  fl__buf_printf(&b,
                 "<g font-size='11' fill='%s' font-weight='bold' dominant-baseline='hanging'>\n",
                 th->text);
  for (size_t i = 0; i < c->n_lanes; i++) {
    char label[300];
    lane_label(label, sizeof label, t, &c->lanes[i]);
    fl__svg_cell(&b, x0, top + c->lanes[i].top + 2, false, label);
  }
  fl__buf_puts(&b, "</g>\n");
  /* Each lane's bars in a group of their own, which gives their thickness:
   * the interactive SVG's search sums the matched time lane by lane. The
   * bars come lane by lane (bars_in_order). */
  for (size_t i = 0; i < c->n; i++) {
    if (i == 0 || c->bars[i].lane != c->bars[i - 1].lane)
      fl__buf_printf(&b, "%s<g data-lane='%zu' stroke-width='%g'>\n", i ? "</g>\n" : "",
                     c->bars[i].lane, LEVEL_PX - 1);
    put_bar(&b, t, c, &c->bars[i], x0, top, scale);
  }
  if (c->n) fl__buf_puts(&b, "</g>\n");
  /* Labels where they fit, then the time axis's ends. */
  fl__buf_printf(&b,
                 "<g font-family='%s' font-size='11' fill='%s' dominant-baseline='middle' "
                 "pointer-events='none'>\n",
                 FL__MONOSPACE, th->frame_text);
  for (size_t i = 0; i < c->n; i++) {
    const bar_t *bar = &c->bars[i];
    double w = (double)(bar->t1 - bar->t0) * scale;
    if (w < LABEL_MIN_PX) continue;
    char *label = fl__text_cut(bar->node->frame.func ? bar->node->frame.func : "[unknown]",
                               (size_t)((w - 6) / FL__TABLE_CHAR_PX));
    fl__svg_cell(&b, x0 + (double)(bar->t0 - c->from) * scale + 3,
                 top + bar_top(c, bar) + LEVEL_PX / 2, false, label);
    free(label);
  }
  fl__buf_puts(&b, "</g>\n");
  char at[32];
  fl__buf_printf(&b,
                 "<g font-size='11' fill='%s' dominant-baseline='middle' data-axis='%.9g %.9g'>\n",
                 th->text, (double)c->from / 1e9, (double)c->to / 1e9);
  snprintf(at, sizeof at, "%.3f s", (double)c->from / 1e9);
  fl__svg_cell(&b, x0, axis_y, false, at);
  snprintf(at, sizeof at, "%.3f s", (double)c->to / 1e9);
  fl__svg_cell(&b, x0 + width, axis_y, true, at);
  fl__buf_puts(&b, "</g>\n");
  /* The colours' legend: a swatch and a name per kind of code drawn. */
  fl__buf_printf(&b, "<g font-size='11' fill='%s'>\n", th->text);
  fl__svg_kinds_legend(&b, bar_kinds(c), legend_y);
  fl__buf_puts(&b, "</g>\n</svg>\n");
  return fl__buf_take(&b);
}

/* ---- the entry points ---- */

static const fl_view_opts_t *prepare(const fl_tree_t *t, const fl_view_opts_t *v,
                                     fl_view_opts_t *defaults, chart_t *c, char *err,
                                     size_t err_size) {
  v = fl__view_opts(v, defaults);
  return chart_build(c, t, v, MAX_BARS, err, err_size) < 0 ? NULL : v;
}

json_t *fl_chart_vegalite(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size) {
  fl_view_opts_t defaults;
  chart_t c = {0};
  if (!(v = prepare(t, v, &defaults, &c, err, err_size))) return NULL;
  json_t *spec = vegalite_of(t, v, &c);
  chart_free(&c);
  return spec;
}

char *fl_chart_svg(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size) {
  fl_view_opts_t defaults;
  chart_t c = {0};
  if (!(v = prepare(t, v, &defaults, &c, err, err_size))) return NULL;
  char *svg = svg_of(t, v, &c);
  chart_free(&c);
  return svg;
}

char *fl_text_chart(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size) {
  fl_view_opts_t defaults;
  chart_t c = {0};
  if (!(v = prepare(t, v, &defaults, &c, err, err_size))) return NULL;
  char *text = text_of(t, &c);
  chart_free(&c);
  return text;
}

/* The bundle stays under FL__BUNDLE_MAX_BYTES: drawn again with fewer
 * bars, by its overshoot, while it is too big. */
json_t *fl_chart_bundle(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size) {
  fl_view_opts_t defaults;
  chart_t c = {0};
  if (!(v = prepare(t, v, &defaults, &c, err, err_size))) return NULL;
  for (;;) {
    char *svg = svg_of(t, v, &c), *report = text_of(t, &c);
    json_t *bundle = fl__bundle_assemble(vegalite_of(t, v, &c), svg, report, v);
    free(svg);
    free(report);
    size_t bytes = json_dumpb(bundle, NULL, 0, JSON_COMPACT), max = c.max_bars;
    chart_free(&c);
    if (bytes < FL__BUNDLE_MAX_BYTES || max <= 100) return bundle;
    json_decref(bundle);
    size_t fewer = (size_t)((double)max * (FL__BUNDLE_MAX_BYTES * 0.9) / (double)bytes);
    if (chart_build(&c, t, v, fewer > 100 ? fewer : 100, err, err_size) < 0) return NULL;
  }
}

/* view=chart (fl__view.h). */
int fl__view_chart(const fl__view_in_t *in, fl__drawing_t what, fl__drawn_t *out) {
  static const fl__view_fns_t fns = {fl_chart_vegalite, fl_chart_svg, fl_text_chart,
                                     fl_chart_bundle};
  return fl__view_draw_fns(&fns, in, what, out);
}

/* ---- trace events ---- */

/* Microseconds, as trace events count them, from ns: exact to the ns. */
static void put_us(fl__buf_t *b, uint64_t ns) {
  unsigned frac = (unsigned)(ns % 1000);
  char digits[4] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10),
                    (char)('0' + frac % 10)};
  fl__buf_u64(b, ns / 1000);
  fl__buf_add(b, digits, 4);
}

/* An int, as fl__buf_u64 writes it (without printf: one per event). */
static void put_int(fl__buf_t *b, int v) {
  if (v < 0) fl__buf_putc(b, '-');
  fl__buf_u64(b, v < 0 ? (uint64_t) - (int64_t)v : (uint64_t)v);
}

/* The trace events of the chart's bars: a complete event ("ph":"X") per
 * bar, in the order made (a bar before those under it), its depth,
 * weight, file and line in a "cflame" member (cflame reads them back;
 * viewers nest by time, and speedscope would take args for a part of the
 * function's name, one frame per bar), its
 * category what the thread was doing: "off-cpu", "runnable" or
 * "on-cpu"; and a thread_name event per lane. */
char *fl_trace(const fl_tree_t *t, const fl_view_opts_t *v, fl_budget_t *budget, size_t *len,
               char *err, size_t err_size) {
  chart_t c = {.budget = budget};
  if (chart_build(&c, t, v, SIZE_MAX, err, err_size) < 0) return NULL;
  const fl_profile_info_t *info = fl_tree_info(t);
  if (c.refused) {
    char subject[300];
    snprintf(subject, sizeof subject, "writing the trace events%s%s", *info->source ? " of " : "",
             info->source);
    fl_budget_message(budget, subject, err, err_size);
    chart_free(&c);
    return NULL;
  }
  size_t n_nodes = fl_tree_n_nodes(t);
  /* Each drawn node's text before and after its event's numbers, made
   * once: bars are many, their functions few. */
  char **heads = fl__xcalloc(n_nodes, sizeof *heads), **tails = fl__xcalloc(n_nodes, sizeof *tails);
  fl__buf_t b = FL__BUF_INIT, q = FL__BUF_INIT;
  fl__buf_puts(&b, "{\"displayTimeUnit\":\"ms\",\"otherData\":{");
  fl__json_info(&b, info, false);
  fl__buf_puts(&b, ",\"source\":");
  fl__json_quote(&b, info->source);
  fl__buf_puts(&b, "},\"traceEvents\":[");
  for (size_t i = 0; i < c.n_lanes; i++) {
    char name[300];
    snprintf(name, sizeof name, "thread %d%s%s", c.lanes[i].thread, c.lanes[i].name ? ": " : "",
             c.lanes[i].name ? c.lanes[i].name : "");
    fl__buf_printf(&b,
                   "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{"
                   "\"name\":",
                   i ? ",\n" : "\n", c.lanes[i].thread);
    fl__json_quote(&b, name);
    fl__buf_puts(&b, "}}");
  }
  for (size_t i = 0; i < c.n; i++) {
    const bar_t *bar = &c.bars[i];
    uint32_t id = bar->node->id;
    if (!heads[id]) {
      const fl_frame_t *f = &bar->node->frame;
      const char *cat = !(f->flags & FL_FRAME_OFFCPU)    ? "on-cpu"
                        : (f->flags & FL_FRAME_RUNNABLE) ? "runnable"
                                                         : "off-cpu";
      fl__buf_clear(&q);
      fl__buf_puts(&q, ",\n{\"name\":");
      fl__json_quote(&q, f->func);
      fl__buf_printf(&q, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"ts\":", cat);
      heads[id] = fl__xstrdup(q.data);
      fl__buf_clear(&q);
      if (f->file) {
        fl__buf_puts(&q, ",\"file\":");
        fl__json_quote(&q, f->file);
      }
      if (f->line > 0) fl__buf_printf(&q, ",\"line\":%d", f->line);
      fl__buf_puts(&q, "}}");
      tails[id] = fl__xstrdup(q.data);
    }
    fl__buf_puts(&b, heads[id]);
    put_us(&b, bar->t0);
    fl__buf_puts(&b, ",\"dur\":");
    put_us(&b, bar->t1 - bar->t0);
    fl__buf_puts(&b, ",\"tid\":");
    put_int(&b, c.lanes[bar->lane].thread);
    fl__buf_puts(&b, ",\"cflame\":{\"depth\":");
    put_int(&b, bar->depth);
    fl__buf_puts(&b, ",\"weight\":");
    fl__buf_u64(&b, bar->weight);
    fl__buf_puts(&b, tails[id]);
  }
  fl__buf_puts(&b, "\n]}\n");
  for (size_t i = 0; i < n_nodes; i++) {
    free(heads[i]);
    free(tails[i]);
  }
  free(heads);
  free(tails);
  fl__buf_free(&q);
  chart_free(&c);
  *len = b.len;
  return fl__buf_take(&b);
}
