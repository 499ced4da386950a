#!/usr/bin/env bash
# The scheduling target of issue 14: 4 taso-measure jobs of 4 small models
# each on this machine's CPU "devices" (one core each), every job with its
# own database so that each measures all of its configurations:
#   (a) the jobs one after another (the reference timings),
#   (b) all 4 at once with the scheduler (one shared lock folder: a
#       measurement owns its core; a job whose core is held works on another),
#   (c) all 4 at once without it (--no-device-lock, a benchmark-only flag),
# with the total wall time of each and how far (b)'s and (c)'s timings are
# from (a)'s: the median and 90th percentile over configurations of
# |median / median(a) - 1|.
# Usage: bench/measure_schedule.sh [BUILD_DIR]. Commands are echoed.
set -euo pipefail
build=${1:-build}
bin=$build/bin
for t in taso-measure taso-show; do
  [ -x "$bin/$t" ] || { echo "measure_schedule.sh: $bin/$t not built" >&2; exit 2; }
done
. "$(dirname "$0")/measure_lib.sh"
dir=$(mktemp -d /tmp/taso-bench-schedule.XXXXXX)
trap 'rm -rf "$dir"' EXIT
printf '[job]\nname = bench-schedule\n[measure]\nmin_runs = 10\nmax_runs = 40\ncores_per_device = 1\nlock_dir = %s/locks\n' \
  "$dir" >"$dir/job.ini"
jobs=(
  "squeezenet:size=64 resnet50:size=28 mobilenet_v2:size=64 nasrnn:hidden=128,steps=2"
  "resnext50:size=32 inception_v3:size=75 bert:seq=16,hidden=128,heads=4,layers=1 squeezenet:size=96"
  "nasnet_a:size=32 resnet50:size=14 mobilenet_v2:size=96 bert:seq=32,hidden=256,heads=4,layers=1"
  "inception_v3:size=99 resnext50:size=56,groups=8 nasrnn:hidden=256,steps=2 squeezenet:size=128"
)
echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(getconf _NPROCESSORS_ONLN) cores"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), uptime: $(uptime)"

# job MODE I [FLAGS...]: job I into $dir/MODE-I.h5
job() {
  local mode=$1 i=$2
  shift 2
  local args=(--job "$dir/job.ini" --db "$dir/$mode-$i.h5")
  for m in ${jobs[$i]}; do args+=(--model "$m"); done
  echo "+ $bin/taso-measure ${args[*]} $*"
  "$bin/taso-measure" "${args[@]}" "$@" >"$dir/$mode-$i.out" 2>&1 ||
    { echo "job $mode-$i failed:"; cat "$dir/$mode-$i.out"; exit 1; }
}
# together MODE [FLAGS...]: the 4 jobs at once
together() {
  local mode=$1 pids=()
  shift
  for i in 0 1 2 3; do job "$mode" $i "$@" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p"; done
}
seconds() { date +%s.%N; }

t0=$(seconds); for i in 0 1 2 3; do job a $i; done; t1=$(seconds)
together b; t2=$(seconds)
together c --no-device-lock; t3=$(seconds)

# differences of every job's rows against (a)'s
diffs() { for i in 0 1 2 3; do differences "$dir/a-$i.h5" "$dir/$1-$i.h5"; done; }
n=$(for i in 0 1 2 3; do rows "$dir/a-$i.h5"; done | wc -l)
printf '%-40s %8s %12s %12s\n' "4 jobs x 4 models, $n configurations" "wall s" "median diff" "p90 diff"
printf '%-40s %8.1f %12s %12s\n' "(a) one after another" "$(echo "$t1 - $t0" | bc -l)" "-" "-"
printf '%-40s %8.1f %11s%% %11s%%\n' "(b) at once, with the scheduler" "$(echo "$t2 - $t1" | bc -l)" \
  "$(diffs b | pick 0.5)" "$(diffs b | pick 0.9)"
printf '%-40s %8.1f %11s%% %11s%%\n' "(c) at once, --no-device-lock" "$(echo "$t3 - $t2" | bc -l)" \
  "$(diffs c | pick 0.5)" "$(diffs c | pick 0.9)"
echo "# (b) per device:"
grep -h '^taso-measure: device [0-9]' "$dir"/b-*.out | sed 's/^/#   /'
echo "# after: uptime: $(uptime)"
