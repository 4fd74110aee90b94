/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__io: what the readers and writers of fl_io share (fl_io.c,
 * fl_folded.c, fl_perfscript.c, fl_pprof.c): walking the input line by
 * line, the error, the kind of code of a module, a cache from a frame's
 * text to its profile id (so that a frame that comes back on every line is
 * interned in the profile once), and gzip, all defined in fl__io.c; and the
 * readers' entry points, which fl_io.c dispatches to. Imports go one way:
 * the readers and fl_io.c include this header, and no reader calls into
 * fl_io.c. Internal (fl__). */
#ifndef FL__IO_H
#define FL__IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "cflame/fl_io.h"
#include "fl__common.h"

/* ---- lines ---- */

typedef struct fl__lines {
  const char *data;
  size_t len, pos;
  size_t lineno; /* of the line last returned, 1-based */
} fl__lines_t;

/* The next line, without its "\n" or "\r\n"; false at the end. */
static inline bool fl__next_line(fl__lines_t *it, const char **line, size_t *n) {
  if (it->pos >= it->len) return false;
  const char *s = it->data + it->pos;
  size_t rest = it->len - it->pos, k = 0;
  while (k < rest && s[k] != '\n') k++;
  it->pos += k < rest ? k + 1 : k;
  it->lineno++;
  if (k && s[k - 1] == '\r') k--;
  *line = s;
  *n = k;
  return true;
}

/* Perl's \s, \d and \w on bytes, as stackcollapse-perf.pl's patterns use
 * them. */
static inline bool fl__is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
static inline bool fl__is_digit(char c) {
  return c >= '0' && c <= '9';
}
static inline bool fl__is_word(char c) {
  return fl__is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* A blank line: empty or only whitespace. */
bool fl__blank(const char *s, size_t n);

/* Fills err: code, file from name, line, and the printf-style message.
 * Returns -1 (for "return fl__io_fail_as(...)"). */
int fl__io_fail_as(fl_io_error_t *err, fl_io_code_t code, const char *name, size_t line,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* fl__io_fail_as with FL_IO_ERR_FORMAT: the input breaks a rule of its
 * format (the readers' most common error). */
#define fl__io_fail(err, name, line, ...) \
  fl__io_fail_as((err), FL_IO_ERR_FORMAT, (name), (line), __VA_ARGS__)

/* The error of input name whose budget stopped its reading: what
 * fl_budget_message says, FL_IO_ERR_BUDGET or FL_IO_ERR_CANCELLED.
 * Returns -1. */
int fl__io_budget_fail(fl_io_error_t *err, const char *name, const fl_budget_t *budget);

/* How often a reader's loop over an input's frames looks at the cancel
 * flag when nothing else charges: every this many frames (a mask). */
#define FL__IO_CANCEL_EVERY 0xffff

/* The start of a line, for an error message: at most 60 bytes, control
 * characters as '?', "…" when cut. */
void fl__excerpt(const char *s, size_t n, char out[80]);

/* The kind of code of a module, by its file name as perf prints it, and
 * of an address in it: FL_FRAME_KERNEL for "[kernel.*]", "...vmlinux",
 * and a bracketed module other than "[unknown]" at a kernel address (addr
 * >= 0xffff000000000000); FL_FRAME_SYSTEM for a shared library under
 * /usr/lib or /lib (or their lib64, lib32); FL_FRAME_CELL, the program's
 * own code, otherwise (also for no module, n 0). */
uint32_t fl__module_kind(const char *module, size_t n, uint64_t addr);

/* A bare shared library's name, as cflame's kernel records its modules:
 * "libc.so.6", "ld-linux-x86-64.so.2" (no directory). pprof's readers take
 * such a mapping for a system library; cflame writes a module of that
 * shape that is not one (a program's own libfoo.so, read from perf script)
 * as "./libfoo.so", and reads the "./" off again (fl_pprof.c). */
bool fl__bare_library(const char *m);

/* ---- JSON ---- */

/* The JSON document data[0, len) (speedscope's files, trace events), as
 * jansson's values: *out new. What jansson will hold is estimated from the
 * input's containers and values and charged to budget before it parses
 * (an input of "[[],[],...]" takes some fifty times its size), so a
 * document past the budget is refused before it takes the memory.
 * Returns 0, or -1 with err: the budget's refusal, or what jansson found
 * wrong, with its line. */
int fl__json_load(const char *data, size_t len, const char *name, fl_budget_t *budget, json_t **out,
                  fl_io_error_t *err);

/* s as a JSON string (quoted, escaped; not UTF-8: cleaned), appended. */
void fl__json_quote(fl__buf_t *b, const char *s);
/* What cflame's JSON formats say of the profile beside their own fields,
 * which speedscope and trace viewers ignore and cflame reads back:
 * "cflame":{"kind":"cpu","interval_ns":N[,"sample_rate":R][,"event":E]
 * [,"diff":true]}, appended (a member, without a comma). */
void fl__json_info(fl__buf_t *b, const fl_profile_info_t *info, bool diff);
/* That member of doc read back: *out a new profile of its kind, interval
 * and sample rate; left NULL when doc has none (another tool's file).
 * A diff, or a member that is not what cflame writes, is an error naming
 * the format. Returns 0 or -1 with err. */
int fl__json_read_info(const json_t *doc, const char *name, const char *format, fl_profile_t **out,
                       fl_io_error_t *err);

/* ---- the frame cache ---- */

/* Maps a byte string (a frame's text, as the reader sees it) to the id the
 * profile gave its frame: an fl__index over the keys, which are copied
 * back to back into one arena. A zeroed cache is empty. */
typedef struct fl__frame_cache {
  struct fl__cached *entries; /* n, in order of fl__frame_cache_put */
  size_t n, cap;
  fl__index_t index;
  char *arena; /* every key, back to back */
  size_t arena_len, arena_cap;
} fl__frame_cache_t;

void fl__frame_cache_free(fl__frame_cache_t *c);
/* True and *id when key is known. */
bool fl__frame_cache_get(const fl__frame_cache_t *c, const char *key, size_t n, uint32_t *id);
/* Remembers key -> id; key must not be known yet. */
void fl__frame_cache_put(fl__frame_cache_t *c, const char *key, size_t n, uint32_t id);

/* ---- gzip (zlib, with the library's allocators) ---- */

/* The next capacity of a buffer of cap bytes that may hold limit bytes at
 * most: twice as much, but never more than limit. */
static inline size_t fl__grown_to(size_t cap, size_t limit) {
  return cap > limit / 2 ? limit : cap * 2;
}

/* The gzip file of data[0, len): new buffer of *out_len bytes. */
char *fl__gzip(const void *data, size_t len, size_t *out_len);

/* Does data start with gzip's magic bytes (1f 8b)? */
static inline bool fl__is_gzip(const void *data, size_t len) {
  const unsigned char *d = data;
  return len >= 2 && d[0] == 0x1f && d[1] == 0x8b;
}

/* What the gzip file data[0, len) holds (one member, or several back to
 * back, as gzip allows), max_out bytes at most: 0 and a new buffer *out of
 * *out_len bytes (with a NUL after them); -1 with what was wrong in why:
 * not gzip data, a damaged or truncated stream, bytes after its end that
 * are not another member; or -2 when it unzips to more than max_out bytes
 * (why untouched), found once max_out + 1 bytes came out: the buffer never
 * grows past max_out + 2 bytes. */
int fl__gunzip(const void *data, size_t len, size_t max_out, char **out, size_t *out_len, char *why,
               size_t why_size);

/* ---- the readers, into an empty profile of their own ---- */

/* Each returns 0, or -1 with err (about the input). What the input asks
 * for is charged to budget, the profile's growth too (the readers set it
 * as the profile's, fl_profile_set_budget), and past it, or once it is
 * cancelled, the reading stops with fl__io_budget_fail; out of memory
 * otherwise aborts, see fl__common.h. They add samples and may leave the
 * profile half filled on error (the caller throws it away). */
int fl__read_folded(fl_profile_t *p, const char *data, size_t len, const char *name,
                    fl_budget_t *budget, fl_io_error_t *err);
int fl__read_perf_script(fl_profile_t *p, const char *data, size_t len, const char *name,
                         fl_budget_t *budget, fl_io_error_t *err);
/* pprof says itself which kind of profile it is: *out is a new profile of
 * that kind on success (NULL on error). gzipped is for the messages: the
 * bytes given are the unzipped profile.proto message. */
int fl__read_pprof(fl_profile_t **out, const char *data, size_t len, const char *name, bool gzipped,
                   fl_budget_t *budget, fl_io_error_t *err);

/* speedscope's file format (fl_speedscope.c) and Chrome's trace events
 * (fl_trace_read.c), from their JSON document (fl__json_load'ed by
 * fl_io.c, which tells them apart); *out a new profile of the kind the
 * file says (cflame's own say it; others' are CPU profiles). */
int fl__read_speedscope(fl_profile_t **out, const json_t *doc, const char *name,
                        fl_budget_t *budget, fl_io_error_t *err);
int fl__read_trace(fl_profile_t **out, const json_t *doc, const char *name, fl_budget_t *budget,
                   fl_io_error_t *err);

/* Does this line start a perf script sample (an event header)? On true,
 * comm_len is the length of the process name, and tid/pid digits are
 * found as stackcollapse-perf.pl finds them. */
typedef struct fl__perf_header {
  size_t comm_len;
  const char *pid, *tid; /* digits, not NUL-terminated; tid NULL when absent */
  size_t pid_len, tid_len;
} fl__perf_header_t;
bool fl__perf_header(const char *s, size_t n, fl__perf_header_t *h);
/* Does a header end in an event name, as stackcollapse-perf.pl's
 * /:\s*(\d+)*\s+(\S+):\s*$/ finds it ("...: 250000 cpu-clock:ppp: ")? ev
 * (may be NULL) gets the name ("cpu-clock:ppp") and the period, if any. */
typedef struct fl__perf_event {
  const char *name; /* not NUL-terminated */
  size_t name_len;
  uint64_t period; /* 0 when the header has none */
} fl__perf_event_t;
bool fl__perf_event(const char *s, size_t n, fl__perf_event_t *ev);
/* Is this line a perf script frame line ("\t4011d6 main+0x16 (/tmp/prog)")? */
bool fl__perf_frame_line(const char *s, size_t n);

/* The option input_format='s choices ("auto|folded|...") and help, from
 * fl_io.c's table of kinds (fl_options.c's row points here). */
extern char fl__input_kind_choices[128];
extern char fl__input_kind_help[512];

#endif
