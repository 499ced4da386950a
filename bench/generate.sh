#!/usr/bin/env bash
# Prints taso-generate figures for a job on N ranks: wall time, peak memory
# per rank, graphs per second per rank, exchange volume per graph, the
# per-stage counts and the work balance. Never a timed test: it only reports.
#   bench/generate.sh [JOB [RANKS]]   (BIN=build/bin by default)
# Targets (issue 12), printed with the figures they judge: jobs/workstation.ini
# at most 5 s wall and 512 MiB per rank on 2 ranks; jobs/paper.ini at most
# 600 s and 4096 MiB per rank on 2 ranks (a 2-core AMD EPYC, quiet).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/build/bin}
job=${1:-$root/jobs/workstation.ini}
ranks=${2:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "+ mpiexec -n $ranks taso-generate --job $job   ($(nproc) cores, $(uname -n), load $(cut -d' ' -f1-3 /proc/loadavg))"
start=$(date +%s.%N)
# each rank under /usr/bin/time: its own peak resident memory
mpiexec -n "$ranks" /usr/bin/time -f "rank peak RSS %M KiB" \
  "$bin/taso-generate" --job "$job" --out "$tmp/c.h5" >"$tmp/out" 2>"$tmp/err"
end=$(date +%s.%N)
grep -v "graphs (rank 0's shard)\|checked for implication" "$tmp/out"
peak=$(grep -o "rank peak RSS [0-9]*" "$tmp/err" | awk '{print $4}' | sort -n | tail -1)
graphs=$(grep -o "graphs_enumerated *[0-9]*" "$tmp/out" | awk '{print $2}')
vol=$(grep -o "exchanged [0-9 +]* bytes" "$tmp/out" | awk '{s = 0; for (i = 2; i < NF; i += 2) s += $i; print s}')
awk -v t0="$start" -v t1="$end" -v peak="$peak" -v g="$graphs" -v v="$vol" -v n="$ranks" 'BEGIN {
  printf "wall %.2f s; peak memory per rank %.0f MiB; %.0f graphs/s/rank overall;\n", t1 - t0, peak / 1024, g / (t1 - t0) / n
  printf "exchange volume from rank 0: %.1f bytes per graph enumerated\n", v * n / g
}'
case "$(basename "$job"):$ranks" in
workstation.ini:2) target="5 512" ;;
paper.ini:2) target="600 4096" ;;
*) target="" ;;
esac
if [ -n "$target" ]; then
  awk -v t0="$start" -v t1="$end" -v peak="$peak" -v target="$target" 'BEGIN {
    split(target, x, " "); wall = t1 - t0; mib = peak / 1024
    printf "target: at most %d s wall and %d MiB per rank: %s (wall %.2f s, %.0f MiB)\n", x[1], x[2],
      wall <= x[1] && mib <= x[2] ? "met" : "NOT met", wall, mib
  }'
fi
