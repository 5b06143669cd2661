#!/usr/bin/env bash
# Writes the fuzzers' seed corpora into DIR/<target>/ from binaries the build produced:
#   elf, cfi   the test workloads (frame pointers or not, with and without debug info,
#              stripped), a small shared object and the vDSO, libc cut to its first 256 KiB
#   maps       lines of /proc/PID/maps and /proc/PID/cgroup of live processes
#   encode     a few builder programs (any bytes are a valid program)
#   and every input that once crashed a target (tests/fuzz/regressions/)
# Usage: BUILD=/abs/build tests/fuzz/seeds.sh DIR
set -euo pipefail
dir=$1
BUILD=${BUILD:?set BUILD}
rm -rf "$dir"
mkdir -p "$dir"/{elf,cfi,maps,encode,labels}

for w in "$BUILD"/workloads/*; do
	[ -f "$w" ] && [ -x "$w" ] || continue
	n=${w##*/}
	cp "$w" "$dir/elf/$n"
	objcopy --strip-debug "$w" "$dir/elf/$n.nodebug" 2>/dev/null || true
	objcopy --strip-all "$w" "$dir/cfi/$n.stripped" 2>/dev/null || true
	# debug info only (.debug_frame without .eh_frame is the CFI compiler's other path)
	objcopy --only-keep-debug "$w" "$dir/cfi/$n.debug" 2>/dev/null || true
done
cp "$dir/elf/"*nofp* "$dir/cfi/" 2>/dev/null || true

# the vDSO as this kernel maps it
python3 - "$dir" <<'PY' || true
import sys
d = sys.argv[1]
for line in open('/proc/self/maps'):
    if line.rstrip().endswith('[vdso]'):
        a, b = (int(x, 16) for x in line.split()[0].split('-'))
        with open('/proc/self/mem', 'rb') as m:
            m.seek(a)
            img = m.read(b - a)
        for t in ('elf', 'cfi'):
            open(f'{d}/{t}/vdso.so', 'wb').write(img)
PY

libc=$(ldd /bin/true | awk '/libc.so/ {print $3}')
if [ -r "$libc" ]; then
	head -c 262144 "$libc" >"$dir/elf/libc.head"
	cp "$dir/elf/libc.head" "$dir/cfi/libc.head"
fi

i=0
for p in /proc/self /proc/1 /proc/$$; do
	[ -r "$p/maps" ] || continue
	cp "$p/maps" "$dir/maps/maps.$i" 2>/dev/null || true
	cp "$p/cgroup" "$dir/maps/cgroup.$i" 2>/dev/null || true
	i=$((i + 1))
done
printf '%s\n' \
	'7f0a1c000000-7f0a1c021000 r-xp 00000000 fd:01 1234567 /usr/lib/x86_64-linux-gnu/libc.so.6' \
	'55d5e4a00000-55d5e4a01000 r-xp 00001000 00:2a 99 /tmp/a b (deleted)' \
	'ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]' \
	>"$dir/maps/handmade"
printf '0::/system.slice/docker-%s.scope\n' \
	0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef >"$dir/maps/cgroup.docker"

# environments of live processes, a Go binary's .go.buildinfo, ids in labels
for p in /proc/self /proc/$$; do
	cp "$p/environ" "$dir/labels/environ.${p##*/}" 2>/dev/null || true
done
printf 'A=1\0OTEL_RESOURCE_ATTRIBUTES=service.name=a,team=b%%20c,x=%%zz\0OTEL_SERVICE_NAME=svc\0' \
	>"$dir/labels/environ.otel"
printf 'trace_id\0000af7651916cd43dd8448eb211c80319c' >"$dir/labels/trace"
printf 'span id\00012345' >"$dir/labels/span.decimal"
if command -v go >/dev/null; then
	gb=$(mktemp -d)
	(cd "$(dirname "$0")/../runtime/golabels" && GOWORK=off go build -o "$gb/gl" . 2>/dev/null) &&
		objcopy -O binary --only-section=.go.buildinfo "$gb/gl" "$dir/labels/buildinfo" 2>/dev/null || true
	rm -rf "$gb"
fi

# inputs that once crashed a target (tests/fuzz/regressions/TARGET/NAME): run on every start
here=$(cd "$(dirname "$0")" && pwd)
for t in "$here"/regressions/*/; do
	t=${t%/}
	mkdir -p "$dir/${t##*/}"
	cp "$t"/* "$dir/${t##*/}/" 2>/dev/null || true
done

for s in 1 2 3 4; do
	head -c $((s * 300)) /dev/urandom >"$dir/encode/random.$s"
done
# strings, a mapping, a function, a location, a stack, then samples of two processes
printf '\x00\x81A\x01\x01\x02\x03\x04\x00\x00\x00\x02\x01\x01\x01\x02\x02\x03\x01\x00\x00\x00\x01\x04\x01\x00\x05\x00\x00\x01\x02\x01\x05\x01\x00\x03\x04\x05\x06' \
	>"$dir/encode/program"
