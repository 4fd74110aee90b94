/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_say: the command line's messages on standard error, for `cflame` and
 * `cflame record` alike: "WHO: MESSAGE", then a hint line where one helps
 * (such as where the options are listed). */
#ifndef RC_SAY_H
#define RC_SAY_H

#include <stdarg.h>

/* Who speaks, and the hint a bad command line gets. */
typedef struct rc_voice {
  const char *who;        /* "cflame record" */
  const char *usage_hint; /* "(cflame record --help lists its options)" */
} rc_voice_t;

/* "WHO: MESSAGE", and hint after it (NULL: none). */
void rc_vsay(const rc_voice_t *v, const char *hint, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
void rc_say(const rc_voice_t *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A bad command line: the message and v's usage hint. Returns 2, the exit
 * status of a bad command line. */
int rc_usage_error(const rc_voice_t *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
