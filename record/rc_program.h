/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_program: the program `cflame record` is asked to run, found and
 * checked before it runs, so that what cannot be recorded is said at
 * once, naming the program and what is wrong, instead of a run without a
 * profile. */
#ifndef RC_PROGRAM_H
#define RC_PROGRAM_H

#include <stddef.h>

/* The exit statuses of a program that cannot be run, as a shell gives
 * them. */
#define RC_NOT_FOUND 127
#define RC_CANNOT_RUN 126

/* Finds name as execvp does (a name with a '/' as it is, else the first
 * executable regular file of that name along PATH), and checks that the
 * preloaded library can record it: an executable regular file, neither
 * set-user-ID nor set-group-ID (the dynamic loader ignores LD_PRELOAD for
 * them), an ELF executable for x86-64 that names a program interpreter
 * (PT_INTERP: a statically linked program never runs the dynamic loader
 * that preloads). A "#!" script is checked through its interpreter.
 * Returns 0 with *path (new: free it), else RC_NOT_FOUND or RC_CANNOT_RUN
 * with err naming the program and what is wrong. */
int rc_program_find(const char *name, char **path, char *err, size_t err_size);

#endif
