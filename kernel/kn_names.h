/* kn_names: the names the kernel gives a cell's code, and the one reader of
 * them.
 *
 * Cell N compiles to cell_N.so in the session directory. Its top-level
 * statements run in the entry function cflame_run_N. The user's lines are
 * in file "cell[N]" (#line directives); the code the kernel wraps around
 * them is in file "<cflame cell N>". Each definition gets the assembler name
 * cflame_cN_NAME, so that redefining NAME in a later cell does not clash
 * with the earlier one; messages, tracebacks and graphs show it as NAME.
 * The process that runs cells is the executable cflame-worker.
 *
 * Everything that writes these names (kn_session.c) and everything that
 * reads them back (crash tracebacks, profile stacks, compiler messages)
 * goes through this header, so a name changes in one place. */
#ifndef KN_NAMES_H
#define KN_NAMES_H

#include <stdbool.h>

#include "cflame/fl_symbol.h"

/* Every identifier the kernel writes into a cell's unit (the names below,
 * the prelude's macros, the entry's locals) starts with this. */
#define KN_GENERATED_PREFIX "cflame_"
#define KN_ENTRY_PREFIX KN_GENERATED_PREFIX "run_" /* + N: a cell's entry function */
#define KN_ENTRY_FMT KN_ENTRY_PREFIX "%d"
#define KN_SYMBOL_PREFIX KN_GENERATED_PREFIX "c" /* + N + "_" + NAME: a cell's definition */
#define KN_CELL_FILE_FMT "cell[%d]" /* the user's lines of cell N */
#define KN_GEN_FILE_PREFIX "<cflame cell"
#define KN_GEN_FILE_FMT KN_GEN_FILE_PREFIX " %d>" /* the kernel's lines around them */
#define KN_CLANG_NAME "cflame-clang" /* libclang's process (kn_clang.h) */
#define KN_CELL_SO_FMT "cell_%d.so"
#define KN_WORKER_NAME "cflame-worker"
/* The most bytes of a trailing expression's value the worker reads: a
 * larger value is not copied at all (kn_session.c decides when it
 * compiles), a larger array is shown as far as this (kw_value.c). */
#define KN_VALUE_MAX_BYTES (1u << 20)

/* What a symbolized frame is to the kernel. */
typedef enum kn_frame_kind {
  KN_FRAME_OTHER,  /* a library, or code outside any cell */
  KN_FRAME_CELL,   /* a function the user defined in a cell */
  KN_FRAME_ENTRY,  /* a cell's entry function: its top-level statements */
  KN_FRAME_WORKER, /* the worker's own code: the machinery that runs cells */
} kn_frame_kind_t;

/* Classifies f by its module and function; *cell (may be NULL) is the cell
 * whose object holds it, or 0. */
kn_frame_kind_t kn_frame_classify(const fl_frame_info_t *f, int *cell);

/* Whether file names a cell's own lines ("cell[N]"), as opposed to the
 * lines the kernel generated around them. */
bool kn_is_cell_file(const char *file);
bool kn_is_generated_file(const char *file);

/* Whether name is one the kernel made up (KN_GENERATED_PREFIX), which
 * completion does not offer. */
bool kn_is_generated_name(const char *name);

/* "cflame_c3_fib" -> "fib"; any other name is returned as it is. */
const char *kn_plain_name(const char *symbol);

/* The last component of path ("/a/b/c.so" -> "c.so"); NULL for NULL. */
const char *kn_base_name(const char *path);

#endif
