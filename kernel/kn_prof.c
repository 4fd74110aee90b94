#define _GNU_SOURCE
#include "kn_prof.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cflame/fl_allocs.h"
#include "cflame/fl_sampler.h"
#include "cflame/fl_symbol.h"
#include "kn_names.h"
#include "kn_strbuf.h"

/* A named baseline (%%profbase NAME): a profile and how it was taken. */
typedef struct baseline {
  char *name;
  fl_profile_t *prof; /* its info says kind, interval, compiler, time, source */
} baseline_t;

struct kn_prof {
  kn_prof_settings_t settings;
  char *buffer_path; /* the sample file in the session directory */
  char *allocs_path; /* the allocation records' file, beside it */
  fl_profile_t *session;
  /* The last graph shown (owned copies of kn_prof_shown_t's fields). */
  fl_profile_t *last_profile;
  fl_profile_t *last_baseline;
  char *last_baseline_name;
  char *last_args;
  char *last_root;
  json_t *last_bundle;
  baseline_t *baselines;
  size_t n_baselines;
  /* The live worker's symbolizer, kept from one collection to the next
   * (refreshed each time), so that its libraries' debug information is
   * read once, not per cell. */
  fl_symbolizer_t *sym;
};

static void group_digits(char *buf, size_t size, uint64_t v);
static void format_interval(char *buf, size_t size, uint64_t ns);

kn_prof_t *kn_prof_new(const char *session_dir) {
  kn_prof_t *p = kn_xcalloc(1, sizeof *p);
  p->settings.delay_ns = KN_PROF_DEFAULT_DELAY_NS;
  p->settings.n_words = KN_PROF_DEFAULT_WORDS;
  p->settings.width = 800;
  kn_prof_set_dir(p, session_dir);
  p->session = fl_profile_new(FL_PROFILE_CPU);
  return p;
}

void kn_prof_set_dir(kn_prof_t *p, const char *session_dir) {
  free(p->buffer_path);
  kn_strbuf_t sb = KN_STRBUF_INIT;
  kn_strbuf_printf(&sb, "%s/samples.buf", session_dir);
  p->buffer_path = kn_strbuf_steal(&sb);
  free(p->allocs_path);
  kn_strbuf_printf(&sb, "%s/allocs.buf", session_dir);
  p->allocs_path = kn_strbuf_steal(&sb);
}

const char *kn_prof_buffer_path(const kn_prof_t *p) { return p->buffer_path; }
const char *kn_prof_allocs_path(const kn_prof_t *p) { return p->allocs_path; }

kn_prof_settings_t kn_prof_settings(const kn_prof_t *p) { return p->settings; }

void kn_prof_set_sampling(kn_prof_t *p, uint64_t n_words, uint64_t delay_ns) {
  p->settings.n_words = n_words;
  p->settings.delay_ns = delay_ns;
}

void kn_prof_set_size(kn_prof_t *p, int width, int height) {
  p->settings.width = width;
  p->settings.height = height;
}

void kn_prof_destroy(kn_prof_t **pp) {
  kn_prof_t *p = *pp;
  if (!p) return;
  free(p->buffer_path);
  free(p->allocs_path);
  fl_profile_destroy(&p->session);
  fl_profile_destroy(&p->last_profile);
  fl_profile_destroy(&p->last_baseline);
  free(p->last_args);
  free(p->last_root);
  free(p->last_baseline_name);
  json_decref(p->last_bundle);
  for (size_t i = 0; i < p->n_baselines; i++) {
    free(p->baselines[i].name);
    fl_profile_destroy(&p->baselines[i].prof);
  }
  free(p->baselines);
  fl_symbolizer_destroy(&p->sym);
  free(p);
  *pp = NULL;
}

void kn_prof_set_baseline(kn_prof_t *p, const char *name, const fl_profile_t *prof) {
  for (size_t i = 0; i < p->n_baselines; i++) {
    if (strcmp(p->baselines[i].name, name) != 0) continue;
    fl_profile_destroy(&p->baselines[i].prof);
    p->baselines[i].prof = fl_profile_copy(prof);
    return;
  }
  p->baselines = kn_xrealloc(p->baselines, (p->n_baselines + 1) * sizeof *p->baselines);
  p->baselines[p->n_baselines].name = kn_strdup(name);
  p->baselines[p->n_baselines].prof = fl_profile_copy(prof);
  p->n_baselines++;
}

const fl_profile_t *kn_prof_baseline(const kn_prof_t *p, const char *name) {
  for (size_t i = 0; i < p->n_baselines; i++)
    if (!strcmp(p->baselines[i].name, name)) return p->baselines[i].prof;
  return NULL;
}

char *kn_prof_baseline_names(const kn_prof_t *p) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  for (size_t i = 0; i < p->n_baselines; i++)
    kn_strbuf_printf(&sb, "%s%s", i ? ", " : "", p->baselines[i].name);
  if (!sb.len) kn_strbuf_puts(&sb, "none yet (make one with %%profbase NAME)");
  return kn_strbuf_steal(&sb);
}

char *kn_prof_baseline_list(const kn_prof_t *p) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  if (!p->n_baselines) {
    kn_strbuf_puts(&sb, "No baselines yet: profile a cell with %%profbase NAME to keep one.\n");
    return kn_strbuf_steal(&sb);
  }
  kn_strbuf_printf(&sb, "%-16s %-6s %12s  %-9s  %-19s  %-10s  %s\n", "Baseline", "Kind", "Samples",
                   "Interval", "Taken", "From", "Compiler");
  for (size_t i = 0; i < p->n_baselines; i++) {
    const fl_profile_info_t *info = fl_profile_info_const(p->baselines[i].prof);
    char samples[32], interval[32] = "-", when[32] = "?";
    group_digits(samples, sizeof samples, info->samples);
    if (info->interval_ns) format_interval(interval, sizeof interval, info->interval_ns);
    if (info->taken_unix) {
      time_t t = (time_t)info->taken_unix;
      struct tm tm;
      localtime_r(&t, &tm);
      strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    }
    kn_strbuf_printf(&sb, "%-16s %-6s %12s  %-9s  %-19s  %-10s  %s\n", p->baselines[i].name,
                     info->kind == FL_PROFILE_ALLOC ? "alloc" : "CPU", samples, interval, when,
                     info->source[0] ? info->source : "-", info->compiler[0] ? info->compiler : "-");
  }
  return kn_strbuf_steal(&sb);
}

int kn_prof_prepare(kn_prof_t *p, uint64_t n_words, char *err, size_t err_size) {
  size_t bytes = fl_sampler_buffer_bytes((size_t)n_words);
  int fd = open(p->buffer_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)bytes) < 0) {
    snprintf(err, err_size, "cannot prepare the sample buffer %s (%zu bytes): %s",
             p->buffer_path, bytes, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

/* ---- classifying frames ---- */

static bool is_system_module(const char *module) {
  if (!module) return false;
  static const char *const dirs[] = {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/",
                                     "/usr/local/lib/", NULL};
  for (size_t i = 0; dirs[i]; i++)
    if (!strncmp(module, dirs[i], strlen(dirs[i]))) return true;
  return module[0] == '[' || strstr(module, "linux-vdso") != NULL;
}

static bool is_allocator_func(const char *func) {
  static const char *const names[] = {
      "malloc",        "free",          "calloc",         "realloc",        "reallocarray",
      "posix_memalign", "aligned_alloc", "memalign",      "valloc",         "pvalloc",
      "cfree",         "_int_malloc",   "_int_free",      "_int_realloc",   "_int_memalign",
      "malloc_consolidate", "sysmalloc", "systrim",       "heap_trim",      "unlink_chunk",
      "alloc_perturb", "free_perturb",  "_mid_memalign",  "tcache_init",    "tcache_get",
      "tcache_put",    "__libc_malloc", "__libc_free",    "__libc_calloc",  "__libc_realloc",
      "__libc_memalign", "__libc_valloc", "__libc_pvalloc", "__posix_memalign", "_int_free_merge_chunk",
      "_int_free_create_chunk", "_int_free_maybe_consolidate", "malloc_printerr", NULL};
  for (size_t i = 0; names[i]; i++)
    if (!strcmp(func, names[i])) return true;
  return false;
}

/* A sanitizer's runtime (cells built with %cflags -fsanitize=address, or
 * cflame's own sanitizer builds) replaces the allocator: its interceptors
 * and allocator internals are allocator time too. */
static bool is_sanitizer_allocator(const char *mod_base, const char *func) {
  static const char *const runtimes[] = {"libasan.so", "liblsan.so", "libtsan.so",
                                         "libhwasan.so", NULL};
  bool runtime = false;
  for (size_t i = 0; mod_base && runtimes[i] && !runtime; i++)
    runtime = !strncmp(mod_base, runtimes[i], strlen(runtimes[i]));
  if (!runtime) return false;
  static const char *const words[] = {"alloc", "Alloc", "free", "Free", NULL};
  for (size_t i = 0; words[i]; i++)
    if (strstr(func, words[i])) return true;
  return false;
}

/* "cflame_c3_f" -> "f" (the ELF name of a cell function; DWARF usually
 * gives the plain name already). Borrowed pointer into func. */
/* ---- turning records into stacks ---- */

typedef struct conv {
  fl_profile_t *prof;
  fl_symbolizer_t *sym;
  bool owns_sym; /* sym is this conversion's own, not the session's */
  int *tids;
  size_t n_tids;
  pid_t main_tid;
  uint32_t *stack; /* root first, built from the back */
  size_t cap;
  uint32_t incomplete; /* the "[incomplete stack]" frame, once made */
  bool have_incomplete;
  uint32_t too_deep; /* the "[deeper than N frames]" frame, once made */
  bool have_too_deep;
  /* What each address came to (pc_frames), for the next record that has
   * it: a buffer of 10^4 records holds a few hundred distinct addresses. */
  struct pc_seen *seen; /* open addressing, capacity seen_mask + 1 */
  size_t seen_mask, n_seen;
  uint32_t *seen_ids; /* the frame ids, seen[i].first onwards */
  size_t n_seen_ids, cap_seen_ids;
} conv_t;

typedef struct pc_seen {
  uint64_t key; /* pc << 1 | is_return_address */
  uint32_t first;
  uint8_t count;
  bool used;
  bool stop; /* the stack ends at this address (pc_frames) */
} pc_seen_t;

static int thread_index(const conv_t *c, int tid) {
  if (tid == c->main_tid) return 1;
  int idx = 2;
  for (size_t i = 0; i < c->n_tids; i++) {
    if (c->tids[i] == c->main_tid) continue;
    if (c->tids[i] == tid) return idx;
    idx++;
  }
  return 0;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

#define PC_FRAMES_MAX 16

/* The frame ids of one address, innermost first (several when code is
 * inlined there), into ids; returns how many. *stop is set when the stack
 * ends here: at the kernel's machinery (the worker's own code, left out)
 * or at the cell's entry (the cell's own statements, the root's child,
 * kept). */
static size_t pc_frames(conv_t *c, uint64_t pc, bool is_return, uint32_t *ids, bool *stop) {
  fl_frame_info_t info[PC_FRAMES_MAX];
  int k = fl_symbolizer_lookup(c->sym, pc, is_return, info, PC_FRAMES_MAX);
  size_t n = 0;
  *stop = false;
  for (int j = 0; j < k; j++) {
    const fl_frame_info_t *f = &info[j];
    const char *mod_base = kn_base_name(f->module);
    int cell;
    kn_frame_kind_t kind = kn_frame_classify(f, &cell);
    /* The worker's own code is the kernel's machinery, where the stack
     * is cut; but for its allocator entry points (kw_alloc.c), which are
     * the allocator as the cell sees it. */
    if (kind == KN_FRAME_WORKER && !(f->func && is_allocator_func(f->func))) {
      *stop = true;
      return n;
    }
    char cellname[32] = "";
    if (cell) snprintf(cellname, sizeof cellname, KN_CELL_FILE_FMT, cell);
    fl_frame_t fr = {0};
    const char *func = f->func ? kn_plain_name(f->func) : "[unknown]";
    bool entry = cell && kind == KN_FRAME_ENTRY;
    fr.func = entry ? "top-level scope" : func;
    fr.file = f->file;
    fr.line = f->line;
    /* Code the kernel generated around the cell's statements (the entry
     * function's own prologue, OpenMP's wait in it) is the cell's, at no
     * particular line. */
    if (cell && kn_is_generated_file(f->file)) {
      fr.file = cellname;
      fr.line = 0;
    }
    fr.module = cell ? cellname : mod_base;
    if (kind == KN_FRAME_WORKER) fr.module = "cflame allocator";
    fr.addr = pc - f->module_base;
    if (cell)
      fr.flags = FL_FRAME_CELL | FL_FRAME_REPL | (entry ? FL_FRAME_CELL_BODY : 0);
    else if (is_allocator_func(func) || is_sanitizer_allocator(mod_base, func))
      fr.flags = FL_FRAME_ALLOC;
    else if (is_system_module(f->module))
      fr.flags = FL_FRAME_SYSTEM;
    if (f->inlined) fr.flags |= FL_FRAME_INLINED;
    ids[n++] = fl_profile_frame_id(c->prof, &fr);
    if (entry) {
      *stop = true;
      return n;
    }
  }
  return n;
}

static size_t seen_hash(uint64_t key) {
  return (size_t)(key * 0x9e3779b97f4a7c15u >> 20); /* Fibonacci hashing */
}

/* pc_frames of (pc, is_return), from c->seen when an earlier record had
 * the address. */
static const pc_seen_t *pc_frames_seen(conv_t *c, uint64_t pc, bool is_return) {
  if ((c->n_seen + 1) * 2 > c->seen_mask + 1) {
    size_t cap = c->seen_mask ? (c->seen_mask + 1) * 2 : 1024;
    pc_seen_t *grown = kn_xcalloc(cap, sizeof *grown);
    for (size_t i = 0; c->seen_mask && i <= c->seen_mask; i++) {
      if (!c->seen[i].used) continue;
      size_t h = seen_hash(c->seen[i].key) & (cap - 1);
      while (grown[h].used) h = (h + 1) & (cap - 1);
      grown[h] = c->seen[i];
    }
    free(c->seen);
    c->seen = grown;
    c->seen_mask = cap - 1;
  }
  uint64_t key = pc << 1 | is_return;
  size_t h = seen_hash(key) & c->seen_mask;
  while (c->seen[h].used && c->seen[h].key != key) h = (h + 1) & c->seen_mask;
  pc_seen_t *e = &c->seen[h];
  if (!e->used) {
    if (c->n_seen_ids + PC_FRAMES_MAX > c->cap_seen_ids) {
      c->cap_seen_ids = (c->cap_seen_ids + PC_FRAMES_MAX) * 2;
      c->seen_ids = kn_xrealloc(c->seen_ids, c->cap_seen_ids * sizeof *c->seen_ids);
    }
    bool stop;
    size_t n = pc_frames(c, pc, is_return, c->seen_ids + c->n_seen_ids, &stop);
    *e = (pc_seen_t){.key = key,
                     .first = (uint32_t)c->n_seen_ids,
                     .count = (uint8_t)n,
                     .used = true,
                     .stop = stop};
    c->n_seen_ids += n;
    c->n_seen++;
  }
  return e;
}

/* Frame ids of one record's addresses (leaf first; with leaf_is_return
 * the leaf too is a return address), leaf first, into ids; returns how
 * many, with *complete set when the stack reached the kernel's machinery
 * (and was cut there). */
static size_t record_frames(conv_t *c, const uint64_t *pcs, size_t n_pcs, bool leaf_is_return,
                            uint32_t *ids, size_t max, bool *complete) {
  size_t n = 0;
  *complete = false;
  for (size_t i = 0; i < n_pcs && n < max; i++) {
    const pc_seen_t *e = pc_frames_seen(c, pcs[i], i > 0 || leaf_is_return);
    size_t j = 0;
    for (; j < e->count && n < max; j++) ids[n++] = c->seen_ids[e->first + j];
    if (e->stop && j == e->count) {
      *complete = true;
      return n;
    }
  }
  return n;
}

/* Maps the file at path (what names it in errors) for reading. Returns 0
 * with *map (MAP_FAILED when the file is empty) and *bytes, or -1 with
 * err. */
static int map_buffer(const char *path, const char *what, void **map, size_t *bytes, char *err,
                      size_t err_size) {
  *map = MAP_FAILED;
  *bytes = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    snprintf(err, err_size, "cannot read the %s %s: %s", what, path, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  *bytes = (size_t)st.st_size;
  if (*bytes) *map = mmap(NULL, *bytes, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (*bytes && *map == MAP_FAILED) {
    snprintf(err, err_size, "cannot map the %s: %s", what, strerror(errno));
    return -1;
  }
  return 0;
}

/* Starts a conversion of pid's records (with maps_text when the process
 * is gone): a symbolizer and a new profile of kind. A live worker's
 * symbolizer is p's, refreshed; a dead one's is the conversion's own.
 * Returns the profile, or NULL with err. */
static fl_profile_t *conv_begin(conv_t *c, kn_prof_t *p, pid_t pid, const char *maps_text,
                                fl_profile_kind_t kind, char *err, size_t err_size) {
  if (maps_text) {
    c->sym = fl_symbolizer_new_from_maps(maps_text, err, err_size);
    c->owns_sym = true;
  } else {
    if (p->sym && fl_symbolizer_refresh_from_pid(p->sym, pid, err, err_size) < 0)
      fl_symbolizer_destroy(&p->sym);
    if (!p->sym) p->sym = fl_symbolizer_new_from_pid(pid, err, err_size);
    c->sym = p->sym;
  }
  if (!c->sym) return NULL;
  c->main_tid = pid;
  c->prof = fl_profile_new(kind);
  return c->prof;
}

/* Notes a thread seen in the records (for thread_index). */
static void note_tid(conv_t *c, int tid, size_t *cap) {
  for (size_t i = 0; i < c->n_tids; i++)
    if (c->tids[i] == tid) return;
  if (c->n_tids == *cap) {
    *cap = *cap ? *cap * 2 : 16;
    c->tids = kn_xrealloc(c->tids, *cap * sizeof *c->tids);
  }
  c->tids[c->n_tids++] = tid;
}

/* A record's stack, root first, into c->stack (room for max + 2 frames);
 * returns its length. When the unwinder stopped before the cell's entry,
 * the part it found hangs under a frame that says so, not as if it were
 * the cell: "[deeper than N frames]" when the recorder kept its limit of
 * depth_limit frames (the leaf side of a deeper stack), "[incomplete
 * stack]" when the unwinder found no caller (code without unwind
 * information). leaf_first is scratch room for max frames. */
static size_t record_stack(conv_t *c, const uint64_t *pcs, size_t n_pcs, size_t depth_limit,
                           bool leaf_is_return, uint32_t *leaf_first, size_t max) {
  bool complete;
  size_t n = record_frames(c, pcs, n_pcs, leaf_is_return, leaf_first, max, &complete);
  size_t m = 0;
  if (!complete && n_pcs >= depth_limit) {
    if (!c->have_too_deep) {
      char name[48];
      snprintf(name, sizeof name, "[deeper than %zu frames]", depth_limit);
      fl_frame_t fr = {.func = name};
      c->too_deep = fl_profile_frame_id(c->prof, &fr);
      c->have_too_deep = true;
    }
    c->stack[m++] = c->too_deep;
  } else if (!complete) {
    if (!c->have_incomplete) {
      fl_frame_t fr = {.func = "[incomplete stack]"};
      c->incomplete = fl_profile_frame_id(c->prof, &fr);
      c->have_incomplete = true;
    }
    c->stack[m++] = c->incomplete;
  }
  for (size_t i = n; i-- > 0;) c->stack[m++] = leaf_first[i];
  return m;
}

/* What a profile of a cell's run says about the run. */
static void note_run(fl_profile_info_t *info, uint64_t dropped, double cpu_seconds,
                     double wall_seconds, int cell) {
  info->dropped = dropped;
  info->cpu_seconds = cpu_seconds;
  info->wall_seconds = wall_seconds;
  snprintf(info->source, sizeof info->source, KN_CELL_FILE_FMT, cell);
  info->taken_unix = (int64_t)time(NULL);
}

static void conv_free(conv_t *c, uint32_t *leaf_first, void *map, size_t bytes) {
  if (c->owns_sym) fl_symbolizer_destroy(&c->sym);
  free(c->tids);
  free(c->stack);
  free(c->seen);
  free(c->seen_ids);
  free(leaf_first);
  if (map != MAP_FAILED) munmap(map, bytes);
}

fl_profile_t *kn_prof_collect(kn_prof_t *p, pid_t pid, const char *maps_text,
                              const kn_prof_run_t *run, char *err, size_t err_size) {
  fl_profile_t *prof = NULL;
  void *map = MAP_FAILED;
  size_t bytes = 0;
  conv_t c = {0};
  uint32_t *leaf_first = NULL;

  if (map_buffer(p->buffer_path, "sample buffer", &map, &bytes, err, err_size) < 0) goto fail;

  if (!(prof = conv_begin(&c, p, pid, maps_text, FL_PROFILE_CPU, err, err_size))) goto fail;

  /* Threads are numbered 1 (the cell's main thread), 2, 3, ... in the
   * order the system created them. */
  size_t pos = 0, cap_tids = 0;
  fl_sampler_record_t rec;
  int r;
  while (bytes && (r = fl_sampler_next(map, bytes, &pos, &rec)) == 1) note_tid(&c, rec.tid, &cap_tids);
  if (c.n_tids > 1) qsort(c.tids, c.n_tids, sizeof *c.tids, cmp_int);

  size_t max_frames = FL_SAMPLER_MAX_DEPTH * 4;
  leaf_first = kn_xmalloc(max_frames * sizeof *leaf_first);
  c.stack = kn_xmalloc((max_frames + 1) * sizeof *c.stack);
  pos = 0;
  while (bytes && (r = fl_sampler_next(map, bytes, &pos, &rec)) == 1) {
    size_t m =
        record_stack(&c, rec.pcs, rec.n_pcs, FL_SAMPLER_MAX_DEPTH, false, leaf_first, max_frames);
    fl_profile_add_sample(prof, c.stack, m, rec.weight ? rec.weight : 1, 0,
                          thread_index(&c, rec.tid));
  }

  fl_profile_info_t *info = fl_profile_info(prof);
  info->interval_ns = run->interval_ns;
  note_run(info, run->dropped, run->cpu_seconds, run->wall_seconds, run->cell);

fail:
  conv_free(&c, leaf_first, map, bytes);
  return prof;
}

const fl_profile_t *kn_prof_session(const kn_prof_t *p) { return p->session; }

void kn_prof_session_take(kn_prof_t *p, const fl_profile_t *run, kn_profmode_t mode) {
  switch (mode) {
  case KN_PROF_VIEW:
  case KN_PROF_DIFF:
    fl_profile_destroy(&p->session);
    p->session = fl_profile_copy(run);
    break;
  case KN_PROF_ACCUMULATE:
    /* A session that holds another kind of profile (an allocation profile
     * %profload read) starts again from this run. */
    if (fl_profile_info_const(p->session)->kind != fl_profile_info_const(run)->kind) {
      fl_profile_destroy(&p->session);
      p->session = fl_profile_copy(run);
      break;
    }
    fl_profile_merge(p->session, run);
    fl_profile_info(p->session)->interval_ns = fl_profile_info_const(run)->interval_ns;
    break;
  case KN_PROF_NONE:
  case KN_PROF_BASE:
  case KN_PROF_ALLOCS:
    break;
  }
}

void kn_prof_session_replace(kn_prof_t *p, fl_profile_t *prof) {
  fl_profile_destroy(&p->session);
  p->session = prof;
}

void kn_prof_session_clear(kn_prof_t *p) { fl_profile_clear(p->session); }

/* Replaces *slot with a copy of s, unless it is *slot already. */
static void keep_string(char **slot, const char *s) {
  if (s == *slot) return;
  free(*slot);
  *slot = s ? kn_strdup(s) : NULL;
}

static void keep_profile(fl_profile_t **slot, const fl_profile_t *prof) {
  if (prof == *slot) return;
  fl_profile_destroy(slot);
  *slot = prof ? fl_profile_copy(prof) : NULL;
}

void kn_prof_remember(kn_prof_t *p, const kn_prof_shown_t *shown) {
  keep_profile(&p->last_profile, shown->profile);
  keep_profile(&p->last_baseline, shown->baseline);
  keep_string(&p->last_baseline_name, shown->baseline ? shown->baseline_name : NULL);
  keep_string(&p->last_args, shown->args ? shown->args : "");
  keep_string(&p->last_root, shown->root);
  json_incref(shown->bundle);
  json_decref(p->last_bundle);
  p->last_bundle = shown->bundle;
}

bool kn_prof_last_shown(const kn_prof_t *p, kn_prof_shown_t *out) {
  if (!p->last_profile) return false;
  *out = (kn_prof_shown_t){.profile = p->last_profile,
                           .baseline = p->last_baseline,
                           .baseline_name = p->last_baseline_name,
                           .args = p->last_args,
                           .root = p->last_root,
                           .bundle = p->last_bundle};
  return true;
}

int kn_prof_prepare_allocs(kn_prof_t *p, uint64_t n_words, char *err, size_t err_size) {
  size_t bytes = fl_allocs_buffer_bytes((size_t)n_words, (size_t)KN_ALLOCS_TABLE_SLOTS);
  /* A new file each run: its pages are zero without being written. */
  unlink(p->allocs_path);
  int fd = open(p->allocs_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)bytes) < 0) {
    snprintf(err, err_size, "cannot prepare the allocation buffer %s (%zu bytes): %s",
             p->allocs_path, bytes, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
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

fl_profile_t *kn_prof_collect_allocs(kn_prof_t *p, pid_t pid, const kn_allocs_run_t *run,
                                     char *err, size_t err_size) {
  fl_profile_t *prof = NULL;
  void *map = MAP_FAILED;
  size_t bytes = 0;
  conv_t c = {0};
  uint32_t *leaf_first = NULL;

  if (map_buffer(p->allocs_path, "allocation buffer", &map, &bytes, err, err_size) < 0)
    goto fail;
  if (!(prof = conv_begin(&c, p, pid, NULL, FL_PROFILE_ALLOC, err, err_size))) goto fail;

  size_t pos = 0, cap_tids = 0;
  fl_allocs_record_t rec;
  int r;
  while (bytes && (r = fl_allocs_next(map, bytes, &pos, &rec)) == 1) note_tid(&c, rec.tid, &cap_tids);
  if (c.n_tids > 1) qsort(c.tids, c.n_tids, sizeof *c.tids, cmp_int);

  /* The allocation functions, as the leaf frames under their callers. */
  uint32_t alloc_frame[FL_ALLOC_MEMALIGN + 1];
  for (int k = FL_ALLOC_MALLOC; k <= FL_ALLOC_MEMALIGN; k++) {
    fl_frame_t fr = {.func = alloc_func_name(k), .module = "libc.so.6",
                     .flags = FL_FRAME_SYSTEM | FL_FRAME_ALLOC};
    alloc_frame[k] = fl_profile_frame_id(prof, &fr);
  }
  size_t max_frames = FL_ALLOCS_MAX_DEPTH * 4;
  leaf_first = kn_xmalloc(max_frames * sizeof *leaf_first);
  c.stack = kn_xmalloc((max_frames + 2) * sizeof *c.stack);
  /* Each record stands for 1 / sample_rate allocations of its size: the
   * running totals are rounded, not each record, so that totals are the
   * sums divided by the rate. */
  double scale = run->sample_rate > 0 ? 1.0 / run->sample_rate : 1.0;
  uint64_t n_seen = 0, bytes_seen = 0, allocs_out = 0, bytes_out = 0;
  pos = 0;
  while (bytes && (r = fl_allocs_next(map, bytes, &pos, &rec)) == 1) {
    if (run->live && rec.freed) continue;
    n_seen++;
    bytes_seen += rec.bytes;
    uint64_t allocs = (uint64_t)llround((double)n_seen * scale) - allocs_out;
    uint64_t est = (uint64_t)llround((double)bytes_seen * scale) - bytes_out;
    allocs_out += allocs;
    bytes_out += est;
    uint64_t weight = run->weight_count ? allocs : est;
    if (weight == 0) continue; /* a 0-byte allocation weighs nothing */

    size_t m =
        record_stack(&c, rec.pcs, rec.n_pcs, FL_ALLOCS_MAX_DEPTH, true, leaf_first, max_frames);
    c.stack[m++] = alloc_frame[rec.kind];
    fl_profile_add_sample(prof, c.stack, m, weight, allocs, thread_index(&c, rec.tid));
  }
  if (r < 0) {
    snprintf(err, err_size, "the allocation buffer is corrupt");
    fl_profile_destroy(&prof);
    goto fail;
  }

  fl_profile_info_t *info = fl_profile_info(prof);
  info->sample_rate = run->sample_rate;
  info->weight_is_count = run->weight_count;
  info->live_only = run->live;
  info->calls = run->calls;
  note_run(info, run->dropped, run->cpu_seconds, run->wall_seconds, run->cell);

fail:
  conv_free(&c, leaf_first, map, bytes);
  return prof;
}

/* 1234567 -> "1,234,567" */
static void group_digits(char *buf, size_t size, uint64_t v) {
  char tmp[32];
  int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
  size_t o = 0;
  for (int i = 0; i < n && o + 2 < size; i++) {
    if (i > 0 && (n - i) % 3 == 0) buf[o++] = ',';
    buf[o++] = tmp[i];
  }
  buf[o] = '\0';
}

static void format_interval(char *buf, size_t size, uint64_t ns) {
  if (ns >= 1000000 && ns % 1000000 == 0)
    snprintf(buf, size, "%llu ms", (unsigned long long)(ns / 1000000));
  else if (ns >= 1000)
    snprintf(buf, size, "%g ms", (double)ns / 1e6);
  else
    snprintf(buf, size, "%llu ns", (unsigned long long)ns);
}

char *kn_prof_summary(const fl_profile_t *prof) {
  const fl_profile_info_t *info = fl_profile_info_const(prof);
  kn_strbuf_t sb = KN_STRBUF_INIT;
  char samples[32], interval[32];
  group_digits(samples, sizeof samples, info->samples);
  format_interval(interval, sizeof interval, info->interval_ns);
  double represented = (double)info->total_weight * (double)info->interval_ns / 1e9;
  if (info->kind == FL_PROFILE_ALLOC) {
    char allocs[32], calls[32], size[32];
    group_digits(allocs, sizeof allocs, info->total_allocs);
    group_digits(calls, sizeof calls, info->calls);
    double b = info->weight_is_count ? 0 : (double)info->total_weight;
    if (b >= 1 << 20)
      snprintf(size, sizeof size, "%.1f MiB", b / (1 << 20));
    else if (b >= 1 << 10)
      snprintf(size, sizeof size, "%.1f KiB", b / (1 << 10));
    else
      snprintf(size, sizeof size, "%.0f B", b);
    kn_strbuf_printf(&sb, "%s%s allocation%s", info->sample_rate < 1 ? "~" : "", allocs,
                     info->total_allocs == 1 ? "" : "s");
    if (!info->weight_is_count) kn_strbuf_printf(&sb, " of %s%s", info->sample_rate < 1 ? "~" : "", size);
    if (info->live_only) kn_strbuf_puts(&sb, " still allocated at the end (live=true)");
    if (info->sample_rate < 1)
      kn_strbuf_printf(&sb, ", estimated from %s sampled allocation%s (sample_rate=%g)", samples,
                       info->samples == 1 ? "" : "s", info->sample_rate);
    else
      kn_strbuf_puts(&sb, ", every one recorded (sample_rate=1)");
    if (info->calls) kn_strbuf_printf(&sb, "; the run made %s allocation calls", calls);
    if (info->dropped) {
      char dropped[32];
      group_digits(dropped, sizeof dropped, info->dropped);
      kn_strbuf_printf(&sb, "; the record buffer filled up and %s sampled allocations were lost "
                            "(lower sample_rate=, or raise n=)", dropped);
    }
    return kn_strbuf_steal(&sb);
  }
  /* A sample is one interval of CPU time: the unit of every count the
   * graphs and reports show. A stack the sampler recorded late stands for
   * the intervals it spanned, so there can be more samples than stacks. */
  char weight[32];
  group_digits(weight, sizeof weight, info->total_weight);
  if (!info->interval_ns) {
    /* Read from a file that does not say how often it sampled. */
    kn_strbuf_printf(&sb, "%s samples in %s stacks%s%s", weight, samples,
                     info->source[0] ? " from " : "", info->source);
    return kn_strbuf_steal(&sb);
  }
  kn_strbuf_printf(&sb, "%s samples every %s of CPU represent %.3f s of CPU", weight, interval,
                   represented);
  kn_strbuf_printf(&sb, ", from %s stacks recorded", samples);
  if (info->cpu_seconds > 0)
    kn_strbuf_printf(&sb, " (%.0f per CPU-second)", (double)info->samples / info->cpu_seconds);
  if (info->cpu_seconds > 0 || info->wall_seconds > 0)
    kn_strbuf_printf(&sb, "; the run used %.3f s CPU, %.3f s wall", info->cpu_seconds,
                     info->wall_seconds);
  if (info->dropped)
    kn_strbuf_printf(&sb, "; the sample buffer filled up and sampling stopped early, so the graph "
                          "covers %.3f s of the run's CPU (raise n=, or %%profinit n=)",
                     represented);
  return kn_strbuf_steal(&sb);
}
