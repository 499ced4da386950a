#!/usr/bin/env bash
# Completeness of pruning on the workstation job (issue 12, sections 2 and
# 4): generates jobs/workstation.ini and runs taso-derive on the result,
# which prints the histogram of derivation steps per reason and every
# pruned pair the optimizer's rewrite engine (with the rule guard's
# re-proofs) does not re-derive (exit 3 if any). Then the same job by the
# other method (exhaustive or representatives, whichever the job does not
# name), and taso-derive --against: every substitution of the exhaustive
# set is in the representative set or derived from it (histogram, and each
# one not derived by name); then both verified and the same check on their
# proved substitutions alone (--proved), the rules the optimizer applies.
# Usage: bench/derive.sh [BUILD_BIN [OUT_DIR [RANKS]]]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/bin}
out=${2:-/tmp/taso-derive-bench}
ranks=${3:-2}
job=$here/jobs/workstation.ini
mkdir -p "$out"
uptime
set -x
time mpirun --oversubscribe -n "$ranks" "$bin/taso-generate" --job "$job" --out "$out/candidates.h5" --fresh
time mpirun --oversubscribe -n "$ranks" "$bin/taso-derive" "$out/candidates.h5"
# the other method, from a copy of the job (axioms from the source tree)
set +x
method=$(sed -n 's/^method *= *\([a-z]*\).*/\1/p' "$job")
if [ "$method" = representatives ]; then other=exhaustive; else other=representatives; fi
sed "s/^method *=.*/method = $other/; s|^axioms *=.*|axioms = $here/data/axioms|" "$job" >"$out/$other.ini"
grep -q "^method = $other" "$out/$other.ini" || sed -i "s/^\[generate\]/[generate]\nmethod = $other/" "$out/$other.ini"
set -x
time mpirun --oversubscribe -n "$ranks" "$bin/taso-generate" --job "$out/$other.ini" --out "$out/$other.h5" --fresh
if [ "$other" = exhaustive ]; then full=$out/exhaustive.h5 reps=$out/candidates.h5
else full=$out/candidates.h5 reps=$out/representatives.h5; fi
time mpirun --oversubscribe -n "$ranks" "$bin/taso-derive" --against "$full" "$reps"
for f in "$full" "$reps"; do
  time mpirun --oversubscribe -n "$ranks" "$bin/taso-verify" --in "$f" --out "${f%.h5}.s.h5" --fresh
done
time mpirun --oversubscribe -n "$ranks" "$bin/taso-derive" --against "${full%.h5}.s.h5" --proved "${reps%.h5}.s.h5"
