/* SPDX-License-Identifier: BSD-3-Clause */
/* view=flame and view=callers (the inverted tree, by the row's flag): the
 * flame graph of a profile or of a diff, in each drawing the renderers
 * make of it (fl_vegalite.c, fl_svg.c, fl_text.c, fl_bundle.c). The text
 * report is charged to the budget before it is written. */
#include "cflame/fl_budget.h"
#include "fl__render.h"
#include "fl__view.h"

int fl__view_flame(const fl__view_in_t *in, fl__drawing_t what, fl__drawn_t *out) {
  const fl_diff_t *d = in->diff;
  const fl_tree_t *t = d ? fl_diff_tree(d) : in->tree;
  const fl_view_opts_t *v = in->view;
  switch (what) {
    case FL__DRAW_VEGALITE:
      out->json = d ? fl_vegalite_diff(d, v, in->err, in->err_size)
                    : fl_vegalite(t, v, in->err, in->err_size);
      break;
    case FL__DRAW_SVG: out->text = d ? fl_svg_diff(d, v) : fl_svg(t, v); break;
    case FL__DRAW_TEXT:
      /* cols=10000 of 10^6 frames is 20 GB: charged before it is written. */
      if (fl_budget_charge(in->budget, fl_text_bytes(t, in->text), 0) < 0) {
        fl__budget_refused(in->budget, t, "printing the report", in->err, in->err_size);
        return -1;
      }
      out->text = d          ? fl_text_diff(d, in->text)
                  : in->flat ? fl_text_flat(t, in->text)
                             : fl_text_tree(t, in->text);
      break;
    case FL__DRAW_BUNDLE:
      out->json =
          d ? fl_diff_bundle(d, v, in->err, in->err_size) : fl_bundle(t, v, in->err, in->err_size);
      break;
  }
  return out->json || out->text ? 0 : -1;
}
