/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_session: what a notebook session has declared (see kn_session.h and,
 * for how its files divide the work, kn__session.h). */
#define _GNU_SOURCE
#include "kn_session.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kn__session.h"
#include "kn_magic.h"
#include "fl__spawn.h"
#include "kn_text.h"

/* ---- small helpers ---- */

static bool is_typedef_item(const kn_item_t *it) {
  return it->kind == KN_ITEM_TYPE && it->name && strncmp(it->name, "struct ", 7) &&
         strncmp(it->name, "union ", 6) && strncmp(it->name, "enum ", 5);
}

static char *describe_text(const kn_item_t *it) {
  const char *t = it->text;
  if (it->kind == KN_ITEM_FUNC) t = it->signature;
  if (it->kind == KN_ITEM_GLOBAL) t = it->decl;
  /* Drop the blanks left where `static` was. */
  fl__buf_t sb = FL__BUF_INIT;
  bool space = false;
  for (const char *p = t; *p; p++) {
    if (*p == ' ' || *p == '\t') {
      space = sb.len > 0;
      continue;
    }
    if (space) fl__buf_putc(&sb, ' ');
    space = false;
    fl__buf_putc(&sb, *p);
  }
  return fl__buf_take(&sb);
}

static void entry_free(entry_t *e) {
  free(e->key);
  free(e->name);
  free(e->header);
  free(e->describe);
}

/* ---- construction ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  return remove(path);
}

/* What the directory holds, the directory itself kept. */
static int rm_inside(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  return ftw->level > 0 ? remove(path) : 0;
}

kn_session_t *kn_session_new(char *err, size_t err_size) {
  kn_session_t *s = fl__xcalloc(1, sizeof *s);
  const char *tmp = getenv("TMPDIR");
  char tmpl[PATH_MAX];
  snprintf(tmpl, sizeof tmpl, "%s/cflame-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(tmpl)) {
    snprintf(err, err_size, "cannot create the session directory %s: %s", tmpl, strerror(errno));
    free(s);
    return NULL;
  }
  s->dir = fl__xstrdup(tmpl);
  char cwd[PATH_MAX];
  s->cwd = fl__xstrdup(getcwd(cwd, sizeof cwd) ? cwd : ".");
  const char *cc = getenv("CC");
  s->cc = fl__xstrdup(cc && *cc ? cc : KN_DEFAULT_CC);
  s->cflags = fl__xstrdup(KN_DEFAULT_CFLAGS);
  s->ldflags = fl__xstrdup(KN_DEFAULT_LDFLAGS);
  s->typedefs = fl__xcalloc(1, sizeof *s->typedefs);
  return s;
}

static void forget_all(kn_session_t *s) {
  for (size_t i = 0; i < s->n_entries; i++) entry_free(&s->entries[i]);
  s->n_entries = 0;
  for (size_t i = 0; i < s->n_objects; i++) free(s->objects[i]);
  s->n_objects = 0;
  free(s->typedefs);
  s->typedefs = fl__xcalloc(1, sizeof *s->typedefs);
}

void kn_session_destroy(kn_session_t **sp) {
  kn_session_t *s = *sp;
  if (!s) return;
  forget_all(s);
  free(s->entries);
  free(s->objects);
  free(s->objects_fp);
  free(s->objects_cell);
  free(s->typedefs);
  if (s->dir) nftw(s->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(s->dir);
  free(s->cwd);
  free(s->cc);
  free(s->cflags);
  free(s->ldflags);
  free(s);
  *sp = NULL;
}

void kn_session_reset(kn_session_t *s) {
  forget_all(s);
  /* The directory mkdtemp made stays and is only emptied: removed and made
   * again by its known name, it could be another user's by then, and
   * later cells would be compiled and loaded from a directory they own. */
  nftw(s->dir, rm_inside, 16, FTW_DEPTH | FTW_PHYS);
}

const char *kn_session_dir(const kn_session_t *s) { return s->dir; }
const char *kn_session_cc(const kn_session_t *s) { return s->cc; }
const char *kn_session_cflags(const kn_session_t *s) { return s->cflags; }
const char *kn_session_ldflags(const kn_session_t *s) { return s->ldflags; }

static int check_words(const char *what, const char *value, char *err, size_t err_size) {
  char **words;
  int n = kn_words_split(value, &words, err, err_size);
  if (n < 0) return -1;
  kn_words_free(words);
  (void)what;
  return 0;
}

int kn_session_set_cc(kn_session_t *s, const char *cc, char *err, size_t err_size) {
  char **words;
  int n = kn_words_split(cc, &words, err, err_size);
  if (n < 0) return -1;
  if (n == 0) {
    kn_words_free(words);
    snprintf(err, err_size, "%%cc needs a compiler command, such as cc, gcc or clang");
    return -1;
  }
  size_t nw = (size_t)n;
  char **argv = fl__xcalloc(nw + 2, sizeof *argv);
  for (size_t i = 0; i < nw; i++) argv[i] = words[i];
  argv[nw] = "--version";
  char *out;
  int rc = fl__spawn_run(argv, NULL, &out);
  free(argv);
  kn_words_free(words);
  if (rc != 0) {
    snprintf(err, err_size, "%%cc: '%s' does not run (%s); the compiler stays '%s'", cc,
             rc == 127 ? "not found" : "it failed with --version", s->cc);
    free(out);
    return -1;
  }
  free(out);
  free(s->cc);
  s->cc = fl__xstrdup(cc);
  return 0;
}

int kn_session_set_cflags(kn_session_t *s, const char *flags, char *err, size_t err_size) {
  if (check_words("%cflags", flags, err, err_size) < 0) return -1;
  free(s->cflags);
  s->cflags = fl__xstrdup(flags);
  return 0;
}

int kn_session_set_ldflags(kn_session_t *s, const char *flags, char *err, size_t err_size) {
  if (check_words("%ldflags", flags, err, err_size) < 0) return -1;
  free(s->ldflags);
  s->ldflags = fl__xstrdup(flags);
  return 0;
}

void kn_compiled_destroy(kn_compiled_t **cp) {
  kn_compiled_t *c = *cp;
  if (!c) return;
  if (c->so_path) unlink(c->so_path);
  free(c->so_path);
  free(c->entry);
  free(c->warnings);
  kn_items_free(&c->items);
  free(c);
  *cp = NULL;
}

static void rebuild_typedefs(kn_session_t *s) {
  size_t n = 0;
  for (size_t i = 0; i < s->n_entries; i++) n += s->entries[i].is_typedef;
  free(s->typedefs);
  s->typedefs = fl__xcalloc(n + 1, sizeof *s->typedefs);
  n = 0;
  for (size_t i = 0; i < s->n_entries; i++)
    if (s->entries[i].is_typedef) s->typedefs[n++] = s->entries[i].name;
}

void kn_session_commit(kn_session_t *s, kn_compiled_t **cp) {
  kn_compiled_t *c = *cp;
  for (size_t i = 0; i < c->items.n; i++) {
    const kn_item_t *it = &c->items.items[i];
    char *key = kn__item_key(it);
    if (!key) continue;
    ssize_t at = kn__find_entry(s, key);
    if (at >= 0 && (kn__is_include(it) || !kn__replaces(it, &s->entries[at]))) {
      free(key);
      continue;
    }
    /* A directive is kept where the cell has it (in_cell_order): the
     * earlier one stays in its place for the entries after it. */
    if (it->kind == KN_ITEM_PREPROC) at = -1;
    entry_t e = {.key = key,
                 .name = it->name ? fl__xstrdup(it->name) : NULL,
                 .header = kn__header_text(it, c->cell),
                 .describe = describe_text(it),
                 .cell = c->cell,
                 .is_definition = kn__item_is_definition(it),
                 .is_global = it->kind == KN_ITEM_GLOBAL,
                 .is_typedef = is_typedef_item(it),
                 .main_renamed = it->main_renamed};
    if (at >= 0) {
      entry_free(&s->entries[at]);
      s->entries[at] = e;
    } else {
      if (s->n_entries == s->cap_entries) {
        s->cap_entries = s->cap_entries ? s->cap_entries * 2 : 64;
        s->entries = fl__xrealloc(s->entries, s->cap_entries, sizeof *s->entries);
      }
      s->entries[s->n_entries++] = e;
    }
  }
  if (s->n_objects == s->cap_objects) {
    s->cap_objects = s->cap_objects ? s->cap_objects * 2 : 64;
    s->objects = fl__xrealloc(s->objects, s->cap_objects, sizeof *s->objects);
    s->objects_fp = fl__xrealloc(s->objects_fp, s->cap_objects, sizeof *s->objects_fp);
    s->objects_cell = fl__xrealloc(s->objects_cell, s->cap_objects, sizeof *s->objects_cell);
  }
  s->objects_fp[s->n_objects] = c->frame_pointers;
  s->objects_cell[s->n_objects] = c->cell;
  s->objects[s->n_objects++] = c->so_path;
  c->so_path = NULL;
  rebuild_typedefs(s);
  kn_compiled_destroy(cp);
}

size_t kn_session_n_objects(const kn_session_t *s) { return s->n_objects; }
const char *kn_session_object(const kn_session_t *s, size_t i) {
  return i < s->n_objects ? s->objects[i] : NULL;
}

bool kn_session_object_frame_pointers(const kn_session_t *s, size_t i) {
  return i < s->n_objects && s->objects_fp[i];
}

int kn_session_drop_object(kn_session_t *s, const char *path) {
  size_t at = 0;
  while (at < s->n_objects && strcmp(s->objects[at], path) != 0) at++;
  if (at == s->n_objects) return -1;
  int cell = s->objects_cell[at];
  unlink(s->objects[at]);
  free(s->objects[at]);
  size_t tail = s->n_objects - at - 1;
  memmove(&s->objects[at], &s->objects[at + 1], tail * sizeof *s->objects);
  memmove(&s->objects_fp[at], &s->objects_fp[at + 1], tail * sizeof *s->objects_fp);
  memmove(&s->objects_cell[at], &s->objects_cell[at + 1], tail * sizeof *s->objects_cell);
  s->n_objects--;
  /* Its functions and globals were in the object; its types, macros and
   * prototypes need no code, and later cells may use them. */
  size_t kept = 0;
  for (size_t i = 0; i < s->n_entries; i++) {
    if (s->entries[i].cell == cell && s->entries[i].is_definition)
      entry_free(&s->entries[i]);
    else
      s->entries[kept++] = s->entries[i];
  }
  s->n_entries = kept;
  rebuild_typedefs(s);
  return cell;
}

bool kn_session_has_globals(const kn_session_t *s) {
  for (size_t i = 0; i < s->n_entries; i++)
    if (s->entries[i].is_global) return true;
  return false;
}

void kn_session_each_name(const kn_session_t *s, void (*fn)(void *ctx, const char *name),
                          void *ctx) {
  for (size_t i = 0; i < s->n_entries; i++) {
    const char *name = s->entries[i].name;
    if (!name) continue;
    /* "struct P" completes as "P" after the keyword. */
    const char *sp = strrchr(name, ' ');
    fn(ctx, sp ? sp + 1 : name);
  }
}

const char *kn_session_describe(const kn_session_t *s, const char *name, int *cell) {
  for (size_t i = s->n_entries; i-- > 0;) {
    const entry_t *e = &s->entries[i];
    if (!e->name) continue;
    const char *sp = strrchr(e->name, ' ');
    if (!strcmp(e->name, name) || (sp && !strcmp(sp + 1, name))) {
      if (cell) *cell = e->cell;
      return e->describe;
    }
  }
  return NULL;
}

const char *const *kn_session_typedefs(const kn_session_t *s) { return s->typedefs; }
