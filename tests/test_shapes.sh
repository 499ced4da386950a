#!/usr/bin/env bash
# Shape conditions end to end (issue 12, section 1): generate and verify
# jobs/smoke.ini and tests/data/shapes.ini (grouped convolutions, enlarge,
# pools, split), then tests/check_shapes rewrites every proved
# substitution at other shapes with the checked engine and compares
# exactly. Passes when no checked rewrite changes a value and every shape
# in the proved relation is accepted; on shapes.ini the unchecked engine
# must be caught wrong at least once (the test has teeth). The guarded
# engine (src/verify/rule_guard.h, with data/axioms) is checked the same
# way, and must apply some instance outside the recorded relation.
set -u

src=${TASO_SOURCE_DIR:?set TASO_SOURCE_DIR to the source tree}
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR to the bin folder of a build}
tests="$bin/../tests"
mpiexec=${MPIEXEC:-mpiexec}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

run() { # run NAME JOB
  local name=$1 job=$2
  echo "+ $mpiexec -n 2 $bin/taso-generate --job $job --out $tmp/$name-c.h5"
  "$mpiexec" -n 2 "$bin/taso-generate" --job "$job" --out "$tmp/$name-c.h5" >/dev/null 2>"$tmp/err" ||
    { cat "$tmp/err"; return 1; }
  echo "+ $mpiexec -n 2 $bin/taso-verify --in $tmp/$name-c.h5 --out $tmp/$name-s.h5"
  "$mpiexec" -n 2 "$bin/taso-verify" --in "$tmp/$name-c.h5" --out "$tmp/$name-s.h5" >/dev/null 2>"$tmp/err" ||
    { cat "$tmp/err"; return 1; }
  echo "+ $mpiexec -n 1 $tests/check_shapes $tmp/$name-s.h5 8 1 data/axioms"
  "$mpiexec" -n 1 "$tests/check_shapes" "$tmp/$name-s.h5" 8 1 data/axioms >"$tmp/$name.txt"
  local rc=$?
  grep -v '^refused, rightly' "$tmp/$name.txt"
  return $rc
}

cd "$src" || exit 1
run smoke jobs/smoke.ini || failed=$((failed + 1))
run shapes tests/data/shapes.ini || failed=$((failed + 1))
if ! grep -q '^any_type: applied at [0-9]*, wrong at [1-9]' "$tmp/shapes.txt"; then
  echo "FAIL: shapes.ini: the unchecked engine was never caught wrong; the sampler lost its teeth"
  failed=$((failed + 1))
fi
for name in smoke shapes; do
  if ! grep -q '^guarded: .*outside the relation: applied at [1-9]' "$tmp/$name.txt"; then
    echo "FAIL: $name: the guard applied nothing outside the recorded relation"
    failed=$((failed + 1))
  fi
done
echo "$failed failed"
[ "$failed" -eq 0 ]
