/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_record: `cflame record [OPTIONS] -- PROGRAM [ARGS...]` (docs/CLI.md).
 *
 * Runs PROGRAM with cflame's in-process sampler preloaded
 * (rc_preload.c), in every process and thread it starts, as the kernel's
 * worker runs a cell: no perf_event permission is needed. Its standard
 * streams and exit status pass through (rc_run.c). When it ends, what
 * every process recorded is symbolized and made one profile (rc_collect.c),
 * drawn with the cflame command's drawing options (the flame library's
 * table, fl_options.h) through the library's one output function
 * (fl_output.h): -o FILE in the format its ending names, or
 * ./PROGRAM.cflame.svg. cflame exits with the program's status.
 *
 *   record/rc_record.c   options, the output's name, the whole run
 *   record/rc_program.c  finding the program; what cannot be recorded
 *   record/rc_run.c      running it: signals forwarded, its status
 *   record/rc_collect.c  the recording directory -> one profile
 *   record/rc_preload.c  the preloaded library (rc_files.h: what it writes) */
#ifndef RC_RECORD_H
#define RC_RECORD_H

/* `cflame record`: argv[0] is "record". Returns cflame's exit status: the
 * program's (128 + a signal that ended it); 2 for a bad command line; 127
 * or 126 for a program that cannot be found or run (or recorded); 1 when
 * the program exited 0 but no profile could be written. */
int rc_record_main(int argc, char **argv);

#endif
