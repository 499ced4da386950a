#!/usr/bin/env bash
# The four-way comparison of issue 16 (the original TASO's joint graph and
# layout experiment, its Fig. 12 on BERT): for each model,
#   substitutions only   taso-optimize with each graph costed one step per
#                        node (--cost-per-node), run as the plain plan
#                        (one library call per operator, NCHW);
#   calls only           the input graph, run as taso-select's plan;
#   one after the other  the substitutions-only graph, run as taso-select's plan;
#   joint                taso-optimize --select (each graph costed by its
#                        selected call plan), run as taso-select's plan;
# against the input graph run as the plain plan. Each model file's plain and
# selected plans are timed by taso-select in one process, alternated run by
# run (5 rounds of RUNS); the rows of different files come from different
# processes (medians, so compare their ratios loosely). Searches use
# estimated costs by default (ESTIMATE=0 measures on the spot; COSTS=FILE
# reads a database), with rule chains, BUDGET graphs each; calls are
# selected on measured costs (COSTS, else measured on the spot).
# Usage: bench/select_joint.sh [BUILD_DIR] SUBSTITUTIONS[,FILE...] [RUNS] [THREADS]
#   MODELS="resnet50:size=56 bert:layers=2" by default; BUDGET=100.
set -u
build=${1:-build}
subst=${2:?usage: bench/select_joint.sh BUILD_DIR SUBSTITUTIONS [RUNS] [THREADS]}
runs=${3:-20}
threads=${4:-2}
models=${MODELS:-"resnet50:size=56 resnet50:bn=1,size=56 bert:layers=2"}
budget=${BUDGET:-100}
lib=data/library/onednn.smt2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
costs=(--estimate-costs)
[ "${ESTIMATE:-1}" = 0 ] && costs=()
[ -n "${COSTS:-}" ] && costs=(--costs "$COSTS")
select_costs=() # calls are selected on measured costs (COSTS, else measured on the spot)
[ -n "${COSTS:-}" ] && select_costs=(--costs "$COSTS")
optimize() { # optimize MODEL OUT EXTRA...: prints the search's seconds
  local m=$1 out=$2; shift 2
  "$build/bin/taso-optimize" --job jobs/workstation.ini --model "$m" --substitutions "$subst" \
    --out "$out" --fresh --budget "$budget" --chain --confirm-runs 0 --threads "$threads" \
    "${costs[@]}" "$@" >"$tmp/opt.log" 2>&1 || { echo "taso-optimize failed: $(grep -m1 error "$tmp/opt.log")" >&2; return 1; }
  sed -n 's/.* explored, .* generated, \([0-9.]*\) s search.*/\1/p' "$tmp/opt.log"
}
timed() { # timed MODEL: "PLAIN_MS SELECTED_MS WON" of one file, in one process
  "$build/bin/taso-select" --model "$1" --runs "$runs" --threads "$threads" "${select_costs[@]}" \
    --out "$tmp/sel.h5" --fresh >"$tmp/sel.log" 2>&1 || { echo "- - -"; return; }
  grep -q "plan agrees with" "$tmp/sel.log" || echo "DIFFERS" >&2
  sed -n 's/.*plain \([0-9.e+-]*\) ms, selected \([0-9.e+-]*\) ms .* faster in \([0-9]* of [0-9]*\) pairs.*/\1 \2 \3/p' "$tmp/sel.log"
}
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $threads threads, $(date -u +%F); searches: budget $budget, ${costs[*]:-measured costs}"
echo "| model | input, plain ms | substitutions only | calls only | one after the other | joint | search s (per node / joint) |"
echo "|---|---:|---:|---:|---:|---:|---|"
for m in $models; do
  pn_s=$(optimize "$m" "$tmp/pn.h5" --cost-per-node) || continue
  joint_s=$(optimize "$m" "$tmp/joint.h5" --select "$lib") || continue
  read -r in_plain in_sel _ <<<"$(timed "$m")"
  read -r pn_plain pn_sel _ <<<"$(timed "$tmp/pn.h5")"
  read -r _ joint_sel _ <<<"$(timed "$tmp/joint.h5")"
  x() { awk -v a="$in_plain" -v b="$1" 'BEGIN { if (b > 0) printf "%s (x%.2f)", b, a / b; else print "-" }'; }
  echo "| $m | $in_plain | $(x "$pn_plain") | $(x "$in_sel") | $(x "$pn_sel") | $(x "$joint_sel") | $pn_s / $joint_s |"
done
