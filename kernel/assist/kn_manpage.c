/* SPDX-License-Identifier: BSD-3-Clause */
/* Manual pages through man(1) (see kn_manpage.h). */
#define _GNU_SOURCE
#include "kn_manpage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fl__spawn.h"
#include "kn_text.h"

extern char **environ;

struct kn_manpage {
  pid_t pid;   /* the shell running man, leading its process group; -1 once reaped */
  int out_fd;  /* its stdout; -1 once at end of file */
  fl__buf_t text;
  char *plain; /* text without overstrikes, once complete */
};

/* Tries each section in turn ($2...), and shows the first page that is
 * name's own in that section (see kn_manpage.h). */
static const char script[] =
    "name=$1; shift\n"
    "for s in \"$@\"; do\n"
    "  p=$(man -w \"$s\" \"$name\" 2>/dev/null) || continue\n"
    "  case \"${p##*/}\" in \"$name.$s\" | \"$name.$s\".*) ;; *) continue ;; esac\n"
    "  exec man --no-hyphenation --no-justification -P cat \"$s\" \"$name\"\n"
    "done\n"
    "exit 1\n";

/* The kernel's environment for man: 80 columns, plain text, and none of
 * the user's man settings that would change the layout. New, with
 * strings borrowed from environ except the one added. */
static char **man_environment(void) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = fl__xcalloc(n + 2, sizeof *env);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    static const char *const drop[] = {"MANWIDTH=", "MAN_KEEP_FORMATTING=", "MANOPT=",
                                       "MANROFFOPT=", NULL};
    bool keep = true;
    for (const char *const *d = drop; *d; d++)
      if (!strncmp(environ[i], *d, strlen(*d))) keep = false;
    if (keep) env[k++] = environ[i];
  }
  env[k++] = "MANWIDTH=80";
  return env;
}

kn_manpage_t *kn_manpage_start(const char *name, bool is_type, char *err, size_t err_size) {
  /* The sections to try, in order. */
  char *first = is_type ? "3type" : "3", *then = is_type ? "3" : "2";
  char *argv[] = {"/bin/sh", "-c", (char *)script, "sh", (char *)name, first, then, NULL};
  char **env = man_environment();
  pid_t pid;
  int out_fd, rc = fl__spawn_piped(&(fl__spawn_t){.argv = argv, .env = env, .own_group = true},
                                   false, &pid, &out_fd);
  free(env);
  if (rc == -1) {
    snprintf(err, err_size, "cannot create a pipe for man: %s", strerror(errno));
    return NULL;
  }
  if (rc != 0) {
    snprintf(err, err_size, "cannot run man: %s", strerror(rc));
    return NULL;
  }
  kn_manpage_t *m = fl__xcalloc(1, sizeof *m);
  m->pid = pid;
  m->out_fd = out_fd;
  fcntl(m->out_fd, F_SETFL, O_NONBLOCK);
  return m;
}

int kn_manpage_fd(const kn_manpage_t *m) { return m->out_fd; }

/* Drops the overstrikes ("X\bX", "_\bX") of a page formatted for a
 * terminal, should man leave them in. New. */
static char *plain_text(const char *s, size_t len) {
  char *out = fl__xmalloc(len + 1, 1);
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '\b') {
      if (n > 0) n--;
      continue;
    }
    out[n++] = s[i];
  }
  out[n] = '\0';
  return out;
}

bool kn_manpage_poll(kn_manpage_t *m) {
  if (!fl__spawn_drain(&m->out_fd, &m->text)) return false;
  if (m->pid > 0) {
    /* Its output has ended, so man is ending: reap it, or end it. */
    if (waitpid(m->pid, NULL, WNOHANG) != m->pid) fl__spawn_kill(m->pid);
    m->pid = -1;
  }
  if (!m->plain) m->plain = plain_text(m->text.data ? m->text.data : "", m->text.len);
  return true;
}

const char *kn_manpage_text(const kn_manpage_t *m) { return m->plain ? m->plain : ""; }

void kn_manpage_destroy(kn_manpage_t **mp) {
  kn_manpage_t *m = *mp;
  if (!m) return;
  if (m->pid > 0) fl__spawn_kill(m->pid);
  if (m->out_fd >= 0) close(m->out_fd);
  fl__buf_free(&m->text);
  free(m->plain);
  free(m);
  *mp = NULL;
}

/* ---- reading a page ---- */

static bool blank_line(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (s[i] != ' ' && s[i] != '\t') return false;
  return true;
}

/* The body of section heading (the lines after it, up to the next line
 * that starts at the margin) in page: *start and *end, offsets of whole
 * lines. False when the page has no such section. */
static bool find_section(const char *page, const char *heading, size_t *start, size_t *end) {
  size_t hlen = strlen(heading);
  for (const char *line = page; *line;) {
    const char *eol = strchrnul(line, '\n');
    if ((size_t)(eol - line) == hlen && !memcmp(line, heading, hlen)) {
      const char *p = *eol ? eol + 1 : eol;
      *start = (size_t)(p - page);
      while (*p && (*p == ' ' || *p == '\t' || *p == '\n')) {
        const char *e = strchrnul(p, '\n');
        p = *e ? e + 1 : e;
      }
      *end = (size_t)(p - page);
      return true;
    }
    line = *eol ? eol + 1 : eol;
  }
  return false;
}

/* The lines of page[start, end) without their common indent and without
 * blank lines at either end; stops before a line starting with stop_at
 * (after its indent) when given, and with one_paragraph at the first blank
 * line after some text. New, or NULL when nothing is left. */
static char *dedent(const char *page, size_t start, size_t end, const char *stop_at,
                    bool one_paragraph) {
  /* First where the kept lines end, and their least indent. */
  size_t indent = (size_t)-1, stop = start;
  for (size_t i = start; i < end;) {
    const char *eol = memchr(page + i, '\n', end - i);
    size_t len = eol ? (size_t)(eol - (page + i)) : end - i;
    if (blank_line(page + i, len)) {
      if (one_paragraph && indent != (size_t)-1) break;
    } else {
      size_t k = strspn(page + i, " ");
      if (stop_at && !strncmp(page + i + k, stop_at, strlen(stop_at))) break;
      if (k < indent) indent = k;
      stop = i + len;
    }
    i += len + 1;
  }
  if (indent == (size_t)-1) return NULL;
  fl__buf_t sb = FL__BUF_INIT;
  for (size_t i = start; i < stop;) {
    const char *eol = memchr(page + i, '\n', stop - i);
    size_t len = eol ? (size_t)(eol - (page + i)) : stop - i;
    if (blank_line(page + i, len)) {
      if (sb.len) fl__buf_putc(&sb, '\n');
    } else {
      size_t tlen = len - indent;
      while (tlen > 0 && page[i + indent + tlen - 1] == ' ') tlen--;
      if (sb.len) fl__buf_putc(&sb, '\n');
      fl__buf_add(&sb, page + i + indent, tlen);
    }
    i += len + 1;
  }
  return fl__buf_take(&sb);
}

/* text's words in lines of at most width columns (counting bytes; longer
 * words stand alone): a paragraph with a hanging indent, as type pages
 * have, reads as one. New. */
static char *reflow(const char *text, size_t width) {
  fl__buf_t sb = FL__BUF_INIT;
  size_t used = 0;
  for (const char *p = text; *p;) {
    p += strspn(p, " \t\n");
    size_t w = strcspn(p, " \t\n");
    if (!w) break;
    if (used && used + 1 + w > width) {
      fl__buf_putc(&sb, '\n');
      used = 0;
    } else if (used) {
      fl__buf_putc(&sb, ' ');
      used++;
    }
    fl__buf_add(&sb, p, w);
    used += w;
    p += w;
  }
  return fl__buf_take(&sb);
}

void kn_manpage_summary(const char *page, char **title, char **synopsis, char **description) {
  *title = *synopsis = *description = NULL;
  const char *p = page + strspn(page, " \t\n");
  if (*p) *title = fl__xstrndup(p, strcspn(p, " \t\n"));
  size_t start, end;
  /* The synopsis without the feature-test macro requirements that follow
   * it on many pages: the whole page has them. */
  if (find_section(page, "SYNOPSIS", &start, &end))
    *synopsis = dedent(page, start, end, "Feature Test Macro Requirements", false);
  if (find_section(page, "DESCRIPTION", &start, &end)) {
    char *para = dedent(page, start, end, NULL, true);
    if (para) *description = reflow(para, 76);
    free(para);
  }
}
