/* fl_io: reading a profile, whichever of the three formats it is; gzip;
 * which output a file name asks for; writing a file whole or not at all.
 *
 * A file is read only when it is a regular one, up to a limit (see
 * fl_io.h), whole (mapped), unzipped when it starts with gzip's magic
 * bytes (up to the same limit), its kind told when asked to (binary, with
 * a NUL byte: pprof; text: from its first lines, see detect_kind), parsed
 * into a profile of its own by fl_folded.c, fl_perfscript.c or fl_pprof.c,
 * and merged into the caller's profile only when all of it parsed: an
 * error leaves the caller's profile as it was. */
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

/* The next capacity of a buffer of cap bytes that may hold limit bytes at
 * most: twice as much, but never more than limit. */
static size_t grown_to(size_t cap, size_t limit) {
  return cap > limit / 2 ? limit : cap * 2;
}

int fl__gunzip(const void *data, size_t len, size_t max_out, char **out, size_t *out_len, char *why,
               size_t why_size) {
  const unsigned char *in = data;
  z_stream z = {.zalloc = zlib_alloc, .zfree = zlib_free};
  if (inflateInit2(&z, 15 + 16) != Z_OK) fl__oom(0);
  /* max_out + 1 bytes tell that there are more than max_out, and a NUL
   * follows them. */
  const size_t limit = max_out > SIZE_MAX - 2 ? SIZE_MAX : max_out + 2;
  size_t cap = len < (SIZE_MAX - 64) / 4 && len * 4 + 64 < limit ? len * 4 + 64 : limit;
  size_t used = 0, pos = 0;
  char *buf = fl__xmalloc(cap, 1);
  int rc = Z_OK, status = -1;
  *out = NULL;
  if (!fl__is_gzip(data, len)) {
    snprintf(why, why_size, "it does not start with gzip's magic bytes");
    goto fail;
  }
  for (;;) {
    if (used > max_out) {
      status = -2;
      goto fail;
    }
    if (cap - used < 2) {
      cap = grown_to(cap, limit);
      buf = fl__xrealloc(buf, cap, 1);
    }
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
  }
  inflateEnd(&z);
  buf[used] = '\0';
  *out = buf;
  *out_len = used;
  return 0;
fail:
  inflateEnd(&z);
  free(buf);
  return status;
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
 * not. (Text with a NUL byte further on is an error naming its line.) What
 * came gzipped counts a NUL too: gzip holds pprof far more often than text,
 * and a gzip file of zeros is not "text with a NUL byte". */
static bool binary_start(const char *data, size_t len, bool gzipped) {
  for (size_t i = 0; i < len && i < 64; i++) {
    unsigned char c = (unsigned char)data[i];
    if ((c || gzipped) && c < 0x20 && !fl__is_space((char)c) && c != 0x1b) return true;
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

/* Reads the unzipped input (gzipped says whether it was zipped) into a
 * profile of its own, then into p, under a frame named root when root is
 * not NULL. */
static int read_plain(fl_profile_t *p, const char *data, size_t len, const char *name, bool gzipped,
                      const char *root, fl_input_kind_t kind, fl_input_kind_t *kind_out,
                      fl_io_error_t *err) {
  fl_profile_t *scratch = NULL;
  const char *nul = len ? memchr(data, '\0', len) : NULL;
  size_t first = 0;
  fl_input_kind_t detected =
      binary_start(data, len, gzipped) ? FL_INPUT_PPROF : detect_kind(data, len, &first);
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

/* ---- the limit on an input ---- */

void fl_input_limit_text(size_t bytes, char out[32]) {
  static const char *const units[] = {"TiB", "GiB", "MiB", "KiB"};
  for (unsigned i = 0; i < 4; i++) {
    unsigned shift = 40 - 10 * i;
    if (bytes >= (size_t)1 << shift && bytes % ((size_t)1 << shift) == 0) {
      snprintf(out, 32, "%zu %s", bytes >> shift, units[i]);
      return;
    }
  }
  snprintf(out, 32, "%zu byte%s", bytes, bytes == 1 ? "" : "s");
}

int fl_input_limit_parse(const char *text, size_t *bytes, char *err, size_t err_size) {
  static const struct {
    const char *suffix;
    unsigned shift;
  } units[] = {{"", 0},   {"K", 10},   {"KiB", 10}, {"M", 20},  {"MiB", 20},
               {"G", 30}, {"GiB", 30}, {"T", 40},   {"TiB", 40}};
  if (fl__is_digit(text[0])) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(text, &end, 10);
    for (size_t i = 0; errno == 0 && n > 0 && i < sizeof units / sizeof *units; i++) {
      if (strcasecmp(end, units[i].suffix) != 0) continue;
      if (n > (SIZE_MAX >> units[i].shift)) break;
      *bytes = (size_t)n << units[i].shift;
      return 0;
    }
  }
  snprintf(err, err_size,
           "expected a size in bytes: a whole number from 1, with an optional K, M, G or T "
           "(KiB, MiB, GiB, TiB), such as 4G");
  return -1;
}

/* The error of input name past the limit: "SUBJECT WHAT more than the
 * limit of 1 GiB on an input; raise it with ...". */
static int past_limit(fl_io_error_t *err, const char *name, const char *subject, const char *what,
                      const fl_read_opts_t *o) {
  char limit[32];
  fl_input_limit_text(o->max_bytes, limit);
  return fl__io_fail(err, name, 0, "%s %s more than the limit of %s on an input%s%s", subject, what,
                     limit, o->raise_with ? "; raise it with " : "",
                     o->raise_with ? o->raise_with : "");
}

/* ---- reading ---- */

void fl_read_opts_init(fl_read_opts_t *opts) {
  *opts = (fl_read_opts_t){
      .kind = FL_INPUT_AUTO, .max_bytes = FL_INPUT_LIMIT_DEFAULT, .stdin_dash = true};
}

/* Reads data, gzipped or not, into p as o says. */
static int read_profile(fl_profile_t *p, const char *data, size_t len, const char *name,
                        const fl_read_opts_t *o, fl_input_kind_t *kind_out, fl_io_error_t *err) {
  if (!name) name = "<input>";
  memset(err, 0, sizeof *err);
  if (kind_out) *kind_out = o->kind;
  if (!fl__is_gzip(data, len))
    return read_plain(p, data, len, name, false, o->root, o->kind, kind_out, err);
  char *plain, why[200];
  size_t plain_len;
  switch (fl__gunzip(data, len, o->max_bytes, &plain, &plain_len, why, sizeof why)) {
    case 0: break;
    case -2: return past_limit(err, name, name, "is gzip data that unzips to", o);
    default:
      return fl__io_fail(err, name, 0, "%s starts as a gzip file (as pprof profiles do), but %s",
                         name, why);
  }
  int rc = read_plain(p, plain, plain_len, name, true, o->root, o->kind, kind_out, err);
  free(plain);
  return rc;
}

int fl_read_profile(fl_profile_t *p, const char *data, size_t len, const char *name,
                    fl_input_kind_t kind, fl_input_kind_t *kind_out, fl_io_error_t *err) {
  fl_read_opts_t o;
  fl_read_opts_init(&o);
  o.kind = kind;
  return read_profile(p, data, len, name, &o, kind_out, err);
}

/* What a file that is not a regular one is: "a directory". */
static const char *file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

static int not_regular(fl_io_error_t *err, const char *name, mode_t mode, const fl_read_opts_t *o) {
  return fl__io_fail(err, name, 0, "%s is %s, not a regular file: only regular files are read%s",
                     name, file_type(mode), o->stdin_dash ? ", or - for standard input" : "");
}

/* Reads fd to its end into *out (NUL-terminated), max bytes at most: 0
 * with *len; -1 with errno; -2 when there was more than max (found once
 * max + 1 bytes came: the buffer never grows past max + 2 bytes). */
static int read_all(int fd, size_t max, char **out, size_t *len) {
  const size_t limit = max > SIZE_MAX - 2 ? SIZE_MAX : max + 2;
  size_t cap = limit < 65536 ? limit : 65536, used = 0;
  char *buf = fl__xmalloc(cap, 1);
  for (;;) {
    if (used > max) {
      free(buf);
      return -2;
    }
    if (cap - used < 2) {
      cap = grown_to(cap, limit);
      buf = fl__xrealloc(buf, cap, 1);
    }
    ssize_t got = read(fd, buf + used, cap - used - 1);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int saved = errno;
      free(buf);
      errno = saved;
      return -1;
    }
    if (got == 0) break;
    used += (size_t)got;
  }
  buf[used] = '\0';
  *out = buf;
  *len = used;
  return 0;
}

int fl_read_profile_file_opts(fl_profile_t *p, const char *path, const fl_read_opts_t *opts,
                              fl_input_kind_t *kind_out, fl_io_error_t *err) {
  fl_read_opts_t o;
  if (opts)
    o = *opts;
  else
    fl_read_opts_init(&o);
  if (!o.max_bytes) o.max_bytes = FL_INPUT_LIMIT_DEFAULT;
  const bool is_stdin = o.stdin_dash && strcmp(path, "-") == 0;
  const char *name = is_stdin ? "<stdin>" : path;
  int fd = STDIN_FILENO, rc = -1;
  char *data = NULL;
  void *map = NULL;
  size_t len = 0;
  memset(err, 0, sizeof *err);
  if (kind_out) *kind_out = o.kind;
  if (!is_stdin) {
    /* Looked at before it is opened: opening a FIFO waits for a writer,
     * and opening a device may do something of its own. */
    struct stat st;
    if (stat(path, &st) < 0)
      return fl__io_fail(err, name, 0, "cannot open %s: %s", name, strerror(errno));
    if (!S_ISREG(st.st_mode)) return not_regular(err, name, st.st_mode, &o);
    /* O_NONBLOCK: should path have become a FIFO since, open() does not
     * wait for it; fstat then says so. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return fl__io_fail(err, name, 0, "cannot open %s: %s", name, strerror(errno));
    if (fstat(fd, &st) < 0) {
      fl__io_fail(err, name, 0, "cannot read %s: %s", name, strerror(errno));
      goto done;
    }
    if (!S_ISREG(st.st_mode)) {
      not_regular(err, name, st.st_mode, &o);
      goto done;
    }
    if ((uintmax_t)st.st_size > o.max_bytes) {
      char what[64];
      snprintf(what, sizeof what, "is %jd bytes,", (intmax_t)st.st_size);
      past_limit(err, name, name, what, &o);
      goto done;
    }
    /* Mapped rather than copied: profiles run to tens of megabytes. (Files
     * of /proc say they are empty, and are read.) */
    if (st.st_size > 0) {
      map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (map == MAP_FAILED)
        map = NULL;
      else
        len = (size_t)st.st_size;
    }
  }
  if (!map) {
    switch (read_all(fd, o.max_bytes, &data, &len)) {
      case 0: break;
      case -2: past_limit(err, name, is_stdin ? "standard input" : name, "holds", &o); goto done;
      default: fl__io_fail(err, name, 0, "cannot read %s: %s", name, strerror(errno)); goto done;
    }
  }
  rc = read_profile(p, map ? map : data, len, name, &o, kind_out, err);
done:
  if (map) munmap(map, len);
  free(data);
  if (!is_stdin) close(fd);
  return rc;
}

int fl_read_profile_file(fl_profile_t *p, const char *path, fl_input_kind_t kind,
                         fl_input_kind_t *kind_out, fl_io_error_t *err) {
  fl_read_opts_t o;
  fl_read_opts_init(&o);
  o.kind = kind;
  return fl_read_profile_file_opts(p, path, &o, kind_out, err);
}

/* ---- writing ---- */

/* The process's umask, read without setting it (umask() would, for a
 * moment in which another thread's new file gets the wrong mode). */
static mode_t current_umask(void) {
  FILE *f = fopen("/proc/self/status", "re");
  char line[128];
  unsigned mask;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Umask: %o", &mask) == 1) {
      fclose(f);
      return (mode_t)mask;
    }
  if (f) fclose(f);
  mode_t m = umask(022); /* no /proc: the only other way to know it */
  umask(m);
  return m;
}

/* Writes all of data to fd. Returns 0, or -1 with errno. */
static int write_all(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

int fl_write_file(const char *path, const void *data, size_t len, bool in_place, char *err,
                  size_t err_size) {
  struct stat st;
  char *tmp = NULL;
  bool made = false;
  int fd = -1, saved;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    if (!in_place || S_ISDIR(st.st_mode)) {
      snprintf(err, err_size,
               "cannot write %s: %s is %s, not a regular file; give the path of a regular "
               "file, or of one to create",
               path, path, file_type(st.st_mode));
      return -1;
    }
    if ((fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY)) < 0 || write_all(fd, data, len) < 0)
      goto fail;
  } else {
    size_t n = strlen(path);
    tmp = fl__xmalloc(n + sizeof ".XXXXXX", 1);
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".XXXXXX", sizeof ".XXXXXX");
    if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) goto fail;
    made = true;
    /* The mode creat() would have given it (mkstemp's file is the owner's
     * alone), where the file system keeps modes: no error where it does
     * not. */
    fchmod(fd, 0666 & ~current_umask());
    if (write_all(fd, data, len) < 0) goto fail;
  }
  int closed = close(fd);
  fd = -1;
  if (closed < 0 || (made && rename(tmp, path) < 0)) goto fail;
  free(tmp);
  return 0;
fail:
  saved = errno;
  if (fd >= 0) close(fd);
  if (made) unlink(tmp);
  free(tmp);
  snprintf(err, err_size, "cannot write %s: %s", path, strerror(saved));
  return -1;
}
