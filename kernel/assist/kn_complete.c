/* SPDX-License-Identifier: BSD-3-Clause */
/* complete_request and inspect_request read, and completion answered (see
 * kn_complete.h, and kn__complete.h for how its files divide the work). */
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
#include "kn__complete.h"
#include "kn_cell.h"
#include "kn_clang.h"
#include "kn_exec.h"
#include "kn_magics.h"
#include "kn_manpage.h"
#include "kn_names.h"
#include "kn_worker.h"

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

/* Adds a match; one of the same text is merged into it when the reply is
 * made (reply_matches). */
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

/* Every option a magic takes: those of its option groups, from the
 * option tables (kn_profreq_option). Calls fn with each. */
static void each_option(const kn_magic_def_t *def, void (*fn)(void *, const char *,
                                                               const kn_optspec_t *),
                        void *ctx) {
  const kn_optspec_t *o;
  for (size_t i = 0; (o = kn_profreq_option(def->options, i)) != NULL; i++) fn(ctx, o->name, o);
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
  const char *choices = s.spec->type == FL_OPT_BOOL   ? "true|false"
                        : s.spec->type == FL_OPT_ENUM ? s.spec->choices
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
int kn__make_job(kn_kernel_t *k, request_t *r, kn_clang_job_t *job) {
  kn_session_t *s = kn_kernel_session(k);
  fl__buf_t marked = FL__BUF_INIT;
  if (r->alone) {
    fl__buf_add(&marked, r->code + r->start, r->mark_at - r->start);
  } else {
    fl__buf_add(&marked, r->code + r->body_off, r->mark_at - r->body_off);
  }
  fl__buf_puts(&marked, CURSOR_MARK);
  if (!r->alone) fl__buf_puts(&marked, r->code + r->mark_at);
  r->cell = kn_kernel_execution_count(k) + 1;
  char *text = kn_session_unit_text(s, r->cell, marked.data, r->body_line);
  fl__buf_free(&marked);
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
  fl__buf_t path = FL__BUF_INIT;
  fl__buf_printf(&path, "%s/" UNIT_FILE, kn_session_dir(s));
  *job = (kn_clang_job_t){.op = r->inspect ? KN_CLANG_INSPECT : KN_CLANG_COMPLETE,
                          .path = fl__buf_take(&path),
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

void kn__reply_completion(kn_kernel_t *k, request_t *r) {
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

/* Help on a magic, at once. */
static void reply_magic_help(kn_kernel_t *k, const request_t *r, const char *word) {
  char *help = kn_magic_help(word + strspn(word, "%"));
  json_t *data = json_object();
  if (help) {
    json_object_set_new(data, "text/plain", kn_wire_text(help));
    fl__buf_t md = FL__BUF_INIT;
    fl__buf_printf(&md, "```\n%s\n```", help);
    json_object_set_new(data, "text/markdown", kn_wire_text(md.data));
    fl__buf_free(&md);
  }
  kn_reply(k, r->channel, r->msg, "inspect_reply",
           json_pack("{s:s, s:b, s:o, s:{}}", "status", "ok", "found", help != NULL, "data",
                     data, "metadata"));
  free(help);
}

/* ---- requests ---- */

void kn__request_free(request_t *r) {
  kn_msg_destroy(&r->msg);
  matches_free(&r->options);
  free(r->code);
  free(r->prefix);
  kn_clangmsg_result_free(&r->clang);
  kn_manpage_destroy(&r->man);
  free(r);
}

/* A complete_request or inspect_request from channel (msg taken) as a
 * request; *cur: the byte of its code the cursor is at. */
request_t *kn__request_read(kn_msg_t *msg, kn_channel_t channel, size_t *cur) {
  request_t *r = fl__xcalloc(1, sizeof *r);
  r->msg = msg;
  r->channel = channel;
  r->inspect = !strcmp(kn_msg_type(msg), "inspect_request");
  const char *code = json_string_value(json_object_get(msg->content, "code"));
  r->code = fl__xstrdup(code ? code : "");
  r->detail = (int)json_integer_value(json_object_get(msg->content, "detail_level"));
  *cur = byte_offset(r->code, strlen(r->code),
                     json_integer_value(json_object_get(msg->content, "cursor_pos")));
  return r;
}

/* Reads r, whose word is at byte cur of its code, and answers it at once
 * where it can: returns what is left to do (kn__next_t). */
kn__next_t kn__start(kn_kernel_t *k, request_t *r, size_t cur) {
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
    return KN__REPLIED;
  }
  if (!split) {
    /* Magic lines that do not parse: nothing runs, so nothing completes. */
    r->start = r->end = cur;
    r->prefix = fl__xstrdup("");
    return KN__ANSWER;
  }
  if (r->inspect) {
    r->mark_at = r->end;
    r->back = r->end - r->start;
  } else {
    r->mark_at = cur;
    r->prefix = fl__xstrndup(r->code + r->start, cur - r->start);
  }
  if ((r->inspect && r->end == r->start) || r->mark_at < r->body_off) return KN__ANSWER;
  return KN__ASK;
}
