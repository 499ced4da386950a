#!/usr/bin/env bash
# The cost model against the run on the cpu backend: for every built-in
# model at its default size (or the models given), the sum of its planned
# steps' costs as taso-optimize sums them from a cost database, its
# end-to-end median and minimum (taso_rt_time_model, as taso-run times
# it), and their ratio (issue 31: within 10% for every model). The
# configurations are measured into a fresh database first (the measuring
# rate is printed), then `taso-measure --calibrate` prints the table; its
# last column times each step alone again between the end-to-end runs, so
# that a machine whose speed drifts (a shared VM) does not pass for an
# error of the method.
# The table, with the machine, the load and the exact command, is kept in
# OUT (default bench/calibrate.txt; appended, so that runs can be compared).
#
# Usage: bench/calibrate.sh [BUILD_DIR] [--cores N] [--runs N] [--out FILE]
#                           [--steps] [--model M ...]
#   --cores N  cores of the device (default 1: on a machine shared with other
#              work, two threads wait for each other's time slices)
#   --runs N   timed end-to-end runs per model (default 20)
#   --steps    also each step's cost against its time inside whole runs
# Each command is echoed so that a run can be repeated from its log.
set -euo pipefail
build=build cores=1 runs=20 out=bench/calibrate.txt steps=
models=()
while [ $# -gt 0 ]; do
  case $1 in
  --cores) cores=${2:?--cores needs a count}; shift ;;
  --runs) runs=${2:?--runs needs a count}; shift ;;
  --out) out=${2:?--out needs a file}; shift ;;
  --steps) steps=--calibrate-steps ;;
  --model) models+=(--model "${2:?--model needs a model}"); shift ;;
  -*) echo "calibrate.sh: unknown option $1" >&2; exit 2 ;;
  *) build=$1 ;;
  esac
  shift
done
bin=$build/bin
[ -x "$bin/taso-measure" ] || { echo "calibrate.sh: $bin/taso-measure not built (cmake --build $build)" >&2; exit 2; }
dir=$(mktemp -d /tmp/taso-bench-calibrate.XXXXXX)
trap 'rm -rf "$dir"' EXIT
printf '[job]\nname = bench-calibrate\n[measure]\ncores_per_device = %s\n' "$cores" >"$dir/job.ini"

l3=$(cat /sys/devices/system/cpu/cpu0/cache/index3/size 2>/dev/null || echo unknown)
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || true)"
  echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores available, sysfs L3 $l3" \
    "(TASO_LLC_MIB=${TASO_LLC_MIB:-unset}), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  cmd="$bin/taso-measure --job $dir/job.ini --db $dir/costs.h5 --calibrate --calibrate-runs $runs $steps ${models[*]}"
  echo "+ $cmd"
  start=$(date +%s.%N)
  $cmd 2>&1 | grep -v 'configurations ([0-9.]*%)' | tee "$dir/log" >/dev/null
  grep -E '^taso-measure: device 0 ' "$dir/log" | sed 's/^/# /' |
    awk '{ print } match($0, /: [0-9]+ measurements/) { n = substr($0, RSTART + 2) + 0 }
      match($0, /busy [0-9.]+ s/) { b = substr($0, RSTART + 5) + 0 }
      END { if (b > 0) printf "# measuring: %.1f configurations per second while the device was held\n", n / b }'
  sed -n '/^taso-measure: calibration/,$p' "$dir/log" | grep -v '^taso-measure: job defaults'
  echo "# $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.0f s in all", e - s }');" \
    "load average at the end $(cut -d' ' -f1-3 /proc/loadavg) (other work on the cores" \
    "inflates end-to-end runs most: compare the fastest)"
  echo
} | tee -a "$out"
