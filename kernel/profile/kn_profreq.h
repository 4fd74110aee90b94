/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_profreq: the profiling magics' options, and what a profiling magic
 * asks for (kn_profreq_t).
 *
 * Every option is a row of the flame library's table (fl_options.h), the
 * drawing options and the sampling, allocation and reading ones alike, as
 * `cflame record` and the cflame command take them. A magic takes the
 * groups its entry of the magic table names. kn_profreq_t travels with the execution (kn_run.c
 * starts it, kn_profrun.c uses it when the run ends). */
#ifndef KN_PROFREQ_H
#define KN_PROFREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_options.h"
#include "kn_magic.h"
#include "kn_prof.h"

/* Which option groups a magic takes: rows of the flame library's table
 * (fl_options.h), named for the magics. */
enum {
  KN_OPTS_SAMPLING = FL_OPTS_SAMPLING, /* delay, n */
  KN_OPTS_CLOCK = FL_OPTS_CLOCK,       /* clock, event (what a run samples, not a session
                                          setting) */
  KN_OPTS_PROFILER = KN_OPTS_SAMPLING | KN_OPTS_CLOCK | FL_OPTS_THREADS, /* delay, n, clock,
                                                                            event, threads */
  KN_OPTS_TREE = FL_OPTS_TREE, /* threads, C, combine, lines, recur, pruned, filter, minwidth */
  KN_OPTS_VIEW = FL_OPTS_VIEW, /* width, height, title, icicle, theme */
  KN_OPTS_PRINT = FL_OPTS_PRINT | FL_OPTS_TEXT, /* format, maxdepth, mincount, cols */
  KN_OPTS_DIFF = FL_OPTS_DIFF,                  /* negate, normalize, delta, noise, root_prefix */
  KN_OPTS_OUTPUT = FL_OPTS_OUTPUT,              /* png (magics that show a graph) */
  KN_OPTS_ALLOC = FL_OPTS_ALLOC,                /* sample_rate, weight, live */
  KN_OPTS_KIND = FL_OPTS_KIND,                  /* allocs (baselines and diffs: which profiler) */
  KN_OPTS_LOAD = FL_OPTS_LOAD | FL_OPTS_BUDGET, /* as, per_input, max_input_size, max_memory
                                                   (%profload) */
  KN_OPTS_EVERY = FL_OPTS_EVERY, /* every (magics that show the cell's graph while it runs:
                                    kn_live.h) */
  KN_OPTS_ATTACH = FL_OPTS_ATTACH, /* duration, follow_forks (%profattach) */
};

/* every=SECONDS: 0 (off) or at least this long between live graphs. */
#define KN_LIVE_MIN_EVERY 0.2

/* One line per option of the groups, as the magics' help shows them:
 * "  delay=X              sampling interval in seconds (default: 0.001)".
 * New string. */
char *kn_profreq_options_help(unsigned groups);

/* The i-th option of the groups, in the order the help lists them; NULL
 * past the last. Borrowed (static). For completion. */
const kn_optspec_t *kn_profreq_option(unsigned groups, size_t i);

typedef struct kn_profreq {
  kn_profmode_t mode;
  uint64_t delay_ns;
  uint64_t n_words;
  fl_options_t draw; /* the drawing options (tree, view, text, diff) */
  char *baseline;    /* %%profbase / %%profdiffview NAME */
  /* %%profdiffview prev: which run the baseline is, for the note under the
   * title ("compared with run 3, cell[7]: ..."); NULL: said by name. */
  char *baseline_note;
  /* What the run samples (fl_kind), whatever the run does with its profile
   * (mode): it picks the collector the worker runs (kn_profrun.c). The
   * parser leaves the kind the options name; kn_profreq_kind settles it. */
  fl_profile_kind_t kind;
  double sample_rate; /* allocation kinds: the share of allocations recorded */
  uint64_t every_ns;  /* every=: a live graph this often while the cell runs; 0: none */
  double duration_s;  /* %profattach: how long it samples the program */
  bool follow_forks;  /* %profattach: and the processes it forks meanwhile */
  /* Which of the kernel's options were written (for defaults taken from a
   * baseline, and options that do not fit the kind of profile);
   * draw.given says which drawing options were. */
  bool delay_set, n_set, sample_rate_set, weight_set, live_set, kind_set;
  size_t n_set_options; /* how many key=value options were written */
  char **positional;    /* words that are not options (NULL-terminated) */
  char *args;           /* the option words as written (for %profsave) */
  char event[64];       /* FL_PROFILE_EVENT: the event's name (fl_events.h) */
} kn_profreq_t;

/* Parses args of magic (for messages: "profview") taking the option groups
 * in `groups`, with defaults from the session's settings. Returns 0, or -1
 * with err naming what is valid and req holding nothing (kn_profreq_free
 * is still safe). */
int kn_profreq_parse(const kn_prof_t *prof, const char *magic, const char *args, unsigned groups,
                     kn_profreq_t *req, char *err, size_t err_size);
void kn_profreq_free(kn_profreq_t *req);

/* The kind req samples when dflt is the one its magic (or a diff's
 * baseline) takes: allocs= chooses between CPU time and allocations;
 * sample_rate=, weight= and live= choose an allocation kind, and what of
 * weight= and live= is not written comes from dflt. */
fl_profile_kind_t kn_profreq_kind(const kn_profreq_t *req, fl_profile_kind_t dflt);
/* The option words that choose kind rather than other, for messages:
 * "allocs=true" for an allocation profile, "clock=wall" for a wall-clock
 * one, "allocs=false" for a CPU one ("clock=cpu" against another profile
 * of time). Static. */
const char *kn_profreq_kind_words(fl_profile_kind_t kind, fl_profile_kind_t other);

/* Parses args of magic against the options of groups alone (kn_opts_parse
 * with those specs), for a line magic that reads its options itself.
 * Returns 0, or -1 with err. */
int kn_profreq_words(const char *magic, const char *args, unsigned groups, kn_opts_t *o, char *err,
                     size_t err_size);

/* Splits a line-magic's args into leading options and the statement that
 * follows ("width=600 f(3);" -> "width=600", "f(3);"). New strings. */
void kn_profreq_split_statement(const char *args, unsigned groups, char **opts, char **stmt);

#endif
