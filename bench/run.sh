#!/usr/bin/env bash
# make bench: side-by-side benchmarks of otelprof, perf and the upstream eBPF profiler.
# Writes bench/results/latest.md and latest.json. QUICK=1 for a short run (< 3 min).
# Needs root. Mounts tracefs at /sys/kernel/tracing if it is not mounted (the upstream
# profiler attaches tracepoints through it) and turns kernel.bpf_stats_enabled on for the
# run (restored afterwards).
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-$PWD/build}
export QUICK=${QUICK:-}
if [ "$(id -u)" -ne 0 ]; then
	echo "bench: needs root (BPF, perf_event, kernel.bpf_stats_enabled); run as root" >&2
	exit 1
fi
mkdir -p "$BUILD/bench"

# workloads (make bench builds them through test-bins; this covers a direct call)
ws=()
for src in tests/workloads/bench_*.c; do
	n=$(basename "$src" .c)
	ws+=("$BUILD/workloads/$n" "$BUILD/workloads/$n-nofp")
done
make -s BUILD="$BUILD" "${ws[@]}"

echo "bench: building the profile decoder" >&2
(cd bench/decode && go build -o "$BUILD/bench/decode" .)
./bench/build-upstream.sh || echo "bench: the upstream profiler did not build; its cells will say so" >&2

if ! mountpoint -q /sys/kernel/tracing; then
	echo "bench: mounting tracefs at /sys/kernel/tracing (the upstream profiler needs it)" >&2
	mount -t tracefs nodev /sys/kernel/tracing
fi
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -q -w kernel.bpf_stats_enabled=$old_stats' EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

python3 bench/harness.py --selftest
python3 bench/harness.py
