/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_complete: complete_request and inspect_request.
 *
 * What a name can be completed with, and what a name is, come from what
 * the session can see: the cell's C, read by libclang (kn_clang.h) on the
 * translation unit the session would compile for the cell
 * (kn_session_unit_text), so that the prelude's and the session's headers,
 * earlier cells' declarations and struct members all count; the table of
 * magics and their options (kn_magics.h) on magic lines; file names where a
 * magic takes a PATH; and for a C library function its manual page
 * (kn_manpage.h).
 *
 * A request that needs libclang is answered when its process has answered
 * (and a manual page, when one is shown, has come): the main loop polls
 * their descriptors for this room (kn_complete_open). Meanwhile it serves
 * control, stdin and further shell requests; an execute_request goes ahead
 * (replies are matched to requests by their parent's msg_id, so their order
 * may differ from the requests'). Requests wait their turn in order, one in
 * libclang at a time. Each is answered with busy before and idle after its
 * reply, and always with status "ok": C that does not compile completes as
 * far as libclang can read it, and a name libclang cannot resolve is looked
 * up among the session's declarations, or reported as not found. */
#ifndef KN_COMPLETE_H
#define KN_COMPLETE_H

#include "kn_kernel.h"

/* Registers complete_request and inspect_request (on shell and control)
 * on k's table, the room that polls libclang's process and man, and the
 * inspector of a cell that is only `name?` (kn_exec.h); libclang's process
 * (cflame-clang, next to the kernel) starts on the first request. Without
 * it (it cannot be run, or died on the request's text), completion falls
 * back to the session's names and the keywords. Shutdown drops the requests
 * not yet answered and stops man and libclang's process. */
void kn_complete_open(kn_kernel_t *k);

#endif
