/* fl_profile: frames interned in a hash table, stacks interned in another,
 * samples as small fixed-size records.
 *
 * Storage:
 *  - frames: an array indexed by frame id; an open-addressing table of ids
 *    keyed by every field of the frame. Strings are interned in a third
 *    table, so equal strings are equal pointers and a frame is hashed and
 *    compared by its string pointers.
 *  - stacks: each distinct stack is stored once, as a run of frame ids in
 *    one flat array (ids[off .. off + len)), and found again by an
 *    open-addressing table keyed by its contents. A profile of 10^6 samples
 *    over 10^5 distinct stacks holds 10^5 runs, not 10^6. Samples with equal
 *    stacks share the run, so their fl_sample_t.stack pointers are equal,
 *    which lets fl_tree walk each distinct stack once. (The empty stack may
 *    point where a later run starts: (pointer, length) is the identity.)
 *  - samples: one record each (stack index, weight, allocations, thread),
 *    in the order they were added.
 *
 * Running out of memory while adding frames or samples aborts with a
 * message: the interface has no error path there, and a profile with
 * silently missing samples would lie. */
#define _GNU_SOURCE
#include "cflame/fl_profile.h"

#include "fl__strset.h"

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
  uint32_t stack; /* index into stacks */
  int thread;
} sample_rec_t;

struct fl_profile {
  fl_profile_info_t info;

  fl__strset_t strings; /* interned strings */

  fl_frame_t *frames; /* by id */
  size_t n_frames, frames_cap;
  uint32_t *frame_table; /* id + 1, or 0 for an empty slot */
  size_t frame_mask;

  uint32_t *ids; /* every distinct stack's frame ids, back to back */
  size_t n_ids, ids_cap;
  stack_rec_t *stacks;
  size_t n_stacks, stacks_cap;
  uint32_t *stack_table; /* stack index + 1, or 0 */
  size_t stack_mask;

  sample_rec_t *samples;
  size_t n_samples, samples_cap;
};

/* ---- memory ---- */

static void out_of_memory(void) {
  fputs("cflame: out of memory in fl_profile\n", stderr);
  abort();
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) out_of_memory();
  return p;
}

/* Grows *buf (of *cap elements of size bytes) to hold at least need. */
static void reserve(void **buf, size_t *cap, size_t need, size_t size, size_t first) {
  if (need <= *cap) return;
  size_t cap2 = *cap ? *cap : first;
  while (cap2 < need) cap2 *= 2;
  if (cap2 > SIZE_MAX / size) out_of_memory();
  void *grown = realloc(*buf, cap2 * size);
  if (!grown) out_of_memory();
  *buf = grown;
  *cap = cap2;
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
static const char *intern(fl_profile_t *p, const char *s) {
  const char *i = fl__strset_intern(&p->strings, s);
  if (s && !i) out_of_memory();
  return i;
}

/* ---- frames ---- */

/* A frame whose strings are interned: equal fields are equal pointers. */
static uint64_t hash_frame(const fl_frame_t *f) {
  uint64_t h = fl__mix64((uint64_t)(uintptr_t)f->func);
  h = fl__mix64(h ^ (uint64_t)(uintptr_t)f->file);
  h = fl__mix64(h ^ (uint64_t)(uintptr_t)f->module);
  h = fl__mix64(h ^ ((uint64_t)(uint32_t)f->line << 32 | f->flags));
  return fl__mix64(h ^ f->addr);
}

static bool frame_equal(const fl_frame_t *a, const fl_frame_t *b) {
  return a->func == b->func && a->file == b->file && a->module == b->module && a->line == b->line &&
         a->addr == b->addr && a->flags == b->flags;
}

static void frame_table_grow(fl_profile_t *p) {
  size_t cap = (p->frame_mask + 1) * 2;
  uint32_t *grown = xcalloc(cap, sizeof *grown);
  for (size_t id = 0; id < p->n_frames; id++) {
    size_t j = hash_frame(&p->frames[id]) & (cap - 1);
    while (grown[j]) j = (j + 1) & (cap - 1);
    grown[j] = (uint32_t)id + 1;
  }
  free(p->frame_table);
  p->frame_table = grown;
  p->frame_mask = cap - 1;
}

/* Strings of frame are copied into p (a NULL function becomes
 * "[unknown]"); the same fields always give the same id. */
uint32_t fl_profile_frame_id(fl_profile_t *p, const fl_frame_t *frame) {
  fl_frame_t f = *frame;
  f.func = intern(p, frame->func ? frame->func : "[unknown]");
  f.file = intern(p, frame->file);
  f.module = intern(p, frame->module);
  size_t i = hash_frame(&f) & p->frame_mask;
  for (uint32_t slot; (slot = p->frame_table[i]) != 0; i = (i + 1) & p->frame_mask)
    if (frame_equal(&p->frames[slot - 1], &f)) return slot - 1;
  if (p->n_frames >= UINT32_MAX - 1) out_of_memory();
  reserve((void **)&p->frames, &p->frames_cap, p->n_frames + 1, sizeof *p->frames, 64);
  uint32_t id = (uint32_t)p->n_frames++;
  p->frames[id] = f;
  p->frame_table[i] = id + 1;
  if (p->n_frames * 2 > p->frame_mask + 1) frame_table_grow(p);
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

static void stack_table_grow(fl_profile_t *p) {
  size_t cap = (p->stack_mask + 1) * 2;
  uint32_t *grown = xcalloc(cap, sizeof *grown);
  for (size_t s = 0; s < p->n_stacks; s++) {
    size_t j = p->stacks[s].hash & (cap - 1);
    while (grown[j]) j = (j + 1) & (cap - 1);
    grown[j] = (uint32_t)s + 1;
  }
  free(p->stack_table);
  p->stack_table = grown;
  p->stack_mask = cap - 1;
}

/* The index of the distinct stack ids[0 .. n), added if new. ids must not
 * point into p->ids (it may move). */
static uint32_t intern_stack(fl_profile_t *p, const uint32_t *ids, size_t n) {
  if (n > UINT32_MAX) out_of_memory();
  uint32_t h = hash_ids(ids, n);
  size_t i = h & p->stack_mask;
  for (uint32_t slot; (slot = p->stack_table[i]) != 0; i = (i + 1) & p->stack_mask) {
    const stack_rec_t *s = &p->stacks[slot - 1];
    if (s->hash == h && s->len == n &&
        (n == 0 || memcmp(p->ids + s->off, ids, n * sizeof *ids) == 0))
      return slot - 1;
  }
  if (p->n_stacks >= UINT32_MAX - 1) out_of_memory();
  reserve((void **)&p->ids, &p->ids_cap, p->n_ids + n, sizeof *p->ids, 1024);
  reserve((void **)&p->stacks, &p->stacks_cap, p->n_stacks + 1, sizeof *p->stacks, 64);
  if (n) memcpy(p->ids + p->n_ids, ids, n * sizeof *ids);
  uint32_t s = (uint32_t)p->n_stacks++;
  p->stacks[s] = (stack_rec_t){.off = p->n_ids, .len = (uint32_t)n, .hash = h};
  p->n_ids += n;
  p->stack_table[i] = s + 1;
  if (p->n_stacks * 2 > p->stack_mask + 1) stack_table_grow(p);
  return s;
}

static void push_sample(fl_profile_t *p, uint32_t stack, uint64_t weight, uint64_t allocs,
                        int thread) {
  reserve((void **)&p->samples, &p->samples_cap, p->n_samples + 1, sizeof *p->samples, 1024);
  p->samples[p->n_samples++] =
      (sample_rec_t){.weight = weight, .allocs = allocs, .stack = stack, .thread = thread};
  p->info.samples++;
  p->info.total_weight += weight;
  p->info.total_allocs += allocs;
}

/* ---- the profile ---- */

fl_profile_t *fl_profile_new(fl_profile_kind_t kind) {
  fl_profile_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->info.kind = kind;
  p->info.sample_rate = 1;
  p->frame_mask = 63;
  p->stack_mask = 63;
  if (fl__strset_init(&p->strings, 64) < 0) goto fail;
  p->frame_table = calloc(p->frame_mask + 1, sizeof *p->frame_table);
  p->stack_table = calloc(p->stack_mask + 1, sizeof *p->stack_table);
  p->ids_cap = 1024; /* never NULL: an empty stack points into it too */
  p->ids = malloc(p->ids_cap * sizeof *p->ids);
  if (!p->frame_table || !p->stack_table || !p->ids) goto fail;
  return p;
fail:
  fl_profile_destroy(&p);
  return NULL;
}

void fl_profile_destroy(fl_profile_t **pp) {
  fl_profile_t *p = *pp;
  if (!p) return;
  fl__strset_free(&p->strings);
  free(p->frames);
  free(p->frame_table);
  free(p->ids);
  free(p->stacks);
  free(p->stack_table);
  free(p->samples);
  free(p);
  *pp = NULL;
}

/* Frames are re-interned in id order, so they keep their ids; stacks and
 * samples are copied as they are. */
fl_profile_t *fl_profile_copy(const fl_profile_t *src) {
  fl_profile_t *p = fl_profile_new(src->info.kind);
  if (!p) return NULL;
  p->info = src->info;
  for (size_t id = 0; id < src->n_frames; id++) {
    uint32_t got = fl_profile_frame_id(p, &src->frames[id]);
    assert(got == id);
    (void)got;
  }
  reserve((void **)&p->ids, &p->ids_cap, src->n_ids, sizeof *p->ids, 1024);
  reserve((void **)&p->stacks, &p->stacks_cap, src->n_stacks, sizeof *p->stacks, 64);
  reserve((void **)&p->samples, &p->samples_cap, src->n_samples, sizeof *p->samples, 1024);
  if (src->n_ids) memcpy(p->ids, src->ids, src->n_ids * sizeof *p->ids);
  if (src->n_stacks) memcpy(p->stacks, src->stacks, src->n_stacks * sizeof *p->stacks);
  if (src->n_samples) memcpy(p->samples, src->samples, src->n_samples * sizeof *p->samples);
  p->n_ids = src->n_ids;
  p->n_stacks = src->n_stacks;
  p->n_samples = src->n_samples;
  free(p->stack_table);
  p->stack_table = xcalloc(src->stack_mask + 1, sizeof *p->stack_table);
  memcpy(p->stack_table, src->stack_table, (src->stack_mask + 1) * sizeof *p->stack_table);
  p->stack_mask = src->stack_mask;
  return p;
}

fl_profile_info_t *fl_profile_info(fl_profile_t *p) {
  return &p->info;
}
const fl_profile_info_t *fl_profile_info_const(const fl_profile_t *p) {
  return &p->info;
}

void fl_profile_add_sample(fl_profile_t *p, const uint32_t *stack, size_t n, uint64_t weight,
                           uint64_t allocs, int thread) {
  for (size_t i = 0; i < n; i++) assert(stack[i] < p->n_frames);
  uint32_t s = intern_stack(p, stack, n);
  push_sample(p, s, weight, allocs, thread);
}

/* Frames of src are interned into p once each, then each distinct stack of
 * src once, then the samples are appended by stack index. Also adds src's
 * dropped count and CPU and wall-clock seconds, and takes its interval when
 * p has none. Merging a profile into itself doubles it. */
void fl_profile_merge(fl_profile_t *p, const fl_profile_t *src) {
  assert(p->info.kind == src->info.kind);
  size_t n_frames = src->n_frames, n_stacks = src->n_stacks, n_samples = src->n_samples;
  uint32_t *frame_map = xcalloc(n_frames, sizeof *frame_map);
  uint32_t *stack_map = xcalloc(n_stacks, sizeof *stack_map);
  uint32_t *buf = NULL;
  size_t buf_cap = 0;
  for (size_t id = 0; id < n_frames; id++) {
    fl_frame_t f = src->frames[id]; /* p == src: frames may move */
    frame_map[id] = fl_profile_frame_id(p, &f);
  }
  for (size_t s = 0; s < n_stacks; s++) {
    stack_rec_t rec = src->stacks[s];
    reserve((void **)&buf, &buf_cap, rec.len, sizeof *buf, 64);
    for (uint32_t k = 0; k < rec.len; k++) buf[k] = frame_map[src->ids[rec.off + k]];
    stack_map[s] = intern_stack(p, buf, rec.len);
  }
  reserve((void **)&p->samples, &p->samples_cap, p->n_samples + n_samples, sizeof *p->samples,
          1024);
  for (size_t i = 0; i < n_samples; i++) {
    sample_rec_t r = src->samples[i];
    push_sample(p, stack_map[r.stack], r.weight, r.allocs, r.thread);
  }
  p->info.dropped += src->info.dropped;
  p->info.cpu_seconds += src->info.cpu_seconds;
  p->info.wall_seconds += src->info.wall_seconds;
  if (!p->info.interval_ns) p->info.interval_ns = src->info.interval_ns;
  free(buf);
  free(frame_map);
  free(stack_map);
}

/* Frames stay interned (their ids remain valid). The counters, times,
 * source, compiler and date are reset; kind, interval and sample rate
 * stay. */
void fl_profile_clear(fl_profile_t *p) {
  p->n_ids = 0;
  p->n_stacks = 0;
  p->n_samples = 0;
  memset(p->stack_table, 0, (p->stack_mask + 1) * sizeof *p->stack_table);
  fl_profile_info_t old = p->info;
  memset(&p->info, 0, sizeof p->info);
  p->info.kind = old.kind;
  p->info.interval_ns = old.interval_ns;
  p->info.sample_rate = old.sample_rate;
}

size_t fl_profile_n_samples(const fl_profile_t *p) {
  return p->n_samples;
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
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

size_t fl_profile_threads(const fl_profile_t *p, int **threads) {
  int *t = xcalloc(p->n_samples, sizeof *t);
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
