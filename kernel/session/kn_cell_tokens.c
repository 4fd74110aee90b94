/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_cell_tokens: a cell's C as tokens, and reading them (see
 * kn__cell.h). The lexer turns the cell into tokens (identifiers, numbers,
 * string and character literals, punctuators, and whole preprocessor
 * directives), dropping white space and comments but keeping each token's
 * byte range, line and column, so that every item's text is an exact slice
 * of the cell. Brackets are matched on demand, so an unbalanced piece only
 * affects the text from where it starts. */
#include <stdlib.h>
#include <string.h>

#include "kn__cell.h"
#include "kn_text.h"

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
const char *const kn__storage_words[] = {"typedef",  "extern",       "static",
                                         "auto",     "register",     "_Thread_local",
                                         "__thread", "thread_local", NULL};
/* Type specifier keywords. */
const char *const kn__type_words[] = {
    "void",        "char",        "short",       "int",
    "long",        "float",       "double",      "signed",
    "unsigned",    "_Bool",       "_Complex",    "_Imaginary",
    "__complex__", "__int128",    "__signed",    "__signed__",
    "_Float16",    "_Float32",    "_Float64",    "_Float128",
    "_Float32x",   "_Float64x",   "_Float128x",  "_Decimal32",
    "_Decimal64",  "_Decimal128", "__auto_type", "__builtin_va_list",
    "__fp16",      "__bf16",      NULL};
/* Words followed by a parenthesised argument inside a declaration. */
const char *const kn__attr_words[] = {"__attribute__", "__attribute", "__declspec",
                                      "_Alignas",      "alignas",     NULL};
const char *const kn__asm_words[] = {"asm", "__asm__", "__asm", NULL};
const char *const kn__typeof_words[] = {
    "typeof",  "__typeof__", "__typeof", "typeof_unqual", "__typeof_unqual__",
    "_Atomic", "_BitInt",    NULL};
/* Words that start a statement. */
const char *const kn__stmt_words[] = {"if",
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

typedef struct lexer {
  const char *s;
  size_t pos, len;
  int line, col;
} lexer_t;

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
void kn__tokenize(const char *code, toks_t *t) {
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

bool kn__is_keyword(const splitter_t *sp, long k) {
  return id_in(sp, k, kn_c_keywords) || id_in(sp, k, kn__storage_words) ||
         id_in(sp, k, kn__typeof_words) || id_in(sp, k, kn__stmt_words) ||
         id_in(sp, k, kn__attr_words) || id_in(sp, k, kn__type_words);
}

/* A plain identifier: neither a keyword nor anything the splitter gives a
 * meaning of its own. */
bool kn__is_plain_ident(const splitter_t *sp, long k) {
  return is_ident(sp, k) && !kn__is_keyword(sp, k);
}

bool kn__is_typedef_name(const splitter_t *sp, long k) {
  if (!kn__is_plain_ident(sp, k)) return false;
  if (id_in(sp, k, builtin_typedefs)) return true;
  if (sp->session_typedefs && id_in(sp, k, sp->session_typedefs)) return true;
  for (size_t i = 0; i < sp->n_cell_typedefs; i++)
    if (tok_eq(sp, k, sp->cell_typedefs[i])) return true;
  return false;
}

/* Index of the bracket closing the opener at k, or NONE when the code ends
 * first or a closer of the wrong kind comes first. Directives are ignored. */
long kn__match(const splitter_t *sp, long k) {
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
long kn__scan_to(const splitter_t *sp, long k, const char *stops) {
  for (; k >= 0 && k < sp->t.n; k++) {
    const tok_t *t = &sp->t.v[k];
    if (t->kind != TK_PUNCT) continue;
    if (!t->punct[1] && strchr(stops, t->punct[0])) return k;
    if (closer_of(t)) {
      k = kn__match(sp, k);
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
long kn__skip_attrs(const splitter_t *sp, long k) {
  for (;;) {
    k = skip_preproc(sp, k);
    if ((id_in(sp, k, kn__attr_words) || id_in(sp, k, kn__asm_words)) && is_p(sp, k + 1, "(")) {
      long m = kn__match(sp, k + 1);
      if (m == NONE) return NONE;
      k = m + 1;
    } else if (is_p(sp, k, "[") && is_p(sp, k + 1, "[")) {
      long m = kn__match(sp, k);
      if (m == NONE) return NONE;
      k = m + 1;
    } else {
      return k;
    }
  }
}

/* ---- items made of tokens ---- */

kn_item_t *kn__new_item(splitter_t *sp, kn_item_kind_t kind, long first) {
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

char *kn__slice(const splitter_t *sp, long first, long last) {
  size_t a = sp->t.v[first].start, b = sp->t.v[last].end;
  return fl__xstrndup(sp->code + a, b - a);
}

char *kn__tok_text(const splitter_t *sp, long k) {
  return kn__slice(sp, k, k);
}

/* An item whose text is the tokens first..last. */
kn_item_t *kn__add_item(splitter_t *sp, kn_item_kind_t kind, long first, long last) {
  kn_item_t *it = kn__new_item(sp, kind, first);
  it->text = kn__slice(sp, first, last);
  return it;
}
