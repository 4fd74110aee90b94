/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for kn_history: what a history_request returns, as a front
 * end's up-arrow and %history-style search see it. */
#include <jansson.h>
#include <stdbool.h>

#include "kn_history.h"
#include "test.h"
#include "fl__common.h"

/* The session's inputs: execution counts need not be consecutive (a
 * store_history=false request takes none). */
static const struct {
  int line;
  const char *input;
} inputs[] = {
    {1, "int x = 1;"},
    {2, "x++;"},
    {4, "%timeit fib(20);"},
    {5, "printf(\"%d\\n\", fib(10));"},
    {6, "int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }"},
};
#define N_INPUTS (FL__ARRAY_SIZE(inputs))

static const char *input_of(int line) {
  for (size_t i = 0; i < N_INPUTS; i++)
    if (inputs[i].line == line) return inputs[i].input;
  return NULL;
}

/* Whether history is exactly the entries [1, line, input] for want[0..n),
 * in that order; says what differs. */
static bool history_is(const json_t *history, const int *want, size_t n, const char *request) {
  bool same = json_is_array(history) && json_array_size(history) == n;
  for (size_t i = 0; same && i < n; i++) {
    const json_t *e = json_array_get(history, i);
    same = json_is_array(e) && json_array_size(e) == 3 &&
           json_integer_value(json_array_get(e, 0)) == 1 &&
           json_integer_value(json_array_get(e, 1)) == want[i] &&
           json_is_string(json_array_get(e, 2)) &&
           !strcmp(json_string_value(json_array_get(e, 2)), input_of(want[i]));
  }
  if (!same) {
    char *got = json_dumps(history, JSON_COMPACT);
    fprintf(stderr, "  %s -> %s\n", request, got ? got : "(null)");
    free(got);
  }
  return same;
}

static void test_query(void) {
  static const struct {
    const char *request;
    int lines[N_INPUTS + 1]; /* the entries' lines, ended by 0 */
  } cases[] = {
      {"{\"hist_access_type\": \"tail\", \"n\": 2}", {5, 6}},
      {"{\"hist_access_type\": \"tail\", \"n\": 1}", {6}},
      {"{\"hist_access_type\": \"tail\", \"n\": 0}", {0}},
      {"{\"hist_access_type\": \"tail\", \"n\": 100}", {1, 2, 4, 5, 6}},
      {"{\"hist_access_type\": \"range\", \"start\": 2, \"stop\": 5}", {2, 4}},
      {"{\"hist_access_type\": \"range\", \"start\": 1, \"stop\": 2}", {1}},
      {"{\"hist_access_type\": \"range\", \"start\": 3, \"stop\": 4}", {0}},
      {"{\"hist_access_type\": \"range\", \"start\": 4}", {4, 5, 6}},
      {"{\"hist_access_type\": \"range\", \"start\": 0, \"stop\": 100}", {1, 2, 4, 5, 6}},
      {"{\"hist_access_type\": \"search\", \"pattern\": \"*fib*\"}", {4, 5, 6}},
      {"{\"hist_access_type\": \"search\", \"pattern\": \"fib(2*\"}", {4}},
      {"{\"hist_access_type\": \"search\", \"pattern\": \"?x?\"}", {1, 2}},
      {"{\"hist_access_type\": \"search\", \"pattern\": \"printf\"}", {5}},
      {"{\"hist_access_type\": \"search\", \"pattern\": \"*nosuch*\"}", {0}},
      {"{\"hist_access_type\": \"search\", \"pattern\": \"*\"}", {1, 2, 4, 5, 6}},
      {"{\"hist_access_type\": \"everything\"}", {1, 2, 4, 5, 6}},
      {"{}", {1, 2, 4, 5, 6}},
  };
  kn_history_t *h = kn_history_new();
  for (size_t i = 0; i < N_INPUTS; i++) kn_history_add(h, inputs[i].line, inputs[i].input);
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    json_t *request = json_loads(cases[i].request, 0, NULL);
    CHECK(request != NULL);
    json_t *history = kn_history_query(h, request);
    size_t n = 0;
    while (n < N_INPUTS && cases[i].lines[n]) n++;
    CHECK(history_is(history, cases[i].lines, n, cases[i].request));
    json_decref(history);
    json_decref(request);
  }
  kn_history_destroy(&h);
  CHECK(h == NULL);
}

/* A new session has no history; inputs are copies, not the caller's
 * buffers; many inputs are all kept. */
static void test_empty_and_many(void) {
  kn_history_t *h = kn_history_new();
  json_t *tail = json_pack("{s:s, s:i}", "hist_access_type", "tail", "n", 10);
  json_t *history = kn_history_query(h, tail);
  CHECK(json_is_array(history) && json_array_size(history) == 0);
  json_decref(history);

  char code[32];
  for (int line = 1; line <= 1000; line++) {
    snprintf(code, sizeof code, "cell %d;", line);
    kn_history_add(h, line, code);
  }
  strcpy(code, "overwritten");
  history = kn_history_query(h, tail);
  CHECK_INT(json_array_size(history), 10);
  json_t *last = json_array_get(history, 9);
  CHECK_INT(json_integer_value(json_array_get(last, 1)), 1000);
  CHECK_STR(json_string_value(json_array_get(last, 2)), "cell 1000;");
  json_decref(history);

  json_t *all = json_object();
  history = kn_history_query(h, all);
  CHECK_INT(json_array_size(history), 1000);
  json_decref(history);
  json_decref(all);
  json_decref(tail);
  kn_history_destroy(&h);
  kn_history_destroy(&h); /* a second destroy is harmless */
}

int main(void) {
  test_query();
  test_empty_and_many();
  return TEST_DONE();
}
