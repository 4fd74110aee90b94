/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_clang: what libclang knows about a translation unit, asked of a
 * process of its own (cflame-clang, kernel/clang/).
 *
 * Completion and inspection read the session's C with libclang, on the
 * translation unit the session would compile (kn_session_unit_text).
 * libclang reads whatever the unit includes to its end (an #include of
 * /dev/zero never ends), a parse can take a while, and a parse cannot be
 * cancelled: so libclang never runs in the kernel. One long-lived
 * cflame-clang, started on the first job, keeps the unit and its
 * precompiled preamble from job to job (kc_libclang.h); its memory is
 * capped, and the kernel kills it when a job takes too long
 * (kn_clang_cancel) and starts another for the next job.
 *
 * The kernel's main loop hands over one job at a time (kn_clang_submit),
 * polls kn_clang_fd, which becomes readable when the result is ready or
 * the process has ended, and takes the result (kn_clang_take). Nothing
 * here blocks: the job goes through a memory file, never a full pipe; a
 * process that was killed is reaped once it has ended (kn_clang_fd is its
 * pidfd then), and only one that ended during a job is waited for, 20 ms
 * at most, to say how it ended. */
#ifndef KN_CLANG_H
#define KN_CLANG_H

#include <stdbool.h>
#include <stddef.h>

#include "kn_clangmsg.h"

typedef struct kn_clang kn_clang_t;

/* Ready to start helper (cflame-clang's path) on the first job, its
 * memory limited to memory_bytes. New. */
kn_clang_t *kn_clang_new(const char *helper, size_t memory_bytes);
/* Kills the process (a job under way is dropped) and reaps it. */
void kn_clang_destroy(kn_clang_t **c);

/* Readable when a result is ready; between jobs, when a process has ended
 * (kn_clang_take then reaps it); -1 when there is nothing to wait for. */
int kn_clang_fd(const kn_clang_t *c);
/* Whether a job was submitted and its result not yet taken. */
bool kn_clang_busy(const kn_clang_t *c);
/* Hands job to the process (started first if there is none, or it ended),
 * taking the job's members (the job is left empty). Returns 0, or -1 with
 * err when a job is under way or the process cannot be started; the job is
 * then the caller's still. */
int kn_clang_submit(kn_clang_t *c, kn_clang_job_t *job, char *err, size_t err_size);
/* The result, once kn_clang_fd was readable (new; kn_clangmsg_result_free);
 * NULL while there is none. A process that ended during the job gives a
 * result with an error and `lost` set. Never blocks. */
kn_clang_result_t *kn_clang_take(kn_clang_t *c);
/* Gives up on the job under way: kills the process, whatever it is doing;
 * the next job starts another. */
void kn_clang_cancel(kn_clang_t *c);
/* The process's id, or -1 when none runs. */
int kn_clang_pid(const kn_clang_t *c);

#endif
