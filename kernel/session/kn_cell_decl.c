/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_cell_decl: a declaration of a cell, read (see kn__cell.h): its
 * specifiers and declarators, and the items it gives, with the texts the
 * session rewrites it from (kn_cell.h: signature, definition, decl,
 * decl_mutable, init). */
#include <stdlib.h>
#include <string.h>

#include "kn__cell.h"
#include "kn_text.h"

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
static const char *const pragma_words[] = {"_Pragma", NULL};
static const char *const sue_words[] = {"struct", "union", "enum", NULL};

/* Whether the piece at k starts like a declaration (see kn_cell.h). */
bool kn__is_decl_start(const splitter_t *sp, long k) {
  for (;;) { /* prefixes that go with either: _Pragma("..."), __extension__ */
    if (is_id(sp, k, "_Pragma") && is_p(sp, k + 1, "(")) {
      k = kn__match(sp, k + 1);
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
  if (id_in(sp, k, kn__stmt_words) || id_in(sp, k, kn__asm_words)) return false;
  if (id_in(sp, k, kn__storage_words) || id_in(sp, k, qualifier_words) ||
      id_in(sp, k, funcspec_words) || id_in(sp, k, kn__type_words) || id_in(sp, k, sue_words) ||
      id_in(sp, k, kn__typeof_words) || id_in(sp, k, kn__attr_words))
    return true;
  if (kn__is_keyword(sp, k) || is_p(sp, k + 1, ":")) return false;
  if (kn__is_typedef_name(sp, k)) return true;
  /* An unknown typedef name: `my_t x`, `my_t *p = ...`, `my_t **f(void)`. */
  if (is_ident(sp, k + 1)) return true;
  if (!is_p(sp, k + 1, "*")) return false;
  long i = k + 1;
  while (is_p(sp, i, "*") || id_in(sp, i, qualifier_words)) i++;
  if (!kn__is_plain_ident(sp, i)) return false;
  i++;
  return is_p(sp, i, ";") || is_p(sp, i, "=") || is_p(sp, i, ",") || is_p(sp, i, "[") ||
         is_p(sp, i, "(") || is_p(sp, i, ")") || id_in(sp, i, kn__attr_words) ||
         id_in(sp, i, kn__asm_words);
}

/* Whether k can start one of a K&R function's parameter declarations. */
static bool is_param_decl_start(const splitter_t *sp, long k) {
  return id_in(sp, k, kn__type_words) || id_in(sp, k, qualifier_words) || id_in(sp, k, sue_words) ||
         is_id(sp, k, "register") || kn__is_typedef_name(sp, k) ||
         (kn__is_plain_ident(sp, k) && (is_ident(sp, k + 1) || is_p(sp, k + 1, "*")));
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
      k = kn__skip_attrs(sp, k);
      if (k == NONE) return -1;
      continue;
    }
    if (!is_ident(sp, k)) break;
    if (id_in(sp, k, kn__storage_words)) {
      if (is_id(sp, k, "typedef")) s->has_typedef = true;
      if (is_id(sp, k, "extern")) s->has_extern = true;
      if (is_id(sp, k, "static")) {
        s->has_static = true;
        sp->role[k] |= R_STATIC | R_STORAGE;
      }
      if (is_id(sp, k, "register") || is_id(sp, k, "auto")) sp->role[k] |= R_STORAGE;
      if (id_in(sp, k, thread_words)) s->is_thread_local = true;
      k++;
    } else if ((id_in(sp, k, kn__attr_words) || id_in(sp, k, kn__typeof_words) ||
                id_in(sp, k, pragma_words)) &&
               is_p(sp, k + 1, "(")) {
      if (id_in(sp, k, kn__typeof_words)) s->has_type = true;
      long m = kn__match(sp, k + 1);
      if (m == NONE) return -1;
      k = m + 1;
    } else if (id_in(sp, k, qualifier_words)) {
      if (id_in(sp, k, const_words)) sp->role[k] |= R_CONST;
      k++;
    } else if (id_in(sp, k, funcspec_words)) {
      if (id_in(sp, k, inline_words)) s->is_inline = true;
      k++;
    } else if (id_in(sp, k, kn__type_words)) {
      s->has_type = true;
      k++;
    } else if (id_in(sp, k, sue_words)) {
      s->has_type = true;
      s->sue_kw = k;
      k = kn__skip_attrs(sp, k + 1);
      if (k == NONE) return -1;
      if (kn__is_plain_ident(sp, k)) s->sue_tag = k++;
      k = kn__skip_attrs(sp, k);
      if (k == NONE) return -1;
      if (is_p(sp, k, "{")) {
        s->body_open = k;
        s->body_close = kn__match(sp, k);
        if (s->body_close == NONE) return -1;
        s->type_end = kn__skip_attrs(sp, s->body_close + 1);
        if (s->type_end == NONE) return -1;
        if (s->sue_tag != NONE)
          for (long i = s->body_open; i < s->type_end; i++) sp->role[i] |= R_TAG_BODY;
        k = s->type_end;
      }
    } else if (!s->has_type && kn__is_plain_ident(sp, k) &&
               (kn__is_typedef_name(sp, k) || is_ident(sp, k + 1) || is_p(sp, k + 1, "*"))) {
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
    if ((id_in(sp, k, kn__attr_words) || id_in(sp, k, kn__asm_words)) && is_p(sp, k + 1, "(")) {
      k = kn__match(sp, k + 1);
      if (k == NONE) return;
      continue;
    }
    if (is_p(sp, k, "[") && is_p(sp, k + 1, "[")) {
      k = kn__match(sp, k);
      if (k == NONE) return;
      continue;
    }
    if (is_p(sp, k, "(") || is_p(sp, k, "*") || is_p(sp, k, "^")) continue;
    if (kn__is_plain_ident(sp, k)) d->name = k;
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
    long m = kn__match(sp, a);
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
    if ((id_in(sp, k, kn__attr_words) || id_in(sp, k, kn__asm_words)) && is_p(sp, k + 1, "(")) {
      if (d->trail_start == NONE) d->trail_start = k;
      long m = kn__match(sp, k + 1);
      k = m == NONE ? d->end : m + 1;
      continue;
    }
    d->trail_start = NONE;
    long m = closer_of(&sp->t.v[k]) ? kn__match(sp, k) : NONE;
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
    if (want_ident ? !kn__is_plain_ident(sp, k) || kn__is_typedef_name(sp, k) : !is_p(sp, k, ","))
      return false;
  }
  return (d->params_close - d->params_open) % 2 == 0;
}

/* Appends tokens [from, to) to sb on one line, leaving out tokens whose role
 * has a bit of skip: one space where the source had white space, a comment or
 * a left-out token between two tokens, none where they touched. Directives
 * keep lines of their own. */
static void render(const splitter_t *sp, fl__buf_t *sb, long from, long to, unsigned skip) {
  long prev = NONE;
  for (long k = from; k < to; k++) {
    if (sp->role[k] & skip) continue;
    const tok_t *t = &sp->t.v[k];
    if (t->kind == TK_PREPROC) {
      if (sb->len && sb->data[sb->len - 1] != '\n') fl__buf_putc(sb, '\n');
      fl__buf_add(sb, sp->code + t->start, t->end - t->start);
      fl__buf_putc(sb, '\n');
      prev = NONE;
      continue;
    }
    /* `*const p` without its const reads `*p`, not `* p`. */
    bool touch = prev != NONE && ((k == prev + 1 && t->start == sp->t.v[prev].end) ||
                                  (k > prev + 1 && is_p(sp, prev, "*")));
    if (sb->len && !touch && sb->data[sb->len - 1] != ' ' && sb->data[sb->len - 1] != '\n')
      fl__buf_putc(sb, ' ');
    fl__buf_add(sb, sp->code + t->start, t->end - t->start);
    prev = k;
  }
}

/* Text of tokens first..last with the tokens of roles R_STATIC, and those in
 * (blank_from, blank_to) if that range is not empty, replaced by spaces. */
static char *blanked(const splitter_t *sp, long first, long last, long blank_from, long blank_to) {
  char *s = kn__slice(sp, first, last);
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
  sp->cell_typedefs[sp->n_cell_typedefs++] = kn__tok_text(sp, k);
}

/* "struct P", or NULL for an anonymous struct/union/enum. */
static char *sue_name(const splitter_t *sp, const specs_t *s) {
  if (s->sue_kw == NONE || s->sue_tag == NONE) return NULL;
  fl__buf_t sb = FL__BUF_INIT;
  render(sp, &sb, s->sue_kw, s->sue_kw + 1, 0);
  fl__buf_putc(&sb, ' ');
  render(sp, &sb, s->sue_tag, s->sue_tag + 1, 0);
  return fl__buf_take(&sb);
}

static void add_func(splitter_t *sp, const specs_t *s, const declr_t *d, long sig_last,
                     long body_close, bool knr) {
  kn_item_t *it = kn__add_item(sp, KN_ITEM_FUNC, s->start, body_close);
  it->name = kn__tok_text(sp, d->name);
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
  fl__buf_t sb = FL__BUF_INIT;
  unsigned skip = R_STORAGE | R_TAG_BODY | R_SKIP;
  for (long k = d->trail_start; k < d->end;) {
    long m = kn__match(sp, k + 1);
    if (m == NONE) break;
    if (id_in(sp, k, kn__attr_words)) render(sp, &sb, k, m + 1, 0);
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
  return fl__buf_take(&sb);
}

/* Whether tokens a..b are an initializer macro such as
 * PTHREAD_MUTEX_INITIALIZER or ATOMIC_VAR_INIT(0): an upper-case name holding
 * "INIT", alone or called. Such macros usually expand to a braced list, which
 * only works as a static initializer. */
static bool is_init_macro(const splitter_t *sp, long a, long b) {
  if (!kn__is_plain_ident(sp, a)) return false;
  if (a != b && !(is_p(sp, a + 1, "(") && kn__match(sp, a + 1) == b)) return false;
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
  kn_item_t *it = kn__add_item(sp, KN_ITEM_GLOBAL, s->start, last);
  it->name = kn__tok_text(sp, d->name);
  it->decl = global_decl(sp, s, d, false);
  it->decl_mutable = global_decl(sp, s, d, true);
  it->is_static = s->has_static;
  it->is_thread_local = s->is_thread_local;
  it->is_array_unsized = d->unsized;
  if (d->init_start == NONE) return;
  long a = skip_preproc(sp, d->init_start), b = d->init_end - 1;
  it->init = kn__slice(sp, a, b);
  it->init_line = sp->t.v[a].line + sp->line_offset;
  it->init_col = sp->t.v[a].col;
  if (is_p(sp, a, "{")) {
    it->init_is_static = kn__match(sp, a) == b;
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
    it = kn__add_item(sp, KN_ITEM_PROTO, s->start, last);
  } else {
    it = kn__new_item(sp, KN_ITEM_PROTO, s->start);
    fl__buf_t sb = FL__BUF_INIT;
    render(sp, &sb, s->start, s->end, R_TAG_BODY);
    render(sp, &sb, d->start, d->end, 0);
    fl__buf_putc(&sb, ';');
    it->text = fl__buf_take(&sb);
  }
  it->name = kn__tok_text(sp, d->name);
  it->is_static = s->has_static;
  it->is_inline = s->is_inline;
}

/* The items of a declaration without a body whose specifiers are s and
 * declarators ds[0, nd), ending at its ';' (token last). */
static void add_decl_items(splitter_t *sp, const specs_t *s, const declr_t *ds, size_t nd,
                           long last) {
  bool all_func = true;
  for (size_t i = 0; i < nd; i++)
    if (!ds[i].is_func) all_func = false;
  if (s->has_typedef) {
    kn_item_t *it = kn__add_item(sp, KN_ITEM_TYPE, s->start, last);
    it->name = kn__tok_text(sp, ds[0].name);
    for (size_t i = 0; i < nd; i++) add_cell_typedef(sp, ds[i].name);
  } else if (s->has_extern && !all_func) {
    kn_item_t *it = kn__add_item(sp, KN_ITEM_EXTERN, s->start, last);
    it->name = kn__tok_text(sp, ds[0].name);
  } else {
    if (s->body_open != NONE && s->sue_tag != NONE) {
      /* `struct P { ... } p1, p2;`: the type on its own, `struct P { ... };` */
      kn_item_t *it = kn__new_item(sp, KN_ITEM_TYPE, s->sue_kw);
      fl__buf_t sb = FL__BUF_INIT;
      size_t a = sp->t.v[s->sue_kw].start, b = sp->t.v[s->type_end - 1].end;
      fl__buf_add(&sb, sp->code + a, b - a);
      fl__buf_putc(&sb, ';');
      it->text = fl__buf_take(&sb);
      it->name = sue_name(sp, s);
    }
    for (size_t i = 0; i < nd; i++) {
      if (ds[i].is_func)
        add_proto(sp, s, &ds[i], nd, last);
      else
        add_global(sp, s, &ds[i], last);
    }
  }
}

/* Parses the declaration starting at k. On PARSE_OK its items are appended
 * and *last is its final token. Nothing is appended otherwise. */
parse_status_t kn__parse_decl(splitter_t *sp, long k, long *last) {
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
    kn_item_t *it = kn__add_item(sp, KN_ITEM_TYPE, s.start, k);
    it->name = sue_name(sp, &s);
    return PARSE_OK;
  }

  for (;;) {
    declr_t d;
    memset(&d, 0, sizeof d);
    d.start = k;
    d.init_start = d.init_end = NONE;
    k = kn__scan_to(sp, k, ",;={");
    if (k == NONE) goto fail;
    d.end = k;
    analyze_declarator(sp, &d);
    if (d.name == NONE) {
      st = PARSE_UNRECOGNISED;
      *last = is_p(sp, k, "{") ? kn__match(sp, k) : kn__scan_to(sp, k, ";");
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
          *last = kn__scan_to(sp, j, ";");
          goto fail;
        }
        j = kn__scan_to(sp, j, ";{");
        if (j == NONE || !is_p(sp, j, ";")) goto fail;
        j = skip_preproc(sp, j + 1);
      }
      long close = kn__match(sp, j);
      if (close == NONE) goto fail;
      add_func(sp, &s, &d, NONE, close, true);
      *last = close;
      free(ds);
      return PARSE_OK;
    }
    if (is_p(sp, k, "{")) {
      long close = kn__match(sp, k);
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
      k = kn__scan_to(sp, k + 1, ",;");
      if (k == NONE) goto fail;
      d.init_end = k;
      if (skip_preproc(sp, d.init_start) >= d.init_end) {
        st = PARSE_UNRECOGNISED;
        *last = kn__scan_to(sp, k, ";");
        goto fail;
      }
    }
    ds = fl__xrealloc(ds, nd + 1, sizeof *ds);
    ds[nd++] = d;
    if (is_p(sp, k, ";")) break;
    k++; /* ',' */
  }
  *last = k;

  add_decl_items(sp, &s, ds, nd, k);
  free(ds);
  return PARSE_OK;

fail:
  free(ds);
  return st;
}
