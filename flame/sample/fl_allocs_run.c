/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_allocs_run: the allocation recorder's set-up of the process and its
 * runs: init, start, stop (see include/cflame/fl_allocs.h, and fl_allocs.c
 * for how the recorder works). */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <linux/membarrier.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fl__allocs.h"
#include "fl__common.h"

static void after_fork_child(void) {
  /* The buffer is the parent's (a shared mapping): the child leaves it. */
  __atomic_store_n(&fl__allocs.recording, 0, __ATOMIC_SEQ_CST);
  fl__allocs_state.hdr = NULL;
  fl__allocs_state.words = NULL;
  fl__allocs_state.table = NULL;
  fl__allocs.filter = NULL;
  T.guard = 0;
}

static void prepare_process(void) {
  /* Per-thread caches: libunwind's global cache takes a lock. */
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  volatile double x = 0.5;
  x = log(x); /* bind libm's log where binding is lazy */
  (void)x;
  pthread_atfork(NULL, NULL, after_fork_child);
  /* The stop protocol without a fence on the slow paths (see Stopping in fl_allocs.c):
   * only when the kernel has private expedited membarrier and this
   * process is registered for it. */
  long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
      syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
    fl__allocs_use_membarrier = true;
}

static pthread_once_t process_once = PTHREAD_ONCE_INIT;

void fl__allocs_prepare_process(void) {
  pthread_once(&process_once, prepare_process);
}

/* fl_allocs_init and fl_allocs_init_zeroed: clear says whether buf must
 * be cleared. */
static int init(void *buf, size_t bytes, size_t table_slots, bool clear, char *err,
                size_t err_size) {
  if (__atomic_load_n(&fl__allocs.recording, __ATOMIC_SEQ_CST)) {
    snprintf(err, err_size, "the allocation recorder is recording");
    return -1;
  }
  if (table_slots < FL_ALLOCS_MIN_TABLE_SLOTS || table_slots > FL_ALLOCS_MAX_TABLE_SLOTS ||
      (table_slots & (table_slots - 1))) {
    snprintf(err, err_size,
             "the table of sampled blocks has %zu slots; it needs a power of two from %u to %u",
             table_slots, FL_ALLOCS_MIN_TABLE_SLOTS, FL_ALLOCS_MAX_TABLE_SLOTS);
    return -1;
  }
  if (!buf || ((uintptr_t)buf & 7) || bytes < fl_allocs_buffer_bytes(64, table_slots)) {
    snprintf(err, err_size,
             "the allocation buffer is too small or misaligned (%zu bytes; at least %zu, "
             "8-byte aligned, for %zu table slots)",
             bytes, fl_allocs_buffer_bytes(64, table_slots), table_slots);
    return -1;
  }
  fl__allocs_prepare_process();
  if (fl__allocs_written.space.fd >= 0) close(fl__allocs_written.space.fd);
  fl__allocs_written.space = (fl__space_t){.fd = -1};
  if (clear) memset(buf, 0, bytes);
  uint64_t *w = buf;
  fl__allocs_state.hdr = buf;
  fl__allocs_state.table = w + FL_ALLOCS_HEADER_WORDS;
  fl__allocs.filter = (uint16_t *)(fl__allocs_state.table + 2 * table_slots);
  fl__allocs_state.words = w + records_offset(table_slots);
  fl__allocs_state.capacity = bytes / sizeof(uint64_t) - records_offset(table_slots);
  fl__allocs_state.table_mask = table_slots - 1;
  fl__allocs_state.table_shift = 64 - __builtin_ctzll(table_slots);
  fl__allocs_written.table_stray = 0;
  fl__allocs_state.hdr->capacity_words = fl__allocs_state.capacity;
  fl__allocs_state.hdr->table_slots = table_slots;
  __atomic_store_n(&fl__allocs_state.hdr->magic, FL_ALLOCS_MAGIC, __ATOMIC_RELEASE);
  return 0;
}

int fl_allocs_init(void *buf, size_t bytes, size_t table_slots, char *err, size_t err_size) {
  return init(buf, bytes, table_slots, true, err, err_size);
}

int fl_allocs_init_zeroed(void *buf, size_t bytes, size_t table_slots, char *err, size_t err_size) {
  return init(buf, bytes, table_slots, false, err, err_size);
}

int fl_allocs_use_file(int fd, size_t allocated, char *err, size_t err_size) {
  fl_allocs_header_t *h = fl__allocs_state.hdr;
  size_t slots = (size_t)fl__allocs_state.table_mask + 1;
  if (!h || __atomic_load_n(&fl__allocs.recording, __ATOMIC_SEQ_CST) ||
      allocated < fl_allocs_buffer_bytes(0, slots)) {
    snprintf(err, err_size, "fl_allocs_use_file: %s",
             h ? "call it between runs, with the header, filter and table allocated"
               : "no buffer (fl_allocs_init_zeroed first)");
    return -1;
  }
  if (fl__allocs_written.space.fd >= 0) close(fl__allocs_written.space.fd);
  memset(fl__allocs_written.table_chunks, 0, sizeof fl__allocs_written.table_chunks);
  fl__allocs_written.space = (fl__space_t){
      .fd = fd, .allocated = allocated, .bytes = fl_allocs_buffer_bytes(h->capacity_words, slots)};
  return 0;
}

int fl_allocs_allocate_start(int fd, size_t bytes, size_t table_slots, size_t start_words,
                             size_t *end) {
  size_t head = FL_ALLOCS_HEADER_WORDS * sizeof(uint64_t);
  size_t table = 2 * sizeof(uint64_t) * table_slots;
  *end = fl_allocs_buffer_bytes(start_words, table_slots);
  if (*end > bytes) *end = bytes;
  if (*end < head + table) return EINVAL;
  int e = posix_fallocate(fd, 0, (off_t)head);
  return e ? e : posix_fallocate(fd, (off_t)(head + table), (off_t)(*end - head - table));
}

/* Empties the table and the filter after a run that used `used` words of
 * records: each record names its slot, so only those are cleared (a whole
 * table of 2^20 slots is 16 MiB to write), unless a slot may have been
 * claimed that no complete record names. */
static void clear_table(uint64_t used) {
  uint64_t slots = fl__allocs_state.table_mask + 1;
  bool stray = fl__allocs_written.table_stray;
  for (uint64_t p = 0; !stray && p + FL_ALLOCS_RECORD_WORDS <= used;) {
    uint64_t w0 = fl__allocs_state.words[p], s = (fl__allocs_state.words[p + 3] >> 32) & SLOT_MASK;
    if (w0 == 0 || (uint32_t)w0 == 0 || s >= slots) {
      stray = true; /* a record left incomplete (a thread cut off by siglongjmp) */
      break;
    }
    fl__allocs_state.table[2 * s] = fl__allocs_state.table[2 * s + 1] = 0;
    p += FL_ALLOCS_RECORD_WORDS + (w0 >> 32);
  }
  if (stray && fl__allocs_written.space.fd < 0) {
    memset(fl__allocs_state.table, 0, 2 * slots * sizeof(uint64_t));
  } else if (stray) { /* only the chunks given blocks: the others are holes, all zeros */
    uint64_t chunk_slots = FL__ALLOCS_TABLE_CHUNK / (2 * sizeof(uint64_t));
    for (uint64_t c = 0; c * chunk_slots < slots; c++)
      if (fl__allocs_written.table_chunks[c / 64] & (1ull << (c % 64)))
        memset(fl__allocs_state.table + 2 * c * chunk_slots, 0,
               (slots - c * chunk_slots < chunk_slots ? slots - c * chunk_slots : chunk_slots) * 2 *
                   sizeof(uint64_t));
  }
  memset(fl__allocs.filter, 0, FL_ALLOCS_FILTER_WORDS * sizeof(uint64_t));
  fl__allocs_written.table_stray = 0;
}

/* The calling thread is on no slow path (see fl_allocs.c). */
static void reset_own_state(void) {
  T.guard = 0;
  if (T.c && !T.c->shared) __atomic_store_n(&T.c->busy, 0, __ATOMIC_SEQ_CST);
}

int fl_allocs_start(double sample_rate, uint64_t tag, char *err, size_t err_size) {
  if (!fl__allocs_state.hdr) {
    snprintf(err, err_size, "the allocation recorder has no buffer (fl_allocs_init)");
    return -1;
  }
  if (__atomic_load_n(&fl__allocs.recording, __ATOMIC_SEQ_CST)) {
    snprintf(err, err_size, "the allocation recorder is already recording");
    return -1;
  }
  if (!(sample_rate > 0 && sample_rate <= 1)) {
    snprintf(err, err_size, "sample_rate must be more than 0 and at most 1 (got %g)", sample_rate);
    return -1;
  }
  fl_allocs_header_t *h = fl__allocs_state.hdr;
  uint64_t used =
      h->used_words < fl__allocs_state.capacity ? h->used_words : fl__allocs_state.capacity;
  clear_table(used);
  /* Zero what the last run wrote, so that a reservation never filled reads
   * as the end of the records. */
  memset(fl__allocs_state.words, 0, used * sizeof(uint64_t));
  h->used_words = 0;
  h->records = 0;
  h->dropped = 0;
  h->calls = h->frees = 0;
  h->fp_records = 0;
  h->space_errno = 0;
  fl__allocs_written.space.failed = 0; /* room may have been made since */
  memcpy(&h->sample_rate_bits, &sample_rate, sizeof sample_rate);
  h->tag = tag;
  fl__allocs_written.full = 0;
  fl__allocs_set_rate(sample_rate);
  fl__allocs_state.tag = tag;
  __atomic_store_n(&fl__allocs.epoch, fl__allocs.epoch + 1, __ATOMIC_RELAXED);
  /* No owner writes sample_at now (stop waited), and each sees the zero
   * before recording is on: its next call takes the hook and draws. */
  for (int i = 0; i < MAX_THREADS; i++)
    __atomic_store_n(&fl__allocs_counter_blocks[i].sample_at, 0, __ATOMIC_RELAXED);
  fl__allocs_written.base = fl__allocs_sum_counters();
  reset_own_state();
  __atomic_store_n(&fl__allocs.recording, 1, __ATOMIC_SEQ_CST);
  return 0;
}

uint64_t fl_allocs_stop(void) {
  if (!__atomic_load_n(&fl__allocs.recording, __ATOMIC_SEQ_CST)) return 0;
  __atomic_store_n(&fl__allocs.recording, 0, __ATOMIC_SEQ_CST);
  /* The other half of enter_busy's fence (see Stopping in fl_allocs.c): after it, every
   * thread that entered a slow path has its busy flag visible here, and
   * every later entry sees recording off. It cannot fail once the process
   * registered (only an unregistered process gets EPERM). */
  if (fl__allocs_use_membarrier) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  reset_own_state();
  for (int i = 0; i <= MAX_THREADS; i++) {
    counters_t *c = i < MAX_THREADS ? &fl__allocs_counter_blocks[i] : &fl__allocs_shared_counters;
    while (__atomic_load_n(&c->busy, __ATOMIC_SEQ_CST)) sched_yield();
  }
  counts_t sum = fl__allocs_sum_counters();
  fl_allocs_header_t *h = fl__allocs_state.hdr;
  h->calls = sum.calls - fl__allocs_written.base.calls;
  h->frees = sum.frees - fl__allocs_written.base.frees;
  h->records = sum.records - fl__allocs_written.base.records;
  h->fp_records = sum.fp_records - fl__allocs_written.base.fp_records;
  return h->records;
}

bool fl_allocs_recording(void) {
  return __atomic_load_n(&fl__allocs.recording, __ATOMIC_SEQ_CST) != 0;
}
