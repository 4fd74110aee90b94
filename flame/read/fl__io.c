/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__io: what the readers share (fl__io.h): lines and error messages,
 * the kind of code of a module, the frame cache, and gzip. fl_io.c
 * dispatches to the readers and reads and writes files; the readers
 * (fl_folded.c, fl_perfscript.c, fl_pprof.c) parse. */
#define _GNU_SOURCE
#include "fl__io.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fl__text.h"

/* ---- lines and errors ---- */

bool fl__blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!fl__is_space(s[i])) return false;
  return true;
}

int fl__io_fail_as(fl_io_error_t *err, fl_io_code_t code, const char *name, size_t line,
                   const char *fmt, ...) {
  err->code = code;
  snprintf(err->file, sizeof err->file, "%s", name ? name : "<input>");
  err->line = line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return -1;
}

int fl__io_budget_fail(fl_io_error_t *err, const char *name, const fl_budget_t *budget) {
  char why[sizeof err->message];
  fl_budget_message(budget, name ? name : "<input>", why, sizeof why);
  return fl__io_fail_as(
      err, budget->state == FL_BUDGET_CANCELLED ? FL_IO_ERR_CANCELLED : FL_IO_ERR_BUDGET, name, 0,
      "%s", why);
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
  for (size_t i = 0; i < FL__ARRAY_SIZE(system_dirs); i++)
    if (starts_with(m, n, system_dirs[i]) && memmem(m + b, n - b, ".so", 3)) return FL_FRAME_SYSTEM;
  return FL_FRAME_CELL;
}

bool fl__bare_library(const char *m) {
  return !strchr(m, '/') && (!strncmp(m, "lib", 3) || !strncmp(m, "ld-", 3)) &&
         (strstr(m, ".so.") || (strlen(m) > 3 && !strcmp(m + strlen(m) - 3, ".so")));
}

/* ---- JSON ---- */

/* What jansson holds per value, measured on jansson 2.14 with glibc's
 * malloc (a block's header included): an array with its first table of 8
 * slots, an object with its first hash table, and any other value with
 * its slot in its container. A string's bytes come on top: at most the
 * input's length in all. */
enum { JSON_ARRAY_BYTES = 144, JSON_OBJECT_BYTES = 320, JSON_VALUE_BYTES = 56 };

int fl__json_load(const char *data, size_t len, const char *name, fl_budget_t *budget, json_t **out,
                  fl_io_error_t *err) {
  *out = NULL;
  /* Counted before anything is allocated: containers, and values (at most
   * one per comma, plus one per container), outside strings. */
  size_t arrays = 0, objects = 0, values = 1;
  bool in_string = false;
  for (size_t i = 0; i < len; i++) {
    char c = data[i];
    if (in_string) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[': arrays++; break;
      case '{': objects++; break;
      case ',': values++; break;
      default: break;
    }
  }
  values += arrays + objects;
  size_t bytes = len;
  if (__builtin_add_overflow(bytes, arrays * (size_t)JSON_ARRAY_BYTES, &bytes) ||
      __builtin_add_overflow(bytes, objects * (size_t)JSON_OBJECT_BYTES, &bytes) ||
      __builtin_add_overflow(bytes, values * (size_t)JSON_VALUE_BYTES, &bytes))
    bytes = SIZE_MAX;
  if (fl_budget_charge(budget, bytes, values) < 0) return fl__io_budget_fail(err, name, budget);
  json_error_t je;
  /* jansson stops at 2048 levels of nesting, never on the stack's end. */
  json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return fl__io_fail_as(err, FL_IO_ERR_NOT_FORMAT, name, je.line > 0 ? (size_t)je.line : 0,
                          "not valid JSON: %s (at column %d)", je.text, je.column);
  *out = root;
  return 0;
}

void fl__json_quote(fl__buf_t *b, const char *s) {
  json_t *j = fl__json_text(s ? s : "");
  char *text = fl__nonnull(json_dumps(j, JSON_ENCODE_ANY));
  fl__buf_puts(b, text);
  free(text);
  json_decref(j);
}

void fl__json_info(fl__buf_t *b, const fl_profile_info_t *info, bool diff) {
  fl__buf_puts(b, "\"cflame\":{\"kind\":");
  fl__json_quote(b, fl_kind(info->kind)->name);
  fl__buf_puts(b, ",\"interval_ns\":");
  fl__buf_u64(b, fl_kind(info->kind)->time ? info->interval_ns : 0);
  if (fl_kind(info->kind)->allocs) fl__buf_printf(b, ",\"sample_rate\":%.17g", info->sample_rate);
  if (info->kind == FL_PROFILE_EVENT) {
    fl__buf_puts(b, ",\"event\":");
    fl__json_quote(b, info->event);
  }
  if (diff) fl__buf_puts(b, ",\"diff\":true");
  fl__buf_putc(b, '}');
}

int fl__json_read_info(const json_t *doc, const char *name, const char *format, fl_profile_t **out,
                       fl_io_error_t *err) {
  const json_t *meta = json_object_get(doc, "cflame");
  if (!meta) return 0;
  if (!json_is_object(meta))
    return fl__io_fail(err, name, 0, "its \"cflame\" member is not an object");
  if (json_is_true(json_object_get(meta, "diff")))
    return fl__io_fail(err, name, 0,
                       "this %s file holds a diff (its target and its baseline), not one "
                       "profile: read the two profiles the diff was made of",
                       format);
  const char *kind = json_string_value(json_object_get(meta, "kind"));
  int k = 0;
  while (kind && k < FL_PROFILE_N_KINDS && strcmp(fl_kind((fl_profile_kind_t)k)->name, kind)) k++;
  if (!kind || k == FL_PROFILE_N_KINDS)
    return fl__io_fail(err, name, 0,
                       "its \"cflame\" member names no kind of profile cflame knows (\"kind\": "
                       "\"cpu\", \"wall\", \"alloc_bytes\", ...)");
  const json_t *interval = json_object_get(meta, "interval_ns");
  const json_t *rate = json_object_get(meta, "sample_rate");
  if (interval && (!json_is_integer(interval) || json_integer_value(interval) < 0))
    return fl__io_fail(err, name, 0, "its \"interval_ns\" is not a whole number of nanoseconds");
  if (rate &&
      (!json_is_number(rate) || !(json_number_value(rate) > 0) || json_number_value(rate) > 1))
    return fl__io_fail(err, name, 0, "its \"sample_rate\" is not a probability in (0, 1]");
  fl_profile_t *p = fl_profile_new((fl_profile_kind_t)k);
  fl_profile_info_t *info = fl_profile_info(p);
  if (fl_kind(info->kind)->time && interval)
    info->interval_ns = (uint64_t)json_integer_value(interval);
  if (fl_kind(info->kind)->allocs) info->sample_rate = rate ? json_number_value(rate) : 1;
  const char *event = json_string_value(json_object_get(meta, "event"));
  if (info->kind == FL_PROFILE_EVENT && event)
    snprintf(info->event, sizeof info->event, "%s", event);
  *out = p;
  return 0;
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
      cap = fl__grown_to(cap, limit);
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
