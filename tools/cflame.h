/* What `cflame record` (record/rc_record.c) uses of the cflame command: its
 * drawing, given a profile made in memory instead of read from a file, so
 * that every option and output format of the command (docs/CLI.md) draws
 * a recording too, through the same writer. */
#ifndef CFLAME_H
#define CFLAME_H

#include <stdarg.h>

#include "cflame/fl_profile.h"

typedef struct cflame_given {
  const fl_profile_t *profile; /* borrowed; NULL: only check the options */
  const char *name;            /* the INPUT that stands for it: this very pointer in argv */
  const char *note;            /* the line under the title; NULL: the command's own */
} cflame_given_t;

/* Runs `cflame ARGS...` (argv[0] is the command's name) with given's name
 * read as its profile. Returns the command's exit status; with a NULL
 * profile, -1 when the options are good (nothing is drawn), else 0 after
 * --help or --version or 2 for a bad command line, having said why. argv
 * may be permuted and its strings changed. */
int cflame_draw(int argc, char **argv, const cflame_given_t *given);

/* The command's messages on standard error: "WHO: MESSAGE", and the line
 * hint after it (NULL: none), such as where the options are listed. */
void cflame_vsay(const char *who, const char *hint, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
