/* SPDX-License-Identifier: BSD-3-Clause */
/* Threads that cells start (see kw.h).
 *
 * The pthread_create and thrd_create wrappers are the flame library's
 * (flame/sample/fl__threads.c), linked into the worker, which exports them: cells'
 * shared objects and the libraries they load bind to the executable's
 * symbols first, so every thread a cell starts, OpenMP's included, goes
 * through them. This file gives them the worker's hooks:
 *
 * The sampler (fl_sampler) samples the threads that registered with it;
 * the allocation recorder (fl_allocs) records every thread, and warms up
 * on each new one here so that its first recorded allocation costs no more
 * than the others. The crash handler runs on an alternate signal stack,
 * which is per thread: each new thread gets its own (kw_fault.c), so that
 * a stack overflow in it is reported as one on the main thread is.
 *
 * The wrappers of the calls a thread waits in (flame/sample/fl__waits.c) are
 * linked and exported the same way, for wall-clock profiles. */
#include "cflame/fl_allocs.h"
#include "cflame/fl_sampler.h"
#include "fl__threads.h"
#include "fl__waits.h"
#include "kw.h"

static void enter_worker(void) {
  kw_fault_thread_enter();
  fl_sampler_thread_enter();
  fl_allocs_thread_enter();
}

static void leave_worker(void) {
  fl_sampler_thread_exit();
  fl_allocs_thread_exit();
  kw_fault_thread_exit();
}

int kw_threads_init(void) {
  return fl__threads_init(enter_worker, leave_worker) < 0 || fl__waits_init() < 0 ? -1 : 0;
}
