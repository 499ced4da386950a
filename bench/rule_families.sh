#!/usr/bin/env bash
# Rule subsets per model family (issue 17), evaluated leave-one-out. For
# every built-in model:
#   all      taso-optimize with every rule of SUBSTITUTIONS;
#   family   --rules auto: the subset of the model's family, learned from
#            the other models' all-rules searches (taso-rules, without any
#            model of the same name: ResNet-50's two variants leave
#            together), borrowed from the nearest model's family when no
#            other model is of its own;
#   random   --rules random:N, N the family subset's size (seeded);
#   zoo      --rules zoo: every rule that fired in some other model, whatever
#            its family (what the families are measured against);
# each with its search seconds and final cost. Costs are estimated
# (--estimate-costs: the same search on every machine, no measuring inside
# the search time) unless COSTS=costs.h5 names a database (then misses are
# measured and recorded into it, and the first search of a model pays for
# them). Targets: the family subset searches at least 3 times faster and
# ends within 1% of the all-rules cost.
# Also writes OUT/usage.h5 (every model's usage: what data/rule_usage.h5
# is), OUT/rules.png (the heat map, models grouped by family) and
# OUT/families.png (search seconds against final cost, per choice), and,
# with FAMILY_JOBS=1, generates and verifies jobs/families/*.ini (each
# family's operators only) and prints their rule counts and times, the
# workstation job (every operator) first for reference.
# No assertion: it prints figures.
# ZOO=1 takes the model zoo instead of the built-in models (issue 33:
# every data/zoo network, or ZOO=a,b,... some): each network is left out
# alone, and the table adds the family its source gives it (torchvision's
# module) beside the family the graph gives it, and a count of the
# networks that meet the targets; ZOO_SIZE=N keeps only networks of at
# most N nodes in the manifest. RESUME=1 keeps the all-rules searches
# already in OUT/all (a run cut short goes on from them).
# Usage: bench/rule_families.sh [BUILD_DIR] SUBSTITUTIONS[,FILE...] [BUDGET] [THREADS]
#   OUT=dir (default rule-families), MODELS="spec ...", ZOO=1, COSTS=costs.h5, FAMILY_JOBS=1 (or
#   only: the family jobs alone),
#   TIME_LIMIT=seconds per search (default 3600; with COSTS, misses measured cold take time)
set -u
build=${1:-build}
subst=${2:?usage: bench/rule_families.sh BUILD_DIR SUBSTITUTIONS [BUDGET] [THREADS]}
budget=${3:-100}
threads=${4:-1}
out=${OUT:-rule-families}
py=/usr/bin/python3
mpiexec=${MPIEXEC:-mpirun}
here=$(cd "$(dirname "$0")/.." && pwd)
models=${MODELS:-"resnet50:size=56 resnet50:bn=1,size=56 resnext50:size=64 nasnet_a:size=64
  nasrnn bert:layers=2 inception_v3:size=75 squeezenet:size=64 mobilenet_v2:size=64"}
costs=(--estimate-costs)
[ -n "${COSTS:-}" ] && costs=(--costs "$COSTS" --record-costs)
mkdir -p "$out"/all "$out"/family "$out"/random "$out"/zoo "$out"/loo || exit 2
"$py" -c 'import h5py, matplotlib' 2>/dev/null ||
  { echo "rule_families.sh: $py lacks h5py or matplotlib" >&2; exit 2; }

attrs() { # attrs FILE NAME...: the root attributes, space-separated
  "$py" - "$@" <<'EOF'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(str(f.attrs[a].decode() if isinstance(f.attrs[a], bytes) else f.attrs[a])
                   for a in sys.argv[2:]))
EOF
}
optimize() { # optimize SPEC OUT EXTRA...
  local spec=$1 o=$2
  shift 2
  "$build/bin/taso-optimize" --job "$here/jobs/workstation.ini" --model "$spec" \
    --substitutions "$subst" --out "$o" --fresh --budget "$budget" --time-limit "${TIME_LIMIT:-3600}" --chain \
    --confirm-runs 0 --no-check --threads "$threads" "${costs[@]}" "$@" >"$o.log" 2>&1 ||
    { echo "FAIL: taso-optimize $spec $*: $(grep -m1 error "$o.log")" >&2; return 1; }
}

declare -A name family file specof source
keys=()
zoo=$here/data/zoo
if [ "${ZOO:-0}" != 0 ]; then # the zoo's networks, by name, in the manifest's order
  models=$(tail -n +2 "$zoo/manifest.csv" | awk -F, -v n="${ZOO_SIZE:-0}" 'n == 0 || $6 <= n { print $1 }')
  [ "$ZOO" = 1 ] || models=$(tr ',' ' ' <<<"$ZOO")
  models=$(for m in $models; do echo "$zoo/$m.onnx"; done)
fi
[ "${FAMILY_JOBS:-0}" = only ] && models= # the family jobs alone
for spec in $models; do
  key=${spec//[:=,]/_}
  case $spec in *.onnx) key=$(basename "$spec" .onnx) ;; esac
  keys+=("$key")
  read -r _ n _ f <<<"$("$build/bin/taso-rules" --model "$spec" | head -1 | tr -d ':')"
  name[$key]=$n family[$key]=$f file[$key]=$out/all/$key.opt.h5 specof[$key]=$spec
  source[$key]=$(awk -F, -v k="$key" '$1 == k { print $3 }' "$zoo/manifest.csv")
  if [ -f "${file[$key]}" ] && [ "${RESUME:-0}" = 1 ]; then continue; fi
  optimize "$spec" "${file[$key]}" || exit 1
done
if [ -n "$models" ]; then
all=$(for k in "${keys[@]}"; do printf '%s,' "${file[$k]}"; done)
"$build/bin/taso-rules" --in "${all%,}" --out "$out/usage.h5" --fresh >"$out/usage.log" 2>&1 ||
  { echo "FAIL: taso-rules: $(cat "$out/usage.log")"; exit 1; }

echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $threads threads, $(date -u +%F); budget $budget, time limit ${TIME_LIMIT:-3600} s, ${costs[*]}"
echo "| model | family | rules all / family / zoo | search s all | family | random | zoo | x faster (family) | cost ms input | all | family | random | zoo | within 1%: family, random, zoo |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
rows=$out/rows.csv
echo "model,family,choice,seconds,cost,source_family" >"$rows"
for k in $(for k in "${keys[@]}"; do echo "${family[$k]} $k"; done | sort | cut -d' ' -f2); do
  spec=${specof[$k]}
  label=$spec # a zoo network by its name
  case $spec in *.onnx) label=$k ;; esac
  # leave-one-out: the usage of every model of another name
  loo=$(for j in "${keys[@]}"; do [ "${name[$j]}" != "${name[$k]}" ] && printf '%s,' "${file[$j]}"; done)
  "$build/bin/taso-rules" --in "${loo%,}" --out "$out/loo/$k.usage.h5" --fresh >/dev/null 2>&1 ||
    { echo "FAIL: taso-rules for $k"; continue; }
  optimize "$spec" "$out/family/$k.opt.h5" --rules auto --rule-usage "$out/loo/$k.usage.h5" || continue
  read -r n_sub <<<"$(attrs "$out/family/$k.opt.h5" rules_searched)"
  optimize "$spec" "$out/random/$k.opt.h5" --rules "random:$n_sub" || continue
  optimize "$spec" "$out/zoo/$k.opt.h5" --rules zoo --rule-usage "$out/loo/$k.usage.h5" || continue
  read -r n_all s_all c_in c_all <<<"$(attrs "${file[$k]}" rules_searched search_seconds cost_before_ms cost_after_ms)"
  read -r s_fam c_fam <<<"$(attrs "$out/family/$k.opt.h5" search_seconds cost_after_ms)"
  read -r s_rnd c_rnd <<<"$(attrs "$out/random/$k.opt.h5" search_seconds cost_after_ms)"
  read -r n_zoo s_zoo c_zoo <<<"$(attrs "$out/zoo/$k.opt.h5" rules_searched search_seconds cost_after_ms)"
  lent=$(sed -n 's/.*family [a-z]* (none in .*: the nearest model.s, \([a-z]*\), lent).*/ (from \1)/p' \
    "$out/family/$k.opt.h5.log")
  for c in "all $s_all $c_all" "family $s_fam $c_fam" "random $s_rnd $c_rnd" "zoo $s_zoo $c_zoo"; do
    read -r ch sec cost <<<"$c"
    echo "\"$label\",${family[$k]},$ch,$sec,$cost,${source[$k]}" >>"$rows"
  done
  fam=${family[$k]}$lent
  [ -n "${source[$k]}" ] && fam="${source[$k]} / $fam" # the zoo: the source's family, then the graph's
  awk -v m="$label" -v f="$fam" -v na="$n_all" -v nf="$n_sub" -v nz="$n_zoo" -v sa="$s_all" \
    -v sf="$s_fam" -v sr="$s_rnd" -v sz="$s_zoo" -v ci="$c_in" -v ca="$c_all" -v cf="$c_fam" \
    -v cr="$c_rnd" -v cz="$c_zoo" 'function ok(c) { return c <= 1.01 * ca ? "yes" : "no" } BEGIN {
    printf "| %s | %s | %d / %d / %d | %.2f | %.2f | %.2f | %.2f | %s | %.4g | %.4g | %.4g | %.4g | %.4g | %s, %s, %s |\n",
      m, f, na, nf, nz, sa, sf, sr, sz, (sf > 0.01 ? sprintf("%.1f", sa / sf) : sprintf(">%d", sa / 0.01)),
      ci, ca, cf, cr, cz, ok(cf), ok(cr), ok(cz) }'
done
# the targets, counted: the family's subset at least 3 times faster, and
# within 1% of every rule's cost
awk -F, 'NR > 1 { s[$1 "," $3] = $4; c[$1 "," $3] = $5; m[$1] = 1 } END {
  for (k in m) { n++; fast = s[k ",all"] >= 3 * s[k ",family"]; near = c[k ",family"] <= 1.01 * c[k ",all"]
    f += fast; w += near; b += fast && near; z += c[k ",zoo"] <= 1.01 * c[k ",all"] }
  if (n) printf "# %d models: family subset 3x faster on %d (%.0f%%), within 1%% on %d (%.0f%%), both on %d (%.0f%%); the zoo subset within 1%% on %d\n",
    n, f, 100 * f / n, w, 100 * w / n, b, 100 * b / n, z }' "$rows"
if [ "${ZOO:-0}" != 0 ]; then # the graph's families against the source's
  echo "# source family: the families the graph gives its networks"
  for k in "${keys[@]}"; do echo "${source[$k]} ${family[$k]}"; done | sort | uniq -c |
    awk '{ g[$2] = g[$2] (g[$2] ? ", " : "") $3 " " $1 } END { for (s in g) print "#   " s ": " g[s] }' | sort
fi
"$py" "$here/bench/rule_families.py" "$rows" "$out/families.png"
heat=()
for k in "${keys[@]}"; do heat+=("${family[$k]}/${name[$k]}${k#"${name[$k]}"}=${file[$k]}"); done
"$py" "$here/bench/rule_heatmap.py" "$out/rules" $(printf '%s\n' "${heat[@]}" | sort) >"$out/heatmap.txt"
echo "# wrote $out/usage.h5, $out/rules.png (heat map by family), $out/families.png, $rows"
fi

if [ "${FAMILY_JOBS:-0}" != 0 ]; then
  echo
  echo "| family job | candidates | proved | generate s | verify s |"
  echo "|---|---:|---:|---:|---:|"
  for job in "$here"/jobs/workstation.ini "$here"/jobs/families/*.ini; do # all operators, then each family's
    f=$(basename "$job" .ini)
    t0=$(date +%s.%N)
    "$mpiexec" -n 2 "$build/bin/taso-generate" --job "$job" --out "$out/$f.candidates.h5" --fresh \
      >"$out/$f.generate.log" 2>&1 || { echo "| $f | generate failed |"; continue; }
    t1=$(date +%s.%N)
    "$mpiexec" -n 2 "$build/bin/taso-verify" --job "$job" --in "$out/$f.candidates.h5" \
      --out "$out/$f.h5" --fresh >"$out/$f.verify.log" 2>&1 || { echo "| $f | verify failed |"; continue; }
    t2=$(date +%s.%N)
    read -r cand proved <<<"$(attrs "$out/$f.h5" candidates_rows proved)"
    awk -v f="$f" -v c="$cand" -v p="$proved" -v a="$t0" -v b="$t1" -v e="$t2" \
      'BEGIN { printf "| %s | %s | %s | %.1f | %.1f |\n", f, c, p, b - a, e - b }'
  done
fi
