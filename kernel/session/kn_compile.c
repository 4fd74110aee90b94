/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_compile: a cell compiled into a shared object, as a job the main loop
 * polls (see kn_session.h, and kn__session.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kn__session.h"
#include "kn_magic.h"
#include "kn_names.h"
#include "fl__spawn.h"
#include "kn_text.h"

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
  char *renamed; /* what main expanded to; NULL if none or not one */
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
    if (it->name && (it->kind == KN_ITEM_FUNC || it->kind == KN_ITEM_GLOBAL) &&
        !kn__writes_main(it) && !strcmp(it->name, own))
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
    fl__buf_t sb = FL__BUF_INIT;
    fl__buf_printf(&sb, "%.*s%s%s", (int)(p - *text), *text, name, p + 4);
    free(*text);
    *text = fl__buf_take(&sb);
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
    if (kn__writes_main(&c->items.items[i])) written = &c->items.items[i];
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
  static const char *const marks[] = {
      ": error: ",     ": warning: ",           ": note: ",   ": fatal error: ", "In function",
      "At top level:", "In file included from", " generated."};
  for (size_t i = 0; i < FL__ARRAY_SIZE(marks); i++)
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
  fl__buf_t sb = FL__BUF_INIT;
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
        fl__buf_printf(&sb, "%.*s at the end of the cell\n", (int)(before - p), p);
      else
        fl__buf_printf(&sb, "%.*s\n", (int)len, p);
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
        fl__buf_printf(&sb, KN_CELL_FILE_FMT ":%d:%d%.*s at the end of the cell\n", cell, line,
                         col, (int)(before - q), q);
      else
        fl__buf_printf(&sb, KN_CELL_FILE_FMT ":%d:%d%.*s\n", cell, line, col, (int)mlen, q);
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
  return fl__buf_take(&sb);
}

char *kn_session_clean_message(const char *text) {
  fl__buf_t sb = FL__BUF_INIT;
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
        fl__buf_putc(&sb, p[i++]);
      }
      fl__buf_putc(&sb, '\n');
    }
    p += len;
    if (*p == '\n') p++;
  }
  /* No trailing newline of our own if the text had none. */
  if (sb.len && (!*text || text[strlen(text) - 1] != '\n')) sb.data[--sb.len] = '\0';
  return fl__buf_take(&sb);
}

/* ---- frame pointers (for the allocation recorder's fast unwinding) ---- */

static bool ends_with(const char *w, const char *suffix) {
  size_t n = strlen(w), k = strlen(suffix);
  return n >= k && !strcmp(w + n - k, suffix);
}

/* Whether word may put code compiled with other flags into the object. */
static bool brings_foreign_code(const char *w) {
  static const char *const files[] = {".a", ".o", ".lo", ".obj", ".s", ".S", ".sx", ".asm"};
  static const char *const runtime_libs[] = {"-lm",  "-lc",    "-ldl",   "-lpthread",
                                             "-lrt", "-lutil", "-lgomp", "-latomic"};
  for (size_t i = 0; i < FL__ARRAY_SIZE(files); i++)
    if (w[0] != '-' && ends_with(w, files[i])) return true;
  if (!strncmp(w, "-l", 2)) {
    for (size_t i = 0; i < FL__ARRAY_SIZE(runtime_libs); i++)
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
  pid_t pid;  /* the compiler, leading a process group of its own */
  int pid_fd; /* readable once it has ended */
  int out_fd; /* its stdout and stderr */
  fl__buf_t output;
  bool ended;
  int status; /* its waitpid status, once ended */
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
  fl__spawn_t how = {.argv = argv, .dir = dir, .search_path = true, .own_group = true};
  int rc = fl__spawn_piped(&how, true, &job->pid, &job->out_fd);
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
    fl__spawn_kill(job->pid);
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
  fl__buf_t tu = FL__BUF_INIT, src = FL__BUF_INIT;
  char **keys = fl__xcalloc(n_keys + 1, sizeof *keys);
  int cell = job->c->cell, rc = -1;
  for (size_t i = 0; i < n_keys; i++) keys[i] = kn__item_key(&job->c->items.items[i]);
  kn__build_unit(s, cell, &job->c->items, keys, &tu);

  char path_c[PATH_MAX], path_so[PATH_MAX], path_cell[PATH_MAX];
  snprintf(path_c, sizeof path_c, "%s/" KN_CELL_SRC_FMT, s->dir, cell);
  snprintf(path_so, sizeof path_so, "%s/" KN_CELL_SO_FMT, s->dir, cell);
  snprintf(path_cell, sizeof path_cell, "%s/" KN_CELL_FILE_FMT, s->dir, cell);
  free(job->path_so);
  job->path_so = fl__xstrdup(path_so);
  /* The cell's own text, at its cell line numbers, for the compiler to
   * quote in diagnostics. */
  for (int i = 1; i < job->first_line; i++) fl__buf_putc(&src, '\n');
  fl__buf_puts(&src, job->code);
  if (write_file(path_c, tu.data, tu.len) < 0 || write_file(path_cell, src.data, src.len) < 0) {
    snprintf(err, err_size, "cannot write %s: %s", path_c, strerror(errno));
    goto out;
  }

  if (push_words(&argv, &argc, s->cc, err, err_size) < 0 ||
      push_words(&argv, &argc, KN_BASE_CFLAGS, err, err_size) < 0 ||
      push_words(&argv, &argc, s->cflags, err, err_size) < 0)
    goto out;
  const char *fixed[] = {"-fPIC", "-shared", "-fdiagnostics-color=never", "-iquote", s->cwd, "-o",
                         path_so, path_c};
  for (size_t i = 0; i < FL__ARRAY_SIZE(fixed); i++) push(&argv, &argc, fixed[i]);
  if (push_words(&argv, &argc, s->ldflags, err, err_size) < 0) goto out;
  job->frame_pointers = kn_session_flags_keep_frame_pointers(s->cflags, s->ldflags);
  rc = spawn_tool(argv, s->dir, job, err, err_size);
out:
  for (size_t i = 0; i < n_keys; i++) free(keys[i]);
  free(keys);
  if (argv)
    for (size_t i = 0; i < argc; i++) free(argv[i]);
  free(argv);
  fl__buf_free(&tu);
  fl__buf_free(&src);
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
  for (size_t i = 0; i < items.n; i++) keys[i] = kn__item_key(&items.items[i]);
  fl__buf_t tu = FL__BUF_INIT;
  kn__build_unit(s, cell, &items, keys, &tu);
  for (size_t i = 0; i < items.n; i++) free(keys[i]);
  free(keys);
  kn_items_free(&items);
  return fl__buf_take(&tu);
}

void kn_compile_fds(const kn_compile_t *job, int fds[2]) {
  fds[0] = job->out_fd;
  fds[1] = job->pid_fd;
}

bool kn_compile_poll(kn_compile_t *job) {
  fl__spawn_drain(&job->out_fd, &job->output);
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
    fl__spawn_kill(job->pid);
  }
  if (job->pid_fd >= 0) close(job->pid_fd);
  if (job->out_fd >= 0) close(job->out_fd);
  if (job->path_so) unlink(job->path_so);
  free(job->path_so);
  kn_compiled_destroy(&job->c);
  free(job->code);
  free(job->value_error);
  fl__buf_free(&job->output);
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
 * after it) that repeats one before it word for word. The unit holds some
 * of the cell's lines more than once, each under its own #line: a
 * function's prototype (which gives it its assembler name) before its
 * definition, so an unknown type in its signature is reported for both; a
 * trailing expression four times in the code that shows its value. The
 * user wrote each line once, and is told of each mistake once. New
 * string. */
static char *without_repeats(const char *text) {
  fl__buf_t out = FL__BUF_INIT;
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
    if (!seen) fl__buf_add(&out, p, len);
    p = end;
  }
  return out.data ? fl__buf_take(&out) : fl__xstrdup("");
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
  char *once = without_repeats(clean);
  free(clean);
  clean = once;
  kn_item_t *value = value_item(job);
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
    fl__buf_t stmt = FL__BUF_INIT;
    fl__buf_printf(&stmt, "%s\n#line 1 \"" END_FILE "\"\n;", value->text, job->c->cell);
    free(value->text);
    value->text = fl__buf_take(&stmt);
    fl__buf_clear(&job->output);
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
    fl__buf_t sb = FL__BUF_INIT;
    fl__buf_printf(&sb, "%scflame: the value of the cell's last expression is not shown: %s\n",
                     clean, job->value_error);
    free(clean);
    clean = fl__buf_take(&sb);
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
