/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_execute: the room that runs executions, as the kernel's loop sees it.
 *
 * It owns the session, the profiling state and the worker (the kernel
 * keeps them in its parts), answers execute_request and input_reply (the
 * execution's files, kn_exec.h) and the simple requests (kn_requests.h),
 * and gives the loop what to poll: the worker's pipes, the running
 * execution's descriptors and timers (shell waits while one runs, and
 * while the worker starts), a cancelled job left behind. It sits above
 * every file of the execution, which call none of it. */
#ifndef KN_EXECUTE_H
#define KN_EXECUTE_H

#include <stddef.h>

#include "kn_kernel.h"

/* Makes the session, the profiling state and the worker, registers the
 * handlers and rooms above on k, and starts the worker. Shutdown frees all
 * of it. Returns 0, or -1 with err. */
int kn_execute_open(kn_kernel_t *k, char *err, size_t err_size);

#endif
