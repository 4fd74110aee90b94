/* The flame library's shared internals (flame/fl__common.h): the hash
 * index, the string set, the buffer, the allocators' growth, the hashes
 * and the path helper. */
#include "fl__common.h"

#include <stdlib.h>
#include <time.h>

#include "test.h"

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
  char *d = fl__xstrndup("abcdef", 3);
  CHECK_STR(d, "abc");
  free(d);
  d = fl__xstrdup("xyz");
  CHECK_STR(d, "xyz");
  free(d);
  int x;
  CHECK(fl__nonnull(&x) == &x);
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
  test_hashes();
  test_clock_and_paths();
  return TEST_DONE();
}
