#!/usr/bin/env bash
# `make run`: run the otelprof collector with the default configuration, profiling every
# process on this host until Ctrl-C.
#   BUILD=...            build tree holding otelcol-otelprof (default: build/)
#   OTELPROF_OUTPUT=...  where the profiles go (default: /tmp/otelprof/profiles.jsonl)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
collector=$BUILD/otelcol-otelprof
config=collector-config/local.yaml
export OTELPROF_OUTPUT=${OTELPROF_OUTPUT:-/tmp/otelprof/profiles.jsonl}

if [ ! -x "$collector" ]; then
	echo "run: $collector not found; build it with \`make\`" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "run: profiling the whole host needs root (or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE," \
		"CAP_DAC_READ_SEARCH and CAP_SYSLOG); try: sudo make run" >&2
	exit 1
fi

cat <<MSG
otelprof: profiling every process on this host at 20 Hz per CPU; a batch every 5 s.
  profiles (OTLP/JSON, one ExportProfilesServiceRequest per line): $OTELPROF_OUTPUT
  processes per batch:
    jq -c '.dictionary.stringTable as \$s | .resourceProfiles[].resource.attributes | map({(\$s[.keyStrindex // 0]): (.value.intValue // \$s[.value.stringValueStrindex // 0])}) | add' $OTELPROF_OUTPUT
  config:        $config      stop with Ctrl-C (the last batch is written on exit)
MSG
exec "$collector" --config "$config" --feature-gates=service.profilesSupport
