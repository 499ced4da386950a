#!/usr/bin/env bash
# Completeness of pruning on the workstation job (issue 12, section 2):
# generates jobs/workstation.ini and runs taso-derive on the result, which
# prints the histogram of derivation steps per reason and every pruned pair
# the optimizer's rewrite engine (with the rule guard's re-proofs) does not
# re-derive (exit 3 if any).
# Usage: bench/derive.sh [BUILD_BIN [OUT_DIR [RANKS]]]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/bin}
out=${2:-/tmp/taso-derive-bench}
ranks=${3:-2}
mkdir -p "$out"
uptime
set -x
time mpirun --oversubscribe -n "$ranks" "$bin/taso-generate" --job "$here/jobs/workstation.ini" \
  --out "$out/candidates.h5" --fresh
time mpirun --oversubscribe -n "$ranks" "$bin/taso-derive" "$out/candidates.h5"
