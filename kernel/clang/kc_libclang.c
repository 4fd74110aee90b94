/* SPDX-License-Identifier: BSD-3-Clause */
/* libclang on the session's unit (see kc_libclang.h). */
#define _GNU_SOURCE
#include "kc_libclang.h"

#include <clang-c/Index.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fl__common.h"
#include "kn_text.h"

struct kc_libclang {
  CXIndex index;
  CXTranslationUnit unit;
  char *unit_path, *unit_args; /* what the unit was parsed with */
  char *unit_text;             /* the text it was last parsed with */
};

/* A libclang string as a new C string (NULL for an empty one); disposes
 * s. */
static char *take_string(CXString s) {
  const char *p = clang_getCString(s);
  char *out = p && *p ? fl__xstrdup(p) : NULL;
  clang_disposeString(s);
  return out;
}

/* Fractional milliseconds, for the timings the bench reports. */
static double now_ms(void) {
  return (double)fl__clock_ns(CLOCK_MONOTONIC) / 1e6;
}

/* ---- the unit ---- */

static char *join_args(char *const *args) {
  fl__buf_t sb = FL__BUF_INIT;
  for (char *const *a = args; a && *a; a++) {
    fl__buf_puts(&sb, *a);
    fl__buf_putc(&sb, '\n');
  }
  return fl__buf_take(&sb);
}

/* Where the unit's preamble, as libclang takes it, may end: after the
 * leading lines that are blank or preprocessor directives (with their
 * continuations). */
static size_t preamble_end(const char *text) {
  const char *p = text;
  for (;;) {
    const char *line = p;
    while (*p == ' ' || *p == '\t') p++;
    if (*p != '#' && *p != '\n') return (size_t)(line - text);
    while (*p && *p != '\n') {
      if (*p == '\\' && p[1] == '\n') p++;
      p++;
    }
    if (!*p) return (size_t)(p - text);
    p++;
  }
}

/* Whether text's preamble differs from that of the text the unit was last
 * parsed with. */
static bool preamble_changed(const kc_libclang_t *c, const char *text) {
  size_t a = preamble_end(text), b = preamble_end(c->unit_text);
  return a != b || memcmp(text, c->unit_text, a) != 0;
}

/* Makes c->unit the unit of job's text: parsed anew when there is none or
 * it was parsed with other arguments; else reparsed when `always` (to
 * resolve names, the unit must be the text's) or when the preamble's text
 * changed, which builds the preamble again. Otherwise the unit is left as
 * it is: completion parses the text itself, with the preamble the unit has
 * (a header changed on disk since makes it parse without, slower but
 * right, until the next reparse). Returns 0, or -1 with err. */
static int ensure_unit(kc_libclang_t *c, const kn_clang_job_t *job, bool always, double *parse_ms,
                       char *err, size_t err_size) {
  double t0 = now_ms();
  *parse_ms = 0;
  char *args = join_args(job->args);
  if (c->unit && (strcmp(c->unit_path, job->path) || strcmp(c->unit_args, args))) {
    clang_disposeTranslationUnit(c->unit);
    c->unit = NULL;
  }
  if (c->unit && !always && !preamble_changed(c, job->text)) {
    free(args);
    return 0;
  }
  struct CXUnsavedFile file = {job->path, job->text, strlen(job->text)};
  int rc = 0;
  if (!c->unit) {
    int argc = 0;
    while (job->args && job->args[argc]) argc++;
    /* The preamble on the first parse, not the second: the first request is
     * the one a user waits on longest. No CacheCompletionResults: libclang
     * would cache the unit's global names at each parse and, using the
     * cache, leave out of a completion the names declared since, unless
     * every completion reparsed first, which costs more than the cache
     * saves. */
    unsigned options = CXTranslationUnit_PrecompiledPreamble |
                       CXTranslationUnit_CreatePreambleOnFirstParse |
                       CXTranslationUnit_DetailedPreprocessingRecord | CXTranslationUnit_KeepGoing;
    enum CXErrorCode e = clang_parseTranslationUnit2(
        c->index, job->path, (const char *const *)job->args, argc, &file, 1, options, &c->unit);
    if (e != CXError_Success) {
      snprintf(err, err_size, "libclang could not parse the session's unit (error %d)", (int)e);
      c->unit = NULL;
      rc = -1;
    }
  } else if (clang_reparseTranslationUnit(c->unit, 1, &file,
                                          clang_defaultReparseOptions(c->unit)) != 0) {
    /* A unit that failed to reparse is invalid: start afresh next time. */
    clang_disposeTranslationUnit(c->unit);
    c->unit = NULL;
    snprintf(err, err_size, "libclang could not reparse the session's unit");
    rc = -1;
  }
  free(c->unit_path);
  free(c->unit_args);
  free(c->unit_text);
  c->unit_path = fl__xstrdup(job->path);
  c->unit_args = args;
  c->unit_text = fl__xstrdup(job->text);
  *parse_ms = now_ms() - t0;
  return rc;
}

/* What a cursor of kind k is (function_like: a macro that takes
 * arguments). Keywords come in completions as "not implemented". */
static kn_clang_kind_t kind_of(enum CXCursorKind k, bool function_like) {
  switch (k) {
    case CXCursor_FunctionDecl: return KN_CLANG_FUNCTION;
    case CXCursor_VarDecl:
    case CXCursor_ParmDecl: return KN_CLANG_VARIABLE;
    case CXCursor_FieldDecl: return KN_CLANG_MEMBER;
    case CXCursor_EnumConstantDecl: return KN_CLANG_ENUMERATOR;
    case CXCursor_TypedefDecl:
    case CXCursor_StructDecl:
    case CXCursor_UnionDecl:
    case CXCursor_EnumDecl: return KN_CLANG_TYPE;
    case CXCursor_MacroDefinition: return function_like ? KN_CLANG_FUNCTION_MACRO : KN_CLANG_MACRO;
    case CXCursor_NotImplemented: return KN_CLANG_KEYWORD;
    default: return KN_CLANG_OTHER;
  }
}

/* ---- completion ---- */

/* Whether a completion string calls for arguments. */
static bool takes_arguments(CXCompletionString cs) {
  for (unsigned i = 0; i < clang_getNumCompletionChunks(cs); i++)
    if (clang_getCompletionChunkKind(cs, i) == CXCompletionChunk_LeftParen) return true;
  return false;
}

/* The name a completion string writes (its typed text; new), and for a
 * function or function-like macro its signature (new, or NULL). */
static char *match_name(CXCompletionString cs, bool with_signature, char **signature) {
  char *name = NULL;
  fl__buf_t sig = FL__BUF_INIT;
  unsigned n = clang_getNumCompletionChunks(cs);
  for (unsigned i = 0; i < n; i++) {
    enum CXCompletionChunkKind ck = clang_getCompletionChunkKind(cs, i);
    if (ck == CXCompletionChunk_Optional || ck == CXCompletionChunk_Informative ||
        ck == CXCompletionChunk_VerticalSpace)
      continue;
    char *text = take_string(clang_getCompletionChunkText(cs, i));
    if (ck == CXCompletionChunk_TypedText && !name) name = text ? fl__xstrdup(text) : NULL;
    if (with_signature && text) {
      fl__buf_puts(&sig, text);
      /* "int printf(...)", "void *memcpy(...)" */
      if (ck == CXCompletionChunk_ResultType && text[strlen(text) - 1] != '*')
        fl__buf_putc(&sig, ' ');
    }
    free(text);
  }
  *signature = with_signature && sig.len ? fl__buf_take(&sig) : NULL;
  fl__buf_free(&sig);
  return name;
}

static int cmp_likelier(const void *a, const void *b) {
  const kn_clang_match_t *x = a, *y = b;
  if (x->priority != y->priority) return x->priority < y->priority ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Past KN_CLANGMSG_MAX_MATCHES, keeps the likeliest that many (a header of
 * 10^6 names that all start with the prefix would not fit in a frame). */
static void keep_likeliest(kn_clang_result_t *r) {
  if (r->n_matches <= KN_CLANGMSG_MAX_MATCHES) return;
  qsort(r->matches, r->n_matches, sizeof *r->matches, cmp_likelier);
  for (size_t i = KN_CLANGMSG_MAX_MATCHES; i < r->n_matches; i++) {
    free(r->matches[i].name);
    free(r->matches[i].signature);
  }
  r->n_matches = KN_CLANGMSG_MAX_MATCHES;
}

static void complete(kc_libclang_t *c, const kn_clang_job_t *job, kn_clang_result_t *r) {
  char err[256];
  if (ensure_unit(c, job, false, &r->parse_ms, err, sizeof err) < 0) {
    r->error = fl__xstrdup(err);
    return;
  }
  struct CXUnsavedFile file = {job->path, job->text, strlen(job->text)};
  CXCodeCompleteResults *res =
      clang_codeCompleteAt(c->unit, job->path, job->line, job->column, &file, 1,
                           clang_defaultCodeCompleteOptions() | CXCodeComplete_IncludeCodePatterns);
  if (!res) {
    r->error = fl__xstrdup("libclang gave no completions");
    return;
  }
  const char *prefix = job->prefix ? job->prefix : "";
  size_t plen = strlen(prefix), cap = 0;
  for (unsigned i = 0; i < res->NumResults; i++) {
    CXCompletionString cs = res->Results[i].CompletionString;
    enum CXAvailabilityKind av = clang_getCompletionAvailability(cs);
    if (av == CXAvailability_NotAvailable || av == CXAvailability_NotAccessible) continue;
    kn_clang_kind_t kind = kind_of(res->Results[i].CursorKind, takes_arguments(cs));
    char *signature = NULL;
    char *name = match_name(cs, false, &signature);
    if (!name || strncmp(name, prefix, plen) != 0) {
      free(name);
      continue;
    }
    if (kind == KN_CLANG_FUNCTION || kind == KN_CLANG_FUNCTION_MACRO) {
      free(name);
      name = match_name(cs, true, &signature);
    }
    if (r->n_matches == cap) {
      cap = cap ? cap * 2 : 64;
      r->matches = fl__xrealloc(r->matches, cap, sizeof *r->matches);
    }
    r->matches[r->n_matches++] = (kn_clang_match_t){.name = name,
                                                    .signature = signature,
                                                    .kind = kind,
                                                    .priority = clang_getCompletionPriority(cs)};
  }
  clang_disposeCodeCompleteResults(res);
  keep_likeliest(r);
}

/* ---- inspection ---- */

/* The source text of range (at most 64 KiB): from the unit's own text, or
 * from the header on disk. New, or NULL. */
static char *range_text(const kn_clang_job_t *job, CXSourceRange range) {
  CXFile f1, f2;
  unsigned o1, o2;
  clang_getSpellingLocation(clang_getRangeStart(range), &f1, NULL, NULL, &o1);
  clang_getSpellingLocation(clang_getRangeEnd(range), &f2, NULL, NULL, &o2);
  if (!f1 || o2 <= o1 || o2 - o1 > 65536) return NULL;
  char *name = take_string(clang_getFileName(f1));
  char *out = NULL;
  if (name && !strcmp(name, job->path)) {
    if (o2 <= strlen(job->text)) out = fl__xstrndup(job->text + o1, o2 - o1);
  } else if (name) {
    FILE *fp = fopen(name, "re");
    if (fp) {
      out = fl__xcalloc(1, o2 - o1 + 1);
      if (fseek(fp, (long)o1, SEEK_SET) != 0 || fread(out, 1, o2 - o1, fp) != o2 - o1) {
        free(out);
        out = NULL;
      }
      fclose(fp);
    }
  }
  free(name);
  return out;
}

/* Removes every " asm(...)" and " __attribute__((...))" from a pretty
 * printed declaration, and a leading "extern ": what a reader wants to see
 * of a declaration is its type. */
static void strip_decoration(char *s) {
  static const char *const drop[] = {" asm(", " __attribute__((", NULL};
  if (!strncmp(s, "extern ", 7)) memmove(s, s + 7, strlen(s + 7) + 1);
  for (const char *const *d = drop; *d; d++) {
    char *p;
    while ((p = strstr(s, *d)) != NULL) {
      char *q = p + strlen(*d);
      int depth = 0; /* the parentheses the pattern opened */
      for (const char *o = *d; *o; o++) depth += *o == '(';
      bool quoted = false;
      for (; *q && depth > 0; q++) {
        if (*q == '"' && q[-1] != '\\') quoted = !quoted;
        if (quoted) continue;
        if (*q == '(') depth++;
        if (*q == ')') depth--;
      }
      memmove(p, q, strlen(q) + 1);
    }
  }
}

static char *pretty(CXCursor cur, bool terse) {
  CXPrintingPolicy pol = clang_getCursorPrintingPolicy(cur);
  clang_PrintingPolicy_setProperty(pol, CXPrintingPolicy_TerseOutput, terse);
  char *s = take_string(clang_getCursorPrettyPrinted(cur, pol));
  clang_PrintingPolicy_dispose(pol);
  if (s) strip_decoration(s);
  return s;
}

/* The struct, union or enum definition behind a tag or a typedef of one,
 * printed whole; NULL for other declarations. */
static char *type_definition(CXCursor decl) {
  enum CXCursorKind k = clang_getCursorKind(decl);
  if (k == CXCursor_TypedefDecl) {
    CXType under = clang_getTypedefDeclUnderlyingType(decl);
    CXCursor tag = clang_getTypeDeclaration(clang_Type_getNamedType(under));
    if (clang_Cursor_isNull(tag)) tag = clang_getTypeDeclaration(under);
    k = clang_getCursorKind(tag);
    if (k != CXCursor_StructDecl && k != CXCursor_UnionDecl && k != CXCursor_EnumDecl) return NULL;
    decl = tag;
  } else if (k != CXCursor_StructDecl && k != CXCursor_UnionDecl && k != CXCursor_EnumDecl) {
    return NULL;
  }
  CXCursor def = clang_getCursorDefinition(decl);
  if (clang_Cursor_isNull(def)) return NULL;
  return pretty(def, false);
}

/* A system header's function names its parameters as the implementation
 * may (glibc's `__format`, reserved so that no user macro can change
 * them); its manual page, and the reader, say `format`. Each parameter
 * name that starts with "__" loses the underscores in the printed
 * declaration: a whole word that names a parameter names nothing else. */
static void plain_parameter_names(CXCursor decl, char *text) {
  int n = clang_Cursor_getNumArguments(decl);
  for (int i = 0; i < n; i++) {
    char *name = take_string(clang_getCursorSpelling(clang_Cursor_getArgument(decl, (unsigned)i)));
    size_t len = name ? strlen(name) : 0;
    size_t cut = name ? strspn(name, "_") : 0;
    if (cut >= 2 && cut < len) {
      for (char *p = text; (p = strstr(p, name)) != NULL;) {
        bool word = (p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
                    !(isalnum((unsigned char)p[len]) || p[len] == '_');
        if (!word) {
          p += len;
          continue;
        }
        memmove(p, p + cut, strlen(p + cut) + 1);
        p += len - cut;
      }
    }
    free(name);
  }
}

static void inspect(kc_libclang_t *c, const kn_clang_job_t *job, kn_clang_result_t *r) {
  char err[256];
  if (ensure_unit(c, job, true, &r->parse_ms, err, sizeof err) < 0) {
    r->error = fl__xstrdup(err);
    return;
  }
  CXFile file = clang_getFile(c->unit, job->path);
  if (!file) return;
  CXCursor at = clang_getCursor(c->unit, clang_getLocation(c->unit, file, job->line, job->column));
  CXCursor decl = clang_getCursorReferenced(at);
  enum CXCursorKind k = clang_getCursorKind(decl);
  kn_clang_kind_t kind =
      kind_of(k, k == CXCursor_MacroDefinition && clang_Cursor_isMacroFunctionLike(decl));
  if (clang_Cursor_isNull(decl) || kind == KN_CLANG_OTHER || kind == KN_CLANG_KEYWORD) return;
  CXCursor def = clang_getCursorDefinition(decl);
  CXCursor where = clang_Cursor_isNull(def) ? decl : def;

  kn_clang_symbol_t *s = fl__xcalloc(1, sizeof *s);
  s->kind = kind;
  s->name = take_string(clang_getCursorSpelling(decl));
  if (s->kind == KN_CLANG_MACRO || s->kind == KN_CLANG_FUNCTION_MACRO) {
    char *body = range_text(job, clang_getCursorExtent(decl));
    fl__buf_t sb = FL__BUF_INIT;
    fl__buf_printf(&sb, "#define %s", body ? body : s->name ? s->name : "");
    free(body);
    s->declaration = fl__buf_take(&sb);
  } else {
    s->declaration = pretty(decl, true);
    s->definition = type_definition(decl);
  }
  if (s->kind == KN_CLANG_MEMBER) {
    CXCursor parent = clang_getCursorSemanticParent(decl);
    s->parent = take_string(clang_getTypeSpelling(clang_getCursorType(parent)));
  }
  s->comment = take_string(clang_Cursor_getRawCommentText(decl));
  if (!s->comment) s->comment = take_string(clang_Cursor_getRawCommentText(where));
  CXSourceLocation loc = clang_getCursorLocation(where);
  CXString fname;
  unsigned line, col;
  clang_getPresumedLocation(loc, &fname, &line, &col);
  s->file = take_string(fname);
  s->line = line;
  s->system = clang_Location_isInSystemHeader(loc) != 0;
  if (s->system && s->kind == KN_CLANG_FUNCTION && s->declaration)
    plain_parameter_names(decl, s->declaration);
  r->symbol = s;
}

/* ---- a job ---- */

kc_libclang_t *kc_libclang_new(void) {
  kc_libclang_t *c = fl__xcalloc(1, sizeof *c);
  /* libclang would catch its own crashes (out of memory, say) and go on
   * in a process whose heap the crash left as it was: rather, the process
   * ends, and the kernel starts a clean one. Read by clang_createIndex. */
  setenv("LIBCLANG_DISABLE_CRASH_RECOVERY", "1", 1);
  c->index = clang_createIndex(0, 0);
  return c;
}

void kc_libclang_run(kc_libclang_t *c, const kn_clang_job_t *job, kn_clang_result_t *r) {
  double t0 = now_ms();
  if (job->op == KN_CLANG_COMPLETE)
    complete(c, job, r);
  else
    inspect(c, job, r);
  r->total_ms = now_ms() - t0;
}
