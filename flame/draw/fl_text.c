/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_text: the text reports of Julia's Profile.print, for consoles and for
 * the text/plain part of a bundle.
 *
 * Tree (format=:tree), one line per frame in pre-order, indented two spaces
 * per level under the root:
 *
 *   Total: 10 samples (interval 1 ms)
 *   Count Self  Frame
 *      10    0  cell[1]
 *      10    2    main  cell[1]:5
 *       8    8      work  cell[1]:12
 *
 * Flat (format=:flat), one line per distinct frame (same identity as the
 * tree's nodes: function, file, line, module, address), most expensive
 * first, ties by function, file and line:
 *
 *   Total: 10 samples (interval 1 ms)
 *   Count Self  Percent  Function  File:Line
 *      10    2   100.0%  main      cell[1]:5
 *
 * A frame's Count in the flat report is the weight of the samples whose
 * stack contains it at least once: a recursive function is counted once per
 * sample, not once per occurrence as Julia does, so no count exceeds the
 * total. Self is the weight of the samples that end in it. The root (the
 * whole run) is not listed. The report is made from the tree's nodes, so
 * frames that minwidth hid are missing from it: build the tree with
 * minwidth=0 for an exact flat report.
 *
 * Allocation profiles print byte counts with units (B, KiB, MiB, GiB) and
 * an Allocs column (inclusive allocation counts).
 *
 * Location: "file:line", "file" when the line is unknown, else the module,
 * else nothing. Lines wider than cols are cut to cols columns ending in
 * "…"; in the tree, indentation deeper than half of the columns right of
 * the counts is shown as "+D " (D the depth), so that names stay visible. maxdepth and mincount
 * skip frames (the root is depth 0); max_lines limits the frame lines and
 * ends the report with "… N more lines". A tree with frames that minwidth
 * hid ends with a line that says how many and how much.
 *
 * Diff (fl_text_diff): the tree of a diff's drawn profile, with its counts,
 * the other profile's (scaled to the same units; "-" for new frames), the
 * delta and the change, after a total line, the diff's notes and its
 * summary; the vanished frames at the end (at most 20, widest first):
 *
 *   Total: target 602 samples, baseline 510 samples (interval 1 ms)
 *   grew: 3 frames, shrank: 1, new: 1, vanished: 2; 25.2% of the target within noise
 *     Target Baseline    Delta  Change  Frame
 *        602      510      +92  grew    cell[2]
 *        602      510      +92  grew      main  cell[1]:3
 *         60        -      +60  new         memcpy  libc.so.6
 *        152      150       +2  same        qsort  libc.so.6
 *        300      100     +200  grew        work  cell[1]:5
 *         80      200     -120  shrank      parse  cell[1]:8
 *   Vanished (in the baseline only):
 *     tokenize  cell[1]:20  — baseline 60 samples (11.8%)
 *
 * Negated, the drawn profile is the baseline and its column comes first.
 * Allocation diffs print bytes with units, as the tree does. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__render.h"

/* ---- lines ---- */

static void put_spaces(fl__buf_t *b, size_t n) {
  for (size_t i = 0; i < n; i++) fl__buf_add(b, " ", 1);
}

/* Columns of UTF-8 text: one per code point. */
static size_t text_width(const char *s, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++)
    if (((unsigned char)s[i] & 0xc0) != 0x80) w++;
  return w;
}

/* Appends line (without its newline) to out, cut to cols columns with a
 * final "…" when wider (cols <= 0: never cut), then a newline. */
static void put_line(fl__buf_t *out, const char *line, size_t len, int cols) {
  if (cols > 0 && text_width(line, len) > (size_t)cols) {
    size_t keep = (size_t)cols - 1, w = 0, i = 0;
    for (; i < len; i++) {
      if (((unsigned char)line[i] & 0xc0) != 0x80) {
        if (w == keep) break;
        w++;
      }
    }
    fl__buf_add(out, line, i);
    fl__buf_puts(out, "…");
  } else {
    fl__buf_add(out, line, len);
  }
  fl__buf_add(out, "\n", 1);
}

/* o, or (o NULL) the defaults, set in *defaults. */
static const fl_text_opts_t *opts_or_defaults(const fl_text_opts_t *o, fl_text_opts_t *defaults) {
  if (o) return o;
  fl_text_opts_init(defaults);
  return defaults;
}

/* ---- numbers ---- */

static int digits(uint64_t v) {
  int d = 1;
  while (v >= 10) {
    v /= 10;
    d++;
  }
  return d;
}

/* ---- common parts ---- */

typedef struct layout {
  bool alloc;  /* bytes, with an Allocs column */
  bool counts; /* an allocation profile weighed by allocation counts */
  const fl_kind_info_t *kind;
  int count_w, allocs_w; /* column widths */
} layout_t;

/* Whether t's profile is an allocation profile weighed by counts: its
 * columns are plain numbers, as samples are. */
static bool weighs_counts(const fl_profile_info_t *info) {
  return fl_kind(info->kind)->allocs && !fl_kind(info->kind)->bytes;
}

static layout_t layout_of(const fl_tree_t *t) {
  const fl_node_t *root = fl_tree_root(t);
  const fl_profile_info_t *info = fl_tree_info(t);
  layout_t l = {.alloc = fl_kind(info->kind)->bytes,
                .counts = weighs_counts(info),
                .kind = fl_kind(info->kind)};
  if (l.alloc) {
    l.count_w = 10; /* "1023.9 KiB" */
    l.allocs_w = digits(root->allocs) > 6 ? digits(root->allocs) : 6;
  } else {
    int min_w = l.counts ? 6 : 5; /* "Allocs", "Count" */
    l.count_w = digits(root->count) > min_w ? digits(root->count) : min_w;
  }
  return l;
}

/* Under the total of the callers' tree, what its lines are. */
static void put_callers_line(fl__buf_t *out, const fl_tree_t *t, int cols) {
  static const char callers[] =
      "Callers: each function where time was spent, its callers indented under it";
  if (fl_tree_inverted(t)) put_line(out, callers, sizeof callers - 1, cols);
}

static void put_total(fl__buf_t *out, const fl_tree_t *t, const layout_t *l, int cols) {
  const fl_node_t *root = fl_tree_root(t);
  const fl_profile_info_t *info = fl_tree_info(t);
  fl__buf_t line = {0};
  if (l->alloc) {
    char bytes[32];
    fl__bytes(bytes, sizeof bytes, root->count);
    fl__buf_printf(&line, "Total: %s in %" PRIu64 " allocation%s", bytes, root->allocs,
                   root->allocs == 1 ? "" : "s");
  } else {
    fl__buf_printf(&line, "Total: %" PRIu64 " %s", root->count,
                   root->count == 1 ? l->kind->one : l->kind->many);
    if (l->kind->time && info->interval_ns) {
      char iv[32];
      fl_interval_text(info->interval_ns, iv, sizeof iv);
      fl__buf_printf(&line, " (interval %s)", iv);
    }
  }
  put_line(out, line.data, line.len, cols);
  put_callers_line(out, t, cols);
  fl__buf_free(&line);
}

/* The count columns of a line: count and self, and allocs for allocation
 * profiles, each followed by its separator. */
static void put_counts(fl__buf_t *line, const layout_t *l, uint64_t count, uint64_t self,
                       uint64_t allocs) {
  if (l->alloc) {
    char c[32], s[32];
    fl__bytes(c, sizeof c, count);
    fl__bytes(s, sizeof s, self);
    fl__buf_printf(line, "%*s %*s %*" PRIu64 "  ", l->count_w, c, l->count_w, s, l->allocs_w,
                   allocs);
  } else {
    fl__buf_printf(line, "%*" PRIu64 " %*" PRIu64 "  ", l->count_w, count, l->count_w, self);
  }
}

static void put_count_headers(fl__buf_t *line, const layout_t *l) {
  if (l->alloc)
    fl__buf_printf(line, "%*s %*s %*s  ", l->count_w, "Bytes", l->count_w, "Self", l->allocs_w,
                   "Allocs");
  else
    fl__buf_printf(line, "%*s %*s  ", l->count_w, l->counts ? "Allocs" : "Count", l->count_w,
                   "Self");
}

static void put_location(fl__buf_t *line, const fl_frame_t *f) {
  if (f->file && f->line > 0)
    fl__buf_printf(line, "%s:%d", f->file, f->line);
  else if (f->file)
    fl__buf_puts(line, f->file);
  else if (f->module)
    fl__buf_puts(line, f->module);
}

static bool has_location(const fl_frame_t *f) {
  return f->file || f->module;
}

static bool printed(const fl_node_t *n, const fl_text_opts_t *o) {
  if (o->maxdepth > 0 && n->depth > o->maxdepth) return false;
  return n->count >= o->mincount;
}

/* ---- tree ---- */

/* Appends the columns in front of a frame's name to a line. */
typedef void columns_fn(fl__buf_t *line, const fl_node_t *node, const void *ctx);

/* The frame lines of a tree report, one per printed frame in pre-order:
 * columns(), the indentation, the name and location; then "… N more lines"
 * past max_lines, and how many frames minwidth hid. line is scratch. */
static void put_tree_lines(fl__buf_t *out, fl__buf_t *line, const fl_tree_t *t,
                           const fl_text_opts_t *o, columns_fn *columns, const void *ctx) {
  layout_t l = layout_of(t);
  size_t n = fl_tree_n_nodes(t), lines = 0, more = 0;
  for (size_t i = 0; i < n; i++) {
    const fl_node_t *node = fl_tree_node(t, i);
    if (!printed(node, o)) continue;
    if (o->max_lines && lines == o->max_lines) {
      more++;
      continue;
    }
    line->len = 0;
    columns(line, node, ctx);
    /* Indentation deeper than half of what the counts leave becomes "+D ". */
    size_t room = o->cols > 0 && (size_t)o->cols > line->len ? (size_t)o->cols - line->len : 0;
    size_t max_indent = o->cols > 0 ? room / 2 : SIZE_MAX;
    size_t indent = 2 * (size_t)node->depth;
    if (indent > max_indent) {
      char tag[32];
      int w = snprintf(tag, sizeof tag, "+%d ", node->depth);
      put_spaces(line, max_indent > (size_t)w ? max_indent - (size_t)w : 0);
      fl__buf_puts(line, tag);
    } else {
      put_spaces(line, indent);
    }
    fl__buf_puts(line, node->frame.func);
    if (has_location(&node->frame)) {
      fl__buf_puts(line, "  ");
      put_location(line, &node->frame);
    }
    put_line(out, line->data, line->len, o->cols);
    lines++;
  }
  if (more) {
    line->len = 0;
    fl__buf_printf(line, "… %zu more line%s", more, more == 1 ? "" : "s");
    put_line(out, line->data, line->len, o->cols);
  }
  uint64_t hidden_weight;
  size_t hidden = fl_tree_hidden(t, &hidden_weight);
  if (hidden) {
    line->len = 0;
    char w[32];
    if (l.alloc)
      fl__bytes(w, sizeof w, hidden_weight);
    else
      snprintf(w, sizeof w, "%" PRIu64 " %s", hidden_weight,
               hidden_weight == 1 ? l.kind->one : l.kind->many);
    fl__buf_printf(line, "%zu frame%s narrower than minwidth hidden (%s)", hidden,
                   hidden == 1 ? "" : "s", w);
    put_line(out, line->data, line->len, o->cols);
  }
}

static void plain_columns(fl__buf_t *line, const fl_node_t *node, const void *ctx) {
  put_counts(line, ctx, node->count, node->self, node->allocs);
}

/* o NULL: the defaults. */
size_t fl_text_bytes(const fl_tree_t *t, const fl_text_opts_t *o) {
  fl_text_opts_t defaults;
  o = opts_or_defaults(o, &defaults);
  /* a line's "…" is 3 bytes, its end 1; a few header and footer lines */
  size_t line = (size_t)(o->cols > 0 ? o->cols : 0) + 4, lines = fl_tree_n_nodes(t) + 8;
  if (o->max_lines && o->max_lines < lines) lines = o->max_lines + 8;
  return lines > SIZE_MAX / 2 / line ? SIZE_MAX : 2 * lines * line;
}

char *fl_text_tree(const fl_tree_t *t, const fl_text_opts_t *o) {
  fl_text_opts_t defaults;
  o = opts_or_defaults(o, &defaults);
  layout_t l = layout_of(t);
  fl__buf_t out = {0}, line = {0};
  put_total(&out, t, &l, o->cols);
  put_count_headers(&line, &l);
  fl__buf_puts(&line, "Frame");
  put_line(&out, line.data, line.len, o->cols);
  put_tree_lines(&out, &line, t, o, plain_columns, &l);
  fl__buf_free(&line);
  return fl__buf_take(&out);
}

/* ---- diff ---- */

typedef struct diff_layout {
  const fl_diff_t *d;
  bool alloc;
  int count_w, delta_w; /* column widths */
} diff_layout_t;

/* A count of a diff's column: bytes with units, or samples, with one
 * decimal when scaling made them fractional; with sign, "+" or "-" first. */
static void format_diff_count(char *buf, size_t size, double v, bool sign, bool alloc) {
  const char *prefix = v < 0 ? "-" : sign ? "+" : "";
  double a = fabs(v);
  if (alloc) {
    char bytes[32];
    fl__bytes(bytes, sizeof bytes, (uint64_t)llround(a));
    snprintf(buf, size, "%s%s", prefix, bytes);
  } else if (fabs(a - round(a)) < 0.05) {
    snprintf(buf, size, "%s%.0f", round(a) == 0 ? (sign ? "+" : "") : prefix, round(a));
  } else {
    snprintf(buf, size, "%s%.1f", prefix, a);
  }
}

static void diff_columns(fl__buf_t *line, const fl_node_t *node, const void *ctx) {
  const diff_layout_t *l = ctx;
  const fl_diff_node_t *dn = fl_diff_node(l->d, node->id);
  char count[48], base[48], delta[48];
  format_diff_count(count, sizeof count, (double)node->count, false, l->alloc);
  if (dn && dn->has_base)
    format_diff_count(base, sizeof base, dn->base, false, l->alloc);
  else
    snprintf(base, sizeof base, "-");
  format_diff_count(delta, sizeof delta, dn ? dn->delta : 0, true, l->alloc);
  fl__buf_printf(line, "%*s %*s %*s  %-6s  ", l->count_w, count, l->count_w, base, l->delta_w,
                 delta, fl__change_name(dn ? dn->change : FL_CHANGE_SAME));
}

/* The name of a column: "Target", "Baseline". */
static void put_capitalized(fl__buf_t *line, int width, const char *word) {
  char w[32];
  snprintf(w, sizeof w, "%s", word);
  if (w[0] >= 'a' && w[0] <= 'z') w[0] = (char)(w[0] - 'a' + 'A');
  fl__buf_printf(line, "%*s ", width, w);
}

char *fl_text_diff(const fl_diff_t *d, const fl_text_opts_t *o) {
  fl_text_opts_t defaults;
  o = opts_or_defaults(o, &defaults);
  const fl_tree_t *t = fl_diff_tree(d);
  const fl_diff_opts_t *dopts = fl_diff_options(d);
  const fl_profile_info_t *info = fl_tree_info(t);
  const fl_node_t *root = fl_tree_root(t);
  double other_total = fl__other_total(d);
  diff_layout_t l = {.d = d, .alloc = fl_kind(info->kind)->bytes};
  if (l.alloc) {
    l.count_w = 10; /* "1023.9 KiB" */
    l.delta_w = 11;
  } else {
    double widest = fmax((double)root->count, other_total);
    l.count_w =
        digits((uint64_t)llround(widest)) + 2 > 8 ? digits((uint64_t)llround(widest)) + 2 : 8;
    l.delta_w = l.count_w;
  }

  fl__buf_t out = {0}, line = {0};
  char a[48], b[48];
  format_diff_count(a, sizeof a, (double)root->count, false, l.alloc);
  format_diff_count(b, sizeof b, other_total, false, l.alloc);
  fl__buf_printf(&line, "Total: %s %s%s%s, %s %s%s%s", fl__drawn_name(d), a, l.alloc ? "" : " ",
                 l.alloc ? "" : fl__unit_for(t, (double)root->count), fl__other_name(d), b,
                 l.alloc ? "" : " ", l.alloc ? "" : fl__unit_for(t, other_total));
  if (fl_kind(info->kind)->time && info->interval_ns) {
    char iv[32];
    fl_interval_text(info->interval_ns, iv, sizeof iv);
    fl__buf_printf(&line, " (interval %s)", iv);
  }
  if (dopts->delta == FL_DELTA_SELF) fl__buf_puts(&line, "; deltas of self counts");
  put_line(&out, line.data, line.len, o->cols);
  put_callers_line(&out, t, o->cols);
  if (dopts->negate) {
    static const char negated[] = "Baseline layout, coloured by baseline − target";
    put_line(&out, negated, strlen(negated), o->cols);
  }
  for (const char *const *note = fl_diff_notes(d); note && *note; note++)
    put_line(&out, *note, strlen(*note), o->cols);
  char summary[512];
  fl__diff_summary(d, NULL, summary, sizeof summary);
  put_line(&out, summary, strlen(summary), o->cols);

  line.len = 0;
  put_capitalized(&line, l.count_w, fl__drawn_name(d));
  put_capitalized(&line, l.count_w, fl__other_name(d));
  fl__buf_printf(&line, "%*s  %-6s  Frame", l.delta_w, "Delta", "Change");
  put_line(&out, line.data, line.len, o->cols);
  put_tree_lines(&out, &line, t, o, diff_columns, &l);

  const fl_vanished_t *vanished;
  size_t n_vanished = fl_diff_vanished(d, &vanished);
  if (n_vanished) {
    const char *header = fl__vanished_header(d);
    put_line(&out, header, strlen(header), o->cols);
    size_t shown = n_vanished < FL__VANISHED_MAX ? n_vanished : FL__VANISHED_MAX;
    char text[1024];
    for (size_t i = 0; i < shown; i++) {
      line.len = 0;
      fl__vanished_line(d, &vanished[i], text, sizeof text);
      fl__buf_printf(&line, "  %s", text);
      put_line(&out, line.data, line.len, o->cols);
    }
    if (n_vanished > shown) {
      line.len = 0;
      char more[32];
      fl__thousands(n_vanished - shown, more);
      fl__buf_printf(&line, "  … and %s more", more);
      put_line(&out, line.data, line.len, o->cols);
    }
  }
  fl__buf_free(&line);
  return fl__buf_take(&out);
}

/* ---- flat ---- */

/* o NULL: the defaults; maxdepth does not apply. */
char *fl_text_flat(const fl_tree_t *t, const fl_text_opts_t *o) {
  fl_text_opts_t defaults;
  o = opts_or_defaults(o, &defaults);
  fl__flat_row_t *rows = NULL;
  size_t n_rows = fl__flat_rows(t, false, &rows);
  layout_t l = layout_of(t);
  uint64_t total = fl_tree_root(t)->count;
  fl__buf_t out = {0}, line = {0};
  put_total(&out, t, &l, o->cols);

  /* The function column is as wide as the widest name printed, up to 40. */
  size_t func_w = strlen("Function");
  for (size_t i = 0; i < n_rows; i++) {
    if (rows[i].count < o->mincount) continue;
    size_t w = text_width(rows[i].node->frame.func, strlen(rows[i].node->frame.func));
    if (w > func_w) func_w = w > 40 ? 40 : w;
  }
  put_count_headers(&line, &l);
  fl__buf_puts(&line, "Percent  Function");
  put_spaces(&line, func_w - strlen("Function"));
  fl__buf_puts(&line, "  File:Line");
  put_line(&out, line.data, line.len, o->cols);

  size_t lines = 0, more = 0;
  for (size_t i = 0; i < n_rows; i++) {
    const fl__flat_row_t *row = &rows[i];
    if (row->count < o->mincount) continue;
    if (o->max_lines && lines == o->max_lines) {
      more++;
      continue;
    }
    line.len = 0;
    put_counts(&line, &l, row->count, row->self, row->allocs);
    double pct = total ? 100.0 * (double)row->count / (double)total : 0;
    fl__buf_printf(&line, "%6.1f%%  ", pct);
    const char *func = row->node->frame.func;
    size_t len = strlen(func), w = text_width(func, len);
    if (w > func_w) { /* cut to func_w columns, ending in "…" */
      size_t keep = func_w - 1, cw = 0, k = 0;
      for (; k < len; k++)
        if (((unsigned char)func[k] & 0xc0) != 0x80 && cw++ == keep) break;
      fl__buf_add(&line, func, k);
      fl__buf_puts(&line, "…");
    } else {
      fl__buf_puts(&line, func);
      put_spaces(&line, func_w - w);
    }
    if (has_location(&row->node->frame)) {
      fl__buf_puts(&line, "  ");
      put_location(&line, &row->node->frame);
    } else {
      while (line.len && line.data[line.len - 1] == ' ') line.data[--line.len] = '\0';
    }
    put_line(&out, line.data, line.len, o->cols);
    lines++;
  }
  if (more) {
    line.len = 0;
    fl__buf_printf(&line, "… %zu more line%s", more, more == 1 ? "" : "s");
    put_line(&out, line.data, line.len, o->cols);
  }
  fl__buf_free(&line);
  free(rows);
  return fl__buf_take(&out);
}

/* ---- top ---- */

/* A top table's columns, as pprof -top's: self and its share, the running
 * sum of the self shares in the table's order, total and its share. */
static void put_top_line(fl__buf_t *line, const layout_t *l, uint64_t self, uint64_t running,
                         uint64_t count, uint64_t total) {
  double t = total ? (double)total : 1;
  if (l->alloc) {
    char x[32], y[32];
    fl__bytes(x, sizeof x, self);
    fl__bytes(y, sizeof y, count);
    fl__buf_printf(line, "%*s %6.2f%% %6.2f%% %*s %6.2f%%  ", l->count_w, x,
                   100.0 * (double)self / t, 100.0 * (double)running / t, l->count_w, y,
                   100.0 * (double)count / t);
  } else {
    fl__buf_printf(line, "%*" PRIu64 " %6.2f%% %6.2f%% %*" PRIu64 " %6.2f%%  ", l->count_w, self,
                   100.0 * (double)self / t, 100.0 * (double)running / t, l->count_w, count,
                   100.0 * (double)count / t);
  }
}

/* One table: its first max_rows rows, in their order. */
static void put_top_table(fl__buf_t *out, const layout_t *l, const fl__flat_row_t *rows, size_t n,
                          size_t max_rows, uint64_t total, const fl_text_opts_t *o) {
  fl__buf_t line = {0};
  size_t shown = n < max_rows ? n : max_rows;
  size_t func_w = strlen("Function");
  char **names = fl__xcalloc(shown ? shown : 1, sizeof *names);
  for (size_t i = 0; i < shown; i++) {
    names[i] = fl__flat_row_name(&rows[i]);
    size_t w = text_width(names[i], strlen(names[i]));
    if (w > func_w) func_w = w > 40 ? 40 : w;
  }
  fl__buf_printf(&line, "%*s %7s %7s %*s %7s  Function", l->count_w, "Self", "Self%", "Sum%",
                 l->count_w, "Total", "Total%");
  put_spaces(&line, func_w - strlen("Function"));
  fl__buf_puts(&line, "  File");
  put_line(out, line.data, line.len, o->cols);
  uint64_t running = 0;
  for (size_t i = 0; i < shown; i++) {
    const fl_frame_t *f = &rows[i].node->frame;
    running += rows[i].self;
    line.len = 0;
    put_top_line(&line, l, rows[i].self, running, rows[i].count, total);
    size_t w = text_width(names[i], strlen(names[i]));
    fl__buf_puts(&line, names[i]);
    const char *where = f->file ? f->file : f->module;
    if (where) {
      put_spaces(&line, w < func_w ? func_w - w : 0);
      fl__buf_printf(&line, "  %s", where);
    }
    put_line(out, line.data, line.len, o->cols);
    free(names[i]);
  }
  free(names);
  fl__buf_free(&line);
}

static int cmp_by_total(const void *pa, const void *pb) {
  const fl__flat_row_t *a = pa, *b = pb;
  return (a->by_count > b->by_count) - (a->by_count < b->by_count);
}

char *fl_text_top(const fl_tree_t *t, const fl_text_opts_t *o) {
  fl_text_opts_t defaults;
  o = opts_or_defaults(o, &defaults);
  fl__flat_row_t *rows = NULL;
  size_t n = fl__flat_rows(t, true, &rows);
  layout_t l = layout_of(t);
  uint64_t total = fl_tree_root(t)->count;
  fl__buf_t out = {0}, line = {0};
  put_total(&out, t, &l, o->cols);
  if (n > FL_TOP_ROWS)
    fl__buf_printf(&line, "Top: the first %d of %zu functions by self, then by total", FL_TOP_ROWS,
                   n);
  else
    fl__buf_printf(&line, "Top: the %zu function%s by self, then by total", n, n == 1 ? "" : "s");
  put_line(&out, line.data, line.len, o->cols);
  uint64_t hidden_weight = 0;
  size_t hidden = fl_tree_hidden(t, &hidden_weight);
  if (hidden) {
    line.len = 0;
    char h[48];
    fl_count_noun(hidden, "narrow frame", "narrow frames", h, sizeof h);
    fl__buf_printf(&line, "(%s hidden by minwidth, %.2g%% of %s, %s not counted)", h,
                   total ? 100.0 * (double)hidden_weight / (double)total : 0, fl__unit(t),
                   hidden == 1 ? "is" : "are");
    put_line(&out, line.data, line.len, o->cols);
  }
  fl__buf_puts(&out, "\nBy self:\n");
  fl__flat_sort_by_self(rows, n);
  put_top_table(&out, &l, rows, n, FL_TOP_ROWS, total, o);
  fl__buf_puts(&out, "\nBy total:\n");
  if (n) qsort(rows, n, sizeof *rows, cmp_by_total);
  put_top_table(&out, &l, rows, n, FL_TOP_ROWS, total, o);
  fl__buf_free(&line);
  free(rows);
  return fl__buf_take(&out);
}

/* ---- the live table ---- */

typedef struct share {
  const char *name;
  int thread; /* a thread's number; 0 for a process */
  uint64_t weight;
} share_t;

static int cmp_share(const void *pa, const void *pb) {
  const share_t *a = pa, *b = pb;
  return (a->weight < b->weight) - (a->weight > b->weight);
}

/* "processes: solver 60.0%, helper 40.0%; threads: 1 55.1%, 2 worker
 * 44.9%": each by its share of total, the largest first. The processes
 * are the root's children that stand for one (FL_FRAME_ROOT, as
 * fl_profile_merge_under puts them); a line cut to cols says no more. */
static void put_shares(fl__buf_t *out, const fl_tree_t *t, uint64_t total, int cols) {
  const fl_node_t *root = fl_tree_root(t);
  const fl_profile_t *p = fl_tree_profile(t);
  double whole = total ? (double)total : 1;
  fl__buf_t line = {0};
  share_t *procs = fl__xcalloc(root->n_children + 1, sizeof *procs);
  size_t n_procs = 0;
  for (size_t i = 0; i < root->n_children; i++)
    if (root->children[i]->frame.flags & FL_FRAME_ROOT)
      procs[n_procs++] = (share_t){root->children[i]->frame.func, 0, root->children[i]->count};
  if (n_procs) qsort(procs, n_procs, sizeof *procs, cmp_share);
  for (size_t i = 0; i < n_procs; i++)
    fl__buf_printf(&line, "%s%s %.1f%%", i ? ", " : "processes: ", procs[i].name,
                   100.0 * (double)procs[i].weight / whole);
  fl_thread_weights_t *tw = NULL;
  size_t n_threads = fl_profile_thread_weights(p, fl_tree_kind(t), &tw);
  share_t *threads = fl__xcalloc(n_threads + 1, sizeof *threads);
  for (size_t i = 0; i < n_threads; i++)
    threads[i] =
        (share_t){fl_profile_thread_name(p, tw[i].thread), tw[i].thread, tw[i].on + tw[i].off};
  if (n_threads) qsort(threads, n_threads, sizeof *threads, cmp_share);
  for (size_t i = 0; i < n_threads; i++) {
    const char *sep = i ? ", " : n_procs ? "; threads: " : "threads: ";
    fl__buf_printf(&line, "%s%d", sep, threads[i].thread);
    if (threads[i].name && *threads[i].name) fl__buf_printf(&line, " %s", threads[i].name);
    fl__buf_printf(&line, " %.1f%%", 100.0 * (double)threads[i].weight / whole);
  }
  if (line.len) put_line(out, line.data, line.len, cols);
  free(threads);
  free(tw);
  free(procs);
  fl__buf_free(&line);
}

char *fl_text_top_live(const fl_tree_t *t, const char *headline, const fl_text_opts_t *o) {
  fl_text_opts_t defaults;
  o = opts_or_defaults(o, &defaults);
  uint64_t total = fl_tree_root(t)->count;
  fl__buf_t out = {0};
  size_t lines = 0;
  if (headline) {
    put_line(&out, headline, strlen(headline), o->cols);
    lines++;
  }
  size_t before = out.len;
  put_shares(&out, t, total, o->cols);
  if (out.len > before) lines++;
  if (o->max_lines && o->max_lines <= lines) return fl__buf_take(&out);
  /* The table's header, then as many rows as the lines left hold. */
  size_t room = o->max_lines ? o->max_lines - lines - 1 : FL_TOP_ROWS;
  fl__flat_row_t *rows = NULL;
  size_t n = fl__flat_rows(t, true, &rows);
  fl__flat_sort_by_self(rows, n);
  layout_t l = layout_of(t);
  put_top_table(&out, &l, rows, n, room < FL_TOP_ROWS ? room : FL_TOP_ROWS, total, o);
  free(rows);
  return fl__buf_take(&out);
}
