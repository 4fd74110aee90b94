/* SPDX-License-Identifier: BSD-3-Clause */
/* %%timeit (see kn_timeit.h). */
#include "kn_timeit.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kn_magic.h"
#include "kn_text.h"

static const kn_optspec_t flags[] = {
    {"n", FL_OPT_INT, NULL, 1, 1e9, .help = "loops per run"},
    {"r", FL_OPT_INT, NULL, 1, 1e9, .help = "runs"},
};
#define N_FLAGS (FL__ARRAY_SIZE(flags))

static bool blank(const char *s) {
  while (isspace((unsigned char)*s)) s++;
  return !*s;
}

/* The length of the flags at the front of args ("-n 10 -r3 f(x);" -> the
 * part before "f"): words starting with '-' and a letter, and the value
 * after a bare flag. */
static size_t flags_length(const char *args) {
  const char *p = args;
  for (;;) {
    const char *w = p;
    while (isspace((unsigned char)*w)) w++;
    if (w[0] != '-' || !isalpha((unsigned char)w[1])) return (size_t)(p - args);
    size_t len = strcspn(w, " \t\n");
    p = w + len;
    if (len == 2) { /* "-n 10": the value is the next word */
      while (isspace((unsigned char)*p)) p++;
      p += strcspn(p, " \t\n");
    }
  }
}

int kn_timeit_parse(const char *args, bool statement, json_t **spec, char **stmt, char *err,
                    size_t err_size) {
  const char *magic = statement ? "%timeit" : "%%timeit";
  *spec = NULL;
  *stmt = NULL;
  size_t n = statement ? flags_length(args) : strlen(args);
  char *words = fl__xstrndup(args, n);
  kn_opts_t o;
  int rc = kn_opts_parse(magic, words, flags, N_FLAGS, &o, err, err_size);
  free(words);
  if (rc < 0) return -1;
  if (o.n_positional) {
    snprintf(err, err_size, "%s: unexpected '%s'; valid flags: -n N (loops per run), -r R (runs)",
             magic, o.positional[0]);
    kn_opts_free(&o);
    return -1;
  }
  const kn_optval_t *number = kn_opts_get(&o, "n"), *repeat = kn_opts_get(&o, "r");
  json_int_t nv = number->set ? number->i : 0, rv = repeat->set ? repeat->i : 7;
  kn_opts_free(&o);
  if (statement) {
    if (blank(args + n)) {
      snprintf(err, err_size, "%%timeit needs a statement to time");
      return -1;
    }
    *stmt = fl__xstrdup(args + n);
  }
  *spec = json_pack("{s:I, s:I}", "number", nv, "repeat", rv);
  return 0;
}

void kn_format_duration(char *buf, size_t size, double ns) {
  static const struct {
    double scale;
    const char *unit;
  } units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "\xc2\xb5s"}, {1, "ns"}};
  /* The largest unit the value reaches once rounded to three significant
   * digits: 999999 ns is "1.00 ms", not "1000 µs". */
  size_t u = 0;
  while (u + 1 < FL__ARRAY_SIZE(units) && ns < units[u].scale * 0.9995) u++;
  double v = ns / units[u].scale;
  int decimals = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
  snprintf(buf, size, "%.*f %s", decimals, v, units[u].unit);
}

char *kn_timeit_report(const json_t *t) {
  json_int_t number = json_integer_value(json_object_get(t, "number"));
  json_t *times = json_object_get(t, "per_loop_ns");
  size_t r = json_array_size(times);
  double mean = 0, var = 0;
  for (size_t i = 0; i < r; i++) mean += json_number_value(json_array_get(times, i));
  mean /= r ? (double)r : 1;
  for (size_t i = 0; i < r; i++) {
    double d = json_number_value(json_array_get(times, i)) - mean;
    var += d * d;
  }
  double sd = r > 1 ? sqrt(var / (double)r) : 0;
  char m[32], s[32];
  kn_format_duration(m, sizeof m, mean);
  kn_format_duration(s, sizeof s, sd);
  fl__buf_t sb = FL__BUF_INIT;
  fl__buf_printf(&sb,
                   "%s \xc2\xb1 %s per loop (mean \xc2\xb1 std. dev. of %zu run%s, "
                   "%" JSON_INTEGER_FORMAT " loop%s each)\n",
                   m, s, r, r == 1 ? "" : "s", number, number == 1 ? "" : "s");
  return fl__buf_take(&sb);
}
