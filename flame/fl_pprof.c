/* fl_pprof: pprof's profile.proto, read and written with protobuf-c (the
 * C code generated at build time from fl_pprof.proto) and gzip (fl_io.c).
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
 * Writing (fl_pprof): from a tree, as fl_folded writes folded stacks. Each
 * node's location is the node and the chain of callers it was inlined
 * into (up to the first frame that was not inlined, within one module),
 * worked out once per node, and so is each node's list of locations. A
 * profile whose samples know their thread or time is written a sample per
 * sample the tree draws (fl_tree_node_of), with the labels above
 * ("thread_id", "thread_name", "timestamp_ns" in nanoseconds), so that
 * reading it back gives the same threads, names and times; any other, a
 * sample per node with self weight. Strings,
 * functions (name, file), mappings (module) and locations (mapping,
 * address, lines) are each written once, found again through an fl__index.
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
#include "fl_pprof.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile_t;
typedef Perftools__Profiles__ValueType pb_value_type_t;
typedef Perftools__Profiles__Sample pb_sample_t;
typedef Perftools__Profiles__Label pb_label_t;
typedef Perftools__Profiles__Mapping pb_mapping_t;
typedef Perftools__Profiles__Location pb_location_t;
typedef Perftools__Profiles__Line pb_line_t;
typedef Perftools__Profiles__Function pb_function_t;

static void *pb_alloc(void *data, size_t size) {
  return fl__xmalloc(1, size);
}
static void pb_free(void *data, void *p) {
  free(p);
}
static ProtobufCAllocator pb_allocator = {.alloc = pb_alloc, .free = pb_free};

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

/* A bare shared library's name, as cflame's kernel records its modules:
 * "libc.so.6", "ld-linux-x86-64.so.2". */
static bool bare_library(const char *m) {
  return !strchr(m, '/') && (!strncmp(m, "lib", 3) || !strncmp(m, "ld-", 3)) &&
         (strstr(m, ".so.") || (strlen(m) > 3 && !strcmp(m + strlen(m) - 3, ".so")));
}

/* The frames of location i, appended to loc_frames. */
static int location_frames(reader_t *r, size_t i, fl__buf_t *text) {
  const pb_profile_t *pb = r->pb;
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
  if (kind == FL_FRAME_CELL && module && bare_library(module)) kind = FL_FRAME_SYSTEM;
  if (loc->n_line == 0) {
    text->len = 0;
    if (module) {
      size_t b = fl__path_base(module, strlen(module));
      fl__buf_printf(text, "[%s]", module + b);
    } else {
      fl__buf_puts(text, "[unknown]");
    }
    fl_frame_t f = {.func = text->data, .module = module, .addr = loc->address, .flags = kind};
    r->loc_frames =
        fl__grow(r->loc_frames, &r->loc_frames_cap, r->n_loc_frames + 1, sizeof *r->loc_frames);
    r->loc_frames[r->n_loc_frames++] = fl_profile_frame_id(r->p, &f);
    return 0;
  }
  r->loc_frames = fl__grow(r->loc_frames, &r->loc_frames_cap, r->n_loc_frames + loc->n_line,
                           sizeof *r->loc_frames);
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
                        .flags = flags};
    r->loc_frames[r->n_loc_frames++] = fl_profile_frame_id(r->p, &frame);
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
  for (size_t i = 0; i < sizeof units / sizeof *units; i++)
    if (!strcmp(unit, units[i].name)) return units[i].ns;
  return 0;
}

static uint64_t gcd(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* What the weight is: see the file comment. */
typedef struct choice {
  fl_profile_kind_t kind;
  int weight, allocs; /* sample type indices; allocs -1: none */
  uint64_t unit_ns;   /* the weight's values are times in this unit (0: not a time) */
  uint64_t divisor;   /* each value is divided by it (the gcd of times), else 1 */
  uint64_t interval_ns;
  double sample_rate;
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
  *c = (choice_t){
      .kind = FL_PROFILE_CPU, .weight = -1, .allocs = -1, .divisor = 1, .sample_rate = 1};
  int bytes = -1, preferred = def >= 0 ? def : (int)n - 1; /* the format's default: the last */
  if (!strcmp(units[preferred], "bytes")) bytes = preferred;
  if (bytes < 0 && (bytes = type_named(types, n, "alloc_space")) >= 0 &&
      strcmp(units[bytes], "bytes"))
    bytes = -1;
  for (size_t i = 0; i < n && bytes < 0; i++)
    if (!strcmp(units[i], "bytes")) bytes = (int)i;
  if (bytes >= 0) {
    /* "alloc_space" counts with "alloc_objects", "inuse_space" with
     * "inuse_objects". */
    c->weight = bytes;
    const char *t = types[bytes], *end = strrchr(t, '_');
    if (end && !strcmp(end, "_space")) {
      char objects[256];
      snprintf(objects, sizeof objects, "%.*s_objects", (int)(end - t), t);
      c->allocs = type_named(types, n, objects);
    }
    c->kind = fl_kind_alloc(false, !strncmp(t, "inuse", 5));
  } else {
    int objects =
        strstr(types[preferred], "_objects") ? preferred : type_named(types, n, "alloc_objects");
    if (objects < 0) objects = type_named(types, n, "inuse_objects");
    if (objects >= 0) {
      c->kind = fl_kind_alloc(true, !strncmp(types[objects], "inuse", 5));
      c->weight = c->allocs = objects;
    }
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

static int read_samples(reader_t *r, const choice_t *c) {
  const pb_profile_t *pb = r->pb;
  uint32_t *stack = NULL;
  size_t cap = 0;
  uint64_t total = 0, divisor = 1;
  const char *last_name = NULL;
  int last_thread = 0, rc = -1;
  /* Times: the unit that keeps every value whole. */
  if (c->unit_ns) {
    uint64_t g = c->interval_ns;
    for (size_t s = 0; s < pb->n_sample; s++) {
      if (pb->sample[s]->n_value != pb->n_sample_type) break; /* said below */
      if (pb->sample[s]->value[c->weight] > 0) {
        uint64_t v = (uint64_t)pb->sample[s]->value[c->weight];
        g = gcd(g, v <= UINT64_MAX / c->unit_ns ? v * c->unit_ns : v);
      }
    }
    if (g % c->unit_ns == 0) divisor = g / c->unit_ns;
    fl_profile_info(r->p)->interval_ns = divisor * c->unit_ns;
  } else {
    fl_profile_info(r->p)->interval_ns = c->interval_ns;
  }
  for (size_t s = 0; s < pb->n_sample; s++) {
    const pb_sample_t *sample = pb->sample[s];
    if (sample->n_value != pb->n_sample_type) {
      bad(r, "sample %zu has %zu values for %zu sample types", s + 1, sample->n_value,
          pb->n_sample_type);
      goto done;
    }
    uint64_t weight = 0, allocs = 0;
    labels_t labels;
    if (value_at(r, s, sample, c->weight, &weight) < 0 ||
        (c->allocs >= 0 && value_at(r, s, sample, c->allocs, &allocs) < 0) ||
        labels_of(r, sample, &labels) < 0)
      goto done;
    weight /= divisor;
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
      stack = fl__grow(stack, &cap, n + len, sizeof *stack);
      memcpy(stack + n, r->loc_frames + r->loc_off[loc], len * sizeof *stack);
      n += len;
    }
    if (weight == 0) continue;
    if (total > UINT64_MAX - weight) {
      bad(r, "its weights add up to more than %" PRIu64 ", the most a profile holds", UINT64_MAX);
      goto done;
    }
    total += weight;
    fl_profile_add_sample_at(r->p, stack, n, weight, fl_kind(c->kind)->allocs ? allocs : 0,
                             labels.thread, labels.time_ns);
    /* Names are the table's strings: a thread named as the sample before
     * has the same pointer. */
    if (labels.thread_name && (labels.thread_name != last_name || labels.thread != last_thread)) {
      fl_profile_set_thread_name(r->p, labels.thread, labels.thread_name);
      last_name = labels.thread_name;
      last_thread = labels.thread;
    }
  }
  if (total == 0) {
    fl__io_fail(r->err, r->name, 0, "no samples found in %s: %s", r->name,
                pb->n_sample ? "every sample's value is 0" : "the profile has no samples");
    goto done;
  }
  rc = 0;
done:
  free(stack);
  return rc;
}

int fl__read_pprof(fl_profile_t **out, const char *data, size_t len, const char *name, bool gzipped,
                   fl_io_error_t *err) {
  reader_t r = {.name = name, .err = err};
  choice_t c = {0};
  fl__buf_t text = {0};
  int rc = -1;
  *out = NULL;
  pb_profile_t *pb =
      perftools__profiles__profile__unpack(&pb_allocator, len, (const uint8_t *)data);
  if (!pb) {
    fl__io_fail(err, name, 0,
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
  fl_profile_info_t *info = fl_profile_info(r.p);
  info->sample_rate = c.sample_rate;
  if (pb->duration_nanos > 0) info->wall_seconds = (double)pb->duration_nanos / 1e9;
  if (pb->time_nanos > 0) info->taken_unix = pb->time_nanos / 1000000000;
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
  perftools__profiles__profile__free_unpacked(pb, &pb_allocator);
  return rc;
}

/* ---- writing ---- */

/* Interned strings, by content: their string_table indices. The strings
 * are borrowed (the tree's and literals). */
typedef struct strtab {
  const char **strs;
  size_t n, cap;
  fl__index_t index;
} strtab_t;

static int64_t str_index(strtab_t *t, const char *s) {
  if (!s || !*s) return 0;
  size_t len = strlen(s);
  uint64_t h = fl__hash_bytes(s, len);
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&t->index, h, &pr); i != FL__NONE;
       i = fl__index_next(&t->index, &pr))
    if (!strcmp(t->strs[i], s)) return i;
  t->strs = fl__grow(t->strs, &t->cap, t->n + 1, sizeof *t->strs);
  t->strs[t->n] = s;
  fl__index_add(&t->index, h, (uint32_t)t->n);
  return (int64_t)t->n++;
}

/* A table of messages found again by a key of int64s: the n-th is id n. */
typedef struct keyed {
  int64_t *keys; /* width per item, back to back */
  size_t width, n, cap;
  fl__index_t index;
} keyed_t;

/* The id (1-based) of the item with key[0, width); added when new (*added
 * true). */
static uint64_t keyed_id(keyed_t *k, const int64_t *key, bool *added) {
  uint64_t h = fl__hash_bytes(key, k->width * sizeof *key);
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&k->index, h, &pr); i != FL__NONE;
       i = fl__index_next(&k->index, &pr))
    if (!memcmp(k->keys + i * k->width, key, k->width * sizeof *key)) {
      *added = false;
      return i + 1;
    }
  k->keys = fl__grow(k->keys, &k->cap, (k->n + 1) * k->width, sizeof *k->keys);
  memcpy(k->keys + k->n * k->width, key, k->width * sizeof *key);
  fl__index_add(&k->index, h, (uint32_t)k->n);
  *added = true;
  return ++k->n;
}

static void keyed_free(keyed_t *k) {
  free(k->keys);
  fl__index_free(&k->index);
}

typedef struct writer {
  const fl_tree_t *t;
  strtab_t strings;
  keyed_t functions;     /* key: name, file */
  keyed_t mappings;      /* key: file name */
  fl__index_t loc_index; /* locations, by a hash of their key (location_of) */
  pb_function_t **fns;
  size_t n_fns, fns_cap;
  pb_mapping_t **maps;
  size_t n_maps, maps_cap;
  pb_location_t **locs;
  size_t n_locs, locs_cap;
  uint64_t *node_loc;  /* by node id: the location of the chain from it; 0 not yet */
  uint32_t *node_next; /* by node id: the node above that chain (0: the root) */
} writer_t;

static uint64_t function_of(writer_t *w, const fl_frame_t *f) {
  int64_t key[2] = {str_index(&w->strings, f->func), str_index(&w->strings, f->file)};
  bool added;
  uint64_t id = keyed_id(&w->functions, key, &added);
  if (added) {
    pb_function_t *fn = fl__xmalloc(1, sizeof *fn);
    perftools__profiles__function__init(fn);
    fn->id = id;
    fn->name = fn->system_name = key[0];
    fn->filename = key[1];
    w->fns = fl__grow(w->fns, &w->fns_cap, w->n_fns + 1, sizeof *w->fns);
    w->fns[w->n_fns++] = fn;
  }
  return id;
}

static uint64_t mapping_of(writer_t *w, const char *module) {
  if (!module || !*module) return 0;
  int64_t key = str_index(&w->strings, module);
  bool added;
  uint64_t id = keyed_id(&w->mappings, &key, &added);
  if (added) {
    pb_mapping_t *m = fl__xmalloc(1, sizeof *m);
    perftools__profiles__mapping__init(m);
    m->id = id;
    m->filename = key;
    m->has_functions = true;
    w->maps = fl__grow(w->maps, &w->maps_cap, w->n_maps + 1, sizeof *w->maps);
    w->maps[w->n_maps++] = m;
  }
  return id;
}

/* A location is in one mapping: a frame perf says was inlined, but into a
 * caller of another module (perf --call-graph dwarf prints glibc's
 * __libc_start_main_impl so, under the program's _start), is a location
 * of its own. */
static bool same_module(const fl_frame_t *a, const fl_frame_t *b) {
  return a->module == b->module || (a->module && b->module && !strcmp(a->module, b->module));
}

/* Notes that the chain from n up to top is location id. */
static uint64_t remember(writer_t *w, const fl_node_t *n, const fl_node_t *top, uint64_t id,
                         const fl_node_t **next) {
  w->node_loc[n->id] = id;
  w->node_next[n->id] = top->parent ? top->parent->id : 0;
  *next = top->parent;
  return id;
}

/* The location of the chain that starts at node n (not the root): n, and
 * the callers it was inlined into up to the first that was not inlined;
 * *next is the node above the chain. Worked out once per node. */
static uint64_t location_of(writer_t *w, const fl_node_t *n, const fl_node_t **next) {
  if (w->node_loc[n->id]) {
    *next = fl_tree_node(w->t, w->node_next[n->id]);
    return w->node_loc[n->id];
  }
  const fl_node_t *top = n;
  size_t n_lines = 1;
  while ((top->frame.flags & FL_FRAME_INLINED) && top->parent && top->parent->depth > 0 &&
         same_module(&top->frame, &top->parent->frame)) {
    top = top->parent;
    n_lines++;
  }
  /* The key: mapping, address, then (function, line) per line, leaf
   * first. */
  uint64_t mapping = mapping_of(w, top->frame.module);
  int64_t *key = fl__xmalloc(2 + 2 * n_lines, sizeof *key);
  key[0] = (int64_t)mapping;
  key[1] = (int64_t)n->frame.addr;
  size_t k = 2;
  for (const fl_node_t *c = n;; c = c->parent) {
    key[k++] = (int64_t)function_of(w, &c->frame);
    key[k++] = c->frame.line;
    if (c == top) break;
  }
  uint64_t h = fl__hash_bytes(key, k * sizeof *key);
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&w->loc_index, h, &pr); i != FL__NONE;
       i = fl__index_next(&w->loc_index, &pr)) {
    const pb_location_t *l = w->locs[i];
    if (l->n_line != n_lines || l->mapping_id != mapping || l->address != n->frame.addr) continue;
    bool same = true;
    for (size_t j = 0; j < n_lines && same; j++)
      same =
          l->line[j]->function_id == (uint64_t)key[2 + 2 * j] && l->line[j]->line == key[3 + 2 * j];
    if (same) {
      free(key);
      return remember(w, n, top, l->id, next);
    }
  }
  pb_location_t *l = fl__xmalloc(1, sizeof *l);
  perftools__profiles__location__init(l);
  l->id = w->n_locs + 1;
  l->mapping_id = mapping;
  l->address = n->frame.addr;
  l->n_line = n_lines;
  l->line = fl__xmalloc(n_lines, sizeof *l->line);
  for (size_t j = 0; j < n_lines; j++) {
    pb_line_t *line = fl__xmalloc(1, sizeof *line);
    perftools__profiles__line__init(line);
    line->function_id = (uint64_t)key[2 + 2 * j];
    line->line = key[3 + 2 * j];
    l->line[j] = line;
  }
  w->locs = fl__grow(w->locs, &w->locs_cap, w->n_locs + 1, sizeof *w->locs);
  w->locs[w->n_locs] = l;
  fl__index_add(&w->loc_index, h, (uint32_t)w->n_locs++);
  if (mapping) {
    pb_mapping_t *m = w->maps[mapping - 1];
    for (const fl_node_t *c = n;; c = c->parent) {
      m->has_filenames |= c->frame.file != NULL;
      m->has_line_numbers |= c->frame.line > 0;
      if (c == top) break;
    }
    m->has_inline_frames |= n_lines > 1;
  }
  free(key);
  return remember(w, n, top, l->id, next);
}

static int64_t clamp64(uint64_t v) {
  return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* v * m, saturated. */
static int64_t times(uint64_t v, uint64_t m) {
  return m && v > INT64_MAX / m ? INT64_MAX : (int64_t)(v * m);
}

static pb_value_type_t *value_type(writer_t *w, const char *type, const char *unit) {
  pb_value_type_t *vt = fl__xmalloc(1, sizeof *vt);
  perftools__profiles__value_type__init(vt);
  vt->type = str_index(&w->strings, type);
  vt->unit = str_index(&w->strings, unit);
  return vt;
}

/* The samples being written: each one block (the message, its values,
 * its labels' pointers and its own time label); a node's locations and a
 * thread's labels are shared by the samples that have them. */
typedef struct out_sample {
  pb_sample_t s;
  int64_t value[2];
  pb_label_t *labels[3];
  pb_label_t time;
} out_sample_t;

typedef struct thread_labels {
  int thread;
  pb_label_t id, name;
  bool named;
} thread_labels_t;

typedef struct samples {
  writer_t *w;
  const fl_kind_info_t *kind;
  const fl_profile_info_t *info;
  size_t n_types;
  pb_sample_t **samples;
  size_t n, cap;
  uint64_t **node_locs; /* by node id: its locations, leaf first (NULL: not yet) */
  size_t *node_n_locs;
  thread_labels_t **threads; /* each its own block: samples point into it */
  size_t n_threads, threads_cap;
} samples_t;

/* Node n's locations, leaf first, worked out once. */
static const uint64_t *node_locations(samples_t *o, const fl_node_t *node, size_t *n_out) {
  if (!o->node_locs[node->id]) {
    size_t n = 0, cap = 1;
    uint64_t *ids = fl__xmalloc(cap, sizeof *ids);
    for (const fl_node_t *c = node; c && c->depth > 0;) {
      ids = fl__grow(ids, &cap, n + 1, sizeof *ids);
      ids[n++] = location_of(o->w, c, &c);
    }
    o->node_locs[node->id] = ids;
    o->node_n_locs[node->id] = n;
  }
  *n_out = o->node_n_locs[node->id];
  return o->node_locs[node->id];
}

/* A new sample of node with these weights, appended. */
static out_sample_t *add_sample(samples_t *o, const fl_node_t *node, uint64_t weight,
                                uint64_t allocs) {
  out_sample_t *os = fl__xcalloc(1, sizeof *os);
  pb_sample_t *s = &os->s;
  perftools__profiles__sample__init(s);
  s->location_id = (uint64_t *)node_locations(o, node, &s->n_location_id);
  s->n_value = o->n_types;
  s->value = os->value;
  if (o->kind->allocs) {
    os->value[0] = clamp64(o->kind->bytes ? allocs : weight);
    if (o->n_types > 1) os->value[1] = clamp64(weight);
  } else {
    os->value[0] = clamp64(weight);
    if (o->n_types > 1) os->value[1] = times(weight, o->info->interval_ns);
  }
  s->label = os->labels;
  o->samples = fl__grow(o->samples, &o->cap, o->n + 1, sizeof *o->samples);
  o->samples[o->n++] = s; /* s is os's first member */
  return os;
}

/* The labels of thread (its id, and its name when the profile has one). */
static thread_labels_t *labels_of_thread(samples_t *o, const fl_profile_t *p, int thread) {
  for (size_t i = 0; i < o->n_threads; i++)
    if (o->threads[i]->thread == thread) return o->threads[i];
  o->threads = fl__grow(o->threads, &o->threads_cap, o->n_threads + 1, sizeof *o->threads);
  thread_labels_t *tl = fl__xcalloc(1, sizeof *tl);
  o->threads[o->n_threads++] = tl;
  tl->thread = thread;
  perftools__profiles__label__init(&tl->id);
  tl->id.key = str_index(&o->w->strings, "thread_id");
  tl->id.num = thread;
  const char *name = fl_profile_thread_name(p, thread);
  perftools__profiles__label__init(&tl->name);
  tl->named = name != NULL;
  tl->name.key = str_index(&o->w->strings, "thread_name");
  tl->name.str = str_index(&o->w->strings, name);
  return tl;
}

/* Whether any sample of p knows its thread or time. */
static bool has_labels(const fl_profile_t *p) {
  fl_sample_t s;
  for (size_t i = 0, n = fl_profile_n_samples(p); i < n; i++) {
    fl_profile_sample(p, i, &s);
    if (s.thread || s.time_ns) return true;
  }
  return false;
}

/* The samples of tree t: see the file comment. */
static void write_samples(samples_t *o, const fl_tree_t *t) {
  size_t n_nodes = fl_tree_n_nodes(t);
  const fl_profile_t *p = fl_tree_profile(t);
  o->node_locs = fl__xcalloc(n_nodes, sizeof *o->node_locs);
  o->node_n_locs = fl__xcalloc(n_nodes, sizeof *o->node_n_locs);
  if (!has_labels(p)) {
    for (size_t i = 0; i < n_nodes; i++) {
      const fl_node_t *node = fl_tree_node(t, i);
      if (node->self) add_sample(o, node, node->self, node->self_allocs);
    }
    return;
  }
  int64_t time_key = str_index(&o->w->strings, "timestamp_ns");
  int64_t ns = str_index(&o->w->strings, "nanoseconds");
  fl_sample_t s;
  for (size_t i = 0, n = fl_profile_n_samples(p); i < n; i++) {
    fl_profile_sample(p, i, &s);
    const fl_node_t *node = fl_tree_node_of(t, &s);
    if (!node || !s.weight) continue;
    out_sample_t *os = add_sample(o, node, s.weight, s.allocs);
    if (s.thread) {
      thread_labels_t *tl = labels_of_thread(o, p, s.thread);
      os->labels[os->s.n_label++] = &tl->id;
      if (tl->named) os->labels[os->s.n_label++] = &tl->name;
    }
    if (s.time_ns) {
      perftools__profiles__label__init(&os->time);
      os->time.key = time_key;
      os->time.num = clamp64(s.time_ns);
      os->time.num_unit = ns;
      os->labels[os->s.n_label++] = &os->time;
    }
  }
}

static void samples_free(samples_t *o, size_t n_nodes) {
  for (size_t i = 0; i < o->n; i++) free(o->samples[i]);
  free(o->samples);
  for (size_t i = 0; i < n_nodes; i++) free(o->node_locs[i]);
  free(o->node_locs);
  free(o->node_n_locs);
  for (size_t i = 0; i < o->n_threads; i++) free(o->threads[i]);
  free(o->threads);
}

char *fl_pprof(const fl_tree_t *t, size_t *size) {
  const fl_profile_info_t *info = fl_profile_info_const(fl_tree_profile(t));
  size_t n_nodes = fl_tree_n_nodes(t);
  writer_t w = {.t = t};
  pb_profile_t pb = PERFTOOLS__PROFILES__PROFILE__INIT;
  w.strings.strs = fl__xmalloc(1, sizeof *w.strings.strs);
  w.strings.strs[0] = "";
  w.strings.n = w.strings.cap = 1;
  w.functions.width = 2;
  w.mappings.width = 1;
  w.node_loc = fl__xcalloc(n_nodes, sizeof *w.node_loc);
  w.node_next = fl__xcalloc(n_nodes, sizeof *w.node_next);

  /* What the values are: the kind's count first (allocations, samples),
   * then its measure (bytes, nanoseconds) when it has one. */
  const fl_kind_info_t *kind = fl_kind(info->kind);
  bool alloc = kind->allocs;
  pb_value_type_t *types[2];
  size_t n_types = 0;
  if (alloc) {
    types[n_types++] =
        value_type(&w, kind->pprof_count ? kind->pprof_count : kind->pprof_type, "count");
    if (kind->bytes) types[n_types++] = value_type(&w, kind->pprof_type, kind->pprof_unit);
    pb.period_type = value_type(&w, "allocations", "count");
    pb.period = info->sample_rate > 0 ? (int64_t)(1.0 / info->sample_rate + 0.5) : 1;
    pb.default_sample_type = types[n_types - 1]->type;
  } else if (kind->time) {
    types[n_types++] = value_type(&w, kind->pprof_count, "count");
    if (info->interval_ns) types[n_types++] = value_type(&w, kind->pprof_type, kind->pprof_unit);
    pb.period_type = value_type(&w, kind->pprof_type, kind->pprof_unit);
    pb.period = clamp64(info->interval_ns);
  } else { /* a count of events, named after the event */
    types[n_types++] = value_type(&w, info->event[0] ? info->event : kind->pprof_type, "count");
  }
  pb.n_sample_type = n_types;
  pb.sample_type = types;

  /* mapping[0] is the main binary, by the format's convention: the module
   * of the program's first frame. */
  for (size_t i = 1; i < n_nodes; i++) {
    const fl_frame_t *f = &fl_tree_node(t, i)->frame;
    if ((f->flags & FL_FRAME_CELL) && f->module && *f->module) {
      mapping_of(&w, f->module);
      break;
    }
  }

  samples_t out_samples = {.w = &w, .kind = kind, .info = info, .n_types = n_types};
  write_samples(&out_samples, t);
  pb.n_sample = out_samples.n;
  pb.sample = out_samples.samples;
  pb.n_mapping = w.n_maps;
  pb.mapping = w.maps;
  pb.n_location = w.n_locs;
  pb.location = w.locs;
  pb.n_function = w.n_fns;
  pb.function = w.fns;
  if (info->taken_unix > 0) pb.time_nanos = times((uint64_t)info->taken_unix, 1000000000);
  if (info->wall_seconds > 0) pb.duration_nanos = (int64_t)(info->wall_seconds * 1e9);
  int64_t comment = 0;
  if (info->source[0]) {
    comment = str_index(&w.strings, info->source);
    pb.n_comment = 1;
    pb.comment = &comment;
  }
  pb.n_string_table = w.strings.n;
  pb.string_table = (char **)w.strings.strs;

  size_t packed_size = perftools__profiles__profile__get_packed_size(&pb);
  uint8_t *packed = fl__xmalloc(packed_size, 1);
  perftools__profiles__profile__pack(&pb, packed);
  char *out = fl__gzip(packed, packed_size, size);
  free(packed);

  samples_free(&out_samples, n_nodes);
  for (size_t i = 0; i < w.n_locs; i++) {
    for (size_t j = 0; j < w.locs[i]->n_line; j++) free(w.locs[i]->line[j]);
    free(w.locs[i]->line);
    free(w.locs[i]);
  }
  free(w.locs);
  for (size_t i = 0; i < w.n_fns; i++) free(w.fns[i]);
  free(w.fns);
  for (size_t i = 0; i < w.n_maps; i++) free(w.maps[i]);
  free(w.maps);
  for (size_t i = 0; i < n_types; i++) free(types[i]);
  free(pb.period_type);
  free(w.node_loc);
  free(w.node_next);
  free(w.strings.strs);
  fl__index_free(&w.strings.index);
  keyed_free(&w.functions);
  keyed_free(&w.mappings);
  fl__index_free(&w.loc_index);
  return out;
}
