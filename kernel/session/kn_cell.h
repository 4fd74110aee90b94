/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_cell: splits the C text of a cell into top-level items.
 *
 * A cell is a sequence of top-level pieces: preprocessor directives, type
 * definitions, function definitions and prototypes, file-scope object
 * declarations, and statements. The session (kn_session) keeps the
 * declarations for later cells and runs the statements, so the splitter's job
 * is to find where each piece starts and ends and what it is, without a full
 * C parser: it tokenizes just enough (comments, string and character literals,
 * brackets, preprocessor continuations) to never be fooled by a brace or a
 * semicolon inside a string, a char or a comment.
 *
 * Classification rules (decided from the tokens at depth 0):
 *  - '#' first on a line: PREPROC, up to the end of the line with backslash
 *    continuations. A conditional group (#if/#ifdef/#ifndef ... #endif,
 *    nesting counted) is one PREPROC item holding the whole group. A
 *    statement pragma (`#pragma omp ...` other than declare/threadprivate/
 *    requires, `#pragma GCC unroll`/`ivdep`, `#pragma simd`, ...) directly
 *    before a statement is not an item of its own: it starts that STMT.
 *  - statements: a piece starting with if, for, while, do, switch, return,
 *    break, continue, goto, '{', or a label; or an expression statement
 *    (a call, an assignment, ++x, *p = 1, ...). `if` pieces absorb their
 *    `else` branches; `do` pieces run to the `;` after `while (...)`.
 *  - declarations: a piece starting with a declaration specifier (type
 *    keyword, storage class, qualifier, struct/union/enum, typedef,
 *    __attribute__, _Alignas, ...), or with an identifier that is a known
 *    typedef name (see kn_cell_split's typedefs argument, plus the standard
 *    ones such as size_t, FILE, uint8_t, pthread_t), or with `IDENT IDENT`,
 *    `IDENT * ... IDENT` (an unknown typedef name followed by a declarator).
 *    Then:
 *      - declarator followed by a '{' body: FUNC;
 *      - typedef: TYPE (name: the first declared name);
 *      - struct/union/enum with a body: TYPE (name "struct P", NULL when
 *        anonymous) and, if declarators follow the body, one GLOBAL per
 *        declarator whose decl repeats the specifiers ("struct P" when tagged,
 *        the whole "struct { ... }" text when anonymous). With declarators,
 *        the TYPE item is emitted only for a tagged type, and its text is the
 *        type alone, from the `struct` keyword (where its line/col point) to
 *        the closing brace and the attributes after it, plus ';':
 *        "struct P { int x, y; };";
 *      - a function declarator without body: PROTO (one per declarator). Its
 *        text is the declaration as written when it declares only that
 *        function; otherwise ("int f(int), g(void);", or a struct body in the
 *        same declaration) it is rebuilt on one line from the specifiers and
 *        that declarator ("int g(void);"), so that no item declares another
 *        item's name;
 *      - `extern` objects: EXTERN (the whole declaration; an extern
 *        declaration of functions only gives PROTOs);
 *      - otherwise one GLOBAL per declarator (`int a = 1, *b, c[3];` gives
 *        three).
 *  - the cell's last piece, when it is an expression without its ';' (a
 *    STMT that does not start with a statement keyword, '{' or a label, and
 *    whose brackets balance): a STMT with is_expression set, whose value
 *    the cell shows, as a REPL does (`x + 1`, `p`, `printf("hi\n")`);
 *  - anything unbalanced or unrecognised becomes a STMT, so that the
 *    compiler, not the splitter, reports the error at the right line: an
 *    unbalanced piece (or an #if group without #endif) takes the rest of the
 *    cell; an unrecognised but balanced one (`int = 3;`) ends at its ';'; a
 *    stray #else/#elif/#endif is a STMT of its own line, so that it is never
 *    kept for later cells.
 * Empty statements (a lone ';', as after a function body) are not items. */
#ifndef KN_CELL_H
#define KN_CELL_H

#include <stdbool.h>
#include <stddef.h>

typedef enum kn_item_kind {
  KN_ITEM_PREPROC,
  KN_ITEM_TYPE,
  KN_ITEM_FUNC,
  KN_ITEM_PROTO,
  KN_ITEM_EXTERN,
  KN_ITEM_GLOBAL,
  KN_ITEM_STMT,
} kn_item_kind_t;

typedef struct kn_item {
  kn_item_kind_t kind;
  /* The piece's source text exactly as written, from its first character to
   * its terminating ';' or '}' (or end of directive line), comments included.
   * For a GLOBAL split out of a multi-declarator declaration, the text of the
   * whole declaration. (Rebuilt PROTOs and struct TYPEs: see above.) */
  char *text;
  int line; /* 1-based line of the piece's first character in the cell */
  int col;  /* 1-based column of the same, in bytes (a tab counts 1) */

  /* FUNC, PROTO, GLOBAL: the declared identifier. TYPE: "struct P",
   * "union U", "enum E" or the typedef name; NULL for an anonymous type.
   * EXTERN: the first declared identifier. PREPROC: for #define the macro
   * name, otherwise NULL. STMT: NULL. */
  char *name;

  /* STMT only: the cell's last piece, an expression left without its ';'
   * (see above); text is the expression. */
  bool is_expression;

  /* FUNC only (is_static and is_inline are also set for PROTO, is_static
   * for GLOBAL). */
  char *signature;  /* text from the piece's start up to (not including) the
                       body's '{', trailing white space and comments removed,
                       with the `static` keyword (if any) replaced by spaces,
                       and no `inline`-only changes: "int f(int x)". For an
                       old-style definition (`int f(a, b) int a, b; {`) it
                       ends at the ')' and the identifier list is blanked
                       too: "int f(    )". */
  char *definition; /* text with `static` replaced by spaces (same length
                       and line layout as text). Only the specifier is
                       blanked, never a `static` inside the body. */
  bool is_static;   /* `static` among the specifiers */
  bool is_inline;   /* `inline`, `__inline` or `__inline__` among the
                       specifiers */
  bool main_renamed; /* written as main, which a macro renamed: name is what
                        main expanded to (set by kn_session once the cell
                        compiled) */

  /* GLOBAL only. */
  char *decl;         /* specifiers + this declarator, without initializer and
                         without `static`/`register`/`auto`: "double *a",
                         "int m[3][3]", "struct P p1", "const char *s". On
                         one line, comments dropped. Attributes written after
                         the declarator move to the front and an asm label is
                         dropped, so that an asm label may be appended:
                         "__attribute__((aligned(16))) int v". */
  char *decl_mutable; /* same as decl with a top-level `const` of the object
                         removed ("const int n" -> "int n"); equals decl when
                         the object is not const ("const char *s" stays) */
  char *init;         /* initializer text after '=', trimmed; NULL if none */
  int init_line;      /* 1-based line where init starts (0 if none) */
  int init_col;
  bool init_is_static; /* init is a braced list, a string literal, or an
                          initializer macro (an upper-case name holding
                          "INIT", alone or called: PTHREAD_MUTEX_INITIALIZER,
                          ATOMIC_VAR_INIT(0)): it must stay a static
                          initializer (arrays, structs) */
  bool is_array_unsized; /* declarator has [] with no size: its size comes
                            from the initializer */
  bool is_thread_local;
} kn_item_t;

typedef struct kn_items {
  kn_item_t *items; /* owned */
  size_t n;
} kn_items_t;

/* Splits code (NUL-terminated) into items, in source order (the TYPE of
 * `static struct P {...} p;` comes before p's GLOBAL). typedefs is a
 * NULL-terminated list of typedef names already known in the session (may be
 * NULL); names declared by typedef earlier in the same cell count too. Line
 * numbers are offset by first_line - 1 (pass 1 when code is the whole cell).
 * Never fails on C it does not understand (see above); returns 0, or -1 only
 * on allocation failure. */
int kn_cell_split(const char *code, const char *const *typedefs, int first_line,
                  kn_items_t *out);

void kn_items_free(kn_items_t *items);

/* Whether code is complete for the is_complete request:
 *   "complete"   brackets balanced, no unterminated comment/string;
 *   "incomplete" an open (, [, { or comment, or a trailing backslash: the
 *                frontend should ask for more lines;
 *   "invalid"    a closing bracket with no opener (or of the wrong kind), or
 *                a string or character literal left open at the end of a
 *                line (C literals cannot go on to the next line).
 * Magic lines (starting with %, at the start of the cell as kn_magic_split
 * finds them) are ignored, but a cell that begins with a cell magic
 * (%%name) is incomplete until its last line is blank, as in IPython: its
 * body may take several lines. Brackets inside directives do not count.
 * Returns a static string. */
const char *kn_cell_completeness(const char *code);

/* Whether code begins with a cell magic (%%name). */
bool kn_cell_has_cell_magic(const char *code);

/* Names of C keywords, NULL-terminated (for completion). */
extern const char *const kn_c_keywords[];

#endif
