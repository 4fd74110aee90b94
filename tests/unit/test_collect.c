/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for fl_collect: buffers written by hand, in the layouts of
 * fl_sampler.h and fl_allocs.h, whose addresses are this executable's own
 * functions, symbolized for real (fl_symbolizer_new_from_pid on itself).
 * A rule cuts at base_fn and hides hidden_fn; the stacks, the markers of
 * incomplete and too deep stacks, the thread numbers, the root frame, the
 * header's interval and dropped count, and the allocation weights (scaled
 * by the sample rate, live only, by count) are checked. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cflame/fl_allocs.h"
#include "cflame/fl_collect.h"
#include "cflame/fl_sampler.h"
#include "test.h"

__attribute__((noinline, used)) int leaf_fn(int x) {
  return x * 3 + 1;
}
__attribute__((noinline, used)) int hidden_fn(int x) {
  return leaf_fn(x) + 2;
}
__attribute__((noinline, used)) int mid_fn(int x) {
  return hidden_fn(x) * 5;
}
__attribute__((noinline, used)) int base_fn(int x) {
  return mid_fn(x) - 7;
}

/* An address inside fn: its entry + 4 (a return address into it, when the
 * symbolizer looks up address - 1). */
#define IN(fn) ((uint64_t)(uintptr_t)(fn) + 4)

static fl_collect_verdict_t rule(void *ctx, const fl_frame_info_t *info, fl_frame_t *frame) {
  int *calls = ctx;
  (*calls)++;
  if (info->func && !strcmp(info->func, "base_fn")) return FL_COLLECT_BASE;
  if (info->func && !strcmp(info->func, "hidden_fn")) return FL_COLLECT_HIDE;
  frame->flags |= FL_FRAME_CELL;
  return FL_COLLECT_KEEP;
}

/* ---- a sample buffer ---- */

/* Written as a recorder outside the process writes one (fl_samples.c's
 * fl_sampler_buffer_start and fl_sampler_append, fl_attach's writer). */
typedef struct buf {
  uint64_t *w;
  size_t words; /* after the header */
  size_t used;  /* an allocation buffer's words written (allocs_add) */
} buf_t;

static void samples_begin(buf_t *b, size_t words) {
  b->w = calloc(FL_SAMPLER_HEADER_WORDS + words, 8);
  b->words = words;
  CHECK_INT(fl_sampler_buffer_start(b->w, fl_sampler_buffer_bytes(words), 250000,
                                    FL_SAMPLER_SOURCE_PTRACE),
            0);
  ((fl_sampler_header_t *)b->w)->dropped = 3;
}

static void samples_add(buf_t *b, int tid, uint64_t weight, const uint64_t *pcs, size_t n) {
  /* A time stamp that grows. */
  uint64_t time_ns = 1000000 + ((fl_sampler_header_t *)b->w)->used_words;
  fl_sampler_record_t rec = {
      .tid = tid, .weight = weight, .time_ns = time_ns, .pcs = pcs, .n_pcs = n};
  CHECK_INT(fl_sampler_append(b->w, &rec), 0);
}

/* A record of thread tid's name, as the sampler writes one. */
static void samples_name(buf_t *b, int tid, const char *name) {
  fl_sampler_record_t rec = {.tid = tid};
  snprintf(rec.thread_name, sizeof rec.thread_name, "%s", name);
  CHECK_INT(fl_sampler_append(b->w, &rec), 0);
}

static size_t samples_bytes(const buf_t *b) {
  return fl_sampler_buffer_bytes(b->words);
}

/* The writer keeps to the buffer: a record that does not fit is not
 * written (-1), and what was written reads back as written. */
static void test_writer(void) {
  buf_t b;
  samples_begin(&b, 2 * FL_SAMPLER_RECORD_WORDS + 3);
  uint64_t pcs[] = {0x1000, 0x2001, 0x3001};
  fl_sampler_record_t rec = {.tid = 42, .weight = 2, .cpu_ns = 7, .tag = 5, .time_ns = 9,
                             .pcs = pcs, .n_pcs = 3};
  CHECK_INT(fl_sampler_append(b.w, &rec), 0);
  CHECK_INT(fl_sampler_append(b.w, &rec), -1); /* 8 words, 5 left */
  samples_name(&b, 42, "a-name-longer-than-16");
  fl_sampler_record_t name = {.tid = 42};
  CHECK_INT(fl_sampler_append(b.w, &name), -1); /* full */
  const fl_sampler_header_t *h = (const fl_sampler_header_t *)b.w;
  CHECK_INT(h->samples, 1);
  CHECK_INT(h->source, FL_SAMPLER_SOURCE_PTRACE);
  size_t pos = 0;
  fl_sampler_record_t got;
  CHECK_INT(fl_sampler_next_any(b.w, samples_bytes(&b), &pos, &got), 1);
  CHECK(got.tid == 42 && got.weight == 2 && got.cpu_ns == 7 && got.tag == 5 && got.time_ns == 9);
  CHECK(got.n_pcs == 3 && got.pcs[0] == 0x1000 && got.pcs[2] == 0x3001);
  CHECK_INT(fl_sampler_next_any(b.w, samples_bytes(&b), &pos, &got), 1);
  CHECK(got.n_pcs == 0 && got.tid == 42);
  CHECK_STR(got.thread_name, "a-name-longer-th");
  CHECK_INT(fl_sampler_next_any(b.w, samples_bytes(&b), &pos, &got), 0);
  /* A larger copy takes what did not fit. */
  b.w = realloc(b.w, fl_sampler_buffer_bytes(64));
  fl_sampler_buffer_grown(b.w, fl_sampler_buffer_bytes(64));
  CHECK_INT(fl_sampler_append(b.w, &rec), 0);
  CHECK_INT(fl_sampler_next_any(b.w, fl_sampler_buffer_bytes(64), &pos, &got), 1);
  CHECK_INT(got.n_pcs, 3);
  free(b.w);
}

/* "f;g;h" of sample i, and its weight and thread. */
static void stack_text(const fl_profile_t *p, size_t i, char *out, size_t size, uint64_t *weight,
                       int *thread) {
  fl_sample_t s;
  fl_profile_sample(p, i, &s);
  size_t o = 0;
  out[0] = '\0';
  for (size_t k = 0; k < s.n && o < size; k++)
    o += (size_t)snprintf(out + o, size - o, "%s%s", k ? ";" : "",
                          fl_profile_frame(p, fl_profile_sample_frame(p, &s, k))->func);
  if (weight) *weight = s.weight;
  if (thread) *thread = s.thread;
}

static void test_samples(fl_symbolizer_t *sym) {
  buf_t b;
  samples_begin(&b, 4096);
  int me = getpid();
  /* The leaf is the interrupted instruction; the others return addresses. */
  uint64_t complete[] = {(uint64_t)(uintptr_t)leaf_fn + 1, IN(hidden_fn), IN(mid_fn), IN(base_fn),
                         IN(leaf_fn)};
  samples_add(&b, me, 2, complete, 5);
  uint64_t incomplete[] = {(uint64_t)(uintptr_t)leaf_fn + 1, IN(mid_fn)};
  samples_add(&b, me + 7, 1, incomplete, 2);
  uint64_t deep[FL_SAMPLER_MAX_DEPTH];
  for (size_t i = 0; i < FL_SAMPLER_MAX_DEPTH; i++) deep[i] = IN(mid_fn);
  samples_add(&b, me + 3, 4, deep, FL_SAMPLER_MAX_DEPTH);
  /* Names: the main thread's, one a thread inherited (so none), one set,
   * one of a thread without samples. */
  samples_name(&b, me, "prog");
  samples_name(&b, me + 3, "prog");
  samples_name(&b, me + 7, "reader");
  samples_name(&b, me + 9, "idle");

  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  int calls = 0;
  fl_collect_opts_t opts = {.rule = rule, .ctx = &calls, .main_tid = me};
  char err[128] = "";
  CHECK_INT(fl_collect_samples(p, sym, b.w, samples_bytes(&b), &opts, err, sizeof err), 0);
  CHECK_INT(fl_profile_n_samples(p), 3);
  char text[256];
  uint64_t w;
  int t;
  stack_text(p, 0, text, sizeof text, &w, &t);
  CHECK_STR(text, "mid_fn;leaf_fn"); /* hidden_fn left out, cut at base_fn */
  CHECK_INT(w, 2);
  CHECK_INT(t, 1);
  stack_text(p, 1, text, sizeof text, &w, &t);
  CHECK_STR(text, "[incomplete stack];mid_fn;leaf_fn");
  CHECK_INT(t, 3); /* threads: me 1, me + 3 2, me + 7 3 */
  stack_text(p, 2, text, sizeof text, &w, &t);
  CHECK(!strncmp(text, "[deeper than 512 frames];mid_fn;mid_fn", 38));
  CHECK_INT(t, 2);
  CHECK_INT(w, 4);
  /* Time stamps come through; names as the collector's rule says. */
  fl_sample_t s;
  uint64_t last = 0;
  for (size_t i = 0; i < 3; i++) {
    fl_profile_sample(p, i, &s);
    CHECK(s.time_ns >= 1000000 && s.time_ns > last);
    last = s.time_ns;
  }
  CHECK_STR(fl_profile_thread_name(p, 1), "prog");
  CHECK(fl_profile_thread_name(p, 2) == NULL);
  CHECK_STR(fl_profile_thread_name(p, 3), "reader");
  CHECK(fl_profile_thread_name(p, 4) == NULL);
  /* Each distinct address meets the rule once, whatever the records. */
  CHECK(calls <= 6);
  const fl_profile_info_t *info = fl_profile_info_const(p);
  CHECK_INT(info->interval_ns, 250000);
  CHECK_INT(info->dropped, 3);
  CHECK_INT(info->total_weight, 7);
  /* The rule's flags, and the describer's module. */
  fl_profile_sample(p, 0, &s);
  const fl_frame_t *leaf = fl_profile_frame(p, fl_profile_sample_frame(p, &s, s.n - 1));
  CHECK(leaf->flags & FL_FRAME_CELL);
  CHECK_STR(leaf->module, "test_collect");
  CHECK_STR(leaf->file ? strrchr(leaf->file, '/') + 1 : NULL, "test_collect.c");
  fl_profile_destroy(&p);

  /* A root above every stack; no rule: every frame kept, none complete. */
  p = fl_profile_new(FL_PROFILE_CPU);
  fl_frame_t root = {.func = "prog (pid 12)", .flags = FL_FRAME_ROOT};
  fl_collect_opts_t plain = {.main_tid = me, .root = &root};
  CHECK_INT(fl_collect_samples(p, sym, b.w, samples_bytes(&b), &plain, err, sizeof err), 0);
  stack_text(p, 0, text, sizeof text, NULL, NULL);
  CHECK_STR(text, "prog (pid 12);[incomplete stack];leaf_fn;base_fn;mid_fn;hidden_fn;leaf_fn");
  fl_profile_destroy(&p);

  /* Not a sample buffer; an empty one. */
  p = fl_profile_new(FL_PROFILE_CPU);
  ((fl_sampler_header_t *)b.w)->magic = 0;
  CHECK_INT(fl_collect_samples(p, sym, b.w, samples_bytes(&b), &opts, err, sizeof err), -1);
  CHECK_STR(err, "the sample buffer is corrupt");
  CHECK_INT(fl_collect_samples(p, sym, NULL, 0, &opts, err, sizeof err), 0);
  CHECK_INT(fl_profile_n_samples(p), 0);
  fl_profile_destroy(&p);
  free(b.w);
}

/* ---- an allocation buffer ---- */

#define SLOTS FL_ALLOCS_MIN_TABLE_SLOTS
#define RECORDS_AT (FL_ALLOCS_HEADER_WORDS + 2 * SLOTS + FL_ALLOCS_FILTER_WORDS)

static void allocs_add(buf_t *b, int tid, uint64_t bytes, int kind, bool freed, const uint64_t *pcs,
                       size_t n) {
  uint64_t *r = b->w + RECORDS_AT + b->used;
  r[0] = (uint64_t)n << 32 | (uint32_t)tid;
  r[1] = bytes;
  r[2] = 0x1000;
  r[3] = (uint64_t)kind | (freed ? FL_ALLOCS_FREED : 0);
  memcpy(r + FL_ALLOCS_RECORD_WORDS, pcs, n * 8);
  b->used += FL_ALLOCS_RECORD_WORDS + n;
  ((fl_allocs_header_t *)b->w)->used_words = b->used;
}

static void test_allocs(fl_symbolizer_t *sym) {
  buf_t b = {.words = 4096};
  size_t bytes = fl_allocs_buffer_bytes(b.words, SLOTS);
  b.w = calloc(bytes, 1);
  fl_allocs_header_t *h = (fl_allocs_header_t *)b.w;
  h->magic = FL_ALLOCS_MAGIC;
  h->capacity_words = b.words;
  h->table_slots = SLOTS;
  h->calls = 40;
  double rate = 0.5;
  memcpy(&h->sample_rate_bits, &rate, sizeof rate);
  int me = getpid();
  /* Every address of an allocation record is a return address. */
  uint64_t pcs[] = {IN(leaf_fn), IN(mid_fn), IN(base_fn)};
  allocs_add(&b, me, 100, FL_ALLOC_MALLOC, false, pcs, 3);
  allocs_add(&b, me, 30, FL_ALLOC_CALLOC, true, pcs, 3);
  allocs_add(&b, me, 0, FL_ALLOC_MALLOC, false, pcs, 3);

  int calls = 0;
  fl_collect_opts_t opts = {.rule = rule, .ctx = &calls, .main_tid = me};
  char err[128];
  fl_profile_t *p = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  fl_collect_allocs_opts_t by_bytes = {0};
  CHECK_INT(fl_collect_allocs(p, sym, b.w, bytes, &opts, &by_bytes, err, sizeof err), 0);
  const fl_profile_info_t *info = fl_profile_info_const(p);
  CHECK_INT(info->total_weight, 260); /* (100 + 30) / 0.5; the 0-byte one weighs nothing */
  CHECK_INT(info->calls, 40);
  CHECK(info->sample_rate == 0.5);
  char text[256];
  uint64_t w;
  stack_text(p, 0, text, sizeof text, &w, NULL);
  CHECK_STR(text, "mid_fn;leaf_fn;malloc");
  CHECK_INT(w, 200);
  stack_text(p, 1, text, sizeof text, NULL, NULL);
  CHECK_STR(text, "mid_fn;leaf_fn;calloc");
  fl_profile_destroy(&p);

  p = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  fl_collect_allocs_opts_t live_count = {.live = true, .weight_count = true};
  CHECK_INT(fl_collect_allocs(p, sym, b.w, bytes, &opts, &live_count, err, sizeof err), 0);
  info = fl_profile_info_const(p);
  CHECK_INT(info->total_weight, 4); /* two live allocations, each standing for 2 */
  CHECK_INT(info->total_allocs, 4);
  CHECK_INT(info->kind, FL_PROFILE_LIVE_COUNT);
  fl_profile_destroy(&p);

  /* A record of an unknown kind is corruption. */
  b.w[RECORDS_AT + 3] = 9;
  p = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  CHECK_INT(fl_collect_allocs(p, sym, b.w, bytes, &opts, &by_bytes, err, sizeof err), -1);
  CHECK_STR(err, "the allocation buffer is corrupt");
  fl_profile_destroy(&p);
  free(b.w);
}

static void test_describe(void) {
  fl_frame_info_t libc = {
      .func = "qsort", .module = "/usr/lib/x86_64-linux-gnu/libc.so.6", .module_base = 0x1000};
  fl_frame_t fr;
  fl_collect_describe(&libc, 0x1234, &fr);
  CHECK_STR(fr.module, "libc.so.6");
  CHECK_INT(fr.addr, 0x234);
  CHECK_INT(fr.flags, FL_FRAME_SYSTEM);
  fl_frame_info_t alloc = {
      .func = "_int_malloc", .module = "/usr/lib/x86_64-linux-gnu/libc.so.6", .inlined = true};
  fl_collect_describe(&alloc, 0, &fr);
  CHECK_INT(fr.flags, FL_FRAME_ALLOC | FL_FRAME_INLINED);
  fl_frame_info_t mine = {.module = "/home/u/prog"};
  fl_collect_describe(&mine, 0, &fr);
  CHECK_STR(fr.func, "[unknown]");
  CHECK_STR(fr.module, "prog");
  CHECK_INT(fr.flags, 0);
  CHECK(fl_collect_is_allocator("posix_memalign") && !fl_collect_is_allocator("qsort"));
  CHECK(fl_collect_is_allocator("malloc@plt") && !fl_collect_is_allocator("qsort@plt"));
  CHECK(!fl_collect_is_allocator("@plt") && !fl_collect_is_allocator("malloc@"));
}

int main(void) {
  /* Keep the functions' calls alive, so they have their own code. */
  volatile int x = base_fn(3);
  (void)x;
  char err[256];
  fl_symbolizer_t *sym = fl_symbolizer_new_from_pid(getpid(), err, sizeof err);
  if (!sym) {
    fprintf(stderr, "cannot symbolize this process: %s\n", err);
    return 1;
  }
  test_writer();
  test_samples(sym);
  test_allocs(sym);
  test_describe();
  fl_symbolizer_destroy(&sym);
  return TEST_DONE();
}
