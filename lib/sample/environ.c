// SPDX-License-Identifier: Apache-2.0
/* A process's OpenTelemetry resource attributes from its environment; see environ.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sample/environ.h"
#include "util/hex.h"

void op_resource_free(struct op_resource *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < 2 * r->n; i++)
		free(r->kv[i]);
	free(r->kv);
	r->kv = NULL;
	r->n = 0;
}

const char *op_resource_get(const struct op_resource *r, const char *key)
{
	for (size_t i = 0; r && i < r->n; i++)
		if (!strcmp(r->kv[2 * i], key))
			return r->kv[2 * i + 1];
	return NULL;
}

/* Set @key to the @vlen bytes at @val: replaces an earlier value. */
static int put(struct op_resource *r, const char *key, size_t klen, const char *val, size_t vlen)
{
	char *k, *v;
	size_t i;

	if (!klen || klen > OP_RESOURCE_MAX_KEY || vlen > OP_RESOURCE_MAX_VALUE)
		return 0;
	v = strndup(val, vlen);
	if (!v)
		return -ENOMEM;
	for (i = 0; i < r->n; i++) {
		if (strlen(r->kv[2 * i]) == klen && !memcmp(r->kv[2 * i], key, klen)) {
			free(r->kv[2 * i + 1]);
			r->kv[2 * i + 1] = v;
			return 0;
		}
	}
	if (r->n >= OP_RESOURCE_MAX_ATTRS) {
		free(v);
		return 0;
	}
	if (!r->kv) {
		r->kv = calloc(2 * OP_RESOURCE_MAX_ATTRS, sizeof(*r->kv));
		if (!r->kv) {
			free(v);
			return -ENOMEM;
		}
	}
	k = strndup(key, klen);
	if (!k) {
		free(v);
		return -ENOMEM;
	}
	r->kv[2 * r->n] = k;
	r->kv[2 * r->n + 1] = v;
	r->n++;
	return 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Trim [*s, *e) of spaces. */
static void trim(const char **s, const char **e)
{
	while (*s < *e && is_space(**s))
		(*s)++;
	while (*e > *s && is_space((*e)[-1]))
		(*e)--;
}

/* OTEL_RESOURCE_ATTRIBUTES: key1=value1,key2=value2 (values percent-encoded). */
static int parse_attrs(const char *s, size_t len, struct op_resource *r)
{
	const char *end = s + len;
	char val[OP_RESOURCE_MAX_VALUE + 1];

	while (s < end) {
		const char *comma = memchr(s, ',', (size_t)(end - s)), *eq, *ks, *ke, *vs, *ve;
		size_t n = 0;
		bool ok = true;
		int err;

		if (!comma)
			comma = end;
		eq = memchr(s, '=', (size_t)(comma - s));
		if (eq) {
			ks = s;
			ke = eq;
			vs = eq + 1;
			ve = comma;
			trim(&ks, &ke);
			trim(&vs, &ve);
			for (const char *p = vs; p < ve && ok; p++) {
				int c = (unsigned char)*p;

				if (c == '%') {
					int h = p + 2 < ve ? op_hexval(p[1]) : -1;
					int l = p + 2 < ve ? op_hexval(p[2]) : -1;

					if (h < 0 || l < 0) {
						ok = false; /* the spec: drop a malformed pair */
						break;
					}
					c = h * 16 + l;
					p += 2;
				}
				if (n >= OP_RESOURCE_MAX_VALUE) {
					ok = false;
					break;
				}
				val[n++] = (char)c;
			}
			if (ok && ke > ks) {
				err = put(r, ks, (size_t)(ke - ks), val, n);
				if (err)
					return err;
			}
		}
		s = comma + 1;
	}
	return 0;
}

int op_resource_from_environ(const char *env, size_t len, struct op_resource *out)
{
	static const char attrs[] = "OTEL_RESOURCE_ATTRIBUTES=", name[] = "OTEL_SERVICE_NAME=";
	const char *p = env, *end = env + len, *svc = NULL;
	size_t svc_len = 0;
	int err;

	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		size_t l = nul ? (size_t)(nul - p) : (size_t)(end - p);

		if (l > sizeof(attrs) - 1 && !memcmp(p, attrs, sizeof(attrs) - 1)) {
			err = parse_attrs(p + sizeof(attrs) - 1, l - (sizeof(attrs) - 1), out);
			if (err) {
				op_resource_free(out);
				return err;
			}
		} else if (l > sizeof(name) - 1 && !memcmp(p, name, sizeof(name) - 1)) {
			svc = p + sizeof(name) - 1;
			svc_len = l - (sizeof(name) - 1);
		}
		p += l + 1;
	}
	/* OTEL_SERVICE_NAME wins over service.name in OTEL_RESOURCE_ATTRIBUTES */
	if (svc) {
		const char *s = svc, *e = svc + svc_len;

		trim(&s, &e);
		if (e > s && (err = put(out, "service.name", 12, s, (size_t)(e - s)))) {
			op_resource_free(out);
			return err;
		}
	}
	return 0;
}

/* Is the @nlen-byte name at @name in the comma-separated list @names? */
static bool name_listed(const char *names, const char *name, size_t nlen)
{
	const char *p = names;

	while (*p) {
		const char *comma = strchr(p, ','), *s = p, *e;

		if (!comma)
			comma = p + strlen(p);
		e = comma;
		trim(&s, &e);
		if ((size_t)(e - s) == nlen && !memcmp(s, name, nlen))
			return true;
		p = *comma ? comma + 1 : comma;
	}
	return false;
}

int op_resource_env_vars(const char *env, size_t len, const char *names, struct op_resource *out)
{
	const char *p = env, *end = env + len;
	char key[OP_RESOURCE_MAX_KEY + 1];
	const size_t plen = sizeof(OP_ENV_VAR_ATTR_PREFIX) - 1;
	int err;

	if (!names || !*names)
		return 0;
	memcpy(key, OP_ENV_VAR_ATTR_PREFIX, plen);
	while (p < end) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		size_t l = nul ? (size_t)(nul - p) : (size_t)(end - p);
		const char *eq = memchr(p, '=', l);

		if (eq && eq > p && plen + (size_t)(eq - p) <= OP_RESOURCE_MAX_KEY &&
		    name_listed(names, p, (size_t)(eq - p))) {
			size_t klen = plen + (size_t)(eq - p);

			memcpy(key + plen, p, (size_t)(eq - p));
			err = put(out, key, klen, eq + 1, l - (size_t)(eq - p) - 1);
			if (err)
				return err;
		}
		p += l + 1;
	}
	return 0;
}

int op_resource_read(int pid, struct op_resource *out)
{
	return op_resource_read_vars(pid, true, NULL, out);
}

int op_resource_read_vars(int pid, bool otel, const char *names, struct op_resource *out)
{
	char path[32], *buf;
	size_t len = 0;
	ssize_t n;
	int fd, err;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(OP_ENVIRON_MAX_BYTES);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (len < OP_ENVIRON_MAX_BYTES &&
	       (n = read(fd, buf + len, OP_ENVIRON_MAX_BYTES - len)) > 0)
		len += (size_t)n;
	close(fd);
	err = otel ? op_resource_from_environ(buf, len, out) : 0;
	if (!err)
		err = op_resource_env_vars(buf, len, names, out);
	free(buf);
	return err;
}
