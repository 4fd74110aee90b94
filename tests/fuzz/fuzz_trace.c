/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the Chrome trace-event reader (fl_read_profile with
 * FL_INPUT_TRACE, then FL_INPUT_AUTO: JSON sniffed, parsed by jansson under
 * the budget); see fuzz_io.h for what every input is checked for. Seeds:
 * corpus/trace (cflame's own files, small, and other tools' shapes). */
#include "fuzz_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_io_read(data, size, FL_INPUT_TRACE);
  fuzz_io_read(data, size, FL_INPUT_AUTO);
  return 0;
}
