/* complete_request and inspect_request (see kn_complete.h). */
#define _GNU_SOURCE
#include "kn_complete.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fl__common.h"
#include "kn_cell.h"
#include "kn_clang.h"
#include "kn_exec.h"
#include "kn_magics.h"
#include "kn_manpage.h"
#include "kn_names.h"
#include "kn_worker.h"

/* The file name libclang gives the unit, in the session directory, where
 * the compiler finds the cell's quoted #includes from. Never written: the
 * unit's text is handed to libclang in memory. */
#define UNIT_FILE "cflame-complete.c"
/* Marks the cursor in the cell's text while the session turns it into a
 * unit, written right after the name being completed or inspected: one
 * identifier with it, so that the splitter places the piece as it would
 * once the name is written out (a comment would be dropped at the start of
 * a piece). */
#define CURSOR_MARK KN_GENERATED_PREFIX "cursor_"
/* A request waits this long for libclang (a first parse of big headers on
 * a busy machine takes seconds; one of 10^5 declarations, a second), then
 * it is answered without, and libclang's process is killed;
 * CFLAME_COMPLETE_TIMEOUT_MS changes it. */
#define CLANG_TIMEOUT_MS 15000
/* libclang's process may use this much memory (address space, and
 * resident); CFLAME_COMPLETE_MEMORY_MB changes it. */
#define CLANG_MEMORY_MB 2048
/* A manual page that takes longer than this is not waited for. */
#define MANPAGE_TIMEOUT_MS 5000
/* At detail level 0 a session definition longer than this is cut. */
#define DEFINITION_LINES 20
/* At most this many file names in one reply. */
#define MAX_PATHS 500
/* At most this many matches in one reply: the likeliest (a header of 10^4
 * functions with one prefix would otherwise fill a frontend's list). */
#define MAX_MATCHES 1000

typedef struct match {
  char *text;
  const char *type; /* _jupyter_types_experimental's: function, variable, ... */
  char *signature;
  unsigned priority;
} match_t;

typedef struct matches {
  match_t *v;
  size_t n, cap;
} matches_t;

/* Adds a match; one of the same text is merged into it when the reply is
 * made (reply_matches). */
typedef struct request {
  kn_msg_t *msg;   /* the request answered; NULL for an execution's */
  kn_exec_t *exec; /* the execution answered instead (`name?`), or NULL */
  kn_channel_t channel;
  bool inspect;
  int detail;
  char *code;
  size_t body_off; /* where the C after the magic lines starts, in code */
  int body_line;   /* and its line in the cell */
  size_t mark_at;  /* where the mark goes, in code: after the name */
  size_t back;     /* libclang is asked about this many bytes before it */
  size_t start, end; /* the word being completed or inspected, in code */
  char *prefix;    /* completion: the word up to the cursor */
  int cell;        /* the cell number the unit was built for */
  bool submitted;
  bool alone;      /* asked with the name alone as the cell (see retry_alone) */
  matches_t options; /* a magic's options that the word may also start */
  kn_clang_result_t *clang;
  kn_manpage_t *man;
  long long deadline_ms; /* answered by then with what there is: from its
                            arrival for libclang, then for its manual page */
  struct request *next;
} request_t;

struct kn_complete {
  kn_clang_t *clang;
  request_t *head, *tail; /* in arrival order; head is the one under way */
  int timeout_ms;  /* how long a request waits for libclang */
  bool error_logged;
};

/* ---- text positions ---- */

static bool is_ident(int c) { return isalnum(c) || c == '_'; }

/* Jupyter counts cursor_pos in Unicode code points; the byte offset of
 * code point cp in UTF-8 code. */
static size_t byte_offset(const char *code, size_t len, json_int_t cp) {
  size_t i = 0;
  for (json_int_t n = 0; i < len && n < cp; n++) {
    i++;
    while (i < len && ((unsigned char)code[i] & 0xC0) == 0x80) i++;
  }
  return i;
}

static json_int_t code_points(const char *code, size_t bytes) {
  json_int_t n = 0;
  for (size_t i = 0; i < bytes; i++)
    if (((unsigned char)code[i] & 0xC0) != 0x80) n++;
  return n;
}

/* The identifier around byte cursor: [*start, *end). */
static void ident_at(const char *code, size_t len, size_t cursor, size_t *start, size_t *end) {
  size_t s = cursor, e = cursor;
  while (s > 0 && is_ident((unsigned char)code[s - 1])) s--;
  while (e < len && is_ident((unsigned char)code[e])) e++;
  *start = s;
  *end = e;
}

static size_t line_start(const char *code, size_t at) {
  while (at > 0 && code[at - 1] != '\n') at--;
  return at;
}

static int line_number(const char *code, size_t at) {
  int n = 1;
  for (size_t i = 0; i < at; i++) n += code[i] == '\n';
  return n;
}

/* ---- the reply's matches ---- */

static void add_match(matches_t *m, const char *text, const char *type, const char *signature,
                      unsigned priority) {
  if (m->n == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 32;
    m->v = fl__xrealloc(m->v, m->cap, sizeof *m->v);
  }
  m->v[m->n++] =
      (match_t){fl__xstrdup(text), type, signature ? fl__xstrdup(signature) : NULL, priority};
}

static void matches_free(matches_t *m) {
  for (size_t i = 0; i < m->n; i++) {
    free(m->v[i].text);
    free(m->v[i].signature);
  }
  free(m->v);
}

static int cmp_text(const void *a, const void *b) {
  const match_t *x = a, *y = b;
  int d = strcmp(x->text, y->text);
  return d ? d : x->priority < y->priority ? -1 : x->priority > y->priority;
}

/* Likelier first (libclang's priority: locals before globals before
 * keywords), then in alphabetical order. */
static int cmp_match(const void *a, const void *b) {
  const match_t *x = a, *y = b;
  if (x->priority != y->priority) return x->priority < y->priority ? -1 : 1;
  return strcmp(x->text, y->text);
}

/* One match per text (the likeliest of those alike), in cmp_match's
 * order. */
static void sort_matches(matches_t *m) {
  qsort(m->v, m->n, sizeof *m->v, cmp_text);
  size_t n = 0;
  for (size_t i = 0; i < m->n; i++) {
    if (n > 0 && !strcmp(m->v[n - 1].text, m->v[i].text)) {
      free(m->v[i].text);
      free(m->v[i].signature);
      continue;
    }
    m->v[n++] = m->v[i];
  }
  m->n = n;
  qsort(m->v, m->n, sizeof *m->v, cmp_match);
}

/* Sends complete_reply for r: matches replace code[start, end). */
static void reply_matches(kn_kernel_t *k, const request_t *r, matches_t *m, size_t start,
                          size_t end) {
  sort_matches(m);
  json_int_t cs = code_points(r->code, start), ce = code_points(r->code, end);
  json_t *texts = json_array(), *types = json_array();
  for (size_t i = 0; i < m->n && i < MAX_MATCHES; i++) {
    json_array_append_new(texts, kn_wire_text(m->v[i].text));
    json_t *t = json_pack("{s:I, s:I, s:o, s:o}", "start", cs, "end", ce, "text",
                          kn_wire_text(m->v[i].text), "type", kn_wire_text(m->v[i].type));
    if (m->v[i].signature) json_object_set_new(t, "signature", kn_wire_text(m->v[i].signature));
    json_array_append_new(types, t);
  }
  kn_reply(k, r->channel, r->msg, "complete_reply",
           json_pack("{s:s, s:o, s:I, s:I, s:{s:o}}", "status", "ok", "matches", texts,
                     "cursor_start", cs, "cursor_end", ce, "metadata",
                     "_jupyter_types_experimental", types));
}

/* ---- completion on magic lines ---- */

/* Every option key a magic takes: its option groups', then the key= words
 * its usage names (%profload's as=). Calls fn with each key. */
static void each_option(const kn_magic_def_t *def, void (*fn)(void *, const char *,
                                                               const kn_optspec_t *),
                        void *ctx) {
  const kn_optspec_t *o;
  for (size_t i = 0; (o = kn_profmagic_option(def->options, i)) != NULL; i++) fn(ctx, o->key, o);
  for (const char *p = def->usage; *p; p++) {
    if (!isalpha((unsigned char)*p) || (p > def->usage && is_ident((unsigned char)p[-1])))
      continue;
    const char *q = p;
    while (is_ident((unsigned char)*q)) q++;
    if (*q == '=') {
      char key[64];
      snprintf(key, sizeof key, "%.*s", (int)(q - p), p);
      fn(ctx, key, NULL);
    }
    p = q - 1;
  }
}

typedef struct option_search {
  matches_t *m;
  const char *prefix, *key; /* key: the option whose values are wanted */
  const kn_optspec_t *spec;
} option_search_t;

static void option_name(void *ctx, const char *key, const kn_optspec_t *spec) {
  option_search_t *s = ctx;
  char word[80];
  snprintf(word, sizeof word, "%s=", key);
  if (!strncmp(word, s->prefix, strlen(s->prefix))) add_match(s->m, word, "magic", NULL, 0);
}

static void option_spec(void *ctx, const char *key, const kn_optspec_t *spec) {
  option_search_t *s = ctx;
  if (spec && !s->spec && !strcmp(key, s->key)) s->spec = spec;
}

/* The values an option takes, when they are a few words. */
static void option_values(const kn_magic_def_t *def, const char *key, const char *prefix,
                          matches_t *m) {
  option_search_t s = {m, prefix, key, NULL};
  each_option(def, option_spec, &s);
  if (!s.spec) return;
  const char *choices = s.spec->type == KN_OPT_BOOL   ? "true|false"
                        : s.spec->type == KN_OPT_ENUM ? s.spec->choices
                                                      : NULL;
  for (const char *p = choices; p && *p;) {
    size_t n = strcspn(p, "|");
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)n, p);
    if (!strncmp(word, prefix, strlen(prefix))) add_match(m, word, "magic", NULL, 0);
    p += n + (p[n] == '|');
  }
}

/* Names of files and directories (with a '/') that complete path, relative
 * to the kernel's working directory as the magics read them. */
static void path_matches(const char *path, matches_t *m) {
  const char *slash = strrchr(path, '/');
  char dir[PATH_MAX];
  const char *base = slash ? slash + 1 : path;
  if (slash)
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path + 1), path);
  else
    dir[0] = '\0';
  DIR *d = opendir(dir[0] ? dir : ".");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && m->n < MAX_PATHS) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (e->d_name[0] == '.' && base[0] != '.') continue;
    if (strncmp(e->d_name, base, strlen(base)) != 0) continue;
    char full[PATH_MAX * 2];
    snprintf(full, sizeof full, "%s%s", dir, e->d_name);
    struct stat st;
    bool is_dir = stat(full[0] ? full : ".", &st) == 0 && S_ISDIR(st.st_mode);
    if (is_dir) strcat(full, "/");
    add_match(m, full, "path", NULL, 0);
  }
  closedir(d);
}

/* Completes on a magic line: the magic's name, its options and their
 * values, and file names where it takes a PATH. line_at is where the
 * line starts in r->code, cur the cursor. */
static void complete_magic_line(kn_kernel_t *k, request_t *r, size_t line_at, size_t cur) {
  const char *code = r->code;
  size_t p = line_at;
  while (code[p] == ' ' || code[p] == '\t') p++;
  size_t name_start = p;
  while (code[p] == '%') p++;
  bool cell = p - name_start >= 2;
  size_t name_end = p;
  while (is_ident((unsigned char)code[name_end])) name_end++;
  matches_t m = {0};
  size_t start = cur, end = cur;
  if (cur <= name_end) {
    /* The magic's name. */
    char *prefix = fl__xstrndup(code + name_start, cur - name_start);
    const kn_magic_def_t *def;
    for (size_t i = 0; (def = kn_magic_at(i)) != NULL; i++) {
      if (!(def->forms & (cell ? KN_FORM_CELL : KN_FORM_LINE))) continue;
      char word[80];
      snprintf(word, sizeof word, "%s%s", cell ? "%%" : "%", def->name);
      if (!strncmp(word, prefix, strlen(prefix))) add_match(&m, word, "magic", NULL, 0);
    }
    free(prefix);
    start = name_start;
    end = name_end;
  } else {
    char *name = fl__xstrndup(code + p, name_end - p);
    const kn_magic_def_t *def = kn_magic_find(name);
    free(name);
    /* The word under the cursor: from the blank before it. */
    start = cur;
    while (start > name_end && !isspace((unsigned char)code[start - 1])) start--;
    end = cur;
    while (code[end] && !isspace((unsigned char)code[end])) end++;
    char *word = fl__xstrndup(code + start, cur - start);
    const char *eq = strchr(word, '=');
    if (def && eq) {
      char *key = fl__xstrndup(word, (size_t)(eq - word));
      option_values(def, key, eq + 1, &m);
      free(key);
      start += (size_t)(eq - word) + 1;
    } else if (def) {
      option_search_t s = {&m, word, NULL, NULL};
      each_option(def, option_name, &s);
      if (strstr(def->usage, "PATH")) path_matches(word, &m);
    }
    free(word);
  }
  reply_matches(k, r, &m, start, end);
  matches_free(&m);
}

/* Where the statement of the magic line at line_at in code starts, when
 * the line is the statement form of a profiling magic
 * (`%profview width=600 work(3);`, `%profbase NAME work(3);`): after the
 * baseline's name and the option words, as kn_run.c reads them. */
static bool statement_at(const char *code, size_t line_at, size_t *at) {
  const char *p = code + line_at;
  while (*p == ' ' || *p == '\t') p++;
  if (p[0] != '%' || p[1] == '%') return false;
  const char *name = ++p;
  while (is_ident((unsigned char)*p)) p++;
  char *n = fl__xstrndup(name, (size_t)(p - name));
  const kn_magic_def_t *def = kn_magic_find(n);
  free(n);
  if (!def || def->timeit || !def->profile) return false;
  char *args = fl__xstrndup(p, strcspn(p, "\n"));
  bool found = false;
  if (kn_magic_is_statement(def, args)) {
    /* Baseline magics start with the baseline's NAME. */
    const char *a = args;
    if (def->profile == KN_PROF_BASE || def->profile == KN_PROF_DIFF) {
      a += strspn(a, " \t");
      a += strcspn(a, " \t");
    }
    char *opts, *stmt;
    kn_profreq_split_statement(a, def->options, &opts, &stmt);
    if (stmt[0]) {
      /* The statement is what is left of the line. */
      *at = (size_t)(p - code) + (size_t)(a - args) + strlen(a) - strlen(stmt);
      found = true;
    }
    free(opts);
    free(stmt);
  }
  free(args);
  return found;
}

/* ---- completion and inspection of C ---- */

/* The compiler arguments for libclang: the language, the session's flags
 * that change what the preprocessor and the parser see (-D, -U, -I, -std=
 * and the like; code generation flags are left out, as some mean nothing
 * to clang), the kernel's working directory for quoted #includes as the
 * compiler has it, and comments kept for inspection. New, NULL-terminated. */
static char **unit_args(const kn_session_t *s) {
  static const char *const joined[] = {"-D", "-U", "-I", "-std=", "-isystem", "-iquote",
                                       "-idirafter", "-include", NULL};
  static const char *const alone[] = {"-ansi", "-pthread", "-fopenmp", "-funsigned-char",
                                      "-fsigned-char", NULL};
  static const char *const with_value[] = {"-D", "-U", "-I", "-isystem", "-iquote",
                                           "-idirafter", "-include", NULL};
  char **words = NULL, err[64];
  int n = kn_words_split(kn_session_cflags(s), &words, err, sizeof err);
  char **args = fl__xcalloc((size_t)(n > 0 ? n : 0) + 10, sizeof *args);
  size_t a = 0;
  args[a++] = fl__xstrdup("-xc");
  for (int i = 0; i < n; i++) {
    bool keep = false, takes_next = false;
    for (const char *const *o = alone; *o; o++) keep |= !strcmp(words[i], *o);
    for (const char *const *o = joined; *o; o++) keep |= !strncmp(words[i], *o, strlen(*o));
    for (const char *const *o = with_value; *o; o++) takes_next |= !strcmp(words[i], *o);
    if (!keep) continue;
    args[a++] = fl__xstrdup(words[i]);
    if (takes_next && i + 1 < n) args[a++] = fl__xstrdup(words[++i]);
  }
  kn_words_free(words);
  char cwd[PATH_MAX];
  args[a++] = fl__xstrdup("-iquote");
  args[a++] = fl__xstrdup(getcwd(cwd, sizeof cwd) ? cwd : ".");
  args[a++] = fl__xstrdup("-fparse-all-comments");
  args[a++] = fl__xstrdup("-ferror-limit=0");
  args[a++] = fl__xstrdup("-w");
  return args;
}

/* The job that asks libclang about r: the unit the session would compile
 * for r's cell, the cursor's place in it found by its mark. Returns 0, or
 * -1 when the cell's text at the cursor does not reach the unit (a
 * directive the session already has, say). */
static int make_job(kn_kernel_t *k, request_t *r, kn_clang_job_t *job) {
  kn_session_t *s = kn_kernel_session(k);
  kn_strbuf_t marked = KN_STRBUF_INIT;
  if (r->alone) {
    kn_strbuf_append(&marked, r->code + r->start, r->mark_at - r->start);
  } else {
    kn_strbuf_append(&marked, r->code + r->body_off, r->mark_at - r->body_off);
  }
  kn_strbuf_puts(&marked, CURSOR_MARK);
  if (!r->alone) kn_strbuf_puts(&marked, r->code + r->mark_at);
  r->cell = kn_kernel_execution_count(k) + 1;
  char *text = kn_session_unit_text(s, r->cell, marked.data, r->body_line);
  kn_strbuf_free(&marked);
  /* The unit may hold the cell's text more than once (a prototype and its
   * definition, a trailing expression used several times): the last mark,
   * in the code that runs, is the cursor's. To inspect, every mark goes, so
   * that the name is the name everywhere. To complete, the others stay: the
   * text before the cursor is unfinished (`n1.next->`), and with the mark
   * it is at least C that parses (`n1.next->cflame_cursor_`). */
  char *at = NULL;
  size_t mark_len = strlen(CURSOR_MARK);
  for (char *p = text; text && (p = strstr(p, CURSOR_MARK)) != NULL;) {
    if (r->inspect) memmove(p, p + mark_len, strlen(p + mark_len) + 1);
    at = p;
    if (!r->inspect) p += mark_len;
  }
  if (!at) {
    free(text);
    return -1;
  }
  if (!r->inspect) memmove(at, at + mark_len, strlen(at + mark_len) + 1);
  unsigned line = 1, column = 1;
  for (const char *p = text; p < at - r->back; p++) {
    if (*p == '\n') {
      line++;
      column = 1;
    } else {
      column++;
    }
  }
  kn_strbuf_t path = KN_STRBUF_INIT;
  kn_strbuf_printf(&path, "%s/" UNIT_FILE, kn_session_dir(s));
  *job = (kn_clang_job_t){.op = r->inspect ? KN_CLANG_INSPECT : KN_CLANG_COMPLETE,
                          .path = kn_strbuf_steal(&path),
                          .args = unit_args(s),
                          .text = text,
                          .line = line,
                          .column = column,
                          .prefix = r->prefix ? fl__xstrdup(r->prefix) : NULL,
                          .tag = r};
  return 0;
}

static const char *jupyter_type(kn_clang_kind_t kind) {
  switch (kind) {
  case KN_CLANG_FUNCTION:
  case KN_CLANG_FUNCTION_MACRO: return "function";
  case KN_CLANG_MEMBER: return "member";
  case KN_CLANG_TYPE: return "type";
  case KN_CLANG_KEYWORD: return "keyword";
  default: return "variable";
  }
}

/* Names a user does not mean unless they start writing one: the C
 * library's reserved names (__x, _X) and the kernel's own. */
static bool hidden(const char *name, const char *prefix) {
  if (prefix[0] == '_') return false;
  if (name[0] == '_' && (name[1] == '_' || isupper((unsigned char)name[1]))) return true;
  return kn_is_generated_name(name);
}

static void session_name(void *ctx, const char *name) {
  option_search_t *s = ctx;
  if (!strncmp(name, s->prefix, strlen(s->prefix))) add_match(s->m, name, "variable", NULL, 60);
}

static void reply_completion(kn_kernel_t *k, request_t *r) {
  matches_t m = r->options;
  r->options = (matches_t){0};
  const kn_clang_result_t *res = r->clang;
  if (res && !res->error) {
    for (size_t i = 0; i < res->n_matches; i++) {
      const kn_clang_match_t *cm = &res->matches[i];
      if (hidden(cm->name, r->prefix)) continue;
      add_match(&m, cm->name, jupyter_type(cm->kind), cm->signature, cm->priority);
    }
  } else if (r->prefix[0]) {
    /* Without libclang: the session's names and the keywords. */
    option_search_t s = {&m, r->prefix, NULL, NULL};
    kn_session_each_name(kn_kernel_session(k), session_name, &s);
    for (size_t i = 0; kn_c_keywords[i]; i++)
      if (!strncmp(kn_c_keywords[i], r->prefix, strlen(r->prefix)))
        add_match(&m, kn_c_keywords[i], "keyword", NULL, 60);
  }
  reply_matches(k, r, &m, r->start, r->end);
  matches_free(&m);
}

/* ---- inspection ---- */

/* A comment as its reader wants it: without the comment markers and the
 * leading stars of a block comment's lines. New. */
static char *comment_text(const char *raw) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  for (const char *line = raw; *line;) {
    const char *eol = strchrnul(line, '\n');
    const char *p = line, *e = eol;
    while (p < e && isspace((unsigned char)*p)) p++;
    if (e - p >= 2 && (!strncmp(p, "/*", 2) || !strncmp(p, "//", 2))) {
      p += 2;
      while (p < e && (*p == '*' || *p == '/' || *p == '!' || *p == '<')) p++;
    } else if (p < e && *p == '*' && !(e - p >= 2 && p[1] == '/')) {
      p++;
    }
    if (e - p >= 2 && !strncmp(e - 2, "*/", 2)) e -= 2;
    while (e > p && e[-1] == '*') e--;
    if (p < e && *p == ' ') p++;
    while (e > p && isspace((unsigned char)e[-1])) e--;
    if (e > p || sb.len) {
      if (sb.len) kn_strbuf_putc(&sb, '\n');
      kn_strbuf_append(&sb, p, (size_t)(e - p));
    }
    line = *eol ? eol + 1 : eol;
  }
  while (sb.len && sb.data[sb.len - 1] == '\n') sb.data[--sb.len] = '\0';
  if (!sb.len) {
    kn_strbuf_free(&sb);
    return NULL;
  }
  return kn_strbuf_steal(&sb);
}

/* The comment on the lines right above line (1-based) of code: `//` lines,
 * or a block comment that ends there. New, or NULL. */
static char *comment_above(const char *code, int line) {
  /* Where each line starts, up to the one asked for. */
  size_t *at = fl__xcalloc((size_t)line + 1, sizeof *at);
  int n = 1;
  for (size_t i = 0; code[i] && n < line; i++)
    if (code[i] == '\n') at[n++] = i + 1;
  if (n < line) {
    free(at);
    return NULL;
  }
  int first = line; /* the first line of the comment, 1-based */
  bool in_block = false;
  for (int l = line - 1; l >= 1; l--) {
    const char *p = code + at[l - 1], *e = strchrnul(p, '\n');
    while (p < e && isspace((unsigned char)*p)) p++;
    while (e > p && isspace((unsigned char)e[-1])) e--;
    if (in_block) {
      first = l;
      if (e - p >= 2 && memmem(p, (size_t)(e - p), "/*", 2)) in_block = false;
      continue;
    }
    if (e - p >= 2 && !strncmp(p, "//", 2)) {
      first = l;
    } else if (e - p >= 2 && !strncmp(e - 2, "*/", 2)) {
      first = l;
      in_block = !memmem(p, (size_t)(e - p), "/*", 2);
    } else {
      break;
    }
  }
  char *out = NULL;
  if (first < line && !in_block) {
    char *raw = fl__xstrndup(code + at[first - 1], at[line - 1] - at[first - 1]);
    out = comment_text(raw);
    free(raw);
  }
  free(at);
  return out;
}

/* What cell `cell` of the session wrote for name at line (its definition,
 * as written), and the comment above it: from r's own code when it is the
 * cell being inspected, else from the history. New strings, or NULL. */
static void session_source(kn_kernel_t *k, const request_t *r, int cell, const char *name,
                           unsigned line, char **definition, char **comment) {
  *definition = *comment = NULL;
  const char *code = cell == r->cell ? r->code : kn_history_input(kn_kernel_history(k), cell);
  kn_cell_magics_t cm;
  char err[128];
  if (!code || kn_magic_split(code, &cm, err, sizeof err) < 0) return;
  kn_items_t items;
  if (kn_cell_split(cm.body, kn_session_typedefs(kn_kernel_session(k)), cm.body_line, &items) ==
      0) {
    const kn_item_t *best = NULL;
    for (size_t i = 0; i < items.n; i++) {
      const kn_item_t *it = &items.items[i];
      const char *n = it->name ? strrchr(it->name, ' ') : NULL;
      n = n ? n + 1 : it->name;
      if (!n || strcmp(n, name) != 0 || it->kind == KN_ITEM_STMT) continue;
      if (!best || (unsigned)it->line == line ||
          ((unsigned)best->line != line && it->kind == KN_ITEM_FUNC))
        best = it;
    }
    if (best) {
      *definition = fl__xstrdup(best->text);
      *comment = comment_above(code, best->line);
    }
    kn_items_free(&items);
  }
  kn_cell_magics_free(&cm);
}

/* text cut to its first max_lines lines, with a note of what was left. */
static void put_cut(kn_strbuf_t *sb, const char *text, int max_lines, int *left) {
  const char *p = text;
  for (int n = 0; *p && n < max_lines; n++) {
    const char *eol = strchrnul(p, '\n');
    p = *eol ? eol + 1 : eol;
  }
  size_t len = (size_t)(p - text);
  while (len && text[len - 1] == '\n') len--;
  kn_strbuf_append(sb, text, len);
  *left = 0;
  for (; *p; p++) *left += *p == '\n';
  if (p > text && p[-1] != '\n' && len < strlen(text)) (*left)++;
}

/* Appends a paragraph to both renderings: plain as it is, markdown
 * fenced as code when lang is given ("c", or "" for plain text). */
static void put_both(kn_strbuf_t *plain, kn_strbuf_t *md, const char *text, const char *lang) {
  if (plain->len) kn_strbuf_puts(plain, "\n\n");
  if (md->len) kn_strbuf_puts(md, "\n\n");
  kn_strbuf_puts(plain, text);
  if (lang)
    kn_strbuf_printf(md, "```%s\n%s\n```", lang, text);
  else
    kn_strbuf_puts(md, text);
}

/* The man page's part of an inspection: at detail 0 its title, SYNOPSIS
 * and the first paragraph of its DESCRIPTION; at 1 the whole page. */
static void put_manpage(kn_strbuf_t *plain, kn_strbuf_t *md, const char *page, int detail) {
  if (!page[0]) return;
  if (detail > 0) {
    put_both(plain, md, page, "");
    return;
  }
  char *title, *synopsis, *description;
  kn_manpage_summary(page, &title, &synopsis, &description);
  kn_strbuf_printf(plain, "\n\n%s (from its manual page)", title ? title : "");
  kn_strbuf_printf(md, "\n\n**%s** (from its manual page)", title ? title : "");
  if (synopsis) {
    kn_strbuf_puts(plain, "\n\nSYNOPSIS");
    kn_strbuf_puts(md, "\n\nSYNOPSIS");
    put_both(plain, md, synopsis, "c");
  }
  if (description) {
    kn_strbuf_puts(plain, "\n\nDESCRIPTION");
    kn_strbuf_puts(md, "\n\nDESCRIPTION");
    put_both(plain, md, description, NULL);
  }
  free(title);
  free(synopsis);
  free(description);
}

static const char *kind_word(kn_clang_kind_t kind) {
  switch (kind) {
  case KN_CLANG_FUNCTION: return "function";
  case KN_CLANG_VARIABLE: return "variable";
  case KN_CLANG_MEMBER: return "member";
  case KN_CLANG_ENUMERATOR: return "enumeration constant";
  case KN_CLANG_TYPE: return "type";
  case KN_CLANG_MACRO:
  case KN_CLANG_FUNCTION_MACRO: return "macro";
  default: return "name";
  }
}

/* The inspection of a symbol libclang resolved, in both renderings. */
static void describe_symbol(kn_kernel_t *k, const request_t *r, const kn_clang_symbol_t *sym,
                            kn_strbuf_t *plain, kn_strbuf_t *md) {
  put_both(plain, md, sym->declaration ? sym->declaration : sym->name, "c");
  /* The members of the session's types; a library's are its business. */
  if (sym->definition && !sym->system &&
      (!sym->declaration || strcmp(sym->definition, sym->declaration)))
    put_both(plain, md, sym->definition, "c");

  /* Where: a cell, or a header. */
  int cell = 0;
  char where[PATH_MAX + 128], where_md[PATH_MAX + 128];
  const char *file = sym->file ? sym->file : "";
  const char *verb = sym->system ? "Declared" : "Defined";
  if (sscanf(file, KN_CELL_FILE_FMT, &cell) == 1 && cell == r->cell) {
    snprintf(where, sizeof where, "%s in this cell, line %u.", verb, sym->line);
    snprintf(where_md, sizeof where_md, "%s", where);
  } else if (cell > 0) {
    snprintf(where, sizeof where, "%s in " KN_CELL_FILE_FMT ", line %u.", verb, cell, sym->line);
    snprintf(where_md, sizeof where_md, "%s in `" KN_CELL_FILE_FMT "`, line %u.", verb, cell,
             sym->line);
  } else if (file[0]) {
    snprintf(where, sizeof where, "Declared in %s, line %u.", file, sym->line);
    snprintf(where_md, sizeof where_md, "Declared in `%s`, line %u.", file, sym->line);
  } else {
    where[0] = where_md[0] = '\0';
  }
  char what[256] = "";
  if (sym->parent) snprintf(what, sizeof what, "A member of %s. ", sym->parent);
  else if (cell > 0) snprintf(what, sizeof what, "A %s of the session. ", kind_word(sym->kind));
  kn_strbuf_printf(plain, "\n\n%s%s", what, where);
  kn_strbuf_printf(md, "\n\n%s%s", what, where_md);

  /* Its comment, and for a cell's definition the definition itself. */
  char *definition = NULL, *comment = NULL;
  if (cell > 0 && sym->name)
    session_source(k, r, cell, sym->name, sym->line, &definition, &comment);
  char *own_comment = sym->comment ? comment_text(sym->comment) : NULL;
  if (own_comment || comment) put_both(plain, md, own_comment ? own_comment : comment, NULL);
  if (definition && sym->kind != KN_CLANG_MEMBER && strcmp(definition, sym->declaration ? sym->declaration : "")) {
    kn_strbuf_t def = KN_STRBUF_INIT;
    int left = 0;
    put_cut(&def, definition, r->detail > 0 ? INT_MAX : DEFINITION_LINES, &left);
    put_both(plain, md, def.data, "c");
    if (left) {
      kn_strbuf_printf(plain, "\n(%d more lines: inspect with detail level 1 for all)", left);
      kn_strbuf_printf(md, "\n\n(%d more lines: inspect with detail level 1 for all)", left);
    }
    kn_strbuf_free(&def);
  }
  free(own_comment);
  free(comment);
  free(definition);
  if (r->man) put_manpage(plain, md, kn_manpage_text(r->man), r->detail);
}

/* An execution's `name?`: the inspection (data, stolen) as its output,
 * then its end. */
static void show_in_exec(request_t *r, json_t *data) {
  kn_exec_t *e = r->exec;
  r->exec = NULL;
  e->inspecting = false;
  if (json_object_size(data) == 0) {
    json_decref(data);
    char *word = fl__xstrndup(r->code + r->start, r->end - r->start);
    kn_exec_fail(e, "NameError",
                 "%s is not declared in this session, nor a C library function with a manual "
                 "page", word);
    free(word);
    return;
  }
  kn_exec_display(e, json_pack("{s:o, s:{}}", "data", data, "metadata"));
  kn_exec_finish_ok(e);
}

static void reply_inspection(kn_kernel_t *k, request_t *r) {
  kn_strbuf_t plain = KN_STRBUF_INIT, md = KN_STRBUF_INIT;
  const kn_clang_symbol_t *sym = r->clang ? r->clang->symbol : NULL;
  if (sym) {
    describe_symbol(k, r, sym, &plain, &md);
  } else if (r->end > r->start) {
    /* libclang found nothing (or is missing): what the session says. */
    char *word = fl__xstrndup(r->code + r->start, r->end - r->start);
    int cell = 0;
    const char *decl = kn_session_describe(kn_kernel_session(k), word, &cell);
    if (decl) {
      put_both(&plain, &md, decl, "c");
      kn_strbuf_printf(&plain, "\n\nDefined in " KN_CELL_FILE_FMT ".", cell);
      kn_strbuf_printf(&md, "\n\nDefined in `" KN_CELL_FILE_FMT "`.", cell);
    } else if (r->man && kn_manpage_text(r->man)[0]) {
      /* A library function no header of the session declares yet: its
       * page's synopsis says which to include. */
      kn_strbuf_printf(&plain, "%s is not declared in this session; its manual page says "
                               "which header declares it.", word);
      kn_strbuf_printf(&md, "`%s` is not declared in this session; its manual page says "
                            "which header declares it.", word);
      put_manpage(&plain, &md, kn_manpage_text(r->man), r->detail);
    }
    free(word);
  }
  json_t *data = json_object();
  if (plain.len) {
    json_object_set_new(data, "text/plain", kn_wire_text(plain.data));
    json_object_set_new(data, "text/markdown", kn_wire_text(md.data));
  }
  if (r->exec)
    show_in_exec(r, data);
  else if (r->msg)
    kn_reply(k, r->channel, r->msg, "inspect_reply",
             json_pack("{s:s, s:b, s:o, s:{}}", "status", "ok", "found", plain.len > 0, "data",
                       data, "metadata"));
  else
    json_decref(data);
  kn_strbuf_free(&plain);
  kn_strbuf_free(&md);
}

/* Help on a magic, at once. */
static void reply_magic_help(kn_kernel_t *k, const request_t *r, const char *word) {
  char *help = kn_magic_help(word + strspn(word, "%"));
  json_t *data = json_object();
  if (help) {
    json_object_set_new(data, "text/plain", kn_wire_text(help));
    kn_strbuf_t md = KN_STRBUF_INIT;
    kn_strbuf_printf(&md, "```\n%s\n```", help);
    json_object_set_new(data, "text/markdown", kn_wire_text(md.data));
    kn_strbuf_free(&md);
  }
  kn_reply(k, r->channel, r->msg, "inspect_reply",
           json_pack("{s:s, s:b, s:o, s:{}}", "status", "ok", "found", help != NULL, "data",
                     data, "metadata"));
  free(help);
}

/* ---- the queue ---- */

static void request_free(request_t *r) {
  kn_msg_destroy(&r->msg);
  matches_free(&r->options);
  free(r->code);
  free(r->prefix);
  kn_clangmsg_result_free(&r->clang);
  kn_manpage_destroy(&r->man);
  free(r);
}

/* The reply is sent: idle, and the request is done. */
static void finish(kn_kernel_t *k, request_t *r) {
  if (r->msg) kn_publish_status(k, r->msg, "idle");
  request_free(r);
}

static void answer(kn_kernel_t *k, request_t *r) {
  if (r->inspect)
    reply_inspection(k, r);
  else
    reply_completion(k, r);
  finish(k, r);
}

static request_t *pop(kn_complete_t *c) {
  request_t *r = c->head;
  c->head = r->next;
  if (!c->head) c->tail = NULL;
  r->next = NULL;
  return r;
}

/* Whether r, asked in its cell, should be asked again with its name alone
 * as the cell: when the cell around the cursor leaves libclang nothing to
 * offer (code so broken that the cursor lands outside any function, a call
 * with an argument in error, which C's parser drops whole, or a piece the
 * session drops), the names visible at the start of a statement are still
 * a good guess. Not after '.' or '->': there, only the members of a type
 * libclang could not work out would do. */
static bool retry_alone(const request_t *r) {
  if (r->alone || r->end == r->start || (!r->inspect && !r->prefix[0])) return false;
  size_t p = r->start;
  while (p > 0 && isspace((unsigned char)r->code[p - 1])) p--;
  return !(p > 0 && (r->code[p - 1] == '.' || (r->code[p - 1] == '>' && p > 1 &&
                                               r->code[p - 2] == '-')));
}

/* Logs why libclang gave nothing, once a session: the same reason would
 * come with every request. */
static void log_clang_error(kn_kernel_t *k, const char *why) {
  kn_complete_t *c = kn_kernel_complete(k);
  if (c->error_logged) return;
  kn_log(k, "completion falls back to the session's names: %s", why);
  c->error_logged = true;
}

/* Starts the head request in libclang if none is under way; answers at
 * once those that libclang cannot help with. */
static void advance(kn_kernel_t *k) {
  kn_complete_t *c = kn_kernel_complete(k);
  /* One job at a time: the head request's. */
  while (c->head && !c->head->submitted && !kn_clang_busy(c->clang)) {
    request_t *r = c->head;
    kn_clang_job_t job;
    int rc = make_job(k, r, &job);
    if (rc < 0 && retry_alone(r)) {
      r->alone = true;
      rc = make_job(k, r, &job);
    }
    char err[256];
    if (rc == 0 && kn_clang_submit(c->clang, &job, err, sizeof err) < 0) {
      kn_clangmsg_job_free(&job);
      log_clang_error(k, err);
      rc = -1;
    }
    if (rc < 0) {
      answer(k, pop(c));
      continue;
    }
    r->submitted = true;
  }
}

/* Whether the inspection of sym shows a manual page: a function or a type
 * of a system header. */
static bool wants_manpage(const kn_clang_symbol_t *sym) {
  return sym && sym->system && sym->name &&
         (sym->kind == KN_CLANG_FUNCTION || sym->kind == KN_CLANG_TYPE);
}

/* r has libclang's result: start its manual page, when its inspection
 * shows one, or ask again (retry_alone). Returns true when r has all it
 * waits for. */
static bool take_result(kn_kernel_t *k, request_t *r) {
  if (r->clang->lost)
    kn_log(k, "%s: %s", r->inspect ? "inspection" : "completion", r->clang->error);
  else if (r->clang->error)
    log_clang_error(k, r->clang->error);
  /* A cell that costs libclang its process (an #include of /dev/zero)
   * may still complete a name without it. */
  bool nothing = r->inspect ? !r->clang->symbol : !r->clang->n_matches;
  if ((r->clang->lost || (!r->clang->error && nothing)) && retry_alone(r)) {
    kn_clangmsg_result_free(&r->clang);
    r->alone = true;
    r->submitted = false;
    return false;
  }
  const kn_clang_symbol_t *sym = r->clang->symbol;
  char *word = fl__xstrndup(r->code + r->start, r->end - r->start);
  const char *page = NULL;
  if (r->inspect && wants_manpage(sym))
    page = sym->name;
  else if (r->inspect && !sym && !kn_session_describe(kn_kernel_session(k), word, NULL))
    page = word; /* perhaps a function of a header not yet included */
  if (page) {
    char err[256];
    r->man = kn_manpage_start(page, sym && sym->kind == KN_CLANG_TYPE, err, sizeof err);
    if (!r->man) kn_log(k, "no manual page: %s", err);
    r->deadline_ms = fl__now_ms() + MANPAGE_TIMEOUT_MS;
  }
  free(word);
  return !r->man;
}

void kn_complete_on_ready(kn_kernel_t *k) {
  kn_complete_t *c = kn_kernel_complete(k);
  kn_clang_result_t *res = kn_clang_take(c->clang);
  long long now = fl__now_ms();
  while (c->head) {
    request_t *r = c->head;
    bool ready = false;
    if (res && r->submitted && !r->clang && !r->man) {
      r->clang = res;
      res = NULL;
      ready = take_result(k, r);
    } else if (r->man) {
      ready = kn_manpage_poll(r->man);
    }
    if (!ready && now >= r->deadline_ms) {
      /* Waited too long: answer with what there is. */
      kn_log(k, "%s took longer than %d ms: answered without %s",
             r->inspect ? "inspection" : "completion",
             r->man ? MANPAGE_TIMEOUT_MS : c->timeout_ms, r->man ? "the manual page" : "libclang");
      /* libclang may never end (an #include of a FIFO), nor stop reading
       * (of /dev/urandom): its process goes, the next request starts
       * another. */
      if (r->submitted && !r->clang) kn_clang_cancel(c->clang);
      kn_manpage_destroy(&r->man);
      ready = true;
    }
    if (!ready) break;
    answer(k, pop(c));
  }
  kn_clangmsg_result_free(&res);
  advance(k);
}

void kn_complete_fds(const kn_complete_t *c, int fds[2]) {
  fds[0] = kn_clang_fd(c->clang);
  fds[1] = c->head && c->head->man ? kn_manpage_fd(c->head->man) : -1;
}

int kn_complete_timeout(const kn_complete_t *c) {
  if (!c->head) return -1;
  long long left = c->head->deadline_ms - fl__now_ms();
  return left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

bool kn_complete_handles(const kn_msg_t *msg) {
  const char *type = kn_msg_type(msg);
  return !strcmp(type, "complete_request") || !strcmp(type, "inspect_request");
}

static void start(kn_kernel_t *k, request_t *r, size_t cur);

void kn_complete_request(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  kn_publish_status(k, msg, "busy");
  request_t *r = fl__xcalloc(1, sizeof *r);
  r->msg = msg;
  r->channel = channel;
  r->inspect = !strcmp(kn_msg_type(msg), "inspect_request");
  const char *code = json_string_value(json_object_get(msg->content, "code"));
  r->code = fl__xstrdup(code ? code : "");
  r->detail = (int)json_integer_value(json_object_get(msg->content, "detail_level"));
  start(k, r,
        byte_offset(r->code, strlen(r->code),
                    json_integer_value(json_object_get(msg->content, "cursor_pos"))));
}

void kn_complete_inspect_for(kn_kernel_t *k, kn_exec_t *e, const char *name, int detail) {
  request_t *r = fl__xcalloc(1, sizeof *r);
  r->exec = e;
  e->inspecting = true;
  r->inspect = true;
  r->code = fl__xstrdup(name);
  r->detail = detail;
  start(k, r, strlen(r->code));
}

void kn_complete_forget(kn_kernel_t *k, const kn_exec_t *e) {
  for (request_t *r = kn_kernel_complete(k)->head; r; r = r->next)
    if (r->exec == e) r->exec = NULL;
}

/* Answers r, whose word is at byte cur of its code: at once, or queued for
 * libclang. */
static void start(kn_kernel_t *k, request_t *r, size_t cur) {
  kn_complete_t *c = kn_kernel_complete(k);
  size_t len = strlen(r->code);
  ident_at(r->code, len, cur, &r->start, &r->end);

  /* A magic line: answered from the table, at once. */
  size_t ls = line_start(r->code, cur), p = ls;
  while (r->code[p] == ' ' || r->code[p] == '\t') p++;
  kn_cell_magics_t cm;
  char err[256];
  bool split = kn_magic_split(r->code, &cm, err, sizeof err) == 0;
  int line = line_number(r->code, cur);
  bool on_magic_line = r->code[p] == '%' && (!split || line < cm.body_line);
  if (split) {
    r->body_line = cm.body_line;
    for (int l = 1; l < cm.body_line && r->code[r->body_off]; l++) {
      r->body_off += strcspn(r->code + r->body_off, "\n");
      if (r->code[r->body_off]) r->body_off++;
    }
    kn_cell_magics_free(&cm);
  }
  size_t stmt_at;
  if (on_magic_line && split && statement_at(r->code, ls, &stmt_at) && cur >= stmt_at) {
    /* In the statement of `%profview [opts] STATEMENT`: C, as its own cell;
     * its first word may also be an option being written. */
    on_magic_line = false;
    r->body_off = stmt_at;
    r->body_line = line;
    if (!r->inspect && r->start == stmt_at) {
      char *word = fl__xstrndup(r->code + r->start, cur - r->start);
      size_t p = ls + strspn(r->code + ls, " \t%"), n = 0;
      while (is_ident((unsigned char)r->code[p + n])) n++;
      char *name = fl__xstrndup(r->code + p, n);
      const kn_magic_def_t *def = kn_magic_find(name);
      option_search_t s = {&r->options, word, NULL, NULL};
      if (def) each_option(def, option_name, &s);
      free(name);
      free(word);
    }
  }
  if (on_magic_line) {
    if (r->inspect) {
      size_t s = r->start;
      while (s > 0 && r->code[s - 1] == '%') s--;
      char *word = fl__xstrndup(r->code + s, r->end - s);
      reply_magic_help(k, r, word);
      free(word);
    } else {
      complete_magic_line(k, r, ls, cur);
    }
    finish(k, r);
    return;
  }
  if (!split) {
    /* Magic lines that do not parse: nothing runs, so nothing completes. */
    r->start = r->end = cur;
    r->prefix = fl__xstrdup("");
    answer(k, r);
    return;
  }
  if (r->inspect) {
    r->mark_at = r->end;
    r->back = r->end - r->start;
  } else {
    r->mark_at = cur;
    r->prefix = fl__xstrndup(r->code + r->start, cur - r->start);
  }
  if ((r->inspect && r->end == r->start) || r->mark_at < r->body_off) {
    answer(k, r);
    return;
  }
  r->deadline_ms = fl__now_ms() + c->timeout_ms;
  if (c->tail)
    c->tail->next = r;
  else
    c->head = r;
  c->tail = r;
  advance(k);
}

kn_complete_t *kn_complete_new(void) {
  kn_complete_t *c = fl__xcalloc(1, sizeof *c);
  const char *t = getenv("CFLAME_COMPLETE_TIMEOUT_MS");
  c->timeout_ms = t && atoi(t) > 0 ? atoi(t) : CLANG_TIMEOUT_MS;
  const char *mb = getenv("CFLAME_COMPLETE_MEMORY_MB");
  size_t memory_mb = mb && atoi(mb) > 0 ? (size_t)atoi(mb) : CLANG_MEMORY_MB;
  char *dir = kn_self_dir();
  kn_strbuf_t helper = KN_STRBUF_INIT;
  kn_strbuf_printf(&helper, "%s/" KN_CLANG_NAME, dir);
  free(dir);
  c->clang = kn_clang_new(helper.data, memory_mb << 20);
  kn_strbuf_free(&helper);
  return c;
}

void kn_complete_destroy(kn_complete_t **cp) {
  kn_complete_t *c = *cp;
  if (!c) return;
  while (c->head) request_free(pop(c));
  kn_clang_destroy(&c->clang);
  free(c);
  *cp = NULL;
}
