/* The libclang thread (see kn_clang.h). */
#define _GNU_SOURCE
#include "kn_clang.h"
#include "kn_util.h"

#include <clang-c/Index.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "kn_strbuf.h"

/* ---- libclang, opened on first use ---- */

/* Every libclang function this file calls, each reached as api.NAME. */
#define KN_CLANG_API(X)                                                                   \
  X(clang_createIndex) X(clang_disposeIndex) X(clang_parseTranslationUnit2)               \
  X(clang_reparseTranslationUnit) X(clang_defaultReparseOptions)                          \
  X(clang_disposeTranslationUnit) X(clang_codeCompleteAt) X(clang_defaultCodeCompleteOptions) \
  X(clang_disposeCodeCompleteResults) X(clang_getNumCompletionChunks)                     \
  X(clang_getCompletionChunkKind) X(clang_getCompletionChunkText)                         \
  X(clang_getCompletionPriority) X(clang_getCompletionAvailability) X(clang_getCString)   \
  X(clang_disposeString) X(clang_getFile) X(clang_getLocation) X(clang_getCursor)         \
  X(clang_getCursorReferenced) X(clang_getCursorDefinition) X(clang_Cursor_isNull)        \
  X(clang_getCursorKind) X(clang_isDeclaration) X(clang_getCursorSpelling)                \
  X(clang_getCursorType) X(clang_getTypeSpelling) X(clang_getCursorLocation)              \
  X(clang_getPresumedLocation) X(clang_getSpellingLocation) X(clang_getFileName)          \
  X(clang_Location_isInSystemHeader) X(clang_Cursor_getRawCommentText)                    \
  X(clang_getCursorSemanticParent) X(clang_getCursorExtent) X(clang_getRangeStart)        \
  X(clang_getRangeEnd) X(clang_getCursorPrintingPolicy) X(clang_PrintingPolicy_setProperty) \
  X(clang_PrintingPolicy_dispose) X(clang_getCursorPrettyPrinted)                         \
  X(clang_Cursor_isMacroFunctionLike) X(clang_getTypeDeclaration)                         \
  X(clang_getTypedefDeclUnderlyingType) X(clang_getCanonicalType) X(clang_Type_getNamedType)

static struct {
#define KN_CLANG_FIELD(f) __typeof__(f) *f;
  KN_CLANG_API(KN_CLANG_FIELD)
#undef KN_CLANG_FIELD
} api;

/* Loads libclang into api, once (called from the thread only). Returns 0,
 * or -1 with the reason in err. */
static int load_libclang(char *err, size_t err_size) {
  static int state; /* 0 not tried, 1 loaded, -1 failed */
  static char why[256];
  if (state == 0) {
    void *h = dlopen(CFLAME_LIBCLANG, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      snprintf(why, sizeof why, "cannot load libclang (%s): %s", CFLAME_LIBCLANG, dlerror());
      state = -1;
    } else {
      state = 1;
#define KN_CLANG_LOAD(f)                                                              \
  if (state == 1 && !(*(void **)&api.f = dlsym(h, #f))) {                              \
    snprintf(why, sizeof why, "libclang (%s) has no %s", CFLAME_LIBCLANG, #f);        \
    state = -1;                                                                       \
  }
      KN_CLANG_API(KN_CLANG_LOAD)
#undef KN_CLANG_LOAD
    }
  }
  if (state < 0) snprintf(err, err_size, "%s", why);
  return state > 0 ? 0 : -1;
}

/* A libclang string as a new C string (NULL for an empty one); disposes
 * s. */
static char *take_string(CXString s) {
  const char *p = api.clang_getCString(s);
  char *out = p && *p ? kn_strdup(p) : NULL;
  api.clang_disposeString(s);
  return out;
}

/* Fractional milliseconds, for the timings the bench reports. */
static double now_ms(void) { return (double)kn_clock_ns(CLOCK_MONOTONIC) / 1e6; }

/* ---- the thread's state ---- */

struct kn_clang {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  int event_fd;
  /* Under lock: */
  kn_clang_job_t *job;       /* submitted, not yet started */
  kn_clang_result_t *result; /* finished, not yet taken */
  bool quit;
  int refs; /* the kernel's and the thread's: the last one frees */
  bool busy; /* the kernel's own: a job submitted, its result not taken */

  /* The thread's own: */
  CXIndex index;
  CXTranslationUnit unit;
  char *unit_path, *unit_args; /* what the unit was parsed with */
  char *unit_text;             /* the text it was last parsed with */
};

static void state_free(kn_clang_t *c) {
  if (c->event_fd >= 0) close(c->event_fd);
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->wake);
  if (c->job) kn_clang_job_free(c->job);
  free(c->job);
  kn_clang_result_free(&c->result);
  free(c);
}

/* Drops one reference to c under its lock; frees it at the last. */
static void release(kn_clang_t *c) {
  pthread_mutex_lock(&c->lock);
  bool last = --c->refs == 0;
  pthread_mutex_unlock(&c->lock);
  if (last) state_free(c);
}

void kn_clang_job_free(kn_clang_job_t *job) {
  if (!job) return;
  free(job->path);
  free(job->text);
  free(job->prefix);
  if (job->args)
    for (char **a = job->args; *a; a++) free(*a);
  free(job->args);
  memset(job, 0, sizeof *job);
}

static void symbol_free(kn_clang_symbol_t *s) {
  if (!s) return;
  free(s->name);
  free(s->declaration);
  free(s->definition);
  free(s->parent);
  free(s->comment);
  free(s->file);
  free(s);
}

void kn_clang_result_free(kn_clang_result_t **rp) {
  kn_clang_result_t *r = *rp;
  if (!r) return;
  for (size_t i = 0; i < r->n_matches; i++) {
    free(r->matches[i].name);
    free(r->matches[i].signature);
  }
  free(r->matches);
  symbol_free(r->symbol);
  free(r->error);
  free(r);
  *rp = NULL;
}

/* ---- the unit ---- */

static char *join_args(char *const *args) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  for (char *const *a = args; a && *a; a++) {
    kn_strbuf_puts(&sb, *a);
    kn_strbuf_putc(&sb, '\n');
  }
  return kn_strbuf_steal(&sb);
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
static bool preamble_changed(const kn_clang_t *c, const char *text) {
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
static int ensure_unit(kn_clang_t *c, const kn_clang_job_t *job, bool always, double *parse_ms,
                       char *err, size_t err_size) {
  double t0 = now_ms();
  *parse_ms = 0;
  char *args = join_args(job->args);
  if (c->unit && (strcmp(c->unit_path, job->path) || strcmp(c->unit_args, args))) {
    api.clang_disposeTranslationUnit(c->unit);
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
    enum CXErrorCode e = api.clang_parseTranslationUnit2(
        c->index, job->path, (const char *const *)job->args, argc, &file, 1, options, &c->unit);
    if (e != CXError_Success) {
      snprintf(err, err_size, "libclang could not parse the session's unit (error %d)", (int)e);
      c->unit = NULL;
      rc = -1;
    }
  } else if (api.clang_reparseTranslationUnit(c->unit, 1, &file,
                                              api.clang_defaultReparseOptions(c->unit)) != 0) {
    /* A unit that failed to reparse is invalid: start afresh next time. */
    api.clang_disposeTranslationUnit(c->unit);
    c->unit = NULL;
    snprintf(err, err_size, "libclang could not reparse the session's unit");
    rc = -1;
  }
  free(c->unit_path);
  free(c->unit_args);
  free(c->unit_text);
  c->unit_path = kn_strdup(job->path);
  c->unit_args = args;
  c->unit_text = kn_strdup(job->text);
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
  for (unsigned i = 0; i < api.clang_getNumCompletionChunks(cs); i++)
    if (api.clang_getCompletionChunkKind(cs, i) == CXCompletionChunk_LeftParen) return true;
  return false;
}

/* The name a completion string writes (its typed text; new), and for a
 * function or function-like macro its signature (new, or NULL). */
static char *match_name(CXCompletionString cs, bool with_signature, char **signature) {
  char *name = NULL;
  kn_strbuf_t sig = KN_STRBUF_INIT;
  unsigned n = api.clang_getNumCompletionChunks(cs);
  for (unsigned i = 0; i < n; i++) {
    enum CXCompletionChunkKind ck = api.clang_getCompletionChunkKind(cs, i);
    if (ck == CXCompletionChunk_Optional || ck == CXCompletionChunk_Informative ||
        ck == CXCompletionChunk_VerticalSpace)
      continue;
    char *text = take_string(api.clang_getCompletionChunkText(cs, i));
    if (ck == CXCompletionChunk_TypedText && !name) name = text ? kn_strdup(text) : NULL;
    if (with_signature && text) {
      kn_strbuf_puts(&sig, text);
      /* "int printf(...)", "void *memcpy(...)" */
      if (ck == CXCompletionChunk_ResultType && text[strlen(text) - 1] != '*')
        kn_strbuf_putc(&sig, ' ');
    }
    free(text);
  }
  *signature = with_signature && sig.len ? kn_strbuf_steal(&sig) : NULL;
  kn_strbuf_free(&sig);
  return name;
}

static void complete(kn_clang_t *c, const kn_clang_job_t *job, kn_clang_result_t *r) {
  char err[256];
  if (ensure_unit(c, job, false, &r->parse_ms, err, sizeof err) < 0) {
    r->error = kn_strdup(err);
    return;
  }
  struct CXUnsavedFile file = {job->path, job->text, strlen(job->text)};
  CXCodeCompleteResults *res =
      api.clang_codeCompleteAt(c->unit, job->path, job->line, job->column, &file, 1,
                               api.clang_defaultCodeCompleteOptions() |
                                   CXCodeComplete_IncludeCodePatterns);
  if (!res) {
    r->error = kn_strdup("libclang gave no completions");
    return;
  }
  const char *prefix = job->prefix ? job->prefix : "";
  size_t plen = strlen(prefix), cap = 0;
  for (unsigned i = 0; i < res->NumResults; i++) {
    CXCompletionString cs = res->Results[i].CompletionString;
    enum CXAvailabilityKind av = api.clang_getCompletionAvailability(cs);
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
      r->matches = kn_xrealloc(r->matches, cap * sizeof *r->matches);
    }
    r->matches[r->n_matches++] = (kn_clang_match_t){
        .name = name, .signature = signature, .kind = kind,
        .priority = api.clang_getCompletionPriority(cs)};
  }
  api.clang_disposeCodeCompleteResults(res);
}

/* ---- inspection ---- */

/* The source text of range (at most 64 KiB): from the unit's own text, or
 * from the header on disk. New, or NULL. */
static char *range_text(const kn_clang_job_t *job, CXSourceRange range) {
  CXFile f1, f2;
  unsigned o1, o2;
  api.clang_getSpellingLocation(api.clang_getRangeStart(range), &f1, NULL, NULL, &o1);
  api.clang_getSpellingLocation(api.clang_getRangeEnd(range), &f2, NULL, NULL, &o2);
  if (!f1 || o2 <= o1 || o2 - o1 > 65536) return NULL;
  char *name = take_string(api.clang_getFileName(f1));
  char *out = NULL;
  if (name && !strcmp(name, job->path)) {
    if (o2 <= strlen(job->text)) out = kn_strndup(job->text + o1, o2 - o1);
  } else if (name) {
    FILE *fp = fopen(name, "re");
    if (fp) {
      out = kn_xcalloc(1, o2 - o1 + 1);
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
  CXPrintingPolicy pol = api.clang_getCursorPrintingPolicy(cur);
  api.clang_PrintingPolicy_setProperty(pol, CXPrintingPolicy_TerseOutput, terse);
  char *s = take_string(api.clang_getCursorPrettyPrinted(cur, pol));
  api.clang_PrintingPolicy_dispose(pol);
  if (s) strip_decoration(s);
  return s;
}

/* The struct, union or enum definition behind a tag or a typedef of one,
 * printed whole; NULL for other declarations. */
static char *type_definition(CXCursor decl) {
  enum CXCursorKind k = api.clang_getCursorKind(decl);
  if (k == CXCursor_TypedefDecl) {
    CXType under = api.clang_getTypedefDeclUnderlyingType(decl);
    CXCursor tag = api.clang_getTypeDeclaration(api.clang_Type_getNamedType(under));
    if (api.clang_Cursor_isNull(tag)) tag = api.clang_getTypeDeclaration(under);
    k = api.clang_getCursorKind(tag);
    if (k != CXCursor_StructDecl && k != CXCursor_UnionDecl && k != CXCursor_EnumDecl)
      return NULL;
    decl = tag;
  } else if (k != CXCursor_StructDecl && k != CXCursor_UnionDecl && k != CXCursor_EnumDecl) {
    return NULL;
  }
  CXCursor def = api.clang_getCursorDefinition(decl);
  if (api.clang_Cursor_isNull(def)) return NULL;
  return pretty(def, false);
}

static void inspect(kn_clang_t *c, const kn_clang_job_t *job, kn_clang_result_t *r) {
  char err[256];
  if (ensure_unit(c, job, true, &r->parse_ms, err, sizeof err) < 0) {
    r->error = kn_strdup(err);
    return;
  }
  CXFile file = api.clang_getFile(c->unit, job->path);
  if (!file) return;
  CXCursor at = api.clang_getCursor(c->unit, api.clang_getLocation(c->unit, file, job->line,
                                                                    job->column));
  CXCursor decl = api.clang_getCursorReferenced(at);
  enum CXCursorKind k = api.clang_getCursorKind(decl);
  kn_clang_kind_t kind = kind_of(k, k == CXCursor_MacroDefinition &&
                                        api.clang_Cursor_isMacroFunctionLike(decl));
  if (api.clang_Cursor_isNull(decl) || kind == KN_CLANG_OTHER || kind == KN_CLANG_KEYWORD)
    return;
  CXCursor def = api.clang_getCursorDefinition(decl);
  CXCursor where = api.clang_Cursor_isNull(def) ? decl : def;

  kn_clang_symbol_t *s = kn_xcalloc(1, sizeof *s);
  s->kind = kind;
  s->name = take_string(api.clang_getCursorSpelling(decl));
  if (s->kind == KN_CLANG_MACRO || s->kind == KN_CLANG_FUNCTION_MACRO) {
    char *body = range_text(job, api.clang_getCursorExtent(decl));
    kn_strbuf_t sb = KN_STRBUF_INIT;
    kn_strbuf_printf(&sb, "#define %s", body ? body : s->name ? s->name : "");
    free(body);
    s->declaration = kn_strbuf_steal(&sb);
  } else {
    s->declaration = pretty(decl, true);
    s->definition = type_definition(decl);
  }
  if (s->kind == KN_CLANG_MEMBER) {
    CXCursor parent = api.clang_getCursorSemanticParent(decl);
    s->parent = take_string(api.clang_getTypeSpelling(api.clang_getCursorType(parent)));
  }
  s->comment = take_string(api.clang_Cursor_getRawCommentText(decl));
  if (!s->comment) s->comment = take_string(api.clang_Cursor_getRawCommentText(where));
  CXSourceLocation loc = api.clang_getCursorLocation(where);
  CXString fname;
  unsigned line, col;
  api.clang_getPresumedLocation(loc, &fname, &line, &col);
  s->file = take_string(fname);
  s->line = line;
  s->system = api.clang_Location_isInSystemHeader(loc) != 0;
  r->symbol = s;
}

/* ---- the thread ---- */

static void run_job(kn_clang_t *c, const kn_clang_job_t *job, kn_clang_result_t *r) {
  double t0 = now_ms();
  char err[256];
  if (load_libclang(err, sizeof err) < 0) {
    r->error = kn_strdup(err);
    return;
  }
  if (!c->index) c->index = api.clang_createIndex(0, 0);
  if (job->op == KN_CLANG_COMPLETE)
    complete(c, job, r);
  else
    inspect(c, job, r);
  r->total_ms = now_ms() - t0;
}

static void *thread_main(void *arg) {
  kn_clang_t *c = arg;
  /* Signals are the main thread's business (its self-pipe). */
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  pthread_mutex_lock(&c->lock);
  for (;;) {
    while (!c->job && !c->quit) pthread_cond_wait(&c->wake, &c->lock);
    if (c->quit) break;
    kn_clang_job_t *job = c->job;
    c->job = NULL;
    pthread_mutex_unlock(&c->lock);

    kn_clang_result_t *r = kn_xcalloc(1, sizeof *r);
    r->op = job->op;
    r->tag = job->tag;
    run_job(c, job, r);
    kn_clang_job_free(job);
    free(job);

    pthread_mutex_lock(&c->lock);
    c->result = r;
    uint64_t one = 1;
    if (write(c->event_fd, &one, sizeof one) < 0) { /* the counter cannot overflow here */
    }
  }
  pthread_mutex_unlock(&c->lock);
  if (c->unit) api.clang_disposeTranslationUnit(c->unit);
  if (c->index) api.clang_disposeIndex(c->index);
  free(c->unit_path);
  free(c->unit_args);
  free(c->unit_text);
  release(c);
  return NULL;
}

kn_clang_t *kn_clang_new(char *err, size_t err_size) {
  kn_clang_t *c = kn_xcalloc(1, sizeof *c);
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->wake, NULL);
  c->refs = 2;
  c->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (c->event_fd < 0) {
    snprintf(err, err_size, "cannot create the completion thread's eventfd: %s", strerror(errno));
    state_free(c);
    return NULL;
  }
  int rc = pthread_create(&c->thread, NULL, thread_main, c);
  if (rc != 0) {
    snprintf(err, err_size, "cannot start the completion thread: %s", strerror(rc));
    state_free(c);
    return NULL;
  }
  return c;
}

void kn_clang_destroy(kn_clang_t **cp) {
  kn_clang_t *c = *cp;
  if (!c) return;
  pthread_mutex_lock(&c->lock);
  c->quit = true;
  pthread_cond_signal(&c->wake);
  pthread_mutex_unlock(&c->lock);
  /* A parse cannot be cancelled; a long one is left to finish alone. */
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 3;
  if (pthread_timedjoin_np(c->thread, NULL, &deadline) != 0) pthread_detach(c->thread);
  release(c);
  *cp = NULL;
}

int kn_clang_fd(const kn_clang_t *c) { return c->event_fd; }

bool kn_clang_busy(const kn_clang_t *c) { return c->busy; }

int kn_clang_submit(kn_clang_t *c, kn_clang_job_t *job) {
  if (c->busy) return -1;
  kn_clang_job_t *mine = kn_xmalloc(sizeof *mine);
  *mine = *job;
  memset(job, 0, sizeof *job);
  pthread_mutex_lock(&c->lock);
  c->job = mine;
  c->busy = true;
  pthread_cond_signal(&c->wake);
  pthread_mutex_unlock(&c->lock);
  return 0;
}

kn_clang_result_t *kn_clang_take(kn_clang_t *c) {
  uint64_t n;
  while (read(c->event_fd, &n, sizeof n) < 0 && errno == EINTR) {
  }
  pthread_mutex_lock(&c->lock);
  kn_clang_result_t *r = c->result;
  c->result = NULL;
  pthread_mutex_unlock(&c->lock);
  if (r) c->busy = false;
  return r;
}
