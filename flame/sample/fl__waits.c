/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__waits: the wrappers of the calls a thread waits in (see
 * fl__waits.h). Each is WAIT(call, args): the C library's function, timed
 * when the sampler records waits on the thread. */
#define _GNU_SOURCE
#include "fl__waits.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cflame/fl_sampler.h"
#include "fl__common.h"

/* The C library's functions, found once. */
#define REAL_POINTER(call, reason) static __typeof__(call) *real_##call;
FL_SAMPLER_WAIT_CALLS(REAL_POINTER)
#undef REAL_POINTER
static __typeof__(pthread_mutex_trylock) *real_pthread_mutex_trylock;
static __typeof__(pthread_rwlock_tryrdlock) *real_pthread_rwlock_tryrdlock;
static __typeof__(pthread_rwlock_trywrlock) *real_pthread_rwlock_trywrlock;

static int resolve(void **slot, const char *name) {
  void *fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!fn) {
    fn = dlsym(RTLD_NEXT, name);
    if (!fn) return -1;
    __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
  }
  return 0;
}

void fl__waits_set_read(ssize_t (*fn)(int fd, void *buf, size_t n)) {
  __atomic_store_n(&real_read, fn, __ATOMIC_RELEASE);
}

int fl__waits_init(void) {
  int rc = 0;
#define RESOLVE(call, reason) rc |= resolve((void **)&real_##call, #call);
  FL_SAMPLER_WAIT_CALLS(RESOLVE)
#undef RESOLVE
  rc |= resolve((void **)&real_pthread_mutex_trylock, "pthread_mutex_trylock");
  rc |= resolve((void **)&real_pthread_rwlock_tryrdlock, "pthread_rwlock_tryrdlock");
  rc |= resolve((void **)&real_pthread_rwlock_trywrlock, "pthread_rwlock_trywrlock");
  return rc;
}

/* Every function found at load, before the program can install a signal
 * handler that waits: dlsym is not async-signal-safe. The lookup in WAIT
 * is left for calls made before this runs (from other objects'
 * constructors), when no handler of the program's can be running. */
__attribute__((constructor)) static void resolve_at_load(void) {
  fl__waits_init();
}

/* Per thread, by wait: its last call lasted FL_SAMPLER_WAIT_MIN_NS or
 * more (or there was none yet), so its next one reads the CPU clock and
 * the run delay (fl_sampler_wait_done). A loop of quick writes reads only
 * the vDSO's wall clock; a loop of waits, or a thread's one join or sleep,
 * has each wait's CPU time subtracted and its delay in waiting for a CPU
 * told apart, but for the first long one after quick ones. */
static __thread uint64_t long_calls __attribute__((tls_model("initial-exec"))) = ~0ull;
_Static_assert(FL_SAMPLER_N_WAITS <= 64, "a bit per wait");

/* The body of the wrapper of call: args are its parameters, in
 * parentheses. Without the C library's function (it cannot be found:
 * nothing this process could do) the call fails with ENOSYS. */
#define WAIT(call, args)                                                   \
  do {                                                                     \
    if (!real_##call && resolve((void **)&real_##call, #call) < 0) {       \
      errno = ENOSYS;                                                      \
      return -1;                                                           \
    }                                                                      \
    if (!fl_sampler_waits_on()) return real_##call args;                   \
    const uint64_t bit = 1ull << FL_SAMPLER_WAIT_##call;                   \
    int64_t cpu0 = -1, delay0 = -1;                                        \
    if (long_calls & bit) {                                                \
      cpu0 = fl__clock_ns(CLOCK_THREAD_CPUTIME_ID);                        \
      delay0 = fl_sampler_run_delay_ns();                                  \
    }                                                                      \
    int64_t wall0 = fl__clock_ns(CLOCK_MONOTONIC);                         \
    __typeof__(real_##call args) ret_ = real_##call args;                  \
    if (fl_sampler_wait_done(FL_SAMPLER_WAIT_##call, wall0, cpu0, delay0)) \
      long_calls |= bit;                                                   \
    else                                                                   \
      long_calls &= ~bit;                                                  \
    return ret_;                                                           \
  } while (0)

/* For a lock: try it first, and time only a lock that has to wait. A try
 * that does not find it busy has done what the lock would (taken it, or
 * failed as the lock would: EDEADLK's cases fail the try with EBUSY and
 * then the lock). */
#define LOCK(call, try, lock)                                          \
  do {                                                                 \
    if ((!real_##call && resolve((void **)&real_##call, #call) < 0) || \
        (!real_##try && resolve((void **)&real_##try, #try) < 0))      \
      return ENOSYS;                                                   \
    if (!fl_sampler_waits_on()) return real_##call(lock);              \
    int tried = real_##try(lock);                                      \
    if (tried != EBUSY) return tried;                                  \
    WAIT(call, (lock));                                                \
  } while (0)

/* ---- sleep ---- */

unsigned int sleep(unsigned int seconds) {
  WAIT(sleep, (seconds));
}
int usleep(useconds_t usec) {
  WAIT(usleep, (usec));
}
int nanosleep(const struct timespec *req, struct timespec *rem) {
  WAIT(nanosleep, (req, rem));
}
int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem) {
  WAIT(clock_nanosleep, (clock, flags, req, rem));
}

/* ---- poll ---- */

int poll(struct pollfd *fds, nfds_t n, int timeout) {
  WAIT(poll, (fds, n, timeout));
}
int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask) {
  WAIT(ppoll, (fds, n, timeout, mask));
}
int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout) {
  WAIT(select, (n, r, w, e, timeout));
}
int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
            const sigset_t *mask) {
  WAIT(pselect, (n, r, w, e, timeout, mask));
}
int epoll_wait(int ep, struct epoll_event *events, int max, int timeout) {
  WAIT(epoll_wait, (ep, events, max, timeout));
}
int epoll_pwait(int ep, struct epoll_event *events, int max, int timeout, const sigset_t *mask) {
  WAIT(epoll_pwait, (ep, events, max, timeout, mask));
}

/* ---- read and write ---- */

ssize_t read(int fd, void *buf, size_t n) {
  WAIT(read, (fd, buf, n));
}
ssize_t readv(int fd, const struct iovec *iov, int n) {
  WAIT(readv, (fd, iov, n));
}
ssize_t pread(int fd, void *buf, size_t n, off_t at) {
  WAIT(pread, (fd, buf, n, at));
}
ssize_t recv(int fd, void *buf, size_t n, int flags) {
  WAIT(recv, (fd, buf, n, flags));
}
ssize_t recvfrom(int fd, void *restrict buf, size_t n, int flags, __SOCKADDR_ARG from,
                 socklen_t *restrict len) {
  WAIT(recvfrom, (fd, buf, n, flags, from, len));
}
ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
  WAIT(recvmsg, (fd, msg, flags));
}
ssize_t write(int fd, const void *buf, size_t n) {
  WAIT(write, (fd, buf, n));
}
ssize_t writev(int fd, const struct iovec *iov, int n) {
  WAIT(writev, (fd, iov, n));
}
ssize_t send(int fd, const void *buf, size_t n, int flags) {
  WAIT(send, (fd, buf, n, flags));
}
ssize_t sendto(int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG to,
               socklen_t len) {
  WAIT(sendto, (fd, buf, n, flags, to, len));
}
ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
  WAIT(sendmsg, (fd, msg, flags));
}
int accept(int fd, __SOCKADDR_ARG addr, socklen_t *restrict len) {
  WAIT(accept, (fd, addr, len));
}
int accept4(int fd, __SOCKADDR_ARG addr, socklen_t *restrict len, int flags) {
  WAIT(accept4, (fd, addr, len, flags));
}
int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len) {
  WAIT(connect, (fd, addr, len));
}

/* ---- children ---- */

pid_t wait(int *status) {
  WAIT(wait, (status));
}
pid_t waitpid(pid_t pid, int *status, int options) {
  WAIT(waitpid, (pid, status, options));
}
pid_t wait4(pid_t pid, int *status, int options, struct rusage *usage) {
  WAIT(wait4, (pid, status, options, usage));
}
int waitid(idtype_t type, id_t id, siginfo_t *info, int options) {
  WAIT(waitid, (type, id, info, options));
}

/* ---- locks and threads ---- */

int pthread_mutex_lock(pthread_mutex_t *m) {
  LOCK(pthread_mutex_lock, pthread_mutex_trylock, m);
}
int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
  WAIT(pthread_cond_wait, (c, m));
}
int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *until) {
  WAIT(pthread_cond_timedwait, (c, m, until));
}
int pthread_join(pthread_t thread, void **result) {
  WAIT(pthread_join, (thread, result));
}
int pthread_rwlock_rdlock(pthread_rwlock_t *l) {
  LOCK(pthread_rwlock_rdlock, pthread_rwlock_tryrdlock, l);
}
int pthread_rwlock_wrlock(pthread_rwlock_t *l) {
  LOCK(pthread_rwlock_wrlock, pthread_rwlock_trywrlock, l);
}
int sem_wait(sem_t *s) {
  WAIT(sem_wait, (s));
}
int sem_timedwait(sem_t *s, const struct timespec *until) {
  WAIT(sem_timedwait, (s, until));
}

/* ---- signals ---- */

int pause(void) {
  WAIT(pause, ());
}
int sigsuspend(const sigset_t *mask) {
  WAIT(sigsuspend, (mask));
}
int sigwaitinfo(const sigset_t *set, siginfo_t *info) {
  WAIT(sigwaitinfo, (set, info));
}
int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout) {
  WAIT(sigtimedwait, (set, info, timeout));
}
