/* Threads that cells start (see kw.h).
 *
 * The sampler (fl_sampler) samples the threads that registered with it;
 * the allocation recorder (fl_allocs) records every thread, and warms up
 * on each new one here so that its first recorded allocation costs no more
 * than the others. The crash handler runs on an alternate signal stack,
 * which is per thread: each new thread gets its own (kw_fault.c), so that
 * a stack overflow in it is reported as one on the main thread is.
 * The worker exports pthread_create and thrd_create: cells' shared objects
 * and the libraries they load bind to the executable's symbols first, so
 * every thread a cell starts, OpenMP's included (libgomp calls
 * pthread_create through its PLT), goes through here. The new thread
 * registers before it runs the cell's start routine and unregisters when
 * it ends, whether it returns, calls pthread_exit or is cancelled.
 *
 * Threads the C library starts for itself (timer_create's SIGEV_THREAD
 * helper, say) call its internal entry point and are not sampled. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

#include "cflame/fl_allocs.h"
#include "cflame/fl_sampler.h"
#include "kw.h"

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static pthread_create_fn real_pthread_create;

typedef struct thread_start {
  void *(*routine)(void *);   /* pthread_create's */
  int (*c11_routine)(void *); /* or thrd_create's */
  void *arg;
} thread_start_t;

static void leave_worker(void *unused) {
  (void)unused;
  fl_sampler_thread_exit();
  fl_allocs_thread_exit();
  kw_fault_thread_exit();
}

static void *run_thread(void *p) {
  thread_start_t start = *(thread_start_t *)p;
  free(p);
  void *result;
  kw_fault_thread_enter();
  fl_sampler_thread_enter();
  fl_allocs_thread_enter();
  pthread_cleanup_push(leave_worker, NULL);
  if (start.c11_routine)
    result = (void *)(intptr_t)start.c11_routine(start.arg);
  else
    result = start.routine(start.arg);
  pthread_cleanup_pop(1);
  return result;
}

static pthread_create_fn resolve_pthread_create(void) {
  pthread_create_fn fn;
  *(void **)&fn = dlsym(RTLD_NEXT, "pthread_create");
  return fn;
}

int kw_threads_init(void) {
  real_pthread_create = resolve_pthread_create();
  return real_pthread_create ? 0 : -1;
}

/* Starts the thread through the C library with run_thread in front. */
static int create(pthread_t *thread, const pthread_attr_t *attr, thread_start_t start) {
  pthread_create_fn real = real_pthread_create;
  if (!real) real = resolve_pthread_create(); /* a library constructor, before main */
  if (!real) return EAGAIN;
  thread_start_t *p = malloc(sizeof *p);
  if (!p) return EAGAIN;
  *p = start;
  int rc = real(thread, attr, run_thread, p);
  if (rc != 0) free(p);
  return rc;
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*routine)(void *),
                   void *arg) {
  return create(thread, attr, (thread_start_t){.routine = routine, .arg = arg});
}

/* glibc's thrd_create calls its pthread_create internally, not through
 * the symbol: wrapped too. A C11 thread's int result travels as a
 * pointer-sized integer, as glibc's own thrd_join expects. */
int thrd_create(thrd_t *thread, thrd_start_t routine, void *arg) {
  int rc = create((pthread_t *)thread, NULL, (thread_start_t){.c11_routine = routine, .arg = arg});
  return rc == 0 ? thrd_success : rc == ENOMEM ? thrd_nomem : thrd_error;
}
