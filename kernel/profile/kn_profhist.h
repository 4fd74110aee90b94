/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_profhist: every profiled run of the session's cells, kept for
 * %%profdiffview prev and %profhistory.
 *
 * A run is kept with its cell's key (kn_profhist_key: the front end's cell
 * id, or the cell's code without its magic line), so that "the previous
 * run of this cell" is found even after the cell was edited: by its id
 * where the front end sends one, else by its code, the same or, after an
 * edit, the most alike (kn_profhist_prev). Runs are numbered from 1 in the
 * order they were kept; the oldest go first once the runs' estimated
 * memory passes the budget. */
#ifndef KN_PROFHIST_H
#define KN_PROFHIST_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "cflame/fl_profile.h"

/* The name %%profdiffview gives the previous run of its cell. */
#define KN_PROFHIST_PREV "prev"
/* The memory the kept runs may use, estimated from their sizes. */
#define KN_PROFHIST_BUDGET_BYTES (64u << 20)

typedef struct kn_profhist kn_profhist_t;

kn_profhist_t *kn_profhist_new(size_t budget_bytes);
void kn_profhist_destroy(kn_profhist_t **h);

/* The key of the cell an execute_request runs: "id:" and the cell id its
 * metadata carries (JupyterLab, Notebook 7 and VS Code send one), else
 * "code:" and its code after the first line (the magic line), which
 * kn_profhist_prev compares with earlier runs' code. New. */
char *kn_profhist_key(const json_t *request_metadata, const char *code);

/* Keeps a copy of run, a profile of cell number cell (its execution count)
 * whose key is key; drops the oldest runs over the budget (never the one
 * just kept). */
void kn_profhist_add(kn_profhist_t *h, const fl_profile_t *run, const char *key, int cell);

/* How much alike two cells' code must be (kn_profhist_prev) for one to
 * be taken for an edit of the other: the share of their character pairs
 * they have in common (Dice's coefficient of their bigrams). */
#define KN_PROFHIST_ALIKE 0.5

/* Which run kn_profhist_prev found. */
typedef struct kn_profhist_found {
  int number; /* the run's (%profhistory N) */
  int cell;   /* its cell's execution count */
  bool alike; /* found by its code's likeness, not its key */
} kn_profhist_found_t;

/* The previous run of the cell with key: the last run kept with the same
 * key; for a cell known by its code (no cell id), else the last of the
 * runs whose code is the most alike, when at least KN_PROFHIST_ALIKE. NULL
 * when there is none, with why (when why_size) saying why; found (may be
 * NULL) says which run. Borrowed. */
const fl_profile_t *kn_profhist_prev(const kn_profhist_t *h, const char *key,
                                     kn_profhist_found_t *found, char *why, size_t why_size);

/* Run number n, or NULL when it is not kept. */
const fl_profile_t *kn_profhist_run(const kn_profhist_t *h, int n);

/* What is kept, a line each, with the command that shows each run. New. */
char *kn_profhist_list(const kn_profhist_t *h);

#endif
