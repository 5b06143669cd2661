#!/usr/bin/env bash
# Builds Grafana Pyroscope (API server, no web UI) from the Go module proxy into
# $BUILD/tools/pyroscope-$VERSION; the end-to-end test tests/integration/pyroscope_test.go runs it.
# Cached: does nothing when the binary is there. Nothing of Pyroscope's source enters this
# repository; the source is copied under $BUILD/pyroscope-src and built there.
#
# Why not `go install github.com/grafana/pyroscope/cmd/pyroscope@VERSION`: Pyroscope's go.mod
# replaces its `api` module by the nested directory ./api, which the module zip does not carry.
# The one change made to its go.mod: drop that replace and require the published api module of
# the same code (v1.5.0 for v1.21.1).
#
# Cold build: 8 to 15 minutes on 2 cores, ~2 GB memory, ~1.5 GB module cache. Prints the path of
# the binary on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
VERSION=${PYROSCOPE_VERSION:-v1.21.1}
API_VERSION=${PYROSCOPE_API_VERSION:-v1.5.0}
out=$BUILD/tools/pyroscope-$VERSION

if [ -x "$out" ]; then
	echo "$out"
	exit 0
fi
command -v go >/dev/null || {
	echo "build-pyroscope: go is not installed (scripts/install-deps.sh installs it)" >&2
	exit 1
}

work=$BUILD/pyroscope-src
log=$work/build.log
mkdir -p "$work" "$BUILD/tools"
: >"$log"
fail() {
	tail -30 "$log" >&2
	echo "build-pyroscope: $1; full log in $log" >&2
	exit 1
}

# The module's source through the Go module proxy, from a scratch module (go mod download
# outside a module would not print Dir for a module whose go.mod has replaces).
scratch=$work/scratch
mkdir -p "$scratch"
[ -f "$scratch/go.mod" ] || (cd "$scratch" && go mod init scratch) >>"$log" 2>&1
(cd "$scratch" && GOWORK=off go mod download -json "github.com/grafana/pyroscope@$VERSION") \
	>"$work/download.json" 2>>"$log" || true
cat "$work/download.json" >>"$log"
dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' "$work/download.json")
[ -n "$dir" ] && [ -d "$dir" ] || fail "could not download github.com/grafana/pyroscope@$VERSION through the Go module proxy"

src=$work/pyroscope-$VERSION
rm -rf "$src"
cp -r "$dir" "$src"
chmod -R u+w "$src"
(cd "$src" && go mod edit -dropreplace=github.com/grafana/pyroscope/api \
	-require="github.com/grafana/pyroscope/api@$API_VERSION") >>"$log" 2>&1 ||
	fail "could not edit go.mod"

echo "build-pyroscope: building pyroscope $VERSION (about 8 minutes cold; log $log)" >&2
# The source ships a go.work naming ./api: GOWORK=off. -mod=mod: go.sum gains the api module.
(cd "$src" && GOWORK=off nice -n 10 go build -mod=mod -o "$out.tmp" ./cmd/pyroscope) >>"$log" 2>&1 ||
	fail "go build failed"
mv "$out.tmp" "$out"
echo "build-pyroscope: built $out" >&2
echo "$out"
