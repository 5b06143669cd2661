// SPDX-License-Identifier: Apache-2.0
/*
 * Process tracker: /proc/PID/maps lines (spaces in paths, "(deleted)", anonymous, malformed),
 * container ids from cgroup paths, and the table on this process and on a child that exits.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sample/proc.h"
#include "symbol/symbolize.h"

static void test_maps_lines(void)
{
	struct op_maps_entry *e = malloc(sizeof(*e));

	REQUIRE(e);
	CHECK_EQ(op_parse_maps_line("55d0c4a8c000-55d0c4a8e000 r-xp 00002000 fe:01 1234567    "
				    "      /usr/bin/cat\n",
				    e),
		 0);
	CHECK_EQ(e->start, 0x55d0c4a8c000ull);
	CHECK_EQ(e->end, 0x55d0c4a8e000ull);
	CHECK_EQ(e->offset, 0x2000);
	CHECK_EQ(e->dev_major, 0xfe);
	CHECK_EQ(e->dev_minor, 1);
	CHECK_EQ(e->inode, 1234567);
	CHECK(e->readable && !e->writable && e->executable && e->private_);
	CHECK(!e->deleted);
	CHECK_STR(e->path, "/usr/bin/cat");

	/* spaces inside the path, and no newline */
	CHECK_EQ(op_parse_maps_line("7f0000000000-7f0000001000 r-xs 00000000 08:10 42 "
				    "/opt/my app/lib  two.so",
				    e),
		 0);
	CHECK_STR(e->path, "/opt/my app/lib  two.so");
	CHECK(!e->private_);

	/* deleted: the suffix is dropped and flagged */
	CHECK_EQ(op_parse_maps_line("7f0000000000-7f0000001000 r-xp 00001000 103:02 77 "
				    "/tmp/old lib.so (deleted)\n",
				    e),
		 0);
	CHECK_STR(e->path, "/tmp/old lib.so");
	CHECK(e->deleted);
	CHECK_EQ(e->dev_major, 0x103);
	CHECK_EQ(e->dev_minor, 2);

	/* anonymous executable memory (JIT) and pseudo paths */
	CHECK_EQ(op_parse_maps_line("7f1000000000-7f1000100000 rwxp 00000000 00:00 0 \n", e), 0);
	CHECK_STR(e->path, "");
	CHECK(e->executable && e->writable);
	CHECK_EQ(op_parse_maps_line("7f1000000000-7f1000100000 rwxp 00000000 00:00 0", e), 0);
	CHECK_STR(e->path, "");
	CHECK_EQ(op_parse_maps_line("7ffd1e5f0000-7ffd1e5f2000 r-xp 00000000 00:00 0      "
				    "                    [vdso]\n",
				    e),
		 0);
	CHECK_STR(e->path, "[vdso]");
	CHECK(!e->deleted);
	CHECK_EQ(op_parse_maps_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  "
				    "[vsyscall]",
				    e),
		 0);
	CHECK_EQ(e->start, 0xffffffffff600000ull);
	CHECK_STR(e->path, "[vsyscall]");

	/* malformed */
	CHECK_EQ(op_parse_maps_line("", e), -EINVAL);
	CHECK_EQ(op_parse_maps_line("garbage", e), -EINVAL);
	CHECK_EQ(op_parse_maps_line("1000-", e), -EINVAL);
	CHECK_EQ(op_parse_maps_line("2000-1000 r-xp 00000000 00:00 0 /x", e), -EINVAL);
	CHECK_EQ(op_parse_maps_line("1000-2000 rxp 00000000 00:00 0 /x", e), -EINVAL);
	CHECK_EQ(op_parse_maps_line("1000-2000 r-xq 00000000 00:00 0 /x", e), -EINVAL);
	CHECK_EQ(op_parse_maps_line("1000-2000 r-xp 0000000g 00:00 0 /x", e), -EINVAL);
	CHECK_EQ(op_parse_maps_line("1000-2000 r-xp 00000000 0000 0 /x", e), -EINVAL);
	CHECK_EQ(op_parse_maps_line("1000-2000 r-xp 00000000 00:00 x /x", e), -EINVAL);
	CHECK_EQ(op_parse_maps_line("11112222333344445-2000 r-xp 0 00:00 0", e), -EINVAL);
	CHECK_EQ(op_parse_maps_line(NULL, e), -EINVAL);
	{
		/* a path that does not fit */
		size_t n = 5000;
		char *l = malloc(n + 64);

		strcpy(l, "1000-2000 r-xp 00000000 00:00 1 /");
		memset(l + strlen(l), 'a', n);
		l[n + 30] = '\0';
		CHECK_EQ(op_parse_maps_line(l, e), -EINVAL);
		free(l);
	}
	free(e);
}

static void test_container_ids(void)
{
	const char *id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	static const char *fmt[] = {
		"0::/system.slice/docker-%s.scope\n",
		"12:pids:/docker/%s\n0::/\n",
		"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b.slice/"
		"cri-containerd-%s.scope\n",
		"0::/kubepods/besteffort/pod0b1f2c3d-aaaa-bbbb-cccc-0123456789ab/%s\n",
		"0::/machine.slice/libpod-%s.scope/container\n",
		"0::/kubepods.slice/kubepods-pod1.slice/crio-%s.scope\n",
	};
	char buf[512], *got;
	size_t i;

	for (i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		snprintf(buf, sizeof(buf), fmt[i], id);
		got = op_container_id_from_cgroup(buf);
		CHECK_STR(got, id);
		free(got);
	}
	CHECK(op_container_id_from_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n") ==
	      NULL);
	CHECK(op_container_id_from_cgroup("0::/\n") == NULL);
	/* 63 or 65 hex digits are not an id */
	CHECK(op_container_id_from_cgroup(
		      "0::/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde.scope") ==
	      NULL);
	CHECK(op_container_id_from_cgroup(
		      "0::/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0.scope") ==
	      NULL);
	CHECK(op_container_id_from_cgroup(NULL) == NULL);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_table(void)
{
	struct op_filecache *c = op_filecache_new(0);
	struct op_proctab *t = op_proctab_new(c);
	struct op_proc *p;
	struct op_vma *v;
	size_t i;
	bool have_vdso = false;
	char exe[4096];
	ssize_t n;
	pid_t child;
	int status;

	REQUIRE(c && t);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	REQUIRE(n > 0);
	exe[n] = '\0';

	p = op_proctab_get(t, getpid());
	REQUIRE(p);
	CHECK_EQ(p->pid, getpid());
	CHECK_STR(p->exe_path, exe);
	CHECK_STR(p->exe_name, "test_proc");
	CHECK_STR(p->comm, "test_proc");
	CHECK(p->n_vmas >= 2);
	CHECK(p->exited_ns == 0);
	for (i = 0; i < p->n_vmas; i++) {
		if (i)
			CHECK(p->vmas[i].start >= p->vmas[i - 1].end);
		if (p->vmas[i].path && !strcmp(p->vmas[i].path, "[vdso]"))
			have_vdso = true;
	}
	CHECK(have_vdso);
	CHECK(op_proctab_get(t, getpid()) == p);
	CHECK_EQ(op_proctab_count(t), 1);

	v = op_proc_find_vma(p, (uint64_t)(uintptr_t)&test_table);
	REQUIRE(v);
	CHECK_STR(v->path, exe);
	CHECK(op_proc_vma_file(t, p, v) != NULL);
	CHECK(op_proc_find_vma(p, 0) == NULL);
	CHECK(op_proc_find_vma(p, 0x10) == NULL);

	/* rate limit, then a forced refresh keeps the opened file */
	{
		struct op_file *f = v->file;

		CHECK_EQ(op_proctab_refresh(t, getpid(), false), -EAGAIN);
		CHECK_EQ(op_proctab_refresh(t, getpid(), true), 0);
		v = op_proc_find_vma(p, (uint64_t)(uintptr_t)&test_table);
		REQUIRE(v);
		CHECK(v->file == f && v->file_tried);
	}

	/* a process that does not exist */
	CHECK(op_proctab_get(t, 0x3fffffff) == NULL);
	CHECK(op_proctab_get(t, -1) == NULL);
	CHECK_EQ(op_proctab_count(t), 1);

	/* a child: tracked, exits, still resolvable until gc after the grace period */
	child = fork();
	REQUIRE(child >= 0);
	if (child == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	{
		int tries;

		/* wait until the exec happened */
		for (tries = 0; tries < 200; tries++) {
			char path[64], buf[64] = "";
			FILE *f;

			snprintf(path, sizeof(path), "/proc/%d/comm", child);
			f = fopen(path, "r");
			if (f) {
				if (!fgets(buf, sizeof(buf), f))
					buf[0] = '\0';
				fclose(f);
			}
			if (!strncmp(buf, "sleep", 5))
				break;
			usleep(5000);
		}
	}
	p = op_proctab_get(t, child);
	REQUIRE(p);
	CHECK_STR(p->exe_name, "sleep");
	CHECK(p->exe_path && strstr(p->exe_path, "sleep"));
	CHECK_EQ(op_proctab_count(t), 2);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	/* gone: refresh says so and keeps the old state for late samples */
	CHECK_EQ(op_proctab_refresh(t, child, true), -ESRCH);
	p = op_proctab_get(t, child);
	REQUIRE(p);
	CHECK_STR(p->exe_name, "sleep");
	op_proctab_exited(t, child, mono_ns());
	CHECK(p->exited_ns != 0);
	op_proctab_gc(t, mono_ns(), 60ull * 1000000000ull);
	CHECK_EQ(op_proctab_count(t), 2);
	op_proctab_gc(t, mono_ns() + 61ull * 1000000000ull, 60ull * 1000000000ull);
	CHECK_EQ(op_proctab_count(t), 1);
	/* and now it cannot be read again */
	CHECK(op_proctab_get(t, child) == NULL);

	/* kernel thread: no executable mappings, no exe, name from comm */
	p = op_proctab_get(t, 2);
	if (p) {
		CHECK_EQ(p->n_vmas, 0);
		CHECK(p->exe_path == NULL);
		CHECK_STR(p->exe_name, p->comm);
	}

	op_proctab_free(t);
	op_filecache_free(c);
}

int main(void)
{
	test_maps_lines();
	test_container_ids();
	test_table();
	return check_done();
}
