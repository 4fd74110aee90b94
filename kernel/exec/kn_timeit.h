/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_timeit: %%timeit's options and its report.
 *
 * `%%timeit [-n N] [-r R]` times the cell body, `%timeit [-n N] [-r R]
 * STATEMENT` one statement: R runs (default 7) of N loops each. Without -n
 * the worker grows N by tens until one run takes 0.2 s. The report reads as
 * IPython's: "1.23 ms ± 4.56 µs per loop (mean ± std. dev. of 7 runs, 100
 * loops each)". */
#ifndef KN_TIMEIT_H
#define KN_TIMEIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Parses %%timeit's (or, with statement, %timeit's) args: flags first,
 * then for the statement form the statement (*stmt, new). *spec is the
 * worker's timeit request ({"number": N or 0, "repeat": R}, new). Returns
 * 0, or -1 with err naming what is valid. */
int kn_timeit_parse(const char *args, bool statement, json_t **spec, char **stmt, char *err,
                    size_t err_size);

/* The report line (with its newline) of the worker's timeit result
 * ({"number": N, "per_loop_ns": [...]}). New string. */
char *kn_timeit_report(const json_t *result);

/* "1.23 ms", "456 ns", "12.3 µs": three significant digits. */
void kn_format_duration(char *buf, size_t size, double ns);

#endif
