#!/usr/bin/env bash
# taso-optimize on every built-in model (issue 15's table, the baseline):
# for each model, at a size this machine optimizes in minutes,
#   1. taso-optimize with the proved substitutions (costs measured on the
#      cpu backend on the spot) -> cost before and after, graphs explored,
#      search time, the rules that fired most;
#   2. the optimized model must agree with the original on seeded inputs
#      (taso-optimize's own check, naming the first rewrite that made it
#      differ, and taso-run --compare; float32 tolerance), else DIFFERS;
#   3. the end-to-end latency of the input and of the search's result,
#      from taso-optimize's own confirmation: 5 rounds of RUNS runs each,
#      alternated run by run, the medians of the rounds' medians ("-" when
#      nothing was rewritten); the pairs of runs the result won ("won
#      71/100") are in the "ended by" column, with "kept input" where they
#      were too few and the file holds the input graph. (Before
#      2026-11-27 separate taso-run processes timed the input and the
#      written file, which compared a kept input with itself: noise of up
#      to 30% on this shared machine.)
# Prints one line per model, beside the published speedups over the input
# graph and search times of the original TASO and of Tensat (Tensat's
# Table 1, on an NVIDIA T4: a comparison of kind, not of number), then the
# rules, then every command it ran. COSTS=costs.h5 reads a taso-measure
# database (rows it lacks are still measured on the spot). MEASURE=1 first
# fills it (COSTS, else a scratch file) with `taso-measure --expand` for each
# model, as the pipeline's measure stage does, so that the search's time
# limit is not spent timing configurations on the spot (its seconds are in
# the "measure s" column). CHAIN=1 searches with rule chains (--chain)
# instead of the original's search alone.
# Usage: bench/optimize.sh [BUILD_DIR] [SUBSTITUTIONS] [BUDGET] [TIME_LIMIT] [RUNS] [THREADS]
#   (defaults: build, a workstation set made here, 1000, 300 s, 20, 1)
# Without SUBSTITUTIONS it generates and verifies jobs/workstation.ini
# (about 20 s on 2 ranks); MODELS="spec ..." replaces the model list.
set -uo pipefail
build=${1:-build}
subst=${2:-}
budget=${3:-1000}
limit=${4:-300}
runs=${5:-20}
threads=${6:-1}
bin=$build/bin
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$bin/taso-optimize" ] || { echo "optimize.sh: $bin/taso-optimize not built" >&2; exit 2; }
mpiexec=${MPIEXEC:-mpirun}

step() { # step LABEL CMD...: runs, echoes, keeps its output in $tmp/log
  local label=$1
  shift
  echo "+ $*" >>"$tmp/commands"
  if ! "$@" >"$tmp/log" 2>&1; then
    echo "FAIL $label: $*"
    sed 's/^/  /' "$tmp/log" | tail -5
    return 1
  fi
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > 0 ? a / b : 0) }'; }
# Published (optimizer.md section 4, Tensat Table 1): TASO %, Tensat %,
# TASO search s, Tensat search s; "-" where the model was not in the table.
published() {
  case $1 in
    bert) echo "8.5 9.2 13.6 1.4" ;;
    resnext50) echo "5.5 8.8 25.3 0.7" ;;
    nasnet_a) echo "1.9 7.3 1226 10.6" ;;
    nasrnn) echo "45.4 68.9 177.3 0.5" ;;
    inception_v3) echo "6.3 10.0 68.6 5.1" ;;
    squeezenet) echo "6.7 24.5 16.4 0.3" ;;
    resnet50) echo "0 - - -" ;;
    *) echo "- - - -" ;;
  esac
}
costs=()
db=${COSTS:-}
[ "${MEASURE:-0}" = 1 ] && [ -z "$db" ] && db=$tmp/costs.h5
[ -n "$db" ] && costs=(--costs "$db")
[ "${CHAIN:-0}" = 1 ] && costs+=(--chain)

if [ -z "$subst" ]; then
  subst=$tmp/substitutions.h5
  (cd "$here" && step "generate" "$mpiexec" -n 2 "$bin/taso-generate" --job jobs/workstation.ini \
    --out "$tmp/candidates.h5" && step "verify" "$mpiexec" -n 2 "$bin/taso-verify" \
    --in "$tmp/candidates.h5" --out "$subst") || exit 1
fi

specs=${MODELS:-"nasrnn squeezenet:size=64 resnet50:size=28 resnext50:size=64 bert:layers=2
  inception_v3:size=75 mobilenet_v2:size=64 nasnet_a:size=64"}

echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# substitutions $subst, budget $budget, time limit $limit s, $threads threads, $runs runs, rule chains: ${CHAIN:-0}"
printf '%-24s %9s %10s %10s %6s %9s %9s %6s %8s %8s %-11s %-12s %6s %6s %7s %7s\n' model \
  "measure s" "cost ms" "opt ms" "x" "run ms" "opt run" "x" explored "search s" agrees "ended by" \
  "TASO%" "Tensat%" "TASO s" "Tensat s"
: >"$tmp/rules"
: >"$tmp/findings"
fail=0
for spec in $specs; do
  name=${spec%%:*}
  out=$tmp/$name.opt.h5
  # exit 3: written, but the result differs from the original (its finding
  # names the rewrite); anything else non-zero: no result
  agrees=yes
  msecs=-
  if [ "${MEASURE:-0}" = 1 ]; then
    t0=$(date +%s.%N)
    step "$spec measure" "$bin/taso-measure" --job "$here/jobs/workstation.ini" --model "$spec" \
      --expand --substitutions "$subst" --db "$db" || { fail=1; continue; }
    msecs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  fi
  echo "+ $bin/taso-optimize --model $spec --substitutions $subst --out $out --budget $budget --time-limit $limit --threads $threads --confirm-runs $runs ${costs[*]}" >>"$tmp/commands"
  "$bin/taso-optimize" --model "$spec" --substitutions "$subst" --out "$out" --fresh --budget "$budget" \
    --time-limit "$limit" --threads "$threads" --confirm-runs "$runs" "${costs[@]}" >"$tmp/log" 2>&1
  rc=$?
  cp "$tmp/log" "$tmp/opt.log"
  if [ "$rc" = 3 ]; then
    agrees=DIFFERS
    fail=1
    { echo "$spec differs:"; sed -n '/the result differs/,/^taso-optimize: [0-9]* configurations/p' "$tmp/log" |
      grep -v 'configurations measured'; } >>"$tmp/findings"
  elif [ "$rc" != 0 ]; then
    echo "FAIL $spec optimize"; tail -5 "$tmp/log"; fail=1; continue
  fi
  step "$spec show" "$bin/taso-show" "$out" || { fail=1; continue; }
  read -r before after explored secs <<<"$(sed -n \
    's/^  cost \([^ ]*\) -> \([^ ]*\) ms (x[^)]*); \([0-9]*\) graphs explored in \([^ ]*\) s.*/\1 \2 \3 \4/p' "$tmp/log")"
  ended=$(sed -n 's/.*, ended by \(.*\)$/\1/p' "$tmp/log")
  # the confirmation found the result no faster: the file is the input
  grep -q 'holds the input graph' "$tmp/log" && ended="$ended, kept input"
  # its pairs of runs won (taso-optimize writes the result only when a sign
  # test over them finds it faster)
  won=$(sed -n 's/.*faster in \([0-9]* of [0-9]*\) pairs of runs.*/\1/p' "$tmp/log" | head -1)
  [ -n "$won" ] && ended="$ended, won ${won/ of /\/}"
  { echo "$spec:"; sed -n '/^applied rules/,/^model /p' "$tmp/log" | grep ' x  ' | head -5; } >>"$tmp/rules"
  if ! step "$spec compare" "$bin/taso-run" --model "$out" --compare "$spec" --runs 0 --threads "$threads"; then
    agrees=DIFFERS
    fail=1
  fi
  # The latencies of taso-optimize's confirmation, input and result as
  # searched (also when the input was kept): medians of 5 rounds of RUNS
  # runs each, alternated run by run; none when nothing was rewritten.
  lat=- olat=- lx=-
  read -r lat olat _ <<<"$(sed -n \
    's/^taso-optimize: measured end to end \([^ ]*\) ms -> \([^ ]*\) ms .*/\1 \2/p' \
    "$tmp/opt.log" | head -1) - -"
  [ "$lat" != - ] && lx=$(printf '%.3f' "$(ratio "$lat" "$olat")")
  read -r taso_pct tensat_pct taso_s tensat_s <<<"$(published "$name")"
  printf '%-24s %9s %10s %10s %6.3f %9s %9s %6s %8s %8s %-11s %-12s %6s %6s %7s %7s\n' "$spec" \
    "$msecs" "$before" "$after" "$(ratio "$before" "$after")" "$lat" "$olat" "$lx" \
    "$explored" "$secs" "$agrees" "$ended" "$taso_pct" "$tensat_pct" "$taso_s" "$tensat_s"
done
echo "# rules that fired most, per model (count x rule):"
sed 's/^/#   /' "$tmp/rules"
echo "# results that differ from the original, with the first rewrite that made them differ:"
sed 's/^/#   /' "$tmp/findings"
echo "# commands:"
sed 's/^/#   /' "$tmp/commands"
exit $fail
