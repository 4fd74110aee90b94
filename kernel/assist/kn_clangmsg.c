/* SPDX-License-Identifier: BSD-3-Clause */
/* Jobs and results between the kernel and cflame-clang (see kn_clangmsg.h). */
#include "kn_clangmsg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kn_text.h"

void kn_clangmsg_job_free(kn_clang_job_t *job) {
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

void kn_clangmsg_result_free(kn_clang_result_t **rp) {
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

/* ---- strings, byte for byte ---- */

/* s as JSON: a string when it is UTF-8, else {"bytes": "<hex>"}; null for
 * NULL. New. */
static json_t *text_to_json(const char *s) {
  if (!s) return json_null();
  json_t *j = json_string(s);
  if (j) return j;
  static const char digits[] = "0123456789abcdef";
  fl__buf_t hex = FL__BUF_INIT;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    fl__buf_putc(&hex, digits[*p >> 4]);
    fl__buf_putc(&hex, digits[*p & 15]);
  }
  j = json_pack("{s:s}", "bytes", hex.data);
  fl__buf_free(&hex);
  return j;
}

static int hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The string text_to_json made of j (new), or NULL for null or anything
 * else. */
static char *text_from_json(const json_t *j) {
  if (json_is_string(j)) return fl__xstrdup(json_string_value(j));
  const char *hex = json_string_value(json_object_get(j, "bytes"));
  if (!hex) return NULL;
  size_t n = strlen(hex) / 2;
  char *s = fl__xmalloc(n + 1, 1);
  for (size_t i = 0; i < n; i++) {
    int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
    s[i] = (char)(hi < 0 || lo < 0 ? '?' : hi << 4 | lo);
  }
  s[n] = '\0';
  return s;
}

/* ---- jobs ---- */

json_t *kn_clangmsg_job_to_json(const kn_clang_job_t *job) {
  json_t *args = json_array();
  for (char **a = job->args; a && *a; a++) json_array_append_new(args, text_to_json(*a));
  return json_pack("{s:i, s:o, s:o, s:o, s:I, s:I, s:o}", "op", (int)job->op, "path",
                   text_to_json(job->path), "args", args, "text", text_to_json(job->text), "line",
                   (json_int_t)job->line, "column", (json_int_t)job->column, "prefix",
                   text_to_json(job->prefix));
}

int kn_clangmsg_job_from_json(const json_t *j, kn_clang_job_t *job, char *err, size_t err_size) {
  memset(job, 0, sizeof *job);
  int op;
  json_int_t line, column;
  json_t *path, *args, *text, *prefix = NULL;
  json_error_t e;
  if (json_unpack_ex((json_t *)j, &e, 0, "{s:i, s:o, s:o, s:o, s:I, s:I, s?o}", "op", &op, "path",
                     &path, "args", &args, "text", &text, "line", &line, "column", &column,
                     "prefix", &prefix) < 0 ||
      !json_is_array(args) || (op != KN_CLANG_COMPLETE && op != KN_CLANG_INSPECT)) {
    snprintf(err, err_size, "not a job: %s", e.text[0] ? e.text : "bad op or args");
    return -1;
  }
  job->op = (kn_clang_op_t)op;
  job->path = text_from_json(path);
  job->text = text_from_json(text);
  job->prefix = text_from_json(prefix);
  job->line = (unsigned)line;
  job->column = (unsigned)column;
  size_t n = json_array_size(args);
  job->args = fl__xcalloc(n + 1, sizeof *job->args);
  for (size_t i = 0; i < n; i++) {
    job->args[i] = text_from_json(json_array_get(args, i));
    if (!job->args[i]) job->args[i] = fl__xstrdup("");
  }
  if (!job->path || !job->text) {
    kn_clangmsg_job_free(job);
    snprintf(err, err_size, "not a job: no path or text");
    return -1;
  }
  return 0;
}

/* ---- results ---- */

static json_t *symbol_to_json(const kn_clang_symbol_t *s) {
  return json_pack("{s:o, s:i, s:o, s:o, s:o, s:o, s:o, s:I, s:b}", "name", text_to_json(s->name),
                   "kind", (int)s->kind, "declaration", text_to_json(s->declaration), "definition",
                   text_to_json(s->definition), "parent", text_to_json(s->parent), "comment",
                   text_to_json(s->comment), "file", text_to_json(s->file), "line",
                   (json_int_t)s->line, "system", s->system);
}

json_t *kn_clangmsg_result_to_json(const kn_clang_result_t *r) {
  json_t *matches = json_array();
  for (size_t i = 0; i < r->n_matches; i++) {
    const kn_clang_match_t *m = &r->matches[i];
    json_array_append_new(matches, json_pack("{s:o, s:o, s:i, s:I}", "name", text_to_json(m->name),
                                             "signature", text_to_json(m->signature), "kind",
                                             (int)m->kind, "priority", (json_int_t)m->priority));
  }
  return json_pack("{s:i, s:o, s:o, s:o, s:f, s:f}", "op", (int)r->op, "error",
                   text_to_json(r->error), "matches", matches, "symbol",
                   r->symbol ? symbol_to_json(r->symbol) : json_null(), "parse_ms", r->parse_ms,
                   "total_ms", r->total_ms);
}

int kn_clangmsg_result_from_json(const json_t *j, kn_clang_result_t **rp, char *err,
                                 size_t err_size) {
  *rp = NULL;
  int op;
  json_t *error, *matches, *symbol;
  kn_clang_result_t *r = fl__xcalloc(1, sizeof *r);
  json_error_t e;
  if (json_unpack_ex((json_t *)j, &e, 0, "{s:i, s:o, s:o, s:o, s:F, s:F}", "op", &op, "error",
                     &error, "matches", &matches, "symbol", &symbol, "parse_ms", &r->parse_ms,
                     "total_ms", &r->total_ms) < 0 ||
      !json_is_array(matches)) {
    snprintf(err, err_size, "not a result: %s", e.text[0] ? e.text : "matches not an array");
    free(r);
    return -1;
  }
  r->op = (kn_clang_op_t)op;
  r->error = text_from_json(error);
  size_t n = json_array_size(matches);
  r->matches = n ? fl__xcalloc(n, sizeof *r->matches) : NULL;
  for (size_t i = 0; i < n; i++) {
    const json_t *m = json_array_get(matches, i);
    char *name = text_from_json(json_object_get(m, "name"));
    if (!name) continue;
    r->matches[r->n_matches++] = (kn_clang_match_t){
        .name = name,
        .signature = text_from_json(json_object_get(m, "signature")),
        .kind = (kn_clang_kind_t)json_integer_value(json_object_get(m, "kind")),
        .priority = (unsigned)json_integer_value(json_object_get(m, "priority"))};
  }
  if (json_is_object(symbol)) {
    kn_clang_symbol_t *s = fl__xcalloc(1, sizeof *s);
    s->name = text_from_json(json_object_get(symbol, "name"));
    s->kind = (kn_clang_kind_t)json_integer_value(json_object_get(symbol, "kind"));
    s->declaration = text_from_json(json_object_get(symbol, "declaration"));
    s->definition = text_from_json(json_object_get(symbol, "definition"));
    s->parent = text_from_json(json_object_get(symbol, "parent"));
    s->comment = text_from_json(json_object_get(symbol, "comment"));
    s->file = text_from_json(json_object_get(symbol, "file"));
    s->line = (unsigned)json_integer_value(json_object_get(symbol, "line"));
    s->system = json_is_true(json_object_get(symbol, "system"));
    r->symbol = s;
  }
  *rp = r;
  return 0;
}
