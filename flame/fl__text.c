/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__text: text as every room hands it on (fl__text.h): a valid UTF-8
 * copy for JSON and XML, a JSON string, a count of characters, a
 * comparison that orders NULL first. Readers, the model's totals, the
 * renderers and the views all write text that came from a profile, which
 * may hold any bytes. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fl__text.h"

/* The length of the valid UTF-8 sequence at s (at most n bytes), 0 if none
 * starts there. Rejects overlong forms, surrogates and code points past
 * U+10FFFF, as JSON and XML parsers do. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  if (s[0] < 0x80) return 1;
  size_t len;
  uint32_t cp;
  if (s[0] >= 0xc2 && s[0] <= 0xdf) {
    len = 2, cp = s[0] & 0x1f;
  } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
    len = 3, cp = s[0] & 0x0f;
  } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
    len = 4, cp = s[0] & 0x07;
  } else {
    return 0;
  }
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
      (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  /* U+FFFE and U+FFFF are not XML characters. */
  if (cp == 0xfffe || cp == 0xffff) return 0;
  return len;
}

char *fl__clean_text(const char *s, bool lines) {
  if (!s) s = "";
  size_t n = strlen(s);
  char *out = fl__xmalloc(n + 1, 1);
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0, j = 0;
  while (i < n) {
    size_t len = utf8_seq(u + i, n - i);
    if (u[i] == '\t' || u[i] == '\n' || u[i] == '\r') {
      out[j++] = lines ? (char)u[i] : ' ';
      i++;
    } else if (len == 0 || u[i] < 0x20 || u[i] == 0x7f) {
      out[j++] = '?';
      i++;
    } else {
      memcpy(out + j, s + i, len);
      i += len, j += len;
    }
  }
  out[j] = '\0';
  return out;
}

size_t fl__utf8_chars(const char *s) {
  size_t n = 0;
  for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

int fl__cmp_str(const char *a, const char *b) {
  if (a == b) return 0;
  if (!a) return -1;
  if (!b) return 1;
  return strcmp(a, b);
}

/* A JSON string of s: s as it is when it is valid UTF-8, else a cleaned
 * copy; json null for NULL. New. */
json_t *fl__json_text(const char *s) {
  if (!s) return fl__nonnull(json_null());
  json_t *j = json_string(s);
  if (j) return j;
  char *clean = fl__clean_text(s, false);
  j = fl__nonnull(json_string(clean));
  free(clean);
  return j;
}
