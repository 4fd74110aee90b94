/* SPDX-License-Identifier: BSD-3-Clause */
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
#define KN_CELL_FILE_PREFIX "cell["
#define KN_CELL_FILE_FMT KN_CELL_FILE_PREFIX "%d]" /* the user's lines of cell N */
#define KN_GEN_FILE_PREFIX "<cflame cell"
#define KN_GEN_FILE_FMT KN_GEN_FILE_PREFIX " %d>" /* the kernel's lines around them */
#define KN_CLANG_NAME "cflame-clang" /* libclang's process (kn_clang.h) */
#define KN_CELL_STEM "cell_"         /* + N + ".c" or KN_CELL_SO_SUFFIX: a cell's files */
#define KN_CELL_SO_SUFFIX ".so"
#define KN_CELL_SRC_FMT KN_CELL_STEM "%d.c"
#define KN_CELL_SO_FMT KN_CELL_STEM "%d" KN_CELL_SO_SUFFIX
#define KN_WORKER_NAME "cflame-worker"

/* Names in the code the kernel writes around a cell (kn_session.c), each
 * starting with KN_GENERATED_PREFIX. The prelude's macros: */
#define KN_SYMBOL_MACRO KN_GENERATED_PREFIX "symbol"   /* (N, NAME): cflame_cN_NAME */
#define KN_MAIN_IS_MACRO KN_GENERATED_PREFIX "main_is" /* (NAME): 1 when main expands to it */
/* cell N's main, called from its entry function with these arguments: */
#define KN_MAIN_ENTRY KN_GENERATED_PREFIX "main_entry"
#define KN_MAIN_ARG0 KN_GENERATED_PREFIX "arg0"
#define KN_MAIN_ARGV KN_GENERATED_PREFIX "argv"
/* The trailing expression's value, and what the worker reads of it
 * (kernel/worker/kw_value.c): the hook it defines (an identifier, so that
 * kw_value.c defines the function by this name) and the variable whose
 * DWARF type it reads. */
#define KN_VALUE_VAR KN_GENERATED_PREFIX "value"
#define KN_VALUE_TYPE_VAR KN_VALUE_VAR "_type"
#define KN_VALUE_HOOK_FN cflame_value_hook
#define KN_STR_(x) #x
#define KN_STR(x) KN_STR_(x)
#define KN_VALUE_HOOK KN_STR(KN_VALUE_HOOK_FN)
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
