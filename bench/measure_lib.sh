# Shared by bench/measure.sh and bench/measure_schedule.sh (sourced):
# reading cost databases through taso-show and comparing two of them.
# Needs $bin (the build's bin folder).

# pick Q: the Q-quantile (0.5: median) of numbers on stdin (mawk has no asort)
pick() { sort -g | awk -v q="$1" '{ v[NR] = $1 } END { i = int(q * NR + 0.5); if (i < 1) i = 1; print v[i] }'; }
# rows DB: "KEY|MEDIAN|SPREAD|IQR" of every measured row (spreads in %)
rows() {
  "$bin/taso-show" "$1" | awk '$1 ~ /^[0-9.]+$/ && $3 ~ /%$/ { k = $0; sub(/  unit=.*/, "", k)
    sub(/^ *([^ ]+ +)[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +/, "", k); print k "|" $1 "|" $3 + 0 "|" $4 + 0 }' | sort
}
# differences A B: |median_B / median_A - 1| in %, one line per configuration of both
differences() {
  join -t'|' <(rows "$1" | cut -d'|' -f1,2) <(rows "$2" | cut -d'|' -f1,2) |
    awk -F'|' '{ d = $3 / $2 - 1; print 100 * (d < 0 ? -d : d) }'
}
# agreement A B: the median and 90th percentile of those differences
agreement() {
  local d
  d=$(differences "$1" "$2")
  echo "$(echo "$d" | wc -l) configurations differ by $(echo "$d" | pick 0.5)%" \
    "(median), $(echo "$d" | pick 0.9)% (90th percentile)"
}
