/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_source: the source view (view=source), each source line with the
 * weight spent on it, as pprof list and perf annotate show it, drawn as a
 * text report, a Vega-Lite spec and an SVG.
 *
 * The weights per line are fl_lines's: self goes to the line of the
 * innermost frame that has one, passing over system libraries and the
 * allocator (a call into libc counts on the line that made it); total to
 * every line on the stack once. Inlined code counts on the line it came
 * from, since the symbolizer records inlined frames with their lines.
 *
 * Which lines: the files with samples, the one with the most self weight
 * first, at most MAX_FILES (with focus=FUNC, the files of FUNC's frames).
 * A file's text comes from the reader (fl_source_reader_t: a notebook's
 * cells, files on disk); a file of at most WHOLE_LINES lines is shown
 * whole, a longer one as windows of CONTEXT lines around its sampled
 * lines, a "⋮" row between windows. A file that cannot be read shows its
 * sampled lines without text. Lines with no samples are drawn dimmed.
 *
 * Rows: a file row (k "file": its name, self and total), then line rows
 * (k "line": line, text, self, total) and gap rows (k "gap"); the
 * Vega-Lite data holds them in order with their index i. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cflame/fl_lines.h"
#include "fl__render.h"

#define MAX_FILES 5
#define WHOLE_LINES 150
#define CONTEXT 3
#define MAX_ROWS 1000
/* A file read from disk: at most this many bytes. */
#define MAX_FILE_BYTES (8u << 20)

#define ROW_PX 16.0
#define BAR_PX 12.0
#define HEAT_COLOR "#e0452c"
#define DIM_OPACITY 0.45

enum { X_SELF = 60, X_SELFPCT = 115, X_TOTAL = 185, X_TOTALPCT = 240 };
enum { X_BARS = 252, BARS_PX = 100, X_LINE = 395, X_TEXT = 405 };

char *fl_source_read_file(void *ctx, const char *file) {
  (void)ctx;
  int fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return NULL;
  struct stat st;
  char *text = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= MAX_FILE_BYTES) {
    text = fl__xmalloc((size_t)st.st_size + 1, 1);
    size_t got = 0;
    ssize_t n;
    while (got < (size_t)st.st_size && (n = read(fd, text + got, (size_t)st.st_size - got)) > 0)
      got += (size_t)n;
    text[got] = '\0';
  }
  close(fd);
  return text;
}

/* ---- the rows ---- */

typedef enum { ROW_FILE, ROW_LINE, ROW_GAP } row_kind_t;

typedef struct src_row {
  row_kind_t kind;
  const char *file;
  int line;
  const char *text; /* into the file's text; not terminated */
  size_t len;
  uint64_t self, total;
} src_row_t;

typedef struct source {
  src_row_t *rows;
  size_t n, cap;
  char **texts; /* the files' texts, owned */
  size_t n_texts;
  size_t n_files; /* files with self weight */
  size_t files_shown;
  size_t unreadable; /* of the shown files */
  uint64_t total;    /* the root's weight */
} source_t;

static void add_row(source_t *s, src_row_t r) {
  s->rows = fl__grow(s->rows, &s->cap, s->n + 1, sizeof *s->rows);
  s->rows[s->n++] = r;
}

typedef struct file_sum {
  const char *file;
  size_t first, n; /* its lines in the totals */
  uint64_t self, total;
} file_sum_t;

static int cmp_file_sum(const void *pa, const void *pb) {
  const file_sum_t *a = pa, *b = pb;
  if (a->self != b->self) return a->self > b->self ? -1 : 1;
  if (a->total != b->total) return a->total > b->total ? -1 : 1;
  return strcmp(a->file, b->file);
}

/* The line starts of text: starts[k] is where line k + 1 begins. Returns
 * the number of lines; *starts is new. */
static size_t split_lines(const char *text, const char ***starts) {
  size_t n = 0, cap = 0;
  *starts = NULL;
  for (const char *p = text; *p;) {
    *starts = fl__grow(*starts, &cap, n + 1, sizeof **starts);
    (*starts)[n++] = p;
    const char *nl = strchr(p, '\n');
    if (!nl) break;
    p = nl + 1;
  }
  return n;
}

static size_t line_len(const char *start) {
  size_t n = strcspn(start, "\n");
  if (n && start[n - 1] == '\r') n--;
  return n;
}

/* The rows of one file: whole when short, else windows around the sampled
 * lines. lines[0..n) are its totals, by line. */
static void add_file(source_t *s, const file_sum_t *f, const fl_line_total_t *lines, char *text) {
  add_row(s, (src_row_t){.kind = ROW_FILE, .file = f->file, .self = f->self, .total = f->total});
  const char **starts = NULL;
  size_t n_text = text ? split_lines(text, &starts) : 0;
  size_t k = 0; /* the next sampled line */
  if (!text) {  /* the sampled lines alone */
    for (size_t i = 0; i < f->n && s->n < MAX_ROWS; i++)
      add_row(s, (src_row_t){.kind = ROW_LINE,
                             .file = f->file,
                             .line = lines[i].line,
                             .self = lines[i].self,
                             .total = lines[i].total});
    return;
  }
  bool whole = n_text <= WHOLE_LINES;
  int last = 0; /* the last line added */
  for (int line = 1; line <= (int)n_text && s->n < MAX_ROWS; line++) {
    while (k < f->n && lines[k].line < line) k++;
    bool sampled = k < f->n && lines[k].line == line;
    if (!whole) {
      /* Near a sampled line: within CONTEXT of the one before or after. */
      bool near = false;
      for (size_t j = k > 0 ? k - 1 : 0; j < f->n && lines[j].line <= line + CONTEXT; j++)
        if (abs(lines[j].line - line) <= CONTEXT) near = true;
      if (!near) continue;
      if (last && line > last + 1) add_row(s, (src_row_t){.kind = ROW_GAP, .file = f->file});
    }
    add_row(s, (src_row_t){.kind = ROW_LINE,
                           .file = f->file,
                           .line = line,
                           .text = starts[line - 1],
                           .len = line_len(starts[line - 1]),
                           .self = sampled ? lines[k].self : 0,
                           .total = sampled ? lines[k].total : 0});
    last = line;
  }
  if (!whole && last && last < (int)n_text)
    add_row(s, (src_row_t){.kind = ROW_GAP, .file = f->file});
  free(starts);
}

/* Whether one of the tree's frames is focus's. */
static bool has_function(const fl_tree_t *t, const char *focus) {
  for (size_t i = 1; i < fl_tree_n_nodes(t); i++) {
    const char *func = fl_tree_node(t, i)->frame.func;
    if (func && !strcmp(func, focus)) return true;
  }
  return false;
}

/* Whether file holds a frame of focus. */
static bool file_has_function(const fl_tree_t *t, const char *file, const char *focus) {
  for (size_t i = 1; i < fl_tree_n_nodes(t); i++) {
    const fl_frame_t *f = &fl_tree_node(t, i)->frame;
    if (f->func && f->file && !strcmp(f->func, focus) && !strcmp(f->file, file)) return true;
  }
  return false;
}

static void source_free(source_t *s) {
  free(s->rows);
  for (size_t i = 0; i < s->n_texts; i++) free(s->texts[i]);
  free(s->texts);
}

static int source_build(source_t *s, const fl_tree_t *t, const char *focus,
                        const fl_source_reader_t *reader, char *err, size_t err_size) {
  *s = (source_t){.total = fl_tree_root(t)->count};
  if (focus && !has_function(t, focus)) {
    char near[512];
    fl__nearest_names(t, focus, near, sizeof near);
    snprintf(err, err_size, "focus=%s matches no function of the profile%s%s", focus,
             near[0] ? "; the nearest: " : "", near);
    return -1;
  }
  fl_line_total_t *lines = NULL;
  size_t n = fl_lines_totals(t, FL_FRAME_SYSTEM | FL_FRAME_ALLOC, &lines);
  file_sum_t *files = NULL;
  size_t n_files = 0, cap = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || strcmp(lines[i].file, lines[i - 1].file) != 0) {
      files = fl__grow(files, &cap, n_files + 1, sizeof *files);
      files[n_files++] = (file_sum_t){.file = lines[i].file, .first = i};
    }
    file_sum_t *f = &files[n_files - 1];
    f->n++;
    f->self += lines[i].self;
    if (lines[i].total > f->total) f->total = lines[i].total;
  }
  if (n_files) qsort(files, n_files, sizeof *files, cmp_file_sum);
  /* The files that matter: those with self weight (the others only hold
   * callers of the code that spent it). */
  for (size_t i = 0; i < n_files; i++) s->n_files += files[i].self > 0;
  s->texts = fl__xcalloc(MAX_FILES, sizeof *s->texts);
  char *(*read)(void *, const char *) = reader && reader->read ? reader->read : fl_source_read_file;
  for (size_t i = 0; i < n_files && s->files_shown < MAX_FILES && s->n < MAX_ROWS; i++) {
    if (focus && !file_has_function(t, files[i].file, focus)) continue;
    char *text = read(reader ? reader->ctx : NULL, files[i].file);
    /* A file without text is worth showing for its own lines' weight;
     * one that only holds callers (a library's, read through its debug
     * information) is not. */
    if (!text && files[i].self == 0) continue;
    if (text)
      s->texts[s->n_texts++] = text;
    else
      s->unreadable++;
    add_file(s, &files[i], lines + files[i].first, text);
    s->files_shown++;
  }
  free(files);
  free(lines);
  return 0;
}

/* The lines under the title. */
static int source_notes(const fl_tree_t *t, const fl_view_opts_t *v, const source_t *s,
                        char notes[FL__MAX_NOTES][FL__NOTE_SIZE]) {
  char what[300], more[200];
  const char *lines[2] = {what, more};
  size_t n_lines = 1;
  snprintf(what, sizeof what,
           "source: the %s spent on each line (self: in the line itself, with the libraries it "
           "calls; total: with the functions it calls)%s%s",
           fl__unit(t), v->focus ? "; the files of " : "", v->focus ? v->focus : "");
  if (s->n_files > s->files_shown || s->unreadable) {
    snprintf(more, sizeof more, "%zu of %zu files with self %s shown%s", s->files_shown, s->n_files,
             fl__unit(t),
             s->unreadable ? "; a file that could not be read shows its sampled lines without "
                             "their text"
                           : "");
    n_lines++;
  }
  return fl__view_notes(v, lines, n_lines, notes);
}

/* "12.34%", or "." for nothing. */
static void share_text(char out[16], uint64_t n, uint64_t total) {
  if (n == 0)
    snprintf(out, 16, ".");
  else
    snprintf(out, 16, "%.2f%%", 100.0 * (double)n / (double)(total ? total : 1));
}

/* A count as the table prints it: "." for nothing, bytes with units. */
static void count_text(char out[48], const fl_tree_t *t, uint64_t n) {
  if (n == 0)
    snprintf(out, 48, ".");
  else if (fl__is_alloc(t) && !fl__alloc_counts(t))
    fl__bytes(out, 48, n);
  else
    fl__thousands(n, out);
}

/* A line's text with tabs as spaces (to the next multiple of 8). New. */
static char *expand_tabs(const char *text, size_t len) {
  fl__buf_t b = {0};
  fl__buf_add(&b, "", 0);
  size_t col = 0;
  for (size_t i = 0; i < len; i++) {
    if (text[i] == '\t') {
      do fl__buf_add(&b, " ", 1);
      while (++col % 8);
    } else {
      fl__buf_add(&b, &text[i], 1);
      if (((unsigned char)text[i] & 0xc0) != 0x80) col++;
    }
  }
  char *raw = fl__buf_take(&b), *clean = fl__clean_text(raw, false);
  free(raw);
  return clean;
}

/* "cell[3]  self 947 samples (75.04%), hottest line 947 (75.04%)". */
static void file_heading(char *out, size_t size, const fl_tree_t *t, const src_row_t *r,
                         uint64_t total) {
  char self[48], share[16];
  count_text(self, t, r->self);
  share_text(share, r->self, total);
  snprintf(out, size, "%s  self %s %s (%s)", r->file, self, fl__unit(t), share);
}

/* ---- text ---- */

static char *text_of(const fl_tree_t *t, const fl_view_opts_t *v, const source_t *sp) {
  const source_t s = *sp; /* read only */
  fl__buf_t out = {0};
  char total[48];
  count_text(total, t, s.total);
  fl__buf_printf(&out, "Total: %s %s\n", total, fl__unit(t));
  fl__buf_printf(&out, "Source: the %s spent on each line, self and total%s%s\n", fl__unit(t),
                 v->focus ? "; the files of " : "", v->focus ? v->focus : "");
  if (s.n_files > s.files_shown)
    fl__buf_printf(&out, "(%zu of %zu files with self %s shown)\n", s.files_shown, s.n_files,
                   fl__unit(t));
  if (s.unreadable)
    fl__buf_printf(&out, "(%zu file%s could not be read: %s sampled lines without their text)\n",
                   s.unreadable, s.unreadable == 1 ? "" : "s", s.unreadable == 1 ? "its" : "their");
  if (s.n == 0) fl__buf_puts(&out, "No sample has a source line.\n");
  for (size_t i = 0; i < s.n; i++) {
    const src_row_t *row = &s.rows[i];
    char a[48], b[16], c[48], d[16];
    if (row->kind == ROW_FILE) {
      char heading[600];
      file_heading(heading, sizeof heading, t, row, s.total);
      fl__buf_printf(&out, "\n%s\n%10s %7s %10s %7s %6s  Source\n", heading, "Self", "Self%",
                     "Total", "Total%", "Line");
      continue;
    }
    if (row->kind == ROW_GAP) {
      fl__buf_printf(&out, "%*s\xe2\x8b\xae\n", 10 + 1 + 7 + 1 + 10 + 1 + 7 + 1 + 6 + 2, "");
      continue;
    }
    count_text(a, t, row->self);
    share_text(b, row->self, s.total);
    count_text(c, t, row->total);
    share_text(d, row->total, s.total);
    char *text = row->text ? expand_tabs(row->text, row->len) : NULL;
    fl__buf_printf(&out, "%10s %7s %10s %7s %6d  %s\n", a, b, c, d, row->line, text ? text : "");
    free(text);
  }
  return fl__buf_take(&out);
}

/* ---- Vega-Lite ---- */

static const char *kind_name(row_kind_t k) {
  return k == ROW_FILE ? "file" : k == ROW_GAP ? "gap" : "line";
}

static json_t *row_value(const src_row_t *r, size_t i) {
  json_t *o = fl__nonnull(json_pack("{s:I,s:s,s:o,s:I,s:I}", "i", (json_int_t)i, "k",
                                    kind_name(r->kind), "file", fl__json_text(r->file), "self",
                                    (json_int_t)r->self, "total", (json_int_t)r->total));
  if (r->kind == ROW_LINE) {
    json_object_set_new(o, "line", json_integer(r->line));
    char *text = r->text ? expand_tabs(r->text, r->len) : fl__xstrdup("");
    json_object_set_new(o, "text", fl__json_text(text));
    free(text);
  }
  return o;
}

static int spec_width(const fl_view_opts_t *v) {
  return v->width > X_TEXT + 300 ? v->width : X_TEXT + 300;
}

static json_t *source_transform(const fl_tree_t *t, uint64_t total_weight) {
  char expr[600];
  double total = total_weight ? (double)total_weight : 1;
  const char *fmt = fl__is_alloc(t) && !fl__alloc_counts(t) ? "'.3~s'" : "','";
  json_t *tr = fl__nonnull(json_array());
  snprintf(expr, sizeof expr, "100 * datum.self / %.17g", total);
  json_array_append_new(tr, fl__vl_calculate(expr, "selfpct"));
  snprintf(expr, sizeof expr, "100 * datum.total / %.17g", total);
  json_array_append_new(tr, fl__vl_calculate(expr, "totalpct"));
  snprintf(expr, sizeof expr, "datum.self ? format(datum.self, %s) : '.'", fmt);
  json_array_append_new(tr, fl__vl_calculate(expr, "selfs"));
  snprintf(expr, sizeof expr, "datum.total ? format(datum.total, %s) : '.'", fmt);
  json_array_append_new(tr, fl__vl_calculate(expr, "totals"));
  json_array_append_new(
      tr, fl__vl_calculate("datum.self ? format(datum.selfpct, '.2f') + '%' : '.'", "selfpcts"));
  json_array_append_new(
      tr, fl__vl_calculate("datum.total ? format(datum.totalpct, '.2f') + '%' : '.'", "totalpcts"));
  snprintf(expr, sizeof expr, "datum.k === 'line' && datum.total === 0 ? %g : 1", DIM_OPACITY);
  json_array_append_new(tr, fl__vl_calculate(expr, "op"));
  snprintf(expr, sizeof expr,
           "datum.k === 'file' ? datum.file + '  self ' + datum.selfs + ' %s (' + datum.selfpcts "
           "+ ')' : datum.k === 'gap' ? '\xe2\x8b\xae' : replace(datum.text, /^ +/, '')",
           fl__unit(t));
  json_array_append_new(tr, fl__vl_calculate(expr, "src"));
  /* A line's indentation, as an offset: a text mark would drop it. */
  snprintf(expr, sizeof expr,
           "%d + (datum.k === 'line' ? (length(datum.text) - length(datum.src)) * %g : 0)", X_TEXT,
           FL__TABLE_CHAR_PX);
  json_array_append_new(tr, fl__vl_calculate(expr, "tx"));
  json_array_append_new(tr, fl__vl_calculate("datum.k === 'line' ? '' + datum.line : ''", "ln"));
  snprintf(expr, sizeof expr,
           "{'file:line': datum.file + (datum.line ? ':' + datum.line : ''), 'self': datum.selfs "
           "+ ' %s (' + datum.selfpcts + ')', 'total': datum.totals + ' %s (' + datum.totalpcts "
           "+ ')'}",
           fl__unit(t), fl__unit(t));
  json_array_append_new(tr, fl__vl_calculate(expr, "tip"));
  return tr;
}

static const char *total_bar_color(const fl_view_opts_t *v) {
  return v->dark ? "#4a4a4a" : "#e4e4e4";
}

static json_t *vegalite_of(const fl_tree_t *t, const fl_view_opts_t *v, const source_t *s) {
  const fl__theme_t *th = fl__theme_of(v);
  json_t *values = fl__nonnull(json_array());
  for (size_t i = 0; i < s->n; i++) json_array_append_new(values, row_value(&s->rows[i], i));
  int width = spec_width(v);
  fl__table_t tb = {.th = th, .y_field = "i", .row_px = ROW_PX, .bar_px = BAR_PX};
  const char *lines = "datum.k === 'line'";
  const fl__table_column_t columns[] = {
      {.field = "selfs", .x = X_SELF, .right = true, .filter = lines, .opacity_field = "op"},
      {.field = "selfpcts", .x = X_SELFPCT, .right = true, .filter = lines, .opacity_field = "op"},
      {.field = "totals", .x = X_TOTAL, .right = true, .filter = lines, .opacity_field = "op"},
      {.field = "totalpcts",
       .x = X_TOTALPCT,
       .right = true,
       .filter = lines,
       .opacity_field = "op"},
      {.field = "ln", .x = X_LINE, .right = true, .filter = lines, .opacity_field = "op"},
      {.field = "src",
       .x_field = "tx",
       .limit = width - X_TEXT,
       .filter = "datum.k !== 'file'",
       .opacity_field = "op"},
      {.field = "src", .x = 0, .limit = width, .filter = "datum.k === 'file'", .bold = true},
  };
  static const struct {
    const char *label;
    int x;
    bool right;
  } headers[] = {{"'Self'", X_SELF, true},   {"'Self%'", X_SELFPCT, true},
                 {"'Total'", X_TOTAL, true}, {"'Total%'", X_TOTALPCT, true},
                 {"'Line'", X_LINE, true},   {"'Source'", X_TEXT, false}};
  json_t *rows_layer = fl__nonnull(json_array());
  json_array_append_new(
      rows_layer, fl__table_bar(&tb, "totalpct", total_bar_color(v), NULL, lines, X_BARS, BARS_PX));
  json_array_append_new(rows_layer,
                        fl__table_bar(&tb, "selfpct", HEAT_COLOR, NULL, lines, X_BARS, BARS_PX));
  for (size_t i = 0; i < sizeof columns / sizeof *columns; i++)
    json_array_append_new(rows_layer, fl__table_text(&tb, &columns[i]));
  json_t *layers = fl__nonnull(json_array());
  json_array_append_new(
      layers, fl__nonnull(json_pack("{s:{s:o},s:o,s:o}", "data", "values", values, "transform",
                                    source_transform(t, s->total), "layer", rows_layer)));
  for (size_t i = 0; i < sizeof headers / sizeof *headers; i++)
    json_array_append_new(layers,
                          fl__table_header(&tb, headers[i].label, headers[i].x, headers[i].right));

  char description[200];
  snprintf(description, sizeof description, "Source lines of %s: %zu rows of %zu files",
           fl_tree_root(t)->frame.func, s->n, s->files_shown);
  char notes[FL__MAX_NOTES][FL__NOTE_SIZE];
  int n_notes = source_notes(t, v, s, notes);
  // clang-format off
  json_t *spec = fl__nonnull(json_pack(
      "{s:s,s:o,s:i,s:f,s:s,s:o,s:o,s:{s:{s:s,s:s,s:I,s:I,s:I}}}",
      "$schema", "https://vega.github.io/schema/vega-lite/v5.json",
      "description", fl__json_text(description),
      "width", width,
      "height", ROW_PX * (double)(s->n ? s->n : 1),
      "background", th->background,
      "config", fl__vl_config(v),
      "layer", layers,
      "usermeta", "cflame", "view", "source", "unit", fl__unit(t), "total", (json_int_t)s->total,
                            "files", (json_int_t)s->n_files, "rows", (json_int_t)s->n));
  // clang-format on
  json_t *title = fl__table_title(v, notes, n_notes);
  if (title) json_object_set_new(spec, "title", title);
  return spec;
}

/* ---- SVG ---- */

static char *svg_of(const fl_tree_t *t, const fl_view_opts_t *v, const source_t *s) {
  char notes[FL__MAX_NOTES][FL__NOTE_SIZE];
  int n_notes = source_notes(t, v, s, notes);
  int width = spec_width(v);
  double total = s->total ? (double)s->total : 1;
  size_t text_chars = (size_t)((width - X_TEXT) / FL__TABLE_CHAR_PX);
  fl__buf_t b = {0};
  fl__svg_table_t l;
  fl__svg_table_open(&b, v, notes, n_notes, width, s->n, ROW_PX, &l);
  fl__buf_puts(&b, "<g font-weight='bold'>\n");
  fl__svg_cell(&b, l.x0 + X_SELF, l.header_y, true, "Self");
  fl__svg_cell(&b, l.x0 + X_SELFPCT, l.header_y, true, "Self%");
  fl__svg_cell(&b, l.x0 + X_TOTAL, l.header_y, true, "Total");
  fl__svg_cell(&b, l.x0 + X_TOTALPCT, l.header_y, true, "Total%");
  fl__svg_cell(&b, l.x0 + X_LINE, l.header_y, true, "Line");
  fl__svg_cell(&b, l.x0 + X_TEXT, l.header_y, false, "Source");
  fl__buf_puts(&b, "</g>\n");
  for (size_t i = 0; i < s->n; i++) {
    const src_row_t *row = &s->rows[i];
    double mid = fl__svg_table_row_y(&l, i);
    if (row->kind == ROW_FILE) {
      char heading[600];
      file_heading(heading, sizeof heading, t, row, s->total);
      fl__buf_puts(&b, "<g font-weight='bold'>");
      fl__svg_cell(&b, l.x0, mid, false, heading);
      fl__buf_puts(&b, "</g>\n");
      continue;
    }
    if (row->kind == ROW_GAP) {
      fl__svg_cell(&b, l.x0 + X_TEXT, mid, false, "\xe2\x8b\xae");
      continue;
    }
    bool dim = row->total == 0;
    if (dim) fl__buf_printf(&b, "<g opacity='%g'>\n", DIM_OPACITY);
    char num[48], share[16];
    if (row->total) {
      /* The bars, total pale with the line's tooltip, then self. */
      char *title;
      if (asprintf(&title, "%s:%d\nself %" PRIu64 " %s (%.2f%%), total %" PRIu64 " %s (%.2f%%)",
                   row->file, row->line, row->self, fl__unit(t), 100.0 * (double)row->self / total,
                   row->total, fl__unit(t), 100.0 * (double)row->total / total) < 0)
        fl__oom(0);
      fl__svg_hbar(&b, total_bar_color(v), BAR_PX, l.x0 + X_BARS, mid,
                   BARS_PX * (double)row->total / total, title);
      free(title);
      if (row->self)
        fl__svg_hbar(&b, HEAT_COLOR, BAR_PX, l.x0 + X_BARS, mid,
                     BARS_PX * (double)row->self / total, NULL);
      fl__buf_puts(&b, "\n");
    }
    count_text(num, t, row->self);
    fl__svg_cell(&b, l.x0 + X_SELF, mid, true, num);
    share_text(share, row->self, s->total);
    fl__svg_cell(&b, l.x0 + X_SELFPCT, mid, true, share);
    count_text(num, t, row->total);
    fl__svg_cell(&b, l.x0 + X_TOTAL, mid, true, num);
    share_text(share, row->total, s->total);
    fl__svg_cell(&b, l.x0 + X_TOTALPCT, mid, true, share);
    snprintf(num, sizeof num, "%d", row->line);
    fl__svg_cell(&b, l.x0 + X_LINE, mid, true, num);
    if (row->text) {
      char *text = expand_tabs(row->text, row->len), *shown = fl__text_cut(text, text_chars);
      fl__svg_cell(&b, l.x0 + X_TEXT, mid, false, shown);
      free(shown);
      free(text);
    }
    if (dim) fl__buf_puts(&b, "</g>\n");
  }
  fl__buf_puts(&b, "</g>\n</svg>\n");
  return fl__buf_take(&b);
}

/* ---- the entry points ---- */

/* *s for t with v (NULL: the defaults, in *defaults). Returns the view
 * options to draw with, or NULL with err (a focus that names nothing). */
static const fl_view_opts_t *prepare(const fl_tree_t *t, const fl_view_opts_t *v,
                                     fl_view_opts_t *defaults, const fl_source_reader_t *r,
                                     source_t *s, char *err, size_t err_size) {
  if (!v) {
    fl_view_opts_init(defaults);
    v = defaults;
  }
  return source_build(s, t, v->focus, r, err, err_size) < 0 ? NULL : v;
}

json_t *fl_source_vegalite(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                           char *err, size_t err_size) {
  fl_view_opts_t defaults;
  source_t s;
  if (!(v = prepare(t, v, &defaults, r, &s, err, err_size))) return NULL;
  json_t *spec = vegalite_of(t, v, &s);
  source_free(&s);
  return spec;
}

char *fl_source_svg(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                    char *err, size_t err_size) {
  fl_view_opts_t defaults;
  source_t s;
  if (!(v = prepare(t, v, &defaults, r, &s, err, err_size))) return NULL;
  char *svg = svg_of(t, v, &s);
  source_free(&s);
  return svg;
}

char *fl_text_source(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                     char *err, size_t err_size) {
  fl_view_opts_t defaults;
  source_t s;
  if (!(v = prepare(t, v, &defaults, r, &s, err, err_size))) return NULL;
  char *text = text_of(t, v, &s);
  source_free(&s);
  return text;
}

json_t *fl_source_bundle(const fl_tree_t *t, const fl_view_opts_t *v, const fl_source_reader_t *r,
                         char *err, size_t err_size) {
  fl_view_opts_t defaults;
  source_t s;
  if (!(v = prepare(t, v, &defaults, r, &s, err, err_size))) return NULL;
  char *svg = svg_of(t, v, &s), *report = text_of(t, v, &s);
  json_t *bundle = fl__bundle_assemble(vegalite_of(t, v, &s), svg, report, v);
  free(svg);
  free(report);
  source_free(&s);
  return bundle;
}
