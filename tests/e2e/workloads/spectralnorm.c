/* SPDX-License-Identifier: BSD-3-Clause */
/* The Computer Language Benchmarks Game: spectral-norm, after the C
 * program (Sebastien Loisel), single-threaded. Matrix-vector products
 * whose entries are computed on the fly. Argument: the order N. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double eval_A(int i, int j) { return 1.0 / ((i + j) * (i + j + 1) / 2 + i + 1); }

void eval_A_times_u(int N, const double u[], double Au[]) {
  for (int i = 0; i < N; i++) {
    Au[i] = 0;
    for (int j = 0; j < N; j++) Au[i] += eval_A(i, j) * u[j];
  }
}

void eval_At_times_u(int N, const double u[], double Au[]) {
  for (int i = 0; i < N; i++) {
    Au[i] = 0;
    for (int j = 0; j < N; j++) Au[i] += eval_A(j, i) * u[j];
  }
}

void eval_AtA_times_u(int N, const double u[], double AtAu[]) {
  double *v = malloc(N * sizeof *v);
  eval_A_times_u(N, u, v);
  eval_At_times_u(N, v, AtAu);
  free(v);
}

int main(int argc, char *argv[]) {
  int N = argc > 1 ? atoi(argv[1]) : 100;
  double *u = malloc(N * sizeof *u), *v = malloc(N * sizeof *v), vBv = 0, vv = 0;
  for (int i = 0; i < N; i++) u[i] = 1;
  for (int i = 0; i < 10; i++) {
    eval_AtA_times_u(N, u, v);
    eval_AtA_times_u(N, v, u);
  }
  for (int i = 0; i < N; i++) {
    vBv += u[i] * v[i];
    vv += v[i] * v[i];
  }
  printf("%0.9f\n", sqrt(vBv / vv));
  free(u);
  free(v);
  return 0;
}
