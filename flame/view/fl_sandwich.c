/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_sandwich: the sandwich view (view=sandwich focus=FUNC), as speedscope
 * and Pyroscope draw it: FUNC's callers above it and its callees below,
 * FUNC's total and self share in the title.
 *
 * Two trees are made from the samples the tree counts (its options
 * applied: threads, filter, C=false folding, lines, recur), each sample
 * seen through the tree's frames from the root to the node it ends in:
 *  - the callees' tree: each sample that holds FUNC, from its outermost
 *    FUNC to its leaf (so recursion shows under one FUNC);
 *  - the callers' tree: the same samples from their outermost FUNC back to
 *    the root, reversed (FUNC first, then its caller, ...): the callers of
 *    the call that recursion started from.
 * Both have FUNC as the one frame under their root, as wide as FUNC's
 * total. The callers' tree is drawn as a flame graph (FUNC at the bottom,
 * callers above), the callees' as an icicle (FUNC at the top), with the
 * flame graph's renderers: the Vega-Lite spec is the two specs one above
 * the other (vconcat; each one's selections and string table renamed, the
 * search box shared), the SVG the two SVGs in one, the text the two
 * reports. */
#define _GNU_SOURCE
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__render.h"
#include "fl__view.h"

typedef struct sandwich {
  fl_profile_t *callers, *callees;
  fl_tree_t *callers_tree, *callees_tree;
  uint64_t total, self, all; /* FUNC's total and self, the profile's */
} sandwich_t;

static void sandwich_free(sandwich_t *s) {
  fl_tree_destroy(&s->callers_tree);
  fl_tree_destroy(&s->callees_tree);
  fl_profile_destroy(&s->callers);
  fl_profile_destroy(&s->callees);
}

static bool is_focus(const fl_node_t *n, const char *focus) {
  return n->frame.func && !strcmp(n->frame.func, focus);
}

static int sandwich_build(sandwich_t *s, const fl_tree_t *t, const fl_view_opts_t *v, char *err,
                          size_t err_size) {
  *s = (sandwich_t){0};
  const char *focus = v->focus;
  if (!focus) {
    snprintf(err, err_size,
             "view=sandwich needs focus=FUNC, the function to draw between its callers and its "
             "callees (for example focus=main)");
    return -1;
  }
  /* Profiles of the kind t draws: their samples are t's. */
  const fl_profile_t *p = fl_tree_profile(t);
  s->callers = fl_profile_new(fl_tree_kind(t));
  s->callees = fl_profile_new(fl_tree_kind(t));
  *fl_profile_info(s->callers) = *fl_tree_info(t);
  *fl_profile_info(s->callees) = *fl_tree_info(t);
  int depth = fl_tree_max_depth(t);
  const fl_node_t **path = fl__xmalloc((size_t)depth + 1, sizeof *path);
  uint32_t *stack = fl__xmalloc((size_t)depth + 1, sizeof *stack);
  s->all = fl_tree_root(t)->count;
  fl_sample_t sample;
  for (size_t i = 0; i < fl_profile_n_samples(p); i++) {
    fl_profile_sample(p, i, &sample);
    const fl_node_t *node = fl_tree_node_of(t, &sample);
    if (!node) continue;
    int n = node->depth; /* path[1 .. n]: the frames under the root */
    for (const fl_node_t *a = node; a && a->depth > 0; a = a->parent) path[a->depth] = a;
    int outer = 0;
    for (int d = 1; d <= n && !outer; d++)
      if (is_focus(path[d], focus)) outer = d;
    if (!outer) continue;
    size_t k = 0;
    for (int d = outer; d <= n; d++) stack[k++] = fl_profile_frame_id(s->callees, &path[d]->frame);
    fl_profile_add_sample_at(s->callees, stack, k, sample.weight, sample.allocs, sample.thread,
                             sample.time_ns);
    k = 0;
    for (int d = outer; d >= 1; d--) stack[k++] = fl_profile_frame_id(s->callers, &path[d]->frame);
    fl_profile_add_sample_at(s->callers, stack, k, sample.weight, sample.allocs, sample.thread,
                             sample.time_ns);
  }
  free(path);
  free(stack);
  /* FUNC's total and self as every view counts them: a group of its frames. */
  uint32_t *group = fl__xmalloc(fl_tree_n_nodes(t), sizeof *group);
  for (size_t i = 1; i < fl_tree_n_nodes(t); i++) group[i] = !is_focus(fl_tree_node(t, i), focus);
  fl__group_sum_t sums[2];
  fl__group_sums(t, group, 2, sums);
  free(group);
  s->total = sums[0].count;
  s->self = sums[0].self;
  if (s->total == 0) {
    char near[512];
    fl__nearest_names(t, focus, near, sizeof near);
    snprintf(err, err_size, "focus=%s matches no function of the profile%s%s", focus,
             near[0] ? "; the nearest: " : "", near);
    sandwich_free(s);
    return -1;
  }
  /* The frames are the tree's already (folded, lines chosen): kept as
   * they are, each one a node. */
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  o.C = true;
  o.minwidth = 0;
  char name[300];
  snprintf(name, sizeof name, "callers of %s", focus);
  s->callers_tree = fl_tree_build(s->callers, &o, name, err, err_size);
  snprintf(name, sizeof name, "callees of %s", focus);
  s->callees_tree = s->callers_tree ? fl_tree_build(s->callees, &o, name, err, err_size) : NULL;
  if (!s->callees_tree) {
    sandwich_free(s);
    return -1;
  }
  return 0;
}

/* "sandwich of work: total 1,234 samples (45.6%), self 123 (4.5%); its
 * callers above it, its callees below". */
static void heading(const sandwich_t *s, const fl_view_opts_t *v, const fl_tree_t *t, char *out,
                    size_t size) {
  char total[32], self[32];
  fl__thousands(s->total, total);
  fl__thousands(s->self, self);
  double all = s->all ? (double)s->all : 1;
  snprintf(out, size,
           "sandwich of %s: total %s %s (%.1f%%), self %s (%.1f%%); its callers above it, its "
           "callees below",
           v->focus, total, fl__unit(t), 100.0 * (double)s->total / all, self,
           100.0 * (double)s->self / all);
}

/* The two halves' view options: the heading as the note of the first,
 * none under the second; the callers' graph a flame graph, the callees'
 * an icicle. */
static void halves(const sandwich_t *s, const fl_view_opts_t *v, const fl_tree_t *t, char *note,
                   size_t size, fl_view_opts_t *top, fl_view_opts_t *bottom) {
  heading(s, v, t, note, size);
  *top = *v;
  top->note = note;
  top->icicle = false;
  *bottom = *v;
  bottom->title = NULL;
  bottom->note = NULL;
  bottom->icicle = true;
}

/* ---- text ---- */

static char *text_of(const sandwich_t *s, const fl_view_opts_t *v, const fl_tree_t *t) {
  char line[400];
  heading(s, v, t, line, sizeof line);
  fl_text_opts_t o;
  fl_text_opts_init(&o);
  o.max_lines = 100;
  char *callers = fl_text_tree(s->callers_tree, &o), *callees = fl_text_tree(s->callees_tree, &o);
  fl__buf_t b = {0};
  fl__buf_printf(&b,
                 "%c%s\n\nCallers (each caller indented under the function it calls):\n%s\n"
                 "Callees:\n%s",
                 line[0] & ~0x20, line + 1, callers, callees);
  free(callers);
  free(callees);
  return fl__buf_take(&b);
}

/* ---- Vega-Lite ---- */

/* s with the words pick and pan (the flame graph's selections) suffixed,
 * and its scales named as Vega-Lite names those of the concatenated view
 * at (0 or 1): scale('x', ...) is scale('concat_0_x', ...). New. */
static char *renamed(const char *s, const char *suffix, int at_view, const regex_t *words) {
  fl__buf_t b = {0};
  fl__buf_add(&b, "", 0);
  regmatch_t m[2];
  const char *at = s;
  while (regexec(words, at, 2, m, at == s ? 0 : REG_NOTBOL) == 0) {
    if (at[m[1].rm_so] == '\'') { /* 'x' or 'y', a scale's name */
      fl__buf_add(&b, at, (size_t)m[1].rm_so);
      fl__buf_printf(&b, "'concat_%d_%c'", at_view, at[m[1].rm_so + 1]);
    } else {
      fl__buf_add(&b, at, (size_t)m[1].rm_eo);
      fl__buf_printf(&b, "_%s", suffix);
    }
    at += m[1].rm_eo;
  }
  fl__buf_puts(&b, at);
  return fl__buf_take(&b);
}

/* Suffixes, in j, every "name" (of selections, layers, data and the string
 * table a lookup reads) and the selections' names in expressions, so that
 * two flame specs can stand in one; titles and data values are left
 * alone. */
static void rename_in(json_t *j, const char *suffix, int at_view, const regex_t *words) {
  if (json_is_array(j)) {
    size_t i;
    json_t *value;
    json_array_foreach(j, i, value) rename_in(value, suffix, at_view, words);
    return;
  }
  if (!json_is_object(j)) return;
  const char *key;
  json_t *value;
  void *tmp;
  json_object_foreach_safe(j, tmp, key, value) {
    if (!strcmp(key, "title") || !strcmp(key, "values")) continue;
    if (!json_is_string(value)) {
      rename_in(value, suffix, at_view, words);
      continue;
    }
    char *text =
        !strcmp(key, "name") ? NULL : renamed(json_string_value(value), suffix, at_view, words);
    if (!text && asprintf(&text, "%s_%s", json_string_value(value), suffix) < 0) fl__oom(0);
    json_object_set_new(j, key, fl__nonnull(json_string(text)));
    free(text);
  }
}

/* One half of the sandwich from a flame spec (taken): its own data,
 * transforms, layers and size, its names suffixed; its string table moved
 * into datasets. */
static json_t *half(json_t *spec, const char *suffix, int at_view, json_t *datasets,
                    const regex_t *words) {
  json_t *strings = json_object_get(json_object_get(spec, "datasets"), "strings");
  char name[64];
  snprintf(name, sizeof name, "strings_%s", suffix);
  json_object_set(datasets, name, strings);
  json_t *part = fl__nonnull(json_object());
  static const char *const keep[] = {"width", "height", "data", "transform", "layer", "title"};
  for (size_t i = 0; i < FL__ARRAY_SIZE(keep); i++) {
    json_t *value = json_object_get(spec, keep[i]);
    if (value) json_object_set(part, keep[i], value);
  }
  rename_in(part, suffix, at_view, words);
  json_decref(spec);
  return part;
}

static json_t *vegalite_of(const sandwich_t *s, const fl_view_opts_t *v, const fl_tree_t *t,
                           char *err, size_t err_size) {
  char note[400];
  fl_view_opts_t top, bottom;
  halves(s, v, t, note, sizeof note, &top, &bottom);
  json_t *a = fl_vegalite(s->callers_tree, &top, err, err_size);
  json_t *b = fl_vegalite(s->callees_tree, &bottom, err, err_size);
  regex_t words;
  regcomp(&words, "(\\bpick\\b|\\bpan\\b|'[xy]')", REG_EXTENDED);
  json_t *params = json_incref(json_object_get(a, "params")); /* the search box, once */
  json_t *background = json_incref(json_object_get(a, "background"));
  json_t *config = json_incref(json_object_get(a, "config"));
  json_t *datasets = fl__nonnull(json_object());
  json_t *callers = half(a, "callers", 0, datasets, &words);
  json_t *callees = half(b, "callees", 1, datasets, &words);
  regfree(&words);
  char description[400];
  snprintf(description, sizeof description, "Sandwich of %s: its callers and its callees",
           v->focus);
  // clang-format off
  json_t *spec = fl__nonnull(json_pack(
      "{s:s,s:o,s:o,s:o,s:o,s:o,s:[o,o],s:{s:{s:s,s:s,s:s,s:I,s:I,s:I}}}",
      "$schema", "https://vega.github.io/schema/vega-lite/v5.json",
      "description", fl__json_text(description),
      "background", background,
      "config", config,
      "datasets", datasets,
      "params", params,
      "vconcat", callers, callees,
      "usermeta", "cflame", "view", "sandwich", "focus", v->focus, "unit", fl__unit(t),
                            "total", (json_int_t)s->total, "self", (json_int_t)s->self,
                            "all", (json_int_t)s->all));
  // clang-format on
  return spec;
}

/* ---- SVG ---- */

/* The two SVGs one above the other, each a nested <svg> at its place. */
static char *svg_of(const sandwich_t *s, const fl_view_opts_t *v, const fl_tree_t *t) {
  char note[400];
  fl_view_opts_t top, bottom;
  halves(s, v, t, note, sizeof note, &top, &bottom);
  char *a = fl_svg(s->callers_tree, &top), *b = fl_svg(s->callees_tree, &bottom);
  double wa = 0, ha = 0, wb = 0, hb = 0;
  sscanf(strstr(a, "width='"), "width='%lf' height='%lf'", &wa, &ha);
  sscanf(strstr(b, "width='"), "width='%lf' height='%lf'", &wb, &hb);
  double w = wa > wb ? wa : wb, h = ha + hb;
  fl__buf_t out = {0};
  fl__buf_printf(&out,
                 "<svg xmlns='http://www.w3.org/2000/svg' data-cflame='sandwich' width='%g' "
                 "height='%g' viewBox='0 0 %g "
                 "%g' style='max-width:100%%;height:auto;min-width:%dpx'>\n",
                 w, h, w, h, (int)(FL__SVG_MIN_SCALE * w));
  /* Each nested svg keeps its own size: its place is set on it. */
  fl__buf_puts(&out, "<svg x='0' y='0' ");
  fl__buf_puts(&out, a + strlen("<svg "));
  fl__buf_printf(&out, "<svg x='0' y='%g' ", ha);
  fl__buf_puts(&out, b + strlen("<svg "));
  fl__buf_puts(&out, "</svg>\n");
  free(a);
  free(b);
  return fl__buf_take(&out);
}

/* ---- the entry points ---- */

static const fl_view_opts_t *prepare(const fl_tree_t *t, const fl_view_opts_t *v,
                                     fl_view_opts_t *defaults, sandwich_t *s, char *err,
                                     size_t err_size) {
  v = fl__view_opts(v, defaults);
  return sandwich_build(s, t, v, err, err_size) < 0 ? NULL : v;
}

json_t *fl_sandwich_vegalite(const fl_tree_t *t, const fl_view_opts_t *v, char *err,
                             size_t err_size) {
  fl_view_opts_t defaults;
  sandwich_t s;
  if (!(v = prepare(t, v, &defaults, &s, err, err_size))) return NULL;
  json_t *spec = vegalite_of(&s, v, t, err, err_size);
  sandwich_free(&s);
  return spec;
}

char *fl_sandwich_svg(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size) {
  fl_view_opts_t defaults;
  sandwich_t s;
  if (!(v = prepare(t, v, &defaults, &s, err, err_size))) return NULL;
  char *svg = svg_of(&s, v, t);
  sandwich_free(&s);
  return svg;
}

char *fl_text_sandwich(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size) {
  fl_view_opts_t defaults;
  sandwich_t s;
  if (!(v = prepare(t, v, &defaults, &s, err, err_size))) return NULL;
  char *text = text_of(&s, v, t);
  sandwich_free(&s);
  return text;
}

json_t *fl_sandwich_bundle(const fl_tree_t *t, const fl_view_opts_t *v, char *err,
                           size_t err_size) {
  fl_view_opts_t defaults;
  sandwich_t s;
  if (!(v = prepare(t, v, &defaults, &s, err, err_size))) return NULL;
  char *svg = svg_of(&s, v, t), *report = text_of(&s, v, t);
  json_t *bundle = fl__bundle_assemble(vegalite_of(&s, v, t, err, err_size), svg, report, v);
  free(svg);
  free(report);
  sandwich_free(&s);
  return bundle;
}

/* view=sandwich (fl__view.h). */
int fl__view_sandwich(const fl__view_in_t *in, fl__drawing_t what, fl__drawn_t *out) {
  static const fl__view_fns_t fns = {fl_sandwich_vegalite, fl_sandwich_svg, fl_text_sandwich,
                                     fl_sandwich_bundle};
  return fl__view_draw_fns(&fns, in, what, out);
}
