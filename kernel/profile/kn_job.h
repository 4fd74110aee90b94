/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_job: work on profiles run off the main loop.
 *
 * Reading a profile (%profload) and drawing one (%profshow, %profsave,
 * %profprint, %profhistory N, %profdiffview NAME, and the graph after a
 * profiled cell) take as long as their input is large: seconds for
 * millions of stacks. The main loop must keep answering control
 * (kernel_info, interrupt, shutdown) meanwhile, so such work (a magic's
 * handler, kn_magics.h's prof_line; the cell's graph, kn_profrun.c) runs
 * on a thread of its own, as the compiler runs in a process the loop
 * polls: the loop polls the job's descriptor, and when it is readable
 * joins the thread and carries on with the cell.
 *
 * Ownership: from kn_job_start to kn_job_finish the job owns the kernel's
 * profiling state (the kn_prof_t, with the session profile, the baselines,
 * the runs kept and the last graph shown): the main loop does not touch it
 * meanwhile, and the thread touches nothing else but the session's inputs
 * (kn_history_t, read for a view of the cells' source, which no request
 * changes while a cell runs). The thread neither logs nor sends messages:
 * its result comes back to the loop, which says it.
 *
 * Cancelling (an interrupt) and changing the profiling state race: the
 * loop's kn_job_cancel and the handler's claim before its first change
 * (kn_prof_set_owner) each try to settle the job, and the first wins. A
 * cancelled job changes nothing from then on, and its reading or drawing
 * stops soon after (the flag its budgets check), so the loop may answer
 * its cell at once and join the thread later (kn_kernel_parts_t.left_job). */
#ifndef KN_JOB_H
#define KN_JOB_H

#include <stdbool.h>
#include <stddef.h>

#include "kn_magic.h"
#include "kn_profmagic.h"

typedef struct kn_job kn_job_t;

/* Runs fn(kp, args, ...) on a new thread; kp belongs to the job until
 * kn_job_finish. args is copied, so the job may outlive its cell (an
 * interrupt: kn_kernel_parts_t.left_job). Returns the job, or NULL with err (no
 * thread could be started; then nothing ran). */
kn_job_t *kn_job_start(kn_prof_t *kp, kn_prof_line_fn fn, const char *args, char *err,
                       size_t err_size);
/* Work of the kernel's own on a job: fills res (or err), as a line magic. */
typedef int (*kn_job_fn)(kn_prof_t *kp, void *ctx, kn_magic_result_t *res, char *err,
                         size_t err_size);
/* Runs fn(kp, ctx, ...) on a new thread, as kn_job_start. ctx is borrowed:
 * it must outlive the job, which is therefore finished (kn_job_finish),
 * never left to the kernel. */
kn_job_t *kn_job_start_fn(kn_prof_t *kp, kn_job_fn fn, void *ctx, char *err, size_t err_size);
/* A descriptor that becomes readable when the handler has returned. */
int kn_job_fd(const kn_job_t *j);
/* Whether the handler has returned (kn_job_fd is readable). */
bool kn_job_done(const kn_job_t *j);
/* Cancels the job: its handler will change nothing, and the readers and
 * views it runs return an error soon after. Returns true, or false when
 * it is too late: the handler has claimed the profiling state to change
 * it (kn_prof_set_owner), so its result stands. Safe to call again. */
bool kn_job_cancel(kn_job_t *j);
/* Tells a job that kn_job_cancel refused (it has claimed the profiling
 * state) that an interrupt came: work that waits on something outside
 * (%profattach's helper) ends it and keeps what it has (kn_prof_interrupted). */
void kn_job_interrupt(kn_job_t *j);
/* Stops the readers and views the job runs (they return an error soon
 * after), whatever it has changed, which stands: for work that must keep
 * what it made however it ends (a profiled cell's profile, kn_profrun.c).
 * The job's work sees kn_prof_cancelled. */
void kn_job_stop(kn_job_t *j);
/* Whether kn_job_cancel succeeded. */
bool kn_job_cancelled(const kn_job_t *j);
/* Waits for the handler to return (at once when kn_job_fd is readable),
 * gives back its result and frees the job, setting *j to NULL: the
 * handler's return value (0, or -1 with err), *res as it filled it. */
int kn_job_finish(kn_job_t **j, kn_magic_result_t *res, char *err, size_t err_size);
/* Cancels *j if it can, stops its reading and drawing (kn_job_stop),
 * waits for it and drops its result: a job whose cell was answered
 * already (an interrupt), or at shutdown. NULL: none. */
void kn_job_discard(kn_job_t **j);

#endif
