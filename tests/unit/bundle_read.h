/* SPDX-License-Identifier: BSD-3-Clause */
/* What tests read from a cflame flame graph: its SVG (svg_of) and the
 * frames of its Vega-Lite spec as rows (frames_of), one object per frame
 * with the fields docs/PROFILING.md names ("The data behind the graph").
 *
 * The spec holds them compactly (flame/draw/fl_vegalite.c): data.values is a
 * CSV table of numbers, a line per frame; lookup transforms turn the
 * string columns' numbers into strings from datasets.strings, a CSV table
 * of "k,s"; x1, pct and depth1 follow from the rest. This reads them by
 * the spec's own transforms, as tests/render/frames.mjs does, whose rows
 * check_spec.mjs compares with the data vega itself computes. */
#ifndef CFLAME_TEST_BUNDLE_READ_H
#define CFLAME_TEST_BUNDLE_READ_H

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The SVG of a bundle, whose one copy is in the markdown item, inside a
 * <div> (flame/draw/fl_bundle.c): from the first <svg to the last </svg> (a
 * sandwich nests two), as the Python and JavaScript readers take it. A new
 * string, or NULL when there is none. */
static inline char *svg_of(json_t *bundle) {
  const char *md = json_string_value(json_object_get(bundle, "text/markdown"));
  const char *start = md ? strstr(md, "<svg") : NULL, *end = NULL;
  for (const char *p = start; p && (p = strstr(p, "</svg>")); p++) end = p;
  return end ? strndup(start, (size_t)(end - start) + strlen("</svg>")) : NULL;
}

/* The cells of CSV text as an array of arrays of strings, the header
 * first: RFC 4180, quoted cells with doubled quotes, no line breaks in
 * cells. New. */
static inline json_t *csv_cells(const char *text) {
  json_t *lines = json_array(), *line = json_array();
  char cell[4096];
  size_t n = 0;
  bool quoted = false;
  for (const char *p = text; p && *p; p++) {
    if (quoted) {
      if (*p == '"' && p[1] == '"')
        cell[n++] = *p++;
      else if (*p == '"')
        quoted = false;
      else
        cell[n++] = *p;
    } else if (*p == '"') {
      quoted = true;
    } else if (*p == ',' || *p == '\n') {
      json_array_append_new(line, json_stringn(cell, n));
      n = 0;
      if (*p == '\n') {
        json_array_append_new(lines, line);
        line = json_array();
      }
    } else {
      cell[n++] = *p;
    }
    if (n >= sizeof cell) n = sizeof cell - 1;
  }
  json_decref(line); /* the text ends with a line break */
  return lines;
}

/* A cell as format.parse "number" reads it: "" is null. New. */
static inline json_t *csv_number(json_t *cell) {
  const char *s = json_string_value(cell);
  if (!s || !s[0]) return json_null();
  if (strchr(s, '.')) return json_real(strtod(s, NULL));
  return json_integer(strtoll(s, NULL, 10));
}

/* The rows of spec: a new array, or NULL when its data is not a CSV table. */
static inline json_t *frames_of(json_t *spec) {
  json_t *data = json_object_get(spec, "data");
  const char *type = json_string_value(json_object_get(json_object_get(data, "format"), "type"));
  const char *text = json_string_value(json_object_get(data, "values"));
  if (!type || strcmp(type, "csv") != 0 || !text) return NULL;
  json_t *cells = csv_cells(text), *header = json_array_get(cells, 0), *rows = json_array();
  size_t i, j;
  json_t *line, *t, *row;
  json_array_foreach(cells, i, line) {
    if (i == 0) continue;
    row = json_object();
    for (j = 0; j < json_array_size(header); j++)
      json_object_set_new(row, json_string_value(json_array_get(header, j)),
                          csv_number(json_array_get(line, j)));
    json_array_append_new(rows, row);
  }
  json_decref(cells);
  json_array_foreach(json_object_get(spec, "transform"), j, t) {
    const char *key = json_string_value(json_object_get(t, "lookup"));
    if (!key) continue;
    json_t *from = json_object_get(t, "from");
    const char *table_name =
        json_string_value(json_object_get(json_object_get(from, "data"), "name"));
    json_t *table = csv_cells(
        json_string_value(json_object_get(json_object_get(spec, "datasets"), table_name)));
    /* Columns of the table: its key's and the looked-up field's. */
    const char *k = json_string_value(json_object_get(from, "key"));
    const char *s = json_string_value(json_array_get(json_object_get(from, "fields"), 0));
    size_t kc = 0, sc = 0, c;
    json_t *name;
    json_array_foreach(json_array_get(table, 0), c, name) {
      if (!strcmp(json_string_value(name), k)) kc = c;
      if (!strcmp(json_string_value(name), s)) sc = c;
    }
    const char *as = json_string_value(json_array_get(json_object_get(t, "as"), 0));
    json_array_foreach(rows, i, row) {
      json_t *want = json_object_get(row, key), *found = NULL, *e;
      size_t m;
      if (json_is_integer(want)) {
        json_array_foreach(table, m, e) {
          const char *ks = json_string_value(json_array_get(e, kc));
          if (m > 0 && ks && strtoll(ks, NULL, 10) == json_integer_value(want)) {
            found = json_array_get(e, sc);
            break;
          }
        }
      }
      const char *v = json_string_value(found);
      json_object_set_new(row, as, v && v[0] ? json_string(v) : json_null());
    }
    json_decref(table);
  }
  json_int_t total = json_integer_value(json_object_get(json_array_get(rows, 0), "count"));
  json_array_foreach(rows, i, row) {
    json_int_t x0 = json_integer_value(json_object_get(row, "x0"));
    json_int_t count = json_integer_value(json_object_get(row, "count"));
    json_object_set_new(row, "x1", json_integer(x0 + count));
    json_object_set_new(row, "pct", json_real(total ? 100.0 * (double)count / (double)total : 0));
    json_object_set_new(row, "depth1",
                        json_integer(json_integer_value(json_object_get(row, "depth")) + 1));
  }
  return rows;
}

/* The number of frames in spec. */
static inline size_t n_frames(json_t *spec) {
  json_t *rows = frames_of(spec);
  size_t n = json_array_size(rows);
  json_decref(rows);
  return n;
}

/* The expression of the tooltip object of spec's frames: its frames layer's
 * mark shows a field (datum.NAME) that a calculate transform makes. NULL
 * when it is not so. Borrowed. */
static inline const char *tooltip_expr(json_t *spec) {
  size_t i;
  json_t *layer, *t;
  const char *shown = NULL;
  json_array_foreach(json_object_get(spec, "layer"), i, layer) {
    const char *name = json_string_value(json_object_get(layer, "name"));
    if (name && !strcmp(name, "frames"))
      shown = json_string_value(
          json_object_get(json_object_get(json_object_get(layer, "mark"), "tooltip"), "expr"));
  }
  if (!shown || strncmp(shown, "datum.", 6) != 0) return NULL;
  json_array_foreach(json_object_get(spec, "transform"), i, t) {
    const char *as = json_string_value(json_object_get(t, "as"));
    if (as && !strcmp(as, shown + 6)) return json_string_value(json_object_get(t, "calculate"));
  }
  return NULL;
}

/* The text of an XML text node, its five entities read. New. */
static inline char *xml_text(const char *s, size_t n) {
  static const char *const entities[][2] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}, {"&apos;", "'"}, {"&quot;", "\""}};
  char *out = malloc(n + 1);
  size_t k = 0;
  for (size_t i = 0; i < n;) {
    size_t e = 0;
    while (e < 5 && strncmp(s + i, entities[e][0], strlen(entities[e][0])) != 0) e++;
    if (e < 5) {
      out[k++] = entities[e][1][0];
      i += strlen(entities[e][0]);
    } else {
      out[k++] = s[i++];
    }
  }
  out[k] = '\0';
  return out;
}

static inline int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* What is wrong with the frames of svg against the spec's rows, or NULL:
 * each frame is a <path> in a <g stroke='COLOUR'> (flame/draw/fl_svg.c), whose
 * <title> starts with its label (its function, with what tells it from a
 * sibling of the same name); the frames drawn in each colour must be the
 * rows of that colour, label for label. Static storage. */
static inline const char *svg_frames_problem(const char *svg, json_t *spec) {
  static char problem[256];
  json_t *rows = frames_of(spec), *row;
  size_t n = json_array_size(rows), i, k = 0;
  char **drawn = calloc(n + 1, sizeof *drawn), **want = calloc(n + 1, sizeof *want);
  const char *group = NULL;
  problem[0] = '\0';
  for (const char *p = svg; (p = strstr(p, "<path d=")) != NULL; p++) {
    /* The colour is the nearest enclosing group's. */
    const char *g;
    for (g = strstr(group ? group : svg, "<g stroke='"); g && g < p;
         g = strstr(g + 1, "<g stroke='"))
      group = g;
    const char *title = strstr(p, "<title>"),
               *end = title ? strcspn(title + 7, "\n<") + title + 7 : NULL;
    if (!group || !title || k >= n) {
      snprintf(problem, sizeof problem,
               "frame %zu: no colour group, no title, or more frames than rows", k);
      break;
    }
    char *name = xml_text(title + 7, (size_t)(end - title - 7));
    drawn[k] = malloc(strlen(name) + 10);
    sprintf(drawn[k++], "%.7s %s", group + strlen("<g stroke='"), name);
    free(name);
  }
  json_array_foreach(rows, i, row) {
    const char *label = json_string_value(json_object_get(row, "label"));
    const char *color = json_string_value(json_object_get(row, "color"));
    want[i] = malloc(strlen(label ? label : "") + 10);
    sprintf(want[i], "%.7s %s", color ? color : "", label ? label : "");
  }
  if (!problem[0] && k != n)
    snprintf(problem, sizeof problem, "%zu frames drawn for %zu rows", k, n);
  if (!problem[0]) {
    qsort(drawn, k, sizeof *drawn, cmp_str);
    qsort(want, n, sizeof *want, cmp_str);
    for (i = 0; i < n && !problem[0]; i++)
      if (strcmp(drawn[i], want[i]) != 0)
        snprintf(problem, sizeof problem, "drawn \"%.100s\" where a row is \"%.100s\"", drawn[i],
                 want[i]);
  }
  for (i = 0; i <= n; i++) free(drawn[i]), free(want[i]);
  free(drawn);
  free(want);
  json_decref(rows);
  return problem[0] ? problem : NULL;
}

#endif
