/* SPDX-License-Identifier: BSD-3-Clause */
/* Every view of one profile tells the same numbers: property tests over
 * generated profiles (random trees, several threads, CPU and allocation
 * kinds, recursion, cell functions redefined in a later cell) and over
 * diffs of two of them. A profile that holds CPU and allocation samples
 * together is drawn with kind= each of them: every view and format shows
 * the samples of that kind and none of the other's. So is a wall-clock
 * profile, some of whose stacks end in a wait: kind=wall shows all of
 * them, kind=cpu those that ran, kind=offcpu the waits.
 *
 * What the samples say is computed here, from the samples themselves: per
 * function (name, file, module) the weight of the samples whose stack
 * holds it (once per sample, however often) and of those that end in it;
 * per source line the same; per thread the weight. Each view is then
 * drawn through the one output function (fl_output_render), as
 * %profsave, the command and `cflame record` draw it, and read back:
 *   flame, icicle and callers  the Vega-Lite spec's frames (and the SVG's frames
 *                      against them); per function by the same rule; and
 *                      with minwidth, the narrow frames merged one frame per
 *                      parent, none of their weight out of sight
 *   top                the spec's rows, and its text (the flat report's rows)
 *   sandwich           the spec's total and self of its function
 *   source             fl_lines, the rows view=source draws
 *   chart              fl_timeline's lanes, the bars view=chart draws
 *   folded, pprof,     written, read back, and counted again (speedscope
 *   speedscope, trace  and trace events per thread too)
 * A diff's views: fl_diff_functions (the top table's rows) against the
 * graph's frames (a row is new exactly when none of its frames has a
 * partner and the baseline has no such function, vanished likewise), the top
 * table's text and Vega-Lite against those rows, and a diff written as
 * folded stacks refused when read back.
 *
 * Seeds: CFLAME_AGREE_SEED=N runs that one; each failure names its seed. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle_read.h"
#include "cflame/fl_diff.h"
#include "cflame/fl_io.h"
#include "cflame/fl_lines.h"
#include "cflame/fl_options.h"
#include "cflame/fl_output.h"
#include "cflame/fl_render.h"
#include "cflame/fl_timeline.h"
#include "test.h"

static uint64_t seed_now; /* the seed being run, for failures */
static uint64_t rng_state;

static uint64_t next(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}

static unsigned pick(unsigned n) {
  return (unsigned)(next() % n);
}

#define AGREE(cond, ...)                                                          \
  do {                                                                            \
    test_checks++;                                                                \
    if (!(cond)) {                                                                \
      test_failures++;                                                            \
      fprintf(stderr, "%s:%d: seed %" PRIu64 ": ", __FILE__, __LINE__, seed_now); \
      fprintf(stderr, __VA_ARGS__);                                               \
      fputc('\n', stderr);                                                        \
    }                                                                             \
  } while (0)

/* ---- generated profiles ---- */

enum { MAX_FUNCS = 14, MAX_DEPTH = 9 };

/* A function of the generated program: a program's function (no file), a
 * cell's (file and module "cell[N]", a line per call site), a cell's own
 * statements, or the C library's. */
typedef struct gfunc {
  char name[24], cell[24];
  int kind; /* 0 program, 1 cell function, 2 cell statements, 3 libc */
} gfunc_t;

typedef struct gen {
  gfunc_t f[MAX_FUNCS];
  int n;
} gen_t;

static void gen_init(gen_t *g) {
  g->n = 6 + (int)pick(MAX_FUNCS - 6);
  for (int i = 0; i < g->n; i++) {
    gfunc_t *f = &g->f[i];
    f->kind = i == 0 ? 2 : (int)pick(4) == 3 ? 3 : (int)pick(2);
    snprintf(f->name, sizeof f->name, f->kind == 2 ? "top-level scope" : "fn%d", i);
    snprintf(f->cell, sizeof f->cell, "cell[%d]", f->kind == 2 ? 2 : 1 + (int)pick(2));
  }
}

/* g's functions for seed, the generator started from seed and a salt
 * of each check's own. */
static void gen_seeded(gen_t *g, uint64_t seed, uint64_t salt) {
  seed_now = seed;
  rng_state = seed * 0x9e3779b97f4a7c15ull + salt;
  gen_init(g);
}

static uint32_t frame_of(fl_profile_t *p, const gfunc_t *gf, int line) {
  fl_frame_t f = {.func = gf->name};
  if (gf->kind == 1 || gf->kind == 2) {
    f.file = f.module = gf->cell;
    f.line = line;
    f.flags = FL_FRAME_CELL | FL_FRAME_REPL | (gf->kind == 2 ? FL_FRAME_CELL_BODY : 0);
  } else if (gf->kind == 3) {
    f.module = "libc.so.6";
    f.flags = FL_FRAME_SYSTEM;
  } else {
    f.flags = FL_FRAME_CELL;
  }
  return fl_profile_frame_id(p, &f);
}

/* n_samples random stacks from the cell's statements down: each frame a
 * function of g (recursion: a function may come again), on up to three
 * threads, time stamps increasing. */
static void gen_samples(fl_profile_t *p, const gen_t *g, int n_stacks, fl_profile_kind_t kind) {
  bool allocs = fl_kind(kind)->allocs;
  uint64_t t = 1000000;
  for (int s = 0; s < n_stacks; s++) {
    uint32_t ids[MAX_DEPTH];
    size_t depth = 1 + pick(MAX_DEPTH - 1);
    ids[0] = frame_of(p, &g->f[0], 1 + (int)pick(3));
    int prev = 0;
    for (size_t d = 1; d < depth; d++) {
      int k = pick(4) == 0 ? prev : 1 + (int)pick((unsigned)g->n - 1); /* recursion */
      if (g->f[prev].kind == 3 && g->f[k].kind != 3) k = prev;         /* libc calls no cell code */
      ids[d] = frame_of(p, &g->f[k], 2 + (int)pick(3));
      prev = k;
    }
    if (kind == FL_PROFILE_WALL && pick(3) == 0) { /* a wait, as the collector's leaf */
      fl_frame_t wait = {.func = pick(2) ? "[off-CPU: sleep]" : "[off-CPU: runnable]",
                         .flags = FL_FRAME_OFFCPU};
      ids[depth++] = fl_profile_frame_id(p, &wait);
    }
    uint64_t w = allocs ? 16 * (1 + pick(64)) : 1 + pick(5);
    t += 1000000 * (1 + pick(3));
    fl_profile_add_sample_of(p, kind, ids, depth, w, allocs ? 1 : 0, 1 + (int)pick(3), t);
  }
}

static fl_profile_t *gen_profile(const gen_t *g, fl_profile_kind_t kind, int n_stacks) {
  fl_profile_t *p = fl_profile_new(kind);
  fl_profile_info(p)->interval_ns = 1000000;
  gen_samples(p, g, n_stacks, kind);
  return p;
}

/* The kind the views are drawn with (kind=) and the samples tallied; -1:
 * the profile's own. */
static int kind_shown = -1;

static fl_profile_kind_t shown_of(const fl_profile_t *p) {
  return kind_shown < 0 ? fl_profile_info_const(p)->kind : (fl_profile_kind_t)kind_shown;
}

/* Whether s counts in the kind shown: of a wall-clock profile every
 * sample is wall-clock time (check_wall holds each to its leaf as CPU or
 * off-CPU time); of any other kind its own. */
static bool counts(const fl_profile_t *p, const fl_sample_t *s) {
  fl_profile_kind_t shown = shown_of(p);
  if (shown == FL_PROFILE_WALL) return s->kind == FL_PROFILE_CPU || s->kind == FL_PROFILE_OFFCPU;
  return s->kind == shown;
}

/* ---- what the samples say ---- */

enum { MAX_KEYS = 256 };

/* Weights by key: a function ("name|file|module"), a line ("file:line"),
 * a thread ("#N"). */
typedef struct tally {
  char *key[MAX_KEYS];
  double total[MAX_KEYS], self[MAX_KEYS];
  int n;
  double all;
} tally_t;

static int tally_at(tally_t *t, const char *key) {
  for (int i = 0; i < t->n; i++)
    if (!strcmp(t->key[i], key)) return i;
  if (t->n == MAX_KEYS) abort();
  t->key[t->n] = strdup(key);
  t->total[t->n] = t->self[t->n] = 0;
  return t->n++;
}

static void tally_free(tally_t *t) {
  for (int i = 0; i < t->n; i++) free(t->key[i]);
  memset(t, 0, sizeof *t);
}

static void func_key(char *out, size_t size, const char *func, const char *file,
                     const char *module) {
  snprintf(out, size, "%s|%s|%s", func ? func : "", file ? file : "", module ? module : "");
}

/* Adds weight w to each distinct key of keys[0 .. n) once, and to the
 * last one's self. */
static void tally_stack(tally_t *t, char keys[][96], size_t n, double w) {
  int seen[MAX_DEPTH + 2], n_seen = 0;
  for (size_t i = 0; i < n; i++) {
    int k = tally_at(t, keys[i]);
    bool again = false;
    for (int j = 0; j < n_seen; j++) again |= seen[j] == k;
    if (!again) t->total[k] += w, seen[n_seen++] = k;
    if (i + 1 == n) t->self[k] += w;
  }
}

/* By function (by_name: by name alone), by line, and by thread. */
static void tally_profile(const fl_profile_t *p, bool by_name, tally_t *funcs, tally_t *lines,
                          tally_t *threads) {
  fl_sample_t s;
  for (size_t i = 0; i < fl_profile_n_samples(p); i++) {
    fl_profile_sample(p, i, &s);
    if (!counts(p, &s)) continue;
    char fk[MAX_DEPTH + 2][96], lk[MAX_DEPTH + 2][96], tk[1][96];
    size_t nl = 0;
    for (size_t d = 0; d < s.n; d++) {
      const fl_frame_t *f = fl_profile_frame(p, fl_profile_sample_frame(p, &s, d));
      if (by_name)
        snprintf(fk[d], sizeof fk[d], "%s", f->func);
      else
        func_key(fk[d], sizeof fk[d], f->func, f->file, f->module);
      if (f->file && f->line > 0) snprintf(lk[nl++], sizeof lk[0], "%s:%d", f->file, f->line);
    }
    funcs->all += (double)s.weight;
    tally_stack(funcs, fk, s.n, (double)s.weight);
    if (lines && nl) tally_stack(lines, lk, nl, (double)s.weight);
    snprintf(tk[0], sizeof tk[0], "#%d", s.thread);
    if (threads) tally_stack(threads, tk, 1, (double)s.weight);
  }
}

/* Whether a and b hold the same keys with the same weights (self too when
 * selfs), else says which differs. */
static void tally_same(const tally_t *want, const tally_t *got, bool selfs, const char *what) {
  AGREE(fabs(want->all - got->all) < 1e-6, "%s: total %.0f, the samples say %.0f", what, got->all,
        want->all);
  for (int i = 0; i < want->n; i++) {
    int j = 0;
    while (j < got->n && strcmp(got->key[j], want->key[i])) j++;
    if (j == got->n) {
      AGREE(want->total[i] == 0, "%s: no %s (the samples give it %.0f)", what, want->key[i],
            want->total[i]);
      continue;
    }
    AGREE(fabs(want->total[i] - got->total[j]) < 1e-6, "%s: %s total %.0f, the samples say %.0f",
          what, want->key[i], got->total[j], want->total[i]);
    if (selfs)
      AGREE(fabs(want->self[i] - got->self[j]) < 1e-6, "%s: %s self %.0f, the samples say %.0f",
            what, want->key[i], got->self[j], want->self[i]);
  }
  AGREE(got->n <= want->n, "%s: %d functions, the samples have %d", what, got->n, want->n);
}

/* ---- views, drawn as %profsave draws them ---- */

static const char *minwidth = "0"; /* what the views are drawn with */
static size_t merged_seen;         /* merged frames checked, over the seeds */

static void options(fl_options_t *o, const char *view, const char *focus) {
  char err[256];
  fl_options_init(o, FL_FRONT_NOTEBOOK);
  CHECK(fl_options_set(o, "C", "true", err, sizeof err) == 0);
  CHECK(fl_options_set(o, "minwidth", minwidth, err, sizeof err) == 0);
  CHECK(fl_options_set(o, "view", view, err, sizeof err) == 0);
  if (kind_shown >= 0)
    CHECK(fl_options_set(o, "kind", fl_kind((fl_profile_kind_t)kind_shown)->name, err,
                         sizeof err) == 0);
  if (focus) CHECK(fl_options_set(o, "focus", focus, err, sizeof err) == 0);
}

/* r's output in format; NULL after a failed check. */
static char *render(const fl_profile_t *p, const fl_profile_t *base, const char *view,
                    const char *focus, const char *format, size_t *len) {
  fl_options_t o;
  options(&o, view, focus);
  fl_output_req_t r = {.profile = p, .baseline = base, .opts = &o, .format = format};
  char err[512] = "";
  char *out = fl_output_render(&r, len, err, sizeof err);
  AGREE(out != NULL, "view=%s as %s: %s", view, format, err);
  fl_options_free(&o);
  return out;
}

static json_t *spec_of(const fl_profile_t *p, const char *view, const char *focus) {
  size_t len;
  char *text = render(p, NULL, view, focus, "vegalite", &len);
  json_t *spec = text ? json_loadb(text, len, 0, NULL) : NULL;
  free(text);
  return spec;
}

static const char *str(json_t *o, const char *k) {
  return json_string_value(json_object_get(o, k));
}

static double num(json_t *o, const char *k) {
  return json_number_value(json_object_get(o, k));
}

/* A graph's frames (rows of frames_of) per function: a frame counts in its
 * function's total unless an ancestor is of the same function; self is
 * its count less its children's (inverted: the root's children hold the
 * self weight of their function). */
static void tally_frames(json_t *rows, bool inverted, tally_t *t) {
  size_t n = json_array_size(rows);
  int *key = calloc(n + 1, sizeof *key);
  double *child = calloc(n + 1, sizeof *child);
  for (size_t i = 1; i < n; i++) {
    json_t *r = json_array_get(rows, i);
    char k[96];
    func_key(k, sizeof k, str(r, "func"), str(r, "file"), str(r, "module"));
    key[i] = tally_at(t, k);
    size_t parent = (size_t)json_integer_value(json_object_get(r, "parent"));
    if (parent) child[parent] += num(r, "count");
  }
  t->all = num(json_array_get(rows, 0), "count");
  for (size_t i = 1; i < n; i++) {
    json_t *r = json_array_get(rows, i);
    double count = num(r, "count");
    bool outer = true;
    for (size_t a = (size_t)json_integer_value(json_object_get(r, "parent")); a;
         a = (size_t)json_integer_value(json_object_get(json_array_get(rows, a), "parent")))
      outer &= key[a] != key[i];
    if (outer) t->total[key[i]] += count;
    if (!inverted) t->self[key[i]] += count - child[i];
    if (inverted && json_integer_value(json_object_get(r, "parent")) == 0) t->self[key[i]] += count;
  }
  free(key);
  free(child);
}

/* The first array named "values" under j whose rows have a "total". */
static json_t *table_rows(json_t *j) {
  if (json_is_object(j)) {
    json_t *v = json_object_get(j, "values");
    if (json_is_array(v) && json_object_get(json_array_get(v, 0), "total")) return v;
    const char *k;
    json_t *x;
    json_object_foreach(j, k, x) {
      json_t *found = table_rows(x);
      if (found) return found;
    }
  } else if (json_is_array(j)) {
    size_t i;
    json_t *x;
    json_array_foreach(j, i, x) {
      json_t *found = table_rows(x);
      if (found) return found;
    }
  }
  return NULL;
}

static void check_graph(const fl_profile_t *p, const tally_t *want, const char *view) {
  json_t *spec = spec_of(p, view, NULL);
  json_t *rows = spec ? frames_of(spec) : NULL;
  AGREE(rows != NULL, "view=%s has no frames", view);
  if (!rows) return;
  tally_t got = {0};
  tally_frames(rows, !strcmp(view, "callers"), &got);
  tally_same(want, &got, true, view);
  tally_free(&got);
  /* The SVG draws the frames the spec holds. */
  size_t len;
  char *svg = render(p, NULL, view, NULL, "svg", &len);
  const char *problem = svg ? svg_frames_problem(svg, spec) : "no SVG";
  AGREE(problem == NULL, "view=%s: the SVG and the spec differ: %s", view, problem);
  free(svg);
  json_decref(rows);
  json_decref(spec);
}

static void check_top(const fl_profile_t *p, const tally_t *want) {
  json_t *spec = spec_of(p, "top", NULL);
  json_t *rows = table_rows(spec);
  AGREE(rows != NULL, "view=top has no rows");
  tally_t got = {0};
  got.all = want->all;
  size_t i;
  json_t *r;
  json_array_foreach(rows, i, r) {
    char k[96];
    func_key(k, sizeof k, str(r, "func"), str(r, "file"), str(r, "module"));
    int at = tally_at(&got, k);
    got.total[at] += num(r, "total");
    got.self[at] += num(r, "self");
  }
  tally_same(want, &got, true, "top");
  tally_free(&got);
  json_decref(spec);
}

/* The top table as text (fl_text_top): the "By self:" rows, "Self Self%
 * Sum% Total Total% Function  File" (the file, else the module). */
static void check_top_text(const fl_profile_t *p, const tally_t *want) {
  size_t len;
  char *text = render(p, NULL, "top", NULL, "text", &len);
  char *at = text ? strstr(text, "By self:\n") : NULL;
  AGREE(at != NULL, "the top table's text has no rows by self");
  if (!at) {
    free(text);
    return;
  }
  tally_t got = {0};
  got.all = want->all;
  at = strchr(strchr(at, '\n') + 1, '\n') + 1; /* past the header */
  for (char *end; *at && *at != '\n'; at = end + 1) {
    end = strchrnul(at, '\n');
    double self, total;
    int rest = 0;
    AGREE(sscanf(at, "%lf %*s %*s %lf %*s %n", &self, &total, &rest) == 2 && rest > 0,
          "a top text row reads %.*s", (int)(end - at), at);
    /* The function whose name, then its place, the rest shows. */
    for (int i = 0; i < want->n; i++) {
      char func[96], *place = NULL, *module;
      snprintf(func, sizeof func, "%s", want->key[i]);
      place = strchr(func, '|');
      *place++ = '\0';
      module = strchr(place, '|');
      *module++ = '\0';
      if (!place[0]) place = module;
      const char *r = at + rest;
      size_t fl = strlen(func);
      if (strncmp(r, func, fl) != 0) continue;
      r += fl;
      while (*r == ' ') r++;
      size_t pl = strlen(place);
      if ((size_t)(end - r) != pl || strncmp(r, place, pl) != 0) continue;
      int k = tally_at(&got, want->key[i]);
      got.total[k] += total;
      got.self[k] += self;
    }
    if (!*end) break;
  }
  tally_same(want, &got, true, "top as text");
  tally_free(&got);
  free(text);
}

/* view=sandwich of each function whose name no other function shares. */
static void check_sandwich(const fl_profile_t *p, const tally_t *by_name) {
  for (int i = 0; i < by_name->n; i++) {
    if (by_name->total[i] == 0 || strchr(by_name->key[i], ' ')) continue;
    json_t *spec = spec_of(p, "sandwich", by_name->key[i]);
    json_t *meta = json_object_get(json_object_get(spec, "usermeta"), "cflame");
    AGREE(num(meta, "total") == by_name->total[i] && num(meta, "self") == by_name->self[i],
          "sandwich of %s: total %.0f self %.0f, the samples say %.0f and %.0f", by_name->key[i],
          num(meta, "total"), num(meta, "self"), by_name->total[i], by_name->self[i]);
    json_decref(spec);
  }
}

static fl_tree_t *tree_of(const fl_profile_t *p) {
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  o.C = true;
  o.minwidth = 0;
  o.kind = kind_shown;
  char err[256];
  fl_tree_t *t = fl_tree_build(p, &o, "all", err, sizeof err);
  AGREE(t != NULL, "tree: %s", err);
  return t;
}

static void check_lines_and_threads(const fl_profile_t *p, const tally_t *lines,
                                    const tally_t *threads) {
  fl_tree_t *t = tree_of(p);
  if (!t) return;
  fl_line_total_t *lt = NULL;
  size_t n = fl_lines_totals(t, 0, &lt);
  tally_t got = {0};
  got.all = lines->all;
  for (size_t i = 0; i < n; i++) {
    char k[96];
    snprintf(k, sizeof k, "%s:%d", lt[i].file, lt[i].line);
    int at = tally_at(&got, k);
    got.total[at] = (double)lt[i].total;
    got.self[at] = (double)lt[i].self;
  }
  /* A line's self: samples whose last frame with a line is it. */
  tally_same(lines, &got, false, "source");
  tally_free(&got);
  free(lt);
  char err[256];
  fl_timeline_t *tl = fl_timeline_build(t, err, sizeof err);
  AGREE(tl != NULL, "chart: %s", err);
  got.all = threads->all;
  for (size_t i = 0; tl && i < fl_timeline_n_lanes(tl); i++) {
    const fl_lane_t *lane = fl_timeline_lane(tl, i);
    char k[32];
    snprintf(k, sizeof k, "#%d", lane->thread);
    double sum = 0;
    for (size_t s = 0; s < lane->n_spans; s++) sum += (double)lane->spans[s].weight;
    AGREE(sum == (double)lane->weight, "chart: thread %d's bars add up to %.0f of its %" PRIu64,
          lane->thread, sum, lane->weight);
    got.total[tally_at(&got, k)] += sum;
  }
  tally_same(threads, &got, false, "chart");
  tally_free(&got);
  fl_timeline_destroy(&tl);
  fl_tree_destroy(&t);
}

/* Written as format and read back: the same total, and per function name
 * the same total and self. */
/* threads (NULL: not compared): the formats that keep them
 * (speedscope, trace events) read back with each thread's weight. */
static void check_round_trip(const fl_profile_t *p, const tally_t *by_name, const tally_t *threads,
                             const char *format) {
  size_t len;
  char *data = render(p, NULL, "flame", NULL, format, &len);
  if (!data) return;
  fl_profile_t *back = fl_profile_new(shown_of(p));
  fl_io_error_t e = {0};
  int rc = fl_read_profile(back, data, len, format, FL_INPUT_AUTO, NULL, &e);
  AGREE(rc == 0, "%s read back: %s", format, e.message);
  int shown = kind_shown;
  kind_shown = -1; /* what was read back is of one kind: all of it */
  if (rc == 0) {
    tally_t got = {0};
    tally_profile(back, true, &got, NULL, NULL);
    /* The reader names the input's root after it: not a function of p. */
    for (int i = 0; i < got.n; i++)
      if (!strcmp(got.key[i], format)) got.total[i] = 0;
    tally_same(by_name, &got, true, format);
    tally_free(&got);
    if (threads) {
      tally_t per_thread = {0};
      tally_profile(back, true, &got, NULL, &per_thread);
      per_thread.all = threads->all;
      tally_same(threads, &per_thread, false, format);
      tally_free(&got);
      tally_free(&per_thread);
    }
  }
  kind_shown = shown;
  fl_profile_destroy(&back);
  free(data);
}

/* With minwidth, the narrow frames are merged, one frame per parent: every
 * frame's weight is its self and its children's, merged ones included, so
 * no weight is lost from sight; a function's drawn frames never weigh more
 * than its samples; the merged frames are exactly the parents' narrow
 * ones; and the SVG draws what the spec holds. */
static void check_merged(const fl_profile_t *p, const tally_t *want, const char *view) {
  minwidth = "0.03";
  json_t *spec = spec_of(p, view, NULL);
  json_t *rows = spec ? frames_of(spec) : NULL;
  AGREE(rows != NULL, "view=%s minwidth=%s has no frames", view, minwidth);
  size_t n = rows ? json_array_size(rows) : 0, n_merged = 0;
  double *kids = calloc(n + 1, sizeof *kids);
  bool *merged_under = calloc(n + 1, sizeof *merged_under);
  /* Rows by id: merged rows sit among the tree's, their ids past its. */
  size_t *at = calloc(2 * n + 1, sizeof *at);
  for (size_t i = 0; i < n; i++) {
    size_t id = (size_t)json_integer_value(json_object_get(json_array_get(rows, i), "id"));
    if (id < 2 * n) at[id] = i;
  }
  for (size_t i = 1; i < n; i++) {
    json_t *r = json_array_get(rows, i);
    size_t parent = at[(size_t)json_integer_value(json_object_get(r, "parent"))];
    kids[parent] += num(r, "count");
    if (!(json_integer_value(json_object_get(r, "status")) & 4)) continue;
    n_merged++;
    AGREE(!merged_under[parent], "view=%s: two merged frames under row %zu", view, parent);
    merged_under[parent] = true;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *r = json_array_get(rows, i);
    if (json_integer_value(json_object_get(r, "status")) & 4) continue;
    AGREE(fabs(num(r, "count") - num(r, "self") - kids[i]) < 1e-6,
          "view=%s: %s weighs %g, its self and children %g: narrow frames lost from sight", view,
          str(r, "func"), num(r, "count"), num(r, "self") + kids[i]);
  }
  /* Each function's drawn frames (the merged left out) weigh at most its samples. */
  json_t *plain = json_array();
  for (size_t i = 0; i < n; i++) {
    json_t *r = json_array_get(rows, i);
    if (!(json_integer_value(json_object_get(r, "status")) & 4)) json_array_append(plain, r);
  }
  tally_t got = {0};
  tally_frames(plain, !strcmp(view, "callers"), &got);
  for (int k = 0; k < got.n; k++) {
    double truth = 0;
    for (int w = 0; w < want->n; w++)
      if (!strcmp(want->key[w], got.key[k])) truth = want->total[w];
    AGREE(got.total[k] <= truth + 1e-6, "view=%s: %s drawn as %g of %g", view, got.key[k],
          got.total[k], truth);
  }
  tally_free(&got);
  json_decref(plain);
  size_t len;
  char *svg = render(p, NULL, view, NULL, "svg", &len);
  const char *problem = svg ? svg_frames_problem(svg, spec) : "no SVG";
  AGREE(problem == NULL, "view=%s minwidth: the SVG and the spec differ: %s", view, problem);
  merged_seen += n_merged;
  size_t in_svg = 0;
  for (const char *at = svg; at && (at = strstr(at, " narrow frame")); at++)
    in_svg += at[13] == '\n' || (at[13] == 's' && at[14] == '\n');
  AGREE(!svg || in_svg == n_merged, "view=%s: the SVG has %zu merged frames, the spec %zu", view,
        in_svg, n_merged);
  free(svg);
  free(kids);
  free(at);
  free(merged_under);
  json_decref(rows);
  json_decref(spec);
  minwidth = "0";
}

/* Every view of p's samples of the kind shown agrees with them. */
static void check_views(const fl_profile_t *p) {
  fl_profile_kind_t kind = shown_of(p);
  tally_t funcs = {0}, by_name = {0}, lines = {0}, threads = {0};
  tally_profile(p, false, &funcs, &lines, &threads);
  tally_profile(p, true, &by_name, NULL, NULL);
  lines.all = threads.all = funcs.all;
  check_graph(p, &funcs, "flame");
  check_graph(p, &funcs, "icicle");
  check_graph(p, &funcs, "callers");
  check_merged(p, &funcs, "flame");
  check_merged(p, &funcs, "icicle");
  check_merged(p, &funcs, "callers");
  check_top(p, &funcs);
  if (!fl_kind(kind)->bytes) check_top_text(p, &funcs); /* bytes print rounded (KiB) */
  check_sandwich(p, &by_name);
  check_lines_and_threads(p, &lines, &threads);
  check_round_trip(p, &by_name, NULL, "folded");
  check_round_trip(p, &by_name, NULL, "pprof");
  check_round_trip(p, &by_name, &threads, "speedscope");
  check_round_trip(p, &by_name, &threads, "trace");
  tally_free(&funcs);
  tally_free(&by_name);
  tally_free(&lines);
  tally_free(&threads);
}

/* A profile of kind; with other, it holds samples of that kind too
 * (of other stacks), and is checked as each kind. */
static void check_profile(uint64_t seed, fl_profile_kind_t kind, int other) {
  gen_t g;
  gen_seeded(&g, seed, 1);
  fl_profile_t *p = gen_profile(&g, kind, 40 + (int)pick(160));
  if (other < 0) {
    check_views(p);
  } else {
    gen_samples(p, &g, 40 + (int)pick(160), (fl_profile_kind_t)other);
    check_views(p); /* its main kind */
    kind_shown = other;
    check_views(p);
    kind_shown = -1;
  }
  fl_profile_destroy(&p);
}

/* A wall-clock profile: each sample whose leaf is a wait is off-CPU
 * time, each other CPU time, and it is checked as wall-clock time (all of
 * them), CPU time and off-CPU time. */
static void check_wall(uint64_t seed) {
  gen_t g;
  gen_seeded(&g, seed, 3);
  fl_profile_t *p = gen_profile(&g, FL_PROFILE_WALL, 40 + (int)pick(160));
  fl_sample_t s;
  for (size_t i = 0; i < fl_profile_n_samples(p); i++) {
    fl_profile_sample(p, i, &s);
    const fl_frame_t *leaf = fl_profile_frame(p, fl_profile_sample_frame(p, &s, s.n - 1));
    bool wait = !strncmp(leaf->func, "[off-CPU: ", 10);
    AGREE(s.kind == (wait ? FL_PROFILE_OFFCPU : FL_PROFILE_CPU), "sample %zu ending in %s is %s", i,
          leaf->func, fl_kind(s.kind)->name);
  }
  const fl_profile_kind_t shown[] = {FL_PROFILE_WALL, FL_PROFILE_CPU, FL_PROFILE_OFFCPU};
  for (size_t k = 0; k < 3; k++) {
    kind_shown = (int)shown[k];
    check_views(p);
  }
  kind_shown = -1;
  fl_profile_destroy(&p);
}

/* ---- diffs ---- */

/* Whether node n of t, or an ancestor, is one of the vanished frames. */
static bool under_vanished(const fl_node_t *n, const fl_vanished_t *v, size_t nv) {
  for (; n; n = n->parent)
    for (size_t i = 0; i < nv; i++)
      if (v[i].node == n) return true;
  return false;
}

static bool same_function(const fl_frame_t *a, const fl_frame_t *b) {
  char ka[96], kb[96];
  func_key(ka, sizeof ka, a->func, a->file, a->module);
  func_key(kb, sizeof kb, b->func, b->file, b->module);
  return !strcmp(ka, kb);
}

/* Per function of tree t: whether any of its frames has a partner. */
static bool any_paired(const fl_diff_t *d, const fl_tree_t *t, bool drawn, const fl_frame_t *f,
                       const fl_vanished_t *v, size_t nv) {
  for (size_t i = 1; i < fl_tree_n_nodes(t); i++) {
    const fl_node_t *n = fl_tree_node(t, i);
    if (!same_function(&n->frame, f)) continue;
    if (drawn ? fl_diff_node(d, n->id)->has_base : !under_vanished(n, v, nv)) return true;
  }
  return false;
}

/* Whether tree t has a frame of function f. */
static bool in_tree(const fl_tree_t *t, const fl_frame_t *f) {
  for (size_t i = 1; i < fl_tree_n_nodes(t); i++)
    if (same_function(&fl_tree_node(t, i)->frame, f)) return true;
  return false;
}

/* A row of fl_diff_functions against the graph: new exactly when the
 * graph pairs no frame of it and the baseline has no such function;
 * vanished likewise the other way round. */
static void check_diff_rows(const fl_diff_t *d) {
  const fl_diff_func_t *rows;
  size_t n = fl_diff_functions(d, &rows);
  const fl_vanished_t *v;
  size_t nv = fl_diff_vanished(d, &v);
  const fl_tree_t *t = fl_diff_tree(d), *o = fl_diff_other_tree(d);
  double self = 0, base_self = 0;
  for (size_t i = 0; i < n; i++) {
    const fl_diff_func_t *r = &rows[i];
    self += r->self;
    base_self += r->base_self;
    if (r->change == FL_CHANGE_VANISHED) {
      AGREE(!any_paired(d, o, false, r->frame, v, nv) && !in_tree(t, r->frame),
            "%s (%s) is vanished in the table, but the graph pairs or draws it", r->frame->func,
            r->frame->module);
    } else {
      bool met = any_paired(d, t, true, r->frame, v, nv) || in_tree(o, r->frame);
      AGREE((r->change == FL_CHANGE_NEW) == !met,
            "%s (%s) is %s in the table, the graph pairs %s of its frames", r->frame->func,
            r->frame->module, r->change == FL_CHANGE_NEW ? "new" : "not new",
            r->change == FL_CHANGE_NEW ? "some" : "none");
    }
  }
  /* Every frame's function has a row; a function with no partner is new. */
  for (size_t i = 1; i < fl_tree_n_nodes(t); i++) {
    const fl_frame_t *f = &fl_tree_node(t, i)->frame;
    if (any_paired(d, t, true, f, v, nv) || in_tree(o, f)) continue;
    bool listed = false;
    for (size_t k = 0; k < n && !listed; k++)
      listed = rows[k].change == FL_CHANGE_NEW && same_function(rows[k].frame, f);
    AGREE(listed, "%s (%s) has no partner in the graph and is not new in the table", f->func,
          f->module);
  }
  AGREE(fabs(self - (double)fl_tree_root(t)->count) < 1e-6,
        "the table's self weights add up to %.0f of %" PRIu64, self, fl_tree_root(t)->count);
  double k = fl_diff_factor(d), other = k * (double)fl_tree_root(o)->count;
  AGREE(fabs(base_self - other) < 1e-6 * (1 + other),
        "the table's baseline self weights add up to %.3f of %.3f", base_self, other);
}

/* The top table's text and Vega-Lite: the rows fl_diff_functions gives,
 * each function once, with its change. */
static void check_diff_table(const fl_profile_t *target, const fl_profile_t *base,
                             const fl_diff_t *d) {
  const fl_diff_func_t *rows;
  size_t n = fl_diff_functions(d, &rows);
  size_t len;
  char *text = render(target, base, "top", NULL, "text", &len);
  char *vl = render(target, base, "top", NULL, "vegalite", &len);
  json_t *spec = vl ? json_loadb(vl, len, 0, NULL) : NULL;
  json_t *vrows = table_rows(spec);
  AGREE(json_array_size(vrows) == (n < 50 ? n : 50), "the table has %zu rows of %zu",
        json_array_size(vrows), n);
  size_t i;
  json_t *r;
  json_array_foreach(vrows, i, r) {
    const char *func = str(r, "func"), *change = str(r, "change");
    bool found = false;
    for (size_t k = 0; k < n && !found; k++) {
      const char *name = rows[k].frame->func;
      const char *want = rows[k].change == FL_CHANGE_NEW        ? "new"
                         : rows[k].change == FL_CHANGE_VANISHED ? "vanished"
                         : rows[k].change == FL_CHANGE_GREW     ? "grew"
                         : rows[k].change == FL_CHANGE_SHRANK   ? "shrank"
                                                                : "same";
      found = !strcmp(name, func) && !strcmp(change, want) &&
              fabs(num(r, "delta") - rows[k].delta) < 0.01 &&
              !strcmp(str(r, "file") ? str(r, "file") : "",
                      rows[k].frame->file ? rows[k].frame->file : "");
    }
    AGREE(found, "the Vega-Lite table's %s (%s, %+.2f) is no row of the diff", func, change,
          num(r, "delta"));
    /* The text shows the same row. */
    char *line = NULL, want[128];
    snprintf(want, sizeof want, " %-8s  %s", change, func);
    for (char *l = text; l && !line; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
      char *end = strchr(l, '\n'), *at;
      at = memmem(l, end ? (size_t)(end - l) : strlen(l), want, strlen(want));
      if (at && (at[strlen(want)] == ' ' || at[strlen(want)] == '\n' || !at[strlen(want)]))
        line = l;
    }
    AGREE(line != NULL, "the text table has no row %s %s", change, func);
  }
  json_decref(spec);
  free(vl);
  free(text);
}

/* A diff written as folded stacks is refused when read as a profile. */
static void check_diff_folded(const fl_profile_t *target, const fl_profile_t *base) {
  size_t len;
  char *data = render(target, base, "flame", NULL, "folded", &len);
  if (!data) return;
  fl_profile_t *back = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t e = {0};
  AGREE(fl_read_profile(back, data, len, "d.folded", FL_INPUT_AUTO, NULL, &e) < 0,
        "a diff saved as folded stacks read back as a profile");
  AGREE(fl_read_profile(back, data, len, "d.folded", FL_INPUT_FOLDED, NULL, &e) < 0,
        "a diff saved as folded stacks read back as folded stacks");
  AGREE(strstr(e.message, "diff") != NULL, "reading a saved diff says: %s", e.message);
  fl_profile_destroy(&back);
  free(data);
}

/* A diff written as speedscope holds the target and the baseline, each
 * weighing its whole profile, and is refused when read as one profile. */
static void check_diff_speedscope(const fl_profile_t *target, const fl_profile_t *base) {
  size_t len;
  char *data = render(target, base, "flame", NULL, "speedscope", &len);
  if (!data) return;
  json_t *doc = json_loadb(data, len, 0, NULL), *profiles = json_object_get(doc, "profiles");
  AGREE(json_array_size(profiles) == 2, "a diff as speedscope holds %zu profiles",
        json_array_size(profiles));
  const fl_profile_t *side[2] = {target, base};
  const char *names[2] = {"target", "baseline"};
  for (size_t k = 0; k < 2 && json_array_size(profiles) == 2; k++) {
    json_t *prof = json_array_get(profiles, k), *w;
    size_t i;
    uint64_t sum = 0;
    json_array_foreach(json_object_get(prof, "weights"), i, w) sum +=
        (uint64_t)json_integer_value(w);
    uint64_t want =
        fl_profile_info_const(side[k])->total_weight * fl_profile_info_const(side[k])->interval_ns;
    AGREE(!strcmp(str(prof, "name"), names[k]) && sum == want,
          "a diff's speedscope profile %zu is %s weighing %" PRIu64 " ns, not %s's %" PRIu64, k,
          str(prof, "name"), sum, names[k], want);
  }
  json_decref(doc);
  fl_profile_t *back = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t e = {0};
  AGREE(fl_read_profile(back, data, len, "d.speedscope.json", FL_INPUT_AUTO, NULL, &e) < 0 &&
            strstr(e.message, "diff") != NULL,
        "a diff saved as speedscope read back as a profile: %s", e.message);
  fl_profile_destroy(&back);
  free(data);
}

static void check_diff(uint64_t seed) {
  gen_t g;
  gen_seeded(&g, seed, 7);
  fl_profile_t *base = gen_profile(&g, FL_PROFILE_CPU, 60 + (int)pick(200));
  /* The target: some functions redefined in a later cell, one renamed. */
  for (int i = 1; i < g.n; i++)
    if (g.f[i].kind == 1 && pick(2)) snprintf(g.f[i].cell, sizeof g.f[i].cell, "cell[%d]", 4 + i);
  g.f[0].cell[5] = '5'; /* the statements of another cell */
  if (pick(2)) memcpy(g.f[g.n - 1].name, "fresh", 6);
  fl_profile_t *target = gen_profile(&g, FL_PROFILE_CPU, 60 + (int)pick(200));
  fl_tree_opts_t to;
  fl_tree_opts_init(&to);
  to.C = true;
  to.minwidth = 0;
  fl_diff_opts_t o;
  fl_diff_opts_init(&o);
  char err[256];
  for (int negate = 0; negate < 2; negate++) {
    o.negate = negate;
    fl_diff_t *d = fl_diff_build(target, base, &to, &o, "all", err, sizeof err);
    AGREE(d != NULL, "diff: %s", err);
    if (d) check_diff_rows(d);
    fl_diff_destroy(&d);
  }
  fl_diff_t *d = fl_diff_build(target, base, &to, NULL, "all", err, sizeof err);
  if (d) check_diff_table(target, base, d);
  fl_diff_destroy(&d);
  check_diff_folded(target, base);
  check_diff_speedscope(target, base);
  fl_profile_destroy(&base);
  fl_profile_destroy(&target);
}

int main(void) {
  const char *one = getenv("CFLAME_AGREE_SEED");
  uint64_t first = one ? strtoull(one, NULL, 10) : 1, last = one ? first : 40;
  for (uint64_t seed = first; seed <= last; seed++) {
    fl_profile_kind_t kind = seed % 3 ? FL_PROFILE_CPU : FL_PROFILE_ALLOC_BYTES;
    int other = kind == FL_PROFILE_CPU ? FL_PROFILE_ALLOC_BYTES : FL_PROFILE_CPU;
    check_profile(seed, kind, seed % 2 ? other : -1);
    if (seed % 4 == 0) check_wall(seed);
    check_diff(seed);
  }
  printf("seeds %" PRIu64 "..%" PRIu64 ": %zu merged frames\n", first, last, merged_seen);
  if (!one) CHECK(merged_seen > 0); /* the profiles have narrow frames */
  return TEST_DONE();
}
