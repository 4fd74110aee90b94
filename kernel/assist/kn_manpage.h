/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_manpage: a C library function's manual page, for inspection.
 *
 * The page comes from man(1) (Debian's man-db, with the pages of
 * manpages-dev), run in a process group of its own with its output on a
 * pipe that the kernel's main loop polls: the kernel never waits for it.
 * The page is plain text 80 columns wide, without hyphenation or
 * justification, so that its lines read well when quoted.
 *
 * Which page: a function's is looked for in section 3 (the C library),
 * then 2 (system calls); a type's in 3type, then 3. A page counts only
 * when its file is named after the name in that very section: `man 3 stat`
 * would give the page of struct stat (stat.3type), not of stat(2). */
#ifndef KN_MANPAGE_H
#define KN_MANPAGE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct kn_manpage kn_manpage_t;

/* Starts man for name (a function's page, or with is_type a type's).
 * Returns the job, or NULL with err when man cannot be run. */
kn_manpage_t *kn_manpage_start(const char *name, bool is_type, char *err, size_t err_size);
/* The descriptor to poll for reading while the page comes; -1 once it has
 * all come. */
int kn_manpage_fd(const kn_manpage_t *m);
/* Reads what man wrote; true once the page is complete (or there is none).
 * Never blocks. */
bool kn_manpage_poll(kn_manpage_t *m);
/* The page's text ("" when there is no page). Borrowed. */
const char *kn_manpage_text(const kn_manpage_t *m);
/* Stops man if it is still running, and frees the job. */
void kn_manpage_destroy(kn_manpage_t **m);

/* From a page's text: its title ("printf(3)"), its SYNOPSIS section
 * without the page's indent and without the feature-test macro
 * requirements ("#include <stdio.h>\n\nint printf(...);\n..."), and the
 * first paragraph of its DESCRIPTION, its words in lines of at most 76
 * columns ("The functions in the printf() family produce output ...").
 * Each is new, or NULL when the page has no such part. */
void kn_manpage_summary(const char *page, char **title, char **synopsis, char **description);

#endif
