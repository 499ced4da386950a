#!/usr/bin/env bash
# taso-generate end to end: the same substitution set from 1, 2, 4 and 16
# (oversubscribed) ranks on jobs/smoke.ini; known substitutions found (or
# implied by the ones found) and wrong ones absent on a 3-operator space;
# the counts in the file; bad max_ops refused with a message naming the job.
set -u

src=${TASO_SOURCE_DIR:?set TASO_SOURCE_DIR to the source tree}
# 16 oversubscribed ranks: 8 to a core here, a rank's share of smoke.ini
# a few graphs (64 took 16 s and 31 CPU-seconds for a 0.6 s job)
many=16
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR to the bin folder of a build}
tests="$bin/../tests"
mpiexec=${MPIEXEC:-mpiexec}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

check() { # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@" >"$tmp/out" 2>"$tmp/err"; then
    passed=$((passed + 1))
    echo "ok: $what"
  else
    failed=$((failed + 1))
    echo "FAIL: $what"
    sed 's/^/    /' "$tmp/out" "$tmp/err" | tail -30
  fi
}

generate() { # generate RANKS JOB OUT
  "$mpiexec" -n "$1" "$bin/taso-generate" --job "$2" --out "$3"
}

substitutions() { # the substitution lines of a file, as taso-show sorts them
  "$bin/taso-show" "$1" | sed -n '/^substitutions/,$p'
}

# 1. determinism across rank counts, for both methods (exhaustive, every
# graph, is the default; representatives builds level by level)
sed 's/^max_ops = \(.*\)/max_ops = \1\nmethod = representatives/' "$src/jobs/smoke.ini" >"$tmp/smoke_representatives.ini"
for method in representatives exhaustive; do
  job=$src/jobs/smoke.ini
  [ "$method" = representatives ] && job=$tmp/smoke_representatives.ini
  for n in 1 2 4 $many; do
    check "smoke.ini ($method) on $n ranks" generate "$n" "$job" "$tmp/$method$n.h5"
    substitutions "$tmp/$method$n.h5" >"$tmp/$method$n.txt"
  done
  check "smoke.ini ($method) finds substitutions" test "$(grep -c '=>' "$tmp/${method}1.txt")" -gt 5
  for n in 2 4 $many; do
    check "$method: $n ranks give the substitutions of 1 rank" cmp "$tmp/${method}1.txt" "$tmp/$method$n.txt"
  done
  counts() { "$bin/taso-show" "$1" | grep '^  counts'; }
  check "$method: counts equal on 1 and $many ranks" test "$(counts "$tmp/${method}1.h5")" = "$(counts "$tmp/$method$many.h5")"
done
# the progress of the level-by-level method: a line per level
check "representatives: a level line per level" \
  sh -c "'$mpiexec' -n 2 '$bin/taso-generate' --job '$tmp/smoke_representatives.ini' --out '$tmp/lv.h5' | grep -c '^level [12]: [0-9]* graphs' | grep -qx 2"

# four levels: the last one's tape, values held only while a state is
# walked, and units (graphs of 2 operators) dealt otherwise than level 3's;
# a rank once met tensors after the exchange that marked them and cut
# other states than 1 rank did (1,413 substitutions on 3 ranks, 1,412 on 1)
sed 's/^max_ops = 2/max_ops = 4\nmethod = representatives/; s/^operators = .*/operators = matmul ewadd relu concat(axis=1)/; /^i1 = /d; /^w4 = /d' \
  "$src/jobs/smoke.ini" >"$tmp/four.ini"
for n in 1 3; do
  check "four levels on $n ranks" "$mpiexec" -n "$n" "$bin/taso-generate" --job "$tmp/four.ini" --out "$tmp/four$n.h5"
  substitutions "$tmp/four$n.h5" >"$tmp/four$n.txt"
done
check "four levels: 3 ranks give the substitutions of 1" cmp "$tmp/four1.txt" "$tmp/four3.txt"
check "four levels: counts equal on 1 and 3 ranks" \
  test "$("$bin/taso-show" "$tmp/four1.h5" | grep '^  counts')" = "$("$bin/taso-show" "$tmp/four3.h5" | grep '^  counts')"
check "four levels find substitutions" test "$(grep -c '=>' "$tmp/four1.txt")" -gt 100

# 2. known substitutions on a 3-operator space
check "generate_known.ini on 2 ranks" generate 2 "$src/tests/data/generate_known.ini" "$tmp/known.h5"
check "known substitutions found or implied, wrong ones absent" \
  "$tests/check_candidates" "$tmp/known.h5" \
  "+ewadd(matmul(x1, w1), matmul(x1, w2)) => matmul(x1, ewadd(w1, w2))" \
  "+concat(1, conv2d(i1, w4), conv2d(i1, w5)) => conv2d(i1, concat(0, w4, w5))" \
  "+conv2d(i1, const_pool(k=3x3, shape=2x1x3x3)) => pool_avg(k=3x3, i1)" \
  "+ewadd(w1, w2) => ewadd(w2, w1)" \
  "+ewadd(matmul(w1, w1), matmul(w1, w2)) => matmul(w1, ewadd(w1, w2))" \
  "-relu(w1) => w1" \
  "-relu(relu(w1)) => relu(w1)" \
  "-concat(1, concat(1, w1, w2), w1) => concat(1, w1, concat(1, w2, w1))"
# three levels: units are the states of one operator, dealt over ranks
check "generate_known.ini on 5 ranks" generate 5 "$src/tests/data/generate_known.ini" "$tmp/known5.h5"
check "generate_known.ini: 5 ranks give the substitutions of 2" \
  cmp <(substitutions "$tmp/known.h5") <(substitutions "$tmp/known5.h5")
check "the file records graphs_enumerated and substitutions" \
  sh -c "h5dump -A '$tmp/known.h5' | grep -q graphs_enumerated && h5dump -A '$tmp/known.h5' | grep -q pruned_implied"
# operators the optimizer folds are never formed (src/enum/enumerate.c):
# none over constants alone, no conv2d over weights and constants alone;
# the summary counts the operators refused
check "no operator over constants alone, no conv2d over weights alone" \
  sh -c "'$bin/taso-show' '$tmp/known.h5' | python3 '$src/tests/check_folded.py'"
check "operators_on_constants counted" \
  sh -c "h5dump -A '$tmp/known.h5' | grep -A4 operators_on_constants | grep -q '(0): [1-9]'"

# 3. bad input
sed "s/^max_ops = .*/max_ops = 7/" "$src/jobs/smoke.ini" >"$tmp/bad.ini"
if "$mpiexec" -n 2 "$bin/taso-generate" --job "$tmp/bad.ini" --out "$tmp/bad.h5" >"$tmp/bad.out" 2>"$tmp/bad.err"; then
  failed=$((failed + 1))
  echo "FAIL: max_ops 7 accepted"
else
  check "max_ops 7 refused with a clear message" grep -q "bad.ini: max_ops 7 out of range" "$tmp/bad.err"
fi

# 4. the [generate] keys method and weights: bad values refused, named
refused() { # refused JOB MESSAGE: generate fails and says MESSAGE
  ! "$mpiexec" -n 1 "$bin/taso-generate" --job "$1" --out "$tmp/refused.h5" >"$tmp/refused.out" 2>&1 &&
    grep -qF "$2" "$tmp/refused.out"
}
sed 's/^max_ops = \(.*\)/max_ops = \1\nmethod = fastest/' "$src/jobs/smoke.ini" >"$tmp/badm.ini"
check "an unknown method refused with a clear message" refused "$tmp/badm.ini" "unknown method 'fastest'"
sed 's/^max_ops = \(.*\)/max_ops = \1\nweights = w1 w9/' "$src/jobs/smoke.ini" >"$tmp/badw.ini"
check "a weight that is no input refused, naming the file" refused "$tmp/badw.ini" \
  "badw.ini: [generate] weights: no input 'w9'"

# 5. level checkpoints (OUT.levels): a run stopped after a level resumes
# there, on the same rank count, and ends in the uninterrupted run's file
lv=$tmp/staged.h5
check "--until-level 2 stops after level 2, no output yet" \
  sh -c "'$mpiexec' -n 3 '$bin/taso-generate' --job '$tmp/four.ini' --out '$lv' --until-level 2 | grep -q 'levels 1 to 2 checkpointed' && test -f '$lv.levels/level-2.done' && test ! -e '$lv'"
check "--until-level 3 resumes level 2's checkpoint and keeps only level 3's" \
  sh -c "'$mpiexec' -n 3 '$bin/taso-generate' --job '$tmp/four.ini' --out '$lv' --until-level 3 | grep -q '^levels 1 to 2: resumed' && test -f '$lv.levels/level-3.done' && test ! -e '$lv.levels/level-2.rank-0'"
check "--until-level 2 after level 3 stops at once, keeping level 3" \
  sh -c "'$mpiexec' -n 3 '$bin/taso-generate' --job '$tmp/four.ini' --out '$lv' --until-level 2 | grep -q 'levels 1 to 3 checkpointed' && test -f '$lv.levels/level-3.done'"
check "another rank count refused, naming the checkpoint and the ranks" \
  sh -c "! '$mpiexec' -n 2 '$bin/taso-generate' --job '$tmp/four.ini' --out '$lv' >'$tmp/rk.out' 2>&1 && grep -q 'level-3.done: levels 1 to 3 were generated on 3 ranks, this run has 2' '$tmp/rk.out'"
sed 's/^seed = 1/seed = 2/' "$tmp/four.ini" >"$tmp/four_seed.ini"
check "another job's levels refused" \
  sh -c "! '$mpiexec' -n 3 '$bin/taso-generate' --job '$tmp/four_seed.ini' --out '$lv' >'$tmp/jb.out' 2>&1 && grep -q 'the levels of another job' '$tmp/jb.out'"
cp "$lv.levels/level-3.rank-1" "$tmp/rank1.keep"
head -c 1000 "$tmp/rank1.keep" >"$lv.levels/level-3.rank-1"
check "a checkpoint cut short refused, naming the file" \
  sh -c "! '$mpiexec' -n 3 '$bin/taso-generate' --job '$tmp/four.ini' --out '$lv' >'$tmp/cut.out' 2>&1 && grep -q 'level-3.rank-1' '$tmp/cut.out'"
cp "$tmp/rank1.keep" "$lv.levels/level-3.rank-1"
check "the resumed run completes" \
  sh -c "'$mpiexec' -n 3 '$bin/taso-generate' --job '$tmp/four.ini' --out '$lv' | grep -q '^levels 1 to 3: resumed'"
substitutions "$lv" >"$tmp/staged.txt"
check "staged: the substitutions of the uninterrupted run" cmp "$tmp/four3.txt" "$tmp/staged.txt"
check "staged: the counts of the uninterrupted run" \
  test "$("$bin/taso-show" "$tmp/four3.h5" | grep '^  counts')" = "$("$bin/taso-show" "$lv" | grep '^  counts')"
check "the checkpoints are gone once the output is written" test ! -e "$lv.levels"
"$mpiexec" -n 3 "$bin/taso-generate" --job "$tmp/four.ini" --out "$tmp/fr.h5" --until-level 2 >/dev/null 2>&1
check "--fresh starts over instead of resuming" \
  sh -c "'$mpiexec' -n 2 '$bin/taso-generate' --job '$tmp/four.ini' --out '$tmp/fr.h5' --fresh | grep -q '^level 1:' && test ! -e '$tmp/fr.h5.levels'"
check "--until-level at the last level refused" \
  sh -c "! '$mpiexec' -n 1 '$bin/taso-generate' --job '$tmp/four.ini' --out '$tmp/ul.h5' --until-level 4 >'$tmp/ul.out' 2>&1 && grep -q 'until-level 4: only levels below the last' '$tmp/ul.out'"
check "--until-level of the exhaustive method refused" \
  sh -c "! '$mpiexec' -n 1 '$bin/taso-generate' --job '$src/jobs/smoke.ini' --out '$tmp/ex.h5' --until-level 1 >'$tmp/ex.out' 2>&1 && grep -q 'only levels below the last' '$tmp/ex.out'"
check "--until-level without a number is a usage error" \
  sh -c "'$mpiexec' -n 1 '$bin/taso-generate' --job '$tmp/four.ini' --out '$tmp/ul.h5' --until-level two >/dev/null 2>&1; test \$? = 2"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
