/* SPDX-License-Identifier: BSD-3-Clause */
/* kn__cell: what the files of the cell splitter share. Internal: the
 * interface is kn_cell.h.
 *
 *   kn_cell_tokens.c  the lexer (a cell's text -> tokens), the tables of C's
 *                     words, and reading tokens: keywords, typedef names,
 *                     brackets matched, attributes skipped; an item made of
 *                     tokens.
 *   kn_cell_decl.c    declarations: their specifiers and declarators, and
 *                     the items they give (FUNC, PROTO, TYPE, EXTERN,
 *                     GLOBAL) with their texts rewritten (signature,
 *                     definition, decl).
 *   kn_cell.c         the walk over the pieces at bracket depth 0
 *                     (directives, statements, the trailing expression),
 *                     and completeness.
 * Each calls only the files listed before it. */
#ifndef KN__CELL_H
#define KN__CELL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "kn_cell.h"

/* ---- tokens ---- */

typedef enum tok_kind {
  TK_IDENT,
  TK_NUMBER,
  TK_STRING,
  TK_CHAR,
  TK_PUNCT,
  TK_PREPROC, /* a whole directive, continuation lines included */
} tok_kind_t;

typedef struct tok {
  tok_kind_t kind;
  size_t start, end;       /* byte range in the code */
  int line, col;           /* 1-based, of start */
  char punct[4];           /* TK_PUNCT: the punctuator, NUL-terminated */
  size_t dname, dname_len; /* TK_PREPROC: the directive name's byte range */
} tok_t;

typedef struct toks {
  tok_t *v;
  long n, cap;
  bool open_comment; /* the code ends inside a block comment */
  bool open_literal; /* a string or character literal has no closing quote */
} toks_t;

static inline bool is_ident_start(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
}

static inline bool is_ident_char(unsigned char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9');
}

static inline bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

static inline bool is_blank(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* ---- the splitter ---- */

#define NONE (-1L)
/* Deepest nesting of statements (`if (a) if (b) ...`) followed before giving
 * up and calling the rest one statement. */
#define MAX_NESTING 256

/* Roles of tokens inside a declaration's specifiers (splitter_t.role). */
enum {
  R_STATIC = 1,   /* the `static` specifier: blanked in FUNC texts */
  R_STORAGE = 2,  /* static, register or auto: left out of decl */
  R_CONST = 4,    /* a `const` among the specifiers */
  R_TAG_BODY = 8, /* body (and trailing attributes) of a tagged struct: left out of decl */
  R_SKIP = 16,    /* temporarily left out of a rendering */
};

typedef struct splitter {
  const char *code;
  toks_t t;
  unsigned char *role; /* per token */
  char *stack;         /* bracket stack for match(), one byte per token */
  const char *const *session_typedefs;
  char **cell_typedefs; /* names declared by typedef earlier in this cell; owned */
  size_t n_cell_typedefs;
  int line_offset;
  kn_items_t *out;
  size_t cap;
} splitter_t;

typedef enum parse_status {
  PARSE_OK,
  PARSE_UNBALANCED,   /* the rest of the code becomes one STMT */
  PARSE_UNRECOGNISED, /* tokens start..*last become one STMT (rest if *last is NONE) */
} parse_status_t;

static inline bool is_p(const splitter_t *sp, long k, const char *p) {
  return k >= 0 && k < sp->t.n && sp->t.v[k].kind == TK_PUNCT && strcmp(sp->t.v[k].punct, p) == 0;
}

static inline bool tok_eq(const splitter_t *sp, long k, const char *w) {
  const tok_t *t = &sp->t.v[k];
  size_t n = t->end - t->start;
  return strlen(w) == n && memcmp(sp->code + t->start, w, n) == 0;
}

static inline bool is_id(const splitter_t *sp, long k, const char *w) {
  return k >= 0 && k < sp->t.n && sp->t.v[k].kind == TK_IDENT && tok_eq(sp, k, w);
}

static inline bool id_in(const splitter_t *sp, long k, const char *const *set) {
  if (k < 0 || k >= sp->t.n || sp->t.v[k].kind != TK_IDENT) return false;
  for (size_t i = 0; set[i]; i++)
    if (tok_eq(sp, k, set[i])) return true;
  return false;
}

static inline bool is_ident(const splitter_t *sp, long k) {
  return k >= 0 && k < sp->t.n && sp->t.v[k].kind == TK_IDENT;
}

static inline bool is_directive(const splitter_t *sp, long k, const char *name) {
  const tok_t *t = &sp->t.v[k];
  return t->kind == TK_PREPROC && strlen(name) == t->dname_len &&
         memcmp(sp->code + t->dname, name, t->dname_len) == 0;
}

static inline long skip_preproc(const splitter_t *sp, long k) {
  while (k < sp->t.n && sp->t.v[k].kind == TK_PREPROC) k++;
  return k;
}

static inline char closer_of(const tok_t *t) {
  if (t->kind != TK_PUNCT || t->punct[1]) return 0;
  switch (t->punct[0]) {
    case '(': return ')';
    case '[': return ']';
    case '{': return '}';
    default: return 0;
  }
}

static inline bool is_closer(const tok_t *t) {
  return t->kind == TK_PUNCT && !t->punct[1] &&
         (t->punct[0] == ')' || t->punct[0] == ']' || t->punct[0] == '}');
}

/* What each file gives the others; each function's contract is written
 * where it is defined. */

/* ---- kn_cell_tokens.c ---- */

extern const char *const kn__storage_words[];
extern const char *const kn__type_words[];
extern const char *const kn__attr_words[];
extern const char *const kn__asm_words[];
extern const char *const kn__typeof_words[];
extern const char *const kn__stmt_words[];
void kn__tokenize(const char *code, toks_t *t);
bool kn__is_keyword(const splitter_t *sp, long k);
bool kn__is_plain_ident(const splitter_t *sp, long k);
bool kn__is_typedef_name(const splitter_t *sp, long k);
long kn__match(const splitter_t *sp, long k);
long kn__scan_to(const splitter_t *sp, long k, const char *stops);
long kn__skip_attrs(const splitter_t *sp, long k);
kn_item_t *kn__new_item(splitter_t *sp, kn_item_kind_t kind, long first);
char *kn__slice(const splitter_t *sp, long first, long last);
char *kn__tok_text(const splitter_t *sp, long k);
kn_item_t *kn__add_item(splitter_t *sp, kn_item_kind_t kind, long first, long last);

/* ---- kn_cell_decl.c ---- */

bool kn__is_decl_start(const splitter_t *sp, long k);
parse_status_t kn__parse_decl(splitter_t *sp, long k, long *last);

#endif
