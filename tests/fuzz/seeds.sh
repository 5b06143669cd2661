#!/usr/bin/env bash
# Writes the fuzzers' seed corpora into DIR/<target>/ from binaries the build produced:
#   elf, cfi   the test workloads (frame pointers or not, with and without debug info,
#              stripped), a small shared object and the vDSO, libc cut to its first 256 KiB
#   maps       lines of /proc/PID/maps and /proc/PID/cgroup of live processes
#   perfmap    perf maps as Node, Python -X perf and jcmd Compiler.perfmap write them
#   jitdump    a synthetic jitdump in the other byte order (test_perfmap --seed) and the first
#              64 KiB of one node --perf-prof writes (when node is installed)
#   v8elf      a small shared object exporting V8's post-mortem constants as node 20 does
#   encode     a few builder programs (any bytes are a valid program)
#   pprof, otlp, otlpjson, folded   profiles the build writes (the encoder fixture, a small
#              synthetic profile) in each format, and a hand-written OTLP/JSON document
#   dwarfline  .debug_line of the workloads (two selector bytes, then the section)
#   dwarfunits .debug_info, .debug_aranges and .debug_abbrev of the workloads (a selector byte,
#              then the section)
#   python     real line tables (co_lnotab / co_linetable) of each Python on the machine
#   hotspot   the JDK 17 VMStructs image of tests/unit/hotspot_image.h (test_hotspot --seed)
#   and every input that once crashed a target (tests/fuzz/regressions/)
# Usage: BUILD=/abs/build tests/fuzz/seeds.sh DIR
set -euo pipefail
dir=$1
BUILD=${BUILD:?set BUILD}
rm -rf "$dir"
mkdir -p "$dir"/{elf,cfi,dwarfline,dwarfunits,maps,encode,labels,pprof,otlp,otlpjson,folded,allocsyms,python,perfmap,jitdump,v8elf,hotspot}

for w in "$BUILD"/workloads/*; do
	[ -f "$w" ] && [ -x "$w" ] || continue
	n=${w##*/}
	cp "$w" "$dir/elf/$n"
	objcopy --strip-debug "$w" "$dir/elf/$n.nodebug" 2>/dev/null || true
	objcopy --strip-all "$w" "$dir/cfi/$n.stripped" 2>/dev/null || true
	# debug info only (.debug_frame without .eh_frame is the CFI compiler's other path)
	objcopy --only-keep-debug "$w" "$dir/cfi/$n.debug" 2>/dev/null || true
	# the first unit (selector 1) and a unit further in (selector 0x8000: offset 8192 mod
	# the size, often mid-unit)
	if objcopy --dump-section .debug_line="$dir/dwarfline/.$n" "$w" /dev/null 2>/dev/null &&
		[ -s "$dir/dwarfline/.$n" ]; then
		{ printf '\001\000'; cat "$dir/dwarfline/.$n"; } >"$dir/dwarfline/$n"
		{ printf '\000\200'; cat "$dir/dwarfline/.$n"; } >"$dir/dwarfline/$n.mid"
	fi
	rm -f "$dir/dwarfline/.$n"
	# dwarfunits: a byte-order byte, then one section
	for sec in info aranges abbrev; do
		if objcopy --dump-section .debug_$sec="$dir/dwarfunits/.$n" "$w" /dev/null 2>/dev/null &&
			[ -s "$dir/dwarfunits/.$n" ]; then
			{ printf '\000'; cat "$dir/dwarfunits/.$n"; } >"$dir/dwarfunits/$n.$sec"
		fi
		rm -f "$dir/dwarfunits/.$n"
	done
done
cp "$dir/elf/"*nofp* "$dir/cfi/" 2>/dev/null || true
# allocator symbols: the in-process sampler (its own malloc...) and a static-free workload
cp "$BUILD/libotelprof_alloc.so" "$dir/allocsyms/" 2>/dev/null || true
cp "$dir/elf/alloc" "$dir/elf/alloc-nofp" "$dir/allocsyms/" 2>/dev/null || true

# python: minor, instruction offset, first line, then a code object's line table, from each
# Python here (the fuzzer's input layout, tests/fuzz/fuzz_python.c)
for py in /root/.pyenv/versions/3.*/bin/python3.[0-9] /root/.pyenv/versions/3.*/bin/python3.[0-9][0-9] /usr/bin/python3.11; do
	[ -x "$py" ] || continue
	"$py" - "$dir/python" <<'PY' 2>/dev/null || true
import os, struct, sys
c = os.path.join.__code__
t = getattr(c, "co_linetable", None) or c.co_lnotab
n = "%d.%d" % sys.version_info[:2]
with open(os.path.join(sys.argv[1], "py" + n), "wb") as f:
    f.write(struct.pack("<BiH", sys.version_info[1] - 8, 10, c.co_firstlineno) + t)
PY
done

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

printf '%s\n' '2046ed98aae6 2a JS:~fib /tmp/busy.js:1:13' 'ce06040 180 JS:*fib /tmp/busy.js:1:13' \
	'7f3358ec7600 18 py::main:/tmp/x.py' >"$dir/perfmap/node"
printf '0x00007f3358ec7600 0x0000000000000258 long Busy.work(int)\r\n0x10 0x0 zero\nbad\n' \
	>"$dir/perfmap/java"

# V8's post-mortem constants as /usr/bin/node (v20.20.2, V8 11.3) exports them
cat >"$dir/v8like.c" <<'V8EOF'
int v8dbg_off_fp_context_or_frame_type = -8, v8dbg_off_fp_function = -16;
int v8dbg_off_fp_bytecode_array = -32, v8dbg_off_fp_bytecode_offset = -40;
int v8dbg_class_HeapObject__map__Map = 0, v8dbg_class_Map__instance_type__uint16_t = 12;
int v8dbg_class_JSFunction__shared__SharedFunctionInfo = 24;
int v8dbg_type_JSFunction__JS_FUNCTION_TYPE = 2066;
int v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE = 262;
int v8dbg_type_BytecodeArray__BYTECODE_ARRAY_TYPE = 191, v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE = 261;
int v8dbg_type_Script__SCRIPT_TYPE = 167, v8dbg_FirstNonstringType = 128;
int v8dbg_class_SharedFunctionInfo__name_or_scope_info__Object = 16;
int v8dbg_class_SharedFunctionInfo__script_or_debug_info__HeapObject = 32;
int v8dbg_class_Script__name__Object = 16, v8dbg_class_Script__line_ends__Object = 56;
int v8dbg_class_Script__source__Object = 8, v8dbg_scopeinfo_idx_first_vars = 3;
int v8dbg_scopeinfo_idx_ncontextlocals = 2, v8dbg_class_FixedArrayBase__length__SMI = 8;
int v8dbg_class_FixedArray__data__uintptr_t = 16, v8dbg_class_String__length__int32_t = 12;
int v8dbg_class_SeqOneByteString__chars__char = 16, v8dbg_class_SeqTwoByteString__chars__char = 16;
int v8dbg_class_ConsString__first__String = 16, v8dbg_class_ConsString__second__String = 24;
int v8dbg_class_ThinString__actual__String = 16, v8dbg_class_SlicedString__parent__String = 16;
int v8dbg_class_SlicedString__offset__SMI = 24, v8dbg_StringRepresentationMask = 7;
int v8dbg_StringEncodingMask = 8, v8dbg_SeqStringTag = 0, v8dbg_ConsStringTag = 1;
int v8dbg_ThinStringTag = 5, v8dbg_SlicedStringTag = 3, v8dbg_OneByteStringTag = 8;
int _ZN2v88internal7Version6major_E = 11, _ZN2v88internal7Version6minor_E = 3;
const unsigned v8_Default_embedded_blob_code_size_ = 64;
void v8_Default_embedded_blob_code_(void) {}
V8EOF
cc -shared -fPIC -o "$dir/v8elf/v8like.so" "$dir/v8like.c" 2>/dev/null || true
rm -f "$dir/v8like.c"
cp "$dir/elf/libc.head" "$dir/v8elf/" 2>/dev/null || true

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

# profiles in every format the readers take
pt=$(mktemp -d)
if "$BUILD/fixtures/fixture_otlp" "$pt/fx.otlp" "$pt/fx.pb.gz" >/dev/null &&
	"$BUILD/fixtures/fixture_bigprofile" --samples 400 --stacks 120 "$pt/big.pb.gz" >/dev/null; then
	for n in fx big; do
		gzip -dc "$pt/$n.pb.gz" >"$dir/pprof/$n.pprof"
		"$BUILD/otelprof" convert "$pt/$n.pb.gz" "$dir/otlp/$n.otlp" --to otlp
		"$BUILD/otelprof" convert "$pt/$n.pb.gz" "$dir/folded/$n.folded" --to folded
	done
	cp "$pt/fx.otlp" "$dir/otlp/fixture.otlp"
fi
rm -rf "$pt"
printf 'main;work;leaf 10\nmain;other 3\n# comment\n\nmain 1\n' >"$dir/folded/small"
# OTLP/JSON as the collector's file exporter writes it (string-table keys, hex ids), two lines
line='{"resourceProfiles":[{"resource":{"attributes":[{"key":"process.pid","value":{"intValue":"7"}},{"keyStrindex":5,"value":{"stringValueStrindex":6}}]},"scopeProfiles":[{"scope":{"name":"otelprof"},"profiles":[{"sampleType":{"typeStrindex":1,"unitStrindex":2},"periodType":{"typeStrindex":3,"unitStrindex":4},"period":"10000000","timeUnixNano":"1700000000000000000","profileId":"00112233445566778899aabbccddeeff","samples":[{"stackIndex":1,"attributeIndices":[1],"linkIndex":1,"timestampsUnixNano":["1700000000000000001","1700000000000000002"]},{"stackIndex":1,"values":["5"]}]}]}]}],"dictionary":{"mappingTable":[{},{"memoryStart":"4096","memoryLimit":"8192","filenameStrindex":7,"attributeIndices":[2]}],"locationTable":[{},{"mappingIndex":1,"address":"4100","lines":[{"functionIndex":1,"line":"3"}],"attributeIndices":[3]}],"functionTable":[{},{"nameStrindex":8,"filenameStrindex":9}],"linkTable":[{},{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331"}],"stringTable":["","samples","count","cpu","nanoseconds","service.name","svc","/bin/app","main","app.c","thread.name","process.executable.build_id.gnu","profile.frame.type"],"attributeTable":[{},{"keyStrindex":10,"value":{"stringValue":"worker"}},{"keyStrindex":11,"value":{"stringValue":"aabbcc"}},{"keyStrindex":12,"value":{"stringValue":"native"}}],"stackTable":[{},{"locationIndices":[1]}]}}'
printf '%s\n%s\n' "$line" "$line" >"$dir/otlpjson/filexporter.jsonl"
"$BUILD/tests/test_hotspot" --seed "$dir/hotspot/jdk17.img" || true
"$BUILD/tests/test_perfmap" --seed "$dir/jitdump/swapped.dump" || true
if command -v node >/dev/null; then
	jd=$(mktemp -d)
	(cd "$jd" && timeout 20 node --perf-prof -e 'let s = 0; for (let i = 0; i < 1e6; i++) s += i' \
		>/dev/null 2>&1) || true
	for f in "$jd"/jit-*.dump; do [ -f "$f" ] && head -c 65536 "$f" >"$dir/jitdump/node.dump"; done
	rm -rf "$jd"
fi
