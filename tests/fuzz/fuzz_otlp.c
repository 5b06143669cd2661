// SPDX-License-Identifier: Apache-2.0
/* Fuzz the reader of OTLP protobuf (lib/profile/read_otlp.c); see fuzz_profile.h for what is
 * checked. */
#include "fuzz_profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_profile_reader(op_read_otlp, data, size);
}
