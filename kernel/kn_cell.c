/* kn_cell: splits the C text of a cell into top-level items (see kn_cell.h).
 *
 * Two passes. The lexer turns the cell into tokens (identifiers, numbers,
 * string and character literals, punctuators, and whole preprocessor
 * directives), dropping white space and comments but keeping each token's byte
 * range, line and column, so that every item's text is an exact slice of the
 * cell. The splitter then walks the tokens at bracket depth 0, decides for each
 * piece whether it is a directive, a declaration or a statement, and finds
 * where it ends; brackets are matched on demand, so an unbalanced piece only
 * affects the text from where it starts. */
#include "kn_cell.h"

#include "kn_strbuf.h"

#include <stdlib.h>
#include <string.h>

/* ---- keyword and name tables ---- */

const char *const kn_c_keywords[] = {
    /* C17 */
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict",
    "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
    "unsigned", "void", "volatile", "while", "_Alignas", "_Alignof", "_Atomic", "_Bool", "_Complex",
    "_Generic", "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local",
    /* GNU */
    "__attribute__", "__attribute", "typeof", "__typeof__", "__typeof", "asm", "__asm__", "__asm",
    "__inline__", "__inline", "__restrict__", "__restrict", "__const__", "__const", "__volatile__",
    "__volatile", "__signed__", "__signed", "__thread", "__extension__", "__label__", "__auto_type",
    "__int128", "__alignof__", "__alignof", "__builtin_va_arg", "__builtin_offsetof",
    "__builtin_types_compatible_p", "__real__", "__imag__", "__complex__", "_Float16", "_Float32",
    "_Float64", "_Float128", "_Float32x", "_Float64x", "_Decimal32", "_Decimal64", "_Decimal128",
    NULL};

/* Storage classes. */
static const char *const storage_words[] = {"typedef",  "extern",       "static",
                                            "auto",     "register",     "_Thread_local",
                                            "__thread", "thread_local", NULL};
/* Qualifiers that may stand alone among the specifiers or after a '*'. */
static const char *const qualifier_words[] = {"const",        "volatile", "restrict",  "__restrict",
                                              "__restrict__", "__const",  "__const__", "__volatile",
                                              "__volatile__", "_Atomic",  NULL};
static const char *const const_words[] = {"const", "__const", "__const__", NULL};
/* Function specifiers and other words that only decorate a declaration. */
static const char *const funcspec_words[] = {"inline",    "__inline",      "__inline__",
                                             "_Noreturn", "__extension__", NULL};
static const char *const inline_words[] = {"inline", "__inline", "__inline__", NULL};
static const char *const thread_words[] = {"_Thread_local", "__thread", "thread_local", NULL};
/* Type specifier keywords. */
static const char *const type_words[] = {
    "void",        "char",        "short",       "int",
    "long",        "float",       "double",      "signed",
    "unsigned",    "_Bool",       "_Complex",    "_Imaginary",
    "__complex__", "__int128",    "__signed",    "__signed__",
    "_Float16",    "_Float32",    "_Float64",    "_Float128",
    "_Float32x",   "_Float64x",   "_Float128x",  "_Decimal32",
    "_Decimal64",  "_Decimal128", "__auto_type", "__builtin_va_list",
    "__fp16",      "__bf16",      NULL};
/* Words followed by a parenthesised argument inside a declaration. */
static const char *const attr_words[] = {"__attribute__", "__attribute", "__declspec",
                                         "_Alignas",      "alignas",     NULL};
static const char *const asm_words[] = {"asm", "__asm__", "__asm", NULL};
static const char *const pragma_words[] = {"_Pragma", NULL};
static const char *const typeof_words[] = {
    "typeof",  "__typeof__", "__typeof", "typeof_unqual", "__typeof_unqual__",
    "_Atomic", "_BitInt",    NULL};
static const char *const sue_words[] = {"struct", "union", "enum", NULL};
/* Words that start a statement. */
static const char *const stmt_words[] = {"if",
                                         "for",
                                         "while",
                                         "do",
                                         "switch",
                                         "return",
                                         "break",
                                         "continue",
                                         "goto",
                                         "case",
                                         "default",
                                         "else",
                                         "sizeof",
                                         "_Alignof",
                                         "__alignof__",
                                         "_Generic",
                                         "_Static_assert",
                                         "static_assert",
                                         "__label__",
                                         "__builtin_va_arg",
                                         "__real__",
                                         "__imag__",
                                         NULL};

/* Typedef names of the C and POSIX headers a notebook is likely to include. */
static const char *const builtin_typedefs[] = {"size_t",
                                               "ssize_t",
                                               "ptrdiff_t",
                                               "intptr_t",
                                               "uintptr_t",
                                               "intmax_t",
                                               "uintmax_t",
                                               "int8_t",
                                               "int16_t",
                                               "int32_t",
                                               "int64_t",
                                               "uint8_t",
                                               "uint16_t",
                                               "uint32_t",
                                               "uint64_t",
                                               "int_fast8_t",
                                               "int_fast16_t",
                                               "int_fast32_t",
                                               "int_fast64_t",
                                               "uint_fast8_t",
                                               "uint_fast16_t",
                                               "uint_fast32_t",
                                               "uint_fast64_t",
                                               "int_least8_t",
                                               "int_least16_t",
                                               "int_least32_t",
                                               "int_least64_t",
                                               "uint_least8_t",
                                               "uint_least16_t",
                                               "uint_least32_t",
                                               "uint_least64_t",
                                               "__int128_t",
                                               "__uint128_t",
                                               "off_t",
                                               "pid_t",
                                               "time_t",
                                               "clock_t",
                                               "clockid_t",
                                               "timer_t",
                                               "suseconds_t",
                                               "useconds_t",
                                               "FILE",
                                               "bool",
                                               "wchar_t",
                                               "wint_t",
                                               "char16_t",
                                               "char32_t",
                                               "va_list",
                                               "jmp_buf",
                                               "sigjmp_buf",
                                               "sig_atomic_t",
                                               "sigset_t",
                                               "pthread_t",
                                               "pthread_mutex_t",
                                               "pthread_cond_t",
                                               "pthread_attr_t",
                                               "pthread_once_t",
                                               "pthread_key_t",
                                               "pthread_rwlock_t",
                                               "pthread_barrier_t",
                                               "pthread_spinlock_t",
                                               "pthread_mutexattr_t",
                                               "pthread_condattr_t",
                                               "pthread_rwlockattr_t",
                                               "pthread_barrierattr_t",
                                               "sem_t",
                                               "mtx_t",
                                               "cnd_t",
                                               "thrd_t",
                                               "tss_t",
                                               "once_flag",
                                               "atomic_int",
                                               "atomic_uint",
                                               "atomic_long",
                                               "atomic_ulong",
                                               "atomic_llong",
                                               "atomic_ullong",
                                               "atomic_bool",
                                               "atomic_char",
                                               "atomic_size_t",
                                               "atomic_intptr_t",
                                               "atomic_uintptr_t",
                                               "atomic_flag",
                                               "memory_order",
                                               "div_t",
                                               "ldiv_t",
                                               "lldiv_t",
                                               "imaxdiv_t",
                                               "fpos_t",
                                               "mbstate_t",
                                               "socklen_t",
                                               "uid_t",
                                               "gid_t",
                                               "mode_t",
                                               "dev_t",
                                               "ino_t",
                                               "nlink_t",
                                               "blksize_t",
                                               "blkcnt_t",
                                               "key_t",
                                               "id_t",
                                               "nfds_t",
                                               "fd_set",
                                               "regex_t",
                                               "regmatch_t",
                                               "regoff_t",
                                               "DIR",
                                               "double_t",
                                               "float_t",
                                               "max_align_t",
                                               "cpu_set_t",
                                               "locale_t",
                                               "fenv_t",
                                               "fexcept_t",
                                               "glob_t",
                                               "iconv_t",
                                               "__m128",
                                               "__m128d",
                                               "__m128i",
                                               "__m256",
                                               "__m256d",
                                               "__m256i",
                                               "__m512",
                                               "__m512d",
                                               "__m512i",
                                               NULL};

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

typedef struct lexer {
  const char *s;
  size_t pos, len;
  int line, col;
} lexer_t;

static bool is_ident_start(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
}

static bool is_ident_char(unsigned char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9');
}

static bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

static bool is_blank(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static char peek(const lexer_t *lx, size_t ahead) {
  return lx->pos + ahead < lx->len ? lx->s[lx->pos + ahead] : '\0';
}

static void advance(lexer_t *lx) {
  if (lx->pos >= lx->len) return;
  if (lx->s[lx->pos] == '\n') {
    lx->line++;
    lx->col = 1;
  } else {
    lx->col++;
  }
  lx->pos++;
}

/* Length of a backslash-newline (line splice) at the current position, or 0. */
static int splice_len(const lexer_t *lx) {
  if (peek(lx, 0) != '\\') return 0;
  if (peek(lx, 1) == '\n') return 2;
  if (peek(lx, 1) == '\r' && peek(lx, 2) == '\n') return 3;
  return 0;
}

/* Skips a block comment starting at the current "/ *". Returns false when the
 * code ends before its close. */
static bool skip_block_comment(lexer_t *lx) {
  advance(lx);
  advance(lx);
  while (lx->pos < lx->len) {
    if (peek(lx, 0) == '*' && peek(lx, 1) == '/') {
      advance(lx);
      advance(lx);
      return true;
    }
    advance(lx);
  }
  return false;
}

/* Skips a line comment up to (not including) its newline; a line splice
 * continues it. */
static void skip_line_comment(lexer_t *lx) {
  while (lx->pos < lx->len && peek(lx, 0) != '\n') {
    int sl = splice_len(lx);
    for (int i = 0; i < (sl ? sl : 1); i++) advance(lx);
  }
}

/* Skips a string or character literal whose opening quote is at the current
 * position. A literal cannot span lines (except through a line splice): an
 * unescaped newline or the end of the code ends it unterminated, and the
 * function returns false. */
static bool skip_literal(lexer_t *lx) {
  char quote = peek(lx, 0);
  advance(lx);
  while (lx->pos < lx->len) {
    char c = peek(lx, 0);
    if (c == quote) {
      advance(lx);
      return true;
    }
    if (c == '\n') return false;
    if (c == '\\') {
      int sl = splice_len(lx);
      for (int i = 0; i < (sl ? sl : 2); i++) advance(lx);
      continue;
    }
    advance(lx);
  }
  return false;
}

static tok_t *push_tok(toks_t *t, tok_kind_t kind, const lexer_t *at) {
  if (t->n == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 64;
    t->v = fl__xrealloc(t->v, (size_t)t->cap, sizeof *t->v);
  }
  tok_t *k = &t->v[t->n++];
  memset(k, 0, sizeof *k);
  k->kind = kind;
  k->start = at->pos;
  k->line = at->line;
  k->col = at->col;
  return k;
}

/* Lexes a directive from its '#' to the end of its last line (continuations,
 * and block comments that run on, included), trailing blanks excluded. */
static void lex_directive(lexer_t *lx, toks_t *t) {
  tok_t *k = push_tok(t, TK_PREPROC, lx);
  advance(lx); /* '#' */
  for (;;) {
    int sl = splice_len(lx);
    if (sl) {
      for (int i = 0; i < sl; i++) advance(lx);
    } else if (is_blank((unsigned char)peek(lx, 0))) {
      advance(lx);
    } else if (peek(lx, 0) == '/' && peek(lx, 1) == '*') {
      if (!skip_block_comment(lx)) t->open_comment = true;
    } else {
      break;
    }
  }
  k->dname = lx->pos;
  while (lx->pos < lx->len && is_ident_char((unsigned char)peek(lx, 0))) advance(lx);
  k->dname_len = lx->pos - k->dname;
  while (lx->pos < lx->len && peek(lx, 0) != '\n') {
    int sl = splice_len(lx);
    char c = peek(lx, 0);
    if (sl) {
      for (int i = 0; i < sl; i++) advance(lx);
    } else if (c == '/' && peek(lx, 1) == '*') {
      if (!skip_block_comment(lx)) t->open_comment = true;
    } else if (c == '/' && peek(lx, 1) == '/') {
      skip_line_comment(lx);
    } else if (c == '"' || c == '\'') {
      skip_literal(lx); /* an unterminated quote ("#error don't") is the directive's business */
    } else {
      advance(lx);
    }
  }
  size_t end = lx->pos;
  while (end > k->start + 1 && is_blank((unsigned char)lx->s[end - 1])) end--;
  k->end = end;
}

static const char *const puncts3[] = {"...", "<<=", ">>=", NULL};
static const char *const puncts2[] = {
    "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "*=", "/=", "%=", "+=", "-=", "&=", "^=", "|=", "##", "::", NULL};

/* Tokenizes code into t (zeroed by the caller). Never fails. */
static void tokenize(const char *code, toks_t *t) {
  lexer_t lx = {code, 0, strlen(code), 1, 1};
  bool at_line_start = true; /* only blanks and comments so far on this line */
  while (lx.pos < lx.len) {
    unsigned char c = (unsigned char)peek(&lx, 0);
    int sl = splice_len(&lx);
    if (c == '\n') {
      advance(&lx);
      at_line_start = true;
      continue;
    }
    if (sl) {
      for (int i = 0; i < sl; i++) advance(&lx);
      continue;
    }
    if (is_blank(c)) {
      advance(&lx);
      continue;
    }
    if (c == '/' && peek(&lx, 1) == '*') {
      if (!skip_block_comment(&lx)) t->open_comment = true;
      continue;
    }
    if (c == '/' && peek(&lx, 1) == '/') {
      skip_line_comment(&lx);
      continue;
    }
    if (c == '#' && at_line_start) {
      lex_directive(&lx, t);
      continue;
    }
    at_line_start = false;
    if (is_ident_start(c)) {
      tok_t *k = push_tok(t, TK_IDENT, &lx);
      while (lx.pos < lx.len && is_ident_char((unsigned char)peek(&lx, 0))) advance(&lx);
      size_t n = lx.pos - k->start;
      const char *w = code + k->start;
      char q = peek(&lx, 0);
      bool prefix = (n == 1 && (*w == 'L' || *w == 'u' || *w == 'U')) ||
                    (n == 2 && w[0] == 'u' && w[1] == '8');
      if (prefix && (q == '"' || q == '\'')) {
        k->kind = q == '"' ? TK_STRING : TK_CHAR;
        if (!skip_literal(&lx)) t->open_literal = true;
      }
      k->end = lx.pos;
      continue;
    }
    if (is_digit(c) || (c == '.' && is_digit((unsigned char)peek(&lx, 1)))) {
      tok_t *k = push_tok(t, TK_NUMBER, &lx);
      for (;;) {
        char d = peek(&lx, 0);
        char prev = lx.pos > k->start ? code[lx.pos - 1] : '\0';
        bool sign =
            (d == '+' || d == '-') && (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P');
        if (lx.pos < lx.len && (is_ident_char((unsigned char)d) || d == '.' || sign)) {
          advance(&lx);
        } else {
          break;
        }
      }
      k->end = lx.pos;
      continue;
    }
    if (c == '"' || c == '\'') {
      tok_t *k = push_tok(t, c == '"' ? TK_STRING : TK_CHAR, &lx);
      if (!skip_literal(&lx)) t->open_literal = true;
      k->end = lx.pos;
      continue;
    }
    tok_t *k = push_tok(t, TK_PUNCT, &lx);
    size_t n = 1;
    for (int i = 0; puncts3[i] && n == 1; i++)
      if (lx.len - lx.pos >= 3 && memcmp(code + lx.pos, puncts3[i], 3) == 0) n = 3;
    for (int i = 0; puncts2[i] && n == 1; i++)
      if (lx.len - lx.pos >= 2 && memcmp(code + lx.pos, puncts2[i], 2) == 0) n = 2;
    memcpy(k->punct, code + lx.pos, n);
    for (size_t i = 0; i < n; i++) advance(&lx);
    k->end = lx.pos;
  }
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

static bool is_p(const splitter_t *sp, long k, const char *p) {
  return k >= 0 && k < sp->t.n && sp->t.v[k].kind == TK_PUNCT && strcmp(sp->t.v[k].punct, p) == 0;
}

static bool tok_eq(const splitter_t *sp, long k, const char *w) {
  const tok_t *t = &sp->t.v[k];
  size_t n = t->end - t->start;
  return strlen(w) == n && memcmp(sp->code + t->start, w, n) == 0;
}

static bool is_id(const splitter_t *sp, long k, const char *w) {
  return k >= 0 && k < sp->t.n && sp->t.v[k].kind == TK_IDENT && tok_eq(sp, k, w);
}

static bool id_in(const splitter_t *sp, long k, const char *const *set) {
  if (k < 0 || k >= sp->t.n || sp->t.v[k].kind != TK_IDENT) return false;
  for (size_t i = 0; set[i]; i++)
    if (tok_eq(sp, k, set[i])) return true;
  return false;
}

static bool is_ident(const splitter_t *sp, long k) {
  return k >= 0 && k < sp->t.n && sp->t.v[k].kind == TK_IDENT;
}

static bool is_keyword(const splitter_t *sp, long k) {
  return id_in(sp, k, kn_c_keywords) || id_in(sp, k, storage_words) || id_in(sp, k, typeof_words) ||
         id_in(sp, k, stmt_words) || id_in(sp, k, attr_words) || id_in(sp, k, type_words);
}

/* A plain identifier: neither a keyword nor anything the splitter gives a
 * meaning of its own. */
static bool is_plain_ident(const splitter_t *sp, long k) {
  return is_ident(sp, k) && !is_keyword(sp, k);
}

static bool is_typedef_name(const splitter_t *sp, long k) {
  if (!is_plain_ident(sp, k)) return false;
  if (id_in(sp, k, builtin_typedefs)) return true;
  if (sp->session_typedefs && id_in(sp, k, sp->session_typedefs)) return true;
  for (size_t i = 0; i < sp->n_cell_typedefs; i++)
    if (tok_eq(sp, k, sp->cell_typedefs[i])) return true;
  return false;
}

static bool is_directive(const splitter_t *sp, long k, const char *name) {
  const tok_t *t = &sp->t.v[k];
  return t->kind == TK_PREPROC && strlen(name) == t->dname_len &&
         memcmp(sp->code + t->dname, name, t->dname_len) == 0;
}

static long skip_preproc(const splitter_t *sp, long k) {
  while (k < sp->t.n && sp->t.v[k].kind == TK_PREPROC) k++;
  return k;
}

static char closer_of(const tok_t *t) {
  if (t->kind != TK_PUNCT || t->punct[1]) return 0;
  switch (t->punct[0]) {
    case '(': return ')';
    case '[': return ']';
    case '{': return '}';
    default: return 0;
  }
}

static bool is_closer(const tok_t *t) {
  return t->kind == TK_PUNCT && !t->punct[1] &&
         (t->punct[0] == ')' || t->punct[0] == ']' || t->punct[0] == '}');
}

/* Index of the bracket closing the opener at k, or NONE when the code ends
 * first or a closer of the wrong kind comes first. Directives are ignored. */
static long match(const splitter_t *sp, long k) {
  long depth = 0;
  if (k < 0 || k >= sp->t.n || !closer_of(&sp->t.v[k])) return NONE;
  for (long i = k; i < sp->t.n; i++) {
    const tok_t *t = &sp->t.v[i];
    char c = closer_of(t);
    if (c) {
      sp->stack[depth++] = c;
    } else if (is_closer(t)) {
      if (depth == 0 || sp->stack[depth - 1] != t->punct[0]) return NONE;
      if (--depth == 0) return i;
    }
  }
  return NONE;
}

/* Index of the first token from k on that is a one-character punctuator in
 * stops, at bracket depth 0 (an opener in stops stops the scan, others are
 * skipped whole). NONE when the code ends first or brackets do not balance. */
static long scan_to(const splitter_t *sp, long k, const char *stops) {
  for (; k >= 0 && k < sp->t.n; k++) {
    const tok_t *t = &sp->t.v[k];
    if (t->kind != TK_PUNCT) continue;
    if (!t->punct[1] && strchr(stops, t->punct[0])) return k;
    if (closer_of(t)) {
      k = match(sp, k);
      if (k == NONE) return NONE;
    } else if (is_closer(t)) {
      return NONE;
    }
  }
  return NONE;
}

/* Skips __attribute__((...)), __declspec(...), asm("...") groups and C23
 * [[...]] attributes from k. Returns the next index, or NONE if one does not
 * balance. */
static long skip_attrs(const splitter_t *sp, long k) {
  for (;;) {
    k = skip_preproc(sp, k);
    if ((id_in(sp, k, attr_words) || id_in(sp, k, asm_words)) && is_p(sp, k + 1, "(")) {
      long m = match(sp, k + 1);
      if (m == NONE) return NONE;
      k = m + 1;
    } else if (is_p(sp, k, "[") && is_p(sp, k + 1, "[")) {
      long m = match(sp, k);
      if (m == NONE) return NONE;
      k = m + 1;
    } else {
      return k;
    }
  }
}

/* Index of the last token of the statement starting at k, or NONE if it does
 * not end (unbalanced, or the code stops first). Labels and else-if chains
 * are followed in a loop so that long chains do not recurse. */
static long stmt_end(const splitter_t *sp, long k, int nesting) {
  if (nesting > MAX_NESTING) return NONE;
  for (;;) {
    k = skip_preproc(sp, k);
    if (k >= sp->t.n) return NONE;
    if (is_p(sp, k, "{")) return match(sp, k);
    if (is_p(sp, k, ";")) return k;
    if (is_id(sp, k, "_Pragma") && is_p(sp, k + 1, "(")) { /* _Pragma("omp ...") for (...) */
      long m = match(sp, k + 1);
      if (m == NONE) return NONE;
      k = m + 1;
      continue;
    }
    if (is_id(sp, k, "if")) {
      if (!is_p(sp, k + 1, "(")) return NONE;
      long m = match(sp, k + 1);
      if (m == NONE) return NONE;
      long e = stmt_end(sp, m + 1, nesting + 1);
      if (e == NONE) return NONE;
      long x = skip_preproc(sp, e + 1);
      if (!is_id(sp, x, "else")) return e;
      k = x + 1;
      continue;
    }
    if (is_id(sp, k, "for") || is_id(sp, k, "while") || is_id(sp, k, "switch")) {
      if (!is_p(sp, k + 1, "(")) return NONE;
      long m = match(sp, k + 1);
      if (m == NONE) return NONE;
      k = m + 1;
      continue;
    }
    if (is_id(sp, k, "do")) {
      long e = stmt_end(sp, k + 1, nesting + 1);
      if (e == NONE) return NONE;
      long w = skip_preproc(sp, e + 1);
      if (!is_id(sp, w, "while") || !is_p(sp, w + 1, "(")) return NONE;
      long m = match(sp, w + 1);
      if (m == NONE || !is_p(sp, m + 1, ";")) return NONE;
      return m + 1;
    }
    if (is_id(sp, k, "else")) {
      k++;
      continue;
    }
    if (is_id(sp, k, "case")) {
      long c = scan_to(sp, k + 1, ":;");
      if (c == NONE || !is_p(sp, c, ":")) return NONE;
      k = c + 1;
      continue;
    }
    if ((is_id(sp, k, "default") || is_plain_ident(sp, k)) && is_p(sp, k + 1, ":")) {
      k += 2;
      continue;
    }
    return scan_to(sp, k, ";");
  }
}

/* Whether the piece at k starts like a declaration (see kn_cell.h). */
static bool is_decl_start(const splitter_t *sp, long k) {
  for (;;) { /* prefixes that go with either: _Pragma("..."), __extension__ */
    if (is_id(sp, k, "_Pragma") && is_p(sp, k + 1, "(")) {
      k = match(sp, k + 1);
      if (k == NONE) return false;
      k = skip_preproc(sp, k + 1);
    } else if (is_id(sp, k, "__extension__")) {
      k = skip_preproc(sp, k + 1);
    } else {
      break;
    }
  }
  if (is_p(sp, k, "[") && is_p(sp, k + 1, "[")) return true;
  if (!is_ident(sp, k)) return false;
  if (id_in(sp, k, stmt_words) || id_in(sp, k, asm_words)) return false;
  if (id_in(sp, k, storage_words) || id_in(sp, k, qualifier_words) ||
      id_in(sp, k, funcspec_words) || id_in(sp, k, type_words) || id_in(sp, k, sue_words) ||
      id_in(sp, k, typeof_words) || id_in(sp, k, attr_words))
    return true;
  if (is_keyword(sp, k) || is_p(sp, k + 1, ":")) return false;
  if (is_typedef_name(sp, k)) return true;
  /* An unknown typedef name: `my_t x`, `my_t *p = ...`, `my_t **f(void)`. */
  if (is_ident(sp, k + 1)) return true;
  if (!is_p(sp, k + 1, "*")) return false;
  long i = k + 1;
  while (is_p(sp, i, "*") || id_in(sp, i, qualifier_words)) i++;
  if (!is_plain_ident(sp, i)) return false;
  i++;
  return is_p(sp, i, ";") || is_p(sp, i, "=") || is_p(sp, i, ",") || is_p(sp, i, "[") ||
         is_p(sp, i, "(") || is_p(sp, i, ")") || id_in(sp, i, attr_words) ||
         id_in(sp, i, asm_words);
}

/* Whether k can start one of a K&R function's parameter declarations. */
static bool is_param_decl_start(const splitter_t *sp, long k) {
  return id_in(sp, k, type_words) || id_in(sp, k, qualifier_words) || id_in(sp, k, sue_words) ||
         is_id(sp, k, "register") || is_typedef_name(sp, k) ||
         (is_plain_ident(sp, k) && (is_ident(sp, k + 1) || is_p(sp, k + 1, "*")));
}

typedef struct specs {
  long start, end; /* token range */
  bool has_typedef, has_extern, has_static, is_inline, is_thread_local, has_type;
  long sue_kw, sue_tag;       /* struct/union/enum keyword and tag, or NONE */
  long body_open, body_close; /* its { } or NONE */
  long type_end;              /* after the body and the attributes that follow it */
} specs_t;

/* Parses the declaration specifiers from k into s, marking roles. Returns 0,
 * or -1 if a bracket does not balance. */
static int parse_specs(splitter_t *sp, long k, specs_t *s) {
  memset(s, 0, sizeof *s);
  s->start = k;
  s->sue_kw = s->sue_tag = s->body_open = s->body_close = s->type_end = NONE;
  while (k < sp->t.n) {
    if (sp->t.v[k].kind == TK_PREPROC) {
      k++;
      continue;
    }
    if (is_p(sp, k, "[") && is_p(sp, k + 1, "[")) {
      k = skip_attrs(sp, k);
      if (k == NONE) return -1;
      continue;
    }
    if (!is_ident(sp, k)) break;
    if (id_in(sp, k, storage_words)) {
      if (is_id(sp, k, "typedef")) s->has_typedef = true;
      if (is_id(sp, k, "extern")) s->has_extern = true;
      if (is_id(sp, k, "static")) {
        s->has_static = true;
        sp->role[k] |= R_STATIC | R_STORAGE;
      }
      if (is_id(sp, k, "register") || is_id(sp, k, "auto")) sp->role[k] |= R_STORAGE;
      if (id_in(sp, k, thread_words)) s->is_thread_local = true;
      k++;
    } else if ((id_in(sp, k, attr_words) || id_in(sp, k, typeof_words) ||
                id_in(sp, k, pragma_words)) &&
               is_p(sp, k + 1, "(")) {
      if (id_in(sp, k, typeof_words)) s->has_type = true;
      long m = match(sp, k + 1);
      if (m == NONE) return -1;
      k = m + 1;
    } else if (id_in(sp, k, qualifier_words)) {
      if (id_in(sp, k, const_words)) sp->role[k] |= R_CONST;
      k++;
    } else if (id_in(sp, k, funcspec_words)) {
      if (id_in(sp, k, inline_words)) s->is_inline = true;
      k++;
    } else if (id_in(sp, k, type_words)) {
      s->has_type = true;
      k++;
    } else if (id_in(sp, k, sue_words)) {
      s->has_type = true;
      s->sue_kw = k;
      k = skip_attrs(sp, k + 1);
      if (k == NONE) return -1;
      if (is_plain_ident(sp, k)) s->sue_tag = k++;
      k = skip_attrs(sp, k);
      if (k == NONE) return -1;
      if (is_p(sp, k, "{")) {
        s->body_open = k;
        s->body_close = match(sp, k);
        if (s->body_close == NONE) return -1;
        s->type_end = skip_attrs(sp, s->body_close + 1);
        if (s->type_end == NONE) return -1;
        if (s->sue_tag != NONE)
          for (long i = s->body_open; i < s->type_end; i++) sp->role[i] |= R_TAG_BODY;
        k = s->type_end;
      }
    } else if (!s->has_type && is_plain_ident(sp, k) &&
               (is_typedef_name(sp, k) || is_ident(sp, k + 1) || is_p(sp, k + 1, "*"))) {
      s->has_type = true; /* a typedef name */
      k++;
    } else {
      break;
    }
  }
  s->end = k;
  return 0;
}

typedef struct declr {
  long start, end;                /* token range, initializer excluded */
  long core_end;                  /* end without trailing attributes and asm label */
  long trail_start;               /* start of those trailing groups (== core_end) */
  long name;                      /* the declared identifier, or NONE */
  bool is_func;                   /* the name's own declarator is a function declarator */
  bool unsized;                   /* the name's own declarator is `[]` */
  long params_open, params_close; /* is_func: the parameter list */
  long init_start, init_end;      /* initializer tokens, or NONE */
} declr_t;

/* Finds d's name and shape. The name is the first plain identifier reached
 * going left to right into parentheses, past pointers and qualifiers. */
static void analyze_declarator(const splitter_t *sp, declr_t *d) {
  d->name = NONE;
  for (long k = d->start; k < d->end; k++) {
    if (sp->t.v[k].kind == TK_PREPROC || id_in(sp, k, qualifier_words)) continue;
    if ((id_in(sp, k, attr_words) || id_in(sp, k, asm_words)) && is_p(sp, k + 1, "(")) {
      k = match(sp, k + 1);
      if (k == NONE) return;
      continue;
    }
    if (is_p(sp, k, "[") && is_p(sp, k + 1, "[")) {
      k = match(sp, k);
      if (k == NONE) return;
      continue;
    }
    if (is_p(sp, k, "(") || is_p(sp, k, "*") || is_p(sp, k, "^")) continue;
    if (is_plain_ident(sp, k)) d->name = k;
    break;
  }
  if (d->name == NONE) return;
  /* `(f)(int)` declares a function too: look through parentheses that hold
   * only the name. */
  long a = d->name + 1, b = d->name - 1;
  while (a < d->end && b >= d->start && is_p(sp, a, ")") && is_p(sp, b, "(")) {
    a++;
    b--;
  }
  if (a < d->end && is_p(sp, a, "(")) {
    long m = match(sp, a);
    if (m != NONE && m < d->end) {
      d->is_func = true;
      d->params_open = a;
      d->params_close = m;
    }
  }
  d->unsized = a + 1 < d->end && is_p(sp, a, "[") && is_p(sp, a + 1, "]");
  /* Trailing __attribute__ and asm groups. */
  d->trail_start = NONE;
  for (long k = d->name + 1; k < d->end;) {
    if ((id_in(sp, k, attr_words) || id_in(sp, k, asm_words)) && is_p(sp, k + 1, "(")) {
      if (d->trail_start == NONE) d->trail_start = k;
      long m = match(sp, k + 1);
      k = m == NONE ? d->end : m + 1;
      continue;
    }
    d->trail_start = NONE;
    long m = closer_of(&sp->t.v[k]) ? match(sp, k) : NONE;
    k = m == NONE ? k + 1 : m + 1;
  }
  if (d->trail_start == NONE) d->trail_start = d->end;
  d->core_end = d->trail_start;
}

/* Whether a function declarator's parameters are a K&R identifier list. */
static bool is_identifier_list(const splitter_t *sp, const declr_t *d) {
  if (!d->is_func || d->params_close == d->params_open + 1) return false;
  for (long k = d->params_open + 1; k < d->params_close; k++) {
    bool want_ident = (k - d->params_open) % 2 == 1;
    if (want_ident ? !is_plain_ident(sp, k) || is_typedef_name(sp, k) : !is_p(sp, k, ","))
      return false;
  }
  return (d->params_close - d->params_open) % 2 == 0;
}

/* ---- building items ---- */

static kn_item_t *new_item(splitter_t *sp, kn_item_kind_t kind, long first) {
  kn_items_t *o = sp->out;
  if (o->n == sp->cap) {
    sp->cap = sp->cap ? sp->cap * 2 : 16;
    o->items = fl__xrealloc(o->items, sp->cap, sizeof *o->items);
  }
  kn_item_t *it = &o->items[o->n++];
  memset(it, 0, sizeof *it);
  it->kind = kind;
  it->line = sp->t.v[first].line + sp->line_offset;
  it->col = sp->t.v[first].col;
  return it;
}

static char *slice(const splitter_t *sp, long first, long last) {
  size_t a = sp->t.v[first].start, b = sp->t.v[last].end;
  return fl__xstrndup(sp->code + a, b - a);
}

static char *tok_text(const splitter_t *sp, long k) {
  return slice(sp, k, k);
}

/* An item whose text is the tokens first..last. */
static kn_item_t *add_item(splitter_t *sp, kn_item_kind_t kind, long first, long last) {
  kn_item_t *it = new_item(sp, kind, first);
  it->text = slice(sp, first, last);
  return it;
}

/* Whether the tokens from k to the end are an expression left without its
 * ';': balanced brackets, no ';' or directive among them, and not the start
 * of a statement of another kind (a keyword, a block, a label). */
static bool is_trailing_expression(const splitter_t *sp, long k) {
  static const char *const statement_words[] = {
      "if",   "for",     "while", "do",   "switch",         "return",        "break",
      "continue", "goto", "case",  "default", "else", "_Static_assert", "static_assert",
      "__label__", NULL};
  if (k >= sp->t.n || is_p(sp, k, "{") || id_in(sp, k, statement_words)) return false;
  if (is_plain_ident(sp, k) && is_p(sp, k + 1, ":")) return false;
  for (long i = k; i < sp->t.n; i++) {
    const tok_t *t = &sp->t.v[i];
    if (t->kind == TK_PREPROC || is_p(sp, i, ";") || is_closer(t)) return false;
    if (closer_of(t)) {
      i = match(sp, i);
      if (i == NONE) return false;
    }
  }
  return true;
}

/* A STMT holding everything from token k to the end of the code. */
static void add_rest(splitter_t *sp, long k) {
  kn_item_t *it = new_item(sp, KN_ITEM_STMT, k);
  size_t a = sp->t.v[k].start, b = strlen(sp->code);
  while (b > a && (is_blank((unsigned char)sp->code[b - 1]) || sp->code[b - 1] == '\n')) b--;
  it->text = fl__xstrndup(sp->code + a, b - a);
}

/* Appends tokens [from, to) to sb on one line, leaving out tokens whose role
 * has a bit of skip: one space where the source had white space, a comment or
 * a left-out token between two tokens, none where they touched. Directives
 * keep lines of their own. */
static void render(const splitter_t *sp, kn_strbuf_t *sb, long from, long to, unsigned skip) {
  long prev = NONE;
  for (long k = from; k < to; k++) {
    if (sp->role[k] & skip) continue;
    const tok_t *t = &sp->t.v[k];
    if (t->kind == TK_PREPROC) {
      if (sb->len && sb->data[sb->len - 1] != '\n') kn_strbuf_putc(sb, '\n');
      kn_strbuf_append(sb, sp->code + t->start, t->end - t->start);
      kn_strbuf_putc(sb, '\n');
      prev = NONE;
      continue;
    }
    /* `*const p` without its const reads `*p`, not `* p`. */
    bool touch = prev != NONE && ((k == prev + 1 && t->start == sp->t.v[prev].end) ||
                                  (k > prev + 1 && is_p(sp, prev, "*")));
    if (sb->len && !touch && sb->data[sb->len - 1] != ' ' && sb->data[sb->len - 1] != '\n')
      kn_strbuf_putc(sb, ' ');
    kn_strbuf_append(sb, sp->code + t->start, t->end - t->start);
    prev = k;
  }
}

/* Text of tokens first..last with the tokens of roles R_STATIC, and those in
 * (blank_from, blank_to) if that range is not empty, replaced by spaces. */
static char *blanked(const splitter_t *sp, long first, long last, long blank_from, long blank_to) {
  char *s = slice(sp, first, last);
  size_t base = sp->t.v[first].start;
  for (long k = first; k <= last; k++) {
    const tok_t *t = &sp->t.v[k];
    if ((sp->role[k] & R_STATIC) || (k > blank_from && k < blank_to))
      memset(s + (t->start - base), ' ', t->end - t->start);
  }
  return s;
}

static void add_cell_typedef(splitter_t *sp, long k) {
  sp->cell_typedefs =
      fl__xrealloc(sp->cell_typedefs, sp->n_cell_typedefs + 1, sizeof *sp->cell_typedefs);
  sp->cell_typedefs[sp->n_cell_typedefs++] = tok_text(sp, k);
}

/* "struct P", or NULL for an anonymous struct/union/enum. */
static char *sue_name(const splitter_t *sp, const specs_t *s) {
  if (s->sue_kw == NONE || s->sue_tag == NONE) return NULL;
  kn_strbuf_t sb = KN_STRBUF_INIT;
  render(sp, &sb, s->sue_kw, s->sue_kw + 1, 0);
  kn_strbuf_putc(&sb, ' ');
  render(sp, &sb, s->sue_tag, s->sue_tag + 1, 0);
  return kn_strbuf_steal(&sb);
}

static void add_func(splitter_t *sp, const specs_t *s, const declr_t *d, long sig_last,
                     long body_close, bool knr) {
  kn_item_t *it = add_item(sp, KN_ITEM_FUNC, s->start, body_close);
  it->name = tok_text(sp, d->name);
  if (knr) /* `int f(a, b) int a, b; {...}`: the prototype is `int f(    )` */
    it->signature = blanked(sp, s->start, d->params_close, d->params_open, d->params_close);
  else
    it->signature = blanked(sp, s->start, sig_last, NONE, NONE);
  it->definition = blanked(sp, s->start, body_close, NONE, NONE);
  it->is_static = s->has_static;
  it->is_inline = s->is_inline;
}

/* decl (or decl_mutable) of a GLOBAL: the declarator's trailing attributes
 * first, then the specifiers without storage class (and without a tagged
 * body), then the declarator without initializer, attributes or asm label. */
static char *global_decl(splitter_t *sp, const specs_t *s, const declr_t *d, bool mutable_) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  unsigned skip = R_STORAGE | R_TAG_BODY | R_SKIP;
  for (long k = d->trail_start; k < d->end;) {
    long m = match(sp, k + 1);
    if (m == NONE) break;
    if (id_in(sp, k, attr_words)) render(sp, &sb, k, m + 1, 0);
    k = m + 1;
  }
  if (mutable_) {
    long star = NONE;
    for (long k = d->start; k < d->name; k++)
      if (is_p(sp, k, "*")) star = k;
    if (star == NONE) {
      for (long k = s->start; k < s->end; k++)
        if (sp->role[k] & R_CONST) sp->role[k] |= R_SKIP;
    } else {
      for (long k = star + 1; k < d->name; k++)
        if (id_in(sp, k, const_words)) sp->role[k] |= R_SKIP;
    }
  }
  render(sp, &sb, s->start, s->end, skip);
  render(sp, &sb, d->start, d->core_end, skip);
  for (long k = s->start; k < d->end; k++) sp->role[k] &= (unsigned char)~R_SKIP;
  return kn_strbuf_steal(&sb);
}

/* Whether tokens a..b are an initializer macro such as
 * PTHREAD_MUTEX_INITIALIZER or ATOMIC_VAR_INIT(0): an upper-case name holding
 * "INIT", alone or called. Such macros usually expand to a braced list, which
 * only works as a static initializer. */
static bool is_init_macro(const splitter_t *sp, long a, long b) {
  if (!is_plain_ident(sp, a)) return false;
  if (a != b && !(is_p(sp, a + 1, "(") && match(sp, a + 1) == b)) return false;
  const tok_t *t = &sp->t.v[a];
  for (size_t i = t->start; i < t->end; i++) {
    char c = sp->code[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  for (size_t i = t->start; i + 4 <= t->end; i++)
    if (memcmp(sp->code + i, "INIT", 4) == 0) return true;
  return false;
}

static void add_global(splitter_t *sp, const specs_t *s, const declr_t *d, long last) {
  kn_item_t *it = add_item(sp, KN_ITEM_GLOBAL, s->start, last);
  it->name = tok_text(sp, d->name);
  it->decl = global_decl(sp, s, d, false);
  it->decl_mutable = global_decl(sp, s, d, true);
  it->is_static = s->has_static;
  it->is_thread_local = s->is_thread_local;
  it->is_array_unsized = d->unsized;
  if (d->init_start == NONE) return;
  long a = skip_preproc(sp, d->init_start), b = d->init_end - 1;
  it->init = slice(sp, a, b);
  it->init_line = sp->t.v[a].line + sp->line_offset;
  it->init_col = sp->t.v[a].col;
  if (is_p(sp, a, "{")) {
    it->init_is_static = match(sp, a) == b;
  } else if (is_init_macro(sp, a, b)) {
    it->init_is_static = true;
  } else {
    it->init_is_static = true;
    for (long k = a; k <= b; k++)
      if (sp->t.v[k].kind != TK_STRING && sp->t.v[k].kind != TK_PREPROC) it->init_is_static = false;
  }
}

/* One PROTO. Its text is the declaration as written when it declares only this
 * function; otherwise (`int f(int), g(void);`, or a struct defined in the
 * same declaration) it is rebuilt on one line from the specifiers and this
 * declarator, so that no item declares another item's name. */
static void add_proto(splitter_t *sp, const specs_t *s, const declr_t *d, size_t n_declr,
                      long last) {
  kn_item_t *it;
  if (n_declr == 1 && s->body_open == NONE) {
    it = add_item(sp, KN_ITEM_PROTO, s->start, last);
  } else {
    it = new_item(sp, KN_ITEM_PROTO, s->start);
    kn_strbuf_t sb = KN_STRBUF_INIT;
    render(sp, &sb, s->start, s->end, R_TAG_BODY);
    render(sp, &sb, d->start, d->end, 0);
    kn_strbuf_putc(&sb, ';');
    it->text = kn_strbuf_steal(&sb);
  }
  it->name = tok_text(sp, d->name);
  it->is_static = s->has_static;
  it->is_inline = s->is_inline;
}

typedef enum parse_status {
  PARSE_OK,
  PARSE_UNBALANCED,   /* the rest of the code becomes one STMT */
  PARSE_UNRECOGNISED, /* tokens start..*last become one STMT (rest if *last is NONE) */
} parse_status_t;

/* Parses the declaration starting at k. On PARSE_OK its items are appended
 * and *last is its final token. Nothing is appended otherwise. */
static parse_status_t parse_decl(splitter_t *sp, long k, long *last) {
  specs_t s;
  declr_t *ds = NULL;
  size_t nd = 0;
  parse_status_t st = PARSE_UNBALANCED;
  *last = NONE;

  if (parse_specs(sp, k, &s) < 0) goto fail;
  k = skip_preproc(sp, s.end);
  if (k >= sp->t.n) goto fail;
  if (is_p(sp, k, ";")) {
    *last = k;
    if (s.sue_kw == NONE) { /* `int;` */
      st = PARSE_UNRECOGNISED;
      goto fail;
    }
    kn_item_t *it = add_item(sp, KN_ITEM_TYPE, s.start, k);
    it->name = sue_name(sp, &s);
    return PARSE_OK;
  }

  for (;;) {
    declr_t d;
    memset(&d, 0, sizeof d);
    d.start = k;
    d.init_start = d.init_end = NONE;
    k = scan_to(sp, k, ",;={");
    if (k == NONE) goto fail;
    d.end = k;
    analyze_declarator(sp, &d);
    if (d.name == NONE) {
      st = PARSE_UNRECOGNISED;
      *last = is_p(sp, k, "{") ? match(sp, k) : scan_to(sp, k, ";");
      goto fail;
    }
    if (nd == 0 && !s.has_typedef && is_identifier_list(sp, &d) &&
        is_param_decl_start(sp, skip_preproc(sp, d.params_close + 1))) {
      /* A K&R definition: parameter declarations, then the body. */
      long j = skip_preproc(sp, d.params_close + 1);
      while (!is_p(sp, j, "{")) {
        if (j >= sp->t.n) goto fail;
        if (!is_param_decl_start(sp, j)) {
          st = PARSE_UNRECOGNISED;
          *last = scan_to(sp, j, ";");
          goto fail;
        }
        j = scan_to(sp, j, ";{");
        if (j == NONE || !is_p(sp, j, ";")) goto fail;
        j = skip_preproc(sp, j + 1);
      }
      long close = match(sp, j);
      if (close == NONE) goto fail;
      add_func(sp, &s, &d, NONE, close, true);
      *last = close;
      free(ds);
      return PARSE_OK;
    }
    if (is_p(sp, k, "{")) {
      long close = match(sp, k);
      if (close == NONE) goto fail;
      *last = close;
      if (nd > 0 || s.has_typedef || !d.is_func) {
        st = PARSE_UNRECOGNISED;
        goto fail;
      }
      add_func(sp, &s, &d, k - 1, close, is_identifier_list(sp, &d));
      free(ds);
      return PARSE_OK;
    }
    if (is_p(sp, k, "=")) {
      d.init_start = k + 1;
      k = scan_to(sp, k + 1, ",;");
      if (k == NONE) goto fail;
      d.init_end = k;
      if (skip_preproc(sp, d.init_start) >= d.init_end) {
        st = PARSE_UNRECOGNISED;
        *last = scan_to(sp, k, ";");
        goto fail;
      }
    }
    ds = fl__xrealloc(ds, nd + 1, sizeof *ds);
    ds[nd++] = d;
    if (is_p(sp, k, ";")) break;
    k++; /* ',' */
  }
  *last = k;

  bool all_func = true;
  for (size_t i = 0; i < nd; i++)
    if (!ds[i].is_func) all_func = false;
  if (s.has_typedef) {
    kn_item_t *it = add_item(sp, KN_ITEM_TYPE, s.start, k);
    it->name = tok_text(sp, ds[0].name);
    for (size_t i = 0; i < nd; i++) add_cell_typedef(sp, ds[i].name);
  } else if (s.has_extern && !all_func) {
    kn_item_t *it = add_item(sp, KN_ITEM_EXTERN, s.start, k);
    it->name = tok_text(sp, ds[0].name);
  } else {
    if (s.body_open != NONE && s.sue_tag != NONE) {
      /* `struct P { ... } p1, p2;`: the type on its own, `struct P { ... };` */
      kn_item_t *it = new_item(sp, KN_ITEM_TYPE, s.sue_kw);
      kn_strbuf_t sb = KN_STRBUF_INIT;
      size_t a = sp->t.v[s.sue_kw].start, b = sp->t.v[s.type_end - 1].end;
      kn_strbuf_append(&sb, sp->code + a, b - a);
      kn_strbuf_putc(&sb, ';');
      it->text = kn_strbuf_steal(&sb);
      it->name = sue_name(sp, &s);
    }
    for (size_t i = 0; i < nd; i++) {
      if (ds[i].is_func)
        add_proto(sp, &s, &ds[i], nd, k);
      else
        add_global(sp, &s, &ds[i], k);
    }
  }
  free(ds);
  return PARSE_OK;

fail:
  free(ds);
  return st;
}

/* Index of the #endif closing the conditional group opened at k, or NONE. */
static long group_end(const splitter_t *sp, long k) {
  int depth = 0;
  for (; k < sp->t.n; k++) {
    if (is_directive(sp, k, "if") || is_directive(sp, k, "ifdef") || is_directive(sp, k, "ifndef"))
      depth++;
    else if (is_directive(sp, k, "endif") && --depth == 0)
      return k;
  }
  return NONE;
}

/* Whether the directive at k is a #pragma that applies to the statement after
 * it (`#pragma omp parallel for`, `#pragma GCC unroll 4`), as opposed to one
 * that applies at file scope (`#pragma pack`, `#pragma omp declare simd`). */
static bool is_statement_pragma(const splitter_t *sp, long k) {
  static const char *const stmt_pragmas[] = {
      "omp",       "acc",        "simd",         "ivdep",      "unroll", "nounroll",
      "GCC ivdep", "GCC unroll", "GCC novector", "clang loop", NULL};
  static const char *const file_scope_omp[] = {"omp declare", "omp threadprivate", "omp requires",
                                               "omp end",     "omp begin",         "omp assumes",
                                               NULL};
  if (!is_directive(sp, k, "pragma")) return false;
  /* The first two words after `pragma`, one space apart. */
  const tok_t *t = &sp->t.v[k];
  char words[64];
  size_t n = 0, p = t->dname + t->dname_len;
  for (int w = 0; w < 2; w++) {
    while (p < t->end && is_blank((unsigned char)sp->code[p])) p++;
    if (w && n < sizeof words - 1) words[n++] = ' ';
    while (p < t->end && is_ident_char((unsigned char)sp->code[p]) && n < sizeof words - 1)
      words[n++] = sp->code[p++];
  }
  words[n] = '\0';
  for (size_t i = 0; file_scope_omp[i]; i++)
    if (strcmp(words, file_scope_omp[i]) == 0) return false;
  for (size_t i = 0; stmt_pragmas[i]; i++) {
    size_t len = strlen(stmt_pragmas[i]);
    if (strncmp(words, stmt_pragmas[i], len) == 0 && (words[len] == ' ' || !words[len]))
      return true;
  }
  return false;
}

/* Adds the directive (or conditional group) at k. Returns the next index, or
 * NONE when an unterminated group (or statement) took the rest of the code. */
static long add_directive(splitter_t *sp, long k) {
  if (is_statement_pragma(sp, k)) {
    long j = k;
    while (j < sp->t.n && is_statement_pragma(sp, j)) j++;
    if (j < sp->t.n && sp->t.v[j].kind != TK_PREPROC && !is_p(sp, j, ";") &&
        !is_decl_start(sp, j)) {
      long e = stmt_end(sp, j, 0);
      if (e == NONE) {
        add_rest(sp, k);
        return NONE;
      }
      add_item(sp, KN_ITEM_STMT, k, e); /* the pragmas and their statement */
      return e + 1;
    }
  }
  if (is_directive(sp, k, "if") || is_directive(sp, k, "ifdef") || is_directive(sp, k, "ifndef")) {
    long e = group_end(sp, k);
    if (e == NONE) {
      add_rest(sp, k);
      return NONE;
    }
    add_item(sp, KN_ITEM_PREPROC, k, e);
    return e + 1;
  }
  if (is_directive(sp, k, "else") || is_directive(sp, k, "elif") || is_directive(sp, k, "endif") ||
      is_directive(sp, k, "elifdef") || is_directive(sp, k, "elifndef")) {
    /* Out of a group: the compiler will say so, and it must not be kept. */
    add_item(sp, KN_ITEM_STMT, k, k);
    return k + 1;
  }
  kn_item_t *it = add_item(sp, KN_ITEM_PREPROC, k, k);
  if (is_directive(sp, k, "define")) {
    const tok_t *t = &sp->t.v[k];
    size_t p = t->dname + t->dname_len;
    while (p < t->end && is_blank((unsigned char)sp->code[p])) p++;
    size_t q = p;
    while (q < t->end && is_ident_char((unsigned char)sp->code[q])) q++;
    if (q > p) it->name = fl__xstrndup(sp->code + p, q - p);
  }
  return k + 1;
}

int kn_cell_split(const char *code, const char *const *typedefs, int first_line, kn_items_t *out) {
  splitter_t sp;
  memset(&sp, 0, sizeof sp);
  memset(out, 0, sizeof *out);
  sp.code = code;
  sp.session_typedefs = typedefs;
  sp.line_offset = first_line - 1;
  sp.out = out;
  tokenize(code, &sp.t);
  sp.role = fl__xcalloc((size_t)sp.t.n + 1, 1);
  sp.stack = fl__xmalloc((size_t)sp.t.n + 1, 1);

  long k = 0;
  while (k < sp.t.n) {
    if (sp.t.v[k].kind == TK_PREPROC) {
      k = add_directive(&sp, k);
      if (k == NONE) break;
      continue;
    }
    if (is_p(&sp, k, ";")) { /* empty statement, as after a function body */
      k++;
      continue;
    }
    long last;
    if (is_decl_start(&sp, k)) {
      parse_status_t st = parse_decl(&sp, k, &last);
      if (st == PARSE_OK) {
        k = last + 1;
        continue;
      }
      if (st == PARSE_UNRECOGNISED && last != NONE) {
        add_item(&sp, KN_ITEM_STMT, k, last);
        k = last + 1;
        continue;
      }
      add_rest(&sp, k);
      break;
    }
    last = stmt_end(&sp, k, 0);
    if (last == NONE) {
      add_rest(&sp, k);
      out->items[out->n - 1].is_expression = is_trailing_expression(&sp, k);
      break;
    }
    add_item(&sp, KN_ITEM_STMT, k, last);
    k = last + 1;
  }

  for (size_t i = 0; i < sp.n_cell_typedefs; i++) free(sp.cell_typedefs[i]);
  free(sp.cell_typedefs);
  free(sp.t.v);
  free(sp.role);
  free(sp.stack);
  return 0;
}

void kn_items_free(kn_items_t *items) {
  if (!items) return;
  for (size_t i = 0; i < items->n; i++) {
    kn_item_t *it = &items->items[i];
    free(it->text);
    free(it->name);
    free(it->signature);
    free(it->definition);
    free(it->decl);
    free(it->decl_mutable);
    free(it->init);
  }
  free(items->items);
  items->items = NULL;
  items->n = 0;
}

/* ---- completeness ---- */

/* Replaces the magic lines at the start of code (blank lines may come before
 * and between them) with blanks, so that their arguments do not count. */
static void blank_leading_magics(char *code) {
  char *p = code;
  while (*p) {
    char *q = p;
    while (is_blank((unsigned char)*q)) q++;
    char *eol = strchr(q, '\n');
    if (!eol) eol = q + strlen(q);
    if (*q == '%')
      memset(q, ' ', (size_t)(eol - q));
    else if (q != eol)
      break;
    p = *eol ? eol + 1 : eol;
  }
}

bool kn_cell_has_cell_magic(const char *code) {
  const char *p = code;
  while (is_blank((unsigned char)*p) || *p == '\n') p++;
  return p[0] == '%' && p[1] == '%';
}

const char *kn_cell_completeness(const char *code) {
  char *copy = fl__xstrdup(code);
  const char *verdict = "complete";
  toks_t t;
  char *stack = NULL;
  memset(&t, 0, sizeof t);

  /* A cell magic's body ends with a blank line, as in IPython. */
  if (kn_cell_has_cell_magic(code)) {
    const char *last = strrchr(code, '\n');
    last = last ? last + 1 : code;
    while (is_blank((unsigned char)*last)) last++;
    if (*last || !strchr(code, '\n')) {
      verdict = "incomplete";
      goto done;
    }
  }

  blank_leading_magics(copy);
  size_t len = strlen(copy);
  while (len > 0 && (is_blank((unsigned char)copy[len - 1]) || copy[len - 1] == '\n')) len--;
  if (len > 0 && copy[len - 1] == '\\') {
    verdict = "incomplete";
    goto done;
  }
  tokenize(copy, &t);
  stack = fl__xmalloc((size_t)t.n + 1, 1);
  long depth = 0;
  for (long i = 0; i < t.n; i++) {
    char c = closer_of(&t.v[i]);
    if (c) {
      stack[depth++] = c;
    } else if (is_closer(&t.v[i])) {
      if (depth == 0 || stack[depth - 1] != t.v[i].punct[0]) {
        verdict = "invalid";
        goto done;
      }
      depth--;
    }
  }
  if (t.open_literal)
    verdict = "invalid"; /* a literal cannot go on to the next line */
  else if (t.open_comment || depth > 0)
    verdict = "incomplete";

done:
  free(stack);
  free(t.v);
  free(copy);
  return verdict;
}
