/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_output: the table of output formats and the one function that draws
 * a profile in any of them (see fl_output.h). */
#define _GNU_SOURCE
#include "cflame/fl_output.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cflame/fl_diff.h"
#include "cflame/fl_io.h"
#include "cflame/fl_render.h"
#include "fl__common.h"
#include "fl__render.h"
#include "fl__view.h"

/* What a writer draws from: a tree, or a diff, built on demand. */
typedef struct draw {
  const fl_output_req_t *r;
  fl_options_t opts; /* r's, with the format's rules applied */
  fl_tree_t *tree, *base_tree;
  fl_diff_t *diff;
  char *empty; /* fl_output_empty_note of the tree, or NULL */
  char *kinds; /* fl_output_kinds_note of the tree's kind, or NULL */
  char *note;  /* owned: opts.view.note with kinds and empty added */
  char *err;
  size_t err_size;
  fl_budget_t budget; /* when the request brings none: of its options' max_memory */
} draw_t;

char *fl_output_kinds_note(const fl_profile_t *p, int kind, fl_front_t front) {
  uint32_t held = fl_profile_kinds(p);
  fl_profile_kind_t shown =
      kind == FL_TREE_KIND_MAIN ? fl_profile_info_const(p)->kind : (fl_profile_kind_t)kind;
  if (!(held & ~(1u << shown))) return NULL;
  const fl_option_t *opt = fl_option_find("kind");
  char as[64];
  fl__buf_t b = FL__BUF_INIT;
  fl_option_shown(opt, front, fl_kind(shown)->name, as, sizeof as);
  fl__buf_printf(&b, "%s (%s); also holds:", fl_kind(shown)->what, as);
  const char *sep = " ";
  for (unsigned k = 0; k < FL_PROFILE_N_KINDS; k++) {
    if (k == shown || !(held & (1u << k))) continue;
    fl_option_shown(opt, front, fl_kind(k)->name, as, sizeof as);
    fl__buf_printf(&b, "%s%s (%s)", sep, fl_kind(k)->what, as);
    sep = ", ";
  }
  return fl__buf_take(&b);
}

static const fl_tree_t *tree_of(draw_t *d) {
  if (d->tree) return d->tree;
  d->tree = fl_tree_build(d->r->profile, &d->opts.tree, d->r->root, d->err, d->err_size);
  if (!d->tree) return NULL;
  d->kinds = fl_output_kinds_note(d->r->profile, (int)fl_tree_kind(d->tree), d->opts.front);
  d->empty = fl_output_empty_note(d->tree, &d->opts);
  if (d->kinds || d->empty) {
    /* The note every view shows under its title: the request's, what
     * kind it draws, then why nothing is drawn. */
    fl__buf_t note = FL__BUF_INIT;
    const char *parts[] = {d->opts.view.note, d->kinds, d->empty};
    for (size_t i = 0; i < FL__ARRAY_SIZE(parts); i++)
      if (parts[i] && *parts[i]) fl__buf_printf(&note, "%s%s", note.len ? "; " : "", parts[i]);
    free(d->note);
    d->opts.view.note = d->note = fl__buf_take(&note);
  }
  return d->tree;
}

static const fl_diff_t *diff_of(draw_t *d) {
  if (!d->diff)
    d->diff = fl_diff_build(d->r->profile, d->r->baseline, &d->opts.tree, &d->opts.diff, d->r->root,
                            d->err, d->err_size);
  return d->diff;
}

/* The tree of an output that holds nothing without samples (the trace's
 * time line, speedscope's): NULL with the reason in d->err when a filter
 * left none. */
static const fl_tree_t *tree_with_samples(draw_t *d) {
  if (!tree_of(d)) return NULL;
  if (!d->empty) return d->tree;
  snprintf(d->err, d->err_size, "%s", d->empty);
  return NULL;
}

/* ---- the views (fl__view.h) ---- */

/* The row of the view d draws. */
static const fl__view_t *view_of(const draw_t *d) {
  const fl__view_t *view = fl__view_at((size_t)d->opts.view.view);
  return view ? view : fl__view_at(0);
}

/* d drawn as what by its view's row, from what the row takes (the tree, or
 * the diff); all NULL with d->err when the view cannot draw the request (a
 * diff, a filter that left no sample) or the drawing failed. */
static fl__drawn_t drawing(draw_t *d, fl__drawing_t what) {
  const fl__view_t *view = view_of(d);
  fl__drawn_t out = {0};
  fl__view_in_t in = {.view = &d->opts.view,
                      .text = &d->opts.text,
                      .flat = d->opts.flat,
                      .source = &d->r->source,
                      .budget = d->opts.tree.budget,
                      .err = d->err,
                      .err_size = d->err_size};
  if (d->r->baseline) {
    if (!(view->flags & FL__VIEW_DIFF)) {
      char *why = fl__view_refusal(view->info.name);
      snprintf(d->err, d->err_size, "%s", why);
      free(why);
      return out;
    }
    if (!(in.diff = diff_of(d))) return out;
  } else {
    if (!(in.tree = (view->flags & FL__VIEW_SAMPLES) ? tree_with_samples(d) : tree_of(d)))
      return out;
  }
  view->draw(&in, what, &out);
  return out;
}

/* An SVG file is interactive by itself; where its script does not run (an
 * <img>, a viewer without scripts), a line says where it does. */
static char *write_svg(draw_t *d, size_t *len) {
  char *svg = drawing(d, FL__DRAW_SVG).text;
  if (!svg) return NULL;
  char *out =
      fl__svg_interactive(svg, "Open this file in a web browser to hover, zoom and search.");
  free(svg);
  *len = 0;
  return out;
}

static char *write_vegalite(draw_t *d, size_t *len) {
  json_t *spec = drawing(d, FL__DRAW_VEGALITE).json;
  if (!spec) return NULL;
  char *json = fl__nonnull(json_dumps(spec, JSON_COMPACT)), *out;
  json_decref(spec);
  if (asprintf(&out, "%s\n", json) < 0) fl__oom(0);
  free(json);
  return out;
}

struct format;
static void draw_init(draw_t *d, const fl_output_req_t *r, const struct format *f, char *err,
                      size_t err_size);

static void draw_free(draw_t *d) {
  fl_tree_destroy(&d->tree);
  fl_tree_destroy(&d->base_tree);
  fl_diff_destroy(&d->diff);
  fl_options_free(&d->opts);
  free(d->empty);
  free(d->kinds);
  free(d->note);
}

/* One page with a tab for each view that can draw the request, the one
 * the options chose shown first (its failure is the page's; another view
 * that cannot draw it, a chart of samples without time stamps, has no
 * tab). */
static char *write_html(draw_t *d, size_t *len) {
  size_t n_views = 0;
  while (fl__view_at(n_views)) n_views++;
  fl_html_view_t *views = fl__xcalloc(n_views, sizeof *views);
  json_t **specs = fl__xcalloc(n_views, sizeof *specs);
  char **svgs = fl__xcalloc(n_views, sizeof *svgs), *out = NULL;
  size_t n = 0, selected = 0;
  bool failed = false;
  for (size_t i = 0; i < n_views && !failed; i++) {
    const fl_view_info_t *info = &fl__view_at(i)->info;
    bool chosen = (int)i == d->opts.view.view;
    fl_output_req_t r = *d->r;
    fl_options_t opts;
    fl_options_copy(&opts, d->r->opts);
    char err[512];
    fl_options_set(&opts, "view", info->name, err, sizeof err); /* a name of the table */
    r.opts = &opts;
    draw_t v;
    draw_init(&v, &r, NULL, chosen ? d->err : err, chosen ? d->err_size : sizeof err);
    v.opts.view.title = d->opts.view.title; /* the request's note and title */
    v.opts.view.note = d->opts.view.note;
    specs[n] = drawing(&v, FL__DRAW_VEGALITE).json;
    svgs[n] = specs[n] ? drawing(&v, FL__DRAW_SVG).text : NULL;
    draw_free(&v);
    fl_options_free(&opts);
    if (!specs[n] || !svgs[n]) {
      json_decref(specs[n]);
      free(svgs[n]);
      specs[n] = NULL;
      svgs[n] = NULL;
      failed = chosen;
      continue;
    }
    if (chosen) selected = n;
    views[n] = (fl_html_view_t){
        .name = info->name, .label = info->label, .spec = specs[n], .svg = svgs[n]};
    n++;
  }
  if (!failed && n)
    out = fl_html_page_views(views, n, selected,
                             d->r->page_title ? d->r->page_title : d->opts.view.title);
  for (size_t i = 0; i < n; i++) {
    json_decref(specs[i]);
    free(svgs[i]);
  }
  free(views);
  free(specs);
  free(svgs);
  *len = 0;
  return out;
}

/* The text report, after the line that says why it is empty when it is. */
static char *write_text(draw_t *d, size_t *len) {
  char *report = drawing(d, FL__DRAW_TEXT).text;
  if (!report || (!d->empty && !d->kinds)) return report;
  fl__buf_t b = FL__BUF_INIT;
  if (d->kinds) fl__buf_printf(&b, "%s\n", d->kinds);
  if (d->empty) fl__buf_printf(&b, "%s\n", d->empty);
  fl__buf_puts(&b, report);
  free(report);
  *len = 0;
  return fl__buf_take(&b);
}

/* Whether t's counts fit pprof's values (int64, a time's as nanoseconds);
 * else says so in d->err. */
static bool pprof_fits(draw_t *d, const fl_tree_t *t) {
  const fl_node_t *root = fl_tree_root(t);
  const fl_profile_info_t *info = fl_tree_info(t);
  uint64_t ns = fl_kind(info->kind)->time && info->interval_ns ? info->interval_ns : 1, most;
  if (!__builtin_mul_overflow(root->count, ns, &most) && most <= INT64_MAX &&
      root->allocs <= INT64_MAX)
    return true;
  snprintf(d->err, d->err_size,
           "the profile's counts (%" PRIu64
           "%s) do not fit pprof's values, which go to "
           "%" PRId64 ": write it as folded stacks, which hold any count",
           root->count, ns > 1 ? " intervals, as nanoseconds" : "", INT64_MAX);
  return false;
}

/* The drawn kind's tree first, then a tree of each other kind the
 * profile holds, under the same options: a file of every kind. A kind
 * that shares samples with the drawn one (fl_kind_takes) is left out: a
 * wall-clock profile is written as its wall-clock time, whose waits'
 * leaves give each sample its kind when read (fl_profile_add_sample_of),
 * and as its CPU or off-CPU time alone when one of those is drawn. */
static char *write_pprof(draw_t *d, size_t *len) {
  if (d->r->baseline) {
    snprintf(d->err, d->err_size,
             "a pprof file holds one profile, and this is a diff: write it as svg, html, "
             "vegalite or text, or as folded stacks with both counts");
    return NULL;
  }
  if (!tree_of(d) || !pprof_fits(d, d->tree)) return NULL;
  fl_tree_t *trees[FL_PROFILE_N_KINDS] = {d->tree};
  size_t n = 1;
  uint32_t held = fl_profile_kinds(d->r->profile), drawn = fl_kind_takes(fl_tree_kind(d->tree));
  uint32_t shared = drawn; /* the samples of the kinds that take some of the drawn one's */
  for (unsigned k = 0; k < FL_PROFILE_N_KINDS; k++)
    if (held & (1u << k) && fl_kind_takes(k) & drawn) shared |= fl_kind_takes(k);
  fl_tree_opts_t o = d->opts.tree;
  char *out = NULL;
  for (unsigned k = 0; k < FL_PROFILE_N_KINDS; k++) {
    if (!(held & (1u << k)) || fl_kind_takes(k) & shared) continue;
    o.kind = (int)k;
    trees[n] = fl_tree_build(d->r->profile, &o, d->r->root, d->err, d->err_size);
    if (!trees[n] || !pprof_fits(d, trees[n++])) goto done;
  }
  out = fl_pprof_kinds((const fl_tree_t *const *)trees, n, len);
done:
  for (size_t i = 1; i < n; i++) fl_tree_destroy(&trees[i]);
  return out;
}

typedef struct folded_line {
  char *stack;       /* borrowed from a folded text */
  uint64_t count[2]; /* baseline, target */
} folded_line_t;

/* Splits folded text (from fl_folded) in place into (stack, count) pairs,
 * adding them to *lines with the count in slot `which`. */
static void add_folded(char *text, int which, folded_line_t **lines, size_t *n, size_t *cap) {
  for (char *line = text; *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    char *sp = strrchr(line, ' ');
    if (sp) {
      *sp = '\0';
      *lines = fl__grow(*lines, cap, *n + 1, sizeof **lines);
      (*lines)[*n] = (folded_line_t){.stack = line};
      (*lines)[(*n)++].count[which] = strtoull(sp + 1, NULL, 10);
    }
    if (!nl) break;
    line = nl + 1;
  }
}

static int cmp_folded(const void *a, const void *b) {
  return strcmp(((const folded_line_t *)a)->stack, ((const folded_line_t *)b)->stack);
}

/* The folded stacks of the tree; of a diff, "stack BASE TARGET" per stack
 * of either profile, as Brendan Gregg's difffolded.pl writes it and
 * flamegraph.pl reads it, BASE scaled to the target's total under
 * normalize. The one writer of a diff as folded stacks. */
/* fl_folded of t, its text charged to the drawing's budget first; NULL
 * with d->err when the budget refuses it. */
static char *folded_charged(draw_t *d, const fl_tree_t *t) {
  if (fl_budget_charge(d->opts.tree.budget, fl_folded_bytes(t), 0) < 0) {
    fl__budget_refused(d->opts.tree.budget, t, "writing the folded stacks", d->err, d->err_size);
    return NULL;
  }
  return fl_folded(t);
}

static char *write_folded(draw_t *d, size_t *len) {
  if (!tree_of(d)) return NULL;
  char *target = folded_charged(d, d->tree);
  if (!target || !d->r->baseline) return target;
  d->base_tree = fl_tree_build(d->r->baseline, &d->opts.tree, d->r->root, d->err, d->err_size);
  if (!d->base_tree) {
    free(target);
    return NULL;
  }
  char *base = folded_charged(d, d->base_tree);
  if (!base) {
    free(target);
    return NULL;
  }
  folded_line_t *lines = NULL;
  size_t n = 0, cap = 0;
  add_folded(base, 0, &lines, &n, &cap);
  add_folded(target, 1, &lines, &n, &cap);
  if (n) qsort(lines, n, sizeof *lines, cmp_folded);
  double total[2] = {0, 0};
  for (size_t i = 0; i < n; i++) {
    total[0] += (double)lines[i].count[0];
    total[1] += (double)lines[i].count[1];
  }
  double scale = d->opts.diff.normalize && total[0] > 0 ? total[1] / total[0] : 1.0;
  fl__buf_t b = {0};
  fl__buf_add(&b, "", 0);
  for (size_t i = 0; i < n;) {
    /* A stack in both profiles: one line with both counts. */
    uint64_t c[2] = {lines[i].count[0], lines[i].count[1]};
    size_t j = i + 1;
    for (; j < n && !strcmp(lines[j].stack, lines[i].stack); j++) {
      c[0] += lines[j].count[0];
      c[1] += lines[j].count[1];
    }
    fl__buf_printf(&b, "%s %llu %llu\n", lines[i].stack,
                   (unsigned long long)llround((double)c[0] * scale), (unsigned long long)c[1]);
    i = j;
  }
  free(lines);
  free(base);
  free(target);
  return fl__buf_take(&b);
}

/* speedscope's file: the tree's threads, or a diff's two trees. */
static char *write_speedscope(draw_t *d, size_t *len) {
  if (!(d->r->baseline ? tree_of(d) : tree_with_samples(d))) return NULL;
  if (d->r->baseline && !(d->base_tree = fl_tree_build(d->r->baseline, &d->opts.tree, d->r->root,
                                                       d->err, d->err_size)))
    return NULL;
  char *out = fl_speedscope(d->tree, d->base_tree, d->opts.tree.budget, len);
  if (!out)
    fl__budget_refused(d->opts.tree.budget, d->tree, "writing the speedscope file", d->err,
                       d->err_size);
  return out;
}

/* Trace events: the chart's bars, of one profile. */
static char *write_trace(draw_t *d, size_t *len) {
  if (d->r->baseline) {
    snprintf(d->err, d->err_size,
             "trace events hold one profile's time line, and this is a diff: write it as "
             "speedscope (the target and the baseline as two profiles), svg, html, vegalite, "
             "text or folded");
    return NULL;
  }
  if (!tree_with_samples(d)) return NULL;
  return fl_trace(d->tree, &d->opts.view, d->opts.tree.budget, len, d->err, d->err_size);
}

/* The view's SVG, as a still picture: its notes promise no
 * interaction. */
static char *draw_still_svg(draw_t *d) {
  bool still = d->opts.view.still;
  d->opts.view.still = true;
  char *svg = drawing(d, FL__DRAW_SVG).text;
  d->opts.view.still = still;
  return svg;
}

/* A picture of the view's SVG (fl_picture_*). */
static char *write_png(draw_t *d, size_t *len) {
  char *svg = draw_still_svg(d);
  if (!svg) return NULL;
  char *png = fl_picture_png(svg, strlen(svg), d->opts.view.dpi, len, d->err, d->err_size);
  free(svg);
  return png;
}

static char *write_pdf(draw_t *d, size_t *len) {
  char *svg = draw_still_svg(d);
  if (!svg) return NULL;
  char *pdf = fl_picture_pdf(svg, strlen(svg), len, d->err, d->err_size);
  free(svg);
  return pdf;
}

/* ---- the table ---- */

static const struct format {
  fl_output_format_t f;
  bool every_sample; /* a file of every sample: minwidth 0 unless given */
  bool every_line;   /* lines=true unless given: its readers merge a function's lines
                        themselves (pprof -top; -lines keeps them), so none is lost */
  char *(*write)(draw_t *d, size_t *len);
} formats[] = {
    {{"svg", ".svg", "the flame graph as an SVG image"}, false, false, write_svg},
    {{"html", ".html", "a page with a tab per view, each interactive, and its SVG"},
     false,
     false,
     write_html},
    {{"vegalite", ".vl.json", "the Vega-Lite 5 spec (JSON)"}, false, false, write_vegalite},
    {{"folded", ".folded", "folded stacks; a diff's: \"stack BASE TARGET\""},
     true,
     false,
     write_folded},
    {{"text", ".txt", "the tree as text, as %profprint prints it"}, false, false, write_text},
    {{"pprof", ".pb.gz", "pprof's profile.proto, gzipped"}, true, true, write_pprof},
    {{"speedscope", ".speedscope.json",
      "speedscope's file format: a profile per thread, samples in time order"},
     true,
     false,
     write_speedscope},
    {{"trace", ".trace.json",
      "Chrome's trace-event format: the chart's bars as complete events per thread"},
     true,
     false,
     write_trace},
    {{"png", ".png", "the SVG as a PNG picture, at dpi="}, false, false, write_png},
    {{"pdf", ".pdf", "the SVG as a PDF page, vectors and text"}, false, false, write_pdf},
};
#define N_FORMATS (FL__ARRAY_SIZE(formats))

static const struct format *format_named(const char *name) {
  for (size_t i = 0; name && i < N_FORMATS; i++)
    if (!strcmp(formats[i].f.name, name)) return &formats[i];
  return NULL;
}

bool fl_output_format_known(const char *format) {
  return format_named(format) != NULL;
}

const fl_output_format_t *fl_output_format_at(size_t i) {
  return i < N_FORMATS ? &formats[i].f : NULL;
}

/* "a, b, c" of the table's names or endings (and_last: "a, b or c"). */
static const char *listed(bool endings, bool and_last) {
  static char lists[2][2][160];
  char *out = lists[endings][and_last];
  if (!out[0]) {
    size_t used = 0;
    for (size_t i = 0; i < N_FORMATS; i++) {
      const char *sep = i == 0 ? "" : and_last && i == N_FORMATS - 1 ? " or " : ", ";
      used += (size_t)snprintf(out + used, sizeof lists[0][0] - used, "%s%s", sep,
                               endings ? formats[i].f.ending : formats[i].f.name);
    }
  }
  return out;
}

const char *fl_output_formats(bool and_last) {
  return listed(false, and_last);
}

char *fl_output_formats_markdown(void) {
  fl__buf_t b = FL__BUF_INIT;
  fl__buf_puts(&b, "| format | file ending | what it writes |\n|---|---|---|\n");
  for (size_t i = 0; i < N_FORMATS; i++)
    fl__buf_printf(&b, "| `%s` | `%s` | %s |\n", formats[i].f.name, formats[i].f.ending,
                   formats[i].f.help);
  return fl__buf_take(&b);
}
const char *fl_output_endings(bool and_last) {
  return listed(true, and_last);
}

const char *fl_output_format_of_path(const char *path) {
  size_t len = strlen(path);
  for (size_t i = 0; i < N_FORMATS; i++) {
    size_t n = strlen(formats[i].f.ending);
    if (len > n && strcasecmp(path + len - n, formats[i].f.ending) == 0) return formats[i].f.name;
  }
  return NULL;
}

const char *fl_output_ending_of_format(const char *format) {
  const struct format *f = format_named(format);
  return f ? f->f.ending : NULL;
}

/* d for r: r's options, with minwidth 0 unless given for a file of every
 * sample and for the table views (whose figures are totals), and every
 * line unless lines is given for a format that keeps them (f NULL: a
 * bundle, drawn as the notebook draws). */
static void draw_init(draw_t *d, const fl_output_req_t *r, const struct format *f, char *err,
                      size_t err_size) {
  *d = (draw_t){.r = r, .err = err, .err_size = err_size};
  fl_options_copy(&d->opts, r->opts);
  fl_options_budget(r->opts, &d->budget);
  d->opts.tree.budget = r->budget ? r->budget : &d->budget;
  bool exact = (f && f->every_sample) || (view_of(d)->flags & FL__VIEW_TOTALS);
  if (exact && !fl_options_given(r->opts, "minwidth")) d->opts.tree.minwidth = 0;
  if (f && f->every_line && !fl_options_given(r->opts, "lines")) d->opts.tree.lines = FL_LINES_ON;
}

/* ---- a filter that leaves nothing ---- */

static bool has_thread(const fl_tree_opts_t *o, int thread) {
  for (size_t i = 0; i < o->n_threads; i++)
    if (o->threads[i] == thread) return true;
  return false;
}

/* "threads=1,3" or "--threads 1,3": the thread filter as front writes it. */
static void threads_shown(const fl_options_t *o, char *out, size_t size) {
  fl__buf_t list = FL__BUF_INIT;
  for (size_t i = 0; i < o->tree.n_threads; i++)
    fl__buf_printf(&list, "%s%d", i ? "," : "", o->tree.threads[i]);
  fl_option_shown(fl_option_find("threads"), o->front, list.data ? list.data : "", out, size);
  fl__buf_free(&list);
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (const void *const *)a, y = (uintptr_t) * (const void *const *)b;
  return (x > y) - (x < y);
}

/* How many distinct function names the profile's frames have (names are
 * interned: equal names are one pointer). */
static size_t n_functions(const fl_profile_t *p) {
  size_t n = fl_profile_n_frames(p), distinct = 0;
  const char **names = fl__xmalloc(n ? n : 1, sizeof *names);
  for (size_t i = 0; i < n; i++) names[i] = fl_profile_frame(p, (uint32_t)i)->func;
  qsort(names, n, sizeof *names, cmp_ptr);
  for (size_t i = 0; i < n; i++) distinct += !i || names[i] != names[i - 1];
  free(names);
  return distinct;
}

char *fl_output_empty_note(const fl_tree_t *t, const fl_options_t *o) {
  const fl_profile_t *p = fl_tree_profile(t);
  const fl_profile_info_t *info = fl_tree_info(t);
  if (fl_tree_root(t)->count || !info->total_weight) return NULL;
  const fl_kind_info_t *kind = fl_kind(info->kind);
  fl__buf_t b = FL__BUF_INIT;
  char shown[512], weight[64];
  fl_thread_weights_t *w = NULL;
  size_t n = fl_profile_thread_weights(p, info->kind, &w);
  uint64_t kept = 0; /* the weight of the threads the filter keeps */
  for (size_t i = 0; i < n; i++)
    if (!o->tree.threads || has_thread(&o->tree, w[i].thread)) kept += w[i].on + w[i].off;
  if (o->tree.threads && !kept) {
    threads_shown(o, shown, sizeof shown);
    fl__buf_printf(&b, "%s leaves no sample: the profile's threads are", shown);
    for (size_t i = 0; i < n; i++) {
      const char *name = fl_profile_thread_name(p, w[i].thread);
      fl_count_noun(w[i].on + w[i].off, kind->one, kind->many, weight, sizeof weight);
      fl__buf_printf(&b, "%s %d%s%s%s with %s", i ? "," : "", w[i].thread, name ? " (" : "",
                     name ? name : "", name ? ")" : "", weight);
    }
  } else if (o->tree.filter) {
    fl__buf_t value = FL__BUF_INIT;
    fl__buf_printf(&value, o->tree.filter_is_regex ? "/%s/" : "%s", o->tree.filter);
    fl_option_shown(fl_option_find("filter"), o->front, value.data, shown, sizeof shown);
    fl__buf_free(&value);
    fl__buf_printf(&b, "%s leaves no sample: none of the profile's %zu functions %s \"%s\"", shown,
                   n_functions(p), o->tree.filter_is_regex ? "matches" : "contains",
                   o->tree.filter);
    if (o->tree.threads) {
      threads_shown(o, shown, sizeof shown);
      fl__buf_printf(&b, " in the samples %s keeps", shown);
    }
  } else {
    fl__buf_puts(&b, "the options leave no sample of the profile's");
    fl_count_noun(info->total_weight, kind->one, kind->many, weight, sizeof weight);
    fl__buf_printf(&b, " %s", weight);
  }
  free(w);
  return fl__buf_take(&b);
}

char *fl_output_render(const fl_output_req_t *r, size_t *len, char *err, size_t err_size) {
  const struct format *f = format_named(r->format);
  if (!f) {
    snprintf(err, err_size, "unknown format '%s'; valid: %s", r->format ? r->format : "",
             fl_output_formats(true));
    return NULL;
  }
  draw_t d;
  draw_init(&d, r, f, err, err_size);
  *len = 0;
  char *out = f->write(&d, len);
  if (out && !*len) *len = strlen(out);
  draw_free(&d);
  return out;
}

json_t *fl_output_bundle(const fl_output_req_t *r, char *err, size_t err_size) {
  draw_t d;
  draw_init(&d, r, NULL, err, err_size);
  json_t *bundle = drawing(&d, FL__DRAW_BUNDLE).json;
  if (bundle && d.opts.view.png) {
    /* A picture of the same drawing, for front ends that show neither
     * Vega-Lite nor HTML (LaTeX, some viewers). */
    size_t len;
    char *png = write_png(&d, &len);
    if (!png) {
      json_decref(bundle);
      bundle = NULL;
    } else {
      char *b64 = fl_picture_base64(png, len);
      json_object_set_new(bundle, "image/png", fl__nonnull(json_string(b64)));
      free(b64);
      free(png);
    }
  }
  draw_free(&d);
  return bundle;
}

int fl_output_write(const fl_output_req_t *r, const char *path, bool in_place, size_t *written,
                    char *err, size_t err_size) {
  size_t len;
  char *out = fl_output_render(r, &len, err, err_size);
  if (!out) return -1;
  int rc = fl_write_file(path, out, len, in_place, err, err_size);
  if (rc == 0 && written) *written = len;
  free(out);
  return rc;
}
