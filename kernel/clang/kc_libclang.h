/* SPDX-License-Identifier: BSD-3-Clause */
/* kc_libclang: what libclang knows about a translation unit, in
 * cflame-clang (the only code of cflame that calls libclang).
 *
 * Completion and inspection read the session's C with libclang, on the
 * translation unit the session would compile (kn_session_unit_text). The
 * unit is kept from job to job with a precompiled preamble (the #include
 * lines at its top: the prelude and the session's headers), so that the
 * headers are compiled once and a request costs a parse of the session's
 * own declarations and the cell. Inspection reparses the unit with its
 * job's text; completion parses its text itself against the unit's
 * preamble, and reparses the unit only when the preamble's text changed
 * (an #include added to the session). A job whose compiler arguments or
 * file name differ starts a new unit. */
#ifndef KC_LIBCLANG_H
#define KC_LIBCLANG_H

#include "kn_clangmsg.h"

typedef struct kc_libclang kc_libclang_t;

/* A libclang index with no unit yet (new; it lives as long as the
 * process). */
kc_libclang_t *kc_libclang_new(void);

/* Does job, filling in r's matches or symbol, error, and timings. */
void kc_libclang_run(kc_libclang_t *c, const kn_clang_job_t *job, kn_clang_result_t *r);

#endif
