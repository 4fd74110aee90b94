/* SPDX-License-Identifier: BSD-3-Clause */
/* view=icicle: the flame graph upside down, the root at the top and each
 * function's callees below it, as speedscope draws a profile and perf
 * report's call graphs read. It is the flame graph's drawing (fl__view_flame) with the view
 * option icicle set, so every format the flame graph has (the SVG and its
 * script, Vega-Lite, the text report, the HTML page's tab, PNG and PDF)
 * draws it, and a diff too; the text report, a tree from the root down,
 * reads the same either way. */
#include "fl__view.h"

int fl__view_icicle(const fl__view_in_t *in, fl__drawing_t what, fl__drawn_t *out) {
  fl_view_opts_t v = *in->view;
  v.icicle = true;
  fl__view_in_t upside_down = *in;
  upside_down.view = &v;
  return fl__view_flame(&upside_down, what, out);
}
