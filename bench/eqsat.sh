#!/usr/bin/env bash
# Equality saturation against the original's search (issue 35's table):
# for each model, taso-optimize twice on the same costs, rules and machine,
#   1. --search backtracking at BUDGET graphs (the original's; TIME_LIMIT),
#   2. --search eqsat (15 iterations, 50,000 e-nodes: Tensat's bounds),
# and prints per model the cost of the input and of each result, each
# search's time (re-proofs of rules at new shapes included: no verdict
# cache is shared between the two searches), eqsat's time again with the
# verdicts its first run kept (--guard-cache: what a later run of the
# same model and rules takes; it may still prove relations the first run
# did not meet), a third time with the verdicts of both ("3rd s", the
# search alone once its verdicts have settled; "3rd x" its result's
# speedup over the input), the e-graph's size, what the exact
# extraction found (opt: the proved optimum of its program; best: the
# best within its time, eqsat_exact_seconds), the end-to-end
# speedup taso-optimize measured for the eqsat result ("kept" when the
# sign test found it no faster and the input was written), whether its
# result agrees with the original (taso-optimize's check), and Tensat's
# published speedup over the input graph and search time (Tensat's Table
# 1, an NVIDIA T4: a comparison of kind, not of number).
# Costs: --estimate-costs by default (the same figure on every machine, so
# the two searches' costs compare exactly); COSTS=costs.h5 reads a copy of
# a taso-measure database instead: rows it lacks are measured on the spot,
# which counts in that search's time, and kept in the copy
# (--record-costs), so that the eqsat runs after the first ("warm s",
# "3rd s") search with a database filled for them; then the backtracking
# search runs again on the database as they left it ("bt2 x": against
# "3rd x", the two searches on one database).
# Usage: bench/eqsat.sh [BUILD_DIR] [SUBSTITUTIONS] [BUDGET] [TIME_LIMIT] [RUNS]
#   (defaults: build, out/substitutions.h5,out/batchnorm.h5, 1000, 300 s, 10);
#   MODELS="spec ..." replaces the model list; EQSAT_JOB=FILE gives the
#   eqsat runs a job file's [optimize] settings (e.g. eqsat_exact_seconds
#   = 0, eqsat_proofs = all), printed in the header.
set -uo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
subst=${2:-$here/out/substitutions.h5,$here/out/batchnorm.h5}
budget=${3:-1000}
limit=${4:-300}
runs=${5:-10}
bin=$build/bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$bin/taso-optimize" ] || { echo "eqsat.sh: $bin/taso-optimize not built" >&2; exit 2; }
costs=(--estimate-costs)
if [ -n "${COSTS:-}" ]; then
  [ -r "$COSTS" ] || { echo "eqsat.sh: COSTS=$COSTS: cannot read it" >&2; exit 2; }
  cp "$COSTS" "$tmp/costs.h5"
  costs=(--costs "$tmp/costs.h5" --record-costs)
fi
eqjob=()
if [ -n "${EQSAT_JOB:-}" ]; then
  [ -r "$EQSAT_JOB" ] || { echo "eqsat.sh: EQSAT_JOB=$EQSAT_JOB: cannot read it" >&2; exit 2; }
  eqjob=(--job "$EQSAT_JOB")
fi

# Tensat's Table 1: speedup over the input graph (%), search seconds.
published() {
  case $1 in
    bert) echo "9.2 1.4" ;;
    resnext50) echo "8.8 0.7" ;;
    nasnet_a) echo "7.3 10.6" ;;
    nasrnn) echo "68.9 0.5" ;;
    inception_v3) echo "10.0 5.1" ;;
    squeezenet) echo "24.5 0.3" ;;
    *) echo "- -" ;;
  esac
}

# optimize SPEC SEARCH OUT [OPTION...]: runs taso-optimize; its log in $tmp/log
optimize() {
  local cmd=("$bin/taso-optimize" --model "$1" --substitutions "$subst" --search "$2" --out "$3"
    --fresh --budget "$budget" --time-limit "$limit" --confirm-runs "$runs" "${costs[@]}" "${@:4}")
  echo "+ ${cmd[*]}" >>"$tmp/commands"
  "${cmd[@]}" >"$tmp/log" 2>&1
}

specs=${MODELS:-"nasrnn bert:layers=2 squeezenet:size=64 resnext50:size=64 inception_v3:size=75
  nasnet_a:size=64 mobilenet_v2:size=64 resnet50:bn=1"}
echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc --all) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# substitutions $subst; costs: ${costs[*]}${COSTS:+ (a copy of $COSTS)}; backtracking budget $budget; time limit $limit s; $runs runs"
[ -n "${EQSAT_JOB:-}" ] && echo "# eqsat runs with $EQSAT_JOB: $(grep -v '^#' "$EQSAT_JOB" | tr '\n' ' ')"
printf '%-22s %9s %9s %6s %8s %9s %6s %8s %8s %6s %6s %6s %8s %5s %9s %-7s %7s %8s\n' model \
  "cost ms" "bt ms" "bt x" "bt s" "eqsat ms" "eq x" "eq s" "warm s" "3rd s" "3rd x" "bt2 x" e-nodes \
  exact "eq run x" agrees "Tensat%" "Tensat s"
fail=0
for spec in $specs; do
  name=${spec%%:*}
  summary='s/^taso-optimize: [^:]*: cost \([^ ]*\) -> \([^ ]*\) ms .* generated, \([^ ]*\) s search.*/\1 \2 \3/p'
  if ! optimize "$spec" backtracking "$tmp/bt.h5"; then
    echo "FAIL $spec backtracking"; tail -3 "$tmp/log"; fail=1; continue
  fi
  read -r before bt bts <<<"$(sed -n "$summary" "$tmp/log")"
  rm -f "$tmp/verdicts.h5"
  optimize "$spec" eqsat "$tmp/eq.h5" --guard-cache "$tmp/verdicts.h5" "${eqjob[@]}"
  rc=$?
  agrees=yes
  [ "$rc" = 3 ] && { agrees=DIFFERS; fail=1; }
  if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
    echo "FAIL $spec eqsat"; tail -3 "$tmp/log"; fail=1; continue
  fi
  read -r _ eq eqs <<<"$(sed -n "$summary" "$tmp/log")"
  nodes=$(sed -n 's/.*eqsat: [0-9]* iterations, \([0-9]*\) e-nodes.*/\1/p' "$tmp/log")
  exact=$(sed -n 's/.*exact extraction: \(optimal\|the best\|none\|off\).*/\1/p' "$tmp/log")
  exact=${exact/the best/best}
  run=$(sed -n 's/.*measured end to end [^ ]* ms -> [^ ]* ms (x\([^;]*\);.*/\1/p' "$tmp/log")
  grep -q 'the input graph is written' "$tmp/log" && run="$run kept"
  warm=- third=- third_x=-
  if optimize "$spec" eqsat "$tmp/eq2.h5" --guard-cache "$tmp/verdicts.h5" --confirm-runs 0 "${eqjob[@]}"; then
    read -r _ _ warm <<<"$(sed -n "$summary" "$tmp/log")"
  fi
  if optimize "$spec" eqsat "$tmp/eq2.h5" --guard-cache "$tmp/verdicts.h5" --confirm-runs 0 "${eqjob[@]}"; then
    read -r third_before third_ms third <<<"$(sed -n "$summary" "$tmp/log")"
    third_x=$(awk -v a="$third_before" -v b="$third_ms" 'BEGIN { printf "%.3f", a / b }')
  fi
  bt2_x=- # backtracking again on the database the eqsat runs left (COSTS): against "3rd x"
  if [ -n "${COSTS:-}" ] && optimize "$spec" backtracking "$tmp/bt2.h5" --confirm-runs 0; then
    read -r bt2_before bt2_ms _ <<<"$(sed -n "$summary" "$tmp/log")"
    bt2_x=$(awk -v a="$bt2_before" -v b="$bt2_ms" 'BEGIN { printf "%.3f", a / b }')
  fi
  read -r tensat_pct tensat_s <<<"$(published "$name")"
  printf '%-22s %9s %9s %6.3f %8s %9s %6.3f %8s %8s %6s %6s %6s %8s %5s %9s %-7s %7s %8s\n' \
    "$spec" "$before" "$bt" "$(awk -v a="$before" -v b="$bt" 'BEGIN { print a / b }')" "$bts" "$eq" \
    "$(awk -v a="$before" -v b="$eq" 'BEGIN { print a / b }')" "$eqs" "$warm" "$third" "$third_x" \
    "$bt2_x" "${nodes:--}" "${exact:--}" "${run:--}" "$agrees" "$tensat_pct" "$tensat_s"
done
echo "# commands:"
sed 's/^/#   /' "$tmp/commands"
exit $fail
