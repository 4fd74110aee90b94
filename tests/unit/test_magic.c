/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for kn_magic: splitting magic lines off a cell (line magics,
 * the cell magic, blank lines, misplaced %%, body_line), words with quotes and
 * escapes, and option parsing for every option type with the exact error
 * messages a user sees. */
#include "kn_magic.h"

#include "test.h"
#include "fl__common.h"

static void test_split_none(void) {
  kn_cell_magics_t m;
  char err[256] = "";
  CHECK_INT(kn_magic_split("int x = 1;\n%profile f();\n", &m, err, sizeof err), 0);
  CHECK_INT(m.n_lines, 0);
  CHECK(m.cell == NULL);
  CHECK_STR(m.body, "int x = 1;\n%profile f();\n"); /* not a magic once code has started */
  CHECK_INT(m.body_line, 1);
  kn_cell_magics_free(&m);
  CHECK(m.body == NULL && m.lines == NULL);

  CHECK_INT(kn_magic_split("", &m, err, sizeof err), 0);
  CHECK_STR(m.body, "");
  CHECK_INT(m.body_line, 1);
  kn_cell_magics_free(&m);

  /* Leading blank lines without magics stay in the body. */
  CHECK_INT(kn_magic_split("\n\n  x++;", &m, err, sizeof err), 0);
  CHECK_STR(m.body, "\n\n  x++;");
  CHECK_INT(m.body_line, 1);
  kn_cell_magics_free(&m);
  kn_cell_magics_free(NULL);
}

static void test_split_line_magics(void) {
  kn_cell_magics_t m;
  char err[256] = "";
  CHECK_INT(kn_magic_split("\n  \n%cflags -O3 -march=native  \n%profinit n=1000\n\nint x;\nx++;",
                           &m, err, sizeof err),
            0);
  CHECK_INT(m.n_lines, 2);
  CHECK(m.cell == NULL);
  if (m.n_lines == 2) {
    CHECK_STR(m.lines[0].name, "cflags");
    CHECK_STR(m.lines[0].args, "-O3 -march=native");
    CHECK(!m.lines[0].is_cell);
    CHECK_INT(m.lines[0].line, 3);
    CHECK_STR(m.lines[1].name, "profinit");
    CHECK_STR(m.lines[1].args, "n=1000");
    CHECK_INT(m.lines[1].line, 4);
  }
  CHECK_STR(m.body, "\nint x;\nx++;");
  CHECK_INT(m.body_line, 5);
  kn_cell_magics_free(&m);

  /* A magic alone, no newline: empty body on the next line; CRLF trimmed. */
  CHECK_INT(kn_magic_split("%lsmagic", &m, err, sizeof err), 0);
  CHECK_INT(m.n_lines, 1);
  if (m.n_lines) CHECK_STR(m.lines[0].args, "");
  CHECK_STR(m.body, "");
  CHECK_INT(m.body_line, 2);
  kn_cell_magics_free(&m);

  CHECK_INT(kn_magic_split("%profile f(1, 2);\r\nx;", &m, err, sizeof err), 0);
  if (m.n_lines) CHECK_STR(m.lines[0].args, "f(1, 2);");
  CHECK_STR(m.body, "x;");
  kn_cell_magics_free(&m);

  /* Blank lines between magics; indentation before '%'. */
  CHECK_INT(kn_magic_split("%profclear\n\n   %profshow width=300\nf();", &m, err, sizeof err), 0);
  CHECK_INT(m.n_lines, 2);
  if (m.n_lines == 2) {
    CHECK_STR(m.lines[1].name, "profshow");
    CHECK_INT(m.lines[1].line, 3);
  }
  CHECK_INT(m.body_line, 4);
  kn_cell_magics_free(&m);
}

static void test_split_cell_magic(void) {
  kn_cell_magics_t m;
  char err[256] = "";
  CHECK_INT(kn_magic_split("\n%%timeit -n 10 -r 3\nfor (int i = 0; i < 9; i++)\n  f(i);\n", &m, err,
                           sizeof err),
            0);
  CHECK(m.cell != NULL);
  if (m.cell) {
    CHECK_STR(m.cell->name, "timeit");
    CHECK(m.cell->is_cell);
    CHECK_STR(m.cell->args, "-n 10 -r 3");
    CHECK_INT(m.cell->line, 2);
  }
  CHECK_INT(m.n_lines, 0);
  CHECK_STR(m.body, "for (int i = 0; i < 9; i++)\n  f(i);\n");
  CHECK_INT(m.body_line, 3);
  kn_cell_magics_free(&m);
  CHECK(m.cell == NULL);

  /* A line magic may follow the cell magic. */
  CHECK_INT(kn_magic_split("%%profview width=600\n%cflags -O0\nwork();", &m, err, sizeof err), 0);
  CHECK(m.cell != NULL);
  CHECK_INT(m.n_lines, 1);
  CHECK_INT(m.body_line, 3);
  kn_cell_magics_free(&m);
}

static void test_split_errors(void) {
  kn_cell_magics_t m;
  char err[256] = "";
  CHECK_INT(kn_magic_split("%cflags -O2\n%%timeit\nf();", &m, err, sizeof err), -1);
  CHECK_STR(err,
            "%%timeit must be on the first line of the cell (it is on line 2): a cell "
            "magic applies to the whole cell");
  CHECK(m.lines == NULL && m.cell == NULL && m.body == NULL);

  CHECK_INT(kn_magic_split("%%timeit\n%%profile\nf();", &m, err, sizeof err), -1);
  CHECK(strstr(err, "%%profile must be on the first line") != NULL);

  CHECK_INT(kn_magic_split("% x\n", &m, err, sizeof err), -1);
  CHECK_STR(err, "line 1: '%' must be followed by a magic name");
  CHECK_INT(kn_magic_split("\n%%\nx;", &m, err, sizeof err), -1);
  CHECK_STR(err, "line 2: '%%' must be followed by a magic name");

  /* A NULL err buffer is allowed. */
  CHECK_INT(kn_magic_split("%%", &m, NULL, 0), -1);
}

static void test_words(void) {
  char **w = NULL;
  char err[256] = "";
  CHECK_INT(kn_words_split("  a  b=c\t\"d e\"  ", &w, err, sizeof err), 3);
  if (w) {
    CHECK_STR(w[0], "a");
    CHECK_STR(w[1], "b=c");
    CHECK_STR(w[2], "d e");
    CHECK(w[3] == NULL);
  }
  kn_words_free(w);

  CHECK_INT(kn_words_split("title=\"My \\\"big\\\" graph\" path=\"C:\\\\x\" re=\"a\\.b\" \"\"", &w,
                           err, sizeof err),
            4);
  if (w) {
    CHECK_STR(w[0], "title=My \"big\" graph");
    CHECK_STR(w[1], "path=C:\\x");
    CHECK_STR(w[2], "re=a\\.b"); /* other escapes are kept for regexes */
    CHECK_STR(w[3], "");
  }
  kn_words_free(w);

  CHECK_INT(kn_words_split("a\\b x\"y z\"w", &w, err, sizeof err), 2);
  if (w) {
    CHECK_STR(w[0], "a\\b"); /* no escapes outside quotes */
    CHECK_STR(w[1], "xy zw");
  }
  kn_words_free(w);

  CHECK_INT(kn_words_split("", &w, err, sizeof err), 0);
  CHECK(w != NULL && w[0] == NULL);
  kn_words_free(w);
  CHECK_INT(kn_words_split(NULL, &w, err, sizeof err), 0);
  kn_words_free(w);

  CHECK_INT(kn_words_split("ok title=\"open \\\" end", &w, err, sizeof err), -1);
  CHECK(w == NULL);
  CHECK_STR(err, "unterminated quote in title=\"open \\\" end");
  kn_words_free(NULL);
}

static const kn_optspec_t view_spec[] = {
    {"width", FL_OPT_INT, NULL, 1, 100000, .help = "width in pixels"},
    {"height", FL_OPT_INT, NULL, 1, 100000, .help = "height in pixels"},
    {"title", FL_OPT_STRING, NULL, 1, 0, .help = "graph title"},
    {"icicle", FL_OPT_BOOL, NULL, 1, 0, .help = "root at the top"},
    {"minwidth", FL_OPT_DOUBLE, NULL, 0, 1, .help = "hide narrower frames"},
    {"delay", FL_OPT_DOUBLE, NULL, 1, 0, .help = "sampling interval"},
    {"format", FL_OPT_ENUM, "tree|flat", 1, 0, .help = "report format"},
    {"recur", FL_OPT_ENUM, "off|flat|deep", 1, 0, .help = "recursion"},
    {"pruned", FL_OPT_LIST, NULL, 1, 0, .help = "functions to cut"},
    {"offset", FL_OPT_INT, NULL, 1, 0, .help = "no range"},
};
#define N_VIEW (FL__ARRAY_SIZE(view_spec))

static void test_opts_values(void) {
  kn_opts_t o;
  char err[256] = "";
  int rc = kn_opts_parse("profview",
                         "width=600 title=\"My graph\" icicle=true minwidth=0.01 delay=1e-3 "
                         "format=flat pruned=\"malloc, free\",qsort offset=-7 base",
                         view_spec, N_VIEW, &o, err, sizeof err);
  CHECK_INT(rc, 0);
  if (rc == 0) {
    CHECK_INT(o.n_vals, N_VIEW);
    const kn_optval_t *v = kn_opts_get(&o, "width");
    CHECK(v && v->set && v->i == 600);
    CHECK_STR(v ? v->key : NULL, "width");
    v = kn_opts_get(&o, "height");
    CHECK(v && !v->set);
    v = kn_opts_get(&o, "title");
    CHECK_STR(v ? v->s : NULL, "My graph");
    v = kn_opts_get(&o, "icicle");
    CHECK(v && v->set && v->b);
    v = kn_opts_get(&o, "minwidth");
    CHECK(v && v->d == 0.01);
    v = kn_opts_get(&o, "delay");
    CHECK(v && v->d == 1e-3);
    v = kn_opts_get(&o, "format");
    CHECK_STR(v ? v->s : NULL, "flat");
    v = kn_opts_get(&o, "pruned");
    CHECK_INT(v ? v->n_list : 0, 3);
    if (v && v->n_list == 3) {
      CHECK_STR(v->list[0], "malloc");
      CHECK_STR(v->list[1], "free");
      CHECK_STR(v->list[2], "qsort");
      CHECK(v->list[3] == NULL);
    }
    v = kn_opts_get(&o, "offset");
    CHECK(v && v->i == -7);
    CHECK(kn_opts_get(&o, "nosuch") == NULL);
    CHECK_INT(o.n_positional, 1);
    CHECK_STR(o.positional[0], "base");
    CHECK(o.positional[1] == NULL);
  }
  kn_opts_free(&o);
  CHECK(o.vals == NULL && o.positional == NULL);
  kn_opts_free(NULL);
}

static void test_opts_unknown(void) {
  kn_opts_t o;
  char err[512] = "";
  CHECK_INT(kn_opts_parse("profview", "wdth=3", view_spec, N_VIEW, &o, err, sizeof err), -1);
  CHECK_STR(err,
            "%profview: unknown option 'wdth'; valid options: width, height, title, icicle, "
            "minwidth, delay, format, recur, pruned, offset");
  CHECK(o.vals == NULL && o.positional == NULL);

  CHECK_INT(kn_opts_parse("profview", "a b extra=", view_spec, N_VIEW, &o, err, sizeof err), -1);
  CHECK(strstr(err, "unknown option 'extra'") != NULL);

  CHECK_INT(kn_opts_parse("profclear", "x=1", NULL, 0, &o, err, sizeof err), -1);
  CHECK_STR(err, "%profclear: unknown option 'x'; it takes no options");

  /* Magic names given with their % signs are used as they are. */
  CHECK_INT(kn_opts_parse("%%timeit", "-q 3", NULL, 0, &o, err, sizeof err), -1);
  CHECK_STR(err, "%%timeit: unknown option '-q'; it takes no options");
}

typedef struct bad_case {
  const char *args, *want;
} bad_case_t;

static const bad_case_t bad_cases[] = {
    {"width=abc", "%profview: width=abc is not an integer (1..100000)"},
    {"width=", "%profview: width= is not an integer (1..100000)"},
    {"width=1.5", "%profview: width=1.5 is not an integer (1..100000)"},
    {"width=0", "%profview: width=0 is out of range (1..100000)"},
    {"width=100001", "%profview: width=100001 is out of range (1..100000)"},
    {"offset=x", "%profview: offset=x is not an integer"},
    {"offset=99999999999999999999",
     "%profview: offset=99999999999999999999 is out of range (too large)"},
    {"minwidth=2", "%profview: minwidth=2 is out of range (0..1)"},
    {"minwidth=abc", "%profview: minwidth=abc is not a number (0..1)"},
    {"delay=inf", "%profview: delay=inf is not a number"},
    {"delay=0x10", "%profview: delay=0x10 is not a number"},
    {"delay=1e", "%profview: delay=1e is not a number"},
    {"icicle=yes", "%profview: icicle=yes is not valid; choose true or false"},
    {"format=json", "%profview: format=json is not valid; choose tree or flat"},
    {"recur=x", "%profview: recur=x is not valid; choose off, flat or deep"},
    {"pruned=a,,b",
     "%profview: pruned=a,,b is not valid; give a comma-separated list of non-empty names"},
    {"pruned=", "%profview: pruned= is not valid; give a comma-separated list of non-empty names"},
    {"width=3 height=4 width=5", "%profview: option 'width' is given twice"},
    {"title=\"a", "%profview: unterminated quote in title=\"a"},
};

static void test_opts_bad_values(void) {
  for (size_t i = 0; i < FL__ARRAY_SIZE(bad_cases); i++) {
    kn_opts_t o;
    char err[512] = "";
    CHECK_INT(kn_opts_parse("profview", bad_cases[i].args, view_spec, N_VIEW, &o, err, sizeof err),
              -1);
    CHECK_STR(err, bad_cases[i].want);
    CHECK(o.vals == NULL);
  }
}

static const kn_optspec_t timeit_spec[] = {
    {"n", FL_OPT_INT, NULL, 1, 1e9, .help = "loops"},
    {"r", FL_OPT_INT, NULL, 1, 1000, .help = "repeats"},
    {"q", FL_OPT_BOOL, NULL, 1, 0, .help = "quiet"},
};

static void test_opts_flags(void) {
  kn_opts_t o;
  char err[256] = "";
  CHECK_INT(kn_opts_parse("%%timeit", "-n 10 -r3 -q -5 x==y", timeit_spec, 3, &o, err, sizeof err),
            0);
  const kn_optval_t *v = kn_opts_get(&o, "n");
  CHECK(v && v->set && v->i == 10);
  v = kn_opts_get(&o, "r");
  CHECK(v && v->set && v->i == 3);
  v = kn_opts_get(&o, "q");
  CHECK(v && v->set && v->b);
  CHECK_INT(o.n_positional, 2);
  if (o.n_positional == 2) {
    CHECK_STR(o.positional[0], "-5");
    CHECK_STR(o.positional[1], "x==y");
  }
  kn_opts_free(&o);

  CHECK_INT(kn_opts_parse("%%timeit", "n=7", timeit_spec, 3, &o, err, sizeof err), 0);
  v = kn_opts_get(&o, "n");
  CHECK(v && v->i == 7);
  kn_opts_free(&o);

  CHECK_INT(kn_opts_parse("%%timeit", "-n", timeit_spec, 3, &o, err, sizeof err), -1);
  CHECK_STR(err, "%%timeit: -n needs a value");
  CHECK_INT(kn_opts_parse("%%timeit", "-n abc", timeit_spec, 3, &o, err, sizeof err), -1);
  CHECK_STR(err, "%%timeit: -n abc is not an integer (1..1000000000)");
  CHECK_INT(kn_opts_parse("%%timeit", "-r0", timeit_spec, 3, &o, err, sizeof err), -1);
  CHECK_STR(err, "%%timeit: -r0 is out of range (1..1000)");
  CHECK_INT(kn_opts_parse("%%timeit", "-n 1 n=2", timeit_spec, 3, &o, err, sizeof err), -1);
  CHECK_STR(err, "%%timeit: option 'n' is given twice");
  CHECK_INT(kn_opts_parse("%%timeit", "-x 1", timeit_spec, 3, &o, err, sizeof err), -1);
  CHECK_STR(err, "%%timeit: unknown option '-x'; valid options: -n (loops), -r (repeats), -q (quiet)");
}

int main(void) {
  test_split_none();
  test_split_line_magics();
  test_split_cell_magic();
  test_split_errors();
  test_words();
  test_opts_values();
  test_opts_unknown();
  test_opts_bad_values();
  test_opts_flags();
  return TEST_DONE();
}
