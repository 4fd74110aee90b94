/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_attach: `cflame record --pid PID`: the library's attach (fl_attach.h)
 * to a process that is already running, written as a recording directory
 * (rc_files.h) as the preloaded library would have written it: the
 * target's process image, PID.0, and with --follow-forks each followed
 * child's, CHILD.0 as forked and CHILD.1, CHILD.2, ... for the programs
 * it exec'd; each its info (pid, ppid, name), its maps snapshots and its
 * sample buffer. From there the recording is collected and drawn
 * as any other (rc_collect.h, rc_record.c).
 *
 * SIGINT, SIGTERM and SIGHUP sent to cflame meanwhile end the attach (it
 * detaches and the profile of what was taken is written); they never
 * reach the target, which is not cflame's child. */
#ifndef RC_ATTACH_H
#define RC_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_attach.h"

typedef struct rc_attached {
  fl_attach_result_t result; /* the buffer and maps already written out */
  char *command;             /* the target's command line (/proc/PID/cmdline), new */
} rc_attached_t;

/* Attaches to pid for duration_s (<= 0: until the target ends or a
 * signal), following the children it forks meanwhile when follow_forks
 * says so, sampling every interval_ns of each thread's CPU time, keeping
 * at most buffer_words words of records, and writes the recording into
 * dir. Says on standard error once it is attached. Returns 0 with *out,
 * or -1 with err (not attached: err says why and what allows it; or the
 * recording could not be written). progress, when not NULL, is called
 * with ctx as fl_attach_opts_t's is, with the records so far. */
int rc_attach(int pid, uint64_t interval_ns, double duration_s, bool follow_forks,
              uint64_t buffer_words, const char *dir,
              void (*progress)(void *ctx, const void *buf, size_t bytes,
                               const fl_attach_result_t *sofar),
              void *ctx, rc_attached_t *out, char *err, size_t err_size);

void rc_attached_free(rc_attached_t *a);

#endif
