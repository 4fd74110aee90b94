/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_magic: magic lines at the start of a cell, and their option words (see
 * kn_magic.h). */
#include "kn_magic.h"

#include "kn_text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* ---- magic lines ---- */

static void magic_free(kn_magic_t *m) {
  free(m->name);
  free(m->args);
  m->name = m->args = NULL;
}

void kn_cell_magics_free(kn_cell_magics_t *m) {
  if (!m) return;
  for (size_t i = 0; i < m->n_lines; i++) magic_free(&m->lines[i]);
  free(m->lines);
  if (m->cell) magic_free(m->cell);
  free(m->cell);
  free(m->body);
  memset(m, 0, sizeof *m);
}

/* Blank lines may come before the first magic and between magics; they then
 * belong to neither: the body starts after the last magic line, so that its
 * line numbers (body_line) stay those of the cell. A line magic may follow
 * the cell magic. */
int kn_magic_split(const char *code, kn_cell_magics_t *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  const char *p = code, *body = code;
  int line = 1, body_line = 1;
  bool seen_magic = false;

  while (*p) {
    const char *q = p;
    while (is_blank(*q)) q++;
    const char *eol = strchr(q, '\n');
    if (!eol) eol = q + strlen(q);
    const char *next = *eol ? eol + 1 : eol;
    if (q == eol) { /* blank line */
      p = next;
      line++;
      continue;
    }
    if (*q != '%') break;

    bool is_cell = q[1] == '%';
    const char *name = q + (is_cell ? 2 : 1), *name_end = name;
    while (name_end < eol && is_name_char(*name_end)) name_end++;
    if (name_end == name) {
      fl__errf(err, err_size, "line %d: '%s' must be followed by a magic name", line,
              is_cell ? "%%" : "%");
      goto fail;
    }
    if (is_cell && (seen_magic || out->cell)) {
      fl__errf(err, err_size,
              "%%%%%.*s must be on the first line of the cell (it is on line %d): a cell "
              "magic applies to the whole cell",
              (int)(name_end - name), name, line);
      goto fail;
    }
    const char *args = name_end, *args_end = eol;
    while (args < args_end && is_blank(*args)) args++;
    while (args_end > args && is_blank(args_end[-1])) args_end--;

    kn_magic_t m = {fl__xstrndup(name, (size_t)(name_end - name)), is_cell,
                    fl__xstrndup(args, (size_t)(args_end - args)), line};
    if (is_cell) {
      out->cell = fl__xmalloc(1, sizeof *out->cell);
      *out->cell = m;
    } else {
      out->lines = fl__xrealloc(out->lines, out->n_lines + 1, sizeof *out->lines);
      out->lines[out->n_lines++] = m;
    }
    seen_magic = true;
    p = next;
    line++;
    body = p;
    body_line = line;
  }
  out->body = fl__xstrdup(body);
  out->body_line = body_line;
  return 0;

fail:
  kn_cell_magics_free(out);
  return -1;
}

/* ---- words ---- */

void kn_words_free(char **words) {
  if (!words) return;
  for (size_t i = 0; words[i]; i++) free(words[i]);
  free(words);
}

int kn_words_split(const char *args, char ***words, char *err, size_t err_size) {
  char **v = fl__xcalloc(1, sizeof *v);
  size_t n = 0;
  fl__buf_t sb = FL__BUF_INIT;
  const char *p = args ? args : "";

  *words = NULL;
  for (;;) {
    while (is_blank(*p) || *p == '\n') p++;
    if (!*p) break;
    const char *start = p;
    bool quoted = false;
    fl__buf_clear(&sb); /* a quoted "" is a word of its own */
    while (*p && (quoted || !(is_blank(*p) || *p == '\n'))) {
      if (*p == '"') {
        quoted = !quoted;
        p++;
      } else if (quoted && *p == '\\' && (p[1] == '"' || p[1] == '\\')) {
        fl__buf_putc(&sb, p[1]);
        p += 2;
      } else {
        fl__buf_putc(&sb, *p++);
      }
    }
    if (quoted) {
      fl__errf(err, err_size, "unterminated quote in %s", start);
      goto fail;
    }
    v = fl__xrealloc(v, n + 2, sizeof *v);
    v[n++] = fl__buf_take(&sb);
    v[n] = NULL;
  }
  fl__buf_free(&sb);
  *words = v;
  return (int)n;

fail:
  fl__buf_free(&sb);
  kn_words_free(v);
  return -1;
}

/* ---- options ---- */

void kn_opts_free(kn_opts_t *opts) {
  if (!opts) return;
  for (size_t i = 0; i < opts->n_vals; i++) fl_optval_free(&opts->vals[i]);
  free(opts->vals);
  kn_words_free(opts->positional);
  memset(opts, 0, sizeof *opts);
}

const kn_optval_t *kn_opts_get(const kn_opts_t *opts, const char *key) {
  for (size_t i = 0; i < opts->n_vals; i++)
    if (strcmp(opts->vals[i].key, key) == 0) return &opts->vals[i];
  return NULL;
}

static long find_key(const kn_optspec_t *spec, size_t n_spec, const char *key, size_t len) {
  for (size_t i = 0; i < n_spec; i++)
    if (strlen(spec[i].name) == len && strncmp(spec[i].name, key, len) == 0) return (long)i;
  return -1;
}

/* Converts value for spec s into v, with the library's checks and words
 * (fl_option_parse) after the magic's name. shown is the word as the user
 * wrote it ("width=abc", "-n abc") for the error message. */
static int set_value(const char *magic, const kn_optspec_t *s, const char *value, const char *shown,
                     kn_optval_t *v, char *err, size_t err_size) {
  char why[512];
  if (fl_option_parse(s, value, shown, v, why, sizeof why) == 0) return 0;
  fl__errf(err, err_size, "%s: %s", magic, why);
  return -1;
}

static void unknown_option(const char *magic, const char *word, size_t len,
                           const kn_optspec_t *spec, size_t n_spec, char *err, size_t err_size) {
  /* A flag (-x) is answered with flags, a key=value word with keys, each
   * with what it means. */
  bool flag = word[0] == '-';
  fl__buf_t sb = FL__BUF_INIT;
  for (size_t i = 0; i < n_spec; i++) {
    if (i) fl__buf_puts(&sb, ", ");
    fl__buf_printf(&sb, "%s%s", flag ? "-" : "", spec[i].name);
    if (flag && spec[i].help) fl__buf_printf(&sb, " (%s)", spec[i].help);
  }
  if (n_spec)
    fl__errf(err, err_size, "%s: unknown option '%.*s'; valid options: %s", magic, (int)len, word,
            sb.data);
  else
    fl__errf(err, err_size, "%s: unknown option '%.*s'; it takes no options", magic, (int)len, word);
  fl__buf_free(&sb);
}

/* Word forms, in order of precedence:
 *   key=value   key made of letters, digits and '_' (not "x==y");
 *   -k value    IPython-style flag naming a spec key; a BOOL flag takes no
 *               value and means true; -n10 also works for one-letter keys;
 *   anything else is positional (including "-5"). */
int kn_opts_parse(const char *magic, const char *args, const kn_optspec_t *spec, size_t n_spec,
                  kn_opts_t *out, char *err, size_t err_size) {
  char **words = NULL;
  fl__buf_t name = FL__BUF_INIT, shown = FL__BUF_INIT;
  size_t n_pos = 0;

  memset(out, 0, sizeof *out);
  if (magic[0] != '%') fl__buf_putc(&name, '%');
  fl__buf_puts(&name, magic);
  out->vals = fl__xcalloc(n_spec ? n_spec : 1, sizeof *out->vals);
  out->n_vals = n_spec;
  for (size_t i = 0; i < n_spec; i++) out->vals[i].key = spec[i].name;
  out->positional = fl__xcalloc(1, sizeof *out->positional);

  char werr[256];
  int n = kn_words_split(args, &words, werr, sizeof werr);
  if (n < 0) {
    fl__errf(err, err_size, "%s: %s", name.data, werr);
    goto fail;
  }

  for (int i = 0; i < n; i++) {
    const char *w = words[i], *value = NULL;
    const char *eq = strchr(w, '=');
    long idx = -1;
    fl__buf_clear(&shown);

    size_t klen = 0;
    while (is_name_char(w[klen])) klen++;
    bool key_value =
        eq && klen > 0 && w + klen == eq && eq[1] != '=' && !(w[0] >= '0' && w[0] <= '9');
    bool flag = w[0] == '-' &&
                ((w[1] >= 'a' && w[1] <= 'z') || (w[1] >= 'A' && w[1] <= 'Z') || w[1] == '_');
    if (key_value) {
      idx = find_key(spec, n_spec, w, klen);
      if (idx < 0) {
        unknown_option(name.data, w, klen, spec, n_spec, err, err_size);
        goto fail;
      }
      value = eq + 1;
      fl__buf_puts(&shown, w);
    } else if (flag) {
      const char *key = w + 1;
      idx = find_key(spec, n_spec, key, strlen(key));
      if (idx >= 0 && spec[idx].type == FL_OPT_BOOL) {
        value = "true";
        fl__buf_puts(&shown, w);
      } else if (idx >= 0) {
        if (i + 1 >= n) {
          fl__errf(err, err_size, "%s: %s needs a value", name.data, w);
          goto fail;
        }
        value = words[++i];
        fl__buf_printf(&shown, "%s %s", w, value);
      } else {
        idx = find_key(spec, n_spec, key, 1);
        if (idx < 0 || spec[idx].type == FL_OPT_BOOL) {
          unknown_option(name.data, w, strlen(w), spec, n_spec, err, err_size);
          goto fail;
        }
        value = key + 1; /* -n10 */
        fl__buf_puts(&shown, w);
      }
    } else {
      out->positional = fl__xrealloc(out->positional, n_pos + 2, sizeof *out->positional);
      out->positional[n_pos++] = fl__xstrdup(w);
      out->positional[n_pos] = NULL;
      out->n_positional = n_pos;
      continue;
    }
    if (out->vals[idx].set) {
      fl__errf(err, err_size, "%s: option '%s' is given twice", name.data, spec[idx].name);
      goto fail;
    }
    if (set_value(name.data, &spec[idx], value, shown.data, &out->vals[idx], err, err_size) < 0)
      goto fail;
  }
  kn_words_free(words);
  fl__buf_free(&name);
  fl__buf_free(&shown);
  return 0;

fail:
  kn_words_free(words);
  fl__buf_free(&name);
  fl__buf_free(&shown);
  kn_opts_free(out);
  return -1;
}
