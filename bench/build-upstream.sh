#!/usr/bin/env bash
# Builds the upstream OpenTelemetry eBPF profiler collector distribution with ocb from
# bench/upstream/manifest.yaml into $BUILD/bench/otelcol-ebpf-profiler. Cached: rebuilds only
# when the manifest changes. Needs Go and the Go module proxy; installs ocb into $(go env GOPATH)/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
OCB_VERSION=v0.164.0
out=$BUILD/bench/otelcol-ebpf-profiler
manifest=bench/upstream/manifest.yaml
stamp=$BUILD/bench/.upstream-manifest.sha256

sum=$(cat "$manifest" bench/upstream/memlock-shim.c bench/build-upstream.sh | sha256sum | cut -d" " -f1)
if [ -x "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
	exit 0
fi

gobin=$(go env GOPATH)/bin
ocb=$gobin/builder
if ! [ -x "$ocb" ] || ! "$ocb" version 2>&1 | grep -q "${OCB_VERSION#v}"; then
	echo "build-upstream: installing ocb $OCB_VERSION" >&2
	go install go.opentelemetry.io/collector/cmd/builder@$OCB_VERSION
fi

work=$BUILD/bench/upstream-src
rm -rf "$work"
mkdir -p "$work"
# ocb resolves output_path relative to the working directory
cp "$manifest" "$work/manifest.yaml"
echo "build-upstream: building otelcol-ebpf-profiler with ocb (about a minute the first time)" >&2
log=$work/build.log
fail() {
	tail -40 "$log" >&2
	echo "build-upstream: $1; full log in $log" >&2
	exit 1
}
# Three steps instead of one plain `ocb --config`: ocb's own `go mod tidy` also resolves the
# test-only imports of the components' packages (fileexporter's tests import
# otlpencodingextension, ebpf-profiler's import sig-profiling/profcheck), and the module proxy
# this machine reaches does not serve those versions. `go mod tidy -e` tolerates modules only
# tests need; the binary is the same.
(cd "$work" && "$ocb" --config manifest.yaml --skip-compilation --skip-get-modules) >"$log" 2>&1 ||
	fail "ocb could not generate the sources"
(cd "$work" && "$ocb" --config manifest.yaml --skip-compilation) >>"$log" 2>&1 || true
(cd "$work/otelcol-ebpf-profiler" && go mod tidy -e) >>"$log" 2>&1 || fail "go mod tidy failed"
(cd "$work" && CGO_ENABLED=0 "$ocb" --config manifest.yaml --skip-generate --skip-get-modules) \
	>>"$log" 2>&1 || fail "ocb could not compile the distribution"
mkdir -p "$(dirname "$out")"
cp "$work/otelcol-ebpf-profiler/otelcol-ebpf-profiler" "$out"
gcc -O2 -Wall -o "$BUILD/bench/memlock-shim" bench/upstream/memlock-shim.c
echo "$sum" >"$stamp"
echo "build-upstream: built $out" >&2
