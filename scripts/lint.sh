#!/usr/bin/env bash
# make lint: warnings-as-errors C build of the library, clang-format check, gofmt, go vet,
# and shell syntax. Exits non-zero on the first class of problems found.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
fail() { echo "lint: $*" >&2; status=1; }

BUILD=${BUILD:-build}
echo "lint: C warnings (-Werror)"
for f in $(git ls-files 'lib/*.c'); do
	gcc -fsyntax-only -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
		-Wno-missing-field-initializers -Werror -Iinclude -Ilib -I. -I"$BUILD/gen" "$f" ||
		fail "$f has warnings"
done

if command -v clang-format >/dev/null; then
	echo "lint: clang-format"
	files=$(git ls-files 'lib/*.c' 'lib/*.h' 'bpf/*.c' 'bpf/*.h' 'include/*.h')
	# shellcheck disable=SC2086
	clang-format --dry-run --Werror $files 2>/dev/null || fail "clang-format: run 'clang-format -i' on the files above"
fi

echo "lint: includes point down the pipeline (lib/README.md)"
python3 scripts/check-layers.py || fail "an include points back up the pipeline or across runtimes (listed above)"

echo "lint: gofmt, go vet"
for m in go-shim tests/integration bench; do
	[ -f "$m/go.mod" ] || continue
	out=$(cd "$m" && gofmt -l .)
	[ -z "$out" ] || fail "gofmt needed in $m: $out"
	(cd "$m" && go vet ./...) || fail "go vet failed in $m"
done

echo "lint: shell syntax"
for f in scripts/*.sh tests/*.sh bench/*.sh .ci/run; do
	[ -f "$f" ] && { bash -n "$f" || fail "$f: syntax error"; }
done
exit $status
