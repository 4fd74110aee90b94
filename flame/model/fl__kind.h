/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__kind: the option kind='s choices ("cpu|wall|...") and help, written
 * from the table of kinds (fl_profile.c) before main runs, so that the
 * option's row in fl_options.c, const like the rest, has them from the
 * start, and a new kind is a choice without another list to edit. */
#ifndef FL__KIND_H
#define FL__KIND_H

extern char fl__kind_choices[160];
extern char fl__kind_help[512];

#endif
