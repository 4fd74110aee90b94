/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__allocs: what the allocation recorder's two files share: fl_allocs.c,
 * the hooks and everything they call (one translation unit; its top
 * comment tells how the recorder works), and fl_allocs_run.c, the set-up
 * of the process and init, start and stop. The state and the functions
 * here are hidden: the hooks reach the state as a file's own statics,
 * without the GOT. */
#ifndef FL__ALLOCS_H
#define FL__ALLOCS_H

#include <stdbool.h>
#include <stdint.h>

#include "cflame/fl_allocs.h"
#include "fl__platform.h"
#include "fl__space.h"

#define MAX_THREADS 1024
/* A record's word 3: the kind in the low byte, the table slot in bits
 * 32-62 (the recorder's own: start clears those slots), FL_ALLOCS_FREED. */
#define KIND_MASK 0xffull
#define SLOT_MASK 0x7fffffffull
_Static_assert(FL_ALLOCS_MAX_TABLE_SLOTS - 1 <= SLOT_MASK, "slots fit in word 3");

typedef fl__allocs_counters_t counters_t;
#define T fl__allocs_thread

/* The counts of counter blocks, summed. */
typedef struct counts {
  uint64_t calls, frees, records, fp_records;
} counts_t;

/* Read on every hook: kept on a line that is written only by start, stop
 * and init. */
typedef struct {
  uint64_t tag;
  fl_allocs_header_t *hdr; /* NULL until fl_allocs_init */
  uint64_t *table;         /* 2 words a slot */
  uint64_t *words;         /* the records */
  uint64_t capacity;
  uint64_t table_mask;
  int table_shift; /* 64 - log2(table_slots) */
} __attribute__((aligned(64))) fl__allocs_state_t;

/* The table of a buffer file is given blocks a chunk at a time, when a
 * probe first reaches it: it is written at random slots, so it cannot grow
 * in order as the records do (fl__space.h). */
#define FL__ALLOCS_TABLE_CHUNK ((uint64_t)1 << 16)
#define FL__ALLOCS_TABLE_CHUNKS \
  ((uint64_t)FL_ALLOCS_MAX_TABLE_SLOTS * 2 * sizeof(uint64_t) / FL__ALLOCS_TABLE_CHUNK)

/* Written while recording, apart from fl__allocs_state. */
typedef struct {
  int full;          /* atomic: the buffer filled up during this run */
  int table_stray;   /* atomic: a slot was claimed that no record names */
  counts_t base;     /* the counters' sums at start */
  fl__space_t space; /* the buffer's file (fl_allocs_use_file), fd -1 if none */
  /* Bits: the table's chunks of FL__ALLOCS_TABLE_CHUNK bytes that this
   * process gave blocks to (fl_allocs.c, table_chunk_ready). */
  uint64_t table_chunks[FL__ALLOCS_TABLE_CHUNKS / 64];
} __attribute__((aligned(64))) fl__allocs_written_t;

extern FL__HIDDEN fl__allocs_state_t fl__allocs_state;
extern FL__HIDDEN fl__allocs_written_t fl__allocs_written;
/* A counter block per thread that owns one, and the atomic one shared by
 * the others (see fl_allocs.c). */
extern FL__HIDDEN counters_t fl__allocs_counter_blocks[MAX_THREADS];
extern FL__HIDDEN counters_t fl__allocs_shared_counters;
/* Whether stop's membarrier (MEMBARRIER_CMD_PRIVATE_EXPEDITED) orders
 * the slow paths' entry (see Stopping in fl_allocs.c): set once
 * by fl__allocs_prepare_process, when the process registered for it. */
extern FL__HIDDEN bool fl__allocs_use_membarrier;

/* Where the records begin, in words, in a buffer with table_slots slots. */
static inline uint64_t records_offset(uint64_t table_slots) {
  return FL_ALLOCS_HEADER_WORDS + 2 * table_slots + FL_ALLOCS_FILTER_WORDS;
}

/* ---- fl_allocs.c ---- */

FL__HIDDEN counts_t fl__allocs_sum_counters(void);
/* Draws this run's sampling gaps for sample_rate. */
FL__HIDDEN void fl__allocs_set_rate(double sample_rate);

/* ---- fl_allocs_run.c ---- */

/* Sets the process up once (libunwind's caches, fork, membarrier). */
FL__HIDDEN void fl__allocs_prepare_process(void);

#endif
