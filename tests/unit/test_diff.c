/* Tests fl_diff on hand-made profiles with known answers: matching (renamed
 * cell functions, redefinitions in another cell, moved and inserted lines,
 * recursion), new and vanished frames, self and total deltas, scaling
 * (intervals, normalize), noise, negate, minwidth, refusal of a CPU profile
 * against an allocation profile, ProfileVega's f1/f2 example, the shares
 * that grew (the CI gate's), and self-diffs (exact, and of two
 * Poisson-perturbed copies). */
#define _GNU_SOURCE
#include "cflame/fl_diff.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

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

/* One check of one drawn node of a diff: a field of fl_diff_node_t and the
 * value it should have (exactly for the change, nearly for the others).
 * Tables of them end with {NULL}. */
typedef enum field { CHANGE, BASE, BASE_SELF, DELTA, Z } field_t;
typedef struct node_want {
  const char *path;
  field_t field;
  double want;
} node_want_t;

static void check_nodes(const fl_diff_t *d, const node_want_t *w) {
  static const char *const names[] = {"change", "base", "base_self", "delta", "z"};
  for (; w->path; w++) {
    int failures = test_failures;
    const fl_diff_node_t *x = dn(d, w->path);
    switch (w->field) {
      case CHANGE: CHECK_INT(x->change, (int)w->want); break;
      case BASE: CHECK_NEAR(x->base, w->want); break;
      case BASE_SELF: CHECK_NEAR(x->base_self, w->want); break;
      case DELTA: CHECK_NEAR(x->delta, w->want); break;
      case Z: CHECK_NEAR(x->z, w->want); break;
    }
    if (test_failures > failures)
      fprintf(stderr, "  (the %s of the node at \"%s\")\n", names[w->field], w->path);
  }
}

static fl_tree_opts_t topts(bool lines, double minwidth) {
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  o.lines = lines;
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
static void test_renamed(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{100, "top@5:1;f1@3:2;work@3:10"},
                                     {10, "top@5:1;f1@3:2"},
                                     {30, "top@5:1;g1@3:20;~qsort;cmp@3:25"},
                                     {0, NULL}});
  add_all(t, (const sample_spec_t[]){{150, "top@9:1;f2@8:2;work@8:10"},
                                     {10, "top@9:1;f2@8:2"},
                                     {30, "top@9:1;g2@8:20;other@8:30"},
                                     {0, NULL}});
  fl_tree_opts_t to = topts(true, 0.001);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  const fl_diff_node_t *f2 = dn(d, "top;f2"), *work = dn(d, "top;f2;work");
  CHECK(f2->has_base);
  CHECK_NEAR(f2->base, 110);
  CHECK_NEAR(f2->base_self, 10);
  CHECK_NEAR(f2->delta, 50);
  CHECK_NEAR(f2->z, 50 / sqrt(270));
  CHECK_INT(f2->change, FL_CHANGE_GREW);
  CHECK_NEAR(work->base, 100);
  CHECK_INT(work->change, FL_CHANGE_GREW);
  check_nodes(d, (const node_want_t[]){{"top;g2", CHANGE, FL_CHANGE_NEW},
                                       {"top;g2;other", CHANGE, FL_CHANGE_NEW},
                                       {"top", BASE, 140},
                                       {"top", CHANGE, FL_CHANGE_GREW},
                                       {NULL}});
  size_t nv;
  const fl_vanished_t *v = vanished(d, &nv);
  CHECK_INT(nv, 1);
  CHECK_STR(v[0].node->frame.func, "g1");
  CHECK_NEAR(v[0].count, 30);
  CHECK(v[0].parent_match == at(fl_diff_tree(d), "top"));
  fl_diff_destroy(&d);

  /* Without lines, the same. */
  to.lines = false;
  d = checked(diff(t, b, &to, &o));
  CHECK_NEAR(dn(d, "top;f2")->base, 110);
  CHECK_INT(dn(d, "top;g2")->change, FL_CHANGE_NEW);
  vanished(d, &nv);
  CHECK_INT(nv, 1);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

/* Whether one of d's notes contains text. */
static bool has_note(const fl_diff_t *d, const char *text) {
  for (const char *const *s = fl_diff_notes(d); *s; s++)
    if (strstr(*s, text)) return true;
  return false;
}

/* Two builds of one program, recorded under roots named after them (bt,
 * bt_slow): the only roots match whatever their names, with a note; several
 * roots match by name, or with root_prefix by the start of their names. */
static void test_program_roots(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  add_all(b,
          (const sample_spec_t[]){{400, "!bt;!main;!work"}, {400, "!bt;!main;!parse"}, {0, NULL}});
  add_all(t, (const sample_spec_t[]){
                 {600, "!bt_slow;!main;!work"}, {200, "!bt_slow;!main;!parse"}, {0, NULL}});
  fl_tree_opts_t to = topts(false, 0);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  check_nodes(d, (const node_want_t[]){{"bt_slow", BASE, 800},
                                       {"bt_slow", CHANGE, FL_CHANGE_SAME},
                                       {"bt_slow;main;work", BASE, 400},
                                       {"bt_slow;main;work", CHANGE, FL_CHANGE_GREW},
                                       {"bt_slow;main;parse", CHANGE, FL_CHANGE_SHRANK},
                                       {NULL}});
  size_t nv;
  vanished(d, &nv);
  CHECK_INT(nv, 0);
  CHECK(has_note(d,
                 "each profile is one program: the target's bt_slow is compared with the "
                 "baseline's bt"));
  fl_grown_t *grown;
  size_t n_grown = fl_diff_grown(d, 0.05, &grown);
  CHECK_INT(n_grown, 1); /* work, 40% -> 60%; not the program, 0% -> 100% */
  if (n_grown) CHECK_STR(grown[0].node->frame.func, "work");
  free(grown);
  fl_diff_destroy(&d);
  /* Negated, the same pairs, the names in their roles. */
  o.negate = true;
  d = checked(diff(t, b, &to, &o));
  CHECK_INT(dn(d, "bt;main;work")->change, FL_CHANGE_SHRANK);
  CHECK(has_note(d, "the target's bt_slow is compared with the baseline's bt"));
  fl_diff_destroy(&d);
  o.negate = false;
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);

  /* Two processes a side: by name they are new and vanished; by prefix
   * they pair, in order. */
  b = cpu(1000000), t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{400, "!bt (pid 11);!main;!work"},
                                     {400, "!bt (pid 12);!main;!parse"},
                                     {100, "!sh;!main"},
                                     {0, NULL}});
  add_all(t, (const sample_spec_t[]){{600, "!bt_slow (pid 31);!main;!work"},
                                     {200, "!bt_slow (pid 32);!main;!parse"},
                                     {100, "!sh;!main"},
                                     {0, NULL}});
  d = checked(diff(t, b, &to, &o));
  CHECK_INT(dn(d, "bt_slow (pid 31)")->change, FL_CHANGE_NEW);
  CHECK_INT(dn(d, "sh")->change, FL_CHANGE_SAME);
  vanished(d, &nv);
  CHECK_INT(nv, 2);
  CHECK_INT(n_notes(d), 0);
  fl_diff_destroy(&d);
  o.root_prefix = "bt";
  d = checked(diff(t, b, &to, &o));
  check_nodes(d, (const node_want_t[]){{"bt_slow (pid 31)", BASE, 400},
                                       {"bt_slow (pid 31);main;work", CHANGE, FL_CHANGE_GREW},
                                       {"bt_slow (pid 32);main;parse", BASE, 400},
                                       {"sh", BASE, 100},
                                       {NULL}});
  vanished(d, &nv);
  CHECK_INT(nv, 0);
  CHECK(has_note(d, "roots whose names start with \"bt\" are compared with each other"));
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);

  /* A notebook's cell code keeps its own rule: a single root of cell code
   * pairs only with one whose subtree agrees. */
  b = cpu(1000000), t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{100, "f1@3:2;work@3:10"}, {0, NULL}});
  add_all(t, (const sample_spec_t[]){{100, "g1@4:2;~qsort"}, {0, NULL}});
  o.root_prefix = NULL;
  d = checked(diff(t, b, &to, &o));
  CHECK_INT(dn(d, "g1")->change, FL_CHANGE_NEW);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

/* f defined in cell 3 and redefined in cell 7 with its lines moved: with
 * lines on, it now sorts after its sibling h, and still matches. */
static void test_redefinition(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  add_all(b,
          (const sample_spec_t[]){{50, "top@5:2;f@3:4;g@2:7"}, {40, "top@5:2;h@4:2"}, {0, NULL}});
  add_all(t,
          (const sample_spec_t[]){{80, "top@9:2;f@7:6;g@2:7"}, {40, "top@9:2;h@4:2"}, {0, NULL}});
  fl_diff_opts_t o = dopts(2);
  for (int lines = 1; lines >= 0; lines--) {
    fl_tree_opts_t to = topts(lines, 0.001);
    fl_diff_t *d = checked(diff(t, b, &to, &o));
    const fl_node_t *top = at(fl_diff_tree(d), "top");
    CHECK_INT(top->n_children, 2);
    if (lines) CHECK_STR(top->children[0]->frame.func, "h");
    const fl_diff_node_t *f = dn(d, "top;f");
    CHECK(f->has_base);
    CHECK_NEAR(f->base, 50);
    CHECK_INT(f->change, FL_CHANGE_GREW);
    check_nodes(
        d,
        (const node_want_t[]){
            {"top;f;g", BASE, 50}, {"top;h", DELTA, 0}, {"top;h", CHANGE, FL_CHANGE_SAME}, {NULL}});
    CHECK_STR(at(fl_diff_tree(d), "top;f")->frame.module, "cell[7]");
    size_t nv;
    vanished(d, &nv);
    CHECK_INT(nv, 0);
    fl_diff_destroy(&d);
  }
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

/* A recursive fib on one line (cell 1) redefined over several lines (cell
 * 3): each level of the new one splits its weight over lines 2 and 4 where
 * the old one had line 1. Lines of two definitions do not correspond, so fib
 * is compared as a whole function, one frame a level on both sides: nothing
 * is new or vanished, and a note says so. The cells' own statements keep
 * their lines: the two loops of the cell stay apart. */
static void test_redefined_recursion(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{30, "^top@5:2;fib@1:1;fib@1:1;fib@1:1"},
                                     {20, "^top@5:2;fib@1:1;fib@1:1"},
                                     {10, "^top@5:3;g@1:1"},
                                     {0, NULL}});
  add_all(t, (const sample_spec_t[]){{24, "^top@6:2;fib@3:4;fib@3:4;fib@3:2"},
                                     {6, "^top@6:2;fib@3:4;fib@3:2;fib@3:4"},
                                     {20, "^top@6:2;fib@3:4;fib@3:2"},
                                     {10, "^top@6:3;g@1:1"},
                                     {0, NULL}});
  fl_tree_opts_t to = topts(true, 0);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  CHECK_INT(fl_tree_root(fl_diff_tree(d))->n_children, 2); /* the loops of lines 2 and 3 */
  const fl_node_t *fib = at(fl_diff_tree(d), "top:2;fib");
  CHECK(fib != NULL);
  if (fib) {
    CHECK_INT(fib->frame.line, 0);
    CHECK_STR(fib->frame.module, "cell[3]");
    CHECK_INT(fib->n_children, 1);
  }
  check_nodes(d, (const node_want_t[]){{"top:2;fib", BASE, 50},
                                       {"top:2;fib;fib", BASE, 50},
                                       {"top:2;fib;fib;fib", BASE, 30},
                                       {"top:2;fib;fib;fib", CHANGE, FL_CHANGE_SAME},
                                       {"top:3;g", BASE, 10},
                                       {NULL}});
  size_t nv;
  vanished(d, &nv);
  CHECK_INT(nv, 0);
  for (size_t i = 0; i < fl_tree_n_nodes(fl_diff_tree(d)); i++)
    CHECK(fl_diff_node(d, (uint32_t)i)->change != FL_CHANGE_NEW);
  CHECK_INT(n_notes(d), 1);
  CHECK(strstr(fl_diff_notes(d)[0], "fib was redefined in another cell") != NULL);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

/* Lines of one function: a loop inserted between two others is new, and
 * the loop it pushed down meets its old line. */
static void test_inserted_line(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){
                 {100, "top:1;f:10;sum:20"}, {60, "top:1;f:11;maxa:30"}, {0, NULL}});
  add_all(t, (const sample_spec_t[]){{100, "top:1;f:10;sum:20"},
                                     {30, "top:1;f:11;other:40"},
                                     {60, "top:1;f:12;maxa:30"},
                                     {0, NULL}});
  fl_tree_opts_t to = topts(true, 0);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  check_nodes(d, (const node_want_t[]){{"top;f:10", CHANGE, FL_CHANGE_SAME},
                                       {"top;f:11", CHANGE, FL_CHANGE_NEW},
                                       {"top;f:12", CHANGE, FL_CHANGE_SAME},
                                       {"top;f:12", BASE, 60},
                                       {"top;f:12;maxa", CHANGE, FL_CHANGE_SAME},
                                       {NULL}});
  size_t nv;
  vanished(d, &nv);
  CHECK_INT(nv, 0);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

static void test_recursion(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{30, "top:1;f:2;f:2;f:2"}, {10, "top:1;f:2"}, {0, NULL}});
  add_all(t, (const sample_spec_t[]){{60, "top:1;f:2;f:2;f:2;f:2"}, {10, "top:1;f:2"}, {0, NULL}});
  fl_tree_opts_t to = topts(true, 0);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  check_nodes(d, (const node_want_t[]){{"top;f", BASE, 40},
                                       {"top;f", CHANGE, FL_CHANGE_GREW},
                                       {"top;f;f", BASE, 30},
                                       {"top;f;f;f", BASE, 30},
                                       {"top;f;f;f", CHANGE, FL_CHANGE_GREW},
                                       {"top;f;f;f;f", CHANGE, FL_CHANGE_NEW},
                                       {NULL}});
  fl_diff_destroy(&d);

  /* recur=flat on both sides: one f, nothing new. */
  to.recur = FL_RECUR_FLAT;
  d = checked(diff(t, b, &to, &o));
  CHECK_INT(fl_tree_n_nodes(fl_diff_tree(d)), 3);
  CHECK_INT(fl_tree_n_nodes(fl_diff_other_tree(d)), 3);
  const fl_diff_node_t *f = dn(d, "top;f");
  CHECK_NEAR(f->base, 40);
  CHECK_NEAR(f->base_self, 40);
  CHECK_NEAR(f->delta, 30);
  CHECK_INT(f->change, FL_CHANGE_GREW);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

/* ---- new and vanished frames ---- */

static void test_new_subtree(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{100, "top:1;a:2"}, {0, NULL}});
  add_all(t, (const sample_spec_t[]){
                 {100, "top:1;a:2"}, {40, "top:1;b:3;c:4"}, {20, "top:1;b:3"}, {0, NULL}});
  fl_tree_opts_t to = topts(true, 0.001);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  const fl_diff_node_t *nb = dn(d, "top;b"), *nc = dn(d, "top;b;c"), *top = dn(d, "top");
  CHECK(!nb->has_base && nb->change == FL_CHANGE_NEW && nb->base == 0);
  CHECK_NEAR(nb->delta, 60);
  CHECK_INT(nc->change, FL_CHANGE_NEW);
  CHECK_NEAR(nc->delta, 40);
  CHECK_INT(top->change, FL_CHANGE_GREW);
  CHECK_NEAR(top->delta, 60);
  CHECK_NEAR(top->z, 60 / sqrt(260));
  CHECK_INT(dn(d, "top;a")->change, FL_CHANGE_SAME);
  CHECK_NEAR(fl_diff_max_delta(d), 60);
  /* Neutral: only a's 100 of 160 (the root and top have no self). */
  CHECK_NEAR(fl_diff_neutral_share(d), 100.0 / 160);
  size_t nv;
  vanished(d, &nv);
  CHECK_INT(nv, 0);
  fl_diff_destroy(&d);

  /* Self deltas: new frames do not set the colour scale. */
  o.delta = FL_DELTA_SELF;
  d = checked(diff(t, b, &to, &o));
  CHECK_INT(dn(d, "top")->change, FL_CHANGE_SAME);
  CHECK_NEAR(dn(d, "top;b")->delta, 20);
  CHECK_NEAR(fl_diff_max_delta(d), 0);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

static void test_vanished(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{100, "top:1;a:2"},
                                     {60, "top:1;a:2;x:5"},
                                     {60, "top:1;v:3;w:4"},
                                     {10, "top:1;v:3"},
                                     {0, NULL}});
  add_all(t, (const sample_spec_t[]){{100, "top:1;a:2"}, {0, NULL}});
  fl_tree_opts_t to = topts(true, 0.001);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  size_t nv;
  const fl_vanished_t *v = vanished(d, &nv);
  CHECK_INT(nv, 2);
  if (nv == 2) {
    CHECK_STR(v[0].node->frame.func, "v");
    CHECK_NEAR(v[0].count, 70);
    CHECK(v[0].node == at(fl_diff_other_tree(d), "top;v"));
    CHECK(v[0].parent_match == at(fl_diff_tree(d), "top"));
    CHECK_STR(v[1].node->frame.func, "x");
    CHECK_NEAR(v[1].count, 60);
    CHECK(v[1].parent_match == at(fl_diff_tree(d), "top;a"));
  }
  check_nodes(
      d,
      (const node_want_t[]){
          {"top;a", CHANGE, FL_CHANGE_SHRANK}, {"top;a", BASE, 160}, {"top", BASE, 230}, {NULL}});
  fl_diff_destroy(&d);

  /* An empty target: the baseline's frames all vanished. */
  fl_profile_t *e = cpu(1000000);
  d = checked(diff(e, b, &to, &o));
  CHECK_INT(fl_tree_n_nodes(fl_diff_tree(d)), 1);
  vanished(d, &nv);
  CHECK_INT(nv, 1);
  CHECK_INT(dn(d, "")->change, FL_CHANGE_SHRANK);
  CHECK(fl_diff_neutral_share(d) == 0);
  fl_diff_destroy(&d);
  /* Both empty: nothing changed. */
  d = checked(diff(e, e, &to, &o));
  CHECK(fl_diff_neutral_share(d) == 1);
  fl_diff_destroy(&d);
  fl_profile_destroy(&e);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

/* ---- deltas, scale and noise ---- */

static void test_self_vs_total(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{50, "top:1;a:2"}, {50, "top:1;a:2;b:3"}, {0, NULL}});
  add_all(t, (const sample_spec_t[]){{100, "top:1;a:2"}, {50, "top:1;a:2;b:3"}, {0, NULL}});
  fl_tree_opts_t to = topts(true, 0.001);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  const fl_diff_node_t *a = dn(d, "top;a");
  CHECK_NEAR(a->base, 100);
  CHECK_NEAR(a->base_self, 50);
  CHECK_NEAR(a->delta, 50);
  CHECK_NEAR(a->z, 50 / sqrt(250));
  CHECK_INT(a->change, FL_CHANGE_GREW);
  CHECK_INT(dn(d, "top")->change, FL_CHANGE_GREW);
  CHECK_INT(dn(d, "top;a;b")->change, FL_CHANGE_SAME);
  fl_diff_destroy(&d);

  o.delta = FL_DELTA_SELF;
  d = checked(diff(t, b, &to, &o));
  a = dn(d, "top;a");
  CHECK_NEAR(a->base, 100); /* base stays inclusive */
  CHECK_NEAR(a->delta, 50);
  CHECK_NEAR(a->z, 50 / sqrt(150));
  CHECK_INT(a->change, FL_CHANGE_GREW);
  check_nodes(d,
              (const node_want_t[]){{"top", CHANGE, FL_CHANGE_SAME}, /* its self did not change */
                                    {"top", DELTA, 0},
                                    {"", CHANGE, FL_CHANGE_SAME},
                                    {"top;a;b", CHANGE, FL_CHANGE_SAME},
                                    {NULL}});
  CHECK_NEAR(fl_diff_max_delta(d), 50);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

static void test_normalize(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000), *t2 = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{100, "top:1;a:2"}, {100, "top:1;b:3"}, {0, NULL}});
  add_all(t, (const sample_spec_t[]){{150, "top:1;a:2"}, {150, "top:1;b:3"}, {0, NULL}});
  add_all(t2, (const sample_spec_t[]){{180, "top:1;a:2"}, {120, "top:1;b:3"}, {0, NULL}});
  fl_tree_opts_t to = topts(true, 0.001);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  CHECK_INT(dn(d, "top;a")->change, FL_CHANGE_GREW);
  CHECK(fl_diff_scale(d) == 1);
  CHECK_INT(n_notes(d), 0);
  fl_diff_destroy(&d);

  o.normalize = true;
  d = checked(diff(t, b, &to, &o));
  CHECK_NEAR(fl_diff_scale(d), 1.5);
  CHECK_NEAR(dn(d, "top;a")->base, 150);
  CHECK_INT(dn(d, "top;a")->change, FL_CHANGE_SAME);
  CHECK(fl_diff_neutral_share(d) == 1);
  CHECK_INT(n_notes(d), 1);
  CHECK_STR(fl_diff_notes(d)[0], "baseline scaled to the target's total (×1.5)");
  fl_diff_destroy(&d);

  /* A shift of 30 either way: within noise at 2 sigma, not at 1. */
  d = checked(diff(t2, b, &to, &o));
  check_nodes(d, (const node_want_t[]){{"top;a", DELTA, 30},
                                       {"top;a", Z, 30 / sqrt(180 + 2.25 * 100)},
                                       {"top;b", Z, -30 / sqrt(120 + 2.25 * 100)},
                                       {"top;a", CHANGE, FL_CHANGE_SAME},
                                       {"top;b", CHANGE, FL_CHANGE_SAME},
                                       {NULL}});
  fl_diff_destroy(&d);
  o.noise = 1;
  d = checked(diff(t2, b, &to, &o));
  check_nodes(d, (const node_want_t[]){{"top;a", CHANGE, FL_CHANGE_GREW},
                                       {"top;b", CHANGE, FL_CHANGE_SHRANK},
                                       {"top", CHANGE, FL_CHANGE_SAME}, /* totals equal */
                                       {NULL}});
  CHECK_NEAR(fl_diff_max_delta(d), 30);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
  fl_profile_destroy(&t2);
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

static void test_intervals(void) {
  fl_profile_t *b = cpu(500000), *t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{200, "top:1;a:2"}, {40, "top:1;v:3"}, {0, NULL}});
  add_all(t, (const sample_spec_t[]){{100, "top:1;a:2"}, {0, NULL}});
  fl_tree_opts_t to = topts(true, 0.001);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  CHECK_NEAR(fl_diff_scale(d), 0.5);
  check_nodes(d, (const node_want_t[]){{"top;a", BASE, 100},
                                       {"top;a", DELTA, 0},
                                       {"top;a", CHANGE, FL_CHANGE_SAME},
                                       {"top", BASE, 120},
                                       {NULL}});
  size_t nv;
  const fl_vanished_t *v = vanished(d, &nv);
  CHECK_INT(nv, 1);
  CHECK_NEAR(v[0].count, 20);
  CHECK_INT(n_notes(d), 1);
  CHECK_STR(fl_diff_notes(d)[0],
            "the baseline was sampled every 0.5 ms and the target every 1 ms: counts are compared "
            "per unit of time");
  fl_diff_destroy(&d);

  /* And normalized: 100 / (240 * 0.5). */
  o.normalize = true;
  d = checked(diff(t, b, &to, &o));
  CHECK_NEAR(fl_diff_scale(d), 100.0 / 240);
  CHECK_INT(n_notes(d), 2);
  CHECK_STR(fl_diff_notes(d)[1], "baseline scaled to the target's total (×0.833)");
  CHECK_NEAR(dn(d, "top")->delta, 0);
  fl_diff_destroy(&d);
  o.normalize = false;

  /* Other units. */
  fl_profile_t *t100 = cpu(100000), *b250 = cpu(250000), *b0 = cpu(0);
  add_all(t100, (const sample_spec_t[]){{100, "top:1;a:2"}, {0, NULL}});
  add_all(b250, (const sample_spec_t[]){{40, "top:1;a:2"}, {0, NULL}});
  add_all(b0, (const sample_spec_t[]){{100, "top:1;a:2"}, {0, NULL}});
  d = checked(diff(t100, b250, &to, &o));
  CHECK_STR(fl_diff_notes(d)[0],
            "the baseline was sampled every 0.25 ms and the target every 0.1 ms: counts are "
            "compared per unit of time");
  CHECK_NEAR(dn(d, "top;a")->delta, 0);
  fl_diff_destroy(&d);
  fl_profile_info(b250)->interval_ns = 2500;
  fl_profile_info(t100)->interval_ns = 800;
  d = checked(diff(t100, b250, &to, &o));
  CHECK_STR(fl_diff_notes(d)[0],
            "the baseline was sampled every 2.5 µs and the target every 800 ns: counts are "
            "compared per unit of time");
  fl_diff_destroy(&d);

  /* An unknown interval: compared as they are. */
  d = checked(diff(t, b0, &to, &o));
  CHECK(fl_diff_scale(d) == 1);
  CHECK_STR(fl_diff_notes(d)[0],
            "the baseline's sampling interval is unknown: counts are compared as they are");
  CHECK_INT(dn(d, "top;a")->change, FL_CHANGE_SAME);
  fl_diff_destroy(&d);
  fl_profile_info(t)->interval_ns = 0;
  d = checked(diff(t, b0, &to, &o));
  CHECK_INT(n_notes(d), 0);
  fl_diff_destroy(&d);

  /* Allocation profiles: bytes, no interval. */
  fl_profile_t *ab = fl_profile_new(FL_PROFILE_ALLOC_BYTES),
               *at_ = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  add_all(ab, (const sample_spec_t[]){{1000, "top:1;a:2"}, {500, "top:1;b:3"}, {0, NULL}});
  add_all(at_, (const sample_spec_t[]){{3000, "top:1;a:2"}, {500, "top:1;b:3"}, {0, NULL}});
  d = checked(diff(at_, ab, &to, &o));
  CHECK(fl_diff_scale(d) == 1);
  CHECK_INT(n_notes(d), 0);
  check_nodes(d, (const node_want_t[]){{"top;a", BASE, 1000},
                                       {"top;a", CHANGE, FL_CHANGE_GREW},
                                       {"top;b", CHANGE, FL_CHANGE_SAME},
                                       {NULL}});
  fl_diff_destroy(&d);

  fl_profile_destroy(&ab);
  fl_profile_destroy(&at_);
  fl_profile_destroy(&t100);
  fl_profile_destroy(&b250);
  fl_profile_destroy(&b0);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

static void test_noise(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000), *same = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{100, "top:1;a:2"}, {0, NULL}});
  add_all(t, (const sample_spec_t[]){{115, "top:1;a:2"}, {0, NULL}});
  add_all(same, (const sample_spec_t[]){{100, "top:1;a:2"}, {0, NULL}});
  fl_tree_opts_t to = topts(true, 0.001);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  /* z = (115 - 100) / sqrt(115 + 100) */
  CHECK_NEAR(dn(d, "top;a")->z, 1.0229915092057);
  CHECK_INT(dn(d, "top;a")->change, FL_CHANGE_SAME);
  CHECK(fl_diff_neutral_share(d) == 1);
  CHECK(fl_diff_max_delta(d) == 0);
  fl_diff_destroy(&d);
  o.noise = 0;
  d = checked(diff(t, b, &to, &o));
  CHECK_INT(dn(d, "top;a")->change, FL_CHANGE_GREW);
  CHECK_NEAR(fl_diff_max_delta(d), 15);
  CHECK(fl_diff_neutral_share(d) == 0);
  fl_diff_destroy(&d);
  /* No change is "same" with noise off too. */
  d = checked(diff(same, b, &to, &o));
  CHECK_INT(dn(d, "top;a")->change, FL_CHANGE_SAME);
  fl_diff_destroy(&d);

  /* With a scale: z = (130 - 0.5 * 200) / sqrt(130 + 0.25 * 200). */
  fl_profile_t *b2 = cpu(500000), *t2 = cpu(1000000);
  add_all(b2, (const sample_spec_t[]){{200, "top:1;a:2"}, {0, NULL}});
  add_all(t2, (const sample_spec_t[]){{130, "top:1;a:2"}, {0, NULL}});
  o.noise = 2;
  d = checked(diff(t2, b2, &to, &o));
  CHECK_NEAR(dn(d, "top;a")->z, 30 / sqrt(180));
  CHECK_INT(dn(d, "top;a")->change, FL_CHANGE_GREW);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b2);
  fl_profile_destroy(&t2);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
  fl_profile_destroy(&same);
}

/* ---- negate ---- */

static void test_negate(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{100, "top:1;a:2"}, {50, "top:1;v:3;vx:9"}, {0, NULL}});
  add_all(t, (const sample_spec_t[]){{150, "top:1;a:2"}, {40, "top:1;n:4;nx:9"}, {0, NULL}});
  fl_tree_opts_t to = topts(true, 0.001);
  fl_diff_opts_t o = dopts(2);
  o.negate = true;
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  CHECK(fl_tree_profile(fl_diff_tree(d)) == b);
  CHECK(fl_tree_profile(fl_diff_other_tree(d)) == t);
  CHECK_INT(fl_tree_root(fl_diff_tree(d))->count, 150);
  const fl_diff_node_t *a = dn(d, "top;a");
  CHECK_NEAR(a->base, 150);
  CHECK_NEAR(a->delta, -50);
  CHECK_NEAR(a->z, -50 / sqrt(250));
  CHECK_INT(a->change, FL_CHANGE_SHRANK);
  check_nodes(d, (const node_want_t[]){{"top;v", CHANGE, FL_CHANGE_NEW},
                                       {"top", DELTA, -40},
                                       {"top", CHANGE, FL_CHANGE_SHRANK},
                                       {NULL}});
  size_t nv;
  const fl_vanished_t *v = vanished(d, &nv);
  CHECK_INT(nv, 1);
  CHECK_STR(v[0].node->frame.func, "n");
  CHECK_NEAR(v[0].count, 40);
  CHECK(v[0].parent_match == at(fl_diff_tree(d), "top"));
  fl_diff_destroy(&d);

  /* With a scale, the target comes into the baseline's units. */
  fl_profile_t *b2 = cpu(500000);
  add_all(b2, (const sample_spec_t[]){{200, "top:1;a:2"}, {100, "top:1;v:3;vx:9"}, {0, NULL}});
  d = checked(diff(t, b2, &to, &o));
  CHECK_NEAR(fl_diff_scale(d), 0.5);
  a = dn(d, "top;a");
  CHECK_NEAR(a->base, 300);
  CHECK_NEAR(a->delta, -100);
  CHECK_NEAR(a->z, -100 / sqrt(800));
  v = vanished(d, &nv);
  CHECK_INT(nv, 1);
  CHECK_NEAR(v[0].count, 80);
  fl_diff_destroy(&d);
  o.normalize = true; /* 190 / (300 * 0.5) */
  d = checked(diff(t, b2, &to, &o));
  CHECK_NEAR(fl_diff_scale(d), 190.0 / 300);
  CHECK_NEAR(dn(d, "")->delta, 0);
  CHECK_STR(fl_diff_notes(d)[1], "target scaled to the baseline's total (×0.789)");
  fl_diff_destroy(&d);
  fl_profile_destroy(&b2);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
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
  fl_profile_destroy(&c);
  fl_profile_destroy(&a);
}

/* ---- minwidth ---- */

static void test_minwidth(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{1000, "top:1;a:2"},
                                     {2, "top:1;t:3"},
                                     {50, "top:1;s:4"},
                                     {3, "top:1;h:5"},
                                     {50, "top:1;p:6;q:7"},
                                     {0, NULL}});
  add_all(
      t,
      (const sample_spec_t[]){
          {1000, "top:1;a:2"}, {60, "top:1;t:3"}, {2, "top:1;s:4"}, {2, "top:1;p:6"}, {0, NULL}});
  fl_tree_opts_t to = topts(true, 0.01);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  /* t was a sliver in the baseline: it grew, it is not new. */
  const fl_diff_node_t *nt = dn(d, "top;t");
  CHECK(nt->has_base);
  CHECK_NEAR(nt->base, 2);
  CHECK_INT(nt->change, FL_CHANGE_GREW);
  CHECK(at(fl_diff_other_tree(d), "top;t") == NULL);
  /* s and p shrank to slivers: hidden, not vanished; h is a sliver of the
   * baseline: not listed. q vanished under p, which is hidden. */
  CHECK(at(fl_diff_tree(d), "top;s") == NULL && at(fl_diff_tree(d), "top;p") == NULL);
  CHECK(at(fl_diff_other_tree(d), "top;s") != NULL);
  size_t nv;
  const fl_vanished_t *v = vanished(d, &nv);
  CHECK_INT(nv, 1);
  CHECK_STR(v[0].node->frame.func, "q");
  CHECK(v[0].parent_match == NULL);
  CHECK_NEAR(dn(d, "top")->base, 1105);
  /* The neutral share counts hidden frames too: a's 1000 of 1064. */
  CHECK_NEAR(fl_diff_neutral_share(d), 1000.0 / 1064);
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
}

/* ---- ProfileVega's example ----
 *
 *   f1(n): for n: sum(rand(10_000));  for n: sum(rand(10_000))
 *   f2(n): for n: sum(rand(20_000));  for n: maximum(randn(10,10,10));
 *          for n: sum(rand(5_000))
 *
 * as cell functions in cells 3 and 8 (lines on: the loops are frames f1:3,
 * f1:6 and f2:3, f2:6, f2:9), with sum_rand's time at two lines. */
static void test_profilevega(void) {
  fl_profile_t *b = cpu(1000000), *t = cpu(1000000);
  add_all(b, (const sample_spec_t[]){{70, "top@4:1;f1@3:3;sum_rand@2:5"},
                                     {30, "top@4:1;f1@3:3;sum_rand@2:6"},
                                     {70, "top@4:1;f1@3:6;sum_rand@2:5"},
                                     {30, "top@4:1;f1@3:6;sum_rand@2:6"},
                                     {0, NULL}});
  add_all(t, (const sample_spec_t[]){{140, "top@9:1;f2@8:3;sum_rand@2:5"},
                                     {60, "top@9:1;f2@8:3;sum_rand@2:6"},
                                     {50, "top@9:1;f2@8:6;max_arr@7:2"},
                                     {35, "top@9:1;f2@8:9;sum_rand@2:5"},
                                     {15, "top@9:1;f2@8:9;sum_rand@2:6"},
                                     {0, NULL}});
  fl_tree_opts_t to = topts(true, 0.001);
  fl_diff_opts_t o = dopts(2);
  fl_diff_t *d = checked(diff(t, b, &to, &o));
  CHECK_INT(dn(d, "top")->change, FL_CHANGE_GREW);
  CHECK_NEAR(dn(d, "top")->base, 200);
  const fl_diff_node_t *first = dn(d, "top;f2:3"), *mid = dn(d, "top;f2:6"),
                       *last = dn(d, "top;f2:9");
  CHECK_NEAR(first->base, 100);
  CHECK_INT(first->change, FL_CHANGE_GREW);
  CHECK_INT(dn(d, "top;f2:3;sum_rand:5")->change, FL_CHANGE_GREW);
  CHECK_INT(mid->change, FL_CHANGE_NEW);
  CHECK_INT(dn(d, "top;f2:6;max_arr")->change, FL_CHANGE_NEW);
  CHECK_NEAR(last->base, 100);
  CHECK_NEAR(last->delta, -50);
  CHECK_INT(last->change, FL_CHANGE_SHRANK);
  CHECK_INT(dn(d, "top;f2:9;sum_rand:5")->change, FL_CHANGE_SHRANK);
  size_t nv;
  vanished(d, &nv);
  CHECK_INT(nv, 0);
  fl_diff_destroy(&d);

  /* negate: the baseline's two loops, the first shrank (by the target's
   * growth), the second grew; the max loop vanished. */
  o.negate = true;
  d = checked(diff(t, b, &to, &o));
  check_nodes(d, (const node_want_t[]){{"top;f1:3", CHANGE, FL_CHANGE_SHRANK},
                                       {"top;f1:3", DELTA, -100},
                                       {"top;f1:6", CHANGE, FL_CHANGE_GREW},
                                       {"top;f1:6", BASE, 50},
                                       {NULL}});
  const fl_vanished_t *v = vanished(d, &nv);
  CHECK_INT(nv, 1);
  CHECK_STR(v[0].node->frame.func, "f2");
  CHECK_INT(v[0].node->frame.line, 6);
  CHECK_NEAR(v[0].count, 50);
  CHECK(v[0].parent_match == at(fl_diff_tree(d), "top"));
  fl_diff_destroy(&d);

  /* Without lines: f2 against f1 as a whole. */
  o.negate = false;
  to.lines = false;
  d = checked(diff(t, b, &to, &o));
  check_nodes(d, (const node_want_t[]){{"top;f2", BASE, 200},
                                       {"top;f2;max_arr", CHANGE, FL_CHANGE_NEW},
                                       {"top;f2;sum_rand", BASE, 200},
                                       {"top;f2;sum_rand", DELTA, 50},
                                       {NULL}});
  fl_diff_destroy(&d);
  fl_profile_destroy(&b);
  fl_profile_destroy(&t);
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
  test_redefined_recursion();
  test_inserted_line();
  test_recursion();
  test_new_subtree();
  test_vanished();
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
