/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_output: the name -o gives an output, a pattern (see rc_output.h). */
#define _GNU_SOURCE
#include "rc_output.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fl__common.h"
#include "rc_files.h"

char *rc_output_name(const char *pattern, int pid, char *err, size_t err_size) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (!f) fl__oom(0);
  bool ok = true;
  for (const char *p = pattern; *p && ok; p++) {
    if (*p != '%') {
      fputc(*p, f);
      continue;
    }
    char host[HOST_NAME_MAX + 1] = "localhost";
    const char *rank;
    switch (*++p) {
      case 'p': fprintf(f, "%d", pid); break;
      case 'h':
        gethostname(host, sizeof host);
        host[sizeof host - 1] = '\0';
        fputs(host, f);
        break;
      case 'r':
        if (!(rank = rc_mpi_rank())) {
          snprintf(err, err_size,
                   "-o %s: %%r is the MPI rank, from " RC_RANK_ENVS_TEXT ", and "
                   "neither is set (run cflame record under mpirun: mpirun -n 4 cflame record "
                   "-o %s -- PROGRAM)",
                   pattern, pattern);
          ok = false;
        } else {
          fputs(rank, f);
        }
        break;
      case '%': fputc('%', f); break;
      default:
        snprintf(err, err_size,
                 "-o %s: unknown %%%c; valid: %%p (pid), %%h (host), %%r (MPI "
                 "rank), %%%% (a %%)",
                 pattern, *p ? *p : ' ');
        ok = false;
        if (!*p) p--;
    }
  }
  fclose(f);
  if (!ok) {
    free(out);
    return NULL;
  }
  return out;
}
