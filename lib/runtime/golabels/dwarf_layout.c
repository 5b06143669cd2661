// SPDX-License-Identifier: Apache-2.0
/*
 * The layout of Go's runtime.g and runtime.m from a binary's DWARF, for Go versions the
 * table in golabels.c does not know. Go puts its runtime types in the DWARF of the runtime
 * package's unit; the walk stops as soon as both structures were seen.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>

#include "binary/filecache.h"
#include "runtime/golabels/golabels.h"
#include "symbol/dwarf.h"
#include "unwind/runtime.h"

struct found {
	int64_t g_m, g_labels, m_curg;
	bool seen_g, seen_m;
};

static void drop(Dwarf_Debug dbg, Dwarf_Error *err)
{
	if (*err) {
		dwarf_dealloc_error(dbg, *err);
		*err = NULL;
	}
}

static int64_t member_offset(Dwarf_Debug dbg, Dwarf_Die die)
{
	Dwarf_Attribute a = NULL;
	Dwarf_Unsigned v = 0;
	Dwarf_Error err = NULL;
	int64_t off = -1;

	if (dwarf_attr(die, DW_AT_data_member_location, &a, &err) != DW_DLV_OK) {
		drop(dbg, &err);
		return -1;
	}
	if (dwarf_formudata(a, &v, &err) == DW_DLV_OK && v < (1u << 20))
		off = (int64_t)v;
	drop(dbg, &err);
	dwarf_dealloc_attribute(a);
	return off;
}

static void scan_struct(Dwarf_Debug dbg, Dwarf_Die st, bool is_g, struct found *f)
{
	Dwarf_Error err = NULL;
	Dwarf_Die c = NULL, next;

	if (dwarf_child(st, &c, &err) != DW_DLV_OK) {
		drop(dbg, &err);
		return;
	}
	while (c) {
		char *name = NULL;

		if (dwarf_diename(c, &name, &err) == DW_DLV_OK && name) {
			if (is_g && !strcmp(name, "m")) {
				f->g_m = member_offset(dbg, c);
			} else if (is_g && !strcmp(name, "labels")) {
				/* an unsafe.Pointer either way: what it points to is the release's
				 */
				f->g_labels = member_offset(dbg, c);
			} else if (!is_g && !strcmp(name, "curg")) {
				f->m_curg = member_offset(dbg, c);
			}
		}
		drop(dbg, &err);
		next = NULL;
		if (dwarf_siblingof_b(dbg, c, 1, &next, &err) != DW_DLV_OK)
			next = NULL;
		drop(dbg, &err);
		dwarf_dealloc_die(c);
		c = next;
	}
}

/* Visit the top-level DIEs of a unit for runtime.g and runtime.m. */
static void scan_unit(Dwarf_Debug dbg, Dwarf_Die cu, struct found *f)
{
	Dwarf_Error err = NULL;
	Dwarf_Die c = NULL, next;

	if (dwarf_child(cu, &c, &err) != DW_DLV_OK) {
		drop(dbg, &err);
		return;
	}
	while (c && !(f->seen_g && f->seen_m)) {
		Dwarf_Half tag = 0;
		char *name = NULL;

		if (dwarf_tag(c, &tag, &err) == DW_DLV_OK && tag == DW_TAG_structure_type &&
		    dwarf_diename(c, &name, &err) == DW_DLV_OK && name) {
			if (!strcmp(name, "runtime.g") && !f->seen_g) {
				f->seen_g = true;
				scan_struct(dbg, c, true, f);
			} else if (!strcmp(name, "runtime.m") && !f->seen_m) {
				f->seen_m = true;
				scan_struct(dbg, c, false, f);
			}
		}
		drop(dbg, &err);
		next = NULL;
		if (dwarf_siblingof_b(dbg, c, 1, &next, &err) != DW_DLV_OK)
			next = NULL;
		drop(dbg, &err);
		dwarf_dealloc_die(c);
		c = next;
	}
	if (c)
		dwarf_dealloc_die(c);
}

int op_golabels_layout_dwarf_fd(int fd, struct op_label_proc *out)
{
	struct found f = { .g_m = -1, .g_labels = -1, .m_curg = -1 };
	Dwarf_Debug dbg = NULL;
	Dwarf_Error err = NULL;
	int res;

	if (!op_dwarf_sane(fd, NULL))
		return -EINVAL;
	op_libdwarf_setup();
	if (dwarf_init_b(fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL, &dbg, &err) !=
	    DW_DLV_OK) {
		if (err)
			dwarf_dealloc_error(NULL, err);
		return -ENOENT;
	}
	for (;;) {
		Dwarf_Unsigned hl, next, toff;
		Dwarf_Half ver, asz, lsz, esz, ct;
		Dwarf_Off ab;
		Dwarf_Sig8 sig;
		Dwarf_Die cu = NULL;

		res = dwarf_next_cu_header_d(dbg, 1, &hl, &ver, &ab, &asz, &lsz, &esz, &sig, &toff,
					     &next, &ct, &err);
		if (res != DW_DLV_OK)
			break;
		if (dwarf_siblingof_b(dbg, NULL, 1, &cu, &err) != DW_DLV_OK) {
			drop(dbg, &err);
			continue;
		}
		if (!(f.seen_g && f.seen_m))
			scan_unit(dbg, cu, &f);
		dwarf_dealloc_die(cu);
	}
	drop(dbg, &err);
	dwarf_finish(dbg, &err);
	if (f.g_m < 0 || f.g_labels < 0 || f.m_curg < 0)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->source = OP_LABELS_GO;
	out->tls_off = -8;
	out->g_m = (uint32_t)f.g_m;
	out->g_labels = (uint32_t)f.g_labels;
	out->m_curg = (uint32_t)f.m_curg;
	return 0;
}

int op_golabels_layout_dwarf(struct op_filecache *files, int pid,
			     const struct op_runtime_mapping *m, struct op_label_proc *out)
{
	char path[96];
	int fd, err;

	(void)files;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = op_golabels_layout_dwarf_fd(fd, out);
	close(fd);
	return err;
}
