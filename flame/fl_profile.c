/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_profile: frames interned in a hash table, stacks interned in another,
 * samples as small fixed-size records.
 *
 * Storage:
 *  - frames: an array indexed by frame id, and an fl__index of them keyed
 *    by every field of the frame. Strings are interned in an fl__strset,
 *    so equal strings are equal pointers and a frame is hashed and
 *    compared by its string pointers.
 *  - stacks: each distinct stack is stored once, as a run of frame ids in
 *    one flat array (ids[off .. off + len)), and found again by an
 *    fl__index keyed by its contents. A profile of 10^6 samples
 *    over 10^5 distinct stacks holds 10^5 runs, not 10^6. Samples with equal
 *    stacks share the run, so their fl_sample_t.stack pointers are equal,
 *    which lets fl_tree walk each distinct stack once. (The empty stack may
 *    point where a later run starts: (pointer, length) is the identity.)
 *  - samples: one record each (stack index, weight, allocations, thread,
 *    time stamp: 32 bytes), in the order they were added.
 *  - thread names: a short array of (thread, interned name), searched in
 *    order: a profile has threads in the tens, not thousands.
 *
 * Running out of memory aborts with a message, as everywhere in the
 * library (fl__common.h): a profile with silently missing samples would
 * lie. What input asks for is charged to the profile's budget first, when
 * it has one (the readers'): a new distinct stack, frame or sample is
 * charged what it adds, its arrays' doubling included (each element
 * twice), before it is added, and a refused one is not added. */
#define _GNU_SOURCE
#include "cflame/fl_profile.h"

#include "fl__common.h"
#include "fl__demangle.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct stack_rec {
  size_t off; /* into ids */
  uint32_t len;
  uint32_t hash;
} stack_rec_t;

typedef struct sample_rec {
  uint64_t weight;
  uint64_t allocs;
  uint64_t time_ns;
  uint32_t stack; /* index into stacks */
  int thread;
} sample_rec_t;

typedef struct thread_name {
  int thread;
  const char *name; /* interned */
} thread_name_t;

struct fl_profile {
  fl_profile_info_t info;

  fl__strset_t strings; /* interned strings */

  fl_frame_t *frames; /* by id */
  size_t n_frames, frames_cap;
  fl__index_t frame_index;

  uint32_t *ids; /* every distinct stack's frame ids, back to back */
  size_t n_ids, ids_cap;
  stack_rec_t *stacks;
  size_t n_stacks, stacks_cap;
  fl__index_t stack_index;

  sample_rec_t *samples;
  size_t n_samples, samples_cap;

  thread_name_t *names;
  size_t n_names, names_cap;

  fl_profile_run_t *runs; /* names interned */
  size_t n_runs, runs_cap;

  fl_budget_t *budget; /* charged for what samples and frames add; NULL: none */
};

/* ---- kinds ---- */

/* The table of kinds (fl_profile.h). A time kind's companion count in
 * pprof is "samples"; an allocation kind weighed in bytes carries its
 * allocation counts as the matching "..._objects". */
static const fl_kind_info_t kinds[FL_PROFILE_N_KINDS] = {
    [FL_PROFILE_CPU] = {"cpu", "CPU", "a CPU profile", "sample", "samples", "samples",
                        FL_PROFILE_CPU, .time = true, .pprof_type = "cpu",
                        .pprof_unit = "nanoseconds", .pprof_count = "samples"},
    [FL_PROFILE_WALL] = {"wall", "wall", "a wall-clock profile", "sample", "samples", "samples",
                         FL_PROFILE_WALL, .time = true, .pprof_type = "wall",
                         .pprof_unit = "nanoseconds", .pprof_count = "samples"},
    [FL_PROFILE_OFFCPU] = {"offcpu", "off-CPU", "an off-CPU profile", "sample", "samples",
                           "samples", FL_PROFILE_OFFCPU, .time = true, .pprof_type = "off_cpu",
                           .pprof_unit = "nanoseconds", .pprof_count = "samples"},
    [FL_PROFILE_ALLOC_BYTES] = {"alloc_bytes", "alloc", "an allocation profile", "byte", "bytes",
                                "bytes", FL_PROFILE_ALLOC_BYTES, .allocs = true, .bytes = true,
                                .pprof_type = "alloc_space", .pprof_unit = "bytes",
                                .pprof_count = "alloc_objects"},
    [FL_PROFILE_ALLOC_COUNT] = {"alloc_count", "alloc", "an allocation profile", "allocation",
                                "allocations", "allocation counts", FL_PROFILE_ALLOC_COUNT,
                                .allocs = true, .pprof_type = "alloc_objects",
                                .pprof_unit = "count"},
    [FL_PROFILE_LIVE_BYTES] = {"live_bytes", "alloc", "an allocation profile", "byte", "bytes",
                               "bytes", FL_PROFILE_ALLOC_BYTES, .allocs = true, .bytes = true,
                               .live = true, .pprof_type = "inuse_space", .pprof_unit = "bytes",
                               .pprof_count = "inuse_objects"},
    [FL_PROFILE_LIVE_COUNT] = {"live_count", "alloc", "an allocation profile", "allocation",
                               "allocations", "allocation counts", FL_PROFILE_ALLOC_COUNT,
                               .allocs = true, .live = true, .pprof_type = "inuse_objects",
                               .pprof_unit = "count"},
    [FL_PROFILE_EVENT] = {"event", "event", "an event profile", "event", "events", "events",
                          FL_PROFILE_EVENT, .pprof_type = "events", .pprof_unit = "count"},
};

const fl_kind_info_t *fl_kind(fl_profile_kind_t kind) {
  assert((unsigned)kind < FL_PROFILE_N_KINDS);
  return &kinds[kind];
}

fl_profile_kind_t fl_kind_alloc(bool count, bool live) {
  if (live) return count ? FL_PROFILE_LIVE_COUNT : FL_PROFILE_LIVE_BYTES;
  return count ? FL_PROFILE_ALLOC_COUNT : FL_PROFILE_ALLOC_BYTES;
}

bool fl_kind_comparable(fl_profile_kind_t a, fl_profile_kind_t b) {
  return fl_kind(a)->measure == fl_kind(b)->measure;
}

/* ---- hashing ---- */

/* Hashes a run of frame ids (FNV-1a over 32-bit words, then mixed). */
static uint32_t hash_ids(const uint32_t *ids, size_t n) {
  uint64_t h = 0xcbf29ce484222325u ^ n;
  for (size_t i = 0; i < n; i++) {
    h ^= ids[i];
    h *= 0x100000001b3u;
  }
  return (uint32_t)fl__mix64(h);
}

/* ---- strings ---- */

/* The interned copy of s (owned by p); NULL for NULL. */
/* Interns s with its control characters (below 0x20, and 0x7f) written
 * \xHH: a name that came in a profile never breaks a line of a report or
 * of folded stacks, nor moves a terminal's cursor, and reads back as
 * itself from every format cflame writes. */
static const char *intern(fl_profile_t *p, const char *s) {
  if (!s) return NULL;
  const unsigned char *c = (const unsigned char *)s;
  while (*c >= 0x20 && *c != 0x7f) c++;
  if (!*c) return fl__strset_intern(&p->strings, s);
  fl__buf_t b = FL__BUF_INIT;
  for (c = (const unsigned char *)s; *c; c++) {
    if (*c < 0x20 || *c == 0x7f)
      fl__buf_printf(&b, "\\x%02x", *c);
    else
      fl__buf_add(&b, (const char *)c, 1);
  }
  const char *escaped = fl__strset_intern(&p->strings, b.data);
  fl__buf_free(&b);
  return escaped;
}

/* ---- frames ---- */

/* What an index's slot costs, at its load factor: a charge per item. */
#define INDEX_ITEM_BYTES 16

/* Charges p's budget, if any. Returns 0, or -1 when it refuses. */
static int charge(fl_profile_t *p, size_t bytes, uint64_t frames) {
  return p->budget ? fl_budget_charge(p->budget, bytes, frames) : 0;
}

/* What tells frames apart by name: the symbol, which two functions never
 * share, where their readable names may read alike. */
static const char *frame_symbol(const fl_frame_t *f) {
  return f->system_name ? f->system_name : f->func;
}

/* A frame whose strings are interned: equal fields are equal pointers. */
static uint64_t hash_frame(const fl_frame_t *f) {
  uint64_t h = fl__mix64((uint64_t)(uintptr_t)frame_symbol(f));
  h = fl__mix64(h ^ (uint64_t)(uintptr_t)f->file);
  h = fl__mix64(h ^ (uint64_t)(uintptr_t)f->module);
  h = fl__mix64(h ^ ((uint64_t)(uint32_t)f->line << 32 | f->flags));
  return fl__mix64(h ^ f->addr);
}

static bool frame_equal(const fl_frame_t *a, const fl_frame_t *b) {
  return frame_symbol(a) == frame_symbol(b) && a->file == b->file && a->module == b->module &&
         a->line == b->line && a->addr == b->addr && a->flags == b->flags;
}

/* Strings of frame are copied into p (a NULL function becomes
 * "[unknown]"); the same fields always give the same id. */
uint32_t fl_profile_frame_id(fl_profile_t *p, const fl_frame_t *frame) {
  fl_frame_t f = *frame;
  f.func = intern(p, frame->func ? frame->func : "[unknown]");
  f.file = intern(p, frame->file);
  f.module = intern(p, frame->module);
  f.system_name = intern(p, frame->system_name);
  if (f.system_name == f.func) f.system_name = NULL;
  uint64_t h = hash_frame(&f);
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&p->frame_index, h, &pr); i != FL__NONE;
       i = fl__index_next(&p->frame_index, &pr))
    if (frame_equal(&p->frames[i], &f)) return i;
  /* New: charged for the record, its index slot and its strings (each
   * with the interning set's own arrays and malloc's overhead). */
  if (p->budget) {
    size_t strings = 0;
    const char *s[] = {f.func, f.file, f.module, f.system_name};
    for (size_t k = 0; k < 4; k++) strings += s[k] ? strlen(s[k]) + 48 : 0;
    if (charge(p, 2 * sizeof(fl_frame_t) + INDEX_ITEM_BYTES + strings, 0) < 0)
      return FL_PROFILE_NO_FRAME;
  }
  /* Demangled once, here, whoever read it (its symbol, and so its hash,
   * stays what it was). */
  char *readable = f.system_name ? NULL : fl__demangle(f.func);
  if (readable) {
    f.system_name = f.func;
    f.func = intern(p, readable);
    free(readable);
  }
  if (p->n_frames >= UINT32_MAX - 1) fl__oom(0); /* ids are 32 bits */
  p->frames = fl__grow(p->frames, &p->frames_cap, p->n_frames + 1, sizeof *p->frames);
  uint32_t id = (uint32_t)p->n_frames++;
  p->frames[id] = f;
  fl__index_add(&p->frame_index, h, id);
  return id;
}

const fl_frame_t *fl_profile_frame(const fl_profile_t *p, uint32_t id) {
  assert(id < p->n_frames);
  return &p->frames[id];
}

size_t fl_profile_n_frames(const fl_profile_t *p) {
  return p->n_frames;
}

/* ---- stacks ---- */

/* The index of the distinct stack ids[0 .. n) with hash h, or FL__NONE. */
static uint32_t find_stack(const fl_profile_t *p, const uint32_t *ids, size_t n, uint32_t h) {
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&p->stack_index, h, &pr); i != FL__NONE;
       i = fl__index_next(&p->stack_index, &pr)) {
    const stack_rec_t *s = &p->stacks[i];
    if (s->len == n && (n == 0 || memcmp(p->ids + s->off, ids, n * sizeof *ids) == 0)) return i;
  }
  return FL__NONE;
}

/* The memory a new distinct stack of n frames takes (see the file
 * comment); saturated. */
static size_t stack_bytes(size_t n) {
  return n > SIZE_MAX / 16 ? SIZE_MAX
                           : 2 * n * sizeof(uint32_t) + 2 * sizeof(stack_rec_t) + INDEX_ITEM_BYTES;
}

/* Adds the distinct stack ids[0 .. n) of hash h, which p does not hold,
 * and returns its index. ids must not point into p->ids (it may move). */
static uint32_t add_stack(fl_profile_t *p, const uint32_t *ids, size_t n, uint32_t h) {
  if (p->n_stacks >= UINT32_MAX - 1) fl__oom(0); /* stack numbers are 32 bits */
  p->ids = fl__grow(p->ids, &p->ids_cap, p->n_ids + n, sizeof *p->ids);
  p->stacks = fl__grow(p->stacks, &p->stacks_cap, p->n_stacks + 1, sizeof *p->stacks);
  if (n) memcpy(p->ids + p->n_ids, ids, n * sizeof *ids);
  uint32_t s = (uint32_t)p->n_stacks++;
  p->stacks[s] = (stack_rec_t){.off = p->n_ids, .len = (uint32_t)n, .hash = h};
  p->n_ids += n;
  fl__index_add(&p->stack_index, h, s);
  return s;
}

/* The index of the distinct stack ids[0 .. n), added if new. */
static uint32_t intern_stack(fl_profile_t *p, const uint32_t *ids, size_t n) {
  if (n > UINT32_MAX) fl__oom(0); /* lengths are 32 bits */
  uint32_t h = hash_ids(ids, n);
  uint32_t found = find_stack(p, ids, n, h);
  return found != FL__NONE ? found : add_stack(p, ids, n, h);
}

static void push_sample(fl_profile_t *p, uint32_t stack, uint64_t weight, uint64_t allocs,
                        int thread, uint64_t time_ns) {
  p->samples = fl__grow(p->samples, &p->samples_cap, p->n_samples + 1, sizeof *p->samples);
  p->samples[p->n_samples++] = (sample_rec_t){
      .weight = weight, .allocs = allocs, .time_ns = time_ns, .stack = stack, .thread = thread};
  p->info.samples++;
  p->info.total_weight += weight;
  p->info.total_allocs += allocs;
}

/* ---- the profile ---- */

fl_profile_t *fl_profile_new(fl_profile_kind_t kind) {
  fl_profile_t *p = fl__xcalloc(1, sizeof *p);
  p->info.kind = kind;
  p->info.sample_rate = 1;
  fl__index_init(&p->frame_index, 64);
  fl__index_init(&p->stack_index, 64);
  p->ids_cap = 1024; /* never NULL: an empty stack points into it too */
  p->ids = fl__xmalloc(p->ids_cap, sizeof *p->ids);
  return p;
}

void fl_profile_destroy(fl_profile_t **pp) {
  fl_profile_t *p = *pp;
  if (!p) return;
  fl__strset_free(&p->strings);
  free(p->frames);
  fl__index_free(&p->frame_index);
  free(p->ids);
  free(p->stacks);
  fl__index_free(&p->stack_index);
  free(p->samples);
  free(p->names);
  free(p->runs);
  free(p);
  *pp = NULL;
}

/* Frames are re-interned in id order, so they keep their ids; stacks and
 * samples are copied as they are, and the stacks indexed again. */
fl_profile_t *fl_profile_copy(const fl_profile_t *src) {
  fl_profile_t *p = fl_profile_new(src->info.kind);
  p->info = src->info;
  for (size_t id = 0; id < src->n_frames; id++) {
    uint32_t got = fl_profile_frame_id(p, &src->frames[id]);
    assert(got == id);
    (void)got;
  }
  p->ids = fl__grow(p->ids, &p->ids_cap, src->n_ids, sizeof *p->ids);
  p->stacks = fl__grow(p->stacks, &p->stacks_cap, src->n_stacks, sizeof *p->stacks);
  p->samples = fl__grow(p->samples, &p->samples_cap, src->n_samples, sizeof *p->samples);
  if (src->n_ids) memcpy(p->ids, src->ids, src->n_ids * sizeof *p->ids);
  if (src->n_stacks) memcpy(p->stacks, src->stacks, src->n_stacks * sizeof *p->stacks);
  if (src->n_samples) memcpy(p->samples, src->samples, src->n_samples * sizeof *p->samples);
  p->n_ids = src->n_ids;
  p->n_stacks = src->n_stacks;
  p->n_samples = src->n_samples;
  for (size_t s = 0; s < p->n_stacks; s++)
    fl__index_add(&p->stack_index, p->stacks[s].hash, (uint32_t)s);
  for (size_t i = 0; i < src->n_names; i++)
    fl_profile_set_thread_name(p, src->names[i].thread, src->names[i].name);
  for (size_t i = 0; i < src->n_runs; i++)
    fl_profile_add_run(p, src->runs[i].name, src->runs[i].cpu_seconds, src->runs[i].wall_seconds);
  return p;
}

static size_t index_bytes(const fl__index_t *ix) {
  return ix->slots ? (ix->mask + 1) * sizeof *ix->slots : 0;
}

size_t fl_profile_bytes(const fl_profile_t *p) {
  size_t bytes = sizeof *p + p->strings.cap * sizeof *p->strings.strs + index_bytes(&p->strings.index);
  for (size_t i = 0; i < p->strings.n; i++) bytes += strlen(p->strings.strs[i]) + 1;
  return bytes + p->frames_cap * sizeof *p->frames + index_bytes(&p->frame_index) +
         p->ids_cap * sizeof *p->ids + p->stacks_cap * sizeof *p->stacks +
         index_bytes(&p->stack_index) + p->samples_cap * sizeof *p->samples +
         p->names_cap * sizeof *p->names;
}

fl_profile_info_t *fl_profile_info(fl_profile_t *p) {
  return &p->info;
}
const fl_profile_info_t *fl_profile_info_const(const fl_profile_t *p) {
  return &p->info;
}

void fl_profile_set_budget(fl_profile_t *p, fl_budget_t *b) {
  p->budget = b;
}

int fl_profile_add_sample_at(fl_profile_t *p, const uint32_t *stack, size_t n, uint64_t weight,
                             uint64_t allocs, int thread, uint64_t time_ns) {
  for (size_t i = 0; i < n; i++) assert(stack[i] < p->n_frames);
  if (n > UINT32_MAX) fl__oom(0); /* lengths are 32 bits */
  uint32_t h = hash_ids(stack, n);
  uint32_t s = find_stack(p, stack, n, h);
  /* The stack is hashed and compared whatever it is: n frames of work; a
   * new one is stored too. */
  if (charge(p, 2 * sizeof(sample_rec_t) + (s == FL__NONE ? stack_bytes(n) : 0), n) < 0) return -1;
  if (s == FL__NONE) s = add_stack(p, stack, n, h);
  push_sample(p, s, weight, allocs, thread, time_ns);
  return 0;
}

int fl_profile_add_sample(fl_profile_t *p, const uint32_t *stack, size_t n, uint64_t weight,
                          uint64_t allocs, int thread) {
  return fl_profile_add_sample_at(p, stack, n, weight, allocs, thread, 0);
}

static thread_name_t *find_name(const fl_profile_t *p, int thread) {
  for (size_t i = 0; i < p->n_names; i++)
    if (p->names[i].thread == thread) return &p->names[i];
  return NULL;
}

void fl_profile_set_thread_name(fl_profile_t *p, int thread, const char *name) {
  thread_name_t *t = find_name(p, thread);
  if (!name || !*name) {
    if (t) *t = p->names[--p->n_names]; /* the order does not matter */
    return;
  }
  if (!t) {
    p->names = fl__grow(p->names, &p->names_cap, p->n_names + 1, sizeof *p->names);
    t = &p->names[p->n_names++];
    t->thread = thread;
  }
  t->name = intern(p, name);
}

const char *fl_profile_thread_name(const fl_profile_t *p, int thread) {
  const thread_name_t *t = find_name(p, thread);
  return t ? t->name : NULL;
}

void fl_profile_add_run(fl_profile_t *p, const char *name, double cpu_seconds,
                        double wall_seconds) {
  p->runs = fl__grow(p->runs, &p->runs_cap, p->n_runs + 1, sizeof *p->runs);
  p->runs[p->n_runs++] = (fl_profile_run_t){.name = intern(p, name ? name : ""),
                                            .cpu_seconds = cpu_seconds,
                                            .wall_seconds = wall_seconds};
}

size_t fl_profile_n_runs(const fl_profile_t *p) {
  return p->n_runs;
}

const fl_profile_run_t *fl_profile_run(const fl_profile_t *p, size_t i) {
  return i < p->n_runs ? &p->runs[i] : NULL;
}

/* Frames of src are interned into p once each, then each distinct stack of
 * src once (after the root, if any), then the samples are appended by
 * stack index. Also adds src's dropped count and CPU and wall-clock
 * seconds, and takes its interval when p has none. Merging a profile into
 * itself doubles it. */
void fl_profile_merge_under(fl_profile_t *p, const fl_profile_t *src, const fl_frame_t *root) {
  assert(fl_kind_comparable(p->info.kind, src->info.kind));
  /* Recorded here only if all of it was. */
  p->info.recorded_here = (p->n_samples == 0 || p->info.recorded_here) && src->info.recorded_here;
  size_t n_frames = src->n_frames, n_stacks = src->n_stacks, n_samples = src->n_samples;
  size_t above = root ? 1 : 0; /* frames before each stack */
  uint32_t *frame_map = fl__xcalloc(n_frames, sizeof *frame_map);
  uint32_t *stack_map = fl__xcalloc(n_stacks, sizeof *stack_map);
  uint32_t *buf = fl__xmalloc(1, sizeof *buf);
  size_t buf_cap = 1;
  if (root) buf[0] = fl_profile_frame_id(p, root);
  for (size_t id = 0; id < n_frames; id++) {
    fl_frame_t f = src->frames[id]; /* p == src: frames may move */
    frame_map[id] = fl_profile_frame_id(p, &f);
  }
  for (size_t s = 0; s < n_stacks; s++) {
    stack_rec_t rec = src->stacks[s];
    buf = fl__grow(buf, &buf_cap, above + rec.len, sizeof *buf);
    for (uint32_t k = 0; k < rec.len; k++) buf[above + k] = frame_map[src->ids[rec.off + k]];
    stack_map[s] = intern_stack(p, buf, above + rec.len);
  }
  p->samples = fl__grow(p->samples, &p->samples_cap, p->n_samples + n_samples, sizeof *p->samples);
  for (size_t i = 0; i < n_samples; i++) {
    sample_rec_t r = src->samples[i];
    push_sample(p, stack_map[r.stack], r.weight, r.allocs, r.thread, r.time_ns);
  }
  for (size_t i = 0; i < src->n_names; i++) {
    thread_name_t t = src->names[i]; /* p == src: names may move */
    if (!fl_profile_thread_name(p, t.thread)) fl_profile_set_thread_name(p, t.thread, t.name);
  }
  for (size_t i = 0, n = src->n_runs; i < n; i++) {
    fl_profile_run_t r = src->runs[i]; /* p == src: runs may move */
    fl_profile_add_run(p, r.name, r.cpu_seconds, r.wall_seconds);
  }
  p->info.dropped += src->info.dropped;
  p->info.cpu_seconds += src->info.cpu_seconds;
  p->info.wall_seconds += src->info.wall_seconds;
  if (!p->info.interval_ns) p->info.interval_ns = src->info.interval_ns;
  free(buf);
  free(frame_map);
  free(stack_map);
}

void fl_profile_merge(fl_profile_t *p, const fl_profile_t *src) {
  fl_profile_merge_under(p, src, NULL);
}

/* Frames stay interned (their ids remain valid). The counters, times,
 * source, compiler and date are reset; kind, interval and sample rate
 * stay. */
void fl_profile_clear(fl_profile_t *p) {
  p->n_ids = 0;
  p->n_stacks = 0;
  p->n_samples = 0;
  p->n_names = 0;
  p->n_runs = 0;
  fl__index_clear(&p->stack_index);
  fl_profile_info_t old = p->info;
  memset(&p->info, 0, sizeof p->info);
  p->info.kind = old.kind;
  p->info.interval_ns = old.interval_ns;
  p->info.sample_rate = old.sample_rate;
}

size_t fl_profile_n_samples(const fl_profile_t *p) {
  return p->n_samples;
}

size_t fl_profile_n_stacks(const fl_profile_t *p) {
  return p->n_stacks;
}

void fl_profile_sample(const fl_profile_t *p, size_t i, fl_sample_t *out) {
  assert(i < p->n_samples);
  const sample_rec_t *r = &p->samples[i];
  const stack_rec_t *s = &p->stacks[r->stack];
  out->stack = p->ids + s->off;
  out->n = s->len;
  out->weight = r->weight;
  out->allocs = r->allocs;
  out->thread = r->thread;
  out->time_ns = r->time_ns;
  out->stack_id = r->stack;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

size_t fl_profile_thread_weights(const fl_profile_t *p, fl_thread_weights_t **out) {
  int *threads;
  size_t n = fl_profile_threads(p, &threads);
  fl_thread_weights_t *w = n ? fl__xcalloc(n, sizeof *w) : NULL;
  for (size_t i = 0; i < n; i++) w[i].thread = threads[i];
  free(threads);
  for (size_t i = 0; i < p->n_samples; i++) {
    const sample_rec_t *s = &p->samples[i];
    const stack_rec_t *st = &p->stacks[s->stack];
    bool off = st->len && (p->frames[p->ids[st->off + st->len - 1]].flags & FL_FRAME_OFFCPU);
    size_t lo = 0, hi = n; /* the thread, by bisection */
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (w[mid].thread <= s->thread)
        lo = mid;
      else
        hi = mid;
    }
    if (off)
      w[lo].off += s->weight;
    else
      w[lo].on += s->weight;
  }
  *out = w;
  return n;
}

size_t fl_profile_threads(const fl_profile_t *p, int **threads) {
  int *t = fl__xcalloc(p->n_samples, sizeof *t);
  size_t n = 0;
  for (size_t i = 0; i < p->n_samples; i++) {
    int th = p->samples[i].thread;
    if (n && t[n - 1] == th) continue; /* runs of one thread are common */
    t[n++] = th;
  }
  if (n) qsort(t, n, sizeof *t, cmp_int);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || t[m - 1] != t[i]) t[m++] = t[i];
  *threads = t;
  return m;
}
