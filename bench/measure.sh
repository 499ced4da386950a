#!/usr/bin/env bash
# taso-measure on the cpu backend: configurations of ResNet-50 (224x224,
# stem=1) and BERT, how many, how long to measure, the spread of repeated
# runs within a measurement and between two measurements of the same
# configurations; then the cost model: for each built-in model the sum of
# its planned steps' costs from the database against its end-to-end time
# (taso-run --runs 10), as a ratio.
# Usage: bench/measure.sh [BUILD_DIR] [quick] [--against OLD.h5]
# (quick: the second part on small sizes; --against: also compare with a
# database measured earlier, e.g. on another day, for the rows of both).
# Each command is echoed so that a run can be repeated.
set -euo pipefail
build=build quick= against= positional=0
while [ $# -gt 0 ]; do
  case $1 in
  --against) against=${2:?--against needs a cost database}; shift ;;
  *) if [ $positional = 0 ]; then build=$1; else quick=$1; fi; positional=$((positional + 1)) ;;
  esac
  shift
done
bin=$build/bin
for t in taso-measure taso-run taso-show; do
  [ -x "$bin/$t" ] || { echo "measure.sh: $bin/$t not built (cmake --build $build)" >&2; exit 2; }
done
dir=$(mktemp -d /tmp/taso-bench-measure.XXXXXX)
trap 'rm -rf "$dir"' EXIT
printf '[job]\nname = bench-measure\n[measure]\nlock_dir = %s/locks\n' "$dir" >"$dir/job.ini"

echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores available"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), load average: $(cut -d' ' -f1-3 /proc/loadavg)"

. "$(dirname "$0")/measure_lib.sh"
spreads() {
  echo "median (max-min)/median $(rows "$1" | cut -d'|' -f3 | pick 0.5)%," \
    "median IQR/median $(rows "$1" | cut -d'|' -f4 | pick 0.5)% over $(rows "$1" | wc -l) rows"
}
for m in resnet50:stem=1 bert; do
  for pass in 1 2; do
    cmd="$bin/taso-measure --job $dir/job.ini --db $dir/$pass.h5 --model $m"
    echo "+ $cmd"
    $cmd | grep -E '^taso-measure: [0-9]+ configurations:'
  done
  echo "$m: $(spreads "$dir/1.h5")"
  echo "$m: two measurements: $(agreement "$dir/1.h5" "$dir/2.h5")"
  [ -z "$against" ] || echo "$m: against $against ($(date -r "$against" -u +%Y-%m-%dT%H:%MZ)):" \
    "$(agreement "$against" "$dir/1.h5")"
  rm -f "$dir"/[12].h5
done

echo "# the cost model: sum of the steps' costs from costs.h5 against taso-run end to end"
models=$(ls "$(dirname "$0")/../data/models" | sed -n 's/\.model$//p')
[ -n "$models" ] || models="bert inception_v3 mobilenet_v2 nasnet_a nasrnn resnet50 resnext50 squeezenet"
printf '%-28s %12s %12s %8s\n' model "sum ms" "e2e ms" ratio
for name in $models; do
  m=$name
  [ -z "$quick" ] || m="$name:size=32"
  [ "$name" = resnet50 ] && [ -z "$quick" ] && m=resnet50:stem=1
  case $name in bert | nasrnn) [ -z "$quick" ] || m=$name ;; esac
  est=$("$bin/taso-measure" --job "$dir/job.ini" --db "$dir/costs.h5" --model "$m" --estimate 2>&1 |
    sed -n 's/^taso-measure: estimate .*: \([0-9.]*\) ms.*/\1/p') || true
  e2e=$("$bin/taso-run" --model "$m" --runs 10 2>&1 | sed -n 's/^end to end: median \([0-9.]*\) ms.*/\1/p') || true
  if [ -n "$est" ] && [ -n "$e2e" ]; then
    printf '%-28s %12.3f %12.3f %8.2f\n' "$m" "$est" "$e2e" "$(echo "$est / $e2e" | bc -l)"
  else
    printf '%-28s %s\n' "$m" "failed (taso-measure '$est', taso-run '$e2e')"
  fi
done
