#!/usr/bin/env bash
# A short run of every fuzz target, as a unit test (exit 0 pass, 1 finding). Installed by
# tests/fuzz/fuzz.mk as $BUILD/tests/test_fuzz_smoke and run by tests/run.sh.
# FUZZ_SMOKE_SECONDS per target (default 10).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$(dirname "$here")}
export BUILD
export FUZZ_SECONDS=${FUZZ_SMOKE_SECONDS:-10}
exec "@REPO@/scripts/fuzz.sh"
