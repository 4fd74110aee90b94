/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_collect: the recorders' buffers as profiles (see
 * include/cflame/fl_collect.h).
 *
 * What each distinct address came to (its frame ids, and whether the stack
 * ends there) is worked out once per collection and kept in a table keyed
 * by the address: a buffer of 10^4 samples holds some 300,000 addresses but
 * a few hundred distinct ones. */
#define _GNU_SOURCE
#include "cflame/fl_collect.h"
#include "cflame/fl_events.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_allocs.h"
#include "cflame/fl_sampler.h"
#include "fl__common.h"

/* ---- describing frames ---- */

static bool is_system_module(const char *module) {
  if (!module) return false;
  static const char *const dirs[] = {"/lib/",       "/lib64/",         "/usr/lib/",
                                     "/usr/lib64/", "/usr/local/lib/", NULL};
  for (size_t i = 0; dirs[i]; i++)
    if (!strncmp(module, dirs[i], strlen(dirs[i]))) return true;
  return module[0] == '[' || strstr(module, "linux-vdso") != NULL;
}

bool fl_collect_is_allocator(const char *func) {
  static const char *const names[] = {"malloc",
                                      "free",
                                      "calloc",
                                      "realloc",
                                      "reallocarray",
                                      "posix_memalign",
                                      "aligned_alloc",
                                      "memalign",
                                      "valloc",
                                      "pvalloc",
                                      "cfree",
                                      "_int_malloc",
                                      "_int_free",
                                      "_int_realloc",
                                      "_int_memalign",
                                      "malloc_consolidate",
                                      "sysmalloc",
                                      "systrim",
                                      "heap_trim",
                                      "unlink_chunk",
                                      "alloc_perturb",
                                      "free_perturb",
                                      "_mid_memalign",
                                      "tcache_init",
                                      "tcache_get",
                                      "tcache_put",
                                      "__libc_malloc",
                                      "__libc_free",
                                      "__libc_calloc",
                                      "__libc_realloc",
                                      "__libc_memalign",
                                      "__libc_valloc",
                                      "__libc_pvalloc",
                                      "__posix_memalign",
                                      "_int_free_merge_chunk",
                                      "_int_free_create_chunk",
                                      "_int_free_maybe_consolidate",
                                      "malloc_printerr",
                                      NULL};
  /* A PLT stub is on the way to the function it is named after. */
  size_t n = func ? strlen(func) : 0, k = strlen(FL_SYMBOL_PLT_SUFFIX);
  if (n > k && !strcmp(func + n - k, FL_SYMBOL_PLT_SUFFIX)) n -= k;
  for (size_t i = 0; func && names[i]; i++)
    if (strlen(names[i]) == n && !strncmp(func, names[i], n)) return true;
  return false;
}

/* A sanitizer's runtime (code built with -fsanitize=address, or cflame's
 * own sanitizer builds) replaces the allocator: its interceptors and
 * allocator internals are allocator time too. */
static bool is_sanitizer_allocator(const char *mod_base, const char *func) {
  static const char *const runtimes[] = {"libasan.so", "liblsan.so", "libtsan.so", "libhwasan.so",
                                         NULL};
  bool runtime = false;
  for (size_t i = 0; mod_base && runtimes[i] && !runtime; i++)
    runtime = !strncmp(mod_base, runtimes[i], strlen(runtimes[i]));
  if (!runtime) return false;
  static const char *const words[] = {"alloc", "Alloc", "free", "Free", NULL};
  for (size_t i = 0; words[i]; i++)
    if (strstr(func, words[i])) return true;
  return false;
}

void fl_collect_describe(const fl_frame_info_t *f, uint64_t pc, fl_frame_t *fr) {
  const char *mod_base = f->module ? f->module + fl__path_base(f->module, strlen(f->module)) : NULL;
  memset(fr, 0, sizeof *fr);
  fr->func = f->func ? f->func : "[unknown]";
  fr->system_name = f->system_name;
  fr->file = f->file;
  fr->line = f->line;
  fr->module = mod_base;
  fr->addr = pc - f->module_base;
  if (fl_collect_is_allocator(fr->func) || is_sanitizer_allocator(mod_base, fr->func))
    fr->flags = FL_FRAME_ALLOC;
  else if (is_system_module(f->module))
    fr->flags = FL_FRAME_SYSTEM;
  if (f->inlined) fr->flags |= FL_FRAME_INLINED;
}

/* ---- one collection ---- */

#define PC_FRAMES_MAX 16

/* What one address came to. */
typedef struct pc_seen {
  uint64_t key;   /* pc << 1 | is_return_address */
  uint32_t first; /* its frame ids: ids[first, first + count) */
  uint8_t count;
  bool base; /* the stack ends at this address */
} pc_seen_t;

typedef struct conv {
  fl_profile_t *prof;
  fl_symbolizer_t *sym;
  const fl_collect_opts_t *opts;
  int *tids; /* every thread seen, ascending */
  size_t n_tids;
  uint32_t *stack;                     /* root first */
  uint32_t *leaf_first;                /* scratch: a record's frames, leaf first */
  size_t max;                          /* room in both */
  uint32_t root, incomplete, too_deep; /* frame ids, once made */
  bool have_incomplete, have_too_deep;
  /* A wait's two leaf frames, its call and "[off-CPU: reason]", by wait:
   * ids + 1, 0 until made. */
  uint32_t wait_frames[FL_SAMPLER_N_WAITS][2];
  pc_seen_t *seen;
  size_t n_seen, cap_seen;
  fl__index_t seen_index;
  uint32_t *ids; /* the frame ids of seen addresses */
  size_t n_ids, cap_ids;
  fl_sampler_record_t *names; /* the sampler's name records, in order */
  size_t n_names, cap_names;
} conv_t;

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Notes a thread seen in the records (for thread_index). */
static void note_tid(conv_t *c, int tid, size_t *cap) {
  for (size_t i = 0; i < c->n_tids; i++)
    if (c->tids[i] == tid) return;
  c->tids = fl__grow(c->tids, cap, c->n_tids + 1, sizeof *c->tids);
  c->tids[c->n_tids++] = tid;
}

/* Notes the threads of a buffer's records (allocs: an allocation
 * buffer, else a sample buffer). Returns how many records it read. */
static size_t note_tids(conv_t *c, const void *buf, size_t bytes, bool allocs, size_t *cap) {
  size_t pos = 0, n = 0;
  if (allocs) {
    fl_allocs_record_t rec;
    for (; bytes && fl_allocs_next(buf, bytes, &pos, &rec) == 1; n++) note_tid(c, rec.tid, cap);
  } else {
    fl_sampler_record_t rec;
    for (; bytes && fl_sampler_next(buf, bytes, &pos, &rec) == 1; n++) note_tid(c, rec.tid, cap);
  }
  return n;
}

/* Notes the threads of the buffer and of opts' other buffer of the run,
 * sorted for thread_index. Returns how many records the buffer has. */
static size_t note_all_tids(conv_t *c, const void *buf, size_t bytes, bool allocs) {
  size_t cap = 0, n = note_tids(c, buf, bytes, allocs, &cap);
  const fl_collect_opts_t *o = c->opts;
  if (o->also) note_tids(c, o->also, o->also_bytes, o->also_allocs, &cap);
  if (c->n_tids > 1) qsort(c->tids, c->n_tids, sizeof *c->tids, cmp_int);
  return n;
}

static int thread_index(const conv_t *c, int tid) {
  if (tid == c->opts->main_tid) return 1;
  int idx = 2;
  for (size_t i = 0; i < c->n_tids; i++) {
    if (c->tids[i] == c->opts->main_tid) continue;
    if (c->tids[i] == tid) return idx;
    idx++;
  }
  return 0;
}

static void conv_begin(conv_t *c, fl_profile_t *prof, fl_symbolizer_t *sym,
                       const fl_collect_opts_t *opts, size_t depth_limit) {
  memset(c, 0, sizeof *c);
  /* Samples this process's collector turns into stacks: the profile is
   * one cflame recorded (its modules' files may be read for their
   * source), unless it held samples read from elsewhere already. */
  fl_profile_info_t *info = fl_profile_info(prof);
  if (fl_profile_n_samples(prof) == 0) info->recorded_here = true;
  c->prof = prof;
  c->sym = sym;
  c->opts = opts;
  c->max = depth_limit * 4;
  c->leaf_first = fl__xmalloc(c->max, sizeof *c->leaf_first);
  /* root, why, frames, and a leaf (a wait's: two) */
  c->stack = fl__xmalloc(c->max + 4, sizeof *c->stack);
  if (opts->root) c->root = fl_profile_frame_id(prof, opts->root);
}

static void conv_free(conv_t *c) {
  free(c->tids);
  free(c->names);
  free(c->stack);
  free(c->leaf_first);
  free(c->seen);
  fl__index_free(&c->seen_index);
  free(c->ids);
}

/* The frame ids of one address, innermost first (several when code is
 * inlined there), into ids; returns how many. *base is set when the stack
 * ends here (the rule said so). */
static size_t pc_frames(conv_t *c, uint64_t pc, bool is_return, uint32_t *ids, bool *base) {
  fl_frame_info_t info[PC_FRAMES_MAX];
  int k = fl_symbolizer_lookup(c->sym, pc, is_return, info, PC_FRAMES_MAX);
  size_t n = 0;
  *base = false;
  for (int j = 0; j < k; j++) {
    fl_frame_t fr;
    fl_collect_describe(&info[j], pc, &fr);
    fl_collect_verdict_t v =
        c->opts->rule ? c->opts->rule(c->opts->ctx, &info[j], &fr) : FL_COLLECT_KEEP;
    if (v == FL_COLLECT_HIDE) continue;
    if (v == FL_COLLECT_KEEP || v == FL_COLLECT_KEEP_BASE)
      ids[n++] = fl_profile_frame_id(c->prof, &fr);
    if (v == FL_COLLECT_BASE || v == FL_COLLECT_KEEP_BASE) {
      *base = true;
      return n;
    }
  }
  return n;
}

/* pc_frames of (pc, is_return), from the table when an earlier record had
 * the address. */
static const pc_seen_t *pc_frames_seen(conv_t *c, uint64_t pc, bool is_return) {
  uint64_t key = pc << 1 | is_return, h = fl__mix64(key);
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&c->seen_index, h, &pr); i != FL__NONE;
       i = fl__index_next(&c->seen_index, &pr))
    if (c->seen[i].key == key) return &c->seen[i];
  c->ids = fl__grow(c->ids, &c->cap_ids, c->n_ids + PC_FRAMES_MAX, sizeof *c->ids);
  bool base;
  size_t n = pc_frames(c, pc, is_return, c->ids + c->n_ids, &base);
  c->seen = fl__grow(c->seen, &c->cap_seen, c->n_seen + 1, sizeof *c->seen);
  c->seen[c->n_seen] =
      (pc_seen_t){.key = key, .first = (uint32_t)c->n_ids, .count = (uint8_t)n, .base = base};
  c->n_ids += n;
  fl__index_add(&c->seen_index, h, (uint32_t)c->n_seen);
  return &c->seen[c->n_seen++];
}

/* The frame named func, made once into *id. */
static uint32_t marker_frame(conv_t *c, const char *func, uint32_t *id, bool *have) {
  if (!*have) {
    fl_frame_t fr = {.func = func};
    *id = fl_profile_frame_id(c->prof, &fr);
    *have = true;
  }
  return *id;
}

/* A wait record's leaf frames at the end of stack (m frames long): the
 * call it waited in ("nanosleep", a system library's) and what it waited
 * for ("[off-CPU: sleep]"); runnable time, which is in no call, only the
 * latter ("[off-CPU: runnable]", below the code that was running).
 * Returns the new length. */
static size_t add_wait(conv_t *c, unsigned wait, uint32_t *stack, size_t m) {
  uint32_t *ids = c->wait_frames[wait];
  const char *func = fl_sampler_wait_call(wait);
  if (!ids[1]) {
    char what[64];
    /* a wait, and runnable time, by its name (fl_profile_frame_id) */
    snprintf(what, sizeof what, FL_FRAME_WAIT_PREFIX "%s]", fl_sampler_wait_reason(wait));
    fl_frame_t off = {.func = what};
    if (func) {
      fl_frame_t call = {.func = func, .flags = FL_FRAME_SYSTEM};
      ids[0] = fl_profile_frame_id(c->prof, &call) + 1;
    }
    ids[1] = fl_profile_frame_id(c->prof, &off) + 1;
  }
  if (func) stack[m++] = ids[0] - 1;
  stack[m++] = ids[1] - 1;
  return m;
}

/* A record's stack, root first, into c->stack; returns its length (room
 * for two more frames at the end). leaf_is_return: the first address too
 * is a return address. */
static size_t record_stack(conv_t *c, const uint64_t *pcs, size_t n_pcs, size_t depth_limit,
                           bool leaf_is_return) {
  bool complete = false;
  size_t n = 0;
  for (size_t i = 0; i < n_pcs && n < c->max && !complete; i++) {
    const pc_seen_t *e = pc_frames_seen(c, pcs[i], i > 0 || leaf_is_return);
    size_t j = 0;
    for (; j < e->count && n < c->max; j++) c->leaf_first[n++] = c->ids[e->first + j];
    complete = e->base && j == e->count;
  }
  size_t m = 0;
  if (c->opts->root) c->stack[m++] = c->root;
  if (!complete && n_pcs >= depth_limit) {
    char name[48];
    snprintf(name, sizeof name, "[deeper than %zu frames]", depth_limit);
    c->stack[m++] = marker_frame(c, name, &c->too_deep, &c->have_too_deep);
  } else if (!complete) {
    c->stack[m++] = marker_frame(c, "[incomplete stack]", &c->incomplete, &c->have_incomplete);
  }
  for (size_t i = n; i-- > 0;) c->stack[m++] = c->leaf_first[i];
  return m;
}

/* Names the profile's threads from the sampler's name records (a later
 * record of a thread wins). A thread other than the main one that has the
 * main thread's name inherited it and never named itself: it stays a
 * number. */
static void name_threads(conv_t *c) {
  const char *main_name = NULL;
  for (size_t i = 0; i < c->n_names; i++)
    if (c->names[i].tid == c->opts->main_tid) main_name = c->names[i].thread_name;
  for (size_t i = 0; i < c->n_names; i++) {
    const fl_sampler_record_t *r = &c->names[i];
    int thread = thread_index(c, r->tid);
    if (thread == 0) continue; /* no samples */
    if (thread != 1 && main_name && !strcmp(r->thread_name, main_name)) continue;
    fl_profile_set_thread_name(c->prof, thread, r->thread_name);
  }
}

/* What the run of the buffer with header h measured, as prof's kind: a
 * wall-clock run's waits are in the records, an event's count in their
 * weights. Set before the samples are added, which take it. */
static void take_clock(fl_profile_t *prof, const fl_sampler_header_t *h) {
  fl_profile_info_t *info = fl_profile_info(prof);
  if (h->clock == FL_SAMPLER_CLOCK_WALL && info->kind == FL_PROFILE_CPU)
    info->kind = FL_PROFILE_WALL;
  if (h->clock == FL_SAMPLER_CLOCK_EVENT) {
    const fl_event_t *ev = fl_event_by_config((uint32_t)h->event_type, h->event_config);
    info->kind = FL_PROFILE_EVENT;
    if (ev)
      snprintf(info->event, sizeof info->event, "%s", ev->name);
    else
      snprintf(info->event, sizeof info->event, "perf event %llu:%llu",
               (unsigned long long)h->event_type, (unsigned long long)h->event_config);
  }
}

int fl_collect_samples(fl_profile_t *prof, fl_symbolizer_t *sym, const void *buf, size_t bytes,
                       const fl_collect_opts_t *opts, char *err, size_t err_size) {
  if (!bytes) return 0;
  conv_t c;
  conv_begin(&c, prof, sym, opts, FL_SAMPLER_MAX_DEPTH);
  size_t pos = 0;
  fl_sampler_record_t rec;
  int r;
  if (note_all_tids(&c, buf, bytes, false)) take_clock(prof, buf); /* the header is valid */
  while ((r = fl_sampler_next_any(buf, bytes, &pos, &rec)) == 1) {
    if (rec.n_pcs == 0) {
      c.names = fl__grow(c.names, &c.cap_names, c.n_names + 1, sizeof *c.names);
      c.names[c.n_names++] = rec;
      continue;
    }
    size_t m = record_stack(&c, rec.pcs, rec.n_pcs, FL_SAMPLER_MAX_DEPTH, rec.wait != 0);
    if (rec.wait) m = add_wait(&c, rec.wait, c.stack, m);
    fl_profile_add_sample_at(prof, c.stack, m, rec.weight ? rec.weight : 1, 0,
                             thread_index(&c, rec.tid), rec.time_ns);
  }
  name_threads(&c);
  conv_free(&c);
  if (r < 0) {
    snprintf(err, err_size, "the sample buffer is corrupt");
    return -1;
  }
  const fl_sampler_header_t *h = buf;
  fl_profile_info_t *info = fl_profile_info(prof);
  if (!info->interval_ns) info->interval_ns = h->interval_ns;
  info->dropped += h->dropped;
  return 0;
}

static const char *alloc_func_name(int kind) {
  switch (kind) {
    case FL_ALLOC_CALLOC: return "calloc";
    case FL_ALLOC_REALLOC: return "realloc";
    case FL_ALLOC_MEMALIGN: return "memalign";
    default: return "malloc";
  }
}

fl_profile_kind_t fl_collect_allocs_kind(const fl_collect_allocs_opts_t *aopts) {
  return fl_kind_alloc(aopts->weight_count, aopts->live);
}

int fl_collect_allocs(fl_profile_t *prof, fl_symbolizer_t *sym, const void *buf, size_t bytes,
                      const fl_collect_opts_t *opts, const fl_collect_allocs_opts_t *aopts,
                      char *err, size_t err_size) {
  conv_t c;
  conv_begin(&c, prof, sym, opts, FL_ALLOCS_MAX_DEPTH);
  size_t pos = 0;
  fl_allocs_record_t rec;
  int r = 0;
  note_all_tids(&c, buf, bytes, true);

  /* The allocation functions, as the leaf frames under their callers. */
  uint32_t alloc_frame[FL_ALLOC_MEMALIGN + 1];
  for (int k = FL_ALLOC_MALLOC; k <= FL_ALLOC_MEMALIGN; k++) {
    fl_frame_t fr = {.func = alloc_func_name(k),
                     .module = "libc.so.6",
                     .flags = FL_FRAME_SYSTEM | FL_FRAME_ALLOC};
    alloc_frame[k] = fl_profile_frame_id(prof, &fr);
  }
  const fl_allocs_header_t *h = buf;
  fl_profile_info(prof)->kind = fl_collect_allocs_kind(aopts); /* before the samples */
  double rate = 1;
  if (bytes >= sizeof *h) memcpy(&rate, &h->sample_rate_bits, sizeof rate);
  if (!(rate > 0 && rate <= 1)) rate = 1;
  /* Each record stands for 1 / sample_rate allocations of its size: the
   * running totals are rounded, not each record, so that totals are the
   * sums divided by the rate. */
  double scale = 1.0 / rate;
  uint64_t n_seen = 0, bytes_seen = 0, allocs_out = 0, bytes_out = 0;
  pos = 0;
  while (bytes && (r = fl_allocs_next(buf, bytes, &pos, &rec)) == 1) {
    if (aopts->live && rec.freed) continue;
    n_seen++;
    bytes_seen += rec.bytes;
    uint64_t allocs = (uint64_t)llround((double)n_seen * scale) - allocs_out;
    uint64_t est = (uint64_t)llround((double)bytes_seen * scale) - bytes_out;
    allocs_out += allocs;
    bytes_out += est;
    uint64_t weight = aopts->weight_count ? allocs : est;
    if (weight == 0) continue; /* a 0-byte allocation weighs nothing */
    size_t m = record_stack(&c, rec.pcs, rec.n_pcs, FL_ALLOCS_MAX_DEPTH, true);
    c.stack[m++] = alloc_frame[rec.kind];
    fl_profile_add_sample(prof, c.stack, m, weight, allocs, thread_index(&c, rec.tid));
  }
  conv_free(&c);
  if (r < 0) {
    snprintf(err, err_size, "the allocation buffer is corrupt");
    return -1;
  }
  fl_profile_info_t *info = fl_profile_info(prof);
  info->sample_rate = rate;
  if (bytes) {
    info->calls += h->calls;
    info->dropped += h->dropped;
  }
  return 0;
}
