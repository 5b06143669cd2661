// Package otlpencodingextension is an empty stand-in so that `go mod tidy` can resolve a
// test-only import of contrib's fileexporter v0.164.0 (see ../README.md). Nothing imports it
// outside that test; it is never linked into otelcol-otelprof.
package otlpencodingextension
