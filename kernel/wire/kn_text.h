/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_text: text the kernel puts on the wire.
 *
 * The kernel assembles text in the flame library's one buffer (fl__buf_t,
 * fl__common.h) and allocates through its allocators, whose out-of-memory
 * policy (a message and abort, or the program's handler) it shares: the
 * kernel cannot serve a session without memory, and every caller would
 * otherwise carry an error path it could not test. */
#ifndef KN_TEXT_H
#define KN_TEXT_H

#include <stddef.h>

#include "fl__common.h"

/* s[0..n) as valid UTF-8 without NUL bytes: each byte that does not
 * belong to a valid UTF-8 sequence becomes U+FFFD (EF BF BD), and NUL bytes
 * are left out (Jupyter's JSON strings cannot hold them). The one cleaner
 * of text for the wire (kn_wire_text, kn_output). New string. */
char *kn_utf8_clean(const unsigned char *s, size_t n);

#endif
