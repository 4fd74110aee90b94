/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_bundle: the MIME bundle of a flame graph or of a diff, assembled from
 * the renderers (fl_vegalite.c, fl_svg.c, fl_text.c); what they share is
 * fl__render.c's.
 *
 * The bundle is {"application/vnd.vegalite.v5+json": spec, "text/markdown":
 * the SVG in a <div>, interactive by itself (fl__svg_interactive), with a
 * line under it that its script hides, "text/plain": tree report}, and it
 * holds each thing once (docs/PROFILING.md, "What each front end shows");
 * fl_output_bundle adds "image/png" when asked (png=). JupyterLab and VS
 * Code show the spec. The classic notebook and nbconvert's HTML show the
 * markdown, whose raw HTML keeps the SVG whole, where nbconvert 6.5 strips
 * an image/svg+xml item's <rect> and <text> (its clean_html); so the SVG
 * goes in the markdown only, and no image/svg+xml item repeats it. (That
 * also keeps nbconvert --to pdf, which would convert an SVG item with
 * inkscape, from failing.) JupyterLab ranks markdown (60) below Vega-Lite
 * (57), so it still shows the interactive view; text/html (50) would
 * outrank it. The bundle holds at most 5,000 rows, and stays under 1 MB as
 * compact JSON. A tree with thousands of frames can need fewer rows than
 * max_rows: fl_bundle renders, measures, and when the bundle is too big
 * draws fewer (narrower frames go first, and the note under the title says
 * how many), until it fits. fl_diff_bundle does the same with a diff's
 * renderings. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__render.h"

/* ---- the bundle ---- */

typedef struct ranked {
  uint64_t count;
  uint32_t id;
  uint32_t index; /* in the rows */
} ranked_t;

/* Widest first; among equals the smaller id, so a parent (never narrower
 * than its child) comes before its children: fl_tree_rows's order. */
static int cmp_ranked(const void *pa, const void *pb) {
  const ranked_t *a = pa, *b = pb;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

/* Keeps the max_rows widest of r's rows, in pre-order: what fl_tree_rows
 * would choose, without sorting the whole tree again. */
static void rows_shrink(fl__rows_t *r, size_t max_rows) {
  if (max_rows >= r->n) return;
  ranked_t *ranked = fl__xmalloc(r->n, sizeof *ranked);
  bool *kept = fl__xcalloc(r->n, sizeof *kept);
  for (size_t i = 0; i < r->n; i++)
    ranked[i] = (ranked_t){.count = r->rows[i]->count, .id = r->rows[i]->id, .index = (uint32_t)i};
  qsort(ranked, r->n, sizeof *ranked, cmp_ranked);
  for (size_t i = 0; i < max_rows; i++) kept[ranked[i].index] = true;
  size_t k = 0;
  r->levels = 0;
  for (size_t i = 0; i < r->n; i++) {
    if (!kept[i]) continue;
    r->rows[k++] = r->rows[i];
    if (r->rows[i]->depth + 1 > r->levels) r->levels = r->rows[i]->depth + 1;
  }
  r->n_merged += r->n - k;
  r->n = k;
  free(ranked);
  free(kept);
}

/* The markdown item: svg as an HTML block, which in CommonMark runs from a
 * line that opens a <div> to the first blank line; so the copy has none.
 * The <div> scrolls where the page is narrower than the graph's smallest
 * scale. hint (NULL: none) is a paragraph under the graph, inside the same
 * block. New. */
static char *markdown_of(const char *drawing, const char *hint) {
  char *svg = fl__svg_interactive(drawing, NULL);
  fl__buf_t b = {0};
  fl__buf_puts(&b, "<div class=\"cflame-flamegraph\" style=\"overflow-x:auto\">\n");
  for (const char *p = svg; *p;) {
    size_t n = strcspn(p, "\n");
    fl__buf_add(&b, p, n);
    for (p += n; *p == '\n'; p++) continue;
    if (*p) fl__buf_puts(&b, "\n");
  }
  if (hint && hint[0]) {
    char *clean = fl__clean_text(hint, false);
    fl__buf_puts(&b, "\n<p class=\"cflame-hint\" style=\"font-size:12px;opacity:0.75\">");
    for (const char *c = clean; *c; c++) {
      if (*c == '&')
        fl__buf_puts(&b, "&amp;");
      else if (*c == '<')
        fl__buf_puts(&b, "&lt;");
      else if (*c == '>')
        fl__buf_puts(&b, "&gt;");
      else
        fl__buf_add(&b, c, 1);
    }
    fl__buf_puts(&b, "</p>");
    free(clean);
  }
  fl__buf_puts(&b, "\n</div>\n");
  free(svg);
  return fl__buf_take(&b);
}

/* The bundle of spec (taken), svg and text (already the whole text/plain).
 * New. */
static json_t *assemble(json_t *spec, const char *svg, const char *text, const char *hint) {
  char *markdown = markdown_of(svg, hint);
  json_t *bundle = fl__nonnull(json_object());
  json_object_set_new(bundle, "application/vnd.vegalite.v5+json", spec);
  json_object_set_new(bundle, "text/markdown", fl__nonnull(json_string(markdown)));
  json_object_set_new(bundle, "text/plain", fl__nonnull(json_string(text)));
  free(markdown);
  return bundle;
}

/* text/plain: v->note, a line, then report; valid UTF-8. New. */
static char *text_of(const fl_view_opts_t *v, const char *report) {
  fl__buf_t lines = {0};
  if (v->note && v->note[0]) fl__buf_printf(&lines, "%s\n", v->note);
  fl__buf_puts(&lines, report);
  char *text = fl__clean_text(lines.data, true);
  fl__buf_free(&lines);
  return text;
}

json_t *fl__bundle_assemble(json_t *spec, const char *svg, const char *report,
                            const fl_view_opts_t *v) {
  char *text = text_of(v, report);
  json_t *bundle = assemble(spec, svg, text, v->markdown_hint);
  free(text);
  return bundle;
}

/* The bundle for these rows. New. */
static json_t *bundle_of(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r,
                         const char *text) {
  char *svg = fl__svg_rows(t, v, r);
  json_t *bundle = assemble(fl__vegalite_rows(t, v, r), svg, text, v->markdown_hint);
  free(svg);
  return bundle;
}

/* The bundle of tree t (a diff's drawn tree when d is not NULL) with the
 * report raw_text (freed here): as many rows as fit. New. */
static json_t *bundle_fit(const fl_tree_t *t, const fl_diff_t *d, const fl_view_opts_t *v,
                          char *raw_text) {
  char *text = text_of(v, raw_text);
  free(raw_text);
  json_t *bundle = NULL;
  fl__rows_t r;
  fl__rows_get(t, d, v->max_rows, &r);
  for (int attempt = 0;; attempt++) {
    bundle = bundle_of(t, v, &r, text);
    size_t bytes = json_dumpb(bundle, NULL, 0, JSON_COMPACT);
    if (bytes < FL__BUNDLE_MAX_BYTES || r.n <= 1 || attempt == 7) break;
    /* Too big: scale the rows down by the overshoot, with a margin, since
     * the narrow frames left out cost less than the average. */
    size_t fewer = (size_t)((double)r.n * (FL__BUNDLE_MAX_BYTES * 0.95) / (double)bytes);
    json_decref(bundle);
    bundle = NULL;
    rows_shrink(&r, fewer < r.n ? (fewer ? fewer : 1) : r.n - 1);
  }
  fl__rows_free(&r);
  free(text);
  return bundle;
}

/* The bundle of tree t, whose diff d is (NULL: a profile's), with its text
 * report of up to 200 lines. */
static json_t *bundle_with_report(const fl_tree_t *t, const fl_diff_t *d, const fl_view_opts_t *v) {
  fl_view_opts_t defaults;
  v = fl__view_opts(v, &defaults);
  fl_text_opts_t to;
  fl_text_opts_init(&to);
  to.max_lines = 200;
  return bundle_fit(t, d, v, d ? fl_text_diff(d, &to) : fl_text_tree(t, &to));
}

json_t *fl_bundle(const fl_tree_t *t, const fl_view_opts_t *v, char *err, size_t err_size) {
  return bundle_with_report(t, NULL, v);
}

json_t *fl_diff_bundle(const fl_diff_t *d, const fl_view_opts_t *v, char *err, size_t err_size) {
  return bundle_with_report(fl_diff_tree(d), d, v);
}
