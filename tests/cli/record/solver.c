/* SPDX-License-Identifier: BSD-3-Clause */
/* An MPI program for tests/cli/test_record.py: each rank runs one() and
 * three() (three times one()'s work) and prints its rank and the CPU time
 * of each as JSON. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "work.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  double t1, t3;
  one_and_three(n, 10, &t1, &t3);
  printf("{\"rank\": %d, \"one\": %.6f, \"three\": %.6f}\n", rank, t1, t3);
  MPI_Finalize();
  return 0;
}
