/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_budget: limits on what work on input may cost (see fl_budget.h). */
#define _GNU_SOURCE
#include "cflame/fl_budget.h"

#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "cflame/fl_io.h"
#include "cflame/fl_render.h"
#include "fl__common.h"

#define MIN_DEFAULT ((size_t)64 << 20)

static size_t default_bytes;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void compute_default(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  size_t quarter = pages > 0 && page > 0 ? (size_t)pages / 4 * (size_t)page : 0;
  default_bytes = quarter > MIN_DEFAULT ? quarter : MIN_DEFAULT;
}

size_t fl_budget_default_bytes(void) {
  pthread_once(&default_once, compute_default);
  return default_bytes;
}

void fl_budget_init(fl_budget_t *b, size_t max_bytes) {
  *b = (fl_budget_t){.max_bytes = max_bytes ? max_bytes : fl_budget_default_bytes()};
}

int fl_budget_charge(fl_budget_t *b, size_t bytes, uint64_t frames) {
  if (b->state != FL_BUDGET_OK) return -1;
  /* Relaxed: the flag orders nothing else; it only has to be seen soon. */
  if (b->cancel && atomic_load_explicit(b->cancel, memory_order_relaxed)) {
    b->state = FL_BUDGET_CANCELLED;
    return -1;
  }
  if (bytes > b->max_bytes - b->bytes) {
    b->state = FL_BUDGET_OVER_MEMORY;
    return -1;
  }
  if (b->max_frames && frames > b->max_frames - b->frames) {
    b->state = FL_BUDGET_OVER_FRAMES;
    return -1;
  }
  b->bytes += bytes;
  b->frames += frames;
  return 0;
}

int fl_budget_charge_n(fl_budget_t *b, size_t count, size_t size, uint64_t frames) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) bytes = SIZE_MAX;
  return fl_budget_charge(b, bytes, frames);
}

bool fl_budget_stopped(fl_budget_t *b) {
  return fl_budget_charge(b, 0, 0) < 0;
}

void *fl__grow_charged(fl_budget_t *budget, void *array, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return array;
  size_t grown = *cap ? *cap : 16;
  while (grown < need && grown <= SIZE_MAX / 2) grown *= 2;
  /* What it grows by: glibc moves a large block by remapping its pages,
   * never holding both copies, so the charges add up to the capacity. */
  if (grown < need || fl_budget_charge_n(budget, grown - *cap, size, 0) < 0) return NULL;
  return fl__grow(array, cap, need, size);
}

/* "64 MiB", or "5.9 GiB" for a limit that is no whole number of a unit
 * (the default, a quarter of the machine's memory). */
static void size_text(size_t bytes, char out[32]) {
  static const char *const units[] = {"TiB", "GiB", "MiB", "KiB"};
  for (unsigned i = 0; i < 4; i++) {
    size_t unit = (size_t)1 << (40 - 10 * i);
    if (bytes >= unit && bytes % unit != 0) {
      snprintf(out, 32, "%.1f %s", (double)bytes / (double)unit, units[i]);
      return;
    }
    if (bytes >= unit) break;
  }
  fl_input_limit_text(bytes, out);
}

void fl_budget_message(const fl_budget_t *b, const char *subject, char *out, size_t size) {
  char limit[64];
  const char *raise = b->raise_with ? "; raise it with " : "";
  const char *with = b->raise_with ? b->raise_with : "";
  switch (b->state) {
    case FL_BUDGET_OK: snprintf(out, size, "%s", ""); return;
    case FL_BUDGET_CANCELLED: snprintf(out, size, "%s: cancelled", subject); return;
    case FL_BUDGET_OVER_MEMORY:
      size_text(b->max_bytes, limit);
      snprintf(out, size, "%s needs more than the %s of memory the budget allows%s%s", subject,
               limit, raise, with);
      return;
    case FL_BUDGET_OVER_FRAMES:
      fl_count_noun(b->max_frames, "frame", "frames", limit, sizeof limit);
      snprintf(out, size, "%s needs more than %s of work, the most the budget allows%s%s", subject,
               limit, raise, with);
      return;
  }
}
