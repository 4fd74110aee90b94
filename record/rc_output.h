/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_output: the name `cflame record -o PATTERN` writes to. One run of
 * mpirun starts many cflame records, and a program may write more than
 * one output: the pattern names each apart, %p the recorded program's
 * pid, %h the host, %r the MPI rank (rc_mpi_rank), %% a %. */
#ifndef RC_OUTPUT_H
#define RC_OUTPUT_H

#include <stddef.h>

/* pattern with %p, %h, %r and %% replaced (new string); NULL with err for
 * an unknown % or a %r without a rank. pid 0: %p is only checked. */
char *rc_output_name(const char *pattern, int pid, char *err, size_t err_size);

#endif
