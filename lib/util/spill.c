// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "util/log.h"
#include "util/spill.h"

#define SPILL_DEFAULT_DIR "/var/tmp"
#define TMPFS_FS_MAGIC	  0x01021994
#define RAMFS_FS_MAGIC	  0x858458f6

static pthread_once_t spill_once = PTHREAD_ONCE_INIT;
static int spill_dfd = -1;

/*
 * Why @dir cannot hold spill files: logged as a warning when the user named it
 * (OTELPROF_SPILL_DIR), at debug level for the default.
 */
static void spill_refused(bool asked, const char *dir, const char *why)
{
	if (asked)
		op_warn("OTELPROF_SPILL_DIR=%s: %s; inflated debug sections and kernel symbols "
			"stay "
			"in memory (set it to a directory on a disk file system, or empty for "
			"memory)",
			dir, why);
	else
		op_debug("large tables stay in memory: %s: %s", dir, why);
}

static void spill_open(void)
{
	const char *dir = getenv("OTELPROF_SPILL_DIR");
	bool asked = dir != NULL;
	struct statfs sf;
	int fd, probe;

	if (!dir)
		dir = SPILL_DEFAULT_DIR;
	if (!*dir)
		return;
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		spill_refused(asked, dir, strerror(errno));
		return;
	}
	if (fstatfs(fd, &sf) == 0 && (sf.f_type == TMPFS_FS_MAGIC || sf.f_type == RAMFS_FS_MAGIC)) {
		spill_refused(asked, dir,
			      "it is in RAM (tmpfs or ramfs): spilling there frees nothing");
		close(fd);
		return;
	}
	/* unlinked files must be possible there (O_TMPFILE: not on every file system) */
	probe = openat(fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (probe < 0) {
		spill_refused(asked, dir, strerror(errno));
		close(fd);
		return;
	}
	close(probe);
	spill_dfd = fd;
}

bool op_spill_available(void)
{
	pthread_once(&spill_once, spill_open);
	return spill_dfd >= 0;
}

void *op_spill_copy(const struct iovec *iov, int n, size_t *size)
{
	struct iovec left[8];
	size_t total = 0, done = 0;
	void *p;
	int fd;

	if (n <= 0 || n > 8 || !op_spill_available())
		return NULL;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	if (!total)
		return NULL;
	fd = openat(spill_dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	memcpy(left, iov, (size_t)n * sizeof(*iov));
	while (done < total) {
		ssize_t w = pwritev(fd, left, n, (off_t)done);
		size_t k = w > 0 ? (size_t)w : 0;

		if (w <= 0) {
			close(fd);
			return NULL; /* a full disk: said here, not as SIGBUS on a later write */
		}
		done += k;
		for (int i = 0; i < n && k; i++) {
			size_t m = left[i].iov_len < k ? left[i].iov_len : k;

			left[i].iov_base = (char *)left[i].iov_base + m;
			left[i].iov_len -= m;
			k -= m;
		}
	}
	p = mmap(NULL, total, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	*size = total;
	return p;
}

void op_spill_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

void op_spill_release(void *p, size_t size)
{
	if (p)
		madvise(p, size, MADV_DONTNEED);
}
