/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the pprof reader: the input as a bare
 * profile.proto message (FL_INPUT_PPROF, then FL_INPUT_AUTO), and gzipped
 * as pprof files are (FL_INPUT_AUTO: unzipping, then telling the kinds
 * apart); see fuzz_io.h for what every read is checked for. Seeds:
 * corpus/pprof, bare messages. */
#include <stdlib.h>

#include "fuzz_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_io_read(data, size, FL_INPUT_PPROF);
  fuzz_io_read(data, size, FL_INPUT_AUTO);
  size_t zipped_len;
  char *zipped = fl__gzip(data, size, &zipped_len);
  fuzz_io_read((const uint8_t *)zipped, zipped_len, FL_INPUT_AUTO);
  free(zipped);
  return 0;
}
