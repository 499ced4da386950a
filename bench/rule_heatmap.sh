#!/usr/bin/env bash
# Rule-usage statistics across models (issue 15): taso-optimize on every
# built-in model with one substitutions file, then the heat map of
# substitutions (rows: every rule that fired in some model, "#ROW text" as
# applied) by models (columns), cells = times the rule fired on the path to
# that model's result. Different model families need different rules; this
# is what a per-family rule subset will be chosen from.
#
# Usage: bench/rule_heatmap.sh [BUILD_DIR] [SUBSTITUTIONS] [BUDGET] [TIME_LIMIT] [COSTS] [OUT_DIR]
#   (defaults: build, the workstation and batch-normalization sets made here, 1000, 300 s,
#   none, rule-heatmap)
# Costs are measured on the cpu backend on the spot, or read first from
# COSTS (taso-measure's costs.h5; DEVICE=TEXT picks its device). Models at
# the sizes bench/optimize.sh uses; MODELS="spec ..." replaces the list;
# THREADS (default 1) OpenMP threads per search.
# Writes OUT_DIR/NAME.opt.h5 per model, OUT_DIR/rules.csv and
# OUT_DIR/rules.png (Debian's python3-h5py and python3-matplotlib, under
# /usr/bin/python3), and prints the table and every command it ran.
set -uo pipefail
build=${1:-build}
subst=${2:-}
budget=${3:-1000}
limit=${4:-300}
costs=${5:-}
outdir=${6:-rule-heatmap}
threads=${THREADS:-1}
bin=$build/bin
here=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3 # Debian's, with python3-h5py and python3-matplotlib
mpiexec=${MPIEXEC:-mpirun}

[ -x "$bin/taso-optimize" ] || { echo "rule_heatmap.sh: $bin/taso-optimize not built" >&2; exit 2; }
"$py" -c 'import h5py, matplotlib' 2>/dev/null || {
  echo "rule_heatmap.sh: $py lacks h5py or matplotlib: apt-get install python3-h5py python3-matplotlib" >&2
  exit 2
}
[ -z "$costs" ] || [ -f "$costs" ] || { echo "rule_heatmap.sh: $costs not found" >&2; exit 2; }
mkdir -p "$outdir" || exit 2
: >"$outdir/commands"
run() { # run LOG CMD...: echoes the command to the list, output to LOG
  local log=$1
  shift
  echo "+ $*" >>"$outdir/commands"
  "$@" >"$log" 2>&1
}

if [ -z "$subst" ]; then # the main job's two sets: the workstation's and batch normalization's
  subst=$outdir/substitutions.h5,$outdir/batchnorm.h5
  for job in workstation batchnorm; do
    out=$outdir/$job.h5
    [ "$job" = workstation ] && out=$outdir/substitutions.h5
    (cd "$here" && run "$outdir/generate.$job.log" "$mpiexec" -n 2 "$bin/taso-generate" \
      --job "jobs/$job.ini" --out "$outdir/candidates.$job.h5" --fresh &&
      run "$outdir/verify.$job.log" "$mpiexec" -n 2 "$bin/taso-verify" --job "jobs/$job.ini" \
        --in "$outdir/candidates.$job.h5" --out "$out" --fresh) ||
      { echo "FAIL generating the $job set (see $outdir/*.$job.log)"; exit 1; }
  done
fi
extra=()
[ -z "$costs" ] || extra+=(--costs "$costs")
[ -z "${DEVICE:-}" ] || extra+=(--device "$DEVICE")

specs=${MODELS:-"nasrnn squeezenet:size=64 resnet50:size=28 resnet50:bn=1 resnext50:size=64
  bert:layers=2 inception_v3:size=75 mobilenet_v2:size=64 nasnet_a:size=64"}

echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# substitutions $subst, budget $budget, time limit $limit s, costs ${costs:-measured on cpu}, $threads threads"
printf '%-22s %6s %8s %8s %7s %8s %-8s %s\n' model rules rewrites explored "x cost" "search s" agrees "ended by"
models=()
fail=0
declare -A used=()
for spec in $specs; do
  base=${spec%%:*}
  name=$base # a column and file per spec: resnet50:size=28 and resnet50:bn=1 are two
  [ -z "${used[$name]:-}" ] || name="$base-$(sed 's/^[^:]*://; s/[=,]//g' <<<"$spec")"
  used[$name]=1
  out=$outdir/$name.opt.h5
  run "$outdir/$name.log" "$bin/taso-optimize" --model "$spec" --substitutions "$subst" --out "$out" --fresh \
    --budget "$budget" --time-limit "$limit" --threads "$threads" --confirm-runs 0 "${extra[@]}"
  rc=$?
  # Exit 3: written, but differs from the original; the rules it used are
  # still counted, and the table says so.
  case $rc in
  0) agrees=yes ;;
  3) agrees=DIFFERS fail=1 ;;
  *)
    echo "FAIL $spec (exit status $rc):"
    tail -3 "$outdir/$name.log" | sed 's/^/  /'
    fail=1
    continue
    ;;
  esac
  models+=("$name=$out")
  summary=$(grep "^taso-optimize: $base: cost" "$outdir/$name.log")
  printf '%-22s %6s %8s %8s %7s %8s %-8s %s\n' "$spec" \
    "$(sed -n 's/.* rewrites by \([0-9]*\) rules* .*/\1/p' <<<"$summary")" \
    "$(sed -n 's/.* \([0-9]*\) rewrites by .*/\1/p' <<<"$summary")" \
    "$(sed -n 's/.* \([0-9]*\) graphs explored.*/\1/p' <<<"$summary")" \
    "$(sed -n 's/.*(x\([0-9.]*\)).*/\1/p' <<<"$summary")" \
    "$(sed -n 's/.*, \([0-9.]*\) s search.*/\1/p' <<<"$summary")" "$agrees" \
    "$(sed -n 's/.*search ended by \(.*\)$/\1/p' "$outdir/$name.log")"
done
[ ${#models[@]} -gt 0 ] || { echo "no model was optimized"; exit 1; }
echo
echo "+ $py $here/bench/rule_heatmap.py $outdir/rules ${models[*]}" >>"$outdir/commands"
"$py" "$here/bench/rule_heatmap.py" "$outdir/rules" "${models[@]}" || fail=1
echo "# commands:"
sed 's/^/#   /' "$outdir/commands"
exit $fail
