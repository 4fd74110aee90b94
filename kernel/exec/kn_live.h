/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_live: a profiled cell's graph while it runs (every=SECONDS).
 *
 * In `jupyter console` (kn_kernel_console), which prints display_data and
 * ignores update_display_data, the graph is instead one line on stderr,
 * "live: 12.0 s so far, 11,873 samples", that each update rewrites (a
 * carriage return first, as progress bars do), and that is erased before
 * anything else the cell shows: the final graph prints as a graph of its
 * own.
 *
 * From the worker's "running" on, every `every` seconds the loop starts a
 * drawing on a thread of its own (as kn_job.c runs a line magic): it reads
 * the records the worker has committed so far (kn_profrun_so_far: the
 * sampler keeps writing meanwhile, and the reader stops at the first
 * record not yet complete, fl_sampler.h), draws them as the cell's magic
 * asks, with "live: 12.0 s so far, 11,873 samples" under the title, and
 * writes a descriptor the loop polls. The loop then publishes the graph:
 * the first as display_data under a display_id of its own, each later one
 * as update_display_data to it, and the final graph (kn_profrun.c) replaces
 * the last. A drawing of as many stacks as the last one shown is dropped
 * (the cell took no sample meanwhile): a CPU profile's graphs grow from
 * one to the next. (An allocation profile's live read skips a record the
 * recorder is still writing, which the next read has: what a live graph
 * holds is in the final one, not always the final one's prefix; with
 * live=true, blocks freed since drop out.)
 *
 * Ownership: while a drawing runs it uses the profiling state (kp: its
 * symbolizer, the source reader) and the request; the loop leaves both
 * alone while a cell runs, and joins the thread (kn_live_stop) before the
 * run's own collection. Nothing else of the kernel is touched off the
 * loop: the thread neither logs nor publishes. */
#ifndef KN_LIVE_H
#define KN_LIVE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kn_prof.h"
#include "kn_profreq.h"

typedef struct kn_live kn_live_t;

/* What the worker pid has recorded so far of cell's run that req asked
 * for (kn_profrun_so_far), read on the drawing's thread. NULL with err. */
typedef fl_profile_t *(*kn_live_read_fn)(kn_prof_t *kp, const kn_profreq_t *req, int cell,
                                         pid_t pid, char *err, size_t err_size);
/* The live graphs of cell's run (req: its magic's, with every_ns > 0;
 * borrowed, as kp, until kn_live_destroy), sampled by the worker pid and
 * read by read, whose run starts at now_ns (CLOCK_MONOTONIC): the first
 * drawing is due every_ns later. */
kn_live_t *kn_live_new(kn_prof_t *kp, const kn_profreq_t *req, int cell, pid_t pid,
                       kn_live_read_fn read, int64_t now_ns, bool line);
/* Starts the drawing that is due at now_ns, unless one is under way.
 * Returns the milliseconds until the next is due, or -1 while one is
 * under way (its descriptor says when it ends). */
int kn_live_tick(kn_live_t *l, int64_t now_ns);
/* A descriptor readable once the drawing under way has ended; -1 when
 * none is under way. */
int kn_live_fd(const kn_live_t *l);
/* Whether a drawing is under way (started, not yet taken). */
bool kn_live_busy(const kn_live_t *l);
/* Whether the drawing under way has ended (kn_live_fd is readable). */
bool kn_live_ended(const kn_live_t *l);
/* Joins the drawing that ended and gives its display_data content (new),
 * or NULL when there is nothing new to show (no sample since the last
 * graph, a drawing given up or failed). *update: the content replaces the
 * graph shown under kn_live_display_id (else it is the first). A line's
 * content (kn_live_line) is a stream message's instead. */
json_t *kn_live_take(kn_live_t *l, bool *update);
/* Whether l shows a line rather than graphs. */
bool kn_live_line(const kn_live_t *l);
/* The stream content that erases the line shown (new), once; NULL when no
 * line is shown. */
json_t *kn_live_erase(kn_live_t *l);
/* Why the drawing last taken gave no graph ("" when it did, or had
 * nothing new to show): for the kernel's log. */
const char *kn_live_error(const kn_live_t *l);
/* Ends the live graphs: gives up the drawing under way, if any, waits for
 * its thread, and starts no other (the run ended, or its worker died). The
 * graph shown keeps its display_id, for the final graph. */
void kn_live_stop(kn_live_t *l);
/* The display_id of the graphs shown, or NULL when none was. */
const char *kn_live_display_id(const kn_live_t *l);
/* Stops (kn_live_stop) and frees *l; NULL is fine. */
void kn_live_destroy(kn_live_t **l);

#endif
