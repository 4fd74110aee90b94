/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_prof: the kernel's side of profiling.
 *
 * Holds the session profile (what %%profile accumulates and %profshow
 * shows), the profiler settings (%profinit: interval and buffer size;
 * %profsize: default width and height), the file the worker's sampler writes
 * into, and the last flame graph shown (for %profsave).
 *
 * kn_prof_collect turns the worker's sample buffer into a profile: every
 * address is symbolized (functions, cell lines, inlined frames), the
 * kernel's own machinery (the worker's loop, the generated entry function,
 * thread trampolines) is cut off so the cell's code hangs under the root,
 * cell symbols get their plain names ("cflame_c3_f" -> "f", module
 * "cell[3]"), and frames are classed as cell code, system library or
 * allocator. */
#ifndef KN_PROF_H
#define KN_PROF_H

#include <jansson.h>

#include "cflame/fl_render.h"
#include "kn_history.h"
#include "kn_profhist.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cflame/fl_allocs.h"
#include "cflame/fl_budget.h"
#include "cflame/fl_profile.h"
#include "cflame/fl_render.h"
#include "cflame/fl_symbol.h"
#include "cflame/fl_tree.h"

/* How a profiled run is used, whatever kind of samples it takes (the
 * request's fl_profile_kind_t: CPU time, allocations, ...). */
typedef enum kn_profmode {
  KN_PROF_NONE,
  KN_PROF_VIEW,       /* %%profview: replace the session profile and show it */
  KN_PROF_ACCUMULATE, /* %%profile: add to the session profile */
  KN_PROF_BASE,       /* %%profbase NAME: keep the profile as a baseline */
  KN_PROF_DIFF,       /* %%profdiffview NAME: show the diff against a baseline */
} kn_profmode_t;

typedef struct kn_prof kn_prof_t;

/* What every profiled run starts from, unless its options say otherwise. */
typedef struct kn_prof_settings {
  uint64_t delay_ns; /* %profinit delay= */
  uint64_t n_words;  /* %profinit n= (buffer size in 8-byte words) */
  int width, height; /* %profsize; height 0: sized to the depth */
} kn_prof_settings_t;

/* The last graph shown, which %profsave writes: its profile (and baseline,
 * for a diff), the options it was drawn with, its root's name, the line
 * under its title, its bundle. All borrowed. */
typedef struct kn_prof_shown {
  const fl_profile_t *profile;
  const fl_profile_t *baseline; /* NULL unless a diff */
  const char *baseline_name;    /* NULL unless a diff */
  const char *args;
  const char *root;
  const char *note;
  json_t *bundle;
} kn_prof_shown_t;

kn_prof_t *kn_prof_new(const char *session_dir);
void kn_prof_destroy(kn_prof_t **p);

/* Where view=source reads files: a cell ("cell[N]") from the session's
 * inputs h (which must outlive p), any other file from disk. */
void kn_prof_set_cells(kn_prof_t *p, const kn_history_t *h);
const fl_source_reader_t *kn_prof_source_reader(const kn_prof_t *p);

/* The job that owns p while it runs (kn_job.h; all NULL after): cancel is
 * the flag that stops what reads or draws p's profiles, which handlers
 * hand to the library's budgets; claim(ctx) settles the job before p
 * changes. Every function below that changes p (settings, the session
 * profile, baselines, the last graph shown) claims first, and changes
 * nothing when the job was cancelled: a cancelled job leaves p as it was.
 * Without an owner, changes are made. */
void kn_prof_set_owner(kn_prof_t *p, const fl_cancel_flag_t *cancel, bool (*claim)(void *ctx),
                       void *ctx);
/* The flag an interrupt sets once the owner has claimed p, when it can no
 * longer cancel the job (kn_job_interrupt), or NULL. */
void kn_prof_set_interrupt(kn_prof_t *p, const fl_cancel_flag_t *interrupt);
/* Claims p for its owner before any change, for work whose end must stand
 * however it ends (%profattach: an interrupt ends the sampling and keeps
 * what was taken). Returns false when the job was cancelled first. */
bool kn_prof_claim(kn_prof_t *p);
/* Whether an interrupt came after the claim. */
bool kn_prof_interrupted(const kn_prof_t *p);
/* The owner's cancel flag, or NULL. */
const fl_cancel_flag_t *kn_prof_cancel_flag(const kn_prof_t *p);
/* Whether the owner's cancel flag is set. */
bool kn_prof_cancelled(const kn_prof_t *p);

/* Points the sample file at a (new) session directory. */
void kn_prof_set_dir(kn_prof_t *p, const char *session_dir);
/* The files the worker's sampler and allocation recorder write into. */
const char *kn_prof_buffer_path(const kn_prof_t *p);
const char *kn_prof_allocs_path(const kn_prof_t *p);

kn_prof_settings_t kn_prof_settings(const kn_prof_t *p);
void kn_prof_set_sampling(kn_prof_t *p, uint64_t n_words, uint64_t delay_ns);
void kn_prof_set_size(kn_prof_t *p, int width, int height);

/* Makes the sample file for a run with n_words of buffer: the one there
 * when it has that size (it holds the last run's records, which the
 * worker clears), else a new one, all zeros without a page written.
 * Returns 1 for a new file, 0 for the one there, or -1 with err. */
int kn_prof_prepare(kn_prof_t *p, uint64_t n_words, char *err, size_t err_size);

typedef struct kn_prof_run {
  uint64_t interval_ns;
  uint64_t samples;   /* records in the buffer */
  uint64_t dropped;   /* samples lost: buffer full */
  double cpu_seconds; /* the worker's CPU time during the cell */
  double wall_seconds;
  char source[32]; /* timer source the sampler used */
  int cell;
  /* A read while the run goes on (a live graph, off the loop): the heap is
   * left as it is, as trimming it takes every arena's lock, the loop's
   * thread's too; the run's own read at its end trims it. */
  bool live;
} kn_prof_run_t;

/* Reads the sample file after a run of cell (by worker pid, which must still
 * be alive, or with maps_text from a crash report when it is not) and
 * returns a new CPU profile; *run describes the run. NULL with err. */
fl_profile_t *kn_prof_collect(kn_prof_t *p, pid_t pid, const char *maps_text,
                              const kn_prof_run_t *run, char *err, size_t err_size);

/* An allocation-profiled run (%%profallocs): what the worker reported. */
typedef struct kn_allocs_run {
  double sample_rate;
  fl_profile_kind_t kind; /* an allocation kind: bytes or counts, live or not */
  uint64_t records, dropped, calls, frees;
  double cpu_seconds, wall_seconds;
  int cell;
  bool live; /* as kn_prof_run_t's */
} kn_allocs_run_t;

#define KN_ALLOCS_DEFAULT_WORDS (16ull << 20) /* 128 MiB of records, sparse */
/* Allocations alive at once that a %%profallocs run has room for: the
 * worker's table of sampled blocks is sized from them and the sample rate
 * (fl_allocs_table_slots: 2^20 slots at sample_rate 1, 2^14 at 0.01). The
 * buffer file is sized for the largest table, KN_ALLOCS_TABLE_SLOTS; a
 * smaller one leaves the rest to records. */
#define KN_ALLOCS_LIVE_BLOCKS (1ull << 19)
#define KN_ALLOCS_TABLE_SLOTS (1ull << 20)
#define KN_ALLOCS_RUN_TABLE_SLOTS(sample_rate) \
  fl_allocs_table_slots(KN_ALLOCS_LIVE_BLOCKS, (sample_rate))

/* Makes a new allocation records' file for n_words of records, all zeros
 * without a page written (the table of a run's blocks must start empty).
 * Returns 1 (a new file) or -1 with err. */
int kn_prof_prepare_allocs(kn_prof_t *p, uint64_t n_words, char *err, size_t err_size);

/* Reads the allocation records after a run (the worker pid must be alive)
 * into a new allocation profile: each record's stack under the cell, with
 * the allocation function (malloc, calloc, realloc, memalign) as its leaf
 * frame, weighed by bytes (or by count), both scaled by 1 / sample_rate;
 * for a live kind only records not freed by the end. NULL with err. */
fl_profile_t *kn_prof_collect_allocs(kn_prof_t *p, pid_t pid, const kn_allocs_run_t *run, char *err,
                                     size_t err_size);

/* ---- the session profile: what %%profile gathers and %profshow shows ---- */

/* Borrowed; never NULL (empty until a run or %profload fills it). */
const fl_profile_t *kn_prof_session(const kn_prof_t *p);
/* Takes a finished run into the session profile, by how it ran (mode) and
 * what it sampled (its kind): %%profview and %%profdiffview make the
 * session that run alone (a copy); %%profile adds its samples, dropped
 * count, CPU and wall time once, and the session takes its interval (a
 * session of a kind the run cannot be merged with, fl_kind_comparable,
 * becomes that run alone); baselines leave the session as it is, and so do
 * allocation profiles, which never mix with the time the session gathers.
 * The only place the session profile takes in a run. */
void kn_prof_session_take(kn_prof_t *p, const fl_profile_t *run, kn_profmode_t mode);
/* Replaces the session profile with prof (stolen): %profload. */
void kn_prof_session_replace(kn_prof_t *p, fl_profile_t *prof);
void kn_prof_session_clear(kn_prof_t *p);

/* ---- the last graph shown, for %profsave ---- */

/* Remembers a shown graph. The profiles are copied, unless they are the
 * ones remembered already (%profsave redrawing the last graph); the bundle
 * gains a reference. */
void kn_prof_remember(kn_prof_t *p, const kn_prof_shown_t *shown);
/* The last graph shown into *out; false when none was. */
bool kn_prof_last_shown(const kn_prof_t *p, kn_prof_shown_t *out);

/* Keeps prof (a copy is taken) as baseline name, replacing one of that
 * name. */
void kn_prof_set_baseline(kn_prof_t *p, const char *name, const fl_profile_t *prof);
/* The baseline called name, or NULL. Borrowed. */
const fl_profile_t *kn_prof_baseline(const kn_prof_t *p, const char *name);
/* The profiled runs of the session (kn_profhist.h). */
kn_profhist_t *kn_prof_history(kn_prof_t *p);
/* What %%profdiffview NAME compares with: baseline NAME, or for
 * KN_PROFHIST_PREV the last run kept of the cell with cell_key; NULL when
 * there is none. Borrowed. */
const fl_profile_t *kn_prof_diff_base(const kn_prof_t *p, const char *name, const char *cell_key);
/* "a, b, c" (new string), or "none yet" when there are none. */
char *kn_prof_baseline_names(const kn_prof_t *p);
/* The %profbase listing. New string. */
char *kn_prof_baseline_list(const kn_prof_t *p);

/* "1,234 samples every 1 ms of CPU represent 1.234 s of CPU, from 1,180
 * stacks recorded (952 per CPU-second); the run used 1.240 s CPU, 1.250 s
 * wall". A sample is one interval of CPU: the unit of every count the
 * graphs and reports show. What the cells' compile flags do to the stacks
 * (tail calls kept or left out) is added the first time p's session shows
 * it, and when %cflags changes it; p NULL adds it always. New string. */
char *kn_prof_summary(kn_prof_t *p, const fl_profile_t *prof);

#endif
