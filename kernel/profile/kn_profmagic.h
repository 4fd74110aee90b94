/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_profmagic: the profiling magics' line forms, and showing profiles.
 *
 * The magics themselves are declared in the magic table (kn_magics.c),
 * their options parsed by kn_profreq.h. This module runs the line forms
 * that need no worker (%profshow,
 * %profprint, %profclear, %profinit, %profsize, %profsave, %profload, and
 * %profbase and %profdiffview without a statement), and turns a profile
 * into a display_data bundle. */
#ifndef KN_PROFMAGIC_H
#define KN_PROFMAGIC_H

#include <jansson.h>
#include <stdbool.h>

#include "cflame/fl_diff.h"
#include "cflame/fl_render.h"
#include "cflame/fl_tree.h"
#include "kn_magic.h"
#include "kn_prof.h"
#include "kn_profreq.h"

/* Builds the flame graph of prof and its display_data content ({"data":
 * bundle, "metadata": {}}), remembering it for %profsave. root_name names
 * the root frame. Returns a new reference, or NULL with err. */
json_t *kn_prof_show(kn_prof_t *kp, const fl_profile_t *prof, const kn_profreq_t *req,
                     const char *root_name, char *err, size_t err_size);

/* The graph of prof as kn_prof_show draws it, with note (the live graph's
 * "live: 12.0 s so far, ...") under its title instead of the run's
 * summary, and neither remembered nor changing kp: a graph of a cell that
 * still runs (kn_live.c), drawn off the loop while kp's owner is the
 * loop. cancel stops the drawing. New, or NULL with err. */
json_t *kn_prof_show_live(kn_prof_t *kp, const fl_profile_t *prof, const kn_profreq_t *req,
                          const char *root_name, const char *note, const fl_cancel_flag_t *cancel,
                          char *err, size_t err_size);

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
/* %profattach PID [duration=S] [opts]: a running program sampled by a
 * helper (kn_profattach.c), into the session profile, shown. */
int kn_profmagic_attach(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);
/* %profhistory: the profiled runs kept; %profhistory N [opts]: run N's
 * graph. */
int kn_profmagic_history(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);
/* %profbase alone: the list of baselines. */
int kn_profmagic_baselines(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);
/* %profdiffview NAME [opts] with no statement: the session profile (what
 * %%profile gathered or %profload read) against baseline NAME. */
int kn_profmagic_diff_session(kn_prof_t *, const char *, kn_magic_result_t *, char *, size_t);

#endif
