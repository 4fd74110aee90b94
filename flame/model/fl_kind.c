/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_kind: the table of kinds of sample (fl_profile.h), what each one's
 * weights are and which samples it draws, and the option kind='s
 * choices and help written from it (fl__kind.h).
 *
 * A kind draws its own samples, except wall-clock time, which is CPU
 * time and off-CPU time together: a wall-clock profile's samples are
 * stored as the one of the two each is (fl_profile_add_sample_of), so
 * that kind=cpu and kind=offcpu draw the parts and kind=wall the whole,
 * by one predicate (model/fl__tree.h's fl__select_takes). */
#define _GNU_SOURCE
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_profile.h"
#include "fl__common.h"
#include "fl__kind.h"

/* The table of kinds (fl_profile.h). A time kind's companion count in
 * pprof is "samples"; an allocation kind weighed in bytes carries its
 * allocation counts as the matching "..._objects". */
static const fl_kind_info_t kinds[FL_PROFILE_N_KINDS] = {
    [FL_PROFILE_CPU] = {"cpu", "CPU", "a CPU profile", "sample", "samples", "samples",
                        FL_PROFILE_CPU, .time = true, .what = "CPU time", .pprof_type = "cpu",
                        .pprof_unit = "nanoseconds", .pprof_count = "samples"},
    [FL_PROFILE_WALL] = {"wall", "wall", "a wall-clock profile", "sample", "samples", "samples",
                         FL_PROFILE_WALL, .time = true, .what = "wall-clock time",
                         .takes = 1u << FL_PROFILE_CPU | 1u << FL_PROFILE_OFFCPU,
                         .pprof_type = "wall", .pprof_unit = "nanoseconds",
                         .pprof_count = "samples"},
    [FL_PROFILE_OFFCPU] = {"offcpu", "off-CPU", "an off-CPU profile", "sample", "samples",
                           "samples", FL_PROFILE_OFFCPU, .time = true, .what = "off-CPU time",
                           .pprof_type = "off_cpu", .pprof_unit = "nanoseconds",
                           .pprof_count = "samples"},
    [FL_PROFILE_ALLOC_BYTES] = {"alloc_bytes", "alloc", "an allocation profile", "byte", "bytes",
                                "bytes", FL_PROFILE_ALLOC_BYTES, .allocs = true, .bytes = true,
                                .what = "allocated bytes", .pprof_type = "alloc_space",
                                .pprof_unit = "bytes", .pprof_count = "alloc_objects"},
    [FL_PROFILE_ALLOC_COUNT] = {"alloc_count", "alloc", "an allocation profile", "allocation",
                                "allocations", "allocation counts", FL_PROFILE_ALLOC_COUNT,
                                .allocs = true, .what = "allocations",
                                .pprof_type = "alloc_objects", .pprof_unit = "count"},
    [FL_PROFILE_LIVE_BYTES] = {"live_bytes", "alloc", "an allocation profile", "byte", "bytes",
                               "bytes", FL_PROFILE_ALLOC_BYTES, .allocs = true, .bytes = true,
                               .live = true, .what = "bytes still allocated at the end",
                               .pprof_type = "inuse_space", .pprof_unit = "bytes",
                               .pprof_count = "inuse_objects"},
    [FL_PROFILE_LIVE_COUNT] = {"live_count", "alloc", "an allocation profile", "allocation",
                               "allocations", "allocation counts", FL_PROFILE_ALLOC_COUNT,
                               .allocs = true, .live = true,
                               .what = "allocations still live at the end",
                               .pprof_type = "inuse_objects", .pprof_unit = "count"},
    [FL_PROFILE_EVENT] = {"event", "event", "an event profile", "event", "events", "events",
                          FL_PROFILE_EVENT, .what = "event counts", .pprof_type = "events",
                          .pprof_unit = "count"},
};

const fl_kind_info_t *fl_kind(fl_profile_kind_t kind) {
  assert((unsigned)kind < FL_PROFILE_N_KINDS);
  return &kinds[kind];
}

fl_profile_kind_t fl_kind_alloc(bool count, bool live) {
  if (live) return count ? FL_PROFILE_LIVE_COUNT : FL_PROFILE_LIVE_BYTES;
  return count ? FL_PROFILE_ALLOC_COUNT : FL_PROFILE_ALLOC_BYTES;
}

/* The option kind='s choices and help (fl__kind.h), from the table. */
char fl__kind_choices[160];
char fl__kind_help[512];

__attribute__((constructor)) static void write_kind_texts(void) {
  fl__buf_t c = FL__BUF_INIT, h = FL__BUF_INIT;
  fl__buf_puts(&h, "which of the profile's samples to draw, when it holds several kinds (");
  for (unsigned k = 0; k < FL_PROFILE_N_KINDS; k++) {
    fl__buf_printf(&c, "%s%s", k ? "|" : "", kinds[k].name);
    fl__buf_printf(&h, "%s%s: %s", k ? "; " : "", kinds[k].name, kinds[k].what);
  }
  fl__buf_puts(&h, ")");
  /* the buffers are the table's to size */
  if (c.len >= sizeof fl__kind_choices || h.len >= sizeof fl__kind_help) abort();
  memcpy(fl__kind_choices, c.data, c.len + 1);
  memcpy(fl__kind_help, h.data, h.len + 1);
  fl__buf_free(&c);
  fl__buf_free(&h);
}

bool fl_kind_comparable(fl_profile_kind_t a, fl_profile_kind_t b) {
  return fl_kind(a)->measure == fl_kind(b)->measure;
}

uint32_t fl_kind_takes(fl_profile_kind_t kind) {
  return fl_kind(kind)->takes ? fl_kind(kind)->takes : 1u << kind;
}
