/* SPDX-License-Identifier: BSD-3-Clause */
/* term_picture: a PNG shown inside a terminal that draws pictures, for
 * `cflame --format png` to a terminal (docs/CLI.md, "Pictures in a
 * terminal").
 *
 * Two protocols, both base64 PNG in escape sequences: kitty's graphics
 * protocol (kitty, and terminals that set KITTY_WINDOW_ID or TERM=xterm-kitty,
 * such as Ghostty and WezTerm with it on) and iTerm2's inline images
 * (iTerm2, WezTerm, and others that say so in TERM_PROGRAM or
 * LC_TERMINAL). Sixel would need the picture re-encoded in its palette
 * format, which no library of the project does: a sixel-only terminal gets
 * the error that says what to do instead. */
#ifndef CFLAME_TERM_PICTURE_H
#define CFLAME_TERM_PICTURE_H

#include <stddef.h>
#include <stdio.h>

typedef enum term_picture_protocol {
  TERM_PICTURE_NONE,
  TERM_PICTURE_KITTY,
  TERM_PICTURE_ITERM2,
} term_picture_protocol_t;

/* The protocol the terminal of this process's environment draws pictures
 * with (CFLAME_TERM_PICTURE=kitty|iterm2|none overrides what the
 * environment says). */
term_picture_protocol_t term_picture_protocol(void);

/* Writes png (len bytes) to f in protocol p, then a newline. Returns 0, or
 * -1 with errno set. */
int term_picture_write(FILE *f, term_picture_protocol_t p, const char *png, size_t len);

#endif
