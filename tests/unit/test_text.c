/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests the text reports (fl_text_tree, fl_text_flat) on small trees whose
 * every line is known: layout, cutting to cols, deep indentation, maxdepth,
 * mincount, max_lines, the hidden-frames note, flat aggregation counted
 * once per sample, allocation units; the live table of cflame record --top
 * (fl_text_top_live) within its lines and columns. */
#include "cflame/fl_diff.h"
#include "cflame/fl_render.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "fl__common.h"

static uint32_t frame(fl_profile_t *p, const char *func, const char *file, int line,
                      const char *module) {
  fl_frame_t f = {
      .func = func, .file = file, .line = line, .module = module, .flags = FL_FRAME_CELL};
  return fl_profile_frame_id(p, &f);
}

static uint32_t cell(fl_profile_t *p, const char *func, int line) {
  return frame(p, func, "cell[1]", line, "cell[1]");
}

static void sample(fl_profile_t *p, uint64_t weight, uint64_t allocs, int n, ...) {
  uint32_t st[64];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) st[i] = va_arg(ap, uint32_t);
  va_end(ap);
  fl_profile_add_sample(p, st, (size_t)n, weight, allocs, 1);
}

static fl_tree_t *build(const fl_profile_t *p, double minwidth, bool lines, const char *root) {
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  o.minwidth = minwidth;
  o.lines = lines ? FL_LINES_ON : FL_LINES_OFF;
  char err[128];
  fl_tree_t *t = fl_tree_build(p, &o, root, err, sizeof err);
  if (!t) {
    fprintf(stderr, "build failed: %s\n", err);
    exit(1);
  }
  return t;
}

/* Checks a report (new string, freed here) against the expected text. */
#define CHECK_REPORT(report, want) \
  do {                             \
    char *r_ = (report);           \
    CHECK_STR(r_, (want));         \
    free(r_);                      \
  } while (0)

/* The basic profile of test_tree.c: [main:7, other:20] 4, [main:5,
 * work:13] 2, [main:5, work:12, helper:30] 3, [main:5] 1, [main:5, work:12]
 * 1, at 1 ms. */
static fl_profile_t *basic_profile(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = 1000000;
  uint32_t m7 = cell(p, "main", 7), o20 = cell(p, "other", 20), m5 = cell(p, "main", 5);
  uint32_t w13 = cell(p, "work", 13), w12 = cell(p, "work", 12), h30 = cell(p, "helper", 30);
  sample(p, 4, 0, 2, m7, o20);
  sample(p, 2, 0, 2, m5, w13);
  sample(p, 3, 0, 3, m5, w12, h30);
  sample(p, 1, 0, 1, m5);
  sample(p, 1, 0, 2, m5, w12);
  return p;
}

static void test_opts_init(void) {
  fl_text_opts_t o;
  memset(&o, 0xff, sizeof o);
  fl_text_opts_init(&o);
  CHECK_INT(o.maxdepth, 0);
  CHECK_INT(o.mincount, 0);
  CHECK_INT(o.cols, 100);
  CHECK_INT(o.max_lines, 0);
}

/* The reports of basic_profile (minwidth 0.001, the default options), a
 * line an element: the cases below keep some of these lines. */
static const char *const tree_lines[] = {
    "Total: 11 samples (interval 1 ms)\n",     /* 0 */
    "Count  Self  Frame\n",                    /* 1 */
    "   11     0  cell[1]\n",                  /* 2 */
    "    7     1    main  cell[1]:5\n",        /* 3 */
    "    4     1      work  cell[1]:12\n",     /* 4 */
    "    3     3        helper  cell[1]:30\n", /* 5 */
    "    2     2      work  cell[1]:13\n",     /* 6 */
    "    4     0    main  cell[1]:7\n",        /* 7 */
    "    4     4      other  cell[1]:20\n",    /* 8 */
};
/* Most expensive first; ties (4) by function, file and line. The root is
 * not a row. */
static const char *const flat_lines[] = {
    "Total: 11 samples (interval 1 ms)\n",          /* 0 */
    "Count  Self  Percent  Function  File:Line\n",  /* 1 */
    "    7     1    63.6%  main      cell[1]:5\n",  /* 2 */
    "    4     0    36.4%  main      cell[1]:7\n",  /* 3 */
    "    4     4    36.4%  other     cell[1]:20\n", /* 4 */
    "    4     1    36.4%  work      cell[1]:12\n", /* 5 */
    "    3     3    27.3%  helper    cell[1]:30\n", /* 6 */
    "    2     2    18.2%  work      cell[1]:13\n", /* 7 */
};

/* A report of basic_profile, and which of the full report's lines it
 * keeps: "01237" is lines 0, 1, 2, 3 and 7, then the line last, if any. */
typedef struct report_case {
  const char *what;
  bool flat;
  double minwidth;
  bool null_opts; /* NULL for the options: the defaults */
  int maxdepth;
  uint64_t mincount;
  size_t max_lines;
  const char *keep;
  const char *last;
} report_case_t;

static const report_case_t report_cases[] = {
    {"the defaults", false, 0.001, false, 0, 0, 0, "012345678", NULL},
    {"NULL options: the defaults", false, 0.001, true, 0, 0, 0, "012345678", NULL},
    {"maxdepth 1: the root is depth 0", false, 0.001, false, 1, 0, 0, "01237", NULL},
    {"mincount 4", false, 0.001, false, 0, 4, 0, "0123478", NULL},
    {"max_lines counts frame lines and says how many more there were", false, 0.001, false, 0, 0, 5,
     "0123456", "\xe2\x80\xa6 2 more lines\n"},
    {"max_lines 6", false, 0.001, false, 0, 0, 6, "01234567", "\xe2\x80\xa6 1 more line\n"},
    {"max_lines 7: all of them", false, 0.001, false, 0, 0, 7, "012345678", NULL},
    {"frames minwidth hid are reported at the end", false, 0.3, true, 0, 0, 0, "0123478",
     "2 frames narrower than minwidth hidden (5 samples)\n"},
    {"flat, the defaults", true, 0.001, false, 0, 0, 0, "01234567", NULL},
    {"flat, NULL options: the defaults", true, 0.001, true, 0, 0, 0, "01234567", NULL},
    {"flat, mincount 4 and max_lines 2", true, 0.001, false, 0, 4, 2, "0123",
     "\xe2\x80\xa6 2 more lines\n"},
};

static void test_report_cases(void) {
  fl_profile_t *p = basic_profile();
  for (size_t i = 0; i < FL__ARRAY_SIZE(report_cases); i++) {
    const report_case_t *c = &report_cases[i];
    fl_tree_t *t = build(p, c->minwidth, true, "cell[1]");
    fl_text_opts_t o;
    fl_text_opts_init(&o);
    o.maxdepth = c->maxdepth;
    o.mincount = c->mincount;
    o.max_lines = c->max_lines;
    const char *const *lines = c->flat ? flat_lines : tree_lines;
    size_t n_lines =
        c->flat ? FL__ARRAY_SIZE(flat_lines) : FL__ARRAY_SIZE(tree_lines);
    char want[1024] = "";
    for (const char *k = c->keep; *k; k++)
      if ((size_t)(*k - '0') < n_lines) strcat(want, lines[*k - '0']);
    if (c->last) strcat(want, c->last);
    const fl_text_opts_t *opts = c->null_opts ? NULL : &o;
    int failures = test_failures;
    CHECK_REPORT(c->flat ? fl_text_flat(t, opts) : fl_text_tree(t, opts), want);
    if (test_failures > failures) fprintf(stderr, "  (%s)\n", c->what);
    fl_tree_destroy(&t);
  }
  fl_profile_destroy(&p);
}

static void test_tree_basic(void) {
  fl_profile_t *p = basic_profile();
  fl_tree_t *t = build(p, 0.001, true, "cell[1]");
  fl_text_opts_t o;
  fl_text_opts_init(&o);
  /* Narrow: every line is cut to 20 columns, ending in "…". */
  o.cols = 20;
  o.max_lines = 3;
  CHECK_REPORT(fl_text_tree(t, &o),
               "Total: 11 samples (…\n"
               "Count  Self  Frame\n"
               "   11     0  cell[1]\n"
               "    7     1    main…\n"
               "    4     1  +2 wor…\n" /* 7 columns left: indent at most 3 */
               "… 4 more lines\n");
  /* cols 0: never cut. */
  o.cols = 0;
  o.max_lines = 0;
  char want[1024] = "";
  for (size_t i = 0; i < FL__ARRAY_SIZE(tree_lines); i++) strcat(want, tree_lines[i]);
  CHECK_REPORT(fl_text_tree(t, &o), want);
  fl_tree_destroy(&t);

  /* Intervals are written in their unit; none when unknown. */
  fl_profile_info(p)->interval_ns = 250000;
  t = build(p, 0.001, true, "cell[1]");
  o.maxdepth = 0;
  o.cols = 100;
  o.max_lines = 1;
  CHECK_REPORT(fl_text_tree(t, &o),
               "Total: 11 samples (interval 0.25 ms)\n"
               "Count  Self  Frame\n"
               "   11     0  cell[1]\n"
               "… 6 more lines\n");
  fl_tree_destroy(&t);
  fl_profile_info(p)->interval_ns = 1500000;
  t = build(p, 0.001, true, "cell[1]");
  char *r = fl_text_tree(t, &o);
  CHECK(strncmp(r, "Total: 11 samples (interval 1.5 ms)\n", 36) == 0);
  free(r);
  fl_tree_destroy(&t);
  fl_profile_info(p)->interval_ns = 0;
  t = build(p, 0.001, true, "cell[1]");
  r = fl_text_tree(t, &o);
  CHECK(strncmp(r, "Total: 11 samples\n", 18) == 0);
  free(r);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

static void test_flat_basic(void) {
  fl_profile_t *p = basic_profile();
  fl_tree_t *t = build(p, 0.001, true, "cell[1]");
  fl_text_opts_t o;
  fl_text_opts_init(&o);
  o.cols = 20;
  CHECK_REPORT(fl_text_flat(t, &o),
               "Total: 11 samples (…\n"
               "Count  Self  Percen…\n"
               "    7     1    63.6…\n"
               "    4     0    36.4…\n"
               "    4     4    36.4…\n"
               "    4     1    36.4…\n"
               "    3     3    27.3…\n"
               "    2     2    18.2…\n");
  fl_tree_destroy(&t);

  /* lines=false: one row per function; the location is the file alone. */
  t = build(p, 0.001, false, "cell[1]");
  CHECK_REPORT(fl_text_flat(t, NULL),
               "Total: 11 samples (interval 1 ms)\n"
               "Count  Self  Percent  Function  File:Line\n"
               "   11     1   100.0%  main      cell[1]\n"
               "    6     3    54.5%  work      cell[1]\n"
               "    4     4    36.4%  other     cell[1]\n"
               "    3     3    27.3%  helper    cell[1]\n");
  CHECK_REPORT(fl_text_tree(t, NULL),
               "Total: 11 samples (interval 1 ms)\n"
               "Count  Self  Frame\n"
               "   11     0  cell[1]\n"
               "   11     1    main  cell[1]\n"
               "    6     3      work  cell[1]\n"
               "    3     3        helper  cell[1]\n"
               "    4     4      other  cell[1]\n");
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* A recursive function counts once per sample in the flat report:
 *   [main:2, f:5, f:5, f:6, g:9] 3, [main:2, f:5, f:5, f:5] 2,
 *   [main:2, f:6, g:9] 1
 * f:5 is on 5 samples' stacks (Julia would say 12: once per occurrence). */
static void test_flat_recursion(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t m2 = frame(p, "main", "r.c", 2, "prog"), f5 = frame(p, "f", "r.c", 5, "prog");
  uint32_t f6 = frame(p, "f", "r.c", 6, "prog"), g9 = frame(p, "g", "r.c", 9, "prog");
  sample(p, 3, 0, 5, m2, f5, f5, f6, g9);
  sample(p, 2, 0, 4, m2, f5, f5, f5);
  sample(p, 1, 0, 3, m2, f6, g9);
  fl_tree_t *t = build(p, 0.001, true, "prog");
  CHECK_REPORT(fl_text_flat(t, NULL),
               "Total: 6 samples\n"
               "Count  Self  Percent  Function  File:Line\n"
               "    6     0   100.0%  main      r.c:2\n"
               "    5     2    83.3%  f         r.c:5\n"
               "    4     0    66.7%  f         r.c:6\n"
               "    4     4    66.7%  g         r.c:9\n");
  CHECK_REPORT(fl_text_tree(t, NULL),
               "Total: 6 samples\n"
               "Count  Self  Frame\n"
               "    6     0  prog\n"
               "    6     0    main  r.c:2\n"
               "    5     0      f  r.c:5\n"
               "    5     0        f  r.c:5\n"
               "    2     2          f  r.c:5\n"
               "    3     0          f  r.c:6\n"
               "    3     3            g  r.c:9\n"
               "    1     0      f  r.c:6\n"
               "    1     1        g  r.c:9\n");
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

static void test_alloc(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  uint32_t m5 = cell(p, "main", 5), m6 = cell(p, "main", 6);
  uint32_t big = cell(p, "big", 10), small = cell(p, "small", 11);
  sample(p, 3 * 1048576, 3, 2, m5, big);
  sample(p, 1536, 2, 2, m5, small);
  sample(p, 100, 1, 1, m6);
  fl_tree_t *t = build(p, 0, true, "cell[1]");
  CHECK_REPORT(fl_text_tree(t, NULL),
               "Total: 3.0 MiB in 6 allocations\n"
               "     Bytes       Self Allocs  Frame\n"
               "   3.0 MiB        0 B      6  cell[1]\n"
               "   3.0 MiB        0 B      5    main  cell[1]:5\n"
               "   3.0 MiB    3.0 MiB      3      big  cell[1]:10\n"
               "   1.5 KiB    1.5 KiB      2      small  cell[1]:11\n"
               "     100 B      100 B      1    main  cell[1]:6\n");
  CHECK_REPORT(fl_text_flat(t, NULL),
               "Total: 3.0 MiB in 6 allocations\n"
               "     Bytes       Self Allocs  Percent  Function  File:Line\n"
               "   3.0 MiB        0 B      5   100.0%  main      cell[1]:5\n"
               "   3.0 MiB    3.0 MiB      3    99.9%  big       cell[1]:10\n"
               "   1.5 KiB    1.5 KiB      2     0.0%  small     cell[1]:11\n"
               "     100 B      100 B      1     0.0%  main      cell[1]:6\n");
  fl_tree_destroy(&t);
  /* The hidden note is in bytes. */
  t = build(p, 0.001, true, "cell[1]");
  CHECK_REPORT(fl_text_tree(t, NULL),
               "Total: 3.0 MiB in 6 allocations\n"
               "     Bytes       Self Allocs  Frame\n"
               "   3.0 MiB        0 B      6  cell[1]\n"
               "   3.0 MiB        0 B      5    main  cell[1]:5\n"
               "   3.0 MiB    3.0 MiB      3      big  cell[1]:10\n"
               "2 frames narrower than minwidth hidden (1.6 KiB)\n");
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);

  /* One allocation, and the larger units. */
  p = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  m5 = cell(p, "main", 5);
  sample(p, 5ull << 30, 1, 1, m5);
  t = build(p, 0.001, true, "cell[1]");
  CHECK_REPORT(fl_text_tree(t, NULL),
               "Total: 5.0 GiB in 1 allocation\n"
               "     Bytes       Self Allocs  Frame\n"
               "   5.0 GiB        0 B      1  cell[1]\n"
               "   5.0 GiB    5.0 GiB      1    main  cell[1]:5\n");
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);

  /* weight=count: the widths are allocations, printed as numbers. */
  p = fl_profile_new(FL_PROFILE_ALLOC_COUNT);
  m5 = cell(p, "main", 5);
  big = cell(p, "big", 10);
  small = cell(p, "small", 11);
  sample(p, 3, 3, 2, m5, big);
  sample(p, 2, 2, 2, m5, small);
  t = build(p, 0, true, "cell[1]");
  CHECK_REPORT(fl_text_tree(t, NULL),
               "Total: 5 allocations\n"
               "Allocs   Self  Frame\n"
               "     5      0  cell[1]\n"
               "     5      0    main  cell[1]:5\n"
               "     3      3      big  cell[1]:10\n"
               "     2      2      small  cell[1]:11\n");
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* Library frames show their module; deep frames a "+depth" tag. */
static void test_deep_and_modules(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t st[14];
  char name[16];
  for (int i = 0; i < 14; i++) {
    snprintf(name, sizeof name, "f%d", i);
    st[i] = frame(p, name, NULL, 0, i % 2 ? "libx.so" : NULL);
  }
  fl_profile_add_sample(p, st, 14, 1, 0, 1);
  fl_tree_t *t = build(p, 0.001, true, "prog");
  fl_text_opts_t o;
  fl_text_opts_init(&o);
  o.cols = 40;
  /* 27 columns right of the counts: indentation beyond 13 becomes a tag. */
  CHECK_REPORT(fl_text_tree(t, &o),
               "Total: 1 sample\n"
               "Count  Self  Frame\n"
               "    1     0  prog\n"
               "    1     0    f0\n"
               "    1     0      f1  libx.so\n"
               "    1     0        f2\n"
               "    1     0          f3  libx.so\n"
               "    1     0            f4\n"
               "    1     0              f5  libx.so\n"
               "    1     0            +7 f6\n"
               "    1     0            +8 f7  libx.so\n"
               "    1     0            +9 f8\n"
               "    1     0           +10 f9  libx.so\n"
               "    1     0           +11 f10\n"
               "    1     0           +12 f11  libx.so\n"
               "    1     0           +13 f12\n"
               "    1     1           +14 f13  libx.so\n");
  o.max_lines = 3;
  CHECK_REPORT(fl_text_flat(t, &o),
               "Total: 1 sample\n"
               "Count  Self  Percent  Function  File:Li…\n"
               "    1     0   100.0%  f0\n"
               "    1     0   100.0%  f1        libx.so\n"
               "    1     0   100.0%  f10\n"
               "… 11 more lines\n");
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* Cutting counts columns, not bytes; long names are cut in the flat
 * report's function column. */
static void test_utf8_and_long_names(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t a = frame(p, "na\xc3\xafve_sum_of_squares", "x.c", 3, NULL);
  uint32_t b = frame(p, "very_long_function_name_abcdefghijklmnopqrstuvwxyz", "x.c", 9, NULL);
  sample(p, 2, 0, 1, a);
  sample(p, 1, 0, 2, a, b);
  fl_tree_t *t = build(p, 0.001, true, "prog");
  fl_text_opts_t o;
  fl_text_opts_init(&o);
  o.cols = 20;
  CHECK_REPORT(fl_text_tree(t, &o),
               "Total: 3 samples\n"
               "Count  Self  Frame\n"
               "    3     0  prog\n"
               "    3     2    na\xc3\xafv…\n"
               "    1     1  +2 ver…\n");
  o.cols = 0;
  CHECK_REPORT(fl_text_flat(t, &o),
               "Total: 3 samples\n"
               "Count  Self  Percent  Function                                  File:Line\n"
               "    3     2   100.0%  na\xc3\xafve_sum_of_squares                      x.c:3\n"
               "    1     1    33.3%  very_long_function_name_abcdefghijklmno…  x.c:9\n");
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

static void test_empty(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_tree_t *t = build(p, 0.001, true, "cell[4]");
  CHECK_REPORT(fl_text_tree(t, NULL),
               "Total: 0 samples\n"
               "Count  Self  Frame\n"
               "    0     0  cell[4]\n");
  CHECK_REPORT(fl_text_flat(t, NULL),
               "Total: 0 samples\n"
               "Count  Self  Percent  Function  File:Line\n");
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* One of a thing is said in the singular, wherever a count is written: the
 * text reports, a diff's, the SVG's tooltips ("1 samples" and "1
 * allocations" were). */
static void test_one_sample(void) {
  char buf[64];
  fl_count_noun(1, "sample", "samples", buf, sizeof buf);
  CHECK_STR(buf, "1 sample");
  fl_count_noun(1234567, "allocation call", "allocation calls", buf, sizeof buf);
  CHECK_STR(buf, "1,234,567 allocation calls");
  fl_count_noun(0, "byte", "bytes", buf, sizeof buf);
  CHECK_STR(buf, "0 bytes");

  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU), *q = fl_profile_new(FL_PROFILE_CPU);
  sample(p, 1, 0, 1, cell(p, "work", 3));
  sample(q, 1, 0, 1, cell(q, "work", 3));
  fl_tree_t *t = build(p, 0, true, "cell[4]");
  char *text = fl_text_tree(t, NULL);
  CHECK(text && strncmp(text, "Total: 1 sample\n", 16) == 0);
  free(text);
  char *svg = fl_svg(t, NULL);
  CHECK(svg && strstr(svg, "\n1 sample (100%), self 1</title>") != NULL);
  CHECK(svg && strstr(svg, "1 samples") == NULL);
  free(svg);
  char err[128];
  fl_diff_t *d = fl_diff_build(p, q, NULL, NULL, "cell[4]", err, sizeof err);
  CHECK(d != NULL);
  text = d ? fl_text_diff(d, NULL) : NULL;
  CHECK(text && strncmp(text, "Total: target 1 sample, baseline 1 sample", 41) == 0);
  free(text);
  svg = d ? fl_svg_diff(d, NULL) : NULL;
  CHECK(svg && strstr(svg, "target: 1 sample (100%)\nbaseline: 1 sample (100%)") != NULL);
  CHECK(svg && strstr(svg, "1 samples") == NULL);
  free(svg);
  fl_diff_destroy(&d);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
  fl_profile_destroy(&q);

  /* An allocation of one byte, once. */
  p = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  sample(p, 1, 1, 1, cell(p, "work", 3));
  t = build(p, 0, true, "cell[4]");
  svg = fl_svg(t, NULL);
  CHECK(svg && strstr(svg, "\n1 byte (100%), self 1 byte, 1 allocation</title>") != NULL);
  free(svg);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* The number of lines of text, and whether each is at most cols columns
 * (code points). */
static size_t lines_within(const char *text, int cols, bool *fits) {
  size_t n = 0;
  *fits = true;
  for (const char *line = text; *line; n++) {
    const char *eol = strchr(line, '\n');
    size_t w = 0;
    for (const char *c = line; c < eol; c++) w += ((unsigned char)*c & 0xc0) != 0x80;
    if (w > (size_t)cols) *fits = false;
    line = eol + 1;
  }
  return n;
}

/* Two processes under roots of their own (as cflame record's), two
 * threads: the shares line, the table by self, and the whole cut to a
 * terminal's lines and columns. */
static void test_top_live(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = 1000000;
  fl_frame_t rs = {.func = "solver", .flags = FL_FRAME_ROOT},
             rh = {.func = "helper", .flags = FL_FRAME_ROOT};
  uint32_t solver = fl_profile_frame_id(p, &rs), helper = fl_profile_frame_id(p, &rh);
  uint32_t m = cell(p, "main", 5), w = cell(p, "work", 12), io = cell(p, "io", 20);
  uint32_t st1[] = {solver, m, w}, st2[] = {solver, m, io}, st3[] = {helper, m};
  fl_profile_add_sample(p, st1, 3, 6, 0, 1);
  fl_profile_add_sample(p, st2, 3, 2, 0, 2);
  fl_profile_add_sample(p, st3, 2, 2, 0, 1);
  fl_profile_set_thread_name(p, 2, "worker");
  fl_tree_t *t = build(p, 0, false, "all");
  fl_text_opts_t o;
  fl_text_opts_init(&o);
  o.cols = 200;
  CHECK_REPORT(fl_text_top_live(t, "live: 10 samples", &o),
               "live: 10 samples\n"
               "processes: solver 80.0%, helper 20.0%; threads: 1 80.0%, 2 worker 20.0%\n"
               " Self   Self%    Sum% Total  Total%  Function       File\n"
               "    6  60.00%  60.00%     6  60.00%  work           cell[1]\n"
               "    2  20.00%  80.00%     2  20.00%  io             cell[1]\n"
               "    2  20.00% 100.00%     2  20.00%  main (helper)  cell[1]\n"
               "    0   0.00% 100.00%     8  80.00%  main (solver)  cell[1]\n"
               "    0   0.00% 100.00%     8  80.00%  solver\n"
               "    0   0.00% 100.00%     2  20.00%  helper\n");
  /* Each process's functions are rows of their own ("main (helper)"). A
   * terminal of 5 rows and 45 columns: the headline, the shares, the
   * header and two rows, each cut. */
  o.cols = 45;
  o.max_lines = 5;
  char *r = fl_text_top_live(t, "live: 10 samples of a long command line", &o);
  bool fits;
  CHECK(lines_within(r, 45, &fits) == 5);
  CHECK(fits);
  CHECK(strstr(r, "work") && strstr(r, "io") && !strstr(r, "main"));
  free(r);
  /* Too few lines for a table: what fits of the rest. */
  o.max_lines = 2;
  r = fl_text_top_live(t, "live", &o);
  CHECK(lines_within(r, 45, &fits) == 2);
  free(r);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

int main(void) {
  test_opts_init();
  test_report_cases();
  test_tree_basic();
  test_flat_basic();
  test_flat_recursion();
  test_alloc();
  test_deep_and_modules();
  test_utf8_and_long_names();
  test_empty();
  test_one_sample();
  test_top_live();
  return TEST_DONE();
}
