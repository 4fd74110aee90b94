/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_trace_read: Chrome's trace-event format read into a profile (the
 * writer, fl_trace, is fl_chart.c's: the chart's bars as events).
 *
 * The document is an object with "traceEvents", or the bare array of
 * events. Complete events ("ph":"X") are the spans; a thread_name
 * metadata event ("ph":"M") names a thread; every other event is left
 * alone. An event's stack is the events it lies in on its thread, and
 * what it holds beyond the events under it is one sample at its end, of
 * its function (name, args.file, args.line), off-CPU when its category
 * says "off-cpu" or "runnable". cflame's own files say each event's
 * depth, weight, file and line (its "cflame" member), and their order is the chart's, a bar before
 * those under it: they read back as the profile that was written, by
 * function. Another tool's events nest by time (an event inside the one
 * that began before it and ends after it), and weigh their time: a
 * wall-clock profile of 1 us intervals. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__io.h"

typedef struct event {
  int tid;
  uint64_t ts, end; /* ns */
  int depth;        /* cflame's files: 1 under the root; else 0 until placed */
  uint64_t weight;  /* cflame's files: the bar's; else its time in us */
  uint32_t frame;   /* its frame's id in the profile */
  size_t order;     /* in the file */
  size_t parent;    /* index of the event it lies in, or SIZE_MAX */
} event_t;

static int cmp_own(const void *pa, const void *pb) {
  const event_t *a = pa, *b = pb;
  if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
  return (a->order > b->order) - (a->order < b->order);
}

/* By thread, then start, the longer first (the outer of two that begin
 * together), then the file's order. */
static int cmp_time(const void *pa, const void *pb) {
  const event_t *a = pa, *b = pb;
  if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  if (a->end != b->end) return a->end > b->end ? -1 : 1;
  return (a->order > b->order) - (a->order < b->order);
}

/* A time of the file (us, a JSON number) in ns. */
static bool time_ns(const json_t *j, uint64_t *ns) {
  double us = json_number_value(j);
  if (!json_is_number(j) || !(us >= 0) || us > 9.2e12) return false;
  *ns = (uint64_t)llround(us * 1000);
  return true;
}

/* "thread 2: worker" (as cflame names a lane) is "worker" of thread 2. */
static const char *thread_name(const char *name, int tid) {
  char prefix[32];
  int n = snprintf(prefix, sizeof prefix, "thread %d", tid);
  if (strncmp(name, prefix, (size_t)n)) return name;
  if (!name[n]) return NULL;
  return strncmp(name + n, ": ", 2) ? name : name + n + 2;
}

/* The thread of an event: its tid, a number (or 0). */
static int tid_of(const json_t *e) {
  const json_t *tid = json_object_get(e, "tid");
  json_int_t t = json_is_integer(tid) ? json_integer_value(tid) : 0;
  return t >= INT32_MIN && t <= INT32_MAX ? (int)t : 0;
}

int fl__read_trace(fl_profile_t **out, const json_t *doc, const char *name, fl_budget_t *budget,
                   fl_io_error_t *err) {
  *out = NULL;
  const json_t *list = json_is_array(doc) ? doc : json_object_get(doc, "traceEvents");
  if (!json_is_array(list))
    return fl__io_fail_as(err, FL_IO_ERR_NOT_FORMAT, name, 0,
                          "not the trace-event format: it needs \"traceEvents\", an array of "
                          "events (or is that array)");
  fl_profile_t *p = NULL;
  if (fl__json_read_info(json_object_get(doc, "otherData"), name, "trace", &p, err) < 0) return -1;
  bool own = p != NULL;
  if (!own) {
    p = fl_profile_new(FL_PROFILE_WALL);
    fl_profile_info(p)->interval_ns = 1000;
  }
  fl_profile_set_budget(p, budget);
  size_t n_list = json_array_size(list), n = 0;
  event_t *ev = NULL;
  uint32_t *stack = NULL;
  int rc = -1;
  if (fl_budget_charge_n(budget, n_list, sizeof *ev, n_list) < 0) {
    fl__io_budget_fail(err, name, budget);
    goto done;
  }
  ev = fl__xmalloc(n_list ? n_list : 1, sizeof *ev);
  for (size_t i = 0; i < n_list; i++) {
    const json_t *e = json_array_get(list, i), *args = json_object_get(e, "args");
    const json_t *own_args = json_object_get(e, "cflame");
    const char *ph = json_string_value(json_object_get(e, "ph"));
    const char *func = json_string_value(json_object_get(e, "name"));
    if (!ph) continue;
    if (!strcmp(ph, "M") && func && !strcmp(func, "thread_name")) {
      const char *tn = json_string_value(json_object_get(args, "name"));
      if (tn && (tn = thread_name(tn, tid_of(e))) != NULL)
        fl_profile_set_thread_name(p, tid_of(e), tn);
      continue;
    }
    if (strcmp(ph, "X")) continue;
    uint64_t ts, dur = 0;
    const json_t *d = json_object_get(e, "dur");
    if (!func || !time_ns(json_object_get(e, "ts"), &ts) || (d && !time_ns(d, &dur))) {
      fl__io_fail(err, name, 0,
                  "event %zu is complete (\"ph\":\"X\") but lacks a \"name\" string, or its "
                  "\"ts\" or \"dur\" is not a number of microseconds from 0",
                  i);
      goto done;
    }
    const json_t *depth = json_object_get(own_args, "depth");
    const json_t *weight = json_object_get(own_args, "weight");
    const json_t *at = own ? own_args : args; /* file and line */
    if (own && (!json_is_integer(depth) || json_integer_value(depth) < 1 ||
                json_integer_value(depth) > INT32_MAX || !json_is_integer(weight) ||
                json_integer_value(weight) < 0)) {
      fl__io_fail(err, name, 0,
                  "event %zu lacks the \"depth\" (from 1) and \"weight\" (from 0) that cflame "
                  "writes in its \"cflame\" member",
                  i);
      goto done;
    }
    const char *cat = json_string_value(json_object_get(e, "cat"));
    const json_t *line = json_object_get(at, "line");
    json_int_t l = json_is_integer(line) ? json_integer_value(line) : 0;
    fl_frame_t f = {.func = func,
                    .file = json_string_value(json_object_get(at, "file")),
                    .line = l > 0 && l <= INT32_MAX ? (int)l : 0,
                    .flags = FL_FRAME_CELL};
    if (cat && !strcmp(cat, "off-cpu")) f.flags |= FL_FRAME_OFFCPU;
    if (cat && !strcmp(cat, "runnable")) f.flags |= FL_FRAME_OFFCPU | FL_FRAME_RUNNABLE;
    event_t *x = &ev[n];
    *x = (event_t){.tid = tid_of(e), .ts = ts, .order = i, .parent = SIZE_MAX};
    if (__builtin_add_overflow(ts, dur, &x->end)) x->end = UINT64_MAX;
    x->depth = own ? (int)json_integer_value(depth) : 0;
    x->weight = own ? (uint64_t)json_integer_value(weight) : 0;
    if ((x->frame = fl_profile_frame_id(p, &f)) == FL_PROFILE_NO_FRAME) {
      fl__io_budget_fail(err, name, budget);
      goto done;
    }
    n++;
  }
  if (!n) {
    fl__io_fail_as(err, FL_IO_ERR_NO_SAMPLES, name, 0,
                   "no samples: no complete events (\"ph\":\"X\")");
    goto done;
  }
  qsort(ev, n, sizeof *ev, own ? cmp_own : cmp_time);
  /* Each event's parent: the last one open a level up (cflame's), or the
   * innermost that holds it in time. open[k] is the event at depth k + 1. */
  size_t *open = fl__xmalloc(n, sizeof *open), depth = 0;
  for (size_t i = 0; i < n; i++) {
    event_t *x = &ev[i];
    if (i && x->tid != ev[i - 1].tid) depth = 0;
    if (own) {
      if ((size_t)x->depth > depth + 1) {
        fl__io_fail(err, name, 0,
                    "event %zu is at depth %d, under no event of depth %d on its thread", x->order,
                    x->depth, x->depth - 1);
        free(open);
        goto done;
      }
      depth = (size_t)x->depth - 1;
    } else {
      while (depth && !(x->ts >= ev[open[depth - 1]].ts && x->end <= ev[open[depth - 1]].end))
        depth--;
      x->depth = (int)depth + 1;
      /* Its time, less its children's as they come. */
      x->weight = (x->end - x->ts + 500) / 1000;
    }
    x->parent = depth ? open[depth - 1] : SIZE_MAX;
    open[depth++] = i;
  }
  free(open);
  /* Self: a parent's weight less its children's. */
  for (size_t i = 0; i < n; i++) {
    size_t up = ev[i].parent;
    if (up == SIZE_MAX) continue;
    if (ev[up].weight < ev[i].weight) {
      if (own) {
        fl__io_fail(err, name, 0,
                    "event %zu weighs more than the event %zu it lies in (args.weight)",
                    ev[i].order, ev[up].order);
        goto done;
      }
      ev[up].weight = 0;
    } else {
      ev[up].weight -= ev[i].weight;
    }
  }
  stack = fl__xmalloc(1, sizeof *stack);
  size_t stack_cap = 1;
  for (size_t i = 0; i < n; i++) {
    if (!ev[i].weight) continue;
    size_t k = (size_t)ev[i].depth;
    uint32_t *grown = fl__grow_charged(budget, stack, &stack_cap, k, sizeof *stack);
    if (!grown || fl_budget_charge(budget, 0, k) < 0) {
      if (grown) stack = grown;
      fl__io_budget_fail(err, name, budget);
      goto done;
    }
    stack = grown;
    for (size_t at = i; at != SIZE_MAX && k; at = ev[at].parent) stack[--k] = ev[at].frame;
    if (fl_profile_add_sample_at(p, stack, (size_t)ev[i].depth, ev[i].weight, 0, ev[i].tid,
                                 ev[i].end ? ev[i].end : 1) < 0) {
      fl__io_budget_fail(err, name, budget);
      goto done;
    }
  }
  if (!fl_profile_n_samples(p)) {
    fl__io_fail_as(err, FL_IO_ERR_NO_SAMPLES, name, 0, "no samples: every event weighs 0");
    goto done;
  }
  *out = p;
  p = NULL;
  rc = 0;
done:
  fl_profile_destroy(&p);
  free(ev);
  free(stack);
  return rc;
}
