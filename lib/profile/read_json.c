// SPDX-License-Identifier: Apache-2.0
/*
 * OTLP/JSON reader: the collector file exporter's output, one ExportProfilesServiceRequest
 * (ProfilesData, the same fields) per line. Each document is parsed by json-c and turned into
 * the protobuf-c message by walking the message descriptors (the protobuf JSON mapping:
 * lowerCamelCase or original field names, 64-bit integers as strings or numbers, bytes in
 * base64), with OTLP's one exception: trace, span and profile ids are hex. The result goes
 * through the same import as the protobuf reader (op_import_otlp).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "profile/read.h"
#include "profile/read_internal.h"

#define MAX_DEPTH 64

struct jctx {
	struct op_arena *arena;
	char *err;
	size_t errlen;
	const char *where;
	const char *field; /* for messages */
};

static int jfail(struct jctx *c, const char *what)
{
	return op_errf(c->err, c->errlen, "%scorrupt OTLP/JSON: field \"%s\" %s", c->where,
		       c->field ? c->field : "?", what);
}

/* Does the JSON key name the field: its own name or the lowerCamelCase form of it? */
static bool key_matches(const char *key, const char *name)
{
	if (!strcmp(key, name))
		return true;
	while (*key && *name) {
		if (*name == '_' && name[1] >= 'a' && name[1] <= 'z') {
			if (*key != name[1] - 'a' + 'A')
				return false;
			name += 2;
			key++;
			continue;
		}
		if (*key != *name)
			return false;
		key++;
		name++;
	}
	return !*key && !*name;
}

static const ProtobufCFieldDescriptor *find_field(const ProtobufCMessageDescriptor *d,
						  const char *key)
{
	for (unsigned i = 0; i < d->n_fields; i++)
		if (key_matches(key, d->fields[i].name))
			return &d->fields[i];
	return NULL;
}

static size_t elem_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	}
	return 0;
}

/* An integer given as a JSON number or a decimal string. */
static int get_int(struct jctx *c, json_object *v, bool is_signed, int64_t *si, uint64_t *ui)
{
	const char *s;
	char *end;

	errno = 0;
	switch (json_object_get_type(v)) {
	case json_type_int:
		/* json-c keeps integers above INT64_MAX as uint64 */
		*ui = json_object_get_uint64(v);
		*si = json_object_get_int64(v);
		if (!is_signed && *si < 0)
			return jfail(c, "holds a negative number for an unsigned field");
		return 0;
	case json_type_double: {
		double dv = json_object_get_double(v);

		if (dv != (double)(int64_t)dv)
			return jfail(c, "holds a fraction where an integer belongs");
		*si = (int64_t)dv;
		*ui = (uint64_t)*si;
		return 0;
	}
	case json_type_string:
		s = json_object_get_string(v);
		if (is_signed) {
			*si = strtoll(s, &end, 10);
			*ui = (uint64_t)*si;
		} else {
			if (*s == '-')
				return jfail(c, "holds a negative number for an unsigned field");
			*ui = strtoull(s, &end, 10);
			*si = (int64_t)*ui;
		}
		if (errno || end == s || *end)
			return jfail(c, "holds a string that is not an integer");
		return 0;
	default:
		return jfail(c, "is not an integer");
	}
}

static int b64val(int ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+' || ch == '-')
		return 62;
	if (ch == '/' || ch == '_')
		return 63;
	return -1;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static int get_bytes(struct jctx *c, json_object *v, bool hex, ProtobufCBinaryData *out)
{
	const char *s;
	size_t len, i, n = 0;
	uint32_t acc = 0;
	int bits = 0;

	if (!json_object_is_type(v, json_type_string))
		return jfail(c, "is not a string of bytes");
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	out->data = op_arena_alloc(c->arena, len / 2 + 4);
	if (!out->data)
		return op_errf(c->err, c->errlen, "out of memory");
	if (hex) {
		if (len % 2)
			return jfail(c, "is not hex (an odd number of digits)");
		for (i = 0; i < len; i += 2) {
			int h = hexval(s[i]), l = hexval(s[i + 1]);

			if (h < 0 || l < 0)
				return jfail(c, "is not hex");
			out->data[n++] = (uint8_t)(h << 4 | l);
		}
	} else {
		for (i = 0; i < len && s[i] != '='; i++) {
			int b = b64val((unsigned char)s[i]);

			if (b < 0)
				return jfail(c, "is not base64");
			acc = acc << 6 | (uint32_t)b;
			bits += 6;
			if (bits >= 8) {
				bits -= 8;
				out->data[n++] = (uint8_t)(acc >> bits);
			}
		}
	}
	out->len = n;
	return 0;
}

static int to_message(struct jctx *c, json_object *o, const ProtobufCMessageDescriptor *d,
		      ProtobufCMessage **out, int depth);

/* One value of field @f from @v into @dst. */
static int to_value(struct jctx *c, json_object *v, const ProtobufCFieldDescriptor *f, void *dst,
		    int depth)
{
	int64_t si = 0;
	uint64_t ui = 0;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_ENUM:
		if (get_int(c, v, true, &si, &ui))
			return -1;
		if (si < INT32_MIN || si > INT32_MAX)
			return jfail(c, "is out of range for a 32-bit integer");
		*(int32_t *)dst = (int32_t)si;
		return 0;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		if (get_int(c, v, false, &si, &ui))
			return -1;
		if (ui > UINT32_MAX)
			return jfail(c, "is out of range for a 32-bit integer");
		*(uint32_t *)dst = (uint32_t)ui;
		return 0;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		if (get_int(c, v, true, &si, &ui))
			return -1;
		*(int64_t *)dst = si;
		return 0;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		if (get_int(c, v, false, &si, &ui))
			return -1;
		*(uint64_t *)dst = ui;
		return 0;
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_object_is_type(v, json_type_boolean))
			return jfail(c, "is not true or false");
		*(protobuf_c_boolean *)dst = json_object_get_boolean(v);
		return 0;
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE: {
		double dv;

		if (json_object_is_type(v, json_type_double) ||
		    json_object_is_type(v, json_type_int))
			dv = json_object_get_double(v);
		else if (json_object_is_type(v, json_type_string))
			dv = strtod(json_object_get_string(v), NULL); /* "NaN", "Infinity" */
		else
			return jfail(c, "is not a number");
		if (f->type == PROTOBUF_C_TYPE_FLOAT)
			*(float *)dst = (float)dv;
		else
			*(double *)dst = dv;
		return 0;
	}
	case PROTOBUF_C_TYPE_STRING: {
		size_t len;
		char *s;

		if (!json_object_is_type(v, json_type_string))
			return jfail(c, "is not a string");
		len = (size_t)json_object_get_string_len(v);
		s = op_arena_alloc(c->arena, len + 1);
		if (!s)
			return op_errf(c->err, c->errlen, "out of memory");
		memcpy(s, json_object_get_string(v), len);
		s[len] = 0;
		*(char **)dst = s;
		return 0;
	}
	case PROTOBUF_C_TYPE_BYTES:
		/* OTLP/JSON writes ids in hex, other bytes in base64 */
		return get_bytes(c, v,
				 !strcmp(f->name, "trace_id") || !strcmp(f->name, "span_id") ||
					 !strcmp(f->name, "profile_id"),
				 dst);
	case PROTOBUF_C_TYPE_MESSAGE:
		return to_message(c, v, f->descriptor, (ProtobufCMessage **)dst, depth + 1);
	}
	return jfail(c, "has a type this reader does not know");
}

static int to_message(struct jctx *c, json_object *o, const ProtobufCMessageDescriptor *d,
		      ProtobufCMessage **out, int depth)
{
	ProtobufCMessage *m;

	if (depth > MAX_DEPTH)
		return jfail(c, "nests too deep");
	if (!json_object_is_type(o, json_type_object))
		return jfail(c, "is not an object");
	m = op_arena_alloc(c->arena, d->sizeof_message);
	if (!m)
		return op_errf(c->err, c->errlen, "out of memory");
	d->message_init(m);
	json_object_object_foreach(o, key, v)
	{
		const ProtobufCFieldDescriptor *f = find_field(d, key);
		char *base = (char *)m;

		/* unknown fields are skipped, as pdata's reader does; null is the default */
		if (!f || json_object_is_type(v, json_type_null))
			continue;
		c->field = key;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n, i, es = elem_size(f);
			char *arr;

			if (!json_object_is_type(v, json_type_array))
				return jfail(c, "is not an array");
			n = json_object_array_length(v);
			arr = op_arena_alloc(c->arena, (n ? n : 1) * es);
			if (!arr)
				return op_errf(c->err, c->errlen, "out of memory");
			for (i = 0; i < n; i++) {
				c->field = key;
				if (to_value(c, json_object_array_get_idx(v, i), f, arr + i * es,
					     depth))
					return -1;
			}
			*(size_t *)(base + f->quantifier_offset) = n;
			*(void **)(base + f->offset) = arr;
		} else {
			if (to_value(c, v, f, base + f->offset, depth))
				return -1;
			if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
				*(uint32_t *)(base + f->quantifier_offset) = f->id;
			else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
				 f->type != PROTOBUF_C_TYPE_MESSAGE &&
				 f->type != PROTOBUF_C_TYPE_STRING)
				*(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
		}
	}
	*out = m;
	return 0;
}

int op_read_otlp_json(struct op_data *d, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	json_tokener *tok = json_tokener_new_ex(MAX_DEPTH);
	size_t pos = 0, line = 1, docs = 0;
	int rc = -1;

	if (!tok)
		return op_errf(err, errlen, "out of memory");
	while (pos < len) {
		struct op_arena arena = { 0 };
		struct jctx c = { .arena = &arena, .err = err, .errlen = errlen };
		ProtobufCMessage *msg = NULL;
		char where[48];
		json_object *o;
		size_t start;
		enum json_tokener_error je;

		/* documents are separated by whitespace (a newline, in the file exporter's output)
		 */
		while (pos < len && (buf[pos] == ' ' || buf[pos] == '\n' || buf[pos] == '\r' ||
				     buf[pos] == '\t'))
			line += buf[pos++] == '\n';
		if (pos == len)
			break;
		start = pos;
		json_tokener_reset(tok);
		o = json_tokener_parse_ex(tok, (const char *)buf + pos,
					  (int)(len - pos > INT32_MAX ? INT32_MAX : len - pos));
		je = json_tokener_get_error(tok);
		if (!o) {
			if (je == json_tokener_continue)
				op_errf(err, errlen,
					"line %zu: truncated JSON (the document does not end: the "
					"file ends early)",
					line);
			else
				op_errf(err, errlen, "line %zu: not JSON (%s)", line,
					json_tokener_error_desc(je));
			goto out;
		}
		pos += json_tokener_get_parse_end(tok);
		snprintf(where, sizeof(where), "line %zu: ", line);
		c.where = where;
		if (!json_object_is_type(o, json_type_object)) {
			op_errf(err, errlen, "%snot an OTLP/JSON document (an object expected)",
				where);
		} else if (!json_object_object_get_ex(o, "resourceProfiles", NULL) &&
			   !json_object_object_get_ex(o, "resource_profiles", NULL) &&
			   !json_object_object_get_ex(o, "dictionary", NULL)) {
			op_errf(err, errlen,
				"%sJSON, but not OTLP profiles (no resourceProfiles or dictionary)",
				where);
		} else if (
			!to_message(
				&c, o,
				&opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor,
				&msg, 0)) {
			rc = op_import_otlp(d, (const OpOtlpRequest *)msg, where, err, errlen);
		}
		json_object_put(o);
		op_arena_free(&arena);
		if (!msg || rc) {
			rc = -1;
			goto out;
		}
		docs++;
		rc = -1;
		for (size_t i = start; i < pos; i++)
			line += buf[i] == '\n';
	}
	rc = docs ? 0 : op_errf(err, errlen, "no OTLP/JSON document in the file");
out:
	json_tokener_free(tok);
	return rc;
}
