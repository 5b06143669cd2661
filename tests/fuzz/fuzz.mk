# libFuzzer targets (tests/fuzz/fuzz_*.c), included by the top-level Makefile.
#
#   make fuzz                     every target for FUZZ_SECONDS (default 60) each
#   make fuzz FUZZ_TARGETS=cfi    one target (names: elf dwarfline dwarfunits cfi maps encode
#                                 labels pprof otlp otlpjson folded allocsyms python perfmap
#                                 v8elf hotspot jitdump)
#   make test                     runs $(BUILD)/tests/test_fuzz_smoke: every target for
#                                 FUZZ_SMOKE_SECONDS (default 10) each
#
# The library is compiled a second time with clang and -fsanitize=fuzzer-no-link,address,
# undefined into $(BUILD)/fuzz/obj, whatever SANITIZE says. Seed corpora are generated from
# binaries the build produces (tests/fuzz/seeds.sh); findings land in $(BUILD)/fuzz/crashes.

FUZZ_DIR := $(BUILD)/fuzz
FUZZ_CC ?= $(CLANG)
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
FUZZ_CFLAGS := -O1 -g $(WARN) -Wno-unused-command-line-argument -std=gnu11 -D_GNU_SOURCE \
	$(FUZZ_SAN) -Iinclude -Ilib -I. -I$(GEN) -Itests/unit -MMD -MP
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 10

FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
FUZZ_BINS := $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_NAMES))
FUZZ_TARGETS ?= $(FUZZ_NAMES)

# Everything but the BPF side (sampler, unwinder loader, the public handle): the fuzzed code
# is pure, and the fuzz build does not depend on the BPF programs' state.
FUZZ_LIB_SRCS := $(filter-out lib/sample/sampler.c lib/unwind/unwind.c lib/otelprof.c,$(LIB_SRCS))
FUZZ_LIB_OBJS := $(patsubst lib/%.c,$(FUZZ_DIR)/obj/lib/%.o,$(FUZZ_LIB_SRCS)) \
	$(patsubst $(GEN)/%.c,$(FUZZ_DIR)/obj/gen/%.o,$(PROTO_C))
FUZZ_LIB_A := $(FUZZ_DIR)/libotelprof-fuzz.a

$(FUZZ_DIR)/obj/lib/%.o: lib/%.c $(GENERATED) | $(DEPS_STAMP)
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/obj/gen/%.o: $(GEN)/%.c $(PROTO_H)
	$(call msg,FUZZCC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -w -c $< -o $@

$(FUZZ_LIB_A): $(FUZZ_LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h tests/fuzz/fuzz_profile.h $(FUZZ_LIB_A)
	$(call msg,FUZZLD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_A) $(LDLIBS) $(JSON_LDLIBS)

# Seeds: workloads (with and without frame pointers, stripped and not), libc, the vDSO,
# maps lines of live processes, encoder programs.
FUZZ_SEEDS_STAMP := $(FUZZ_DIR)/seeds/.stamp
$(FUZZ_SEEDS_STAMP): tests/fuzz/seeds.sh $(wildcard tests/fuzz/regressions/*/*) $(WORKLOADS) \
		$(WORKLOADS_NOFP) $(CLI) $(BUILD)/fixtures/fixture_otlp $(BUILD)/fixtures/fixture_bigprofile \
		$(BUILD)/tests/test_hotspot
	$(call msg,SEEDS,$(FUZZ_DIR)/seeds)
	$(Q)BUILD=$(abspath $(BUILD)) tests/fuzz/seeds.sh $(abspath $(FUZZ_DIR)/seeds)
	$(Q)touch $@

# The smoke run is a unit test: tests/run.sh runs every $(BUILD)/tests/test_*.
$(BUILD)/tests/test_fuzz_smoke: tests/fuzz/smoke.sh
	$(Q)mkdir -p $(dir $@)
	$(Q)sed "s|@REPO@|$(CURDIR)|" $< >$@ && chmod +x $@

fuzz-bins: $(FUZZ_BINS) $(FUZZ_SEEDS_STAMP) $(BUILD)/tests/test_fuzz_smoke
test-bins: fuzz-bins

fuzz: fuzz-bins
	$(Q)BUILD=$(abspath $(BUILD)) FUZZ_SECONDS=$(FUZZ_SECONDS) \
		./scripts/fuzz.sh $(FUZZ_TARGETS)

.PHONY: fuzz-bins
