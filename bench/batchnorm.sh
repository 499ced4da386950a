#!/usr/bin/env bash
# Batch normalization folded by proved rules, end to end, with figures:
# generates and verifies jobs/batchnorm.ini, writes a conv-BN-ReLU ONNX
# model (tests/conv_bn_model.py: three blocks, one with a residual add) at
# CHANNELS x SIZE x SIZE, optimizes it with taso-optimize on the cpu
# backend, then runs the original and the optimized model RUNS times each,
# alternated ROUNDS times, and prints each round's medians and minima, the
# median of the medians and the ratio. Prints the load (uptime) before and
# after and every command it ran; asserts nothing.
# Usage: bench/batchnorm.sh [BUILD_DIR] [CHANNELS] [SIZE] [RUNS] [ROUNDS] [THREADS]
#   (defaults: build 64 56 30 5 1)
set -uo pipefail
build=${1:-build}
channels=${2:-64}
size=${3:-56}
runs=${4:-30}
rounds=${5:-5}
threads=${6:-1}
bin=$build/bin
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpiexec=${MPIEXEC:-mpirun}
[ -x "$bin/taso-optimize" ] || { echo "batchnorm.sh: $bin/taso-optimize not built" >&2; exit 2; }

step() { # step CMD...: echoed, output kept in $tmp/log, stops the script on failure
  echo "+ $*"
  "$@" >"$tmp/log" 2>&1 || { sed 's/^/  /' "$tmp/log" | tail -5; exit 1; }
}
median() { sort -g | awk '{v[NR]=$1} END {print NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "load before: $(uptime)"
cd "$here" || exit 1
step "$mpiexec" -n 2 "$bin/taso-generate" --job jobs/batchnorm.ini --out "$tmp/c.h5"
step "$mpiexec" -n 2 "$bin/taso-verify" --in "$tmp/c.h5" --out "$tmp/s.h5"
step /usr/bin/python3 tests/conv_bn_model.py "$tmp/m.onnx" "$channels" "$size"
step "$bin/taso-optimize" --job jobs/batchnorm.ini --model "$tmp/m.onnx" --substitutions "$tmp/s.h5" \
  --out "$tmp/m.opt.h5" --threads "$threads"
grep -E 'cost .* -> ' "$tmp/log" | sed 's/^taso-optimize: /  /'
step "$bin/taso-show" "$tmp/m.opt.h5"
sed -n '/^applied rules/,/^model /p' "$tmp/log" | sed '$d'
for model in m.onnx m.opt.h5; do
  "$bin/taso-run" --model "$tmp/$model" --runs 0 --threads "$threads" | grep ' steps '
done
for round in $(seq "$rounds"); do
  for model in m.onnx m.opt.h5; do
    line=$("$bin/taso-run" --model "$tmp/$model" --runs "$runs" --threads "$threads" | grep 'median')
    med=$(echo "$line" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
    min=$(echo "$line" | sed -n 's/.*min \([0-9.]*\) ms.*/\1/p')
    echo "$med" >>"$tmp/$model.med"
    echo "$min" >>"$tmp/$model.min"
    printf 'round %d %-10s median %8.3f ms  min %8.3f ms\n' "$round" "$model" "$med" "$min"
  done
done
before=$(median <"$tmp/m.onnx.med") after=$(median <"$tmp/m.opt.h5.med")
bmin=$(median <"$tmp/m.onnx.min") amin=$(median <"$tmp/m.opt.h5.min")
echo "conv-BN-ReLU ${channels}x${size}x${size}, $runs runs x $rounds rounds, $threads thread(s):"
awk -v b="$before" -v a="$after" -v bm="$bmin" -v am="$amin" 'BEGIN {
  printf "  median of medians: before %.3f ms, after %.3f ms (after/before %.3f)\n", b, a, a / b
  printf "  median of minima:  before %.3f ms, after %.3f ms (after/before %.3f)\n", bm, am, am / bm }'
echo "load after: $(uptime)"
