# Shared by the end-to-end shell tests (source it after setting set -u):
# a scratch folder removed on exit, and run/show/expect/has over the last
# command's output. A test keeps its own checks; these only say ok or FAIL
# and set fail=1.
#
# ctest provides TASO_SOURCE_DIR, TASO_BIN_DIR and MPIEXEC.
src=${TASO_SOURCE_DIR:?set TASO_SOURCE_DIR}
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR}
mpiexec=${MPIEXEC:-mpirun}
# 1 in the sanitizer build (tests/CMakeLists.txt): fewer repetitions
sanitized=${TASO_TEST_SANITIZED:-0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src" || exit 1 # jobs name their axioms relative to the tree
fail=0
rc=0

run() { # echoed, so a failure can be repeated; 124 means a hang
  echo "+ $*"
  timeout 300 "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
show() { sed 's/^/  out: /' "$tmp/out"; sed 's/^/  err: /' "$tmp/err"; }
expect() { # expect DESCRIPTION STATUS: the last run's status, one error line on failure (1, 2)
  if [ "$rc" != "$2" ]; then
    echo "FAIL: $1 (exit status $rc, expected $2)"; show; fail=1
  elif { [ "$2" = 1 ] || [ "$2" = 2 ]; } && [ "$(grep -c 'error:' "$tmp/err")" != 1 ]; then
    echo "FAIL: $1: expected one error line"; show; fail=1
  else
    echo "ok: $1"
  fi
}
# Copies of the shared rule sets (tests/fixture_rules.sh) into $tmp when
# ctest made them (TASO_FIXTURE_DIR), so that a test run alone still
# makes its own; fails when a copy fails.
from_fixture() { # from_fixture NAME...: 0 when every $TASO_FIXTURE_DIR/NAME.h5 was copied
  local d=${TASO_FIXTURE_DIR:-} f
  [ -n "$d" ] || return 1
  for f in "$@"; do [ -s "$d/$f.h5" ] || return 1; done
  for f in "$@"; do
    cp "$d/$f.h5" "$tmp/$f.h5" || { echo "FAIL: copy $d/$f.h5"; fail=1; return 0; }
  done
  echo "ok: $* from the shared fixture ($d)"
}
# The small set alone (tests/data/optimize_test.ini): $tmp/candidates.h5,
# $tmp/substitutions.h5.
small_rules() {
  from_fixture candidates substitutions && return
  run "$mpiexec" -n 1 "$bin/taso-generate" --job tests/data/optimize_test.ini --out "$tmp/candidates.h5"
  expect "generate the test set" 0
  run "$mpiexec" -n 1 "$bin/taso-verify" --in "$tmp/candidates.h5" --out "$tmp/substitutions.h5"
  expect "verify the test set" 0
}
# A root attribute of an HDF5 file, as h5dump prints its value.
attr() { h5dump -a "/$2" "$1" | sed -n 's/^ *(0): *//p'; }
# The optimizer tests' rules, generated and verified on 1 rank: the small
# set of tests/data/optimize_test.ini (candidates in $tmp/candidates.h5,
# proved rules in $tmp/substitutions.h5) and the batch-normalization rules
# of jobs/batchnorm.ini ($tmp/bn.h5).
optimizer_rules() {
  from_fixture candidates substitutions bn.c bn && return
  small_rules
  run "$mpiexec" -n 1 "$bin/taso-generate" --job jobs/batchnorm.ini --out "$tmp/bn.c.h5"
  expect "generate the batch-normalization set" 0
  run "$mpiexec" -n 1 "$bin/taso-verify" --in "$tmp/bn.c.h5" --out "$tmp/bn.h5"
  expect "verify the batch-normalization set" 0
}
has() { # has DESCRIPTION STRING FILE: a fixed string that must be in FILE
  if grep -qF -- "$2" "$3"; then echo "ok: $1"; else echo "FAIL: $1"; show; fail=1; fi
}
