/* SPDX-License-Identifier: BSD-3-Clause */
#include "kn_text.h"

#include <stdbool.h>
#include <string.h>

/* Lead bytes C0, C1 and F5..FF start no valid sequence; after E0, ED, F0
 * and F4 the second byte's range is narrower, or the sequence would be an
 * overlong form, a UTF-16 surrogate or past U+10FFFF, which jansson (and so
 * a message) refuses. */
char *kn_utf8_clean(const unsigned char *s, size_t n) {
  fl__buf_t sb = FL__BUF_INIT;
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    size_t len = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    bool ok = len > 0 && i + len <= n && (len == 1 || (s[i + 1] >= lo && s[i + 1] <= hi));
    for (size_t j = 2; ok && j < len; j++)
      if ((s[i + j] & 0xC0) != 0x80) ok = false;
    if (ok) {
      if (c) fl__buf_add(&sb, (const char *)s + i, len);
      i += len;
    } else {
      fl__buf_puts(&sb, "\xef\xbf\xbd");
      i++;
    }
  }
  return fl__buf_take(&sb);
}
