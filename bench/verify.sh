#!/usr/bin/env bash
# Prints taso-verify figures: wall time, candidates per second, verdict
# counts and the per-query time distribution (from /decisions), for a
# candidates file (default: the verifier's own test fixture) on N ranks.
# Never a timed test: it only reports.
#   bench/verify.sh [CANDIDATES.h5 [RANKS [JOB]]]   (BIN=build/bin by default)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/build/bin}
ranks=${2:-2}
job=${3:-$root/jobs/workstation.ini}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cand=${1:-}
if [ -z "$cand" ]; then
  cand=$tmp/c.h5
  echo "+ mpiexec -n 1 $bin/../tests/test_verify_fixture $cand $job"
  mpiexec -n 1 "$bin/../tests/test_verify_fixture" "$cand" "$job" >/dev/null
fi
echo "+ mpiexec -n $ranks $bin/taso-verify --job $job --in $cand --out $tmp/s.h5 --fresh"
start=$(date +%s.%N)
mpiexec -n "$ranks" "$bin/taso-verify" --job "$job" --in "$cand" --out "$tmp/s.h5" --fresh
end=$(date +%s.%N)
/usr/bin/python3 - "$tmp/s.h5" "$start" "$end" <<'PY'
import sys, h5py
path, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
with h5py.File(path, "r") as f:
    d = f["decisions"][:]
    a = f.attrs
    n = len(d)
    wall = t1 - t0
    print(f"rows {n}, wall {wall:.2f} s, {n / wall:.1f} candidates/s, "
          f"{int(a['ranks'])} ranks x {int(a['threads'])} threads")
    print(f"proved {int(a['proved'])}, unknown {int(a['unknown'])}, refuted {int(a['refuted'])}")
    s = sorted(d["seconds"])
    if n:
        q = lambda p: s[min(n - 1, int(p * n))]
        print(f"seconds per row: sum {sum(s):.2f}, median {q(0.5)*1e3:.1f} ms, "
              f"p90 {q(0.9)*1e3:.1f} ms, p99 {q(0.99)*1e3:.1f} ms, max {s[-1]*1e3:.1f} ms")
    for r in d:
        if r["verdict"] == 2:
            print("unknown:", r["row"], r["reason"].decode())
PY
