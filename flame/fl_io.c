/* fl_io: reading a profile, whichever of the three formats it is; gzip;
 * which output a file name asks for.
 *
 * The input is read whole (a file is mapped), unzipped when it starts with
 * gzip's magic bytes, its kind told when asked to (binary, with a NUL
 * byte: pprof; text: from its first lines, see detect_kind), parsed into a
 * profile of its own by fl_folded.c, fl_perfscript.c or fl_pprof.c, and
 * merged into the caller's profile only when all of it parsed: an error
 * leaves the caller's profile as it was. */
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
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#include "fl__io.h"

const char *fl_input_kind_name(fl_input_kind_t kind) {
  switch (kind) {
    case FL_INPUT_FOLDED: return "folded stacks";
    case FL_INPUT_PERF_SCRIPT: return "perf script";
    case FL_INPUT_PPROF: return "pprof";
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

/* ---- kinds of code ---- */

static bool starts_with(const char *s, size_t n, const char *prefix) {
  size_t k = strlen(prefix);
  return n >= k && memcmp(s, prefix, k) == 0;
}

uint32_t fl__module_kind(const char *m, size_t n, uint64_t addr) {
  if (starts_with(m, n, "[kernel.") || (n >= 7 && memcmp(m + n - 7, "vmlinux", 7) == 0) ||
      (starts_with(m, n, "[") && !starts_with(m, n, "[unknown]") && addr >= 0xffff000000000000u))
    return FL_FRAME_KERNEL;
  static const char *const system_dirs[] = {"/usr/lib/", "/usr/lib64/", "/usr/lib32/",
                                            "/lib/",     "/lib64/",     "/lib32/"};
  size_t b = fl__path_base(m, n);
  for (size_t i = 0; i < sizeof system_dirs / sizeof *system_dirs; i++)
    if (starts_with(m, n, system_dirs[i]) && memmem(m + b, n - b, ".so", 3)) return FL_FRAME_SYSTEM;
  return FL_FRAME_CELL;
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

/* ---- outputs by file name ---- */

/* The one table of file endings: %profsave and the cflame command read it. */
static const struct {
  const char *ending, *format;
} outputs[] = {
    {".svg", "svg"},       {".html", "html"}, {".vl.json", "vegalite"},
    {".folded", "folded"}, {".txt", "text"},  {".pb.gz", "pprof"},
};
#define N_OUTPUTS (sizeof outputs / sizeof *outputs)

const char *fl_output_format_of_path(const char *path) {
  size_t len = strlen(path);
  for (size_t i = 0; i < N_OUTPUTS; i++) {
    size_t n = strlen(outputs[i].ending);
    if (len > n && strcasecmp(path + len - n, outputs[i].ending) == 0) return outputs[i].format;
  }
  return NULL;
}

const char *fl_output_ending_of_format(const char *format) {
  for (size_t i = 0; i < N_OUTPUTS; i++)
    if (!strcmp(outputs[i].format, format)) return outputs[i].ending;
  return NULL;
}

const char *fl_output_endings(bool and_last) {
  static char lists[2][128];
  char *out = lists[and_last];
  if (!out[0]) {
    size_t used = 0;
    for (size_t i = 0; i < N_OUTPUTS; i++) {
      const char *sep = i == 0 ? "" : and_last && i == N_OUTPUTS - 1 ? " or " : ", ";
      used += (size_t)snprintf(out + used, sizeof lists[0] - used, "%s%s", sep, outputs[i].ending);
    }
  }
  return out;
}

/* ---- gzip ---- */

static voidpf zlib_alloc(voidpf opaque, uInt items, uInt size) {
  return fl__xmalloc(items, size);
}
static void zlib_free(voidpf opaque, voidpf p) {
  free(p);
}

/* zlib counts in uInt: at most this much in or out per call. */
#define ZLIB_CHUNK ((size_t)1 << 30)

char *fl__gzip(const void *data, size_t len, size_t *out_len) {
  z_stream z = {.zalloc = zlib_alloc, .zfree = zlib_free};
  /* 15 + 16: a gzip header and trailer around the deflate stream. The
   * fastest level, as Go's runtime/pprof writes its profiles: a profile's
   * varints compress well anyway. */
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fl__oom(0);
  size_t cap = len + len / 1000 + 64, used = 0, left = len;
  char *out = fl__xmalloc(cap, 1);
  z.next_in = (Bytef *)data;
  int rc;
  do {
    if (cap - used < 64) out = fl__grow(out, &cap, cap + 1, 1);
    size_t in = left < ZLIB_CHUNK ? left : ZLIB_CHUNK;
    size_t room = cap - used < ZLIB_CHUNK ? cap - used : ZLIB_CHUNK;
    z.avail_in = (uInt)in;
    z.next_out = (Bytef *)out + used;
    z.avail_out = (uInt)room;
    rc = deflate(&z, in == left ? Z_FINISH : Z_NO_FLUSH);
    left -= in - z.avail_in;
    used += room - z.avail_out;
  } while (rc == Z_OK || rc == Z_BUF_ERROR);
  if (rc != Z_STREAM_END) fl__oom(0); /* deflate fails only for memory */
  deflateEnd(&z);
  *out_len = used;
  return out;
}

int fl__gunzip(const void *data, size_t len, char **out, size_t *out_len, char *why,
               size_t why_size) {
  const unsigned char *in = data;
  z_stream z = {.zalloc = zlib_alloc, .zfree = zlib_free};
  if (inflateInit2(&z, 15 + 16) != Z_OK) fl__oom(0);
  size_t cap = len * 4 + 64, used = 0, pos = 0;
  char *buf = fl__xmalloc(cap, 1);
  int rc = Z_OK;
  *out = NULL;
  if (!fl__is_gzip(data, len)) {
    snprintf(why, why_size, "it does not start with gzip's magic bytes");
    goto fail;
  }
  for (;;) {
    buf = fl__grow(buf, &cap, used + 2, 1);
    size_t in_n = len - pos < ZLIB_CHUNK ? len - pos : ZLIB_CHUNK;
    size_t room = cap - used - 1 < ZLIB_CHUNK ? cap - used - 1 : ZLIB_CHUNK;
    z.next_in = (Bytef *)in + pos;
    z.avail_in = (uInt)in_n;
    z.next_out = (Bytef *)buf + used;
    z.avail_out = (uInt)room;
    rc = inflate(&z, Z_NO_FLUSH);
    pos += in_n - z.avail_in;
    used += room - z.avail_out;
    if (rc == Z_STREAM_END) {
      if (pos == len) break;
      if (!fl__is_gzip(in + pos, len - pos)) {
        snprintf(why, why_size, "%zu bytes after the end of the gzip data are not gzip", len - pos);
        goto fail;
      }
      inflateReset(&z); /* another member follows */
      continue;
    }
    if (rc == Z_MEM_ERROR) fl__oom(0);
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      snprintf(why, why_size, "the gzip data is damaged at byte %zu (%s)", pos,
               z.msg ? z.msg : "invalid data");
      goto fail;
    }
    /* inflate stops when its input or its room runs out: with room left,
     * all the input was read and the stream has not ended. */
    if (pos == len && z.avail_out > 0) {
      snprintf(why, why_size,
               "the gzip data is truncated: it ends after %zu bytes, before the end of its "
               "stream (%zu bytes unzipped)",
               len, used);
      goto fail;
    }
    if (z.avail_out == 0) buf = fl__grow(buf, &cap, cap + 1, 1);
  }
  inflateEnd(&z);
  buf[used] = '\0';
  *out = buf;
  *out_len = used;
  return 0;
fail:
  inflateEnd(&z);
  free(buf);
  return -1;
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

/* Binary data: a control character other than NUL, whitespace and escape
 * (of coloured text) in the first 64 bytes. A protobuf message's first bytes
 * are a field's tag and its length, and nested tags, which are; text's are
 * not. (Text with a NUL byte further on is an error naming its line.) */
static bool binary_start(const char *data, size_t len) {
  for (size_t i = 0; i < len && i < 64; i++) {
    unsigned char c = (unsigned char)data[i];
    if (c && c < 0x20 && !fl__is_space((char)c) && c != 0x1b) return true;
  }
  return false;
}

/* ---- reading ---- */

/* "a CPU profile", "an allocation profile". */
static const char *kind_words(const fl_profile_info_t *info) {
  return info->kind == FL_PROFILE_CPU ? "a CPU profile" : "an allocation profile";
}

/* Can what is in scratch go into p? An empty p takes scratch's kind and
 * allocation details; otherwise they must agree. Returns 0, or -1 with
 * err. */
static int take_kind(fl_profile_t *p, const fl_profile_t *scratch, const char *name,
                     fl_io_error_t *err) {
  fl_profile_info_t *info = fl_profile_info(p);
  const fl_profile_info_t *in = fl_profile_info_const(scratch);
  if (fl_profile_n_samples(p) == 0) {
    info->kind = in->kind;
    if (in->kind == FL_PROFILE_ALLOC) {
      info->sample_rate = in->sample_rate;
      info->weight_is_count = in->weight_is_count;
      info->live_only = in->live_only;
    }
    return 0;
  }
  if (info->kind != in->kind)
    return fl__io_fail(err, name, 0, "cannot add %s, %s, to %s", name, kind_words(in),
                       kind_words(info));
  if (info->kind == FL_PROFILE_ALLOC && info->weight_is_count != in->weight_is_count)
    return fl__io_fail(err, name, 0,
                       "cannot add %s, whose weights are %s, to a profile whose weights are %s",
                       name, in->weight_is_count ? "allocation counts" : "bytes",
                       info->weight_is_count ? "allocation counts" : "bytes");
  return 0;
}

/* Reads the unzipped input (gzipped says whether it was zipped, for the
 * messages) into a profile of its own, then into p, under a frame named
 * root when root is not NULL. */
static int read_plain(fl_profile_t *p, const char *data, size_t len, const char *name, bool gzipped,
                      const char *root, fl_input_kind_t kind, fl_input_kind_t *kind_out,
                      fl_io_error_t *err) {
  fl_profile_t *scratch = NULL;
  const char *nul = len ? memchr(data, '\0', len) : NULL;
  size_t first = 0;
  fl_input_kind_t detected =
      binary_start(data, len) ? FL_INPUT_PPROF : detect_kind(data, len, &first);
  if (kind == FL_INPUT_AUTO) kind = detected;
  if (kind_out) *kind_out = kind;
  if (nul && kind != FL_INPUT_PPROF) {
    size_t line = 1;
    for (const char *q = data; q < nul; q++) line += *q == '\n';
    return fl__io_fail(err, name, line, "a NUL byte: this is not text (expected %s)",
                       fl_input_kind_name(kind));
  }
  int rc;
  if (kind == FL_INPUT_PPROF) {
    rc = fl__read_pprof(&scratch, data, len, name, gzipped, err);
  } else {
    scratch = fl_profile_new(FL_PROFILE_CPU);
    rc = kind == FL_INPUT_PERF_SCRIPT ? fl__read_perf_script(scratch, data, len, name, err)
                                      : fl__read_folded(scratch, data, len, name, err);
  }
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
                  "neither folded stacks nor perf script output%s: found \"%s\"; a folded "
                  "line is \"frame;frame;...;frame COUNT\" (COUNT a non-negative integer), "
                  "a perf script sample starts with a header such as \"prog 1234 "
                  "5678.901234: 250000 cpu-clock:\" followed by frame lines",
                  gzipped ? " (once unzipped)" : "", found);
    }
    goto fail;
  }
  if (take_kind(p, scratch, name, err) < 0) goto fail;
  fl_profile_info_t *info = fl_profile_info(p);
  if (fl_profile_info_const(scratch)->total_weight > UINT64_MAX - info->total_weight) {
    fl__io_fail(err, name, 0,
                "the counts of %s and of the profile it is added to add up to more than %" PRIu64
                ", the most a profile holds",
                name, UINT64_MAX);
    goto fail;
  }
  /* takes the interval when p has none */
  fl_profile_merge_under(p, scratch,
                         root ? &(fl_frame_t){.func = root, .flags = FL_FRAME_ROOT} : NULL);
  if (!info->taken_unix) info->taken_unix = fl_profile_info_const(scratch)->taken_unix;
  if (!info->source[0])
    snprintf(info->source, sizeof info->source, "%s (%s)", name, fl_input_kind_name(kind));
  fl_profile_destroy(&scratch);
  return 0;
fail:
  fl_profile_destroy(&scratch);
  return -1;
}

static int read_profile(fl_profile_t *p, const char *data, size_t len, const char *name,
                        const char *root, fl_input_kind_t kind, fl_input_kind_t *kind_out,
                        fl_io_error_t *err) {
  if (!name) name = "<input>";
  memset(err, 0, sizeof *err);
  if (kind_out) *kind_out = kind;
  if (!fl__is_gzip(data, len))
    return read_plain(p, data, len, name, false, root, kind, kind_out, err);
  char *plain, why[200];
  size_t plain_len;
  if (fl__gunzip(data, len, &plain, &plain_len, why, sizeof why) < 0)
    return fl__io_fail(err, name, 0, "%s starts as a gzip file (as pprof profiles do), but %s",
                       name, why);
  int rc = read_plain(p, plain, plain_len, name, true, root, kind, kind_out, err);
  free(plain);
  return rc;
}

int fl_read_profile(fl_profile_t *p, const char *data, size_t len, const char *name,
                    fl_input_kind_t kind, fl_input_kind_t *kind_out, fl_io_error_t *err) {
  return read_profile(p, data, len, name, NULL, kind, kind_out, err);
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

int fl_read_profile_file_under(fl_profile_t *p, const char *path, const char *root,
                               fl_input_kind_t kind, fl_input_kind_t *kind_out,
                               fl_io_error_t *err) {
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
      int rc = read_profile(p, map, (size_t)st.st_size, name, root, kind, kind_out, err);
      munmap(map, (size_t)st.st_size);
      return rc;
    }
  }
  ssize_t len = read_all(fd, &data);
  int saved = errno;
  if (!is_stdin) close(fd);
  if (len < 0) return fl__io_fail(err, name, 0, "cannot read %s: %s", name, strerror(saved));
  int rc = read_profile(p, data, (size_t)len, name, root, kind, kind_out, err);
  free(data);
  return rc;
}

int fl_read_profile_file(fl_profile_t *p, const char *path, fl_input_kind_t kind,
                         fl_input_kind_t *kind_out, fl_io_error_t *err) {
  return fl_read_profile_file_under(p, path, NULL, kind, kind_out, err);
}
