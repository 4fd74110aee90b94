/* SPDX-License-Identifier: BSD-3-Clause */
/* term_picture: see term_picture.h. */
#include "term_picture.h"

#include <stdlib.h>
#include <string.h>

#include "cflame/fl_render.h"

/* kitty's protocol takes a picture's base64 in chunks of at most 4,096
 * bytes, each in an escape sequence of its own: m=1 says more follow. */
#define KITTY_CHUNK 4096

static int env_is(const char *name, const char *value) {
  const char *v = getenv(name);
  return v && strcmp(v, value) == 0;
}

term_picture_protocol_t term_picture_protocol(void) {
  const char *forced = getenv("CFLAME_TERM_PICTURE");
  if (forced && *forced) {
    if (!strcmp(forced, "kitty")) return TERM_PICTURE_KITTY;
    if (!strcmp(forced, "iterm2")) return TERM_PICTURE_ITERM2;
    return TERM_PICTURE_NONE;
  }
  if (getenv("KITTY_WINDOW_ID") || env_is("TERM", "xterm-kitty") || env_is("TERM", "xterm-ghostty"))
    return TERM_PICTURE_KITTY;
  if (env_is("TERM_PROGRAM", "iTerm.app") || env_is("LC_TERMINAL", "iTerm2") ||
      env_is("TERM_PROGRAM", "WezTerm"))
    return TERM_PICTURE_ITERM2;
  return TERM_PICTURE_NONE;
}

int term_picture_write(FILE *f, term_picture_protocol_t p, const char *png, size_t len) {
  char *b64 = fl_picture_base64(png, len);
  size_t n = strlen(b64);
  if (p == TERM_PICTURE_ITERM2) {
    fprintf(f, "\033]1337;File=inline=1;size=%zu;preserveAspectRatio=1:%s\a\n", len, b64);
  } else {
    /* a=T: transmit and show; f=100: PNG. */
    size_t at = 0;
    do {
      size_t chunk = n - at < KITTY_CHUNK ? n - at : KITTY_CHUNK;
      fprintf(f, "\033_G%sm=%d;%.*s\033\\", at == 0 ? "a=T,f=100," : "", at + chunk < n, (int)chunk,
              b64 + at);
      at += chunk;
    } while (at < n);
    fputc('\n', f);
  }
  free(b64);
  return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}
