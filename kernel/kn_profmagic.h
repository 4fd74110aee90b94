/* kn_profmagic: the profiling magics' options, their line forms, and
 * showing profiles.
 *
 * The magics themselves are declared in the magic table (kn_magics.c).
 * This module parses their key=value options into a kn_profreq_t that
 * travels with the execution (kn_run.c starts it, kn_profrun.c uses it
 * when the run ends), runs the line forms that need no worker (%profshow,
 * %profprint, %profclear, %profinit, %profsize, %profsave, %profload, and
 * %profbase and %profdiffview without a statement), and turns a profile
 * into a display_data bundle. */
#ifndef KN_PROFMAGIC_H
#define KN_PROFMAGIC_H

#include <jansson.h>
#include <stdbool.h>

#include "cflame/fl_diff.h"
#include "cflame/fl_options.h"
#include "cflame/fl_render.h"
#include "cflame/fl_tree.h"
#include "kn_magic.h"
#include "kn_prof.h"

/* Which option groups a magic takes: the drawing options of the flame
 * library's table (fl_options.h), and the kernel's own (bits 16 and up). */
enum {
  KN_OPTS_SAMPLING = 1 << 16,                           /* delay, n */
  KN_OPTS_PROFILER = KN_OPTS_SAMPLING | FL_OPTS_THREADS, /* delay, n, threads */
  KN_OPTS_TREE = FL_OPTS_TREE,   /* threads, C, combine, lines, recur, pruned, filter, minwidth */
  KN_OPTS_VIEW = FL_OPTS_VIEW,   /* width, height, title, icicle, theme */
  KN_OPTS_PRINT = FL_OPTS_PRINT | FL_OPTS_TEXT, /* format, maxdepth, mincount, cols */
  KN_OPTS_DIFF = FL_OPTS_DIFF,   /* negate, normalize, delta, noise, root_prefix */
  KN_OPTS_ALLOC = 1 << 17,       /* sample_rate, weight, live */
  KN_OPTS_KIND = 1 << 18,        /* allocs (baselines and diffs: which profiler) */
  KN_OPTS_LOAD = 1 << 19,        /* as, per_input, max_input_size (%profload) */
};

/* One line per option of the groups, as the magics' help shows them:
 * "  delay=X              sampling interval in seconds (default: 0.001)".
 * New string. */
char *kn_profmagic_options_help(unsigned groups);

/* The i-th option of the groups, in the order the help lists them; NULL
 * past the last. Borrowed (static). For completion. */
const kn_optspec_t *kn_profmagic_option(unsigned groups, size_t i);

typedef struct kn_profreq {
  kn_profmode_t mode;
  uint64_t delay_ns;
  uint64_t n_words;
  fl_options_t draw; /* the drawing options (tree, view, text, diff) */
  char *baseline;    /* %%profbase / %%profdiffview NAME */
  /* Allocation profiles: whether this is one, and how it is taken. */
  bool allocs, allocs_given;
  double sample_rate;
  bool weight_count, live;
  /* Which of the kernel's options were written (for defaults taken from a
   * baseline, and options that do not fit the kind of profile);
   * draw.given says which drawing options were. */
  bool delay_set, n_set, sample_rate_set, weight_set, live_set;
  size_t n_set_options; /* how many key=value options were written */
  char **positional; /* words that are not options (NULL-terminated) */
  char *args;        /* the option words as written (for %profsave) */
} kn_profreq_t;

/* Parses args of magic (for messages: "profview") taking the option groups
 * in `groups`, with defaults from the session's settings. Returns 0, or -1
 * with err naming what is valid. */
int kn_profreq_parse(const kn_prof_t *prof, const char *magic, const char *args, unsigned groups,
                     kn_profreq_t *req, char *err, size_t err_size);
void kn_profreq_free(kn_profreq_t *req);

/* Splits a line-magic's args into leading options and the statement that
 * follows ("width=600 f(3);" -> "width=600", "f(3);"). New strings. */
void kn_profreq_split_statement(const char *args, unsigned groups, char **opts, char **stmt);

/* Builds the flame graph of prof and its display_data content ({"data":
 * bundle, "metadata": {}}), remembering it for %profsave. root_name names
 * the root frame. Returns a new reference, or NULL with err. */
json_t *kn_prof_show(kn_prof_t *kp, const fl_profile_t *prof, const kn_profreq_t *req,
                     const char *root_name, char *err, size_t err_size);

/* The differential flame graph of target against baseline, as display_data
 * content; remembered for %profsave. NULL with err (e.g. CPU against
 * allocation profile). */
json_t *kn_prof_show_diff(kn_prof_t *kp, const fl_profile_t *target, const fl_profile_t *baseline,
                          const kn_profreq_t *req, const char *root_name, char *err,
                          size_t err_size);

/* Whether %profdiffview's args (NAME, options, then a statement) hold a
 * statement to profile. */
bool kn_profdiff_has_statement(const char *args);

/* The message for a run that took no sample. New string. */
char *kn_prof_empty_message(const fl_profile_t *prof);

/* ---- the line magics that need no worker ----
 *
 * Each takes the magic's args, and returns 0 with res filled (text to
 * print, a display to publish), or -1 with err naming what is valid. The
 * magic table (kn_magics.c) names them. */

typedef int (*kn_prof_line_fn)(kn_prof_t *kp, const char *args, kn_magic_result_t *res,
                               char *err, size_t err_size);

int kn_profmagic_show(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);
int kn_profmagic_print(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);
int kn_profmagic_clear(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);
int kn_profmagic_init(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);
int kn_profmagic_size(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);
int kn_profmagic_save(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);
int kn_profmagic_load(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);
/* %profbase alone: the list of baselines. */
int kn_profmagic_baselines(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);
/* %profdiffview NAME [opts] with no statement: the session profile (what
 * %%profile gathered or %profload read) against baseline NAME. */
int kn_profmagic_diff_session(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);

#endif
