#!/usr/bin/env bash
# Runs libFuzzer targets built by `make fuzz-bins` and reports executions per target.
#   scripts/fuzz.sh [TARGET...]      default: every $BUILD/fuzz/fuzz_* (names: elf cfi ...)
# Environment: BUILD (absolute build dir), FUZZ_SECONDS per target (default 60), FUZZ_JOBS.
# The corpus grows in $BUILD/fuzz/corpus/TARGET (seeded from $BUILD/fuzz/seeds/TARGET);
# a finding is saved as $BUILD/fuzz/crashes/TARGET-* and fails the run (exit 1).
# Per input: 10 s and 2 GiB at most (a hang or a runaway allocation is a finding too).
set -uo pipefail
BUILD=${BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
secs=${FUZZ_SECONDS:-60}
fz=$BUILD/fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for b in "$fz"/fuzz_*; do
		[ -x "$b" ] && targets+=("${b##*/fuzz_}")
	done
fi
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no targets in $fz (run make fuzz-bins)" >&2
	exit 1
fi
mkdir -p "$fz/crashes"
rc=0
summary=()
for t in "${targets[@]}"; do
	bin=$fz/fuzz_$t
	if [ ! -x "$bin" ]; then
		echo "fuzz: no such target $t ($bin)" >&2
		rc=1
		continue
	fi
	corpus=$fz/corpus/$t
	mkdir -p "$corpus"
	log=$(mktemp)
	echo "=== fuzz $t for ${secs}s"
	# -max_len: large enough for the workloads; bigger seeds (libc) are cut, which is one
	# more kind of truncated file.
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
		-max_len=262144 -print_final_stats=1 -error_exitcode=1 -timeout_exitcode=1 \
		-artifact_prefix="$fz/crashes/$t-" "$corpus" "$fz/seeds/$t" >"$log" 2>&1
	r=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
	units=$(find "$corpus" -type f | wc -l)
	if [ $r -ne 0 ]; then
		rc=1
		grep -E 'ERROR|SUMMARY|invariant|==[0-9]+==|runtime error|Test unit written|deadly|timeout' \
			"$log" | head -40
		echo "--- fuzz $t: FINDING (exit $r); full log kept in $log"
		summary+=("$(printf '%-8s %10s execs  cov %6s  corpus %5s  FINDING' "$t" "${execs:-?}" "${cov:-?}" "$units")")
		continue
	fi
	rm -f "$log"
	summary+=("$(printf '%-8s %10s execs  cov %6s  corpus %5s  ok' "$t" "${execs:-?}" "${cov:-?}" "$units")")
done
echo
echo "fuzz summary (${secs}s per target):"
printf '  %s\n' "${summary[@]}"
exit $rc
