/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__text: text from a profile, which may hold any bytes, as JSON, XML
 * and tables take it (fl__text.c); shared by every room. */
#ifndef FL__TEXT_H
#define FL__TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "fl__common.h"

/* A copy of s (NULL: "") that is valid UTF-8 without control characters,
 * for JSON and XML: each invalid byte and each control character becomes
 * '?', except tabs and line breaks, which stay when lines is true and
 * become spaces otherwise. New. */
char *fl__clean_text(const char *s, bool lines);

/* The number of characters (code points) of valid UTF-8 s. */
size_t fl__utf8_chars(const char *s);
/* A JSON string of s: s as it is when it is valid UTF-8, else a cleaned
 * copy; json null for NULL. New. */
json_t *fl__json_text(const char *s);
/* strcmp, with NULL before every string. */
int fl__cmp_str(const char *a, const char *b);

#endif
