#!/usr/bin/env bash
# Runs every test tier and ends with one line: "N passed, N failed, N skipped".
#   tests/run.sh           all tiers
#   tests/run.sh --unit    unprivileged C unit tests only
# Unit tests are build/tests/test_* (exit 0 pass, 77 skip, else fail). Go tests (go-shim/,
# tests/integration/) are counted from `go test -v` result lines, subtests included.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
export BUILD
passed=0 failed=0 skipped=0
failures=()

run_unit() {
	local t rc
	for t in "$BUILD"/tests/test_*; do
		[ -x "$t" ] || continue
		[[ $t == *.d ]] && continue
		local name=${t##*/}
		echo "=== unit: $name"
		"$t"
		rc=$?
		case $rc in
		0) passed=$((passed + 1)); echo "--- PASS: $name" ;;
		77) skipped=$((skipped + 1)); echo "--- SKIP: $name" ;;
		*) failed=$((failed + 1)); failures+=("$name"); echo "--- FAIL: $name (exit $rc)" ;;
		esac
	done
}

# go_tests DIR [ARGS...]: run go test -v in DIR, echo its output, add its counts.
go_tests() {
	local dir=$1
	shift
	[ -f "$dir/go.mod" ] || return 0
	echo "=== go test: $dir"
	local log
	log=$(mktemp)
	(cd "$dir" && go test -count=1 -v "$@" ./... 2>&1) | tee "$log"
	local rc=${PIPESTATUS[0]}
	local p f s
	p=$(grep -cE '^\s*--- PASS' "$log")
	f=$(grep -cE '^\s*--- FAIL' "$log")
	s=$(grep -cE '^\s*--- SKIP' "$log")
	passed=$((passed + p))
	skipped=$((skipped + s))
	failed=$((failed + f))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# a build failure or panic outside any test still fails the run
		failed=$((failed + 1))
		failures+=("go test $dir (exit $rc)")
	fi
	while read -r l; do failures+=("$dir: $l"); done < <(grep -E '^\s*--- FAIL' "$log" | sed 's/^\s*--- FAIL: //')
	rm -f "$log"
}

run_unit
if [ "${1:-}" != "--unit" ]; then
	go_tests go-shim -timeout 20m
	# Tools the end-to-end tests run beside ours, built once into build/ whatever SANITIZE says
	# (they are not ours to sanitize) and linked into this run's $BUILD: Grafana Pyroscope for
	# TestPyroscope (about 12 minutes cold) and the upstream profiler's collector for
	# TestDropinSideBySide (about a minute). A build that fails makes its test say why.
	tools=$PWD/build
	echo "=== building Grafana Pyroscope and the upstream collector (cached in $tools)"
	BUILD="$tools" ./scripts/build-pyroscope.sh >/dev/null ||
		echo "Pyroscope build failed: TestPyroscope will say why"
	BUILD="$tools" ./bench/build-upstream.sh >/dev/null ||
		echo "upstream collector build failed: TestDropinSideBySide will say why"
	if [ "$BUILD" != "$tools" ]; then
		mkdir -p "$BUILD/tools" "$BUILD/bench"
		for f in "$tools"/tools/pyroscope-* "$tools"/bench/otelcol-ebpf-profiler "$tools"/bench/memlock-shim; do
			[ -e "$f" ] && ln -sfn "$f" "$BUILD/${f#"$tools"/}"
		done
	fi
	# valgrind cannot run an AddressSanitizer build: the plain `make test` runs that test
	if [ "${SANITIZE:-0}" = 1 ]; then
		go_tests tests/integration -timeout 40m -skip '^TestReliabilityValgrind$'
	else
		go_tests tests/integration -timeout 40m
	fi
fi

echo
if [ ${#failures[@]} -gt 0 ]; then
	echo "failed:"
	printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
