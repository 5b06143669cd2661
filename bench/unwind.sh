#!/usr/bin/env bash
# Unwinder benchmark (issue 4).
#   1. BPF time per sample, kernel-measured (kernel.bpf_stats_enabled=1, bpftool prog show
#      run_time_ns / run_cnt of on_cpu_sample, which includes the tail-called CFI walk):
#      the CFI walk of a binary built without frame pointers vs the frame-pointer walk of
#      the same source built with them, on the same stacks (cfi_recurse: 100 levels deep;
#      cfi_mt: ~15 frames through libc's qsort). Two instances keep both CPUs busy so
#      almost every run is a workload sample.
#   2. Table build time and size for libc and python3 (fixture_cfi_stats).
# usage: BUILD=/abs/build bench/unwind.sh   (QUICK=1: shorter runs). Needs root.
set -euo pipefail
BUILD=${BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
DUR=${DUR:-8}
[ "${QUICK:-0}" = 1 ] && DUR=4
if [ "$(id -u)" -ne 0 ]; then
	echo "bench/unwind.sh: needs root (BPF and kernel.bpf_stats_enabled)" >&2
	exit 77
fi
for f in otelprof workloads/cfi_recurse workloads/cfi_recurse-nofp fixtures/fixture_cfi_stats; do
	[ -x "$BUILD/$f" ] || { echo "bench/unwind.sh: $BUILD/$f missing: run make test-bins" >&2; exit 1; }
done

old_stats=$(sysctl -n kernel.bpf_stats_enabled)
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
	sysctl -q kernel.bpf_stats_enabled="$old_stats" || true
	rm -rf "$tmp"
}
trap cleanup EXIT
sysctl -q kernel.bpf_stats_enabled=1

# prog_stats OTELPROF_PID -> "run_time_ns run_cnt" of that process's on_cpu_sample (found
# through the prog ids of its file descriptors: other profilers may be loaded too)
prog_stats() {
	local ids
	ids=$(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u | tr '\n' ' ')
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
ids = {int(x) for x in sys.argv[1].split()}
for p in json.load(sys.stdin):
    if p.get("name") == "on_cpu_sample" and p.get("id") in ids:
        print(p.get("run_time_ns", 0), p.get("run_cnt", 0)); break
else:
    print("0 0")' "$ids"
}

# measure LABEL WORKLOAD [otelprof flags...] -> prints ns/sample and frames/sample
measure() {
	local label=$1 wl=$2
	shift 2
	local w1 w2 rec a b
	"$BUILD/workloads/$wl" $((DUR + 5)) >/dev/null &
	w1=$!
	"$BUILD/workloads/$wl" $((DUR + 5)) >/dev/null &
	w2=$!
	pids=("$w1" "$w2")
	sleep 0.3
	# --no-kernel: bpf_get_stack of kernel-mode samples would dominate and blur the walks
	"$BUILD/otelprof" record -q --no-kernel -p "$w1" -p "$w2" -F 999 -d "$DUR" \
		-o "$tmp/$label.pb.gz" "$@" &
	rec=$!
	sleep 1.5 # tables loaded, steady state
	a=$(prog_stats "$rec")
	sleep $((DUR - 3))
	b=$(prog_stats "$rec")
	[ "$b" = "0 0" ] && echo "bench/unwind.sh: $label: on_cpu_sample of pid $rec not found" >&2
	wait "$rec" || true
	kill "$w1" "$w2" 2>/dev/null || true
	wait "$w1" "$w2" 2>/dev/null || true
	pids=()
	local frames
	frames=$(go tool pprof -raw "$tmp/$label.pb.gz" 2>/dev/null | python3 -c '
import sys
n = f = 0
insamples = False
for line in sys.stdin:
    if line.startswith("Samples:"):
        insamples = True; continue
    if line.startswith("Locations"):
        break
    if insamples:
        parts = line.split(":")
        if len(parts) == 2 and parts[0].split() and parts[0].split()[0].isdigit():
            c = int(parts[0].split()[0]); n += c; f += c * len(parts[1].split())
print("%.1f" % (f / n) if n else "n/a")')
	python3 - "$label" "$a" "$b" "$frames" <<'PY'
import sys
label, a, b, frames = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4]
dt, dn = int(b[0]) - int(a[0]), int(b[1]) - int(a[1])
ns = dt / dn if dn else float("nan")
print(f"{label:<34} {ns:10.0f} {dn:9d} {frames:>14}")
PY
}

echo "== BPF time per sample (run_time_ns / run_cnt of on_cpu_sample, ${DUR}s at 999 Hz, 2 CPUs)"
printf '%-34s %10s %9s %14s\n' "walk / workload" "ns/sample" "samples" "frames/sample"
# The host may be shared: alternate the walks, REPS rounds, and compare the medians.
REPS=${REPS:-3}
[ "${QUICK:-0}" = 1 ] && REPS=1
for r in $(seq "$REPS"); do
	measure "fp   cfi_recurse (fp build)" cfi_recurse --frame-pointers | tee -a "$tmp/fp_rec"
	measure "cfi  cfi_recurse-nofp" cfi_recurse-nofp | tee -a "$tmp/cfi_rec"
	measure "cfi  cfi_recurse (fp build)" cfi_recurse | tee -a "$tmp/cfi_rec_fp"
	measure "fp   cfi_mt (fp build)" cfi_mt --frame-pointers | tee -a "$tmp/fp_mt"
	measure "cfi  cfi_mt-nofp" cfi_mt-nofp | tee -a "$tmp/cfi_mt"
done
ratio() { python3 -c '
import statistics, sys
med = lambda f: statistics.median(float(l.split()[-3]) for l in open(f) if l.strip())
print("%.2f (median %.0f vs %.0f ns)" % (med(sys.argv[2]) / med(sys.argv[1]), med(sys.argv[2]), med(sys.argv[1])))' "$1" "$2"; }
echo "cfi/fp, 100-deep recursion, nofp vs fp build: $(ratio "$tmp/fp_rec" "$tmp/cfi_rec")"
echo "cfi/fp, 100-deep recursion, same fp binary:    $(ratio "$tmp/fp_rec" "$tmp/cfi_rec_fp")"
echo "cfi/fp, threads through libc qsort:            $(ratio "$tmp/fp_mt" "$tmp/cfi_mt")"
echo "(goal: cfi <= 1.5x fp; the fp walk of cfi_mt stops in libc, so it walks fewer frames)"

echo
echo "== unwind table build (best of 5)"
py=$(readlink -f /usr/bin/python3) # the distribution's interpreter, not a pyenv shim
libc=$(python3 -c 'print([l.split()[-1] for l in open("/proc/self/maps") if "/libc.so" in l][0])')
"$BUILD/fixtures/fixture_cfi_stats" -n 5 "$libc" "$py"
