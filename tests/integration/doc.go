// Package integration holds otelprof's root BPF tests and end-to-end tests: they run the
// binaries `make` builds (build/otelprof, build/otelcol-otelprof) against workloads the tests
// compile, and decode the output with real clients (google/pprof, pdata).
package integration
