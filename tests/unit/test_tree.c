/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests fl_tree: building trees from hand-made profiles with known answers,
 * for every option (C, combine, lines, recur, pruned, filter, threads,
 * minwidth), rows under a row limit, allocation trees, and the time to build
 * a tree from 10^6 samples over 10^5 distinct stacks (printed, not
 * asserted). */
#define _GNU_SOURCE
#include "cflame/fl_tree.h"

#include "cflame/fl_options.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test.h"
#include "fl__common.h"

/* ---- helpers ---- */

static uint32_t frame(fl_profile_t *p, const char *func, const char *file, int line,
                      const char *module, uint64_t addr, uint32_t flags) {
  fl_frame_t f = {
      .func = func, .file = file, .line = line, .module = module, .addr = addr, .flags = flags};
  return fl_profile_frame_id(p, &f);
}

static uint32_t cell(fl_profile_t *p, const char *func, int line) {
  return frame(p, func, "cell[1]", line, "cell[1]", 0, FL_FRAME_CELL | FL_FRAME_REPL);
}

/* Adds a sample of n frames given after n. */
static void sample(fl_profile_t *p, uint64_t weight, int thread, int n, ...) {
  uint32_t st[64];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) st[i] = va_arg(ap, uint32_t);
  va_end(ap);
  fl_profile_add_sample(p, st, (size_t)n, weight, 0, thread);
}

/* The tree as text, one node per line in pre-order:
 *   <indent by depth>func:line[@addr] count/self [x0,x1)[ s=status] */
static const char *dump(const fl_tree_t *t) {
  static char buf[16384];
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < fl_tree_n_nodes(t); i++) {
    const fl_node_t *n = fl_tree_node(t, i);
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%*s%s:%d", 2 * n->depth, "",
                            n->frame.func, n->frame.line);
    if (n->frame.addr)
      len += (size_t)snprintf(buf + len, sizeof buf - len, "@%#llx",
                              (unsigned long long)n->frame.addr);
    len += (size_t)snprintf(buf + len, sizeof buf - len, " %llu/%llu [%llu,%llu)",
                            (unsigned long long)n->count, (unsigned long long)n->self,
                            (unsigned long long)n->x0, (unsigned long long)n->x1);
    if (n->status) len += (size_t)snprintf(buf + len, sizeof buf - len, " s=%u", n->status);
    len += (size_t)snprintf(buf + len, sizeof buf - len, "\n");
  }
  return buf;
}

/* What holds for every tree: ids are pre-order indexes, parents come first
 * and are one level up, ranges have the width of the count and children are
 * packed from the parent's x0, in its range; children plus self never
 * exceed the count, and equal it when nothing is hidden. Returns the number
 * of violations. */
static int tree_violations(const fl_tree_t *t) {
  int bad = 0, max_depth = 0;
  size_t n = fl_tree_n_nodes(t), n_children = 0;
  uint64_t hidden_weight;
  size_t hidden = fl_tree_hidden(t, &hidden_weight);
  if (fl_tree_root(t) != fl_tree_node(t, 0)) bad++;
  if (fl_tree_node(t, n) != NULL) bad++;
  const fl_node_t *root = fl_tree_root(t);
  if (root->parent || root->depth || root->x0 || root->id) bad++;
  if (!(root->frame.flags & FL_FRAME_ROOT)) bad++;
  for (size_t i = 0; i < n; i++) {
    const fl_node_t *node = fl_tree_node(t, i);
    if (node->id != i) bad++;
    if (node->x1 - node->x0 != node->count) bad++;
    if (node->depth > max_depth) max_depth = node->depth;
    if (i &&
        (!node->parent || node->parent->id >= node->id || node->depth != node->parent->depth + 1))
      bad++;
    if (i && !node->count) bad++;
    if (node->self > node->count || node->self_allocs > node->allocs) bad++;
    uint64_t x = node->x0, sum = node->self, allocs = node->self_allocs;
    for (size_t k = 0; k < node->n_children; k++) {
      const fl_node_t *c = node->children[k];
      if (c->parent != node || c->x0 != x) bad++;
      if (k && c->id <= node->children[k - 1]->id) bad++;
      x = c->x1;
      sum += c->count;
      allocs += c->allocs;
    }
    n_children += node->n_children;
    if (x > node->x1 || sum > node->count || allocs > node->allocs) bad++;
    if (!hidden && sum != node->count) bad++;
    if (node->n_children == 0 && node->children != NULL) bad++;
  }
  if (n_children != n - 1) bad++;
  if (max_depth != fl_tree_max_depth(t)) bad++;
  return bad;
}

static fl_tree_opts_t opts_default(void) {
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  return o;
}

static fl_tree_t *build(const fl_profile_t *p, const fl_tree_opts_t *o) {
  char err[256] = "";
  fl_tree_t *t = fl_tree_build(p, o, "cell[1]", err, sizeof err);
  CHECK(t != NULL);
  if (!t) {
    fprintf(stderr, "build failed: %s\n", err);
    exit(1);
  }
  CHECK_INT(tree_violations(t), 0);
  return t;
}

#define CHECK_TREE(p, o, want)       \
  do {                               \
    fl_tree_t *t_ = build((p), (o)); \
    CHECK_STR(dump(t_), (want));     \
    fl_tree_destroy(&t_);            \
  } while (0)

/* ---- the basic profile ----
 *
 *   [main:7, other:20]            4  thread 1
 *   [main:5, work:13]             2  thread 1
 *   [main:5, work:12, helper:30]  3  thread 1
 *   [main:5]                      1  thread 1
 *   [main:5, work:12]             1  thread 2
 *
 * Added so that the first child seen is not the first in source order. */
static fl_profile_t *basic_profile(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = 1000000;
  uint32_t m7 = cell(p, "main", 7), o20 = cell(p, "other", 20), m5 = cell(p, "main", 5);
  uint32_t w13 = cell(p, "work", 13), w12 = cell(p, "work", 12), h30 = cell(p, "helper", 30);
  sample(p, 4, 1, 2, m7, o20);
  sample(p, 2, 1, 2, m5, w13);
  sample(p, 3, 1, 3, m5, w12, h30);
  sample(p, 1, 1, 1, m5);
  sample(p, 1, 2, 2, m5, w12);
  return p;
}

static const char basic_tree[] =
    "cell[1]:0 11/0 [0,11)\n"
    "  main:5 7/1 [0,7)\n"
    "    work:12 4/1 [0,4)\n"
    "      helper:30 3/3 [0,3)\n"
    "    work:13 2/2 [4,6)\n"
    "  main:7 4/0 [7,11)\n"
    "    other:20 4/4 [7,11)\n";

static void test_basic(void) {
  fl_profile_t *p = basic_profile();
  fl_tree_opts_t o = opts_default();
  CHECK(!o.C && o.combine && o.lines == FL_LINES_AUTO && o.recur == FL_RECUR_OFF && !o.pruned &&
        !o.filter && !o.threads && o.minwidth == 0.001);
  fl_tree_t *t = build(p, &o);
  CHECK_STR(dump(t), basic_tree);
  CHECK_INT(fl_tree_n_nodes(t), 7);
  CHECK_INT(fl_tree_max_depth(t), 3);
  CHECK(fl_tree_profile(t) == p);
  uint64_t hw = 99;
  CHECK_INT(fl_tree_hidden(t, &hw), 0);
  CHECK_INT(hw, 0);

  const fl_node_t *root = fl_tree_root(t);
  CHECK_STR(root->frame.func, "cell[1]");
  CHECK_INT(root->frame.flags, FL_FRAME_ROOT);
  CHECK(root->frame.file == NULL && root->frame.module == NULL);
  CHECK_INT(root->n_children, 2);
  const fl_node_t *main5 = root->children[0];
  CHECK_INT(main5->id, 1);
  CHECK_INT(main5->depth, 1);
  CHECK_STR(main5->frame.file, "cell[1]");
  CHECK_STR(main5->frame.module, "cell[1]");
  CHECK_INT(main5->frame.flags, FL_FRAME_CELL | FL_FRAME_REPL);
  CHECK_INT(main5->frame.addr, 0);
  CHECK(main5->parent == root);
  CHECK_INT(main5->n_children, 2);
  CHECK_INT(main5->children[1]->id, 4);
  CHECK_INT(root->children[1]->id, 5);
  CHECK_INT(root->children[1]->children[0]->depth, 2);
  /* Node frames borrow the profile's strings. */
  CHECK(main5->frame.func == fl_profile_frame(p, 2)->func);
  fl_tree_destroy(&t);
  CHECK(t == NULL);
  fl_tree_destroy(&t);

  /* NULL options are the defaults; a NULL root name is "all". */
  char err[128];
  t = fl_tree_build(p, NULL, NULL, err, sizeof err);
  CHECK(t != NULL);
  CHECK_STR(fl_tree_root(t)->frame.func, "all");
  CHECK_INT(fl_tree_n_nodes(t), 7);
  fl_tree_destroy(&t);

  /* The root name is copied. */
  char name[16];
  strcpy(name, "cell[9]");
  t = fl_tree_build(p, &o, name, err, sizeof err);
  strcpy(name, "XXXXXXX");
  CHECK_STR(fl_tree_root(t)->frame.func, "cell[9]");
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* inverted: the callers' tree of the basic profile. Each frame samples
 * ended in is a child of the root as wide as its self weight, its callers
 * above it. */
static void test_inverted(void) {
  fl_profile_t *p = basic_profile();
  fl_tree_opts_t o = opts_default();
  o.inverted = true;
  CHECK_TREE(p, &o,
             "cell[1]:0 11/0 [0,11)\n"
             "  main:5 1/1 [0,1)\n"
             "  work:12 1/0 [1,2)\n"
             "    main:5 1/1 [1,2)\n"
             "  work:13 2/0 [2,4)\n"
             "    main:5 2/2 [2,4)\n"
             "  other:20 4/0 [4,8)\n"
             "    main:7 4/4 [4,8)\n"
             "  helper:30 3/0 [8,11)\n"
             "    work:12 3/0 [8,11)\n"
             "      main:5 3/3 [8,11)\n");
  /* one frame per function: main's two lines are one caller */
  o.lines = FL_LINES_OFF;
  CHECK_TREE(p, &o,
             "cell[1]:0 11/0 [0,11)\n"
             "  helper:0 3/0 [0,3)\n"
             "    work:0 3/0 [0,3)\n"
             "      main:0 3/3 [0,3)\n"
             "  main:0 1/1 [3,4)\n"
             "  other:0 4/0 [4,8)\n"
             "    main:0 4/4 [4,8)\n"
             "  work:0 3/0 [8,11)\n"
             "    main:0 3/3 [8,11)\n");
  fl_profile_destroy(&p);
}

/* lines unset (auto): a notebook cell's code by line, everything else (a
 * program read from a file, a library with debug lines) by function; true
 * and false draw every frame the one way.
 *
 *   [main:5, qsort (qsort.c:40), cmp:9]   4
 *   [main:5, qsort (qsort.c:41), cmp:10]  2
 *   [main:6, prog_f (p.c:3)]              3
 *   [main:6, prog_f (p.c:4)]              1 */
static void test_lines_auto(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t m5 = cell(p, "main", 5), m6 = cell(p, "main", 6);
  uint32_t c9 = cell(p, "cmp", 9), c10 = cell(p, "cmp", 10);
  uint32_t q40 = frame(p, "qsort", "qsort.c", 40, "libc.so.6", 0, FL_FRAME_SYSTEM);
  uint32_t q41 = frame(p, "qsort", "qsort.c", 41, "libc.so.6", 0, FL_FRAME_SYSTEM);
  uint32_t f3 = frame(p, "prog_f", "p.c", 3, "prog", 0, FL_FRAME_CELL);
  uint32_t f4 = frame(p, "prog_f", "p.c", 4, "prog", 0, FL_FRAME_CELL);
  sample(p, 4, 1, 3, m5, q40, c9);
  sample(p, 2, 1, 3, m5, q41, c10);
  sample(p, 3, 1, 2, m6, f3);
  sample(p, 1, 1, 2, m6, f4);
  fl_tree_opts_t o = opts_default();
  o.C = true;
  CHECK(o.lines == FL_LINES_AUTO);
  CHECK_TREE(p, &o,
             "cell[1]:0 10/0 [0,10)\n"
             "  main:5 6/0 [0,6)\n"
             "    qsort:0 6/0 [0,6)\n"
             "      cmp:9 4/4 [0,4)\n"
             "      cmp:10 2/2 [4,6)\n"
             "  main:6 4/0 [6,10)\n"
             "    prog_f:0 4/4 [6,10)\n");
  o.lines = FL_LINES_ON;
  CHECK_TREE(p, &o,
             "cell[1]:0 10/0 [0,10)\n"
             "  main:5 6/0 [0,6)\n"
             "    qsort:40 4/0 [0,4)\n"
             "      cmp:9 4/4 [0,4)\n"
             "    qsort:41 2/0 [4,6)\n"
             "      cmp:10 2/2 [4,6)\n"
             "  main:6 4/0 [6,10)\n"
             "    prog_f:3 3/3 [6,9)\n"
             "    prog_f:4 1/1 [9,10)\n");
  o.lines = FL_LINES_OFF;
  CHECK_TREE(p, &o,
             "cell[1]:0 10/0 [0,10)\n"
             "  main:0 10/0 [0,10)\n"
             "    qsort:0 6/0 [0,6)\n"
             "      cmp:0 6/6 [0,6)\n"
             "    prog_f:0 4/4 [6,10)\n");
  /* The option table leaves lines unset: auto is every front end's default. */
  fl_options_t nb, cmd;
  fl_options_init(&nb, FL_FRONT_NOTEBOOK);
  fl_options_init(&cmd, FL_FRONT_COMMAND);
  CHECK(nb.tree.lines == FL_LINES_AUTO && cmd.tree.lines == FL_LINES_AUTO);
  char err[256];
  CHECK_INT(fl_options_set(&nb, "lines", "true", err, sizeof err), 0);
  CHECK(nb.tree.lines == FL_LINES_ON);
  CHECK_INT(fl_options_set(&cmd, "lines", "false", err, sizeof err), 0);
  CHECK(cmd.tree.lines == FL_LINES_OFF);
  fl_options_free(&nb);
  fl_options_free(&cmd);
  fl_profile_destroy(&p);
}

/* fl_tree_node_of: the drawn node each sample ends in, or NULL when the
 * tree leaves the sample out. */
static void test_node_of(void) {
  fl_profile_t *p = basic_profile();
  static const struct {
    int thread; /* the tree's thread filter, 0: none */
    double minwidth;
    bool inverted;
    const char *want[5]; /* per sample: "func:line" of its node, or NULL */
  } rows[] = {
      {0, 0, false, {"other:20", "work:13", "helper:30", "main:5", "work:12"}},
      {2, 0, false, {NULL, NULL, NULL, NULL, "work:12"}},
      {0, 0.3, false, {"other:20", NULL, NULL, "main:5", "work:12"}},
      {0, 0, true, {"main:7", "main:5", "main:5", "main:5", "main:5"}},
  };
  for (size_t r = 0; r < FL__ARRAY_SIZE(rows); r++) {
    fl_tree_opts_t o = opts_default();
    o.minwidth = rows[r].minwidth;
    o.inverted = rows[r].inverted;
    if (rows[r].thread) {
      o.threads = &rows[r].thread;
      o.n_threads = 1;
    }
    fl_tree_t *t = build(p, &o);
    for (size_t i = 0; i < 5; i++) {
      fl_sample_t s;
      fl_profile_sample(p, i, &s);
      const fl_node_t *n = fl_tree_node_of(t, &s);
      char got[64] = "(null)";
      if (n) snprintf(got, sizeof got, "%s:%d", n->frame.func, n->frame.line);
      CHECK_STR(got, rows[r].want[i] ? rows[r].want[i] : "(null)");
    }
    fl_tree_destroy(&t);
  }
  fl_profile_destroy(&p);
}

static void test_empty(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_tree_opts_t o = opts_default();
  fl_tree_t *t = build(p, &o);
  CHECK_STR(dump(t), "cell[1]:0 0/0 [0,0)\n");
  CHECK_INT(fl_tree_n_nodes(t), 1);
  CHECK_INT(fl_tree_max_depth(t), 0);
  const fl_node_t **rows = NULL;
  size_t merged = 9;
  CHECK_INT(fl_tree_rows(t, 5000, &rows, &merged), 1);
  CHECK_INT(merged, 0);
  free(rows);
  fl_tree_destroy(&t);

  /* Empty stacks: the weight is the root's self. */
  fl_profile_add_sample(p, NULL, 0, 3, 0, 1);
  CHECK_TREE(p, &o, "cell[1]:0 3/3 [0,3)\n");
  fl_profile_destroy(&p);
}

static void test_lines_false(void) {
  fl_profile_t *p = basic_profile();
  fl_tree_opts_t o = opts_default();
  o.lines = FL_LINES_OFF;
  /* One node per function; "work" (called at main:5) comes before "other"
   * (called at main:7) although "other" sorts first by name. */
  CHECK_TREE(p, &o,
             "cell[1]:0 11/0 [0,11)\n"
             "  main:0 11/1 [0,11)\n"
             "    work:0 6/3 [0,6)\n"
             "      helper:0 3/3 [0,3)\n"
             "    other:0 4/4 [6,10)\n");
  fl_tree_t *t = build(p, &o);
  CHECK_STR(fl_tree_node(t, 1)->frame.file, "cell[1]"); /* the file stays */
  fl_tree_destroy(&t);

  /* The call site decides, not the name: "zeta" is called at run:3,
   * "alpha" and "mid" at run:9 (ties of call line go by name). */
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  uint32_t r9 = cell(q, "run", 9), r3 = cell(q, "run", 3), z = cell(q, "zeta", 40),
           a = cell(q, "alpha", 50), m = cell(q, "mid", 20);
  sample(q, 1, 1, 2, r9, a);
  sample(q, 1, 1, 2, r3, z);
  sample(q, 1, 1, 2, r9, m);
  CHECK_TREE(q, &o,
             "cell[1]:0 3/0 [0,3)\n"
             "  run:0 3/0 [0,3)\n"
             "    zeta:0 1/1 [0,1)\n"
             "    alpha:0 1/1 [1,2)\n"
             "    mid:0 1/1 [2,3)\n");
  /* With lines, children go by their own file and line. */
  o.lines = FL_LINES_ON;
  CHECK_TREE(q, &o,
             "cell[1]:0 3/0 [0,3)\n"
             "  run:3 1/0 [0,1)\n"
             "    zeta:40 1/1 [0,1)\n"
             "  run:9 2/0 [1,3)\n"
             "    mid:20 1/1 [1,2)\n"
             "    alpha:50 1/1 [2,3)\n");
  fl_profile_destroy(&q);

  /* A function whose first frame has no file takes a later one's. */
  q = fl_profile_new(FL_PROFILE_CPU);
  uint32_t nf = frame(q, "f", NULL, 0, "prog", 0, 0), wf = frame(q, "f", "f.c", 3, "prog", 0, 0);
  sample(q, 1, 1, 1, nf);
  sample(q, 1, 1, 1, wf);
  o.lines = FL_LINES_OFF;
  t = build(q, &o);
  CHECK_INT(fl_tree_n_nodes(t), 2);
  CHECK_STR(fl_tree_node(t, 1)->frame.file, "f.c");
  CHECK_INT(fl_tree_node(t, 1)->count, 2);
  fl_tree_destroy(&t);
  fl_profile_destroy(&q);
  fl_profile_destroy(&p);
}

static void test_combine(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t m10 = frame(p, "main", "cell[1]", 5, "cell[1]", 0x10, FL_FRAME_CELL | FL_FRAME_REPL);
  uint32_t m14 = frame(p, "main", "cell[1]", 5, "cell[1]", 0x14, FL_FRAME_CELL | FL_FRAME_REPL);
  uint32_t w104 = frame(p, "work", "cell[1]", 12, "cell[1]", 0x104, FL_FRAME_CELL | FL_FRAME_REPL);
  uint32_t w100 = frame(p, "work", "cell[1]", 12, "cell[1]", 0x100, FL_FRAME_CELL | FL_FRAME_REPL);
  sample(p, 2, 1, 2, m10, w104);
  sample(p, 3, 1, 2, m14, w100);
  sample(p, 1, 1, 2, m10, w100);
  fl_tree_opts_t o = opts_default();
  /* combine=true: one node per line, address dropped. */
  CHECK_TREE(p, &o,
             "cell[1]:0 6/0 [0,6)\n"
             "  main:5 6/0 [0,6)\n"
             "    work:12 6/6 [0,6)\n");
  /* combine=false: one node per address, in address order. */
  o.combine = false;
  CHECK_TREE(p, &o,
             "cell[1]:0 6/0 [0,6)\n"
             "  main:5@0x10 3/0 [0,3)\n"
             "    work:12@0x100 1/1 [0,1)\n"
             "    work:12@0x104 2/2 [1,3)\n"
             "  main:5@0x14 3/0 [3,6)\n"
             "    work:12@0x100 3/3 [3,6)\n");
  /* lines=false wins over combine=false. */
  o.lines = FL_LINES_OFF;
  CHECK_TREE(p, &o,
             "cell[1]:0 6/0 [0,6)\n"
             "  main:0 6/0 [0,6)\n"
             "    work:0 6/6 [0,6)\n");
  fl_profile_destroy(&p);
}

/* ---- C=false ----
 *
 *   a [__libc_start_main, main:10, qsort, msort, cmp:3]          5
 *   b [__libc_start_main, main:10, qsort, msort]                 2
 *   c [__libc_start_main, main:11, malloc]                       1
 *   d [__libc_start_main, main:12, xalloc]                       1
 *   e [__libc_start_main, main:12]                               1
 *   f [__libc_start_main, main:10, qsort, msort, cmp:3, malloc]  1
 *
 * libc frames are FL_FRAME_SYSTEM, malloc SYSTEM|ALLOC, xalloc (from an
 * allocator library) ALLOC only. */
static fl_profile_t *libc_profile(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t lsm = frame(p, "__libc_start_main", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM);
  uint32_t m10 = cell(p, "main", 10), m11 = cell(p, "main", 11), m12 = cell(p, "main", 12);
  uint32_t qs = frame(p, "qsort", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM);
  uint32_t ms = frame(p, "msort", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM);
  uint32_t cmp = cell(p, "cmp", 3);
  uint32_t mal = frame(p, "malloc", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM | FL_FRAME_ALLOC);
  uint32_t xal = frame(p, "xalloc", NULL, 0, "libjemalloc.so.2", 0, FL_FRAME_ALLOC);
  sample(p, 5, 1, 5, lsm, m10, qs, ms, cmp);
  sample(p, 2, 1, 4, lsm, m10, qs, ms);
  sample(p, 1, 1, 3, lsm, m11, mal);
  sample(p, 1, 1, 3, lsm, m12, xal);
  sample(p, 1, 1, 2, lsm, m12);
  sample(p, 1, 1, 6, lsm, m10, qs, ms, cmp, mal);
  return p;
}

static void test_c_false(void) {
  fl_profile_t *p = libc_profile();
  fl_tree_opts_t o = opts_default();
  /* The comparator hangs under main:10 (which called qsort), main:10 takes
   * msort's self time, and statuses say what was folded in. */
  CHECK_TREE(p, &o,
             "cell[1]:0 11/0 [0,11) s=1\n"
             "  main:10 8/2 [0,8) s=1\n"
             "    cmp:3 6/6 [0,6) s=3\n"
             "  main:11 1/1 [8,9) s=3\n"
             "  main:12 2/2 [9,11) s=2\n");
  fl_tree_t *t = build(p, &o);
  CHECK_INT(fl_tree_node(t, 1)->status, FL_STATUS_SYSTEM);
  CHECK_INT(fl_tree_node(t, 2)->status, FL_STATUS_SYSTEM | FL_STATUS_ALLOC);
  CHECK_INT(fl_tree_node(t, 4)->status, FL_STATUS_ALLOC);
  fl_tree_destroy(&t);

  /* C=true: everything shows, no status. */
  o.C = true;
  CHECK_TREE(p, &o,
             "cell[1]:0 11/0 [0,11)\n"
             "  __libc_start_main:0 11/0 [0,11)\n"
             "    main:10 8/0 [0,8)\n"
             "      qsort:0 8/0 [0,8)\n"
             "        msort:0 8/2 [0,8)\n"
             "          cmp:3 6/5 [0,6)\n"
             "            malloc:0 1/1 [0,1)\n"
             "    main:11 1/0 [8,9)\n"
             "      malloc:0 1/1 [8,9)\n"
             "    main:12 2/1 [9,11)\n"
             "      xalloc:0 1/1 [9,10)\n");
  t = build(p, &o);
  CHECK_STR(fl_tree_node(t, 3)->frame.module, "libc.so.6");
  CHECK_INT(fl_tree_node(t, 3)->frame.flags, FL_FRAME_SYSTEM);
  fl_tree_destroy(&t);

  /* The filter sees folded frames: filter=qsort keeps samples a, b, f. */
  o.C = false;
  o.filter = "qsort";
  CHECK_TREE(p, &o,
             "cell[1]:0 8/0 [0,8) s=1\n"
             "  main:10 8/2 [0,8) s=1\n"
             "    cmp:3 6/6 [0,6) s=3\n");

  /* A sample made only of system frames: the root takes it. */
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  uint32_t st = frame(q, "start_thread", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM);
  uint32_t mc = frame(q, "memcpy", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM);
  sample(q, 2, 1, 2, st, mc);
  o = opts_default();
  CHECK_TREE(q, &o, "cell[1]:0 2/2 [0,2) s=1\n");
  fl_profile_destroy(&q);
  fl_profile_destroy(&p);
}

/* C=false keeps the call a wait waited in: a thread blocked in
 * pthread_mutex_lock (the libc frames under it folded into it) reads
 * [off-CPU: futex] under pthread_mutex_lock under waiter_fn. A wait for a
 * CPU is in no call: it stays under the cell code, whatever libc code was
 * running (memcpy, folded as CPU samples are). */
static void test_c_false_keeps_the_waiting_call(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_WALL);
  uint32_t st = frame(p, "start_thread", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM);
  uint32_t th = cell(p, "waiter_thread", 1), fn = cell(p, "waiter_fn", 2);
  uint32_t lock = frame(p, "pthread_mutex_lock", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM);
  uint32_t lll = frame(p, "__lll_lock_wait", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM);
  uint32_t futex = frame(p, "[off-CPU: futex]", NULL, 0, NULL, 0, FL_FRAME_OFFCPU);
  uint32_t mc = frame(p, "memcpy", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM);
  uint32_t run =
      frame(p, "[off-CPU: runnable]", NULL, 0, NULL, 0, FL_FRAME_OFFCPU | FL_FRAME_RUNNABLE);
  sample(p, 4, 1, 6, st, th, fn, lock, lll, futex);
  sample(p, 2, 1, 4, st, th, fn, mc);
  sample(p, 1, 1, 5, st, th, fn, mc, run);
  fl_tree_opts_t o = opts_default();
  CHECK_TREE(p, &o,
             "cell[1]:0 7/0 [0,7) s=1\n"
             "  waiter_thread:1 7/0 [0,7)\n"
             "    waiter_fn:2 7/2 [0,7) s=1\n"
             "      [off-CPU: runnable]:0 1/1 [0,1)\n"
             "      pthread_mutex_lock:0 4/0 [1,5) s=1\n"
             "        [off-CPU: futex]:0 4/4 [1,5)\n");
  /* C=true: every frame, as recorded. */
  o.C = true;
  fl_tree_t *t = build(p, &o);
  const char *all = dump(t);
  CHECK(strstr(all, "        pthread_mutex_lock:0 4/0 [3,7)\n"
                    "          __lll_lock_wait:0 4/0 [3,7)\n"
                    "            [off-CPU: futex]:0 4/4 [3,7)\n") != NULL);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* ---- recur ----
 *
 *   A [main:2, f:5, f:5, f:6, g:9]  3
 *   B [main:2, f:5, f:5, f:5]       2
 *   C [main:2, f:6, g:9]            1 */
static void test_recur(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t m2 = frame(p, "main", "r.c", 2, "prog", 0, FL_FRAME_CELL);
  uint32_t f5 = frame(p, "f", "r.c", 5, "prog", 0, FL_FRAME_CELL);
  uint32_t f6 = frame(p, "f", "r.c", 6, "prog", 0, FL_FRAME_CELL);
  uint32_t g9 = frame(p, "g", "r.c", 9, "prog", 0, FL_FRAME_CELL);
  sample(p, 3, 1, 5, m2, f5, f5, f6, g9);
  sample(p, 2, 1, 4, m2, f5, f5, f5);
  sample(p, 1, 1, 3, m2, f6, g9);
  fl_tree_opts_t o = opts_default();
  o.lines = FL_LINES_ON; /* a program's frames: by line only when asked */
  CHECK_TREE(p, &o,
             "cell[1]:0 6/0 [0,6)\n"
             "  main:2 6/0 [0,6)\n"
             "    f:5 5/0 [0,5)\n"
             "      f:5 5/0 [0,5)\n"
             "        f:5 2/2 [0,2)\n"
             "        f:6 3/0 [2,5)\n"
             "          g:9 3/3 [2,5)\n"
             "    f:6 1/0 [5,6)\n"
             "      g:9 1/1 [5,6)\n");
  /* flat: f:5 inside f rewinds to the first f:5; f:6 inside f becomes a
   * sibling of f:5 (a line of the loop body). */
  o.recur = FL_RECUR_FLAT;
  CHECK_TREE(p, &o,
             "cell[1]:0 6/0 [0,6)\n"
             "  main:2 6/0 [0,6)\n"
             "    f:5 2/2 [0,2)\n"
             "    f:6 4/0 [2,6)\n"
             "      g:9 4/4 [2,6)\n");
  /* f -> f -> f -> g per function: one f with all the weight. */
  o.lines = FL_LINES_OFF;
  CHECK_TREE(p, &o,
             "cell[1]:0 6/0 [0,6)\n"
             "  main:0 6/0 [0,6)\n"
             "    f:0 6/2 [0,6)\n"
             "      g:0 4/4 [0,4)\n");
  fl_profile_destroy(&p);

  /* A node a rewind leaves without weight is not drawn (f:5 here). */
  p = fl_profile_new(FL_PROFILE_CPU);
  m2 = frame(p, "main", "r.c", 2, "prog", 0, FL_FRAME_CELL);
  f5 = frame(p, "f", "r.c", 5, "prog", 0, FL_FRAME_CELL);
  f6 = frame(p, "f", "r.c", 6, "prog", 0, FL_FRAME_CELL);
  g9 = frame(p, "g", "r.c", 9, "prog", 0, FL_FRAME_CELL);
  sample(p, 3, 1, 5, m2, f5, f5, f6, g9);
  o = opts_default();
  o.recur = FL_RECUR_FLAT;
  o.minwidth = 0;
  o.lines = FL_LINES_ON;
  CHECK_TREE(p, &o,
             "cell[1]:0 3/0 [0,3)\n"
             "  main:2 3/0 [0,3)\n"
             "    f:6 3/0 [0,3)\n"
             "      g:9 3/3 [0,3)\n");
  fl_tree_t *t = build(p, &o);
  CHECK_INT(fl_tree_hidden(t, NULL), 0);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);

  /* Mutual recursion a -> b -> a -> b -> c: flat gives a -> b -> c. A
   * same-named function of another module is another function. */
  p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t a = frame(p, "a", "m.c", 1, "prog", 0, 0), b = frame(p, "b", "m.c", 2, "prog", 0, 0);
  uint32_t c = frame(p, "c", "m.c", 3, "prog", 0, 0);
  uint32_t a_lib = frame(p, "a", "m.c", 1, "lib.so", 0, 0);
  sample(p, 1, 1, 5, a, b, a, b, c);
  sample(p, 1, 1, 3, a, a_lib, c);
  o = opts_default();
  o.recur = FL_RECUR_FLAT;
  o.lines = FL_LINES_ON;
  CHECK_TREE(p, &o,
             "cell[1]:0 2/0 [0,2)\n"
             "  a:1 2/0 [0,2)\n"
             "    a:1 1/0 [0,1)\n"
             "      c:3 1/1 [0,1)\n"
             "    b:2 1/0 [1,2)\n"
             "      c:3 1/1 [1,2)\n");
  fl_profile_destroy(&p);
}

static void test_pruned(void) {
  fl_profile_t *p = basic_profile();
  fl_tree_opts_t o = opts_default();
  const char *const work[] = {"work", NULL};
  o.pruned = work;
  CHECK_TREE(p, &o,
             "cell[1]:0 11/0 [0,11)\n"
             "  main:5 7/1 [0,7)\n"
             "    work:12 4/4 [0,4)\n"
             "    work:13 2/2 [4,6)\n"
             "  main:7 4/0 [7,11)\n"
             "    other:20 4/4 [7,11)\n");
  const char *const two[] = {"nothing", "main", NULL};
  o.pruned = two;
  CHECK_TREE(p, &o,
             "cell[1]:0 11/0 [0,11)\n"
             "  main:5 7/7 [0,7)\n"
             "  main:7 4/4 [7,11)\n");
  /* Exact names only. */
  const char *const part[] = {"wor", NULL};
  o.pruned = part;
  CHECK_TREE(p, &o, basic_tree);
  const char *const none[] = {NULL};
  o.pruned = none;
  CHECK_TREE(p, &o, basic_tree);
  fl_profile_destroy(&p);
}

static void test_filter(void) {
  fl_profile_t *p = basic_profile();
  fl_tree_opts_t o = opts_default();
  o.filter = "help";
  CHECK_TREE(p, &o,
             "cell[1]:0 3/0 [0,3)\n"
             "  main:5 3/0 [0,3)\n"
             "    work:12 3/0 [0,3)\n"
             "      helper:30 3/3 [0,3)\n");
  /* A substring, anywhere in the stack. */
  o.filter = "ther";
  CHECK_TREE(p, &o,
             "cell[1]:0 4/0 [0,4)\n"
             "  main:7 4/0 [0,4)\n"
             "    other:20 4/4 [0,4)\n");
  o.filter = "mai";
  CHECK_TREE(p, &o, basic_tree);
  o.filter = "nomatch";
  CHECK_TREE(p, &o, "cell[1]:0 0/0 [0,0)\n");
  /* The substring is not a regex. */
  o.filter = "^(oth|hel)";
  CHECK_TREE(p, &o, "cell[1]:0 0/0 [0,0)\n");
  o.filter_is_regex = true;
  CHECK_TREE(p, &o,
             "cell[1]:0 7/0 [0,7)\n"
             "  main:5 3/0 [0,3)\n"
             "    work:12 3/0 [0,3)\n"
             "      helper:30 3/3 [0,3)\n"
             "  main:7 4/0 [3,7)\n"
             "    other:20 4/4 [3,7)\n");
  o.filter = "^work$";
  fl_tree_t *t = build(p, &o);
  CHECK_INT(fl_tree_root(t)->count, 6);
  fl_tree_destroy(&t);

  /* A bad regex is an error naming the pattern and why. */
  char err[256] = "";
  o.filter = "(unclosed";
  t = fl_tree_build(p, &o, "cell[1]", err, sizeof err);
  CHECK(t == NULL);
  CHECK(strstr(err, "\"(unclosed\"") != NULL);
  CHECK(strstr(err, "regular expression") != NULL);
  CHECK(strlen(err) > strlen("filter: bad regular expression \"(unclosed\": "));
  fprintf(stderr, "bad regex error: %s\n", err);
  fl_profile_destroy(&p);
}

static void test_threads(void) {
  fl_profile_t *p = basic_profile();
  fl_tree_opts_t o = opts_default();
  const int two[] = {2};
  o.threads = two;
  o.n_threads = 1;
  CHECK_TREE(p, &o,
             "cell[1]:0 1/0 [0,1)\n"
             "  main:5 1/0 [0,1)\n"
             "    work:12 1/1 [0,1)\n");
  const int both[] = {2, 1};
  o.threads = both;
  o.n_threads = 2;
  CHECK_TREE(p, &o, basic_tree);
  const int absent[] = {99};
  o.threads = absent;
  o.n_threads = 1;
  CHECK_TREE(p, &o, "cell[1]:0 0/0 [0,0)\n");
  fl_profile_destroy(&p);
}

static void test_minwidth(void) {
  fl_profile_t *p = basic_profile();
  fl_tree_opts_t o = opts_default();
  /* 0.3 of 11 is 3.3: work:13 (2) and helper:30 (3) are hidden; their
   * parents keep their self counts, so the hidden weight is a gap. */
  o.minwidth = 0.3;
  fl_tree_t *t = build(p, &o);
  CHECK_STR(dump(t),
            "cell[1]:0 11/0 [0,11)\n"
            "  main:5 7/1 [0,7)\n"
            "    work:12 4/1 [0,4)\n"
            "  main:7 4/0 [7,11)\n"
            "    other:20 4/4 [7,11)\n");
  uint64_t hw = 0;
  CHECK_INT(fl_tree_hidden(t, &hw), 2);
  CHECK_INT(hw, 5);
  CHECK_INT(fl_tree_max_depth(t), 2);
  CHECK_INT(fl_tree_node(t, 3)->id, 3);
  fl_tree_destroy(&t);

  /* 0.5: everything under main:5 and main:7 goes; the count of hidden
   * frames includes descendants, the weight only the topmost ones. */
  o.minwidth = 0.5;
  t = build(p, &o);
  CHECK_STR(dump(t),
            "cell[1]:0 11/0 [0,11)\n"
            "  main:5 7/1 [0,7)\n");
  CHECK_INT(fl_tree_hidden(t, &hw), 5);
  CHECK_INT(hw, 10);
  CHECK_INT(fl_tree_root(t)->n_children, 1);
  fl_tree_destroy(&t);

  /* A frame exactly at the threshold stays: 2 / 8 = 0.25. */
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  uint32_t a = cell(q, "a", 1), b = cell(q, "b", 2);
  sample(q, 6, 1, 1, a);
  sample(q, 2, 1, 1, b);
  o.minwidth = 0.25;
  t = build(q, &o);
  CHECK_INT(fl_tree_n_nodes(t), 3);
  CHECK_INT(fl_tree_hidden(t, NULL), 0);
  fl_tree_destroy(&t);
  o.minwidth = 0.26;
  t = build(q, &o);
  CHECK_INT(fl_tree_n_nodes(t), 2);
  CHECK_INT(fl_tree_hidden(t, &hw), 1);
  CHECK_INT(hw, 2);
  fl_tree_destroy(&t);
  fl_profile_destroy(&q);
  fl_profile_destroy(&p);
}

/* The children minwidth hides are listed under their drawn parent, one
 * list per parent, widest first (ties by name), summing to the gap they
 * leave; a hidden child's descendants are in its count, not listed. */
static void test_narrow(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t m = cell(p, "main", 1), big = cell(p, "big", 2), n1 = cell(p, "n1", 3),
           n2 = cell(p, "n2", 4), n3 = cell(p, "n3", 5), deep = cell(p, "deep", 6),
           other = cell(p, "other", 7), big2 = cell(p, "big2", 8), tiny = cell(p, "tiny", 9);
  sample(p, 60, 1, 2, m, big);
  sample(p, 3, 1, 2, m, n1);
  sample(p, 1, 1, 3, m, n1, deep);
  sample(p, 5, 1, 2, m, n3);
  sample(p, 5, 1, 2, m, n2);
  sample(p, 2, 1, 1, m);
  sample(p, 20, 1, 2, other, big2);
  sample(p, 1, 1, 2, other, tiny);
  fl_tree_opts_t o = opts_default();
  o.minwidth = 0.06; /* of 97: 5.82, so n1 (4), n2, n3 (5) and tiny (1) go */
  fl_tree_t *t = build(p, &o);
  CHECK_STR(dump(t),
            "cell[1]:0 97/0 [0,97)\n"
            "  main:1 76/2 [0,76)\n"
            "    big:2 60/60 [0,60)\n"
            "  other:7 21/0 [76,97)\n"
            "    big2:8 20/20 [76,96)\n");
  const fl_narrow_t *items = NULL;
  uint64_t w = 0;
  const fl_node_t *main_node = fl_tree_node(t, 1), *other_node = fl_tree_node(t, 3);
  CHECK_INT(fl_tree_narrow(t, main_node, &items, &w), 3);
  CHECK_INT(w, 14);
  CHECK_INT(w, main_node->count - main_node->self - main_node->children[0]->count);
  CHECK_STR(items[0].frame.func, "n2");
  CHECK_INT(items[0].count, 5);
  CHECK_STR(items[1].frame.func, "n3");
  CHECK_INT(items[1].count, 5);
  CHECK_STR(items[2].frame.func, "n1");
  CHECK_INT(items[2].count, 4); /* deep's sample with it */
  CHECK_INT(fl_tree_narrow(t, other_node, &items, &w), 1);
  CHECK_STR(items[0].frame.func, "tiny");
  CHECK_INT(w, 1);
  CHECK_INT(fl_tree_narrow(t, fl_tree_root(t), &items, &w), 0);
  CHECK(items == NULL && w == 0);
  CHECK_INT(fl_tree_narrow(t, fl_tree_node(t, 2), &items, &w), 0);
  fl_tree_destroy(&t);
  /* minwidth 0 hides nothing and lists nothing. */
  o.minwidth = 0;
  t = build(p, &o);
  for (size_t i = 0; i < fl_tree_n_nodes(t); i++)
    CHECK_INT(fl_tree_narrow(t, fl_tree_node(t, i), &items, NULL), 0);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

static void test_rows(void) {
  fl_profile_t *p = basic_profile();
  fl_tree_opts_t o = opts_default();
  fl_tree_t *t = build(p, &o);
  const fl_node_t **rows = NULL;
  size_t merged = 99;

  /* All fit: pre-order. */
  CHECK_INT(fl_tree_rows(t, 5000, &rows, &merged), 7);
  CHECK_INT(merged, 0);
  for (size_t i = 0; i < 7; i++) CHECK(rows[i] == fl_tree_node(t, i));
  free(rows);
  CHECK_INT(fl_tree_rows(t, 7, &rows, &merged), 7);
  CHECK_INT(merged, 0);
  free(rows);
  /* 0: no limit. */
  CHECK_INT(fl_tree_rows(t, 0, &rows, &merged), 7);
  CHECK_INT(merged, 0);
  free(rows);

  /* 4 rows: the widest are root (11), main:5 (7), then work:12, main:7 and
   * other:20 (4 each, by id): other:20 and the narrower helper:30 and
   * work:13 are left out. Parents stay. */
  CHECK_INT(fl_tree_rows(t, 4, &rows, &merged), 4);
  CHECK_INT(merged, 3);
  CHECK_INT(rows[0]->id, 0);
  CHECK_INT(rows[1]->id, 1);
  CHECK_INT(rows[2]->id, 2);
  CHECK_INT(rows[3]->id, 5);
  free(rows);
  /* 5 rows: other:20 comes in with its parent main:7. */
  CHECK_INT(fl_tree_rows(t, 5, &rows, &merged), 5);
  CHECK_INT(merged, 2);
  CHECK_INT(rows[4]->id, 6);
  free(rows);
  CHECK_INT(fl_tree_rows(t, 1, &rows, &merged), 1);
  CHECK_INT(merged, 6);
  CHECK(rows[0] == fl_tree_root(t));
  free(rows);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);

  /* A chain of equal counts under a wide sibling: a child never comes
   * without its parent. [a, b, c, d] 5, [e] 4, [e, f] 1 -> 3 rows. */
  p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t a = cell(p, "a", 1), b = cell(p, "b", 2), c = cell(p, "c", 3), d = cell(p, "d", 4);
  uint32_t e = cell(p, "e", 5), f = cell(p, "f", 6);
  sample(p, 5, 1, 4, a, b, c, d);
  sample(p, 4, 1, 1, e);
  sample(p, 1, 1, 2, e, f);
  t = build(p, &o);
  CHECK_INT(fl_tree_rows(t, 3, &rows, &merged), 3);
  CHECK_INT(merged, 4);
  CHECK_STR(rows[1]->frame.func, "a");
  CHECK_STR(rows[2]->frame.func, "b");
  free(rows);
  CHECK_INT(fl_tree_rows(t, 6, &rows, &merged), 6);
  CHECK_STR(rows[5]->frame.func, "e");
  free(rows);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

static void test_alloc(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  uint32_t m5 = cell(p, "main", 5), w12 = cell(p, "work", 12), w13 = cell(p, "work", 13);
  uint32_t mal = frame(p, "malloc", NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM | FL_FRAME_ALLOC);
  uint32_t st1[] = {m5, w12, mal}, st2[] = {m5, w13, mal}, st3[] = {m5, mal};
  fl_profile_add_sample(p, st1, 3, 4096, 2, 1);
  fl_profile_add_sample(p, st2, 3, 100, 1, 1);
  fl_profile_add_sample(p, st3, 2, 50, 1, 1);
  fl_profile_add_sample(p, st1, 3, 4096, 3, 1);
  fl_tree_opts_t o = opts_default();
  fl_tree_t *t = build(p, &o);
  CHECK_STR(dump(t),
            "cell[1]:0 8342/0 [0,8342)\n"
            "  main:5 8342/50 [0,8342) s=3\n"
            "    work:12 8192/8192 [0,8192) s=3\n"
            "    work:13 100/100 [8192,8292) s=3\n");
  CHECK_INT(fl_tree_root(t)->allocs, 7);
  CHECK_INT(fl_tree_root(t)->self_allocs, 0);
  CHECK_INT(fl_tree_node(t, 1)->allocs, 7);
  CHECK_INT(fl_tree_node(t, 1)->self_allocs, 1);
  CHECK_INT(fl_tree_node(t, 2)->allocs, 5);
  CHECK_INT(fl_tree_node(t, 2)->self_allocs, 5);
  CHECK_INT(fl_tree_node(t, 3)->allocs, 1);
  fl_tree_destroy(&t);
  o.C = true;
  t = build(p, &o);
  CHECK_INT(fl_tree_n_nodes(t), 7);
  /* Under main:5, malloc (no file) sorts before work:12 and work:13. */
  CHECK_STR(fl_tree_node(t, 2)->frame.func, "malloc");
  CHECK_STR(fl_tree_node(t, 4)->frame.func, "malloc");
  CHECK_INT(fl_tree_node(t, 4)->self_allocs, 5); /* malloc under work:12 */
  CHECK_INT(fl_tree_node(t, 4)->self, 8192);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* ---- performance ---- */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); /* CPU time: steadier on a busy machine */
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Builds the tree three times and keeps the best time (the machines that
 * run the tests are shared). Returns the last tree. */
static fl_tree_t *timed_build(const fl_profile_t *p, const fl_tree_opts_t *o, double *best_ms) {
  fl_tree_t *t = NULL;
  char err[128];
  *best_ms = 1e30;
  for (int run = 0; run < 3; run++) {
    fl_tree_destroy(&t);
    double t0 = now();
    t = fl_tree_build(p, o, "bench", err, sizeof err);
    double ms = (now() - t0) * 1e3;
    if (ms < *best_ms) *best_ms = ms;
  }
  CHECK(t != NULL);
  return t;
}

/* 10^6 samples over 10^5 distinct stacks of depth 20: levels 0-1 are fixed
 * (main, run), levels 2-10 are the base-4 digits of the stack number (so
 * stacks share prefixes as call trees do), levels 11-19 depend on the
 * stack number modulo 3, and level 12 is a system library's. Samples visit
 * the stacks in a scattered order. Every distinct stack has its own leaf,
 * so the full tree has about 10^6 frames: a worst case. */
static void test_performance(void) {
  enum { STACKS = 100000, SAMPLES = 1000000, DEPTH = 20 };
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t ids[DEPTH][8];
  char name[32];
  for (int d = 0; d < DEPTH; d++)
    for (int k = 0; k < 8; k++) {
      snprintf(name, sizeof name, "func_%d_%d", d, k);
      ids[d][k] = d == 12 ? frame(p, name, NULL, 0, "libc.so.6", 0, FL_FRAME_SYSTEM)
                          : frame(p, name, "bench.c", 10 * d + k, "bench", 0, FL_FRAME_CELL);
    }
  double t0 = now();
  uint32_t st[DEPTH];
  for (int i = 0; i < SAMPLES; i++) {
    int s = (int)(((long long)i * 7919) % STACKS);
    st[0] = ids[0][0];
    st[1] = ids[1][0];
    for (int d = 2; d <= 10; d++) st[d] = ids[d][(s >> (2 * (10 - d))) & 3];
    for (int d = 11; d < DEPTH; d++) st[d] = ids[d][(s + d) % 3];
    fl_profile_add_sample(p, st, DEPTH, 1, 0, 1 + i % 4);
  }
  double profile_ms = (now() - t0) * 1e3;

  double default_ms, full_ms, c_ms, other_ms;
  fl_tree_opts_t o = opts_default();
  fl_tree_t *t = timed_build(p, &o, &default_ms);
  CHECK_INT(fl_tree_root(t)->count, SAMPLES);
  size_t shown = fl_tree_n_nodes(t);
  fl_tree_destroy(&t);

  o.C = true;
  t = timed_build(p, &o, &c_ms);
  CHECK_INT(fl_tree_root(t)->count, SAMPLES);
  fl_tree_destroy(&t);

  o.C = false;
  o.minwidth = 0;
  t = timed_build(p, &o, &full_ms);
  CHECK_INT(tree_violations(t), 0);
  size_t all = fl_tree_n_nodes(t);
  const fl_node_t **rows = NULL;
  size_t merged;
  double r0 = now();
  size_t n_rows = fl_tree_rows(t, 5000, &rows, &merged);
  double rows_ms = (now() - r0) * 1e3;
  CHECK_INT(n_rows, 5000);
  CHECK_INT(merged, all - 5000);
  /* Every row's parent is a row, and rows are in pre-order. */
  bool *in = calloc(all, sizeof *in);
  int bad = 0;
  for (size_t i = 0; i < n_rows; i++) {
    if (i && rows[i]->id <= rows[i - 1]->id) bad++;
    if (rows[i]->parent && !in[rows[i]->parent->id]) bad++;
    in[rows[i]->id] = true;
  }
  CHECK_INT(bad, 0);
  free(in);
  free(rows);
  fl_tree_destroy(&t);

  o.lines = FL_LINES_OFF;
  o.recur = FL_RECUR_FLAT;
  const int th[] = {1, 3};
  o.threads = th;
  o.n_threads = 2;
  o.filter = "func_5_[12]";
  o.filter_is_regex = true;
  t = timed_build(p, &o, &other_ms);
  CHECK_INT(tree_violations(t), 0);
  fl_tree_destroy(&t);

  fprintf(stderr,
          "performance (CPU time, best of 3): %d samples, %d distinct stacks, depth %d\n"
          "  profile from the samples   %7.1f ms\n"
          "  tree, default options      %7.1f ms (%zu frames drawn)\n"
          "  tree, C=true               %7.1f ms\n"
          "  tree, minwidth=0           %7.1f ms (%zu frames)\n"
          "  rows, 5000 of them         %7.1f ms\n"
          "  tree, lines=false recur=flat threads=1,3 filter=/regex/ minwidth=0  %7.1f ms\n",
          SAMPLES, STACKS, DEPTH, profile_ms, default_ms, shown, c_ms, full_ms, all, rows_ms,
          other_ms);
  fl_profile_destroy(&p);
}

int main(void) {
  test_basic();
  test_empty();
  test_inverted();
  test_node_of();
  test_lines_false();
  test_lines_auto();
  test_combine();
  test_c_false();
  test_c_false_keeps_the_waiting_call();
  test_recur();
  test_pruned();
  test_filter();
  test_threads();
  test_minwidth();
  test_narrow();
  test_rows();
  test_alloc();
  test_performance();
  return TEST_DONE();
}
