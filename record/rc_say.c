/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_say: the command line's messages (see rc_say.h). */
#include "rc_say.h"

#include <stdio.h>

void rc_vsay(const rc_voice_t *v, const char *hint, const char *fmt, va_list ap) {
  fprintf(stderr, "%s: ", v->who);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  if (hint) fprintf(stderr, "%s\n", hint);
}

void rc_say(const rc_voice_t *v, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rc_vsay(v, NULL, fmt, ap);
  va_end(ap);
}

int rc_usage_error(const rc_voice_t *v, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rc_vsay(v, v->usage_hint, fmt, ap);
  va_end(ap);
  return 2;
}
