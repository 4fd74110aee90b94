/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests fl_allocs and the worker's allocator entry points (fl_allocs_entry.c),
 * both linked into this executable, which exports its symbols as the
 * worker does, so that the C library's own calls (strdup, fopen) bind to
 * them too. Known answers: exact counts and bytes at sample_rate 1 by
 * allocating function, the freed half marked freed, strdup's blocks under
 * its caller, estimates at sample_rate 0.1 within 4 standard deviations of
 * the binomial, 4 threads allocating at once without a deadlock or a lost
 * record, every allocation function with its kind and its argument errors,
 * a full buffer and a full table, nothing recorded when not recording or
 * in a forked child, runs that do not see each other's blocks, the
 * reader's handling of an incomplete record, and the frame-pointer walk:
 * through shared objects compiled here with the cell flags, the same
 * return addresses as libunwind's, and libunwind's whole stack wherever
 * the walk meets a frame it cannot vouch for (qsort in the C library, an
 * object built with -fomit-frame-pointer, a thread that did not register),
 * and the call count, exact at every sample rate, on several threads, run
 * after run at rates that change (each run's first calls draw afresh), with
 * a thread that gives its counter block up and one that takes it over.
 *
 * Records are attributed with dladdr on each return address minus 1. */
#define _GNU_SOURCE
#include "cflame/fl_allocs.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "fl__common.h"

#if defined(__SANITIZE_ADDRESS__)
/* Huge requests fail with NULL, as glibc's do, instead of ending the
 * test. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1:detect_leaks=0";
}
#endif

#define WORDS (4u << 20)
#define TABLE_SLOTS (1u << 16)

static void *buf;
static size_t buf_bytes;
static char err[256];

static void *map_buffer(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  return p;
}

static void use_main_buffer(void) {
  if (fl_allocs_init(buf, buf_bytes, TABLE_SLOTS, err, sizeof err) < 0) {
    fprintf(stderr, "fl_allocs_init: %s\n", err);
    exit(2);
  }
}

static void start(double rate) {
  if (fl_allocs_start(rate, 7, err, sizeof err) < 0) {
    fprintf(stderr, "fl_allocs_start: %s\n", err);
    exit(2);
  }
}

static const fl_allocs_header_t *header(void) {
  return buf;
}

/* The name of the function holding return address pc, or "". */
static const char *func_of(uint64_t pc) {
  Dl_info info;
  if (!dladdr((void *)(uintptr_t)(pc - 1), &info) || !info.dli_sname) return "";
  return info.dli_sname;
}

__attribute__((unused)) static bool in_libc(uint64_t pc) {
  Dl_info info;
  return dladdr((void *)(uintptr_t)(pc - 1), &info) && info.dli_fname &&
         strstr(info.dli_fname, "libc.so");
}

/* Walks the main buffer: calls fn on each record; returns how many, or -1
 * if the reader reports corruption. */
static long walk(void (*fn)(const fl_allocs_record_t *, void *), void *arg) {
  size_t pos = 0;
  fl_allocs_record_t rec;
  long n = 0;
  int r;
  while ((r = fl_allocs_next(buf, buf_bytes, &pos, &rec)) == 1) {
    if (fn) fn(&rec, arg);
    n++;
  }
  return r < 0 ? -1 : n;
}

/* ---- 1. known answers at sample_rate 1 ---- */

#define N_MALLOC 1000
#define N_CALLOC 3000
static void *mallocs[N_MALLOC], *callocs[N_CALLOC];

__attribute__((noipa)) void talloc_mallocs(void) {
  for (int i = 0; i < N_MALLOC; i++) mallocs[i] = malloc(1024);
}

__attribute__((noipa)) void talloc_callocs(void) {
  for (int i = 0; i < N_CALLOC; i++) callocs[i] = calloc(1, 1024);
}

typedef struct by_func {
  long n[3], bytes[3], freed[3], other, wrong_kind, wrong_tag;
} by_func_t;

static void tally(const fl_allocs_record_t *rec, void *arg) {
  by_func_t *b = arg;
  const char *f = func_of(rec->pcs[0]);
  int k = !strcmp(f, "talloc_mallocs") ? 1 : !strcmp(f, "talloc_callocs") ? 2 : 0;
  if (!k) {
    b->other++;
    return;
  }
  b->n[k]++;
  b->bytes[k] += (long)rec->bytes;
  b->freed[k] += rec->freed;
  if (rec->kind != (k == 1 ? FL_ALLOC_MALLOC : FL_ALLOC_CALLOC)) b->wrong_kind++;
  if (rec->tag != 7) b->wrong_tag++;
}

static void test_known_answers(void) {
  start(1);
  talloc_mallocs();
  talloc_callocs();
  /* Free the first half of each while recording. */
  for (int i = 0; i < N_MALLOC / 2; i++) free(mallocs[i]);
  for (int i = 0; i < N_CALLOC / 2; i++) free(callocs[i]);
  uint64_t records = fl_allocs_stop();
  const fl_allocs_header_t *h = header();
  CHECK_INT(records, N_MALLOC + N_CALLOC);
  CHECK_INT(h->records, N_MALLOC + N_CALLOC);
  CHECK_INT(h->calls, N_MALLOC + N_CALLOC);
  CHECK_INT(h->frees, (N_MALLOC + N_CALLOC) / 2);
  CHECK_INT(h->dropped, 0);
  double rate;
  memcpy(&rate, &h->sample_rate_bits, sizeof rate);
  CHECK(rate == 1.0);

  by_func_t b = {0};
  CHECK_INT(walk(tally, &b), N_MALLOC + N_CALLOC);
  CHECK_INT(b.n[1], 1000);
  CHECK_INT(b.bytes[1], 1024000);
  CHECK_INT(b.n[2], 3000);
  CHECK_INT(b.bytes[2], 3072000);
  CHECK_INT(b.freed[1], 500);
  CHECK_INT(b.freed[2], 1500);
  CHECK_INT(b.other, 0);
  CHECK_INT(b.wrong_kind, 0);
  CHECK_INT(b.wrong_tag, 0);
  /* The freed ones are the first halves: their addresses. */
  size_t pos = 0;
  fl_allocs_record_t rec;
  long mismatched = 0;
  for (int i = 0; fl_allocs_next(buf, buf_bytes, &pos, &rec) == 1; i++) {
    bool first_half = i < N_MALLOC ? i < N_MALLOC / 2 : i - N_MALLOC < N_CALLOC / 2;
    void *want = i < N_MALLOC ? mallocs[i] : callocs[i - N_MALLOC];
    if (rec.addr != (uint64_t)(uintptr_t)want || rec.freed != first_half) mismatched++;
  }
  CHECK_INT(mismatched, 0);
  /* Not recording: the rest is freed, and nothing changes. */
  uint64_t used = h->used_words;
  for (int i = N_MALLOC / 2; i < N_MALLOC; i++) free(mallocs[i]);
  for (int i = N_CALLOC / 2; i < N_CALLOC; i++) free(callocs[i]);
  CHECK_INT(h->used_words, used);
  by_func_t after = {0};
  CHECK_INT(walk(tally, &after), N_MALLOC + N_CALLOC);
  CHECK_INT(after.freed[1] + after.freed[2], (N_MALLOC + N_CALLOC) / 2);
}

/* ---- 2. allocations inside the C library ---- */

__attribute__((noipa)) char *talloc_dup(const char *s) {
  char *d = strdup(s);
  __asm__ volatile("" ::: "memory");
  return d;
}

__attribute__((noipa)) FILE *talloc_fopen(void) {
  FILE *f = fopen("/dev/null", "r");
  __asm__ volatile("" ::: "memory");
  return f;
}

static void test_libc_callers(void) {
  start(1);
  char *d = talloc_dup("fifteen letters");
  FILE *f = talloc_fopen();
  free(d);
  fl_allocs_stop();
  if (f) fclose(f);
#if defined(__SANITIZE_ADDRESS__)
  /* ASan's interceptors of strdup and fopen allocate from ASan directly. */
  fprintf(stderr, "test_libc_callers: skipped under AddressSanitizer\n");
#else
  size_t pos = 0;
  fl_allocs_record_t rec;
  int dups = 0, fopens = 0;
  while (fl_allocs_next(buf, buf_bytes, &pos, &rec) == 1) {
    CHECK(rec.n_pcs >= 2);
    if (rec.n_pcs < 2) continue;
    /* The leaf is the C library's function, its caller comes next. */
    if (!strcmp(func_of(rec.pcs[1]), "talloc_dup")) {
      dups++;
      CHECK(in_libc(rec.pcs[0]));
      CHECK_INT(rec.bytes, 16);
      CHECK_INT(rec.kind, FL_ALLOC_MALLOC);
      CHECK(rec.freed);
    }
    bool under_fopen = false;
    for (size_t i = 0; i < rec.n_pcs; i++)
      if (!strcmp(func_of(rec.pcs[i]), "talloc_fopen")) under_fopen = true;
    if (under_fopen) {
      fopens++;
      CHECK(in_libc(rec.pcs[0]));
    }
  }
  CHECK_INT(dups, 1);
  CHECK(fopens >= 1);
#endif
}

/* ---- 3. estimates at sample_rate 0.1 ---- */

#define N_SAMPLED 100000

static size_t sampled_size(int i) {
  return 16 + (size_t)(i * 37 % 1000);
}

__attribute__((noipa)) void talloc_sampled(void) {
  void *ring[8] = {0};
  for (int i = 0; i < N_SAMPLED; i++) {
    free(ring[i & 7]);
    ring[i & 7] = malloc(sampled_size(i));
  }
  for (int i = 0; i < 8; i++) free(ring[i]);
}

typedef struct sums {
  long n, bytes, freed, other;
} sums_t;

static void add_sampled(const fl_allocs_record_t *rec, void *arg) {
  sums_t *s = arg;
  if (strcmp(func_of(rec->pcs[0]), "talloc_sampled") != 0) {
    s->other++;
    return;
  }
  s->n++;
  s->bytes += (long)rec->bytes;
  s->freed += rec->freed;
}

static void test_sample_rate(void) {
  const double p = 0.1;
  start(p);
  talloc_sampled();
  fl_allocs_stop();
  const fl_allocs_header_t *h = header();
  double total = 0, squares = 0;
  for (int i = 0; i < N_SAMPLED; i++) {
    total += (double)sampled_size(i);
    squares += (double)sampled_size(i) * (double)sampled_size(i);
  }
  CHECK_INT(h->calls, N_SAMPLED);
  sums_t s = {0};
  CHECK(walk(add_sampled, &s) >= 0);
  CHECK_INT(s.other, 0);
  CHECK_INT(s.freed, s.n);
  CHECK_INT(h->frees, s.n); /* the sampled blocks, all freed */
  /* The count of sampled calls is Binomial(n, p); the sampled bytes have
   * variance p (1 - p) sum(size^2), so the estimate bytes / p has
   * (1 - p) / p sum(size^2). Both within 4 standard deviations. */
  double n = N_SAMPLED, count_sd = sqrt(n * p * (1 - p));
  double bytes_sd = sqrt((1 - p) / p * squares);
  double est_count = (double)s.n / p, est_bytes = (double)s.bytes / p;
  fprintf(stderr,
          "sample_rate 0.1: %ld sampled of %d (expected %.0f +- %.1f); bytes estimate %.0f of "
          "%.0f (+- %.0f)\n",
          s.n, N_SAMPLED, n * p, count_sd, est_bytes, total, bytes_sd);
  CHECK(fabs((double)s.n - n * p) <= 4 * count_sd);
  CHECK(fabs(est_count - n) <= 4 * count_sd / p);
  CHECK(fabs(est_bytes - total) <= 4 * bytes_sd);
}

/* ---- 4. threads at sample_rate 1 ---- */

#define N_THREADS 4
#define N_PER_THREAD 50000

static pthread_barrier_t barrier;

__attribute__((noipa)) void talloc_thread_work(void) {
  void *ring[16] = {0};
  for (int i = 0; i < N_PER_THREAD; i++) {
    free(ring[i & 15]);
    ring[i & 15] = malloc(8 + (size_t)(i % 200));
  }
  for (int i = 0; i < 16; i++) free(ring[i]);
}

static void *thread_main(void *arg) {
  /* Half of the threads warm up, as the worker's do; the others take
   * libunwind's first-use path inside a recorded call. */
  if ((intptr_t)arg % 2 == 0) fl_allocs_thread_enter();
  /* A first allocation before recording: AddressSanitizer's runtime
   * allocates (pthread_getattr_np) on a thread's first one. */
  free(malloc(1));
  pthread_barrier_wait(&barrier); /* ready: the thread's start is behind it */
  pthread_barrier_wait(&barrier); /* go: recording */
  talloc_thread_work();
  pthread_barrier_wait(&barrier);
  pthread_barrier_wait(&barrier); /* recording stopped: the thread's end is not counted */
  if ((intptr_t)arg % 2 == 0) fl_allocs_thread_exit();
  return NULL;
}

static void on_alarm(int sig) {
  static const char msg[] = "test_allocs: timed out (a deadlock?)\n";
  (void)sig;
  if (write(2, msg, sizeof msg - 1) < 0) _exit(4);
  _exit(3);
}

static void add_thread(const fl_allocs_record_t *rec, void *arg) {
  sums_t *s = arg;
  if (strcmp(func_of(rec->pcs[0]), "talloc_thread_work") != 0) {
    s->other++;
    return;
  }
  s->n++;
  s->freed += rec->freed;
}

static void test_threads(void) {
  pthread_t th[N_THREADS];
  pthread_barrier_init(&barrier, NULL, N_THREADS + 1);
  for (intptr_t i = 0; i < N_THREADS; i++) pthread_create(&th[i], NULL, thread_main, (void *)i);
  signal(SIGALRM, on_alarm);
  alarm(60);
  pthread_barrier_wait(&barrier); /* ready */
  start(1);
  pthread_barrier_wait(&barrier); /* go */
  pthread_barrier_wait(&barrier); /* all done */
  uint64_t records = fl_allocs_stop();
  alarm(0);
  pthread_barrier_wait(&barrier);
  for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&barrier);
  const fl_allocs_header_t *h = header();
  CHECK_INT(h->calls, N_THREADS * N_PER_THREAD);
  CHECK_INT(records, h->calls);
  CHECK_INT(h->dropped, 0);
  CHECK_INT(h->frees, N_THREADS * N_PER_THREAD);
  sums_t s = {0};
  CHECK_INT(walk(add_thread, &s), N_THREADS * N_PER_THREAD);
  CHECK_INT(s.n, N_THREADS * N_PER_THREAD);
  CHECK_INT(s.freed, N_THREADS * N_PER_THREAD);
  CHECK_INT(s.other, 0);
}

/* ---- 5. every allocation function ---- */

typedef struct expect {
  int kind;
  uint64_t bytes;
  bool freed;
} expect_t;

static void *kept[16];
/* Through volatiles, so that the compiler neither folds realloc(NULL, n)
 * into malloc(n) nor warns about the sizes meant to fail. */
static void *volatile null_ptr;
static volatile size_t huge = SIZE_MAX / 2, most = SIZE_MAX;

__attribute__((noipa)) void talloc_kinds(void) {
  void *p = realloc(null_ptr, 100); /* 1: realloc 100, freed by the next */
  p = realloc(p, 5000);             /* 2: realloc 5000, freed by realloc(p, 0) */
  errno = 0;
  CHECK(realloc(p, 0) == NULL);
  void *volatile s = malloc(64); /* 3: malloc 64, freed at the end */
  errno = 0;
  void *volatile grown = realloc(s, huge); /* fails: s stays allocated */
  CHECK(grown == NULL);
  CHECK_INT(errno, ENOMEM);
  kept[0] = reallocarray(null_ptr, 10, 10); /* 4: realloc 100 */
  errno = 0;
  CHECK(reallocarray(null_ptr, most, 2) == NULL);
  CHECK_INT(errno, ENOMEM);

  void *m = (void *)&kept;
  CHECK_INT(posix_memalign(&m, 3, 10), EINVAL);
  CHECK_INT(posix_memalign(&m, 4, 10), EINVAL);
  CHECK_INT(posix_memalign(&m, 0, 10), EINVAL);
  CHECK(m == (void *)&kept);
  errno = 1234;
  CHECK_INT(posix_memalign(&m, 64, 100), 0); /* 5: memalign 100 */
  CHECK_INT(errno, 1234);
  CHECK(((uintptr_t)m & 63) == 0);
  kept[1] = m;
  CHECK_INT(posix_memalign(&m, 64, huge), ENOMEM);
  CHECK(m == kept[1]);

  kept[2] = aligned_alloc(256, 512); /* 6: memalign 512 */
  CHECK(((uintptr_t)kept[2] & 255) == 0);
  errno = 0;
  CHECK(aligned_alloc(3, 12) == NULL);
  CHECK_INT(errno, EINVAL);
  kept[3] = memalign(32, 50); /* 7: memalign 50 */
  CHECK(((uintptr_t)kept[3] & 31) == 0);
  kept[4] = memalign(24, 50); /* 8: memalign 50, at 32 (rounded up, as glibc does) */
  CHECK(((uintptr_t)kept[4] & 31) == 0);
  long page = sysconf(_SC_PAGESIZE);
  kept[5] = valloc(10); /* 9: memalign 10 */
  CHECK(((uintptr_t)kept[5] & (uintptr_t)(page - 1)) == 0);
  kept[6] = pvalloc(10); /* 10: memalign 10 */
  CHECK(((uintptr_t)kept[6] & (uintptr_t)(page - 1)) == 0);
  errno = 0;
  CHECK(calloc(huge, 4) == NULL);
  CHECK_INT(errno, ENOMEM);
  kept[7] = calloc(3, 7); /* 11: calloc 21 */
  CHECK(kept[7] && ((char *)kept[7])[20] == 0);
  kept[8] = malloc(0); /* 12: malloc 0 */
  CHECK(malloc_usable_size(kept[8]) >= 1);
  free(NULL);
  free(s);
}

static void test_kinds(void) {
  start(1);
  talloc_kinds();
  fl_allocs_stop();
  static const expect_t want[] = {
      {FL_ALLOC_REALLOC, 100, true},   {FL_ALLOC_REALLOC, 5000, true},
      {FL_ALLOC_MALLOC, 64, true},     {FL_ALLOC_REALLOC, 100, false},
      {FL_ALLOC_MEMALIGN, 100, false}, {FL_ALLOC_MEMALIGN, 512, false},
      {FL_ALLOC_MEMALIGN, 50, false},  {FL_ALLOC_MEMALIGN, 50, false},
      {FL_ALLOC_MEMALIGN, 10, false},  {FL_ALLOC_MEMALIGN, 10, false},
      {FL_ALLOC_CALLOC, 21, false},    {FL_ALLOC_MALLOC, 0, false},
  };
  const size_t n_want = FL__ARRAY_SIZE(want);
  size_t pos = 0, i = 0;
  fl_allocs_record_t rec;
  while (fl_allocs_next(buf, buf_bytes, &pos, &rec) == 1) {
    if (i < n_want) {
      CHECK_INT(rec.kind, want[i].kind);
      CHECK_INT(rec.bytes, want[i].bytes);
      CHECK_INT(rec.freed, want[i].freed);
      CHECK_STR(func_of(rec.pcs[0]), "talloc_kinds");
      if (rec.kind != want[i].kind || rec.bytes != want[i].bytes || rec.freed != want[i].freed)
        fprintf(stderr, "  (record %zu)\n", i + 1);
    }
    i++;
  }
  CHECK_INT(i, n_want);
  const fl_allocs_header_t *h = header();
  CHECK_INT(h->calls, n_want);
  /* realloc(p, 5000) released the first block, realloc(p, 0) the second,
   * free(s) the third; the failed realloc released nothing. */
  CHECK_INT(h->frees, 3);
  for (int k = 0; k < 16; k++) {
    free(kept[k]);
    kept[k] = NULL;
  }
}

/* ---- 6. a full buffer, a full table ---- */

__attribute__((noipa)) void talloc_many(void **out, int n) {
  for (int i = 0; i < n; i++) out[i] = malloc(32);
}

static void test_full(void) {
  static void *out[1000];
  /* Room for a few dozen records. */
  size_t small = fl_allocs_buffer_bytes(400, 1024);
  void *b = map_buffer(small);
  CHECK_INT(fl_allocs_init(b, small, 1024, err, sizeof err), 0);
  start(1);
  talloc_many(out, 1000);
  uint64_t records = fl_allocs_stop();
  const fl_allocs_header_t *h = b;
  CHECK(records > 10 && records < 100);
  CHECK_INT(h->calls, 1000);
  CHECK_INT(records + h->dropped, 1000);
  CHECK(h->used_words <= h->capacity_words);
  size_t pos = 0;
  fl_allocs_record_t rec;
  uint64_t read = 0;
  while (fl_allocs_next(b, small, &pos, &rec) == 1) read++;
  CHECK_INT(read, records);
  for (int i = 0; i < 1000; i++) free(out[i]);

  /* A table of 16 slots holds 16 live sampled blocks. */
  size_t tbytes = fl_allocs_buffer_bytes(100000, 16);
  void *t = map_buffer(tbytes);
  CHECK_INT(fl_allocs_init(t, tbytes, 16, err, sizeof err), 0);
  start(1);
  talloc_many(out, 100);
  for (int i = 0; i < 8; i++) free(out[i]); /* 8 slots free again */
  talloc_many(out, 8);
  records = fl_allocs_stop();
  h = t;
  CHECK_INT(records, 24);
  CHECK_INT(h->dropped, 84);
  for (int i = 0; i < 100; i++) free(out[i]);

  /* Bad arguments say what is valid. */
  CHECK_INT(fl_allocs_init(t, tbytes, 100, err, sizeof err), -1);
  CHECK(strstr(err, "power of two") != NULL);
  CHECK_INT(fl_allocs_init(t, 64, 16, err, sizeof err), -1);
  CHECK(strstr(err, "too small") != NULL);
  CHECK_INT(fl_allocs_init(t, tbytes, 16, err, sizeof err), 0);
  CHECK_INT(fl_allocs_start(0, 0, err, sizeof err), -1);
  CHECK(strstr(err, "at most 1") != NULL);
  CHECK_INT(fl_allocs_start(1.5, 0, err, sizeof err), -1);
  CHECK_INT(fl_allocs_start(NAN, 0, err, sizeof err), -1);
  munmap(b, small);
  munmap(t, tbytes);

  /* A buffer that is zeros already (a new mapping) is taken as it is, and
   * records as well. */
  void *z = map_buffer(tbytes);
  CHECK_INT(fl_allocs_init_zeroed(z, tbytes, 16, err, sizeof err), 0);
  start(1);
  talloc_many(out, 10);
  CHECK_INT(fl_allocs_stop(), 10);
  for (int i = 0; i < 10; i++) free(out[i]);
  munmap(z, tbytes);
  use_main_buffer();
}

/* ---- 7. nothing recorded when not recording, nor in a child ---- */

__attribute__((noipa)) void talloc_child(void) {
  for (int i = 0; i < 100; i++) free(malloc(100));
}

__attribute__((noipa)) void talloc_one(void **out) {
  *out = malloc(77);
}

static long count_in(const char *func) {
  size_t pos = 0;
  fl_allocs_record_t rec;
  long n = 0;
  while (fl_allocs_next(buf, buf_bytes, &pos, &rec) == 1)
    for (size_t i = 0; i < rec.n_pcs; i++)
      if (!strcmp(func_of(rec.pcs[i]), func)) {
        n++;
        break;
      }
  return n;
}

static void test_not_recording(void) {
  start(1);
  CHECK_INT(fl_allocs_start(1, 0, err, sizeof err), -1); /* already */
  CHECK(fl_allocs_recording());
  fl_allocs_stop();
  CHECK(!fl_allocs_recording());
  const fl_allocs_header_t *h = header();
  uint64_t used = h->used_words;
  talloc_child();
  void *p;
  talloc_one(&p);
  free(p);
  CHECK_INT(h->used_words, used);
  CHECK_INT(h->records, 0);
  CHECK_INT(fl_allocs_stop(), 0);

  /* A child forked while recording records nothing into the parent's
   * buffer (a shared mapping in the worker). */
  start(1);
  pid_t pid = fork();
  if (pid == 0) {
    talloc_child();
    _exit(fl_allocs_recording() ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  talloc_one(&p);
  fl_allocs_stop();
  free(p);
  CHECK_INT(count_in("talloc_child"), 0);
  CHECK_INT(count_in("talloc_one"), 1);
}

/* ---- 8. each run afresh ---- */

/* A block sampled in one run and freed in the next marks nothing in the
 * next run's records (the table starts empty: start clears the slots the
 * last run's records name), nor counts in its frees. */
static void test_runs_are_separate(void) {
  void *kept_block, *fresh;
  start(1);
  talloc_one(&kept_block);
  CHECK_INT(fl_allocs_stop(), 1);
  start(1);
  talloc_one(&fresh);
  free(kept_block);
  CHECK_INT(fl_allocs_stop(), 1);
  const fl_allocs_header_t *h = header();
  CHECK_INT(h->frees, 0);
  CHECK_INT(h->calls, 1);
  size_t pos = 0;
  fl_allocs_record_t rec;
  CHECK_INT(fl_allocs_next(buf, buf_bytes, &pos, &rec), 1);
  CHECK(rec.addr == (uint64_t)(uintptr_t)fresh);
  CHECK(!rec.freed);
  free(fresh);
}

/* ---- 9. the reader ---- */

static void test_reader(void) {
  void *p[3];
  start(1);
  for (int i = 0; i < 3; i++) talloc_one(&p[i]);
  fl_allocs_stop();
  for (int i = 0; i < 3; i++) free(p[i]);
  CHECK_INT(walk(NULL, NULL), 3);
  /* The second record, reserved but never completed (tid 0), is skipped. */
  size_t pos = 0;
  fl_allocs_record_t rec;
  CHECK_INT(fl_allocs_next(buf, buf_bytes, &pos, &rec), 1);
  size_t second = pos;
  /* The first record is at position 0 of the records. */
  uint64_t *words = (uint64_t *)rec.pcs - FL_ALLOCS_RECORD_WORDS;
  uint64_t saved = words[second];
  words[second] &= ~0xffffffffull;
  CHECK_INT(walk(NULL, NULL), 2);
  words[second] = saved | (1000ull << 32); /* more addresses than the maximum */
  CHECK_INT(walk(NULL, NULL), -1);
  words[second] = saved;
  words[second + 3] = 99; /* no such kind */
  CHECK_INT(walk(NULL, NULL), -1);
  words[second + 3] = FL_ALLOC_MALLOC;
  CHECK_INT(walk(NULL, NULL), 3);
  CHECK_INT(fl_allocs_next(buf, 8, &(size_t){0}, &rec), -1);
}

/* ---- 10. the frame-pointer walk ---- */

/* Compiled at test time as the kernel compiles cells (cc, the cell flags,
 * -fPIC -shared): a 5-deep chain that mallocs at its end, and a qsort
 * whose comparator mallocs (its caller is the C library). */
static const char fp_source[] =
    "#include <stdlib.h>\n"
    "#define STEP __attribute__((noinline))\n"
    "#define KEEP_CALL() __asm__ volatile(\"\" ::: \"memory\") /* no tail call */\n"
    "STEP void *fp5(size_t n) { void *p = malloc(n); KEEP_CALL(); return p; }\n"
    "STEP void *fp4(size_t n) { void *p = fp5(n); KEEP_CALL(); return p; }\n"
    "STEP void *fp3(size_t n) { void *p = fp4(n); KEEP_CALL(); return p; }\n"
    "STEP void *fp2(size_t n) { void *p = fp3(n); KEEP_CALL(); return p; }\n"
    "STEP void *fp1(size_t n) { void *p = fp2(n); KEEP_CALL(); return p; }\n"
    "void *fp_cmp_block;\n"
    "STEP int fp_cmp(const void *a, const void *b) {\n"
    "  if (!fp_cmp_block) fp_cmp_block = malloc(24);\n"
    "  return *(const int *)a - *(const int *)b;\n"
    "}\n"
    "STEP void fp_sort(void) {\n"
    "  int v[8] = {5, 3, 7, 1, 8, 2, 6, 4};\n"
    "  qsort(v, 8, sizeof v[0], fp_cmp);\n"
    "  KEEP_CALL();\n"
    "}\n";

/* Built with -fomit-frame-pointer: a frame the walk must not pass. */
static const char nofp_source[] =
    "#include <stddef.h>\n"
    "__attribute__((noinline)) void *nofp_call(void *(*f)(size_t), size_t n) {\n"
    "  void *p = f(n);\n"
    "  __asm__ volatile(\"\" ::: \"memory\");\n"
    "  return p;\n"
    "}\n";

typedef void *(*chain_fn)(size_t);

/* Compiles source into dir/name.so with flags and dlopens it. */
static void *build_object(const char *dir, const char *name, const char *source,
                          const char *flags) {
  char c_path[512], so_path[512], cmd[2048];
  snprintf(c_path, sizeof c_path, "%s/%s.c", dir, name);
  snprintf(so_path, sizeof so_path, "%s/%s.so", dir, name);
  FILE *f = fopen(c_path, "w");
  if (!f || fputs(source, f) < 0 || fclose(f) != 0) {
    perror(c_path);
    exit(2);
  }
  const char *cc = getenv("CC");
  snprintf(cmd, sizeof cmd, "%s %s -fPIC -shared -o %s %s", cc && *cc ? cc : "cc", flags, so_path,
           c_path);
  if (system(cmd) != 0) {
    fprintf(stderr, "test_allocs: failed: %s\n", cmd);
    exit(2);
  }
  void *h = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "test_allocs: %s\n", dlerror());
    exit(2);
  }
  unlink(c_path);
  unlink(so_path);
  return h;
}

typedef struct code_ranges {
  const char *name; /* the object's path ends with this; "" for the executable */
  bool as_fp;       /* register as frame-pointer ranges, or set as the base range */
  int found;
} code_ranges_t;

/* Registers the executable segments of an object, as the worker does. */
static int register_ranges(struct dl_phdr_info *info, size_t size, void *data) {
  code_ranges_t *r = data;
  const char *name = info->dlpi_name ? info->dlpi_name : "";
  bool is_exe = !*name && !r->found && !*r->name;
  size_t n = strlen(name), k = strlen(r->name);
  if (!is_exe && !(*r->name && n >= k && !strcmp(name + n - k, r->name))) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (r->as_fp)
      CHECK_INT(fl_allocs_add_fp_range(lo, hi), 0);
    else
      fl_allocs_set_base_range(lo, hi);
    r->found++;
  }
  return 1;
}

/* The walk ends here: a return address into the executable (the base
 * range), as into the worker's call_entry. */
__attribute__((noipa)) void *tfp_call(chain_fn chain, size_t n) {
  void *p = chain(n);
  __asm__ volatile("" ::: "memory");
  return p;
}

__attribute__((noipa)) void *tfp_call_through(void *(*via)(chain_fn, size_t), chain_fn chain,
                                              size_t n) {
  void *p = via(chain, n);
  __asm__ volatile("" ::: "memory");
  return p;
}

__attribute__((noipa)) void tfp_sort(void (*sort)(void)) {
  sort();
  __asm__ volatile("" ::: "memory");
}

/* The one record of bytes in the main buffer (NULL and a failed check
 * unless there is exactly one). */
static bool find_record(uint64_t bytes, fl_allocs_record_t *out) {
  size_t pos = 0;
  fl_allocs_record_t rec;
  int n = 0;
  while (fl_allocs_next(buf, buf_bytes, &pos, &rec) == 1)
    if (rec.bytes == bytes && n++ == 0) *out = rec;
  CHECK_INT(n, 1);
  return n == 1;
}

static bool stack_has(const fl_allocs_record_t *rec, const char *func) {
  for (size_t i = 0; i < rec->n_pcs; i++)
    if (!strcmp(func_of(rec->pcs[i]), func)) return true;
  return false;
}

typedef struct walk_thread {
  chain_fn chain;
  bool enter; /* registers with the recorder (its stack bounds) */
  void *block;
} walk_thread_t;

static void *walk_thread_main(void *arg) {
  walk_thread_t *w = arg;
  if (w->enter) fl_allocs_thread_enter();
  free(malloc(1)); /* ASan's first allocation on a thread allocates */
  pthread_barrier_wait(&barrier);
  pthread_barrier_wait(&barrier); /* recording */
  w->block = tfp_call(w->chain, 48);
  pthread_barrier_wait(&barrier);
  if (w->enter) fl_allocs_thread_exit();
  return NULL;
}

static void test_fp_walk(void) {
#if !defined(__x86_64__)
  fprintf(stderr, "test_fp_walk: skipped (the walk is for x86-64)\n");
  return;
#else
  char dir[] = "/tmp/cflame-test-allocs-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(2);
  }
  /* The kernel's default cell flags (kernel/session/kn_session.h). */
  void *fp = build_object(dir, "fp", fp_source, "-std=gnu17 -O2 -g -fno-omit-frame-pointer");
  void *nofp = build_object(dir, "nofp", nofp_source, "-std=gnu17 -O2 -g -fomit-frame-pointer");
  rmdir(dir);
  chain_fn chain;
  void (*sort)(void);
  void *(*through)(chain_fn, size_t);
  *(void **)&chain = dlsym(fp, "fp1");
  *(void **)&sort = dlsym(fp, "fp_sort");
  *(void **)&through = dlsym(nofp, "nofp_call");
  void **cmp_block = dlsym(fp, "fp_cmp_block");
  CHECK(chain && sort && through && cmp_block);
  if (!chain || !sort || !through || !cmp_block) return;
  code_ranges_t exe = {"", false, 0};
  dl_iterate_phdr(register_ranges, &exe);
  CHECK(exe.found >= 1);
  CHECK_INT(fl_allocs_add_fp_range(10, 10), -1); /* empty */

  /* libunwind's stack: fp.so is not registered yet. */
  start(1);
  void *slow_block = tfp_call(chain, 40);
  fl_allocs_stop();
  CHECK_INT(header()->fp_records, 0);
  fl_allocs_record_t slow;
  uint64_t slow_pcs[FL_ALLOCS_MAX_DEPTH];
  size_t n_slow = 0;
  if (find_record(40, &slow)) {
    n_slow = slow.n_pcs;
    memcpy(slow_pcs, slow.pcs, n_slow * sizeof slow_pcs[0]);
  }
  free(slow_block);

  /* The walk's: the same call, from the same place. */
  code_ranges_t fp_ranges = {"/fp.so", true, 0};
  dl_iterate_phdr(register_ranges, &fp_ranges);
  CHECK(fp_ranges.found >= 1);
  dl_iterate_phdr(register_ranges, &fp_ranges); /* again: no change */
  start(1);
  CHECK_INT(fl_allocs_add_fp_range(1, 2), -1); /* not while recording */
  void *fast_block = tfp_call(chain, 40);
  fl_allocs_stop();
  CHECK_INT(header()->fp_records, 1);
  fl_allocs_record_t fast;
  if (find_record(40, &fast)) {
    /* fp5, fp4, fp3, fp2, fp1, and the return into tfp_call (the base
     * range), where the walk stops: libunwind's goes on below it. */
    static const char *const want[] = {"fp5", "fp4", "fp3", "fp2", "fp1", "tfp_call"};
    CHECK_INT(fast.n_pcs, 6);
    CHECK(n_slow > 6);
    for (size_t i = 0; i < 6 && i < fast.n_pcs; i++) {
      CHECK_STR(func_of(fast.pcs[i]), want[i]);
      if (i < n_slow && fast.pcs[i] != slow_pcs[i]) {
        fprintf(stderr, "  pc %zu: walk %#llx, libunwind %#llx\n", i,
                (unsigned long long)fast.pcs[i], (unsigned long long)slow_pcs[i]);
        CHECK(fast.pcs[i] == slow_pcs[i]);
      }
    }
    CHECK_INT(fast.kind, FL_ALLOC_MALLOC);
    CHECK(fast.addr == (uint64_t)(uintptr_t)fast_block);
  }
  free(fast_block);
  /* Its free finds it, as any sampled block's. */
  start(1);
  fast_block = tfp_call(chain, 40);
  free(fast_block);
  fl_allocs_stop();
  CHECK_INT(header()->fp_records, 1);
  CHECK_INT(header()->frees, 1);
  if (find_record(40, &fast)) CHECK(fast.freed);

  /* A comparator called by qsort: the C library's frame is not the
   * walk's, libunwind takes the whole stack. */
  start(1);
  tfp_sort(sort);
  fl_allocs_stop();
  CHECK_INT(header()->fp_records, 0);
  fl_allocs_record_t cmp;
  if (find_record(24, &cmp)) {
    CHECK_STR(func_of(cmp.pcs[0]), "fp_cmp");
#if !defined(__SANITIZE_ADDRESS__) /* ASan intercepts qsort */
    CHECK(cmp.n_pcs >= 2 && in_libc(cmp.pcs[1]));
#endif
    CHECK(stack_has(&cmp, "fp_sort"));
    CHECK(stack_has(&cmp, "tfp_sort"));
    CHECK(stack_has(&cmp, "test_fp_walk") || stack_has(&cmp, "main"));
  }
  free(*cmp_block);

  /* Through an object without frame pointers. */
  start(1);
  void *through_block = tfp_call_through(through, chain, 40);
  fl_allocs_stop();
  CHECK_INT(header()->fp_records, 0);
  fl_allocs_record_t via;
  if (find_record(40, &via)) {
    static const char *const want[] = {
        "fp5", "fp4", "fp3", "fp2", "fp1", "nofp_call", "tfp_call_through"};
    CHECK(via.n_pcs > 7);
    for (size_t i = 0; i < 7 && i < via.n_pcs; i++) CHECK_STR(func_of(via.pcs[i]), want[i]);
  }
  free(through_block);

  /* Threads: one that registered walks (its own stack's bounds), one that
   * did not is unwound by libunwind. */
  walk_thread_t w[2] = {{chain, true, NULL}, {chain, false, NULL}};
  pthread_t th[2];
  pthread_barrier_init(&barrier, NULL, 3);
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, walk_thread_main, &w[i]);
  pthread_barrier_wait(&barrier);
  start(1);
  pthread_barrier_wait(&barrier);
  pthread_barrier_wait(&barrier);
  fl_allocs_stop();
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&barrier);
  CHECK_INT(header()->records, 2);
  CHECK_INT(header()->fp_records, 1);
  size_t pos = 0;
  fl_allocs_record_t rec;
  while (fl_allocs_next(buf, buf_bytes, &pos, &rec) == 1) {
    CHECK_STR(func_of(rec.pcs[0]), "fp5");
    CHECK(rec.n_pcs >= 6 && !strcmp(func_of(rec.pcs[5]), "tfp_call"));
  }
  for (int i = 0; i < 2; i++) free(w[i].block);
  fl_allocs_set_base_range(0, 0);
#endif
}

/* ---- 11. the call count: exact at every rate ---- */

/* The count is the countdown to each thread's next sample (see
 * fl_allocs.c), so it must stay exact where the countdown is reset (each
 * start, at a new rate), handed over (a thread's exit, a new thread taking
 * its block) or given up (the shared block), and the sampling must follow
 * the new rate from each run's first call: a run at 1 after one at 1e-9,
 * whose gaps are longer than the run, still records every call. */

#define N_COUNT_THREADS 3
#define COUNT_CYCLES 6
static const double count_rates[COUNT_CYCLES] = {0.1, 1e-9, 1, 0.1, 1, 0.1};
/* The cycle from which thread 2 has given its block up (fl_allocs_thread_exit:
 * the shared block), and the one in which a new thread takes a block. */
#define SHARED_FROM 3
#define NEWCOMER_IN 4

/* Makes n allocation calls of every kind, all successful, and frees every
 * block; returns n. */
__attribute__((noipa)) long tcount_work(long n) {
  void *ring[8] = {0};
  for (long i = 0; i < n; i++) {
    size_t size = 16 + (size_t)(i * 13 % 500);
    void **slot = &ring[i & 7];
    switch (i % 6) {
      case 0:
        free(*slot);
        *slot = malloc(size);
        break;
      case 1:
        free(*slot);
        *slot = calloc(2, size);
        break;
      case 2:
        free(*slot);
        *slot = realloc(null_ptr, size);
        break;
      case 3:
        free(*slot);
        *slot = aligned_alloc(64, 128);
        break;
      case 4: /* grows, or allocates the first time round */
        *slot = realloc(*slot, size + 600);
        break;
      default: {
        void *m = NULL;
        free(*slot);
        CHECK_INT(posix_memalign(&m, 32, size), 0);
        *slot = m;
      }
    }
    CHECK(*slot != NULL);
  }
  for (int i = 0; i < 8; i++) free(ring[i]);
  return n;
}

static long count_calls_for(int who, int cycle) {
  return 5000 + 1000 * who + 37 * cycle;
}

static void *count_thread_main(void *arg) {
  int who = (int)(intptr_t)arg;
  fl_allocs_thread_enter();
  free(malloc(1));                /* ASan's first allocation on a thread allocates */
  pthread_barrier_wait(&barrier); /* ready */
  for (int cycle = 0; cycle < COUNT_CYCLES; cycle++) {
    if (who == 2 && cycle == SHARED_FROM) fl_allocs_thread_exit();
    pthread_barrier_wait(&barrier); /* recording */
    tcount_work(count_calls_for(who, cycle));
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier); /* stopped: not counted */
    tcount_work(100);
    pthread_barrier_wait(&barrier); /* before the next start */
  }
  if (who != 2) fl_allocs_thread_exit();
  return NULL;
}

/* A thread that does not register and counts its first calls while
 * recording: it takes a free counter block (one given up, as thread 2's)
 * with whatever countdown it holds. */
static pthread_barrier_t newcomer_barrier;

static void *newcomer_main(void *arg) {
  (void)arg;
  free(malloc(1));                         /* ASan's first allocation on a thread allocates */
  pthread_barrier_wait(&newcomer_barrier); /* ready */
  pthread_barrier_wait(&newcomer_barrier); /* recording */
  tcount_work(count_calls_for(N_COUNT_THREADS, NEWCOMER_IN));
  fl_allocs_thread_exit();
  pthread_barrier_wait(&newcomer_barrier); /* done */
  return NULL;
}

static void count_freed(const fl_allocs_record_t *rec, void *arg) {
  *(long *)arg += rec->freed;
}

static void test_call_counts(void) {
  pthread_t th[N_COUNT_THREADS];
  pthread_barrier_init(&barrier, NULL, N_COUNT_THREADS + 1);
  for (intptr_t i = 0; i < N_COUNT_THREADS; i++)
    pthread_create(&th[i], NULL, count_thread_main, (void *)i);
  pthread_barrier_init(&newcomer_barrier, NULL, 2);
  signal(SIGALRM, on_alarm);
  alarm(120);
  pthread_barrier_wait(&barrier); /* ready */
  for (int cycle = 0; cycle < COUNT_CYCLES; cycle++) {
    double rate = count_rates[cycle];
    pthread_t newcomer;
    if (cycle == NEWCOMER_IN) {
      pthread_create(&newcomer, NULL, newcomer_main, NULL);
      pthread_barrier_wait(&newcomer_barrier);
    }
    start(rate);
    pthread_barrier_wait(&barrier); /* go */
    long want = tcount_work(count_calls_for(N_COUNT_THREADS + 1, cycle));
    for (int i = 0; i < N_COUNT_THREADS; i++) want += count_calls_for(i, cycle);
    if (cycle == NEWCOMER_IN) {
      pthread_barrier_wait(&newcomer_barrier); /* go */
      pthread_barrier_wait(&newcomer_barrier); /* done */
      want += count_calls_for(N_COUNT_THREADS, cycle);
    }
    pthread_barrier_wait(&barrier); /* all done */
    uint64_t records = fl_allocs_stop();
    pthread_barrier_wait(&barrier); /* stopped */
    pthread_barrier_wait(&barrier); /* the threads' calls while not recording are made */
    const fl_allocs_header_t *h = header();
    long freed = 0;
    CHECK_INT(walk(count_freed, &freed), records);
    fprintf(stderr, "call counts, run %d at sample_rate %g: %llu calls (%ld made), %llu records\n",
            cycle, rate, (unsigned long long)h->calls, want, (unsigned long long)records);
    CHECK_INT(h->calls, want);
    CHECK_INT(h->dropped, 0);
    CHECK_INT(h->frees, freed);
    if (rate == 1) {
      CHECK_INT(records, want);
      CHECK_INT(freed, want);
    } else {
      double mean = (double)want * rate, sd = sqrt((double)want * rate * (1 - rate));
      CHECK(fabs((double)records - mean) <= 5 * sd + 1);
    }
    if (cycle == NEWCOMER_IN) pthread_join(newcomer, NULL);
  }
  alarm(0);
  for (int i = 0; i < N_COUNT_THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&barrier);
  pthread_barrier_destroy(&newcomer_barrier);

  /* A failed call counts when it passed inline: at rate 1 never, below 1
   * unless it was a sample point or the thread's first call of the run. */
  void *volatile kept_block;
  start(1e-9);
  kept_block = malloc(8); /* the first call: the hook draws */
  CHECK(malloc(huge) == NULL);
  free(kept_block);
  fl_allocs_stop();
  CHECK_INT(header()->calls, 2);
  CHECK_INT(header()->records, 0);
  start(1);
  kept_block = malloc(8);
  CHECK(malloc(huge) == NULL);
  free(kept_block);
  fl_allocs_stop();
  CHECK_INT(header()->calls, 1);
  CHECK_INT(header()->records, 1);
  CHECK_INT(header()->frees, 1);
}

/* ---- 10. the sampling gaps ---- */

#define N_GAPS 2000000

/* The gaps the recorder draws at rate p: geometric on 1, 2, ... with
 * P(G = g) = p (1 - p)^(g - 1). Checks their mean (1 / p) and variance
 * ((1 - p) / p^2) within 5 standard errors (the variance's from the
 * sample's fourth central moment), and the frequency of each gap up to
 * limit within 5 binomial standard deviations (across the table's M, the
 * boundary of its two parts, for the table-driven rates). */
static void check_gaps(double p, uint64_t seed, int limit) {
  static uint64_t g[N_GAPS];
  static uint64_t count[1024];
  fl__allocs_draw_gaps(p, seed, g, N_GAPS);
  double n = N_GAPS, mean = 0;
  memset(count, 0, sizeof count);
  for (size_t i = 0; i < N_GAPS; i++) {
    mean += (double)g[i];
    if (g[i] < 1024) count[g[i]]++;
  }
  mean /= n;
  double m2 = 0, m4 = 0;
  for (size_t i = 0; i < N_GAPS; i++) {
    double d = (double)g[i] - mean;
    m2 += d * d;
    m4 += d * d * d * d;
  }
  m2 /= n;
  m4 /= n;
  double want_mean = 1 / p, want_var = (1 - p) / (p * p);
  double mean_se = sqrt(want_var / n), var_se = sqrt((m4 - m2 * m2) / n);
  if (fabs(mean - want_mean) > 5 * mean_se || fabs(m2 - want_var) > 5 * var_se) {
    fprintf(stderr, "gaps at %g: mean %g (want %g ± %g), variance %g (want %g ± %g)\n", p, mean,
            want_mean, 5 * mean_se, m2, want_var, 5 * var_se);
    CHECK(false);
  }
  CHECK_INT(count[0], 0);
  for (int k = 1; k <= limit && k < 1024; k++) {
    double pk = p * pow(1 - p, k - 1), sd = sqrt(n * pk * (1 - pk));
    if (fabs((double)count[k] - n * pk) > 5 * sd + 1) {
      fprintf(stderr, "gaps at %g: %llu of %d, expected %g ± %g\n", p,
              (unsigned long long)count[k], k, n * pk, 5 * sd);
      CHECK(false);
    }
  }
}

static void test_gaps(void) {
  static uint64_t g[1000];
  fl__allocs_draw_gaps(1, 42, g, 1000);
  int ones = 0;
  for (int i = 0; i < 1000; i++) ones += g[i] == 1;
  CHECK_INT(ones, 1000); /* sample_rate 1: every call, exactly */
  check_gaps(0.5, 1, 20);
  check_gaps(0.01, 2, 400);
  check_gaps(0.1, 3, 100);
  check_gaps(0.3, 4, 40);
  check_gaps(0.001, 5, 0); /* below the table: the log */
}

/* The table's size for a run: twice the sampled blocks expected alive. */
static void test_table_slots(void) {
  CHECK_INT(fl_allocs_table_slots(1u << 19, 1), 1u << 20);
  CHECK_INT(fl_allocs_table_slots(1u << 19, 0.01), 1u << 14);
  CHECK_INT(fl_allocs_table_slots(1u << 19, 0.1), 1u << 17);
  CHECK_INT(fl_allocs_table_slots(1u << 19, 1e-9), FL_ALLOCS_RUN_MIN_TABLE_SLOTS);
  CHECK_INT(fl_allocs_table_slots(1ull << 40, 1), FL_ALLOCS_MAX_TABLE_SLOTS);
}

/* ---- 11. stopping while threads allocate ---- */

#define N_STOPPERS 3
#define N_STOPS 150

static volatile int stoppers_run;

__attribute__((noipa)) static void *stopper_thread(void *arg) {
  void *ring[16] = {0};
  if ((intptr_t)arg % 2 == 0) fl_allocs_thread_enter();
  for (unsigned i = 0; __atomic_load_n(&stoppers_run, __ATOMIC_RELAXED); i++) {
    free(ring[i & 15]);
    ring[i & 15] = malloc(8 + i % 300);
  }
  for (int i = 0; i < 16; i++) free(ring[i]);
  if ((intptr_t)arg % 2 == 0) fl_allocs_thread_exit();
  return NULL;
}

/* Runs of a fraction of a millisecond at sample_rate 0.5 (a slow path
 * every other call) started and stopped while N_STOPPERS threads allocate
 * and free without a pause. After each stop, every record that stop
 * counted is complete in the buffer (none lost, none cut off), and
 * nothing writes to the buffer any more: its used words and its records
 * are the same a while later, while the threads go on. On a busy machine
 * the threads may not run during a run at all: the stops go on past
 * N_STOPS until ten of them have stopped records being made. */
static void check_stops(const char *how) {
  pthread_t th[N_STOPPERS];
  static uint64_t copy[1u << 20];
  stoppers_run = 1;
  for (intptr_t i = 0; i < N_STOPPERS; i++) pthread_create(&th[i], NULL, stopper_thread, (void *)i);
  signal(SIGALRM, on_alarm);
  alarm(60);
  int bad = 0, caught = 0;
  const uint64_t *words = (const uint64_t *)buf + FL_ALLOCS_HEADER_WORDS + 2 * TABLE_SLOTS +
                          FL_ALLOCS_FILTER_WORDS;
  for (int k = 0; k < N_STOPS || (caught < 10 && k < 100 * N_STOPS); k++) {
    start(0.5);
    usleep(200 + 50 * (k % 8));
    uint64_t records = fl_allocs_stop();
    const fl_allocs_header_t *h = header();
    uint64_t used = h->used_words;
    size_t n_copy = used < (1u << 20) ? used : (1u << 20);
    memcpy(copy, words, n_copy * sizeof(uint64_t));
    long walked = walk(NULL, NULL);
    usleep(300);
    if (walked != (long)records || h->records != records || h->dropped != 0 ||
        h->used_words != used || memcmp(copy, words, n_copy * sizeof(uint64_t)) != 0) {
      fprintf(stderr, "stop %d (%s): %ld records in the buffer, %llu counted, %llu dropped, used "
              "%llu then %llu\n", k, how, walked, (unsigned long long)records,
              (unsigned long long)h->dropped, (unsigned long long)used,
              (unsigned long long)h->used_words);
      bad++;
    }
    caught += records > 0;
  }
  stoppers_run = 0;
  for (int i = 0; i < N_STOPPERS; i++) pthread_join(th[i], NULL);
  alarm(0);
  CHECK_INT(bad, 0);
  CHECK(caught > 0);
}

static void test_stops(void) {
  check_stops("membarrier where the kernel has it");
  fl__allocs_no_membarrier();
  check_stops("a fence per slow path");
}

int main(void) {
  fl_allocs_thread_enter();
  buf_bytes = fl_allocs_buffer_bytes(WORDS, TABLE_SLOTS);
  buf = map_buffer(buf_bytes);
  use_main_buffer();
  test_known_answers();
  test_libc_callers();
  test_sample_rate();
  test_threads();
  test_kinds();
  test_full();
  test_not_recording();
  test_runs_are_separate();
  test_reader();
  test_fp_walk();
  test_call_counts();
  test_gaps();
  test_table_slots();
  test_stops(); /* last: it turns membarrier off */
  return TEST_DONE();
}
