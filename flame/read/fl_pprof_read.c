/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_pprof_read: pprof's profile.proto read with protobuf-c (the C code
 * generated at build time from fl_pprof.proto) and gzip (fl_io.c);
 * fl_pprof.c writes it.
 *
 * Reading (fl__read_pprof). The message is unpacked whole, then checked
 * as the format requires (fl_pprof.proto): string_table[0] is "", every
 * string index is in the table, ids are nonzero and unique, every id a
 * location or sample names exists, every sample has one value per sample
 * type. Each location becomes its frames once, root side first (the
 * function its lines were inlined into, then the inlined ones, marked
 * FL_FRAME_INLINED); a sample's stack is its locations' frames from the
 * root (its last location) to the leaf.
 *
 * Which value is the weight:
 *  - a profile whose default sample type (else its last) is a time, or
 *    "samples", is a profile of time (below), whatever other types it has;
 *  - a profile with a sample type in bytes is an allocation profile: its
 *    weight is the default sample type (unset: the last, as the format
 *    says) when that is in bytes, else "alloc_space", else the first in
 *    bytes; the allocation counts are the
 *    matching "..._objects" type. A type named "inuse_..." is what was
 *    still allocated (FL_PROFILE_LIVE_*). Without bytes, an "alloc_objects"
 *    or "inuse_objects" count is an allocation profile counted in
 *    allocations (FL_PROFILE_*_COUNT), as cflame writes one.
 *  - any other profile is a profile of time: of the kind whose pprof type
 *    (fl_kind_info_t.pprof_type: "wall", "off_cpu") names the period's
 *    type or a sample type in a time unit, else CPU. Its weight is the "samples"
 *    count when there is one, and the interval the period, when the
 *    period is a time. Otherwise the weight is the default sample type (or
 *    the last): a time (nanoseconds, microseconds, milliseconds, seconds)
 *    is counted in units of the greatest common divisor of every value and
 *    the period, which becomes the interval, so that weights stay whole and
 *    exact; anything else (contentions, events) is its value as it is.
 * A profile of several kinds, as fl_pprof_kinds writes it, has the types
 * of time and of allocations side by side, each sample's values in its
 * kind's and 0 in the others': a profile of time with "alloc_space" or
 * "inuse_space" in bytes (else "alloc_objects" or "inuse_objects"), or an
 * allocation profile with a time kind's type in a time unit, holds that
 * second kind too, read by the same rules; a sample whose weight is 0
 * and whose second kind's is not is a sample of the second kind. Its
 * sample rate or interval is not in the file (the period is the first
 * kind's): an allocation kind's is 1, a time's the greatest common
 * divisor of its values.
 * Samples whose weight is 0 add nothing; a negative value is an error (a
 * difference of two profiles, which cflame draws with --diff instead).
 * Labels: a numeric "thread_id" ("thread", "tid") is the sample's thread,
 * a string "thread_name" (or a string "thread") its thread's name, and a
 * numeric "timestamp_ns" ("end_timestamp_ns", as Datadog's profilers
 * write it) its time stamp.
 * A location without lines (not symbolized) is one frame, named after its
 * mapping's file ("[libfoo.so]") or "[unknown]". The kind of code comes
 * from the mapping's file name as for perf script (fl__module_kind), and a
 * bare shared-library name ("libc.so.6", as cflame's kernel records its
 * modules) is a system library; a function named "..._[k]" without a
 * mapping is a kernel frame, as in folded stacks.
 *
 * Memory: protobuf-c and zlib allocate through the library's allocators,
 * so running out of memory aborts with the library's message
 * (fl__common.h), and a NULL from protobuf-c's unpack means only that the
 * bytes are not a profile. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__io.h"
#include "fl__pprof.h"

/* protobuf-c's memory for one message: it unpacks a profile into millions
 * of small allocations (each sample, its labels, their arrays), which cost
 * as much as the rest of the reading when each is a malloc and a free. So
 * they are carved from blocks, and the blocks freed together (arena_free);
 * protobuf-c's free is a no-op and its free_unpacked is not called. Each
 * block, and each allocation too large for one, is charged to the
 * reading's budget first: a message of a few kilobytes may ask for
 * gigabytes (a packed field of 5·10^7 one-byte location ids is an array
 * of 400 MB). A refused one is NULL, which protobuf-c takes for a failed
 * unpacking, and the reader then says it was the budget. */
#define ARENA_BLOCK (1u << 20)

typedef struct arena {
  char *at, *end; /* the free part of the current block */
  void **blocks;  /* every block, and every allocation too large for one */
  size_t n_blocks, cap;
  fl_budget_t *budget;
} arena_t;

static void *arena_keep(arena_t *a, size_t size) {
  if (fl_budget_charge(a->budget, size, 0) < 0) return NULL;
  void *p = fl__xmalloc(1, size);
  a->blocks = fl__grow(a->blocks, &a->cap, a->n_blocks + 1, sizeof *a->blocks);
  a->blocks[a->n_blocks++] = p;
  return p;
}

static void *pb_alloc(void *data, size_t size) {
  arena_t *a = data;
  size = (size + 15) & ~(size_t)15; /* malloc's alignment */
  if (size > ARENA_BLOCK / 8) return arena_keep(a, size);
  if ((size_t)(a->end - a->at) < size) {
    char *block = arena_keep(a, ARENA_BLOCK);
    if (!block) return NULL;
    a->at = block;
    a->end = a->at + ARENA_BLOCK;
  }
  void *p = a->at;
  a->at += size;
  return p;
}

static void pb_free(void *data, void *p) {
  (void)data;
  (void)p;
}

static void arena_free(arena_t *a) {
  for (size_t i = 0; i < a->n_blocks; i++) free(a->blocks[i]);
  free(a->blocks);
  *a = (arena_t){0};
}

/* ---- ids ----
 *
 * Messages found by their id: ids are most often 1, 2, 3, ... in order
 * (Go's and cflame's), and then found at once; otherwise through an
 * index. */

typedef struct by_id {
  fl__index_t index;
  bool dense; /* item i has id i + 1 */
} by_id_t;

static uint64_t id_hash(uint64_t id) {
  return fl__mix64(id);
}

/* ---- reading ---- */

typedef struct reader {
  const pb_profile_t *pb;
  const char *name;
  fl_io_error_t *err;
  by_id_t mappings, locations, functions;
  /* Each location's frames, root side first: loc_frames[loc_off[i] ..
   * loc_off[i + 1]). */
  size_t *loc_off;
  uint32_t *loc_frames;
  size_t n_loc_frames, loc_frames_cap;
  fl_profile_t *p;
  fl_budget_t *budget; /* the profile's too */
} reader_t;

/* Fills the error: "NAME: not a valid pprof profile: WHAT". */
static int bad(reader_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(reader_t *r, const char *fmt, ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return fl__io_fail(r->err, r->name, 0, "%s is not a valid pprof profile: %s", r->name, what);
}

/* String index i, checked; "" for 0. *out NULL and -1 (with err) when out
 * of range. */
static int string_at(reader_t *r, int64_t i, const char *what, const char **out) {
  if (i < 0 || (uint64_t)i >= r->pb->n_string_table) {
    *out = NULL;
    return bad(r, "%s is string %" PRId64 ", but the string table has %zu", what, i,
               r->pb->n_string_table);
  }
  *out = r->pb->string_table[i];
  return 0;
}

/* Indexes items by id; -1 (with err) for an id 0 or used twice. */
static int index_ids(reader_t *r, by_id_t *ix, const char *kind, size_t n,
                     uint64_t (*id_of)(const void *items, size_t i), const void *items) {
  ix->dense = true;
  for (size_t i = 0; i < n && ix->dense; i++) ix->dense = id_of(items, i) == i + 1;
  if (ix->dense) return 0;
  if (fl_budget_charge_n(r->budget, n, 16, 0) < 0)
    return fl__io_budget_fail(r->err, r->name, r->budget);
  fl__index_init(&ix->index, n);
  for (size_t i = 0; i < n; i++) {
    uint64_t id = id_of(items, i);
    if (id == 0) return bad(r, "%s %zu has id 0; ids are nonzero", kind, i + 1);
    fl__probe_t pr;
    for (uint32_t j = fl__index_find(&ix->index, id_hash(id), &pr); j != FL__NONE;
         j = fl__index_next(&ix->index, &pr))
      if (id_of(items, j) == id) return bad(r, "two %ss have id %" PRIu64, kind, id);
    fl__index_add(&ix->index, id_hash(id), (uint32_t)i);
  }
  return 0;
}

/* The item with that id, or FL__NONE. */
static uint32_t find_id(const by_id_t *ix, size_t n, uint64_t (*id_of)(const void *, size_t),
                        const void *items, uint64_t id) {
  if (ix->dense) return id >= 1 && id <= n ? (uint32_t)(id - 1) : FL__NONE;
  fl__probe_t pr;
  for (uint32_t j = fl__index_find(&ix->index, id_hash(id), &pr); j != FL__NONE;
       j = fl__index_next(&ix->index, &pr))
    if (id_of(items, j) == id) return j;
  return FL__NONE;
}

static uint64_t mapping_id(const void *items, size_t i) {
  return ((pb_mapping_t *const *)items)[i]->id;
}
static uint64_t location_id(const void *items, size_t i) {
  return ((pb_location_t *const *)items)[i]->id;
}
static uint64_t function_id(const void *items, size_t i) {
  return ((pb_function_t *const *)items)[i]->id;
}

/* The frames of location i, appended to loc_frames. */
static int location_frames(reader_t *r, size_t i, fl__buf_t *text) {
  const pb_profile_t *pb = r->pb;
  uint32_t *grown, id;
  const pb_location_t *loc = pb->location[i];
  const char *module = NULL;
  if (loc->mapping_id) {
    uint32_t m = find_id(&r->mappings, pb->n_mapping, mapping_id, pb->mapping, loc->mapping_id);
    if (m == FL__NONE)
      return bad(r,
                 "location %" PRIu64 " is in mapping %" PRIu64 ", which the profile does not have",
                 loc->id, loc->mapping_id);
    if (string_at(r, pb->mapping[m]->filename, "a mapping's file name", &module) < 0) return -1;
    if (!*module) module = NULL;
  }
  uint32_t kind = module ? fl__module_kind(module, strlen(module), loc->address) : FL_FRAME_CELL;
  if (kind == FL_FRAME_CELL && module && fl__bare_library(module)) kind = FL_FRAME_SYSTEM;
  /* A library of that shape that is not the system's, as cflame writes it */
  if (kind == FL_FRAME_CELL && module && !strncmp(module, "./", 2) && fl__bare_library(module + 2))
    module += 2;
  if (loc->n_line == 0) {
    text->len = 0;
    if (module) {
      size_t b = fl__path_base(module, strlen(module));
      fl__buf_printf(text, "[%s]", module + b);
    } else {
      fl__buf_puts(text, "[unknown]");
    }
    fl_frame_t f = {.func = text->data, .module = module, .addr = loc->address, .flags = kind};
    if (!(grown = fl__grow_charged(r->budget, r->loc_frames, &r->loc_frames_cap,
                                   r->n_loc_frames + 1, sizeof *r->loc_frames)))
      return fl__io_budget_fail(r->err, r->name, r->budget);
    r->loc_frames = grown;
    if ((id = fl_profile_frame_id(r->p, &f)) == FL_PROFILE_NO_FRAME)
      return fl__io_budget_fail(r->err, r->name, r->budget);
    r->loc_frames[r->n_loc_frames++] = id;
    return 0;
  }
  if (!(grown = fl__grow_charged(r->budget, r->loc_frames, &r->loc_frames_cap,
                                 r->n_loc_frames + loc->n_line, sizeof *r->loc_frames)))
    return fl__io_budget_fail(r->err, r->name, r->budget);
  r->loc_frames = grown;
  for (size_t k = loc->n_line; k-- > 0;) { /* the function the others were inlined into first */
    const pb_line_t *line = loc->line[k];
    uint32_t fn =
        find_id(&r->functions, pb->n_function, function_id, pb->function, line->function_id);
    if (fn == FL__NONE)
      return bad(r,
                 "location %" PRIu64 " names function %" PRIu64 ", which the profile does not have",
                 loc->id, line->function_id);
    const pb_function_t *f = pb->function[fn];
    const char *func, *system_name, *file;
    if (string_at(r, f->name, "a function's name", &func) < 0 ||
        string_at(r, f->system_name, "a function's system name", &system_name) < 0 ||
        string_at(r, f->filename, "a function's file name", &file) < 0)
      return -1;
    if (!*func) func = system_name; /* and "" as it is, when both are */
    uint32_t flags = kind;
    size_t n = strlen(func);
    if (!module && n >= 4 && !strcmp(func + n - 4, "_[k]")) flags = FL_FRAME_KERNEL;
    if (k + 1 < loc->n_line) flags |= FL_FRAME_INLINED; /* all but the last */
    fl_frame_t frame = {.func = func,
                        .file = *file ? file : NULL,
                        .line = line->line > 0 && line->line <= INT_MAX ? (int)line->line : 0,
                        .module = module,
                        .addr = loc->address,
                        .flags = flags,
                        .system_name = *system_name ? system_name : NULL};
    if ((id = fl_profile_frame_id(r->p, &frame)) == FL_PROFILE_NO_FRAME)
      return fl__io_budget_fail(r->err, r->name, r->budget);
    r->loc_frames[r->n_loc_frames++] = id;
  }
  return 0;
}

/* Time units in nanoseconds; 0 for a unit that is not a time. */
static uint64_t unit_ns(const char *unit) {
  static const struct {
    const char *name;
    uint64_t ns;
  } units[] = {
      {"nanoseconds", 1},        {"ns", 1},       {"microseconds", 1000},  {"us", 1000},
      {"milliseconds", 1000000}, {"ms", 1000000}, {"seconds", 1000000000}, {"s", 1000000000}};
  for (size_t i = 0; i < FL__ARRAY_SIZE(units); i++)
    if (!strcmp(unit, units[i].name)) return units[i].ns;
  return 0;
}

/* What the weight is: see the file comment. */
typedef struct choice {
  fl_profile_kind_t kind;
  int weight, allocs; /* sample type indices; allocs -1: none */
  uint64_t unit_ns;   /* the weight's values are times in this unit (0: not a time) */
  uint64_t divisor;   /* each value is divided by it (the gcd of times), else 1 */
  uint64_t interval_ns;
  double sample_rate;
  /* A second kind, as fl_pprof_kinds writes it (weight2 -1: none). */
  fl_profile_kind_t kind2;
  int weight2, allocs2;
  uint64_t unit_ns2;
} choice_t;

static int type_named(char *const *types, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(types[i], name)) return (int)i;
  return -1;
}

/* The kind of time whose pprof type is the period's type (a time), else
 * the first sample type in a time unit that names one; CPU otherwise. */
static fl_profile_kind_t time_kind(const char *period_type, char *const *types, char *const *units,
                                   size_t n) {
  for (int k = 0; k < FL_PROFILE_N_KINDS; k++)
    if (fl_kind(k)->time && !strcmp(period_type, fl_kind(k)->pprof_type)) return k;
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < FL_PROFILE_N_KINDS; k++)
      if (fl_kind(k)->time && unit_ns(units[i]) && !strcmp(types[i], fl_kind(k)->pprof_type))
        return k;
  return FL_PROFILE_CPU;
}

/* An allocation kind's types among types[0 .. n). */
typedef struct alloc_choice {
  fl_profile_kind_t kind;
  int weight, allocs; /* -1: none */
} alloc_choice_t;

/* The allocation kind of types (see the file comment): by bytes,
 * preferred first when it is in bytes (preferred -1: only as cflame
 * names them, "alloc_space" or "inuse_space"), else by objects. */
static void choose_allocs(char *const *types, char *const *units, size_t n, int preferred,
                          alloc_choice_t *a) {
  int bytes = -1;
  if (preferred >= 0 && !strcmp(units[preferred], "bytes")) bytes = preferred;
  if (bytes < 0 && (bytes = type_named(types, n, "alloc_space")) >= 0 &&
      strcmp(units[bytes], "bytes"))
    bytes = -1;
  if (bytes < 0 && preferred < 0 && (bytes = type_named(types, n, "inuse_space")) >= 0 &&
      strcmp(units[bytes], "bytes"))
    bytes = -1;
  for (size_t i = 0; i < n && bytes < 0 && preferred >= 0; i++)
    if (!strcmp(units[i], "bytes")) bytes = (int)i;
  if (bytes >= 0) {
    /* "alloc_space" counts with "alloc_objects", "inuse_space" with
     * "inuse_objects". */
    a->weight = bytes;
    const char *t = types[bytes], *end = strrchr(t, '_');
    if (end && !strcmp(end, "_space")) {
      char objects[256];
      snprintf(objects, sizeof objects, "%.*s_objects", (int)(end - t), t);
      a->allocs = type_named(types, n, objects);
    }
    a->kind = fl_kind_alloc(false, !strncmp(t, "inuse", 5));
    return;
  }
  int objects = preferred >= 0 && strstr(types[preferred], "_objects")
                    ? preferred
                    : type_named(types, n, "alloc_objects");
  if (objects < 0) objects = type_named(types, n, "inuse_objects");
  if (objects >= 0) {
    a->kind = fl_kind_alloc(true, !strncmp(types[objects], "inuse", 5));
    a->weight = a->allocs = objects;
  }
}

static int choose(reader_t *r, choice_t *c) {
  const pb_profile_t *pb = r->pb;
  size_t n = pb->n_sample_type;
  if (n == 0) return bad(r, "it has no sample types, so its samples measure nothing");
  char **types = fl__xcalloc(n, sizeof *types), **units = fl__xcalloc(n, sizeof *units);
  int rc = -1, def = -1;
  const char *s, *period_type = "", *period_unit = "";
  for (size_t i = 0; i < n; i++) {
    if (string_at(r, pb->sample_type[i]->type, "a sample type", &s) < 0) goto done;
    types[i] = (char *)s;
    if (string_at(r, pb->sample_type[i]->unit, "a sample type's unit", &s) < 0) goto done;
    units[i] = (char *)s;
  }
  if (string_at(r, pb->default_sample_type, "the default sample type", &s) < 0) goto done;
  if (*s) def = type_named(types, n, s);
  if (pb->period_type &&
      (string_at(r, pb->period_type->type, "the period's type", &period_type) < 0 ||
       string_at(r, pb->period_type->unit, "the period's unit", &period_unit) < 0))
    goto done;
  *c = (choice_t){.kind = FL_PROFILE_CPU,
                  .weight = -1,
                  .allocs = -1,
                  .divisor = 1,
                  .sample_rate = 1,
                  .weight2 = -1,
                  .allocs2 = -1};
  int preferred = def >= 0 ? def : (int)n - 1; /* the format's default: the last */
  bool timed = unit_ns(units[preferred]) || !strcmp(types[preferred], "samples");
  alloc_choice_t a = {.weight = -1, .allocs = -1};
  if (!timed) choose_allocs(types, units, n, preferred, &a);
  if (a.weight >= 0) {
    c->kind = a.kind;
    c->weight = a.weight;
    c->allocs = a.allocs;
    for (size_t i = 0; i < n && c->weight2 < 0; i++) /* and a time kind's */
      for (int k = 0; k < FL_PROFILE_N_KINDS && c->weight2 < 0; k++)
        if (fl_kind(k)->time && unit_ns(units[i]) && !strcmp(types[i], fl_kind(k)->pprof_type)) {
          c->kind2 = k;
          c->weight2 = (int)i;
          c->unit_ns2 = unit_ns(units[i]);
        }
  } else {
    /* Of time, and maybe allocations named as cflame names them. */
    choose_allocs(types, units, n, -1, &a);
    c->kind2 = a.kind;
    c->weight2 = a.weight;
    c->allocs2 = a.allocs;
  }
  if (fl_kind(c->kind)->allocs) {
    if (!strcmp(period_type, "allocations") && !strcmp(period_unit, "count") && pb->period >= 1)
      c->sample_rate = 1.0 / (double)pb->period;
  } else {
    uint64_t period_ns = pb->period > 0 && unit_ns(period_unit) &&
                                 (uint64_t)pb->period <= UINT64_MAX / unit_ns(period_unit)
                             ? (uint64_t)pb->period * unit_ns(period_unit)
                             : 0;
    int samples = type_named(types, n, "samples");
    if (samples >= 0 && !strcmp(units[samples], "count")) {
      c->weight = samples;
      c->interval_ns = period_ns;
    } else {
      c->weight = def >= 0 ? def : (int)n - 1;
      c->unit_ns = unit_ns(units[c->weight]);
      c->interval_ns = period_ns; /* the gcd below refines it */
    }
    c->kind = time_kind(period_ns ? period_type : "", types, units, n);
  }
  rc = 0;
done:
  free(types);
  free(units);
  return rc;
}

/* A sample's value at type index i, checked. */
static int value_at(reader_t *r, size_t s, const pb_sample_t *sample, int i, uint64_t *out) {
  int64_t v = sample->value[i];
  if (v < 0)
    return bad(r,
               "sample %zu has the negative value %" PRId64
               " (a difference of two profiles? "
               "cflame compares two profiles with --diff)",
               s + 1, v);
  *out = (uint64_t)v;
  return 0;
}

/* What a sample's labels say (see the file comment). */
typedef struct labels {
  int thread;
  const char *thread_name; /* NULL: none */
  uint64_t time_ns;
} labels_t;

static int labels_of(reader_t *r, const pb_sample_t *sample, labels_t *out) {
  *out = (labels_t){0};
  for (size_t k = 0; k < sample->n_label; k++) {
    const pb_label_t *l = sample->label[k];
    const char *key, *str;
    if (string_at(r, l->key, "a label's key", &key) < 0 ||
        string_at(r, l->str, "a label's string", &str) < 0)
      return -1;
    bool thread_key = !strcmp(key, "thread");
    if ((thread_key && *str) || !strcmp(key, "thread_name")) {
      if (*str) out->thread_name = str;
    } else if (thread_key || !strcmp(key, "thread_id") || !strcmp(key, "tid")) {
      if (l->num > 0 && l->num <= INT_MAX) out->thread = (int)l->num;
    } else if (!strcmp(key, "timestamp_ns") || !strcmp(key, "end_timestamp_ns")) {
      if (l->num > 0) out->time_ns = (uint64_t)l->num;
    }
  }
  return 0;
}

/* The divisor of the values at type index weight, times in unit_ns, that
 * keeps every one whole, with the interval it makes (a multiple of
 * interval_ns, when given) into *interval. */
static uint64_t time_divisor(const pb_profile_t *pb, int weight, uint64_t unit_ns,
                             uint64_t interval_ns, uint64_t *interval) {
  uint64_t g = interval_ns, divisor = 1;
  for (size_t s = 0; s < pb->n_sample; s++) {
    if (pb->sample[s]->n_value != pb->n_sample_type) break; /* said by read_samples */
    if (pb->sample[s]->value[weight] > 0) {
      uint64_t v = (uint64_t)pb->sample[s]->value[weight];
      g = fl__gcd(g, v <= UINT64_MAX / unit_ns ? v * unit_ns : v);
    }
  }
  /* g is 0 when no period is given and every value is 0: no unit then
   * (the profile is refused for having no weight). */
  if (g && g % unit_ns == 0) divisor = g / unit_ns;
  *interval = divisor * unit_ns;
  return divisor;
}

static int read_samples(reader_t *r, const choice_t *c) {
  const pb_profile_t *pb = r->pb;
  uint32_t *stack = NULL;
  size_t cap = 0;
  uint64_t total = 0, divisor = 1, divisor2 = 1;
  const char *last_name = NULL;
  int last_thread = 0, rc = -1;
  /* Times: the unit that keeps every value whole. */
  fl_profile_info_t *info = fl_profile_info(r->p);
  info->interval_ns = c->interval_ns;
  if (c->unit_ns)
    divisor = time_divisor(pb, c->weight, c->unit_ns, c->interval_ns, &info->interval_ns);
  if (c->weight2 >= 0 && c->unit_ns2) /* the first kind is allocations: no interval */
    divisor2 = time_divisor(pb, c->weight2, c->unit_ns2, 0, &info->interval_ns);
  for (size_t s = 0; s < pb->n_sample; s++) {
    const pb_sample_t *sample = pb->sample[s];
    if (sample->n_value != pb->n_sample_type) {
      bad(r, "sample %zu has %zu values for %zu sample types", s + 1, sample->n_value,
          pb->n_sample_type);
      goto done;
    }
    uint64_t weight = 0, allocs = 0;
    fl_profile_kind_t kind = c->kind;
    labels_t labels;
    if (value_at(r, s, sample, c->weight, &weight) < 0 ||
        (c->allocs >= 0 && value_at(r, s, sample, c->allocs, &allocs) < 0) ||
        labels_of(r, sample, &labels) < 0)
      goto done;
    weight /= divisor;
    if (!weight && c->weight2 >= 0) { /* a sample of the second kind? */
      kind = c->kind2;
      allocs = 0;
      if (value_at(r, s, sample, c->weight2, &weight) < 0 ||
          (c->allocs2 >= 0 && value_at(r, s, sample, c->allocs2, &allocs) < 0))
        goto done;
      weight /= divisor2;
    }
    size_t n = 0;
    for (size_t k = sample->n_location_id; k-- > 0;) { /* root first */
      uint32_t loc =
          find_id(&r->locations, pb->n_location, location_id, pb->location, sample->location_id[k]);
      if (loc == FL__NONE) {
        bad(r, "sample %zu names location %" PRIu64 ", which the profile does not have", s + 1,
            sample->location_id[k]);
        goto done;
      }
      size_t len = r->loc_off[loc + 1] - r->loc_off[loc];
      uint32_t *grown = fl__grow_charged(r->budget, stack, &cap, n + len, sizeof *stack);
      /* A location may hold many lines, and a sample name it many times:
       * the flag is read as the frames add up, not only per sample. */
      if (grown) stack = grown;
      if (!grown || ((k & FL__IO_CANCEL_EVERY) == 0 && fl_budget_stopped(r->budget))) {
        fl__io_budget_fail(r->err, r->name, r->budget);
        goto done;
      }
      memcpy(stack + n, r->loc_frames + r->loc_off[loc], len * sizeof *stack);
      n += len;
    }
    if (weight == 0) continue;
    if (total > UINT64_MAX - weight) {
      bad(r, "its weights add up to more than %" PRIu64 ", the most a profile holds", UINT64_MAX);
      goto done;
    }
    total += weight;
    if (fl_profile_add_sample_of(r->p, kind, stack, n, weight, fl_kind(kind)->allocs ? allocs : 0,
                                 labels.thread, labels.time_ns) < 0) {
      fl__io_budget_fail(r->err, r->name, r->budget);
      goto done;
    }
    /* Names are the table's strings: a thread named as the sample before
     * has the same pointer. */
    if (labels.thread_name && (labels.thread_name != last_name || labels.thread != last_thread)) {
      fl_profile_set_thread_name(r->p, labels.thread, labels.thread_name);
      last_name = labels.thread_name;
      last_thread = labels.thread;
    }
  }
  if (total == 0) {
    fl__io_fail_as(r->err, FL_IO_ERR_NO_SAMPLES, r->name, 0, "no samples found in %s: %s", r->name,
                   pb->n_sample ? "every sample's value is 0" : "the profile has no samples");
    goto done;
  }
  rc = 0;
done:
  free(stack);
  return rc;
}

int fl__read_pprof(fl_profile_t **out, const char *data, size_t len, const char *name, bool gzipped,
                   fl_budget_t *budget, fl_io_error_t *err) {
  reader_t r = {.name = name, .err = err, .budget = budget};
  choice_t c = {0};
  fl__buf_t text = {0};
  int rc = -1;
  *out = NULL;
  arena_t arena = {.budget = budget};
  ProtobufCAllocator allocator = {.alloc = pb_alloc, .free = pb_free, .allocator_data = &arena};
  pb_profile_t *pb = perftools__profiles__profile__unpack(&allocator, len, (const uint8_t *)data);
  if (!pb && budget->state != FL_BUDGET_OK) {
    arena_free(&arena);
    return fl__io_budget_fail(err, name, budget);
  }
  if (!pb) {
    arena_free(&arena);
    fl__io_fail_as(err, FL_IO_ERR_NOT_FORMAT, name, 0,
                   "%s is %snot a pprof profile: %s bytes are not a valid profile.proto message "
                   "(truncated, or another format)",
                   name, gzipped ? "gzip-compressed, but " : "", gzipped ? "its unzipped" : "its");
    return -1;
  }
  r.pb = pb;
  if (pb->n_string_table == 0 || pb->string_table[0][0] != '\0') {
    bad(&r, "its string table %s", pb->n_string_table ? "does not start with \"\"" : "is empty");
    goto done;
  }
  if (index_ids(&r, &r.mappings, "mapping", pb->n_mapping, mapping_id, pb->mapping) < 0 ||
      index_ids(&r, &r.locations, "location", pb->n_location, location_id, pb->location) < 0 ||
      index_ids(&r, &r.functions, "function", pb->n_function, function_id, pb->function) < 0)
    goto done;
  if (choose(&r, &c) < 0) goto done;
  r.p = fl_profile_new(c.kind);
  fl_profile_set_budget(r.p, budget);
  fl_profile_info_t *info = fl_profile_info(r.p);
  info->sample_rate = c.sample_rate;
  if (pb->duration_nanos > 0) info->wall_seconds = (double)pb->duration_nanos / 1e9;
  if (pb->time_nanos > 0) info->taken_unix = pb->time_nanos / 1000000000;
  if (fl_budget_charge_n(budget, pb->n_location + 1, sizeof *r.loc_off, 0) < 0) {
    fl__io_budget_fail(err, name, budget);
    goto done;
  }
  r.loc_off = fl__xmalloc(pb->n_location + 1, sizeof *r.loc_off);
  for (size_t i = 0; i < pb->n_location; i++) {
    r.loc_off[i] = r.n_loc_frames;
    if (location_frames(&r, i, &text) < 0) goto done;
  }
  r.loc_off[pb->n_location] = r.n_loc_frames;
  if (read_samples(&r, &c) < 0) goto done;
  snprintf(info->source, sizeof info->source, "pprof");
  *out = r.p;
  r.p = NULL;
  rc = 0;
done:
  fl_profile_destroy(&r.p);
  fl__index_free(&r.mappings.index);
  fl__index_free(&r.locations.index);
  fl__index_free(&r.functions.index);
  free(r.loc_off);
  free(r.loc_frames);
  fl__buf_free(&text);
  arena_free(&arena); /* pb with it */
  return rc;
}
