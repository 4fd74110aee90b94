/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the perf script reader (fl_read_profile with
 * FL_INPUT_PERF_SCRIPT, then FL_INPUT_AUTO, which also exercises telling
 * the kinds apart); see fuzz_io.h for what every input is checked for.
 * Seeds: corpus/perfscript. */
#include "fuzz_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_io_read(data, size, FL_INPUT_PERF_SCRIPT);
  fuzz_io_read(data, size, FL_INPUT_AUTO);
  return 0;
}
