/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_pprof: pprof's profile.proto written with protobuf-c (the C code
 * generated at build time from fl_pprof.proto) and gzip (fl_io.c);
 * fl_pprof_read.c reads it.
 *
 * Writing (fl_pprof): from a tree, as fl_folded writes folded stacks; a
 * profile of several kinds (fl_pprof_kinds) from a tree of each, their
 * sample types side by side, each sample's values in its kind's and 0 in
 * the others' (fl_pprof_read.c reads each sample back as its kind). Each
 * node's location is the node and the chain of callers it was inlined
 * into (up to the first frame that was not inlined, within one module),
 * worked out once per node, and so is each node's list of locations. A
 * profile whose samples know their thread or time is written a sample per
 * sample the tree draws (fl_tree_node_of), with the labels "thread_id",
 * "thread_name" and "timestamp_ns" (in nanoseconds), so that reading it
 * back gives the same threads, names and times; any other, a sample per
 * node with self weight. Strings, functions (name, system name, file), mappings
 * (module) and locations (mapping, address, lines) are each written once,
 * found again through an fl__index.
 *
 * Memory: every allocation goes through the library's allocators, so
 * running out of memory aborts with the library's message (fl__common.h). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__io.h"
#include "fl__pprof.h"

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
  keyed_t functions;     /* key: name, system name, file */
  keyed_t mappings;      /* key: file name */
  fl__index_t loc_index; /* locations, by a hash of their key (location_of) */
  pb_function_t **fns;
  size_t n_fns, fns_cap;
  pb_mapping_t **maps;
  size_t n_maps, maps_cap;
  char **names; /* mapping names made here (mapping_of), which strings borrows */
  size_t n_names, names_cap;
  pb_location_t **locs;
  size_t n_locs, locs_cap;
  uint64_t *node_loc;  /* by node id: the location of the chain from it; 0 not yet */
  uint32_t *node_next; /* by node id: the node above that chain (0: the root) */
} writer_t;

static uint64_t function_of(writer_t *w, const fl_frame_t *f) {
  int64_t key[3] = {str_index(&w->strings, f->func),
                    str_index(&w->strings, f->system_name ? f->system_name : f->func),
                    str_index(&w->strings, f->file)};
  bool added;
  uint64_t id = keyed_id(&w->functions, key, &added);
  if (added) {
    pb_function_t *fn = fl__xmalloc(1, sizeof *fn);
    perftools__profiles__function__init(fn);
    fn->id = id;
    fn->name = key[0];
    fn->system_name = key[1]; /* the mangled symbol, as pprof keeps it */
    fn->filename = key[2];
    w->fns = fl__grow(w->fns, &w->fns_cap, w->n_fns + 1, sizeof *w->fns);
    w->fns[w->n_fns++] = fn;
  }
  return id;
}

/* The mapping of frame f's module: its name, but "./libfoo.so" for a
 * module named like a bare system library that f does not count as one,
 * so that readers (cflame's own, fl__bare_library) do not take it for
 * one. */
static uint64_t mapping_of(writer_t *w, const fl_frame_t *f) {
  const char *module = f->module;
  if (!module || !*module) return 0;
  if (!(f->flags & (FL_FRAME_SYSTEM | FL_FRAME_KERNEL)) && fl__bare_library(module)) {
    fl__buf_t name = FL__BUF_INIT;
    fl__buf_printf(&name, "./%s", module);
    w->names = fl__grow(w->names, &w->names_cap, w->n_names + 1, sizeof *w->names);
    module = w->names[w->n_names++] = fl__buf_take(&name);
  }
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
  uint64_t mapping = mapping_of(w, &top->frame);
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
  pb_label_t *labels[3];
  pb_label_t time;
  int64_t value[]; /* one per sample type */
} out_sample_t;

typedef struct thread_labels {
  int thread;
  pb_label_t id, name;
  bool named;
} thread_labels_t;

typedef struct samples {
  writer_t *w;
  const fl_kind_info_t *kind;    /* of the tree being written */
  const fl_profile_info_t *info; /* its */
  size_t first, n_cols;          /* its sample types: [first, first + n_cols) */
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
  out_sample_t *os = fl__xcalloc(1, sizeof *os + o->n_types * sizeof *os->value);
  pb_sample_t *s = &os->s;
  perftools__profiles__sample__init(s);
  s->location_id = (uint64_t *)node_locations(o, node, &s->n_location_id);
  s->n_value = o->n_types;
  s->value = os->value;
  int64_t *v = os->value + o->first;
  if (o->kind->allocs) {
    v[0] = clamp64(o->kind->bytes ? allocs : weight);
    if (o->n_cols > 1) v[1] = clamp64(weight);
  } else {
    v[0] = clamp64(weight);
    if (o->n_cols > 1) v[1] = times(weight, o->info->interval_ns);
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

/* The locations worked out for a tree's n_nodes nodes, which its
 * samples point into. */
static void node_locs_free(uint64_t **node_locs, size_t *node_n_locs, size_t n_nodes) {
  for (size_t i = 0; i < n_nodes; i++) free(node_locs[i]);
  free(node_locs);
  free(node_n_locs);
}

static void samples_free(samples_t *o) {
  for (size_t i = 0; i < o->n; i++) free(o->samples[i]);
  free(o->samples);
  for (size_t i = 0; i < o->n_threads; i++) free(o->threads[i]);
  free(o->threads);
}

/* The sample types of the kind of info, appended to types: its count
 * first (allocations, samples), then its measure (bytes, nanoseconds)
 * when it has one. Returns how many. With pb (the kind drawn), its
 * period too. */
static size_t kind_types(writer_t *w, const fl_profile_info_t *info, pb_value_type_t **types,
                         pb_profile_t *pb) {
  const fl_kind_info_t *kind = fl_kind(info->kind);
  size_t n = 0;
  if (kind->allocs) {
    types[n++] = value_type(w, kind->pprof_count ? kind->pprof_count : kind->pprof_type, "count");
    if (kind->bytes) types[n++] = value_type(w, kind->pprof_type, kind->pprof_unit);
    if (pb) {
      pb->period_type = value_type(w, "allocations", "count");
      pb->period = info->sample_rate > 0 ? (int64_t)(1.0 / info->sample_rate + 0.5) : 1;
      pb->default_sample_type = types[n - 1]->type;
    }
  } else if (kind->time) {
    types[n++] = value_type(w, kind->pprof_count, "count");
    if (info->interval_ns) types[n++] = value_type(w, kind->pprof_type, kind->pprof_unit);
    if (pb) {
      pb->period_type = value_type(w, kind->pprof_type, kind->pprof_unit);
      pb->period = clamp64(info->interval_ns);
    }
  } else { /* a count of events, named after the event */
    types[n++] = value_type(w, info->event[0] ? info->event : kind->pprof_type, "count");
  }
  return n;
}

char *fl_pprof(const fl_tree_t *t, size_t *size) {
  return fl_pprof_kinds(&t, 1, size);
}

char *fl_pprof_kinds(const fl_tree_t *const *trees, size_t n_trees, size_t *size) {
  const fl_tree_t *t = trees[0];
  const fl_profile_info_t *info = fl_tree_info(t);
  size_t n_nodes = fl_tree_n_nodes(t);
  writer_t w = {.t = t};
  pb_profile_t pb = PERFTOOLS__PROFILES__PROFILE__INIT;
  w.strings.strs = fl__xmalloc(1, sizeof *w.strings.strs);
  w.strings.strs[0] = "";
  w.strings.n = w.strings.cap = 1;
  w.functions.width = 3;
  w.mappings.width = 1;

  /* Each kind's types, the drawn kind's first: its period, and the
   * default sample type its measure. */
  pb_value_type_t **types = fl__xmalloc(2 * n_trees, sizeof *types);
  size_t *first = fl__xmalloc(n_trees + 1, sizeof *first), n_types = 0;
  for (size_t i = 0; i < n_trees; i++) {
    first[i] = n_types;
    n_types += kind_types(&w, fl_tree_info(trees[i]), types + n_types, i ? NULL : &pb);
  }
  first[n_trees] = n_types;
  if (n_trees > 1) pb.default_sample_type = types[first[1] - 1]->type;
  pb.n_sample_type = n_types;
  pb.sample_type = types;

  /* mapping[0] is the main binary, by the format's convention: the module
   * of the program's first frame. */
  for (size_t i = 1; i < n_nodes; i++) {
    const fl_frame_t *f = &fl_tree_node(t, i)->frame;
    if ((f->flags & FL_FRAME_CELL) && f->module && *f->module) {
      mapping_of(&w, f);
      break;
    }
  }

  samples_t out_samples = {.w = &w, .n_types = n_types};
  uint64_t ***kept_locs = fl__xcalloc(n_trees, sizeof *kept_locs); /* each tree's node_locs */
  size_t **kept_n = fl__xcalloc(n_trees, sizeof *kept_n);
  for (size_t i = 0; i < n_trees; i++) { /* locations found again by content */
    size_t n = fl_tree_n_nodes(trees[i]);
    w.t = trees[i];
    w.node_loc = fl__xcalloc(n, sizeof *w.node_loc);
    w.node_next = fl__xcalloc(n, sizeof *w.node_next);
    out_samples.node_locs = fl__xcalloc(n, sizeof *out_samples.node_locs);
    out_samples.node_n_locs = fl__xcalloc(n, sizeof *out_samples.node_n_locs);
    out_samples.info = fl_tree_info(trees[i]);
    out_samples.kind = fl_kind(out_samples.info->kind);
    out_samples.first = first[i];
    out_samples.n_cols = first[i + 1] - first[i];
    write_samples(&out_samples, trees[i]);
    kept_locs[i] = out_samples.node_locs;
    kept_n[i] = out_samples.node_n_locs;
    free(w.node_loc);
    free(w.node_next);
  }
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

  samples_free(&out_samples);
  for (size_t i = 0; i < n_trees; i++)
    node_locs_free(kept_locs[i], kept_n[i], fl_tree_n_nodes(trees[i]));
  free(kept_locs);
  free(kept_n);
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
  for (size_t i = 0; i < w.n_names; i++) free(w.names[i]);
  free(w.names);
  for (size_t i = 0; i < n_types; i++) free(types[i]);
  free(types);
  free(first);
  free(pb.period_type);
  free(w.strings.strs);
  fl__index_free(&w.strings.index);
  keyed_free(&w.functions);
  keyed_free(&w.mappings);
  fl__index_free(&w.loc_index);
  return out;
}
