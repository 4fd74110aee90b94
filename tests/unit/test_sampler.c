/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests fl_sampler against workloads whose answers are known: CPU-bound
 * loops of measured length, functions that split the time 1:3, a workload
 * whose period equals the interval, two threads splitting the CPU 3:1,
 * sleeps and blocking reads that must not see EINTR, a qsort comparator
 * whose stack must go through the C library, a thread that allocates and
 * loads libraries while it is sampled, a buffer too small for the run, and
 * a child process that crashes while it samples into a shared file, and
 * on clock wall a thread beside busy processes, whose time waiting for a
 * CPU must be recorded.
 *
 * Samples are attributed to functions with the project's own symbolizer
 * (fl_symbol) on this process. The test prints what it measured (records
 * per CPU-second, shares, handler cost) so that a run doubles as a report. */
#define _GNU_SOURCE
#include "cflame/fl_sampler.h"
#include "cflame/fl_symbol.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/run_delay.h"
#include "test.h"

#define MS 1000000ull
#define MAIN_WORDS (1u << 20)

static void *main_buf;
static size_t main_bytes;
static fl_symbolizer_t *sym;

static int64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int gettid_(void) {
  return (int)syscall(SYS_gettid);
}

/* ---- workloads: a latency-bound multiply chain, the same code in each ---- */

static volatile uint64_t sink;

#define CHAIN(n)                                                 \
  do {                                                           \
    uint64_t x_ = sink;                                          \
    for (uint64_t i_ = 0; i_ < (n); i_++) {                      \
      x_ = x_ * 6364136223846793005ull + 1442695040888963407ull; \
      __asm__ volatile("" : "+r"(x_));                           \
    }                                                            \
    sink = x_;                                                   \
  } while (0)

__attribute__((noipa)) void tsamp_burn(uint64_t n) {
  CHAIN(n);
}
__attribute__((noipa)) void tsamp_a(uint64_t n) {
  CHAIN(n);
}
__attribute__((noipa)) void tsamp_b(uint64_t n) {
  CHAIN(3 * n);
}
__attribute__((noipa)) void tsamp_thread_work(uint64_t n) {
  CHAIN(n);
}
__attribute__((noipa)) void tsamp_child_work(uint64_t n) {
  CHAIN(n);
}

/* Runs tsamp_burn until the calling thread has used cpu_ns more CPU. The
 * chunks are long (a few hundred microseconds) so that the clock reads
 * between them, system calls that slow down on a busy machine, stay well
 * under the 5% of samples that may land outside tsamp_burn. */
static void burn_cpu(int64_t cpu_ns) {
  int64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + cpu_ns;
  while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end) tsamp_burn(200000);
}

/* ns of CPU per CHAIN iteration. */
static double ns_per_iteration(void) {
  uint64_t n = 20000000;
  int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  tsamp_burn(n);
  return (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)n;
}

/* ---- reading what was sampled ---- */

/* The out-of-line function holding pc (inlined frames skipped), or "". */
static const char *func_of(uint64_t pc, bool is_return_address) {
  fl_frame_info_t fr[16];
  int n = fl_symbolizer_lookup(sym, pc, is_return_address, fr, 16);
  return n > 0 && fr[n - 1].func ? fr[n - 1].func : "";
}

static const char *module_of(uint64_t pc, bool is_return_address) {
  fl_frame_info_t fr[16];
  int n = fl_symbolizer_lookup(sym, pc, is_return_address, fr, 16);
  return n > 0 && fr[n - 1].module ? fr[n - 1].module : "";
}

static const char *leaf_func(const fl_sampler_record_t *r) {
  return func_of(r->pcs[0], false);
}

typedef struct totals {
  uint64_t records, weight;
  int corrupt; /* fl_sampler_next returned -1 */
} totals_t;

static totals_t sum_all(const void *buf, size_t bytes) {
  totals_t t = {0};
  size_t pos = 0;
  fl_sampler_record_t r;
  int rc;
  while ((rc = fl_sampler_next(buf, bytes, &pos, &r)) == 1) {
    t.records++;
    t.weight += r.weight;
  }
  t.corrupt = rc < 0;
  return t;
}

/* Weight of the records whose leaf is in function name. */
static uint64_t weight_in(const char *name) {
  uint64_t w = 0;
  size_t pos = 0;
  fl_sampler_record_t r;
  while (fl_sampler_next(main_buf, main_bytes, &pos, &r) == 1)
    if (!strcmp(leaf_func(&r), name)) w += r.weight;
  return w;
}

static const fl_sampler_header_t *header(void) {
  return main_buf;
}

static void start(uint64_t interval_ns) {
  char err[256] = "";
  fl_sampler_reset();
  int rc = fl_sampler_start(interval_ns, 7, err, sizeof err);
  if (rc != 0) fprintf(stderr, "fl_sampler_start: %s\n", err);
  CHECK(rc == 0);
}

static const char *source_name(uint64_t s) {
  return s == FL_SAMPLER_SOURCE_PERF_TASK_CLOCK ? "perf-task-clock"
         : s == FL_SAMPLER_SOURCE_CPU_TIMER     ? "cpu-timer"
                                                : "none";
}

#define CHECK_NEAR(got, want, tol)                                                                 \
  do {                                                                                             \
    double g__ = (got), w__ = (want), t__ = (tol);                                                 \
    test_checks++;                                                                                 \
    if (!(g__ >= w__ - t__ && g__ <= w__ + t__)) {                                                 \
      test_failures++;                                                                             \
      fprintf(stderr, "%s:%d: %s is %.4f, expected %.4f +- %.4f\n", __FILE__, __LINE__, #got, g__, \
              w__, t__);                                                                           \
    }                                                                                              \
  } while (0)

/* ---- 1 and 5: the interval is honoured, weights add up to CPU time ---- */

static void run_interval(uint64_t interval_ns, int64_t cpu_ns, const char *label) {
  int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  start(interval_ns);
  /* Weights cover the CPU time up to the last record; what follows it is
   * not represented: up to one gap between records. A CPU timer fires only
   * at a scheduler tick that finds the thread running, and on a busy
   * machine such ticks are rare: the work goes on until 10 records came
   * (at most 20 times as long), and the bound below is two mean gaps, or
   * 5 %, whichever is wider. */
  burn_cpu(cpu_ns);
  for (int more = 0; sum_all(main_buf, main_bytes).records < 10 && more < 20; more++)
    burn_cpu(cpu_ns);
  uint64_t n = fl_sampler_stop();
  int64_t t = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0, p = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - p0;
  totals_t tot = sum_all(main_buf, main_bytes);
  CHECK(!tot.corrupt);
  CHECK_INT(tot.records, n);
  double cpu_s = (double)t / 1e9;
  double represented = (double)tot.weight * (double)interval_ns;
  fprintf(stderr,
          "  %s: source %s, %llu records in %.3f CPU-s = %.0f records/CPU-s (%.0f expected), "
          "weights x interval = %.4f s (thread CPU %.4f s, process CPU %.4f s)\n",
          label, source_name(header()->source), (unsigned long long)tot.records, cpu_s,
          (double)tot.records / cpu_s, 1e9 / (double)interval_ns, represented / 1e9, cpu_s,
          (double)p / 1e9);
  CHECK(tot.records >= 10);
  double tol = tot.records ? fmax(0.05, 2.0 / (double)tot.records) : 0.05;
  CHECK_NEAR(represented / (double)t, 1.0, tol);
  CHECK_NEAR(represented / (double)p, 1.0, tol);
  CHECK(header()->dropped == 0);
  CHECK(header()->interval_ns == interval_ns);

  /* The leaf is the interrupted instruction in the workload (the handler
   * and the signal trampoline are never part of a stack), and the stack
   * goes on to this function's caller. */
  uint64_t in_burn = 0, with_handler = 0, complete = 0;
  size_t pos = 0;
  fl_sampler_record_t r;
  while (fl_sampler_next(main_buf, main_bytes, &pos, &r) == 1) {
    CHECK_INT(r.tag, 7);
    CHECK_INT(r.tid, gettid_());
    if (!strcmp(leaf_func(&r), "tsamp_burn")) in_burn++;
    for (size_t i = 0; i < r.n_pcs; i++) {
      const char *f = func_of(r.pcs[i], i > 0);
      if (strstr(f, "sample_handler") || strstr(f, "restore_rt")) with_handler++;
      if (!strcmp(f, "run_interval")) complete++;
    }
  }
  /* At least 95% of the records, less three binomial standard
   * deviations: a CPU timer's few records on a busy machine (19 in one
   * run) come on the tick, often on the way out of burn_cpu's clock reads,
   * and one or two of them outside tsamp_burn is chance, not a wrong leaf. */
  double records = (double)tot.records;
  double least = 0.95 * records - 3 * sqrt(0.05 * 0.95 * records);
  CHECK((double)in_burn >= least);
  CHECK_INT(with_handler, 0);
  CHECK((double)complete >= least);
}

static void test_interval(void) {
  fprintf(stderr, "1. interval honoured, weights = CPU time\n");
  run_interval(1 * MS, 1000 * MS, "1 ms");
  CHECK(header()->source == FL_SAMPLER_SOURCE_PERF_TASK_CLOCK);
  /* About 1,000 records per CPU-second (fewer where the host steals the
   * virtual CPU: the timer then fires early in CPU time and the sample
   * joins the next one). */
  CHECK(header()->samples >= 850);
  run_interval(MS / 10, 400 * MS, "0.1 ms");
  CHECK(header()->samples >= 3000);
  setenv("CFLAME_SAMPLER_SOURCE", "perf-async", 1);
  run_interval(1 * MS, 300 * MS, "1 ms, perf O_ASYNC");
  CHECK(header()->source == FL_SAMPLER_SOURCE_PERF_TASK_CLOCK);
  setenv("CFLAME_SAMPLER_SOURCE", "timer", 1);
  run_interval(1 * MS, 400 * MS, "1 ms, CPU timer");
  CHECK(header()->source == FL_SAMPLER_SOURCE_CPU_TIMER);
  run_interval(MS / 10, 300 * MS, "0.1 ms, CPU timer");
  unsetenv("CFLAME_SAMPLER_SOURCE");
}

/* ---- 2 and 3: a 1:3 split, unaliased and aliased ---- */

static double b_share(void) {
  double wa = (double)weight_in("tsamp_a"), wb = (double)weight_in("tsamp_b");
  return wa + wb > 0 ? 100.0 * wb / (wa + wb) : 0;
}

/* How far b's share (in points) may be from its truth before it is
 * evidence of a bias, from the records themselves: 4 standard deviations
 * of a ratio of weighted records, and a record's worth. Records are not
 * independent: with the pair's period equal to the interval, consecutive
 * samples' phases in the pair are a random walk; and a handler that takes
 * a good part of an interval (ASan, a loaded machine) makes the next
 * sample more likely to land in the same call. So the deviation is
 * estimated from batch means (the records in order, cut into BATCHES runs
 * whose shares vary as much as those correlations make them), and never
 * below what independent records would give. */
static double b_share_bound(void) {
  enum { BATCHES = 40 };
  double w_of[BATCHES] = {0}, wb_of[BATCHES] = {0};
  double sum_w = 0, sum_wb = 0, n = 0;
  size_t pos = 0, records = 0;
  fl_sampler_record_t r;
  while (fl_sampler_next(main_buf, main_bytes, &pos, &r) == 1) records++;
  pos = 0;
  for (size_t i = 0; fl_sampler_next(main_buf, main_bytes, &pos, &r) == 1; i++) {
    const char *leaf = leaf_func(&r);
    bool in_b = !strcmp(leaf, "tsamp_b");
    if (!in_b && strcmp(leaf, "tsamp_a")) continue;
    size_t batch = i * BATCHES / records;
    double w = (double)r.weight;
    w_of[batch] += w;
    wb_of[batch] += in_b ? w : 0;
    sum_w += w;
    sum_wb += in_b ? w : 0;
    n++;
  }
  if (n == 0) return 0;
  double p = sum_wb / sum_w, batch_w = sum_w / BATCHES, between = 0;
  for (int k = 0; k < BATCHES; k++) {
    double d = (wb_of[k] - p * w_of[k]) / batch_w;
    between += d * d;
  }
  double sd_batches = __builtin_sqrt(between / (BATCHES - 1) / BATCHES);
  double sd_independent = __builtin_sqrt(p * (1 - p) / n);
  double sd = sd_batches > sd_independent ? sd_batches : sd_independent;
  return 100.0 * (4.0 * sd + 1.0 / n);
}

/* Runs tsamp_a(n); tsamp_b(n) under the sampler for cpu_ns of thread CPU
 * and returns b's share of the CPU the calls took, measured call by call
 * in this run: the truth the samples are held to. A share measured in
 * another run can differ by more than the samples' own error, since what
 * a call costs moves with the machine's load, ASan and the cache the
 * signal handler leaves behind. Each call's interval holds about one
 * clock read, which the samples put outside a and b; its cost, measured
 * first, is taken off. */
static double run_split(uint64_t interval_ns, uint64_t n, int64_t cpu_ns) {
  int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  for (int k = 0; k < 10000; k++) clock_ns(CLOCK_THREAD_CPUTIME_ID);
  double clock_cost = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / 10001;
  double in_a = 0, in_b = 0;
  long calls = 0;
  start(interval_ns);
  int64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + cpu_ns;
  int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  while (t0 < end) {
    tsamp_a(n);
    int64_t t1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    tsamp_b(n);
    int64_t t2 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    in_a += (double)(t1 - t0);
    in_b += (double)(t2 - t1);
    calls++;
    t0 = t2;
  }
  fl_sampler_stop();
  in_a -= (double)calls * clock_cost;
  in_b -= (double)calls * clock_cost;
  return 100.0 * in_b / (in_a + in_b);
}

/* b's sampled share against the share measured in the same run, within
 * what the records can tell. */
static void check_b_share(double truth, const char *what) {
  double share = b_share(), bound = b_share_bound();
  fprintf(stderr, "  %s: b's share %.2f%% (%.2f measured, bound %.2f), %llu records\n", what,
          share, truth, bound, (unsigned long long)header()->samples);
  CHECK(truth > 70 && truth < 80); /* the calls are 1:3 */
  CHECK_NEAR(share, truth, bound);
}

static void test_split(double ns_per_it) {
  fprintf(stderr, "2. 1:3 split\n");
  uint64_t n = (uint64_t)(30000 / ns_per_it); /* a: 30 us, b: 90 us */
  double truth = run_split(MS / 10, n, 1000 * MS);
  check_b_share(truth, "0.1 ms");
}

/* CPU ns of one tsamp_a(n) + tsamp_b(n) pair: the best of a few batches
 * (a batch the host interrupts runs long). */
static double pair_ns(uint64_t n) {
  double best = 1e30;
  for (int round = 0; round < 5; round++) {
    int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int k = 0; k < 100; k++) {
      tsamp_a(n);
      tsamp_b(n);
    }
    double t = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / 100;
    if (t < best) best = t;
  }
  return best;
}

/* The a+b pair takes exactly one interval of CPU: without jitter every
 * sample would fall at the same point of the pair. With it, consecutive
 * samples' phases in the pair are a random walk, which spreads the share
 * up to 1.35 times as wide as independent samples would
 * (bench/alias_sim.py): the bound's batch means see that spread. */
static void test_aliasing(double ns_per_it) {
  fprintf(stderr, "3. aliasing: workload period = interval\n");
  uint64_t interval = MS / 10;
  uint64_t n = (uint64_t)((double)interval / 4 / ns_per_it);
  for (int round = 0; round < 2; round++) n = (uint64_t)((double)n * (double)interval / pair_ns(n));
  double pair = pair_ns(n);
  double truth = run_split(interval, n, 1500 * MS);
  char what[64];
  snprintf(what, sizeof what, "pair period %.1f us, interval %.1f us", pair / 1e3,
           (double)interval / 1e3);
  check_b_share(truth, what);
}

/* ---- 4 and 5: two threads, 3:1 ---- */

typedef struct worker {
  uint64_t n;
  int tid;
  int64_t cpu_ns;
  pthread_barrier_t *barrier;
} worker_t;

static void *thread_main(void *p) {
  worker_t *w = p;
  fl_sampler_thread_enter();
  w->tid = gettid_();
  pthread_barrier_wait(w->barrier);
  int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  for (int k = 0; k < 100; k++) tsamp_thread_work(w->n / 100);
  w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
  fl_sampler_thread_exit();
  return NULL;
}

static void test_threads(double ns_per_it) {
  fprintf(stderr, "4. two threads, 75/25; 5. total weight = process CPU\n");
  uint64_t unit = (uint64_t)(300e6 / ns_per_it); /* 0.3 s */
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, 3);
  worker_t wa = {.n = 3 * unit, .barrier = &barrier}, wb = {.n = unit, .barrier = &barrier};
  int64_t p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  start(1 * MS);
  pthread_t ta, tb;
  pthread_create(&ta, NULL, thread_main, &wa);
  pthread_create(&tb, NULL, thread_main, &wb);
  pthread_barrier_wait(&barrier);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  fl_sampler_stop();
  int64_t p = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - p0;
  pthread_barrier_destroy(&barrier);

  uint64_t w_a = 0, w_b = 0, w_other = 0, in_work = 0, records = 0;
  size_t pos = 0;
  fl_sampler_record_t r;
  while (fl_sampler_next(main_buf, main_bytes, &pos, &r) == 1) {
    records++;
    if (r.tid == wa.tid)
      w_a += r.weight;
    else if (r.tid == wb.tid)
      w_b += r.weight;
    else
      w_other += r.weight;
    if ((r.tid == wa.tid || r.tid == wb.tid) && !strcmp(leaf_func(&r), "tsamp_thread_work"))
      in_work++;
  }
  /* The truth is the CPU each thread measured: A does three times B's
   * iterations, but the two share caches (and, on some machines, a core)
   * while both run and A finishes alone, so its share of the CPU can sit
   * several points under 75. */
  double share_a = 100.0 * (double)w_a / (double)(w_a + w_b);
  double cpu_share_a = 100.0 * (double)wa.cpu_ns / (double)(wa.cpu_ns + wb.cpu_ns);
  double total_s = (double)(w_a + w_b + w_other) * 1e-3;
  fprintf(stderr,
          "  thread A (tid %d) %.2f%% of the weight (%.2f%% of the CPU; its CPU %.3f s, weights %.3f s), "
          "thread B (tid %d) CPU %.3f s, weights %.3f s; other threads %.3f s\n"
          "  total weight x interval %.4f s, process CPU %.4f s\n",
          wa.tid, share_a, cpu_share_a, (double)wa.cpu_ns / 1e9, (double)w_a * 1e-3, wb.tid,
          (double)wb.cpu_ns / 1e9, (double)w_b * 1e-3, (double)w_other * 1e-3, total_s,
          (double)p / 1e9);
  CHECK(cpu_share_a > 60.0 && cpu_share_a < 90.0); /* A did the larger part */
  CHECK_NEAR(share_a, cpu_share_a, 3.0);
  CHECK_NEAR((double)w_a * 1e6 / (double)wa.cpu_ns, 1.0, 0.05);
  CHECK_NEAR((double)w_b * 1e6 / (double)wb.cpu_ns, 1.0, 0.05);
  CHECK_NEAR(total_s * 1e9 / (double)p, 1.0, 0.05);
  CHECK(in_work >= records * 90 / 100);
}

/* ---- l: reading while the sampler writes (the kernel's live graphs) ---- */

/* What a record is, as a reader sees it: where it starts, its thread, time
 * and stack (its weight left out: a thread's last one is raised at stop,
 * fl_sampler.h). */
static uint64_t record_key(size_t pos, const fl_sampler_record_t *r) {
  uint64_t h = 1469598103934665603ull;
  uint64_t words[5] = {pos, (uint64_t)r->tid, r->wait, r->time_ns, r->n_pcs};
  for (size_t i = 0; i < 5 + r->n_pcs; i++) {
    h ^= i < 5 ? words[i] : r->pcs[i - 5];
    h *= 1099511628211ull;
  }
  return h;
}

#define LIVE_READS 400
#define LIVE_MAX_RECORDS 20000

static void test_live_reads(double ns_per_it) {
  fprintf(stderr, "l. reads while two threads are sampled: whole records, a prefix of the end's\n");
  uint64_t unit = (uint64_t)(200e6 / ns_per_it); /* 0.2 s */
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, 3);
  worker_t wa = {.n = 3 * unit, .barrier = &barrier}, wb = {.n = 3 * unit, .barrier = &barrier};
  static uint64_t seen[LIVE_READS][LIVE_MAX_RECORDS];
  static size_t n_seen[LIVE_READS];
  size_t reads = 0, bad = 0;
  start(1 * MS);
  pthread_t ta, tb;
  pthread_create(&ta, NULL, thread_main, &wa);
  pthread_create(&tb, NULL, thread_main, &wb);
  pthread_barrier_wait(&barrier);
  /* The main thread reads as the kernel does, while both threads run. */
  bool joined_a = false;
  while (reads < LIVE_READS && !(joined_a = pthread_tryjoin_np(ta, NULL) == 0)) {
    size_t pos = 0, at = 0, n = 0;
    fl_sampler_record_t r;
    int rc;
    while ((rc = fl_sampler_next_any(main_buf, main_bytes, &pos, &r)) == 1) {
      if (n < LIVE_MAX_RECORDS) seen[reads][n++] = record_key(at, &r);
      at = pos;
    }
    bad += rc != 0;
    n_seen[reads++] = n;
    usleep(1000);
  }
  if (!joined_a) pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  fl_sampler_stop();
  pthread_barrier_destroy(&barrier);
  /* The end's records, in buffer order. */
  static uint64_t end[LIVE_MAX_RECORDS];
  size_t n_end = 0, pos = 0, at = 0;
  fl_sampler_record_t r;
  while (fl_sampler_next_any(main_buf, main_bytes, &pos, &r) == 1) {
    if (n_end < LIVE_MAX_RECORDS) end[n_end++] = record_key(at, &r);
    at = pos;
  }
  size_t not_prefix = 0, shrank = 0;
  for (size_t i = 0; i < reads; i++) {
    if (i && n_seen[i] < n_seen[i - 1]) shrank++;
    if (n_seen[i] > n_end || memcmp(seen[i], end, n_seen[i] * sizeof *end) != 0) not_prefix++;
  }
  fprintf(stderr, "  %zu reads while sampling (%zu to %zu records), %zu at the end\n", reads,
          reads ? n_seen[0] : 0, reads ? n_seen[reads - 1] : 0, n_end);
  CHECK(reads >= 10);
  CHECK(n_end > 100 && n_end < LIVE_MAX_RECORDS);
  CHECK(bad == 0);        /* never a torn or corrupt record */
  CHECK(not_prefix == 0); /* each read is the start of what the run holds */
  CHECK(shrank == 0);
  CHECK(reads && n_seen[reads - 1] > 0);
}

/* ---- t: time stamps and thread names ---- */

static void *named_thread(void *p) {
  fl_sampler_thread_enter();
  pthread_setname_np(pthread_self(), "tsamp-named"); /* after it registered, as programs do */
  *(int *)p = gettid_();
  burn_cpu(50 * MS);
  fl_sampler_thread_exit(); /* while sampling runs: its name is read now */
  return NULL;
}

/* Every record carries the CLOCK_MONOTONIC time it was taken, within the
 * run and in order on each thread; a thread that named itself has its
 * name recorded as it unregisters, the others' when sampling stops. */
static void test_time_and_names(void) {
  fprintf(stderr, "t. time stamps and thread names\n");
  int64_t t0 = clock_ns(CLOCK_MONOTONIC);
  start(1 * MS);
  int named_tid = 0;
  pthread_t th;
  pthread_create(&th, NULL, named_thread, &named_tid);
  burn_cpu(50 * MS);
  pthread_join(th, NULL);
  fl_sampler_stop();
  int64_t t1 = clock_ns(CLOCK_MONOTONIC);
  uint64_t last_main = 0, last_named = 0, samples = 0, bad_time = 0, out_of_order = 0;
  bool named = false, main_named = false;
  size_t pos = 0;
  fl_sampler_record_t r;
  while (fl_sampler_next_any(main_buf, main_bytes, &pos, &r) == 1) {
    if (r.n_pcs == 0) {
      named |= r.tid == named_tid && !strcmp(r.thread_name, "tsamp-named");
      main_named |= r.tid == gettid_() && r.thread_name[0];
      continue;
    }
    samples++;
    if ((int64_t)r.time_ns < t0 || (int64_t)r.time_ns > t1) bad_time++;
    uint64_t *last = r.tid == named_tid ? &last_named : &last_main;
    if (r.time_ns < *last) out_of_order++;
    *last = r.time_ns;
  }
  fprintf(stderr, "  %llu samples over %.3f s; named thread %s, main thread %s\n",
          (unsigned long long)samples, (double)(t1 - t0) / 1e9, named ? "named" : "unnamed",
          main_named ? "named" : "unnamed");
  CHECK(samples > 20);
  CHECK_INT(bad_time, 0);
  CHECK_INT(out_of_order, 0);
  CHECK(named);
  CHECK(main_named);
}

/* ---- w: clock wall counts time runnable, waiting for a CPU ---- */

/* 300 ms of CPU beside twice as many spinning processes as cores, on
 * clock wall: the thread's CPU records and its runnable ones
 * (FL_SAMPLER_WAIT_RUNNABLE, in the code it ran: tsamp_burn) add up to
 * the wall time it measured, within 2% and an interval, and the runnable
 * ones to the run delay it measured within as much. */
static void test_runnable(void) {
  CHECK(fl_sampler_wait_call(FL_SAMPLER_WAIT_RUNNABLE) == NULL);
  CHECK(!strcmp(fl_sampler_wait_reason(FL_SAMPLER_WAIT_RUNNABLE), "runnable"));
  if (test_run_delay_ns() < 0) {
    fprintf(stderr, "  runnable: no /proc/thread-self/schedstat here: not tested\n");
    return;
  }
  long n_busy = 2 * sysconf(_SC_NPROCESSORS_ONLN);
  pid_t busy[64];
  if (n_busy > 64) n_busy = 64;
  for (long i = 0; i < n_busy; i++)
    if ((busy[i] = fork()) == 0)
      for (;;) __asm__ volatile("");
  fl_sampler_set_clock(FL_SAMPLER_CLOCK_WALL);
  start(MS);
  int64_t w0 = clock_ns(CLOCK_MONOTONIC), d0 = test_run_delay_ns();
  burn_cpu(300 * (int64_t)MS);
  int64_t w1 = clock_ns(CLOCK_MONOTONIC), d1 = test_run_delay_ns();
  fl_sampler_stop();
  fl_sampler_set_clock(FL_SAMPLER_CLOCK_CPU);
  for (long i = 0; i < n_busy; i++) kill(busy[i], SIGKILL);
  for (long i = 0; i < n_busy; i++) waitpid(busy[i], NULL, 0);
  uint64_t cpu = 0, runnable = 0, runnable_in_burn = 0, other = 0, after_its_sample = 0;
  uint64_t cpu_time = 0, cpu_weight = 0; /* the CPU record before */
  size_t pos = 0;
  fl_sampler_record_t r;
  int me = gettid_();
  uint64_t foreign = 0;
  while (fl_sampler_next(main_buf, main_bytes, &pos, &r) == 1) {
    if (r.tid != me) {
      foreign++;
      continue;
    }
    if (r.wait == 0) {
      cpu += r.weight;
      cpu_time = r.time_ns;
      cpu_weight = r.weight;
    } else if (r.wait == FL_SAMPLER_WAIT_RUNNABLE) {
      runnable += r.weight;
      /* A time line draws it before its sample's intervals, not over them
       * (but for the tail, written when sampling stopped). */
      if (r.time_ns != cpu_time - cpu_weight * MS) {
        after_its_sample++;
        fprintf(stderr, "  runnable record of %llu at %llu, after a CPU record of %llu at %llu\n",
                (unsigned long long)r.weight, (unsigned long long)r.time_ns,
                (unsigned long long)cpu_weight, (unsigned long long)cpu_time);
      }
      /* Every address a return address: the leaf's is its instruction + 1. */
      if (!strcmp(func_of(r.pcs[0], true), "tsamp_burn")) runnable_in_burn += r.weight;
    } else {
      other += r.weight;
    }
  }
  double wall = (double)(w1 - w0) / 1e6, delay = (double)(d1 - d0) / 1e6; /* ms */
  fprintf(stderr,
          "  runnable: %ld busy processes; %.1f ms wall, %.1f ms run delay measured; records: "
          "%llu ms CPU, %llu ms runnable (%llu in tsamp_burn), %llu ms waits\n",
          n_busy, wall, delay, (unsigned long long)cpu, (unsigned long long)runnable,
          (unsigned long long)runnable_in_burn, (unsigned long long)other);
  CHECK(delay >= 0.2 * wall); /* the spinning processes made it wait */
  CHECK_NEAR((double)(cpu + runnable + other), wall, 0.02 * wall + 1);
  CHECK_NEAR((double)runnable, delay, 0.02 * wall + 1);
  /* Not 95% as CPU records (test 1): a thread is preempted more often on
   * its way out of a system call (burn_cpu's clock reads) than elsewhere. */
  CHECK(runnable_in_burn >= runnable * 90 / 100);
  /* But for the last two: stopping gives the thread's last CPU record the
   * CPU time since it was taken (fl_sampler_timer.c), after its runnable
   * record was placed by its weight then; and the tail's runnable record
   * comes after it. They are listed above. */
  CHECK(after_its_sample <= 2);
  CHECK_INT(foreign, 0);
}

/* ---- o: clock wall counts the time no clock and no wrapper sees ---- */

/* A thread that computes, then waits 200 ms in a raw system call (which
 * no wrapper times), then computes again, on clock wall: its CPU,
 * runnable and other records (FL_SAMPLER_WAIT_OTHER) add up to the wall
 * time it measured, within 2% and an interval; the other ones hold the
 * wait, as long as the thread measured it (less its run delay when it
 * woke, which is runnable time) within as much; and each names only the
 * thread's outermost frame, since where the thread waited is not known. */
static void test_other(void) {
  CHECK(fl_sampler_wait_call(FL_SAMPLER_WAIT_OTHER) == NULL);
  CHECK(!strcmp(fl_sampler_wait_reason(FL_SAMPLER_WAIT_OTHER), "other"));
  if (test_run_delay_ns() < 0) {
    fprintf(stderr, "  other: no /proc/thread-self/schedstat here: not tested\n");
    return;
  }
  fl_sampler_set_clock(FL_SAMPLER_CLOCK_WALL);
  start(MS);
  int64_t w0 = clock_ns(CLOCK_MONOTONIC), d0 = test_run_delay_ns(),
          c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  burn_cpu(50 * (int64_t)MS);
  int64_t s0 = clock_ns(CLOCK_MONOTONIC), sd0 = test_run_delay_ns(),
          sc0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  struct timespec nap = {0, 200000000};
  while (syscall(SYS_nanosleep, &nap, &nap) != 0 && errno == EINTR) continue;
  int64_t s1 = clock_ns(CLOCK_MONOTONIC), sd1 = test_run_delay_ns(),
          sc1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  burn_cpu(50 * (int64_t)MS);
  int64_t w1 = clock_ns(CLOCK_MONOTONIC), d1 = test_run_delay_ns(),
          c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  fl_sampler_stop();
  fl_sampler_set_clock(FL_SAMPLER_CLOCK_CPU);
  uint64_t cpu = 0, runnable = 0, other = 0, waits = 0, deep = 0;
  size_t pos = 0;
  fl_sampler_record_t r;
  int me = gettid_();
  while (fl_sampler_next(main_buf, main_bytes, &pos, &r) == 1) {
    if (r.tid != me) continue;
    if (r.wait == 0) {
      cpu += r.weight;
    } else if (r.wait == FL_SAMPLER_WAIT_RUNNABLE) {
      runnable += r.weight;
    } else if (r.wait == FL_SAMPLER_WAIT_OTHER) {
      other += r.weight;
      if (r.n_pcs != 1) deep++;
    } else {
      waits += r.weight;
    }
  }
  /* ms: the thread's wall, CPU time and run delay, and the nap's wall
   * time less its run delay and CPU time. */
  double wall = (double)(w1 - w0) / 1e6, ran = (double)(c1 - c0) / 1e6,
         delay = (double)(d1 - d0) / 1e6;
  double napped = (double)((s1 - s0) - (sd1 - sd0) - (sc1 - sc0)) / 1e6;
  fprintf(stderr,
          "  other: %.1f ms wall, %.1f ms CPU, %.1f ms run delay, a nap of %.1f ms measured; "
          "records: %llu ms CPU, %llu ms runnable, %llu ms other, %llu ms waits\n",
          wall, ran, delay, napped, (unsigned long long)cpu, (unsigned long long)runnable,
          (unsigned long long)other, (unsigned long long)waits);
  CHECK_NEAR((double)(cpu + runnable + other + waits), wall, 0.02 * wall + 1);
  CHECK_NEAR((double)cpu, ran, 0.02 * wall + 1);
  CHECK_NEAR((double)other, napped, 0.02 * wall + 1);
  CHECK(napped >= 199);
  CHECK_INT(deep, 0);
  CHECK_INT(waits, 0);
}

/* ---- 6: no EINTR ---- */

typedef struct pipe_writer {
  int fd;
} pipe_writer_t;

static void *write_later(void *p) {
  pipe_writer_t *w = p;
  fl_sampler_thread_enter();
  usleep(100000);
  ssize_t n = write(w->fd, "data", 4);
  (void)n;
  fl_sampler_thread_exit();
  return NULL;
}

static void run_no_eintr(uint64_t interval_ns) {
  start(interval_ns);
  int64_t w0 = clock_ns(CLOCK_MONOTONIC);
  int failed_sleeps = 0;
  for (int i = 0; i < 10; i++) {
    burn_cpu(3 * (int64_t)interval_ns); /* the timer is near expiry as the sleep starts */
    if (usleep(20000) != 0) failed_sleeps++;
  }
  int64_t slept = clock_ns(CLOCK_MONOTONIC) - w0;

  int fds[2];
  CHECK(pipe(fds) == 0);
  pipe_writer_t pw = {fds[1]};
  pthread_t t;
  pthread_create(&t, NULL, write_later, &pw);
  burn_cpu(3 * (int64_t)interval_ns);
  char got[8] = "";
  ssize_t n = read(fds[0], got, sizeof got);
  int read_errno = n < 0 ? errno : 0;
  pthread_join(t, NULL);

  int failed_polls = 0;
  for (int i = 0; i < 4; i++) {
    burn_cpu(3 * (int64_t)interval_ns);
    struct pollfd pf = {.fd = fds[0], .events = POLLIN};
    if (poll(&pf, 1, 25) != 0) failed_polls++;
  }
  close(fds[0]);
  close(fds[1]);
  uint64_t samples = fl_sampler_stop();
  fprintf(stderr,
          "  %.1f ms (%s): 10 x usleep(20000): %d failed, %.1f ms wall; read: %zd bytes%s%s; "
          "4 x poll(25 ms): %d failed; %llu samples\n",
          (double)interval_ns / 1e6, getenv("CFLAME_SAMPLER_SOURCE") ?: "default", failed_sleeps,
          (double)slept / 1e6, n, read_errno ? ", " : "", read_errno ? strerror(read_errno) : "",
          failed_polls, (unsigned long long)samples);
  CHECK_INT(failed_sleeps, 0);
  CHECK(slept >= 200 * (int64_t)MS);
  CHECK_INT(n, 4);
  CHECK(memcmp(got, "data", 4) == 0);
  CHECK_INT(failed_polls, 0);
  /* The tick-driven CPU timer may not fire in the few ms of CPU used here. */
  if (header()->source == FL_SAMPLER_SOURCE_PERF_TASK_CLOCK) CHECK(samples > 0);
}

static void test_no_eintr(void) {
  fprintf(stderr, "6. no EINTR in sleeps, reads and polls\n");
  run_no_eintr(1 * MS);
  run_no_eintr(MS / 10);
  /* The other timer kinds too. */
  setenv("CFLAME_SAMPLER_SOURCE", "perf-async", 1);
  run_no_eintr(MS / 10);
  setenv("CFLAME_SAMPLER_SOURCE", "timer", 1);
  run_no_eintr(MS / 10);
  unsetenv("CFLAME_SAMPLER_SOURCE");
}

/* ---- 7: stacks through the C library ---- */

__attribute__((noipa)) int tsamp_cmp(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

__attribute__((noipa)) void tsamp_sort_all(int *v, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = (int)(seed >> 33);
  }
  qsort(v, n, sizeof *v, tsamp_cmp);
  sink += (uint64_t)v[n / 2]; /* not a tail call: this frame stays on the stack */
}

static void test_qsort(void) {
  fprintf(stderr, "7. qsort comparator under qsort, under its caller\n");
  size_t n = 1u << 20;
  int *v = malloc(n * sizeof *v);
  start(MS / 5);
  int64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + 600 * (int64_t)MS;
  for (uint64_t seed = 1; clock_ns(CLOCK_THREAD_CPUTIME_ID) < end; seed++)
    tsamp_sort_all(v, n, seed);
  fl_sampler_stop();
  free(v);

  uint64_t with_cmp = 0, through_libc = 0;
  size_t pos = 0;
  fl_sampler_record_t r;
  const char *example = NULL;
  while (fl_sampler_next(main_buf, main_bytes, &pos, &r) == 1) {
    size_t i_cmp = r.n_pcs, i_caller = r.n_pcs;
    for (size_t i = 0; i < r.n_pcs; i++) {
      const char *f = func_of(r.pcs[i], i > 0);
      if (i_cmp == r.n_pcs && !strcmp(f, "tsamp_cmp")) i_cmp = i;
      if (i_caller == r.n_pcs && !strcmp(f, "tsamp_sort_all")) i_caller = i;
    }
    if (i_cmp == r.n_pcs) continue;
    with_cmp++;

    bool libc_between = false;
    for (size_t i = i_cmp + 1; i < i_caller && i < r.n_pcs; i++)
      if (strstr(module_of(r.pcs[i], true), "libc.so")) libc_between = true;
    if (libc_between && i_caller < r.n_pcs && i_caller > i_cmp) {
      through_libc++;
      if (!example) example = func_of(r.pcs[i_cmp + 1], true);
    }
  }
  fprintf(stderr, "  %llu of %llu samples in the comparator go through libc (%s) to the caller\n",
          (unsigned long long)through_libc, (unsigned long long)with_cmp, example ? example : "-");
  CHECK(with_cmp > 50);
  CHECK(through_libc >= with_cmp * 90 / 100);
}

/* ---- r: fl_sampler_call, the root of sampled stacks; the modes ---- */

__attribute__((noipa)) void tsamp_rooted(uint64_t n) {
  CHAIN(n);
  __asm__ volatile(""); /* not a tail call */
}

static void rooted_work(void *arg) {
  int64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + *(int64_t *)arg;
  while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end) tsamp_rooted(200000);
}

/* Runs rooted_work for cpu_ns through fl_sampler_call in the given mode;
 * returns the thread's CPU time it took. */
static int64_t run_rooted(fl_sampler_mode_t mode, int64_t cpu_ns) {
  fl_sampler_set_mode(mode);
  int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  start(MS / 5);
  fl_sampler_call(rooted_work, &cpu_ns);
  fl_sampler_stop();
  fl_sampler_set_mode(FL_SAMPLER_STACKS);
  return clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
}

static void test_root(void) {
  fprintf(stderr, "r. fl_sampler_call ends the stacks; leaf-only and signal-only modes\n");
  /* Every stack taken inside fl_sampler_call ends in it: the unwinder stops
   * there, with the frames above it whole. */
  int64_t t = run_rooted(FL_SAMPLER_STACKS, 300 * MS);
  totals_t tot = sum_all(main_buf, main_bytes);
  uint64_t in_rooted = 0, ends_at_root = 0, whole = 0, beyond = 0;
  size_t pos = 0;
  fl_sampler_record_t r;
  while (fl_sampler_next(main_buf, main_bytes, &pos, &r) == 1) {
    if (strcmp(leaf_func(&r), "tsamp_rooted")) continue;
    in_rooted++;
    const char *last = func_of(r.pcs[r.n_pcs - 1], r.n_pcs > 1);
    if (!strcmp(last, "fl_sampler_call")) ends_at_root++;
    if (r.n_pcs == 3 && !strcmp(func_of(r.pcs[1], true), "rooted_work")) whole++;
    for (size_t i = 0; i < r.n_pcs; i++)
      if (!strcmp(func_of(r.pcs[i], i > 0), "run_rooted")) beyond++;
  }
  fprintf(stderr,
          "  stacks: %llu of %llu records in tsamp_rooted, %llu end at the root, "
          "%llu are tsamp_rooted < rooted_work < fl_sampler_call\n",
          (unsigned long long)in_rooted, (unsigned long long)tot.records,
          (unsigned long long)ends_at_root, (unsigned long long)whole);
  CHECK(in_rooted >= tot.records * 95 / 100);
  CHECK_INT(ends_at_root, in_rooted);
  CHECK_INT(whole, in_rooted);
  CHECK_INT(beyond, 0);
  CHECK_NEAR((double)tot.weight * (double)(MS / 5) / (double)t, 1.0, 0.05);

  /* Leaf only: one address a record, the interrupted instruction, and
   * weights that still add up to the CPU time. */
  t = run_rooted(FL_SAMPLER_LEAF_ONLY, 300 * MS);
  tot = sum_all(main_buf, main_bytes);
  uint64_t one = 0;
  in_rooted = 0;
  pos = 0;
  while (fl_sampler_next(main_buf, main_bytes, &pos, &r) == 1) {
    if (r.n_pcs == 1) one++;
    if (!strcmp(leaf_func(&r), "tsamp_rooted")) in_rooted++;
  }
  fprintf(stderr, "  leaf only: %llu records, %llu of one address, %llu in tsamp_rooted\n",
          (unsigned long long)tot.records, (unsigned long long)one, (unsigned long long)in_rooted);
  CHECK(tot.records > 500);
  CHECK_INT(one, tot.records);
  CHECK(in_rooted >= tot.records * 95 / 100);
  CHECK_NEAR((double)tot.weight * (double)(MS / 5) / (double)t, 1.0, 0.05);

  /* Signal only: the timer runs and nothing is recorded. */
  run_rooted(FL_SAMPLER_SIGNAL_ONLY, 100 * MS);
  tot = sum_all(main_buf, main_bytes);
  CHECK_INT(tot.records, 0);
  CHECK(header()->source == FL_SAMPLER_SOURCE_PERF_TASK_CLOCK);

  /* And the next run records whole stacks again. */
  run_rooted(FL_SAMPLER_STACKS, 50 * MS);
  CHECK(header()->samples > 100);
}

/* ---- 8: sampling a thread that allocates and loads libraries ---- */

static volatile int churn_stop;
static char churn_lib[256];

static void *churn(void *p) {
  uint64_t *rounds = p;
  fl_sampler_thread_enter();
  while (!churn_stop) {
    for (int i = 0; i < 64; i++) {
      void *m = malloc((size_t)(16 << (i % 12)));
      memset(m, 1, 16);
      free(m);
    }
    void *h = dlopen(churn_lib, RTLD_NOW | RTLD_LOCAL);
    if (h) dlclose(h);
    (*rounds)++;
  }
  fl_sampler_thread_exit();
  return NULL;
}

static void test_handler_safety(const char *tmpdir) {
  fprintf(stderr, "8. malloc/free and dlopen/dlclose while sampled\n");
  char src[256], cmd[1024];
  snprintf(src, sizeof src, "%s/churn.c", tmpdir);
  snprintf(churn_lib, sizeof churn_lib, "%s/libchurn.so", tmpdir);
  FILE *f = fopen(src, "w");
  if (f) {
    fputs("int churn_value(int x) { return x * 3; }\n", f);
    fclose(f);
  }
  const char *cc = getenv("CC");
  snprintf(cmd, sizeof cmd, "%s -shared -fPIC -o '%s' '%s'", cc && *cc ? cc : "cc", churn_lib, src);
  if (!f || system(cmd) != 0) snprintf(churn_lib, sizeof churn_lib, "libm.so.6");

  uint64_t rounds = 0;
  churn_stop = 0;
  start(MS / 10);
  pthread_t t;
  pthread_create(&t, NULL, churn, &rounds);
  burn_cpu(500 * (int64_t)MS);
  churn_stop = 1;
  pthread_join(t, NULL);
  uint64_t samples = fl_sampler_stop();
  uint64_t main_records = 0, churn_records = 0;
  size_t pos = 0;
  fl_sampler_record_t r;
  while (fl_sampler_next(main_buf, main_bytes, &pos, &r) == 1) {
    if (r.tid == gettid_())
      main_records++;
    else
      churn_records++;
  }
  fprintf(stderr, "  %llu dlopen rounds of %s; %llu samples (%llu of the churning thread)\n",
          (unsigned long long)rounds, churn_lib, (unsigned long long)samples,
          (unsigned long long)churn_records);
  CHECK(rounds > 10);
  CHECK(main_records > 100);
  CHECK(churn_records > 10);
}

/* ---- 9: a full buffer ---- */

static void test_full_buffer(void) {
  fprintf(stderr, "9. full buffer\n");
  char err[256];
  size_t words = 1000;
  size_t bytes = fl_sampler_buffer_bytes(words);
  /* Exactly the size given, so that AddressSanitizer sees any overrun; and
   * a canary after it for the plain build. */
  uint64_t *tiny = malloc(bytes + 64 * sizeof(uint64_t));
  for (int i = 0; i < 64; i++) tiny[bytes / 8 + (size_t)i] = 0xdeadbeefcafef00dull;
  CHECK(fl_sampler_init(tiny, bytes, err, sizeof err) == 0);
  fl_sampler_reset();
  CHECK(fl_sampler_start(MS / 10, 9, err, sizeof err) == 0);
  burn_cpu(200 * (int64_t)MS);
  uint64_t samples = fl_sampler_stop();
  const fl_sampler_header_t *h = (const fl_sampler_header_t *)tiny;
  totals_t t = sum_all(tiny, bytes);
  int canary_ok = 1;
  for (int i = 0; i < 64; i++) canary_ok &= tiny[bytes / 8 + (size_t)i] == 0xdeadbeefcafef00dull;
  fprintf(stderr, "  %llu words: %llu records, %llu dropped, %llu of %llu words used\n",
          (unsigned long long)words, (unsigned long long)t.records, (unsigned long long)h->dropped,
          (unsigned long long)h->used_words, (unsigned long long)h->capacity_words);
  CHECK(!t.corrupt);
  CHECK_INT(t.records, samples);
  CHECK_INT(h->samples, samples);
  CHECK(h->dropped > 0);
  CHECK(h->used_words <= h->capacity_words);
  CHECK(h->capacity_words == words);
  CHECK(canary_ok);
  CHECK(samples > 5);
  CHECK(fl_sampler_init(main_buf, main_bytes, err, sizeof err) == 0);
  free(tiny);
}

/* Pages of [p, p + bytes) in memory. */
static size_t resident_pages(void *p, size_t bytes) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (bytes + page - 1) / page, in = 0;
  unsigned char *vec = malloc(n);
  if (vec && mincore(p, bytes, vec) == 0)
    for (size_t i = 0; i < n; i++) in += vec[i] & 1;
  free(vec);
  return in;
}

/* A buffer that is zeros already (a new mapping, as `cflame record`'s
 * files are) is taken without being cleared: however large, only the
 * pages written to come into memory. */
static void test_zeroed_buffer(void) {
  fprintf(stderr, "9b. zeroed buffer\n");
  char err[256];
  size_t bytes = fl_sampler_buffer_bytes((size_t)1 << 27); /* 1 GiB */
  void *big =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(big != MAP_FAILED);
  if (big == MAP_FAILED) return;
  CHECK(fl_sampler_init_zeroed(big, bytes, err, sizeof err) == 0);
  CHECK(resident_pages(big, bytes) <= 1);
  CHECK(fl_sampler_start(MS, 0, err, sizeof err) == 0);
  burn_cpu(50 * (int64_t)MS);
  uint64_t samples = fl_sampler_stop();
  const fl_sampler_header_t *h = big;
  totals_t t = sum_all(big, bytes);
  CHECK(!t.corrupt);
  CHECK(samples > 5);
  CHECK_INT(t.records, samples);
  CHECK(resident_pages(big, bytes) <= 2 + h->used_words * 8 / (size_t)sysconf(_SC_PAGESIZE));
  CHECK(fl_sampler_init(main_buf, main_bytes, err, sizeof err) == 0);
  munmap(big, bytes);
}

/* A buffer another sampler wrote (a worker that restarted takes the file
 * its predecessor left) is cleared as far as its header says it was used:
 * the records go, the pages past them are not touched. A buffer whose
 * header is not a sampler's is cleared whole. */
static void test_reused_buffer(void) {
  fprintf(stderr, "9c. reused buffer\n");
  char err[256];
  size_t bytes = fl_sampler_buffer_bytes((size_t)1 << 27); /* 1 GiB */
  uint64_t *big =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  CHECK(big != MAP_FAILED);
  if (big == MAP_FAILED) return;
  CHECK(fl_sampler_init_zeroed(big, bytes, err, sizeof err) == 0);
  CHECK(fl_sampler_start(MS, 0, err, sizeof err) == 0);
  burn_cpu(50 * (int64_t)MS);
  CHECK(fl_sampler_stop() > 5);
  const fl_sampler_header_t *h = (const fl_sampler_header_t *)big;
  uint64_t used = h->used_words;
  size_t resident = resident_pages(big, bytes);
  CHECK(fl_sampler_init(big, bytes, err, sizeof err) == 0);
  CHECK(resident_pages(big, bytes) == resident);
  CHECK(h->magic == FL_SAMPLER_MAGIC && h->used_words == 0 && h->samples == 0);
  size_t nonzero = 0;
  for (uint64_t i = 0; i < used + 512; i++) nonzero += big[FL_SAMPLER_HEADER_WORDS + i] != 0;
  CHECK_INT(nonzero, 0);
  size_t pos = 0;
  fl_sampler_record_t r;
  CHECK(fl_sampler_next(big, bytes, &pos, &r) == 0);
  munmap(big, bytes);

  size_t small = fl_sampler_buffer_bytes(1000);
  uint64_t *junk = malloc(small);
  memset(junk, 0x5a, small);
  CHECK(fl_sampler_init(junk, small, err, sizeof err) == 0);
  nonzero = 0;
  for (size_t i = FL_SAMPLER_HEADER_WORDS; i < small / 8; i++) nonzero += junk[i] != 0;
  CHECK_INT(nonzero, 0);
  CHECK(fl_sampler_init(main_buf, main_bytes, err, sizeof err) == 0);
  free(junk);
}

/* ---- 10: the samples of a crashed process ---- */

static void test_crash(const char *tmpdir) {
  fprintf(stderr, "10. samples survive a crash\n");
  char path[256], err[256];
  snprintf(path, sizeof path, "%s/samples.buf", tmpdir);
  size_t bytes = fl_sampler_buffer_bytes(1u << 16);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0);
  CHECK(ftruncate(fd, (off_t)bytes) == 0);
  close(fd);

  fflush(NULL);
  pid_t child = fork();
  if (child == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    int cfd = open(path, O_RDWR);
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
    if (map == MAP_FAILED || fl_sampler_init(map, bytes, err, sizeof err) < 0) _exit(3);
    fl_sampler_reset();
    if (fl_sampler_start(MS / 10, 10, err, sizeof err) < 0) _exit(4);
    int64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + 200 * (int64_t)MS;
    while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end) tsamp_child_work(20000);
    abort(); /* still sampling */
  }
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);

  fd = open(path, O_RDONLY);
  void *map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  CHECK(map != MAP_FAILED);
  if (map == MAP_FAILED) return;
  uint64_t records = 0, in_work = 0, right_tid = 0;
  size_t pos = 0;
  fl_sampler_record_t r;
  int rc;
  while ((rc = fl_sampler_next(map, bytes, &pos, &r)) == 1) {
    records++;
    if (r.tid == child && r.tag == 10) right_tid++;
    if (!strcmp(leaf_func(&r), "tsamp_child_work")) in_work++;
  }
  fprintf(stderr, "  the crashed child (pid %d) left %llu records, %llu in its workload\n",
          (int)child, (unsigned long long)records, (unsigned long long)in_work);
  CHECK(rc == 0);
  CHECK(records > 100);
  CHECK_INT(right_tid, records);
  CHECK(in_work >= records * 90 / 100);
  munmap(map, bytes);
  unlink(path);
}

/* ---- the reader on bad input ---- */

static void test_reader(void) {
  uint64_t junk[64] = {1, 2, 3};
  size_t pos = 0;
  fl_sampler_record_t r;
  CHECK(fl_sampler_next(junk, sizeof junk, &pos, &r) == -1);
  CHECK(fl_sampler_next(junk, 8, &pos, &r) == -1);
  /* A header whose used_words passes the end. */
  uint64_t b[FL_SAMPLER_HEADER_WORDS + 8] = {FL_SAMPLER_MAGIC, 8, 9};
  CHECK(fl_sampler_next(b, sizeof b, &pos, &r) == -1);
  /* A record longer than the words used. */
  b[2] = FL_SAMPLER_RECORD_WORDS + 1; /* room for one record of one address */
  b[FL_SAMPLER_HEADER_WORDS] = (3ull << 32) | 42;
  CHECK(fl_sampler_next(b, sizeof b, &pos, &r) == -1);
  b[FL_SAMPLER_HEADER_WORDS] = (1ull << 32) | 42;
  CHECK(fl_sampler_next(b, sizeof b, &pos, &r) == 1);
  CHECK_INT(r.tid, 42);
  CHECK_INT(r.n_pcs, 1);
  CHECK(fl_sampler_next(b, sizeof b, &pos, &r) == 0);
}

/* ---- handler cost ---- */

__attribute__((noipa)) void tsamp_deep(int depth, uint64_t n) {
  if (depth > 0)
    tsamp_deep(depth - 1, n);
  else
    tsamp_burn(n);
  __asm__ volatile("");
}

/* CPU time per sample: the same work with and without sampling at 0.1 ms. */
static void report_handler_cost(void) {
  const int reps = 2;
  double best_plain = 1e30, best_sampled = 1e30;
  uint64_t samples = 0;
  for (int k = 0; k < reps; k++) {
    int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < 100; i++) tsamp_deep(20, 200000);
    double plain = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0);
    start(MS / 10);
    t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < 100; i++) tsamp_deep(20, 200000);
    double sampled = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0);
    uint64_t s = fl_sampler_stop();
    if (sampled - plain < best_sampled - best_plain || k == 0) {
      best_plain = plain;
      best_sampled = sampled;
      samples = s;
    }
  }
  fprintf(stderr,
          "  handler cost (stack depth ~25, 0.1 ms): %.2f us CPU per sample "
          "(%.1f%% overhead at 0.1 ms)\n",
          samples ? (best_sampled - best_plain) / 1e3 / (double)samples : 0.0,
          100.0 * (best_sampled - best_plain) / best_plain);
}

/* ---- i: what the profiled code does to the sampler ---- */

/* Closes every perf event descriptor of the process (the sampler's), as
 * a program that closes its descriptors would (with close_them false,
 * only counts them). Returns how many. */
static int close_perf_events(bool close_them) {
  int closed = 0;
  DIR *d = opendir("/proc/self/fd");
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[300], target[64];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (strstr(target, "perf_event") && (!close_them || close(atoi(e->d_name)) == 0)) closed++;
  }
  if (d) closedir(d);
  return closed;
}

/* Bound of a count of 1 ms samples expected to be want_ms: 4 standard
 * deviations of a Poisson count, and two samples. */
static double count_bound(double want_ms) {
  return want_ms + 4 * __builtin_sqrt(want_ms) + 2;
}

/* Burns ms of the thread's CPU; returns the ms it took. */
static int64_t burned_ms(int64_t ms) {
  int64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  burn_cpu(ms * (int64_t)MS);
  return (clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (int64_t)MS;
}

/* Starts sampling every ms, burns 30 ms, then blocks SIGTRAP and SIGPROF
 * (the mask before in *old) and burns 100 ms. Returns the ms burned
 * before. */
static int64_t sampled_then_blocked(sigset_t *old) {
  sigset_t both;
  sigemptyset(&both);
  sigaddset(&both, SIGTRAP);
  sigaddset(&both, SIGPROF);
  start(MS);
  int64_t before = burned_ms(30);
  pthread_sigmask(SIG_BLOCK, &both, old);
  burn_cpu(100 * (int64_t)MS);
  return before;
}

static void test_interference(void) {
  fprintf(stderr, "i. interference\n");
  fl_sampler_interference_t what;
  sigset_t old;

  /* The descriptors closed: the mapped events go on sampling, and nothing
   * is said. Besides the thread's event, the process holds one that keeps
   * the kernel's perf hooks on (fl__sampler_keep_perf_on), open before the
   * run starts. */
  int kept = close_perf_events(false);
  start(MS);
  burn_cpu(30 * (int64_t)MS);
  int closed = close_perf_events(true) - kept;
  int64_t after_ms = burned_ms(60);
  fl_sampler_stop();
  fl_sampler_interference(&what);
  totals_t t = sum_all(main_buf, main_bytes);
  fprintf(stderr, "  closed %d descriptors: %llu records in all, %lld ms after\n", closed,
          (unsigned long long)t.records, (long long)after_ms);
  CHECK(what.closed_threads == 0 && !what.blocked && !what.replaced);
  /* A perf event signals once a period: about as many records as ms of
   * CPU, the 60 after the close among them. (A CPU timer has no
   * descriptor, and signals on the scheduler's tick.) */
  double want = 30.0 + (double)after_ms;
  bool perf = header()->source == FL_SAMPLER_SOURCE_PERF_TASK_CLOCK;
  CHECK(closed == (perf ? 1 : 0));
  if (perf) CHECK(kept == 1);
  if (perf) CHECK((double)t.records >= 2 * want - count_bound(want) - want / 8);

  /* Blocked until the end: the thread's time after is in no record. */
  int64_t before_ms = sampled_then_blocked(&old);
  fl_sampler_stop();
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  fl_sampler_interference(&what);
  uint64_t w = sum_all(main_buf, main_bytes).weight;
  fprintf(stderr, "  blocked %s on %u thread: %llu samples for %lld ms before\n",
          what.blocked ? what.blocked : "nothing", what.blocked_threads, (unsigned long long)w,
          (long long)before_ms);
  CHECK(what.blocked != NULL && what.blocked_threads == 1);
  CHECK((double)w <= count_bound((double)before_ms));

  /* Blocked for a while, then unblocked: where the kernel says the trap
   * came late (si_perf_flags), it is said, and the blocked time is in no
   * record either. */
  int64_t sampled_ms = sampled_then_blocked(&old);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  sampled_ms += burned_ms(30);
  fl_sampler_stop();
  fl_sampler_interference(&what);
  w = sum_all(main_buf, main_bytes).weight;
  fprintf(stderr, "  blocked a while (%s): %llu samples for %lld ms unblocked\n",
          what.blocked ? "said" : "not said by this kernel", (unsigned long long)w,
          (long long)sampled_ms);
  if (what.blocked) CHECK((double)w <= count_bound((double)sampled_ms));

  /* A clean run says nothing. */
  start(MS);
  burn_cpu(10 * (int64_t)MS);
  fl_sampler_stop();
  fl_sampler_interference(&what);
  CHECK(!what.blocked && !what.replaced && what.closed_threads == 0);
}

/* ---- a: each thread's alternate signal stack ---- */

static void *altstack_thread(void *own) {
  stack_t runtime, before, during, after;
  sigaltstack(NULL, &runtime); /* a sanitizer's runtime gives each thread one */
  if (own) {
    stack_t ss = {.ss_sp = own, .ss_size = 65536};
    sigaltstack(&ss, NULL);
  }
  sigaltstack(NULL, &before);
  fl_sampler_thread_enter();
  sigaltstack(NULL, &during);
  fl_sampler_thread_exit();
  sigaltstack(NULL, &after);
  if (!(before.ss_flags & SS_DISABLE)) {
    /* The thread's own (the program's, a runtime's) is kept, before,
     * during and after. */
    CHECK(during.ss_sp == before.ss_sp && after.ss_sp == before.ss_sp);
    CHECK(!(after.ss_flags & SS_DISABLE));
  } else {
    /* One is given for as long as the thread is registered. */
    CHECK(!(during.ss_flags & SS_DISABLE) && during.ss_size >= 65536);
    CHECK(after.ss_flags & SS_DISABLE);
  }
  if (own) sigaltstack(&runtime, NULL); /* the runtime's back, for it to free */
  return NULL;
}

static void test_altstack(void) {
  fprintf(stderr, "a. alternate signal stacks\n");
  stack_t main_ss;
  CHECK(sigaltstack(NULL, &main_ss) == 0 && !(main_ss.ss_flags & SS_DISABLE));
  static char own[65536];
  pthread_t t;
  CHECK(pthread_create(&t, NULL, altstack_thread, NULL) == 0 && pthread_join(t, NULL) == 0);
  CHECK(pthread_create(&t, NULL, altstack_thread, own) == 0 && pthread_join(t, NULL) == 0);
}

/* A deadlock fails the section it happens in (SIGALRM) instead of hanging
 * the test. Per section, not for the whole run: a loaded machine under
 * AddressSanitizer stretches every section, and the whole run with them. */
#define SECTION_S 120

int main(void) {
  alarm(SECTION_S);
  char err[256];
  char tmpdir[] = "/tmp/cflame_test_sampler.XXXXXX";
  CHECK(mkdtemp(tmpdir) != NULL);

  main_bytes = fl_sampler_buffer_bytes(MAIN_WORDS);
  main_buf = mmap(NULL, main_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(main_buf != MAP_FAILED);
  CHECK(fl_sampler_start(MS, 0, err, sizeof err) == -1); /* no buffer yet */
  CHECK(fl_sampler_init(NULL, 0, err, sizeof err) == 0);
  CHECK(fl_sampler_init(main_buf, main_bytes, err, sizeof err) == 0);
  CHECK(fl_sampler_start(100, 0, err, sizeof err) == -1); /* below the floor */
  test_reader();

  double ns_per_it = ns_per_iteration();
  sym = fl_symbolizer_new_from_pid(getpid(), err, sizeof err);
  CHECK(sym != NULL);
  if (!sym) {
    fprintf(stderr, "symbolizer: %s\n", err);
    return TEST_DONE();
  }

  /* CFLAME_TEST_ONLY=27 runs tests 2 and 7 only (0 is test 10, c the
   * handler cost). */
  const char *only = getenv("CFLAME_TEST_ONLY");
#define RUN(k, call) \
  if (!only || strchr(only, k)) (void)alarm(SECTION_S), call
  RUN('1', test_interval());
  RUN('2', test_split(ns_per_it));
  RUN('3', test_aliasing(ns_per_it));
  RUN('4', test_threads(ns_per_it));
  RUN('l', test_live_reads(ns_per_it));
  RUN('t', test_time_and_names());
  RUN('6', test_no_eintr());
  RUN('w', test_runnable());
  RUN('o', test_other());
  RUN('7', test_qsort());
  RUN('r', test_root());
  RUN('8', test_handler_safety(tmpdir));
  RUN('9', test_full_buffer());
  RUN('9', test_zeroed_buffer());
  RUN('9', test_reused_buffer());
  RUN('0', test_crash(tmpdir));
  RUN('i', test_interference());
  RUN('a', test_altstack());
  RUN('c', report_handler_cost());

  fl_symbolizer_destroy(&sym);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return TEST_DONE();
}
