/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__pprof: what the pprof reader (fl_pprof_read.c) and writer
 * (fl_pprof.c) share: short names for the messages protobuf-c generates
 * from fl_pprof.proto. */
#ifndef FL__PPROF_H
#define FL__PPROF_H

#include "fl_pprof.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile_t;
typedef Perftools__Profiles__ValueType pb_value_type_t;
typedef Perftools__Profiles__Sample pb_sample_t;
typedef Perftools__Profiles__Label pb_label_t;
typedef Perftools__Profiles__Mapping pb_mapping_t;
typedef Perftools__Profiles__Location pb_location_t;
typedef Perftools__Profiles__Line pb_line_t;
typedef Perftools__Profiles__Function pb_function_t;

#endif
