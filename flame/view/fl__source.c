/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__source: the source view's rows (fl__source.h), for a profile or a
 * diff, and what its two drawings (fl_source.c, fl_source_diff.c) share:
 * the table's width, its text columns and layers, a row's kind, the SVG's
 * headings and texts, and the four drawings made from one set of rows.
 *
 * Which lines: the files with samples, the one with the most self weight
 * first, at most MAX_FILES (with focus=FUNC, the files of FUNC's frames).
 * A file's text comes from the reader (fl_source_reader_t: a notebook's
 * cells, files on disk); a file of at most WHOLE_LINES lines is shown
 * whole, a longer one as windows of CONTEXT lines around its sampled
 * lines, a "⋮" row between windows. A file that cannot be read shows its
 * sampled lines without text. A diff's rows hold the lines of both
 * profiles (fl__source.h says how they pair). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cflame/fl_diff.h"
#include "cflame/fl_lines.h"
#include "fl__source.h"

#define MAX_FILES 5
#define WHOLE_LINES 150
#define CONTEXT 3
#define MAX_ROWS 1000
/* A file read from disk: at most this many bytes. */
#define MAX_FILE_BYTES (8u << 20)
/* The largest middle of two versions of a file searched for its common
 * lines (fl__source.h), in pairs of lines: 4 MB of table. */
#define ALIGN_MAX_CELLS 1e6


/* ---- which files are read ----
 *
 * A profile from elsewhere may name any file (/etc/shadow:1, a .env
 * beside the project), and a view's text ends up in pages that get
 * shared. A file's text is read from disk only when it is a source file
 * by its ending, under a source root once links and dots are resolved, a
 * regular file of at most MAX_FILE_BYTES holding no NUL byte. The roots:
 * the view's source_roots (source_root=, --source-root), and for a profile
 * this process recorded (fl_profile_info_t.recorded_here) the working
 * directory and its modules' directories. A notebook's cells come from
 * the reader, before any of this. */

typedef struct roots {
  char **dirs; /* resolved; "/" or without a trailing '/' */
  size_t n, cap;
} roots_t;

static void roots_add(roots_t *r, const char *dir) {
  char *real = realpath(dir, NULL);
  if (!real) return;
  for (size_t i = 0; i < r->n; i++)
    if (!strcmp(r->dirs[i], real)) {
      free(real);
      return;
    }
  r->dirs = fl__grow(r->dirs, &r->cap, r->n + 1, sizeof *r->dirs);
  r->dirs[r->n++] = real;
}

/* The working directory and the directories of p's modules, when p was
 * recorded here. */
static void roots_recorded(roots_t *r, const fl_profile_t *p) {
  if (!p || !fl_profile_info_const(p)->recorded_here) return;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd)) roots_add(r, cwd);
  const char **seen = NULL; /* modules are interned: one pointer each */
  size_t n_seen = 0, cap_seen = 0;
  for (size_t i = 0; i < fl_profile_n_frames(p); i++) {
    const char *m = fl_profile_frame(p, (uint32_t)i)->module;
    bool known = !m || m[0] != '/';
    for (size_t k = 0; k < n_seen && !known; k++) known = seen[k] == m;
    if (known) continue;
    seen = fl__grow(seen, &cap_seen, n_seen + 1, sizeof *seen);
    seen[n_seen++] = m;
    char *dir = fl__xstrdup(m);
    *strrchr(dir, '/') = '\0';
    roots_add(r, dir[0] ? dir : "/");
    free(dir);
  }
  free(seen);
}

static void roots_free(roots_t *r) {
  for (size_t i = 0; i < r->n; i++) free(r->dirs[i]);
  free(r->dirs);
}

static bool under_a_root(const roots_t *r, const char *real) {
  for (size_t i = 0; i < r->n; i++) {
    size_t n = strlen(r->dirs[i]);
    if (!strncmp(real, r->dirs[i], n) && (real[n] == '/' || (n == 1 && real[0] == '/')))
      return true;
  }
  return false;
}

/* Whether file's name ends as a source file's does. */
static bool is_source_name(const char *file) {
  static const char *const endings[] = {
      ".c",  ".h",   ".cc",  ".cp",  ".cpp", ".cxx", ".c++", ".C",   ".hh", ".hpp", ".hxx",
      ".h++", ".H",  ".ipp", ".tcc", ".inl", ".inc", ".rs",  ".go",  ".f",  ".for", ".f77",
      ".f90", ".f95", ".f03", ".f08", ".F",  ".F90", ".s",   ".S",   ".asm", ".m",  ".mm",
      ".cu",  ".cuh", ".zig", ".d",   ".py", ".pyx", ".java", ".y",  ".l"};
  const char *dot = strrchr(file, '.'), *slash = strrchr(file, '/');
  if (!dot || (slash && dot < slash) || dot == file || dot[-1] == '/') return false;
  for (size_t i = 0; i < FL__ARRAY_SIZE(endings); i++)
    if (!strcmp(dot, endings[i])) return true;
  return false;
}

/* The text of file from disk, when the rules above let it be read, new;
 * else NULL, with *outside set when only the roots kept it out. */
static char *read_from_disk(const roots_t *roots, const char *file, bool *outside) {
  *outside = false;
  if (!is_source_name(file)) return NULL;
  char *real = realpath(file, NULL);
  if (!real) return NULL;
  char *text = NULL;
  int fd = -1;
  if (!is_source_name(real)) goto done;
  if (!under_a_root(roots, real)) {
    *outside = true;
    goto done;
  }
  if ((fd = open(real, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)) < 0) goto done;
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_FILE_BYTES)
    goto done;
  text = fl__xmalloc((size_t)st.st_size + 1, 1);
  size_t got = 0;
  ssize_t n;
  while (got < (size_t)st.st_size && (n = read(fd, text + got, (size_t)st.st_size - got)) > 0)
    got += (size_t)n;
  text[got] = '\0';
  if (memchr(text, '\0', got)) { /* not text */
    free(text);
    text = NULL;
  }
done:
  if (fd >= 0) close(fd);
  free(real);
  return text;
}

void fl__source_outside_note(const fl__source_t *s, fl__buf_t *b) {
  if (!s->outside) return;
  fl__buf_printf(b,
                 "%zu file%s under no source root left unread (%s%s); source_root=DIR "
                 "(--source-root DIR) shows the source files under DIR",
                 s->outside, s->outside == 1 ? "" : "s", s->outside_names.data,
                 s->outside > FL__SOURCE_NAMED ? ", ..." : "");
}

/* A file's text: the reader's (a cell), else from disk by the rules above;
 * NULL when it has none. Counts a file the roots kept out. */
static char *file_text(fl__source_t *s, const fl_source_reader_t *reader, const roots_t *roots,
                     const char *file) {
  char *text = reader && reader->read ? reader->read(reader->ctx, file) : NULL;
  if (text) return text;
  bool outside;
  text = read_from_disk(roots, file, &outside);
  if (outside) {
    if (s->outside++ < FL__SOURCE_NAMED)
      fl__buf_printf(&s->outside_names, "%s%s", s->outside > 1 ? ", " : "", file);
  }
  return text;
}

/* ---- the rows ---- */

static void add_row(fl__source_t *s, fl__src_row_t r) {
  s->rows = fl__grow(s->rows, &s->cap, s->n + 1, sizeof *s->rows);
  s->rows[s->n++] = r;
}

/* Keeps text (may be NULL) for the rows to point into; returns it. */
static char *keep_text(fl__source_t *s, char *text) {
  if (!text) return NULL;
  s->texts = fl__grow(s->texts, &s->texts_cap, s->n_texts + 1, sizeof *s->texts);
  s->texts[s->n_texts++] = text;
  return text;
}

void fl__source_free(fl__source_t *s) {
  free(s->rows);
  fl__buf_free(&s->outside_names);
  for (size_t i = 0; i < s->n_texts; i++) free(s->texts[i]);
  free(s->texts);
  *s = (fl__source_t){0};
}

/* A line of a file with its weights in both profiles. */
typedef struct mline {
  int line;
  uint64_t self, total, base_self, base_total;
} mline_t;

/* A file of the view: its lines in each profile (sorted by line). */
typedef struct file_sum {
  const char *file;       /* as the drawn profile names it */
  const char *other_name; /* as the other names it */
  const fl_line_total_t *d, *o;
  size_t nd, no;
  uint64_t self, base_self; /* of its lines */
  double key;               /* the order: its self weight in either profile */
} file_sum_t;

static int cmp_file_sum(const void *pa, const void *pb) {
  const file_sum_t *a = pa, *b = pb;
  if (a->key != b->key) return a->key > b->key ? -1 : 1;
  return strcmp(a->file, b->file);
}

static int cmp_line_total(const void *pa, const void *pb) {
  const fl_line_total_t *a = pa, *b = pb;
  int c = strcmp(a->file, b->file);
  return c ? c : (a->line > b->line) - (a->line < b->line);
}

static int cmp_mline(const void *pa, const void *pb) {
  const mline_t *a = pa, *b = pb;
  return (a->line > b->line) - (a->line < b->line);
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

static bool same_line(const char *a, const char *b) {
  size_t n = line_len(a);
  return n == line_len(b) && memcmp(a, b, n) == 0;
}

/* Pairs lines [a0, a1) of a with [b0, b1) of b in order, as many as the
 * shorter has: a changed block. */
static void pair_block(int *map, size_t a0, size_t a1, size_t b0, size_t b1) {
  for (size_t i = a0, j = b0; i < a1 && j < b1; i++, j++) map[j] = (int)i + 1;
}

/* The place in a (na lines) of each line of b (nb lines): map[j] is the
 * line of a that b's line j + 1 became, 0 when it has none (fl__source.h
 * says how). New. */
static int *align_lines(const char **a, size_t na, const char **b, size_t nb) {
  int *map = fl__xcalloc(nb ? nb : 1, sizeof *map);
  size_t pre = 0, suf = 0;
  while (pre < na && pre < nb && same_line(a[pre], b[pre])) {
    map[pre] = (int)pre + 1;
    pre++;
  }
  while (suf < na - pre && suf < nb - pre && same_line(a[na - 1 - suf], b[nb - 1 - suf])) {
    map[nb - 1 - suf] = (int)(na - suf);
    suf++;
  }
  size_t ma = na - pre - suf, mb = nb - pre - suf;
  if (ma == 0 || mb == 0 || (double)ma * (double)mb > ALIGN_MAX_CELLS) {
    pair_block(map, pre, pre + ma, pre, pre + mb);
    return map;
  }
  /* lcs[i][j]: the longest common subsequence of the middles' suffixes
   * from i and j. */
  size_t w = mb + 1;
  uint32_t *lcs = fl__xcalloc((ma + 1) * w, sizeof *lcs);
  for (size_t i = ma; i-- > 0;)
    for (size_t j = mb; j-- > 0;)
      lcs[i * w + j] = same_line(a[pre + i], b[pre + j])
                           ? lcs[(i + 1) * w + j + 1] + 1
                           : (lcs[(i + 1) * w + j] > lcs[i * w + j + 1] ? lcs[(i + 1) * w + j]
                                                                        : lcs[i * w + j + 1]);
  size_t i = 0, j = 0, bi = 0, bj = 0; /* the block since the last alike pair */
  while (i < ma && j < mb) {
    if (same_line(a[pre + i], b[pre + j]) && lcs[i * w + j] == lcs[(i + 1) * w + j + 1] + 1) {
      pair_block(map, pre + bi, pre + i, pre + bj, pre + j);
      map[pre + j] = (int)(pre + i) + 1;
      bi = ++i;
      bj = ++j;
    } else if (lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
      i++;
    } else {
      j++;
    }
  }
  pair_block(map, pre + bi, pre + ma, pre + bj, pre + mb);
  free(lcs);
  return map;
}

/* The rows of one file: whole when short, else windows around the lines
 * with weight. lines[0..n) are its lines, sorted. */
static void add_file(fl__source_t *s, const file_sum_t *f, const mline_t *lines, size_t n,
                     const char *text) {
  add_row(s,
          (fl__src_row_t){
              .kind = FL__SRC_FILE, .file = f->file, .self = f->self, .base_self = f->base_self});
  fl__src_row_t *file_row = &s->rows[s->n - 1];
  for (size_t i = 0; i < n; i++) {
    if (lines[i].total > file_row->total) file_row->total = lines[i].total;
    if (lines[i].base_total > file_row->base_total) file_row->base_total = lines[i].base_total;
  }
  if (!text) { /* the lines with weight alone */
    for (size_t i = 0; i < n && s->n < MAX_ROWS; i++)
      add_row(s, (fl__src_row_t){.kind = FL__SRC_LINE,
                                 .file = f->file,
                                 .line = lines[i].line,
                                 .self = lines[i].self,
                                 .total = lines[i].total,
                                 .base_self = lines[i].base_self,
                                 .base_total = lines[i].base_total});
    return;
  }
  const char **starts = NULL;
  size_t n_text = split_lines(text, &starts), k = 0; /* k: the next line with weight */
  bool whole = n_text <= WHOLE_LINES;
  int last = 0; /* the last line added */
  for (int line = 1; line <= (int)n_text && s->n < MAX_ROWS; line++) {
    while (k < n && lines[k].line < line) k++;
    const mline_t *m = k < n && lines[k].line == line ? &lines[k] : NULL;
    if (!whole) {
      /* Near a line with weight: within CONTEXT of the one before or after. */
      bool near = false;
      for (size_t j = k > 0 ? k - 1 : 0; j < n && lines[j].line <= line + CONTEXT; j++)
        if (abs(lines[j].line - line) <= CONTEXT) near = true;
      if (!near) continue;
      if (last && line > last + 1)
        add_row(s, (fl__src_row_t){.kind = FL__SRC_GAP, .file = f->file});
    }
    add_row(s, (fl__src_row_t){.kind = FL__SRC_LINE,
                               .file = f->file,
                               .line = line,
                               .text = starts[line - 1],
                               .len = line_len(starts[line - 1]),
                               .self = m ? m->self : 0,
                               .total = m ? m->total : 0,
                               .base_self = m ? m->base_self : 0,
                               .base_total = m ? m->base_total : 0});
    last = line;
  }
  if (!whole && last && last < (int)n_text)
    add_row(s, (fl__src_row_t){.kind = FL__SRC_GAP, .file = f->file});
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

/* Whether the sorted lines hold file. */
static bool lines_have_file(const fl_line_total_t *lines, size_t n, const char *file) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(lines[i].file, file)) return true;
  return false;
}

/* The files of drawn lines dl and other lines ol (each sorted by file,
 * then line), in the order to show them. New; *n set. */
static file_sum_t *file_sums(const fl_line_total_t *dl, size_t nd, const fl_line_total_t *ol,
                             size_t no, double k, size_t *n) {
  file_sum_t *files = NULL;
  size_t n_files = 0, cap = 0, i = 0, j = 0;
  while (i < nd || j < no) {
    const char *file = i == nd                               ? ol[j].file
                       : j == no                             ? dl[i].file
                       : strcmp(dl[i].file, ol[j].file) <= 0 ? dl[i].file
                                                             : ol[j].file;
    file_sum_t f = {.file = file, .other_name = file, .d = dl + i, .o = ol + j};
    for (; i < nd && !strcmp(dl[i].file, file); i++, f.nd++) f.self += dl[i].self;
    for (; j < no && !strcmp(ol[j].file, file); j++, f.no++) f.base_self += ol[j].self;
    f.key = fmax((double)f.self, k * (double)f.base_self);
    files = fl__grow(files, &cap, n_files + 1, sizeof *files);
    files[n_files++] = f;
  }
  if (n_files) qsort(files, n_files, sizeof *files, cmp_file_sum);
  *n = n_files;
  return files;
}

/* The lines of f in both profiles, the other's moved by map (its lines
 * 1..n_map; NULL: by number), sorted, into *out (new); the other's lines
 * with no place become REMOVED rows in *removed (new; their texts from
 * other_starts, NULL: none). Returns how many lines. */
static size_t merge_lines(const file_sum_t *f, const int *map, size_t n_map,
                          const char **other_starts, mline_t **out, fl__src_row_t **removed,
                          size_t *n_removed) {
  mline_t *m = fl__xcalloc(f->nd + f->no + 1, sizeof *m);
  size_t n = 0, cap_removed = 0;
  for (size_t i = 0; i < f->nd; i++)
    m[n++] = (mline_t){.line = f->d[i].line, .self = f->d[i].self, .total = f->d[i].total};
  size_t n_drawn = n;
  for (size_t j = 0; j < f->no; j++) {
    const fl_line_total_t *o = &f->o[j];
    int line = o->line;
    if (map) line = o->line >= 1 && (size_t)o->line <= n_map ? map[o->line - 1] : 0;
    if (line == 0) {
      const char *text = other_starts && o->line >= 1 && (size_t)o->line <= n_map
                             ? other_starts[o->line - 1]
                             : NULL;
      *removed = fl__grow(*removed, &cap_removed, *n_removed + 1, sizeof **removed);
      (*removed)[(*n_removed)++] = (fl__src_row_t){.kind = FL__SRC_REMOVED,
                                                   .file = f->file,
                                                   .line = o->line,
                                                   .text = text,
                                                   .len = text ? line_len(text) : 0,
                                                   .base_self = o->self,
                                                   .base_total = o->total};
      continue;
    }
    /* The drawn lines are sorted: find line among them. */
    mline_t key = {.line = line}, *at = bsearch(&key, m, n_drawn, sizeof *m, cmp_mline);
    if (!at) {
      at = &m[n++];
      at->line = line;
    }
    at->base_self += o->self;
    at->base_total += o->total;
  }
  qsort(m, n, sizeof *m, cmp_mline);
  *out = m;
  return n;
}

/* A diff's deltas and changes, by its delta kind. */
static void diff_rows(fl__source_t *s) {
  bool self = fl_diff_options(s->d)->delta == FL_DELTA_SELF;
  double k = fl_diff_factor(s->d);
  for (size_t i = 0; i < s->n; i++) {
    fl__src_row_t *r = &s->rows[i];
    if (r->kind != FL__SRC_LINE && r->kind != FL__SRC_REMOVED) continue;
    double x = (double)(self ? r->self : r->total),
           y = (double)(self ? r->base_self : r->base_total);
    r->delta = x - k * y;
    if (r->kind == FL__SRC_LINE && x > 0 && r->base_total == 0)
      r->change = FL_CHANGE_NEW;
    else
      r->change = fl_diff_change_of(s->d, x, y, NULL);
    s->max_delta = fmax(s->max_delta, fabs(r->delta));
  }
}

int fl__source_build(fl__source_t *s, const fl_tree_t *t, const fl_diff_t *d,
                     const fl_view_opts_t *v, const fl_source_reader_t *reader, char *err,
                     size_t err_size) {
  const char *focus = v ? v->focus : NULL;
  const char *const *roots_given = v ? v->source_roots : NULL;
  const fl_tree_t *other = d ? fl_diff_other_tree(d) : NULL;
  if (d) t = fl_diff_tree(d);
  *s = (fl__source_t){.t = t, .d = d, .total = fl_tree_root(t)->count};
  if (other) s->other_total = fl_tree_root(other)->count;
  if (focus && !has_function(t, focus) && !(other && has_function(other, focus))) {
    char near[512];
    fl__nearest_names(t, focus, near, sizeof near);
    snprintf(err, err_size, "focus=%s matches no function of the profile%s%s", focus,
             near[0] ? "; the nearest: " : "", near);
    return -1;
  }
  const uint32_t skip = FL_FRAME_SYSTEM | FL_FRAME_ALLOC;
  fl_line_total_t *dl = NULL, *ol = NULL;
  size_t nd = fl_lines_totals(t, skip, &dl), no = other ? fl_lines_totals(other, skip, &ol) : 0;
  /* The file each profile ran, at two versions: the other's lines under
   * the drawn one's name. */
  const char *renamed = NULL, *renamed_to = NULL;
  if (other) {
    const char *ds = fl_profile_info_const(fl_tree_profile(t))->source;
    const char *os = fl_profile_info_const(fl_tree_profile(other))->source;
    if (ds[0] && os[0] && strcmp(ds, os) && lines_have_file(dl, nd, ds) &&
        lines_have_file(ol, no, os)) {
      for (size_t i = 0; i < nd && !renamed_to; i++)
        if (!strcmp(dl[i].file, ds)) renamed_to = dl[i].file;
      for (size_t j = 0; j < no; j++)
        if (!strcmp(ol[j].file, os)) {
          renamed = ol[j].file;
          ol[j].file = renamed_to;
        }
      qsort(ol, no, sizeof *ol, cmp_line_total);
    }
  }
  size_t n_files;
  file_sum_t *files = file_sums(dl, nd, ol, no, d ? fl_diff_factor(d) : 1, &n_files);
  /* The files that matter: those with self weight (the others only hold
   * callers of the code that spent it). */
  for (size_t i = 0; i < n_files; i++) s->n_files += files[i].key > 0;
  roots_t roots = {0};
  for (const char *const *r = roots_given; r && *r; r++) roots_add(&roots, *r);
  roots_recorded(&roots, fl_tree_profile(t));
  if (other) roots_recorded(&roots, fl_tree_profile(other));
  for (size_t i = 0; i < n_files && s->files_shown < MAX_FILES && s->n < MAX_ROWS; i++) {
    file_sum_t *f = &files[i];
    if (f->file == renamed_to && renamed) f->other_name = renamed;
    if (focus && !file_has_function(t, f->file, focus) &&
        !(other && file_has_function(other, f->other_name, focus)))
      continue;
    size_t outside = s->outside;
    char *text = file_text(s, reader, &roots, f->file);
    /* A file without text is worth showing for its own lines' weight;
     * one that only holds callers (a library's, read through its debug
     * information) is not. */
    if (!text && f->key == 0) continue;
    keep_text(s, text);
    s->unreadable += text == NULL && s->outside == outside;
    /* The other version's text, when it is another file. */
    int *map = NULL;
    size_t n_map = 0;
    const char **other_starts = NULL;
    if (f->other_name != f->file) {
      char *other_text = keep_text(s, file_text(s, reader, &roots, f->other_name));
      if (text && other_text && strcmp(text, other_text)) {
        const char **starts;
        size_t n_text = split_lines(text, &starts);
        n_map = split_lines(other_text, &other_starts);
        map = align_lines(starts, n_text, other_starts, n_map);
        s->realigned = true;
        free(starts);
      }
    }
    mline_t *lines;
    fl__src_row_t *removed = NULL;
    size_t n_removed = 0,
           n = merge_lines(f, map, n_map, other_starts, &lines, &removed, &n_removed);
    add_file(s, f, lines, n, text);
    for (size_t j = 0; j < n_removed && s->n < MAX_ROWS; j++, s->removed++) add_row(s, removed[j]);
    s->files_shown++;
    free(removed);
    free(lines);
    free(map);
    free(other_starts);
  }
  roots_free(&roots);
  if (d) diff_rows(s);
  free(files);
  free(dl);
  free(ol);
  return 0;
}

/* ---- what the drawings share ---- */

char *fl__source_text(const char *text, size_t len) {
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

const char *fl__source_kind_name(fl__src_kind_t k) {
  switch (k) {
    case FL__SRC_FILE: return "file";
    case FL__SRC_GAP: return "gap";
    case FL__SRC_REMOVED: return "removed";
    default: return "line";
  }
}

int fl__source_width(const fl_view_opts_t *v, int x_text) {
  return v->width > x_text + 300 ? v->width : x_text + 300;
}

json_t *fl__source_src(void) {
  return fl__vl_calculate(
      "datum.k === 'file' ? datum.heading : datum.k === 'gap' ? "
      "'\xe2\x8b\xae' : replace(datum.text, /^ +/, '')",
      "src");
}

bool fl__source_svg_aside(fl__buf_t *b, const fl__svg_table_t *l, const fl__src_row_t *row,
                          double mid, int x_text, const char *heading) {
  if (row->kind == FL__SRC_FILE) {
    fl__buf_puts(b, "<g font-weight='bold'>");
    fl__svg_cell(b, l->x0, mid, false, heading);
    fl__buf_puts(b, "</g>\n");
    return true;
  }
  if (row->kind == FL__SRC_GAP) {
    fl__svg_cell(b, l->x0 + x_text, mid, false, "\xe2\x8b\xae");
    return true;
  }
  return false;
}

json_t *fl__source_indent(int x_text) {
  /* An offset, since a text mark would drop the spaces. */
  char expr[200];
  snprintf(expr, sizeof expr,
           "%d + (datum.text ? (length(datum.text) - length(datum.src)) * %g : 0)", x_text,
           FL__TABLE_CHAR_PX);
  return fl__vl_calculate(expr, "tx");
}

/* The layers that draw the rows' src: a line's text at its indentation,
 * a file's heading in bold across the table. */
static void text_layers(const fl__table_t *tb, int width, int x_text, json_t *rows_layer) {
  const fl__table_column_t columns[] = {
      {.field = "src",
       .x_field = "tx",
       .limit = width - x_text,
       .filter = "datum.k !== 'file'",
       .opacity_field = "op"},
      {.field = "src", .x = 0, .limit = width, .filter = "datum.k === 'file'", .bold = true},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(columns); i++)
    json_array_append_new(rows_layer, fl__table_text(tb, &columns[i]));
}

json_t *fl__source_layers(const fl__table_t *tb, const fl__table_column_t *columns,
                          size_t n_columns, int width, int x_text, json_t *rows_layer,
                          json_t *values, json_t *transform, const fl__table_head_t *heads,
                          size_t n_heads) {
  for (size_t i = 0; i < n_columns; i++)
    json_array_append_new(rows_layer, fl__table_text(tb, &columns[i]));
  text_layers(tb, width, x_text, rows_layer);
  json_t *layers = fl__nonnull(json_array());
  json_array_append_new(
      layers, fl__nonnull(json_pack("{s:{s:o},s:o,s:o}", "data", "values", values, "transform",
                                    transform, "layer", rows_layer)));
  fl__table_headers(tb, heads, n_heads, layers);
  return layers;
}

void fl__source_svg_text(fl__buf_t *b, const fl__svg_table_t *l, const fl__src_row_t *row,
                         double mid, int x_text, size_t chars) {
  if (!row->text) return;
  char *text = fl__source_text(row->text, row->len), *shown = fl__text_cut(text, chars);
  fl__svg_cell(b, l->x0 + x_text, mid, false, shown);
  free(shown);
  free(text);
}

int fl__source_draw(const fl__source_drawings_t *dr, void *state, const fl_view_opts_t *v,
                    fl__drawing_t what, fl__drawn_t *out) {
  switch (what) {
    case FL__DRAW_VEGALITE: out->json = dr->vegalite(state); break;
    case FL__DRAW_SVG: out->text = dr->svg(state); break;
    case FL__DRAW_TEXT: out->text = dr->text(state); break;
    case FL__DRAW_BUNDLE: {
      char *svg = dr->svg(state), *report = dr->text(state);
      out->json = fl__bundle_assemble(dr->vegalite(state), svg, report, v);
      free(svg);
      free(report);
      break;
    }
  }
  return out->json || out->text ? 0 : -1;
}
