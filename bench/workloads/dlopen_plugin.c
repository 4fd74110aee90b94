/* SPDX-License-Identifier: BSD-3-Clause */
/* The plugin dlopen_cycles.c opens: a little work to call. */
double work(long i);

double work(long i) {
  double s = 0;
  for (long k = 0; k < 2000; k++) s += (double)(k ^ i) * 1e-9;
  return s;
}
