/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_events: the table of perf events a profile can count (see
 * fl_events.h). */
#define _GNU_SOURCE
#include "cflame/fl_events.h"

#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "fl__common.h"

/* Software events signal at each occurrence (they are rare enough: a page
 * fault costs more than the sample); hardware ones every period. */
static const fl_event_t events[] = {
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 1,
     "page faults: pages touched for the first time, or brought back in"},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, 1,
     "page faults served without I/O"},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1,
     "page faults that waited for I/O"},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1,
     "times the thread left the CPU"},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 1,
     "times the thread moved to another CPU"},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1000000, "CPU cycles"},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 1000000,
     "instructions retired"},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 1000,
     "last-level cache misses"},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 1000,
     "mispredicted branches"},
};
#define N_EVENTS (FL__ARRAY_SIZE(events))

const fl_event_t *fl_event_at(size_t i) {
  return i < N_EVENTS ? &events[i] : NULL;
}

const fl_event_t *fl_event_find(const char *name) {
  for (size_t i = 0; i < N_EVENTS; i++)
    if (!strcmp(events[i].name, name)) return &events[i];
  return NULL;
}

const fl_event_t *fl_event_by_config(uint32_t type, uint64_t config) {
  for (size_t i = 0; i < N_EVENTS; i++)
    if (events[i].type == type && events[i].config == config) return &events[i];
  return NULL;
}

bool fl_event_available(const fl_event_t *ev) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = ev->type;
  a.config = ev->config;
  a.disabled = 1;
  a.exclude_kernel = 1; /* what any perf_event_paranoid below 3 allows */
  a.exclude_hv = 1;
  int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return false;
  close(fd);
  return true;
}

void fl_events_available(char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < N_EVENTS && len < size; i++) {
    if (!fl_event_available(&events[i])) continue;
    int n = snprintf(out + len, size - len, "%s%s", len ? ", " : "", events[i].name);
    if (n > 0) len += (size_t)n;
  }
}
