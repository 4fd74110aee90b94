/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_timeline: the samples a tree counts, sorted by (thread, time, order
 * added) and merged into spans (see include/cflame/fl_timeline.h). One
 * sort of small records, then one pass: no table is probed per sample. */
#define _GNU_SOURCE
#include "cflame/fl_timeline.h"

#include <stdio.h>
#include <stdlib.h>

#include "fl__common.h"

struct fl_timeline {
  fl_lane_t *lanes;
  size_t n_lanes;
  fl_span_t *spans; /* every lane's, back to back */
  uint64_t start_ns, end_ns;
  size_t left_out;
};

/* A sample to place: what sorting needs, and what the span takes. */
typedef struct placed {
  int thread;
  uint32_t node;
  uint64_t time_ns;
  size_t index; /* in the profile: ties keep the order samples were added in */
  uint64_t weight;
} placed_t;

static int cmp_placed(const void *pa, const void *pb) {
  const placed_t *a = pa, *b = pb;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  if (a->time_ns != b->time_ns) return a->time_ns < b->time_ns ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

/* The samples of t that have a drawn node, into *out (new), sorted; those
 * without a time stamp are kept at time 0 when untimed says so, else
 * counted in *left_out. */
static size_t place_samples(const fl_tree_t *t, bool untimed, placed_t **out, size_t *left_out) {
  const fl_profile_t *p = fl_tree_profile(t);
  size_t n = fl_profile_n_samples(p), m = 0;
  placed_t *pl = fl__xmalloc(n ? n : 1, sizeof *pl);
  *left_out = 0;
  fl_sample_t s;
  for (size_t i = 0; i < n; i++) {
    fl_profile_sample(p, i, &s);
    const fl_node_t *node = fl_tree_node_of(t, &s);
    if (!node) continue;
    if (!s.time_ns && !untimed) {
      (*left_out)++;
      continue;
    }
    pl[m++] = (placed_t){
        .thread = s.thread, .node = node->id, .time_ns = s.time_ns, .index = i, .weight = s.weight};
  }
  qsort(pl, m, sizeof *pl, cmp_placed);
  *out = pl;
  return m;
}

static fl_timeline_t *build(const fl_tree_t *t, bool untimed, char *err, size_t err_size) {
  const fl_profile_t *p = fl_tree_profile(t);
  const fl_profile_info_t *info = fl_tree_info(t);
  uint64_t interval = fl_kind(info->kind)->time ? info->interval_ns : 0;
  placed_t *pl = NULL;
  size_t left_out, n = place_samples(t, untimed, &pl, &left_out);
  if (n == 0 && !untimed) {
    snprintf(err, err_size,
             "the profile's samples carry no time stamps (folded stacks have none; perf script, "
             "pprof with timestamp_ns labels and cflame's own profiles do)");
    free(pl);
    return NULL;
  }
  fl_timeline_t *tl = fl__xcalloc(1, sizeof *tl);
  tl->left_out = left_out;
  tl->spans = fl__xmalloc(n ? n : 1, sizeof *tl->spans);
  size_t n_spans = 0, lanes_cap = 0;
  tl->start_ns = n ? UINT64_MAX : 0;
  for (size_t i = 0; i < n; i++) {
    const placed_t *s = &pl[i];
    bool new_lane = i == 0 || s->thread != pl[i - 1].thread;
    uint64_t start;
    if (interval)
      start = s->weight <= s->time_ns / interval ? s->time_ns - s->weight * interval : 0;
    else
      start = new_lane ? s->time_ns : pl[i - 1].time_ns;
    if (new_lane) {
      tl->lanes = fl__grow(tl->lanes, &lanes_cap, tl->n_lanes + 1, sizeof *tl->lanes);
      tl->lanes[tl->n_lanes++] =
          (fl_lane_t){.thread = s->thread, .name = fl_profile_thread_name(p, s->thread)};
    }
    fl_lane_t *lane = &tl->lanes[tl->n_lanes - 1];
    fl_span_t *last = n_spans ? &tl->spans[n_spans - 1] : NULL;
    /* A sample weighing more than one interval (signals were lost) would
     * reach back over the samples before it: it starts where they end. */
    if (!new_lane && start < last->end_ns) start = last->end_ns;
    /* A gap longer than an interval (the thread did not run) ends a span. */
    bool follows = !new_lane && (!interval || start <= last->end_ns + interval);
    if (follows && last->node->id == s->node) {
      last->end_ns = s->time_ns;
      last->weight += s->weight;
      last->samples++;
    } else {
      tl->spans[n_spans++] = (fl_span_t){.node = fl_tree_node(t, s->node),
                                         .start_ns = start,
                                         .end_ns = s->time_ns,
                                         .weight = s->weight,
                                         .samples = 1};
      lane->n_spans++;
    }
    lane->weight += s->weight;
    if (start < tl->start_ns) tl->start_ns = start;
    if (s->time_ns > tl->end_ns) tl->end_ns = s->time_ns;
  }
  /* Lanes point into the spans once they stop moving. */
  size_t at = 0;
  for (size_t i = 0; i < tl->n_lanes; i++) {
    tl->lanes[i].spans = tl->spans + at;
    at += tl->lanes[i].n_spans;
  }
  free(pl);
  return tl;
}

fl_timeline_t *fl_timeline_build(const fl_tree_t *t, char *err, size_t err_size) {
  return build(t, false, err, err_size);
}

fl_timeline_t *fl_timeline_build_all(const fl_tree_t *t) {
  return build(t, true, NULL, 0);
}

void fl_timeline_destroy(fl_timeline_t **tlp) {
  fl_timeline_t *tl = *tlp;
  if (!tl) return;
  free(tl->lanes);
  free(tl->spans);
  free(tl);
  *tlp = NULL;
}

size_t fl_timeline_n_lanes(const fl_timeline_t *tl) {
  return tl->n_lanes;
}

const fl_lane_t *fl_timeline_lane(const fl_timeline_t *tl, size_t i) {
  return i < tl->n_lanes ? &tl->lanes[i] : NULL;
}

uint64_t fl_timeline_start_ns(const fl_timeline_t *tl) {
  return tl->start_ns;
}

uint64_t fl_timeline_end_ns(const fl_timeline_t *tl) {
  return tl->end_ns;
}

size_t fl_timeline_left_out(const fl_timeline_t *tl) {
  return tl->left_out;
}
