/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for kn_timeit: %%timeit's and %timeit's options as the user
 * writes them (the worker's request, the statement, the error a mistake
 * gets), the report line for known timings, and durations in words. */
#include <jansson.h>
#include <math.h>

#include "kn_timeit.h"
#include "test.h"
#include "fl__common.h"

static void test_parse(void) {
  static const struct {
    const char *args;
    bool statement;
    int rc;
    long long number, repeat;
    const char *stmt;
    const char *err[2]; /* what the error must name */
  } cases[] = {
      /* The cell form: flags only. */
      {"", false, 0, 0, 7, NULL, {NULL}},
      {"-n 10 -r 3", false, 0, 10, 3, NULL, {NULL}},
      {"-r 3 -n 10", false, 0, 10, 3, NULL, {NULL}},
      {"-n10", false, 0, 10, 7, NULL, {NULL}},
      {"-r2", false, 0, 0, 2, NULL, {NULL}},
      {"  -n 1  ", false, 0, 1, 7, NULL, {NULL}},
      {"-q 5", false, -1, 0, 0, NULL, {"-n", "-r"}},
      {"-n 5 f();", false, -1, 0, 0, NULL, {"f();", "-n"}},
      {"loops", false, -1, 0, 0, NULL, {"loops", NULL}},
      {"-n 0", false, -1, 0, 0, NULL, {"out of range", NULL}},
      {"-r 0", false, -1, 0, 0, NULL, {"out of range", NULL}},
      {"-n many", false, -1, 0, 0, NULL, {"-n many", "not an integer"}},
      {"-n", false, -1, 0, 0, NULL, {"-n", "needs a value"}},
      {"-n 5 -n 6", false, -1, 0, 0, NULL, {"twice", NULL}},
      /* The statement form: flags, then the statement as written. */
      {"f();", true, 0, 0, 7, "f();", {NULL}},
      {"-n 5 f(x, \"a b\");", true, 0, 5, 7, "f(x, \"a b\");", {NULL}},
      {"-n 5 -r 2 s = g( \"x  -n 3\" ,  y );", true, 0, 5, 2, "s = g( \"x  -n 3\" ,  y );", {NULL}},
      {"-r1 x = -y;", true, 0, 0, 1, "x = -y;", {NULL}},
      {"for (int i = 0; i < 9; i++) s += i;",
       true,
       0,
       0,
       7,
       "for (int i = 0; i < 9; i++) s += i;",
       {NULL}},
      {"", true, -1, 0, 0, NULL, {"statement", NULL}},
      {"-n 5", true, -1, 0, 0, NULL, {"statement", NULL}},
      {"-n 5   ", true, -1, 0, 0, NULL, {"statement", NULL}},
      {"-q 5 f();", true, -1, 0, 0, NULL, {"-n", "-r"}},
      {"-n 0 f();", true, -1, 0, 0, NULL, {"out of range", NULL}},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    json_t *spec = NULL;
    char *stmt = NULL, err[256] = "";
    int rc = kn_timeit_parse(cases[i].args, cases[i].statement, &spec, &stmt, err, sizeof err);
    CHECK_INT(rc, cases[i].rc);
    if (cases[i].rc == 0) {
      CHECK_INT(json_integer_value(json_object_get(spec, "number")), cases[i].number);
      CHECK_INT(json_integer_value(json_object_get(spec, "repeat")), cases[i].repeat);
      /* The statement as the user wrote it, after the space that ends
       * the flags. */
      CHECK_STR(stmt ? stmt + strspn(stmt, " ") : NULL, cases[i].stmt);
    } else {
      CHECK(spec == NULL && stmt == NULL);
      for (int k = 0; k < 2; k++)
        if (cases[i].err[k]) CHECK(strstr(err, cases[i].err[k]) != NULL);
      CHECK(strstr(err, cases[i].statement ? "%timeit" : "%%timeit") != NULL);
    }
    if (rc != cases[i].rc) fprintf(stderr, "  case %zu \"%s\": %s\n", i, cases[i].args, err);
    json_decref(spec);
    free(stmt);
  }
}

/* The report of known per-loop times: mean and population standard
 * deviation, each with three significant digits in its own unit. */
static void test_report(void) {
  static const struct {
    long long number;
    double per_loop_ns[8];
    size_t runs;
    const char *line;
  } cases[] = {
      /* mean 2 µs; deviations -1, 0, 1 µs: sqrt(2/3) µs = 816.5 ns (the
       * sample deviation would be 1.00 µs) */
      {100,
       {1000, 2000, 3000},
       3,
       "2.00 \xc2\xb5s \xc2\xb1 816 ns per loop (mean \xc2\xb1 std. dev. of 3 runs, 100 loops "
       "each)\n"},
      {1,
       {1.5e6},
       1,
       "1.50 ms \xc2\xb1 0.00 ns per loop (mean \xc2\xb1 std. dev. of 1 run, 1 loop each)\n"},
      {1,
       {2e9, 4e9},
       2,
       "3.00 s \xc2\xb1 1.00 s per loop (mean \xc2\xb1 std. dev. of 2 runs, 1 loop each)\n"},
      {10,
       {50, 50, 50, 50, 50, 50, 50},
       7,
       "50.0 ns \xc2\xb1 0.00 ns per loop (mean \xc2\xb1 std. dev. of 7 runs, 10 loops each)\n"},
      {1000,
       {12300, 12500},
       2,
       "12.4 \xc2\xb5s \xc2\xb1 100 ns per loop (mean \xc2\xb1 std. dev. of 2 runs, 1000 loops "
       "each)\n"},
      /* mean 4 ms; deviations -3, -1, 1, 3 ms: sqrt(5) ms */
      {3,
       {1e6, 3e6, 5e6, 7e6},
       4,
       "4.00 ms \xc2\xb1 2.24 ms per loop (mean \xc2\xb1 std. dev. of 4 runs, 3 loops each)\n"},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    json_t *times = json_array();
    for (size_t k = 0; k < cases[i].runs; k++)
      json_array_append_new(times, json_real(cases[i].per_loop_ns[k]));
    json_t *result =
        json_pack("{s:I, s:o}", "number", (json_int_t)cases[i].number, "per_loop_ns", times);
    char *line = kn_timeit_report(result);
    CHECK_STR(line, cases[i].line);
    free(line);
    json_decref(result);
  }

  /* The worker may send whole numbers: they count the same. */
  json_t *result = json_pack("{s:i, s:[i, i, i]}", "number", 100, "per_loop_ns", 1000, 2000, 3000);
  char *line = kn_timeit_report(result);
  CHECK_STR(line, cases[0].line);
  free(line);
  json_decref(result);
}

static void test_format_duration(void) {
  static const struct {
    double ns;
    const char *text;
  } cases[] = {
      {0, "0.00 ns"},
      {1, "1.00 ns"},
      {12.34, "12.3 ns"},
      {999, "999 ns"},
      {999.6, "1.00 \xc2\xb5s"},
      {999999, "1.00 ms"},
      {99.96e3, "100 \xc2\xb5s"},
      {1000, "1.00 \xc2\xb5s"},
      {1234, "1.23 \xc2\xb5s"},
      {45600, "45.6 \xc2\xb5s"},
      {123456, "123 \xc2\xb5s"},
      {1e6, "1.00 ms"},
      {45.6e6, "45.6 ms"},
      {999e6, "999 ms"},
      {1e9, "1.00 s"},
      {2.5e9, "2.50 s"},
      {123e9, "123 s"},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    char buf[32];
    kn_format_duration(buf, sizeof buf, cases[i].ns);
    CHECK_STR(buf, cases[i].text);
  }
}

int main(void) {
  test_parse();
  test_report();
  test_format_duration();
  return TEST_DONE();
}
