#!/usr/bin/env bash
# Every built-in model optimized and checked equal (issue 15's correctness
# clause): each model, at the small size of the model_agreement test, is
# searched with the small test set (tests/data/optimize_test.ini) and the
# batch-normalization rules, on estimated costs (no timing: the rewrites
# are the point, and a model timed on this shared machine may keep its
# input), with rule chains; then the optimized model must compute what the
# original computes on seeded random inputs, float32 tolerance, on the cpu
# backend (taso-optimize's own check, which names the first rewrite that
# made a difference) and on the reference backend (taso-run --compare). A model whose search
# rewrote nothing proves nothing: the five models the rules make cheaper
# must each be rewritten. No assertion on time.
#
# ctest provides TASO_SOURCE_DIR, TASO_BIN_DIR and MPIEXEC.
set -u
source "$(dirname "$0")/script_helpers.sh"

job=tests/data/optimize_test.ini
optimizer_rules

# SPEC MUST: 1 where the rules must make the model cheaper on estimated
# costs (normalizations to fold, convolutions or matmuls to merge), 0
# where none of their rewrites is cheaper so estimated (SqueezeNet,
# ResNeXt and MobileNet, also with the whole workstation set: their
# rewrites pay, if at all, only on measured costs, as in
# bench/optimize.sh); those still go through the search and the checks
for case in "resnet50:size=14,bn=1 1" "resnext50:size=32,groups=8 0" "nasnet_a:size=32 1" \
    "nasrnn:hidden=64 1" "bert:seq=16,hidden=64,heads=4,layers=2 1" "inception_v3:size=75 1" \
    "squeezenet:size=48 0" "mobilenet_v2:size=32 0"; do
  read -r spec must <<<"$case"
  name=${spec//[:=,]/_}
  out=$tmp/$name.opt.h5
  run "$bin/taso-optimize" --job "$job" --model "$spec" --substitutions "$tmp/substitutions.h5,$tmp/bn.h5" \
    --out "$out" --budget 8 --chain --estimate-costs --confirm-runs 0 --threads 1
  expect "optimize $spec" 0
  has "$spec: the result agrees (cpu)" "the result agrees with the original" "$tmp/out"
  steps=$(sed -n 's/.* \([0-9]*\) rewrites by [0-9]* rules -> .*/\1/p' "$tmp/out")
  if [ "$must" = 1 ] && [ "${steps:-0}" -eq 0 ]; then
    echo "FAIL: $spec: nothing rewritten, so its checks prove nothing"; show; fail=1
  fi
  run "$bin/taso-run" --model "$out" --compare "$spec" --runs 0 --backend reference --threads 1
  expect "$spec, ${steps:-0} rewrites, agrees with the original (reference)" 0
done
exit $fail
