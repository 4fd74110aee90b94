/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading an allocation buffer written by fl_allocs (see fl_allocs.h).
 * Kept apart from the recorder, which belongs in the profiled process: a
 * reader (the kernel, a tool) links only this. */
#include <stdint.h>

#include "cflame/fl_allocs.h"

/* Words before the first record. */
static uint64_t records_offset(uint64_t table_slots) {
  return FL_ALLOCS_HEADER_WORDS + 2 * table_slots + FL_ALLOCS_FILTER_WORDS;
}

size_t fl_allocs_buffer_bytes(size_t n_words, size_t table_slots) {
  return (size_t)(records_offset(table_slots) + n_words) * sizeof(uint64_t);
}

size_t fl_allocs_table_slots(uint64_t live_blocks, double sample_rate) {
  double want = 2 * (double)live_blocks * (sample_rate < 1 ? sample_rate : 1);
  size_t slots = FL_ALLOCS_RUN_MIN_TABLE_SLOTS;
  while (slots < FL_ALLOCS_MAX_TABLE_SLOTS && (double)slots < want) slots *= 2;
  return slots;
}

int fl_allocs_next(const void *buf, size_t bytes, size_t *pos, fl_allocs_record_t *rec) {
  const fl_allocs_header_t *h = buf;
  if (bytes < fl_allocs_buffer_bytes(0, 0) || ((uintptr_t)buf & 7)) return -1;
  if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != FL_ALLOCS_MAGIC) return -1;
  uint64_t slots = h->table_slots, total = bytes / sizeof(uint64_t);
  if (slots > FL_ALLOCS_MAX_TABLE_SLOTS || records_offset(slots) > total) return -1;
  uint64_t cap = total - records_offset(slots);
  if (h->capacity_words < cap) cap = h->capacity_words;
  uint64_t used = __atomic_load_n(&h->used_words, __ATOMIC_ACQUIRE);
  if (used > cap) return -1;
  const uint64_t *words = (const uint64_t *)buf + records_offset(slots);
  for (uint64_t p = *pos;;) {
    if (p >= used) return 0;
    if (used - p < FL_ALLOCS_RECORD_WORDS) return -1;
    uint64_t w0 = __atomic_load_n(&words[p], __ATOMIC_ACQUIRE);
    if (w0 == 0) return 0; /* reserved, never filled */
    uint64_t n = w0 >> 32;
    if (n == 0 || n > FL_ALLOCS_MAX_DEPTH || used - p - FL_ALLOCS_RECORD_WORDS < n) return -1;
    uint64_t next = p + FL_ALLOCS_RECORD_WORDS + n;
    if ((uint32_t)w0 == 0) { /* reserved, never completed (a crash): skip it */
      p = next;
      *pos = (size_t)p;
      continue;
    }
    uint64_t kind = __atomic_load_n(&words[p + 3], __ATOMIC_RELAXED);
    int k = (int)(kind & 0xff); /* bits 32-62 are the recorder's */
    if (k < FL_ALLOC_MALLOC || k > FL_ALLOC_MEMALIGN) return -1;
    rec->tid = (int)(uint32_t)w0;
    rec->bytes = words[p + 1];
    rec->addr = words[p + 2];
    rec->kind = k;
    rec->freed = (kind & FL_ALLOCS_FREED) != 0;
    rec->tag = words[p + 4];
    rec->pcs = &words[p + FL_ALLOCS_RECORD_WORDS];
    rec->n_pcs = (size_t)n;
    *pos = (size_t)next;
    return 1;
  }
}
