#!/usr/bin/env bash
# taso-measure --expand: the configurations of the graphs that the proved
# rules make from the models (one rewrite deep) are measured too. A small
# substitution set is generated and verified here (tests/data/
# optimize_test.ini, seconds; the smoke job's set rewrites these models
# into nothing new). Checks: expansion adds configurations, exactly those
# beyond the models' own, which stay; the database holds every one; a
# second run measures nothing; two ranks collect the same set; bad input
# gives one error line. ctest provides TASO_SOURCE_DIR, TASO_BIN_DIR, MPIEXEC.
set -u
src=${TASO_SOURCE_DIR:?set TASO_SOURCE_DIR}
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR}
mpiexec=${MPIEXEC:-mpirun}
dir=$(mktemp -d /tmp/taso-measure-expand.XXXXXX)
trap 'rm -rf "$dir"' EXIT
failed=0
ok() { echo "ok: $1"; }
bad() {
  echo "FAIL: $1"
  failed=$((failed + 1))
}
cat >"$dir/job.ini" <<EOF2
[job]
name = measure-expand-test
[measure]
warmup = 1
min_runs = 3
max_runs = 5
lock_dir = $dir/locks
EOF2
models=(--model squeezenet:size=32 --model nasrnn:hidden=64,steps=2)
measure() { "$bin/taso-measure" --job "$dir/job.ini" "${models[@]}" "$@"; }
keys() { "$bin/taso-show" "$1" | sed -n 's/^  .*%  *[0-9]*  *[0-9]*  \(.*\)  unit=.*/\1/p' | sort; }
summary() { grep '^taso-measure: [0-9]* configurations:' "$1"; }

# the job names its axioms relative to the tree
(cd "$src" && "$mpiexec" -n 1 "$bin/taso-generate" --job tests/data/optimize_test.ini \
  --out "$dir/candidates.h5" >"$dir/gen.out" 2>&1 &&
  "$mpiexec" -n 1 "$bin/taso-verify" --job tests/data/optimize_test.ini --in "$dir/candidates.h5" \
    --out "$dir/subst.h5" >"$dir/verify.out" 2>&1) && ok "generated and verified the test set" ||
  { bad "generate/verify"; cat "$dir/gen.out" "$dir/verify.out"; exit 1; }

measure --db "$dir/plain.h5" >"$dir/plain.out" 2>&1 || { bad "plain run"; cat "$dir/plain.out"; }
measure --db "$dir/expanded.h5" --expand --substitutions "$dir/subst.h5" >"$dir/e.out" 2>&1 ||
  { bad "--expand run"; cat "$dir/e.out"; }
summary "$dir/e.out"
plain=$(sed -n 's/^taso-measure: \([0-9]*\) configurations: .*/\1/p' "$dir/plain.out")
all=$(sed -n 's/^taso-measure: \([0-9]*\) configurations: .*/\1/p' "$dir/e.out")
added=$(sed -n 's/.*--expand added \([0-9]*\) configurations from \([0-9]*\) rewritten.*/\1/p' "$dir/e.out")
[ -n "$added" ] && [ "$added" -gt 0 ] && [ "$all" = $((plain + added)) ] &&
  ok "expansion added $added configurations to the models' $plain" ||
  bad "configurations: $plain plain, $all expanded, '$added' said added"
[ "$(keys "$dir/expanded.h5" | wc -l)" = "$all" ] && ok "the database holds all $all" ||
  bad "expanded.h5 holds $(keys "$dir/expanded.h5" | wc -l) rows, not $all"
[ -z "$(comm -23 <(keys "$dir/plain.h5") <(keys "$dir/expanded.h5"))" ] &&
  ok "every configuration of the models themselves is among them" ||
  bad "configurations of the models missing after --expand"

measure --db "$dir/expanded.h5" --expand --substitutions "$dir/subst.h5" >"$dir/again.out" 2>&1 &&
  grep -q 'nothing to measure' "$dir/again.out" && ok "a second --expand run measures nothing" ||
  { bad "second --expand run"; cat "$dir/again.out"; }

"$mpiexec" -n 2 --oversubscribe --bind-to none "$bin/taso-measure" --job "$dir/job.ini" \
  "${models[@]}" --db "$dir/two.h5" --expand --substitutions "$dir/subst.h5" >"$dir/two.out" 2>&1 &&
  [ "$(summary "$dir/two.out" | sed 's/ -> .*--expand/ --expand/; s/ ([^)]*)$//')" = \
    "$(summary "$dir/e.out" | sed 's/ -> .*--expand/ --expand/; s/ ([^)]*)$//')" ] &&
  [ "$(keys "$dir/two.h5")" = "$(keys "$dir/expanded.h5")" ] &&
  ok "two ranks collect the same configurations" || { bad "two ranks"; cat "$dir/two.out"; }

# What --expand measured is what the optimizer asks for: the first graph's
# every rewrite costed (budget 1) without measuring anything (--no-measure
# names a missing configuration); the rewrites fold weight-only
# subgraphs and read the folded weights cold, as the optimizer costs them.
for m in squeezenet:size=32 nasrnn:hidden=64,steps=2; do
  (cd "$src" && "$bin/taso-optimize" --job tests/data/optimize_test.ini --model "$m" \
    --substitutions "$dir/subst.h5" --costs "$dir/expanded.h5" --no-measure --budget 1 \
    --confirm-runs 0 --no-check --out "$dir/opt.h5" --fresh >"$dir/opt.out" 2>&1) &&
    ok "$m: the optimizer's first expansion finds every configuration" ||
    { bad "$m: the optimizer lacks a configuration --expand did not measure"; tail -3 "$dir/opt.out"; }
done

one_error() { # one_error WHAT NAME CMD...: status 1, one stderr line naming NAME
  local what=$1 name=$2
  shift 2
  "$@" >/dev/null 2>"$dir/err.txt"
  local rc=$?
  if [ $rc -ne 0 ] && [ "$(wc -l <"$dir/err.txt")" = 1 ] && grep -q "error: .*$name" "$dir/err.txt"; then
    ok "$what: $(cat "$dir/err.txt")"
  else
    bad "$what: status $rc"
    cat "$dir/err.txt"
  fi
}
one_error "--expand without rules" "--substitutions" measure --db "$dir/x.h5" --expand
one_error "candidates as rules" "candidates.h5" measure --db "$dir/x.h5" --expand \
  --substitutions "$dir/candidates.h5"

[ $failed -eq 0 ] && echo "all measure --expand tests passed" || echo "$failed failed"
exit $((failed > 0))
