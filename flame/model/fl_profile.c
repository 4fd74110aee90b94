/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_profile: frames interned in a hash table, stacks interned in another,
 * samples as small fixed-size records.
 *
 * Storage:
 *  - frames: an array indexed by frame id, and an fl__index of them keyed
 *    by every field of the frame. Strings are interned in an fl__strset,
 *    so equal strings are equal pointers and a frame is hashed and
 *    compared by its string pointers.
 *  - stack nodes: a prefix tree of the stacks. Node 0 is the empty stack;
 *    every other node is a stack, its parent node plus one frame id. A
 *    node's first child is found through it (a chain of callers, the
 *    common case, needs no hashing), the others by an fl__index keyed by
 *    (parent, frame). So a stack costs one node per distinct (prefix,
 *    frame), not one id per frame: 10^4 stacks of depth 1,000 that share
 *    999 frames are 10,999 nodes.
 *    A node's parent has a lower number (it is added first), so walking
 *    the nodes in order meets every parent before its children.
 *  - stacks: the distinct stacks samples end at, numbered 0, 1, ... in
 *    order of first appearance (fl_sample_t.stack_id): each its leaf node
 *    and depth; a node knows the stack that ends at it, if any. A profile
 *    of 10^6 samples over 10^5 distinct stacks holds 10^5, not 10^6.
 *  - samples: one record each (stack index, kind, weight, allocations,
 *    thread, time stamp: 32 bytes), in the order they were added. The kind
 *    takes the stack number's top bits, so a profile of several kinds
 *    costs no more per sample than one of one, and the totals of each
 *    kind are a fixed array in the profile: nothing to charge a budget.
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
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A node of the prefix tree of stacks (see the file comment). */
typedef struct stack_node {
  uint32_t parent; /* FL_PROFILE_NO_NODE for node 0, the empty stack */
  uint32_t frame;  /* the frame it adds to its parent's stack */
  uint32_t stack;  /* the distinct stack that ends here, or FL__NONE */
  uint32_t first;  /* its first child, or FL__NONE; the others are in node_index */
} stack_node_t;

typedef struct stack_rec {
  uint32_t node; /* the leaf */
  uint32_t depth;
} stack_rec_t;

/* Stack numbers are below 2^28 (a profile of as many distinct stacks
 * would take gigabytes first), so the kind fits beside one. */
#define KIND_BITS 4
#define MAX_STACKS ((1u << (32 - KIND_BITS)) - 1)
_Static_assert(FL_PROFILE_N_KINDS <= 1u << KIND_BITS, "a sample's kind fits in KIND_BITS");

typedef struct sample_rec {
  uint64_t weight;
  uint64_t allocs;
  uint64_t time_ns;
  uint32_t stack : 32 - KIND_BITS; /* index into stacks */
  uint32_t kind : KIND_BITS;       /* fl_profile_kind_t */
  int thread;
} sample_rec_t;

typedef struct thread_name {
  int thread;
  const char *name; /* interned */
} thread_name_t;

struct fl_profile {
  fl_profile_info_t info; /* its samples, total_weight, total_allocs: totals[info.kind]'s */
  fl_kind_totals_t totals[FL_PROFILE_N_KINDS]; /* by kind */

  fl__strset_t strings; /* interned strings */

  fl_frame_t *frames; /* by id */
  size_t n_frames, frames_cap;
  fl__index_t frame_index;

  stack_node_t *nodes; /* node 0 is the empty stack */
  size_t n_nodes, nodes_cap;
  fl__index_t node_index; /* by (parent, frame): children but the first */
  stack_rec_t *stacks;
  size_t n_stacks, stacks_cap;

  sample_rec_t *samples;
  size_t n_samples, samples_cap;

  thread_name_t *names;
  size_t n_names, names_cap;

  fl_profile_run_t *runs; /* names interned */
  size_t n_runs, runs_cap;

  fl_budget_t *budget; /* charged for what samples and frames add; NULL: none */
};

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

/* A frame named as the collector names a wait's leaf is a wait,
 * whoever read it: a file (folded stacks, pprof, speedscope) keeps its
 * name and no flag, and a sample of wall-clock time is off-CPU time by
 * its leaf (stored_kind). */
static uint32_t wait_flags(const char *func) {
  size_t n = strlen(func), pre = strlen(FL_FRAME_WAIT_PREFIX);
  if (n <= pre || strncmp(func, FL_FRAME_WAIT_PREFIX, pre) || func[n - 1] != ']') return 0;
  return strcmp(func, FL_FRAME_RUNNABLE_NAME) ? FL_FRAME_OFFCPU
                                              : FL_FRAME_OFFCPU | FL_FRAME_RUNNABLE;
}

/* Strings of frame are copied into p (a NULL function becomes
 * "[unknown]"); the same fields always give the same id. */
uint32_t fl_profile_frame_id(fl_profile_t *p, const fl_frame_t *frame) {
  fl_frame_t f = *frame;
  f.func = intern(p, frame->func ? frame->func : "[unknown]");
  f.flags |= wait_flags(f.func);
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

static uint64_t hash_node(uint32_t parent, uint32_t frame) {
  return fl__mix64((uint64_t)parent << 32 | frame);
}

/* The child of node parent that adds frame, or FL__NONE. */
static uint32_t find_node(const fl_profile_t *p, uint32_t parent, uint32_t frame) {
  uint32_t first = p->nodes[parent].first;
  if (first == FL__NONE) return FL__NONE; /* no children */
  if (p->nodes[first].frame == frame) return first;
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&p->node_index, hash_node(parent, frame), &pr); i != FL__NONE;
       i = fl__index_next(&p->node_index, &pr))
    if (p->nodes[i].parent == parent && p->nodes[i].frame == frame) return i;
  return FL__NONE;
}

/* Adds the child of parent that adds frame, which p does not hold. */
static uint32_t add_node(fl_profile_t *p, uint32_t parent, uint32_t frame) {
  if (p->n_nodes >= FL__NONE - 1) fl__oom(0); /* node numbers are 32 bits */
  p->nodes = fl__grow(p->nodes, &p->nodes_cap, p->n_nodes + 1, sizeof *p->nodes);
  uint32_t id = (uint32_t)p->n_nodes++;
  p->nodes[id] =
      (stack_node_t){.parent = parent, .frame = frame, .stack = FL__NONE, .first = FL__NONE};
  if (p->nodes[parent].first == FL__NONE)
    p->nodes[parent].first = id;
  else
    fl__index_add(&p->node_index, hash_node(parent, frame), id);
  return id;
}

/* The node of the longest prefix of ids[0 .. n) that p holds; *len is
 * that prefix's length. */
static uint32_t find_prefix(const fl_profile_t *p, const uint32_t *ids, size_t n, size_t *len) {
  uint32_t node = 0;
  size_t k = 0;
  for (uint32_t child; k < n && (child = find_node(p, node, ids[k])) != FL__NONE; k++) node = child;
  *len = k;
  return node;
}

/* The memory that new_nodes nodes under node, and a new distinct stack
 * if new_stack, take (the arrays' doubling included: each element
 * twice). Only the first of the new nodes can be indexed: each after it
 * is the first child of a new node. Saturated. */
static size_t stack_bytes(const fl_profile_t *p, uint32_t node, size_t new_nodes, bool new_stack) {
  size_t bytes = new_stack ? 2 * sizeof(stack_rec_t) : 0;
  if (new_nodes && p->nodes[node].first != FL__NONE) bytes += INDEX_ITEM_BYTES;
  size_t each = 2 * sizeof(stack_node_t);
  return new_nodes > (SIZE_MAX - bytes) / each ? SIZE_MAX : bytes + new_nodes * each;
}

/* The number of the distinct stack ids[0 .. n), whose longest prefix p
 * holds ends at node after k frames: its missing nodes are added, and
 * the stack if it is new. */
static uint32_t add_stack(fl_profile_t *p, uint32_t node, const uint32_t *ids, size_t k, size_t n) {
  for (; k < n; k++) node = add_node(p, node, ids[k]);
  if (p->nodes[node].stack != FL__NONE) return p->nodes[node].stack;
  if (p->n_stacks >= MAX_STACKS) fl__oom(0); /* stack numbers are 28 bits */
  p->stacks = fl__grow(p->stacks, &p->stacks_cap, p->n_stacks + 1, sizeof *p->stacks);
  uint32_t s = (uint32_t)p->n_stacks++;
  p->stacks[s] = (stack_rec_t){.node = node, .depth = (uint32_t)n};
  p->nodes[node].stack = s;
  return s;
}

/* info's totals from info.kind's. */
static void sync_info(fl_profile_t *p) {
  fl_kind_totals_t t;
  fl_profile_kind_totals(p, p->info.kind, &t);
  p->info.samples = t.samples;
  p->info.total_weight = t.weight;
  p->info.total_allocs = t.allocs;
}

static void push_sample(fl_profile_t *p, fl_profile_kind_t kind, uint32_t stack, uint64_t weight,
                        uint64_t allocs, int thread, uint64_t time_ns) {
  p->samples = fl__grow(p->samples, &p->samples_cap, p->n_samples + 1, sizeof *p->samples);
  p->samples[p->n_samples++] = (sample_rec_t){.weight = weight,
                                              .allocs = allocs,
                                              .time_ns = time_ns,
                                              .stack = stack,
                                              .kind = kind,
                                              .thread = thread};
  fl_kind_totals_t *t = &p->totals[kind];
  t->samples++;
  t->weight += weight;
  t->allocs += allocs;
  if (fl_kind_takes(p->info.kind) & 1u << kind) sync_info(p);
}

/* ---- words ---- */

void fl_interval_text(uint64_t ns, char *out, size_t size) {
  if (ns >= 1000000000 && ns % 1000000000 == 0)
    snprintf(out, size, "%" PRIu64 " s", ns / 1000000000);
  else if (ns >= 100000)
    snprintf(out, size, "%g ms", (double)ns / 1e6);
  else if (ns >= 1000)
    snprintf(out, size, "%g us", (double)ns / 1e3);
  else
    snprintf(out, size, "%" PRIu64 " ns", ns);
}

void fl_mixed_intervals_note(const fl_profile_info_t *info, char *out, size_t size) {
  if (!info->mixed_intervals || !info->interval_ns) {
    if (size) out[0] = '\0';
    return;
  }
  char iv[32];
  fl_interval_text(info->interval_ns, iv, sizeof iv);
  snprintf(out, size,
           "inputs sampled at different intervals, merged by time: each count is an interval "
           "of %s",
           iv);
}

/* ---- the profile ---- */

/* Node 0, the empty stack: every profile has it, samples or not. */
static void add_empty_stack(fl_profile_t *p) {
  p->nodes = fl__grow(p->nodes, &p->nodes_cap, 1, sizeof *p->nodes);
  p->nodes[0] = (stack_node_t){.parent = FL_PROFILE_NO_NODE,
                               .frame = FL_PROFILE_NO_FRAME,
                               .stack = FL__NONE,
                               .first = FL__NONE};
  p->n_nodes = 1;
}

fl_profile_t *fl_profile_new(fl_profile_kind_t kind) {
  fl_profile_t *p = fl__xcalloc(1, sizeof *p);
  p->info.kind = kind;
  p->info.sample_rate = 1;
  fl__index_init(&p->frame_index, 64);
  fl__index_init(&p->node_index, 64);
  add_empty_stack(p);
  return p;
}

void fl_profile_destroy(fl_profile_t **pp) {
  fl_profile_t *p = *pp;
  if (!p) return;
  fl__strset_free(&p->strings);
  free(p->frames);
  fl__index_free(&p->frame_index);
  free(p->nodes);
  fl__index_free(&p->node_index);
  free(p->stacks);
  free(p->samples);
  free(p->names);
  free(p->runs);
  free(p);
  *pp = NULL;
}

/* Frames are re-interned in id order, so they keep their ids; nodes,
 * stacks and samples are copied as they are, and the nodes indexed
 * again. */
fl_profile_t *fl_profile_copy(const fl_profile_t *src) {
  fl_profile_t *p = fl_profile_new(src->info.kind);
  p->info = src->info;
  memcpy(p->totals, src->totals, sizeof p->totals);
  for (size_t id = 0; id < src->n_frames; id++) {
    uint32_t got = fl_profile_frame_id(p, &src->frames[id]);
    assert(got == id);
    (void)got;
  }
  p->nodes = fl__grow(p->nodes, &p->nodes_cap, src->n_nodes, sizeof *p->nodes);
  p->stacks = fl__grow(p->stacks, &p->stacks_cap, src->n_stacks, sizeof *p->stacks);
  p->samples = fl__grow(p->samples, &p->samples_cap, src->n_samples, sizeof *p->samples);
  memcpy(p->nodes, src->nodes, src->n_nodes * sizeof *p->nodes);
  if (src->n_stacks) memcpy(p->stacks, src->stacks, src->n_stacks * sizeof *p->stacks);
  if (src->n_samples) memcpy(p->samples, src->samples, src->n_samples * sizeof *p->samples);
  p->n_nodes = src->n_nodes;
  p->n_stacks = src->n_stacks;
  p->n_samples = src->n_samples;
  for (size_t i = 1; i < p->n_nodes; i++)
    if (p->nodes[p->nodes[i].parent].first != i)
      fl__index_add(&p->node_index, hash_node(p->nodes[i].parent, p->nodes[i].frame), (uint32_t)i);
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
  size_t bytes =
      sizeof *p + p->strings.cap * sizeof *p->strings.strs + index_bytes(&p->strings.index);
  for (size_t i = 0; i < p->strings.n; i++) bytes += strlen(p->strings.strs[i]) + 1;
  return bytes + p->frames_cap * sizeof *p->frames + index_bytes(&p->frame_index) +
         p->nodes_cap * sizeof *p->nodes + index_bytes(&p->node_index) +
         p->stacks_cap * sizeof *p->stacks + p->samples_cap * sizeof *p->samples +
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

/* The kind a sample of kind is stored as. A sample of wall-clock time
 * is CPU time or off-CPU time, which its leaf says: a wait
 * (FL_FRAME_OFFCPU, "[off-CPU: sleep]") is off-CPU time, anything else
 * (the empty stack too) the thread running. Decided here, where every
 * sample of a wall-clock profile arrives, so that the collector and every
 * reader of a file of one (pprof, speedscope, trace) give each sample its
 * kind by one rule: a wait's leaf is the one thing all of them keep. */
static fl_profile_kind_t stored_kind(const fl_profile_t *p, fl_profile_kind_t kind,
                                     const uint32_t *stack, size_t n) {
  if (fl_kind_takes(kind) == 1u << kind) return kind;
  assert(kind == FL_PROFILE_WALL); /* the one kind of two: a new one says how here */
  return n && p->frames[stack[n - 1]].flags & FL_FRAME_OFFCPU ? FL_PROFILE_OFFCPU
                                                              : FL_PROFILE_CPU;
}

int fl_profile_add_sample_of(fl_profile_t *p, fl_profile_kind_t kind, const uint32_t *stack,
                             size_t n, uint64_t weight, uint64_t allocs, int thread,
                             uint64_t time_ns) {
  assert((unsigned)kind < FL_PROFILE_N_KINDS);
  for (size_t i = 0; i < n; i++) assert(stack[i] < p->n_frames);
  kind = stored_kind(p, kind, stack, n);
  if (n > UINT32_MAX) fl__oom(0); /* depths are 32 bits */
  size_t known;
  uint32_t node = find_prefix(p, stack, n, &known);
  /* The stack is looked up whatever it is: n frames of work; what it
   * adds (nodes past its known prefix, a new distinct stack) is stored. */
  bool new_stack = known < n || p->nodes[node].stack == FL__NONE;
  if (charge(p, 2 * sizeof(sample_rec_t) + stack_bytes(p, node, n - known, new_stack), n) < 0)
    return -1;
  push_sample(p, kind, add_stack(p, node, stack, known, n), weight, allocs, thread, time_ns);
  return 0;
}

int fl_profile_add_sample_at(fl_profile_t *p, const uint32_t *stack, size_t n, uint64_t weight,
                             uint64_t allocs, int thread, uint64_t time_ns) {
  return fl_profile_add_sample_of(p, p->info.kind, stack, n, weight, allocs, thread, time_ns);
}

int fl_profile_add_sample(fl_profile_t *p, const uint32_t *stack, size_t n, uint64_t weight,
                          uint64_t allocs, int thread) {
  return fl_profile_add_sample_at(p, stack, n, weight, allocs, thread, 0);
}

/* A kind that takes others (wall-clock time) has no samples of its own:
 * its totals are theirs, summed, in a profile of it (fl_profile_kinds). */
void fl_profile_kind_totals(const fl_profile_t *p, fl_profile_kind_t kind, fl_kind_totals_t *out) {
  uint32_t takes = fl_kind_takes(kind);
  *out = (fl_kind_totals_t){0};
  if (takes != 1u << kind && kind != p->info.kind) return;
  for (unsigned k = 0; k < FL_PROFILE_N_KINDS; k++) {
    if (!(takes & 1u << k)) continue;
    out->samples += p->totals[k].samples;
    out->weight += p->totals[k].weight;
    out->allocs += p->totals[k].allocs;
  }
}

/* The kinds samples are stored as, and info.kind when it takes others
 * and p holds one of them: a wall-clock profile holds wall-clock time
 * beside its parts. (A CPU profile holds no wall-clock time, though its
 * samples are of a kind wall-clock time takes.) */
uint32_t fl_profile_kinds(const fl_profile_t *p) {
  uint32_t set = 0;
  for (unsigned k = 0; k < FL_PROFILE_N_KINDS; k++)
    if (p->totals[k].samples) set |= 1u << k;
  if (set & fl_kind_takes(p->info.kind)) set |= 1u << p->info.kind;
  return set;
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

/* ---- merging time by time ---- */

/* How many samples of time kinds p holds: the samples an interval weighs. */
static uint64_t time_samples(const fl_profile_t *p) {
  uint64_t n = 0;
  for (unsigned k = 0; k < FL_PROFILE_N_KINDS; k++)
    if (fl_kind(k)->time) n += p->totals[k].samples;
  return n;
}

/* The interval p and src count in once merged (fl_profile_merge's rule),
 * or 0 when no weight changes: no time samples, an interval unknown, or
 * equal. */
static uint64_t merge_unit(const fl_profile_t *p, const fl_profile_t *src) {
  uint64_t a = p->info.interval_ns, b = src->info.interval_ns;
  if (!a || !b || a == b || !time_samples(p) || !time_samples(src)) return 0;
  uint64_t g = fl__gcd(a, b);
  if (a / g <= FL_PROFILE_MAX_SCALE && b / g <= FL_PROFILE_MAX_SCALE) return g;
  return a < b ? a : b;
}

/* weight, in intervals of from, as intervals of to: exact where from is a
 * multiple of to, else rounded with *carry (the rounding so far) added
 * first and the new rounding left in it. At least 1, at most UINT64_MAX. */
static uint64_t convert_weight(uint64_t weight, uint64_t from, uint64_t to, double *carry) {
  if (from == to) return weight;
  if (from % to == 0) {
    uint64_t out;
    return __builtin_mul_overflow(weight, from / to, &out) ? UINT64_MAX : out;
  }
  double exact = (double)weight * ((double)from / (double)to) + *carry;
  if (exact >= 0x1p64) return UINT64_MAX;
  uint64_t out = (uint64_t)(exact + 0.5);
  if (out < 1) out = 1;
  *carry = exact - (double)out;
  return out;
}

/* p's weights of time as intervals of unit (its interval becomes unit). */
static void convert_profile(fl_profile_t *p, uint64_t unit) {
  uint64_t from = p->info.interval_ns;
  double carry = 0;
  uint64_t total[FL_PROFILE_N_KINDS] = {0};
  for (size_t i = 0; i < p->n_samples; i++) {
    sample_rec_t *r = &p->samples[i];
    if (!fl_kind(r->kind)->time) continue;
    uint64_t w = convert_weight(r->weight, from, unit, &carry);
    r->weight = w;
    total[r->kind] = total[r->kind] > UINT64_MAX - w ? UINT64_MAX : total[r->kind] + w;
  }
  for (unsigned k = 0; k < FL_PROFILE_N_KINDS; k++)
    if (fl_kind(k)->time) p->totals[k].weight = total[k];
  sync_info(p);
  p->info.interval_ns = unit;
  p->info.mixed_intervals = true;
}

/* A total in intervals of from, as intervals of to, rounded up. */
static bool total_in(uint64_t total, uint64_t from, uint64_t to, uint64_t *out) {
  if (!to || from == to) {
    *out = total;
    return true;
  }
  uint64_t scale = from / to + (from % to != 0);
  return !__builtin_mul_overflow(total, scale, out);
}

/* The kind of p a sample of src of kind k becomes (fl_profile_merge):
 * its own if p holds it, p's info.kind for src's when comparable, else
 * the first kind comparable to it that p holds, else its own. */
static fl_profile_kind_t merge_kind(const fl_profile_t *p, const fl_profile_t *src, unsigned k) {
  if (p->totals[k].samples) return (fl_profile_kind_t)k;
  if (k == src->info.kind && fl_kind_comparable(p->info.kind, k)) return p->info.kind;
  for (unsigned j = 0; j < FL_PROFILE_N_KINDS; j++)
    if (p->totals[j].samples && fl_kind_comparable(j, k)) return (fl_profile_kind_t)j;
  return (fl_profile_kind_t)k;
}

bool fl_profile_merge_fits(const fl_profile_t *p, const fl_profile_t *src) {
  uint64_t unit = merge_unit(p, src), a, b, sum;
  for (unsigned k = 0; k < FL_PROFILE_N_KINDS; k++) {
    const fl_kind_totals_t *s = &src->totals[k];
    if (!s->samples) continue;
    const fl_kind_totals_t *t = &p->totals[merge_kind(p, src, k)];
    uint64_t to = fl_kind(k)->time ? unit : 0;
    if (!total_in(t->weight, p->info.interval_ns, to, &a) ||
        !total_in(s->weight, src->info.interval_ns, to, &b) || __builtin_add_overflow(a, b, &sum) ||
        __builtin_add_overflow(t->allocs, s->allocs, &sum))
      return false;
  }
  return true;
}

/* Frames of src are interned into p once each, then each node of src's
 * prefix tree once, in order (a parent before its children; under the
 * root's node, if any), then the samples are appended by stack number, their weights converted when
 * the intervals differ. Also adds src's dropped count and CPU and wall-clock seconds, and takes its
 * interval when p has none or no samples. Merging a profile into
 * itself doubles it. */
void fl_profile_merge_under(fl_profile_t *p, const fl_profile_t *src, const fl_frame_t *root) {
  fl_profile_kind_t to_kind[FL_PROFILE_N_KINDS]; /* before p changes (p may be src) */
  for (unsigned k = 0; k < FL_PROFILE_N_KINDS; k++) to_kind[k] = merge_kind(p, src, k);
  uint64_t unit = merge_unit(p, src), src_interval = src->info.interval_ns;
  bool was_empty = p->n_samples == 0;
  if (unit && p->info.interval_ns != unit) convert_profile(p, unit);
  double carry = 0;
  /* Recorded here only if all of it was. */
  p->info.recorded_here = (p->n_samples == 0 || p->info.recorded_here) && src->info.recorded_here;
  size_t n_frames = src->n_frames, n_nodes = src->n_nodes, n_stacks = src->n_stacks,
         n_samples = src->n_samples;
  uint32_t *frame_map = fl__xcalloc(n_frames, sizeof *frame_map);
  uint32_t *node_map = fl__xmalloc(n_nodes, sizeof *node_map);
  uint32_t *stack_map = fl__xcalloc(n_stacks, sizeof *stack_map);
  uint32_t above = 0; /* the root's node: src's empty stack */
  if (root) {
    uint32_t id = fl_profile_frame_id(p, root);
    above = find_node(p, 0, id);
    if (above == FL__NONE) above = add_node(p, 0, id);
  }
  for (size_t id = 0; id < n_frames; id++) {
    fl_frame_t f = src->frames[id]; /* p == src: frames may move */
    frame_map[id] = fl_profile_frame_id(p, &f);
  }
  node_map[0] = above;
  for (size_t i = 1; i < n_nodes; i++) {
    stack_node_t nd = src->nodes[i]; /* p == src: nodes may move */
    uint32_t parent = node_map[nd.parent], frame = frame_map[nd.frame];
    uint32_t to = find_node(p, parent, frame);
    node_map[i] = to != FL__NONE ? to : add_node(p, parent, frame);
  }
  for (size_t s = 0; s < n_stacks; s++) {
    stack_rec_t rec = src->stacks[s]; /* p == src: stacks may move */
    uint32_t depth = rec.depth + (root ? 1 : 0);
    stack_map[s] = add_stack(p, node_map[rec.node], NULL, depth, depth);
  }
  p->samples = fl__grow(p->samples, &p->samples_cap, p->n_samples + n_samples, sizeof *p->samples);
  for (size_t i = 0; i < n_samples; i++) {
    sample_rec_t r = src->samples[i];
    uint64_t w = unit && fl_kind(r.kind)->time ? convert_weight(r.weight, src_interval, unit, &carry)
                                            : r.weight;
    push_sample(p, to_kind[r.kind], stack_map[r.stack], w, r.allocs, r.thread, r.time_ns);
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
  /* An empty profile's interval describes no weight: src's does. */
  if (!p->info.interval_ns || (was_empty && src_interval)) p->info.interval_ns = src_interval;
  if (unit || src->info.mixed_intervals) p->info.mixed_intervals = true;
  free(frame_map);
  free(node_map);
  free(stack_map);
}

void fl_profile_merge(fl_profile_t *p, const fl_profile_t *src) {
  fl_profile_merge_under(p, src, NULL);
}

/* Frames stay interned (their ids remain valid). The counters, times,
 * source, compiler and date are reset; kind, interval and sample rate
 * stay. */
void fl_profile_clear(fl_profile_t *p) {
  p->n_nodes = 0;
  add_empty_stack(p);
  p->n_stacks = 0;
  p->n_samples = 0;
  p->n_names = 0;
  p->n_runs = 0;
  fl__index_clear(&p->node_index);
  fl_profile_info_t old = p->info;
  memset(&p->info, 0, sizeof p->info);
  memset(p->totals, 0, sizeof p->totals);
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
  out->kind = (fl_profile_kind_t)r->kind;
  out->node = s->node;
  out->n = s->depth;
  out->weight = r->weight;
  out->allocs = r->allocs;
  out->thread = r->thread;
  out->time_ns = r->time_ns;
  out->stack_id = r->stack;
}

size_t fl_profile_n_nodes(const fl_profile_t *p) {
  return p->n_nodes;
}

uint32_t fl_profile_node_parent(const fl_profile_t *p, uint32_t node) {
  assert(node < p->n_nodes);
  return p->nodes[node].parent;
}

uint32_t fl_profile_node_frame(const fl_profile_t *p, uint32_t node) {
  assert(node < p->n_nodes);
  return p->nodes[node].frame;
}

void fl_profile_stack_ids(const fl_profile_t *p, uint32_t node, size_t n, uint32_t *out) {
  assert(node < p->n_nodes);
  for (size_t k = n; k-- > 0; node = p->nodes[node].parent) out[k] = p->nodes[node].frame;
}

uint32_t fl_profile_sample_frame(const fl_profile_t *p, const fl_sample_t *s, size_t k) {
  assert(k < s->n);
  uint32_t node = s->node;
  for (size_t up = s->n - 1 - k; up > 0; up--) node = p->nodes[node].parent;
  return p->nodes[node].frame;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

size_t fl_profile_thread_weights(const fl_profile_t *p, fl_profile_kind_t kind,
                                 fl_thread_weights_t **out) {
  int *threads;
  size_t n = fl_profile_threads(p, &threads);
  fl_thread_weights_t *w = n ? fl__xcalloc(n, sizeof *w) : NULL;
  for (size_t i = 0; i < n; i++) w[i].thread = threads[i];
  free(threads);
  for (size_t i = 0; i < p->n_samples; i++) {
    const sample_rec_t *s = &p->samples[i];
    if (!(fl_kind_takes(kind) & 1u << s->kind)) continue;
    const stack_rec_t *st = &p->stacks[s->stack];
    uint32_t leaf = st->depth ? p->frames[p->nodes[st->node].frame].flags : 0;
    bool off = leaf & FL_FRAME_OFFCPU;
    size_t lo = 0, hi = n; /* the thread, by bisection */
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (w[mid].thread <= s->thread)
        lo = mid;
      else
        hi = mid;
    }
    if (off && (leaf & FL_FRAME_RUNNABLE)) w[lo].runnable += s->weight;
    if (off)
      w[lo].off += s->weight;
    else
      w[lo].on += s->weight;
  }
  size_t m = 0; /* the threads with a sample of kind: weights are at least 1 */
  for (size_t i = 0; i < n; i++)
    if (w[i].on + w[i].off) w[m++] = w[i];
  if (!m) {
    free(w);
    w = NULL;
  }
  *out = w;
  return m;
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
