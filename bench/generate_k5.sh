#!/usr/bin/env bash
# k=5 end to end on a workstation, in stages (jobs/three5.ini by default):
# every stage of the pipeline at 5 operators, and the level checkpoints
# under a real kill. Never a timed test: it reports.
#   bench/generate_k5.sh [JOB [RANKS [OUT]]]   (BIN=build/bin by default;
#   OUT, a folder, default a temporary one; MODEL=nasrnn the model the
#   rules optimize, with estimated costs)
#
#   1. taso-generate --until-level 3: a first batch job's share, stopped
#      once level 3 is checkpointed (OUT/candidates.h5.levels)
#   2. taso-generate on, killed with SIGKILL (every process of the run)
#      once level 4 is checkpointed and level 5 is walked
#   3. taso-generate again: resumes after level 4 and completes
#   4. taso-verify, taso-validate (the job's sizes), taso-optimize
# Each step prints its command, wall time and peak memory per rank.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/build/bin}
job=${1:-$root/jobs/three5.ini}
ranks=${2:-2}
out=${3:-}
model=${MODEL:-nasrnn}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -n "$out" ] || out=$tmp
mkdir -p "$out"
echo "k=5 in stages: $job on $ranks ranks ($(nproc) cores, $(uname -n), load $(cut -d' ' -f1-3 /proc/loadavg))"

# step NAME COMMAND...: runs a stage under /usr/bin/time per rank, prints
# its lines that matter, its wall time and its peak memory per rank
step() {
  local name=$1 start end peak
  shift
  echo "+ $*"
  start=$(date +%s.%N)
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || {
    echo "$name failed:"
    tail -20 "$tmp/$name.err"
    exit 1
  }
  end=$(date +%s.%N)
  grep -E "^level|^walk|resumed|checkpointed|^taso-[a-z]+: [0-9]|substitutions|^taso-[a-z]+: (levels|.*->)" \
    "$tmp/$name.out" | grep -v "checked for implication\|derived from the kept set" || true
  peak=$(grep -o "rank peak RSS [0-9]*" "$tmp/$name.err" | awk '{print $4}' | sort -n | tail -1)
  awk -v t0="$start" -v t1="$end" -v p="${peak:-}" -v n="$name" 'BEGIN {
    printf "%s: wall %.1f s", n, t1 - t0
    if (p != "") printf ", peak memory per rank %.0f MiB", p / 1024
    printf "\n\n" }'
}
timed() { mpiexec -n "$ranks" /usr/bin/time -f "rank peak RSS %M KiB" "$@"; }

c=$out/candidates.h5
step generate-1 timed "$bin/taso-generate" --job "$job" --out "$c" --fresh --until-level 3

# 2. the run killed during level 5 (or after it: the kill comes once the
# level's walk line is out)
echo "+ taso-generate --job $job --out $c   (killed with SIGKILL once level 4 is checkpointed and level 5 walked)"
setsid mpiexec -n "$ranks" "$bin/taso-generate" --job "$job" --out "$c" >"$tmp/killed.out" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  grep -q "^level 5: [0-9]* graphs" "$tmp/killed.out" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.2
done
# Open MPI gives each rank a process group of its own: kill them by name
kill -KILL -- "-$pid" 2>/dev/null || true
pkill -KILL -f -- "taso-generate --job $job --out $c\$" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
for _ in $(seq 1 100); do
  pgrep -f -- "taso-generate --job $job --out $c\$" >/dev/null || break
  sleep 0.1
done
grep -E "^level|resumed" "$tmp/killed.out" || true
ls "$c.levels" | sed 's/^/  left in the checkpoint folder: /'
[ ! -e "$c" ] || { echo "the killed run wrote $c"; exit 1; }
echo
step generate-2 timed "$bin/taso-generate" --job "$job" --out "$c"
grep -q "^levels 1 to 4: resumed" "$tmp/generate-2.out" || { echo "the run after the kill did not resume level 4"; exit 1; }
[ ! -e "$c.levels" ] || { echo "$c.levels left after the output was written"; exit 1; }

step verify timed "$bin/taso-verify" --job "$job" --in "$c" --out "$out/substitutions.h5" --fresh
step validate timed "$bin/taso-validate" --job "$job" --out "$out/validation.h5" --fresh
step optimize "$bin/taso-optimize" --job "$job" --model "$model" --substitutions "$out/substitutions.h5" \
  --estimate-costs --out "$out/$model.opt.h5" --fresh
