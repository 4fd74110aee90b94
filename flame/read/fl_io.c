/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_io: reading a profile, whichever of the five formats it is (the
 * dispatch to the readers); which output a file name asks for; reading and
 * writing files, a file written whole or not at all. What the readers
 * share (lines, errors, gzip) is fl__io.c's.
 *
 * A file is read only when it is a regular one, up to a limit (see
 * fl_io.h), whole (mapped), unzipped when it starts with gzip's magic
 * bytes (up to the same limit), its kind told when asked to (binary, with
 * a NUL byte: pprof; JSON: by its members, see json_kind; text: from its
 * first lines, see detect_kind), parsed into a profile of its own by
 * fl_folded.c, fl_perfscript.c, fl_pprof.c, fl_speedscope.c or fl_trace_read.c,
 * and merged into the caller's profile only when all of it parsed: an
 * error leaves the caller's profile as it was. */
#define _GNU_SOURCE
#include "cflame/fl_io.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>
#include <unistd.h>

#include "fl__io.h"

/* The input kinds: the word that asks for each (input_format=, the
 * command's --input-format), and the name messages give it. In
 * fl_input_kind_t's order. */
static const struct {
  const char *word, *name;
} input_kinds[] = {
    [FL_INPUT_AUTO] = {"auto", "told by the content"},
    [FL_INPUT_FOLDED] = {"folded", "folded stacks"},
    [FL_INPUT_PERF_SCRIPT] = {"perf", "perf script"},
    [FL_INPUT_PPROF] = {"pprof", "pprof"},
    [FL_INPUT_SPEEDSCOPE] = {"speedscope", "speedscope"},
    [FL_INPUT_TRACE] = {"trace", "trace events"},
};

const char *fl_input_kind_name(fl_input_kind_t kind) {
  return (size_t)kind < FL__ARRAY_SIZE(input_kinds) && kind != FL_INPUT_AUTO
             ? input_kinds[kind].name
             : "auto";
}

int fl_input_kind_parse(const char *word, fl_input_kind_t *kind) {
  for (size_t i = 0; i < FL__ARRAY_SIZE(input_kinds); i++)
    if (!strcmp(word, input_kinds[i].word)) {
      *kind = (fl_input_kind_t)i;
      return 0;
    }
  return -1;
}

/* The option input_format='s choices and help (fl_options.c's row points
 * here) and fl_input_kinds' list, written from the table before main
 * runs: the row is const like the rest, and the texts are never written
 * while a thread may read them. */
char fl__input_kind_choices[128];
char fl__input_kind_help[512];
static char input_kinds_list[128];

__attribute__((constructor)) static void write_input_kind_texts(void) {
  size_t choices = 0, list = 0, help = 0;
  help = (size_t)snprintf(fl__input_kind_help, sizeof fl__input_kind_help, "the inputs' format (");
  for (size_t i = 0; i < FL__ARRAY_SIZE(input_kinds); i++) {
    const char *w = input_kinds[i].word, *name = input_kinds[i].name;
    choices += (size_t)snprintf(fl__input_kind_choices + choices,
                                sizeof fl__input_kind_choices - choices, "%s%s", i ? "|" : "", w);
    list += (size_t)snprintf(input_kinds_list + list, sizeof input_kinds_list - list, "%s%s",
                             i ? ", " : "", w);
    if (strcmp(w, name))
      help += (size_t)snprintf(fl__input_kind_help + help, sizeof fl__input_kind_help - help,
                               "%s%s: %s", i ? "; " : "", w, name);
  }
  help += (size_t)snprintf(fl__input_kind_help + help, sizeof fl__input_kind_help - help, ")");
  /* the buffers are the table's to size */
  if (choices >= sizeof fl__input_kind_choices || list >= sizeof input_kinds_list ||
      help >= sizeof fl__input_kind_help)
    abort();
}

const char *fl_input_kinds(void) {
  return input_kinds_list;
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

/* A JSON document: after whitespace (and a UTF-8 byte order mark), "{"
 * then a string or "}", or "[" then "{" or "]". A folded line never
 * starts so ("[unknown];main 1" has a letter after its "["). */
static bool json_start(const char *data, size_t len) {
  size_t i = len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3) ? 3 : 0;
  while (i < len && fl__is_space(data[i])) i++;
  if (i >= len || (data[i] != '{' && data[i] != '[')) return false;
  char open = data[i++];
  while (i < len && fl__is_space(data[i])) i++;
  return i < len &&
         (open == '{' ? data[i] == '"' || data[i] == '}' : data[i] == '{' || data[i] == ']');
}

/* Which JSON format doc is: speedscope's (an object with "profiles" or
 * "shared") or trace events (an object with "traceEvents", or an array),
 * else FL_INPUT_AUTO. */
static fl_input_kind_t json_kind(const json_t *doc) {
  if (json_is_array(doc) || json_object_get(doc, "traceEvents")) return FL_INPUT_TRACE;
  if (json_object_get(doc, "profiles") || json_object_get(doc, "shared"))
    return FL_INPUT_SPEEDSCOPE;
  return FL_INPUT_AUTO;
}

/* Reads the JSON formats: doc parsed once, told apart, read into a new
 * *out. */
static int read_json(fl_profile_t **out, const char *data, size_t len, const char *name,
                     fl_input_kind_t *kind, fl_budget_t *budget, fl_io_error_t *err) {
  json_t *doc;
  if (fl__json_load(data, len, name, budget, &doc, err) < 0) return -1;
  if (*kind == FL_INPUT_AUTO) *kind = json_kind(doc);
  int rc;
  if (*kind == FL_INPUT_SPEEDSCOPE)
    rc = fl__read_speedscope(out, doc, name, budget, err);
  else if (*kind == FL_INPUT_TRACE)
    rc = fl__read_trace(out, doc, name, budget, err);
  else
    rc = fl__io_fail_as(err, FL_IO_ERR_NOT_FORMAT, name, 0,
                        "a JSON document of no format cflame reads: speedscope's file format is "
                        "an object with \"profiles\" and \"shared\", the trace-event format an "
                        "object with \"traceEvents\" (or the array of events)");
  json_decref(doc);
  return rc;
}

/* ---- reading ---- */

/* Can what is in scratch go into p? An empty p takes scratch's kind and
 * allocation details; otherwise they must agree. Returns 0, or -1 with
 * err. */
static int take_kind(fl_profile_t *p, const fl_profile_t *scratch, const char *name,
                     fl_io_error_t *err) {
  fl_profile_info_t *info = fl_profile_info(p);
  const fl_profile_info_t *in = fl_profile_info_const(scratch);
  if (fl_profile_n_samples(p) == 0) {
    info->kind = in->kind;
    if (fl_kind(in->kind)->allocs) info->sample_rate = in->sample_rate;
    return 0;
  }
  const fl_kind_info_t *have = fl_kind(info->kind), *add = fl_kind(in->kind);
  if (strcmp(have->profile, add->profile) != 0)
    return fl__io_fail_as(err, FL_IO_ERR_CANNOT_ADD, name, 0, "cannot add %s, %s, to %s", name,
                          add->profile, have->profile);
  if (!fl_kind_comparable(info->kind, in->kind))
    return fl__io_fail_as(err, FL_IO_ERR_CANNOT_ADD, name, 0,
                          "cannot add %s, whose weights are %s, to a profile whose weights are %s",
                          name, add->weighs, have->weighs);
  return 0;
}

/* Reads the unzipped input (gzipped says whether it was zipped) into a
 * profile of its own, then into p, under a frame named root when root is
 * not NULL. */
static int read_plain(fl_profile_t *p, const char *data, size_t len, const char *name, bool gzipped,
                      const char *root, fl_input_kind_t kind, fl_budget_t *budget,
                      fl_input_kind_t *kind_out, fl_io_error_t *err) {
  fl_profile_t *scratch = NULL;
  const char *nul = len ? memchr(data, '\0', len) : NULL;
  size_t first = 0;
  bool json = json_start(data, len);
  fl_input_kind_t detected = binary_start(data, len, gzipped) ? FL_INPUT_PPROF
                             : json                           ? FL_INPUT_AUTO
                                                              : detect_kind(data, len, &first);
  if (kind == FL_INPUT_AUTO) kind = detected;
  if (kind_out) *kind_out = kind;
  if (nul && kind != FL_INPUT_PPROF) {
    size_t line = 1;
    for (const char *q = data; q < nul; q++) line += *q == '\n';
    return fl__io_fail_as(err, FL_IO_ERR_NOT_TEXT, name, line,
                          "a NUL byte: this is not text (expected %s)",
                          kind == FL_INPUT_AUTO ? "JSON" : fl_input_kind_name(kind));
  }
  int rc;
  if (kind == FL_INPUT_PPROF) {
    rc = fl__read_pprof(&scratch, data, len, name, gzipped, budget, err);
  } else if (kind == FL_INPUT_AUTO || kind == FL_INPUT_SPEEDSCOPE || kind == FL_INPUT_TRACE) {
    rc = read_json(&scratch, data, len, name, &kind, budget, err);
    if (kind_out) *kind_out = kind;
  } else {
    scratch = fl_profile_new(FL_PROFILE_CPU);
    fl_profile_set_budget(scratch, budget);
    rc = kind == FL_INPUT_PERF_SCRIPT ? fl__read_perf_script(scratch, data, len, name, budget, err)
                                      : fl__read_folded(scratch, data, len, name, budget, err);
  }
  if (rc < 0) {
    /* Detected as folded, and its very first line is not: say both what
     * folded stacks and what perf script text look like. */
    if (detected == FL_INPUT_FOLDED && kind == FL_INPUT_FOLDED && err->line != 0 &&
        err->line == first && err->code == FL_IO_ERR_NOT_FORMAT) {
      char found[80];
      fl__lines_t it = {.data = data, .len = len};
      const char *s = NULL;
      size_t n = 0;
      while (it.lineno < first && fl__next_line(&it, &s, &n)) {
      }
      fl__excerpt(s, n, found);
      fl__io_fail_as(err, FL_IO_ERR_NOT_FORMAT, name, first,
                     "neither folded stacks nor perf script output%s: found \"%s\"; a folded "
                     "line is \"frame;frame;...;frame COUNT\" (COUNT a non-negative integer), "
                     "a perf script sample starts with a header such as \"prog 1234 "
                     "5678.901234: 250000 cpu-clock:\" followed by frame lines",
                     gzipped ? " (once unzipped)" : "", found);
    }
    goto fail;
  }
  if (take_kind(p, scratch, name, err) < 0) goto fail;
  /* Merged, it is copied once more: at most what the scratch profile
   * holds. */
  if (fl_budget_charge(budget, fl_profile_bytes(scratch), 0) < 0) {
    fl__io_budget_fail(err, name, budget);
    goto fail;
  }
  fl_profile_info_t *info = fl_profile_info(p);
  if (!fl_profile_merge_fits(p, scratch)) {
    fl__io_fail_as(err, FL_IO_ERR_CANNOT_ADD, name, 0,
                   "the counts of %s and of the profile it is added to add up to more than %" PRIu64
                   ", the most a profile holds (counted in the finer interval when their "
                   "intervals differ)",
                   name, UINT64_MAX);
    goto fail;
  }
  /* takes the interval when p has none */
  fl_profile_merge_under(p, scratch,
                         root ? &(fl_frame_t){.func = root, .flags = FL_FRAME_ROOT} : NULL);
  const fl_profile_info_t *read = fl_profile_info_const(scratch);
  if (!info->taken_unix) info->taken_unix = read->taken_unix;
  /* info sums the inputs' durations; each keeps its own */
  if (read->cpu_seconds > 0 || read->wall_seconds > 0)
    fl_profile_add_run(p, name, read->cpu_seconds, read->wall_seconds);
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
    for (size_t i = 0; errno == 0 && n > 0 && i < FL__ARRAY_SIZE(units); i++) {
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
  return fl__io_fail_as(
      err, FL_IO_ERR_TOO_LARGE, name, 0, "%s %s more than the limit of %s on an input%s%s", subject,
      what, limit, o->raise_with ? "; raise it with " : "", o->raise_with ? o->raise_with : "");
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
  fl_budget_t own;
  fl_budget_init(&own, 0);
  fl_budget_t *budget = o->budget ? o->budget : &own;
  /* The input itself is held while it is read, and unzipped once more. */
  if (fl_budget_charge(budget, len, 0) < 0) return fl__io_budget_fail(err, name, budget);
  int rc;
  if (!fl__is_gzip(data, len)) {
    rc = read_plain(p, data, len, name, false, o->root, o->kind, budget, kind_out, err);
    goto done;
  }
  char *plain, why[200];
  size_t plain_len;
  switch (fl__gunzip(data, len, o->max_bytes, &plain, &plain_len, why, sizeof why)) {
    case 0:
      if (fl_budget_charge(budget, plain_len, 0) == 0) break;
      free(plain);
      return fl__io_budget_fail(err, name, budget);
    case -2: return past_limit(err, name, name, "is gzip data that unzips to", o);
    default:
      return fl__io_fail_as(err, FL_IO_ERR_GZIP, name, 0,
                            "%s starts as a gzip file (as pprof profiles do), but %s", name, why);
  }
  rc = read_plain(p, plain, plain_len, name, true, o->root, o->kind, budget, kind_out, err);
  free(plain);
done:
  /* What a file holds may name any file on this machine: never trusted
   * as a recording of this process's (fl_profile_info_t.recorded_here). */
  if (rc == 0) fl_profile_info(p)->recorded_here = false;
  return rc;
}

/* opts, or the defaults when NULL; a max_bytes of 0 is the default. */
static fl_read_opts_t opts_or_defaults(const fl_read_opts_t *opts) {
  fl_read_opts_t o;
  if (opts)
    o = *opts;
  else
    fl_read_opts_init(&o);
  if (!o.max_bytes) o.max_bytes = FL_INPUT_LIMIT_DEFAULT;
  return o;
}

int fl_read_profile_opts(fl_profile_t *p, const char *data, size_t len, const char *name,
                         const fl_read_opts_t *opts, fl_input_kind_t *kind_out,
                         fl_io_error_t *err) {
  fl_read_opts_t o = opts_or_defaults(opts);
  return read_profile(p, data, len, name, &o, kind_out, err);
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
  return fl__io_fail_as(err, FL_IO_ERR_NOT_REGULAR, name, 0,
                        "%s is %s, not a regular file: only regular files are read%s", name,
                        file_type(mode), o->stdin_dash ? ", or - for standard input" : "");
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
      cap = fl__grown_to(cap, limit);
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
  fl_read_opts_t o = opts_or_defaults(opts);
  const bool is_stdin = o.stdin_dash && strcmp(path, "-") == 0;
  const char *name = is_stdin ? "<stdin>" : path;
  int fd = STDIN_FILENO, rc = -1;
  char *data = NULL;
  size_t len = 0;
  memset(err, 0, sizeof *err);
  if (kind_out) *kind_out = o.kind;
  if (!is_stdin) {
    /* Looked at before it is opened: opening a FIFO waits for a writer,
     * and opening a device may do something of its own. */
    struct stat st;
    if (stat(path, &st) < 0)
      return fl__io_fail_as(err, FL_IO_ERR_SYSTEM, name, 0, "cannot open %s: %s", name,
                            strerror(errno));
    if (!S_ISREG(st.st_mode)) return not_regular(err, name, st.st_mode, &o);
    /* O_NONBLOCK: should path have become a FIFO since, open() does not
     * wait for it; fstat then says so. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
      return fl__io_fail_as(err, FL_IO_ERR_SYSTEM, name, 0, "cannot open %s: %s", name,
                            strerror(errno));
    if (fstat(fd, &st) < 0) {
      fl__io_fail_as(err, FL_IO_ERR_SYSTEM, name, 0, "cannot read %s: %s", name, strerror(errno));
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
  }
  /* Read, not mapped: a mapped file that someone truncates while it is
   * parsed raises SIGBUS, where a read just ends early and the parse says
   * what is wrong with what it got. */
  switch (read_all(fd, o.max_bytes, &data, &len)) {
    case 0: break;
    case -2: past_limit(err, name, is_stdin ? "standard input" : name, "holds", &o); goto done;
    default:
      fl__io_fail_as(err, FL_IO_ERR_SYSTEM, name, 0, "cannot read %s: %s", name, strerror(errno));
      goto done;
  }
  rc = read_profile(p, data, len, name, &o, kind_out, err);
done:
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
  bool exists = stat(path, &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
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
    /* The mode of the file it replaces, so that a private file stays
     * private; else the mode creat() would have given it (mkstemp's file
     * is the owner's alone). Where the file system keeps no modes this
     * fails, and that is no error. */
    fchmod(fd, exists ? st.st_mode & 07777 : 0666 & ~current_umask());
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
