/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_events: the perf events a profile can be weighted by instead of time
 * (the notebook's event=NAME, FL_PROFILE_EVENT): their names, as perf
 * names them, what they count, and whether this machine counts them.
 *
 * Each sample stands for `period` occurrences of the event on the thread
 * (the sampler's perf event signals the thread every period occurrences,
 * and the signal comes back in user mode, at the code that caused the
 * last one). Software events are counted by the kernel on any machine
 * that allows perf events; hardware ones need a PMU, which many virtual
 * machines do not have. */
#ifndef FL_EVENTS_H
#define FL_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_api.h"

CFLAME_BEGIN_DECLS

typedef struct fl_event {
  const char *name; /* "page-faults" */
  uint32_t type;    /* perf_event_attr.type: PERF_TYPE_SOFTWARE, PERF_TYPE_HARDWARE */
  uint64_t config;  /* perf_event_attr.config */
  uint64_t period;  /* occurrences per sample */
  const char *what; /* "pages touched for the first time, or brought back in" */
} fl_event_t;

/* The events, in the order the help lists them; NULL past the last. */
const fl_event_t *fl_event_at(size_t i);
/* The event named name, or by its perf type and config; NULL: none. */
const fl_event_t *fl_event_find(const char *name);
const fl_event_t *fl_event_by_config(uint32_t type, uint64_t config);
/* Whether the calling process may count ev on its own threads (a perf
 * event opened, disabled, and closed). */
bool fl_event_available(const fl_event_t *ev);
/* "page-faults, minor-faults, ...": the events available here, into out. */
void fl_events_available(char *out, size_t size);

CFLAME_END_DECLS

#endif
