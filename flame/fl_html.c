/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_html: a flame graph as one standalone HTML page.
 *
 * The page holds two views of the same graph:
 *  - the kernel's SVG, inline and visible from the start, so the page shows
 *    the graph offline, with JavaScript off, or with the CDN blocked;
 *  - the Vega-Lite spec, in a <script type="application/json"> element,
 *    which vega-embed (vega@5, vega-lite@5, vega-embed@6, loaded from the
 *    jsDelivr CDN at the end of the body) turns into the interactive view
 *    (search, tooltips, click-zoom, wheel zoom, drag-pan).
 * When vega-embed has drawn the interactive view, the SVG is hidden (one
 * graph on the page, not two); until then, and whenever the scripts do not
 * load or embedding fails, a line under the SVG says why the page shows
 * the static picture. */
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
    "  #cflame-static svg { max-width: 100%; height: auto; }\n"
    "  #cflame-note { color: #666; font-size: 13px; }\n"
    "</style>\n"
    "</head>\n"
    "<body>\n"
    "<div id=\"cflame-vis\"></div>\n"
    "<div id=\"cflame-static\">\n";

/* Shown until vega-embed has drawn the interactive view; JavaScript off,
 * this is what stays. */
static const char page_note[] =
    "</div>\n"
    "<p id=\"cflame-note\">This is the static picture of the flame graph. The interactive "
    "view (search, tooltips, zoom) needs JavaScript and the vega, vega-lite and vega-embed "
    "scripts from cdn.jsdelivr.net.</p>\n"
    "<script src=\"https://cdn.jsdelivr.net/npm/vega@5\"></script>\n"
    "<script src=\"https://cdn.jsdelivr.net/npm/vega-lite@5\"></script>\n"
    "<script src=\"https://cdn.jsdelivr.net/npm/vega-embed@6\"></script>\n"
    "<script id=\"cflame-spec\" type=\"application/json\">";

static const char page_tail[] =
    "</script>\n"
    "<script>\n"
    "(function () {\n"
    "  var note = document.getElementById('cflame-note');\n"
    "  if (typeof vegaEmbed !== 'function') {\n"
    "    note.textContent = 'This is the static picture of the flame graph: the scripts of the '\n"
    "      + 'interactive view (vega, vega-lite, vega-embed from cdn.jsdelivr.net) did not load, "
    "'\n"
    "      + 'perhaps because this computer is offline.';\n"
    "    return;\n"
    "  }\n"
    "  var spec = JSON.parse(document.getElementById('cflame-spec').textContent);\n"
    "  vegaEmbed('#cflame-vis', spec, {actions: {export: true, source: false, compiled: false,\n"
    "                                            editor: false}})\n"
    "    .then(function (result) {\n"
    "      document.getElementById('cflame-static').style.display = 'none';\n"
    "      note.style.display = 'none';\n"
    "      window.cflameView = result.view;\n"
    "    })\n"
    "    .catch(function (e) {\n"
    "      note.textContent = 'This is the static picture of the flame graph: the interactive '\n"
    "        + 'view failed (' + e + ').';\n"
    "    });\n"
    "})();\n"
    "</script>\n"
    "</body>\n"
    "</html>\n";

char *fl_html_page(const json_t *vegalite_spec, const char *svg, const char *title) {
  char *json = fl__nonnull(json_dumps(vegalite_spec, JSON_COMPACT));
  char *clean_title = fl__clean_text(title ? title : "cflame flame graph", false);
  fl__buf_t b = {0};
  fl__buf_puts(&b, page_head);
  add_escaped(&b, clean_title);
  free(clean_title);
  fl__buf_puts(&b, page_style);
  fl__buf_puts(&b, svg ? svg : "");
  fl__buf_puts(&b, page_note);
  add_script_json(&b, json);
  fl__buf_puts(&b, page_tail);
  free(json);
  return fl__buf_take(&b);
}
