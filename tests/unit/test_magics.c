/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for kn_magics: the table every magic lives in, and what the
 * user reads from it (%NAME?, %lsmagic, the lists in error messages). Each
 * entry is checked against the rest of the table, so a new entry is
 * checked too. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>

#include "kn_magics.h"
#include "kn_profreq.h"
#include "kn_text.h"
#include "test.h"

static bool starts_with(const char *s, const char *prefix) {
  return s && !strncmp(s, prefix, strlen(prefix));
}

/* s with each run of white space made one space. New. */
static char *squeezed(const char *s) {
  fl__buf_t sb = FL__BUF_INIT;
  for (; *s; s++) {
    if (!isspace((unsigned char)*s)) {
      fl__buf_putc(&sb, *s);
    } else if (sb.len && sb.data[sb.len - 1] != ' ') {
      fl__buf_putc(&sb, ' ');
    }
  }
  return fl__buf_take(&sb);
}

/* Whether the list "a, b, c" holds item. */
static bool listed(const char *list, const char *item) {
  size_t n = strlen(item);
  for (const char *p = list; (p = strstr(p, item)) != NULL; p += n)
    if ((p == list || (p - list >= 2 && !strncmp(p - 2, ", ", 2))) && (p[n] == '\0' || p[n] == ','))
      return true;
  return false;
}

static size_t count_items(const char *list) {
  if (!*list) return 0;
  size_t n = 1;
  for (const char *p = list; (p = strstr(p, ", ")) != NULL; p += 2) n++;
  return n;
}

static void test_every_entry(void) {
  char *list = kn_magic_list(), *flat_list = squeezed(list);
  char *line_names = kn_magic_names(KN_FORM_LINE), *cell_names = kn_magic_names(KN_FORM_CELL);
  size_t n = 0, n_line = 0, n_cell = 0;
  const kn_magic_def_t *m;
  for (size_t i = 0; (m = kn_magic_at(i)) != NULL; i++, n++) {
    CHECK(kn_magic_find(m->name) == m);
    CHECK(m->forms & (KN_FORM_LINE | KN_FORM_CELL));
    CHECK(m->usage && m->help && *m->help);

    /* %name?: the usage first, then the help, and the options when there
     * are any. */
    char *help = kn_magic_help(m->name);
    CHECK(starts_with(help, m->usage));
    CHECK(help && strstr(help, m->help));
    CHECK_INT(help && strstr(help, "Options:") != NULL, m->options != 0);
    free(help);

    /* %lsmagic: every usage, and the help's opening words. */
    CHECK(strstr(list, m->usage) != NULL);
    char *flat_help = squeezed(m->help);
    char *stop = strstr(flat_help, ". ");
    if (stop) *stop = '\0';
    CHECK(strstr(flat_list, flat_help) != NULL);
    if (!strstr(flat_list, flat_help)) fprintf(stderr, "  %%lsmagic lacks \"%s\"\n", flat_help);
    free(flat_help);

    /* The lists in error messages: "%name" for the line form, "%%name"
     * for the cell form, and only for the forms it has. */
    char item[64];
    snprintf(item, sizeof item, "%%%s", m->name);
    CHECK_INT(listed(line_names, item), (m->forms & KN_FORM_LINE) != 0);
    snprintf(item, sizeof item, "%%%%%s", m->name);
    CHECK_INT(listed(cell_names, item), (m->forms & KN_FORM_CELL) != 0);
    n_line += (m->forms & KN_FORM_LINE) != 0;
    n_cell += (m->forms & KN_FORM_CELL) != 0;

    /* A cell magic runs the cell's code one way or another. */
    if (m->forms & KN_FORM_CELL) CHECK(m->timeit || m->profile != KN_PROF_NONE);

    /* A line form with no handler always takes a statement, and says so
     * when it is run without one. */
    if (!m->kernel_line && !m->prof_line) {
      static const char *const args[] = {"", "f();", "x", "width=600", "-n 3 g(1);"};
      for (size_t k = 0; k < FL__ARRAY_SIZE(args); k++)
        CHECK(kn_magic_is_statement(m, args[k]));
      kn_magic_result_t res;
      char err[512] = "";
      CHECK_INT(kn_magic_run_line(NULL, m, "", &res, err, sizeof err), -1);
      CHECK(strstr(err, "needs a statement") && strstr(err, m->usage));
    }
  }
  CHECK(n >= 10);
  CHECK(kn_magic_at(n) == NULL);
  /* Nothing else is listed. */
  CHECK_INT(count_items(line_names), n_line);
  CHECK_INT(count_items(cell_names), n_cell);
  CHECK(strstr(line_names, "%%") == NULL);
  free(list);
  free(flat_list);
  free(line_names);
  free(cell_names);
}

/* Whether a line is the statement form of its magic. */
static void test_is_statement(void) {
  static const struct {
    const char *magic, *args;
    bool statement;
  } cases[] = {
      {"profbase", "", false}, /* lists the baselines */
      {"profbase", "base f();", true},
      {"profdiffview", "base", false}, /* the session profile against base */
      {"profdiffview", "base width=600", false},
      {"profdiffview", "base width=600 noise=0.1", false},
      {"profdiffview", "base f();", true},
      {"profdiffview", "base width=600 f(1, 2);", true},
      {"timeit", "f();", true},
      {"timeit", "-n 3 f();", true},
      {"profile", "f();", true},
      {"profview", "width=600 f();", true},
      {"cc", "clang", false},
      {"cflags", "-O3", false},
      {"profshow", "width=600", false},
      {"lsmagic", "", false},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    const kn_magic_def_t *m = kn_magic_find(cases[i].magic);
    CHECK(m != NULL);
    if (!m) continue;
    CHECK_INT(kn_magic_is_statement(m, cases[i].args), cases[i].statement);
    if (kn_magic_is_statement(m, cases[i].args) != cases[i].statement)
      fprintf(stderr, "  %%%s %s\n", cases[i].magic, cases[i].args);
  }
}

static void test_unknown(void) {
  static const char *const names[] = {"nosuch", "", "%timeit", "TIMEIT", "time"};
  for (size_t i = 0; i < FL__ARRAY_SIZE(names); i++) {
    CHECK(kn_magic_find(names[i]) == NULL);
    CHECK(kn_magic_help(names[i]) == NULL);
  }
}

/* Every KEY= a magic's usage names is an option of its groups: completion
 * and help read the option tables, never the usage's prose. */
static void test_usage_keys_are_options(void) {
  const kn_magic_def_t *m;
  for (size_t i = 0; (m = kn_magic_at(i)) != NULL; i++) {
    for (const char *p = m->usage; *p; p++) {
      if (!isalpha((unsigned char)*p) ||
          (p > m->usage && (isalnum((unsigned char)p[-1]) || p[-1] == '_')))
        continue;
      const char *q = p;
      while (isalnum((unsigned char)*q) || *q == '_') q++;
      if (*q == '=') {
        bool found = false;
        const kn_optspec_t *o;
        for (size_t j = 0; !found && (o = kn_profreq_option(m->options, j)) != NULL; j++)
          found = strlen(o->name) == (size_t)(q - p) && !strncmp(o->name, p, (size_t)(q - p));
        CHECK(found);
        if (!found)
          fprintf(stderr, "  %%%s: %.*s= is not among its options\n", m->name, (int)(q - p), p);
      }
      p = q - 1;
    }
  }
}

/* The kind of samples a profiling magic takes is its row's, or what its
 * options choose (kn_profreq_kind), whatever the run does with the
 * profile: %%profallocs is a view of allocations, not a mode of its own. */
static void test_kinds(void) {
  CHECK_INT(kn_magic_find("profallocs")->profile, KN_PROF_VIEW);
  CHECK_INT(kn_magic_find("profallocs")->kind, FL_PROFILE_ALLOC_BYTES);
  static const char *const cpu_magics[] = {"profview", "profile", "profbase", "profdiffview"};
  for (size_t i = 0; i < FL__ARRAY_SIZE(cpu_magics); i++)
    CHECK_INT(kn_magic_find(cpu_magics[i])->kind, FL_PROFILE_CPU);

  static const struct {
    const char *args;
    fl_profile_kind_t dflt, kind;
  } cases[] = {
      {"", FL_PROFILE_CPU, FL_PROFILE_CPU},
      {"", FL_PROFILE_ALLOC_BYTES, FL_PROFILE_ALLOC_BYTES},
      {"", FL_PROFILE_LIVE_COUNT, FL_PROFILE_LIVE_COUNT}, /* a diff: as its baseline */
      {"allocs=true", FL_PROFILE_CPU, FL_PROFILE_ALLOC_BYTES},
      {"allocs=true", FL_PROFILE_LIVE_COUNT, FL_PROFILE_LIVE_COUNT},
      {"allocs=false", FL_PROFILE_ALLOC_COUNT, FL_PROFILE_CPU},
      {"sample_rate=0.5", FL_PROFILE_CPU, FL_PROFILE_ALLOC_BYTES},
      {"weight=count", FL_PROFILE_CPU, FL_PROFILE_ALLOC_COUNT},
      {"weight=count", FL_PROFILE_ALLOC_BYTES, FL_PROFILE_ALLOC_COUNT},
      {"live=true", FL_PROFILE_ALLOC_COUNT, FL_PROFILE_LIVE_COUNT},
      {"weight=bytes", FL_PROFILE_LIVE_COUNT, FL_PROFILE_LIVE_BYTES},
      {"live=false weight=count", FL_PROFILE_LIVE_BYTES, FL_PROFILE_ALLOC_COUNT},
      {"allocs=false weight=count", FL_PROFILE_CPU, FL_PROFILE_CPU},
      {"clock=wall", FL_PROFILE_CPU, FL_PROFILE_WALL},
      {"", FL_PROFILE_WALL, FL_PROFILE_WALL}, /* a diff against a wall-clock baseline */
      {"clock=cpu", FL_PROFILE_WALL, FL_PROFILE_CPU},
  };
  kn_prof_t *kp = kn_prof_new("/tmp");
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    kn_profreq_t req;
    char err[512] = "";
    CHECK_INT(
        kn_profreq_parse(kp, "profbase", cases[i].args,
                         KN_OPTS_PROFILER | KN_OPTS_ALLOC | KN_OPTS_KIND, &req, err, sizeof err),
        0);
    CHECK_STR(fl_kind(kn_profreq_kind(&req, cases[i].dflt))->name, fl_kind(cases[i].kind)->name);
    kn_profreq_free(&req);
  }
  kn_prof_destroy(&kp);
  CHECK_STR(kn_profreq_kind_words(FL_PROFILE_CPU, FL_PROFILE_ALLOC_BYTES), "allocs=false");
  CHECK_STR(kn_profreq_kind_words(FL_PROFILE_LIVE_BYTES, FL_PROFILE_CPU), "allocs=true");
  CHECK_STR(kn_profreq_kind_words(FL_PROFILE_CPU, FL_PROFILE_WALL), "clock=cpu");
  CHECK_STR(kn_profreq_kind_words(FL_PROFILE_WALL, FL_PROFILE_CPU), "clock=wall");
}

/* The sampling options' ranges are the library table's rows, the same as
 * `cflame record`'s flags (tests/cli/test_record.py tries that door):
 * the bounds parse, a value past them is an error saying what is valid. */
static void test_sampling_ranges(void) {
  static const struct {
    const char *magic, *args;
    unsigned groups;
    const char *err; /* NULL: accepted */
  } cases[] = {
      {"profinit", "delay=0.0001", KN_OPTS_SAMPLING, NULL},
      {"profinit", "delay=10", KN_OPTS_SAMPLING, NULL},
      {"profinit", "delay=0.00005", KN_OPTS_SAMPLING,
       "%profinit: delay=0.00005: expected a number of seconds from 0.0001 to 10, such as 0.001"},
      {"profinit", "delay=11", KN_OPTS_SAMPLING,
       "%profinit: delay=11: expected a number of seconds from 0.0001 to 10, such as 0.001"},
      {"profallocs", "sample_rate=0.000001", KN_OPTS_ALLOC, NULL},
      {"profallocs", "sample_rate=0.0000001", KN_OPTS_ALLOC,
       "%profallocs: sample_rate=0.0000001: expected a share of the allocation calls from "
       "0.000001 to 1, such as 0.1"},
      {"profattach", "duration=0.1", KN_OPTS_ATTACH, NULL},
      {"profattach", "duration=0.05", KN_OPTS_ATTACH,
       "%profattach: duration=0.05: expected seconds, more than 0 (at least 0.1), such as 30"},
      {"profview", "event=banana", KN_OPTS_PROFILER, "%profview: event=banana is not an event"},
  };
  kn_prof_t *kp = kn_prof_new("/tmp");
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    kn_profreq_t req;
    char err[1024] = "";
    int rc = kn_profreq_parse(kp, cases[i].magic, cases[i].args, cases[i].groups, &req, err,
                              sizeof err);
    CHECK_INT(rc, cases[i].err ? -1 : 0);
    if (cases[i].err) {
      CHECK(!strncmp(err, cases[i].err, strlen(cases[i].err)));
      if (strncmp(err, cases[i].err, strlen(cases[i].err)))
        fprintf(stderr, "  %s: %s\n", cases[i].args, err);
    } else {
      kn_profreq_free(&req);
    }
  }
  kn_profreq_t req;
  char err[256];
  CHECK_INT(kn_profreq_parse(kp, "profinit", "delay=0.0001", KN_OPTS_SAMPLING, &req, err,
                             sizeof err), 0);
  CHECK(req.delay_set && req.delay_ns == 100000);
  kn_profreq_free(&req);
  kn_prof_destroy(&kp);
}

int main(void) {
  test_sampling_ranges();
  test_every_entry();
  test_kinds();
  test_usage_keys_are_options();
  test_is_statement();
  test_unknown();
  return TEST_DONE();
}
