#!/usr/bin/env bash
# Rule subsets per model family (issue 17): two models optimized with every
# rule of the small test set (estimated costs), their usage collected by
# taso-rules into a taso-rule-usage file that h5py reads; then
# taso-optimize --rules auto searches a model with its family's subset
# (the rules that fired in that family: as many as were fired, and the
# same cost as with every rule), --rules FAMILY with another family's,
# --rules zoo with every model's,
# --rules random:N with N, --rules FILE with the rules a text file lists,
# and --rules auto works on an imported ONNX model. Bad input (an unknown
# choice, a malformed rules file, a usage file that is none, a model no
# taso-optimize wrote) is refused naming the file.
#
# ctest provides TASO_SOURCE_DIR, TASO_BIN_DIR and MPIEXEC.
set -u
source "$(dirname "$0")/script_helpers.sh"
py=/usr/bin/python3

job=tests/data/optimize_test.ini
small_rules
common=(--job "$job" --substitutions "$tmp/substitutions.h5" --budget 24 --estimate-costs
  --confirm-runs 0 --no-check --threads 1)
branches=tests/data/branches.model

run "$bin/taso-optimize" "${common[@]}" --model "$branches" --out "$tmp/b.opt.h5"
expect "all rules on branches" 0
run "$bin/taso-optimize" "${common[@]}" --model nasrnn:hidden=64 --out "$tmp/r.opt.h5"
expect "all rules on nasrnn" 0
[ "$(attr "$tmp/b.opt.h5" optimize_model)" = "\"$branches\"" ] && echo "ok: the input model recorded" ||
  { echo "FAIL: optimize_model not recorded"; fail=1; }

run "$bin/taso-rules" --in "$tmp/b.opt.h5,$tmp/r.opt.h5" --out "$tmp/usage.h5"
expect "taso-rules collects the usage" 0
has "branches is multibranch" "branches       multibranch" "$tmp/out"
has "nasrnn is rnn" "nasrnn         rnn" "$tmp/out"
# the input's family as taso-optimize saw it, whatever its recorded path
# names now (issue 32 item 6: elsewhere, tests/data/branches.model is
# another model)
mkdir -p "$tmp/elsewhere/tests/data"
printf 'model other\ninput x 1x8\noutput relu(x)\n' >"$tmp/elsewhere/tests/data/branches.model"
(cd "$tmp/elsewhere" && "$bin/taso-rules" --in "$tmp/b.opt.h5" --out usage.h5 >out 2>err)
has "the recorded family, not the file now at the recorded path" "branches       multibranch" \
  "$tmp/elsewhere/out"
fired=$("$py" - "$tmp/b.opt.h5" <<'EOF'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(len(set(r["rule"] for r in f["optimize_rules"][()])))
EOF
)
"$py" - "$tmp/usage.h5" "$fired" <<'EOF' && echo "ok: h5py reads the usage file" || { echo "FAIL: usage file"; fail=1; }
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    assert f.attrs["kind"] == b"taso-rule-usage", f.attrs["kind"]
    models = f["models"][()]
    assert [m["family"] for m in models] == [b"multibranch", b"rnn"], models
    fired = f["fired"][()]
    assert sum(1 for r in fired if r["model"] == 0) == int(sys.argv[2]), fired
    assert len(f["features"][()]) > 0
EOF
[ "${fired:-0}" -gt 0 ] && echo "ok: rules fired on branches ($fired)" || { echo "FAIL: nothing fired"; fail=1; }

run "$bin/taso-rules" --model "$branches" --usage "$tmp/usage.h5"
expect "taso-rules shows a model's subset" 0
has "its family" "family multibranch" "$tmp/out"
has "its subset" "subset: $fired rules" "$tmp/out"
run "$bin/taso-rules" --model bert:layers=1 --usage "$tmp/usage.h5"
has "a family without a model borrows the nearest one's" "the nearest model's family, rnn, lends" "$tmp/out"

# auto: the family's subset, and the cost of every rule
run "$bin/taso-optimize" "${common[@]}" --model "$branches" --rules auto --rule-usage "$tmp/usage.h5" \
  --out "$tmp/auto.opt.h5"
expect "--rules auto" 0
has "auto names the family" "rules: family multibranch" "$tmp/out"
n=$(attr "$tmp/auto.opt.h5" rules_searched)
[ "${n:-0}" -ge "$fired" ] && [ "$n" -lt "$(attr "$tmp/b.opt.h5" rules_searched)" ] &&
  echo "ok: auto searched $n rules, of $(attr "$tmp/b.opt.h5" rules_searched)" ||
  { echo "FAIL: auto searched ${n:-?} rules ($fired fired)"; fail=1; }
awk -v a="$(attr "$tmp/b.opt.h5" cost_after_ms)" -v b="$(attr "$tmp/auto.opt.h5" cost_after_ms)" \
  'BEGIN { exit !(b <= 1.01 * a) }' && echo "ok: auto's cost within 1% of every rule's" ||
  { echo "FAIL: auto's cost above every rule's"; fail=1; }

run "$bin/taso-optimize" "${common[@]}" --model "$branches" --rules rnn --rule-usage "$tmp/usage.h5" \
  --out "$tmp/fam.opt.h5"
expect "--rules FAMILY" 0
has "another family's subset" "rules: family rnn" "$tmp/out"

run "$bin/taso-optimize" "${common[@]}" --model "$branches" --rules zoo --rule-usage "$tmp/usage.h5" \
  --out "$tmp/zoo.opt.h5"
expect "--rules zoo" 0
has "every model's rules" "rules: every model's" "$tmp/out"
zoo=$(attr "$tmp/zoo.opt.h5" rules_searched)
[ "${zoo:-0}" -ge "$n" ] && echo "ok: zoo searched $zoo rules, at least the family's $n" ||
  { echo "FAIL: zoo searched ${zoo:-?} rules"; fail=1; }

run "$bin/taso-optimize" "${common[@]}" --model "$branches" --rules random:3 --out "$tmp/rnd.opt.h5"
expect "--rules random:3" 0
[ "$(attr "$tmp/rnd.opt.h5" rules_searched)" = 3 ] && echo "ok: three rules at random" ||
  { echo "FAIL: random:3 searched $(attr "$tmp/rnd.opt.h5" rules_searched)"; fail=1; }

"$py" - "$tmp/b.opt.h5" >"$tmp/rules.txt" <<'EOF'
import sys, h5py
print("# the rules that fired on branches")
with h5py.File(sys.argv[1], "r") as f:
    for r in sorted(set(r["rule"].decode() for r in f["optimize_rules"][()])):
        print(r)
EOF
run "$bin/taso-optimize" "${common[@]}" --model "$branches" --rules "$tmp/rules.txt" --out "$tmp/file.opt.h5"
expect "--rules FILE" 0
[ "$(attr "$tmp/file.opt.h5" rules_searched)" = "$n" ] && echo "ok: the file's rules searched" ||
  { echo "FAIL: --rules FILE searched $(attr "$tmp/file.opt.h5" rules_searched), auto $n"; fail=1; }

# without --rule-usage, the usage shipped in data/ (made with the main
# job's rule sets: this test set shares few of their rules, and says so)
run "$bin/taso-optimize" "${common[@]}" --model "$branches" --rules auto --out "$tmp/dflt.opt.h5"
expect "--rules auto with the shipped usage" 0
has "from data/rule_usage.h5" "data/rule_usage.h5" "$tmp/out"

# an imported model gets a family too
run "$bin/taso-convert" "$branches" "$tmp/branches.onnx"
expect "export branches as ONNX" 0
run "$bin/taso-optimize" "${common[@]}" --model "$tmp/branches.onnx" --rules auto \
  --rule-usage "$tmp/usage.h5" --out "$tmp/onnx.opt.h5"
expect "--rules auto on an imported model" 0
has "the imported model's family" "rules: family multibranch" "$tmp/out"

# bad input
run "$bin/taso-optimize" "${common[@]}" --model "$branches" --rules "$tmp/nosuch" --out "$tmp/x.h5"
expect "an unknown choice is refused" 1
has "naming it" "nosuch" "$tmp/err"
printf 'relu(i1) => relu(i1)\nnot a rule\n' >"$tmp/bad.txt"
run "$bin/taso-optimize" "${common[@]}" --model "$branches" --rules "$tmp/bad.txt" --out "$tmp/x.h5"
expect "a malformed rules file is refused" 1
has "naming file and line" "bad.txt:2:" "$tmp/err"
run "$bin/taso-optimize" "${common[@]}" --model "$branches" --rules auto --rule-usage "$tmp/b.opt.h5" \
  --out "$tmp/x.h5"
expect "a usage file that is none is refused" 1
has "naming it" "b.opt.h5" "$tmp/err"
run "$bin/taso-convert" "$branches" "$tmp/plain.h5"
run "$bin/taso-rules" --in "$tmp/plain.h5" --out "$tmp/u2.h5"
expect "a model no taso-optimize wrote is refused" 1
has "naming it" "plain.h5: no optimize_model" "$tmp/err"
[ ! -e "$tmp/u2.h5" ] && echo "ok: nothing written" || { echo "FAIL: u2.h5 written"; fail=1; }
cp "$tmp/r.opt.h5" "$tmp/keep.h5"
run "$bin/taso-rules" --in "$tmp/b.opt.h5" --out "$tmp/r.opt.h5"
expect "a file of another kind is not replaced without --fresh" 1
cmp -s "$tmp/r.opt.h5" "$tmp/keep.h5" && echo "ok: left as it was" || { echo "FAIL: r.opt.h5 changed"; fail=1; }

exit $fail
