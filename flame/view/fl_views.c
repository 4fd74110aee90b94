/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_views: the table of views (see fl__view.h), and what is made of it:
 * the option view='s choices and help, the docs' table of views. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_options.h"
#include "cflame/fl_output.h"
#include "fl__common.h"
#include "fl__view.h"

/* The table: X(NAME, LABEL, FLAGS, DRAW, HELP) a view, in the order of the
 * HTML page's tabs and of the option's choices; the first is the default.
 * DRAW is defined in the view's own file. */
#define VIEWS(X)                                                                              \
  X(flame, "Flame graph", FL__VIEW_DIFF, fl__view_flame, "the flame graph")                   \
  X(icicle, "Icicle", FL__VIEW_DIFF, fl__view_icicle,                                         \
    "the flame graph upside down: the root at the top, each function's callees below it")     \
  X(callers, "Callers", FL__VIEW_DIFF | FL__VIEW_INVERTED, fl__view_flame,                    \
    "the inverted graph, where time was spent at the root and each function's callers above " \
    "it, widths its self time")                                                               \
  X(top, "Top", FL__VIEW_DIFF | FL__VIEW_TOTALS, fl__view_top,                                \
    "the first 50 functions by self and by total, as pprof -top")                             \
  X(source, "Source", FL__VIEW_DIFF | FL__VIEW_TOTALS, fl__view_source,                       \
    "each source line with its self and total, as pprof list")                                \
  X(chart, "Time chart", FL__VIEW_TOTALS | FL__VIEW_SAMPLES, fl__view_chart,                  \
    "the samples in time order, a lane per thread")                                           \
  X(sandwich, "Sandwich", FL__VIEW_TOTALS | FL__VIEW_SAMPLES, fl__view_sandwich,              \
    "focus=FUNC's callers above it and its callees below")

#define DECLARE(name, label, flags, draw, help) \
  int draw(const fl__view_in_t *in, fl__drawing_t what, fl__drawn_t *out);
VIEWS(DECLARE)

#define ROW(name, label, flags, draw, help) \
  {{#name, label, help, ((flags)&FL__VIEW_DIFF) != 0, ((flags)&FL__VIEW_TOTALS) != 0}, flags, draw},
static const fl__view_t views[] = {VIEWS(ROW)};
#define N_VIEWS (FL__ARRAY_SIZE(views))

const fl__view_t *fl__view_at(size_t i) {
  return i < N_VIEWS ? &views[i] : NULL;
}

const fl_view_info_t *fl_view_at(size_t i) {
  return i < N_VIEWS ? &views[i].info : NULL;
}

const fl__view_t *fl__view_named(const char *name, size_t *index) {
  for (size_t i = 0; name && i < N_VIEWS; i++) {
    if (strcmp(views[i].info.name, name)) continue;
    if (index) *index = i;
    return &views[i];
  }
  return NULL;
}

int fl__view_draw_fns(const fl__view_fns_t *fns, const fl__view_in_t *in, fl__drawing_t what,
                      fl__drawn_t *out) {
  const fl_tree_t *t = in->tree;
  const fl_view_opts_t *v = in->view;
  switch (what) {
    case FL__DRAW_VEGALITE: out->json = fns->vegalite(t, v, in->err, in->err_size); break;
    case FL__DRAW_SVG: out->text = fns->svg(t, v, in->err, in->err_size); break;
    case FL__DRAW_TEXT: out->text = fns->text(t, v, in->err, in->err_size); break;
    case FL__DRAW_BUNDLE: out->json = fns->bundle(t, v, in->err, in->err_size); break;
  }
  return out->json || out->text ? 0 : -1;
}

/* The names of the views whose flags have all of want, "a, b or c"
 * (and_last: "a, b and c"), into b. */
static void add_names(fl__buf_t *b, unsigned want, const char *and_last) {
  size_t n = 0, k = 0;
  for (size_t i = 0; i < N_VIEWS; i++) n += (views[i].flags & want) == want;
  for (size_t i = 0; i < N_VIEWS; i++) {
    if ((views[i].flags & want) != want) continue;
    fl__buf_printf(b, "%s%s", k == 0 ? "" : k == n - 1 ? and_last : ", ", views[i].info.name);
    k++;
  }
}

char *fl__view_refusal(const char *view) {
  fl__buf_t b = FL__BUF_INIT;
  fl__buf_printf(&b, "view=%s does not draw a diff yet: valid for a diff: ", view);
  add_names(&b, FL__VIEW_DIFF, ", ");
  return fl__buf_take(&b);
}

/* The option view='s choices and help (fl_options.c's row points here),
 * written from the table before main runs, so that the option's row,
 * const like the rest, has them from the start. */
char fl__view_choices[256];
char fl__view_help[2048];

__attribute__((constructor)) static void write_option_texts(void) {
  fl__buf_t b = FL__BUF_INIT;
  for (size_t i = 0; i < N_VIEWS; i++) fl__buf_printf(&b, "%s%s", i ? "|" : "", views[i].info.name);
  if (b.len >= sizeof fl__view_choices) abort(); /* the buffer is the table's to size */
  memcpy(fl__view_choices, b.data, b.len + 1);
  fl__buf_clear(&b);
  for (size_t i = 0; i < N_VIEWS; i++)
    fl__buf_printf(&b, "%s%s: %s", i ? "; " : "", views[i].info.name, views[i].info.help);
  fl__buf_puts(&b, " (");
  add_names(&b, FL__VIEW_TOTALS, " and ");
  fl__buf_puts(&b, " take minwidth 0 unless it is given; a diff draws as ");
  add_names(&b, FL__VIEW_DIFF, " or ");
  fl__buf_puts(&b, ")");
  if (b.len >= sizeof fl__view_help) abort();
  memcpy(fl__view_help, b.data, b.len + 1);
  fl__buf_free(&b);
}

char *fl_views_markdown(fl_front_t front) {
  const fl_option_t *o = fl_option_find("view");
  fl__buf_t b = FL__BUF_INIT;
  fl__buf_puts(&b, "| view | what it shows | a diff |\n|---|---|---|\n");
  for (size_t i = 0; i < N_VIEWS; i++) {
    char shown[64];
    fl_option_shown(o, front, views[i].info.name, shown, sizeof shown);
    fl__buf_printf(&b, "| `%s` | %s | %s |\n", shown, views[i].info.help,
                   views[i].flags & FL__VIEW_DIFF ? "drawn too" : "refused");
  }
  return fl__buf_take(&b);
}
