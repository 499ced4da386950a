#!/usr/bin/env bash
# taso-validate end to end: the same /checks on 1 and 4 ranks, sizes {1,2}
# on 16 oversubscribed ranks, a run killed mid-way resumes without losing
# or repeating a row and ends with the clean run's rows, the known-bad
# fixtures (grouped convolution: counterexample with sizes {1,3}; concat
# associativity: split trees differ, and correct axioms become entailed),
# the redundancy check (the fixture R1 follows from A0 and A1; the three
# verdicts counted everywhere, the same on any rank count), and bad input (bad --sizes, unknown option, malformed
# axiom file, a truncated output to resume).
# ctest provides TASO_SOURCE_DIR, TASO_BIN_DIR and MPIEXEC.
set -u
src=${TASO_SOURCE_DIR:?set TASO_SOURCE_DIR}
# 16 oversubscribed ranks (64 took 18 s of this test's time)
many=16
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR}
mpiexec=${MPIEXEC:-mpiexec}
python=/usr/bin/python3
ax="$src/data/axioms"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; failed=$((failed + 1)); }
run() { # echoed so that a failure can be repeated from the log
  echo "+ $*"
  timeout 300 "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# The rows of /checks as text, without the timing column.
rows() {
  "$python" - "$1" <<'EOF'
import sys, h5py
# the whole table read at once: row by row, h5py takes seconds for 30,000
with h5py.File(sys.argv[1], "r") as f:
    t = f["checks"][()]
cols = [t[c].tolist() for c in ("index", "name", "outcome", "path", "trees_differ", "params",
                                "shapes", "detail")]
out = []
for i, n, o, p, d, pa, s, de in zip(*cols):
    out.append("%s %s %s %s %s %s %s %s" % (i, n.decode(), o, p, d, pa.decode(), s.decode(),
                                            de.decode()))
print("\n".join(out))
EOF
}
attr() { "$python" -c "import h5py,sys; print(int(h5py.File(sys.argv[1],'r').attrs[sys.argv[2]]))" "$1" "$2"; }
common=(--axioms "$ax" --no-redundancy)

# The default set's totals: N combinations, P proved, S skipped, P + S = N
# (every case decided, none refuted); all by the polynomial path but the 8
# cases of X31 and X32 (@relu max: relu's sign, which Z3 decides).
run "$mpiexec" -n 1 "$bin/taso-validate" "${common[@]}" --sizes 1,2 --out "$tmp/v1.h5"
summary=$(grep -o "^taso-validate: [0-9]* combinations: [0-9]* proved, 0 counterexamples, [0-9]* skipped, 0 unknown (poly [0-9]*, z3 8)" "$tmp/out")
read -r n p s <<<"$(echo "$summary" | sed 's/^taso-validate: \([0-9]*\) combinations: \([0-9]*\) proved, 0 counterexamples, \([0-9]*\) skipped.*/\1 \2 \3/')"
if [ "$rc" -eq 0 ] && [ -n "$summary" ] && [ "$p" -gt 15000 ] && [ $((p + s)) -eq "$n" ] &&
  echo "$summary" | grep -q "(poly $((p - 8)), z3 8)"; then
  ok "1 rank, sizes {1,2}: every case decided, no counterexample ($n combinations, $p proved)"
else bad "1 rank"; cat "$tmp/out" "$tmp/err"; n=0 p=0; fi
rows "$tmp/v1.h5" >"$tmp/rows1"
[ "$(wc -l <"$tmp/rows1")" -eq "$n" ] && ok "one row per combination" || bad "row count"

# (not under sanitizers: the run on $many ranks below checks the same)
if [ "${TASO_TEST_SANITIZED:-0}" != 1 ]; then
  run "$mpiexec" -n 4 "$bin/taso-validate" "${common[@]}" --sizes 1,2 --out "$tmp/v4.h5"
  rows "$tmp/v4.h5" >"$tmp/rows4"
  [ "$rc" -eq 0 ] && cmp -s "$tmp/rows1" "$tmp/rows4" && ok "4 ranks write the 1-rank rows" ||
    { bad "4 ranks differ from 1"; cat "$tmp/err"; }
fi

run "$mpiexec" -n "$many" "$bin/taso-validate" "${common[@]}" --sizes 1,2 --out "$tmp/vmany.h5"
rows "$tmp/vmany.h5" >"$tmp/rowsmany"
if [ "$rc" -eq 0 ] && cmp -s "$tmp/rows1" "$tmp/rowsmany" && grep -q "CPU s of work" "$tmp/out"; then
  ok "$many ranks: the same rows; $(grep -o 'max/mean [0-9.]*' "$tmp/out")"
else bad "$many ranks (rc $rc)"; tail -n 5 "$tmp/out" "$tmp/err"; fi

# Killed (SIGKILL) once 3000 rows are in the file, rounds of one chunk.
echo "+ TASO_VALIDATE_ROUND_SECONDS=0 TASO_VALIDATE_STOP_AFTER=3000 (killed run)"
TASO_VALIDATE_ROUND_SECONDS=0 TASO_VALIDATE_STOP_AFTER=3000 timeout 300 "$mpiexec" -n 2 \
  "$bin/taso-validate" "${common[@]}" --sizes 1,2 --out "$tmp/r.h5" >"$tmp/out" 2>"$tmp/err"
[ $? -ne 0 ] && ok "the killed run failed" || bad "the killed run did not fail"
run "$mpiexec" -n 3 "$bin/taso-validate" "${common[@]}" --sizes 1,2 --out "$tmp/r.h5"
kept=$(sed -n "s/.*resuming .*: \([0-9]*\) of $n combinations already checked.*/\1/p" "$tmp/out")
if [ "$rc" -eq 0 ] && [ -n "$kept" ] && [ "$kept" -ge 3000 ] && [ "$kept" -lt "$n" ]; then
  ok "resumed with $kept rows kept"
else bad "resume"; cat "$tmp/out" "$tmp/err"; fi
rows "$tmp/r.h5" >"$tmp/rowsr"
cmp -s "$tmp/rows1" "$tmp/rowsr" && ok "resumed rows equal the clean run's" || bad "resumed rows differ"
run "$mpiexec" -n 1 "$bin/taso-validate" "${common[@]}" --sizes 1,2 --out "$tmp/r.h5"
[ "$rc" -eq 0 ] && grep -q "the file is complete" "$tmp/out" && grep -q "$n combinations: $p proved" "$tmp/out" &&
  ok "a complete file is left alone" || { bad "rerun on a complete file"; cat "$tmp/out" "$tmp/err"; }

# Known-bad fixtures.
run "$mpiexec" -n 2 "$bin/taso-validate" "${common[@]}" --sizes 1,3 --add "$ax/bad/grouped_conv.smt2" --only BAD2 --out "$tmp/g.h5"
# A wrong axiom fails the validation: exit status 3 (findings), not 0.
if [ "$rc" -eq 3 ] && grep -q "^taso-validate: BAD2 counterexample: z3 \[.*\]: out\[.*\]: .* vs " "$tmp/out" &&
  grep -q "^taso-validate: findings: [0-9]* counterexamples, 0 collapsing families: an axiom is wrong (exit status 3)" "$tmp/err" &&
  [ "$(attr "$tmp/g.h5" counterexamples)" -gt 0 ]; then
  ok "grouped convolution: $(attr "$tmp/g.h5" counterexamples) counterexamples with sizes {1,3}"
else bad "grouped convolution"; cat "$tmp/out" "$tmp/err"; fi
run "$mpiexec" -n 2 "$bin/taso-validate" "${common[@]}" --sizes 1,2 --add "$ax/bad/concat_assoc.smt2" --only BAD1 --out "$tmp/b.h5"
[ "$rc" -eq 0 ] && grep -q "BAD1: equal values but different split trees in 384 of 384" "$tmp/out" &&
  ok "concat associativity: split trees differ everywhere" || { bad "concat associativity"; cat "$tmp/out" "$tmp/err"; }

# The nesting of a channel concat matters under relu (it keeps axis 1's
# tree), unlike under pooling and conv2d's data (X27-X29, which drop it).
run "$mpiexec" -n 2 "$bin/taso-validate" "${common[@]}" --sizes 1,2 --add "$ax/bad/concat_nesting.smt2" --only BAD6 --out "$tmp/n.h5"
[ "$rc" -eq 0 ] && grep -q "BAD6: equal values but different split trees in 64 of 64" "$tmp/out" &&
  ok "concat nesting under relu: split trees differ everywhere" || { bad "concat nesting under relu"; cat "$tmp/out" "$tmp/err"; }
run "$mpiexec" -n 2 "$bin/taso-validate" "${common[@]}" --sizes 1,2 --only X27,X28,X29,X30 --out "$tmp/x27.h5"
[ "$rc" -eq 0 ] && grep -q "combinations: [1-9][0-9]* proved, 0 counterexamples" "$tmp/out" && ! grep -q "split trees" "$tmp/out" &&
  ok "concat nesting under pooling, conv2d's data and matmul's right operand: equal graphs" ||
  { bad "concat nesting under pooling, conv2d and matmul"; cat "$tmp/out" "$tmp/err"; }

# @relu max (relu as max(v, 0), not an arbitrary f with f(0) = 0): X31 and
# X32 need relu's sign and are proved with it; BAD7 (X31 without the relu
# that makes its tensor non-negative) is not; the key takes only 'max';
# X33's guard (rank 0) holds on its scalars.
run "$mpiexec" -n 2 "$bin/taso-validate" "${common[@]}" --sizes 1,2 --only X31,X32,X33 --out "$tmp/x31.h5"
[ "$rc" -eq 0 ] && grep -q "combinations: 9 proved, 0 counterexamples, 0 skipped" "$tmp/out" &&
  ok "X31-X33 (relu's sign, scalars commute): 9 of 9 proved" || { bad "X31-X33"; cat "$tmp/out" "$tmp/err"; }
run "$mpiexec" -n 2 "$bin/taso-validate" "${common[@]}" --sizes 1,2 --add "$ax/bad/relu_sign.smt2" --only BAD7 --out "$tmp/rs.h5"
[ "$rc" -eq 3 ] && grep -q "^taso-validate: BAD7 counterexample: z3 " "$tmp/out" &&
  [ "$(attr "$tmp/rs.h5" counterexamples)" -eq 4 ] &&
  ok "relu of a scaled tensor of either sign: 4 counterexamples of 4" || { bad "BAD7"; cat "$tmp/out" "$tmp/err"; }
sed 's/^;; @relu max$/;; @relu min/' "$ax/bad/relu_sign.smt2" >"$tmp/relu_min.smt2"
run "$mpiexec" -n 2 "$bin/taso-validate" "${common[@]}" --sizes 1,2 --add "$tmp/relu_min.smt2" --only BAD7 --out "$tmp/rm.h5"
[ "$rc" -eq 1 ] && grep -q "relu_min.smt2:[0-9]*: .*@relu takes only 'max', got 'min'" "$tmp/err" &&
  ok "@relu min refused with the file and line" || { bad "@relu min"; cat "$tmp/out" "$tmp/err"; }

# With concat associativity the concat family makes any two tensors equal,
# so every axiom outside {A25, A26, BAD1} is reported entailed by them.
run "$mpiexec" -n 4 "$bin/taso-validate" --axioms "$ax" --add "$ax/bad/concat_assoc.smt2" --sizes 1 --only BAD1 --redundancy A0,A13,A25 --redundancy-rlimit 1000000 --redundancy-timeout 300 --out "$tmp/c.h5"
# A collapsing family is a wrong axiom set: exit status 3 (findings).
if [ "$rc" -eq 3 ] && grep -q "^taso-validate: the axioms A25 A26 BAD1 make any two tensors equal" "$tmp/out" &&
  grep -q "^taso-validate: findings: 0 counterexamples, [1-9][0-9]* collapsing families: the axiom set makes any two tensors equal (exit status 3)" "$tmp/err" &&
  grep -q "^taso-validate: A0 is entailed by A25 A26 BAD1" "$tmp/out" &&
  grep -q "^taso-validate: A13 is entailed by A25 A26 BAD1" "$tmp/out" &&
  grep -q "redundancy: 2 entailed, 0 independent, 1 undecided (of 3 axioms)" "$tmp/out"; then
  ok "concat associativity: correct axioms become entailed (by A25 A26 BAD1)"
else bad "concat associativity redundancy"; cat "$tmp/out" "$tmp/err"; fi

# Redundancy, fanned out over ranks: the three verdicts, counted in the
# summary line, the root attributes and taso-show, the same on 2 and 3
# ranks. The budget is Z3's resource count; the timeout is a safety net
# far above it, so no verdict depends on the machine's speed.
red=(--axioms "$ax" --add "$ax/bad/entailed.smt2" --sizes 1 --only R1 --redundancy R1,A29,A25
  --redundancy-rlimit 1000000 --redundancy-timeout 300)
counts_re="redundancy: 1 entailed, 0 independent, 2 undecided"
infinite="every model is infinite (A25 and A26 make concat injective)"
run "$mpiexec" -n 2 "$bin/taso-validate" "${red[@]}" --out "$tmp/red.h5"
if [ "$rc" -eq 0 ] && grep -q "^taso-validate: R1 is entailed by A0 A1 (" "$tmp/out" &&
  grep -qF "taso-validate: A29 is undecided: no countermodel ($infinite); entailment: " "$tmp/out" &&
  grep -q "^taso-validate: $counts_re (of 3 axioms)" "$tmp/out" &&
  grep -q "; $counts_re -> " "$tmp/out" &&
  grep -q "^taso-validate: collapse: [0-9]* families: 0 collapse, [0-9]* have a model" "$tmp/out" &&
  [ "$(attr "$tmp/red.h5" redundancy_entailed)" -eq 1 ] &&
  [ "$(attr "$tmp/red.h5" redundancy_independent)" -eq 0 ] &&
  [ "$(attr "$tmp/red.h5" redundancy_undecided)" -eq 2 ] &&
  [ "$(attr "$tmp/red.h5" redundant_axioms)" -eq 1 ] &&
  "$bin/taso-show" "$tmp/red.h5" |
  grep -q "redundancy_entailed 1, redundancy_independent 0, redundancy_undecided 2"; then
  ok "R1 (a fixture) is entailed by A0 A1; A29, A25 undecided with why; counts everywhere"
else bad "redundancy"; cat "$tmp/out" "$tmp/err"; fi
red_rows() {
  "$python" - "$1" <<'EOF'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    for t in ("redundancy", "collapse"):
        for r in f[t]:
            print(t, r["name"].decode(), r["verdict"], r["core"].decode(), r["why"].decode(),
                  r["model"].decode())
EOF
}
red_rows "$tmp/red.h5" >"$tmp/red2"
run "$mpiexec" -n 3 "$bin/taso-validate" "${red[@]}" --out "$tmp/red3.h5"
red_rows "$tmp/red3.h5" >"$tmp/red3"
if [ "$rc" -eq 0 ] && cmp -s "$tmp/red2" "$tmp/red3" &&
  grep -q "^collapse relu -1  .*tensors: every axiom holds" "$tmp/red2"; then
  ok "3 ranks give the 2-rank redundancy and collapse rows"
else bad "redundancy rows differ"; diff "$tmp/red2" "$tmp/red3"; fi

# Bad input.
run "$mpiexec" -n 2 "$bin/taso-validate" "${common[@]}" --sizes 1,x --out "$tmp/x.h5"
[ "$rc" -eq 2 ] && grep -q "^taso-validate: error: --sizes: size list '1,x'" "$tmp/err" && [ ! -e "$tmp/x.h5" ] &&
  ok "bad --sizes" || { bad "bad --sizes"; cat "$tmp/err"; }
run "$mpiexec" -n 2 "$bin/taso-validate" --frobnicate
[ "$rc" -eq 2 ] && grep -q "^taso-validate: error: unknown option '--frobnicate'" "$tmp/err" &&
  ok "unknown option" || { bad "unknown option"; cat "$tmp/err"; }
mkdir -p "$tmp/ax"
cp "$ax/decls.smt2" "$tmp/ax/"
printf ';; @axiom Z1\n;; @about broken\n;; @shape x = m n\n;; @param q = 1,x\n(assert (forall ((x T)) (= (relu x) (relu x))))\n' >"$tmp/ax/broken.smt2"
run "$mpiexec" -n 2 "$bin/taso-validate" --axioms "$tmp/ax" --no-redundancy --out "$tmp/x.h5"
[ "$rc" -eq 1 ] && grep -q "^taso-validate: error: .*broken.smt2:4: bad value list '1,x' (in axiom Z1)" "$tmp/err" &&
  ok "malformed domain named with its line" || { bad "malformed domain"; cat "$tmp/out" "$tmp/err"; }
# A truncated --out is not known to be this plan's: refused (and left as
# it is) unless --fresh; a truncated resume file is started afresh. The
# runs that replace them check sizes {1} (1,579 combinations, against
# the rows of a clean 1-rank run): what is tested is the file handling.
run "$mpiexec" -n 1 "$bin/taso-validate" "${common[@]}" --sizes 1 --out "$tmp/s1.h5"
rows "$tmp/s1.h5" >"$tmp/rows_s1"
[ "$rc" -eq 0 ] && [ "$(wc -l <"$tmp/rows_s1")" -gt 1000 ] && ok "sizes {1}: $(wc -l <"$tmp/rows_s1") rows" ||
  { bad "sizes {1}"; cat "$tmp/out" "$tmp/err"; }
cp "$tmp/v1.h5" "$tmp/t.h5"
truncate -s 20000 "$tmp/t.h5"
cp "$tmp/t.h5" "$tmp/t-copy.h5"
run "$mpiexec" -n 2 "$bin/taso-validate" "${common[@]}" --sizes 1,2 --out "$tmp/t.h5"
[ "$rc" -eq 1 ] && grep -q "^taso-validate: error: .*t.h5 holds something other than a taso-validation artifact (not a readable HDF5 file.*--fresh" "$tmp/err" &&
  cmp -s "$tmp/t.h5" "$tmp/t-copy.h5" && ok "a truncated output is left as it is without --fresh" ||
  { bad "truncated output without --fresh"; cat "$tmp/out" "$tmp/err"; }
run "$mpiexec" -n 2 "$bin/taso-validate" "${common[@]}" --sizes 1 --out "$tmp/t.h5" --fresh
rows "$tmp/t.h5" >"$tmp/rowst"
[ "$rc" -eq 0 ] && cmp -s "$tmp/rows_s1" "$tmp/rowst" && ok "a truncated output is replaced with --fresh" ||
  { bad "truncated output with --fresh"; cat "$tmp/out" "$tmp/err"; }
cp "$tmp/t-copy.h5" "$tmp/u.h5.resume"
run "$mpiexec" -n 2 "$bin/taso-validate" "${common[@]}" --sizes 1 --out "$tmp/u.h5"
rows "$tmp/u.h5" >"$tmp/rowsu"
[ "$rc" -eq 0 ] && grep -q "warning: .*u.h5.resume cannot be resumed (.*): starting afresh" "$tmp/err" &&
  cmp -s "$tmp/rows_s1" "$tmp/rowsu" && ok "a truncated resume file is started afresh" ||
  { bad "truncated resume file"; cat "$tmp/out" "$tmp/err"; }

echo "$failed failed"
[ "$failed" -eq 0 ]
