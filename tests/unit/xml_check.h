/* SPDX-License-Identifier: BSD-3-Clause */
/* A minimal XML well-formedness check, shared by the renderers' tests
 * (test_render, test_render_diff). Header-only: static functions. */
#ifndef CFLAME_XML_CHECK_H
#define CFLAME_XML_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include "fl__common.h"

static inline const char *xml_entity(const char **pp) {
  const char *p = *pp; /* at '&' */
  static const char *const names[] = {"amp;", "lt;", "gt;", "apos;", "quot;"};
  for (size_t i = 0; i < FL__ARRAY_SIZE(names); i++) {
    size_t n = strlen(names[i]);
    if (strncmp(p + 1, names[i], n) == 0) {
      *pp = p + 1 + n;
      return NULL;
    }
  }
  if (p[1] == '#') {
    const char *q = p + 2;
    if (*q == 'x') q++;
    const char *digits = q;
    while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f') || (*q >= 'A' && *q <= 'F')) q++;
    if (q > digits && *q == ';') {
      *pp = q + 1;
      return NULL;
    }
  }
  return "bad entity reference";
}

static inline bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == ':' || c == '.';
}

/* Enough for what fl_svg writes and for what would break it: one root
 * element, tags closed in order, CDATA sections (the script's) closed, attribute values quoted and
 * free of '<', known entity references only, no bare '&' or '<' in text, no control characters,
 * valid UTF-8. Returns NULL, or what is wrong. */
static inline const char *xml_check(const char *s) {
  char stack[64][32];
  int depth = 0, roots = 0;
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; u[i]; i++) {
    if (u[i] < 0x20 && u[i] != '\n' && u[i] != '\t' && u[i] != '\r') return "control character";
    if (u[i] >= 0x80) { /* validate UTF-8 lead and continuation bytes */
      int len = u[i] >= 0xf0 ? 4 : u[i] >= 0xe0 ? 3 : u[i] >= 0xc2 ? 2 : 0;
      if (len == 0 || u[i] > 0xf4) return "invalid UTF-8";
      for (int k = 1; k < len; k++)
        if ((u[i + k] & 0xc0) != 0x80) return "invalid UTF-8";
      i += len - 1;
    }
  }
  const char *p = s;
  if (strncmp(p, "<?xml", 5) == 0) {
    p = strstr(p, "?>");
    if (!p) return "unterminated XML declaration";
    p += 2;
  }
  while (*p) {
    if (strncmp(p, "<![CDATA[", 9) == 0) {
      const char *end = strstr(p + 9, "]]>");
      if (!end) return "unterminated CDATA section";
      if (depth == 0) return "CDATA outside the root element";
      p = end + 3;
      continue;
    }
    if (*p == '<') {
      if (p[1] == '/') {
        const char *q = p + 2, *name = q;
        while (name_char(*q)) q++;
        size_t n = (size_t)(q - name);
        if (*q != '>') return "bad end tag";
        if (depth == 0 || strlen(stack[depth - 1]) != n || strncmp(stack[depth - 1], name, n))
          return "end tag does not match";
        depth--;
        p = q + 1;
        continue;
      }
      const char *q = p + 1, *name = q;
      while (name_char(*q)) q++;
      size_t n = (size_t)(q - name);
      if (n == 0 || n >= sizeof stack[0]) return "bad tag name";
      if (depth == 0 && ++roots > 1) return "more than one root element";
      for (;;) { /* attributes */
        while (*q == ' ' || *q == '\n' || *q == '\t') q++;
        if (*q == '>' || (q[0] == '/' && q[1] == '>')) break;
        const char *attr = q;
        while (name_char(*q)) q++;
        if (q == attr || *q != '=') return "bad attribute";
        char quote = *++q;
        if (quote != '\'' && quote != '"') return "unquoted attribute value";
        for (q++; *q != quote; q++) {
          if (!*q || *q == '<') return "bad attribute value";
          if (*q == '&') {
            const char *why = xml_entity(&q);
            if (why) return why;
            q--;
          }
        }
        q++;
        if (*q != ' ' && *q != '>' && *q != '/' && *q != '\n') return "attributes run together";
      }
      if (*q == '>') {
        if (depth == (int)(FL__ARRAY_SIZE(stack))) return "too deep";
        memcpy(stack[depth], name, n);
        stack[depth++][n] = '\0';
        p = q + 1;
      } else {
        p = q + 2;
      }
      continue;
    }
    if (*p == '&') {
      const char *why = xml_entity(&p);
      if (why) return why;
      continue;
    }
    if (*p == '>' && p > s && p[-1] == ']') return "']]>' in text";
    if (depth == 0 && *p != ' ' && *p != '\n' && *p != '\t' && *p != '\r')
      return "text outside the root element";
    p++;
  }
  if (depth != 0) return "unclosed element";
  if (roots != 1) return "no root element";
  return NULL;
}

#endif
