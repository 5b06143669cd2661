# Collector distribution built with ocb (the OpenTelemetry Collector Builder).
# Owned by the Go shim work (issue 3); included by the top-level Makefile.
COLLECTOR := $(BUILD)/otelcol-otelprof
