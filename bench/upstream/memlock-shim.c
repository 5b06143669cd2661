// SPDX-License-Identifier: Apache-2.0
/*
 * memlock-shim: runs a program with attempts to change RLIMIT_MEMLOCK turned into successful
 * no-ops (a seccomp filter answers setrlimit/prlimit64(RLIMIT_MEMLOCK, new != NULL) with 0).
 *
 * Why: the upstream eBPF profiler raises RLIMIT_MEMLOCK to infinity before loading BPF and
 * gives up when that fails. This sandbox runs as root without CAP_SYS_RESOURCE and with an
 * 8 MiB hard memlock limit, so the raise fails with EPERM. Since Linux 5.11 BPF maps and
 * programs are charged to the memory cgroup, not to RLIMIT_MEMLOCK, so skipping the raise
 * changes nothing the profiler measures or needs. Only the benchmark uses this shim, and the
 * results say so.
 *
 *   memlock-shim PROGRAM [ARGS...]
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define ARG_LO(n) (offsetof(struct seccomp_data, args) + 8 * (n))

int main(int argc, char **argv)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prlimit64, 0, 6),
		/* prlimit64(pid, resource, new, old): resource == MEMLOCK && new != NULL */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(1)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RLIMIT_MEMLOCK, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_setrlimit, 0, 3),
		/* setrlimit(resource, new) */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RLIMIT_MEMLOCK, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(filter) / sizeof(filter[0]),
		.filter = filter,
	};

	if (argc < 2) {
		fprintf(stderr, "usage: memlock-shim PROGRAM [ARGS...]\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		fprintf(stderr, "memlock-shim: cannot set no_new_privs: %s\n", strerror(errno));
		return 1;
	}
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		fprintf(stderr, "memlock-shim: cannot install seccomp filter: %s\n", strerror(errno));
		return 1;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "memlock-shim: cannot run %s: %s\n", argv[1], strerror(errno));
	return 127;
}
