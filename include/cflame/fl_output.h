/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_output: one way from a profile to an output, for every front end.
 *
 * A table of output formats (flame/output/fl_output.c: name, file ending,
 * writer) and one function that draws a profile, or the diff of a profile
 * against a baseline, with the drawing options (fl_options.h) in a format:
 * the notebook's %profsave, the cflame command and `cflame record` all end
 * here. A new format is one writer and one row of the table. */
#ifndef FL_OUTPUT_H
#define FL_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "cflame/fl_api.h"
#include "cflame/fl_options.h"
#include "cflame/fl_profile.h"
#include "cflame/fl_render.h"

CFLAME_BEGIN_DECLS

/* What to draw. */
typedef struct fl_output_req {
  const fl_profile_t *profile;  /* the profile, or a diff's target */
  const fl_profile_t *baseline; /* NULL: not a diff */
  const char *root;             /* the root frame's name; NULL: "all" */
  const fl_options_t *opts;     /* the view's title and note included */
  const char *format;           /* a name of the table: "svg", "pprof", ... */
  const char *page_title;       /* html: the page's title; NULL: the view's */
  fl_source_reader_t source;    /* view=source: where files' texts come from; all
                                   zero: files on disk */
  fl_budget_t *budget;          /* charged as the trees are built and drawn, and
                                   cancels the drawing (borrowed); NULL: one of
                                   opts' max_memory (fl_options_budget) */
} fl_output_req_t;

/* A row of the table. */
typedef struct fl_output_format {
  const char *name;   /* "vegalite" */
  const char *ending; /* of its files: ".vl.json" */
  const char *help;   /* one short line */
} fl_output_format_t;

/* The i-th format of the table; NULL past the last. Static. */
const fl_output_format_t *fl_output_format_at(size_t i);
/* Whether format is a name of the table. */
bool fl_output_format_known(const char *format);
/* The table's names, for messages: "svg, html, vegalite, folded, text,
 * pprof" (and_last: "..., text or pprof"). Static. */
const char *fl_output_formats(bool and_last);
/* The table as the docs hold it (docs/CLI.md, checked by a test): "|
 * format | file ending | what it writes |", a row per format. New
 * string. */
char *fl_output_formats_markdown(void);
/* The table of views (fl_view_at) as the docs hold it (docs/USAGE.md for
 * the notebook, docs/CLI.md for the command, checked by a test): "| view |
 * what it shows | a diff |", a row per view, named as front writes it. New
 * string. */
char *fl_views_markdown(fl_front_t front);

/* When t (built with o's tree options) holds no sample of a profile that
 * has some, what left none, named as o's front end writes it and with
 * what it was matched against: "threads=1 leaves no sample: the
 * profile's threads are 2 (solver) with 412 samples, 3 with 245", "--filter
 * fft leaves no sample: none of the profile's 38 functions contains
 * \"fft\"". NULL when t has samples or the profile has none. Every
 * output of fl_output says it (the views' note, a text's first line); a
 * front end that draws a tree by itself says it too. New string. */
char *fl_output_empty_note(const fl_tree_t *t, const fl_options_t *o);

/* Of a profile of several kinds, the one drawn (kind, or FL_TREE_KIND_MAIN:
 * info.kind) and the others, each with the option that draws it as
 * front writes it: "CPU time (kind=cpu); also holds: allocated bytes
 * (kind=alloc_bytes)". NULL for a profile of one kind. Every output of
 * fl_output says it (the views' note, a text's first line), and so does
 * %profload. New string. */
char *fl_output_kinds_note(const fl_profile_t *p, int kind, fl_front_t front);

/* The output of r, *len bytes. Formats of every sample (folded, pprof)
 * take minwidth 0 unless the options give it; pprof takes every frame by
 * line unless lines is given (its readers merge lines into functions). A diff as folded stacks is
 * "stack BASE TARGET" lines, as difffolded.pl writes them, BASE scaled to
 * the target's total with normalize; a diff cannot be pprof. New buffer,
 * or NULL with err (a bad filter, profiles that cannot be compared). */
char *fl_output_render(const fl_output_req_t *r, size_t *len, char *err, size_t err_size);

/* The MIME bundle of r (fl_bundle, or fl_diff_bundle for a diff), what a
 * notebook displays; r->format is not read. New reference, or NULL with
 * err. */
json_t *fl_output_bundle(const fl_output_req_t *r, char *err, size_t err_size);

/* Renders r and writes it to path whole or not at all (fl_write_file: a
 * file of its own next to path, renamed over it; in_place as there).
 * *written (may be NULL): the bytes written. Returns 0, or -1 with err. */
int fl_output_write(const fl_output_req_t *r, const char *path, bool in_place, size_t *written,
                    char *err, size_t err_size);

CFLAME_END_DECLS

#endif
