/* kn_clang: completion and inspection by libclang in its thread, on units
 * written as the session writes them (#line directives naming cells). */
#define _GNU_SOURCE
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "kn_clang.h"
#include "kn_strbuf.h"
#include "test.h"

#define PATH "/tmp/cflame-test-clang/unit.c"

static const char *const head =
    "#line 1 \"<cflame prelude>\"\n"
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "#line 1 \"cell[1]\"\n"
    "typedef struct P { double alpha; int beta; } P;\n"
    "struct node { int v; struct node *next; };\n"
    "#define SQUARE(x) ((x) * (x))\n"
    "/* Adds b to a. */\n"
    "int add(int a, int b) __asm__(\"cflame_c1_add\");\n"
    "#line 1 \"<cflame cell 2>\"\n"
    "int cflame_run_2(void) {\n"
    "#line 1 \"cell[2]\"\n";

/* Runs one job on c and waits for its result (new). text is top + body;
 * the position is where "@" stands in body (removed). */
static kn_clang_result_t *ask_in(kn_clang_t *c, kn_clang_op_t op, const char *top,
                                 const char *body, const char *prefix) {
  kn_strbuf_t text = KN_STRBUF_INIT;
  kn_strbuf_puts(&text, top);
  const char *at = strchr(body, '@');
  size_t before = text.len + (size_t)(at - body);
  kn_strbuf_append(&text, body, (size_t)(at - body));
  kn_strbuf_puts(&text, at + 1);
  kn_strbuf_puts(&text, "\n}\n");
  unsigned line = 1, col = 1;
  for (size_t i = 0; i < before; i++) {
    if (text.data[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  char **args = kn_xcalloc(4, sizeof *args);
  args[0] = kn_strdup("-xc");
  args[1] = kn_strdup("-std=gnu17");
  args[2] = kn_strdup("-fparse-all-comments");
  kn_clang_job_t job = {.op = op, .path = kn_strdup(PATH), .args = args,
                        .text = kn_strbuf_steal(&text), .line = line, .column = col,
                        .prefix = prefix ? kn_strdup(prefix) : NULL};
  CHECK_INT(kn_clang_submit(c, &job), 0);
  CHECK(job.text == NULL); /* taken */
  CHECK(kn_clang_busy(c));
  kn_clang_job_t again = {0};
  CHECK_INT(kn_clang_submit(c, &again), -1); /* one at a time */
  kn_clang_result_t *r = NULL;
  while (!r) {
    struct pollfd p = {kn_clang_fd(c), POLLIN, 0};
    CHECK(poll(&p, 1, 60000) == 1);
    r = kn_clang_take(c);
  }
  CHECK(!kn_clang_busy(c));
  if (r->error) fprintf(stderr, "libclang: %s\n", r->error);
  CHECK(r->error == NULL);
  return r;
}

static kn_clang_result_t *ask(kn_clang_t *c, kn_clang_op_t op, const char *body,
                              const char *prefix) {
  return ask_in(c, op, head, body, prefix);
}

static const kn_clang_match_t *find(const kn_clang_result_t *r, const char *name) {
  for (size_t i = 0; i < r->n_matches; i++)
    if (!strcmp(r->matches[i].name, name)) return &r->matches[i];
  return NULL;
}

static void test_completion(kn_clang_t *c) {
  kn_clang_result_t *r = ask(c, KN_CLANG_COMPLETE, "  pri@", "pri");
  const kn_clang_match_t *m = find(r, "printf");
  CHECK(m != NULL);
  if (m) {
    CHECK_INT(m->kind, KN_CLANG_FUNCTION);
    CHECK_STR(m->signature, "int printf(const char *restrict format, ...)");
  }
  for (size_t i = 0; i < r->n_matches; i++) CHECK(!strncmp(r->matches[i].name, "pri", 3));
  kn_clang_result_free(&r);

  /* Members through '.' and '->', on any expression. */
  r = ask(c, KN_CLANG_COMPLETE, "  P pt; pt.al@", "al");
  CHECK_INT(r->n_matches, 1);
  if (r->n_matches) {
    CHECK_STR(r->matches[0].name, "alpha");
    CHECK_INT(r->matches[0].kind, KN_CLANG_MEMBER);
  }
  kn_clang_result_free(&r);
  r = ask(c, KN_CLANG_COMPLETE, "  struct node n1; n1.next->@", "");
  CHECK(find(r, "v") && find(r, "next"));
  CHECK_INT(r->n_matches, 2);
  kn_clang_result_free(&r);

  /* The session's own names, macros and keywords. */
  r = ask(c, KN_CLANG_COMPLETE, "  SQ@", "SQ");
  CHECK(find(r, "SQUARE") && find(r, "SQUARE")->kind == KN_CLANG_FUNCTION_MACRO);
  kn_clang_result_free(&r);
  r = ask(c, KN_CLANG_COMPLETE, "  whi@", "whi");
  CHECK(find(r, "while") && find(r, "while")->kind == KN_CLANG_KEYWORD);
  kn_clang_result_free(&r);

  /* Code that does not compile still completes. */
  r = ask(c, KN_CLANG_COMPLETE, "  int x = ;; )) mem@", "mem");
  CHECK(find(r, "memcpy") && find(r, "memset"));
  kn_clang_result_free(&r);
}

/* The session changes between requests: a name declared since the unit's
 * last parse, and a header added to its preamble, both complete. */
static void test_session_changes(kn_clang_t *c) {
  kn_strbuf_t top = KN_STRBUF_INIT;
  kn_strbuf_puts(&top, head);
  kn_strbuf_puts(&top, "  }\n#line 1 \"cell[3]\"\nint fresh_name;\nint f3(void) {\n");
  kn_clang_result_t *r = ask_in(c, KN_CLANG_COMPLETE, top.data, "  fres@", "fres");
  CHECK(find(r, "fresh_name") != NULL);
  CHECK(r->parse_ms == 0); /* the same preamble: the unit was not reparsed */
  kn_clang_result_free(&r);
  kn_strbuf_free(&top);

  kn_strbuf_puts(&top, "#include <ctype.h>\n");
  kn_strbuf_puts(&top, head);
  r = ask_in(c, KN_CLANG_COMPLETE, top.data, "  isal@", "isal");
  CHECK(find(r, "isalpha") && find(r, "isalnum"));
  CHECK(r->parse_ms > 0); /* a new preamble */
  kn_clang_result_free(&r);
  kn_strbuf_free(&top);
}

static void test_inspection(kn_clang_t *c) {
  kn_clang_result_t *r = ask(c, KN_CLANG_INSPECT, "  @printf(\"hi\");", NULL);
  kn_clang_symbol_t *s = r->symbol;
  CHECK(s != NULL);
  if (s) {
    CHECK_STR(s->name, "printf");
    CHECK_INT(s->kind, KN_CLANG_FUNCTION);
    CHECK_STR(s->declaration, "int printf(const char *restrict __format, ...)");
    CHECK(s->file && strstr(s->file, "stdio.h"));
    CHECK(s->line > 0);
    CHECK(s->system);
  }
  kn_clang_result_free(&r);

  r = ask(c, KN_CLANG_INSPECT, "  int s = @add(1, 2);", NULL);
  s = r->symbol;
  CHECK(s != NULL);
  if (s) {
    CHECK_STR(s->declaration, "int add(int a, int b)"); /* no asm label */
    CHECK_STR(s->file, "cell[1]");
    CHECK_INT(s->line, 5);
    CHECK(!s->system);
    CHECK_STR(s->comment, "/* Adds b to a. */");
  }
  kn_clang_result_free(&r);

  r = ask(c, KN_CLANG_INSPECT, "  P pt; pt.@alpha = 1;", NULL);
  s = r->symbol;
  CHECK(s && s->kind == KN_CLANG_MEMBER);
  if (s) {
    CHECK_STR(s->declaration, "double alpha");
    CHECK_STR(s->parent, "struct P");
  }
  kn_clang_result_free(&r);

  r = ask(c, KN_CLANG_INSPECT, "  @P pt;", NULL);
  s = r->symbol;
  CHECK(s && s->kind == KN_CLANG_TYPE);
  if (s) CHECK(s->definition && strstr(s->definition, "double alpha"));
  kn_clang_result_free(&r);

  r = ask(c, KN_CLANG_INSPECT, "  int n = @SQUARE(3);", NULL);
  s = r->symbol;
  CHECK(s != NULL);
  if (s) CHECK_STR(s->declaration, "#define SQUARE(x) ((x) * (x))");
  kn_clang_result_free(&r);

  /* A name that names nothing: no symbol, no error. */
  r = ask(c, KN_CLANG_INSPECT, "  @nosuchname(1;", NULL);
  CHECK(r->symbol == NULL);
  kn_clang_result_free(&r);
}

/* Destroying the object while a job runs returns (the thread finishes
 * alone) and leaks nothing the thread does not free. */
static void test_destroy_while_busy(void) {
  char err[256];
  kn_clang_t *c = kn_clang_new(err, sizeof err);
  CHECK(c != NULL);
  char **args = kn_xcalloc(2, sizeof *args);
  args[0] = kn_strdup("-xc");
  kn_clang_job_t job = {.op = KN_CLANG_COMPLETE, .path = kn_strdup(PATH), .args = args,
                        .text = kn_strdup("#include <stdio.h>\nint x = pri"), .line = 2,
                        .column = 9, .prefix = kn_strdup("pri")};
  CHECK_INT(kn_clang_submit(c, &job), 0);
  kn_clang_destroy(&c);
  CHECK(c == NULL);
}

int main(void) {
  char err[256];
  kn_clang_t *c = kn_clang_new(err, sizeof err);
  CHECK(c != NULL);
  if (!c) return TEST_DONE();
  test_completion(c);
  test_session_changes(c);
  test_inspection(c);
  kn_clang_destroy(&c);
  test_destroy_while_busy();
  return TEST_DONE();
}
