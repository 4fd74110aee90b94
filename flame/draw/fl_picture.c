/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_picture: a view's SVG as a PNG or a PDF (fl_render.h), drawn by
 * librsvg onto a cairo surface: an image surface at dpi for PNG (the SVG's
 * pixels are CSS pixels, 96 to the inch), a PDF surface in points for PDF,
 * whose text and shapes stay vectors. Fonts are found by fontconfig from
 * the SVG's own font-family lists, as a browser finds them. */
#define _GNU_SOURCE
#include <cairo-pdf.h>
#include <cairo.h>
#include <librsvg/rsvg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_render.h"
#include "fl__common.h"

#define CSS_DPI 96.0
/* The largest picture drawn, in pixels a side: a bounded graph is far
 * smaller; this keeps a huge dpi= from asking for gigabytes. */
#define MAX_SIDE_PX 20000

char *fl_picture_base64(const char *data, size_t len) {
  gchar *b64 = g_base64_encode((const guchar *)data, len);
  char *out = fl__xstrdup(b64);
  g_free(b64);
  return out;
}

/* cairo's stream writer: appends to a buffer. */
static cairo_status_t append(void *closure, const unsigned char *data, unsigned int length) {
  fl__buf_add(closure, (const char *)data, length);
  return CAIRO_STATUS_SUCCESS;
}

/* The SVG parsed, with its size in CSS pixels. NULL with err. */
static RsvgHandle *parse(const char *svg, size_t len, double *w, double *h, char *err,
                         size_t err_size) {
  GError *gerr = NULL;
  RsvgHandle *handle = rsvg_handle_new_from_data((const guint8 *)svg, len, &gerr);
  if (!handle) {
    snprintf(err, err_size, "cannot read the SVG to draw it: %s",
             gerr ? gerr->message : "unknown error");
    if (gerr) g_error_free(gerr);
    return NULL;
  }
  rsvg_handle_set_dpi(handle, CSS_DPI);
  /* The SVG's width and height, in pixels; else its viewBox's. */
  gboolean has_w, has_h, has_box;
  RsvgLength lw, lh;
  RsvgRectangle box;
  rsvg_handle_get_intrinsic_dimensions(handle, &has_w, &lw, &has_h, &lh, &has_box, &box);
  if (has_w && has_h && lw.unit == RSVG_UNIT_PX && lh.unit == RSVG_UNIT_PX) {
    *w = lw.length;
    *h = lh.length;
  } else if (has_box) {
    *w = box.width;
    *h = box.height;
  } else {
    *w = *h = 0;
  }
  if (*w <= 0 || *h <= 0) {
    snprintf(err, err_size, "the SVG has no size to draw it at");
    g_object_unref(handle);
    return NULL;
  }
  return handle;
}

/* Draws handle on cr over w x h. -1 with err. */
static int draw(RsvgHandle *handle, cairo_t *cr, double w, double h, char *err, size_t err_size) {
  RsvgRectangle viewport = {0, 0, w, h};
  GError *gerr = NULL;
  if (!rsvg_handle_render_document(handle, cr, &viewport, &gerr)) {
    snprintf(err, err_size, "cannot draw the SVG: %s", gerr ? gerr->message : "unknown error");
    if (gerr) g_error_free(gerr);
    return -1;
  }
  return 0;
}

char *fl_picture_png(const char *svg, size_t svg_len, double dpi, size_t *len, char *err,
                     size_t err_size) {
  double w, h;
  RsvgHandle *handle = parse(svg, svg_len, &w, &h, err, err_size);
  if (!handle) return NULL;
  double scale = dpi / CSS_DPI;
  int pw = (int)ceil(w * scale), ph = (int)ceil(h * scale);
  char *out = NULL;
  if (pw > MAX_SIDE_PX || ph > MAX_SIDE_PX) {
    snprintf(err, err_size,
             "dpi=%g makes a picture of %d x %d pixels, more than %d a side: "
             "lower dpi=",
             dpi, pw, ph, MAX_SIDE_PX);
    goto done;
  }
  cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, pw, ph);
  cairo_t *cr = cairo_create(surface);
  cairo_scale(cr, scale, scale);
  fl__buf_t b = FL__BUF_INIT;
  if (draw(handle, cr, w, h, err, err_size) == 0) {
    cairo_surface_flush(surface);
    if (cairo_surface_write_to_png_stream(surface, append, &b) == CAIRO_STATUS_SUCCESS) {
      *len = b.len;
      out = fl__buf_take(&b);
    } else {
      snprintf(err, err_size, "cannot write the PNG");
    }
  }
  fl__buf_free(&b);
  cairo_destroy(cr);
  cairo_surface_destroy(surface);
done:
  g_object_unref(handle);
  return out;
}

char *fl_picture_pdf(const char *svg, size_t svg_len, size_t *len, char *err, size_t err_size) {
  double w, h;
  RsvgHandle *handle = parse(svg, svg_len, &w, &h, err, err_size);
  if (!handle) return NULL;
  /* Points: 72 to the inch. */
  double scale = 72.0 / CSS_DPI;
  fl__buf_t b = FL__BUF_INIT;
  cairo_surface_t *surface = cairo_pdf_surface_create_for_stream(append, &b, w * scale, h * scale);
  cairo_t *cr = cairo_create(surface);
  cairo_scale(cr, scale, scale);
  char *out = NULL;
  int rc = draw(handle, cr, w, h, err, err_size);
  cairo_destroy(cr);
  cairo_surface_finish(surface); /* writes the file's end */
  if (rc == 0 && cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS) {
    *len = b.len;
    out = fl__buf_take(&b);
  } else if (rc == 0) {
    snprintf(err, err_size, "cannot write the PDF: %s",
             cairo_status_to_string(cairo_surface_status(surface)));
  }
  cairo_surface_destroy(surface);
  fl__buf_free(&b);
  g_object_unref(handle);
  return out;
}
