/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_api: what every installed header of cflame opens with.
 *
 *   CFLAME_BEGIN_DECLS / CFLAME_END_DECLS  around each header's
 *       declarations: C linkage for C++ (extern "C"), and default
 *       visibility, so that what the headers declare is the library's
 *       interface. The library itself is built with -fvisibility=hidden:
 *       its internals (fl__*) are not exported from a shared object that
 *       links it.
 *   CFLAME_API  the same visibility for a single declaration outside those
 *       bounds.
 *
 * The version (CFLAME_VERSION_MAJOR, _MINOR, _PATCH, _STRING, _HEX) is in
 * cflame/fl_version.h, which CMake writes from project() and which this
 * header includes: the version a program was compiled against.
 * fl_version() and fl_version_string() give the version of the library it
 * was linked with (as jansson's jansson_version_str() and libuv's
 * uv_version() do): they differ only when headers and library come from
 * different builds. */
#ifndef FL_API_H
#define FL_API_H

#include "cflame/fl_version.h"

#define CFLAME_API __attribute__((visibility("default")))

#ifdef __cplusplus
#define CFLAME_BEGIN_DECLS \
  extern "C" {             \
  _Pragma("GCC visibility push(default)")
#define CFLAME_END_DECLS        \
  _Pragma("GCC visibility pop") \
  }
#else
#define CFLAME_BEGIN_DECLS _Pragma("GCC visibility push(default)")
#define CFLAME_END_DECLS _Pragma("GCC visibility pop")
#endif

CFLAME_BEGIN_DECLS

/* The running library's CFLAME_VERSION_HEX (0xMMmmpp). */
unsigned int fl_version(void);

/* The running library's CFLAME_VERSION_STRING ("0.1.0"): static. */
const char *fl_version_string(void);

CFLAME_END_DECLS

#endif
