/* SPDX-License-Identifier: BSD-3-Clause */
/* kn__session: what the files of the session share. Internal: the
 * interface is kn_session.h.
 *
 *   kn_unit.c     a cell as a translation unit: the prelude, the session's
 *                 entries, the cell's pieces under their assembler names,
 *                 the entry function, the code that shows a value; and an
 *                 item's key, the entry it replaces and its text there.
 *   kn_session.c  the session: its directory, compiler and flags, and what
 *                 it has declared (the entries later cells see) and loaded
 *                 (the objects, in order).
 *   kn_compile.c  the compiler as a job the main loop polls: the unit and
 *                 the cell written, the compiler run, its messages made the
 *                 cell's, and the object read for what main became; and
 *                 what the flags mean for frame pointers and tail calls.
 * Each calls only the files listed before it. */
#ifndef KN__SESSION_H
#define KN__SESSION_H

#include <stdbool.h>
#include <sys/types.h>

#include "kn_names.h"
#include "kn_session.h"
#include "kn_text.h"

/* One declaration the session keeps for later cells. */
typedef struct entry {
  char *key;      /* what a redefinition replaces: "id:f", "tag:struct P", ... */
  char *name;     /* the declared name (for completion), or NULL */
  char *header;   /* text placed in later cells' translation units */
  char *describe; /* what inspection shows */
  int cell;
  bool is_definition; /* FUNC or GLOBAL: a later PROTO/EXTERN does not replace it */
  bool is_global;
  bool is_typedef;
  bool main_renamed; /* a function written as main, renamed by a macro */
} entry_t;

struct kn_session {
  char *dir;
  char *cwd; /* the kernel's working directory: the notebook's folder */
  char *cc, *cflags, *ldflags;
  entry_t *entries;
  size_t n_entries, cap_entries;
  char **objects;
  bool *objects_fp;  /* objects[i] was compiled with frame pointers */
  int *objects_cell; /* the cell objects[i] was compiled from */
  size_t n_objects, cap_objects;
  const char **typedefs; /* NULL-terminated view of entries' typedef names */
};

/* The file name (a format of the cell number) of the kernel's code after a
 * cell's statements. */
#define END_FILE KN_GEN_FILE_PREFIX " %d end>"

/* What each file gives the others; each function's contract is written
 * where it is defined. */

/* ---- kn_unit.c ---- */

bool kn__item_key_is_macro(const kn_item_t *it);
char *kn__item_key(const kn_item_t *it);
bool kn__item_is_definition(const kn_item_t *it);
ssize_t kn__find_entry(const kn_session_t *s, const char *key);
bool kn__replaces(const kn_item_t *it, const entry_t *e);
bool kn__writes_main(const kn_item_t *it);
bool kn__is_include(const kn_item_t *it);
char *kn__header_text(const kn_item_t *it, int cell);
void kn__build_unit(const kn_session_t *s, int cell, const kn_items_t *items, char **keys,
                    fl__buf_t *tu);

#endif
