#!/usr/bin/env bash
# The cpu runtime against ONNX Runtime, on the same ONNX files, the same
# machine and the same thread count. For each built-in model at its
# default size (and resnet50:stem=1, the whole ResNet-50 at 224x224):
#   1. taso-convert exports it to ONNX (its seeded weights included);
#   2. ONNX Runtime (the npm package onnxruntime-node, CPU execution
#      provider) runs it once on seeded random inputs, which it writes to
#      a folder, and saves its outputs;
#   3. taso-run --model X.onnx reads the same inputs and compares its
#      outputs with ORT's (--expect: largest |a - b| over the largest |b|,
#      tolerance TOL);
#   4. both are timed, alternately, in ROUNDS rounds: taso-run --threads T
#      --runs R/ROUNDS (after its 3 warm-up runs), then R/ROUNDS ORT runs in
#      one session (intraOpNumThreads T, interOpNumThreads 1, sequential
#      execution, graph optimizations ALL, 3 warm-up runs when created);
#      each side's latency is the median of its round medians.
# Prints one Markdown table (model, medians, ratio taso/ORT, agreement),
# with the machine, date, load and versions. A model that fails says so in
# its row, and the script goes on; it exits 1 if any row failed.
#
# Usage: bench/onnxruntime.sh [BUILD_DIR] [RUNS] [THREADS]   (default build, 10, nproc)
# Environment:
#   MODELS       the model specs (default: the eight built-ins and resnet50:stem=1)
#   ROUNDS       alternations per model (default 2)
#   WAIT         spin | passive | auto (default): how idle threads wait, on
#                both sides (passive: OMP_WAIT_POLICY=passive for taso-run,
#                session.intra_op.allow_spinning=0 for ORT); auto picks
#                passive when the load average is already at half the cores
#                or more (see docs/runtime.md, timing on a shared machine)
#   TOL          largest relative output difference accepted (default 1e-4)
#   ORT_VERSION  the onnxruntime-node version (default 1.22.0, which runs on Node 20)
#   ORT_DIR      where it is installed (default ${XDG_CACHE_HOME:-$HOME/.cache}/taso-ort);
#                outside the repository, never a dependency of the build or tests
# Needs node and npm (installs onnxruntime-node with npm when missing).
# Every command is echoed to stderr with a leading "+ ", so a run can be
# repeated from its log; the table goes to stdout.
set -uo pipefail
build=${1:-build}
runs=${2:-10}
threads=${3:-$(nproc)}
bin=$build/bin
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=${ROUNDS:-2}
tol=${TOL:-1e-4}
wait_policy=${WAIT:-auto}
ort_version=${ORT_VERSION:-1.22.0}
ort_dir=${ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/taso-ort}
models=${MODELS:-"resnet50 resnet50:stem=1 resnext50 squeezenet mobilenet_v2 inception_v3 nasnet_a nasrnn bert"}

die() { echo "onnxruntime.sh: $*" >&2; exit 2; }
{ [ -x "$bin/taso-run" ] && [ -x "$bin/taso-convert" ]; } || die "$bin/taso-run or taso-convert not built"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer"
[[ $threads =~ ^[1-9][0-9]*$ ]] || die "THREADS must be a positive integer"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer"
command -v node >/dev/null || die "node not found (Node.js 18 or later)"
case $wait_policy in
  spin | passive) ;;
  auto)
    if awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v c="$(nproc)" 'BEGIN { exit !(l >= c / 2) }'; then
      wait_policy=passive
    else
      wait_policy=spin
    fi ;;
  *) die "WAIT must be spin, passive or auto" ;;
esac
per_round=$(( (runs + rounds - 1) / rounds ))

exec 3>&2 # the echoes go to stderr even where a command's output goes to a log
run() { # echo a command, then run it
  echo "+ $*" >&3
  "$@"
}

# 1. onnxruntime-node, installed once into the cache folder
installed=$(node -p "require('$ort_dir/node_modules/onnxruntime-node/package.json').version" 2>/dev/null)
if [ "$installed" != "$ort_version" ]; then
  command -v npm >/dev/null || die "npm not found"
  run mkdir -p "$ort_dir" || die "cannot create $ort_dir"
  # --ignore-scripts: the package's postinstall only downloads the CUDA
  # execution provider from NuGet; the CPU binaries ship in the package
  run npm install --prefix "$ort_dir" --no-audit --no-fund --save-exact --ignore-scripts \
    "onnxruntime-node@$ort_version" >&2 || die "npm install onnxruntime-node@$ort_version failed"
fi
export NODE_PATH=$ort_dir/node_modules
run node -e "require('onnxruntime-node')" || die "onnxruntime-node does not load from $ort_dir"

tmp=$(mktemp -d)
ort_pid=
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
  [ -n "$ort_pid" ] && kill "$ort_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap '' PIPE # a write to an ORT process that died fails, and is reported, instead of ending the script

if [ "$wait_policy" = passive ]; then
  taso_env=(env OMP_WAIT_POLICY=passive)
else
  taso_env=(env)
fi

median() { # median of the numbers given
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) exit 1
    if (NR % 2) printf "%.3f", v[(NR + 1) / 2]; else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
first_error() { # the first line of a log that says what went wrong, else its last line
  local line
  line=$(grep -m1 -iE 'error|fail|cannot|unsupported|refus|not |differ' "$1" || tail -n 1 "$1")
  printf '%s' "${line//|/\\|}" | cut -c1-160
}

onednn=
start_date=$(date -u '+%Y-%m-%d %H:%M UTC')
start_load=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
details=()
failed=0
for spec in $models; do
  name=$(printf '%s' "$spec" | tr ':=,' '_-_')
  onnx=$tmp/$name.onnx
  inputs=$tmp/$name.in
  ortout=$tmp/$name.ort
  log=$tmp/$name.log
  echo "# $spec" >&2

  # 1. export
  if ! run "$bin/taso-convert" "$spec" "$onnx" >"$log" 2>&1; then
    rows+=("| $spec | failed | | | export: $(first_error "$log") |")
    failed=1
    continue
  fi

  # 2. ORT runs it once: inputs written, outputs saved
  ort_ok=1
  if ! run "${taso_env[@]}" node "$here/bench/ort_latency.js" "$onnx" --threads "$threads" \
      --wait "$wait_policy" --write-inputs "$inputs" --save "$ortout" >"$log" 2>&1; then
    ort_ok=0
    agree="ORT failed: $(first_error "$log")"
    failed=1
  fi

  # 3. taso-run on the same inputs, against ORT's outputs
  if [ $ort_ok = 1 ]; then
    run "$bin/taso-run" --model "$onnx" --backend cpu --threads "$threads" --runs 0 \
      --inputs "$inputs" --expect "$ortout" --tolerance "$tol" >"$log" 2>&1
    rc=$?
    diff=$(sed -n 's/^--expect: largest difference .* absolute, \(.*\) relative.*/\1/p' "$log")
    if [ $rc = 0 ]; then
      agree="yes ($diff)"
    elif [ -n "$diff" ]; then
      agree="NO ($diff > $tol)"
      failed=1
    else
      agree="taso-run failed: $(first_error "$log")"
      failed=1
    fi
  fi

  # 4. timing, alternately: a taso-run round, then an ORT round
  if [ $ort_ok = 1 ]; then
    echo "+ ${taso_env[*]} node $here/bench/ort_latency.js $onnx --threads $threads --wait $wait_policy --inputs $inputs --serve --warmup 3  (rounds of $per_round runs on stdin)" >&2
    coproc ORT { exec "${taso_env[@]}" node "$here/bench/ort_latency.js" "$onnx" --threads "$threads" \
                   --wait "$wait_policy" --inputs "$inputs" --serve --warmup 3 2>&1; }
    # shellcheck disable=SC2153 # ORT_PID: set by coproc
    ort_pid=$ORT_PID
    ort_in=${ORT[1]}
    ort_outfd=${ORT[0]}
    ort_ready=0
    ort_err=
    while IFS= read -r -t 600 line <&"$ort_outfd"; do
      case $line in
        ready) ort_ready=1; break ;;
        ort:*) ;;
        *) ort_err=$line ;;
      esac
    done
  fi
  taso_meds=()
  ort_meds=()
  taso_err=
  for ((r = 1; r <= rounds; r++)); do
    if [ -z "$taso_err" ]; then
      if run "${taso_env[@]}" "$bin/taso-run" --model "$onnx" --backend cpu --threads "$threads" \
          --runs "$per_round" >"$log" 2>&1; then
        taso_meds+=("$(sed -n 's/^end to end: median \([0-9.]*\) ms.*/\1/p' "$log")")
        [ -n "$onednn" ] || onednn=$(sed -n 's/^cpu: \(oneDNN [^,]*\).*/\1/p' "$log")
      else
        taso_err=$(first_error "$log")
      fi
    fi
    if [ $ort_ok = 1 ] && [ "$ort_ready" = 1 ]; then
      echo "+ (ORT round: $per_round runs)" >&2
      if { echo "$per_round" >&"$ort_in"; } 2>/dev/null && IFS= read -r -t 600 line <&"$ort_outfd" &&
          [[ $line == times* ]]; then
        ort_meds+=("${line##* median }")
      else
        ort_ready=0
        ort_err=${line:-ORT stopped}
      fi
    fi
  done
  if [ $ort_ok = 1 ]; then
    { echo quit >&"$ort_in"; exec {ort_in}>&-; } 2>/dev/null
    wait "$ort_pid" 2>/dev/null
    ort_pid=
  fi

  taso_ms=failed
  ort_ms=failed
  ratio=
  [ -z "$taso_err" ] && taso_ms=$(median "${taso_meds[@]}")
  [ $ort_ok = 1 ] && [ ${#ort_meds[@]} = "$rounds" ] && ort_ms=$(median "${ort_meds[@]}")
  if [ $ort_ok = 0 ]; then
    ort_ms="failed"
  elif [ "$ort_ms" = failed ]; then
    agree="$agree; ORT timing failed: ${ort_err//|/\\|}"
    failed=1
  fi
  if [ -n "$taso_err" ]; then
    agree="$agree; taso-run timing failed: $taso_err"
    failed=1
  fi
  if [ "$taso_ms" != failed ] && [ "$ort_ms" != failed ]; then
    ratio=$(awk -v a="$taso_ms" -v b="$ort_ms" 'BEGIN { printf "%.2f", a / b }')
  fi
  rows+=("| $spec | $taso_ms | $ort_ms | $ratio | $agree |")
  details+=("$spec: taso ${taso_meds[*]:-none}; ORT ${ort_meds[*]:-none}")
done

cat <<EOF
## The runtime against ONNX Runtime

Machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; load average $start_load at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end
Date: $start_date
Versions: $("$bin/taso-run" --version 2>/dev/null | head -1 | sed 's/^taso-run (taso)/taso/'), ${onednn:-oneDNN (unknown)}; onnxruntime-node $ort_version (Node.js $(node --version))
Settings: $threads threads on both sides, $rounds alternating rounds of $per_round runs each (after 3 warm-up runs), idle threads $wait_policy

| model | taso cpu median ms | ORT median ms | ratio taso/ORT | agree (largest relative difference, tolerance $tol) |
|---|---:|---:|---:|---|
EOF
printf '%s\n' "${rows[@]}"
echo
echo "Round medians (ms):"
printf -- '- %s\n' "${details[@]}"
echo
echo "Command: bench/onnxruntime.sh $build $runs $threads"
exit $failed
