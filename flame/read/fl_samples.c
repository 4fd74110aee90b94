/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading a sample buffer written by fl_sampler (see fl_sampler.h), and
 * writing one from outside the sampled process (fl_attach.c). Kept apart
 * from the sampler itself, which belongs in the profiled process: a reader
 * (the kernel, a tool) links only this. */
#include <stdint.h>
#include <string.h>

#include "cflame/fl_sampler.h"
#include "fl__common.h"

static const struct {
  const char *call, *reason;
} waits[] = {{NULL, NULL},
#define WAIT_ROW(call, reason) {#call, reason},
             FL_SAMPLER_WAIT_CALLS(WAIT_ROW)
#undef WAIT_ROW
                 [FL_SAMPLER_WAIT_RUNNABLE] = {NULL, "runnable"},
             [FL_SAMPLER_WAIT_OTHER] = {NULL, "other"}};
_Static_assert(FL__ARRAY_SIZE(waits) == FL_SAMPLER_N_WAITS, "a row per wait");

const char *fl_sampler_wait_call(unsigned wait) {
  return wait < FL_SAMPLER_N_WAITS ? waits[wait].call : NULL;
}

const char *fl_sampler_wait_reason(unsigned wait) {
  return wait < FL_SAMPLER_N_WAITS ? waits[wait].reason : NULL;
}

size_t fl_sampler_buffer_bytes(size_t n_words) {
  return (FL_SAMPLER_HEADER_WORDS + n_words) * sizeof(uint64_t);
}

int fl_sampler_next_any(const void *buf, size_t bytes, size_t *pos, fl_sampler_record_t *rec) {
  const uint64_t *w = buf;
  if (bytes < fl_sampler_buffer_bytes(0) || ((uintptr_t)buf & 7)) return -1;
  const fl_sampler_header_t *h = buf;
  if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != FL_SAMPLER_MAGIC) return -1;
  uint64_t cap = bytes / sizeof(uint64_t) - FL_SAMPLER_HEADER_WORDS;
  if (h->capacity_words < cap) cap = h->capacity_words;
  uint64_t used = __atomic_load_n(&h->used_words, __ATOMIC_ACQUIRE);
  if (used > cap) return -1;
  const uint64_t *words = w + FL_SAMPLER_HEADER_WORDS;
  uint64_t p = *pos;
  if (p >= used) return 0;
  if (used - p < FL_SAMPLER_RECORD_WORDS) return -1;
  uint64_t w0 = __atomic_load_n(&words[p], __ATOMIC_ACQUIRE);
  if (w0 == 0) return 0; /* reserved, never filled */
  uint64_t n = w0 >> 32;
  rec->wait = 0;
  if (n != FL_SAMPLER_NAME_RECORD) {
    rec->wait = (unsigned)(n >> 16);
    n &= 0xffff;
    if (rec->wait >= FL_SAMPLER_N_WAITS) return -1;
  }
  rec->tid = (int)(uint32_t)w0;
  rec->tag = words[p + 3];
  rec->time_ns = words[p + 4];
  rec->pcs = &words[p + FL_SAMPLER_RECORD_WORDS];
  if (n == FL_SAMPLER_NAME_RECORD) {
    rec->weight = rec->cpu_ns = 0;
    rec->n_pcs = 0;
    memcpy(rec->thread_name, &words[p + 1], 16);
    rec->thread_name[16] = '\0';
    *pos = (size_t)(p + FL_SAMPLER_RECORD_WORDS);
    return 1;
  }
  if (n == 0 || n > FL_SAMPLER_MAX_DEPTH || used - p - FL_SAMPLER_RECORD_WORDS < n) return -1;
  rec->weight = words[p + 1];
  rec->cpu_ns = words[p + 2];
  rec->n_pcs = (size_t)n;
  rec->thread_name[0] = '\0';
  *pos = (size_t)(p + FL_SAMPLER_RECORD_WORDS + n);
  return 1;
}

int fl_sampler_next(const void *buf, size_t bytes, size_t *pos, fl_sampler_record_t *rec) {
  int rc;
  while ((rc = fl_sampler_next_any(buf, bytes, pos, rec)) == 1 && rec->n_pcs == 0) continue;
  return rc;
}

/* ---- writing from outside the sampled process ---- */

int fl_sampler_buffer_start(void *buf, size_t bytes, uint64_t interval_ns, uint64_t source) {
  if (bytes < fl_sampler_buffer_bytes(0) || ((uintptr_t)buf & 7)) return -1;
  fl_sampler_header_t *h = buf;
  memset(h, 0, sizeof *h);
  h->capacity_words = bytes / sizeof(uint64_t) - FL_SAMPLER_HEADER_WORDS;
  h->interval_ns = interval_ns;
  h->source = source;
  h->clock = FL_SAMPLER_CLOCK_CPU;
  h->magic = FL_SAMPLER_MAGIC;
  return 0;
}

void fl_sampler_buffer_grown(void *buf, size_t bytes) {
  fl_sampler_header_t *h = buf;
  h->capacity_words = bytes / sizeof(uint64_t) - FL_SAMPLER_HEADER_WORDS;
}

int fl_sampler_append(void *buf, const fl_sampler_record_t *rec) {
  fl_sampler_header_t *h = buf;
  uint64_t *words = (uint64_t *)buf + FL_SAMPLER_HEADER_WORDS;
  if (rec->wait || rec->n_pcs > FL_SAMPLER_MAX_DEPTH || rec->tid <= 0) return -1;
  uint64_t need = FL_SAMPLER_RECORD_WORDS + rec->n_pcs;
  if (h->capacity_words - h->used_words < need) return -1;
  uint64_t *w = words + h->used_words;
  if (rec->n_pcs == 0) {
    memset(&w[1], 0, 16);
    memcpy(&w[1], rec->thread_name, strnlen(rec->thread_name, 16));
    w[0] = (uint64_t)FL_SAMPLER_NAME_RECORD << 32 | (uint32_t)rec->tid;
  } else {
    w[0] = (uint64_t)rec->n_pcs << 32 | (uint32_t)rec->tid;
    w[1] = rec->weight;
    w[2] = rec->cpu_ns;
    memcpy(&w[FL_SAMPLER_RECORD_WORDS], rec->pcs, rec->n_pcs * sizeof *rec->pcs);
    h->samples++;
  }
  w[3] = rec->tag;
  w[4] = rec->time_ns;
  h->used_words += need;
  return 0;
}
