/* SPDX-License-Identifier: BSD-3-Clause */
/* The session's inputs (see kn_history.h). */
#include "kn_history.h"

#include <stdlib.h>
#include <string.h>

#include "kn_text.h"

typedef struct entry {
  int line;
  char *input;
} entry_t;

struct kn_history {
  entry_t *v;
  size_t n, cap;
};

#define SESSION 1

kn_history_t *kn_history_new(void) {
  return fl__xcalloc(1, sizeof(kn_history_t));
}

void kn_history_destroy(kn_history_t **hp) {
  kn_history_t *h = *hp;
  if (!h) return;
  for (size_t i = 0; i < h->n; i++) free(h->v[i].input);
  free(h->v);
  free(h);
  *hp = NULL;
}

void kn_history_add(kn_history_t *h, int line, const char *code) {
  if (h->n == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 64;
    h->v = fl__xrealloc(h->v, h->cap, sizeof *h->v);
  }
  h->v[h->n++] = (entry_t){.line = line, .input = fl__xstrdup(code)};
}

const char *kn_history_input(const kn_history_t *h, int line) {
  for (size_t i = h->n; i-- > 0;)
    if (h->v[i].line == line) return h->v[i].input;
  return NULL;
}

static void put(json_t *out, const entry_t *e) {
  json_array_append_new(out, json_pack("[i, i, s]", SESSION, e->line, e->input));
}

json_t *kn_history_query(const kn_history_t *h, const json_t *req) {
  const char *type = json_string_value(json_object_get(req, "hist_access_type"));
  json_t *out = json_array();
  if (type && !strcmp(type, "tail")) {
    json_t *jn = json_object_get(req, "n");
    size_t n = json_is_integer(jn) && json_integer_value(jn) >= 0
                   ? (size_t)json_integer_value(jn) : h->n;
    for (size_t i = n < h->n ? h->n - n : 0; i < h->n; i++) put(out, &h->v[i]);
  } else if (type && !strcmp(type, "range")) {
    json_int_t start = json_integer_value(json_object_get(req, "start"));
    json_t *jstop = json_object_get(req, "stop");
    json_int_t stop = json_is_integer(jstop) ? json_integer_value(jstop) : (json_int_t)1 << 40;
    for (size_t i = 0; i < h->n; i++)
      if (h->v[i].line >= start && h->v[i].line < stop) put(out, &h->v[i]);
  } else if (type && !strcmp(type, "search")) {
    const char *pattern = json_string_value(json_object_get(req, "pattern"));
    char *needle = fl__xstrdup(pattern ? pattern : "");
    size_t w = 0;
    for (size_t r = 0; needle[r]; r++)
      if (needle[r] != '*' && needle[r] != '?') needle[w++] = needle[r];
    needle[w] = '\0';
    for (size_t i = 0; i < h->n; i++)
      if (strstr(h->v[i].input, needle)) put(out, &h->v[i]);
    free(needle);
  } else {
    for (size_t i = 0; i < h->n; i++) put(out, &h->v[i]);
  }
  return out;
}
