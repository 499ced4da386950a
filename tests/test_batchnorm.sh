#!/usr/bin/env bash
# Batch normalization folded by proved rules (issue 15, no hand-written
# rules): jobs/batchnorm.ini is generated and verified, and the rule that
# moves a channel scale into a convolution's weight must be among its
# proved substitutions; its axiom C1 must pass the small-tensor check and
# the wrong-axis fixture (bad/chmul_axis.smt2) must be caught there. A
# conv-BN-relu ONNX model (tests/conv_bn_model.py, python3-onnx) is then
# optimized with that file and the smoke job's together, on estimated
# costs (the same on every machine): the rules table must name the folding
# rule for all three blocks, each fold must have removed its chmul and
# made its conv2d one fused step with its bias (and sum) and relu, and the
# result (and its ONNX export) must agree with the original on the cpu and
# reference backends.
# Convolutions with a bias of their own (ONNX Conv with B, imported as a
# chadd): the scale must move through the bias (axiom C2) before it folds,
# and the two shifts merge (C3); C2-C13 must pass the small-tensor check,
# and a fold that forgets to scale the bias (bad/chadd_scale.smt2) must be
# caught there.
# Bad input: a missing or unverified second file. No assertion on time.
#
# ctest provides TASO_SOURCE_DIR, TASO_BIN_DIR and MPIEXEC.
set -u
source "$(dirname "$0")/script_helpers.sh"
py=/usr/bin/python3
"$py" -c 'import onnx' 2>/dev/null || { echo "python3-onnx not found: skipping"; exit 77; }

fold='chmul(1, conv2d(i1, w4), v1) => conv2d(i1, chmul(0, w4, v1))'
for job in batchnorm smoke; do
  run "$mpiexec" -n 2 "$bin/taso-generate" --job "jobs/$job.ini" --out "$tmp/$job.c.h5"
  expect "generate $job" 0
  run "$mpiexec" -n 2 "$bin/taso-verify" --in "$tmp/$job.c.h5" --out "$tmp/$job.h5"
  expect "verify $job" 0
done
run "$bin/taso-show" "$tmp/batchnorm.h5"
has "the folding rule is proved" "$fold  [proved]" "$tmp/out"

run "$mpiexec" -n 2 "$bin/taso-validate" --sizes 1,2 --only C1 --no-redundancy --out "$tmp/v.h5"
expect "C1 passes the small-tensor check" 0
has "C1 has no counterexample" " 0 counterexamples" "$tmp/out"
for ax in C2 C3 C4 C5 C6 C7 C8 C9 C10 C11 C12 C13; do
  run "$mpiexec" -n 2 "$bin/taso-validate" --sizes 1,2 --only $ax --no-redundancy --out "$tmp/v$ax.h5"
  expect "$ax passes the small-tensor check" 0
  has "$ax has no counterexample" " 0 counterexamples" "$tmp/out"
  if grep -q "combinations: 0 proved" "$tmp/out"; then echo "FAIL: $ax checked on no case"; fail=1; fi
done
run "$mpiexec" -n 2 "$bin/taso-validate" --sizes 1,2 --add data/axioms/bad/chadd_scale.smt2 \
  --only BAD5 --no-redundancy --out "$tmp/b5.h5"
expect "the unscaled-shift fixture is refuted" 3
has "BAD5 has a counterexample" "BAD5 counterexample" "$tmp/out"
run "$mpiexec" -n 2 "$bin/taso-validate" --sizes 1,2 --add data/axioms/bad/chmul_axis.smt2 \
  --only BAD4 --no-redundancy --out "$tmp/b.h5"
expect "the wrong-axis fixture is refuted" 3
has "BAD4 has a counterexample" "BAD4 counterexample" "$tmp/out"

run "$py" tests/conv_bn_model.py "$tmp/m.onnx"
expect "write the conv-BN-relu model" 0
run "$bin/taso-show" "$tmp/m.onnx"
has "BatchNormalization imports as chmul and chadd" "chmul 3 chadd 3" "$tmp/out"

subs="$tmp/smoke.h5,$tmp/batchnorm.h5"
# Costs are estimated (--estimate-costs: the same on every machine), under
# which each fold pays (it removes a step): all three blocks fold, and each
# fold removed its chmul and fused its conv2d. The end-to-end timing still
# runs (--confirm-runs 1) but decides nothing (--keep-slower).
# smoke.ini's i1 and w4 have other shapes: the batchnorm file's are renamed.
rule='chmul(1, conv2d(i1_2, w4_2), v1) => conv2d(i1_2, chmul(0, w4_2, v1))'
run "$bin/taso-optimize" --job jobs/batchnorm.ini --model "$tmp/m.onnx" --substitutions "$subs" \
  --out "$tmp/m.opt.h5" --onnx "$tmp/m.opt.onnx" --threads 1 --keep-slower --confirm-runs 1 \
  --estimate-costs
expect "optimize with two substitution files" 0
run "$bin/taso-show" "$tmp/m.opt.h5" --graph
expect "show the optimized model" 0
folds=$(grep -F -- "$rule" "$tmp/out" | sed -n 's/^ *\([0-9]*\) x .*/\1/p')
echo "folds: ${folds:-0}"
has "the rules came from both files" "rules from $subs" "$tmp/out"
if [ "${folds:-0}" -ne 3 ]; then echo "FAIL: ${folds:-0} folds of 3"; show; fail=1; fi
left=$(sed -n '/^model /,$p' "$tmp/out" | grep -c ' = chmul(')
[ "$left" -eq $((3 - ${folds:-0})) ] || { echo "FAIL: $left chmul left after ${folds:-0} folds"; show; fail=1; }
# through ONNX too: a chadd of a weight is written as an Add of a [C,1,1]
# initializer, which reads back as the convolution's bias
for spec in cpu:m.opt.h5 reference:m.opt.h5 cpu:m.opt.onnx; do
  backend=${spec%%:*}
  run "$bin/taso-run" --model "$tmp/${spec#*:}" --compare "$tmp/m.onnx" --runs 0 \
    --backend "$backend" --threads 1
  expect "the optimized ${spec#*:} agrees with the original ($backend)" 0
  fused=$(sed -n 's/.* steps (\([0-9]*\) fused).*/\1/p' "$tmp/out")
  [ "${fused:-0}" -ge "${folds:-0}" ] || { echo "FAIL: $fused fused steps after $folds folds"; show; fail=1; }
done

# The export writes each chadd as an Add of a [C,1,1] initializer; it must
# read back as a chadd (not a model-only broadcast add no rule matches).
run "$bin/taso-show" "$tmp/m.opt.onnx"
has "exported per-channel Adds read back as chadd" "chadd 3" "$tmp/out"
if grep -q '^operators:.* add ' "$tmp/out"; then echo "FAIL: a broadcast add read back"; show; fail=1; fi

# The same blocks with a bias on every Conv, at a size where a step's cost
# is above the timing noise: the batchnorm file alone, a longer search
# (the fold goes through a graph with one more step before it pays).
run "$py" tests/conv_bn_model.py --bias "$tmp/mb.onnx" 32 28
expect "write the conv-with-bias-BN-relu model" 0
run "$bin/taso-show" "$tmp/mb.onnx"
has "Conv's bias imports as a chadd" "chmul 3 chadd 6" "$tmp/out"
# The fold goes through a graph with one more step before it pays (the
# scale moved through the bias), within alpha of the best on estimated costs.
through='chmul(1, chadd(1, i1, v2), v1) => chadd(1, chmul(1, i1, v1), ewmul(v1, v2))'
count() { grep -F -- "$1" "$tmp/out" | sed -n 's/^ *\([0-9]*\) x .*/\1/p'; }
run "$bin/taso-optimize" --job jobs/batchnorm.ini --model "$tmp/mb.onnx" \
  --substitutions "$tmp/batchnorm.h5" --budget 200 --out "$tmp/mb.opt.h5" --threads 1 \
  --keep-slower --confirm-runs 1 --estimate-costs
expect "optimize the model with biases" 0
run "$bin/taso-show" "$tmp/mb.opt.h5" --graph
n_through=$(count "$through")
n_fold=$(count "$fold")
echo "scales moved through a bias: ${n_through:-0}, folded: ${n_fold:-0}"
if [ "${n_through:-0}" -ne 3 ] || [ "${n_fold:-0}" -ne 3 ]; then
  echo "FAIL: not every normalization was folded through its convolution's bias"
  show
  fail=1
fi
left=$(sed -n '/^model /,$p' "$tmp/out" | grep -c ' = chmul(')
[ "$left" -eq $((3 - ${n_fold:-0})) ] || { echo "FAIL: $left chmul left after ${n_fold:-0} folds"; show; fail=1; }
for backend in cpu reference; do
  run "$bin/taso-run" --model "$tmp/mb.opt.h5" --compare "$tmp/mb.onnx" --runs 0 \
    --backend "$backend" --threads 1
  expect "the folded model with biases agrees with the original ($backend)" 0
done

run "$bin/taso-optimize" --model "$tmp/m.onnx" --substitutions "$tmp/batchnorm.h5,$tmp/nope.h5" \
  --out "$tmp/x.opt.h5"
expect "a missing second substitutions file" 1
has "the error names it" "nope.h5" "$tmp/err"
run "$bin/taso-optimize" --model "$tmp/m.onnx" --substitutions "$tmp/batchnorm.h5,$tmp/smoke.c.h5" \
  --out "$tmp/x.opt.h5"
expect "candidates refused as a second substitutions file" 1
run "$bin/taso-optimize" --model "$tmp/m.onnx" --substitutions "," --out "$tmp/x.opt.h5"
expect "a list that names no file" 1
exit $fail
