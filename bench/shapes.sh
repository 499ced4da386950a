#!/usr/bin/env bash
# Prints the shape-condition figures (issue 12, section 1) for the whole
# workstation set: generate and verify jobs/workstation.ini on N ranks
# (about a minute here), then tests/check_shapes rewrites every proved
# substitution at SAMPLES other shapes per direction in its proved
# relation (and half as many outside it), with the unchecked engine
# (taso_rewrite_all, any_type), the checked one and the guarded one
# (src/verify/rule_guard.h: re-proves outside the recorded relation, once
# per relation, with data/axioms), compared exactly.
# Never a timed test: it only reports. Reuses SUBSTITUTIONS.h5 if given.
#   bench/shapes.sh [SUBSTITUTIONS.h5 [SAMPLES [RANKS]]]   (BIN=build/bin by default)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/build/bin}
samples=${2:-8}
ranks=${3:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
subst=${1:-}
cd "$root"
if [ -z "$subst" ]; then
  subst=$tmp/s.h5
  echo "+ mpiexec -n $ranks $bin/taso-generate --job jobs/workstation.ini --out $tmp/c.h5"
  mpiexec -n "$ranks" "$bin/taso-generate" --job jobs/workstation.ini --out "$tmp/c.h5" 2>&1 | tail -1
  echo "+ mpiexec -n $ranks $bin/taso-verify --in $tmp/c.h5 --out $subst"
  mpiexec -n "$ranks" "$bin/taso-verify" --in "$tmp/c.h5" --out "$subst" 2>&1 | tail -1
fi
echo "+ mpiexec -n 1 $bin/../tests/check_shapes $subst $samples 1 data/axioms"
mpiexec -n 1 "$bin/../tests/check_shapes" "$subst" "$samples" 1 data/axioms >"$tmp/out" || true
grep -v '^refused, rightly' "$tmp/out"
echo "first wrong unchecked rewrites (the checked engine refuses them):"
grep '^refused, rightly' "$tmp/out" | head -5
