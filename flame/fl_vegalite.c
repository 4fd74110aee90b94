/* fl_vegalite: a flame graph as a Vega-Lite 5 spec.
 *
 * One data row per drawn frame (fields in fl_render.h and SPEC.md section 4,
 * plus its fill colour, "color", which the SVG uses too) and four layers:
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
 *   labels  the function name in each frame, where at least a few
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

/* Labels need this many pixels: about three characters. */
#define LABEL_MIN_PX 24

/* A JSON string of s: s as it is when it is valid UTF-8, else a cleaned
 * copy; json null for NULL. New. */
static json_t *text_or_null(const char *s) {
  if (!s) return json_null();
  json_t *j = json_string(s);
  if (j) return j;
  char *clean = fl__clean_text(s, false);
  j = clean ? json_string(clean) : NULL;
  free(clean);
  return j;
}

static json_t *row_of(const fl_node_t *n, uint64_t total, bool alloc) {
  char color[8];
  fl__node_color(n, color);
  /* Four decimals: enough for a tooltip, and short in the JSON. */
  double pct = total ? round(1e6 * (double)n->count / (double)total) / 1e4 : 0;
  json_t *row = json_object();
  if (!row) return NULL;
  int rc = 0;
  rc |= json_object_set_new(row, "id", json_integer(n->id));
  rc |= json_object_set_new(row, "parent", n->parent ? json_integer(n->parent->id) : json_null());
  rc |= json_object_set_new(row, "depth", json_integer(n->depth));
  rc |= json_object_set_new(row, "x0", json_integer((json_int_t)n->x0));
  rc |= json_object_set_new(row, "x1", json_integer((json_int_t)n->x1));
  rc |= json_object_set_new(row, "count", json_integer((json_int_t)n->count));
  rc |= json_object_set_new(row, "self", json_integer((json_int_t)n->self));
  rc |= json_object_set_new(row, "pct", json_real(pct));
  rc |= json_object_set_new(row, "func", text_or_null(n->frame.func ? n->frame.func : "[unknown]"));
  rc |= json_object_set_new(row, "file", text_or_null(n->frame.file));
  rc |= json_object_set_new(row, "line", json_integer(n->frame.line > 0 ? n->frame.line : 0));
  rc |= json_object_set_new(row, "module", text_or_null(n->frame.module));
  rc |= json_object_set_new(row, "status", json_integer(n->status));
  if (alloc) rc |= json_object_set_new(row, "allocs", json_integer((json_int_t)n->allocs));
  rc |= json_object_set_new(row, "color", json_string(color));
  if (rc) {
    json_decref(row);
    return NULL;
  }
  return row;
}

static json_t *rows_of(const fl__rows_t *r, bool alloc) {
  json_t *rows = json_array();
  for (size_t i = 0; rows && i < r->n; i++) {
    if (json_array_append_new(rows, row_of(r->rows[i], r->total, alloc)) != 0) {
      json_decref(rows);
      return NULL;
    }
  }
  return rows;
}

/* The json_pack calls below are laid out by hand, one JSON key (with its
 * value) per line, in the order of their format strings. */
// clang-format off

/* The tooltip, as one expression that builds the object vega-tooltip shows
 * (key: value, in order): function, file:line, module, samples (bytes),
 * self, percent, and for frames with folded-in code what was folded.
 * Unknown locations show "?", not "null". New. */
static json_t *tooltip_of(bool alloc) {
  static const char common[] =
      "'function': datum.func, "
      "'file:line': datum.file ? datum.file + (datum.line ? ':' + datum.line : '') : '?', "
      "'module': datum.module || '?', ";
  static const char cpu[] =
      "'samples': format(datum.count, ','), 'self': format(datum.self, ','), "
      "'percent': format(datum.pct, '.4~r') + '%'";
  static const char bytes[] =
      "'bytes': format(datum.count, ','), 'self bytes': format(datum.self, ','), "
      "'allocations': format(datum.allocs, ','), 'percent': format(datum.pct, '.4~r') + '%'";
  static const char folded[] =
      ", 'folded in': (datum.status & 1 ? 'system libraries' : '') + "
      "(datum.status === 3 ? ', ' : '') + (datum.status & 2 ? 'allocator' : '')";
  const char *counts = alloc ? bytes : cpu;
  char expr[2048];
  snprintf(expr, sizeof expr, "datum.status ? {%s%s%s} : {%s%s}", common, counts, folded, common,
           counts);
  return json_pack("{s:s}", "expr", expr);
}

/* 1 for a match (or no search), dimmed otherwise. */
static json_t *opacity_of(void) {
  return json_pack("{s:{s:s,s:i},s:f}",
                   "condition", "test", "!search || (" MATCH ")", "value", 1,
                   "value", 0.35);
}

static json_t *frames_layer(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r,
                            json_t *tooltip) {
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
  return json_pack(
      "{s:s,s:o,s:{s:s,s:s,s:O},s:o}",
      "name", "frames",
      "params", params,
      "mark", "type", "rect", "cursor", "pointer", "tooltip", tooltip,
      "encoding", enc);
}

static json_t *labels_layer(const fl_view_opts_t *v, json_t *tooltip) {
  const fl__theme_t *th = fl__theme_of(v);
  char fits[128];
  snprintf(fits, sizeof fits, VIS_RIGHT " - " VIS_LEFT " >= %d", LABEL_MIN_PX);
  json_t *mark = json_pack(
      "{s:s,s:s,s:s,s:i,s:s,s:b,s:{s:s},s:O}",
      "type", "text",
      "align", "left",
      "baseline", "middle",
      "fontSize", 11,
      "fill", th->frame_text,
      "clip", 1,
      "limit", "expr", VIS_RIGHT " - " VIS_LEFT " - 6",
      "tooltip", tooltip);
  json_t *enc = json_pack(
      "{s:{s:{s:s}},s:{s:{s:s}},s:{s:{s:s,s:s},s:s},s:o}",
      "x", "value", "expr", VIS_LEFT " + 3",
      "y", "value", "expr", "scale('y', datum.depth + 0.5)",
      "text", "condition", "test", fits, "field", "func",
              "value", "",
      "opacity", opacity_of());
  return json_pack("{s:s,s:o,s:o}", "name", "labels", "mark", mark, "encoding", enc);
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

static json_t *legend_layer(unsigned kinds) {
  json_t *domain = json_array(), *range = json_array();
  for (int k = 0; k < FL__N_KINDS; k++) {
    if (!(kinds & (1u << k))) continue;
    json_array_append_new(domain, json_string(fl__kind_label((fl__kind_t)k)));
    json_array_append_new(range, json_string(fl__kind_color((fl__kind_t)k)));
  }
  return json_pack(
      "{s:s,s:[{s:s}],s:{s:s,s:i},"
      "s:{s:{s:s,s:s,s:{s:o,s:o},s:{s:n,s:s,s:s,s:s}}}}",
      "name", "legend",
      "transform", "filter", "false",
      "mark", "type", "square", "opacity", 1,
      "encoding", "color", "field", "kind", "type", "nominal",
                           "scale", "domain", domain, "range", range,
                           "legend", "title", "orient", "bottom", "direction", "horizontal",
                                     "symbolType", "square");
}

static json_t *title_of(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r) {
  const fl__theme_t *th = fl__theme_of(v);
  char notes[FL__MAX_NOTES][FL__NOTE_SIZE];
  int n_notes = fl__notes(t, v, r, notes);
  if (!(v->title && v->title[0]) && n_notes == 0) return NULL;
  /* Vega draws no title group, subtitle included, when the title text is
   * empty: without a title the first note takes its place, in the
   * subtitle's style. */
  bool titled = v->title && v->title[0];
  json_t *subtitle = json_array();
  for (int i = titled ? 0 : 1; i < n_notes; i++)
    json_array_append_new(subtitle, json_string(notes[i]));
  return json_pack(
      "{s:o,s:o,s:s,s:s,s:s,s:i,s:s,s:i}",
      "text", text_or_null(titled ? v->title : notes[0]),
      "subtitle", subtitle,
      "anchor", "start",
      "color", th->text,
      "subtitleColor", th->text,
      "fontSize", titled ? 14 : 11,
      "fontWeight", titled ? "bold" : "normal",
      "offset", v->icicle ? 10 : 2);
}

static json_t *config_of(const fl_view_opts_t *v) {
  const fl__theme_t *th = fl__theme_of(v);
  return json_pack(
      "{s:{s:n},s:{s:s,s:s,s:s,s:s},s:{s:s,s:s}}",
      "view", "stroke",
      "axis", "labelColor", th->text, "titleColor", th->text, "domainColor", th->text,
              "tickColor", th->text,
      "legend", "labelColor", th->text, "titleColor", th->text);
}

json_t *fl__vegalite_rows(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r,
                          char *err, size_t err_size) {
  bool alloc = fl__is_alloc(t);
  fl__layout_t l;
  fl__layout_of(v, r, &l);
  uint64_t hidden_weight;
  size_t hidden = fl_tree_hidden(t, &hidden_weight);
  char description[300];
  snprintf(description, sizeof description, "Flame graph of %s: %zu frames",
           fl_tree_root(t)->frame.func, r->n);
  char *clean_description = fl__clean_text(description, false);

  json_t *tooltip = tooltip_of(alloc);
  json_t *layers = json_array();
  if (layers) {
    json_array_append_new(layers, frames_layer(t, v, r, tooltip));
    if (l.labels) json_array_append_new(layers, labels_layer(v, tooltip));
    json_array_append_new(layers, share_layer(v, r->total));
    json_array_append_new(layers, legend_layer(fl__kinds_present(r)));
  }
  json_decref(tooltip);

  json_t *spec = json_pack(
      "{s:s,s:s?,s:i,s:f,s:s,s:o,s:{s:o},s:[{s:s,s:s}],"
      "s:[{s:s,s:s,s:{s:s,s:s,s:s}}],s:o,"
      "s:{s:{s:s,s:I,s:I,s:I,s:I}}}",
      "$schema", "https://vega.github.io/schema/vega-lite/v5.json",
      "description", clean_description,
      "width", l.width,
      "height", round(l.height * 100) / 100,
      "background", fl__theme_of(v)->background,
      "config", config_of(v),
      "data", "values", rows_of(r, alloc),
      "transform", "calculate", "datum.depth + 1", "as", "depth1",
      "params", "name", "search", "value", "",
                "bind", "input", "search", "name", "search ", "placeholder", "function name",
      "layer", layers,
      "usermeta", "cflame", "unit", fl__unit(t), "total", (json_int_t)r->total,
                            "hidden", (json_int_t)hidden, "merged", (json_int_t)r->n_merged,
                            "rows", (json_int_t)r->n);
  free(clean_description);
  if (spec) {
    json_t *title = title_of(t, v, r);
    if (title) json_object_set_new(spec, "title", title);
  }
  if (!spec) snprintf(err, err_size, "out of memory drawing the flame graph");
  return spec;
}

// clang-format on

json_t *fl_vegalite(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size) {
  fl_view_opts_t defaults;
  if (!v) {
    fl_view_opts_init(&defaults);
    v = &defaults;
  }
  fl__rows_t r;
  if (fl__rows_get(t, v->max_rows, &r) < 0) {
    snprintf(err, err_size, "out of memory drawing the flame graph");
    return NULL;
  }
  json_t *spec = fl__vegalite_rows(t, v, &r, err, err_size);
  fl__rows_free(&r);
  return spec;
}
