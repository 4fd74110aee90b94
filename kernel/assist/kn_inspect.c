/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_inspect: an inspect_request answered (see kn_complete.h and
 * kn__complete.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__common.h"
#include "kn__complete.h"
#include "kn_session.h"
#include "kn_text.h"
#include "kn_wire.h"

/* ---- inspection ---- */

/* A comment as its reader wants it: without the comment markers and the
 * leading stars of a block comment's lines. New. */
static char *comment_text(const char *raw) {
  fl__buf_t sb = FL__BUF_INIT;
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
      if (sb.len) fl__buf_putc(&sb, '\n');
      fl__buf_add(&sb, p, (size_t)(e - p));
    }
    line = *eol ? eol + 1 : eol;
  }
  while (sb.len && sb.data[sb.len - 1] == '\n') sb.data[--sb.len] = '\0';
  if (!sb.len) {
    fl__buf_free(&sb);
    return NULL;
  }
  return fl__buf_take(&sb);
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
static void put_cut(fl__buf_t *sb, const char *text, int max_lines, int *left) {
  const char *p = text;
  for (int n = 0; *p && n < max_lines; n++) {
    const char *eol = strchrnul(p, '\n');
    p = *eol ? eol + 1 : eol;
  }
  size_t len = (size_t)(p - text);
  while (len && text[len - 1] == '\n') len--;
  fl__buf_add(sb, text, len);
  *left = 0;
  for (; *p; p++) *left += *p == '\n';
  if (p > text && p[-1] != '\n' && len < strlen(text)) (*left)++;
}

/* Appends a paragraph to both renderings: plain as it is, markdown
 * fenced as code when lang is given ("c", or "" for plain text). */
static void put_both(fl__buf_t *plain, fl__buf_t *md, const char *text, const char *lang) {
  if (plain->len) fl__buf_puts(plain, "\n\n");
  if (md->len) fl__buf_puts(md, "\n\n");
  fl__buf_puts(plain, text);
  if (lang)
    fl__buf_printf(md, "```%s\n%s\n```", lang, text);
  else
    fl__buf_puts(md, text);
}

/* The man page's part of an inspection: at detail 0 its title, SYNOPSIS
 * and the first paragraph of its DESCRIPTION; at 1 the whole page. */
static void put_manpage(fl__buf_t *plain, fl__buf_t *md, const char *page, int detail) {
  if (!page[0]) return;
  if (detail > 0) {
    put_both(plain, md, page, "");
    return;
  }
  char *title, *synopsis, *description;
  kn_manpage_summary(page, &title, &synopsis, &description);
  fl__buf_printf(plain, "\n\n%s (from its manual page)", title ? title : "");
  fl__buf_printf(md, "\n\n**%s** (from its manual page)", title ? title : "");
  if (synopsis) {
    fl__buf_puts(plain, "\n\nSYNOPSIS");
    fl__buf_puts(md, "\n\nSYNOPSIS");
    put_both(plain, md, synopsis, "c");
  }
  if (description) {
    fl__buf_puts(plain, "\n\nDESCRIPTION");
    fl__buf_puts(md, "\n\nDESCRIPTION");
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
                            fl__buf_t *plain, fl__buf_t *md) {
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
  if (sym->parent)
    snprintf(what, sizeof what, "A member of %s. ", sym->parent);
  else if (cell > 0)
    snprintf(what, sizeof what, "A %s of the session. ", kind_word(sym->kind));
  fl__buf_printf(plain, "\n\n%s%s", what, where);
  fl__buf_printf(md, "\n\n%s%s", what, where_md);

  /* Its comment, and for a cell's definition the definition itself. */
  char *definition = NULL, *comment = NULL;
  if (cell > 0 && sym->name)
    session_source(k, r, cell, sym->name, sym->line, &definition, &comment);
  char *own_comment = sym->comment ? comment_text(sym->comment) : NULL;
  if (own_comment || comment) put_both(plain, md, own_comment ? own_comment : comment, NULL);
  if (definition && sym->kind != KN_CLANG_MEMBER &&
      strcmp(definition, sym->declaration ? sym->declaration : "")) {
    fl__buf_t def = FL__BUF_INIT;
    int left = 0;
    put_cut(&def, definition, r->detail > 0 ? INT_MAX : DEFINITION_LINES, &left);
    put_both(plain, md, def.data, "c");
    if (left) {
      fl__buf_printf(plain, "\n(%d more lines: inspect with detail level 1 for all)", left);
      fl__buf_printf(md, "\n\n(%d more lines: inspect with detail level 1 for all)", left);
    }
    fl__buf_free(&def);
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
                 "page",
                 word);
    free(word);
    return;
  }
  kn_exec_display(e, json_pack("{s:o, s:{}}", "data", data, "metadata"));
  kn_exec_finish_ok(e);
}

void kn__reply_inspection(kn_kernel_t *k, request_t *r) {
  fl__buf_t plain = FL__BUF_INIT, md = FL__BUF_INIT;
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
      fl__buf_printf(&plain, "\n\nDefined in " KN_CELL_FILE_FMT ".", cell);
      fl__buf_printf(&md, "\n\nDefined in `" KN_CELL_FILE_FMT "`.", cell);
    } else if (r->man && kn_manpage_text(r->man)[0]) {
      /* A library function no header of the session declares yet: its
       * page's synopsis says which to include. */
      fl__buf_printf(&plain,
                       "%s is not declared in this session; its manual page says "
                       "which header declares it.",
                       word);
      fl__buf_printf(&md,
                       "`%s` is not declared in this session; its manual page says "
                       "which header declares it.",
                       word);
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
  fl__buf_free(&plain);
  fl__buf_free(&md);
}
