#!/usr/bin/env bash
# taso-measure on the cpu backend: configurations of ResNet-50 (224x224,
# stem=1) and BERT, how many, how long to measure, the spread of repeated
# runs within a measurement and between two measurements of the same
# configurations; then the cost model: for each built-in model the sum of
# its planned steps' costs from the database against its end-to-end time
# (taso-run --runs 10), as a ratio.
# Usage: bench/measure.sh [BUILD_DIR] [quick]   (quick: the second part on
# small sizes). Each command is echoed so that a run can be repeated.
set -euo pipefail
build=${1:-build}
quick=${2:-}
bin=$build/bin
for t in taso-measure taso-run taso-show; do
  [ -x "$bin/$t" ] || { echo "measure.sh: $bin/$t not built (cmake --build $build)" >&2; exit 2; }
done
dir=$(mktemp -d /tmp/taso-bench-measure.XXXXXX)
trap 'rm -rf "$dir"' EXIT
printf '[job]\nname = bench-measure\n[measure]\nlock_dir = %s/locks\n' "$dir" >"$dir/job.ini"

echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores available"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), load average: $(cut -d' ' -f1-3 /proc/loadavg)"

# pick Q: the Q-quantile (0.5: median) of numbers on stdin (mawk has no asort)
pick() { sort -g | awk -v q="$1" '{ v[NR] = $1 } END { i = int(q * NR + 0.5); if (i < 1) i = 1; print v[i] }'; }
# rows DB: "KEY|MEDIAN|SPREAD|IQR" of every measured row (spreads in %)
rows() {
  "$bin/taso-show" "$1" | awk '$1 ~ /^[0-9.]+$/ && $3 ~ /%$/ { k = $0; sub(/  unit=.*/, "", k)
    sub(/^ *([^ ]+ +)[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", k); print k "|" $1 "|" $3 + 0 "|" $4 + 0 }' | sort
}
spreads() {
  echo "median (max-min)/median $(rows "$1" | cut -d'|' -f3 | pick 0.5)%," \
    "median IQR/median $(rows "$1" | cut -d'|' -f4 | pick 0.5)% over $(rows "$1" | wc -l) rows"
}
# agreement A B: |median_B / median_A - 1| over the configurations of both
agreement() {
  local d
  d=$(join -t'|' <(rows "$1" | cut -d'|' -f1,2) <(rows "$2" | cut -d'|' -f1,2) |
    awk -F'|' '{ d = $3 / $2 - 1; print 100 * (d < 0 ? -d : d) }')
  echo "two measurements of $(echo "$d" | wc -l) configurations differ by $(echo "$d" | pick 0.5)%" \
    "(median), $(echo "$d" | pick 0.9)% (90th percentile)"
}

for m in resnet50:stem=1 bert; do
  for pass in 1 2; do
    cmd="$bin/taso-measure --job $dir/job.ini --db $dir/$pass.h5 --model $m"
    echo "+ $cmd"
    $cmd | grep -E '^taso-measure: [0-9]+ configurations:'
  done
  echo "$m: $(spreads "$dir/1.h5")"
  echo "$m: $(agreement "$dir/1.h5" "$dir/2.h5")"
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
