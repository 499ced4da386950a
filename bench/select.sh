#!/usr/bin/env bash
# Library-call selection on every built-in model (issue 16's table): for
# each model, taso-select with the oneDNN description on the cpu backend
# (costs measured on the spot, or read from COSTS=costs.h5), then the plain
# plan (one library call per operator, NCHW, each result in a buffer of
# its own) against the selected plan, timed end to end by taso-select
# itself: 5 rounds of RUNS runs each, alternated run by run, medians of
# the rounds' medians, and the pairs of runs the selected plan won. Also
# each plan's cost (the sum of its calls' costs), the bytes of its buffers
# (every tensor, less those written in place: what the runner allocates),
# the peak resident memory of a taso-run process running each plan, the
# calls fused, in place and in a blocked layout, the selection's
# seconds and Z3 queries, and whether the selected plan agrees with the
# reference backend; and the runtime's own plan (its fixed fusion, NCHW:
# what taso-run ran before plans), timed against the selected one the same
# way (the pairs the selected plan won in brackets). No assertion: it
# prints figures.
# Usage: bench/select.sh [BUILD_DIR] [RUNS] [THREADS]   (defaults: build, 20, 2)
#   MODELS="spec ..." picks models; ESTIMATE=1 selects on estimated costs.
set -u
build=${1:-build}
runs=${2:-20}
threads=${3:-2}
models=${MODELS:-"resnet50:size=56 resnet50:bn=1,size=56 resnext50:size=64 nasnet_a:size=64 nasrnn bert:layers=2 inception_v3:size=75 squeezenet:size=64 mobilenet_v2:size=64"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
extra=()
[ -n "${COSTS:-}" ] && extra+=(--costs "$COSTS")
[ "${ESTIMATE:-0}" = 1 ] && extra+=(--estimate-costs)
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $threads threads, $(date -u +%F)"
echo "| model | plain cost ms | selected | cost x | plain latency ms | runtime's plan ms vs selected, one pairing | selected | latency x | won | plain MiB | selected MiB | peak RSS plain / selected MiB | calls (fused, in place, blocked, concats placed) | select s (and measuring) | Z3 queries | agrees |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"
for m in $models; do
  log=$tmp/log
  if ! "$build/bin/taso-select" --model "$m" --runs "$runs" --threads "$threads" "${extra[@]}" \
      --out "$tmp/out.h5" --fresh >"$log" 2>&1; then
    echo "| $m | failed: $(grep -m1 error "$log") |"
    continue
  fi
  plain=$(sed -n 's/.*plain (per operator): *cost \([0-9.e+-]*\) ms.*buffers \([0-9.]*\) MiB.*/\1 \2/p' "$log")
  sel=$(sed -n 's/.*calls selected from .* in \([0-9.]*\) s (\([0-9.]*\) s of it measuring; \([0-9]*\) Z3 queries.*cost [0-9.e+-]* -> \([0-9.e+-]*\) ms.*-> \([0-9.]*\) MiB.*/\1 \2 \3 \4 \5/p' "$log")
  calls=$(grep -E "selected, (row-major|channels last)" "$log" | sed -n 's/.* \([0-9]* calls ([^)]*)\).*/\1/p' | head -1)
  lat=$(sed -n 's/.*plain \([0-9.e+-]*\) ms, selected \([0-9.e+-]*\) ms (x\([0-9.]*\);.* faster in \([0-9]* of [0-9]*\) pairs.*/\1 \2 \3 \4/p' "$log")
  agrees=$(grep -q "plan agrees with" "$log" && echo yes || echo DIFFERS)
  # peak resident memory of a process running each plan (taso-run, 3 runs)
  rss() { /usr/bin/time -f %M "$build/bin/taso-run" --model "$tmp/out.h5" --runs 3 --threads "$threads" "$@" 2>&1 >/dev/null | tail -1; }
  prss=$(rss --no-fusion)
  srss=$(rss)
  read -r pc pmib <<<"$plain"
  read -r secs msecs queries sc smib <<<"$sel"
  secs=$(awk -v a="$secs" -v b="$msecs" 'BEGIN { printf "%.2f (%.1f measuring)", a - b, b }')
  read -r pl sl lx won <<<"${lat:-- - - -}"
  cx=$(awk -v a="$pc" -v b="$sc" 'BEGIN { printf "%.3f", a / b }')
  rt=$(sed -n "s/.*the runtime's own plan \([0-9.e+-]*\) ms, selected \([0-9.e+-]*\) ms (x\([0-9.]*\); faster in \([0-9]*\) of.*/\1 vs \2 (x\3, won \4)/p" "$log")
  echo "| $m | $pc | $sc | $cx | $pl | ${rt:--} | $sl | $lx | ${won:-} | $pmib | $smib | $((prss / 1024)) / $((srss / 1024)) | $calls | $secs | $queries | $agrees |"
done
