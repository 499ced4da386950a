#!/usr/bin/env bash
# Optimize the model zoo on the CPU (issue 33, item 4).
#
#   bench/zoo_optimize.sh [BUILD] [--only a,b] [--out DIR (default out/zoo-optimize)] [--fresh]
#
#   1. The cost database (DIR/costs.h5) is filled once, before any search:
#      `taso-measure --expand` of every zoo network (data/zoo, graph-only,
#      seeded weights) with the substitutions' rules ("measure s").
#   2. taso-optimize of each network: rule chains, budget BUDGET, time
#      limit LIMIT, that database; the result checked against the input on
#      seeded inputs and confirmed end to end (5 rounds of RUNS runs,
#      alternated; the result is written only when a sign test finds it
#      faster, else the input is: "input kept").
#   3. ONNX Runtime's latency on the original ONNX file with its weights
#      (scripts/zoo.py full, in FULL), where both it and onnxruntime-node
#      (ORT_DIR, as bench/onnxruntime.sh installs it) are present: same
#      thread count, graph optimizations all, 5 x RUNS runs after 3 warm-up
#      runs, the median; "-" otherwise. (A network the search left
#      unchanged is timed alone by taso-run, 5 x RUNS runs, for this column.)
# Prints the table (zoo_optimize.py report): search seconds, how it ended,
# cost ratio, measured ratio, pairs won, written or kept, ORT; then the
# distribution of the speedups, and the heat map of the rules that fired,
# networks grouped by their source family (DIR/rules.csv, DIR/rules.png).
# Each network's figures are kept in DIR/NAME.row and its rules in
# DIR/NAME.rules.h5 (the optimized model itself is deleted unless KEEP=1):
# a run cut short resumes where it stopped; --fresh starts over.
# Environment: SUBST (default out/substitutions.h5,out/batchnorm.h5, the
# main job's), BUDGET (100), LIMIT (60 s), RUNS (10), THREADS (nproc),
# FULL (out/zoo-full), ORT_DIR. No assertion: it prints figures; the exit
# status is 1 when a network failed or its result differs from its input.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  build=$1
  shift
fi
bin=$build/bin
only="" out=$here/out/zoo-optimize fresh=0
while [ $# -gt 0 ]; do
  case $1 in
  --only) only=${2:?--only needs a list}; shift ;;
  --out) out=${2:?--out needs a folder}; shift ;;
  --fresh) fresh=1 ;;
  -h | --help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "zoo_optimize.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
subst=${SUBST:-$here/out/substitutions.h5,$here/out/batchnorm.h5}
budget=${BUDGET:-100} limit=${LIMIT:-60} runs=${RUNS:-10} threads=${THREADS:-$(nproc)}
full=${FULL:-$here/out/zoo-full}
ort_dir=${ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/taso-ort}
py=/usr/bin/python3
zoo=$here/data/zoo
die() { echo "zoo_optimize.sh: $*" >&2; exit 2; }
[ -x "$bin/taso-optimize" ] || die "$bin/taso-optimize not built"
for f in ${subst//,/ }; do
  [ -f "$f" ] || die "$f not found (the main job makes it: bash scripts/setup.sh pipeline; or set SUBST)"
done
"$py" -c 'import h5py, matplotlib' 2>/dev/null || die "$py lacks h5py or matplotlib"
mkdir -p "$out" || exit 2
[ $fresh = 1 ] && rm -f "$out"/*.row "$out"/*.rules.h5 "$out"/costs.h5 "$out"/measured
ort=0
command -v node >/dev/null && NODE_PATH=$ort_dir/node_modules node -e "require('onnxruntime-node')" \
  2>/dev/null && ort=1
export NODE_PATH=$ort_dir/node_modules

if [ -n "$only" ]; then names=$(tr ',' ' ' <<<"$only"); else names=$(tail -n +2 "$zoo/manifest.csv" | cut -d, -f1); fi
for name in $names; do
  [ -f "$zoo/$name.onnx" ] || die "$zoo/$name.onnx: no such zoo network"
done
echo "+ commands are in $out/commands" >&2
run() { # run LOG CMD...: echoes the command into the list, its output into LOG
  local log=$1
  shift
  echo "+ $*" >>"$out/commands"
  "$@" >"$log" 2>&1
}

# 1. the database, filled once (a network measured before is skipped)
touch "$out/measured"
for name in $names; do
  grep -qx "$name" "$out/measured" && continue
  t0=$(date +%s.%N)
  if run "$out/$name.measure.log" "$bin/taso-measure" --job "$here/jobs/workstation.ini" \
      --model "$zoo/$name.onnx" --expand --substitutions "$subst" --db "$out/costs.h5"; then
    echo "$name" >>"$out/measured"
    awk -v a="$t0" -v b="$(date +%s.%N)" -v n="$name" 'BEGIN { printf "%s %.1f\n", n, b - a }' \
      >>"$out/measure_seconds"
    printf 'measured %-22s %s\n' "$name" "$(tail -n 2 "$out/$name.measure.log" | head -1 | cut -c1-110)" >&2
  else
    echo "FAIL $name measure: $(tail -1 "$out/$name.measure.log")" >&2
  fi
done

ort_ms() { # ort_ms FILE: ONNX Runtime's median over 5 x RUNS runs
  printf '%s\nquit\n' $((5 * runs)) | node "$here/bench/ort_latency.js" "$1" --threads "$threads" \
    --serve --warmup 3 2>&1 | sed -n 's/^times.* median \([0-9.]*\).*/\1/p' | head -1
}

# 2. and 3. each network
fail=0
for name in $names; do
  rowf=$out/$name.row
  [ -f "$rowf" ] && continue
  man=$(grep "^$name," "$zoo/manifest.csv")
  family=$(cut -d, -f3 <<<"$man") nodes=$(cut -d, -f6 <<<"$man")
  gfam=$("$bin/taso-rules" --model "$zoo/$name.onnx" 2>/dev/null | sed -n '1s/.*: family //p')
  msecs=$(awk -v n="$name" '$1 == n { print $2 }' "$out/measure_seconds" 2>/dev/null | tail -1)
  opt=$out/$name.opt.h5
  run "$out/$name.log" "$bin/taso-optimize" --model "$zoo/$name.onnx" --substitutions "$subst" \
    --out "$opt" --fresh --budget "$budget" --time-limit "$limit" --chain --threads "$threads" \
    --confirm-runs "$runs" --costs "$out/costs.h5"
  rc=$?
  status=ok
  case $rc in
  0) ;;
  3) status=DIFFERS fail=1 ;;
  *) status="failed ($rc)" fail=1 ;;
  esac
  fields=$(printf '%0.s-,' {1..10})-
  if [ -f "$opt" ] && [ "$status" != "failed ($rc)" ]; then
    fields=$("$py" "$here/bench/zoo_optimize.py" row "$opt" "$out/$name.rules.h5") ||
      { status="unreadable" fail=1; }
  fi
  [ "${KEEP:-0}" = 1 ] || rm -f "$opt"
  # nothing rewritten, so nothing confirmed: the input timed alone (5 x RUNS runs)
  plain=-
  if [ "$status" = ok ] && [ "$(cut -d, -f7 <<<"$fields")" = - ]; then
    run "$out/$name.run.log" "$bin/taso-run" --model "$zoo/$name.onnx" --backend cpu --threads "$threads" \
      --runs $((5 * runs)) &&
      plain=$(sed -n 's/^end to end: median \([0-9.]*\) ms.*/\1/p' "$out/$name.run.log")
  fi
  o=-
  if [ $ort = 1 ] && [ -f "$full/$name.onnx" ]; then
    echo "+ node bench/ort_latency.js $full/$name.onnx --threads $threads --serve --warmup 3 ($((5 * runs)) runs)" \
      >>"$out/commands"
    o=$(ort_ms "$full/$name.onnx")
    [ -n "$o" ] || o=failed
  fi
  echo "$name,$family,$gfam,$nodes,$status,${msecs:--},$fields,$plain,$o" >"$rowf"
  printf '%-22s %s\n' "$name" "$(grep "^taso-optimize: .*: cost" "$out/$name.log" | cut -c15-150)" >&2
done

# the table, the distribution and the heat map
rows=$out/rows.csv
echo "network,family,graph_family,nodes,status,measure_s,cost_before,cost_after,search_s,ended_by,explored,rewrites,run_before,run_after,won,pairs,kept,plain_ms,ort_ms" >"$rows"
heat=()
for name in $names; do
  [ -f "$out/$name.row" ] || continue
  cat "$out/$name.row" >>"$rows"
  [ -f "$out/$name.rules.h5" ] && heat+=("$(cut -d, -f2 "$out/$name.row")/$name=$out/$name.rules.h5")
done
echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $threads threads, $(date -u +%F), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# substitutions $subst; budget $budget, time limit $limit s, rule chains, confirmation 5 x $runs runs; costs $out/costs.h5 ($(wc -l <"$out/measured") networks measured with --expand in $(awk '{ s += $2 } END { printf "%.0f", s }' "$out/measure_seconds" 2>/dev/null) s)"
[ $ort = 1 ] || echo "# ONNX Runtime: onnxruntime-node not found in $ort_dir (bench/onnxruntime.sh installs it)"
"$py" "$here/bench/zoo_optimize.py" report "$rows"
if [ ${#heat[@]} -gt 0 ]; then
  "$py" "$here/bench/rule_heatmap.py" "$out/rules" $(printf '%s\n' "${heat[@]}" | sort) >"$out/heatmap.txt" ||
    fail=1
  echo "# the heat map: $out/rules.png, $out/rules.csv ($(($(wc -l <"$out/rules.csv") - 1)) rules fired in some network)"
fi
exit $fail
