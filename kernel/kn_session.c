#define _GNU_SOURCE
#include "kn_session.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <gelf.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kn_magic.h"
#include "kn_names.h"
#include "kn_strbuf.h"

extern char **environ;

/* One declaration the session keeps for later cells. */
typedef struct entry {
  char *key;      /* what a redefinition replaces: "id:f", "tag:struct P", ... */
  char *name;     /* the declared name (for completion), or NULL */
  char *header;   /* text placed in later cells' translation units */
  char *describe; /* what inspection shows */
  int cell;
  bool is_definition; /* FUNC or GLOBAL: a later PROTO/EXTERN does not replace it */
  bool is_global;
  bool is_typedef;
  bool main_renamed; /* a function written as main, renamed by a macro */
} entry_t;

struct kn_session {
  char *dir;
  char *cwd; /* the kernel's working directory: the notebook's folder */
  char *cc, *cflags, *ldflags;
  entry_t *entries;
  size_t n_entries, cap_entries;
  char **objects;
  bool *objects_fp; /* objects[i] was compiled with frame pointers */
  int *objects_cell; /* the cell objects[i] was compiled from */
  size_t n_objects, cap_objects;
  const char **typedefs; /* NULL-terminated view of entries' typedef names */
};

/* ---- small helpers ---- */

static bool item_key_is_macro(const kn_item_t *it) {
  return it->kind == KN_ITEM_PREPROC && it->name &&
         !strncmp(it->text + strspn(it->text, " \t#"), "define", 6);
}

static char *item_key(const kn_item_t *it) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  switch (it->kind) {
  case KN_ITEM_FUNC:
  case KN_ITEM_PROTO:
  case KN_ITEM_GLOBAL:
  case KN_ITEM_EXTERN:
    if (!it->name) return NULL;
    kn_strbuf_printf(&sb, "id:%s", it->name);
    break;
  case KN_ITEM_TYPE:
    if (!it->name) return NULL;
    if (!strncmp(it->name, "struct ", 7) || !strncmp(it->name, "union ", 6) ||
        !strncmp(it->name, "enum ", 5))
      kn_strbuf_printf(&sb, "tag:%s", it->name);
    else
      kn_strbuf_printf(&sb, "id:%s", it->name);
    break;
  case KN_ITEM_PREPROC:
    if (item_key_is_macro(it))
      kn_strbuf_printf(&sb, "macro:%s", it->name);
    else
      kn_strbuf_printf(&sb, "pp:%s", it->text);
    break;
  case KN_ITEM_STMT:
    return NULL;
  }
  return kn_strbuf_steal(&sb);
}

static bool is_typedef_item(const kn_item_t *it) {
  return it->kind == KN_ITEM_TYPE && it->name && strncmp(it->name, "struct ", 7) &&
         strncmp(it->name, "union ", 6) && strncmp(it->name, "enum ", 5);
}

/* FUNC and GLOBAL items carry definitions that prototypes and externs of the
 * same name must not displace. */
static bool item_is_definition(const kn_item_t *it) {
  return it->kind == KN_ITEM_FUNC || it->kind == KN_ITEM_GLOBAL;
}

static void put_line(kn_strbuf_t *sb, int cell, int line) {
  kn_strbuf_printf(sb, "#line %d \"" KN_CELL_FILE_FMT "\"\n", line > 0 ? line : 1, cell);
}

/* #line for text that starts at column col of that line: the padding keeps
 * the compiler's column numbers those of the cell. */
static void put_pos(kn_strbuf_t *sb, int cell, int line, int col) {
  put_line(sb, cell, line);
  for (int i = 1; i < col; i++) kn_strbuf_putc(sb, ' ');
}

static void put_symbol(kn_strbuf_t *sb, int cell, const char *name) {
  kn_strbuf_printf(sb, " __asm__(\"" KN_SYMBOL_PREFIX "%d_%s\")", cell, name);
}

/* A function written as main is main only if the preprocessor leaves it so:
 * a program pasted in with `#define main prog_main` defines prog_main. Its
 * assembler name in the cell's own unit is therefore that of what main
 * expands to where it stands (cflame_cN_main, or cflame_cN_prog_main), so
 * that the object says which it is (resolve_main). */
static bool writes_main(const kn_item_t *it) {
  return it->kind == KN_ITEM_FUNC && !it->is_inline && it->name && !strcmp(it->name, "main");
}

static void put_main_symbol(kn_strbuf_t *sb, int cell) {
  kn_strbuf_printf(sb, " __asm__(cflame_symbol_name(cflame_symbol(%d, main)))", cell);
}

/* Items a cell's unit takes where the cell has them, never at the place of
 * the earlier entry they replace: preprocessor directives (a macro means
 * what was defined and undefined before the line that uses it) and a
 * function written as main. */
static bool in_cell_order(const kn_item_t *it) {
  return it->kind == KN_ITEM_PREPROC || writes_main(it);
}

static bool is_include(const kn_item_t *it) {
  const char *t = it->text + strspn(it->text, " \t");
  if (*t++ != '#') return false;
  t += strspn(t, " \t");
  return !strncmp(t, "include", 7);
}

/* A directive of cell as a unit holds it, at its line: a #define first
 * undefines its macro, so that redefining a macro in a later cell is no
 * error. */
static void put_directive(kn_strbuf_t *sb, int cell, const kn_item_t *it) {
  if (item_key_is_macro(it)) kn_strbuf_printf(sb, "#undef %s\n", it->name);
  put_pos(sb, cell, it->line, it->col);
  kn_strbuf_puts(sb, it->text);
  kn_strbuf_putc(sb, '\n');
}

/* An inline function's text, made `static` when it was plain `inline`: a
 * C99 inline definition emits no symbol, and later cells repeat it. */
static void put_inline_text(kn_strbuf_t *sb, const kn_item_t *it) {
  if (!it->is_static) kn_strbuf_puts(sb, "static ");
  kn_strbuf_puts(sb, it->text);
  kn_strbuf_putc(sb, '\n');
}

/* Whether an initializer is made only of literals and operators, so it can
 * stay a static initializer and survive a worker restart. Identifiers (other
 * than sizeof) may name variables or functions: those run in the cell. */
static bool init_is_constant(const char *s) {
  for (const char *p = s; *p;) {
    if (*p == '"' || *p == '\'') {
      char q = *p++;
      while (*p && *p != q) p += (*p == '\\' && p[1]) ? 2 : 1;
      if (*p) p++;
    } else if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
      while (isalnum((unsigned char)*p) || *p == '.' || *p == '_' ||
             ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E' || p[-1] == 'p' ||
                                           p[-1] == 'P')))
        p++;
    } else if (isalpha((unsigned char)*p) || *p == '_') {
      const char *b = p;
      while (isalnum((unsigned char)*p) || *p == '_') p++;
      if (!(p - b == 6 && !strncmp(b, "sizeof", 6))) return false;
    } else {
      p++;
    }
  }
  return true;
}

static bool global_init_is_static(const kn_item_t *it) {
  return it->init && (it->init_is_static || it->is_array_unsized || init_is_constant(it->init));
}

/* The text an item contributes to the translation units of later cells. */
static char *header_text(const kn_item_t *it, int cell) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  if (it->kind == KN_ITEM_PREPROC) {
    put_directive(&sb, cell, it);
    return kn_strbuf_steal(&sb);
  }
  put_line(&sb, cell, it->line);
  switch (it->kind) {
  case KN_ITEM_FUNC:
    if (it->is_inline) {
      put_inline_text(&sb, it);
    } else {
      kn_strbuf_puts(&sb, it->signature);
      put_symbol(&sb, cell, it->name);
      kn_strbuf_puts(&sb, ";\n");
    }
    break;
  case KN_ITEM_GLOBAL:
    kn_strbuf_puts(&sb, "extern ");
    kn_strbuf_puts(&sb, it->decl);
    put_symbol(&sb, cell, it->name);
    kn_strbuf_puts(&sb, ";\n");
    break;
  default:
    kn_strbuf_puts(&sb, it->text);
    kn_strbuf_putc(&sb, '\n');
    break;
  }
  return kn_strbuf_steal(&sb);
}

static char *describe_text(const kn_item_t *it) {
  const char *t = it->text;
  if (it->kind == KN_ITEM_FUNC) t = it->signature;
  if (it->kind == KN_ITEM_GLOBAL) t = it->decl;
  /* Drop the blanks left where `static` was. */
  kn_strbuf_t sb = KN_STRBUF_INIT;
  bool space = false;
  for (const char *p = t; *p; p++) {
    if (*p == ' ' || *p == '\t') {
      space = sb.len > 0;
      continue;
    }
    if (space) kn_strbuf_putc(&sb, ' ');
    space = false;
    kn_strbuf_putc(&sb, *p);
  }
  return kn_strbuf_steal(&sb);
}

static ssize_t find_entry(const kn_session_t *s, const char *key) {
  for (size_t i = 0; i < s->n_entries; i++)
    if (!strcmp(s->entries[i].key, key)) return (ssize_t)i;
  return -1;
}

/* Whether item it (with key) should take the place of entry e. */
static bool replaces(const kn_item_t *it, const entry_t *e) {
  return !(e->is_definition && !item_is_definition(it));
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
  /* Keep the directory itself; empty it. */
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", s->dir);
  nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  mkdir(path, 0700);
}

const char *kn_session_dir(const kn_session_t *s) { return s->dir; }
const char *kn_session_cc(const kn_session_t *s) { return s->cc; }
const char *kn_session_cflags(const kn_session_t *s) { return s->cflags; }
const char *kn_session_ldflags(const kn_session_t *s) { return s->ldflags; }

/* ---- running the compiler ---- */

/* Spawns argv in dir, in a process group of its own, with stdin from
 * /dev/null and stdout and stderr on a pipe: *pid and the pipe's reading
 * end *out_fd. Returns 0, or the posix_spawn error (ENOENT: no such
 * program), or -1 with errno when no pipe could be made. */
static int spawn_piped(char *const argv[], const char *dir, pid_t *pid, int *out_fd) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_adddup2(&fa, p[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (dir) posix_spawn_file_actions_addchdir_np(&fa, dir);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  int rc = posix_spawnp(pid, argv[0], &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(p[1]);
  if (rc != 0) {
    close(p[0]);
    return rc;
  }
  *out_fd = p[0];
  return 0;
}

/* Runs argv in dir, collecting stdout and stderr into *output (new).
 * Returns the exit status (0..255), 127 when it could not start, or -1. */
static int run_tool(char *const argv[], const char *dir, char **output) {
  *output = NULL;
  pid_t pid;
  int fd, rc = spawn_piped(argv, dir, &pid, &fd);
  if (rc == -1) return -1;
  if (rc != 0) {
    *output = fl__xstrdup(strerror(rc));
    return 127;
  }
  kn_strbuf_t out = KN_STRBUF_INIT;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    kn_strbuf_append(&out, buf, (size_t)n);
  }
  close(fd);
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      status = -1;
      break;
    }
  *output = kn_strbuf_steal(&out);
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

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
  int rc = run_tool(argv, NULL, &out);
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

/* ---- building a translation unit ---- */

/* The file name (a format of the cell number) of the kernel's code after a
 * cell's statements. */
#define END_FILE KN_GEN_FILE_PREFIX " %d end>"

static const char prelude[] =
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include <math.h>\n"
    "#include <stdint.h>\n"
    "#include <stdbool.h>\n"
    "#include <stddef.h>\n"
    /* put_main_symbol: a name, macros expanded, into its assembler name */
    "#define cflame_symbol_name_(x) #x\n"
    "#define cflame_symbol_name(x) cflame_symbol_name_(x)\n"
    "#define cflame_symbol_(cell, name) cflame_c##cell##_##name\n"
    "#define cflame_symbol(cell, name) cflame_symbol_(cell, name)\n"
    /* put_renamed_mains: whether main expands to a given name, in #if */
    "#define cflame_main_is_(name) cflame_main_is_##name\n"
    "#define cflame_main_is(name) cflame_main_is_(name)\n";

/* The trailing expression's text at its cell position, on lines of its own
 * (a #line directive must start a line). */
static void put_expression(kn_strbuf_t *sb, int cell, const kn_item_t *it) {
  kn_strbuf_putc(sb, '\n');
  put_pos(sb, cell, it->line, it->col);
  kn_strbuf_puts(sb, it->text);
  kn_strbuf_putc(sb, '\n');
}

/* The code that shows the value of the cell's trailing expression EXPR:
 * it is evaluated once, as the initializer of cflame_value (arrays and
 * functions decay to pointers there), and appears three times more under
 * __typeof__, which never evaluates: to tell a void expression (run, and
 * nothing shown), and to declare cflame_value_type, a pointer to EXPR's
 * own type, whose DWARF the worker reads to print the value
 * (kernel/worker/kw_value.c). The hook copies the value's bytes while the
 * cell's frame is alive.
 *
 * A value larger than KN_VALUE_MAX_BYTES (*p, p pointing to a 100 MB
 * struct) is evaluated as a void expression: copied into cflame_value it
 * would overflow the stack, and it would not be shown anyway. Whether EXPR
 * is an lvalue, whose address would let the worker read its first part,
 * C cannot ask; its size it can, while compiling. An array or a function
 * decays to its address (cflame_value_decays: the comma converts it as
 * __auto_type does), whatever its size: the worker reads its first part. */
static void put_value_code(kn_strbuf_t *sb, int cell, const kn_item_t *it) {
  kn_strbuf_puts(sb, "{ enum { cflame_value_void = __builtin_types_compatible_p(__typeof__(");
  put_expression(sb, cell, it);
  kn_strbuf_puts(sb, "), void) };\n"
                     "  static __attribute__((used))\n"
                     "  __typeof__(__builtin_choose_expr(cflame_value_void, 0, (");
  put_expression(sb, cell, it);
  /* The size of a function type (1 in GNU C) is what -Wpointer-arith
   * warns of: the kernel's own question, not the cell's. */
  kn_strbuf_printf(sb,
                   "))) *cflame_value_type;\n"
                   "  enum { cflame_value_decays = !__builtin_types_compatible_p(\n"
                   "      __typeof__(*cflame_value_type), __typeof__(((void)0, "
                   "*cflame_value_type))) };\n"
                   "#pragma GCC diagnostic push\n"
                   "#pragma GCC diagnostic ignored \"-Wpointer-arith\"\n"
                   "  enum { cflame_value_large = !cflame_value_decays && "
                   "sizeof *cflame_value_type > %uu };\n"
                   "  unsigned long cflame_value_size = sizeof *cflame_value_type;\n"
                   "#pragma GCC diagnostic pop\n"
                   "  __auto_type cflame_value = __builtin_choose_expr(cflame_value_void || "
                   "cflame_value_large, ((void)(",
                   KN_VALUE_MAX_BYTES);
  put_expression(sb, cell, it);
  kn_strbuf_puts(sb, "), 0), (");
  put_expression(sb, cell, it);
  kn_strbuf_puts(sb, "));\n"
                     "  extern void cflame_value_hook(const void *, unsigned long, unsigned long, "
                     "int, int, int);\n"
                     "  cflame_value_hook(&cflame_value, sizeof cflame_value, cflame_value_size,\n"
                     "      cflame_value_decays, cflame_value_void, cflame_value_large); }\n");
}

/* Index of the item of this cell that provides the header text for key:
 * the last item with that key, a definition preferred over declarations. */
static ssize_t dominant_item(const kn_items_t *items, const char *key, char **keys) {
  ssize_t best = -1;
  for (size_t i = 0; i < items->n; i++) {
    if (!keys[i] || strcmp(keys[i], key)) continue;
    if (best < 0 || item_is_definition(&items->items[i]) ||
        !item_is_definition(&items->items[best]))
      best = (ssize_t)i;
  }
  return best;
}

/* An earlier program's main that a macro renamed (prog_main) is declared
 * with its cell's assembler name. A cell that writes main again may be the
 * same program pasted anew: then its main must get this cell's assembler
 * name, which an earlier declaration with another one would override (gcc
 * keeps the first, with a warning; clang refuses). Only the preprocessor
 * knows, where the cell writes main, what main expands to; so the earlier
 * declaration is put there, under #if, and only if main does not expand to
 * its name. (A use of prog_main in the same cell before its main is then
 * the new one's, as the definition that follows it is.) */
static void put_renamed_mains(const kn_session_t *s, kn_strbuf_t *tu) {
  for (size_t e = 0; e < s->n_entries; e++) {
    const entry_t *en = &s->entries[e];
    if (!en->main_renamed) continue;
    kn_strbuf_printf(tu, "#define cflame_main_is_%s 1\n#if !cflame_main_is(main)\n", en->name);
    kn_strbuf_puts(tu, en->header);
    kn_strbuf_printf(tu, "#endif\n#undef cflame_main_is_%s\n", en->name);
  }
}

static bool writes_any_main(const kn_items_t *items) {
  for (size_t i = 0; i < items->n; i++)
    if (writes_main(&items->items[i])) return true;
  return false;
}

static void build_unit(const kn_session_t *s, int cell, const kn_items_t *items, char **keys,
                       kn_strbuf_t *tu) {
  bool *placed = fl__xcalloc(items->n + 1, sizeof *placed);
  bool main_written = false;
  bool renamed_mains_deferred = writes_any_main(items);
  kn_strbuf_puts(tu, "#line 1 \"<cflame prelude>\"\n");
  kn_strbuf_puts(tu, prelude);

  /* Earlier cells' declarations; what this cell redefines takes the old
   * place, so declarations that depend on it stay after it. */
  for (size_t e = 0; e < s->n_entries; e++) {
    const entry_t *en = &s->entries[e];
    ssize_t i = dominant_item(items, en->key, keys);
    if (i >= 0 && in_cell_order(&items->items[i])) {
      /* An earlier directive stays where it was; an earlier main is not
       * declared again (nothing calls main). */
      if (items->items[i].kind == KN_ITEM_PREPROC) kn_strbuf_puts(tu, en->header);
    } else if (i >= 0 && replaces(&items->items[i], en)) {
      char *h = header_text(&items->items[i], cell);
      kn_strbuf_puts(tu, h);
      free(h);
      for (size_t j = 0; j < items->n; j++)
        if (keys[j] && !strcmp(keys[j], en->key)) placed[j] = true;
    } else if (!(renamed_mains_deferred && en->main_renamed)) {
      kn_strbuf_puts(tu, en->header);
    }
  }

  /* This cell, in order. Declarations placed above are not repeated, except
   * that definitions still need their bodies here. */
  kn_strbuf_t run = KN_STRBUF_INIT;
  for (size_t i = 0; i < items->n; i++) {
    const kn_item_t *it = &items->items[i];
    bool first_of_name = true;
    for (size_t j = 0; j < i; j++)
      if (keys[i] && keys[j] && !strcmp(keys[i], keys[j])) first_of_name = false;
    switch (it->kind) {
    case KN_ITEM_STMT:
      if (it->is_expression) {
        put_value_code(&run, cell, it);
        break;
      }
      put_pos(&run, cell, it->line, it->col);
      kn_strbuf_puts(&run, it->text);
      kn_strbuf_putc(&run, '\n');
      break;
    case KN_ITEM_FUNC:
      if (it->is_inline) {
        if (placed[i]) break;
        put_pos(tu, cell, it->line, it->col);
        put_inline_text(tu, it);
        break;
      }
      if (writes_main(it) && !main_written) {
        put_renamed_mains(s, tu);
        main_written = true;
      }
      if (!placed[i] && first_of_name) {
        /* The first mention of the name gets the assembler name, so that
         * uses before the definition bind to it too. */
        put_line(tu, cell, it->line);
        kn_strbuf_puts(tu, it->signature);
        if (writes_main(it))
          put_main_symbol(tu, cell);
        else
          put_symbol(tu, cell, it->name);
        kn_strbuf_puts(tu, ";\n");
      }
      put_pos(tu, cell, it->line, it->col);
      kn_strbuf_puts(tu, it->definition);
      kn_strbuf_putc(tu, '\n');
      break;
    case KN_ITEM_GLOBAL: {
      bool static_init = global_init_is_static(it);
      put_line(tu, cell, it->line);
      kn_strbuf_puts(tu, static_init || !it->init ? it->decl : it->decl_mutable);
      put_symbol(tu, cell, it->name);
      if (static_init) {
        kn_strbuf_puts(tu, " =\n");
        put_pos(tu, cell, it->init_line, it->init_col);
        kn_strbuf_puts(tu, it->init);
      }
      kn_strbuf_puts(tu, ";\n");
      if (it->init && !static_init) {
        kn_strbuf_printf(&run, "%s = (\n", it->name);
        put_pos(&run, cell, it->init_line, it->init_col);
        kn_strbuf_printf(&run, "%s);\n", it->init);
      }
      break;
    }
    case KN_ITEM_PREPROC:
      /* An #include the session already has was included at its place. */
      if (is_include(it) && keys[i] && find_entry(s, keys[i]) >= 0) break;
      put_directive(tu, cell, it);
      break;
    default:
      if (placed[i]) break;
      put_pos(tu, cell, it->line, it->col);
      kn_strbuf_puts(tu, it->text);
      kn_strbuf_putc(tu, '\n');
      /* A prototype written before the definition in the same cell: give
       * the name its assembler name now. */
      if ((it->kind == KN_ITEM_PROTO || it->kind == KN_ITEM_EXTERN) && first_of_name && keys[i]) {
        ssize_t d = dominant_item(items, keys[i], keys);
        if (d > (ssize_t)i && item_is_definition(&items->items[d]) &&
            !(items->items[d].kind == KN_ITEM_FUNC && items->items[d].is_inline)) {
          const kn_item_t *def = &items->items[d];
          put_line(tu, cell, def->line);
          if (def->kind == KN_ITEM_FUNC)
            kn_strbuf_puts(tu, def->signature);
          else {
            kn_strbuf_puts(tu, "extern ");
            kn_strbuf_puts(tu, def->decl);
          }
          put_symbol(tu, cell, def->name);
          kn_strbuf_puts(tu, ";\n");
        }
      }
      break;
    }
  }

  kn_strbuf_printf(tu, "#line 1 \"" KN_GEN_FILE_FMT "\"\nint " KN_ENTRY_FMT "(void) {\n", cell,
                   cell);
  if (run.data) kn_strbuf_puts(tu, run.data);
  /* What follows the cell's statements is the kernel's: a diagnostic there
   * (a statement left unfinished runs into it) names this file, and
   * end_of_cell_messages moves it to the end of the cell. */
  kn_strbuf_printf(tu, "\n#line 1 \"" END_FILE "\"\n", cell);
  if (main_written) {
    /* main may be declared (void) or (int, char **); call it through a
     * second name for the same symbol, declared with the full signature.
     * The reference is weak: where a macro renamed main, the object does
     * not define cflame_cN_main and nothing is called. */
    kn_strbuf_printf(tu,
                     "{ extern int cflame_main_entry(int, char **) __asm__(\"" KN_SYMBOL_PREFIX "%d_main\")\n"
                     "    __attribute__((weak));\n"
                     "  static char cflame_arg0[] = \"cell\";\n"
                     "  static char *cflame_argv[] = {cflame_arg0, 0};\n"
                     "  if (cflame_main_entry) return cflame_main_entry(1, cflame_argv); }\n",
                     cell);
  }
  kn_strbuf_puts(tu, "return 0;\n}\n");
  kn_strbuf_free(&run);
  free(placed);
}

/* Calls fn with the name of each dynamic symbol that the shared object at
 * path defines. */
static void each_defined_symbol(const char *path, void (*fn)(void *ctx, const char *name),
                                void *ctx) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  elf_version(EV_CURRENT);
  Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
  for (Elf_Scn *scn = NULL; elf && (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize) continue;
    Elf_Data *data = elf_getdata(scn, NULL);
    for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
      GElf_Sym sym;
      const char *name;
      if (gelf_getsym(data, (int)i, &sym) && sym.st_shndx != SHN_UNDEF &&
          (name = elf_strptr(elf, sh.sh_link, sym.st_name)))
        fn(ctx, name);
    }
  }
  if (elf) elf_end(elf);
  close(fd);
}

typedef struct main_search {
  const kn_items_t *items;
  char prefix[32]; /* "cflame_cN_" */
  bool is_main;
  char *renamed;   /* what main expanded to; NULL if none or not one */
  int n_renamed;
} main_search_t;

static void note_symbol(void *ctx, const char *name) {
  main_search_t *m = ctx;
  size_t n = strlen(m->prefix);
  if (strncmp(name, m->prefix, n)) return;
  const char *own = name + n;
  if (!strcmp(own, "main")) {
    m->is_main = true;
    return;
  }
  for (size_t i = 0; i < m->items->n; i++) {
    const kn_item_t *it = &m->items->items[i];
    if (it->name && (it->kind == KN_ITEM_FUNC || it->kind == KN_ITEM_GLOBAL) && !writes_main(it) &&
        !strcmp(it->name, own))
      return;
  }
  if (m->n_renamed++ == 0) m->renamed = fl__xstrdup(own);
}

/* Replaces the first whole word main in *text with name. */
static void rename_main_in(char **text, const char *name) {
  if (!*text) return;
  for (char *p = *text; (p = strstr(p, "main")); p += 4) {
    bool before = p > *text && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
    bool after = isalnum((unsigned char)p[4]) || p[4] == '_';
    if (before || after) continue;
    kn_strbuf_t sb = KN_STRBUF_INIT;
    kn_strbuf_printf(&sb, "%.*s%s%s", (int)(p - *text), *text, name, p + 4);
    free(*text);
    *text = kn_strbuf_steal(&sb);
    return;
  }
}

/* Whether the cell's function written as main is main, read from its
 * object (put_main_symbol): c->has_main. Where a macro renamed it, the
 * item takes the name it was compiled under, so that the session declares
 * prog_main, not main, to later cells. */
static void resolve_main(kn_compiled_t *c) {
  kn_item_t *written = NULL;
  for (size_t i = 0; i < c->items.n && !written; i++)
    if (writes_main(&c->items.items[i])) written = &c->items.items[i];
  if (!written) return;
  main_search_t m = {.items = &c->items};
  snprintf(m.prefix, sizeof m.prefix, KN_SYMBOL_PREFIX "%d_", c->cell);
  each_defined_symbol(c->so_path, note_symbol, &m);
  c->has_main = m.is_main;
  if (!m.is_main && m.n_renamed == 1) {
    rename_main_in(&written->signature, m.renamed);
    rename_main_in(&written->text, m.renamed);
    free(written->name);
    written->name = fl__xstrdup(m.renamed);
    written->main_renamed = true;
  }
  free(m.renamed);
}

static int write_file(const char *path, const char *text, size_t len) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  size_t n = fwrite(text, 1, len, f);
  if (fclose(f) != 0 || n != len) return -1;
  return 0;
}

/* Appends the words of flags to the argv under construction. */
static int push_words(char ***argv, size_t *n, const char *flags, char *err, size_t err_size) {
  char **words;
  int k = kn_words_split(flags, &words, err, err_size);
  if (k < 0) return -1;
  *argv = fl__xrealloc(*argv, *n + (size_t)k + 1, sizeof **argv);
  for (int i = 0; i < k; i++) (*argv)[(*n)++] = fl__xstrdup(words[i]);
  (*argv)[*n] = NULL;
  kn_words_free(words);
  return 0;
}

static void push(char ***argv, size_t *n, const char *w) {
  *argv = fl__xrealloc(*argv, *n + 2, sizeof **argv);
  (*argv)[(*n)++] = fl__xstrdup(w);
  (*argv)[*n] = NULL;
}

/* Where a cell's text ends: the last line that is not blank (in the
 * cell's numbering) and the column after its last character. */
static void cell_end(const char *code, int first_line, int *line, int *col) {
  *line = first_line;
  *col = 1;
  int at = first_line;
  for (const char *p = code; *p; at++) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    while (len > 0 && isspace((unsigned char)p[len - 1])) len--;
    if (len > 0) {
      *line = at;
      *col = (int)len + 1;
    }
    if (!eol) break;
    p = eol + 1;
  }
}

/* Whether a line of compiler output is a message (or a summary), not a
 * quote of the source under one. */
static bool is_message_line(const char *p, size_t len) {
  static const char *const marks[] = {": error: ", ": warning: ", ": note: ", ": fatal error: ",
                                      "In function", "At top level:", "In file included from",
                                      " generated."};
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
    if (memmem(p, len, marks[i], strlen(marks[i]))) return true;
  return false;
}

/* Moves the compiler's messages about the kernel's code after a cell's
 * statements (END_FILE) to the end of the cell. Only a statement the cell
 * left unfinished gets there, as "expected ';' before 'return'": that
 * becomes "cell[N]:LINE:COL: error: expected ';' at the end of the cell".
 * The warning that the entry function ends without a return follows only
 * from such an error, and is dropped. */
static char *end_of_cell_messages(const char *text, int cell, const char *code, int first_line) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, END_FILE, cell);
  size_t plen = strlen(prefix);
  char cellfile[64];
  snprintf(cellfile, sizeof cellfile, KN_CELL_FILE_FMT ":%%d:%%d:%%n", cell);
  int line, col;
  cell_end(code, first_line, &line, &col);
  kn_strbuf_t sb = KN_STRBUF_INIT;
  for (const char *p = text; *p;) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    const char *next = eol ? eol + 1 : p + len;
    if (len < plen || memcmp(p, prefix, plen) != 0) {
      /* At the cell's end, the token after it is the kernel's. */
      int at_line, at_col, n = 0;
      const char *before = memmem(p, len, " before ", 8);
      if (before && sscanf(p, cellfile, &at_line, &at_col, &n) == 2 && n > 0 &&
          (at_line > line || (at_line == line && at_col >= col)))
        kn_strbuf_printf(&sb, "%.*s at the end of the cell\n", (int)(before - p), p);
      else
        kn_strbuf_printf(&sb, "%.*s\n", (int)len, p);
      p = next;
      continue;
    }
    /* prefix[:LINE[:COL]]: message, then (clang) the kernel's line quoted,
     * which is dropped */
    const char *q = p + plen, *end = p + len;
    for (int field = 0; field < 2 && q + 1 < end && q[0] == ':' && isdigit((unsigned char)q[1]);
         field++) {
      q++;
      while (q < end && isdigit((unsigned char)*q)) q++;
    }
    size_t mlen = (size_t)(end - q);
    if (!memmem(q, mlen, "control reaches end of non-void function", 40)) {
      const char *before = memmem(q, mlen, " before ", 8);
      if (before)
        kn_strbuf_printf(&sb, KN_CELL_FILE_FMT ":%d:%d%.*s at the end of the cell\n", cell, line, col,
                         (int)(before - q), q);
      else
        kn_strbuf_printf(&sb, KN_CELL_FILE_FMT ":%d:%d%.*s\n", cell, line, col, (int)mlen, q);
    }
    p = next;
    while (*p) {
      eol = strchr(p, '\n');
      len = eol ? (size_t)(eol - p) : strlen(p);
      if (is_message_line(p, len)) break;
      p = eol ? eol + 1 : p + len;
    }
  }
  if (sb.len && (!*text || text[strlen(text) - 1] != '\n')) sb.data[--sb.len] = '\0';
  return kn_strbuf_steal(&sb);
}

char *kn_session_clean_message(const char *text) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  const char *p = text;
  while (*p) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    /* Lines about the generated entry function or the prelude say nothing
     * the user wrote. */
    static const char plain_quote[] = "In function '" KN_ENTRY_PREFIX,
                      curly_quote[] = "In function \xe2\x80\x98" KN_ENTRY_PREFIX;
    bool drop = (memmem(p, len, plain_quote, sizeof plain_quote - 1) != NULL) ||
                (memmem(p, len, curly_quote, sizeof curly_quote - 1) != NULL) ||
                (memmem(p, len, ": At top level:", 15) != NULL);
    if (!drop) {
      for (size_t i = 0; i < len;) {
        /* cflame_c<digits>_name -> name */
        size_t np = strlen(KN_SYMBOL_PREFIX);
        if (len - i > np + 1 && !memcmp(p + i, KN_SYMBOL_PREFIX, np) &&
            isdigit((unsigned char)p[i + np]) &&
            (i == 0 || !(isalnum((unsigned char)p[i - 1]) || p[i - 1] == '_'))) {
          size_t j = i + np;
          while (j < len && isdigit((unsigned char)p[j])) j++;
          if (j < len && p[j] == '_') {
            i = j + 1;
            continue;
          }
        }
        kn_strbuf_putc(&sb, p[i++]);
      }
      kn_strbuf_putc(&sb, '\n');
    }
    p += len;
    if (*p == '\n') p++;
  }
  /* No trailing newline of our own if the text had none. */
  if (sb.len && (!*text || text[strlen(text) - 1] != '\n')) sb.data[--sb.len] = '\0';
  return kn_strbuf_steal(&sb);
}

/* ---- frame pointers (for the allocation recorder's fast unwinding) ---- */

static bool ends_with(const char *w, const char *suffix) {
  size_t n = strlen(w), k = strlen(suffix);
  return n >= k && !strcmp(w + n - k, suffix);
}

/* Whether word may put code compiled with other flags into the object. */
static bool brings_foreign_code(const char *w) {
  static const char *const files[] = {".a", ".o", ".lo", ".obj", ".s", ".S", ".sx", ".asm"};
  static const char *const runtime_libs[] = {"-lm", "-lc", "-ldl", "-lpthread", "-lrt",
                                             "-lutil", "-lgomp", "-latomic"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
    if (w[0] != '-' && ends_with(w, files[i])) return true;
  if (!strncmp(w, "-l", 2)) {
    for (size_t i = 0; i < sizeof runtime_libs / sizeof runtime_libs[0]; i++)
      if (!strcmp(w, runtime_libs[i])) return false;
    return true; /* -l:FILE, or a library that may be an archive */
  }
  return !strncmp(w, "-static", 7) || !strncmp(w, "-x", 2) ||
         (!strncmp(w, "-Wl,", 4) && (strstr(w, "static") || strstr(w, "whole-archive")));
}

bool kn_session_flags_keep_frame_pointers(const char *cflags, const char *ldflags) {
  enum { UNSAID, OMIT, KEEP } fp = UNSAID;
  bool o0 = false;
  const char *lists[] = {cflags, ldflags};
  for (int l = 0; l < 2; l++) {
    char **words, err[256];
    if (kn_words_split(lists[l] ? lists[l] : "", &words, err, sizeof err) < 0) return false;
    bool foreign = false;
    for (char **w = words; *w && !foreign; w++) {
      if (!strcmp(*w, "-fomit-frame-pointer"))
        fp = OMIT;
      else if (!strcmp(*w, "-fno-omit-frame-pointer"))
        fp = KEEP;
      else if (!strncmp(*w, "-O", 2))
        o0 = !strcmp(*w, "-O0");
      else
        foreign = brings_foreign_code(*w);
    }
    kn_words_free(words);
    if (foreign) return false;
  }
  return fp == KEEP || (fp == UNSAID && o0);
}

bool kn_session_flags_keep_tail_calls(const char *flags) {
  char **words, err[256];
  if (kn_words_split(flags ? flags : "", &words, err, sizeof err) < 0) return false;
  bool keep = false;
  for (char **w = words; *w; w++)
    if (!strcmp(*w, "-fno-optimize-sibling-calls"))
      keep = true;
    else if (!strcmp(*w, "-foptimize-sibling-calls"))
      keep = false;
  kn_words_free(words);
  return keep;
}

/* A compiler run under way (kn_session_compile_start). */
struct kn_compile {
  kn_compiled_t *c; /* the cell as far as it goes: number, items */
  char *code;       /* the cell's text, for its diagnostics */
  int first_line;
  char *path_so;
  bool frame_pointers;
  pid_t pid;       /* the compiler, leading a process group of its own */
  int pid_fd;      /* readable once it has ended */
  int out_fd;      /* its stdout and stderr */
  kn_strbuf_t output;
  bool ended;
  int status;      /* its waitpid status, once ended */
  /* When the cell ends in an expression whose value could not be compiled,
   * the cell is compiled again with the expression as a plain statement:
   * the first error of the first attempt, for the note that says why no
   * value is shown. */
  char *value_error;
};

/* Starts the job's compiler (argv) in dir, its output on a non-blocking
 * pipe, watched through a pidfd. Returns 0, or -1 with err naming what
 * failed (which resource ran out, or that the compiler could not run). */
static int spawn_tool(char *const argv[], const char *dir, kn_compile_t *job, char *err,
                      size_t err_size) {
  int rc = spawn_piped(argv, dir, &job->pid, &job->out_fd);
  if (rc == -1) {
    snprintf(err, err_size, "cannot create a pipe for the compiler's output: %s%s", strerror(errno),
             errno == EMFILE ? " (the kernel's limit of open files is reached)" : "");
    return -1;
  }
  if (rc != 0) {
    job->pid = -1;
    snprintf(err, err_size, "cannot run the compiler '%s': %s%s (change it with %%cc)", argv[0],
             strerror(rc), rc == EMFILE ? " (the kernel's limit of open files is reached)" : "");
    return -1;
  }
  fcntl(job->out_fd, F_SETFL, O_NONBLOCK);
  job->pid_fd = pidfd_open(job->pid, 0);
  if (job->pid_fd < 0) {
    snprintf(err, err_size, "cannot watch the compiler (pidfd_open): %s", strerror(errno));
    kill(-job->pid, SIGKILL);
    waitpid(job->pid, NULL, 0);
    job->pid = -1;
    return -1;
  }
  fcntl(job->pid_fd, F_SETFD, FD_CLOEXEC);
  return 0;
}

/* Writes the job's translation unit and the cell's text, and starts the
 * compiler on them. Returns 0, or -1 with err. */
static int launch(kn_session_t *s, kn_compile_t *job, char *err, size_t err_size) {
  char **argv = NULL;
  size_t argc = 0, n_keys = job->c->items.n;
  kn_strbuf_t tu = KN_STRBUF_INIT, src = KN_STRBUF_INIT;
  char **keys = fl__xcalloc(n_keys + 1, sizeof *keys);
  int cell = job->c->cell, rc = -1;
  for (size_t i = 0; i < n_keys; i++) keys[i] = item_key(&job->c->items.items[i]);
  build_unit(s, cell, &job->c->items, keys, &tu);

  char path_c[PATH_MAX], path_so[PATH_MAX], path_cell[PATH_MAX];
  snprintf(path_c, sizeof path_c, "%s/cell_%d.c", s->dir, cell);
  snprintf(path_so, sizeof path_so, "%s/" KN_CELL_SO_FMT, s->dir, cell);
  snprintf(path_cell, sizeof path_cell, "%s/" KN_CELL_FILE_FMT, s->dir, cell);
  free(job->path_so);
  job->path_so = fl__xstrdup(path_so);
  /* The cell's own text, at its cell line numbers, for the compiler to
   * quote in diagnostics. */
  for (int i = 1; i < job->first_line; i++) kn_strbuf_putc(&src, '\n');
  kn_strbuf_puts(&src, job->code);
  if (write_file(path_c, tu.data, tu.len) < 0 || write_file(path_cell, src.data, src.len) < 0) {
    snprintf(err, err_size, "cannot write %s: %s", path_c, strerror(errno));
    goto out;
  }

  if (push_words(&argv, &argc, s->cc, err, err_size) < 0 ||
      push_words(&argv, &argc, KN_BASE_CFLAGS, err, err_size) < 0 ||
      push_words(&argv, &argc, s->cflags, err, err_size) < 0)
    goto out;
  const char *fixed[] = {"-fPIC", "-shared", "-fdiagnostics-color=never", "-iquote", s->cwd,
                         "-o", path_so, path_c};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) push(&argv, &argc, fixed[i]);
  if (push_words(&argv, &argc, s->ldflags, err, err_size) < 0) goto out;
  job->frame_pointers = kn_session_flags_keep_frame_pointers(s->cflags, s->ldflags);
  rc = spawn_tool(argv, s->dir, job, err, err_size);
out:
  for (size_t i = 0; i < n_keys; i++) free(keys[i]);
  free(keys);
  if (argv)
    for (size_t i = 0; i < argc; i++) free(argv[i]);
  free(argv);
  kn_strbuf_free(&tu);
  kn_strbuf_free(&src);
  return rc;
}

kn_compile_t *kn_session_compile_start(kn_session_t *s, int cell, const char *code, int first_line,
                                       char *err, size_t err_size) {
  kn_compile_t *job = fl__xcalloc(1, sizeof *job);
  job->pid = -1;
  job->pid_fd = job->out_fd = -1;
  job->c = fl__xcalloc(1, sizeof *job->c);
  job->c->cell = cell;
  job->code = fl__xstrdup(code);
  job->first_line = first_line;
  if (kn_cell_split(code, kn_session_typedefs(s), first_line, &job->c->items) < 0) {
    snprintf(err, err_size, "out of memory splitting the cell");
    kn_compile_cancel(&job);
    return NULL;
  }
  if (launch(s, job, err, err_size) < 0) kn_compile_cancel(&job);
  return job;
}

char *kn_session_unit_text(const kn_session_t *s, int cell, const char *code, int first_line) {
  kn_items_t items = {NULL, 0};
  if (kn_cell_split(code, kn_session_typedefs(s), first_line, &items) < 0) return NULL;
  char **keys = fl__xcalloc(items.n + 1, sizeof *keys);
  for (size_t i = 0; i < items.n; i++) keys[i] = item_key(&items.items[i]);
  kn_strbuf_t tu = KN_STRBUF_INIT;
  build_unit(s, cell, &items, keys, &tu);
  for (size_t i = 0; i < items.n; i++) free(keys[i]);
  free(keys);
  kn_items_free(&items);
  return kn_strbuf_steal(&tu);
}

void kn_compile_fds(const kn_compile_t *job, int fds[2]) {
  fds[0] = job->out_fd;
  fds[1] = job->pid_fd;
}

bool kn_compile_poll(kn_compile_t *job) {
  char buf[8192];
  while (job->out_fd >= 0) {
    ssize_t n = read(job->out_fd, buf, sizeof buf);
    if (n > 0) {
      kn_strbuf_append(&job->output, buf, (size_t)n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    close(job->out_fd);
    job->out_fd = -1;
  }
  if (!job->ended && job->pid > 0 && waitpid(job->pid, &job->status, WNOHANG) == job->pid) {
    job->ended = true;
    job->pid = -1;
    if (job->pid_fd >= 0) close(job->pid_fd);
    job->pid_fd = -1;
  }
  /* Done when it has ended and its output is read: a process the compiler
   * left behind may hold the pipe, so its end alone decides. */
  if (job->ended && job->out_fd >= 0) {
    close(job->out_fd);
    job->out_fd = -1;
  }
  return job->ended;
}

void kn_compile_cancel(kn_compile_t **jp) {
  kn_compile_t *job = *jp;
  if (!job) return;
  if (job->pid > 0) {
    /* The whole group: cc and the cc1, as and ld it started. */
    kill(-job->pid, SIGKILL);
    while (waitpid(job->pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  if (job->pid_fd >= 0) close(job->pid_fd);
  if (job->out_fd >= 0) close(job->out_fd);
  if (job->path_so) unlink(job->path_so);
  free(job->path_so);
  kn_compiled_destroy(&job->c);
  free(job->code);
  free(job->value_error);
  kn_strbuf_free(&job->output);
  free(job);
  *jp = NULL;
}

/* Whether line (up to its newline) starts a diagnostic: "FILE:LINE:COL: ". */
static bool starts_diagnostic(const char *line) {
  const char *colon = strchr(line, ':');
  size_t len = strcspn(line, "\n");
  if (!colon || colon - line >= (ptrdiff_t)len || line[0] == ' ') return false;
  int l, c, n = 0;
  return sscanf(colon, ":%d:%d:%n", &l, &c, &n) == 2 && n > 0;
}

/* text without a diagnostic (its line and the quoted source and notes
 * after it) that repeats one before it word for word: a trailing
 * expression appears four times in the code that shows its value, and
 * a warning about it may come once for each. New string. */
static char *without_repeats(const char *text) {
  kn_strbuf_t out = KN_STRBUF_INIT;
  const char *p = text;
  while (*p) {
    const char *end = p + strcspn(p, "\n");
    if (*end) end++;
    while (*end && !starts_diagnostic(end)) {
      end += strcspn(end, "\n");
      if (*end) end++;
    }
    size_t len = (size_t)(end - p);
    bool seen = out.data && starts_diagnostic(p) && memmem(out.data, out.len, p, len) != NULL;
    if (!seen) kn_strbuf_append(&out, p, len);
    p = end;
  }
  return out.data ? kn_strbuf_steal(&out) : fl__xstrdup("");
}

/* The cell's trailing expression, or NULL. */
static kn_item_t *value_item(kn_compile_t *job) {
  kn_items_t *items = &job->c->items;
  if (items->n == 0 || !items->items[items->n - 1].is_expression) return NULL;
  return &items->items[items->n - 1];
}

/* The first line of diagnostics that reports an error, new; or NULL. */
static char *first_error(const char *diagnostics) {
  for (const char *p = diagnostics; p && *p;) {
    size_t len = strcspn(p, "\n");
    if (memmem(p, len, "error", 5)) return fl__xstrndup(p, len);
    p += len + (p[len] == '\n');
  }
  return NULL;
}

int kn_session_compile_finish(kn_session_t *s, kn_compile_t **jp, kn_compiled_t **out,
                              char **diagnostics, char *err, size_t err_size) {
  kn_compile_t *job = *jp;
  int rc = -1;
  *out = NULL;
  *diagnostics = NULL;
  int status = WIFEXITED(job->status) ? WEXITSTATUS(job->status) : 128 + WTERMSIG(job->status);
  const char *output = job->output.data ? job->output.data : "";
  if (status == 127) {
    snprintf(err, err_size, "cannot run the compiler '%s': %s (change it with %%cc)", s->cc,
             *output ? output : "not found");
    goto out;
  }
  char *moved = end_of_cell_messages(output, job->c->cell, job->code, job->first_line);
  char *clean = kn_session_clean_message(moved);
  free(moved);
  kn_item_t *value = value_item(job);
  if (value) {
    char *once = without_repeats(clean);
    free(clean);
    clean = once;
  }
  if (status != 0 && value) {
    /* The expression as a statement: its own errors are then reported as
     * the compiler words them for it, once; and code the value could not
     * be shown for (a bit-field, say) still runs. */
    job->value_error = first_error(clean);
    free(clean);
    value->is_expression = false;
    /* Its ';' comes after it as the kernel's code: where the expression is
     * unfinished, the compiler's complaint goes to the end of the cell as
     * it always has (end_of_cell_messages). */
    kn_strbuf_t stmt = KN_STRBUF_INIT;
    kn_strbuf_printf(&stmt, "%s\n#line 1 \"" END_FILE "\"\n;", value->text, job->c->cell);
    free(value->text);
    value->text = kn_strbuf_steal(&stmt);
    kn_strbuf_clear(&job->output);
    job->ended = false;
    job->status = 0;
    if (launch(s, job, err, err_size) < 0) goto out;
    return 2;
  }
  if (status != 0) {
    *diagnostics = clean;
    rc = 1;
    goto out;
  }
  kn_compiled_t *c = job->c;
  if (job->value_error) {
    kn_strbuf_t sb = KN_STRBUF_INIT;
    kn_strbuf_printf(&sb, "%scflame: the value of the cell's last expression is not shown: %s\n",
                     clean, job->value_error);
    free(clean);
    clean = kn_strbuf_steal(&sb);
  }
  c->warnings = clean;
  c->frame_pointers = job->frame_pointers;
  c->so_path = job->path_so;
  job->path_so = NULL;
  resolve_main(c);
  char entry[64];
  snprintf(entry, sizeof entry, KN_ENTRY_FMT, c->cell);
  c->entry = fl__xstrdup(entry);
  *out = c;
  job->c = NULL;
  rc = 0;
out:
  kn_compile_cancel(jp);
  return rc;
}

int kn_session_compile(kn_session_t *s, int cell, const char *code, int first_line,
                       kn_compiled_t **out, char **diagnostics, char *err, size_t err_size) {
  *out = NULL;
  *diagnostics = NULL;
  kn_compile_t *job = kn_session_compile_start(s, cell, code, first_line, err, err_size);
  if (!job) return -1;
  for (;;) {
    while (!kn_compile_poll(job)) {
      int fds[2];
      kn_compile_fds(job, fds);
      struct pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
      poll(p, 2, -1);
    }
    int rc = kn_session_compile_finish(s, &job, out, diagnostics, err, err_size);
    if (rc != 2) return rc;
  }
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
    char *key = item_key(it);
    if (!key) continue;
    ssize_t at = find_entry(s, key);
    if (at >= 0 && (is_include(it) || !replaces(it, &s->entries[at]))) {
      free(key);
      continue;
    }
    /* A directive is kept where the cell has it (in_cell_order): the
     * earlier one stays in its place for the entries after it. */
    if (it->kind == KN_ITEM_PREPROC) at = -1;
    entry_t e = {.key = key,
                 .name = it->name ? fl__xstrdup(it->name) : NULL,
                 .header = header_text(it, c->cell),
                 .describe = describe_text(it),
                 .cell = c->cell,
                 .is_definition = item_is_definition(it),
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
