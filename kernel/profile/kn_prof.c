/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "kn_prof.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cflame/fl_allocs.h"
#include "cflame/fl_collect.h"
#include "cflame/fl_options.h"
#include "cflame/fl_render.h"
#include "cflame/fl_sampler.h"
#include "cflame/fl_symbol.h"
#include "kn_names.h"
#include "kn_session.h"
#include "kn_text.h"

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
  char *last_note;
  json_t *last_bundle;
  baseline_t *baselines;
  size_t n_baselines;
  /* The live worker's symbolizer, kept from one collection to the next
   * (refreshed each time), so that its libraries' debug information is
   * read once, not per cell. */
  fl_symbolizer_t *sym;
  fl_source_reader_t source; /* cells from the session's inputs */
  kn_profhist_t *history;
  /* The job that owns p (kn_prof_set_owner, kn_prof_set_interrupt), or
   * all NULL. */
  const fl_cancel_flag_t *interrupt;
  const fl_cancel_flag_t *cancel;
  bool (*claim)(void *ctx);
  void *claim_ctx;
  /* The compile-flags note last said (tail_call_note's text), so that a
   * session reads it once, and again only when %cflags changes it. */
  const char *tail_note_said;
};

static void group_digits(char *buf, size_t size, uint64_t v);
/* The default of the option table's row name, a number, times scale. */
static uint64_t row_default(const char *name, double scale) {
  return (uint64_t)(strtod(fl_option_default(fl_option_find(name), FL_FRONT_NOTEBOOK), NULL) *
                        scale +
                    0.5);
}

kn_prof_t *kn_prof_new(const char *session_dir) {
  kn_prof_t *p = fl__xcalloc(1, sizeof *p);
  /* The settings start at the option table's defaults (delay=, n=, width=,
   * height=), which %profinit and %profsize then change. */
  p->settings.delay_ns = row_default("delay", 1e9);
  p->settings.n_words = row_default("n", 1);
  fl_view_opts_t view;
  fl_view_opts_init(&view);
  p->settings.width = view.width;
  p->settings.height = view.height;
  kn_prof_set_dir(p, session_dir);
  p->session = fl_profile_new(FL_PROFILE_CPU);
  p->history = kn_profhist_new(KN_PROFHIST_BUDGET_BYTES);
  return p;
}

/* A cell's text is its input as the user wrote it, whose lines the
 * frames' lines count (the magic line included). Other files are read
 * from disk by the library, under its source roots. */
static char *read_source(void *ctx, const char *file) {
  int cell;
  char end;
  if (sscanf(file, KN_CELL_FILE_FMT "%c", &cell, &end) != 1) return NULL;
  const char *input = kn_history_input(ctx, cell);
  return input ? fl__xstrdup(input) : NULL;
}

void kn_prof_set_cells(kn_prof_t *p, const kn_history_t *h) {
  p->source = (fl_source_reader_t){.read = read_source, .ctx = (void *)h};
}

const fl_source_reader_t *kn_prof_source_reader(const kn_prof_t *p) {
  return &p->source;
}

void kn_prof_set_owner(kn_prof_t *p, const fl_cancel_flag_t *cancel, bool (*claim)(void *ctx),
                       void *ctx) {
  p->cancel = cancel;
  p->claim = claim;
  p->claim_ctx = ctx;
}

/* Whether p may change now: no job owns it, or its job claims it (and was
 * not cancelled first). */
static bool may_change(kn_prof_t *p) {
  return !p->claim || p->claim(p->claim_ctx);
}

void kn_prof_set_interrupt(kn_prof_t *p, const fl_cancel_flag_t *interrupt) {
  p->interrupt = interrupt;
}

bool kn_prof_claim(kn_prof_t *p) {
  return may_change(p);
}

bool kn_prof_interrupted(const kn_prof_t *p) {
  return p->interrupt && atomic_load(p->interrupt);
}

const fl_cancel_flag_t *kn_prof_cancel_flag(const kn_prof_t *p) {
  return p->cancel;
}

bool kn_prof_cancelled(const kn_prof_t *p) {
  return p->cancel && atomic_load(p->cancel);
}

void kn_prof_set_dir(kn_prof_t *p, const char *session_dir) {
  free(p->buffer_path);
  fl__buf_t sb = FL__BUF_INIT;
  fl__buf_printf(&sb, "%s/samples.buf", session_dir);
  p->buffer_path = fl__buf_take(&sb);
  free(p->allocs_path);
  fl__buf_printf(&sb, "%s/allocs.buf", session_dir);
  p->allocs_path = fl__buf_take(&sb);
}

const char *kn_prof_buffer_path(const kn_prof_t *p) {
  return p->buffer_path;
}
const char *kn_prof_allocs_path(const kn_prof_t *p) {
  return p->allocs_path;
}

kn_prof_settings_t kn_prof_settings(const kn_prof_t *p) {
  return p->settings;
}

void kn_prof_set_sampling(kn_prof_t *p, uint64_t n_words, uint64_t delay_ns) {
  if (!may_change(p)) return;
  p->settings.n_words = n_words;
  p->settings.delay_ns = delay_ns;
}

void kn_prof_set_size(kn_prof_t *p, int width, int height) {
  if (!may_change(p)) return;
  p->settings.width = width;
  p->settings.height = height;
}

void kn_prof_destroy(kn_prof_t **pp) {
  kn_prof_t *p = *pp;
  if (!p) return;
  kn_profhist_destroy(&p->history);
  free(p->buffer_path);
  free(p->allocs_path);
  fl_profile_destroy(&p->session);
  fl_profile_destroy(&p->last_profile);
  fl_profile_destroy(&p->last_baseline);
  free(p->last_args);
  free(p->last_root);
  free(p->last_note);
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
  if (!may_change(p)) return;
  for (size_t i = 0; i < p->n_baselines; i++) {
    if (strcmp(p->baselines[i].name, name) != 0) continue;
    fl_profile_destroy(&p->baselines[i].prof);
    p->baselines[i].prof = fl_profile_copy(prof);
    return;
  }
  p->baselines = fl__xrealloc(p->baselines, p->n_baselines + 1, sizeof *p->baselines);
  p->baselines[p->n_baselines].name = fl__xstrdup(name);
  p->baselines[p->n_baselines].prof = fl_profile_copy(prof);
  p->n_baselines++;
}

kn_profhist_t *kn_prof_history(kn_prof_t *p) {
  return p->history;
}

const fl_profile_t *kn_prof_diff_base(const kn_prof_t *p, const char *name, const char *cell_key) {
  if (name && !strcmp(name, KN_PROFHIST_PREV))
    return cell_key ? kn_profhist_prev(p->history, cell_key, NULL, NULL, 0) : NULL;
  return kn_prof_baseline(p, name);
}

const fl_profile_t *kn_prof_baseline(const kn_prof_t *p, const char *name) {
  for (size_t i = 0; i < p->n_baselines; i++)
    if (!strcmp(p->baselines[i].name, name)) return p->baselines[i].prof;
  return NULL;
}

char *kn_prof_baseline_names(const kn_prof_t *p) {
  fl__buf_t sb = FL__BUF_INIT;
  for (size_t i = 0; i < p->n_baselines; i++)
    fl__buf_printf(&sb, "%s%s", i ? ", " : "", p->baselines[i].name);
  if (!sb.len) fl__buf_puts(&sb, "none yet (make one with %%profbase NAME)");
  return fl__buf_take(&sb);
}

char *kn_prof_baseline_list(const kn_prof_t *p) {
  fl__buf_t sb = FL__BUF_INIT;
  if (!p->n_baselines) {
    fl__buf_puts(&sb, "No baselines yet: profile a cell with %%profbase NAME to keep one.\n");
    return fl__buf_take(&sb);
  }
  fl__buf_printf(&sb, "%-16s %-6s %12s  %-9s  %-19s  %-10s  %s\n", "Baseline", "Kind", "Samples",
                 "Interval", "Taken", "From", "Compiler");
  for (size_t i = 0; i < p->n_baselines; i++) {
    const fl_profile_info_t *info = fl_profile_info_const(p->baselines[i].prof);
    char samples[32], interval[32] = "-", when[32] = "?";
    group_digits(samples, sizeof samples, info->samples);
    if (info->interval_ns) fl_interval_text(info->interval_ns, interval, sizeof interval);
    if (info->taken_unix) {
      time_t t = (time_t)info->taken_unix;
      struct tm tm;
      localtime_r(&t, &tm);
      strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    }
    fl__buf_printf(&sb, "%-16s %-6s %12s  %-9s  %-19s  %-10s  %s\n", p->baselines[i].name,
                   fl_kind(info->kind)->label, samples, interval, when,
                   info->source[0] ? info->source : "-", info->compiler[0] ? info->compiler : "-");
  }
  return fl__buf_take(&sb);
}

/* A new file of bytes at path, all zeros, its first `allocate` bytes given
 * blocks: a store to a page of a shared mapping that the file system
 * cannot back raises SIGBUS in the worker, so a buffer the worker writes
 * from its signal handler is allocated whole (docs/ARCHITECTURE.md, "Buffers
 * on a file system that fills up"); a full disk is then this error, naming
 * TMPDIR. Returns 1, or -1 with err (what names the file). */
static int new_zero_file(const char *path, size_t bytes, size_t allocate, const char *what,
                         char *err, size_t err_size) {
  unlink(path);
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  int e = fd < 0 || ftruncate(fd, (off_t)bytes) < 0 ? errno
          : allocate                                ? posix_fallocate(fd, 0, (off_t)allocate)
                                                    : 0;
  if (fd >= 0) close(fd);
  if (!e) return 1;
  if (fd >= 0) unlink(path);
  const char *tmp = getenv("TMPDIR");
  if (e == ENOSPC)
    snprintf(err, err_size,
             "cannot prepare the %s %s: it needs %zu bytes, and TMPDIR's file system (%s) is "
             "full; make room there, or start the kernel with TMPDIR on another file system",
             what, path, allocate, tmp && *tmp ? tmp : "/tmp");
  else
    snprintf(err, err_size, "cannot prepare the %s %s (%zu bytes): %s", what, path, bytes,
             strerror(e));
  return -1;
}

int kn_prof_prepare(kn_prof_t *p, uint64_t n_words, char *err, size_t err_size) {
  size_t bytes = fl_sampler_buffer_bytes((size_t)n_words);
  struct stat st;
  if (stat(p->buffer_path, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == bytes)
    return 0;
  return new_zero_file(p->buffer_path, bytes, bytes, "sample buffer", err, err_size);
}

/* ---- turning the worker's records into stacks (fl_collect) ---- */

/* What the kernel's rule needs of one collection: room for a cell's name. */
typedef struct cell_rule {
  char cellname[32];
} cell_rule_t;

/* The kernel's rule for a frame of the worker: its own code is the
 * kernel's machinery, where the stack is cut (but for its allocator entry
 * points, fl_allocs_entry.c, which are the allocator as the cell sees it); a
 * cell's frames are the user's code, named by their plain names in module
 * "cell[N]", and its entry function is the cell's top-level statements,
 * the root's child. */
static fl_collect_verdict_t cell_rule(void *ctx, const fl_frame_info_t *f, fl_frame_t *fr) {
  cell_rule_t *r = ctx;
  int cell;
  kn_frame_kind_t kind = kn_frame_classify(f, &cell);
  if (kind == KN_FRAME_WORKER && !(fr->flags & FL_FRAME_ALLOC)) return FL_COLLECT_BASE;
  if (kind == KN_FRAME_WORKER) {
    fr->module = "cflame allocator";
    return FL_COLLECT_KEEP;
  }
  fr->func = kn_plain_name(fr->func);
  if (!cell) return FL_COLLECT_KEEP;
  snprintf(r->cellname, sizeof r->cellname, KN_CELL_FILE_FMT, cell);
  bool entry = kind == KN_FRAME_ENTRY;
  if (entry) fr->func = "top-level scope";
  /* Code the kernel generated around the cell's statements (the entry
   * function's own prologue, OpenMP's wait in it) is the cell's, at no
   * particular line. */
  if (kn_is_generated_file(f->file)) {
    fr->file = r->cellname;
    fr->line = 0;
  }
  fr->module = r->cellname;
  /* A cell's stub of malloc (malloc@plt) stays the allocator's. */
  fr->flags = FL_FRAME_CELL | FL_FRAME_REPL | (entry ? FL_FRAME_CELL_BODY : 0) |
              (f->inlined ? FL_FRAME_INLINED : 0) | (fr->flags & FL_FRAME_ALLOC);
  return entry ? FL_COLLECT_KEEP_BASE : FL_COLLECT_KEEP;
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

/* The symbolizer for pid's records (with maps_text when the process is
 * gone): a live worker's is p's, refreshed, so that its libraries' debug
 * information is read once per session; a dead one's is new (*owned set).
 * NULL with err. */
static fl_symbolizer_t *symbolizer_for(kn_prof_t *p, pid_t pid, const char *maps_text, bool *owned,
                                       char *err, size_t err_size) {
  *owned = maps_text != NULL;
  fl_symbolizer_t *sym;
  if (maps_text) {
    sym = fl_symbolizer_new_from_maps(maps_text, err, err_size);
  } else {
    if (p->sym && fl_symbolizer_refresh_from_pid(p->sym, pid, err, err_size) < 0)
      fl_symbolizer_destroy(&p->sym);
    if (!p->sym) p->sym = fl_symbolizer_new_from_pid(pid, err, err_size);
    sym = p->sym;
  }
  /* The session directory holds each cell's text as cell[N], for the
   * compiler's messages: frames name the cell, not that file. */
  if (sym) fl_symbolizer_name_files_as_written(sym, true);
  return sym;
}

/* A refresh after a restart drops what was read of the small modules the
 * new worker maps elsewhere (the large ones, libc's debug information
 * first, stay in the symbolizer's store, kept by build-id), and glibc
 * keeps freed pages in the heap: give them back, so that a long session's
 * footprint stays that of one worker's libraries. Not during a live read
 * (kn_prof_run_t.live): the run's own read at its end does it. */
static void trim_heap(bool live) {
  if (!live) malloc_trim(0);
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

/* How a collector reads a mapped buffer (map NULL: none could be mapped)
 * into prof, under the kernel's rule (opts), and notes its run (one of
 * kn_prof.h's run structs). 0, or -1 with err: then prof is dropped. */
typedef struct collector {
  const char *what; /* the buffer, in errors */
  fl_profile_kind_t kind;
  int (*read)(fl_profile_t *prof, fl_symbolizer_t *sym, const void *map, size_t bytes,
              const fl_collect_opts_t *opts, const void *run, char *err, size_t err_size);
} collector_t;

/* A cell's buffer at path, read by c: the buffer mapped, the process's
 * symbols (symbolizer_for), the cell's rule; after it the symbolizer and
 * the mapping go, and the heap is trimmed (trim_heap). NULL with err. */
static fl_profile_t *collect(kn_prof_t *p, const char *path, const collector_t *c, pid_t pid,
                             const char *maps_text, bool live, const void *run, char *err,
                             size_t err_size) {
  fl_profile_t *prof = NULL;
  void *map = MAP_FAILED;
  size_t bytes = 0;
  bool owned = false;
  fl_symbolizer_t *sym = NULL;
  if (map_buffer(path, c->what, &map, &bytes, err, err_size) < 0) goto done;
  if (!(sym = symbolizer_for(p, pid, maps_text, &owned, err, err_size))) goto done;
  prof = fl_profile_new(c->kind);
  cell_rule_t rule;
  fl_collect_opts_t opts = {.rule = cell_rule, .ctx = &rule, .main_tid = pid};
  if (c->read(prof, sym, map != MAP_FAILED ? map : NULL, bytes, &opts, run, err, err_size) < 0)
    fl_profile_destroy(&prof);
done:
  if (owned) fl_symbolizer_destroy(&sym);
  if (map != MAP_FAILED) munmap(map, bytes);
  trim_heap(live);
  return prof;
}

static int read_samples(fl_profile_t *prof, fl_symbolizer_t *sym, const void *map, size_t bytes,
                        const fl_collect_opts_t *opts, const void *arg, char *err,
                        size_t err_size) {
  (void)err, (void)err_size;
  const kn_prof_run_t *run = arg;
  char ignored[64];
  /* A buffer the worker left corrupt (a crash) gives what it holds
   * before the fault. */
  fl_collect_samples(prof, sym, map, bytes, opts, ignored, sizeof ignored);
  fl_profile_info_t *info = fl_profile_info(prof);
  info->interval_ns = run->interval_ns;
  note_run(info, run->dropped, run->cpu_seconds, run->wall_seconds, run->cell);
  return 0;
}

static const collector_t samples = {"sample buffer", FL_PROFILE_CPU, read_samples};

fl_profile_t *kn_prof_collect(kn_prof_t *p, pid_t pid, const char *maps_text,
                              const kn_prof_run_t *run, char *err, size_t err_size) {
  return collect(p, p->buffer_path, &samples, pid, maps_text, run->live, run, err, err_size);
}

const fl_profile_t *kn_prof_session(const kn_prof_t *p) {
  return p->session;
}

void kn_prof_session_take(kn_prof_t *p, const fl_profile_t *run, kn_profmode_t mode) {
  if (!may_change(p)) return;
  if (fl_kind(fl_profile_info_const(run)->kind)->allocs) return;
  switch (mode) {
    case KN_PROF_VIEW:
    case KN_PROF_DIFF:
      fl_profile_destroy(&p->session);
      p->session = fl_profile_copy(run);
      break;
    case KN_PROF_ACCUMULATE:
      /* A session that holds another kind of profile (an allocation profile
       * %profload read) starts again from this run. */
      if (!fl_kind_comparable(fl_profile_info_const(p->session)->kind,
                              fl_profile_info_const(run)->kind)) {
        fl_profile_destroy(&p->session);
        p->session = fl_profile_copy(run);
        break;
      }
      /* runs at another delay= are merged by time (fl_profile_merge) */
      fl_profile_merge(p->session, run);
      break;
    case KN_PROF_NONE:
    case KN_PROF_BASE: break;
  }
}

void kn_prof_session_replace(kn_prof_t *p, fl_profile_t *prof) {
  if (!may_change(p)) {
    fl_profile_destroy(&prof);
    return;
  }
  fl_profile_destroy(&p->session);
  p->session = prof;
}

void kn_prof_session_clear(kn_prof_t *p) {
  if (!may_change(p)) return;
  fl_profile_clear(p->session);
}

/* Replaces *slot with a copy of s, unless it is *slot already. */
static void keep_string(char **slot, const char *s) {
  if (s == *slot) return;
  free(*slot);
  *slot = s ? fl__xstrdup(s) : NULL;
}

static void keep_profile(fl_profile_t **slot, const fl_profile_t *prof) {
  if (prof == *slot) return;
  fl_profile_destroy(slot);
  *slot = prof ? fl_profile_copy(prof) : NULL;
}

void kn_prof_remember(kn_prof_t *p, const kn_prof_shown_t *shown) {
  if (!may_change(p)) return;
  keep_profile(&p->last_profile, shown->profile);
  keep_profile(&p->last_baseline, shown->baseline);
  keep_string(&p->last_baseline_name, shown->baseline ? shown->baseline_name : NULL);
  keep_string(&p->last_args, shown->args ? shown->args : "");
  keep_string(&p->last_root, shown->root);
  keep_string(&p->last_note, shown->note);
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
                           .note = p->last_note,
                           .bundle = p->last_bundle};
  return true;
}

int kn_prof_prepare_allocs(kn_prof_t *p, uint64_t n_words, char *err, size_t err_size) {
  size_t bytes = fl_allocs_buffer_bytes((size_t)n_words, (size_t)KN_ALLOCS_TABLE_SLOTS);
  return new_zero_file(p->allocs_path, bytes, 0, "allocation buffer", err, err_size);
}

static int read_allocs(fl_profile_t *prof, fl_symbolizer_t *sym, const void *map, size_t bytes,
                       const fl_collect_opts_t *opts, const void *arg, char *err, size_t err_size) {
  const kn_allocs_run_t *run = arg;
  fl_collect_allocs_opts_t aopts = {.live = fl_kind(run->kind)->live,
                                    .weight_count = !fl_kind(run->kind)->bytes};
  if (fl_collect_allocs(prof, sym, map, bytes, opts, &aopts, err, err_size) < 0) return -1;
  fl_profile_info_t *info = fl_profile_info(prof);
  info->sample_rate = run->sample_rate;
  info->calls = run->calls;
  note_run(info, run->dropped, run->cpu_seconds, run->wall_seconds, run->cell);
  return 0;
}

/* fl_collect_allocs sets the kind the records say. */
static const collector_t allocs = {"allocation buffer", FL_PROFILE_ALLOC_BYTES, read_allocs};

fl_profile_t *kn_prof_collect_allocs(kn_prof_t *p, pid_t pid, const kn_allocs_run_t *run, char *err,
                                     size_t err_size) {
  return collect(p, p->allocs_path, &allocs, pid, NULL, run->live, run, err, err_size);
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

/* "; each input's run: A.pb.gz lasted 12.001 s; B.pb.gz used 1.000 s CPU,
 * 2.000 s wall": what each merged input knows of its run. */
static void put_runs(fl__buf_t *sb, const fl_profile_t *prof) {
  fl__buf_puts(sb, "; each input's run:");
  for (size_t i = 0; i < fl_profile_n_runs(prof); i++) {
    const fl_profile_run_t *r = fl_profile_run(prof, i);
    fl__buf_printf(sb, "%s %s", i ? ";" : "", r->name);
    if (r->cpu_seconds > 0 && r->wall_seconds > 0)
      fl__buf_printf(sb, " used %.3f s CPU, %.3f s wall", r->cpu_seconds, r->wall_seconds);
    else if (r->cpu_seconds > 0)
      fl__buf_printf(sb, " used %.3f s CPU", r->cpu_seconds);
    else
      fl__buf_printf(sb, " lasted %.3f s", r->wall_seconds);
  }
}

/* What the flags a profile's cells were compiled with do to its stacks;
 * "" when the profile does not say (one read from a file), or when p's
 * session has said the same already (p NULL: always said). The two texts
 * are static strings, so the one said last is remembered by pointer. */
static const char *tail_call_note(kn_prof_t *p, const fl_profile_info_t *info) {
  if (!info->compiler[0]) return "";
  const char *note =
      kn_session_flags_keep_tail_calls(info->compiler)
          ? "; cells compiled with -fno-optimize-sibling-calls: a function that ends by "
            "calling another stays in the stacks"
          : "; cells compiled with -foptimize-sibling-calls: a function that ends by calling "
            "another is left out, and its callee shows under its caller";
  if (!p) return note;
  if (p->tail_note_said == note) return "";
  p->tail_note_said = note;
  return note;
}

char *kn_prof_summary(kn_prof_t *p, const fl_profile_t *prof) {
  const fl_profile_info_t *info = fl_profile_info_const(prof);
  fl__buf_t sb = FL__BUF_INIT;
  char interval[32];
  fl_interval_text(info->interval_ns, interval, sizeof interval);
  double represented = (double)info->total_weight * (double)info->interval_ns / 1e9;
  const fl_kind_info_t *kind = fl_kind(info->kind);
  if (kind->allocs) {
    char allocs[64], calls[64], sampled[64], size[32];
    fl_count_noun(info->calls, "allocation call", "allocation calls", calls, sizeof calls);
    fl_count_noun(info->samples, "sampled allocation", "sampled allocations", sampled,
                  sizeof sampled);
    double b = kind->bytes ? (double)info->total_weight : 0;
    if (b >= 1 << 20)
      snprintf(size, sizeof size, "%.1f MiB", b / (1 << 20));
    else if (b >= 1 << 10)
      snprintf(size, sizeof size, "%.1f KiB", b / (1 << 10));
    else
      snprintf(size, sizeof size, "%.0f B", b);
    fl_count_noun(info->total_allocs, "allocation", "allocations", allocs, sizeof allocs);
    fl__buf_printf(&sb, "%s%s", info->sample_rate < 1 ? "~" : "", allocs);
    if (kind->bytes) fl__buf_printf(&sb, " of %s%s", info->sample_rate < 1 ? "~" : "", size);
    if (kind->live) fl__buf_puts(&sb, " still allocated at the end (live=true)");
    if (info->sample_rate < 1)
      fl__buf_printf(&sb, ", estimated from %s (sample_rate=%g)", sampled, info->sample_rate);
    else
      fl__buf_puts(&sb, ", every one recorded (sample_rate=1)");
    if (info->calls) fl__buf_printf(&sb, "; the run made %s", calls);
    if (info->dropped) {
      char dropped[32];
      group_digits(dropped, sizeof dropped, info->dropped);
      fl__buf_printf(&sb,
                     "; the record buffer filled up and %s sampled allocations were lost "
                     "(lower sample_rate=, or raise n=)",
                     dropped);
    }
    fl__buf_puts(&sb, tail_call_note(p, info));
    return fl__buf_take(&sb);
  }
  if (info->kind == FL_PROFILE_EVENT) {
    /* Counted, not timed: each sample stands for its weight in events. */
    char events[96], stacks[64];
    fl_count_noun(info->total_weight, info->event, info->event, events, sizeof events);
    fl_count_noun(info->samples, "stack", "stacks", stacks, sizeof stacks);
    fl__buf_printf(&sb, "%s counted, from %s recorded", events, stacks);
    if (info->cpu_seconds > 0 && info->wall_seconds > 0)
      fl__buf_printf(&sb, "; the run used %.3f s CPU, %.3f s wall", info->cpu_seconds,
                     info->wall_seconds);
    fl__buf_puts(&sb, tail_call_note(p, info));
    return fl__buf_take(&sb);
  }
  /* A sample is one interval of CPU time: the unit of every count the
   * graphs and reports show. A stack the sampler recorded late stands for
   * the intervals it spanned, so there can be more samples than stacks. */
  char weight[64], stacks[64];
  fl_count_noun(info->total_weight, "sample", "samples", weight, sizeof weight);
  fl_count_noun(info->samples, "stack", "stacks", stacks, sizeof stacks);
  if (!info->interval_ns) {
    /* Read from a file that does not say how often it sampled. */
    fl__buf_printf(&sb, "%s in %s%s%s", weight, stacks, info->source[0] ? " from " : "",
                   info->source);
    return fl__buf_take(&sb);
  }
  bool wall = kind->measure == FL_PROFILE_WALL;
  fl_thread_weights_t *threads = NULL;
  size_t n_threads = wall ? fl_profile_thread_weights(prof, info->kind, &threads) : 0;
  /* Time runnable (waiting for a CPU) is said apart from waits in calls,
   * where there was any: a thread's three parts add up to its wall time. */
  uint64_t runnable = 0;
  for (size_t i = 0; i < n_threads; i++) runnable += threads[i].runnable;
  if (wall) {
    uint64_t on = 0, off = 0;
    for (size_t i = 0; i < n_threads; i++) on += threads[i].on, off += threads[i].off;
    double iv = (double)info->interval_ns / 1e9;
    fl__buf_printf(&sb,
                   "%s every %s of wall time represent%s %.3f s: %.3f s running (on-CPU), "
                   "%.3f s waiting (off-CPU)",
                   weight, interval, info->total_weight == 1 ? "s" : "", represented,
                   (double)on * iv, (double)(off - runnable) * iv);
    if (runnable)
      fl__buf_printf(&sb, ", %.3f s runnable (waiting for a CPU)", (double)runnable * iv);
  } else {
    fl__buf_printf(&sb, "%s every %s of CPU represent%s %.3f s of CPU", weight, interval,
                   info->total_weight == 1 ? "s" : "", represented);
  }
  fl__buf_printf(&sb, ", from %s recorded", stacks);
  char mixed[160];
  fl_mixed_intervals_note(info, mixed, sizeof mixed);
  if (mixed[0]) fl__buf_printf(&sb, " (%s)", mixed);
  if (info->cpu_seconds > 0 && !wall)
    fl__buf_printf(&sb, " (%.0f per CPU-second)", (double)info->samples / info->cpu_seconds);
  /* A profile read from a file may know only how long the run lasted
   * (pprof's duration): say what is known, never "0.000 s CPU". Inputs
   * merged ran side by side or one after another: each its own duration,
   * never their sum as if one run. */
  if (fl_profile_n_runs(prof) > 1)
    put_runs(&sb, prof);
  else if (info->cpu_seconds > 0 && info->wall_seconds > 0)
    fl__buf_printf(&sb, "; the run used %.3f s CPU, %.3f s wall", info->cpu_seconds,
                   info->wall_seconds);
  else if (info->cpu_seconds > 0)
    fl__buf_printf(&sb, "; the run used %.3f s CPU", info->cpu_seconds);
  else if (info->wall_seconds > 0)
    fl__buf_printf(&sb, "; the run lasted %.3f s", info->wall_seconds);
  /* Each thread's part: what a wall-clock profile is read for. */
  for (size_t i = 0; i < n_threads; i++) {
    const fl_thread_weights_t *t = &threads[i];
    const char *name = fl_profile_thread_name(prof, t->thread);
    double iv = (double)info->interval_ns / 1e9;
    fl__buf_printf(&sb, "%s thread %d%s%s%s: %.3f s running, %.3f s waiting", i ? ";" : "; by",
                   t->thread, name ? " (" : "", name ? name : "", name ? ")" : "",
                   (double)t->on * iv, (double)(t->off - t->runnable) * iv);
    if (runnable) fl__buf_printf(&sb, ", %.3f s runnable", (double)t->runnable * iv);
  }
  free(threads);
  if (info->dropped)
    fl__buf_printf(&sb,
                   "; the sample buffer filled up and sampling stopped early, so the graph "
                   "covers %.3f s of the run's CPU (raise n=, or %%profinit n=)",
                   represented);
  fl__buf_puts(&sb, tail_call_note(p, info));
  return fl__buf_take(&sb);
}
