/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_options: every option of every front door, defined once.
 *
 * One table (flame/output/fl_options.c) holds each option of the tree, the view,
 * the text reports and the diffs, and those of sampling (delay, clock,
 * event, allocations), of reading files and of the command lines (--pid,
 * --diff, --fail-above, ...): its name, type, default, valid values, one
 * line of help, and the field of fl_options_t a drawing option's value
 * goes to. The defaults are written there and nowhere else:
 * fl_tree_opts_init, fl_view_opts_init, fl_text_opts_init and
 * fl_diff_opts_init read them, and the front ends that sample read the
 * sampling options' values and defaults (fl_option_default). From the
 * table come the notebook's key=value options, the cflame command's and
 * `cflame record`'s --long options, their help texts, completion of
 * option names and values, and the option tables of the docs
 * (fl_options_markdown).
 *
 * A front end (the notebook's magics, the cflame command) is a
 * fl_front_t: it decides how an option is written in messages and help
 * ("minwidth=2" or "--minwidth 2") and the few defaults that differ
 * (the command shows system libraries: C=true). */
#ifndef FL_OPTIONS_H
#define FL_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_api.h"
#include "cflame/fl_budget.h"
#include "cflame/fl_diff.h"
#include "cflame/fl_render.h"
#include "cflame/fl_tree.h"

CFLAME_BEGIN_DECLS

typedef enum fl_opt_type {
  FL_OPT_BOOL,   /* true|false; the command's --NAME / --no-NAME */
  FL_OPT_INT,    /* decimal integer, within [min, max] */
  FL_OPT_DOUBLE, /* decimal or scientific, within [min, max] */
  FL_OPT_STRING, /* any text */
  FL_OPT_ENUM,   /* one of choices (a '|'-separated list: "tree|flat") */
  FL_OPT_LIST,   /* comma-separated list of non-empty strings */
} fl_opt_type_t;

/* The groups of the table's options; a front end takes the groups it
 * draws with, samples with and reads with. Bits 24 and up are the front
 * ends' own, for options of theirs described by an fl_option_t of their
 * own (%%timeit's -n and -r). */
enum {
  FL_OPTS_THREADS = 1u << 0, /* threads (also for runs that draw nothing) */
  FL_OPTS_TREE = 1u << 1,    /* threads, C, combine, lines, demangle, recur, pruned, filter,
                                minwidth */
  FL_OPTS_VIEW = 1u << 2,    /* width, height, title, icicle, theme */
  FL_OPTS_PRINT = 1u << 3,   /* format=tree|flat (a report's shape) */
  FL_OPTS_TEXT = 1u << 4,    /* maxdepth, mincount, cols */
  FL_OPTS_DIFF = 1u << 5,    /* negate, normalize, delta, noise, root_prefix */
  FL_OPTS_OUTPUT = 1u << 6,  /* png (what a notebook's output carries) */
  FL_OPTS_BUDGET = 1u << 7,  /* max_memory: also in FL_OPTS_TREE, for what reads
                                profiles without drawing (%profload) */
  /* What a run samples. These have no field in fl_options_t: the front
   * end that samples (the kernel, `cflame record`) reads their values. */
  FL_OPTS_SAMPLING = 1u << 8, /* delay, n (the notebook's sampler; %profinit keeps them) */
  FL_OPTS_CLOCK = 1u << 9,    /* clock, event: what a sample counts */
  FL_OPTS_ALLOC = 1u << 10,   /* sample_rate, weight, live: an allocation profile's */
  FL_OPTS_KIND = 1u << 11,    /* allocs: allocations or CPU time */
  FL_OPTS_EVERY = 1u << 12,   /* every: a live graph while a cell runs */
  FL_OPTS_ATTACH = 1u << 13,  /* duration, follow_forks: how long an attach samples, and
                                whether it follows the children forked meanwhile */
  FL_OPTS_LOAD = 1u << 14,    /* as, per_input, max_input_size: reading files (%profload) */
  /* The options of the command line beyond the drawing ones, whatever
   * group above they are in as well: `cflame record`'s (delay, clock,
   * event, allocs, ..., pid, buffer, top, diff) and the cflame command's
   * (per_input, max_input_size, diff, fail_above). */
  FL_OPTS_RECORD = 1u << 15,
  FL_OPTS_CLI_INPUT = 1u << 16, /* per_input, max_input_size */
  FL_OPTS_CLI_DIFF = 1u << 17,  /* diff, fail_above */
  FL_OPTS_CLI = FL_OPTS_CLI_INPUT | FL_OPTS_CLI_DIFF,
  /* What the cflame command (and `cflame record`) takes. */
  FL_OPTS_DRAWING = FL_OPTS_TREE | FL_OPTS_VIEW | FL_OPTS_TEXT | FL_OPTS_DIFF,
};

typedef enum fl_front {
  FL_FRONT_NOTEBOOK, /* key=value words; the library's defaults */
  FL_FRONT_COMMAND,  /* --key value (and --key=value), '_' written '-' */
} fl_front_t;

/* A parsed value. */
typedef struct fl_optval {
  const char *key; /* the option's name (borrowed) */
  bool set;
  bool b;
  long long i;
  double d;
  char *s;     /* STRING, ENUM: new */
  char **list; /* LIST: new, NULL-terminated */
  size_t n_list;
} fl_optval_t;

/* An option. The table's rows are these; a front end may describe options
 * of its own the same way (its groups then use bits 24 and up) and parse
 * their values with fl_option_parse: {"n", FL_OPT_INT, NULL, 1, 1000,
 * .help = "loops"}. */
typedef struct fl_option {
  const char *name;
  fl_opt_type_t type;
  const char *choices;           /* FL_OPT_ENUM */
  double min, max;               /* FL_OPT_INT, FL_OPT_DOUBLE; no range when min > max */
  const char *help;              /* one line */
  const char *def;               /* the default, written as a value ("0.001"); NULL: none */
  const char *def_command;       /* the command's default where it differs; NULL: def; "": none */
  const char *shown_def;         /* how help shows the default when def cannot say it
                                    ("sized to the depth"); NULL: def, or "none" */
  const char *shown_def_command; /* the command's, where it differs; NULL: shown_def */
  const char *metavar;           /* the command's placeholder ("SHARE"; an enum's instead of
                                    its choices, which its help then names); NULL: by type */
  /* For a number: what a valid value is, which a bad one's message says
   * instead of the range ("seconds from 0.00001 to 10, such as 0.001":
   * "--delay 0: expected seconds ..."). NULL: "is out of range (MIN..MAX)". */
  const char *expect;
  const char *alias; /* the command's other name for it ("watch" for top); NULL: none */
  unsigned groups;
  /* A check of a parsed value beyond its type (NULL: none): 0, or -1
   * with err as fl_option_parse's. */
  int (*check)(const fl_optval_t *v, const char *shown, char *err, size_t err_size);
} fl_option_t;

/* The i-th option of the table, in its order; NULL past the last.
 * Static. */
const fl_option_t *fl_option_at(size_t i);
/* The table's option called name ('-' and '_' alike), or by its alias, or
 * NULL. */
const fl_option_t *fl_option_find(const char *name);

/* Parses value for o into *v (o may be a front end's own). shown is the
 * option as the user wrote it, for the message ("width=abc", "--width
 * abc"). Returns 0, or -1 with err saying what was wrong and what is
 * valid: "width=abc is not an integer (100..100000)", "theme=x is not
 * valid; choose light or dark". */
int fl_option_parse(const fl_option_t *o, const char *value, const char *shown, fl_optval_t *v,
                    char *err, size_t err_size);
void fl_optval_free(fl_optval_t *v);

/* The default for front, as written; NULL when the option has none. */
const char *fl_option_default(const fl_option_t *o, fl_front_t front);
/* The option as front writes it with value: "minwidth=0.01", "--minwidth
 * 0.01", "--no-C" (value "false" of a bool). Into out. */
void fl_option_shown(const fl_option_t *o, fl_front_t front, const char *value, char *out,
                     size_t size);
/* The placeholder for o's value: "true|false", "off|flat", "N", "X",
 * "TEXT", "A,B", or the command's metavar. Static. */
const char *fl_option_placeholder(const fl_option_t *o, fl_front_t front);

/* Every drawing option's value, and the storage behind its pointers. */
typedef struct fl_options {
  fl_front_t front;
  fl_tree_opts_t tree;
  fl_view_opts_t view;
  fl_text_opts_t text;
  fl_diff_opts_t diff;
  bool flat;      /* format=flat: a report of functions, not the tree */
  uint64_t given; /* bit i: the table's i-th option was given */
  /* owned; what tree, view and diff point to */
  char **pruned;
  char **source_roots;
  char *filter;
  int *threads;
  char *title;
  char *focus;
  char *root_prefix;
} fl_options_t;

/* Every option at front's default. */
void fl_options_init(fl_options_t *o, fl_front_t front);
/* A budget (fl_budget.h) of o's max_memory, raised as front writes it:
 * "max_memory=SIZE" or "--max-memory SIZE". Reading a profile and drawing
 * it under these options charge it. */
void fl_options_budget(const fl_options_t *o, fl_budget_t *b);
/* Frees the storage and leaves o at the defaults. */
void fl_options_free(fl_options_t *o);
/* A deep copy of src into dst (not initialized). */
void fl_options_copy(fl_options_t *dst, const fl_options_t *src);

/* Sets the option called name from text as the user wrote it. Returns 0,
 * or -1 with err (without a prefix: "--width abc is not an integer
 * (100..100000)", "unknown option 'wdth'"). */
int fl_options_set(fl_options_t *o, const char *name, const char *value, char *err,
                   size_t err_size);
/* Parses value for opt (a row of the table) as o's front end writes it
 * (messages say "--delay 0: ..." or "delay=0: ..."). A drawing option is
 * stored in o and *v left empty; any other row's value (a sampling or
 * reading option, which no field of o holds) is left in *v for the front
 * end to read (fl_optval_free it). Either way o says it was given.
 * Returns 0, or -1 with err. */
int fl_options_take(fl_options_t *o, const fl_option_t *opt, const char *value, fl_optval_t *v,
                    char *err, size_t err_size);
/* Sets option opt (a row of the table) from a value fl_option_parse made. */
void fl_options_store(fl_options_t *o, const fl_option_t *opt, const fl_optval_t *v);
/* Whether the option called name was set (rather than left at its
 * default). */
bool fl_options_given(const fl_options_t *o, const char *name);

/* Help for the options of groups, one option a line (continued lines
 * indented), each with "(default: X)": for the notebook
 * "  minwidth=X            hide frames ... (default: 0.001)", for the
 * command "      --minwidth SHARE   hide frames ... (default: 0.001)",
 * wrapped at 80 columns. New string. */
char *fl_options_help(unsigned groups, fl_front_t front);
/* The options of groups as a Markdown table, as the docs hold it: for the
 * notebook "| option | meaning | default |", for the command "| option |
 * default | what it does |". New string. */
char *fl_options_markdown(unsigned groups, fl_front_t front);

CFLAME_END_DECLS

#endif
