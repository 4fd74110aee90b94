/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__render: what the renderers share (fl__render.h): rows, layout, kinds
 * and colours, a diff's colours, legend, summary and vanished list, notes,
 * amounts. The renderers (fl_vegalite.c, fl_svg.c,
 * fl_text.c, fl_html.c) and fl_bundle.c import from here; this file imports
 * from none of them. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_budget.h"
#include "fl__render.h"

/* ---- rows ---- */

/* The rows of t, at most max_rows of them with their merged frames: the
 * merged frame of a row goes after the row's subtree, which is where it
 * lies in pre-order (after the drawn children). */
static void rows_with_merged(const fl_tree_t *t, size_t max_rows, fl__rows_t *r) {
  const fl_node_t **base = NULL;
  size_t n_base = fl_tree_rows(t, max_rows, &base, &r->n_merged), n_with = 0;
  const fl_narrow_t *items;
  for (size_t i = 0; i < n_base; i++) n_with += fl_tree_narrow(t, base[i], &items, NULL) > 0;
  if (n_base + n_with > max_rows && n_base > 1) {
    /* Room for the merged frames: fewer tree rows (each leaves at most one). */
    free(base);
    size_t fewer = max_rows > n_with ? max_rows - n_with : 1;
    n_base = fl_tree_rows(t, fewer < max_rows / 2 ? max_rows / 2 : fewer, &base, &r->n_merged);
    n_with = 0;
    for (size_t i = 0; i < n_base; i++) n_with += fl_tree_narrow(t, base[i], &items, NULL) > 0;
  }
  r->rows = fl__xmalloc(n_base + n_with + 1, sizeof *r->rows);
  r->merged = fl__xcalloc(n_with + 1, sizeof *r->merged);
  r->merged_names = fl__xcalloc(n_with + 1, sizeof *r->merged_names);
  size_t *open = fl__xmalloc(n_base + 1, sizeof *open), n_open = 0;
  for (size_t i = 0; i <= n_base; i++) {
    int depth = i < n_base ? base[i]->depth : -1;
    while (n_open && base[open[n_open - 1]]->depth >= depth) {
      const fl_node_t *p = base[open[--n_open]];
      uint64_t weight;
      size_t held = fl_tree_narrow(t, p, &items, &weight);
      if (!held) continue;
      fl_node_t *m = &r->merged[r->n_merged_frames];
      char *name = r->merged_names[r->n_merged_frames];
      fl_count_noun(held, "narrow frame", "narrow frames", name, sizeof *r->merged_names);
      uint64_t allocs = 0;
      for (size_t k = 0; k < held; k++) allocs += items[k].allocs;
      *m = (fl_node_t){.frame = {.func = name, .flags = items[0].frame.flags & ~FL_FRAME_ROOT},
                       .count = weight,
                       .allocs = allocs,
                       .x0 = p->x1 - p->self - weight,
                       .x1 = p->x1 - p->self,
                       .depth = p->depth + 1,
                       .status = FL_STATUS_MERGED,
                       .id = (uint32_t)(fl_tree_n_nodes(t) + r->n_merged_frames),
                       .parent = (fl_node_t *)p};
      r->rows[r->n++] = m;
      r->n_merged_frames++;
      r->n_held += held;
      r->held_weight += weight;
    }
    if (i == n_base) break;
    r->rows[r->n++] = base[i];
    open[n_open++] = i;
  }
  free(open);
  free(base);
}

void fl__rows_get(const fl_tree_t *t, const fl_diff_t *d, size_t max_rows, fl__rows_t *r) {
  memset(r, 0, sizeof *r);
  if (max_rows == 0 || max_rows > FL__MAX_ROWS) max_rows = FL__MAX_ROWS;
  r->tree = t;
  r->diff = d;
  rows_with_merged(t, max_rows, r);
  r->deep = fl__xmalloc(r->n ? r->n : 1, sizeof *r->deep);
  /* Pre-order: a row's subtree is the rows after it that are deeper, so a
   * stack of the open rows hands each closed row's deepest to its parent. */
  size_t *open = fl__xmalloc(r->n ? r->n : 1, sizeof *open), n_open = 0;
  for (size_t i = 0; i <= r->n; i++) {
    int depth = i < r->n ? r->rows[i]->depth : -1;
    while (n_open && r->rows[open[n_open - 1]]->depth >= depth) {
      size_t closed = open[--n_open];
      if (n_open && r->deep[closed] > r->deep[open[n_open - 1]])
        r->deep[open[n_open - 1]] = r->deep[closed];
    }
    if (i == r->n) break;
    r->deep[i] = depth;
    open[n_open++] = i;
    if (depth + 1 > r->levels) r->levels = depth + 1;
  }
  free(open);
  r->total = fl_tree_root(t)->count;
}

size_t fl__rows_held(const fl__rows_t *r, const fl_node_t *n, const fl_narrow_t **items) {
  return fl_tree_narrow(r->tree, n->parent, items, NULL);
}

void fl__held_text(const fl__rows_t *r, const fl_node_t *n, const char *sep, fl__buf_t *out) {
  const fl_narrow_t *items;
  size_t held = fl__rows_held(r, n, &items);
  for (size_t k = 0; k < held && k < FL__HELD_LISTED; k++)
    fl__buf_printf(out, "%s%s (%.3g%%)", k ? sep : "",
                   items[k].frame.func ? items[k].frame.func : "[unknown]",
                   r->total ? 100.0 * (double)items[k].count / (double)r->total : 0.0);
  if (held > FL__HELD_LISTED) {
    char more[32];
    fl__thousands(held - FL__HELD_LISTED, more);
    fl__buf_printf(out, "%s\xe2\x80\xa6 and %s more", sep, more);
  }
}

void fl__rows_free(fl__rows_t *r) {
  free(r->rows);
  free(r->deep);
  free(r->merged);
  free(r->merged_names);
  memset(r, 0, sizeof *r);
}

/* ---- layout ---- */

#define LEVEL_PX 18.0
#define MAX_FULL_HEIGHT 2000.0  /* the plot's height before levels get thinner */
#define MIN_LABEL_LEVEL_PX 10.0 /* 11 px text, its descenders let out */

void fl__layout_of(const fl_view_opts_t *v, const fl__rows_t *r, fl__layout_t *l) {
  int levels = r->levels > 0 ? r->levels : 1;
  l->width = v->width > 0 ? v->width : 800;
  double room; /* the most the plot may be */
  if (v->height > 0)
    room = v->height;
  else if (levels * LEVEL_PX <= MAX_FULL_HEIGHT)
    room = levels * LEVEL_PX;
  else
    room = fmin(FL__MAX_AUTO_HEIGHT, fmax(MAX_FULL_HEIGHT, levels * FL__MIN_LEVEL_PX));
  /* A browser's canvas and a reader's patience both end somewhere: levels
   * that would be thinner than text go into the band instead. */
  l->shown = levels;
  if (room / levels < FL__MIN_LEVEL_PX) {
    l->shown = (int)floor(room / FL__MIN_LEVEL_PX);
    if (l->shown < 2) l->shown = levels < 2 ? levels : 2;
  }
  l->band = l->shown < levels;
  l->height = v->height > 0 ? v->height : room;
  if (l->band && v->height <= 0) l->height = l->shown * FL__MIN_LEVEL_PX;
  l->level_px = l->height / l->shown;
  l->labels = l->level_px >= MIN_LABEL_LEVEL_PX;
}

void fl__band_label(int depth, int deep, size_t fit, bool still, char *out, size_t size) {
  static const char *const tails[] = {" more levels (click to open)", " more levels", ""};
  char n[32];
  fl__thousands((uint64_t)(deep - depth + 1), n);
  for (size_t i = still ? 1 : 0; i < FL__ARRAY_SIZE(tails); i++) {
    /* "… " is two characters, four bytes. */
    snprintf(out, size, "\xe2\x80\xa6 %s%s", n, tails[i]);
    if (fit == 0 || strlen(out) - 2 <= fit) return;
  }
}

/* ---- kinds and colours ---- */

/* The kinds of code: each one's legend label and colour, and how far its
 * frames' colours stray from that colour (fl__node_color): at most
 * KIND_SPREAD / 2 on each channel, so that every frame looks like its
 * kind's swatch in the legend, and neighbours still differ. Cell and
 * program code are orange (flamegraph.pl's "hot" palette is red to yellow;
 * its middle), system libraries blue, the allocator violet, the kernel
 * green, other code khaki, waits (off-CPU) slate; the root is grey, and
 * does not vary. Waits vary in lightness only: a slate varied channel by
 * channel turns lilac or teal, and reads as the allocator's or the
 * system's colour. Light enough for black labels, and bright enough on a
 * dark background. */
#define KIND_SPREAD 40

static const struct kind_style {
  const char *label;
  const char *color; /* "#rrggbb": the legend's swatch, the middle of the frames' colours */
  bool varies;
  bool shade_only; /* varies by one offset on every channel: lighter or darker */
} kinds[FL__N_KINDS] = {
    [FL__KIND_CELL] = {"cell code", "#eb911e", true, false},
    [FL__KIND_PROGRAM] = {"program code", "#eb911e", true, false},
    [FL__KIND_SYSTEM] = {"system library", "#73b6ed", true, false},
    [FL__KIND_ALLOC] = {"allocator", "#c393ed", true, false},
    [FL__KIND_KERNEL] = {"kernel", "#82cf78", true, false},
    [FL__KIND_OTHER] = {"other code", "#c5c5ac", true, false},
    [FL__KIND_OFFCPU] = {"off-CPU (waiting)", "#9aa8c4", true, true},
    [FL__KIND_ROOT] = {"root", "#b0b0b0", false, false},
};

fl__kind_t fl__kind_of(const fl_node_t *n) {
  uint32_t f = n->frame.flags;
  if (n->depth == 0 || (f & FL_FRAME_ROOT)) return FL__KIND_ROOT;
  if (f & FL_FRAME_OFFCPU) return FL__KIND_OFFCPU;
  if (f & FL_FRAME_ALLOC) return FL__KIND_ALLOC;
  if (f & FL_FRAME_KERNEL) return FL__KIND_KERNEL;
  if (f & FL_FRAME_SYSTEM) return FL__KIND_SYSTEM;
  if (f & FL_FRAME_CELL) return f & FL_FRAME_REPL ? FL__KIND_CELL : FL__KIND_PROGRAM;
  return FL__KIND_OTHER;
}

const char *fl__kind_label(fl__kind_t k) {
  return kinds[k].label;
}
const char *fl__kind_color(fl__kind_t k) {
  return kinds[k].color;
}

unsigned fl__kinds_present(const fl__rows_t *r) {
  unsigned present = 0;
  for (size_t i = 0; i < r->n; i++) present |= 1u << fl__kind_of(r->rows[i]);
  return present;
}

/* FNV's low bits mix poorly for short names: half of murmur3's finalizer
 * spreads them (the colours of every graph depend on it). */
static uint64_t name_hash(const char *s) {
  uint64_t h = fl__fnv1a(s);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdu;
  h ^= h >> 33;
  return h;
}

void fl__node_color(const fl_node_t *n, char hex[8]) {
  const struct kind_style *k = &kinds[fl__kind_of(n)];
  unsigned rgb[3];
  sscanf(k->color, "#%02x%02x%02x", &rgb[0], &rgb[1], &rgb[2]);
  if (k->varies) {
    /* Three independent offsets in [-KIND_SPREAD / 2, KIND_SPREAD / 2) from
     * the hash of the name: a function has one colour everywhere. */
    uint64_t h = name_hash(n->frame.func ? n->frame.func : "");
    for (int i = 0; i < 3; i++) {
      int shift = k->shade_only ? 0 : 16 * i;
      int v = (int)rgb[i] + (int)((h >> shift) & 0xffff) * KIND_SPREAD / 65536 - KIND_SPREAD / 2;
      rgb[i] = v < 0 ? 0 : v > 255 ? 255 : (unsigned)v;
    }
  }
  snprintf(hex, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

void fl__row_color(const fl__rows_t *r, const fl_node_t *n, char hex[8]) {
  if (r->diff)
    fl__diff_color(r->diff, n, hex);
  else
    fl__node_color(n, hex);
}

static const fl__theme_t light = {"#ffffff", "#222222", "#000000", "#c000c0"};
static const fl__theme_t dark = {"#1e1e1e", "#e6e6e6", "#000000", "#ff40ff"};

const fl__theme_t *fl__theme_of(const fl_view_opts_t *v) {
  return v->dark ? &dark : &light;
}

/* ---- words and notes ---- */

/* The kind of the samples t draws. */
static const fl_kind_info_t *kind_of(const fl_tree_t *t) {
  return fl_kind(fl_tree_kind(t));
}

bool fl__is_alloc(const fl_tree_t *t) {
  return kind_of(t)->allocs;
}

bool fl__alloc_counts(const fl_tree_t *t) {
  return kind_of(t)->allocs && !kind_of(t)->bytes;
}

const char *fl__unit(const fl_tree_t *t) {
  return kind_of(t)->many;
}

const char *fl__unit_for(const fl_tree_t *t, double n) {
  return fabs(n) != 1 ? kind_of(t)->many : kind_of(t)->one;
}

void fl__thousands(uint64_t n, char out[32]) {
  char digits[24];
  int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
  int j = 0;
  for (int i = 0; i < len; i++) {
    if (i > 0 && (len - i) % 3 == 0) out[j++] = ',';
    out[j++] = digits[i];
  }
  out[j] = '\0';
}

void fl_count_noun(uint64_t n, const char *one, const char *many, char *out, size_t size) {
  char digits[32];
  fl__thousands(n, digits);
  snprintf(out, size, "%s %s", digits, n == 1 ? one : many);
}

/* Copies s into line, cleaned, cut between characters to fit. */
static void note_copy(char line[FL__NOTE_SIZE], const char *s) {
  char *clean = fl__clean_text(s, false);
  size_t len = strlen(clean);
  if (len >= FL__NOTE_SIZE) { /* cut between characters */
    len = FL__NOTE_SIZE - 1;
    while (len > 0 && ((unsigned char)clean[len] & 0xc0) == 0x80) len--;
  }
  if (len) memcpy(line, clean, len);
  line[len] = '\0';
  free(clean);
}

static int notes_of(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r,
                    char lines[FL__MAX_NOTES][FL__NOTE_SIZE]);

/* Splits note into lines of at most cols characters at spaces (a longer
 * word stands alone) into lines[*n...], while there is room. */
static void wrap_note(const char *note, size_t cols, char lines[FL__MAX_NOTES][FL__NOTE_SIZE],
                      int *n) {
  const char *p = note;
  while (*p && *n < FL__MAX_NOTES) {
    size_t len = strlen(p), cut = len;
    if (len > cols && *n < FL__MAX_NOTES - 1) {
      /* The last space within cols characters (UTF-8 continuation bytes do
       * not count), else the first one after. */
      size_t chars = 0, last_space = 0, last_clause = 0, i = 0;
      for (; i < len && chars <= cols; i++) {
        if (((unsigned char)p[i] & 0xc0) != 0x80) chars++;
        if (p[i] == ' ' && chars <= cols) {
          last_space = i;
          if (i > 0 && (p[i - 1] == ';' || p[i - 1] == ',')) last_clause = i;
        }
      }
      if (!last_space) last_space = strcspn(p, " ");
      /* Between clauses where that keeps the line at least half full. */
      cut = last_clause > cols / 2 ? last_clause : last_space;
    }
    note_copy(lines[(*n)++], p);
    if (cut < strlen(lines[*n - 1])) lines[*n - 1][cut] = '\0';
    p += cut;
    while (*p == ' ') p++;
  }
}

int fl__notes(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r,
              char lines[FL__MAX_NOTES][FL__NOTE_SIZE]) {
  char raw[FL__MAX_NOTES][FL__NOTE_SIZE];
  int n_raw = notes_of(t, v, r, raw), n = 0;
  /* 12 px text averages about 6.5 px a character: wrap to the plot. */
  size_t cols = (size_t)((v->width > 0 ? v->width : 800) / 6.5);
  for (int i = 0; i < n_raw; i++) wrap_note(raw[i], cols, lines, &n);
  return n;
}

/* The notes before wrapping. */
static int notes_of(const fl_tree_t *t, const fl_view_opts_t *v, const fl__rows_t *r,
                    char lines[FL__MAX_NOTES][FL__NOTE_SIZE]) {
  int n = 0;
  if (v->note && v->note[0]) note_copy(lines[n++], v->note);
  if (fl_tree_inverted(t))
    snprintf(lines[n++], FL__NOTE_SIZE,
             "callers: each function where time was spent sits on the root, its callers %s it, "
             "each as wide as the time spent in the function under it",
             v->icicle ? "below" : "above");
  if (r->diff) {
    /* Room for the negate line, the summary, the band and the hidden line. */
    const char *const *notes = fl_diff_notes(r->diff);
    for (; notes && *notes && n < FL__MAX_NOTES - 4; notes++) note_copy(lines[n++], *notes);
    if (fl_diff_options(r->diff)->negate)
      snprintf(lines[n++], FL__NOTE_SIZE,
               "baseline layout, coloured by baseline \xe2\x88\x92 target");
    fl__diff_summary(r->diff, r, lines[n++], FL__NOTE_SIZE);
  }
  fl__layout_t l;
  fl__layout_of(v, r, &l);
  if (l.band) {
    char deeper[32], all[32];
    fl__thousands((uint64_t)(r->levels - l.shown + 1), deeper);
    fl__thousands((uint64_t)r->levels, all);
    snprintf(lines[n++], FL__NOTE_SIZE,
             "the deepest %s of %s levels are collapsed into the band at the %s%s; height=%d "
             "(--height %d) draws them all, recur=flat (--recur flat) folds recursion",
             deeper, all, v->icicle ? "bottom" : "top", v->still ? "" : " (click it to open)",
             (int)ceil(r->levels * FL__MIN_LEVEL_PX), (int)ceil(r->levels * FL__MIN_LEVEL_PX));
  }
  uint64_t hidden_weight = 0;
  size_t hidden = fl_tree_hidden(t, &hidden_weight);
  if (hidden == 0 && r->n_merged == 0) return n;

  char a[48], b[48], c[32];
  if (r->n_merged_frames) {
    /* The merged frames hold the hidden ones (a hidden frame's subtree is
     * in its count): their weight is the hidden weight, in sight. */
    fl_count_noun(r->n_held, "narrow frame", "narrow frames", a, sizeof a);
    fl_count_noun(r->n_merged_frames, "frame", "frames", b, sizeof b);
    int len =
        snprintf(lines[n], FL__NOTE_SIZE, "%s merged into %s (%.2g%% of %s)", a, b,
                 r->total ? 100.0 * (double)r->held_weight / (double)r->total : 0, fl__unit(t));
    if (r->n_merged) {
      fl__thousands(r->n_merged, b);
      fl__thousands(r->n, c);
      snprintf(lines[n] + len, FL__NOTE_SIZE - (size_t)len, ", %s more left out to draw at most %s",
               b, c);
    }
    return n + 1;
  }
  fl_count_noun(hidden, "narrow frame", "narrow frames", a, sizeof a);
  fl_count_noun(r->n_merged, "narrow frame", "narrow frames", b, sizeof b);
  fl__thousands(r->n, c);
  double share = r->total ? 100.0 * (double)hidden_weight / (double)r->total : 0;
  if (hidden && r->n_merged) {
    fl__thousands(r->n_merged, b);
    snprintf(lines[n++], FL__NOTE_SIZE,
             "%s hidden (%.2g%% of %s), %s more left out to draw at most %s", a, share, fl__unit(t),
             b, c);
  } else if (hidden) {
    snprintf(lines[n++], FL__NOTE_SIZE, "%s hidden (%.2g%% of %s)", a, share, fl__unit(t));
  } else {
    snprintf(lines[n++], FL__NOTE_SIZE, "%s left out to draw at most %s", b, c);
  }
  return n;
}

void fl__bytes(char *buf, size_t size, uint64_t bytes) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    snprintf(buf, size, "%" PRIu64 " B", bytes);
    return;
  }
  double v = (double)bytes / 1024;
  size_t u = 0;
  while (v >= 1024 && u + 1 < FL__ARRAY_SIZE(units)) {
    v /= 1024;
    u++;
  }
  snprintf(buf, size, "%.1f %s", v, units[u]);
}

void fl__amount(double v, bool sign, char out[48]) {
  double rounded = round(v * 100) / 100;
  if (rounded == 0) rounded = 0; /* no "-0" */
  double whole = trunc(fabs(rounded));
  char digits[32];
  if (whole < 1e18)
    fl__thousands((uint64_t)whole, digits);
  else
    snprintf(digits, sizeof digits, "%.3g", whole);
  int cents = (int)llround((fabs(rounded) - whole) * 100);
  const char *prefix = rounded < 0 ? "-" : sign ? "+" : "";
  if (cents == 0)
    snprintf(out, 48, "%s%s", prefix, digits);
  else if (cents % 10 == 0)
    snprintf(out, 48, "%s%s.%d", prefix, digits, cents / 10);
  else
    snprintf(out, 48, "%s%s.%02d", prefix, digits, cents);
}

/* ---- diffs ---- */

const char *fl__change_name(fl_change_t c) {
  switch (c) {
    case FL_CHANGE_GREW: return "grew";
    case FL_CHANGE_SHRANK: return "shrank";
    case FL_CHANGE_NEW: return "new";
    case FL_CHANGE_VANISHED: return "vanished";
    case FL_CHANGE_SAME: break;
  }
  return "same";
}

const char *fl__change_color(fl_change_t c) {
  switch (c) {
    case FL_CHANGE_GREW: return FL__DIFF_GREW_COLOR;
    case FL_CHANGE_SHRANK: return FL__DIFF_SHRANK_COLOR;
    case FL_CHANGE_NEW: return FL__DIFF_NEW_COLOR;
    case FL_CHANGE_VANISHED: return FL__DIFF_SHRANK_COLOR; /* shrank to nothing */
    case FL_CHANGE_SAME: break;
  }
  return FL__DIFF_SAME_COLOR;
}

void fl__capitalized(char *out, size_t size, const char *word) {
  snprintf(out, size, "%c%s", word[0] & ~0x20, word + 1);
}

/* The full colours of growth and shrinkage, as in FL__DIFF_*_COLOR. */
static const uint8_t grew_rgb[3] = {0xd7, 0x28, 0x28}, shrank_rgb[3] = {0x28, 0x64, 0xd7};

const fl_diff_node_t *fl__row_diff(const fl_diff_t *d, const fl_node_t *n) {
  if (n->status & FL_STATUS_MERGED) return fl_diff_narrow(d, n->parent->id);
  return fl_diff_node(d, n->id);
}

void fl__diff_color(const fl_diff_t *d, const fl_node_t *n, char hex[8]) {
  const fl_diff_node_t *dn = fl__row_diff(d, n);
  fl_change_t change = dn ? dn->change : FL_CHANGE_SAME;
  if (change == FL_CHANGE_SAME || change == FL_CHANGE_NEW) {
    snprintf(hex, 8, "%s", change == FL_CHANGE_NEW ? FL__DIFF_NEW_COLOR : FL__DIFF_SAME_COLOR);
    return;
  }
  double max = fl_diff_max_delta(d);
  double size = max > 0 ? fmin(1, fabs(dn->delta) / max) : 0;
  double tint = FL__DIFF_MIN_TINT + (1 - FL__DIFF_MIN_TINT) * size;
  const uint8_t *full = change == FL_CHANGE_GREW ? grew_rgb : shrank_rgb;
  unsigned c[3];
  for (int i = 0; i < 3; i++) c[i] = (unsigned)lround(255 * (1 - tint) + full[i] * tint);
  snprintf(hex, 8, "#%02x%02x%02x", c[0] & 0xff, c[1] & 0xff, c[2] & 0xff);
}

const char *fl__drawn_name(const fl_diff_t *d) {
  return fl_diff_options(d)->negate ? "baseline" : "target";
}

const char *fl__other_name(const fl_diff_t *d) {
  return fl_diff_options(d)->negate ? "target" : "baseline";
}

const char *fl__diff_legend_title(const fl_diff_t *d) {
  return fl_diff_options(d)->negate ? "baseline \xe2\x88\x92 target (baseline layout)"
                                    : "target \xe2\x88\x92 baseline";
}

void fl__diff_legend(const fl_diff_t *d, fl__legend_entry_t out[FL__N_CHANGES]) {
  bool negate = fl_diff_options(d)->negate;
  bool noise = fl_diff_options(d)->noise > 0;
  out[0] = (fl__legend_entry_t){FL_CHANGE_GREW, "grew", FL__DIFF_GREW_COLOR};
  out[1] = (fl__legend_entry_t){FL_CHANGE_SHRANK, "shrank", FL__DIFF_SHRANK_COLOR};
  out[2] = (fl__legend_entry_t){FL_CHANGE_SAME, noise ? "same (within noise)" : "same",
                                FL__DIFF_SAME_COLOR};
  out[3] = (fl__legend_entry_t){FL_CHANGE_NEW, negate ? "new (only in the baseline)" : "new",
                                FL__DIFF_NEW_COLOR};
}

void fl__diff_summary(const fl_diff_t *d, const fl__rows_t *r, char *out, size_t size) {
  const fl_tree_t *t = fl_diff_tree(d);
  size_t by_change[FL__N_CHANGES] = {0};
  size_t n = r ? r->n : fl_tree_n_nodes(t);
  for (size_t i = 0; i < n; i++) {
    const fl_diff_node_t *dn = r ? fl__row_diff(d, r->rows[i]) : fl_diff_node(d, (uint32_t)i);
    if (dn && (unsigned)dn->change < FL__N_CHANGES) by_change[dn->change]++;
  }
  const fl_vanished_t *vanished;
  size_t n_vanished = fl_diff_vanished(d, &vanished);
  char grew[32], shrank[32], added[32], gone[32];
  fl__thousands(by_change[FL_CHANGE_GREW], grew);
  fl__thousands(by_change[FL_CHANGE_SHRANK], shrank);
  fl__thousands(by_change[FL_CHANGE_NEW], added);
  fl__thousands(n_vanished, gone);
  snprintf(out, size, "grew: %s frame%s, shrank: %s, new: %s, vanished: %s; %.3g%% of the %s %s",
           grew, by_change[FL_CHANGE_GREW] == 1 ? "" : "s", shrank, added, gone,
           100 * fl_diff_neutral_share(d), fl__drawn_name(d),
           fl_diff_options(d)->noise > 0 ? "within noise" : "unchanged");
}

const char *fl__vanished_header(const fl_diff_t *d) {
  return fl_diff_options(d)->negate ? "Only in the target (not drawn):"
                                    : "Vanished (in the baseline only):";
}

double fl__other_total(const fl_diff_t *d) {
  const fl_diff_node_t *root = fl_diff_node(d, 0);
  return root && root->has_base ? root->base : 0;
}

void fl__vanished_line(const fl_diff_t *d, const fl_vanished_t *v, char *out, size_t size) {
  const fl_frame_t *f = &v->node->frame;
  char where[300] = "", count[48];
  if (f->file && f->line > 0)
    snprintf(where, sizeof where, "  %s:%d", f->file, f->line);
  else if (f->file || f->module)
    snprintf(where, sizeof where, "  %s", f->file ? f->file : f->module);
  fl__amount(v->count, false, count);
  double total = fl__other_total(d);
  snprintf(out, size, "%s%s  \xe2\x80\x94 %s %s %s (%.3g%%)", f->func ? f->func : "[unknown]",
           where, fl__other_name(d), count, fl__unit_for(fl_diff_tree(d), v->count),
           total > 0 ? 100 * v->count / total : 0);
}

void fl__budget_refused(const fl_budget_t *b, const fl_tree_t *t, const char *what, char *err,
                        size_t err_size) {
  const char *source = fl_profile_info_const(fl_tree_profile(t))->source;
  char subject[300];
  snprintf(subject, sizeof subject, "%s%s%s", what, *source ? " of " : "", source);
  fl_budget_message(b, subject, err, err_size);
}

/* ---- legends ---- */

/* A legend swatch and its label at x, on the line whose baseline is y;
 * returns the x of the next one. */
double fl__svg_swatch(fl__buf_t *b, double x, double y, const char *color, const char *label) {
  fl__buf_printf(b, "<rect x='%g' y='%g' width='10' height='10' fill='%s'/>", x, y - 9, color);
  fl__buf_printf(b, "<text x='%g' y='%g'>", x + 14, y);
  fl__svg_text(b, label);
  fl__buf_puts(b, "</text>\n");
  return x + 14 + 6.5 * (double)fl__utf8_chars(label) + 16;
}

void fl__svg_kinds_legend(fl__buf_t *b, unsigned kinds, double y) {
  double x = FL__SVG_MARGIN;
  for (int k = 0; k < FL__N_KINDS; k++)
    if (kinds & (1u << k))
      x = fl__svg_swatch(b, x, y, fl__kind_color((fl__kind_t)k), fl__kind_label((fl__kind_t)k));
}

json_t *fl__vl_kinds_legend(unsigned kinds) {
  json_t *domain = json_array(), *range = json_array();
  for (int k = 0; k < FL__N_KINDS; k++) {
    if (!(kinds & (1u << k))) continue;
    json_array_append_new(domain, json_string(fl__kind_label((fl__kind_t)k)));
    json_array_append_new(range, json_string(fl__kind_color((fl__kind_t)k)));
  }
  return fl__vl_legend_layer(
      "kind", domain, range,
      fl__nonnull(json_pack("{s:n,s:s,s:s,s:s}", "title", "orient", "bottom", "direction",
                            "horizontal", "symbolType", "square")));
}

json_t *fl__vl_legend_layer(const char *field, json_t *domain, json_t *range, json_t *legend) {
  // clang-format off
  return fl__nonnull(json_pack(
      "{s:s,s:[{s:s}],s:{s:s,s:i},s:{s:{s:s,s:s,s:{s:o,s:o},s:o}}}",
      "name", "legend",
      "transform", "filter", "false",
      "mark", "type", "square", "opacity", 1,
      "encoding", "color", "field", field, "type", "nominal",
                           "scale", "domain", domain, "range", range,
                           "legend", legend));
  // clang-format on
}

/* ---- Vega-Lite ---- */

json_t *fl__vl_title(const fl_view_opts_t *v, char notes[][FL__NOTE_SIZE], int n_notes) {
  const fl__theme_t *th = fl__theme_of(v);
  if (!(v->title && v->title[0]) && n_notes == 0) return NULL;
  /* Vega draws no title group, subtitle included, when the title text is
   * empty: without a title the first note takes its place, in the
   * subtitle's style. */
  bool titled = v->title && v->title[0];
  json_t *subtitle = fl__nonnull(json_array());
  for (int i = titled ? 0 : 1; i < n_notes; i++)
    json_array_append_new(subtitle, fl__json_text(notes[i]));
  // clang-format off
  return fl__nonnull(json_pack(
      "{s:o,s:o,s:s,s:s,s:s,s:i,s:s,s:i}",
      "text", fl__json_text(titled ? v->title : notes[0]),
      "subtitle", subtitle,
      "anchor", "start",
      "color", th->text,
      "subtitleColor", th->text,
      "fontSize", titled ? 14 : 11,
      "fontWeight", titled ? "bold" : "normal",
      "offset", v->icicle ? 10 : 2));
  // clang-format on
}

json_t *fl__vl_config(const fl_view_opts_t *v) {
  const fl__theme_t *th = fl__theme_of(v);
  // clang-format off
  return fl__nonnull(json_pack(
      "{s:{s:n},s:{s:s,s:s,s:s,s:s},s:{s:s,s:s}}",
      "view", "stroke",
      "axis", "labelColor", th->text, "titleColor", th->text, "domainColor", th->text,
              "tickColor", th->text,
      "legend", "labelColor", th->text, "titleColor", th->text));
  // clang-format on
}

int fl__view_notes(const fl_view_opts_t *v, const char *const *lines, size_t n_lines,
                   char out[FL__MAX_NOTES][FL__NOTE_SIZE]) {
  size_t cols = (size_t)((v->width > 0 ? v->width : 800) / 6.5);
  int n = 0;
  if (v->note && v->note[0]) wrap_note(v->note, cols, out, &n);
  for (size_t i = 0; i < n_lines; i++) wrap_note(lines[i], cols, out, &n);
  return n;
}

/* ---- SVG ---- */

/* s, escaped for XML text and attribute values. */
void fl__svg_escaped(fl__buf_t *b, const char *s, size_t n) {
  size_t start = 0;
  for (size_t i = 0; i < n; i++) {
    const char *rep = NULL;
    switch (s[i]) {
      case '&': rep = "&amp;"; break;
      case '<': rep = "&lt;"; break;
      case '>': rep = "&gt;"; break;
      case '\'': rep = "&apos;"; break;
      case '"': rep = "&quot;"; break;
      default: continue;
    }
    fl__buf_add(b, s + start, i - start);
    fl__buf_puts(b, rep);
    start = i + 1;
  }
  fl__buf_add(b, s + start, n - start);
}

/* s (any bytes; NULL as "") cleaned to valid UTF-8 without control
 * characters, then escaped. */
void fl__svg_text(fl__buf_t *b, const char *s) {
  char *clean = fl__clean_text(s, false);
  fl__svg_escaped(b, clean, strlen(clean));
  free(clean);
}

/* A pixel value with one decimal, without a trailing ".0". */
void fl__svg_px(fl__buf_t *b, double px) {
  char num[32];
  int n = snprintf(num, sizeof num, "%.1f", px);
  if (n > 2 && num[n - 1] == '0' && num[n - 2] == '.') n -= 2;
  if (n == 2 && num[0] == '-' && num[1] == '0') n = 1, num[0] = '0';
  fl__buf_add(b, num, (size_t)n);
}

/* The svg element, its background, then the title and the notes. No XML
 * declaration: the SVG is embedded in HTML by nbconvert and JupyterLab
 * (lxml refuses a declaration in text), and a standalone .svg is UTF-8 XML
 * without one. */
void fl__svg_opening(fl__buf_t *b, const fl__theme_t *th, const fl_view_opts_t *v,
                     fl__svg_kind_t kind, double full_w, double full_h, double title_y,
                     char notes[][FL__NOTE_SIZE], const double *note_y, int n_notes) {
  static const char *const kinds[] = {"graph", "chart", "table"};
  fl__buf_printf(b, "<svg xmlns='http://www.w3.org/2000/svg' data-cflame='%s'", kinds[kind]);
  if (kind != FL__SVG_TABLE) {
    fl__buf_printf(b, " data-plot='%g ", FL__SVG_MARGIN);
    fl__svg_px(b, full_w - FL__SVG_MARGIN);
    fl__buf_puts(b, "'");
  }
  fl__buf_puts(b, " width='");
  fl__svg_px(b, full_w);
  fl__buf_puts(b, "' height='");
  fl__svg_px(b, full_h);
  fl__buf_puts(b, "' viewBox='0 0 ");
  fl__svg_px(b, full_w);
  fl__buf_puts(b, " ");
  fl__svg_px(b, full_h);
  /* In a page the graph follows the width of its output area, down to
   * FL__SVG_MIN_SCALE of its own (labels stay legible; narrower pages scroll). */
  fl__buf_printf(b, "' style='max-width:100%%;height:auto;min-width:%dpx' font-family='%s'>\n",
                 (int)(FL__SVG_MIN_SCALE * full_w), FL__SVG_SANS);
  fl__buf_printf(b, "<rect width='100%%' height='100%%' fill='%s'/>\n", th->background);

  fl__buf_printf(b, "<g fill='%s'>\n", th->text);
  if (v->title && v->title[0]) {
    fl__buf_printf(b, "<text x='%g' y='%g' font-size='14' font-weight='bold'>", FL__SVG_MARGIN,
                   title_y);
    fl__svg_text(b, v->title);
    fl__buf_puts(b, "</text>\n");
  }
  for (int i = 0; i < n_notes; i++) {
    fl__buf_printf(b, "<text x='%g' y='%g' font-size='12'>", FL__SVG_MARGIN, note_y[i]);
    fl__svg_text(b, notes[i]);
    fl__buf_puts(b, "</text>\n");
  }
  fl__buf_puts(b, "</g>\n");
}
