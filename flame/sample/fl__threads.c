/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__threads: pthread_create and thrd_create wrappers that register every
 * new thread with the recorders (see fl__threads.h). */
#define _GNU_SOURCE
#include "fl__threads.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static pthread_create_fn real_pthread_create;
static void (*enter_hook)(void);
static void (*exit_hook)(void);

typedef struct thread_start {
  void *(*routine)(void *);   /* pthread_create's */
  int (*c11_routine)(void *); /* or thrd_create's */
  void *arg;
  /* The hooks as they were when the thread was created. */
  void (*enter)(void);
  void (*exit)(void);
} thread_start_t;

/* Runs the exit hook once the routine has returned or the thread is
 * cancelled. Named for what it is: a sample that lands here (the
 * recorder's own cost at a thread's end) shows under this name. */
static void fl__thread_leave(void *start) {
  const thread_start_t *s = start;
  if (s->exit) s->exit();
}

/* Where every wrapped thread starts (FL__THREAD_START_NAME). */
void *fl__thread_start(void *p) {
  thread_start_t start = *(thread_start_t *)p;
  free(p);
  void *result;
  if (start.enter) start.enter();
  pthread_cleanup_push(fl__thread_leave, &start);
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

int fl__threads_init(void (*enter)(void), void (*exit)(void)) {
  enter_hook = enter;
  exit_hook = exit;
  real_pthread_create = resolve_pthread_create();
  return real_pthread_create ? 0 : -1;
}

/* Starts the thread through the C library with fl__thread_start in front. */
static int create(pthread_t *thread, const pthread_attr_t *attr, thread_start_t start) {
  pthread_create_fn real = real_pthread_create;
  if (!real) real = resolve_pthread_create(); /* a library constructor, before init */
  if (!real) return EAGAIN;
  thread_start_t *p = malloc(sizeof *p);
  if (!p) return EAGAIN;
  start.enter = enter_hook;
  start.exit = exit_hook;
  *p = start;
  int rc = real(thread, attr, fl__thread_start, p);
  if (rc != 0) free(p);
  return rc;
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*routine)(void *),
                   void *arg) {
  return create(thread, attr, (thread_start_t){.routine = routine, .arg = arg});
}

/* A C11 thread's int result travels as a pointer-sized integer, as glibc's
 * own thrd_join expects. */
int thrd_create(thrd_t *thread, thrd_start_t routine, void *arg) {
  int rc = create((pthread_t *)thread, NULL, (thread_start_t){.c11_routine = routine, .arg = arg});
  return rc == 0 ? thrd_success : rc == ENOMEM ? thrd_nomem : thrd_error;
}
