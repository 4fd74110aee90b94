/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_magic: magic lines at the start of a cell.
 *
 * A line magic is a line starting with '%' at the start of a cell (several
 * may follow each other); a cell magic is a first line starting with '%%'
 * and applies to the rest of the cell. Leading blank lines before the first
 * magic are allowed. Everything after the last magic line is the body.
 *
 * Options are words: `key=value` (value may be double-quoted with \" and \\
 * escapes; lists are comma-separated), bare words (positional arguments),
 * and IPython-style flags (`-n 10`) for %%timeit. */
#ifndef KN_MAGIC_H
#define KN_MAGIC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cflame/fl_options.h"

typedef struct kn_magic {
  char *name;   /* without the % or %%: "profview" */
  bool is_cell; /* written with %% */
  char *args;   /* rest of the line after the name, trimmed; "" if none */
  int line;     /* 1-based line in the cell */
} kn_magic_t;

typedef struct kn_cell_magics {
  kn_magic_t *lines; /* line magics, in order; owned */
  size_t n_lines;
  kn_magic_t *cell; /* the cell magic or NULL; owned */
  char *body;       /* the code after the magic lines (owned; may be "") */
  int body_line;    /* 1-based line of body's first line within the cell */
} kn_cell_magics_t;

/* What a line magic that needs no worker gives back: text to print and a
 * display_data content to publish (each new, or NULL). */
typedef struct kn_magic_result {
  char *output;
  json_t *display;
} kn_magic_result_t;

/* Splits the magic lines off code. A '%%' line after the first line, or a
 * second '%%' magic, is an error (returns -1 with err). Returns 0. */
int kn_magic_split(const char *code, kn_cell_magics_t *out, char *err, size_t err_size);
void kn_cell_magics_free(kn_cell_magics_t *m);

/* ---- option words ---- */

/* An option of a magic: the flame library's description of an option
 * (name, type, choices, range, help; fl_options.h), so that the drawing
 * options of its table and the kernel's own are parsed alike. */
typedef fl_option_t kn_optspec_t;
typedef fl_optval_t kn_optval_t;

typedef struct kn_opts {
  kn_optval_t *vals; /* one per spec entry, same order; owned */
  size_t n_vals;
  char **positional; /* bare words, in order; owned, NULL-terminated */
  size_t n_positional;
} kn_opts_t;

/* Splits args into words (honouring double quotes), and checks each
 * key=value word against spec (an array of n_spec entries). An unknown key,
 * a repeated key or a bad value is an error whose message names the magic,
 * the offending word and what is valid, e.g.
 *   "%profview: unknown option 'wdth'; valid options: width, height, ..."
 *   "%profview: width=abc is not an integer (1..100000)"
 *   "%profview: width=0 is out of range (1..100000)"
 *   "%profprint: format=json is not valid; choose tree or flat".
 * magic is the name as in kn_magic_t ("profview") or with its % signs
 * ("%%timeit"); messages start with it, given one '%' if it has none.
 * A word `-k VALUE` (or `-kVALUE` for a one-letter key) is the flag form of
 * key k, as %%timeit's `-n 10`; `-k` alone sets a BOOL key to true. A word
 * is key=value only when the key is made of letters, digits and '_'.
 * Bare words (and "-5") go to positional. Returns 0, or -1 with err and
 * *out empty. */
int kn_opts_parse(const char *magic, const char *args, const kn_optspec_t *spec, size_t n_spec,
                  kn_opts_t *out, char *err, size_t err_size);

/* The value for key, or NULL if key is not in the spec. Borrowed. */
const kn_optval_t *kn_opts_get(const kn_opts_t *opts, const char *key);

void kn_opts_free(kn_opts_t *opts);

/* Splits args into words the same way (double quotes group, backslash escapes
 * inside quotes). *words is new and NULL-terminated (kn_words_free it).
 * Returns the count, or -1 with err on an unterminated quote. */
int kn_words_split(const char *args, char ***words, char *err, size_t err_size);
void kn_words_free(char **words);

#endif
