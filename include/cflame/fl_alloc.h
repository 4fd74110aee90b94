/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_alloc: what the flame library does when memory runs out.
 *
 * No function of the library returns NULL or an error because memory ran
 * out (docs/LIBRARY.md): every allocation goes through one set of
 * allocators, and when one fails (or asks for a size that does not fit in
 * a size_t) they call the out-of-memory handler. By default it prints
 * "cflame: out of memory (N bytes)" to standard error and aborts, as
 * redis's zmalloc does. A program that wants otherwise (to say it in its
 * own log, to save its work, to exit with a status of its own) sets a
 * handler of its own, as redis's zmalloc_set_oom_handler lets it. */
#ifndef FL_ALLOC_H
#define FL_ALLOC_H

#include <stddef.h>

#include "cflame/fl_api.h"

CFLAME_BEGIN_DECLS

/* Called with the size of the allocation that failed, in bytes (0: a
 * size that does not fit in a size_t, such as a count times an element
 * size that overflows). It must not return into the library: it ends the
 * program (exit, _exit, abort) or jumps out (longjmp), leaving whatever
 * the failing call was building unusable. A handler that returns is
 * followed by the default's message and abort. */
typedef void (*fl_oom_handler_t)(size_t bytes);

/* Makes handler the out-of-memory handler of the flame library (NULL: the
 * default, print and abort) and returns the one it replaces (NULL for the
 * default). Set it before the program's threads use the library; the
 * handler may run on any thread that calls it. */
fl_oom_handler_t fl_set_oom_handler(fl_oom_handler_t handler);

CFLAME_END_DECLS

#endif
