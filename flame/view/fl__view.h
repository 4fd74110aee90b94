/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__view: the table of views (flame/view/fl_views.c) and what a view's row
 * holds.
 *
 * A view is one file and one row of the table: its name (the value of
 * view= and --view), the label of its tab on the HTML page, one line of
 * help, what it accepts (a profile; a diff too) and how its tree is built,
 * and one function that draws it in any of the four drawings a format is
 * made of (a Vega-Lite spec, an SVG, a text report, a notebook's bundle).
 * The option's choices and help (fl_options.c), the HTML page's tabs and
 * the refusal of a diff (fl_output.c), and the docs' table of views
 * (fl_views_markdown) all read the table; nothing else lists the views.
 *
 * fl_output.c builds what the row asks for (the tree, inverted or not, or
 * the diff) with the request's options and budget, and hands it to the
 * row's draw; a view never builds a tree or reads options itself, so the
 * drawing options apply to every view alike. */
#ifndef FL__VIEW_H
#define FL__VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cflame/fl_budget.h"
#include "cflame/fl_diff.h"
#include "cflame/fl_render.h"
#include "cflame/fl_tree.h"

/* What a row says of its view. */
enum {
  FL__VIEW_DIFF = 1u << 0,     /* draws a diff too (else: refused, saying which do) */
  FL__VIEW_INVERTED = 1u << 1, /* its tree is the inverted one (fl_tree_opts_t.inverted) */
  FL__VIEW_TOTALS = 1u << 2,   /* its figures are totals: minwidth 0 unless it is given */
  FL__VIEW_SAMPLES = 1u << 3,  /* draws nothing without samples: refused, saying what
                                  left none (fl_output_empty_note) */
};

/* The drawings a format is made of. */
typedef enum fl__drawing {
  FL__DRAW_VEGALITE, /* json: the Vega-Lite 5 spec */
  FL__DRAW_SVG,      /* text: the SVG document (fl__svg_interactive adds its script) */
  FL__DRAW_TEXT,     /* text: the report, as %profprint prints it */
  FL__DRAW_BUNDLE,   /* json: the MIME bundle a notebook displays */
} fl__drawing_t;

/* What a view draws from, built by fl_output.c (all borrowed). */
typedef struct fl__view_in {
  const fl_tree_t *tree;            /* the profile's tree; NULL when diff is set */
  const fl_diff_t *diff;            /* a diff, for a view with FL__VIEW_DIFF; else NULL */
  const fl_view_opts_t *view;       /* the request's view options, its note included */
  const fl_text_opts_t *text;       /* the text reports' options */
  bool flat;                        /* format=flat: a tree's report of functions */
  const fl_source_reader_t *source; /* where source files' texts come from */
  fl_budget_t *budget;              /* what a drawing charges before it writes */
  char *err;                        /* why a drawing failed */
  size_t err_size;
} fl__view_in_t;

/* A drawing: json (new) for a spec or a bundle, text (new) for an SVG or
 * a report; the other NULL. */
typedef struct fl__drawn {
  json_t *json;
  char *text;
} fl__drawn_t;

/* A view's drawing function: in drawn as what into *out (zeroed by the
 * caller). Returns 0, or -1 with in->err (a bad focus, samples without time
 * stamps, a budget refused). */
typedef int (*fl__view_draw_t)(const fl__view_in_t *in, fl__drawing_t what, fl__drawn_t *out);

/* A row of the table. */
typedef struct fl__view {
  fl_view_info_t info; /* name, label, help, as front ends and docs read them */
  unsigned flags;      /* FL__VIEW_* */
  fl__view_draw_t draw;
} fl__view_t;

/* The i-th row (the index fl_view_opts_t.view holds); NULL past the last. */
const fl__view_t *fl__view_at(size_t i);
/* The row called name, or NULL; *index (may be NULL): its index. */
const fl__view_t *fl__view_named(const char *name, size_t *index);

/* "view=NAME does not draw a diff yet: valid for a diff: flame, ...".
 * New. */
char *fl__view_refusal(const char *view);

/* The option view='s choices ("flame|icicle|...") and help, written from
 * the table when the library is loaded, for fl_options.c's row. */
extern char fl__view_choices[256];
extern char fl__view_help[2048];

/* The flame graph of in's tree or diff (fl_vegalite, fl_svg, fl_text_tree
 * or fl_text_flat, fl_bundle, and their diff forms), the drawing of view=flame
 * and view=callers, and that of any view that is a flame graph drawn
 * another way (view=icicle). */
int fl__view_flame(const fl__view_in_t *in, fl__drawing_t what, fl__drawn_t *out);

/* The drawings of a view whose functions of a tree all take (t, v, err,
 * err_size), as fl_chart_*'s do. */
typedef struct fl__view_fns {
  json_t *(*vegalite)(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);
  char *(*svg)(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);
  char *(*text)(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);
  json_t *(*bundle)(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size);
} fl__view_fns_t;
/* Draws in's tree as what with fns. Returns as fl__view_draw_t. */
int fl__view_draw_fns(const fl__view_fns_t *fns, const fl__view_in_t *in, fl__drawing_t what,
                      fl__drawn_t *out);

#endif
