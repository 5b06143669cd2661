/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A known profile for the encoder tests (test_encode.c) and for the Go round-trip test
 * (fixture_otlp.c → tests/integration/otlp_roundtrip_test.go, which hard-codes the same
 * facts: keep them in step).
 *
 * pid 100 "app" (/usr/bin/app, container c0ffee…), 6 events:
 *   thread app-main (tid 100, cpu 0): [square←compute (inlined, one location), main] ×3
 *                                     [ksys_write, entry_SYSCALL_64 (kernel), __write (libc), main]
 * ×1 thread app-worker (tid 101, cpu 1): [square←compute, main] ×2 pid 200 "server" (/opt/server, a
 * Go binary), 4 events: thread server (tid 200, cpu 1): [main.handler, main.main (go), [truncated]
 * (abort)] ×4 Timestamps: FX_T0 + k * 1000 for event k = 0..9 in the order above.
 */
#ifndef OTELPROF_TEST_ENCODE_FIXTURE_H
#define OTELPROF_TEST_ENCODE_FIXTURE_H

#include "profile/profile.h"

#define FX_PERIOD	      50000000ull /* 20 Hz */
#define FX_T0		      1700000000000000000ull
#define FX_END		      (FX_T0 + 1000000000ull) /* one second */
#define FX_APP_BUILD_ID	      "0123456789abcdef0123456789abcdef01234567"
#define FX_LIBC_BUILD_ID      "aabbccddeeff00112233445566778899aabbccdd"
#define FX_LIBC_HTLHASH	      "00112233445566778899aabbccddeeff"
#define FX_SERVER_GO_BUILD_ID "goid-abc/goid-def"
#define FX_SERVER_HTLHASH     "ffeeddccbbaa99887766554433221100"
#define FX_CONTAINER	      "c0ffee0000000000000000000000000000000000000000000000000000000001"

static inline struct op_profile *fx_build(void)
{
	struct op_profile_opts o = { .period_ns = FX_PERIOD, .start_ns = FX_T0 };
	struct op_process_desc app = { .pid = 100,
				       .executable_name = "app",
				       .executable_path = "/usr/bin/app",
				       .container_id = FX_CONTAINER };
	struct op_process_desc server = { .pid = 200,
					  .executable_name = "server",
					  .executable_path = "/opt/server" };
	struct op_mapping_desc m_app = { .memory_start = 0x400000,
					 .memory_limit = 0x500000,
					 .filename = "/usr/bin/app",
					 .build_id_gnu = FX_APP_BUILD_ID,
					 .has_functions = 1,
					 .has_line_numbers = 1,
					 .has_inline_frames = 1 };
	struct op_mapping_desc m_libc = { .memory_start = 0x7f0000000000,
					  .memory_limit = 0x7f0000200000,
					  .file_offset = 0x28000,
					  .filename = "/usr/lib/x86_64-linux-gnu/libc.so.6",
					  .build_id_gnu = FX_LIBC_BUILD_ID,
					  .build_id_htlhash = FX_LIBC_HTLHASH,
					  .has_functions = 1 };
	struct op_mapping_desc m_server = { .memory_start = 0x10000,
					    .memory_limit = 0x90000,
					    .filename = "/opt/server",
					    .build_id_go = FX_SERVER_GO_BUILD_ID,
					    .build_id_htlhash = FX_SERVER_HTLHASH,
					    .has_functions = 1,
					    .has_line_numbers = 1 };
	struct op_function_desc f;
	struct op_line_desc ln[2];
	uint32_t mapp, mlibc, mserver, fmain, fcompute, fsquare, fwrite_, fksys, fentry;
	uint32_t fhandler, fgomain, ftrunc, l_inl, l_main, l_write, l_k1, l_k2, l_h, l_gm, l_ab;
	uint32_t st[4], s1, s2, s3;
	struct op_sample_desc s;
	struct op_profile *p;
	int i;

	p = op_profile_new(&o);
	if (!p)
		return NULL;
	mapp = op_profile_mapping(p, &m_app);
	mlibc = op_profile_mapping(p, &m_libc);
	mserver = op_profile_mapping(p, &m_server);

#define FN(var, n, file, line)                                                    \
	f = (struct op_function_desc){                                            \
		.name = n, .system_name = n, .filename = file, .start_line = line \
	};                                                                        \
	var = op_profile_function(p, &f)
	FN(fmain, "main", "app.c", 1);
	FN(fcompute, "compute", "app.c", 10);
	FN(fsquare, "square", "app.c", 20);
	FN(fwrite_, "__write", NULL, 0);
	FN(fksys, "ksys_write", NULL, 0);
	FN(fentry, "entry_SYSCALL_64", NULL, 0);
	FN(fhandler, "main.handler", "/src/server/main.go", 30);
	FN(fgomain, "main.main", "/src/server/main.go", 3);
	FN(ftrunc, "[truncated]", NULL, 0);
#undef FN

	ln[0] = (struct op_line_desc){ .function = fsquare, .line = 22, .column = 5 };
	ln[1] = (struct op_line_desc){ .function = fcompute, .line = 12 };
	l_inl = op_profile_location(p, mapp, 0x401010, ln, 2, OP_FRAME_NATIVE);
	ln[0] = (struct op_line_desc){ .function = fmain, .line = 5 };
	l_main = op_profile_location(p, mapp, 0x401100, ln, 1, OP_FRAME_NATIVE);
	ln[0] = (struct op_line_desc){ .function = fwrite_ };
	l_write = op_profile_location(p, mlibc, 0x7f0000001000, ln, 1, OP_FRAME_NATIVE);
	ln[0] = (struct op_line_desc){ .function = fksys };
	l_k1 = op_profile_location(p, 0, 0xffffffff81001000ull, ln, 1, OP_FRAME_KERNEL);
	ln[0] = (struct op_line_desc){ .function = fentry };
	l_k2 = op_profile_location(p, 0, 0xffffffff82000000ull, ln, 1, OP_FRAME_KERNEL);
	ln[0] = (struct op_line_desc){ .function = fhandler, .line = 33 };
	l_h = op_profile_location(p, mserver, 0x12000, ln, 1, OP_FRAME_GO);
	ln[0] = (struct op_line_desc){ .function = fgomain, .line = 4 };
	l_gm = op_profile_location(p, mserver, 0x11000, ln, 1, OP_FRAME_GO);
	ln[0] = (struct op_line_desc){ .function = ftrunc };
	l_ab = op_profile_location(p, 0, 0, ln, 1, OP_FRAME_ABORT);

	st[0] = l_inl;
	st[1] = l_main;
	s1 = op_profile_stack(p, st, 2);
	st[0] = l_k1;
	st[1] = l_k2;
	st[2] = l_write;
	st[3] = l_main;
	s2 = op_profile_stack(p, st, 4);
	st[0] = l_h;
	st[1] = l_gm;
	st[2] = l_ab;
	s3 = op_profile_stack(p, st, 3);

	s = (struct op_sample_desc){
		.stack = s1, .process = &app, .tid = 100, .thread_name = "app-main", .cpu = 0
	};
	for (i = 0; i < 3; i++) {
		s.timestamp_ns = FX_T0 + 1000ull * i;
		op_profile_add_sample(p, &s);
	}
	s.stack = s2;
	s.timestamp_ns = FX_T0 + 3000;
	op_profile_add_sample(p, &s);
	s = (struct op_sample_desc){
		.stack = s1, .process = &app, .tid = 101, .thread_name = "app-worker", .cpu = 1
	};
	for (i = 4; i < 6; i++) {
		s.timestamp_ns = FX_T0 + 1000ull * i;
		op_profile_add_sample(p, &s);
	}
	s = (struct op_sample_desc){
		.stack = s3, .process = &server, .tid = 200, .thread_name = "server", .cpu = 1
	};
	for (i = 6; i < 10; i++) {
		s.timestamp_ns = FX_T0 + 1000ull * i;
		op_profile_add_sample(p, &s);
	}
	op_profile_set_end(p, FX_END);
	return p;
}

#endif
