#!/usr/bin/env bash
# The parallel search against the baseline (issue 15's search-time table):
# for each model, with one cost database for all runs (filled first by a
# baseline run and a one-rank parallel run that measure what they meet,
# --record-costs; every timed run after that has --no-measure, so no run
# measures and every run sees the same costs):
#   - the baseline (--search backtracking): search time and final cost,
#     and (from a second, identical run) when it first queued a graph as
#     cheap as its result;
#   - for every run, the CPU seconds of the search summed over its ranks:
#     on a loaded or oversubscribed machine, the work done, where the
#     search time is mostly waiting for a core;
#   - the parallel search on 1, 2 and 8 ranks (oversubscribed on a small
#     machine): search time, final cost, the time it took to first find a
#     graph as cheap as the baseline's result ("-" if it never did), and the
#     balance: graphs expanded per rank;
#   - with rule chains (--chain, "+ch"): the baseline and the parallel
#     search again, each with its time to the baseline's cost.
# "To base" is when a run first had a graph within TOL (default 0.001, a
# tenth of a percent: costs are timings, noisier than that) of the
# baseline's final cost; for the baseline itself, of its own.
# Both searches count the budget in graphs expanded; the parallel one gets
# PAR_BUDGET (default twice BUDGET): rounds of WIDTH graphs are shallower
# than the baseline's one-at-a-time order, so with the same budget it may
# end above the baseline's cost, and the question is how soon it gets
# there given more. Prints a table, the load, and every command it ran.
# Usage: bench/optimize_parallel.sh [BUILD_DIR] [SUBSTITUTIONS] [BUDGET] [WIDTH] [TIME_LIMIT] [PAR_BUDGET]
#   (defaults: build, a workstation set made here, 100, 8, 600 s, 2 x BUDGET)
# MODELS="spec ..." replaces the model list. GUARD_CACHE=1 gives every run
# one verdict file (--guard-cache), filled by the runs that fill the cost
# database, so the timed runs prove nothing again: the search alone, as a
# later run over the same rules would see it. Without it each timed run
# makes its own re-proofs (the parallel search decides each relation once
# over all its ranks).
set -uo pipefail
build=${1:-build}
subst=${2:-}
budget=${3:-100}
width=${4:-8}
limit=${5:-600}
pbudget=${6:-$((2 * budget))}
tol=${TOL:-0.001}
bin=$build/bin
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$bin/taso-optimize" ] || { echo "optimize_parallel.sh: $bin/taso-optimize not built" >&2; exit 2; }
mpiexec=${MPIEXEC:-mpirun}
costs=$tmp/costs.h5

step() { # step LABEL CMD...: runs, records the command, keeps its output in $tmp/log
  local label=$1
  shift
  echo "+ $*" >>"$tmp/commands"
  if ! "$@" >"$tmp/log" 2>&1; then
    echo "FAIL $label: $*"
    sed 's/^/  /' "$tmp/log" | tail -5
    return 1
  fi
}
attr() { # full precision: the baseline's cost is the parallel runs' target
  /usr/bin/python3 -c 'import sys, h5py; v = h5py.File(sys.argv[1], "r").attrs[sys.argv[2]]
print(repr(float(v)) if v.dtype.kind == "f" else int(v))' "$1" "$2" 2>/dev/null
}

if [ -z "$subst" ]; then
  subst=$tmp/substitutions.h5
  (cd "$here" && step "generate" "$mpiexec" -n 2 "$bin/taso-generate" --job jobs/workstation.ini \
    --out "$tmp/candidates.h5" && step "verify" "$mpiexec" -n 2 "$bin/taso-verify" \
    --in "$tmp/candidates.h5" --out "$subst") || exit 1
fi

specs=${MODELS:-"bert:layers=2 nasrnn squeezenet:size=64 resnext50:size=32"}
echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; uptime: $(uptime)"
echo "# substitutions $subst, budget $budget graphs expanded (parallel: $pbudget), width $width, time limit $limit s, 1 thread per rank, verdict cache: ${GUARD_CACHE:-0}, to base: within $tol"
printf '%-22s %-9s %10s %9s %9s %9s %8s  %s\n' model search "cost ms" "search s" "cpu s" \
  "to base s" explored "expanded per rank"
fail=0
for spec in $specs; do
  name=${spec%%:*}
  common=(--model "$spec" --substitutions "$subst" --time-limit "$limit" --costs "$costs"
    --no-check --threads 1 --fresh --confirm-runs 0)
  [ "${GUARD_CACHE:-0}" = 1 ] && common+=(--guard-cache "$tmp/verdicts.h5")
  par=(--search parallel --width "$width" --budget "$pbudget")
  step "$spec fill" "$bin/taso-optimize" "${common[@]}" --budget "$budget" --record-costs \
    --out "$tmp/fill.h5" &&
    step "$spec fill parallel" "$mpiexec" -n 1 "$bin/taso-optimize" "${common[@]}" "${par[@]}" \
      --record-costs --out "$tmp/fill.h5" &&
    step "$spec fill chains" "$bin/taso-optimize" "${common[@]}" --budget "$budget" --chain \
      --record-costs --out "$tmp/fill.h5" &&
    step "$spec fill parallel chains" "$mpiexec" -n 1 "$bin/taso-optimize" "${common[@]}" \
      "${par[@]}" --chain --record-costs --out "$tmp/fill.h5" || { fail=1; continue; }
  step "$spec baseline" "$bin/taso-optimize" "${common[@]}" --budget "$budget" --no-measure \
    --out "$tmp/$name.base.h5" || { fail=1; continue; }
  base=$(attr "$tmp/$name.base.h5" cost_after_ms)
  target=$(awk -v b="$base" -v t="$tol" 'BEGIN { printf "%.17g", b * (1 + t) }')
  # again, for when it first had a graph as cheap as its own result
  step "$spec baseline again" "$bin/taso-optimize" "${common[@]}" --budget "$budget" --no-measure \
    --target-cost "$target" --out "$tmp/$name.base2.h5" || { fail=1; continue; }
  to=$(awk -v t="$(attr "$tmp/$name.base2.h5" target_seconds)" 'BEGIN { if (t == "" || t < 0) print "-"; else printf "%.2f", t }')
  printf '%-22s %-9s %10.5g %9.2f %9.2f %9s %8s  %s\n' "$spec" baseline "$base" \
    "$(attr "$tmp/$name.base.h5" search_seconds)" "$(attr "$tmp/$name.base.h5" search_cpu_seconds)" \
    "$to" "$(attr "$tmp/$name.base.h5" graphs_explored)" "-"
  out=$tmp/$name.basech.h5
  step "$spec baseline chains" "$bin/taso-optimize" "${common[@]}" --budget "$budget" --chain \
    --no-measure --target-cost "$target" --out "$out" || { fail=1; continue; }
  to=$(awk -v t="$(attr "$out" target_seconds)" 'BEGIN { if (t == "" || t < 0) print "-"; else printf "%.2f", t }')
  printf '%-22s %-9s %10.5g %9.2f %9.2f %9s %8s  %s\n' "" "base+ch" "$(attr "$out" cost_after_ms)" \
    "$(attr "$out" search_seconds)" "$(attr "$out" search_cpu_seconds)" "$to" \
    "$(attr "$out" graphs_explored)" "-"
  for run in 1 2 8 1+ch 2+ch 8+ch; do
    n=${run%+ch}
    chain=()
    [ "$n" != "$run" ] && chain=(--chain)
    out=$tmp/$name.p$run.h5
    step "$spec parallel $run" "$mpiexec" --oversubscribe -n "$n" "$bin/taso-optimize" "${common[@]}" \
      "${par[@]}" "${chain[@]}" --no-measure --target-cost "$target" --out "$out" ||
      { fail=1; continue; }
    per=$(sed -n 's/.*graphs expanded per rank: *//p' "$tmp/log")
    to=$(attr "$out" target_seconds)
    to=$(awk -v t="$to" 'BEGIN { if (t == "" || t < 0) print "-"; else printf "%.2f", t }')
    [ "$(attr "$out" search_complete)" = 1 ] || per="$per (time limit)"
    printf '%-22s %-9s %10.5g %9.2f %9.2f %9s %8s  %s\n' "" "par $run" "$(attr "$out" cost_after_ms)" \
      "$(attr "$out" search_seconds)" "$(attr "$out" search_cpu_seconds)" "$to" \
      "$(attr "$out" graphs_explored)" "$per"
  done
done
echo "# uptime after: $(uptime)"
echo "# commands:"
sed 's/^/#   /' "$tmp/commands"
exit $fail
