#!/usr/bin/env bash
# Library-call selection on every built-in model (issue 16): each model,
# small, gets a call plan from the oneDNN description on estimated costs
# (the same plan on every machine); the plan must agree with the
# reference backend (taso-select's check), be stored in the model file
# (taso-show lists it) and be followed by taso-run, agreeing with the
# runtime's own plan of the original model. The models whose convolutions
# or matmuls have an epilogue must get fused calls and a lower cost. One
# model's candidate calls are measured (taso-measure --library) and it is
# selected from that database alone, and timed (no assertion on time); the
# joint search (taso-optimize --select) rewrites a model and its result is
# selected again, and runs in parallel (the same result on 1 and 2 ranks;
# measuring, each miss deferred to rank 0). The models with concats on
# channels must place them. A bad library description is refused naming the
# file, and a file that is no model is not replaced without --fresh.
#
# ctest provides TASO_SOURCE_DIR, TASO_BIN_DIR and MPIEXEC.
set -u
source "$(dirname "$0")/script_helpers.sh"

# SPEC FUSES: 1 where the model has convolutions or matmuls with a bias,
# residual or ReLU after them (ResNet-50 with bn=1 and Inception-v3 have
# batch normalization there, which is no epilogue; BERT, as the original
# built it, has neither bias nor ReLU after its matmuls)
cases=("resnet50:size=14,bn=1,stages=2 0" "resnet50:size=14,stages=2 1" "resnext50:size=32,groups=8 1"
  "nasnet_a:size=32 1" "nasrnn:hidden=64 1" "bert:seq=16,hidden=64,heads=4,layers=2 0"
  "inception_v3:size=75 0" "squeezenet:size=48 1" "mobilenet_v2:size=32 1")
# the sanitizer build: three models that cover fusion, a residual meeting
# and in-place writes (the release build runs all nine)
[ "$sanitized" = 1 ] && cases=("resnet50:size=14,stages=2 1" "nasrnn:hidden=64 1" "squeezenet:size=48 1")
for case in "${cases[@]}"; do
  read -r spec fuses <<<"$case"
  out=$tmp/${spec//[:=,]/_}.sel.h5
  run "$bin/taso-select" --model "$spec" --estimate-costs --runs 0 --threads 1 --out "$out"
  expect "select $spec" 0
  has "$spec: the plan agrees with the reference backend" "the selected plan agrees with" "$tmp/out"
  line=$(grep "calls selected from onednn" "$tmp/out")
  fused=$(sed -n 's/.*selected, [a-z -]*: *cost .* calls (\([0-9]*\) fused.*/\1/p' "$tmp/out" | head -1)
  if [ "$fuses" = 1 ] && [ "${fused:-0}" -eq 0 ]; then
    echo "FAIL: $spec: no fused call selected: $line"; show; fail=1
  fi
  # batch 1 concats on channels: their operands are placed in them
  placed=$(sed -n 's/.*selected, row-major: *cost .* \([0-9]*\) concats placed.*/\1/p' "$tmp/out")
  case $spec in squeezenet* | inception* | nasnet*)
    [ "${placed:-0}" -gt 0 ] && echo "ok: $spec: $placed concats placed" ||
      { echo "FAIL: $spec: no concat placed"; show; fail=1; } ;;
  esac
  run "$bin/taso-show" "$out"
  has "$spec: taso-show lists the plan" "steps selected from onednn" "$tmp/out"
  run "$bin/taso-run" --model "$out" --compare "$spec" --runs 0 --threads 1
  expect "$spec: taso-run follows the plan and agrees with the runtime's plan" 0
done

# the measure stage measures what selection weighs: after taso-measure
# --library, taso-select finds every cost it asks for in the database
# (--no-measure makes a missing one an error); both plans timed (no
# assertion on time)
printf '[job]\nname = select-test\n[measure]\nmin_runs = 3\nmax_runs = 5\nlock_dir = %s/locks\n' \
  "$tmp" >"$tmp/measure.ini"
run "$bin/taso-measure" --job "$tmp/measure.ini" --model squeezenet:size=48 \
  --library data/library/onednn.smt2 --db "$tmp/costs.h5"
expect "measure squeezenet's candidate calls" 0
run "$bin/taso-select" --model squeezenet:size=48 --costs "$tmp/costs.h5" --no-measure --runs 2 \
  --threads 1 --out "$tmp/measured.h5"
expect "select squeezenet on measured costs from the database alone, timed" 0
has "both plans timed" "measured end to end: plain" "$tmp/out"

# the joint search: graphs costed by their selected call plans; the result
# rewritten (batch normalization folded), selected again and checked
job=tests/data/optimize_test.ini
optimizer_rules
run "$bin/taso-optimize" --job "$job" --model resnet50:size=14,bn=1,stages=2 --substitutions \
  "$tmp/substitutions.h5,$tmp/bn.h5" --select data/library/onednn.smt2 --out "$tmp/joint.h5" \
  --budget 8 --chain --estimate-costs --confirm-runs 0 --threads 1
expect "joint search on resnet50 with batch normalization" 0
has "joint search announced" "joint search: graphs cost their call plans" "$tmp/out"
has "the joint result agrees" "the result agrees with the original" "$tmp/out"
steps=$(sed -n 's/.* \([0-9]*\) rewrites by [0-9]* rules -> .*/\1/p' "$tmp/out")
[ "${steps:-0}" -gt 0 ] && echo "ok: rewritten ($steps)" || { echo "FAIL: nothing rewritten"; show; fail=1; }
run "$bin/taso-select" --model "$tmp/joint.h5" --estimate-costs --runs 0 --threads 1 --out "$tmp/joint.sel.h5"
expect "select the joint result" 0
fused=$(sed -n 's/.*selected, row-major: *cost .* calls (\([0-9]*\) fused.*/\1/p' "$tmp/out")
[ "${fused:-0}" -gt 0 ] && echo "ok: folded normalizations leave fused calls ($fused)" \
  || { echo "FAIL: no fused call after folding"; show; fail=1; }

# the joint search in parallel (tests/data/branches.model, whose merges pay):
# on 1 and 2 ranks on estimated costs the same result; on 2 ranks measuring,
# where each call plan's misses are deferred and measured once on rank 0
joint=(--job "$job" --model tests/data/branches.model --substitutions "$tmp/substitutions.h5"
  --select data/library/onednn.smt2 --search parallel --budget 24 --confirm-runs 0 --threads 1)
for n in 1 2; do
  run "$mpiexec" --oversubscribe -n $n "$bin/taso-optimize" "${joint[@]}" --estimate-costs \
    --out "$tmp/pj$n.h5"
  expect "parallel joint search on $n ranks" 0
done
for a in cost_after_ms graphs_explored rewrites_applied; do
  [ -n "$(attr "$tmp/pj1.h5" $a)" ] && [ "$(attr "$tmp/pj2.h5" $a)" = "$(attr "$tmp/pj1.h5" $a)" ] &&
    echo "ok: parallel joint search, $a the same on 1 and 2 ranks ($(attr "$tmp/pj1.h5" $a))" ||
    { echo "FAIL: parallel joint search: $a differs between 1 and 2 ranks"; fail=1; }
done
run "$mpiexec" --oversubscribe -n 2 "$bin/taso-optimize" "${joint[@]}" --out "$tmp/pjm.h5"
expect "parallel joint search on 2 ranks, measuring" 0
measured=$(attr "$tmp/pjm.h5" configs_measured)
[ "${measured:-0}" -gt 0 ] && echo "ok: the call plans' configurations measured ($measured)" ||
  { echo "FAIL: the measuring joint search measured nothing"; show; fail=1; }
has "the measured joint result agrees" "the result agrees with the original" "$tmp/out"
[ "$(attr "$tmp/pjm.h5" rewrites_applied)" -gt 0 ] 2>/dev/null && echo "ok: rewritten on measured costs" ||
  { echo "FAIL: the measuring joint search rewrote nothing"; show; fail=1; }

# bad input: a library description refused with its file named; no overwrite
run "$bin/taso-select" --model squeezenet:size=48 --estimate-costs --runs 0 \
  --library data/library/bad/unsafe_in_place.smt2 --out "$tmp/bad.h5"
expect "an unsafe in-place call is refused" 1
has "the message names the file" "unsafe_in_place.smt2" "$tmp/err"
[ ! -e "$tmp/bad.h5" ] && echo "ok: nothing written" || { echo "FAIL: output written"; fail=1; }
echo "not a model" >"$tmp/notes.txt"
run "$bin/taso-select" --model squeezenet:size=48 --estimate-costs --runs 0 --out "$tmp/notes.txt"
expect "a file that is no model is not replaced without --fresh" 1
[ "$(cat "$tmp/notes.txt")" = "not a model" ] && echo "ok: file untouched" || { echo "FAIL: file changed"; fail=1; }
exit $fail
