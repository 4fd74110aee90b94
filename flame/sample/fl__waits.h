/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__waits: the calls a thread waits in, timed for wall-clock profiles.
 *
 * Defines each function of FL_SAMPLER_WAIT_CALLS (fl_sampler.h: sleep,
 * nanosleep, poll, read, waitpid, pthread_mutex_lock, ...). A host links
 * this object where it comes first in symbol lookup, as fl__threads.h's
 * (the worker, an executable linked with exported symbols; `cflame
 * record`'s preloaded library), so that the calls of the profiled code,
 * its shared objects and the libraries they load bind here. Each wrapper
 * calls the C library's function (found with dlsym(RTLD_NEXT)) with the
 * same arguments and returns what it returned, errno included; when the
 * sampler records waits on the calling thread (fl_sampler_waits_on: a
 * wall-clock run), it reads the wall and CPU clocks around the call and
 * hands them to fl_sampler_wait_done. The call itself is never
 * interrupted or repeated: a sleep sleeps as long, a read returns what it
 * would have.
 *
 * pthread_mutex_lock and pthread_rwlock_*lock try the lock first and time
 * only a lock that has to wait, so that an uncontended lock costs a try.
 *
 * What is not seen: a wait inside the C library (fread, getchar and
 * system call read and waitpid by their internal names), a raw syscall(2)
 * or an inline futex, and a statically linked program's calls. They count
 * as neither CPU nor off-CPU time: the profile's header says how much of
 * the wall time its samples cover.
 *
 * Internal (fl__): compiled once into an object library that the worker
 * and the preloaded library link; not installed. */
#ifndef FL__WAITS_H
#define FL__WAITS_H

#include <sys/types.h>

/* Resolves the C library's functions. Call once, early (a wrapper called
 * before resolves its own function). Returns 0, or -1 when one cannot be
 * found. */
int fl__waits_init(void);

/* The read that the read wrapper calls instead of the C library's: the
 * host's own (the worker reads descriptor 0 from the frontend). Call it
 * before the profiled code runs. */
void fl__waits_set_read(ssize_t (*fn)(int fd, void *buf, size_t n));

#endif
