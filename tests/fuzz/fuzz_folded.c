/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the folded stacks reader (fl_read_profile with
 * FL_INPUT_FOLDED, then FL_INPUT_AUTO) and fl_folded; see fuzz_io.h for
 * what every input is checked for. Seeds: corpus/folded. */
#include "fuzz_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_io_read(data, size, FL_INPUT_FOLDED);
  fuzz_io_read(data, size, FL_INPUT_AUTO);
  return 0;
}
