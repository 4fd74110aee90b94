/* SPDX-License-Identifier: BSD-3-Clause */
/* The option table (fl_options.h): each type parsed, the errors, the
 * defaults, help, and the docs' option tables, which must be the table's,
 * as the docs' tables of output formats and of views must be fl_output.c's
 * and fl_views.c's.
 * `test_options --markdown` prints the tables the docs hold. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_options.h"
#include "cflame/fl_output.h"
#include "test.h"
#include "fl__common.h"

#ifndef CFLAME_SOURCE_DIR
#error "CFLAME_SOURCE_DIR comes from CMake"
#endif

typedef struct set_case {
  fl_front_t front;
  const char *name, *value;
  const char *err; /* NULL: accepted */
} set_case_t;

static const set_case_t set_cases[] = {
    {FL_FRONT_NOTEBOOK, "minwidth", "0.01", NULL},
    {FL_FRONT_NOTEBOOK, "minwidth", "2", "minwidth=2 is out of range (0..1)"},
    {FL_FRONT_NOTEBOOK, "minwidth", "abc", "minwidth=abc is not a number (0..1)"},
    {FL_FRONT_COMMAND, "minwidth", "2", "--minwidth 2 is out of range (0..1)"},
    {FL_FRONT_NOTEBOOK, "width", "600", NULL},
    {FL_FRONT_NOTEBOOK, "width", "1.5", "width=1.5 is not an integer (100..100000)"},
    {FL_FRONT_COMMAND, "width", "wide", "--width wide is not an integer (100..100000)"},
    {FL_FRONT_NOTEBOOK, "width", "99999999999999999999",
     "width=99999999999999999999 is out of range (100..100000)"},
    {FL_FRONT_NOTEBOOK, "C", "true", NULL},
    {FL_FRONT_NOTEBOOK, "C", "yes", "C=yes is not valid; choose true or false"},
    {FL_FRONT_NOTEBOOK, "recur", "flat", NULL},
    {FL_FRONT_NOTEBOOK, "recur", "deep", "recur=deep is not valid; choose off or flat"},
    {FL_FRONT_COMMAND, "theme", "sepia", "--theme sepia is not valid; choose light or dark"},
    {FL_FRONT_NOTEBOOK, "view", "icicles",
     "view=icicles is not valid; choose flame, icicle, callers, top, source, chart or sandwich"},
    {FL_FRONT_NOTEBOOK, "pruned", "a,,b",
     "pruned=a,,b is not valid; give a comma-separated list of non-empty names"},
    {FL_FRONT_NOTEBOOK, "threads", "1,x",
     "threads=1,x is not valid: x is not a thread number; give thread numbers (1 = the main "
     "thread, 2, 3, ... in the order threads started; perf script's thread ids) or all"},
    {FL_FRONT_COMMAND, "threads", "-1",
     "--threads -1 is not valid: -1 is not a thread number; give thread numbers (1 = the main "
     "thread, 2, 3, ... in the order threads started; perf script's thread ids) or all"},
    {FL_FRONT_COMMAND, "root-prefix", "", "--root-prefix: the text is empty"},
    {FL_FRONT_COMMAND, "root_prefix", "bt", NULL},
    {FL_FRONT_NOTEBOOK, "filter", "", "filter=: the text is empty"},
    {FL_FRONT_NOTEBOOK, "wdth", "3", "unknown option 'wdth'"},
    {FL_FRONT_NOTEBOOK, "noise", "1000", NULL},
    {FL_FRONT_NOTEBOOK, "noise", "-1", "noise=-1 is out of range (0..1000)"},
    /* The sampling options are rows too, one range for every front door. */
    {FL_FRONT_NOTEBOOK, "delay", "0.0001", NULL},
    {FL_FRONT_COMMAND, "delay", "0.0001", NULL},
    {FL_FRONT_NOTEBOOK, "delay", "0.00005",
     "delay=0.00005: expected a number of seconds from 0.0001 to 10, such as 0.001"},
    {FL_FRONT_COMMAND, "delay", "0.00005",
     "--delay 0.00005: expected a number of seconds from 0.0001 to 10, such as 0.001"},
    {FL_FRONT_COMMAND, "sample-rate", "0.000001", NULL},
    {FL_FRONT_NOTEBOOK, "sample_rate", "0.0000001",
     "sample_rate=0.0000001: expected a share of the allocation calls from 0.000001 to 1, such "
     "as 0.1"},
    {FL_FRONT_COMMAND, "sample-rate", "0.0000001",
     "--sample-rate 0.0000001: expected a share of the allocation calls from 0.000001 to 1, "
     "such as 0.1"},
    {FL_FRONT_COMMAND, "clock", "sometimes", "--clock sometimes is not valid; choose cpu or wall"},
    {FL_FRONT_COMMAND, "watch", "true", NULL}, /* --top's other name */
    {FL_FRONT_NOTEBOOK, "max_input_size", "4G", NULL},
    {FL_FRONT_COMMAND, "max-input-size", "4Q",
     "--max-input-size 4Q: expected a size in bytes: a whole number from 1, with an optional K, "
     "M, G or T (KiB, MiB, GiB, TiB), such as 4G"},
    {FL_FRONT_COMMAND, "fail-above", "101",
     "--fail-above 101: expected points of the total, a number from 0 to 100, such as 5"},
    {FL_FRONT_COMMAND, "fail-above", "nan",
     "--fail-above nan: expected points of the total, a number from 0 to 100, such as 5"},
};

static void test_set(void) {
  for (size_t i = 0; i < FL__ARRAY_SIZE(set_cases); i++) {
    const set_case_t *c = &set_cases[i];
    fl_options_t o;
    fl_options_init(&o, c->front);
    char err[512] = "";
    int rc = fl_options_set(&o, c->name, c->value, err, sizeof err);
    CHECK_INT(rc, c->err ? -1 : 0);
    if (c->err) CHECK_STR(err, c->err);
    CHECK(fl_options_given(&o, c->name) == !c->err);
    fl_options_free(&o);
  }
}

/* fl_options_take: a drawing option goes into the struct, another row's
 * value back to the front end, and both are given; errors as the front
 * end writes the option. */
static void test_take(void) {
  fl_options_t o;
  fl_optval_t v;
  char err[256] = "";
  fl_options_init(&o, FL_FRONT_COMMAND);
  CHECK_INT(fl_options_take(&o, fl_option_find("width"), "600", &v, err, sizeof err), 0);
  CHECK(!v.set && o.view.width == 600 && fl_options_given(&o, "width"));
  CHECK_INT(fl_options_take(&o, fl_option_find("delay"), "0.002", &v, err, sizeof err), 0);
  CHECK(v.set && v.d == 0.002 && fl_options_given(&o, "delay"));
  fl_optval_free(&v);
  CHECK_INT(fl_options_take(&o, fl_option_find("pid"), "x", &v, err, sizeof err), -1);
  CHECK_STR(err, "--pid x: expected a process id, such as 4242 (pgrep NAME finds one)");
  CHECK(!fl_options_given(&o, "pid"));
  fl_options_free(&o);
}

/* What each value does to the structs the renderers read. */
static void test_values(void) {
  fl_options_t o;
  char err[256];
  fl_options_init(&o, FL_FRONT_NOTEBOOK);
  CHECK(fl_options_set(&o, "threads", "2,3", err, sizeof err) == 0);
  CHECK_INT(o.tree.n_threads, 2);
  CHECK(o.tree.threads && o.tree.threads[0] == 2 && o.tree.threads[1] == 3);
  CHECK(fl_options_set(&o, "threads", "all", err, sizeof err) == 0);
  CHECK(o.tree.threads == NULL && o.tree.n_threads == 0);
  CHECK(fl_options_set(&o, "filter", "/^a.*b$/", err, sizeof err) == 0);
  CHECK_STR(o.tree.filter, "^a.*b$");
  CHECK(o.tree.filter_is_regex);
  CHECK(fl_options_set(&o, "filter", "spin", err, sizeof err) == 0);
  CHECK_STR(o.tree.filter, "spin");
  CHECK(!o.tree.filter_is_regex);
  CHECK(fl_options_set(&o, "pruned", "a, b", err, sizeof err) == 0);
  CHECK(o.tree.pruned && !strcmp(o.tree.pruned[0], "a") && !strcmp(o.tree.pruned[1], "b") &&
        !o.tree.pruned[2]);
  CHECK(fl_options_set(&o, "recur", "flat", err, sizeof err) == 0);
  CHECK_INT(o.tree.recur, FL_RECUR_FLAT);
  CHECK(fl_options_set(&o, "theme", "dark", err, sizeof err) == 0);
  CHECK(o.view.dark);
  /* A view is its row of the table of views, and sets the tree it draws:
   * callers, the inverted one. */
  CHECK_STR(fl_view_at((size_t)o.view.view)->name, "flame");
  CHECK(!o.tree.inverted);
  CHECK(fl_options_set(&o, "view", "callers", err, sizeof err) == 0);
  CHECK_STR(fl_view_at((size_t)o.view.view)->name, "callers");
  CHECK(o.tree.inverted);
  CHECK(fl_options_set(&o, "view", "icicle", err, sizeof err) == 0);
  CHECK_STR(fl_view_at((size_t)o.view.view)->name, "icicle");
  CHECK(!o.tree.inverted);
  CHECK(fl_options_set(&o, "view", "flame", err, sizeof err) == 0);
  CHECK_STR(fl_view_at((size_t)o.view.view)->name, "flame");
  CHECK(!o.tree.inverted);
  CHECK(fl_options_set(&o, "delta", "self", err, sizeof err) == 0);
  CHECK_INT(o.diff.delta, FL_DELTA_SELF);
  CHECK(fl_options_set(&o, "format", "flat", err, sizeof err) == 0);
  CHECK(o.flat);
  CHECK(fl_options_set(&o, "mincount", "1000000000000", err, sizeof err) == 0);
  CHECK(o.text.mincount == 1000000000000ull);
  CHECK(fl_options_set(&o, "title", "t", err, sizeof err) == 0);
  CHECK(fl_options_set(&o, "root_prefix", "bt", err, sizeof err) == 0);
  fl_options_t copy;
  fl_options_copy(&copy, &o);
  fl_options_free(&o);
  CHECK_STR(copy.view.title, "t");
  CHECK_STR(copy.diff.root_prefix, "bt");
  CHECK_STR(copy.tree.filter, "spin");
  CHECK_STR(copy.tree.pruned[1], "b");
  fl_options_free(&copy);
  CHECK(copy.view.title == NULL && copy.tree.pruned == NULL && !copy.given);
}

/* Every default parses, and the init functions of the library's structs
 * give the table's defaults; the command's differ only where it says. */
static void test_defaults(void) {
  const fl_option_t *opt;
  for (size_t i = 0; (opt = fl_option_at(i)) != NULL; i++) {
    for (int front = 0; front < 2; front++) {
      const char *def = fl_option_default(opt, (fl_front_t)front);
      if (!def) continue;
      fl_optval_t v;
      char err[256] = "";
      CHECK_INT(fl_option_parse(opt, def, def, &v, err, sizeof err), 0);
      if (err[0]) fprintf(stderr, "  %s: %s\n", opt->name, err);
      fl_optval_free(&v);
    }
    CHECK(opt->help && *opt->help && opt->groups);
    CHECK(fl_option_find(opt->name) == opt);
  }
  fl_options_t nb, cmd;
  fl_options_init(&nb, FL_FRONT_NOTEBOOK);
  fl_options_init(&cmd, FL_FRONT_COMMAND);
  fl_tree_opts_t t;
  fl_tree_opts_init(&t);
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  fl_diff_opts_t d;
  fl_diff_opts_init(&d);
  fl_text_opts_t x;
  fl_text_opts_init(&x);
  CHECK(!t.C && t.combine && t.lines == FL_LINES_AUTO && t.recur == FL_RECUR_OFF &&
        t.minwidth == 0.001);
  CHECK(!memcmp(&t, &nb.tree, sizeof t));
  CHECK(v.width == 800 && v.height == 0 && !v.dark && !v.icicle && v.max_rows == 5000);
  CHECK(!memcmp(&v, &nb.view, sizeof v));
  CHECK(d.noise == 2 && d.delta == FL_DELTA_TOTAL && !d.negate && !d.normalize);
  CHECK(x.cols == 100 && x.maxdepth == 0 && x.mincount == 0);
  CHECK(cmd.tree.C && !nb.given && !cmd.given);
  cmd.tree.C = false;
  CHECK(!memcmp(&cmd.tree, &nb.tree, sizeof t));
  fl_options_free(&nb);
  fl_options_free(&cmd);
}

static void test_help(void) {
  char *nb = fl_options_help(FL_OPTS_TREE, FL_FRONT_NOTEBOOK);
  CHECK(strstr(nb, "  minwidth=X           merge frames narrower than this share of the total") !=
        NULL);
  CHECK(strstr(nb, "(default: 0.001)\n") != NULL);
  CHECK(strstr(nb, "  recur=off|flat ") != NULL);
  free(nb);
  char *cmd = fl_options_help(FL_OPTS_TREE | FL_OPTS_VIEW, FL_FRONT_COMMAND);
  CHECK(strstr(cmd, "      --C, --no-C        show frames of system libraries") != NULL);
  CHECK(strstr(cmd, "(default: --C)") != NULL);
  CHECK(strstr(cmd, "      --width PX         width in pixels (default: 800)\n") != NULL);
  for (const char *line = cmd; *line; line = strchr(line, '\n') + 1)
    CHECK(strcspn(line, "\n") <= 80 || !strchr(line, ' '));
  free(cmd);
  char *md = fl_options_markdown(FL_OPTS_DIFF, FL_FRONT_COMMAND);
  CHECK(strstr(md, "| `--delta total\\|self` | total | ") != NULL);
  CHECK(strstr(md, "| `--negate` / `--no-negate` | --no-negate | ") != NULL);
  free(md);
}

/* The docs' tables: each is the table's, as fl_options_markdown writes it. */
static const struct {
  const char *doc;
  unsigned groups;
  fl_front_t front;
} doc_tables[] = {
    {"docs/PROFILING.md", FL_OPTS_TREE, FL_FRONT_NOTEBOOK},
    {"docs/PROFILING.md", FL_OPTS_VIEW | FL_OPTS_OUTPUT, FL_FRONT_NOTEBOOK},
    {"docs/PROFILING.md", FL_OPTS_PRINT | FL_OPTS_TEXT, FL_FRONT_NOTEBOOK},
    /* The kernel's sampling, allocation, live, attach and reading options. */
    {"docs/PROFILING.md", FL_OPTS_SAMPLING | FL_OPTS_CLOCK, FL_FRONT_NOTEBOOK},
    {"docs/PROFILING.md", FL_OPTS_EVERY, FL_FRONT_NOTEBOOK},
    {"docs/PROFILING.md", FL_OPTS_LOAD, FL_FRONT_NOTEBOOK},
    {"docs/PROFILING.md", FL_OPTS_ATTACH, FL_FRONT_NOTEBOOK},
    {"docs/PROFILING.md", FL_OPTS_ALLOC | FL_OPTS_KIND, FL_FRONT_NOTEBOOK},
    {"docs/CLI.md", FL_OPTS_TREE | FL_OPTS_VIEW | FL_OPTS_TEXT | FL_OPTS_DIFF, FL_FRONT_COMMAND},
    /* The cflame command's own (its -f, -o, --input-format, -h and -V rows
     * follow in the doc). */
    {"docs/CLI.md", FL_OPTS_CLI, FL_FRONT_COMMAND},
    /* cflame record's options (its -o, -f and -h rows follow in the doc). */
    {"docs/CLI.md", FL_OPTS_RECORD, FL_FRONT_COMMAND},
};

static char *read_doc(const char *doc) {
  char path[1024], *text = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "%s/%s", CFLAME_SOURCE_DIR, doc);
  FILE *f = fopen(path, "r"), *m = open_memstream(&text, &len);
  for (int c; f && (c = fgetc(f)) != EOF;) fputc(c, m);
  if (f) fclose(f);
  fclose(m);
  return text;
}

/* want (new) is in doc, or is printed (print). */
static void check_doc_table(const char *doc, char *want, bool print) {
  if (print) {
    printf("%s:\n\n%s\n", doc, want);
  } else {
    char *text = read_doc(doc);
    CHECK(strstr(text, want) != NULL);
    if (!strstr(text, want))
      fprintf(stderr, "  %s lacks this table (test_options --markdown prints them all):\n%s", doc,
              want);
    free(text);
  }
  free(want);
}

static void test_docs(bool print) {
  for (size_t i = 0; i < FL__ARRAY_SIZE(doc_tables); i++)
    check_doc_table(doc_tables[i].doc,
                    fl_options_markdown(doc_tables[i].groups, doc_tables[i].front), print);
  /* The formats (fl_output.c's table), which --help lists too. */
  check_doc_table("docs/CLI.md", fl_output_formats_markdown(), print);
  /* The views (fl_views.c's table), as each front end names them. */
  check_doc_table("docs/USAGE.md", fl_views_markdown(FL_FRONT_NOTEBOOK), print);
  check_doc_table("docs/CLI.md", fl_views_markdown(FL_FRONT_COMMAND), print);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--markdown")) {
    test_docs(true);
    return 0;
  }
  test_set();
  test_take();
  test_values();
  test_defaults();
  test_help();
  test_docs(false);
  return TEST_DONE();
}
