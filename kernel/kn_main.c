/* SPDX-License-Identifier: BSD-3-Clause */
/* cflame-kernel: a Jupyter kernel for C. Started by Jupyter as
 *   cflame-kernel -f CONNECTION_FILE
 *
 * Here the rooms meet: the kernel's sockets and loop (wire/kn_kernel.h)
 * know no request; the execution (exec/kn_execute.h, with the simple
 * requests) and completion (assist/kn_complete.h) register theirs on its
 * table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_api.h"
#include "kn_complete.h"
#include "kn_execute.h"
#include "kn_kernel.h"

static void usage(FILE *to) {
  fprintf(to,
          "usage: cflame-kernel -f CONNECTION_FILE\n"
          "\n"
          "The cflame Jupyter kernel. Jupyter starts it through its kernelspec\n"
          "(share/jupyter/kernels/cflame/kernel.json); run `jupyter console\n"
          "--kernel cflame` or choose \"C (cflame)\" in JupyterLab.\n");
}

int main(int argc, char **argv) {
  const char *connection_file = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-f") && i + 1 < argc)
      connection_file = argv[++i];
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "--version")) {
      printf("cflame-kernel %s\n", fl_version_string());
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (!connection_file) {
    usage(stderr);
    return 2;
  }
  char err[1024];
  kn_kernel_t *kernel = kn_kernel_new(connection_file, err, sizeof err);
  if (kernel && kn_execute_open(kernel, err, sizeof err) < 0) kn_kernel_destroy(&kernel);
  if (!kernel) {
    fprintf(stderr, "cflame-kernel: %s\n", err);
    return 1;
  }
  kn_complete_open(kernel);
  int rc = kn_kernel_run(kernel);
  kn_kernel_destroy(&kernel);
  return rc < 0 ? 1 : 0;
}
