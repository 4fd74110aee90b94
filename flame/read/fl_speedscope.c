/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_speedscope: speedscope's file format
 * (https://www.speedscope.app/file-format-schema.json), written and read.
 *
 * Written: a "sampled" profile per thread (a diff: the target's and the
 * baseline's, each its threads one after the other), its samples the
 * spans of fl_timeline_build_all (every sample the tree counts, in time
 * order, consecutive samples of one stack merged: speedscope draws them
 * as one either way), each a stack of indexes into the shared frames,
 * root first, without the tree's own root. A frame is a drawn frame's
 * function, file and line (the tree's lines= rule). Weights are in the
 * unit of the kind: nanoseconds for time with a known interval, bytes,
 * else "none" (counts). What speedscope has no field for (the kind, the
 * interval, thread numbers) is in members of cflame's own
 * (fl__json_info, and "thread" and "thread_name" on a profile), which the
 * schema allows and viewers ignore.
 *
 * Read: sampled and evented profiles. A profile is a thread; a sample's
 * time is the weight before it and its own (speedscope keeps order, not
 * time). Another tool's file is a CPU profile when its unit is time, its
 * interval the greatest common divisor of its weights (so every weight is
 * a whole number of intervals), an allocation profile in bytes, or a CPU
 * profile without an interval (counts, as folded stacks). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_io.h"
#include "cflame/fl_timeline.h"
#include "cflame/fl_version.h"
#include "fl__io.h"

/* ---- writing ---- */

/* The file's frames: each distinct (function, file, line) once. */
typedef struct frames {
  const fl_frame_t **f;
  size_t n, cap;
  fl__index_t index;
} frames_t;

static bool same_text(const char *a, const char *b) {
  return a == b || (a && b && !strcmp(a, b));
}

static uint32_t frame_index(frames_t *fs, const fl_frame_t *f) {
  uint64_t h =
      fl__mix64(fl__fnv1a(f->func) ^ (f->file ? fl__fnv1a(f->file) * 31 : 0) ^ (uint64_t)f->line);
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&fs->index, h, &pr); i != FL__NONE;
       i = fl__index_next(&fs->index, &pr)) {
    const fl_frame_t *g = fs->f[i];
    if (g->line == f->line && same_text(g->func, f->func) && same_text(g->file, f->file)) return i;
  }
  fs->f = fl__grow(fs->f, &fs->cap, fs->n + 1, sizeof *fs->f);
  fs->f[fs->n] = f;
  fl__index_add(&fs->index, h, (uint32_t)fs->n);
  return (uint32_t)fs->n++;
}

/* The unit of t's weights and what one count is in it. */
static const char *unit_of(const fl_tree_t *t, uint64_t *scale) {
  const fl_profile_info_t *info = fl_profile_info_const(fl_tree_profile(t));
  const fl_kind_info_t *k = fl_kind(info->kind);
  uint64_t most;
  *scale = 1;
  if (k->bytes) return "bytes";
  /* Only while every weight, and their sum, stays a JSON integer that
   * readers hold exactly (int64). */
  if (k->time && info->interval_ns &&
      !__builtin_mul_overflow(fl_tree_root(t)->count, info->interval_ns, &most) &&
      most <= INT64_MAX) {
    *scale = info->interval_ns;
    return "nanoseconds";
  }
  return "none";
}

/* One profile of lanes [from, to) of tl: its samples and weights. */
static void write_profile(fl__buf_t *b, frames_t *fs, uint32_t *node_frame, const fl_tree_t *t,
                          const fl_timeline_t *tl, size_t from, size_t to, const char *name,
                          int thread) {
  uint64_t scale, total = 0;
  const char *unit = unit_of(t, &scale);
  fl__buf_t weights = FL__BUF_INIT;
  uint32_t *stack = fl__xmalloc((size_t)fl_tree_max_depth(t) + 1, sizeof *stack);
  fl__buf_puts(b, "{\"type\":\"sampled\",\"name\":");
  fl__json_quote(b, name);
  fl__buf_printf(b, ",\"unit\":\"%s\",", unit);
  if (thread) {
    const char *tn = fl_timeline_lane(tl, from)->name;
    fl__buf_printf(b, "\"thread\":%d,", thread);
    if (tn) {
      fl__buf_puts(b, "\"thread_name\":");
      fl__json_quote(b, tn);
      fl__buf_putc(b, ',');
    }
  }
  fl__buf_puts(b, "\"samples\":[");
  bool first = true;
  for (size_t li = from; li < to; li++) {
    const fl_lane_t *lane = fl_timeline_lane(tl, li);
    for (size_t i = 0; i < lane->n_spans; i++) {
      const fl_span_t *sp = &lane->spans[i];
      int n = 0;
      for (const fl_node_t *nd = sp->node; nd && nd->depth > 0; nd = nd->parent) {
        if (node_frame[nd->id] == FL__NONE) node_frame[nd->id] = frame_index(fs, &nd->frame);
        stack[n++] = node_frame[nd->id];
      }
      fl__buf_puts(b, first ? "[" : ",[");
      for (int k = n - 1; k >= 0; k--) {
        fl__buf_u64(b, stack[k]);
        if (k) fl__buf_putc(b, ',');
      }
      fl__buf_putc(b, ']');
      if (!first) fl__buf_putc(&weights, ',');
      fl__buf_u64(&weights, sp->weight * scale);
      total += sp->weight * scale;
      first = false;
    }
  }
  fl__buf_puts(b, "],\"weights\":[");
  fl__buf_add(b, weights.data ? weights.data : "", weights.len);
  fl__buf_puts(b, "],\"startValue\":0,\"endValue\":");
  fl__buf_u64(b, total);
  fl__buf_putc(b, '}');
  fl__buf_free(&weights);
  free(stack);
}

/* What writing tl's spans takes: a number and a comma per frame of each. */
static size_t bytes_of(const fl_timeline_t *tl) {
  size_t bytes = 0;
  for (size_t li = 0; li < fl_timeline_n_lanes(tl); li++) {
    const fl_lane_t *lane = fl_timeline_lane(tl, li);
    for (size_t i = 0; i < lane->n_spans; i++)
      bytes += 24 + 12 * (size_t)lane->spans[i].node->depth;
  }
  return bytes;
}

char *fl_speedscope(const fl_tree_t *t, const fl_tree_t *baseline, fl_budget_t *budget,
                    size_t *len) {
  const fl_tree_t *trees[2] = {t, baseline};
  fl_timeline_t *tls[2] = {fl_timeline_build_all(t),
                           baseline ? fl_timeline_build_all(baseline) : NULL};
  uint32_t *node_frames[2] = {NULL, NULL};
  char *out = NULL;
  if (fl_budget_charge(budget, bytes_of(tls[0]) + (tls[1] ? bytes_of(tls[1]) : 0), 0) < 0)
    goto done;
  const fl_profile_info_t *info = fl_profile_info_const(fl_tree_profile(t));
  frames_t fs = {0};
  fl__buf_t b = FL__BUF_INIT;
  fl__buf_puts(&b,
               "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
               "\"exporter\":\"cflame " CFLAME_VERSION_STRING "\",\"name\":");
  fl__json_quote(&b, info->source[0] ? info->source : "cflame profile");
  fl__buf_puts(&b, ",\"activeProfileIndex\":0,");
  fl__json_info(&b, info, baseline != NULL);
  fl__buf_puts(&b, ",\"profiles\":[");
  for (int k = 0; k < 2 && trees[k]; k++) {
    size_t n_nodes = fl_tree_n_nodes(trees[k]), n_lanes = fl_timeline_n_lanes(tls[k]);
    node_frames[k] = fl__xmalloc(n_nodes, sizeof *node_frames[k]);
    memset(node_frames[k], 0xff, n_nodes * sizeof *node_frames[k]);
    if (baseline) {
      if (k) fl__buf_putc(&b, ',');
      write_profile(&b, &fs, node_frames[k], trees[k], tls[k], 0, n_lanes,
                    k ? "baseline" : "target", 0);
      continue;
    }
    for (size_t li = 0; li < n_lanes; li++) {
      const fl_lane_t *lane = fl_timeline_lane(tls[k], li);
      char name[300];
      snprintf(name, sizeof name, "thread %d%s%s", lane->thread, lane->name ? ": " : "",
               lane->name ? lane->name : "");
      if (li) fl__buf_putc(&b, ',');
      write_profile(&b, &fs, node_frames[k], trees[k], tls[k], li, li + 1, name, lane->thread);
    }
  }
  fl__buf_puts(&b, "],\"shared\":{\"frames\":[");
  for (size_t i = 0; i < fs.n; i++) {
    fl__buf_puts(&b, i ? ",{\"name\":" : "{\"name\":");
    fl__json_quote(&b, fs.f[i]->func);
    if (fs.f[i]->file) {
      fl__buf_puts(&b, ",\"file\":");
      fl__json_quote(&b, fs.f[i]->file);
    }
    if (fs.f[i]->line > 0) fl__buf_printf(&b, ",\"line\":%d", fs.f[i]->line);
    fl__buf_putc(&b, '}');
  }
  fl__buf_puts(&b, "]}}\n");
  free(fs.f);
  fl__index_free(&fs.index);
  *len = b.len;
  out = fl__buf_take(&b);
done:
  for (int k = 0; k < 2; k++) {
    fl_timeline_destroy(&tls[k]);
    free(node_frames[k]);
  }
  return out;
}

/* ---- reading ---- */

typedef struct reader {
  const char *name;
  fl_profile_t *p;
  fl_budget_t *budget;
  fl_io_error_t *err;
  uint32_t *ids; /* the file's frames' ids in p */
  size_t n_frames;
  uint32_t *stack; /* a sample's ids, root first */
  size_t stack_cap;
  uint64_t gcd;   /* of every weight, in the unit's smallest part (ns for time) */
  uint64_t ns;    /* one unit of the file's time units in ns; 0: not time */
  bool own;       /* cflame wrote it: its counts are weight / scale */
  uint64_t scale; /* own: what one count is in the file's unit */
  uint64_t time;  /* the sample's end, counted along */
} reader_t;

/* A weight of the file as a whole number of the unit's smallest part:
 * ns for time, else the number itself. -1 when it is not one. */
static int weight_of(reader_t *r, const json_t *j, const char *what, size_t prof, size_t i,
                     uint64_t *out) {
  /* A whole number exactly (cflame writes them so), else as a double. */
  json_int_t k = json_integer_value(j);
  uint64_t exact;
  if (json_is_integer(j) && k >= 0 &&
      !__builtin_mul_overflow((uint64_t)k, r->ns ? r->ns : 1, &exact) && exact <= INT64_MAX) {
    *out = exact;
    return 0;
  }
  double v = json_number_value(j) * (r->ns ? (double)r->ns : 1);
  if (json_is_integer(j) || !json_is_real(j) || !(v >= 0) || v >= 9.2e18)
    return fl__io_fail(r->err, r->name, 0,
                       "profile %zu: %s %zu is not a number from 0 to 9.2e18 (in its unit)", prof,
                       what, i);
  *out = (uint64_t)llround(v);
  return 0;
}

/* Adds (or, on the first pass, only checks and measures) a sample of
 * stack[0, n) weighing w units' parts. */
static int sample(reader_t *r, bool add, size_t n, uint64_t w, int thread) {
  if (!w) return 0;
  if (!add) {
    r->gcd = fl__gcd(r->gcd, w);
    return 0;
  }
  uint64_t count = r->own ? (w + r->scale / 2) / r->scale : w / r->gcd;
  r->time += w;
  if (!count) return 0;
  if (fl_profile_add_sample_at(r->p, r->stack, n, count, 0, thread, r->time ? r->time : 1) < 0)
    return fl__io_budget_fail(r->err, r->name, r->budget);
  return 0;
}

static int frame_at(reader_t *r, const json_t *j, size_t prof, uint32_t *id) {
  json_int_t k = json_integer_value(j);
  if (!json_is_integer(j) || k < 0 || (uint64_t)k >= r->n_frames)
    return fl__io_fail(r->err, r->name, 0,
                       "profile %zu: a frame index that is not one of the %zu shared frames "
                       "(0 to %zu)",
                       prof, r->n_frames, r->n_frames ? r->n_frames - 1 : 0);
  *id = r->ids[k];
  return 0;
}

static int grow_stack(reader_t *r, size_t need) {
  if (need <= r->stack_cap) return 0;
  uint32_t *grown = fl__grow_charged(r->budget, r->stack, &r->stack_cap, need, sizeof *r->stack);
  if (!grown) return fl__io_budget_fail(r->err, r->name, r->budget);
  r->stack = grown;
  return 0;
}

static int sampled(reader_t *r, const json_t *prof, size_t pi, bool add, int thread) {
  const json_t *samples = json_object_get(prof, "samples"),
               *weights = json_object_get(prof, "weights");
  if (!json_is_array(samples) || !json_is_array(weights) ||
      json_array_size(samples) != json_array_size(weights))
    return fl__io_fail(
        r->err, r->name, 0,
        "profile %zu is \"sampled\" but lacks \"samples\" and \"weights\", arrays of "
        "one length",
        pi);
  for (size_t i = 0; i < json_array_size(samples); i++) {
    const json_t *s = json_array_get(samples, i);
    uint64_t w;
    if (!json_is_array(s))
      return fl__io_fail(r->err, r->name, 0,
                         "profile %zu: sample %zu is not an array of frame indexes", pi, i);
    if (weight_of(r, json_array_get(weights, i), "weight", pi, i, &w) < 0) return -1;
    size_t n = json_array_size(s);
    if (fl_budget_charge(r->budget, 0, n) < 0 || grow_stack(r, n + 1) < 0)
      return fl__io_budget_fail(r->err, r->name, r->budget);
    for (size_t k = 0; k < n; k++)
      if (frame_at(r, json_array_get(s, k), pi, &r->stack[k]) < 0) return -1;
    if (sample(r, add, n, w, thread) < 0) return -1;
  }
  return 0;
}

/* An evented profile: the open frames weigh the time between events. */
static int evented(reader_t *r, const json_t *prof, size_t pi, bool add, int thread) {
  const json_t *events = json_object_get(prof, "events");
  if (!json_is_array(events))
    return fl__io_fail(r->err, r->name, 0, "profile %zu is \"evented\" but lacks \"events\"", pi);
  size_t n = 0;
  uint64_t at = 0;
  for (size_t i = 0; i < json_array_size(events); i++) {
    const json_t *e = json_array_get(events, i);
    const char *type = json_string_value(json_object_get(e, "type"));
    uint64_t now;
    uint32_t id;
    if (!type || (strcmp(type, "O") && strcmp(type, "C")))
      return fl__io_fail(r->err, r->name, 0,
                         "profile %zu: event %zu has no \"type\" \"O\" (open) or \"C\" (close)", pi,
                         i);
    if (weight_of(r, json_object_get(e, "at"), "event", pi, i, &now) < 0 ||
        frame_at(r, json_object_get(e, "frame"), pi, &id) < 0)
      return -1;
    if (now < at)
      return fl__io_fail(r->err, r->name, 0, "profile %zu: event %zu goes back in time", pi, i);
    if (i && n && sample(r, add, n, now - at, thread) < 0) return -1;
    at = now;
    if (type[0] == 'O') {
      if (fl_budget_charge(r->budget, 0, n + 1) < 0 || grow_stack(r, n + 1) < 0)
        return fl__io_budget_fail(r->err, r->name, r->budget);
      r->stack[n++] = id;
    } else if (!n || r->stack[n - 1] != id) {
      return fl__io_fail(r->err, r->name, 0,
                         "profile %zu: event %zu closes a frame that is not the last one opened",
                         pi, i);
    } else {
      n--;
    }
  }
  return 0;
}

/* Every profile of doc, checked and measured (add false) or added. */
static int profiles(reader_t *r, const json_t *list, bool add) {
  for (size_t pi = 0; pi < json_array_size(list); pi++) {
    const json_t *prof = json_array_get(list, pi);
    const char *type = json_string_value(json_object_get(prof, "type"));
    const json_t *th = json_object_get(prof, "thread");
    int thread =
        json_is_integer(th) && json_integer_value(th) >= 0 && json_integer_value(th) <= INT32_MAX
            ? (int)json_integer_value(th)
            : (int)pi + 1;
    r->time = 0;
    int rc;
    if (type && !strcmp(type, "sampled"))
      rc = sampled(r, prof, pi, add, thread);
    else if (type && !strcmp(type, "evented"))
      rc = evented(r, prof, pi, add, thread);
    else
      return fl__io_fail(r->err, r->name, 0,
                         "profile %zu has no \"type\" speedscope knows: \"sampled\" or \"evented\"",
                         pi);
    if (rc < 0) return -1;
    if (!add) continue;
    const char *tn = json_string_value(json_object_get(prof, "thread_name"));
    if (!tn && !json_object_get(prof, "thread"))
      tn = json_string_value(json_object_get(prof, "name"));
    if (tn && *tn) fl_profile_set_thread_name(r->p, thread, tn);
  }
  return 0;
}

/* The unit's nanoseconds (0: not time), or -1 for a unit the schema does
 * not have. */
static int64_t unit_ns(const char *unit) {
  static const struct {
    const char *name;
    int64_t ns;
  } units[] = {{"nanoseconds", 1},      {"microseconds", 1000}, {"milliseconds", 1000000},
               {"seconds", 1000000000}, {"bytes", 0},           {"none", 0}};
  for (size_t i = 0; unit && i < FL__ARRAY_SIZE(units); i++)
    if (!strcmp(unit, units[i].name)) return units[i].ns;
  return -1;
}

int fl__read_speedscope(fl_profile_t **out, const json_t *doc, const char *name,
                        fl_budget_t *budget, fl_io_error_t *err) {
  reader_t r = {.name = name, .budget = budget, .err = err};
  *out = NULL;
  const json_t *list = json_object_get(doc, "profiles");
  const json_t *frames = json_object_get(json_object_get(doc, "shared"), "frames");
  if (!json_is_array(list) || !json_is_array(frames))
    return fl__io_fail_as(err, FL_IO_ERR_NOT_FORMAT, name, 0,
                          "not speedscope's file format: it needs \"profiles\" (an array) and "
                          "\"shared\": {\"frames\": [...]}");
  /* Every profile in one unit: the first's. */
  const char *unit = json_string_value(json_object_get(json_array_get(list, 0), "unit"));
  for (size_t i = 0; i < json_array_size(list); i++) {
    const char *u = json_string_value(json_object_get(json_array_get(list, i), "unit"));
    if (unit_ns(u) < 0 || strcmp(u, unit))
      return fl__io_fail(err, name, 0,
                         "profile %zu's \"unit\" is not that of the first profile, or not one of "
                         "speedscope's: nanoseconds, microseconds, milliseconds, seconds, bytes, "
                         "none",
                         i);
  }
  if (fl__json_read_info(doc, name, "speedscope", &r.p, err) < 0) return -1;
  r.own = r.p != NULL;
  r.ns = unit ? (uint64_t)unit_ns(unit) : 0;
  if (!r.p)
    r.p = fl_profile_new(unit && !strcmp(unit, "bytes") ? FL_PROFILE_ALLOC_BYTES : FL_PROFILE_CPU);
  fl_profile_info_t *info = fl_profile_info(r.p);
  if (!r.own && info->kind == FL_PROFILE_ALLOC_BYTES) info->sample_rate = 1;
  fl_profile_set_budget(r.p, budget);
  r.n_frames = json_array_size(frames);
  int rc = -1;
  if (fl_budget_charge_n(budget, r.n_frames, sizeof *r.ids, r.n_frames) < 0) {
    fl__io_budget_fail(err, name, budget);
    goto done;
  }
  r.ids = fl__xmalloc(r.n_frames ? r.n_frames : 1, sizeof *r.ids);
  for (size_t i = 0; i < r.n_frames; i++) {
    const json_t *f = json_array_get(frames, i), *line = json_object_get(f, "line");
    const char *func = json_string_value(json_object_get(f, "name"));
    if (!func) {
      fl__io_fail(err, name, 0, "shared frame %zu has no \"name\" string", i);
      goto done;
    }
    json_int_t l = json_is_integer(line) ? json_integer_value(line) : 0;
    fl_frame_t fr = {.func = func,
                     .file = json_string_value(json_object_get(f, "file")),
                     .line = l > 0 && l <= INT32_MAX ? (int)l : 0,
                     .flags = FL_FRAME_CELL};
    if ((r.ids[i] = fl_profile_frame_id(r.p, &fr)) == FL_PROFILE_NO_FRAME) {
      fl__io_budget_fail(err, name, budget);
      goto done;
    }
  }
  /* Own files: a count is the interval's ns, or one byte or unit. */
  r.scale = r.own && r.ns && info->interval_ns ? info->interval_ns : 1;
  if (r.own && r.ns && !info->interval_ns) r.own = false; /* counts in time: as another's */
  if (profiles(&r, list, false) < 0) goto done;
  if (!r.gcd) {
    fl__io_fail_as(err, FL_IO_ERR_NO_SAMPLES, name, 0, "no samples: every weight is 0");
    goto done;
  }
  if (!r.own) {
    if (r.ns)
      info->interval_ns = r.gcd;
    else
      r.gcd = 1;
  }
  if (profiles(&r, list, true) < 0) goto done;
  if (!fl_profile_n_samples(r.p)) {
    fl__io_fail_as(err, FL_IO_ERR_NO_SAMPLES, name, 0, "no samples: every weight is 0");
    goto done;
  }
  *out = r.p;
  r.p = NULL;
  rc = 0;
done:
  fl_profile_destroy(&r.p);
  free(r.ids);
  free(r.stack);
  return rc;
}
