#include "kn_strbuf.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reserve(kn_strbuf_t *sb, size_t extra) {
  if (extra > SIZE_MAX - sb->len - 1) fl__oom(0);
  sb->data = fl__grow(sb->data, &sb->cap, sb->len + extra + 1, 1);
}

void kn_strbuf_append(kn_strbuf_t *sb, const char *s, size_t n) {
  reserve(sb, n);
  if (n) memcpy(sb->data + sb->len, s, n);
  sb->len += n;
  sb->data[sb->len] = '\0';
}

void kn_strbuf_puts(kn_strbuf_t *sb, const char *s) { kn_strbuf_append(sb, s, strlen(s)); }

void kn_strbuf_putc(kn_strbuf_t *sb, char c) { kn_strbuf_append(sb, &c, 1); }

void kn_strbuf_vprintf(kn_strbuf_t *sb, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return;
  reserve(sb, (size_t)n);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  sb->len += (size_t)n;
}

void kn_strbuf_printf(kn_strbuf_t *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kn_strbuf_vprintf(sb, fmt, ap);
  va_end(ap);
}

void kn_strbuf_clear(kn_strbuf_t *sb) {
  sb->len = 0;
  if (sb->data) sb->data[0] = '\0';
}

char *kn_strbuf_steal(kn_strbuf_t *sb) {
  char *d = sb->data ? sb->data : fl__xstrdup("");
  sb->data = NULL;
  sb->len = sb->cap = 0;
  return d;
}

void kn_strbuf_free(kn_strbuf_t *sb) {
  free(sb->data);
  sb->data = NULL;
  sb->len = sb->cap = 0;
}

/* Lead bytes C0, C1 and F5..FF start no valid sequence; after E0, ED, F0
 * and F4 the second byte's range is narrower, or the sequence would be an
 * overlong form, a UTF-16 surrogate or past U+10FFFF, which jansson (and so
 * a message) refuses. */
char *kn_utf8_clean(const unsigned char *s, size_t n) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    size_t len = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    bool ok = len > 0 && i + len <= n && (len == 1 || (s[i + 1] >= lo && s[i + 1] <= hi));
    for (size_t j = 2; ok && j < len; j++)
      if ((s[i + j] & 0xC0) != 0x80) ok = false;
    if (ok) {
      if (c) kn_strbuf_append(&sb, (const char *)s + i, len);
      i += len;
    } else {
      kn_strbuf_puts(&sb, "\xef\xbf\xbd");
      i++;
    }
  }
  return kn_strbuf_steal(&sb);
}
