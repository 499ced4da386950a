#!/usr/bin/env bash
# Prints taso-validate figures (never a timed test: it only reports):
#   1. sizes {1,2} on 2 ranks: wall, CPU seconds of work and the per-core
#      rate against the original's 16 ms per combination;
#   2. the full run, sizes {1,2,3,4}, on 2 ranks: wall and CPU work, the
#      per-axiom time from /axioms (A12, A22, A23, A43...);
#   3. the full run on 64 oversubscribed ranks: per-rank work balance;
#   4. from the measured CPU work: the time on 64 and 512 cores.
#   5. the redundancy phase on the workstation job (sizes {1}, RANKS
#      ranks): its wall time and the three counts (entailed, independent,
#      undecided), the collapse line and why the undecided ones are.
# The redundancy check is timed separately: its cost is its Z3 budget
# (a resource limit per query), not the combinations.
#   bench/validate.sh [RANKS]   (BIN=build/bin by default; BIG_RANKS=64)
# The machine may be shared: compare CPU seconds and ratios, not walls.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/build/bin}
ranks=${1:-2}
big=${BIG_RANKS:-64}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
ax=$root/data/axioms

run() { # NAME ARGS...: runs taso-validate, echoing the line, keeping stdout
  local name=$1
  shift
  echo "+ mpiexec $* " >&2
  local t0 t1
  t0=$(date +%s.%N)
  mpiexec "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  t1=$(date +%s.%N)
  echo "$t0 $t1" >"$tmp/$name.time"
  grep -v "^taso-validate: [0-9]*/" "$tmp/$name.out" | sed 's/^/  /'
}

run small -n "$ranks" "$bin/taso-validate" --axioms "$ax" --sizes 1,2 --no-redundancy --out "$tmp/small.h5"
run full -n "$ranks" "$bin/taso-validate" --axioms "$ax" --sizes 1,2,3,4 --no-redundancy --out "$tmp/full.h5"
# Oversubscribed ranks waiting in MPI should give their time slice away.
export OMPI_MCA_mpi_yield_when_idle=1
echo "+ export OMPI_MCA_mpi_yield_when_idle=1" >&2
run big -n "$big" "$bin/taso-validate" --axioms "$ax" --sizes 1,2,3,4 --no-redundancy --out "$tmp/big.h5"
run red -n "$ranks" "$bin/taso-validate" --job "$root/jobs/workstation.ini" --sizes 1 --only A0 --out "$tmp/red.h5"

/usr/bin/python3 - "$tmp" "$ranks" "$big" <<'PY'
import sys, re, h5py
tmp, ranks, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def figures(name):
    out = open(f"{tmp}/{name}.out").read()
    t0, t1 = map(float, open(f"{tmp}/{name}.time").read().split())
    m = re.search(r"checks: ([0-9.]+) s wall, ([0-9.]+) CPU s of work in all; per rank min ([0-9.]+) "
                  r"mean ([0-9.]+) max ([0-9.]+) \(max/mean ([0-9.]+)\)", out)
    return t1 - t0, [float(x) for x in m.groups()] if m else None
ORIGINAL_MS = 16.0  # the original, per combination, one core, sizes {1,2}
for name, label in (("small", "sizes {1,2}"), ("full", "sizes {1,2,3,4}")):
    wall, f = figures(name)
    with h5py.File(f"{tmp}/{name}.h5", "r") as h:
        a = h.attrs
        n, checked = int(a["combinations"]), int(a["combinations"]) - int(a["skipped"])
        print(f"{label}: {n} combinations ({checked} not skipped), {int(a['proved'])} proved, "
              f"{int(a['counterexamples'])} counterexamples, {int(a['unknown'])} unknown; "
              f"poly {int(a['decided_by_poly'])}, z3 {int(a['decided_by_z3'])}")
        print(f"  {ranks} ranks: {wall:.1f} s wall for the whole job, {f[0]:.2f} s wall and "
              f"{f[1]:.2f} CPU s for the checks")
        per = f[1] / n * 1e3
        print(f"  per combination: {per*1e3:.1f} us of CPU; the original's {ORIGINAL_MS:.0f} ms is "
              f"{ORIGINAL_MS / per:.0f} times that per core")
        if name == "full":
            ax = sorted(h["axioms"][:], key=lambda r: -r["seconds"])
            print("  costliest axioms (summed row seconds): " +
                  ", ".join(f"{r['name'].decode()} {r['seconds']:.2f} s" for r in ax[:6]))
            work = f[1]
            for cores in (64, 512):
                print(f"  on {cores} cores (from {work:.1f} CPU s of work, perfect balance): "
                      f"{work / cores * 1e3:.0f} ms of checking; start-up and the final sort "
                      f"of {n} rows come on top")
wall, f = figures("big")
spread = re.search(r"finished their last chunk between ([0-9.]+) s and ([0-9.]+) s",
                   open(f"{tmp}/big.out").read()).groups()
print(f"{big} oversubscribed ranks, full run: {wall:.1f} s wall; work per rank min {f[2]:.3f} "
      f"mean {f[3]:.3f} max {f[4]:.3f} CPU s, max/mean {f[5]:.3f}; last chunks ended "
      f"between {spread[0]} and {spread[1]} s into the checks")
wall, _ = figures("red")
out = open(f"{tmp}/red.out").read()
phase = re.search(r"redundancy phase: ([0-9.]+) s", out)
with h5py.File(f"{tmp}/red.h5", "r") as h:
    r, c = h["redundancy"][:], h["collapse"][:]
    a = h.attrs
    print(f"redundancy (workstation job), {ranks} ranks: phase {float(phase.group(1)):.1f} s wall "
          f"({wall:.1f} s the whole run), {len(r)} axioms and {len(c)} families "
          f"(query seconds summed {sum(r['seconds']) + sum(c['seconds']):.1f})")
    print(f"  {int(a['redundancy_entailed'])} entailed, {int(a['redundancy_independent'])} "
          f"independent, {int(a['redundancy_undecided'])} undecided")
    for x in r:
        if x["verdict"] == 1:
            print(f"  entailed: {x['name'].decode()} by {x['core'].decode()}")
    whys = {}
    for x in r:
        if x["verdict"] == 0:
            whys.setdefault(x["why"].decode(), []).append(x["name"].decode())
    for why, names in sorted(whys.items(), key=lambda kv: -len(kv[1])):
        print(f"  undecided ({len(names)}): {why}")
    m = re.search(r"collapse: .*", out)
    print(f"  {m.group(0) if m else 'collapse: no line'}")
PY
