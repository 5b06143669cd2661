#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the benchmarks need.
# Idempotent: does nothing (and needs no network) when everything is present.
set -euo pipefail

packages=(
	clang clang-format llvm lld
	libbpf-dev bpftool
	libelf-dev libdwarf-dev libiberty-dev zlib1g-dev libdeflate-dev liblzma-dev libzstd-dev xz-utils
	libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libjson-c-dev
	chromium # the HTML report's test in a real browser (tests/integration/report_test.go)
	pkg-config make gcc binutils elfutils
	linux-perf libcap2-bin procps file
	g++ python3 util-linux
	libclang-rt-14-dev valgrind
	python3.11-dbg
	libjemalloc-dev heaptrack # allocation profiling: tests (jemalloc) and bench (heaptrack)
)

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	case "$status" in
	ii*) ;;
	*) missing+=("$p") ;;
	esac
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
