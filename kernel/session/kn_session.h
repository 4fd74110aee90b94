/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_session: what a notebook session has declared, and how a cell becomes a
 * shared object.
 *
 * The session keeps an ordered list of declarations ("entries") taken from
 * the cells that ran: preprocessor lines, types, prototypes of the functions
 * and extern declarations of the globals defined so far. Each cell is
 * compiled as one translation unit:
 *
 *   prelude (#include of the common headers)
 *   the entries, with #line directives naming the cell each came from
 *   this cell's declarations and definitions
 *   int cflame_run_N(void) { the cell's statements and global initializers }
 *
 * Functions and globals get a unique assembler name per cell
 * (`cflame_c3_f`), so a later cell can redefine `f`: the entry for `f` is
 * replaced where it stood, and code compiled afterwards binds to the new
 * symbol while code compiled before keeps the old one. `static` is dropped
 * from file-scope definitions so that later cells see them; `inline`
 * functions are repeated whole in later cells, as a header would.
 *
 * Compilation happens in the session's private directory (removed by
 * kn_session_destroy); the cell's text is written there as `cell[N]` so the
 * compiler quotes source lines in its diagnostics. */
#ifndef KN_SESSION_H
#define KN_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "kn_cell.h"

typedef struct kn_session kn_session_t;

#define KN_DEFAULT_CC "cc"
#define KN_DEFAULT_CFLAGS "-std=gnu17 -O2 -g -fno-omit-frame-pointer -Wall"
/* What every compile of a cell (and of a %%timeit cell) starts with, before
 * the flags (%cflags), which can undo it: a later -f option wins. A tail
 * call stays a call, so that a function that ends by calling another is in
 * that call's stacks, and what %%timeit times is what a profile shows. */
#define KN_BASE_CFLAGS "-fno-optimize-sibling-calls"
#define KN_DEFAULT_LDFLAGS "-lm"

/* A compiled cell, not yet part of the session. */
typedef struct kn_compiled {
  int cell;        /* the cell's number (its execution count) */
  char *so_path;   /* the shared object; owned */
  char *entry;     /* "cflame_run_N"; owned */
  bool has_main;   /* the cell's object defines main, which its entry calls;
                      a main renamed by a macro is not main */
  char *warnings;  /* the compiler's diagnostics on success ("" if none) */
  bool frame_pointers; /* kept frame pointers (kn_session_flags_keep_frame_pointers) */
  kn_items_t items; /* the cell's pieces, committed by kn_session_commit */
} kn_compiled_t;

/* Creates a session with a private directory under $TMPDIR (or /tmp) and the
 * default compiler and flags ($CC overrides cc). Returns NULL with err. */
kn_session_t *kn_session_new(char *err, size_t err_size);

/* Removes the private directory and everything in it. */
void kn_session_destroy(kn_session_t **s);

const char *kn_session_dir(const kn_session_t *s);

/* The compiler, flags and link flags, as the user set them. */
const char *kn_session_cc(const kn_session_t *s);
const char *kn_session_cflags(const kn_session_t *s);
const char *kn_session_ldflags(const kn_session_t *s);
/* Set them. The value is split into words as a shell would (quotes group).
 * kn_session_set_cc checks that the compiler runs (`CC --version`).
 * Return 0, or -1 with err. */
int kn_session_set_cc(kn_session_t *s, const char *cc, char *err, size_t err_size);
int kn_session_set_cflags(kn_session_t *s, const char *flags, char *err, size_t err_size);
int kn_session_set_ldflags(kn_session_t *s, const char *flags, char *err, size_t err_size);

/* Compiles code (the cell's text after its magic lines; first_line is the
 * cell line where it starts) as cell number cell, waiting for the compiler.
 * Returns 0 with *out set (new), 1 when the compiler rejected the code (then
 * *diagnostics is new text, with "cell[N]:LINE:COL" positions), or -1 on an
 * internal failure (err). A cell whose last piece is an expression without
 * ';' (kn_cell.h) is compiled so that its run shows the expression's
 * value; when that does not compile, the expression runs as a statement and
 * the warnings say why no value is shown. */
int kn_session_compile(kn_session_t *s, int cell, const char *code, int first_line,
                       kn_compiled_t **out, char **diagnostics, char *err, size_t err_size);

/* The same in steps, for a caller that must not wait (the kernel's main
 * loop): start the compiler, poll its descriptors, and finish once
 * kn_compile_poll says it has ended; or cancel it (its process group is
 * killed and its files removed). */
typedef struct kn_compile kn_compile_t;
/* A new job, or NULL with err (which says what ran out: a pipe, the
 * compiler). */
kn_compile_t *kn_session_compile_start(kn_session_t *s, int cell, const char *code, int first_line,
                                       char *err, size_t err_size);
/* The compiler's output pipe and pidfd, to poll for reading (-1 once done). */
void kn_compile_fds(const kn_compile_t *job, int fds[2]);
/* Reads what the compiler wrote; true once it has ended. Never blocks. */
bool kn_compile_poll(kn_compile_t *job);
/* As kn_session_compile's result, for an ended job, which it destroys; or
 * 2 when the job goes on (a cell whose trailing expression's value did not
 * compile is compiled again without it): poll it again. */
int kn_session_compile_finish(kn_session_t *s, kn_compile_t **job, kn_compiled_t **out,
                              char **diagnostics, char *err, size_t err_size);
void kn_compile_cancel(kn_compile_t **job);

/* The translation unit the session would compile for code as cell number
 * cell (what kn_session_compile_start writes to cell_N.c), without writing
 * or compiling anything: for tools that read the session's C as the
 * compiler would, such as completion. New string, or NULL when out of
 * memory. */
char *kn_session_unit_text(const kn_session_t *s, int cell, const char *code, int first_line);

/* Makes the compiled cell part of the session: its declarations become
 * entries, and its shared object is loaded again after a worker restart.
 * Takes ownership of c (sets *c to NULL). */
void kn_session_commit(kn_session_t *s, kn_compiled_t **c);

/* Discards a compiled cell that is not committed (removes its files). */
void kn_compiled_destroy(kn_compiled_t **c);

/* The shared objects of committed cells, in the order they were loaded. */
size_t kn_session_n_objects(const kn_session_t *s);
const char *kn_session_object(const kn_session_t *s, size_t i);

/* Drops the committed object at path, which a worker could not load (its
 * constructor hung, crashed it): the object is removed and no longer
 * reloaded, and the functions and globals its cell defined leave the
 * declarations, since their code is gone; its types, macros and prototypes
 * stay for the cells that use them. Returns the cell's number, or -1 when
 * path is not a committed object. */
int kn_session_drop_object(kn_session_t *s, const char *path);

/* Whether the object of committed cell i was compiled with frame
 * pointers (false when unknown or out of range). */
bool kn_session_object_frame_pointers(const kn_session_t *s, size_t i);

/* Whether a cell compiled with cflags and linked with ldflags (one
 * compiler run, so both count, in that order) keeps frame pointers in all
 * its code, which lets the worker's allocation recorder walk them (see
 * fl_allocs.h): the last of -fomit-frame-pointer and
 * -fno-omit-frame-pointer is the latter, or neither is given and the last
 * -O is -O0. Conservative: false when the flags may bring code compiled
 * elsewhere into the object (object files, archives, assembly, -l: and
 * -l of other than the C runtime's own libraries, which may be static,
 * -static, -Wl,-Bstatic or --whole-archive, -x) or do not split. */
bool kn_session_flags_keep_frame_pointers(const char *cflags, const char *ldflags);

/* Whether a compile with flags (a command line as a profile records it)
 * keeps tail calls as calls: the last of -foptimize-sibling-calls and
 * -fno-optimize-sibling-calls is the latter. */
bool kn_session_flags_keep_tail_calls(const char *flags);

/* Whether any committed cell defined a global variable (whose value a
 * worker restart resets). */
bool kn_session_has_globals(const kn_session_t *s);

/* Forgets every declaration and object (for %reset); keeps the compiler
 * settings. */
void kn_session_reset(kn_session_t *s);

/* Names the session declares (functions, globals, types, macros), for
 * completion: calls fn for each. */
void kn_session_each_name(const kn_session_t *s, void (*fn)(void *ctx, const char *name),
                          void *ctx);

/* For inspection: the declaration of name as the user wrote it (function
 * signature, global declaration, type definition or macro) and the cell
 * that defined it. Returns NULL when unknown. Borrowed. */
const char *kn_session_describe(const kn_session_t *s, const char *name, int *cell);

/* Known typedef names (NULL-terminated array; borrowed, valid until the next
 * commit or reset), for the splitter. */
const char *const *kn_session_typedefs(const kn_session_t *s);

/* Rewrites assembler names in text ("cflame_c3_f" -> "f") and drops lines
 * about the generated entry function; returns new text. Used on compiler
 * and loader messages. */
char *kn_session_clean_message(const char *text);

#endif
