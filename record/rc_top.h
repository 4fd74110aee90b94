/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_top: `cflame record --top`, the live table of the hottest functions
 * while the program runs, as `perf top` shows them.
 *
 * The table is the flame library's (fl_text_top_live): the functions by
 * self, with self and total, and the processes' and threads' shares,
 * made from what the recording holds so far (rc_collect reads the buffers
 * as the preloaded sampler writes them, without stopping or locking it;
 * with --pid, the attach's buffer between its ticks).
 *
 * It is drawn on standard error, and only when that is a terminal;
 * otherwise --top draws nothing and the output is a run's without it.
 * The table keeps the bottom of the terminal: at most half of its rows,
 * every line cut to its width (TIOCGWINSZ, read again at each redraw, so
 * a resized terminal is followed). The rows above are a scrolling region
 * (DECSTBM) in which the program's own output to the terminal goes on as
 * before, never overwritten: each redraw is one write(2), which the
 * terminal never interleaves with another write, and it puts the cursor
 * back where the program left it. At the end the region is given back and
 * the table cleared; the profile is written as without --top.
 *
 * The table is redrawn at most once a second, and less often when making
 * it took more than a tenth of a second of cflame's CPU (a long
 * recording): cflame's own work stays under a tenth of one CPU, and the
 * program's is not touched at all. */
#ifndef RC_TOP_H
#define RC_TOP_H

#include <stdint.h>

#include "cflame/fl_attach.h"
#include "cflame/fl_options.h"
#include "rc_collect.h"

typedef struct rc_top rc_top_t;

/* The live table of the recording in dir, or of the attach to pid (not
 * 0), read with copts, drawn with draw's tree options, headed by name;
 * all borrowed until rc_top_end. NULL when standard error is not a
 * terminal: nothing is drawn. */
rc_top_t *rc_top_new(const char *dir, int pid, const rc_collect_opts_t *copts,
                     const fl_options_t *draw, const char *name);
/* Redraws the table when it is due; call it often (every 50 ms). ctx is
 * an rc_top_t (rc_run's tick). */
void rc_top_tick(void *ctx);
/* The same for an attach (fl_attach_opts_t.progress, ctx an rc_top_t):
 * the table of what it has recorded so far, of the target and of each
 * process it follows. */
void rc_top_attached(void *ctx, const void *buf, size_t bytes, const fl_attach_result_t *sofar);
/* Clears the table, gives the terminal's rows back, and frees top. */
void rc_top_end(rc_top_t **top);

#endif
