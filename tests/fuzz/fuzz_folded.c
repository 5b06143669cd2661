// SPDX-License-Identifier: Apache-2.0
/* Fuzz the reader of folded stacks (lib/profile/read_folded.c); see fuzz_profile.h for what is
 * checked. */
#include "fuzz_profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_profile_reader(op_read_folded, data, size);
}
