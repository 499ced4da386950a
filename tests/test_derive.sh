#!/usr/bin/env bash
# Completeness of the generator's pruning (issue 12, section 2): every pair
# taso-generate pruned on jobs/smoke.ini is re-derived by the optimizer's
# rewrite engine as the optimizer applies rules (the rule guard) from the
# kept set (taso-derive exits 0), in the step counts the generator
# recorded, the same on 1 and 2 ranks; a shallower search ([generate]
# derive_steps = 1) keeps more and still derives every pair it prunes; a
# bad derive_steps and a file without /pruned rows are refused by name.
# The representative (level-by-level) set derives every substitution of
# the exhaustive one (taso-derive --against), and a smaller set's losses
# are named.
set -u
src=${TASO_SOURCE_DIR:?set TASO_SOURCE_DIR to the source tree}
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR to the bin folder of a build}
mpiexec=${MPIEXEC:-mpiexec}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

"$mpiexec" -n 2 "$bin/taso-generate" --job "$src/jobs/smoke.ini" --out "$tmp/c.h5" >"$tmp/gen" 2>&1 ||
  { cat "$tmp/gen"; fail "generate smoke.ini"; }
for n in 1 2; do
  if "$mpiexec" -n "$n" "$bin/taso-derive" "$tmp/c.h5" >"$tmp/d$n" 2>"$tmp/e$n"; then
    echo "ok: every pruned pair derived on $n ranks"
  else
    cat "$tmp/d$n" "$tmp/e$n"; fail "taso-derive on $n ranks"
  fi
  grep -v '^taso-derive:' "$tmp/d$n" >"$tmp/h$n"
done
cmp -s "$tmp/h1" "$tmp/h2" && echo "ok: the same histogram on 1 and 2 ranks" || fail "histograms differ"
grep -q "^0 derived in another number of steps" "$tmp/h1" &&
  echo "ok: the generator's step counts reproduced" || { cat "$tmp/h1"; fail "step counts differ from the generator's"; }
# the search's depth is a job key: one step prunes less, and what it prunes is derived
sed "s/^derive_steps = .*/derive_steps = 1/" "$src/jobs/smoke.ini" >"$tmp/one.ini"
sed -i "s|^axioms = .*|axioms = $src/data/axioms|" "$tmp/one.ini"
"$mpiexec" -n 2 "$bin/taso-generate" --job "$tmp/one.ini" --out "$tmp/one.h5" >"$tmp/gen1" 2>&1 ||
  { cat "$tmp/gen1"; fail "generate with derive_steps = 1"; }
kept4=$(awk '$1 == "substitutions" {print $2}' "$tmp/gen")
kept1=$(awk '$1 == "substitutions" {print $2}' "$tmp/gen1")
[ -n "$kept1" ] && [ -n "$kept4" ] && [ "$kept1" -gt "$kept4" ] &&
  echo "ok: derive_steps = 1 keeps $kept1 substitutions, 4 steps $kept4" ||
  fail "derive_steps = 1 kept '$kept1', 4 steps '$kept4'"
"$mpiexec" -n 2 "$bin/taso-derive" "$tmp/one.h5" >"$tmp/d1s" 2>&1 &&
  grep -q "derivation steps per pruned pair (one per pattern), at most 1:" "$tmp/d1s" &&
  echo "ok: taso-derive takes the job's derive_steps and derives every pair" ||
  { cat "$tmp/d1s"; fail "taso-derive on the derive_steps = 1 set"; }
sed "s/^derive_steps = .*/derive_steps = 99/" "$src/jobs/smoke.ini" >"$tmp/bad.ini"
if "$mpiexec" -n 1 "$bin/taso-generate" --job "$tmp/bad.ini" --out "$tmp/bad.h5" >"$tmp/b" 2>&1; then
  fail "derive_steps = 99 accepted"
elif grep -q "bad.ini:[0-9]*:.*derive_steps\|bad.ini:[0-9]*:.*99" "$tmp/b"; then
  echo "ok: derive_steps = 99 refused naming the file and line"
else
  cat "$tmp/b"; fail "message for derive_steps = 99"
fi
# the level-by-level generator loses nothing (issue 12, section 4): every
# substitution of the exhaustive enumeration is in the representative set
# or derived from it, on 2 ranks
for m in representatives exhaustive; do
  sed "s/^\[generate\]/[generate]\nmethod = $m/; s|^axioms = .*|axioms = $src/data/axioms|" \
    "$src/jobs/smoke.ini" >"$tmp/$m.ini"
  "$mpiexec" -n 2 "$bin/taso-generate" --job "$tmp/$m.ini" --out "$tmp/$m.h5" >"$tmp/gen_$m" 2>&1 ||
    { cat "$tmp/gen_$m"; fail "generate smoke.ini with method = $m"; }
done
if "$mpiexec" -n 2 "$bin/taso-derive" --against "$tmp/exhaustive.h5" "$tmp/representatives.h5" >"$tmp/a" 2>&1 &&
   awk '/in set/ {getline; if ($NF == 0) ok = 1} END {exit !ok}' "$tmp/a" && ! grep -q "^not derived" "$tmp/a"; then
  echo "ok: every exhaustive substitution is in the representative set or derived from it"
else
  cat "$tmp/a"; fail "taso-derive --against the exhaustive set"
fi
# the same with the verified sets and proved rules only (--proved): the
# optimizer applies no other
for m in representatives exhaustive; do
  "$mpiexec" -n 2 "$bin/taso-verify" --in "$tmp/$m.h5" --out "$tmp/$m.s.h5" >"$tmp/ver_$m" 2>&1 ||
    { cat "$tmp/ver_$m"; fail "verify smoke.ini with method = $m"; }
done
if "$mpiexec" -n 2 "$bin/taso-derive" --against "$tmp/exhaustive.s.h5" --proved "$tmp/representatives.s.h5" \
     >"$tmp/ap" 2>&1 &&
   awk '/in set/ {getline; if ($NF == 0) ok = 1} END {exit !ok}' "$tmp/ap" &&
   grep -q "substitutions of the other set, .* derived from [0-9]* kept" "$tmp/ap"; then
  echo "ok: every proved exhaustive substitution is derived from the proved representative ones"
else
  cat "$tmp/ap"; fail "taso-derive --against --proved"
fi
if "$mpiexec" -n 1 "$bin/taso-derive" --against "$tmp/exhaustive.h5" --proved "$tmp/representatives.h5" \
     >"$tmp/apc" 2>&1; then
  fail "--proved accepted candidates"
else
  echo "ok: --proved refuses unverified candidates"
fi
# the check can fail: a set of graphs of one operator derives none of the
# two-operator substitutions, and each is named
sed "s/^max_ops = .*/max_ops = 1/" "$tmp/representatives.ini" >"$tmp/small.ini"
"$mpiexec" -n 1 "$bin/taso-generate" --job "$tmp/small.ini" --out "$tmp/small.h5" >"$tmp/gs" 2>&1 ||
  { cat "$tmp/gs"; fail "generate with max_ops = 1"; }
"$mpiexec" -n 1 "$bin/taso-derive" --against "$tmp/exhaustive.h5" "$tmp/small.h5" >"$tmp/as" 2>&1
rc=$?
if [ "$rc" -eq 3 ] && grep -q "^not derived: matmul(matmul(x1, w1), w2) => matmul(x1, matmul(w1, w2))$" "$tmp/as"; then
  echo "ok: a smaller set's losses are named (exit 3)"
else
  cat "$tmp/as"; fail "taso-derive --against a one-operator set: exit $rc"
fi
# sets over other inputs are refused by name
sed "s/^x2 = 2x4/x2 = 4x4/" "$tmp/representatives.ini" >"$tmp/other.ini"
"$mpiexec" -n 1 "$bin/taso-generate" --job "$tmp/other.ini" --out "$tmp/other.h5" >"$tmp/go" 2>&1 ||
  { cat "$tmp/go"; fail "generate over other inputs"; }
if "$mpiexec" -n 1 "$bin/taso-derive" --against "$tmp/other.h5" "$tmp/representatives.h5" >"$tmp/ao" 2>&1; then
  fail "a set over other inputs accepted"
elif grep -q "other.h5: its input table differs" "$tmp/ao"; then
  echo "ok: a set over other inputs refused by name"
else
  cat "$tmp/ao"; fail "message for a set over other inputs"
fi
# pairs were pruned and derived, some in more than one step
rows=$(awk '$1 == "common" || $1 == "implied" {for (i = 3; i <= NF; i++) s += $i} END {print s + 0}' "$tmp/h1")
[ "$rows" -gt 0 ] && echo "ok: $rows pruned pairs checked" || fail "no pruned pairs in the histogram"
# a file without /pruned: a message naming it, non-zero exit
/usr/bin/python3 - "$tmp/c.h5" "$tmp/old.h5" <<'PY' || fail "making an old-style file"
import shutil, sys, h5py
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "a") as f:
    del f["pruned"]
PY
if "$mpiexec" -n 1 "$bin/taso-derive" "$tmp/old.h5" >"$tmp/o" 2>&1; then
  fail "a file without /pruned accepted"
elif grep -q "old.h5: no /pruned rows" "$tmp/o"; then
  echo "ok: a file without /pruned refused by name"
else
  cat "$tmp/o"; fail "message for a file without /pruned"
fi
[ "$failed" -eq 0 ] || { echo "$failed failed"; exit 1; }
echo "all passed"
