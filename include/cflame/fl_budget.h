/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_budget: what a piece of work on input may cost, and a way to stop it.
 *
 * A profile read from a file, and the views drawn of it, cost what the
 * input asks for: a 117 KB gzip holds one stack of 6·10^7 frames, a 48 KB
 * pprof a sample of 5·10^7 location references. The library's allocators
 * abort when memory runs out (fl_alloc.h), which is right for its own
 * small allocations and wrong for these. So the readers (fl_io.h) and
 * the building of a view's tree (fl_tree.h, fl_output.h) charge a budget
 * before they allocate what input asked for: bytes of memory, and frames
 * of work (a frame read, a frame of a stack walked). Past either limit,
 * or once the caller has set the cancel flag, a charge fails, and so does
 * every charge after it; the work stops and its function returns an
 * error that names the input, the limit and the option that raises it:
 *
 *   b.gz needs more than the 64 MiB of memory the budget allows; raise
 *   it with max_memory=SIZE
 *
 * Charges add up and are never given back: a budget bounds one piece of
 * work (a %profload, a drawing, a run of the cflame command), whose
 * memory is mostly held until it ends. What is charged is an estimate
 * made before the allocation, per item, from measured costs
 * (docs/PERFORMANCE.md), so a refusal comes before the memory is touched.
 *
 * A budget belongs to the thread that does the work; only the flag that
 * cancel points to may be set from another (a kernel's interrupt), and a
 * charge reads it, so a long read or drawing stops within a few
 * milliseconds of it being set. */
#ifndef FL_BUDGET_H
#define FL_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_api.h"

/* The cancel flag's type: C11's atomic_bool, std::atomic<bool> in C++
 * (one layout on every compiler the library supports). */
#ifdef __cplusplus
#include <atomic>
typedef std::atomic<bool> fl_cancel_flag_t;
#else
#include <stdatomic.h>
typedef atomic_bool fl_cancel_flag_t;
#endif

CFLAME_BEGIN_DECLS

/* Why a budget stopped charging. */
typedef enum fl_budget_state {
  FL_BUDGET_OK = 0,      /* charges go on */
  FL_BUDGET_OVER_MEMORY, /* a charge would have passed max_bytes */
  FL_BUDGET_OVER_FRAMES, /* a charge would have passed max_frames */
  FL_BUDGET_CANCELLED,   /* *cancel was set */
} fl_budget_state_t;

typedef struct fl_budget {
  size_t max_bytes;    /* the limit on memory; 0 at fl_budget_init: the default */
  uint64_t max_frames; /* the limit on work; 0: none beyond what max_bytes bounds */
  size_t bytes;        /* charged so far */
  uint64_t frames;     /* charged so far */
  /* How the user raises the limit, for the error: "max_memory=SIZE",
   * "--max-memory SIZE" (borrowed); NULL: not said. */
  const char *raise_with;
  /* Set (to true) from any thread to stop the work: the next charge fails.
   * Borrowed; NULL: the work cannot be cancelled. */
  const fl_cancel_flag_t *cancel;
  fl_budget_state_t state; /* FL_BUDGET_OK until a charge fails */
} fl_budget_t;

/* The default limit on memory: a quarter of the machine's physical memory
 * (sysconf), at least 64 MiB. Computed once. */
size_t fl_budget_default_bytes(void);

/* A budget of max_bytes (0: fl_budget_default_bytes()), no limit on
 * frames, nothing charged, not cancellable, raise_with NULL. */
void fl_budget_init(fl_budget_t *b, size_t max_bytes);

/* Charges bytes of memory and frames of work. Returns 0, or -1 when the
 * charge would pass a limit or the cancel flag is set (then b->state says
 * which, and every later charge fails too; nothing is added). */
int fl_budget_charge(fl_budget_t *b, size_t bytes, uint64_t frames);

/* bytes times count (an allocation of count items), saturated: a product
 * past SIZE_MAX is past every budget. */
int fl_budget_charge_n(fl_budget_t *b, size_t count, size_t size, uint64_t frames);

/* Whether the budget has stopped (a charge failed, or cancel is set):
 * fl_budget_charge(b, 0, 0) < 0, for loops that charge nothing. */
bool fl_budget_stopped(fl_budget_t *b);

/* What stopped b, about subject (what the work was on: an input's name,
 * "the flame graph"), into out:
 *   "SUBJECT needs more than the 64 MiB of memory the budget allows;
 *    raise it with max_memory=SIZE"
 *   "SUBJECT needs more than 10,000,000 frames of work, the most the
 *    budget allows; raise it with ..."
 *   "SUBJECT: cancelled"
 * An empty string while b->state is FL_BUDGET_OK. */
void fl_budget_message(const fl_budget_t *b, const char *subject, char *out, size_t size);

CFLAME_END_DECLS

#endif
