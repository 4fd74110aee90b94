/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_cell: splits the C text of a cell into top-level items (see kn_cell.h).
 *
 * Two passes. The lexer (kn_cell_tokens.c) turns the cell into tokens. The
 * splitter, here, then walks the tokens at bracket depth 0, decides for each
 * piece whether it is a directive, a declaration (read by kn_cell_decl.c)
 * or a statement, and finds where it ends; brackets are matched on demand,
 * so an unbalanced piece only affects the text from where it starts. */
#include "kn_cell.h"

#include <stdlib.h>
#include <string.h>

#include "kn__cell.h"
#include "kn_text.h"

/* Index of the last token of the statement starting at k, or NONE if it does
 * not end (unbalanced, or the code stops first). Labels and else-if chains
 * are followed in a loop so that long chains do not recurse. */
static long stmt_end(const splitter_t *sp, long k, int nesting) {
  if (nesting > MAX_NESTING) return NONE;
  for (;;) {
    k = skip_preproc(sp, k);
    if (k >= sp->t.n) return NONE;
    if (is_p(sp, k, "{")) return kn__match(sp, k);
    if (is_p(sp, k, ";")) return k;
    if (is_id(sp, k, "_Pragma") && is_p(sp, k + 1, "(")) { /* _Pragma("omp ...") for (...) */
      long m = kn__match(sp, k + 1);
      if (m == NONE) return NONE;
      k = m + 1;
      continue;
    }
    if (is_id(sp, k, "if")) {
      if (!is_p(sp, k + 1, "(")) return NONE;
      long m = kn__match(sp, k + 1);
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
      long m = kn__match(sp, k + 1);
      if (m == NONE) return NONE;
      k = m + 1;
      continue;
    }
    if (is_id(sp, k, "do")) {
      long e = stmt_end(sp, k + 1, nesting + 1);
      if (e == NONE) return NONE;
      long w = skip_preproc(sp, e + 1);
      if (!is_id(sp, w, "while") || !is_p(sp, w + 1, "(")) return NONE;
      long m = kn__match(sp, w + 1);
      if (m == NONE || !is_p(sp, m + 1, ";")) return NONE;
      return m + 1;
    }
    if (is_id(sp, k, "else")) {
      k++;
      continue;
    }
    if (is_id(sp, k, "case")) {
      long c = kn__scan_to(sp, k + 1, ":;");
      if (c == NONE || !is_p(sp, c, ":")) return NONE;
      k = c + 1;
      continue;
    }
    if ((is_id(sp, k, "default") || kn__is_plain_ident(sp, k)) && is_p(sp, k + 1, ":")) {
      k += 2;
      continue;
    }
    return kn__scan_to(sp, k, ";");
  }
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
  if (kn__is_plain_ident(sp, k) && is_p(sp, k + 1, ":")) return false;
  for (long i = k; i < sp->t.n; i++) {
    const tok_t *t = &sp->t.v[i];
    if (t->kind == TK_PREPROC || is_p(sp, i, ";") || is_closer(t)) return false;
    if (closer_of(t)) {
      i = kn__match(sp, i);
      if (i == NONE) return false;
    }
  }
  return true;
}

/* A STMT holding everything from token k to the end of the code. */
static void add_rest(splitter_t *sp, long k) {
  kn_item_t *it = kn__new_item(sp, KN_ITEM_STMT, k);
  size_t a = sp->t.v[k].start, b = strlen(sp->code);
  while (b > a && (is_blank((unsigned char)sp->code[b - 1]) || sp->code[b - 1] == '\n')) b--;
  it->text = fl__xstrndup(sp->code + a, b - a);
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
        !kn__is_decl_start(sp, j)) {
      long e = stmt_end(sp, j, 0);
      if (e == NONE) {
        add_rest(sp, k);
        return NONE;
      }
      kn__add_item(sp, KN_ITEM_STMT, k, e); /* the pragmas and their statement */
      return e + 1;
    }
  }
  if (is_directive(sp, k, "if") || is_directive(sp, k, "ifdef") || is_directive(sp, k, "ifndef")) {
    long e = group_end(sp, k);
    if (e == NONE) {
      add_rest(sp, k);
      return NONE;
    }
    kn__add_item(sp, KN_ITEM_PREPROC, k, e);
    return e + 1;
  }
  if (is_directive(sp, k, "else") || is_directive(sp, k, "elif") || is_directive(sp, k, "endif") ||
      is_directive(sp, k, "elifdef") || is_directive(sp, k, "elifndef")) {
    /* Out of a group: the compiler will say so, and it must not be kept. */
    kn__add_item(sp, KN_ITEM_STMT, k, k);
    return k + 1;
  }
  kn_item_t *it = kn__add_item(sp, KN_ITEM_PREPROC, k, k);
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
  kn__tokenize(code, &sp.t);
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
    if (kn__is_decl_start(&sp, k)) {
      parse_status_t st = kn__parse_decl(&sp, k, &last);
      if (st == PARSE_OK) {
        k = last + 1;
        continue;
      }
      if (st == PARSE_UNRECOGNISED && last != NONE) {
        kn__add_item(&sp, KN_ITEM_STMT, k, last);
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
    kn__add_item(&sp, KN_ITEM_STMT, k, last);
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
  kn__tokenize(copy, &t);
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
