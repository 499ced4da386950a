#!/usr/bin/env bash
# Incremental costs in the baseline search (issue 15): two builds of
# taso-optimize, BEFORE and AFTER, run the same searches (--search
# backtracking, one thread, --no-measure on one fixed cost database, the
# same budget), one model at a time, alternately. For each model it prints
# both runs' search seconds and CPU seconds, graphs generated per search
# second, and the ratios AFTER over BEFORE; and it checks that the runs
# found the same thing: the final cost, graphs explored, generated and
# queued, rewrites applied and the written graph (/graphs) must be equal
# (a difference is reported and the exit status is 1). The cost database must hold every configuration the
# searches meet: fill it first with the same budget (--record-costs).
# GUARD_CACHE=1: one verdict file (--guard-cache) for all runs, filled by
# an untimed run of AFTER per model first, so that the timed runs prove
# nothing again (re-proofs are most of a short search: bert's).
# Prints the load before and after, and every command it ran.
# Usage: bench/optimize_incremental.sh BEFORE_BIN AFTER_BIN SUBSTITUTIONS COSTS [BUDGET]
#   (BUDGET default 300). MODELS="spec ..." replaces the model list
#   (default: nasrnn bert:layers=2 resnet50:size=28 squeezenet:size=64).
set -uo pipefail
[ $# -ge 4 ] || { sed -n '2,16p' "$0" >&2; exit 2; }
before=$1 after=$2 subst=$3 costs=$4 budget=${5:-300}
models=${MODELS:-nasrnn bert:layers=2 resnet50:size=28 squeezenet:size=64}
for b in "$before" "$after"; do
  [ -x "$b" ] || { echo "optimize_incremental.sh: $b is not an executable" >&2; exit 2; }
done
[ -r "$subst" ] || { echo "optimize_incremental.sh: cannot read $subst" >&2; exit 2; }
[ -r "$costs" ] || { echo "optimize_incremental.sh: cannot read $costs" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One search; its summary line goes to $tmp/$2.line.
search() {
  local bin=$1 tag=$2 spec=$3
  local cmd=("$bin" --model "$spec" --substitutions "$subst" --out "$tmp/$tag.h5" --fresh
    --threads 1 --budget "$budget" --confirm-runs 0 --no-check --costs "$costs" --no-measure)
  [ "${GUARD_CACHE:-0}" = 1 ] && cmd+=(--guard-cache "$tmp/verdicts.h5")
  echo "+ ${cmd[*]}"
  "${cmd[@]}" > "$tmp/$tag.log" 2>&1 || { echo "FAILED ($tag):"; tail -3 "$tmp/$tag.log"; return 1; }
  grep -h 'graphs explored' "$tmp/$tag.log" | tail -1 > "$tmp/$tag.line"
}

# Field of a summary line: cost, explored, generated, seconds, cpu, rewrites.
field() {
  sed -n 's/.*-> \([0-9.e+-]*\) ms .*, \([0-9]*\) graphs explored, \([0-9]*\) generated, \([0-9.]*\) s search (\([0-9.]*\) CPU s), \([0-9]*\) rewrites.*/\1 \2 \3 \4 \5 \6/p' "$1" |
    awk -v k="$2" '{print $k}'
}

echo "load: $(uptime)"
status=0
rows=()
for spec in $models; do
  if [ "${GUARD_CACHE:-0}" = 1 ]; then
    search "$after" fill "$spec" || { status=1; continue; }
  fi
  search "$before" before "$spec" || { status=1; continue; }
  search "$after" after "$spec" || { status=1; continue; }
  same=1
  for k in 1 2 3 6; do
    [ "$(field "$tmp/before.line" $k)" = "$(field "$tmp/after.line" $k)" ] || same=0
  done
  for t in before after; do
    { h5dump -a /graphs_queued "$tmp/$t.h5" | sed -n 's/^ *(0): *//p'
      h5dump -d /graphs/nodes -d /graphs/outputs "$tmp/$t.h5" | sed 1d; } > "$tmp/$t.dump"
  done
  cmp -s "$tmp/before.dump" "$tmp/after.dump" || same=0
  if [ $same = 0 ]; then
    echo "DIFFERENT RESULT on $spec:"
    cat "$tmp/before.line" "$tmp/after.line"
    status=1
  fi
  rows+=("$(awk -v m="$spec" -v g="$(field "$tmp/before.line" 3)" \
    -v bs="$(field "$tmp/before.line" 4)" -v bc="$(field "$tmp/before.line" 5)" \
    -v as="$(field "$tmp/after.line" 4)" -v ac="$(field "$tmp/after.line" 5)" 'BEGIN {
      printf "%-20s %9d %8.1f %8.1f %8.1f %8.1f %9.0f %9.0f %6.2f %6.2f", m, g, bs, as, bc, ac,
        g / (bs > 0 ? bs : 1e-9), g / (as > 0 ? as : 1e-9), bs / (as > 0 ? as : 1e-9), bc / (ac > 0 ? ac : 1e-9) }')")
done
echo
echo "budget $budget, one thread, fixed cost database, verdict cache ${GUARD_CACHE:-0}; s = search seconds, cpu = its CPU seconds"
printf "%-20s %9s %8s %8s %8s %8s %9s %9s %6s %6s\n" model generated "s before" "s after" \
  "cpu bef" "cpu aft" "gen/s bef" "gen/s aft" "x s" "x cpu"
for r in "${rows[@]}"; do echo "$r"; done
echo "load: $(uptime)"
exit $status
