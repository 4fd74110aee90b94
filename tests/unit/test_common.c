/* SPDX-License-Identifier: BSD-3-Clause */
/* The flame library's shared internals (flame/fl__common.h): the hash
 * index, the string set, the buffer, the allocators' growth, the
 * out-of-memory policy and the handler a program sets (fl_alloc.h), the
 * hashes, the clock and the path helper. */
#include "fl__common.h"

#include <cflame/fl_alloc.h>
#include <cflame/fl_profile.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

/* Under AddressSanitizer, an allocation too large to make returns NULL
 * (as glibc's does) instead of ending the test with ASan's report. */
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1";
}

/* Items of a caller's table: the index keeps only their numbers. */
typedef struct item {
  uint64_t key;
  int value;
} item_t;

typedef struct table {
  item_t *items;
  size_t n, cap;
  fl__index_t index;
  uint64_t (*hash)(uint64_t key);
} table_t;

static uint64_t mixed(uint64_t key) {
  return fl__mix64(key);
}

/* Every key in one probe chain: the index must still tell them apart by
 * the caller's equality. */
static uint64_t colliding(uint64_t key) {
  (void)key;
  return 42;
}

static uint32_t table_find(const table_t *t, uint64_t key) {
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&t->index, t->hash(key), &pr); i != FL__NONE;
       i = fl__index_next(&t->index, &pr))
    if (t->items[i].key == key) return i;
  return FL__NONE;
}

/* The key's number, added if new. */
static uint32_t table_add(table_t *t, uint64_t key, int value) {
  uint32_t i = table_find(t, key);
  if (i != FL__NONE) return i;
  t->items = fl__grow(t->items, &t->cap, t->n + 1, sizeof *t->items);
  t->items[t->n] = (item_t){.key = key, .value = value};
  fl__index_add(&t->index, t->hash(key), (uint32_t)t->n);
  return (uint32_t)t->n++;
}

static void table_free(table_t *t) {
  free(t->items);
  fl__index_free(&t->index);
}

/* n keys in, each found again with its value, absent keys not found, the
 * index at most half full however far it grew. */
static void check_index(uint64_t (*hash)(uint64_t), size_t n) {
  table_t t = {.hash = hash};
  CHECK_INT(table_find(&t, 7), FL__NONE); /* a zeroed index is empty */
  for (size_t k = 0; k < n; k++) CHECK_INT(table_add(&t, k * 7919 + 3, (int)k), k);
  for (size_t k = 0; k < n; k++) CHECK_INT(table_add(&t, k * 7919 + 3, -1), k); /* no dups */
  CHECK_INT(t.n, n);
  CHECK_INT(t.index.n, n);
  CHECK(t.index.n * 2 <= t.index.mask + 1);
  int wrong = 0;
  for (size_t k = 0; k < n; k++) {
    uint32_t i = table_find(&t, k * 7919 + 3);
    if (i == FL__NONE || t.items[i].value != (int)k) wrong++;
  }
  CHECK_INT(wrong, 0);
  CHECK_INT(table_find(&t, 1), FL__NONE);
  CHECK_INT(table_find(&t, n * 7919 + 3), FL__NONE);

  /* Cleared: empty, with its room, and usable again. */
  size_t room = t.index.mask;
  fl__index_clear(&t.index);
  t.n = 0;
  CHECK_INT(t.index.n, 0);
  CHECK_INT(t.index.mask, room);
  CHECK_INT(table_find(&t, 3), FL__NONE);
  CHECK_INT(table_add(&t, 5, 1), 0);
  CHECK_INT(table_find(&t, 5), 0);
  table_free(&t);
}

static void test_index(void) {
  check_index(mixed, 0);
  check_index(mixed, 1);
  check_index(mixed, 100000);
  check_index(colliding, 300);

  /* Sized ahead: no growth for as many items as it was sized for. */
  fl__index_t ix;
  fl__index_init(&ix, 1000);
  size_t mask = ix.mask;
  for (uint32_t i = 0; i < 1000; i++) fl__index_add(&ix, fl__mix64(i), i);
  CHECK_INT(ix.mask, mask);
  fl__index_free(&ix);
  CHECK(ix.slots == NULL);

  /* Candidates are only the items whose hash agrees. */
  fl__index_init(&ix, 4);
  fl__index_add(&ix, 1, 0);
  fl__index_add(&ix, 2, 1); /* the next slot over */
  fl__index_add(&ix, 1, 2);
  fl__probe_t pr;
  CHECK_INT(fl__index_find(&ix, 1, &pr), 0);
  CHECK_INT(fl__index_next(&ix, &pr), 2);
  CHECK_INT(fl__index_next(&ix, &pr), FL__NONE);
  CHECK_INT(fl__index_find(&ix, 2, &pr), 1);
  CHECK_INT(fl__index_next(&ix, &pr), FL__NONE);
  CHECK_INT(fl__index_find(&ix, 3, &pr), FL__NONE);
  fl__index_free(&ix);
}

static void test_strset(void) {
  fl__strset_t set = {0};
  CHECK(fl__strset_intern(&set, NULL) == NULL);
  char a[] = "main", b[] = "main";
  const char *x = fl__strset_intern(&set, a);
  CHECK_STR(x, "main");
  CHECK(x != a); /* a copy */
  CHECK(fl__strset_intern(&set, b) == x);
  CHECK(fl__strset_intern(&set, "") != x);
  CHECK_STR(fl__strset_intern(&set, ""), "");
  CHECK_INT(set.n, 2);

  /* Many strings, some sharing a long prefix: each interns to one
   * pointer. */
  char name[64];
  const char *first[2000];
  for (int i = 0; i < 2000; i++) {
    snprintf(name, sizeof name, "a_rather_long_common_prefix_%d", i);
    first[i] = fl__strset_intern(&set, name);
  }
  int wrong = 0;
  for (int i = 0; i < 2000; i++) {
    snprintf(name, sizeof name, "a_rather_long_common_prefix_%d", i);
    if (fl__strset_intern(&set, name) != first[i] || strcmp(first[i], name) != 0) wrong++;
  }
  CHECK_INT(wrong, 0);
  CHECK_INT(set.n, 2002);
  fl__strset_free(&set);
  CHECK_INT(set.n, 0);
  CHECK(fl__strset_intern(&set, "again") != NULL); /* freed is empty, and usable */
  fl__strset_free(&set);
}

static void test_buf(void) {
  fl__buf_t b = {0};
  char *empty = fl__buf_take(&b);
  CHECK_STR(empty, "");
  free(empty);

  fl__buf_add(&b, "ab", 2);
  fl__buf_add(&b, "", 0);
  fl__buf_puts(&b, "cd");
  fl__buf_printf(&b, "-%d-%s", 42, "x");
  CHECK_STR(b.data, "abcd-42-x");
  CHECK_INT(b.len, 9);

  /* Cut back, then written on: terminated again. */
  b.len = 2;
  fl__buf_puts(&b, "Z");
  CHECK_STR(b.data, "abZ");

  /* Past the printf's small stack buffer, and past the first capacity. */
  char big[1000];
  memset(big, 'q', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  fl__buf_printf(&b, "<%s>", big);
  CHECK_INT(b.len, 3 + 1 + 999 + 1);
  CHECK(b.data[3] == '<' && b.data[4] == 'q' && b.data[1003] == '>' && b.data[1004] == '\0');

  char *s = fl__buf_take(&b);
  CHECK_INT(strlen(s), 1004);
  CHECK(b.data == NULL && b.len == 0 && b.cap == 0);
  free(s);

  fl__buf_puts(&b, "gone");
  fl__buf_free(&b);
  CHECK(b.data == NULL && b.len == 0);
}

static void test_memory(void) {
  size_t cap = 0;
  int *a = fl__grow(NULL, &cap, 1, sizeof *a);
  CHECK_INT(cap, 16);
  a = fl__grow(a, &cap, 16, sizeof *a);
  CHECK_INT(cap, 16);
  for (int i = 0; i < 16; i++) a[i] = i;
  a = fl__grow(a, &cap, 17, sizeof *a);
  CHECK_INT(cap, 32);
  a = fl__grow(a, &cap, 100, sizeof *a);
  CHECK_INT(cap, 128);
  CHECK(a[15] == 15); /* kept */
  free(a);

  int *zeroed = fl__xcalloc(8, sizeof *zeroed);
  int nonzero = 0;
  for (int i = 0; i < 8; i++) nonzero += zeroed[i] != 0;
  CHECK_INT(nonzero, 0);
  zeroed = fl__xrealloc(zeroed, 1000, sizeof *zeroed);
  free(zeroed);

  void *none = fl__xmalloc(0, 8); /* a zero size: a pointer all the same */
  CHECK(none != NULL);
  free(none);
  char *d = fl__xasprintf("%s-%d", "cell", 12);
  CHECK_STR(d, "cell-12");
  free(d);
  d = fl__xstrndup("abcdef", 3);
  CHECK_STR(d, "abc");
  free(d);
  d = fl__xstrdup("xyz");
  CHECK_STR(d, "xyz");
  free(d);
  int x;
  CHECK(fl__nonnull(&x) == &x);
}

/* ---- out of memory, run in a child each ---- */

/* A program's handlers: say what they were given on stderr, then end the
 * child with a status of their own, or return (into the default). */
static void exiting_handler(size_t bytes) {
  fprintf(stderr, "handler: %zu bytes\n", bytes);
  _exit(42);
}

static void returning_handler(size_t bytes) {
  fprintf(stderr, "handler returned\n");
}

/* What runs out of memory. */
static void overflowing_count(void) {
  free(fl__xcalloc(SIZE_MAX / 4, 8));
}
static void impossible_size(void) {
  free(fl__xmalloc(SIZE_MAX / 2, 1));
}
static void overflowing_buffer(void) {
  fl__buf_t b = {.len = SIZE_MAX - 2}; /* as if nearly all of memory were text */
  fl__buf_add(&b, "abc", 3);
}
/* Through the public interface: a profile takes frames with 1 MB names
 * until the address space, limited to 256 MB more than the child has, runs
 * out. */
static void profile_past_limit(void) {
  struct rlimit lim;
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (!f || fscanf(f, "%lu", &pages) != 1) _exit(3);
  fclose(f);
  lim.rlim_cur = lim.rlim_max = pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)256 << 20);
  if (setrlimit(RLIMIT_AS, &lim) < 0) _exit(3);
  size_t n = (size_t)1 << 20;
  char *name = malloc(n + 16);
  memset(name, 'f', n);
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  for (unsigned i = 0;; i++) {
    snprintf(name + n, 16, "%u", i);
    fl_frame_t frame = {.func = name};
    fl_profile_frame_id(p, &frame);
  }
}

typedef struct oom_case {
  const char *name;
  fl_oom_handler_t handler; /* NULL: the default */
  void (*run)(void);
  int exit_status;   /* -1: killed by SIGABRT */
  const char *says;  /* what stderr holds */
  bool needs_rlimit; /* not under AddressSanitizer, which reserves terabytes */
} oom_case_t;

static const oom_case_t oom_cases[] = {
    {"default, count * size overflows", NULL, overflowing_count, -1, "cflame: out of memory\n",
     false},
    {"default, malloc fails", NULL, impossible_size, -1,
     "cflame: out of memory (9223372036854775807 bytes)\n", false},
    {"default, buffer past SIZE_MAX", NULL, overflowing_buffer, -1, "cflame: out of memory\n",
     false},
    {"handler, count * size overflows", exiting_handler, overflowing_count, 42,
     "handler: 0 bytes\n", false},
    {"handler, malloc fails", exiting_handler, impossible_size, 42,
     "handler: 9223372036854775807 bytes\n", false},
    {"handler returns: the default follows", returning_handler, impossible_size, -1,
     "handler returned\ncflame: out of memory (9223372036854775807 bytes)\n", false},
    {"handler, a profile past the address space's limit", exiting_handler, profile_past_limit, 42,
     "handler: ", true},
};

#if defined(__SANITIZE_ADDRESS__) /* gcc */
static const bool under_asan = true;
#elif defined(__has_feature)
static const bool under_asan = __has_feature(address_sanitizer); /* clang */
#else
static const bool under_asan = false;
#endif

/* Runs c in a child, its stderr into a pipe; checks how it ended and what
 * it said (after anything a sanitizer says first). */
static void run_oom_case(const oom_case_t *c) {
  if (c->needs_rlimit && under_asan) return;
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    signal(SIGABRT, SIG_DFL);
    if (c->handler) fl_set_oom_handler(c->handler);
    c->run();
    _exit(0); /* never reached: running out of memory ends the child */
  }
  close(fds[1]);
  char said[512] = "";
  size_t len = 0;
  ssize_t r;
  while (len < sizeof said - 1 && (r = read(fds[0], said + len, sizeof said - 1 - len)) > 0)
    len += (size_t)r;
  said[len] = '\0';
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  int ended = WIFEXITED(status)                                    ? WEXITSTATUS(status)
              : WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT ? -1
                                                                   : -2;
  if (ended != c->exit_status || !strstr(said, c->says))
    fprintf(stderr, "case \"%s\": ended %d, said \"%s\"\n", c->name, ended, said);
  CHECK_INT(ended, c->exit_status);
  CHECK(strstr(said, c->says) != NULL);
}

static void test_oom(void) {
  for (size_t i = 0; i < FL__ARRAY_SIZE(oom_cases); i++) run_oom_case(&oom_cases[i]);
  /* Each setting returns the handler it replaces; NULL is the default. */
  CHECK(fl_set_oom_handler(exiting_handler) == NULL);
  CHECK(fl_set_oom_handler(returning_handler) == exiting_handler);
  CHECK(fl_set_oom_handler(NULL) == returning_handler);
  CHECK(fl_set_oom_handler(NULL) == NULL);
}

static void test_hashes(void) {
  /* Equal bytes, equal hashes; each length and byte counts, on either
   * side of the eight-byte words. */
  const char *s = "function_name_longer_than_eight";
  CHECK(fl__hash_bytes(s, 20) == fl__hash_bytes("function_name_longer", 20));
  CHECK(fl__hash_bytes(s, 20) != fl__hash_bytes(s, 21));
  CHECK(fl__hash_bytes(s, 8) != fl__hash_bytes(s, 7));
  CHECK(fl__hash_bytes("", 0) != fl__hash_bytes("\0", 1));
  CHECK(fl__hash_bytes("abcdefgh", 8) != fl__hash_bytes("abcdefgi", 8));
  CHECK(fl__mix64(1) != fl__mix64(2));
  CHECK(fl__mix64(0) == 0);
  /* FNV-1a's published vectors: the colours rest on it. */
  CHECK(fl__fnv1a("") == 0xcbf29ce484222325u);
  CHECK(fl__fnv1a("a") == 0xaf63dc4c8601ec8cu);
  CHECK(fl__fnv1a("foobar") == 0x85944171f73967e8u);
}

static void test_clock_and_paths(void) {
  int64_t t0 = fl__clock_ns(CLOCK_MONOTONIC);
  struct timespec pause = {0, 2000000};
  nanosleep(&pause, NULL);
  int64_t t1 = fl__clock_ns(CLOCK_MONOTONIC);
  CHECK(t0 > 0);
  CHECK(t1 - t0 >= 2000000);
  CHECK(fl__clock_ns(CLOCK_THREAD_CPUTIME_ID) > 0);
  CHECK_INT(fl__clock_ns((clockid_t)-12345), 0); /* no such clock */
  int64_t ms = fl__now_ms();
  CHECK(ms >= t1 / 1000000 && ms - t1 / 1000000 < 60000); /* the same clock, in ms */

  const char *p = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  CHECK_STR(p + fl__path_base(p, strlen(p)), "libc.so.6");
  CHECK_INT(fl__path_base("prog", 4), 0);
  CHECK_INT(fl__path_base("dir/", 4), 4);
  CHECK_INT(fl__path_base("/a/b", 2), 1); /* only the first n bytes count */
}

int main(void) {
  test_index();
  test_strset();
  test_buf();
  test_memory();
  test_oom();
  test_hashes();
  test_clock_and_paths();
  return TEST_DONE();
}
