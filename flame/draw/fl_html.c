/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_html: a profile's views as one standalone HTML page, which needs no
 * network.
 *
 * A tab per view that can draw the profile (fl_output.c takes them from the
 * table of views, fl_views.c), radio buttons and CSS, so that tabs switch with
 * JavaScript off. Each tab's panel holds its view's SVG, interactive by
 * itself (fl__svg_interactive: hover, click to zoom, search), and the
 * view's Vega-Lite spec in a <script type="application/json"> element, for
 * whoever wants to take it elsewhere: the page loads no script from
 * anywhere. Under each SVG a line says that it is the static picture; the
 * SVG's script hides it, so it stays only with JavaScript off. A page of
 * one view shows no tabs. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_io.h"
#include "fl__render.h"

/* Text for HTML element content and attribute values. */
static void add_escaped(fl__buf_t *b, const char *s) {
  for (; *s; s++) {
    switch (*s) {
      case '&': fl__buf_puts(b, "&amp;"); break;
      case '<': fl__buf_puts(b, "&lt;"); break;
      case '>': fl__buf_puts(b, "&gt;"); break;
      case '"': fl__buf_puts(b, "&quot;"); break;
      case '\'': fl__buf_puts(b, "&#39;"); break;
      default: fl__buf_add(b, s, 1);
    }
  }
}

/* JSON for the inside of a <script> element: '<', '>' and '&' can only
 * stand inside JSON strings, where "\u003c" and the like mean the same, so
 * no "</script>" or "<!--" can appear. */
static void add_script_json(fl__buf_t *b, const char *json) {
  for (const char *s = json; *s; s++) {
    switch (*s) {
      case '<': fl__buf_puts(b, "\\u003c"); break;
      case '>': fl__buf_puts(b, "\\u003e"); break;
      case '&': fl__buf_puts(b, "\\u0026"); break;
      default: fl__buf_add(b, s, 1);
    }
  }
}

static const char page_head[] =
    "<!DOCTYPE html>\n"
    "<html lang=\"en\">\n"
    "<head>\n"
    "<meta charset=\"utf-8\">\n"
    "<meta name=\"generator\" content=\"cflame\">\n"
    "<title>";

static const char page_style[] =
    "</title>\n"
    "<style>\n"
    "  body { margin: 16px; font-family: system-ui, sans-serif; }\n"
    "  .cflame-static svg { max-width: 100%; height: auto; }\n"
    "  .cflame-hint { color: #666; font-size: 13px; }\n"
    "  .cflame-tabs > input { position: absolute; opacity: 0; }\n"
    "  .cflame-tabs > label { display: inline-block; padding: 6px 14px; margin-right: 4px;\n"
    "    border: 1px solid #ccc; border-bottom: none; border-radius: 6px 6px 0 0;\n"
    "    cursor: pointer; color: #444; background: #f4f4f4; }\n"
    "  .cflame-tabs > input:checked + label { background: #fff; color: #000; font-weight: 600; }\n"
    "  .cflame-tabs > input:focus-visible + label { outline: 2px solid #4a90d9; }\n"
    "  .cflame-panel { display: none; border-top: 1px solid #ccc; padding-top: 12px; }\n";

/* Under the SVG, which hides it when its script runs. */
static const char panel_note[] =
    "<p class=\"cflame-hint\">This is the static picture: turn JavaScript on to hover, "
    "zoom and search.</p>\n";

static const char page_end[] =
    "</body>\n"
    "</html>\n";

char *fl_html_page_views(const fl_html_view_t *views, size_t n, size_t selected,
                         const char *title) {
  char *clean_title = fl__clean_text(title ? title : "cflame flame graph", false);
  fl__buf_t b = {0};
  fl__buf_puts(&b, page_head);
  add_escaped(&b, clean_title);
  free(clean_title);
  fl__buf_puts(&b, page_style);
  /* A panel shows while its tab's radio button is checked: tabs that work
   * without JavaScript. */
  for (size_t i = 0; i < n; i++)
    fl__buf_printf(&b, "  #cflame-tab-%s:checked ~ #cflame-panel-%s { display: block; }\n",
                   views[i].name, views[i].name);
  if (n < 2)
    fl__buf_puts(&b,
                 "  .cflame-tabs > label { display: none; }\n"
                 "  .cflame-panel { border-top: none; padding-top: 0; }\n");
  fl__buf_puts(&b, "</style>\n</head>\n<body>\n<div class=\"cflame-tabs\">\n");
  for (size_t i = 0; i < n; i++) {
    fl__buf_printf(&b, "<input type=\"radio\" name=\"cflame-tab\" id=\"cflame-tab-%s\"%s>",
                   views[i].name, i == selected ? " checked" : "");
    fl__buf_printf(&b, "<label for=\"cflame-tab-%s\">", views[i].name);
    add_escaped(&b, views[i].label);
    fl__buf_puts(&b, "</label>\n");
  }
  for (size_t i = 0; i < n; i++) {
    fl__buf_printf(&b,
                   "<section class=\"cflame-panel\" id=\"cflame-panel-%s\" data-view=\"%s\"%s>\n",
                   views[i].name, views[i].name, i == selected ? " data-selected=\"1\"" : "");
    /* The note is the SVG's sibling: its script finds it there. */
    fl__buf_puts(&b, "<div class=\"cflame-static\">\n");
    char *svg = fl__svg_interactive(views[i].svg ? views[i].svg : "", NULL);
    fl__buf_puts(&b, svg);
    free(svg);
    fl__buf_puts(&b, panel_note);
    fl__buf_puts(&b, "</div>\n");
    fl__buf_puts(&b, "<script class=\"cflame-spec\" type=\"application/json\">");
    char *json = fl__nonnull(json_dumps(views[i].spec, JSON_COMPACT));
    add_script_json(&b, json);
    free(json);
    fl__buf_puts(&b, "</script>\n</section>\n");
  }
  fl__buf_puts(&b, "</div>\n");
  fl__buf_puts(&b, page_end);
  return fl__buf_take(&b);
}

char *fl_html_page(const json_t *vegalite_spec, const char *svg, const char *title) {
  const fl_view_info_t *flame = fl_view_at(0); /* the table's first, the flame graph */
  fl_html_view_t view = {
      .name = flame->name, .label = flame->label, .spec = vegalite_spec, .svg = svg};
  return fl_html_page_views(&view, 1, 0, title);
}
