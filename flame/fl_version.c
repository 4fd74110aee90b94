/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_version: the version this library was built as (fl_api.h). */
#include "cflame/fl_api.h"

unsigned int fl_version(void) { return CFLAME_VERSION_HEX; }

const char *fl_version_string(void) { return CFLAME_VERSION_STRING; }
