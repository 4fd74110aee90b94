/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_options_text: how the options of the table (fl_options.c) are
 * written: a value as each front end writes it ("minwidth=0.01",
 * "--minwidth 0.01", "--no-C"), its placeholder and default, and the
 * help texts and the docs' Markdown tables made from the rows. Reads the
 * table through fl_option_at only. */
#define _GNU_SOURCE
#include "cflame/fl_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__common.h"

const char *fl_option_default(const fl_option_t *o, fl_front_t front) {
  if (front == FL_FRONT_COMMAND && o->def_command) return *o->def_command ? o->def_command : NULL;
  return o->def;
}

/* The command's name of the option: '_' written '-'. */
static void command_name(const char *name, char *out, size_t size) {
  snprintf(out, size, "%s", name);
  for (char *p = out; *p; p++)
    if (*p == '_') *p = '-';
}

void fl_option_shown(const fl_option_t *o, fl_front_t front, const char *value, char *out,
                     size_t size) {
  if (front == FL_FRONT_NOTEBOOK) {
    snprintf(out, size, "%s=%s", o->name, value);
    return;
  }
  char name[64];
  command_name(o->name, name, sizeof name);
  if (o->type == FL_OPT_BOOL && (!strcmp(value, "true") || !strcmp(value, "false")))
    snprintf(out, size, "--%s%s", strcmp(value, "true") ? "no-" : "", name);
  else
    snprintf(out, size, "--%s%s%s", name, *value ? " " : "", value);
}

const char *fl_option_placeholder(const fl_option_t *o, fl_front_t front) {
  static const char *const by_type[] = {
      [FL_OPT_BOOL] = "true|false", [FL_OPT_INT] = "N",   [FL_OPT_DOUBLE] = "X",
      [FL_OPT_STRING] = "TEXT",     [FL_OPT_ENUM] = NULL, [FL_OPT_LIST] = "A,B",
  };
  /* A command's enum of many choices names them in its help instead. */
  if (front == FL_FRONT_COMMAND && o->metavar) return o->metavar;
  if (o->type == FL_OPT_ENUM) return o->choices;
  return by_type[o->type];
}

/* What help and the docs say the default is. */
static const char *shown_default(const fl_option_t *o, fl_front_t front, char *buf, size_t size) {
  const char *def = fl_option_default(o, front);
  if (front == FL_FRONT_COMMAND && o->shown_def_command) return o->shown_def_command;
  if (o->shown_def) return o->shown_def;
  if (!def) return "none";
  if (front == FL_FRONT_COMMAND && o->type == FL_OPT_BOOL) {
    fl_option_shown(o, front, def, buf, size);
    return buf;
  }
  return def;
}

/* The option as help's left column writes it: "minwidth=X", "--minwidth
 * SHARE", "--C, --no-C". */
static void left_column(const fl_option_t *o, fl_front_t front, char *out, size_t size) {
  char name[64];
  command_name(o->name, name, sizeof name);
  if (front == FL_FRONT_NOTEBOOK)
    snprintf(out, size, "%s=%s", o->name, fl_option_placeholder(o, front));
  else if (o->type == FL_OPT_BOOL && o->alias)
    snprintf(out, size, "--%s, --%s", name, o->alias);
  else if (o->type == FL_OPT_BOOL)
    snprintf(out, size, "--%s, --no-%s", name, name);
  else
    snprintf(out, size, "--%s %s", name, fl_option_placeholder(o, front));
}

/* Appends text in lines of at most width columns (a longer word stands
 * alone), the first after what the line holds already (used columns),
 * the rest after indent spaces. */
static void put_wrapped(fl__buf_t *b, const char *text, size_t used, size_t indent, size_t width) {
  bool line_start = true;
  for (const char *p = text; *p;) {
    while (*p == ' ') p++;
    size_t w = strcspn(p, " ");
    if (!w) break;
    if (!line_start && used + 1 + w > width) {
      fl__buf_printf(b, "\n%*s", (int)indent, "");
      used = indent;
      line_start = true;
    }
    if (!line_start) {
      fl__buf_puts(b, " ");
      used++;
    }
    fl__buf_add(b, p, w);
    used += w;
    line_start = false;
    p += w;
  }
  fl__buf_puts(b, "\n");
}

char *fl_options_help(unsigned groups, fl_front_t front) {
  fl__buf_t b = {0};
  fl__buf_add(&b, "", 0);
  const fl_option_t *o;
  for (size_t i = 0; (o = fl_option_at(i)) != NULL; i++) {
    if (!(o->groups & groups)) continue;
    char left[160], def[96], *text;
    left_column(o, front, left, sizeof left);
    if (asprintf(&text, "%s (default: %s)", o->help, shown_default(o, front, def, sizeof def)) < 0)
      fl__oom(0);
    if (front == FL_FRONT_NOTEBOOK) {
      fl__buf_printf(&b, "  %-20s %s\n", left, text);
    } else {
      /* The text starts at column 25, or after the name when it is longer. */
      size_t used = 6 + (strlen(left) < 18 ? 18 : strlen(left)) + 1;
      fl__buf_printf(&b, "      %-18s ", left);
      put_wrapped(&b, text, used, 25, 80);
    }
    free(text);
  }
  return fl__buf_take(&b);
}

/* s with '|' written "\|", for a cell of a Markdown table. */
static void put_cell(fl__buf_t *b, const char *s) {
  for (; *s; s++) {
    if (*s == '|') fl__buf_puts(b, "\\");
    fl__buf_add(b, s, 1);
  }
}

char *fl_options_markdown(unsigned groups, fl_front_t front) {
  fl__buf_t b = {0};
  bool notebook = front == FL_FRONT_NOTEBOOK;
  fl__buf_puts(&b, notebook ? "| option | meaning | default |\n|---|---|---|\n"
                            : "| option | default | what it does |\n|---|---|---|\n");
  const fl_option_t *o;
  for (size_t i = 0; (o = fl_option_at(i)) != NULL; i++) {
    if (!(o->groups & groups)) continue;
    char left[160], def[96], name[64];
    const char *shown = shown_default(o, front, def, sizeof def);
    command_name(o->name, name, sizeof name);
    if (notebook)
      snprintf(left, sizeof left, "%s=%s", o->name, fl_option_placeholder(o, front));
    else if (o->type == FL_OPT_BOOL && o->alias)
      snprintf(left, sizeof left, "--%s`, `--%s", name, o->alias);
    else if (o->type == FL_OPT_BOOL)
      snprintf(left, sizeof left, "--%s` / `--no-%s", name, name);
    else
      snprintf(left, sizeof left, "--%s %s", name, fl_option_placeholder(o, front));
    fl__buf_puts(&b, "| `");
    put_cell(&b, left);
    fl__buf_puts(&b, notebook ? "` | " : "` | ");
    put_cell(&b, notebook ? o->help : shown);
    fl__buf_puts(&b, " | ");
    put_cell(&b, notebook ? shown : o->help);
    fl__buf_puts(&b, " |\n");
  }
  return fl__buf_take(&b);
}
