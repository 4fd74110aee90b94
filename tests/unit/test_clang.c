/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_clang: completion and inspection by libclang in its process
 * (cflame-clang), on units written as the session writes them (#line
 * directives naming cells); what happens to a process that a unit costs
 * its life; and kn_clangmsg's jobs and results through JSON. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kn_clang.h"
#include "kn_text.h"
#include "test.h"

#define PATH "/tmp/cflame-test-clang/unit.c"
#define MEMORY ((size_t)2048 << 20)

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

/* Waits for the result of c's job (new). */
static kn_clang_result_t *wait_result(kn_clang_t *c) {
  kn_clang_result_t *r = NULL;
  while (!r) {
    struct pollfd p = {kn_clang_fd(c), POLLIN, 0};
    CHECK(poll(&p, 1, 60000) == 1);
    r = kn_clang_take(c);
  }
  CHECK(!kn_clang_busy(c));
  return r;
}

/* A completion job on text, at the end of its last line. */
static kn_clang_job_t job_at_end(const char *text, const char *prefix) {
  char **args = fl__xcalloc(2, sizeof *args);
  args[0] = fl__xstrdup("-xc");
  const char *last = strrchr(text, '\n');
  unsigned line = 1;
  for (const char *p = text; *p; p++) line += *p == '\n';
  return (kn_clang_job_t){.op = KN_CLANG_COMPLETE,
                          .path = fl__xstrdup(PATH),
                          .args = args,
                          .text = fl__xstrdup(text),
                          .line = line,
                          .column = (unsigned)strlen(last ? last + 1 : text) + 1,
                          .prefix = fl__xstrdup(prefix)};
}

/* Runs one job on c and waits for its result (new). text is top + body;
 * the position is where "@" stands in body (removed). */
static kn_clang_result_t *ask_in(kn_clang_t *c, kn_clang_op_t op, const char *top, const char *body,
                                 const char *prefix) {
  fl__buf_t text = FL__BUF_INIT;
  fl__buf_puts(&text, top);
  const char *at = strchr(body, '@');
  size_t before = text.len + (size_t)(at - body);
  fl__buf_add(&text, body, (size_t)(at - body));
  fl__buf_puts(&text, at + 1);
  fl__buf_puts(&text, "\n}\n");
  unsigned line = 1, col = 1;
  for (size_t i = 0; i < before; i++) {
    if (text.data[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  char **args = fl__xcalloc(4, sizeof *args);
  args[0] = fl__xstrdup("-xc");
  args[1] = fl__xstrdup("-std=gnu17");
  args[2] = fl__xstrdup("-fparse-all-comments");
  kn_clang_job_t job = {.op = op,
                        .path = fl__xstrdup(PATH),
                        .args = args,
                        .text = fl__buf_take(&text),
                        .line = line,
                        .column = col,
                        .prefix = prefix ? fl__xstrdup(prefix) : NULL};
  char err[256];
  CHECK_INT(kn_clang_submit(c, &job, err, sizeof err), 0);
  CHECK(job.text == NULL); /* taken */
  CHECK(kn_clang_busy(c));
  kn_clang_job_t again = {0};
  CHECK_INT(kn_clang_submit(c, &again, err, sizeof err), -1); /* one at a time */
  kn_clang_result_t *r = wait_result(c);
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
  kn_clangmsg_result_free(&r);

  /* Members through '.' and '->', on any expression. */
  r = ask(c, KN_CLANG_COMPLETE, "  P pt; pt.al@", "al");
  CHECK_INT(r->n_matches, 1);
  if (r->n_matches) {
    CHECK_STR(r->matches[0].name, "alpha");
    CHECK_INT(r->matches[0].kind, KN_CLANG_MEMBER);
  }
  kn_clangmsg_result_free(&r);
  r = ask(c, KN_CLANG_COMPLETE, "  struct node n1; n1.next->@", "");
  CHECK(find(r, "v") && find(r, "next"));
  CHECK_INT(r->n_matches, 2);
  kn_clangmsg_result_free(&r);

  /* The session's own names, macros and keywords. */
  r = ask(c, KN_CLANG_COMPLETE, "  SQ@", "SQ");
  CHECK(find(r, "SQUARE") && find(r, "SQUARE")->kind == KN_CLANG_FUNCTION_MACRO);
  kn_clangmsg_result_free(&r);
  r = ask(c, KN_CLANG_COMPLETE, "  whi@", "whi");
  CHECK(find(r, "while") && find(r, "while")->kind == KN_CLANG_KEYWORD);
  kn_clangmsg_result_free(&r);

  /* Code that does not compile still completes. */
  r = ask(c, KN_CLANG_COMPLETE, "  int x = ;; )) mem@", "mem");
  CHECK(find(r, "memcpy") && find(r, "memset"));
  kn_clangmsg_result_free(&r);
}

/* The session changes between requests: a name declared since the unit's
 * last parse, and a header added to its preamble, both complete. */
static void test_session_changes(kn_clang_t *c) {
  fl__buf_t top = FL__BUF_INIT;
  fl__buf_puts(&top, head);
  fl__buf_puts(&top, "  }\n#line 1 \"cell[3]\"\nint fresh_name;\nint f3(void) {\n");
  kn_clang_result_t *r = ask_in(c, KN_CLANG_COMPLETE, top.data, "  fres@", "fres");
  CHECK(find(r, "fresh_name") != NULL);
  CHECK(r->parse_ms == 0); /* the same preamble: the unit was not reparsed */
  kn_clangmsg_result_free(&r);
  fl__buf_free(&top);

  fl__buf_puts(&top, "#include <ctype.h>\n");
  fl__buf_puts(&top, head);
  r = ask_in(c, KN_CLANG_COMPLETE, top.data, "  isal@", "isal");
  CHECK(find(r, "isalpha") && find(r, "isalnum"));
  CHECK(r->parse_ms > 0); /* a new preamble */
  kn_clangmsg_result_free(&r);
  fl__buf_free(&top);
}

static void test_inspection(kn_clang_t *c) {
  kn_clang_result_t *r = ask(c, KN_CLANG_INSPECT, "  @printf(\"hi\");", NULL);
  kn_clang_symbol_t *s = r->symbol;
  CHECK(s != NULL);
  if (s) {
    CHECK_STR(s->name, "printf");
    CHECK_INT(s->kind, KN_CLANG_FUNCTION);
    CHECK_STR(s->declaration, "int printf(const char *restrict format, ...)");
    CHECK(s->file && strstr(s->file, "stdio.h"));
    CHECK(s->line > 0);
    CHECK(s->system);
  }
  kn_clangmsg_result_free(&r);

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
  kn_clangmsg_result_free(&r);

  r = ask(c, KN_CLANG_INSPECT, "  P pt; pt.@alpha = 1;", NULL);
  s = r->symbol;
  CHECK(s && s->kind == KN_CLANG_MEMBER);
  if (s) {
    CHECK_STR(s->declaration, "double alpha");
    CHECK_STR(s->parent, "struct P");
  }
  kn_clangmsg_result_free(&r);

  r = ask(c, KN_CLANG_INSPECT, "  @P pt;", NULL);
  s = r->symbol;
  CHECK(s && s->kind == KN_CLANG_TYPE);
  if (s) CHECK(s->definition && strstr(s->definition, "double alpha"));
  kn_clangmsg_result_free(&r);

  r = ask(c, KN_CLANG_INSPECT, "  int n = @SQUARE(3);", NULL);
  s = r->symbol;
  CHECK(s != NULL);
  if (s) CHECK_STR(s->declaration, "#define SQUARE(x) ((x) * (x))");
  kn_clangmsg_result_free(&r);

  /* A name that names nothing: no symbol, no error. */
  r = ask(c, KN_CLANG_INSPECT, "  @nosuchname(1;", NULL);
  CHECK(r->symbol == NULL);
  kn_clangmsg_result_free(&r);
}

/* Destroying the object while a job runs kills the process and returns:
 * it is reaped. */
static void test_destroy_while_busy(void) {
  char err[256];
  kn_clang_t *c = kn_clang_new(CFLAME_CLANG_HELPER, MEMORY);
  kn_clang_job_t job = job_at_end("#include <stdio.h>\nint x = pri", "pri");
  CHECK_INT(kn_clang_submit(c, &job, err, sizeof err), 0);
  pid_t pid = kn_clang_pid(c);
  kn_clang_destroy(&c);
  CHECK(c == NULL);
  CHECK(kill(pid, 0) < 0 && errno == ESRCH); /* reaped */
}

/* Whether process pid has ended and been reaped (within a few seconds). */
static bool reaped(pid_t pid) {
  for (int i = 0; i < 500; i++) {
    if (kill(pid, 0) < 0 && errno == ESRCH) return true;
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  }
  return false;
}

/* A unit that includes /dev/zero costs libclang its process, not the
 * caller: the result says so (lost), and the next job gets a new process
 * that answers. */
static void test_a_unit_that_costs_the_process(void) {
  kn_clang_t *c = kn_clang_new(CFLAME_CLANG_HELPER, (size_t)1024 << 20);
  char err[256];
  kn_clang_job_t job = job_at_end("#include <stdio.h>\n#include \"/dev/zero\"\nint x = pri", "pri");
  CHECK_INT(kn_clang_submit(c, &job, err, sizeof err), 0);
  pid_t first = kn_clang_pid(c);
  kn_clang_result_t *r = wait_result(c);
  CHECK(r->lost);
  CHECK(r->error && strstr(r->error, "1024 MB"));
  if (r->error) fprintf(stderr, "(as expected) %s\n", r->error);
  kn_clangmsg_result_free(&r);
  CHECK(reaped(first));

  job = job_at_end("#include <stdio.h>\nint x = pri", "pri");
  CHECK_INT(kn_clang_submit(c, &job, err, sizeof err), 0);
  CHECK(kn_clang_pid(c) != first);
  r = wait_result(c);
  CHECK(!r->lost && !r->error && find(r, "printf"));
  kn_clangmsg_result_free(&r);

  /* A process that ends between jobs (the OOM killer) is replaced. */
  pid_t second = kn_clang_pid(c);
  kill(second, SIGKILL);
  struct pollfd p = {kn_clang_fd(c), POLLIN, 0};
  CHECK(poll(&p, 1, 10000) == 1);
  CHECK(kn_clang_take(c) == NULL); /* no job: it is reaped, nothing more */
  CHECK(reaped(second));
  job = job_at_end("#include <stdio.h>\nint x = pri", "pri");
  CHECK_INT(kn_clang_submit(c, &job, err, sizeof err), 0);
  r = wait_result(c);
  CHECK(!r->error && find(r, "printf"));
  kn_clangmsg_result_free(&r);
  kn_clang_destroy(&c);
}

/* A job that never ends (an #include of a FIFO nobody writes) is given up
 * on: its process is killed, reaped once it has ended, and the next job
 * gets another. */
static void test_cancel(void) {
  char fifo[] = "/tmp/cflame-test-clang-fifo-XXXXXX";
  CHECK(mkdtemp(fifo) != NULL);
  fl__buf_t path = FL__BUF_INIT, text = FL__BUF_INIT;
  fl__buf_printf(&path, "%s/never.h", fifo);
  CHECK(mkfifo(path.data, 0600) == 0);
  fl__buf_printf(&text, "#include \"%s\"\nint x = pri", path.data);
  kn_clang_t *c = kn_clang_new(CFLAME_CLANG_HELPER, MEMORY);
  char err[256];
  kn_clang_job_t job = job_at_end(text.data, "pri");
  CHECK_INT(kn_clang_submit(c, &job, err, sizeof err), 0);
  pid_t pid = kn_clang_pid(c);
  struct pollfd p = {kn_clang_fd(c), POLLIN, 0};
  CHECK(poll(&p, 1, 1000) == 0); /* stuck in open() */
  kn_clang_cancel(c);
  CHECK(!kn_clang_busy(c));
  CHECK(kn_clang_pid(c) < 0);
  /* Reaped at once, or when the caller next polls and takes. */
  p.fd = kn_clang_fd(c);
  if (p.fd >= 0) {
    CHECK(poll(&p, 1, 10000) == 1);
    CHECK(kn_clang_take(c) == NULL);
  }
  CHECK(reaped(pid));
  job = job_at_end("#include <stdio.h>\nint x = pri", "pri");
  CHECK_INT(kn_clang_submit(c, &job, err, sizeof err), 0);
  kn_clang_result_t *r = wait_result(c);
  CHECK(!r->error && find(r, "printf"));
  kn_clangmsg_result_free(&r);
  kn_clang_destroy(&c);
  unlink(path.data);
  rmdir(fifo);
  fl__buf_free(&path);
  fl__buf_free(&text);
}

/* A unit of any size goes over (here 0.9 MB), and a completion with more
 * matches than a result holds keeps the likeliest. */
static void test_many_matches(void) {
  kn_clang_t *c = kn_clang_new(CFLAME_CLANG_HELPER, MEMORY);
  fl__buf_t text = FL__BUF_INIT;
  for (int i = 0; i < KN_CLANGMSG_MAX_MATCHES + 5000; i++)
    fl__buf_printf(&text, "int many_%d; /* a global of its own */\n", i);
  fl__buf_puts(&text, "int f(void) { return many_");
  char err[256];
  kn_clang_job_t job = job_at_end(text.data, "many_");
  CHECK_INT(kn_clang_submit(c, &job, err, sizeof err), 0);
  kn_clang_result_t *r = wait_result(c);
  CHECK(r->error == NULL);
  CHECK_INT(r->n_matches, KN_CLANGMSG_MAX_MATCHES);
  kn_clangmsg_result_free(&r);
  kn_clang_destroy(&c);
  fl__buf_free(&text);
}

/* Without cflame-clang, a job is refused with the reason, and the caller
 * goes on without libclang. */
static void test_no_helper(void) {
  kn_clang_t *c = kn_clang_new("/nonexistent/cflame-clang", MEMORY);
  char err[256] = "";
  kn_clang_job_t job = job_at_end("int x = pri", "pri");
  CHECK_INT(kn_clang_submit(c, &job, err, sizeof err), -1);
  CHECK(strstr(err, "cannot run /nonexistent/cflame-clang") != NULL);
  CHECK(!kn_clang_busy(c));
  CHECK_INT(kn_clang_fd(c), -1);
  kn_clangmsg_job_free(&job);
  kn_clang_destroy(&c);
}

/* Jobs and results go through JSON as they were, bytes that are not UTF-8
 * included. */
static void test_messages(void) {
  char **args = fl__xcalloc(3, sizeof *args);
  args[0] = fl__xstrdup("-xc");
  args[1] = fl__xstrdup("-DNAME=caf\xe9");
  kn_clang_job_t job = {.op = KN_CLANG_INSPECT,
                        .path = fl__xstrdup("/tmp/u.c"),
                        .args = args,
                        .text = fl__xstrdup("int caf\xc3\xa9;\n"),
                        .line = 1,
                        .column = 5};
  json_t *j = kn_clangmsg_job_to_json(&job);
  kn_clang_job_t back;
  char err[256];
  CHECK_INT(kn_clangmsg_job_from_json(j, &back, err, sizeof err), 0);
  CHECK_INT(back.op, KN_CLANG_INSPECT);
  CHECK_STR(back.path, "/tmp/u.c");
  CHECK_STR(back.args[1], "-DNAME=caf\xe9");
  CHECK(back.args[2] == NULL);
  CHECK_STR(back.text, "int caf\xc3\xa9;\n");
  CHECK(back.prefix == NULL);
  CHECK_INT(back.line, 1);
  CHECK_INT(back.column, 5);
  kn_clangmsg_job_free(&back);
  kn_clangmsg_job_free(&job);
  json_decref(j);

  kn_clang_result_t r = {.op = KN_CLANG_INSPECT, .parse_ms = 1.5};
  kn_clang_symbol_t sym = {.name = "x",
                           .kind = KN_CLANG_VARIABLE,
                           .declaration = "int x",
                           .comment = "/* caf\xe9 */",
                           .file = "cell[2]",
                           .line = 3,
                           .system = false};
  kn_clang_match_t m = {
      .name = "printf", .signature = "int printf(...)", .kind = KN_CLANG_FUNCTION, .priority = 12};
  r.symbol = &sym;
  r.matches = &m;
  r.n_matches = 1;
  j = kn_clangmsg_result_to_json(&r);
  kn_clang_result_t *got;
  CHECK_INT(kn_clangmsg_result_from_json(j, &got, err, sizeof err), 0);
  CHECK_INT(got->n_matches, 1);
  CHECK_STR(got->matches[0].name, "printf");
  CHECK_STR(got->matches[0].signature, "int printf(...)");
  CHECK_INT(got->matches[0].kind, KN_CLANG_FUNCTION);
  CHECK_INT(got->matches[0].priority, 12);
  CHECK(got->symbol != NULL);
  CHECK_STR(got->symbol->comment, "/* caf\xe9 */");
  CHECK_STR(got->symbol->file, "cell[2]");
  CHECK(got->symbol->definition == NULL);
  CHECK_INT(got->symbol->line, 3);
  CHECK(got->error == NULL && got->parse_ms == 1.5);
  kn_clangmsg_result_free(&got);
  json_decref(j);
  j = json_object();
  CHECK_INT(kn_clangmsg_result_from_json(j, &got, err, sizeof err), -1);
  json_decref(j);
}

int main(void) {
  kn_clang_t *c = kn_clang_new(CFLAME_CLANG_HELPER, MEMORY);
  test_completion(c);
  test_session_changes(c);
  test_inspection(c);
  kn_clang_destroy(&c);
  test_destroy_while_busy();
  test_a_unit_that_costs_the_process();
  test_cancel();
  test_no_helper();
  test_many_matches();
  test_messages();
  return TEST_DONE();
}
