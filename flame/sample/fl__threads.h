/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__threads: every thread a profiled process starts, registered with the
 * in-process recorders (fl_sampler, fl_allocs).
 *
 * Defines pthread_create and thrd_create. A host links this object into
 * the process being profiled where it comes first in symbol lookup (the
 * worker, an executable linked with exported symbols; `cflame record`'s
 * preloaded library), so that every call binds here: the program's own,
 * its shared objects' and the libraries' they load (libgomp calls
 * pthread_create through its PLT). Each new thread runs the host's enter
 * hook before its start routine and the exit hook when it ends, whether it
 * returns, calls pthread_exit or is cancelled; then the C library's
 * pthread_create, found with dlsym(RTLD_NEXT), does the rest. glibc's
 * thrd_create calls its pthread_create internally, not through the
 * symbol: wrapped too. Threads the C library starts for itself
 * (timer_create's SIGEV_THREAD helper, say) call its internal entry point
 * and are not seen.
 *
 * Internal (fl__): compiled once into an object library that the worker
 * and the preloaded library link; not installed. */
#ifndef FL__THREADS_H
#define FL__THREADS_H

/* Resolves the C library's pthread_create and sets the hooks every new
 * thread runs (enter before its start routine, exit as it ends; either may
 * be NULL). Call once, before the process starts threads; a thread started
 * earlier (by a library constructor) resolves the C library's function
 * itself and runs no hooks. Returns 0, or -1 when the C library's
 * pthread_create cannot be found. */
int fl__threads_init(void (*enter)(void), void (*exit)(void));

/* The function each wrapped thread starts in, below its start routine
 * (its name, for a profile's rule that ends thread stacks there). */
void *fl__thread_start(void *start);
#define FL__THREAD_START_NAME "fl__thread_start"

#endif
