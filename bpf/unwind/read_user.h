/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the unwinders read the sampled process's memory: 8 bytes at @addr into @dst, 0 on
 * success. In BPF, bpf_probe_read_user(); in a host build (the unit tests that run the unwind
 * step over recorded stacks) the program that includes the step defines op_read_user8().
 */
#ifndef OTELPROF_READ_USER_H
#define OTELPROF_READ_USER_H

#if defined(__bpf__)
#include <bpf/bpf_helpers.h>

static __always_inline long op_read_user8(void *dst, __u64 addr)
{
	return bpf_probe_read_user(dst, 8, (const void *)addr);
}
#else
#include <linux/types.h>

int op_read_user8(void *dst, __u64 addr);
#endif

#endif
