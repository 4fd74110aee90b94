/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for kn_crash: what the user reads when a cell's worker dies.
 *
 * Crash reports are built here as the worker's crash handler writes them
 * (kernel/worker/kw_fault.c), with program counters inside this
 * executable's own functions and this process's /proc/self/maps, so the
 * real symbolizer names them with their file and line. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>

#include "kn_crash.h"
#include "kn_text.h"
#include "test.h"

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noipa))
#endif

/* ---- a call chain whose program counters the reports use ---- */

/* Where each function of the chain was when the leaf ran: pc[0] is an
 * instruction of crash_leaf (the "faulting" one), pc[1] and pc[2] are
 * return addresses in crash_middle and crash_outer. line[i] is the line
 * of that instruction (or call). */
typedef struct chain {
  uint64_t pc[3];
  int line[3];
} chain_t;

NOINLINE uint64_t crash_here(void) {
  return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

NOINLINE void crash_leaf(chain_t *c) {
  c->line[0] = __LINE__ + 1;
  c->pc[0] = crash_here();
  c->pc[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

/* The empty asm after each call keeps it from being a tail call, which
 * would leave the caller's frame off the stack. */
NOINLINE void crash_middle(chain_t *c) {
  c->line[1] = __LINE__ + 1;
  crash_leaf(c);
  __asm__ volatile("" ::: "memory");
  c->pc[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

NOINLINE void crash_outer(chain_t *c) {
  c->line[2] = __LINE__ + 1;
  crash_middle(c);
  __asm__ volatile("" ::: "memory");
}

static chain_t chain;
static char *maps; /* this process's /proc/self/maps */

static char *read_maps(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  fl__buf_t sb = FL__BUF_INIT;
  char buf[4096];
  size_t n;
  while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) fl__buf_add(&sb, buf, n);
  if (f) fclose(f);
  return fl__buf_take(&sb);
}

/* A report as kw_fault.c's crash_handler writes it: signal (0: no signal
 * line), the fault address and stack pointer, n_pcs program counters, then
 * the maps unless with_maps is false. New string. */
static long report_tid = 4242; /* the faulting thread; the main thread is 4242 */

static char *report(int sig, uint64_t addr, uint64_t sp, const uint64_t *pcs, size_t n_pcs,
                    bool with_maps) {
  fl__buf_t sb = FL__BUF_INIT;
  if (sig) fl__buf_printf(&sb, "signal %d\n", sig);
  fl__buf_printf(&sb, "code 1\naddr 0x%" PRIx64 "\nsp 0x%" PRIx64 "\ntid %ld\nmain_tid 4242\n",
                   addr, sp, report_tid);
  for (size_t i = 0; i < n_pcs; i++) fl__buf_printf(&sb, "pc 0x%" PRIx64 "\n", pcs[i]);
  if (with_maps) fl__buf_printf(&sb, "maps\n%s", maps);
  return fl__buf_take(&sb);
}

/* The traceback's lines joined with newlines, for searching. New. */
static char *lines_of(const json_t *tb) {
  fl__buf_t sb = FL__BUF_INIT;
  for (size_t i = 0; i < json_array_size(tb); i++)
    fl__buf_printf(&sb, "%s\n", json_string_value(json_array_get(tb, i)));
  return fl__buf_take(&sb);
}

static const char *line_at(const json_t *tb, size_t i) {
  return json_string_value(json_array_get(tb, i));
}

/* A segfault at address 0 in crash_leaf, called from crash_middle, called
 * from crash_outer: each frame by its name, this file and its line, the
 * innermost first. */
static void test_segfault_backtrace(void) {
  uint64_t sp = (uint64_t)(uintptr_t)&sp;
  char *text = report(SIGSEGV, 0, sp, chain.pc, 3, true);
  char *headline = NULL;
  json_t *tb = json_array();
  kn_crash_describe(text, SIGSEGV, &headline, tb);
  CHECK_STR(headline, "Segmentation fault (address 0x0)");
  CHECK_STR(line_at(tb, 0), "SIGSEGV: Segmentation fault (address 0x0)");
  CHECK_STR(line_at(tb, 1), "Backtrace (most recent call first):");
  CHECK_INT(json_array_size(tb), 2 + 3);
  static const char *const funcs[] = {"crash_leaf", "crash_middle", "crash_outer"};
  for (size_t i = 0; i < 3; i++) {
    const char *line = line_at(tb, 2 + i);
    char want[128];
    snprintf(want, sizeof want, "  #%zu  %s() at ", i, funcs[i]);
    CHECK(line && !strncmp(line, want, strlen(want)));
    snprintf(want, sizeof want, "/test_crash.c:%d ", chain.line[i]);
    CHECK(line && strstr(line, want));
    CHECK(line && strstr(line, "(test_crash)")); /* the module it is in */
    if (line && (strncmp(line, "  #", 3) || !strstr(line, want)))
      fprintf(stderr, "  frame %zu: %s\n", i, line);
  }
  free(headline);
  free(text);
  json_decref(tb);
}

/* Where the fault address is against the stack pointer decides between a
 * stack overflow (the guard page just past the stack) and a segfault. */
static void test_stack_overflow(void) {
#define SP 0x7ffc00100000ll
  static const struct {
    int64_t from_sp;
    const char *headline_start;
  } cases[] = {
      {-8, "Stack overflow (address 0x"},
      {-4096, "Stack overflow (address 0x"},
      {-60 * 1024, "Stack overflow (address 0x"},
      {4096, "Stack overflow (address 0x"},
      {-1024 * 1024, "Segmentation fault (address 0x"},
      {16 - SP, "Segmentation fault (address 0x10)"},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    uint64_t addr = (uint64_t)(SP + cases[i].from_sp);
    char *text = report(SIGSEGV, addr, SP, chain.pc, 1, true);
    char *headline = NULL;
    json_t *tb = json_array();
    kn_crash_describe(text, SIGSEGV, &headline, tb);
    const char *want = cases[i].headline_start;
    CHECK(headline && !strncmp(headline, want, strlen(want)));
    char hex[40];
    snprintf(hex, sizeof hex, "(address 0x%" PRIx64 ")", addr);
    CHECK(headline && strstr(headline, hex));
    if (headline && (strncmp(headline, want, strlen(want)) || !strstr(headline, hex)))
      fprintf(stderr, "  case %zu: %s\n", i, headline);
    free(headline);
    free(text);
    json_decref(tb);
  }
#undef SP
}

/* A deep stack shows KN_CRASH_MAX_FRAMES frames and counts the rest. */
static void test_frame_limit(void) {
  static const struct {
    size_t n_pcs, shown;
  } cases[] = {
      {3, 3},
      {KN_CRASH_MAX_FRAMES, KN_CRASH_MAX_FRAMES},
      {KN_CRASH_MAX_FRAMES + 1, KN_CRASH_MAX_FRAMES},
      {100, KN_CRASH_MAX_FRAMES},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    /* The leaf, then crash_middle's return address over and over, as a
     * runaway recursion would. */
    uint64_t pcs[128];
    size_t n = cases[i].n_pcs;
    pcs[0] = chain.pc[0];
    for (size_t k = 1; k < n; k++) pcs[k] = chain.pc[1];
    char *text = report(SIGSEGV, 0, 0, pcs, n, true);
    char *headline = NULL;
    json_t *tb = json_array();
    kn_crash_describe(text, SIGSEGV, &headline, tb);
    size_t frames = 0;
    for (size_t k = 0; k < json_array_size(tb); k++)
      if (!strncmp(line_at(tb, k), "  #", 3)) frames++;
    CHECK_INT(frames, cases[i].shown);
    const char *last = line_at(tb, json_array_size(tb) - 1);
    if (n > cases[i].shown) {
      char more[64];
      snprintf(more, sizeof more, "  ... %zu more frame%s", n - cases[i].shown,
               n - cases[i].shown == 1 ? "" : "s");
      CHECK_STR(last, more);
      CHECK_INT(json_array_size(tb), 2 + cases[i].shown + 1);
    } else {
      CHECK(last && strstr(last, "more frame") == NULL);
      CHECK_INT(json_array_size(tb), 2 + cases[i].shown);
    }
    free(headline);
    free(text);
    json_decref(tb);
  }
}

/* Reports that say less: without maps there is a headline but no
 * backtrace; the report's own signal wins over the one the worker died of,
 * which counts only when the report names none. */
static void test_report_forms(void) {
  static const struct {
    int report_sig; /* 0: the report has no signal line */
    int died_of;
    bool with_maps;
    const char *first_line;
    size_t n_lines; /* 0: a headline, then the backtrace's lines */
  } cases[] = {
      {SIGSEGV, SIGSEGV, false, "SIGSEGV: Segmentation fault (address 0x0)", 1},
      {SIGBUS, SIGSEGV, true, "SIGBUS: Bus error (address 0x0)", 0},
      {SIGBUS, SIGSEGV, false, "SIGBUS: Bus error (address 0x0)", 1},
      {0, SIGFPE, false, "SIGFPE: Floating point exception", 1},
      {SIGABRT, SIGSEGV, false, "SIGABRT: Aborted", 1},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    char *text = report(cases[i].report_sig, 0, 0, chain.pc, 3, cases[i].with_maps);
    char *headline = NULL;
    json_t *tb = json_array();
    kn_crash_describe(text, cases[i].died_of, &headline, tb);
    CHECK_STR(line_at(tb, 0), cases[i].first_line);
    /* The headline is the first line without its signal name. */
    const char *colon = strstr(cases[i].first_line, ": ");
    CHECK_STR(headline, colon ? colon + 2 : NULL);
    if (cases[i].n_lines) {
      CHECK_INT(json_array_size(tb), cases[i].n_lines);
    } else {
      char *all = lines_of(tb);
      CHECK(strstr(all, "Backtrace (most recent call first):\n") != NULL);
      CHECK(strstr(all, "  #0  crash_leaf() at ") != NULL);
      free(all);
    }
    free(headline);
    free(text);
    json_decref(tb);
  }
}

static void test_describe_exit(void) {
  static const struct {
    int status;
    const char *reason;
    const char *sentence;
  } cases[] = {
      {W_EXITCODE(0, 0), NULL, "the worker process exited with status 0"},
      {W_EXITCODE(3, 0), NULL, "the worker process exited with status 3"},
      {W_EXITCODE(0, SIGALRM), NULL, "the worker process died of SIGALRM (Alarm clock)"},
      {W_EXITCODE(0, SIGKILL), NULL, "the worker process died of SIGKILL (Killed)"},
      {W_EXITCODE(0, SIGSEGV), "", "the worker process died of SIGSEGV (Segmentation fault)"},
      {W_EXITCODE(0, SIGSEGV) | WCOREFLAG, NULL, /* and dumped core */
       "the worker process died of SIGSEGV (Segmentation fault)"},
      {W_EXITCODE(0, SIGKILL), "the kernel stopped it: it did not answer for 10 s",
       "the kernel stopped it: it did not answer for 10 s"},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    char *s = kn_describe_exit(cases[i].status, cases[i].reason);
    CHECK_STR(s, cases[i].sentence);
    free(s);
  }
}

static void test_signal_name(void) {
  static const struct {
    int sig;
    const char *name;
  } cases[] = {
      {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGALRM, "SIGALRM"},
      {SIGKILL, "SIGKILL"}, {SIGFPE, "SIGFPE"}, {SIGABRT, "SIGABRT"},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++)
    CHECK_STR(kn_signal_name(cases[i].sig), cases[i].name);
}

/* A fault in a thread the cell started says so; one on the main thread
 * does not. */
static void test_thread(void) {
  static const struct {
    long tid;
    const char *headline;
  } cases[] = {
      {4242, "Segmentation fault (address 0x0)"},
      {4300, "Segmentation fault (address 0x0), in a thread the cell started (thread id 4300)"},
  };
  for (size_t i = 0; i < FL__ARRAY_SIZE(cases); i++) {
    report_tid = cases[i].tid;
    char *text = report(SIGSEGV, 0, 0x7ffe0000, NULL, 0, false);
    char *headline = NULL;
    json_t *tb = json_array();
    kn_crash_describe(text, SIGSEGV, &headline, tb);
    CHECK_STR(headline, cases[i].headline);
    free(headline);
    json_decref(tb);
    free(text);
  }
  report_tid = 4242;
}

int main(void) {
  crash_outer(&chain);
  maps = read_maps();
  test_segfault_backtrace();
  test_stack_overflow();
  test_frame_limit();
  test_report_forms();
  test_describe_exit();
  test_signal_name();
  test_thread();
  free(maps);
  return TEST_DONE();
}
