/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_magics: the table of magics.
 *
 * Every magic is one entry here: its name, the forms it is written in, how
 * its cell and statement forms run code, its option groups, the handler of
 * its line form, its usage and its help. Dispatch (kn_run.c), %lsmagic,
 * %NAME? help, error messages that list the valid magics, and completion
 * (kn_complete.c) are all derived from this table, and from nowhere else.
 *
 * Forms: `%name args` (a line magic, among the first lines of a cell),
 * `%%name args` (a cell magic, on the first line, applying to the body), and
 * `%name [opts] STATEMENT` (a statement form: the last line of its cell,
 * running that statement as a cell magic would run a body). */
#ifndef KN_MAGICS_H
#define KN_MAGICS_H

#include <stdbool.h>
#include <stddef.h>

#include "kn_kernel.h"
#include "kn_magic.h"
#include "kn_prof.h"
#include "kn_profmagic.h"

enum {
  KN_FORM_LINE = 1 << 0, /* %name */
  KN_FORM_CELL = 1 << 1, /* %%name */
};

/* A line magic's handler when it runs in the kernel (no worker): as
 * kn_prof_line_fn, for magics about the kernel and the session. */
typedef int (*kn_kernel_line_fn)(kn_kernel_t *k, const char *args, kn_magic_result_t *res,
                                 char *err, size_t err_size);

typedef struct kn_magic_def {
  const char *name;
  unsigned forms; /* KN_FORM_* */
  /* How the cell form and the statement form run their code: under %%timeit,
   * or under the profiler with this mode; neither for the other magics. */
  bool timeit;
  kn_profmode_t profile;
  /* The kind of samples its profiled runs take unless options choose
   * another (FL_PROFILE_CPU unless written). */
  fl_profile_kind_t kind;
  /* Whether the line form, with these args, is a statement form. NULL:
   * never. */
  bool (*statement)(const char *args);
  /* The line form's handler when it is not a statement form: one of the
   * two, or neither for magics whose line form always takes a statement.
   * kernel_line runs on the main loop; prof_line, which may read or draw
   * a profile of any size, on a thread of its own (kn_job.h), touching
   * only the kn_prof_t it is given. */
  kn_kernel_line_fn kernel_line;
  kn_prof_line_fn prof_line;
  unsigned options; /* KN_OPTS_* groups of key=value options */
  const char *usage;
  const char *help; /* its first sentence is the %lsmagic summary */
} kn_magic_def_t;

/* The magic called name (without % signs), or NULL. */
const kn_magic_def_t *kn_magic_find(const char *name);
/* The i-th magic, in %lsmagic's order; NULL past the last. */
const kn_magic_def_t *kn_magic_at(size_t i);

/* Whether %name args (a line) is def's statement form. */
bool kn_magic_is_statement(const kn_magic_def_t *def, const char *args);
/* Runs the line form of def with args here, on the calling thread (an
 * execution runs prof_line through kn_job.h instead). 0, or -1 with err. */
int kn_magic_run_line(kn_kernel_t *k, const kn_magic_def_t *def, const char *args,
                      kn_magic_result_t *res, char *err, size_t err_size);

/* %name?: usage, help and the options' lines. New string, or NULL for an
 * unknown name. */
char *kn_magic_help(const char *name);
/* %lsmagic: every magic's usage and first sentence. New string. */
char *kn_magic_list(void);
/* "%cc, %cflags, ...": the magics written in the form (KN_FORM_LINE or
 * KN_FORM_CELL), for error messages. New string. */
char *kn_magic_names(unsigned form);

#endif
