/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_folded: folded stacks, the text format of flamegraph.pl, inferno and
 * speedscope: one line per distinct stack, "frame;frame;...;frame COUNT",
 * root first.
 *
 * Reading (fl__read_folded): the count is the last word of the line (after
 * the last space or tab, trailing whitespace ignored), and the stack is
 * what comes before that one separator, so frames may contain spaces, as
 * flamegraph.pl's /^(.*)\s+?(\d+)$/ splits them. Frames are interned
 * through a cache keyed by their text: a deep profile repeats the same few
 * thousand frames on every line, and each is parsed and interned in the
 * profile once.
 *
 * Writing (fl_folded): the tree's nodes come in pre-order with their
 * depths, so the text of the path to each node is the path to its parent
 * (the text of the current path up to depth - 1) plus its own frame; each
 * node with self weight gives a line. The lines are sorted bytewise, as
 * stackcollapse-perf.pl sorts its output, and equal texts merged. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__io.h"

/* ---- reading ---- */

/* Does the frame text s[0, n) end in a source location " (FILE:LINE)",
 * FILE not empty and LINE a positive int? Then *open is the index of its
 * '(' (the last " (" of the text), *colon that of the ':' before LINE. */
static bool ends_in_location(const char *s, size_t n, size_t *open, size_t *colon, int *line) {
  if (n < 6 || s[n - 1] != ')') return false;
  size_t o = n - 1;
  while (o > 0 && !(s[o - 1] == ' ' && s[o] == '(')) o--;
  if (o == 0) return false;
  size_t c = n - 1;
  while (c > o + 1 && fl__is_digit(s[c - 1])) c--;
  if (c == n - 1 || c <= o + 2 || s[c - 1] != ':') return false;
  long v = 0;
  for (size_t i = c; i < n - 1 && v <= INT_MAX; i++) v = v * 10 + (s[i] - '0');
  if (v <= 0 || v > INT_MAX) return false;
  *open = o;
  *colon = c - 1;
  *line = (int)v;
  return true;
}

/* A frame's text: "func", or "func (FILE:LINE)" with a positive LINE;
 * "_[k]" ends kernel frames and "_[i]" inlined ones. Returns the frame's
 * id. */
static uint32_t parse_frame(fl_profile_t *p, fl__frame_cache_t *cache, fl__buf_t *scratch,
                            const char *s, size_t n) {
  uint32_t id;
  if (fl__frame_cache_get(cache, s, n, &id)) return id; /* FL_PROFILE_NO_FRAME is never kept */
  size_t func_len = n, file = 0, file_len = 0, open, colon;
  int line = 0;
  if (ends_in_location(s, n, &open, &colon, &line)) {
    func_len = open - 1;
    file = open + 1;
    file_len = colon - file;
  }
  scratch->len = 0;
  fl__buf_add(scratch, s, func_len);
  fl__buf_add(scratch, "", 1);
  fl__buf_add(scratch, s + file, file_len);
  fl__buf_add(scratch, "", 1);
  const char *func = scratch->data;
  uint32_t flags = FL_FRAME_CELL;
  if (func_len >= 4 && memcmp(func + func_len - 4, "_[k]", 4) == 0)
    flags = FL_FRAME_KERNEL;
  else if (func_len >= 4 && memcmp(func + func_len - 4, "_[i]", 4) == 0)
    flags |= FL_FRAME_INLINED;
  fl_frame_t f = {.func = func,
                  .file = file_len ? scratch->data + func_len + 1 : NULL,
                  .line = file_len ? line : 0,
                  .flags = flags};
  id = fl_profile_frame_id(p, &f);
  if (id != FL_PROFILE_NO_FRAME) fl__frame_cache_put(cache, s, n, id);
  return id;
}

int fl__read_folded(fl_profile_t *p, const char *data, size_t len, const char *name,
                    fl_budget_t *budget, fl_io_error_t *err) {
  fl__frame_cache_t cache = {0};
  fl__buf_t scratch = {0};
  uint32_t *ids = NULL;
  size_t ids_cap = 0, lines = 0, zero_lines = 0;
  uint64_t total = 0;
  fl__lines_t it = {.data = data, .len = len};
  const char *s;
  size_t n;
  while (fl__next_line(&it, &s, &n)) {
    if (fl__blank(s, n) || s[0] == '#') continue;
    size_t end = n;
    while (end > 0 && fl__is_space(s[end - 1])) end--;
    size_t word = end;
    while (word > 0 && !fl__is_space(s[word - 1])) word--;
    uint64_t count = 0;
    bool ok = word < end;
    for (size_t i = word; i < end && ok; i++) {
      uint64_t d = (uint64_t)(s[i] - '0');
      if (!fl__is_digit(s[i])) {
        ok = false;
      } else if (count > (UINT64_MAX - d) / 10) {
        char found[80];
        fl__excerpt(s + word, end - word, found);
        fl__io_fail(err, name, it.lineno, "the count %s is too large (at most %" PRIu64 ")", found,
                    UINT64_MAX);
        goto fail;
      } else {
        count = count * 10 + d;
      }
    }
    if (!ok) {
      char found[80];
      fl__excerpt(s, n, found);
      fl__io_fail_as(err, FL_IO_ERR_NOT_FORMAT, name, it.lineno,
                     "not a line of folded stacks: found \"%s\"; expected \"frame;frame;...;frame "
                     "COUNT\" with COUNT, the last word, a non-negative integer",
                     found);
      goto fail;
    }
    /* "stack BASE TARGET": a diff as difffolded.pl (and cflame --diff -f
     * folded) writes it. Read as one count, its frame would end in the
     * other count; refused, so that a saved diff never reads back as a
     * profile it is not. */
    size_t prev_end = word;
    while (prev_end > 0 && fl__is_space(s[prev_end - 1])) prev_end--;
    size_t prev = prev_end;
    while (prev > 0 && fl__is_digit(s[prev - 1])) prev--;
    if (prev < prev_end && prev_end < word && (prev == 0 || fl__is_space(s[prev - 1]))) {
      char found[80];
      fl__excerpt(s, n, found);
      fl__io_fail(err, name, it.lineno,
                  "\"%s\" ends in two counts: this is a diff's folded stacks (\"stack BASE "
                  "TARGET\", as cflame --diff -f folded and difffolded.pl write them), not one "
                  "profile; compare the two profiles it came from with --diff BASE TARGET (in "
                  "the notebook, %%profdiffview)",
                  found);
      goto fail;
    }
    lines++;
    if (count == 0) {
      zero_lines++;
      continue;
    }
    if (total > UINT64_MAX - count) {
      fl__io_fail(err, name, it.lineno,
                  "the counts add up to more than %" PRIu64 ", the most a profile holds",
                  UINT64_MAX);
      goto fail;
    }
    total += count;
    size_t stack_len = word > 0 ? word - 1 : 0; /* without the one separator */
    size_t n_ids = 0;
    for (size_t start = 0; stack_len > 0;) {
      const char *semi = memchr(s + start, ';', stack_len - start);
      size_t stop = semi ? (size_t)(semi - s) : stack_len;
      uint32_t id = parse_frame(p, &cache, &scratch, s + start, stop - start), *grown;
      if (id == FL_PROFILE_NO_FRAME ||
          !(grown = fl__grow_charged(budget, ids, &ids_cap, n_ids + 1, sizeof *ids)))
        goto stopped;
      ids = grown;
      if (!(n_ids & FL__IO_CANCEL_EVERY) && fl_budget_stopped(budget)) goto stopped;
      ids[n_ids++] = id;
      if (!semi) break;
      start = stop + 1;
    }
    if (fl_profile_add_sample(p, ids, n_ids, count, 0, 0) < 0) goto stopped;
  }
  if (total == 0) {
    if (lines == 0)
      fl__io_fail_as(err, FL_IO_ERR_NO_SAMPLES, name, 0,
                     "no samples found in %s: it has no lines of folded stacks (\"frame;frame;...;"
                     "frame COUNT\") or perf script output",
                     name);
    else
      fl__io_fail_as(err, FL_IO_ERR_NO_SAMPLES, name, 0,
                     "no samples found in %s: every count in its %zu line%s is 0", name, zero_lines,
                     zero_lines == 1 ? "" : "s");
    goto fail;
  }
  snprintf(fl_profile_info(p)->source, sizeof fl_profile_info(p)->source, "folded stacks");
  fl__frame_cache_free(&cache);
  free(scratch.data);
  free(ids);
  return 0;
stopped:
  fl__io_budget_fail(err, name, budget);
fail:
  fl__frame_cache_free(&cache);
  free(scratch.data);
  free(ids);
  return -1;
}

/* ---- writing ---- */

/* Appends a frame's function name or file with ';' written ':', so that
 * it stays one frame (a profile's names hold no line breaks: they are
 * written \xHH when interned); in a file, " (" is written "_(", so that
 * the location's " (" is the text's last. */
static void add_frame_text(fl__buf_t *b, const char *s, bool file) {
  size_t start = b->len;
  fl__buf_puts(b, s);
  for (size_t i = start; i < b->len; i++) {
    char c = b->data[i];
    if (c == ';')
      b->data[i] = ':';
    else if (file && c == ' ' && i + 1 < b->len && b->data[i + 1] == '(')
      b->data[i] = '_';
  }
}

/* A frame as text: "func (file:line)", or "func" alone; a function name
 * that itself ends like a location gets '_' for the space before its '('
 * (and before any earlier one that would then start a location), so that it
 * does not read back as one. */
static void add_frame(fl__buf_t *b, const fl_frame_t *f) {
  size_t start = b->len, open, colon;
  int line;
  add_frame_text(b, f->func, false);
  if (f->line > 0 && f->file) {
    fl__buf_add(b, " (", 2);
    add_frame_text(b, f->file, true);
    fl__buf_printf(b, ":%d)", f->line);
  } else {
    while (ends_in_location(b->data + start, b->len - start, &open, &colon, &line))
      b->data[start + open - 1] = '_'; /* then an earlier " (" may start one */
  }
}

/* Appends a line's stack (n bytes) to b. A stack that ends in " DIGITS"
 * (a last frame named "worker 2", say), or is all digits, would read back
 * as a diff's two counts: the space before the digits is written '_', and
 * a stack of digits alone starts with '_'. */
static void add_stack(fl__buf_t *b, const char *stack, size_t n) {
  size_t digits = n;
  while (digits > 0 && fl__is_digit(stack[digits - 1])) digits--;
  if (digits == 0 && n > 0) fl__buf_add(b, "_", 1);
  size_t at = b->len;
  fl__buf_add(b, stack, n);
  if (digits < n && digits > 0 && fl__is_space(stack[digits - 1])) b->data[at + digits - 1] = '_';
}

typedef struct line {
  size_t off, len; /* the path's text in the arena */
  uint64_t count;
} line_t;

/* Bytewise, a prefix first: Perl's cmp on byte strings. */
static int cmp_lines(const void *pa, const void *pb, void *arena) {
  const line_t *a = pa, *b = pb;
  const char *base = arena;
  size_t n = a->len < b->len ? a->len : b->len;
  int c = memcmp(base + a->off, base + b->off, n);
  if (c) return c;
  return (a->len > b->len) - (a->len < b->len);
}

/* a + b, saturated. */
static size_t add_sat(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t fl_folded_bytes(const fl_tree_t *t) {
  size_t n_nodes = fl_tree_n_nodes(t), total = 0;
  size_t *ends = fl__xmalloc((size_t)fl_tree_max_depth(t) + 1, sizeof *ends);
  for (size_t i = 0; i < n_nodes; i++) {
    const fl_node_t *node = fl_tree_node(t, i);
    const fl_frame_t *f = &node->frame;
    int d = node->depth;
    /* its frame: the name, and " (FILE:LINE)" (the line's digits at most
     * 10), with the ';' before it */
    size_t own =
        d > 0 ? strlen(f->func) + 1 + (f->line > 0 && f->file ? strlen(f->file) + 14 : 0) : 0;
    ends[d] = add_sat(d > 0 ? ends[d - 1] : 0, own);
    /* the line twice (gathered, then written), its count, a guard
     * (add_stack), its index entry */
    if (node->self)
      total = add_sat(total, add_sat(2 * (ends[d] > SIZE_MAX / 2 ? SIZE_MAX / 2 : ends[d]), 24));
    total = add_sat(total, sizeof(line_t));
  }
  free(ends);
  return total;
}

char *fl_folded(const fl_tree_t *t) {
  size_t n_nodes = fl_tree_n_nodes(t), n_lines = 0;
  int max_depth = fl_tree_max_depth(t);
  size_t *ends = fl__xmalloc((size_t)max_depth + 1, sizeof *ends); /* path text length by depth */
  line_t *lines = fl__xmalloc(n_nodes, sizeof *lines);
  fl__buf_t path = {0}, arena = {0}, out = {0};
  for (size_t i = 0; i < n_nodes; i++) {
    const fl_node_t *node = fl_tree_node(t, i);
    int d = node->depth;
    path.len = d > 0 ? ends[d - 1] : 0;
    if (d > 1) fl__buf_add(&path, ";", 1);
    if (d > 0) add_frame(&path, &node->frame);
    ends[d] = path.len;
    if (node->self == 0) continue;
    size_t off = arena.len;
    add_stack(&arena, path.data ? path.data : "", path.len);
    lines[n_lines++] = (line_t){.off = off, .len = arena.len - off, .count = node->self};
  }
  if (n_lines) qsort_r(lines, n_lines, sizeof *lines, cmp_lines, arena.data);
  for (size_t i = 0; i < n_lines; i++) {
    uint64_t count = lines[i].count;
    while (i + 1 < n_lines && cmp_lines(&lines[i], &lines[i + 1], arena.data) == 0)
      count += lines[++i].count;
    fl__buf_add(&out, arena.data + lines[i].off, lines[i].len);
    fl__buf_printf(&out, " %" PRIu64 "\n", count);
  }
  free(ends);
  free(lines);
  fl__buf_free(&path);
  fl__buf_free(&arena);
  return fl__buf_take(&out);
}
