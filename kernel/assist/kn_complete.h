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
 * kn_complete_fds and calls kn_complete_on_ready. Meanwhile it serves
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

typedef struct kn_complete kn_complete_t;

/* Ready to ask libclang's process (cflame-clang, next to the kernel),
 * started on the first request; without it (it cannot be run, or died on
 * the request's text), completion falls back to the session's names and
 * the keywords. */
kn_complete_t *kn_complete_new(void);
/* Drops the requests not yet answered, stops man and libclang's process. */
void kn_complete_destroy(kn_complete_t **c);

/* Whether msg is a request this module answers. */
bool kn_complete_handles(const kn_msg_t *msg);
/* Answers a complete_request or inspect_request from channel; takes msg. */
void kn_complete_request(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg);

/* Inspects name (a C identifier) for the execution e, whose cell is only
 * `name?` (detail 0) or `name??` (detail 1), as IPython answers them: the
 * inspection an inspect_request would get is shown as e's output, and e
 * finishes (with NameError when nothing is known of name). e waits
 * meanwhile (its inspecting flag); the loop goes on serving. */
void kn_complete_inspect_for(kn_kernel_t *k, kn_exec_t *e, const char *name, int detail);
/* e ends otherwise (an interrupt, the worker's end): its inspection is
 * answered to no one. */
void kn_complete_forget(kn_kernel_t *k, const kn_exec_t *e);

/* The descriptors to poll for reading: libclang's process's and a manual
 * page's (-1 where there is none). */
void kn_complete_fds(const kn_complete_t *c, int fds[2]);
/* Milliseconds until a manual page is given up on, or -1. */
int kn_complete_timeout(const kn_complete_t *c);
/* Takes what is ready and answers what it can; never blocks. */
void kn_complete_on_ready(kn_kernel_t *k);

#endif
