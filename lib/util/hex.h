/* SPDX-License-Identifier: Apache-2.0 */
/* Hexadecimal digits, for the parsers of ids and percent-encoding. */
#ifndef OTELPROF_HEX_H
#define OTELPROF_HEX_H

/* The value of hex digit @c (either case), or -1. */
static inline int op_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
