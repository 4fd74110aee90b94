/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests fl_diff on hand-made profiles with known answers: matching (renamed
 * cell functions, redefinitions in another cell, moved and inserted lines,
 * recursion), new and vanished frames, self and total deltas, scaling
 * (intervals, normalize), noise, negate, minwidth, refusal of a CPU profile
 * against an allocation profile, ProfileVega's f1/f2 example, the shares
 * that grew (the CI gate's), and self-diffs (exact, and of two
 * Poisson-perturbed copies). */
#define _GNU_SOURCE
#include "cflame/fl_diff.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_render.h"
#include "test.h"
#include "fl__common.h"

/* ---- helpers ---- */

#define CHECK_NEAR(got, want)                                                                  \
  do {                                                                                         \
    double g_ = (got), w_ = (want);                                                            \
    test_checks++;                                                                             \
    if (!(fabs(g_ - w_) <= 1e-6 * (1 + fabs(w_)))) {                                           \
      test_failures++;                                                                         \
      fprintf(stderr, "%s:%d: %s is %.9g, expected %.9g\n", __FILE__, __LINE__, #got, g_, w_); \
    }                                                                                          \
  } while (0)

/* Adds a sample of weight w whose stack is spec, root first, frames split by
 * ';'. A frame is "func", "func:line" or "func@N:line" (cell code of cell N,
 * default 1: file and module "cell[N]"), "^func..." (the same, as a cell's
 * own statements), "~func" (libc), or "!func" (a program's code read from
 * a file, as folded stacks and `cflame record` give it: no location). */
static void add(fl_profile_t *p, uint64_t w, const char *spec) {
  uint32_t ids[64];
  size_t n = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *save = NULL, *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
    fl_frame_t f = {0};
    char cellname[32];
    if (tok[0] == '~') {
      f.func = tok + 1;
      f.module = "libc.so.6";
      f.flags = FL_FRAME_SYSTEM;
    } else if (tok[0] == '!') {
      f.func = tok + 1;
      f.flags = FL_FRAME_CELL;
    } else {
      bool body = tok[0] == '^';
      tok += body;
      int cell = 1;
      char *colon = strchr(tok, ':'), *at = strchr(tok, '@');
      if (colon) {
        f.line = atoi(colon + 1);
        *colon = '\0';
      }
      if (at) {
        cell = atoi(at + 1);
        *at = '\0';
      }
      snprintf(cellname, sizeof cellname, "cell[%d]", cell);
      f.func = tok;
      f.file = cellname;
      f.module = cellname;
      f.flags = FL_FRAME_CELL | FL_FRAME_REPL | (body ? FL_FRAME_CELL_BODY : 0);
    }
    ids[n++] = fl_profile_frame_id(p, &f);
  }
  bool alloc = fl_kind(fl_profile_info_const(p)->kind)->allocs;
  fl_profile_add_sample(p, ids, n, w, alloc ? 1 : 0, 0);
}

/* A profile's samples as a table, {weight, spec} as add() reads them,
 * ended by {0, NULL}. */
typedef struct sample_spec {
  uint64_t w;
  const char *stack;
} sample_spec_t;

static void add_all(fl_profile_t *p, const sample_spec_t *s) {
  for (; s->stack; s++) add(p, s->w, s->stack);
}

static fl_profile_t *cpu(uint64_t interval_ns) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = interval_ns;
  return p;
}

/* The node at path (funcs, or "func:line", split by ';', below the root),
 * or NULL. */
static const fl_node_t *at(const fl_tree_t *t, const char *path) {
  const fl_node_t *n = fl_tree_root(t);
  char buf[512];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *save = NULL, *tok = strtok_r(buf, ";", &save); tok && n;
       tok = strtok_r(NULL, ";", &save)) {
    int line = -1;
    char *colon = strchr(tok, ':');
    if (colon) {
      line = atoi(colon + 1);
      *colon = '\0';
    }
    const fl_node_t *next = NULL;
    for (size_t i = 0; i < n->n_children && !next; i++) {
      const fl_node_t *c = n->children[i];
      if (!strcmp(c->frame.func, tok) && (line < 0 || c->frame.line == line)) next = c;
    }
    n = next;
  }
  return n;
}

/* The diff of the drawn node at path; a failed check and an all-zero node
 * when there is none. */
static const fl_diff_node_t *dn(const fl_diff_t *d, const char *path) {
  static const fl_diff_node_t none = {0};
  const fl_node_t *n = at(fl_diff_tree(d), path);
  if (!n) {
    fprintf(stderr, "no drawn node at %s\n", path);
    CHECK(n != NULL);
    return &none;
  }
  return fl_diff_node(d, n->id);
}

/* One check of a diff: a field of the fl_diff_node_t of the drawn node at
 * path and the value it should have (exactly for the change and has_base,
 * nearly for the others), or a figure of the whole diff (path ""): its
 * scale, neutral share and max delta (exactly when 0 or 1: nothing scaled,
 * all or nothing neutral; nearly otherwise), and how many vanished frames
 * and notes it has. Tables of them end with {NULL}. */
typedef enum field {
  CHANGE,
  HAS_BASE,
  BASE,
  BASE_SELF,
  DELTA,
  Z,
  SCALE,
  NEUTRAL,
  MAX_DELTA,
  N_VANISHED,
  N_NOTES
} field_t;
typedef struct node_want {
  const char *path;
  field_t field;
  double want;
} node_want_t;

static size_t n_notes(const fl_diff_t *d);

/* Exactly when want is 0 or 1, nearly otherwise. */
static void check_figure(double got, double want) {
  if (want == 0 || want == 1)
    CHECK(got == want);
  else
    CHECK_NEAR(got, want);
}

static void check_nodes(const fl_diff_t *d, const node_want_t *w) {
  static const char *const names[] = {
      "change", "has_base",      "base",      "base_self",       "delta", "z",
      "scale",  "neutral share", "max delta", "vanished frames", "notes"};
  for (; w->path; w++) {
    int failures = test_failures;
    const fl_diff_node_t *x = w->field <= Z ? dn(d, w->path) : NULL;
    switch (w->field) {
      case CHANGE: CHECK_INT(x->change, (int)w->want); break;
      case HAS_BASE: CHECK_INT(x->has_base, (int)w->want); break;
      case BASE: CHECK_NEAR(x->base, w->want); break;
      case BASE_SELF: CHECK_NEAR(x->base_self, w->want); break;
      case DELTA: CHECK_NEAR(x->delta, w->want); break;
      case Z: CHECK_NEAR(x->z, w->want); break;
      case SCALE: check_figure(fl_diff_scale(d), w->want); break;
      case NEUTRAL: check_figure(fl_diff_neutral_share(d), w->want); break;
      case MAX_DELTA: check_figure(fl_diff_max_delta(d), w->want); break;
      case N_VANISHED:
        CHECK_INT(fl_diff_vanished(d, &(const fl_vanished_t *){NULL}), w->want);
        break;
      case N_NOTES: CHECK_INT(n_notes(d), w->want); break;
    }
    if (test_failures > failures)
      fprintf(stderr, "  (the %s of the node at \"%s\")\n", names[w->field], w->path);
  }
}

static fl_tree_opts_t topts(bool lines, double minwidth) {
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  o.lines = lines ? FL_LINES_ON : FL_LINES_OFF;
  o.minwidth = minwidth;
  return o;
}

static fl_diff_opts_t dopts(double noise) {
  fl_diff_opts_t o;
  fl_diff_opts_init(&o);
  o.noise = noise;
  return o;
}

static fl_diff_t *diff(const fl_profile_t *t, const fl_profile_t *b, const fl_tree_opts_t *to,
                       const fl_diff_opts_t *o) {
  char err[256] = "";
  fl_diff_t *d = fl_diff_build(t, b, to, o, "cell[9]", err, sizeof err);
  if (!d) {
    fprintf(stderr, "diff failed: %s\n", err);
    CHECK(d != NULL);
    exit(1);
  }
  return d;
}

static size_t n_notes(const fl_diff_t *d) {
  size_t n = 0;
  for (const char *const *s = fl_diff_notes(d); *s; s++) n++;
  return n;
}

/* What holds for every diff: one diff node per drawn node; new nodes have
 * no base; deltas by the options; max_delta is the largest |delta| of
 * frames that grew or shrank; vanished frames are of the other tree, have
 * no drawn descendants listed twice, come widest first, and their
 * parent_match is a drawn node. Returns the number of violations. */
static int diff_violations(const fl_diff_t *d) {
  int bad = 0;
  const fl_tree_t *t = fl_diff_tree(d), *o = fl_diff_other_tree(d);
  bool self = fl_diff_options(d)->delta == FL_DELTA_SELF;
  double max = 0;
  for (size_t i = 0; i < fl_tree_n_nodes(t); i++) {
    const fl_node_t *n = fl_tree_node(t, i);
    const fl_diff_node_t *x = fl_diff_node(d, (uint32_t)i);
    if (!x) {
      bad++;
      continue;
    }
    double v = (double)(self ? n->self : n->count), b = self ? x->base_self : x->base;
    if (x->has_base != (x->change != FL_CHANGE_NEW)) bad++;
    if (!x->has_base && (x->base != 0 || x->z != 0)) bad++;
    if (fabs(x->delta - (v - b)) > 1e-9 * (1 + fabs(v))) bad++;
    if (x->change == FL_CHANGE_GREW && !(x->delta > 0)) bad++;
    if (x->change == FL_CHANGE_SHRANK && !(x->delta < 0)) bad++;
    if ((x->change == FL_CHANGE_GREW || x->change == FL_CHANGE_SHRANK) && fabs(x->delta) > max)
      max = fabs(x->delta);
  }
  if (!fl_diff_node(d, 0)->has_base) bad++; /* the roots always match */
  if (fl_diff_node(d, (uint32_t)fl_tree_n_nodes(t)) != NULL) bad++;
  if (fabs(max - fl_diff_max_delta(d)) > 1e-9) bad++;
  const fl_vanished_t *v;
  size_t nv = fl_diff_vanished(d, &v);
  for (size_t i = 0; i < nv; i++) {
    if (fl_tree_node(o, v[i].node->id) != v[i].node) bad++;
    if (v[i].parent_match && fl_tree_node(t, v[i].parent_match->id) != v[i].parent_match) bad++;
    if (i && v[i].count > v[i - 1].count) bad++;
    for (size_t j = 0; j < nv; j++)
      for (const fl_node_t *a = v[j].node->parent; a; a = a->parent)
        if (j != i && a == v[i].node) bad++;
  }
  double share = fl_diff_neutral_share(d);
  if (!(share >= 0 && share <= 1 + 1e-12)) bad++;
  return bad;
}

static fl_diff_t *checked(fl_diff_t *d) {
  CHECK_INT(diff_violations(d), 0);
  return d;
}

static const fl_vanished_t *vanished(const fl_diff_t *d, size_t *n) {
  const fl_vanished_t *v;
  *n = fl_diff_vanished(d, &v);
  return v;
}

/* Whether one of d's notes contains text. */
static bool has_note(const fl_diff_t *d, const char *text) {
  for (const char *const *s = fl_diff_notes(d); *s; s++)
    if (strstr(*s, text)) return true;
  return false;
}

/* ---- runs: two profiles, options, and what their diff must give ---- */

/* A profile to build: its kind, sampling interval and samples. */
typedef struct profile_spec {
  fl_profile_kind_t kind;
  uint64_t interval_ns;
  sample_spec_t samples[8]; /* ended by {0, NULL} */
} profile_spec_t;

static fl_profile_t *build(const profile_spec_t *s) {
  fl_profile_t *p = fl_profile_new(s->kind);
  fl_profile_info(p)->interval_ns = s->interval_ns;
  add_all(p, s->samples);
  return p;
}

/* A vanished frame, in order: its function and, when not 0 or NULL, its
 * line, its count, and the drawn node it hangs under (a path; "-": none). */
typedef struct vanished_want {
  const char *func;
  int line;
  double count;
  const char *parent;
} vanished_want_t;

typedef struct diff_run diff_run_t;

/* One diff of target against base, with lines unless no_lines, minwidth,
 * recur=flat when recur_flat, and the diff options given (noise as
 * written), and what it must give: the wants (nodes, and the diff's own
 * figures), the first vanished frames (func NULL: not checked), notes
 * (note[i] exactly, note_has in some note). more, when set, checks what a
 * table does not say: the trees' shapes, the profiles drawn. */
struct diff_run {
  const char *what;
  const profile_spec_t *target, *base;
  bool no_lines, recur_flat;
  double minwidth, noise;
  bool negate, normalize, self;
  const char *root_prefix;
  node_want_t wants[14]; /* ended by {NULL} */
  vanished_want_t vanished[2];
  const char *note[2];
  const char *note_has;
  void (*more)(const fl_diff_t *d, const diff_run_t *r, const fl_profile_t *t,
               const fl_profile_t *b);
};

static void check_run(const diff_run_t *r) {
  fl_profile_t *t = build(r->target), *b = build(r->base);
  fl_tree_opts_t to = topts(!r->no_lines, r->minwidth);
  to.recur = r->recur_flat ? FL_RECUR_FLAT : FL_RECUR_OFF;
  fl_diff_opts_t o = dopts(r->noise);
  o.negate = r->negate;
  o.normalize = r->normalize;
  o.delta = r->self ? FL_DELTA_SELF : FL_DELTA_TOTAL;
  o.root_prefix = r->root_prefix;
  int failed = test_failures;
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  check_nodes(d, r->wants);
  size_t nv;
  const fl_vanished_t *v = vanished(d, &nv);
  for (size_t i = 0; i < 2 && r->vanished[i].func; i++) {
    const vanished_want_t *w = &r->vanished[i];
    if (i >= nv) {
      CHECK(i < nv);
      break;
    }
    CHECK_STR(v[i].node->frame.func, w->func);
    if (w->line) CHECK_INT(v[i].node->frame.line, w->line);
    if (w->count) CHECK_NEAR(v[i].count, w->count);
    if (w->parent)
      CHECK(v[i].parent_match == (strcmp(w->parent, "-") ? at(fl_diff_tree(d), w->parent) : NULL));
  }
  for (size_t i = 0; i < 2; i++)
    if (r->note[i]) CHECK_STR(fl_diff_notes(d)[i], r->note[i]);
  if (r->note_has) CHECK(has_note(d, r->note_has));
  if (r->more) r->more(d, r, t, b);
  if (test_failures != failed) fprintf(stderr, "  in the run \"%s\"\n", r->what);
  fl_diff_destroy(&d);
  fl_profile_destroy(&t);
  fl_profile_destroy(&b);
}

static void check_runs(const diff_run_t *runs, size_t n) {
  for (size_t i = 0; i < n; i++) check_run(&runs[i]);
}
#define CHECK_RUNS(runs) check_runs(runs, FL__ARRAY_SIZE(runs))

/* ---- a profile against itself ---- */

static fl_profile_t *mixed_profile(void) {
  fl_profile_t *p = cpu(1000000);
  add_all(p, (const sample_spec_t[]){{40, "top@2:1;f@1:3;g@1:8"},
                                     {25, "top@2:1;f@1:4"},
                                     {10, "top@2:1;h@1:12;~memcpy"},
                                     {5, "top@2:2"},
                                     {3, ""},
                                     {0, NULL}});
  return p;
}

static void test_self_diff(void) {
  fl_profile_t *p = mixed_profile();
  fl_tree_opts_t to = topts(true, 0.001);
  fl_diff_opts_t o;
  fl_diff_opts_init(&o);
  CHECK(!o.negate && !o.normalize && o.delta == FL_DELTA_TOTAL && o.noise == 2);
  for (int mode = 0; mode < 3; mode++) {
    o.negate = mode == 1;
    o.delta = mode == 2 ? FL_DELTA_SELF : FL_DELTA_TOTAL;
    fl_diff_t *d = checked(diff(p, p, &to, &o));
    const fl_tree_t *t = fl_diff_tree(d);
    CHECK_INT(fl_tree_n_nodes(t), 7);
    CHECK_INT(fl_tree_root(t)->count, 83);
    for (size_t i = 0; i < fl_tree_n_nodes(t); i++) {
      const fl_diff_node_t *x = fl_diff_node(d, (uint32_t)i);
      CHECK(x->has_base && x->change == FL_CHANGE_SAME && x->delta == 0 && x->z == 0);
      CHECK(x->base == (double)fl_tree_node(t, i)->count);
      CHECK(x->base_self == (double)fl_tree_node(t, i)->self);
    }
    size_t nv;
    vanished(d, &nv);
    CHECK_INT(nv, 0);
    CHECK(fl_diff_neutral_share(d) == 1);
    CHECK(fl_diff_max_delta(d) == 0);
    CHECK(fl_diff_scale(d) == 1);
    CHECK_INT(n_notes(d), 0);
    CHECK(fl_diff_options(d)->negate == o.negate);
    CHECK(fl_tree_profile(fl_diff_tree(d)) == p && fl_tree_profile(fl_diff_other_tree(d)) == p);
    fl_diff_destroy(&d);
    CHECK(d == NULL);
    fl_diff_destroy(&d);
  }
  /* NULL options are the defaults. */
  char err[128];
  fl_diff_t *d = fl_diff_build(p, p, NULL, NULL, NULL, err, sizeof err);
  CHECK(d != NULL);
  CHECK_STR(fl_tree_root(fl_diff_tree(d))->frame.func, "all");
  CHECK(fl_diff_options(d)->noise == 2);
  fl_diff_destroy(&d);
  fl_profile_destroy(&p);
}

/* ---- matching ---- */

/* f1 in cell 3 against f2 in cell 8, with the same kind of subtree; g1
 * against g2 with nothing in common. */
static const profile_spec_t renamed_base = {FL_PROFILE_CPU,
                                            1000000,
                                            {{100, "top@5:1;f1@3:2;work@3:10"},
                                             {10, "top@5:1;f1@3:2"},
                                             {30, "top@5:1;g1@3:20;~qsort;cmp@3:25"},
                                             {0, NULL}}};
static const profile_spec_t renamed_target = {FL_PROFILE_CPU,
                                              1000000,
                                              {{150, "top@9:1;f2@8:2;work@8:10"},
                                               {10, "top@9:1;f2@8:2"},
                                               {30, "top@9:1;g2@8:20;other@8:30"},
                                               {0, NULL}}};

static void test_renamed(void) {
  const diff_run_t runs[] = {
      {"renamed", &renamed_target, &renamed_base, .minwidth = 0.001, .noise = 2,
       .wants = {{"top;f2", HAS_BASE, 1},
                 {"top;f2", BASE, 110},
                 {"top;f2", BASE_SELF, 10},
                 {"top;f2", DELTA, 50},
                 {"top;f2", Z, 50 / sqrt(270)},
                 {"top;f2", CHANGE, FL_CHANGE_GREW},
                 {"top;f2;work", BASE, 100},
                 {"top;f2;work", CHANGE, FL_CHANGE_GREW},
                 {"top;g2", CHANGE, FL_CHANGE_NEW},
                 {"top;g2;other", CHANGE, FL_CHANGE_NEW},
                 {"top", BASE, 140},
                 {"top", CHANGE, FL_CHANGE_GREW},
                 {"", N_VANISHED, 1},
                 {NULL}},
       .vanished = {{"g1", 0, 30, "top"}}},
      /* without lines, the same */
      {"renamed, no lines", &renamed_target, &renamed_base, .no_lines = true, .minwidth = 0.001,
       .noise = 2,
       .wants =
           {{"top;f2", BASE, 110}, {"top;g2", CHANGE, FL_CHANGE_NEW}, {"", N_VANISHED, 1}, {NULL}}},
  };
  CHECK_RUNS(runs);
}

/* Two builds of one program, recorded under roots named after them (bt,
 * bt_slow): the only roots match whatever their names, with a note; several
 * roots match by name, or with root_prefix by the start of their names. */
static const profile_spec_t bt_base = {
    FL_PROFILE_CPU, 1000000, {{400, "!bt;!main;!work"}, {400, "!bt;!main;!parse"}, {0, NULL}}};
static const profile_spec_t bt_target = {
    FL_PROFILE_CPU,
    1000000,
    {{600, "!bt_slow;!main;!work"}, {200, "!bt_slow;!main;!parse"}, {0, NULL}}};
/* Two processes a side. */
static const profile_spec_t bt2_base = {FL_PROFILE_CPU,
                                        1000000,
                                        {{400, "!bt (pid 11);!main;!work"},
                                         {400, "!bt (pid 12);!main;!parse"},
                                         {100, "!sh;!main"},
                                         {0, NULL}}};
static const profile_spec_t bt2_target = {FL_PROFILE_CPU,
                                          1000000,
                                          {{600, "!bt_slow (pid 31);!main;!work"},
                                           {200, "!bt_slow (pid 32);!main;!parse"},
                                           {100, "!sh;!main"},
                                           {0, NULL}}};
/* A notebook's cell code: a single root pairs only with one whose subtree
 * agrees. */
static const profile_spec_t cellroot_base = {
    FL_PROFILE_CPU, 1000000, {{100, "f1@3:2;work@3:10"}, {0, NULL}}};
static const profile_spec_t cellroot_target = {
    FL_PROFILE_CPU, 1000000, {{100, "g1@4:2;~qsort"}, {0, NULL}}};

/* work grew from 40% to 60%; the program, from 0% to 100%, is not a frame
 * that grew. */
static void more_program_grown(const fl_diff_t *d, const diff_run_t *r, const fl_profile_t *t,
                               const fl_profile_t *b) {
  fl_grown_t *grown;
  size_t n_grown = fl_diff_grown(d, 0.05, &grown);
  CHECK_INT(n_grown, 1);
  if (n_grown) CHECK_STR(grown[0].node->frame.func, "work");
  free(grown);
}

static void test_program_roots(void) {
  const diff_run_t runs[] = {
      {"one program a side", &bt_target, &bt_base, .no_lines = true, .noise = 2,
       .wants = {{"bt_slow", BASE, 800},
                 {"bt_slow", CHANGE, FL_CHANGE_SAME},
                 {"bt_slow;main;work", BASE, 400},
                 {"bt_slow;main;work", CHANGE, FL_CHANGE_GREW},
                 {"bt_slow;main;parse", CHANGE, FL_CHANGE_SHRANK},
                 {"", N_VANISHED, 0},
                 {NULL}},
       .note_has = "each profile is one program: the target's bt_slow is compared with the "
                   "baseline's bt",
       .more = more_program_grown},
      /* negated, the same pairs, the names in their roles */
      {"one program a side, negated", &bt_target, &bt_base, .no_lines = true, .noise = 2,
       .negate = true, .wants = {{"bt;main;work", CHANGE, FL_CHANGE_SHRANK}, {NULL}},
       .note_has = "the target's bt_slow is compared with the baseline's bt"},
      /* two processes a side: by name they are new and vanished */
      {"two processes a side, by name", &bt2_target, &bt2_base, .no_lines = true, .noise = 2,
       .wants = {{"bt_slow (pid 31)", CHANGE, FL_CHANGE_NEW},
                 {"sh", CHANGE, FL_CHANGE_SAME},
                 {"", N_VANISHED, 2},
                 {"", N_NOTES, 0},
                 {NULL}}},
      /* by prefix they pair, in order */
      {"two processes a side, by prefix", &bt2_target, &bt2_base, .no_lines = true, .noise = 2,
       .root_prefix = "bt",
       .wants = {{"bt_slow (pid 31)", BASE, 400},
                 {"bt_slow (pid 31);main;work", CHANGE, FL_CHANGE_GREW},
                 {"bt_slow (pid 32);main;parse", BASE, 400},
                 {"sh", BASE, 100},
                 {"", N_VANISHED, 0},
                 {NULL}},
       .note_has = "roots whose names start with \"bt\" are compared with each other"},
      {"cell code roots", &cellroot_target, &cellroot_base, .no_lines = true, .noise = 2,
       .wants = {{"g1", CHANGE, FL_CHANGE_NEW}, {NULL}}},
  };
  CHECK_RUNS(runs);
}

/* f defined in cell 3 and redefined in cell 7 with its lines moved: with
 * lines on, it now sorts after its sibling h, and still matches. */
static const profile_spec_t redef_base = {
    FL_PROFILE_CPU, 1000000, {{50, "top@5:2;f@3:4;g@2:7"}, {40, "top@5:2;h@4:2"}, {0, NULL}}};
static const profile_spec_t redef_target = {
    FL_PROFILE_CPU, 1000000, {{80, "top@9:2;f@7:6;g@2:7"}, {40, "top@9:2;h@4:2"}, {0, NULL}}};

static void more_redefinition(const fl_diff_t *d, const diff_run_t *r, const fl_profile_t *t,
                              const fl_profile_t *b) {
  const fl_node_t *top = at(fl_diff_tree(d), "top");
  CHECK_INT(top->n_children, 2);
  if (!r->no_lines) CHECK_STR(top->children[0]->frame.func, "h");
  CHECK_STR(at(fl_diff_tree(d), "top;f")->frame.module, "cell[7]");
}

static void test_redefinition(void) {
  const diff_run_t run = {"redefinition",
                          &redef_target,
                          &redef_base,
                          .minwidth = 0.001,
                          .noise = 2,
                          .wants = {{"top;f", HAS_BASE, 1},
                                    {"top;f", BASE, 50},
                                    {"top;f", CHANGE, FL_CHANGE_GREW},
                                    {"top;f;g", BASE, 50},
                                    {"top;h", DELTA, 0},
                                    {"top;h", CHANGE, FL_CHANGE_SAME},
                                    {"", N_VANISHED, 0},
                                    {NULL}},
                          .more = more_redefinition};
  diff_run_t without_lines = run;
  without_lines.what = "redefinition, no lines";
  without_lines.no_lines = true;
  check_run(&run);
  check_run(&without_lines);
}

/* The table of a diff pairs what the graph pairs (issue 35's case): keep()
 * and redef() defined in cell 1, run by cell 2's statements as the
 * baseline; redef redefined in cell 3; cell 5 runs the same statements.
 * The graph compares redef with redef and cell 5's statements with cell
 * 2's; the top table must too: one row each, that shrank, and nothing new
 * or vanished (it listed "redef cell[3] +48 new" beside "redef cell[1]
 * -142 shrank"). */
static const sample_spec_t rerun_base[] = {
    {100, "^top-level scope@2:1;keep@1:2"}, {142, "^top-level scope@2:2;redef@1:6"}, {0, NULL}};
static const sample_spec_t rerun_target[] = {
    {96, "^top-level scope@5:1;keep@1:2"}, {48, "^top-level scope@5:2;redef@3:2"}, {0, NULL}};

/* The line of text that holds both needles, or NULL. */
static const char *line_with(const char *text, const char *a, const char *b) {
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    const char *end = strchr(l, '\n');
    size_t len = end ? (size_t)(end - l) : strlen(l);
    const char *x = memmem(l, len, a, strlen(a)), *y = memmem(l, len, b, strlen(b));
    if (x && y) return l;
  }
  return NULL;
}

/* The diff (noise 2, minwidth 0) of the CPU profiles of target's and
 * base's samples, into *t and *b. */
static fl_diff_t *diff_of_samples(const sample_spec_t *target, const sample_spec_t *base,
                                  bool lines, fl_profile_t **t, fl_profile_t **b) {
  *b = cpu(1000000);
  *t = cpu(1000000);
  add_all(*b, base);
  add_all(*t, target);
  fl_tree_opts_t to = topts(lines, 0);
  fl_diff_opts_t o = dopts(2);
  return checked(diff(*t, *b, &to, &o));
}

static void test_table_pairs_as_graph(void) {
  fl_profile_t *b, *t;
  fl_diff_t *d = diff_of_samples(rerun_target, rerun_base, true, &t, &b);
  CHECK_INT(dn(d, "top-level scope:2;redef")->change, FL_CHANGE_SHRANK);
  CHECK_INT(dn(d, "top-level scope:2")->change, FL_CHANGE_SHRANK);
  CHECK_INT(dn(d, "top-level scope:1;keep")->change, FL_CHANGE_SAME);
  size_t nv;
  vanished(d, &nv);
  CHECK_INT(nv, 0);
  char *text = fl_text_top_diff(d, NULL);
  CHECK(text != NULL);
  if (!text) return;
  CHECK(strstr(text, " new ") == NULL && strstr(text, "vanished") == NULL);
  const char *redef = line_with(text, "redef  cell[3]", "shrank");
  CHECK(redef != NULL && line_with(redef, "-94", "48") == redef);
  CHECK(line_with(text, "redef", "cell[1]") == NULL);
  const char *scope = line_with(text, "top-level scope  cell[5]", "shrank");
  CHECK(scope != NULL && line_with(scope, "-98", "144") == scope);
  CHECK(line_with(text, "top-level scope", "cell[2]") == NULL);
  CHECK(strstr(text, "all 3 of 3 functions") != NULL);
  if (test_failures) fprintf(stderr, "%s", text);
  free(text);
  /* The Vega-Lite table's rows say the same. */
  json_t *spec = fl_top_diff_vegalite(d, NULL);
  json_t *meta = json_object_get(json_object_get(spec, "usermeta"), "cflame");
  CHECK_INT(json_integer_value(json_object_get(meta, "functions")), 3);
  fl_diff_destroy(&d);
  json_decref(spec);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

/* The same function under callers that do not pair (leaf under a
 * different caller in each profile): the graph draws its frame new and
 * lists the baseline's as vanished, but the table has one function, that
 * grew, never "leaf new" beside "leaf vanished". */
static const sample_spec_t moved_base[] = {{40, "!main;!a;!leaf"}, {10, "!main;!b"}, {0, NULL}};
static const sample_spec_t moved_target[] = {{70, "!main;!c;!leaf"}, {10, "!main;!b"}, {0, NULL}};

static void test_table_keeps_a_function_whose_frames_moved(void) {
  fl_profile_t *b, *t;
  fl_diff_t *d = diff_of_samples(moved_target, moved_base, false, &t, &b);
  CHECK_INT(dn(d, "main;c;leaf")->change, FL_CHANGE_NEW);
  const fl_diff_func_t *rows;
  size_t n = fl_diff_functions(d, &rows), n_leaf = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(rows[i].frame->func, "leaf")) continue;
    n_leaf++;
    CHECK_INT(rows[i].change, FL_CHANGE_GREW);
    CHECK_NEAR(rows[i].delta, 30);
  }
  CHECK_INT(n_leaf, 1);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

/* A recursive fib on one line (cell 1) redefined over several lines (cell
 * 3): each level of the new one splits its weight over lines 2 and 4 where
 * the old one had line 1. Lines of two definitions do not correspond, so fib
 * is compared as a whole function, one frame a level on both sides: nothing
 * is new or vanished, and a note says so. The cells' own statements keep
 * their lines: the two loops of the cell stay apart. */
static const profile_spec_t fib_base = {FL_PROFILE_CPU,
                                        1000000,
                                        {{30, "^top@5:2;fib@1:1;fib@1:1;fib@1:1"},
                                         {20, "^top@5:2;fib@1:1;fib@1:1"},
                                         {10, "^top@5:3;g@1:1"},
                                         {0, NULL}}};
static const profile_spec_t fib_target = {FL_PROFILE_CPU,
                                          1000000,
                                          {{24, "^top@6:2;fib@3:4;fib@3:4;fib@3:2"},
                                           {6, "^top@6:2;fib@3:4;fib@3:2;fib@3:4"},
                                           {20, "^top@6:2;fib@3:4;fib@3:2"},
                                           {10, "^top@6:3;g@1:1"},
                                           {0, NULL}}};

static void more_redefined_recursion(const fl_diff_t *d, const diff_run_t *r, const fl_profile_t *t,
                                     const fl_profile_t *b) {
  CHECK_INT(fl_tree_root(fl_diff_tree(d))->n_children, 2); /* the loops of lines 2 and 3 */
  const fl_node_t *fib = at(fl_diff_tree(d), "top:2;fib");
  CHECK(fib != NULL);
  if (fib) {
    CHECK_INT(fib->frame.line, 0);
    CHECK_STR(fib->frame.module, "cell[3]");
    CHECK_INT(fib->n_children, 1);
  }
  for (size_t i = 0; i < fl_tree_n_nodes(fl_diff_tree(d)); i++)
    CHECK(fl_diff_node(d, (uint32_t)i)->change != FL_CHANGE_NEW);
  CHECK(strstr(fl_diff_notes(d)[0], "fib was redefined in another cell") != NULL);
}

/* Lines of one function: a loop inserted between two others is new, and
 * the loop it pushed down meets its old line. */
static const profile_spec_t inserted_base = {
    FL_PROFILE_CPU, 1000000, {{100, "top:1;f:10;sum:20"}, {60, "top:1;f:11;maxa:30"}, {0, NULL}}};
static const profile_spec_t inserted_target = {FL_PROFILE_CPU,
                                               1000000,
                                               {{100, "top:1;f:10;sum:20"},
                                                {30, "top:1;f:11;other:40"},
                                                {60, "top:1;f:12;maxa:30"},
                                                {0, NULL}}};

static const profile_spec_t recursion_base = {
    FL_PROFILE_CPU, 1000000, {{30, "top:1;f:2;f:2;f:2"}, {10, "top:1;f:2"}, {0, NULL}}};
static const profile_spec_t recursion_target = {
    FL_PROFILE_CPU, 1000000, {{60, "top:1;f:2;f:2;f:2;f:2"}, {10, "top:1;f:2"}, {0, NULL}}};

static void more_recursion_flat(const fl_diff_t *d, const diff_run_t *r, const fl_profile_t *t,
                                const fl_profile_t *b) {
  CHECK_INT(fl_tree_n_nodes(fl_diff_tree(d)), 3);
  CHECK_INT(fl_tree_n_nodes(fl_diff_other_tree(d)), 3);
}

static void test_lines_and_recursion(void) {
  const diff_run_t runs[] = {
      {"redefined recursion", &fib_target, &fib_base, .noise = 2,
       .wants = {{"top:2;fib", BASE, 50},
                 {"top:2;fib;fib", BASE, 50},
                 {"top:2;fib;fib;fib", BASE, 30},
                 {"top:2;fib;fib;fib", CHANGE, FL_CHANGE_SAME},
                 {"top:3;g", BASE, 10},
                 {"", N_VANISHED, 0},
                 {"", N_NOTES, 1},
                 {NULL}},
       .more = more_redefined_recursion},
      {"inserted line", &inserted_target, &inserted_base, .noise = 2,
       .wants = {{"top;f:10", CHANGE, FL_CHANGE_SAME},
                 {"top;f:11", CHANGE, FL_CHANGE_NEW},
                 {"top;f:12", CHANGE, FL_CHANGE_SAME},
                 {"top;f:12", BASE, 60},
                 {"top;f:12;maxa", CHANGE, FL_CHANGE_SAME},
                 {"", N_VANISHED, 0},
                 {NULL}}},
      {"recursion", &recursion_target, &recursion_base, .noise = 2,
       .wants = {{"top;f", BASE, 40},
                 {"top;f", CHANGE, FL_CHANGE_GREW},
                 {"top;f;f", BASE, 30},
                 {"top;f;f;f", BASE, 30},
                 {"top;f;f;f", CHANGE, FL_CHANGE_GREW},
                 {"top;f;f;f;f", CHANGE, FL_CHANGE_NEW},
                 {NULL}}},
      /* recur=flat on both sides: one f, nothing new */
      {"recursion, recur=flat", &recursion_target, &recursion_base, .recur_flat = true, .noise = 2,
       .wants = {{"top;f", BASE, 40},
                 {"top;f", BASE_SELF, 40},
                 {"top;f", DELTA, 30},
                 {"top;f", CHANGE, FL_CHANGE_GREW},
                 {NULL}},
       .more = more_recursion_flat},
  };
  CHECK_RUNS(runs);
}

/* ---- new and vanished frames ---- */

static const profile_spec_t newsub_base = {
    FL_PROFILE_CPU, 1000000, {{100, "top:1;a:2"}, {0, NULL}}};
static const profile_spec_t newsub_target = {
    FL_PROFILE_CPU,
    1000000,
    {{100, "top:1;a:2"}, {40, "top:1;b:3;c:4"}, {20, "top:1;b:3"}, {0, NULL}}};

static const profile_spec_t vanished_base = {FL_PROFILE_CPU,
                                             1000000,
                                             {{100, "top:1;a:2"},
                                              {60, "top:1;a:2;x:5"},
                                              {60, "top:1;v:3;w:4"},
                                              {10, "top:1;v:3"},
                                              {0, NULL}}};
static const profile_spec_t empty = {FL_PROFILE_CPU, 1000000, {{0, NULL}}};

static void more_vanished_node(const fl_diff_t *d, const diff_run_t *r, const fl_profile_t *t,
                               const fl_profile_t *b) {
  const fl_vanished_t *v;
  if (fl_diff_vanished(d, &v) > 0) CHECK(v[0].node == at(fl_diff_other_tree(d), "top;v"));
}

static void more_one_node(const fl_diff_t *d, const diff_run_t *r, const fl_profile_t *t,
                          const fl_profile_t *b) {
  CHECK_INT(fl_tree_n_nodes(fl_diff_tree(d)), 1);
}

static void test_new_and_vanished(void) {
  const diff_run_t runs[] = {
      {"new subtree", &newsub_target, &newsub_base, .minwidth = 0.001, .noise = 2,
       .wants = {{"top;b", HAS_BASE, 0},
                 {"top;b", CHANGE, FL_CHANGE_NEW},
                 {"top;b", BASE, 0},
                 {"top;b", DELTA, 60},
                 {"top;b;c", CHANGE, FL_CHANGE_NEW},
                 {"top;b;c", DELTA, 40},
                 {"top", CHANGE, FL_CHANGE_GREW},
                 {"top", DELTA, 60},
                 {"top", Z, 60 / sqrt(260)},
                 {"top;a", CHANGE, FL_CHANGE_SAME},
                 {"", MAX_DELTA, 60},
                 /* neutral: only a's 100 of 160 (the root and top have no self) */
                 {"", NEUTRAL, 100.0 / 160},
                 {"", N_VANISHED, 0},
                 {NULL}}},
      /* self deltas: new frames do not set the colour scale */
      {"new subtree, delta=self", &newsub_target, &newsub_base, .minwidth = 0.001, .noise = 2,
       .self = true,
       .wants =
           {{"top", CHANGE, FL_CHANGE_SAME}, {"top;b", DELTA, 20}, {"", MAX_DELTA, 0}, {NULL}}},
      {"vanished", &newsub_base, &vanished_base, .minwidth = 0.001, .noise = 2,
       .wants = {{"", N_VANISHED, 2},
                 {"top;a", CHANGE, FL_CHANGE_SHRANK},
                 {"top;a", BASE, 160},
                 {"top", BASE, 230},
                 {NULL}},
       .vanished = {{"v", 0, 70, "top"}, {"x", 0, 60, "top;a"}}, .more = more_vanished_node},
      /* an empty target: the baseline's frames all vanished */
      {"empty target", &empty, &vanished_base, .minwidth = 0.001, .noise = 2,
       .wants = {{"", N_VANISHED, 1}, {"", CHANGE, FL_CHANGE_SHRANK}, {"", NEUTRAL, 0}, {NULL}},
       .more = more_one_node},
      /* both empty: nothing changed */
      {"both empty", &empty, &empty, .minwidth = 0.001, .noise = 2,
       .wants = {{"", NEUTRAL, 1}, {NULL}}},
  };
  CHECK_RUNS(runs);
}

/* ---- deltas, scale and noise ---- */

static const profile_spec_t svt_base = {
    FL_PROFILE_CPU, 1000000, {{50, "top:1;a:2"}, {50, "top:1;a:2;b:3"}, {0, NULL}}};
static const profile_spec_t svt_target = {
    FL_PROFILE_CPU, 1000000, {{100, "top:1;a:2"}, {50, "top:1;a:2;b:3"}, {0, NULL}}};

/* a and b, 100 each; the target 1.5 times that; a shift of 30 either way. */
static const profile_spec_t ab_base = {
    FL_PROFILE_CPU, 1000000, {{100, "top:1;a:2"}, {100, "top:1;b:3"}, {0, NULL}}};
static const profile_spec_t ab_times_1_5 = {
    FL_PROFILE_CPU, 1000000, {{150, "top:1;a:2"}, {150, "top:1;b:3"}, {0, NULL}}};
static const profile_spec_t ab_shifted = {
    FL_PROFILE_CPU, 1000000, {{180, "top:1;a:2"}, {120, "top:1;b:3"}, {0, NULL}}};

static void test_self_vs_total(void) {
  const diff_run_t runs[] = {
      {"delta=total", &svt_target, &svt_base, .minwidth = 0.001, .noise = 2,
       .wants = {{"top;a", BASE, 100},
                 {"top;a", BASE_SELF, 50},
                 {"top;a", DELTA, 50},
                 {"top;a", Z, 50 / sqrt(250)},
                 {"top;a", CHANGE, FL_CHANGE_GREW},
                 {"top", CHANGE, FL_CHANGE_GREW},
                 {"top;a;b", CHANGE, FL_CHANGE_SAME},
                 {NULL}}},
      {"delta=self", &svt_target, &svt_base, .minwidth = 0.001, .noise = 2, .self = true,
       .wants = {{"top;a", BASE, 100}, /* base stays inclusive */
                 {"top;a", DELTA, 50},
                 {"top;a", Z, 50 / sqrt(150)},
                 {"top;a", CHANGE, FL_CHANGE_GREW},
                 {"top", CHANGE, FL_CHANGE_SAME}, /* its self did not change */
                 {"top", DELTA, 0},
                 {"", CHANGE, FL_CHANGE_SAME},
                 {"top;a;b", CHANGE, FL_CHANGE_SAME},
                 {"", MAX_DELTA, 50},
                 {NULL}}},
  };
  CHECK_RUNS(runs);
}

static void test_normalize(void) {
  const diff_run_t runs[] = {
      {"not normalized", &ab_times_1_5, &ab_base, .minwidth = 0.001, .noise = 2,
       .wants = {{"top;a", CHANGE, FL_CHANGE_GREW}, {"", SCALE, 1}, {"", N_NOTES, 0}, {NULL}}},
      {"normalized", &ab_times_1_5, &ab_base, .minwidth = 0.001, .noise = 2, .normalize = true,
       .wants = {{"", SCALE, 1.5},
                 {"top;a", BASE, 150},
                 {"top;a", CHANGE, FL_CHANGE_SAME},
                 {"", NEUTRAL, 1},
                 {"", N_NOTES, 1},
                 {NULL}},
       .note = {"baseline scaled to the target's total (×1.5)"}},
      /* a shift of 30 either way: within noise at 2 sigma, not at 1 */
      {"shifted, noise=2", &ab_shifted, &ab_base, .minwidth = 0.001, .noise = 2, .normalize = true,
       .wants = {{"top;a", DELTA, 30},
                 {"top;a", Z, 30 / sqrt(180 + 2.25 * 100)},
                 {"top;b", Z, -30 / sqrt(120 + 2.25 * 100)},
                 {"top;a", CHANGE, FL_CHANGE_SAME},
                 {"top;b", CHANGE, FL_CHANGE_SAME},
                 {NULL}}},
      {"shifted, noise=1", &ab_shifted, &ab_base, .minwidth = 0.001, .noise = 1, .normalize = true,
       .wants = {{"top;a", CHANGE, FL_CHANGE_GREW},
                 {"top;b", CHANGE, FL_CHANGE_SHRANK},
                 {"top", CHANGE, FL_CHANGE_SAME}, /* totals equal */
                 {"", MAX_DELTA, 30},
                 {NULL}}},
  };
  CHECK_RUNS(runs);
}

/* fl_diff_grown: shares of each profile's own total, whatever the two
 * totals, intervals or normalize; new frames grew from 0; self shares
 * with delta=self; largest growth first. */
static void test_grown(void) {
  /* baseline 200 samples at 1 ms: a 50%, b 25%, c 25%; target 1000 at
   * 0.5 ms: a 40%, b 30%, c 20%, d (new) 10% */
  fl_profile_t *b = cpu(1000000), *t = cpu(500000);
  add_all(b, (const sample_spec_t[]){
                 {100, "top:1;a:2"}, {50, "top:1;b:3"}, {50, "top:1;c:4"}, {0, NULL}});
  add_all(t, (const sample_spec_t[]){{400, "top:1;a:2"},
                                     {300, "top:1;b:3"},
                                     {200, "top:1;c:4"},
                                     {60, "top:1;d:5"},
                                     {40, "top:1;d:5;e:6"},
                                     {0, NULL}});
  fl_tree_opts_t to = topts(true, 0);
  for (int normalize = 0; normalize < 2; normalize++) {
    fl_diff_opts_t o = dopts(2);
    o.normalize = normalize;
    fl_diff_t *d = checked(diff(t, b, &to, &o));
    fl_grown_t *g;
    CHECK_INT(fl_diff_grown(d, 0.04, &g), 2); /* d +10, b +5; e's +4 is not more than 4 */
    free(g);
    size_t n = fl_diff_grown(d, 0.035, &g);
    CHECK_INT(n, 3);
    if (n == 3) {
      CHECK_STR(g[0].node->frame.func, "d");
      CHECK_NEAR(g[0].base_share, 0);
      CHECK_NEAR(g[0].share, 0.1);
      CHECK_STR(g[1].node->frame.func, "b");
      CHECK_NEAR(g[1].base_share, 0.25);
      CHECK_NEAR(g[1].share, 0.3);
      CHECK_STR(g[2].node->frame.func, "e");
      CHECK_NEAR(g[2].share, 0.04);
    }
    free(g);
    CHECK_INT(fl_diff_grown(d, 0.1, &g), 0); /* nothing grew by more than 10 points */
    CHECK(g == NULL);
    fl_diff_destroy(&d);
  }
  /* self shares: d's own is 6% */
  fl_diff_opts_t o = dopts(2);
  o.delta = FL_DELTA_SELF;
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  fl_grown_t *g;
  size_t n = fl_diff_grown(d, 0.035, &g);
  CHECK_INT(n, 3);
  if (n == 3) {
    CHECK_STR(g[0].node->frame.func, "d");
    CHECK_NEAR(g[0].share, 0.06);
    CHECK_STR(g[1].node->frame.func, "b");
    CHECK_STR(g[2].node->frame.func, "e");
    CHECK_NEAR(g[2].share, 0.04);
  }
  free(g);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

static const profile_spec_t a100 = {FL_PROFILE_CPU, 1000000, {{100, "top:1;a:2"}, {0, NULL}}};
static const profile_spec_t half_ms_base = {
    FL_PROFILE_CPU, 500000, {{200, "top:1;a:2"}, {40, "top:1;v:3"}, {0, NULL}}};
static const profile_spec_t a100_at_100us = {
    FL_PROFILE_CPU, 100000, {{100, "top:1;a:2"}, {0, NULL}}};
static const profile_spec_t a40_at_250us = {FL_PROFILE_CPU, 250000, {{40, "top:1;a:2"}, {0, NULL}}};
static const profile_spec_t a100_at_800ns = {FL_PROFILE_CPU, 800, {{100, "top:1;a:2"}, {0, NULL}}};
static const profile_spec_t a40_at_2500ns = {FL_PROFILE_CPU, 2500, {{40, "top:1;a:2"}, {0, NULL}}};
static const profile_spec_t a100_unknown = {FL_PROFILE_CPU, 0, {{100, "top:1;a:2"}, {0, NULL}}};
static const profile_spec_t alloc_base = {
    FL_PROFILE_ALLOC_BYTES, 0, {{1000, "top:1;a:2"}, {500, "top:1;b:3"}, {0, NULL}}};
static const profile_spec_t alloc_target = {
    FL_PROFILE_ALLOC_BYTES, 0, {{3000, "top:1;a:2"}, {500, "top:1;b:3"}, {0, NULL}}};

static void test_intervals(void) {
  const diff_run_t runs[] = {
      {"0.5 ms against 1 ms", &a100, &half_ms_base, .minwidth = 0.001, .noise = 2,
       .wants = {{"", SCALE, 0.5},
                 {"top;a", BASE, 100},
                 {"top;a", DELTA, 0},
                 {"top;a", CHANGE, FL_CHANGE_SAME},
                 {"top", BASE, 120},
                 {"", N_VANISHED, 1},
                 {"", N_NOTES, 1},
                 {NULL}},
       .vanished = {{"v", 0, 20}},
       .note = {"the baseline was sampled every 0.5 ms and the target every 1 ms: counts are "
                "compared per unit of time"}},
      /* and normalized: 100 / (240 * 0.5) */
      {"0.5 ms against 1 ms, normalized", &a100, &half_ms_base, .minwidth = 0.001, .noise = 2,
       .normalize = true,
       .wants = {{"", SCALE, 100.0 / 240}, {"", N_NOTES, 2}, {"top", DELTA, 0}, {NULL}},
       .note = {NULL, "baseline scaled to the target's total (×0.833)"}},
      /* other units */
      {"0.25 ms against 0.1 ms", &a100_at_100us, &a40_at_250us, .minwidth = 0.001, .noise = 2,
       .wants = {{"top;a", DELTA, 0}, {NULL}},
       .note = {"the baseline was sampled every 0.25 ms and the target every 0.1 ms: counts are "
                "compared per unit of time"}},
      {"2.5 us against 800 ns", &a100_at_800ns, &a40_at_2500ns, .minwidth = 0.001, .noise = 2,
       .wants = {{NULL}},
       .note = {"the baseline was sampled every 2.5 us and the target every 800 ns: counts are "
                "compared per unit of time"}},
      /* an unknown interval: compared as they are */
      {"unknown interval", &a100, &a100_unknown, .minwidth = 0.001, .noise = 2,
       .wants = {{"", SCALE, 1}, {"top;a", CHANGE, FL_CHANGE_SAME}, {NULL}},
       .note = {"the baseline's sampling interval is unknown: counts are compared as they are"}},
      {"both unknown", &a100_unknown, &a100_unknown, .minwidth = 0.001, .noise = 2,
       .wants = {{"", N_NOTES, 0}, {NULL}}},
      /* allocation profiles: bytes, no interval */
      {"allocation profiles", &alloc_target, &alloc_base, .minwidth = 0.001, .noise = 2,
       .wants = {{"", SCALE, 1},
                 {"", N_NOTES, 0},
                 {"top;a", BASE, 1000},
                 {"top;a", CHANGE, FL_CHANGE_GREW},
                 {"top;b", CHANGE, FL_CHANGE_SAME},
                 {NULL}}},
  };
  CHECK_RUNS(runs);
}

static const profile_spec_t a115 = {FL_PROFILE_CPU, 1000000, {{115, "top:1;a:2"}, {0, NULL}}};
static const profile_spec_t a200_at_half_ms = {
    FL_PROFILE_CPU, 500000, {{200, "top:1;a:2"}, {0, NULL}}};
static const profile_spec_t a130 = {FL_PROFILE_CPU, 1000000, {{130, "top:1;a:2"}, {0, NULL}}};

static void test_noise(void) {
  const diff_run_t runs[] = {
      /* z = (115 - 100) / sqrt(115 + 100) */
      {"within noise", &a115, &a100, .minwidth = 0.001, .noise = 2,
       .wants = {{"top;a", Z, 1.0229915092057},
                 {"top;a", CHANGE, FL_CHANGE_SAME},
                 {"", NEUTRAL, 1},
                 {"", MAX_DELTA, 0},
                 {NULL}}},
      {"noise=0", &a115, &a100, .minwidth = 0.001, .noise = 0,
       .wants = {{"top;a", CHANGE, FL_CHANGE_GREW}, {"", MAX_DELTA, 15}, {"", NEUTRAL, 0}, {NULL}}},
      /* no change is "same" with noise off too */
      {"no change, noise=0", &a100, &a100, .minwidth = 0.001, .noise = 0,
       .wants = {{"top;a", CHANGE, FL_CHANGE_SAME}, {NULL}}},
      /* with a scale: z = (130 - 0.5 * 200) / sqrt(130 + 0.25 * 200) */
      {"with a scale", &a130, &a200_at_half_ms, .minwidth = 0.001, .noise = 2,
       .wants = {{"top;a", Z, 30 / sqrt(180)}, {"top;a", CHANGE, FL_CHANGE_GREW}, {NULL}}},
  };
  CHECK_RUNS(runs);
}

/* ---- negate ---- */

static const profile_spec_t negate_base = {
    FL_PROFILE_CPU, 1000000, {{100, "top:1;a:2"}, {50, "top:1;v:3;vx:9"}, {0, NULL}}};
static const profile_spec_t negate_target = {
    FL_PROFILE_CPU, 1000000, {{150, "top:1;a:2"}, {40, "top:1;n:4;nx:9"}, {0, NULL}}};
static const profile_spec_t negate_base_half_ms = {
    FL_PROFILE_CPU, 500000, {{200, "top:1;a:2"}, {100, "top:1;v:3;vx:9"}, {0, NULL}}};

/* negated, the baseline is drawn and the target is the other tree */
static void more_negated(const fl_diff_t *d, const diff_run_t *r, const fl_profile_t *t,
                         const fl_profile_t *b) {
  CHECK(fl_tree_profile(fl_diff_tree(d)) == b);
  CHECK(fl_tree_profile(fl_diff_other_tree(d)) == t);
  CHECK_INT(fl_tree_root(fl_diff_tree(d))->count, 150);
}

static void test_negate(void) {
  const diff_run_t runs[] = {
      {"negated", &negate_target, &negate_base, .minwidth = 0.001, .noise = 2, .negate = true,
       .wants = {{"top;a", BASE, 150},
                 {"top;a", DELTA, -50},
                 {"top;a", Z, -50 / sqrt(250)},
                 {"top;a", CHANGE, FL_CHANGE_SHRANK},
                 {"top;v", CHANGE, FL_CHANGE_NEW},
                 {"top", DELTA, -40},
                 {"top", CHANGE, FL_CHANGE_SHRANK},
                 {"", N_VANISHED, 1},
                 {NULL}},
       .vanished = {{"n", 0, 40, "top"}}, .more = more_negated},
      /* with a scale, the target comes into the baseline's units */
      {"negated, with a scale", &negate_target, &negate_base_half_ms, .minwidth = 0.001, .noise = 2,
       .negate = true,
       .wants = {{"", SCALE, 0.5},
                 {"top;a", BASE, 300},
                 {"top;a", DELTA, -100},
                 {"top;a", Z, -100 / sqrt(800)},
                 {"", N_VANISHED, 1},
                 {NULL}},
       .vanished = {{"n", 0, 80}}},
      /* normalized: 190 / (300 * 0.5) */
      {"negated, normalized", &negate_target, &negate_base_half_ms, .minwidth = 0.001, .noise = 2,
       .negate = true, .normalize = true,
       .wants = {{"", SCALE, 190.0 / 300}, {"", DELTA, 0}, {NULL}},
       .note = {NULL, "target scaled to the baseline's total (×0.789)"}},
  };
  CHECK_RUNS(runs);
}

/* ---- refusals ---- */

static void test_refusals(void) {
  fl_profile_t *c = cpu(1000000), *a = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  add_all(c, (const sample_spec_t[]){{10, "top:1;f:2"}, {0, NULL}});
  add_all(a, (const sample_spec_t[]){{100, "top:1;f:2"}, {0, NULL}});
  char err[256] = "";
  CHECK(fl_diff_build(c, a, NULL, NULL, "x", err, sizeof err) == NULL);
  CHECK_STR(err,
            "a CPU profile cannot be compared with an allocation profile: the baseline is an "
            "allocation profile and the target a CPU profile");
  CHECK(fl_diff_build(a, c, NULL, NULL, "x", err, sizeof err) == NULL);
  CHECK_STR(err,
            "a CPU profile cannot be compared with an allocation profile: the baseline is a CPU "
            "profile and the target an allocation profile");
  fl_tree_opts_t to = topts(true, 0.001);
  to.filter = "(";
  to.filter_is_regex = true;
  CHECK(fl_diff_build(c, c, &to, NULL, "x", err, sizeof err) == NULL);
  CHECK(strncmp(err, "filter: bad regular expression", 30) == 0);
  /* An allocation profile that holds CPU samples too (cflame record
   * --allocs) compares with a CPU profile by kind=cpu, which the refusal
   * names; kind=cpu compares the CPU samples alone. */
  uint32_t id = fl_profile_frame_id(a, &(fl_frame_t){.func = "f"});
  fl_profile_add_sample_of(a, FL_PROFILE_CPU, &id, 1, 7, 0, 0, 0);
  CHECK(fl_diff_build(a, c, NULL, NULL, "x", err, sizeof err) == NULL);
  CHECK_STR(err,
            "a CPU profile cannot be compared with an allocation profile: the baseline is a CPU "
            "profile and the target an allocation profile; both hold CPU time: kind=cpu "
            "compares them");
  to = topts(true, 0);
  to.kind = FL_PROFILE_CPU;
  fl_diff_t *d = fl_diff_build(a, c, &to, NULL, "x", err, sizeof err);
  CHECK(d != NULL);
  if (d) CHECK_INT(fl_tree_root(fl_diff_tree(d))->count, 7);
  fl_diff_destroy(&d);
  /* A wall-clock profile's CPU time compares with a CPU profile by
   * kind=cpu: its waits are left out. Without it, wall-clock time is not
   * CPU time, and the refusal names the kind both hold. */
  fl_profile_t *w = fl_profile_new(FL_PROFILE_WALL);
  fl_profile_info(w)->interval_ns = 1000000;
  uint32_t ran = fl_profile_frame_id(w, &(fl_frame_t){.func = "f"});
  uint32_t wait[2] = {ran, fl_profile_frame_id(w, &(fl_frame_t){.func = "[off-CPU: sleep]"})};
  fl_profile_add_sample(w, &ran, 1, 5, 0, 0);
  fl_profile_add_sample(w, wait, 2, 40, 0, 0);
  CHECK(fl_diff_build(w, c, NULL, NULL, "x", err, sizeof err) == NULL);
  CHECK_STR(err,
            "a CPU profile cannot be compared with a wall-clock profile: the baseline is a CPU "
            "profile and the target a wall-clock profile; both hold CPU time: kind=cpu "
            "compares them");
  d = fl_diff_build(w, c, &to, NULL, "x", err, sizeof err);
  CHECK(d != NULL);
  if (d) CHECK_INT(fl_tree_root(fl_diff_tree(d))->count, 5);
  fl_diff_destroy(&d);
  fl_profile_destroy(&w);
  fl_profile_destroy(&c);
  fl_profile_destroy(&a);
}

/* ---- minwidth ---- */

static const profile_spec_t minwidth_base = {FL_PROFILE_CPU,
                                             1000000,
                                             {{1000, "top:1;a:2"},
                                              {2, "top:1;t:3"},
                                              {50, "top:1;s:4"},
                                              {3, "top:1;h:5"},
                                              {50, "top:1;p:6;q:7"},
                                              {0, NULL}}};
static const profile_spec_t minwidth_target = {
    FL_PROFILE_CPU,
    1000000,
    {{1000, "top:1;a:2"}, {60, "top:1;t:3"}, {2, "top:1;s:4"}, {2, "top:1;p:6"}, {0, NULL}}};

/* t was a sliver in the baseline: it grew, it is not new. s and p shrank
 * to slivers: hidden, not vanished; h is a sliver of the baseline: not
 * listed. q vanished under p, which is hidden. */
static void more_minwidth(const fl_diff_t *d, const diff_run_t *r, const fl_profile_t *t,
                          const fl_profile_t *b) {
  CHECK(at(fl_diff_other_tree(d), "top;t") == NULL);
  CHECK(at(fl_diff_tree(d), "top;s") == NULL && at(fl_diff_tree(d), "top;p") == NULL);
  CHECK(at(fl_diff_other_tree(d), "top;s") != NULL);
  /* s and p are drawn merged, one frame under top: their 4 samples
   * against the baseline's 100 (q with p), which shrank. */
  const fl_node_t *top = at(fl_diff_tree(d), "top");
  const fl_diff_node_t *m = top ? fl_diff_narrow(d, top->id) : NULL;
  CHECK(m && m->has_base && m->change == FL_CHANGE_SHRANK);
  CHECK(m && fabs(m->base - 100 * fl_diff_factor(d)) < 1e-9);
  CHECK(m && fabs(m->delta - (4 - 100 * fl_diff_factor(d))) < 1e-9);
  const fl_diff_node_t *none = fl_diff_narrow(d, 0);
  CHECK(none && !none->has_base && none->delta == 0 && none->change == FL_CHANGE_SAME);
  char *svg = fl_svg_diff(d, NULL);
  const char *title = svg ? strstr(svg, "<title>2 narrow frames\ntarget: 4 samples") : NULL;
  CHECK(title != NULL);
  CHECK(title && strstr(title, "shrank\nof the narrow frames, the widest:\np (") != NULL);
  free(svg);
}

static void test_minwidth(void) {
  const diff_run_t run = {"minwidth",
                          &minwidth_target,
                          &minwidth_base,
                          .minwidth = 0.01,
                          .noise = 2,
                          .wants = {{"top;t", HAS_BASE, 1},
                                    {"top;t", BASE, 2},
                                    {"top;t", CHANGE, FL_CHANGE_GREW},
                                    {"", N_VANISHED, 1},
                                    {"top", BASE, 1105},
                                    /* the neutral share counts hidden frames too: a's 1000 of
                                     * 1064 */
                                    {"", NEUTRAL, 1000.0 / 1064},
                                    {NULL}},
                          .vanished = {{"q", 0, 0, "-"}},
                          .more = more_minwidth};
  check_run(&run);
}

/* ---- ProfileVega's example ----
 *
 *   f1(n): for n: sum(rand(10_000));  for n: sum(rand(10_000))
 *   f2(n): for n: sum(rand(20_000));  for n: maximum(randn(10,10,10));
 *          for n: sum(rand(5_000))
 *
 * as cell functions in cells 3 and 8 (lines on: the loops are frames f1:3,
 * f1:6 and f2:3, f2:6, f2:9), with sum_rand's time at two lines. */
static const profile_spec_t f1 = {FL_PROFILE_CPU,
                                  1000000,
                                  {{70, "top@4:1;f1@3:3;sum_rand@2:5"},
                                   {30, "top@4:1;f1@3:3;sum_rand@2:6"},
                                   {70, "top@4:1;f1@3:6;sum_rand@2:5"},
                                   {30, "top@4:1;f1@3:6;sum_rand@2:6"},
                                   {0, NULL}}};
static const profile_spec_t f2 = {FL_PROFILE_CPU,
                                  1000000,
                                  {{140, "top@9:1;f2@8:3;sum_rand@2:5"},
                                   {60, "top@9:1;f2@8:3;sum_rand@2:6"},
                                   {50, "top@9:1;f2@8:6;max_arr@7:2"},
                                   {35, "top@9:1;f2@8:9;sum_rand@2:5"},
                                   {15, "top@9:1;f2@8:9;sum_rand@2:6"},
                                   {0, NULL}}};

static void test_profilevega(void) {
  const diff_run_t runs[] = {
      {"f2 against f1", &f2, &f1, .minwidth = 0.001, .noise = 2,
       .wants = {{"top", CHANGE, FL_CHANGE_GREW},
                 {"top", BASE, 200},
                 {"top;f2:3", BASE, 100},
                 {"top;f2:3", CHANGE, FL_CHANGE_GREW},
                 {"top;f2:3;sum_rand:5", CHANGE, FL_CHANGE_GREW},
                 {"top;f2:6", CHANGE, FL_CHANGE_NEW},
                 {"top;f2:6;max_arr", CHANGE, FL_CHANGE_NEW},
                 {"top;f2:9", BASE, 100},
                 {"top;f2:9", DELTA, -50},
                 {"top;f2:9", CHANGE, FL_CHANGE_SHRANK},
                 {"top;f2:9;sum_rand:5", CHANGE, FL_CHANGE_SHRANK},
                 {"", N_VANISHED, 0},
                 {NULL}}},
      /* negate: the baseline's two loops, the first shrank (by the target's
       * growth), the second grew; the max loop vanished */
      {"f2 against f1, negated", &f2, &f1, .minwidth = 0.001, .noise = 2, .negate = true,
       .wants = {{"top;f1:3", CHANGE, FL_CHANGE_SHRANK},
                 {"top;f1:3", DELTA, -100},
                 {"top;f1:6", CHANGE, FL_CHANGE_GREW},
                 {"top;f1:6", BASE, 50},
                 {"", N_VANISHED, 1},
                 {NULL}},
       .vanished = {{"f2", 6, 50, "top"}}},
      /* without lines: f2 against f1 as a whole */
      {"f2 against f1, no lines", &f2, &f1, .no_lines = true, .minwidth = 0.001, .noise = 2,
       .wants = {{"top;f2", BASE, 200},
                 {"top;f2;max_arr", CHANGE, FL_CHANGE_NEW},
                 {"top;f2;sum_rand", BASE, 200},
                 {"top;f2;sum_rand", DELTA, 50},
                 {NULL}}},
  };
  CHECK_RUNS(runs);
}

/* ---- two noisy measurements of the same program ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static double uniform(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Knuth's method; fine for the small means used here. */
static uint64_t poisson(double mean) {
  double limit = exp(-mean), prod = uniform();
  uint64_t k = 0;
  while (prod > limit) {
    prod *= uniform();
    k++;
  }
  return k;
}

/* Five rounds, each a random program and two independent measurements of
 * it: per stack, Poisson weights of the same mean. */
static void test_poisson_copies(void) {
  static const char *const funcs[] = {"parse", "eval", "hash", "sort", "cmp", "emit", "scan"};
  enum { N_STACKS = 150 };
  char specs[N_STACKS][256];
  double means[N_STACKS];
  fprintf(stderr, "poisson copies, neutral share at noise=2 (noise=0):");
  for (int round = 0; round < 5; round++) {
    for (int s = 0; s < N_STACKS; s++) {
      int depth = 1 + (int)(uniform() * 5);
      size_t len = (size_t)snprintf(specs[s], sizeof specs[s], "main:1");
      for (int k = 0; k < depth; k++) {
        const char *func = funcs[(int)(uniform() * 7)];
        int line = 1 + (int)(uniform() * 3);
        len += (size_t)snprintf(specs[s] + len, sizeof specs[s] - len, ";%s:%d", func, line);
      }
      means[s] = 5 + uniform() * 300;
    }
    fl_profile_t *p[2];
    for (int i = 0; i < 2; i++) {
      p[i] = cpu(1000000);
      for (int s = 0; s < N_STACKS; s++) {
        uint64_t w = poisson(means[s]);
        if (w) add(p[i], w, specs[s]);
      }
    }
    fl_tree_opts_t to = topts(true, 0);
    fl_diff_opts_t o = dopts(2);
    fl_diff_t *d = checked(diff(p[0], p[1], &to, &o));
    double share = fl_diff_neutral_share(d);
    CHECK(share >= 0.8);
    fl_diff_destroy(&d);
    o.noise = 0;
    d = checked(diff(p[0], p[1], &to, &o));
    fprintf(stderr, " %.1f%% (%.1f%%)", 100 * share, 100 * fl_diff_neutral_share(d));
    CHECK(fl_diff_neutral_share(d) < share);
    fl_diff_destroy(&d);
    o.noise = 2;
    o.delta = FL_DELTA_SELF;
    d = checked(diff(p[0], p[1], &to, &o));
    CHECK(fl_diff_neutral_share(d) >= 0.8);
    fl_diff_destroy(&d);
    fl_profile_destroy(&p[0]);
    fl_profile_destroy(&p[1]);
  }
  fprintf(stderr, "\n");
}

/* ---- wide levels ---- */

/* Thousands of siblings: distinct names, one function at hundreds of
 * lines, and many unpaired cell functions on each side. */
static void test_wide(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  char spec[128];
  for (int i = 0; i < 3000; i++) {
    snprintf(spec, sizeof spec, "top:1;f%d:2", i);
    add(b, 10, spec);
    add(t, 10, spec);
  }
  for (int i = 0; i < 300; i++) {
    snprintf(spec, sizeof spec, "top:1;g:%d", i + 1);
    add(b, 10, spec);
    add(t, 10, spec);
  }
  for (int i = 0; i < 100; i++) {
    snprintf(spec, sizeof spec, "top:1;old%d:7", i);
    add(b, 5 + (uint64_t)i, spec);
    snprintf(spec, sizeof spec, "top:1;new%d:7", i);
    add(t, 5 + (uint64_t)i, spec);
  }
  fl_tree_opts_t to = topts(true, 0);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  check_nodes(d, (const node_want_t[]){{"top;f2999", CHANGE, FL_CHANGE_SAME},
                                       {"top;g:300", CHANGE, FL_CHANGE_SAME},
                                       {"top;g:300", BASE, 10},
                                       {NULL}});
  /* The 64 widest renamed leaves pair up (with their like-sized
   * partners); the rest are new and vanished. */
  CHECK(dn(d, "top;new99")->has_base);
  CHECK_NEAR(dn(d, "top;new99")->base, 104);
  CHECK(!dn(d, "top;new0")->has_base);
  size_t nv;
  vanished(d, &nv);
  CHECK_INT(nv, 36);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

int main(void) {
  test_self_diff();
  test_renamed();
  test_program_roots();
  test_redefinition();
  test_table_pairs_as_graph();
  test_table_keeps_a_function_whose_frames_moved();
  test_lines_and_recursion();
  test_new_and_vanished();
  test_self_vs_total();
  test_normalize();
  test_grown();
  test_intervals();
  test_noise();
  test_negate();
  test_refusals();
  test_minwidth();
  test_profilevega();
  test_poisson_copies();
  test_wide();
  return TEST_DONE();
}
