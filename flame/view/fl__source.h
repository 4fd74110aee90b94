/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__source: the rows of the source view, built in fl__source.c and drawn
 * by fl_source.c for a profile and by fl_source_diff.c for a diff.
 *
 * A diff's lines. Each profile's weights per line are fl_lines's, of the
 * drawn tree and of the other. A line is known by its file and number,
 * with two additions, so that a notebook cell edited between two runs
 * compares line by line:
 *   - the file each profile ran (fl_profile_info.source, "cell[3]" and
 *     "cell[5]"), when both have lines in theirs, is one file at two
 *     versions, shown under the drawn profile's name;
 *   - when both versions of a file can be read and differ, the other's
 *     lines are moved to where they are in the drawn one: lines alike in
 *     both are aligned as a longest common subsequence (after the common
 *     start and end; a middle of more than ALIGN_MAX_CELLS pairs is not
 *     searched), and between two aligned lines the changed ones pair in
 *     order, as diff(1) shows a changed block. An old line with no place
 *     in the new text is a "removed" row, after its file's lines, with
 *     its old number and text.
 * Without both texts, lines pair by number. */
#ifndef FL__SOURCE_H
#define FL__SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fl__table.h"
#include "fl__view.h"

typedef enum { FL__SRC_FILE, FL__SRC_LINE, FL__SRC_GAP, FL__SRC_REMOVED } fl__src_kind_t;

typedef struct fl__src_row {
  fl__src_kind_t kind;
  const char *file;
  int line;         /* LINE: in the drawn file; REMOVED: in the other's version */
  const char *text; /* into the file's text, not terminated; NULL: none */
  size_t len;
  /* The drawn tree's weights; a FILE row's self is its lines' sum, its
   * total the largest line total. */
  uint64_t self, total;
  /* A diff's: the other tree's, raw (times fl_diff_factor in drawn units),
   * then the delta of self or total (the diff's delta kind) and its
   * change: "new" for a line with no weight in the other. */
  uint64_t base_self, base_total;
  double delta;
  fl_change_t change;
} fl__src_row_t;

typedef struct fl__source {
  const fl_tree_t *t; /* the drawn tree */
  const fl_diff_t *d; /* NULL: a profile's source */
  fl__src_row_t *rows;
  size_t n, cap;
  char **texts; /* the texts rows point into, owned */
  size_t n_texts, texts_cap;
  size_t n_files;       /* files with self weight (in either profile) */
  size_t files_shown;   /* FILE rows */
  size_t unreadable;    /* of the shown files */
  size_t outside;       /* files left unread for being under no source root */
  fl__buf_t outside_names; /* the first FL__SOURCE_NAMED of them, ", " between */
  size_t removed;       /* REMOVED rows */
  bool realigned;       /* a file's lines moved to its drawn version's */
  uint64_t total;       /* the drawn root's weight */
  uint64_t other_total; /* the other root's, raw */
  double max_delta;     /* the largest |delta| of a LINE or REMOVED row */
} fl__source_t;

/* How many files left out by the roots a note names. */
#define FL__SOURCE_NAMED 3

/* The rows of t's source, or of diff d's (t NULL; t is then d's drawn
 * tree), for the files of v->focus when set, texts from r (cells; NULL,
 * or r->read NULL: none) and from disk under the source roots (see
 * fl__source.c). Returns 0, or -1 with err when focus names no function
 * (err lists the nearest names). Free with fl__source_free either way. */
int fl__source_build(fl__source_t *s, const fl_tree_t *t, const fl_diff_t *d,
                     const fl_view_opts_t *v, const fl_source_reader_t *r, char *err,
                     size_t err_size);
void fl__source_free(fl__source_t *s);
/* Appends what s left unread for being under no source root, and the
 * option that allows it; nothing when it left nothing. */
void fl__source_outside_note(const fl__source_t *s, fl__buf_t *b);

/* The four drawings of a source table, made of one prepared state (a
 * profile's rows, fl_source.c; a diff's, fl_source_diff.c): each new, NULL
 * when it failed. */
typedef struct fl__source_drawings {
  json_t *(*vegalite)(void *state);
  char *(*svg)(void *state);
  char *(*text)(void *state);
} fl__source_drawings_t;
/* Draws what of state into out (its json or text; a bundle assembles the
 * three, as v says). Returns 0, or -1 when nothing was drawn. */
int fl__source_draw(const fl__source_drawings_t *dr, void *state, const fl_view_opts_t *v,
                    fl__drawing_t what, fl__drawn_t *out);
/* The drawing what of a diff's source (fl_source_diff.c), fl__view_source's
 * half for a diff; nothing drawn, with err, for a focus that names no
 * function. */
fl__drawn_t fl__source_diff_draw(const fl_diff_t *d, const fl_view_opts_t *v,
                                 const fl_source_reader_t *r, fl__drawing_t what, char *err,
                                 size_t err_size);

/* The table's width: v's, but room for 300 pixels of text after x_text. */
int fl__source_width(const fl_view_opts_t *v, int x_text);
/* A row's k in the Vega-Lite data: "file", "line", "gap", "removed". */
const char *fl__source_kind_name(fl__src_kind_t k);

/* The text of a source table's rows, whose field src is a line's text
 * without its leading spaces (k "line" or "removed", with text) or a
 * file's heading (k "file", its field heading): the transforms that make
 * src (a gap's is "⋮") and place a line's text at x_text plus its
 * indentation (tx). */
json_t *fl__source_src(void);
json_t *fl__source_indent(int x_text);
/* A source table's layers: rows_layer (its bars) with a text mark per
 * column and the layers that draw src (a file's heading in bold across
 * the table), over values with transform; then the headers. Steals
 * rows_layer, values and transform; new. */
json_t *fl__source_layers(const fl__table_t *tb, const fl__table_column_t *columns,
                          size_t n_columns, int width, int x_text, json_t *rows_layer,
                          json_t *values, json_t *transform, const fl__table_head_t *heads,
                          size_t n_heads);

/* In a source table's SVG, the row at mid that is no line: a file's
 * heading (heading, bold across the table) or a gap's "⋮" (at x_text).
 * Returns false, drawing nothing, for a line's row. */
bool fl__source_svg_aside(fl__buf_t *b, const fl__svg_table_t *l, const fl__src_row_t *row,
                          double mid, int x_text, const char *heading);
/* A line's text in a source table's SVG, at x_text, cut to chars
 * characters; nothing for a row without text. */
void fl__source_svg_text(fl__buf_t *b, const fl__svg_table_t *l, const fl__src_row_t *row,
                         double mid, int x_text, size_t chars);

/* A line's text with tabs as spaces (to the next multiple of 8), cleaned
 * for JSON and XML. New. */
char *fl__source_text(const char *text, size_t len);

#endif
