# Collector distribution built with ocb (the OpenTelemetry Collector Builder).
# Owned by the Go shim work (issue 3); included by the top-level Makefile, which defines BUILD,
# GO, LDLIBS and LIB_A before including this file.
#
#   $(COLLECTOR)     build/otelcol-otelprof: ocb generates a main package under
#                    $(BUILD)/otelcol-src from collector-config/builder-config.yaml and compiles
#                    it with cgo against $(BUILD)/libotelprof.a.
#   OCB=/path/to/builder   use an existing ocb v0.164.0 instead of installing one.
COLLECTOR := $(BUILD)/otelcol-otelprof

OCB_VERSION := v0.164.0
OCB ?= $(abspath $(BUILD))/tools/builder
COLLECTOR_SRC := $(abspath $(BUILD))/otelcol-src
COLLECTOR_MANIFEST := $(BUILD)/builder-config.yaml

# cgo flags for the shim (go-shim/internal/otelprof). Its #cgo line links -l:libotelprof.a from
# the repository's build/; CGO_LDFLAGS comes first on the link line, so this -L makes every
# BUILD=... tree link its own library. The libraries are the Makefile's LDLIBS (a go-shim test
# checks that the #cgo line lists the same).
SHIM_CGO_LDFLAGS := -L$(abspath $(BUILD)) -l:libotelprof.a $(LDLIBS) $(SAN_FLAGS)

GO_SHIM_SRCS := $(shell find go-shim -name '*.go' ! -name '*_test.go' 2>/dev/null) \
	go-shim/go.mod go-shim/go.sum
COLLECTOR_MODULES := $(shell find collector-config/modules -type f 2>/dev/null)

$(OCB):
	$(call msg,GOINST,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)GOBIN=$(abspath $(dir $@)) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)

# The manifest's relative paths (output_path, the shim's path, replaces) are written for a run
# from the repository root into ./build; the copy under $(BUILD) makes them absolute.
$(COLLECTOR): collector-config/builder-config.yaml collector-config/collector.mk $(GO_SHIM_SRCS) \
		$(COLLECTOR_MODULES) $(LIB_A) | $(OCB)
	$(call msg,OCB,$@)
	$(Q)mkdir -p $(COLLECTOR_SRC)
	$(Q)sed -e 's|^  output_path:.*|  output_path: $(COLLECTOR_SRC)|' \
		-e 's|^\(    path: \)\./|\1$(CURDIR)/|' \
		-e 's|=> \.\./\.\./|=> $(CURDIR)/|' $< > $(COLLECTOR_MANIFEST)
	@# the library's hash in the flags: Go's build cache does not see a changed C library
	@# (golang/go#24355) and would link the old one; a -L directory that need not exist
	$(Q)CGO_LDFLAGS="$(SHIM_CGO_LDFLAGS) -L$(abspath $(BUILD))/lib-$$(sha256sum $(LIB_A) | cut -c1-16)" \
		$(OCB) --config $(COLLECTOR_MANIFEST) \
		> $(BUILD)/ocb.log 2>&1 || { tail -40 $(BUILD)/ocb.log >&2; \
		echo "error: ocb failed building the collector (full log: $(BUILD)/ocb.log)" >&2; exit 1; }
	$(Q)cp $(COLLECTOR_SRC)/otelcol-otelprof $@.tmp && mv $@.tmp $@

# `go test` in go-shim (tests/run.sh) links the library too: give it this BUILD's copy.
# scripts/run.sh finds the collector through BUILD.
test: export CGO_LDFLAGS := $(SHIM_CGO_LDFLAGS)
run: export BUILD := $(abspath $(BUILD))

.PHONY: collector
collector: $(COLLECTOR)
