/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_timeline: a profile's samples in time order, one lane per thread.
 *
 * The shape a time-ordered chart (a stack chart with thread lanes) is drawn
 * from. It is built from a tree (fl_tree.h), so that it obeys the same
 * options as the flame graph: the tree's thread filter and filter say which
 * samples count, and the node a sample ends in (fl_tree_node_of: after
 * C=false folding, lines, recur and pruned) is the stack drawn for it, its
 * ancestors up to the root. Build the tree with minwidth 0 to keep every
 * sample: a sample whose node minwidth hides is left out.
 *
 * Each lane holds its thread's samples in time order (ties keep the order
 * they were added in), and consecutive samples that end in the same node
 * are merged into one span, unless a gap longer than one interval (the
 * thread did not run) lies between them. A sample's time stamp is when its interval
 * ended (the sampler's signal, perf's sample), so a sample of weight w
 * covers [time - w * interval, time) in a profile of time with a known
 * interval, but never reaches back before the end of the thread's previous
 * sample (a weight of several intervals stands for signals that were lost,
 * not for time before that sample); in any other profile, the time since
 * the thread's previous sample (the first sample of a lane covers none).
 * So a lane's spans follow one another without overlapping. A span runs
 * from its first sample's start to its last sample's end. */
#ifndef FL_TIMELINE_H
#define FL_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_api.h"
#include "cflame/fl_tree.h"

CFLAME_BEGIN_DECLS

typedef struct fl_span {
  const fl_node_t *node; /* the tree's node the samples end in; borrowed */
  uint64_t start_ns, end_ns;
  uint64_t weight; /* the merged samples' weights, summed */
  size_t samples;  /* how many were merged */
} fl_span_t;

typedef struct fl_lane {
  int thread;
  const char *name;       /* the thread's name (fl_profile_thread_name), or NULL */
  const fl_span_t *spans; /* in time order; borrowed */
  size_t n_spans;
  uint64_t weight; /* its samples' weights, summed */
} fl_lane_t;

typedef struct fl_timeline fl_timeline_t;

/* The timeline of tree t's samples, which must outlive it. Returns a new
 * timeline, or NULL with err when none of the samples the tree counts has
 * a time stamp (folded stacks carry none). Out of memory aborts, as
 * everywhere in the flame library. */
fl_timeline_t *fl_timeline_build(const fl_tree_t *t, char *err, size_t err_size);
/* fl_timeline_build keeping the samples without a time stamp too, at time
 * 0: a thread's come first, in the order they were added (a profile of
 * folded stacks is then each thread's samples in that order). For the
 * data formats that keep every sample in order (speedscope's). Never
 * NULL: a tree that counts no sample gives a timeline without lanes. */
fl_timeline_t *fl_timeline_build_all(const fl_tree_t *t);
void fl_timeline_destroy(fl_timeline_t **tl);

/* Lanes, by thread number, ascending; borrowed. */
size_t fl_timeline_n_lanes(const fl_timeline_t *tl);
const fl_lane_t *fl_timeline_lane(const fl_timeline_t *tl, size_t i);
/* The earliest span start and the latest span end over every lane. */
uint64_t fl_timeline_start_ns(const fl_timeline_t *tl);
uint64_t fl_timeline_end_ns(const fl_timeline_t *tl);
/* Samples in a drawn node that the timeline leaves out: they have no time
 * stamp. */
size_t fl_timeline_left_out(const fl_timeline_t *tl);

CFLAME_END_DECLS

#endif
