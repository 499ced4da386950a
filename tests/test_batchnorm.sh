#!/usr/bin/env bash
# Batch normalization folded by proved rules (issue 15, no hand-written
# rules): jobs/batchnorm.ini is generated and verified, and the rule that
# moves a channel scale into a convolution's weight must be among its
# proved substitutions; its axiom C1 must pass the small-tensor check and
# the wrong-axis fixture (bad/chmul_axis.smt2) must be caught there. A
# conv-BN-relu ONNX model (tests/conv_bn_model.py, python3-onnx) is then
# optimized with that file and the smoke job's together: the rules table
# must name the folding rule, each fold must have removed its chmul and
# made its conv2d one fused step with its bias (and sum) and relu, and the
# result (and its ONNX export) must agree with the original on the cpu and
# reference backends.
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
run "$mpiexec" -n 2 "$bin/taso-validate" --sizes 1,2 --add data/axioms/bad/chmul_axis.smt2 \
  --only BAD4 --no-redundancy --out "$tmp/b.h5"
expect "the wrong-axis fixture is refuted" 3
has "BAD4 has a counterexample" "BAD4 counterexample" "$tmp/out"

run "$py" tests/conv_bn_model.py "$tmp/m.onnx"
expect "write the conv-BN-relu model" 0
run "$bin/taso-show" "$tmp/m.onnx"
has "BatchNormalization imports as chmul and chadd" "chmul 3 chadd 3" "$tmp/out"

subs="$tmp/smoke.h5,$tmp/batchnorm.h5"
run "$bin/taso-optimize" --job jobs/batchnorm.ini --model "$tmp/m.onnx" --substitutions "$subs" \
  --out "$tmp/m.opt.h5" --onnx "$tmp/m.opt.onnx" --threads 1 --keep-slower --confirm-runs 1
expect "optimize with two substitution files" 0
run "$bin/taso-show" "$tmp/m.opt.h5" --graph
expect "show the optimized model" 0
has "the rules came from both files" "rules from $subs" "$tmp/out"
# Which folds pay is the measured costs' call (each removes three or four
# steps, but a noisy measurement can hide that), so the test asks for at
# least one, and that each fold removed its chmul and fused its conv2d.
# smoke.ini's i1 and w4 have other shapes: the batchnorm file's are renamed.
rule='chmul(1, conv2d(i1_2, w4_2), v1) => conv2d(i1_2, chmul(0, w4_2, v1))'
folds=$(grep -F -- "$rule" "$tmp/out" | sed -n 's/^ *\([0-9]*\) x .*/\1/p')
echo "folds: ${folds:-0}"
if [ "${folds:-0}" -lt 1 ]; then echo "FAIL: the folding rule never fired"; show; fail=1; fi
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
