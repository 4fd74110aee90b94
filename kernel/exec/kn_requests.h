/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_requests: the requests answered at once, from what the kernel knows
 * (kernel_info, is_complete, history, comm_info, shutdown, and comms, of
 * which there are none). complete_request and inspect_request are
 * kn_complete.h's, execute_request kn_exec.h's. */
#ifndef KN_REQUESTS_H
#define KN_REQUESTS_H

#include "kn_kernel.h"

/* Registers their handlers (KN_SERVE, on shell and control) on k's table. */
void kn_requests_register(kn_kernel_t *k);

#endif
