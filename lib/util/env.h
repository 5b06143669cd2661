/* SPDX-License-Identifier: Apache-2.0 */
/* Tuning from the environment (OTELPROF_*): numbers, refused when bad rather than ignored. */
#ifndef OTELPROF_ENV_H
#define OTELPROF_ENV_H

#include <errno.h>
#include <stdlib.h>

/*
 * The decimal number in environment variable @name: 1 with *@out set; 0 when it is unset or
 * empty; -EINVAL when it is not a number from @lo to @hi (the caller names the variable, the
 * text in *@text and the range in its one-line error).
 */
static inline int op_env_ulong(const char *name, unsigned long lo, unsigned long hi,
			       unsigned long *out, const char **text)
{
	const char *v = getenv(name);
	unsigned long n;
	char *end;

	*text = v;
	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n < lo || n > hi)
		return -EINVAL;
	*out = n;
	return 1;
}

#endif
