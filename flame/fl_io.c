/* fl_io: reading a profile from text, whichever of the two formats it is.
 *
 * The input is read whole (a file into memory first), checked for NUL
 * bytes, its kind told from its first lines when asked to (see
 * detect_kind), parsed into a profile of its own by fl_folded.c or
 * fl_perfscript.c, and merged into the caller's profile only when all of it
 * parsed: an error leaves the caller's profile as it was. */
#define _GNU_SOURCE
#include "cflame/fl_io.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fl__io.h"

const char *fl_input_kind_name(fl_input_kind_t kind) {
  switch (kind) {
    case FL_INPUT_FOLDED: return "folded stacks";
    case FL_INPUT_PERF_SCRIPT: return "perf script";
    case FL_INPUT_AUTO: break;
  }
  return "auto";
}

/* ---- shared helpers (fl__io.h) ---- */

bool fl__blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!fl__is_space(s[i])) return false;
  return true;
}

int fl__io_fail(fl_io_error_t *err, const char *name, size_t line, const char *fmt, ...) {
  snprintf(err->file, sizeof err->file, "%s", name ? name : "<input>");
  err->line = line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return -1;
}

void fl__excerpt(const char *s, size_t n, char out[80]) {
  size_t k = 0, max = 60;
  for (size_t i = 0; i < n && i < max; i++) {
    unsigned char c = (unsigned char)s[i];
    out[k++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
  }
  if (n > max) {
    /* do not leave half a UTF-8 sequence before the ellipsis */
    while (k > 0 && ((unsigned char)out[k - 1] & 0xc0) == 0x80) k--;
    if (k > 0 && (unsigned char)out[k - 1] >= 0xc0) k--;
    memcpy(out + k, "\xe2\x80\xa6", 3); /* … */
    k += 3;
  }
  out[k] = '\0';
}

/* ---- the frame cache ---- */

typedef struct fl__cached {
  size_t off; /* key in arena */
  size_t len;
  uint32_t id;
} fl__cached_t;

void fl__frame_cache_free(fl__frame_cache_t *c) {
  free(c->entries);
  fl__index_free(&c->index);
  free(c->arena);
  memset(c, 0, sizeof *c);
}

bool fl__frame_cache_get(const fl__frame_cache_t *c, const char *key, size_t n, uint32_t *id) {
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&c->index, fl__hash_bytes(key, n), &pr); i != FL__NONE;
       i = fl__index_next(&c->index, &pr)) {
    const fl__cached_t *e = &c->entries[i];
    if (e->len == n && (n == 0 || memcmp(c->arena + e->off, key, n) == 0)) {
      *id = e->id;
      return true;
    }
  }
  return false;
}

void fl__frame_cache_put(fl__frame_cache_t *c, const char *key, size_t n, uint32_t id) {
  if (c->n >= FL__NONE) fl__oom(0);
  c->arena = fl__grow(c->arena, &c->arena_cap, c->arena_len + n, 1);
  if (n) memcpy(c->arena + c->arena_len, key, n);
  c->entries = fl__grow(c->entries, &c->cap, c->n + 1, sizeof *c->entries);
  c->entries[c->n] = (fl__cached_t){.off = c->arena_len, .len = n, .id = id};
  fl__index_add(&c->index, fl__hash_bytes(key, n), (uint32_t)c->n++);
  c->arena_len += n;
}

/* ---- telling the kinds apart ---- */

/* After a header's thread id: an optional "[CPU]", then a timestamp
 * "SECONDS.FRACTION:", as perf script prints by default. */
static bool has_timestamp(const char *s, size_t n, const fl__perf_header_t *h) {
  const char *id = h->tid ? h->tid + h->tid_len : h->pid + h->pid_len;
  size_t i = (size_t)(id - s);
  while (i < n && fl__is_space(s[i])) i++;
  if (i < n && s[i] == '[') {
    while (i < n && s[i] != ']') i++;
    for (i++; i < n && fl__is_space(s[i]); i++) {
    }
  }
  size_t digits = i;
  while (i < n && fl__is_digit(s[i])) i++;
  if (i == digits || i >= n || s[i] != '.') return false;
  size_t fraction = ++i;
  while (i < n && fl__is_digit(s[i])) i++;
  return i > fraction && i < n && s[i] == ':';
}

/* Perf script text starts (after comments and blank lines) with an event
 * header followed by an indented frame line, with a header that ends in an
 * event name ("... 250000 cpu-clock:") or has a timestamp ("prog 1234
 * [000] 5678.901234: ..."), or with an indented frame line (of
 * a sample whose header was cut off); anything else is taken for
 * folded stacks, whose reader then says what is wrong with it. *first is
 * the line number of the first line that is not blank or a comment (0 when
 * there is none). */
static fl_input_kind_t detect_kind(const char *data, size_t len, size_t *first) {
  fl__lines_t it = {.data = data, .len = len};
  const char *s;
  size_t n;
  *first = 0;
  while (fl__next_line(&it, &s, &n)) {
    if (fl__blank(s, n) || s[0] == '#') continue;
    *first = it.lineno;
    /* perf script's frame lines are indented; folded lines are not */
    if (fl__is_space(s[0]) && fl__perf_frame_line(s, n)) return FL_INPUT_PERF_SCRIPT;
    fl__perf_header_t h;
    if (!fl__perf_header(s, n, &h)) return FL_INPUT_FOLDED;
    if (fl__perf_event(s, n, NULL) || has_timestamp(s, n, &h)) return FL_INPUT_PERF_SCRIPT;
    const char *next;
    size_t next_n;
    if (fl__next_line(&it, &next, &next_n) && fl__perf_frame_line(next, next_n))
      return FL_INPUT_PERF_SCRIPT;
    return FL_INPUT_FOLDED;
  }
  return FL_INPUT_FOLDED;
}

/* ---- reading ---- */

int fl_read_profile(fl_profile_t *p, const char *data, size_t len, const char *name,
                    fl_input_kind_t kind, fl_input_kind_t *kind_out, fl_io_error_t *err) {
  fl_profile_t *scratch = NULL;
  if (!name) name = "<input>";
  memset(err, 0, sizeof *err);
  if (kind_out) *kind_out = kind;
  if (fl_profile_info_const(p)->kind != FL_PROFILE_CPU)
    return fl__io_fail(err, name, 0,
                       "cannot add samples of %s to an allocation profile: folded stacks "
                       "and perf script text are CPU profiles",
                       name);
  const char *nul = len ? memchr(data, '\0', len) : NULL;
  if (nul) {
    size_t line = 1;
    for (const char *q = data; q < nul; q++) line += *q == '\n';
    return fl__io_fail(err, name, line,
                       "a NUL byte: this is not a text file (expected folded stacks or "
                       "perf script output)");
  }
  size_t first = 0;
  fl_input_kind_t detected = detect_kind(data, len, &first);
  if (kind == FL_INPUT_AUTO) kind = detected;
  if (kind_out) *kind_out = kind;

  scratch = fl_profile_new(FL_PROFILE_CPU);
  int rc = kind == FL_INPUT_PERF_SCRIPT ? fl__read_perf_script(scratch, data, len, name, err)
                                        : fl__read_folded(scratch, data, len, name, err);
  if (rc < 0) {
    /* Detected as folded, and its very first line is not: say both what
     * folded stacks and what perf script text look like. */
    if (detected == FL_INPUT_FOLDED && err->line != 0 && err->line == first &&
        strncmp(err->message, "not a line of folded stacks", 27) == 0) {
      char found[80];
      fl__lines_t it = {.data = data, .len = len};
      const char *s = NULL;
      size_t n = 0;
      while (it.lineno < first && fl__next_line(&it, &s, &n)) {
      }
      fl__excerpt(s, n, found);
      fl__io_fail(err, name, first,
                  "neither folded stacks nor perf script output: found \"%s\"; a folded "
                  "line is \"frame;frame;...;frame COUNT\" (COUNT a non-negative integer), "
                  "a perf script sample starts with a header such as \"prog 1234 "
                  "5678.901234: 250000 cpu-clock:\" followed by frame lines",
                  found);
    }
    goto fail;
  }
  fl_profile_info_t *info = fl_profile_info(p);
  if (fl_profile_info_const(scratch)->total_weight > UINT64_MAX - info->total_weight) {
    fl__io_fail(err, name, 0,
                "the counts of %s and of the profile it is added to add up to more than %" PRIu64
                ", the most a profile holds",
                name, UINT64_MAX);
    goto fail;
  }
  fl_profile_merge(p, scratch); /* takes the interval when p has none */
  if (!info->source[0])
    snprintf(info->source, sizeof info->source, "%s (%s)", name, fl_input_kind_name(kind));
  fl_profile_destroy(&scratch);
  return 0;
fail:
  fl_profile_destroy(&scratch);
  return -1;
}

/* Reads all of fd into *out (NUL-terminated for convenience). Returns the
 * length, or -1 with errno. */
static ssize_t read_all(int fd, char **out) {
  struct stat st;
  size_t cap =
      fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 65536;
  size_t len = 0;
  char *buf = fl__xmalloc(cap, 1);
  for (;;) {
    buf = fl__grow(buf, &cap, len + 2, 1);
    ssize_t got = read(fd, buf + len, cap - len - 1);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int saved = errno;
      free(buf);
      errno = saved;
      return -1;
    }
    if (got == 0) break;
    len += (size_t)got;
  }
  buf[len] = '\0';
  *out = buf;
  return (ssize_t)len;
}

int fl_read_profile_file(fl_profile_t *p, const char *path, fl_input_kind_t kind,
                         fl_input_kind_t *kind_out, fl_io_error_t *err) {
  bool is_stdin = strcmp(path, "-") == 0;
  const char *name = is_stdin ? "<stdin>" : path;
  char *data = NULL;
  memset(err, 0, sizeof *err);
  if (kind_out) *kind_out = kind;
  int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fl__io_fail(err, name, 0, "cannot open %s: %s", name, strerror(errno));
  /* A regular file is mapped rather than copied: profiles run to tens of
   * megabytes. */
  struct stat st;
  if (!is_stdin && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      close(fd);
      int rc = fl_read_profile(p, map, (size_t)st.st_size, name, kind, kind_out, err);
      munmap(map, (size_t)st.st_size);
      return rc;
    }
  }
  ssize_t len = read_all(fd, &data);
  int saved = errno;
  if (!is_stdin) close(fd);
  if (len < 0) return fl__io_fail(err, name, 0, "cannot read %s: %s", name, strerror(saved));
  int rc = fl_read_profile(p, data, (size_t)len, name, kind, kind_out, err);
  free(data);
  return rc;
}
