// SPDX-License-Identifier: Apache-2.0
/*
 * Separate debug information: the file named by the build id under a debug directory
 * (.build-id/xx/rest.debug), or by .gnu_debuglink next to the binary, in its .debug/
 * subdirectory or under the debug directory; and MiniDebugInfo (.gnu_debugdata: an
 * xz-compressed ELF holding a .symtab).
 *
 * Paths are resolved inside the target's mount namespace (/proc/PID/root). A candidate is
 * accepted only if its build id equals the binary's, or (without build ids) its CRC32 equals
 * the debuglink's, so a stale or unrelated file is never used.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "symbol/debugfile.h"
#include "util/log.h"
#include "binary/file.h"

#define DEFAULT_DEBUG_DIR "/usr/lib/debug"
#define MAX_DEBUGDATA	  (256u << 20)

static pthread_mutex_t dirs_lock = PTHREAD_MUTEX_INITIALIZER;
static char *dirs_override; /* colon-separated host directories, or NULL */

void op_symbolize_set_debug_dirs(const char *dirs)
{
	pthread_mutex_lock(&dirs_lock);
	free(dirs_override);
	dirs_override = dirs && *dirs ? strdup(dirs) : NULL;
	pthread_mutex_unlock(&dirs_lock);
}

/*
 * The debug directories to search, as a malloc()ed colon-separated list, and whether they are
 * host paths (set by op_symbolize_set_debug_dirs() or OTELPROF_DEBUG_ROOT) rather than paths
 * inside the target's root.
 */
static char *debug_dirs(bool *host)
{
	const char *env = getenv("OTELPROF_DEBUG_ROOT");
	char *out;

	pthread_mutex_lock(&dirs_lock);
	if (dirs_override) {
		out = strdup(dirs_override);
		*host = true;
	} else if (env && *env) {
		out = strdup(env);
		*host = true;
	} else {
		out = strdup(DEFAULT_DEBUG_DIR);
		*host = false;
	}
	pthread_mutex_unlock(&dirs_lock);
	return out;
}

static bool same_build_id(const struct op_file *f, Elf *elf, bool *had_id)
{
	Elf_Scn *scn = NULL;

	*had_id = false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, next, no, dof;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && d->d_buf && (next = gelf_getnote(d, off, &nh, &no, &dof)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + no, "GNU", 4)) {
				*had_id = true;
				return nh.n_descsz == f->build_id_len &&
				       !memcmp((char *)d->d_buf + dof, f->build_id_raw,
					       f->build_id_len);
			}
			off = next;
		}
	}
	return false;
}

static bool crc_matches(int fd, uint32_t want)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	ssize_t r;

	while ((r = pread(fd, buf, sizeof(buf), off)) > 0) {
		crc = crc32(crc, buf, (uInt)r);
		off += r;
	}
	return r == 0 && (uint32_t)crc == want;
}

/* Open @path and accept it as @f's debug file. Returns the fd, or -1. */
static int try_candidate(const struct op_file *f, const char *path, bool by_build_id)
{
	struct stat st;
	bool had_id = false, ok;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_dev == f->dev && st.st_ino == f->ino)) {
		close(fd);
		return -1;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -1;
	}
	ok = f->build_id_len && same_build_id(f, elf, &had_id);
	elf_end(elf);
	if (!ok && !by_build_id && !(had_id && f->build_id_len))
		ok = crc_matches(fd, f->debuglink_crc);
	if (!ok) {
		op_debug("ignoring debug file %s: it does not match %s", path,
			 f->path ? f->path : "the binary");
		close(fd);
		return -1;
	}
	op_debug("debug file for %s: %s", f->path ? f->path : "?", path);
	return fd;
}

int op_debugfile_open(const struct op_file *f, char *found, size_t found_len)
{
	char path[8192], *dirs, *save = NULL, *dir;
	bool host;
	int fd = -1;

	dirs = debug_dirs(&host);
	if (!dirs)
		return -1;

	/* 1. by build id */
	if (f->build_id_gnu && strlen(f->build_id_gnu) > 2) {
		char *list = strdup(dirs);

		for (dir = list ? strtok_r(list, ":", &save) : NULL; dir && fd < 0;
		     dir = strtok_r(NULL, ":", &save)) {
			snprintf(path, sizeof(path), "%s%s/.build-id/%.2s/%s.debug",
				 host ? "" : f->root, dir, f->build_id_gnu, f->build_id_gnu + 2);
			fd = try_candidate(f, path, true);
			if (fd < 0 && !host && f->root && *f->root) {
				/* debug files installed on the host match by build id too */
				snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", dir,
					 f->build_id_gnu, f->build_id_gnu + 2);
				fd = try_candidate(f, path, true);
			}
		}
		free(list);
	}

	/* 2. by .gnu_debuglink, relative to the binary's directory */
	if (fd < 0 && f->debuglink && f->path && f->path[0] == '/') {
		const char *slash = strrchr(f->path, '/');
		int dlen = (int)(slash - f->path);

		snprintf(path, sizeof(path), "%s%.*s/%s", f->root, dlen, f->path, f->debuglink);
		fd = try_candidate(f, path, false);
		if (fd < 0) {
			snprintf(path, sizeof(path), "%s%.*s/.debug/%s", f->root, dlen, f->path,
				 f->debuglink);
			fd = try_candidate(f, path, false);
		}
		save = NULL;
		for (dir = fd < 0 ? strtok_r(dirs, ":", &save) : NULL; dir && fd < 0;
		     dir = strtok_r(NULL, ":", &save)) {
			snprintf(path, sizeof(path), "%s%s%.*s/%s", host ? "" : f->root, dir, dlen,
				 f->path, f->debuglink);
			fd = try_candidate(f, path, false);
		}
	}
	free(dirs);
	if (fd >= 0 && found)
		snprintf(found, found_len, "%s", path);
	return fd;
}

/* ---------------------------------------------------------------- MiniDebugInfo */

int op_debugdata_symbols(struct op_file *f, Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf_Data *d = NULL;
	lzma_stream s = LZMA_STREAM_INIT;
	uint8_t *out = NULL;
	size_t cap = 0;
	lzma_ret r;
	Elf *inner;
	int ret = -ENOENT;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -EINVAL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".gnu_debugdata") && sh.sh_type == SHT_PROGBITS) {
			d = elf_rawdata(scn, NULL);
			break;
		}
	}
	if (!d || !d->d_buf || !d->d_size)
		return -ENOENT;
	if (lzma_stream_decoder(&s, MAX_DEBUGDATA, 0) != LZMA_OK)
		return -ENOMEM;
	s.next_in = d->d_buf;
	s.avail_in = d->d_size;
	do {
		if (s.avail_out == 0) {
			size_t nc = cap ? cap * 2 : 4 * d->d_size + 65536;
			uint8_t *no;

			if (nc > MAX_DEBUGDATA)
				goto out;
			no = realloc(out, nc);
			if (!no)
				goto out;
			out = no;
			s.next_out = out + cap;
			s.avail_out = nc - cap;
			cap = nc;
		}
		r = lzma_code(&s, LZMA_FINISH);
	} while (r == LZMA_OK);
	if (r != LZMA_STREAM_END) {
		op_debug("cannot decompress .gnu_debugdata of %s (xz error %d)",
			 f->path ? f->path : "?", (int)r);
		ret = -EINVAL;
		goto out;
	}
	inner = elf_memory((char *)out, s.total_out);
	if (inner) {
		if (elf_kind(inner) == ELF_K_ELF) {
			op_file_add_elf_symbols(f, inner, false);
			ret = 0;
		}
		elf_end(inner);
	}
out:
	lzma_end(&s);
	free(out);
	return ret;
}
