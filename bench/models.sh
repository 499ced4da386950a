#!/usr/bin/env bash
# Every built-in model on the reference and cpu backends, and through ONNX
# (issue 13's targets): for each model, at a size the double-precision
# reference finishes in seconds,
#   1. the reference backend runs it once on seeded inputs and saves its
#      outputs;
#   2. the cpu backend (oneDNN) runs it and compares (--expect);
#   3. taso-convert exports it to ONNX (checked by python3-onnx when
#      installed), and the cpu backend runs the re-imported file and
#      compares with the same saved outputs;
#   4. the cpu backend's end-to-end latency at that size.
# Prints one line per model and exits 1 if any comparison fails.
# Usage: bench/models.sh [BUILD_DIR] [RUNS] [quick]   (default build, 10)
# "quick" shrinks the models further (the ctest model_agreement uses it).
# Every command is echoed, so a run can be repeated from its log.
set -uo pipefail
build=${1:-build}
runs=${2:-10}
quick=${3:-}
bin=$build/bin
here=$(cd "$(dirname "$0")/.." && pwd)
tol=1e-4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$bin/taso-run" ] || { echo "models.sh: $bin/taso-run not built" >&2; exit 2; }

if [ "$quick" = quick ]; then
  specs="resnet50:size=14 resnext50:size=32,groups=8 nasnet_a:size=32 nasrnn:hidden=64
         bert:seq=16,hidden=64,heads=4,layers=2 inception_v3:size=75 squeezenet:size=48
         mobilenet_v2:size=32"
else
  specs="resnet50:size=28 resnext50:size=64 nasnet_a:size=64 nasrnn bert:layers=2
         inception_v3:size=75 squeezenet:size=64 mobilenet_v2:size=64"
fi

echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
fail=0
step() { # step LABEL CMD...: runs, echoes, keeps its output in $tmp/log
  local label=$1
  shift
  echo "+ $*" >>"$tmp/commands"
  if ! "$@" >"$tmp/log" 2>&1; then
    echo "FAIL $label: $*"
    sed 's/^/  /' "$tmp/log"
    fail=1
    return 1
  fi
}
printf '%-44s %-22s %-22s %s\n' model "cpu vs reference" "onnx vs reference" "cpu latency"
for spec in $specs; do
  name=${spec%%:*}
  ref=$tmp/$name.ref
  mkdir -p "$ref"
  step "$spec reference" "$bin/taso-run" --model "$spec" --backend reference --runs 0 --save "$ref" || continue
  step "$spec cpu" "$bin/taso-run" --model "$spec" --backend cpu --runs 0 --expect "$ref" --tolerance $tol || continue
  cpu=$(sed -n 's/^--expect: largest difference .* absolute, \(.*\) relative.*/\1/p' "$tmp/log")
  step "$spec export" "$bin/taso-convert" "$spec" "$tmp/$name.onnx" || continue
  if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
    step "$spec onnx checker" /usr/bin/python3 "$here/tests/onnx_check.py" "$tmp/$name.onnx" || continue
  fi
  step "$spec onnx" "$bin/taso-run" --model "$tmp/$name.onnx" --backend cpu --runs 0 --expect "$ref" --tolerance $tol || continue
  onnx=$(sed -n 's/^--expect: largest difference .* absolute, \(.*\) relative.*/\1/p' "$tmp/log")
  step "$spec latency" "$bin/taso-run" --model "$spec" --backend cpu --runs "$runs" || continue
  lat=$(sed -n 's/^end to end: //p' "$tmp/log")
  printf '%-44s %-22s %-22s %s\n' "$spec" "$cpu" "$onnx" "$lat"
done
echo "# commands:"
sed 's/^/#   /' "$tmp/commands"
exit $fail
