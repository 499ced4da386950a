#!/usr/bin/env bash
# taso-measure and the cost database: two jobs started at once against one
# database on this node never share a core (checked from the holding
# intervals recorded in the rows, not by timing), lose no row and
# duplicate none; a second run measures nothing; a killed run keeps the
# rows it merged and resumes; two ranks with a core each keep to their own
# cores; bad input gives one error line naming the file. ctest provides
# TASO_SOURCE_DIR, TASO_BIN_DIR, MPIEXEC and Open MPI's settings for root.
set -u
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR}
mpiexec=${MPIEXEC:-mpirun}
dir=$(mktemp -d /tmp/taso-measure.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
failed=0
ok() { echo "ok: $1"; }
bad() {
  echo "FAIL: $1"
  failed=$((failed + 1))
}
models=(--model squeezenet:size=32 --model resnet50:size=14)
cat >job.ini <<EOF2
[job]
name = measure-test
[measure]
min_runs = 10
max_runs = 20
lock_dir = $dir/locks
EOF2

# rows FILE: one line per row, "UNIT FROM TO KEY...", from taso-show.
rows() {
  "$bin/taso-show" "$1" | sed -n 's/^  .*  \(.*\)  unit=\([^ ]*\) held=\([0-9.]*\)-\([0-9.]*\) when=.*/\2 \3 \4 \1/p'
}
# overlaps FILE: holding intervals of rows that share a core and overlap.
overlaps() {
  rows "$1" | awk '{
      split($1, hu, ":"); list = substr(hu[2], 4); n = split(list, parts, ",")
      for (i = 1; i <= n; i++) {
        m = split(parts[i], ab, "-"); lo = ab[1]; hi = (m > 1) ? ab[2] : ab[1]
        for (c = lo; c <= hi; c++) print c, $2, $3
      }
    }' | sort -k1,1n -k2,2g | awk '$1 == core && $2 < end { print "core " $1 ": " $2 " < " end; bad++ }
      { if ($1 != core) end = 0; core = $1; if ($3 > end) end = $3 } END { exit bad > 0 }'
}
count() { "$bin/taso-show" "$1" | sed -n 's/.*counts *rows \([0-9]*\),.*/\1/p'; }
distinct() { sed -n 's/^taso-measure: \([0-9]*\) configurations: .*/\1/p' "$1"; }

# ---- two jobs at once, one database -------------------------------------
export TASO_MEASURE_BATCH_SECONDS=0 # merge after every row: the most contention
"$bin/taso-measure" --job job.ini --db costs.h5 "${models[@]}" >a.out 2>&1 &
pa=$!
"$bin/taso-measure" --job job.ini --db costs.h5 "${models[@]}" >b.out 2>&1 &
pb=$!
wait $pa && wait $pb && ok "two concurrent jobs succeeded" || { bad "concurrent jobs"; cat a.out b.out; }
n=$(distinct a.out)
[ -n "$n" ] && [ "$n" = "$(distinct b.out)" ] && [ "$(count costs.h5)" = "$n" ] &&
  ok "$n configurations, $n rows: none lost, none duplicated" ||
  { bad "rows $(count costs.h5) against configurations '$n'"; cat a.out b.out; }
[ "$(rows costs.h5 | cut -d' ' -f4- | sort | uniq -d | wc -l)" = 0 ] ||
  bad "a configuration appears twice"
if msg=$(overlaps costs.h5); then
  ok "no two measurements held a core at the same time ($(rows costs.h5 | wc -l) intervals)"
else
  bad "overlapping holds: $msg"
fi
grep -h '^taso-measure: device 0' a.out b.out

# ---- the library's algorithm in every measured row -------------------------
noalg=$("$bin/taso-show" costs.h5 | grep ' when=' | grep -v unavailable | grep -c 'algorithm=-$')
[ "$noalg" = 0 ] && "$bin/taso-show" costs.h5 | grep -q 'algorithm=[a-z_0-9]*:' &&
  ok "every measured row names oneDNN's implementation ($("$bin/taso-show" costs.h5 |
    sed -n 's/.* algorithm=//p' | sort -u | head -3 | tr '\n' ' '))" ||
  bad "$noalg measured rows without an algorithm"

# ---- a database of format 1 (before the algorithm column) is still read --
python=
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import h5py' 2>/dev/null; then python=$p && break; fi
done
if [ -n "$python" ]; then
  cp costs.h5 old.h5
  "$python" - <<'EOF2'
import h5py, numpy as np
with h5py.File("old.h5", "r+") as f:
    d = f["costs"][...]
    names = [n for n in d.dtype.names if n != "algorithm"]
    old = np.empty(d.shape, dtype=[(n, d.dtype[n]) for n in names])
    for n in names: old[n] = d[n]
    del f["costs"]
    f.create_dataset("costs", data=old)
    del f.attrs["costs_format"]
EOF2
  "$bin/taso-measure" --job job.ini --db old.h5 "${models[@]}" >o.out 2>&1 &&
    grep -q 'nothing to measure' o.out && [ "$("$bin/taso-show" old.h5 | grep -c 'algorithm=-$')" = "$n" ] &&
    ok "a format-1 database is read (no algorithm shown as -) and reused" ||
    { bad "format-1 database"; cat o.out; }
else
  echo "skip: no python with h5py to write a format-1 database"
fi

# ---- a second run measures nothing ----------------------------------------
"$bin/taso-measure" --job job.ini --db costs.h5 "${models[@]}" >c.out 2>&1 &&
  grep -q 'nothing to measure' c.out && grep -q ": $n configurations: 0 measured, $n reused" c.out &&
  ok "a second run measures nothing" || { bad "second run"; cat c.out; }
# taso-run takes the database's calls (on the cpu none: oneDNN's are fixed);
# its rows must be the backend's, and a device it does not hold is named
"$bin/taso-run" --model squeezenet:size=32 --runs 0 --costs costs.h5 --threads 1 >rc.out 2>&1 &&
  grep -q '^calls: 0 taken from costs.h5 (device cpu:.*same calls every time' rc.out &&
  ok "taso-run --costs reads the database's device" || { bad "taso-run --costs"; cat rc.out; }
"$bin/taso-run" --model squeezenet:size=32 --runs 0 --costs costs.h5 --device cpu:nosuch >rc.out 2>&1
[ $? = 1 ] && grep -q 'costs.h5.*cpu:nosuch\|cpu:nosuch.*costs.h5' rc.out &&
  ok "taso-run --costs with an unknown --device names both" || { bad "--device"; cat rc.out; }

# ---- kill and resume ------------------------------------------------------
TASO_MEASURE_STOP_AFTER=7 "$bin/taso-measure" --job job.ini --db killed.h5 "${models[@]}" >k.out 2>&1
rc=$?
[ $rc -eq 137 ] && [ "$(count killed.h5)" = 7 ] && ok "a killed run kept its 7 merged rows" ||
  { bad "killed run: status $rc, $(count killed.h5) rows"; cat k.out; }
"$bin/taso-measure" --job job.ini --db killed.h5 "${models[@]}" >r.out 2>&1 &&
  grep -q ": $n configurations, $((n - 7)) to measure" r.out && [ "$(count killed.h5)" = "$n" ] &&
  ok "the rerun measured only the other $((n - 7))" || { bad "resume"; cat r.out; }
unset TASO_MEASURE_BATCH_SECONDS

# ---- two ranks, a core each -------------------------------------------------
cores=$(getconf _NPROCESSORS_ONLN) # nproc would follow OMP_NUM_THREADS
if [ "$cores" -ge 2 ]; then
  printf '[job]\nname = two\n[measure]\nmin_runs = 5\ncores_per_device = 1\nlock_dir = %s/locks\n' \
    "$dir" >two.ini
  "$mpiexec" -n 2 --bind-to none "$bin/taso-measure" --job two.ini --db two.h5 "${models[@]}" \
    >t.out 2>&1 && [ "$(count two.h5)" = "$n" ] &&
    [ "$(rows two.h5 | awk '{ split($1, u, ":"); print u[2] }' | sort -u | wc -l)" = 2 ] &&
    overlaps two.h5 >/dev/null && ok "2 ranks measured on 2 one-core devices, no overlap" ||
    { bad "two ranks"; cat t.out; }
  grep '^taso-measure: device' t.out
else
  echo "skip: one core here; the two-device run needs two"
fi

# ---- working elsewhere: core 0 held by another job ------------------------
# This shell stands in for another job: it holds core 0's lock (flock(1)
# takes the same advisory lock); a one-rank job whose own device is core 0
# measures on core 1.
if [ "$cores" -ge 2 ] && command -v flock >/dev/null; then
  printf '[job]\nname = elsewhere\n[measure]\nmin_runs = 3\nmax_runs = 5\ncores_per_device = 1\nlock_dir = %s/locks\n' \
    "$dir" >else.ini
  host=$(hostname | cut -d. -f1)
  mkdir -p locks
  exec 9>"locks/$host-cpu0.lock"
  flock 9
  timeout 300 taskset -c 0,1 "$bin/taso-measure" --job else.ini --db else.h5 \
    --model squeezenet:size=32 >e.out 2>&1
  rc=$?
  flock -u 9
  exec 9>&-
  units=$(rows else.h5 | awk '{ split($1, u, ":"); print u[2] }' | sort -u | tr '\n' ' ')
  [ $rc -eq 0 ] && [ "$units" = "cpu1 " ] && grep -q "measurements ([1-9][0-9]* on another device" e.out &&
    ok "with core 0 held by another job, every measurement ran on core 1" ||
    { bad "working elsewhere: status $rc, units '$units'"; cat e.out; }
  grep '^taso-measure: device' e.out
fi

# ---- a configuration the backend has no call for ----------------------------
# erf has no oneDNN call: the runtime runs it on the reference kernel, so
# taso-measure times it there and records it as measured, saying so (not
# unavailable, which would cost it 1e12 ms and every graph with it alike);
# a row recorded unavailable before is tried again.
if /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
  /usr/bin/python3 - <<'EOF2'
import onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6, 6])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6])
g = helper.make_graph([helper.make_node("Erf", ["x"], ["y"])], "erf", [x], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]), "erf.onnx")
EOF2
  "$bin/taso-measure" --job job.ini --model erf.onnx --db erf.h5 >erf.out 2>&1 ||
    { bad "taso-measure of an erf model"; cat erf.out; }
  erf_row=$("$bin/taso-show" erf.h5 | grep 'erf(a)')
  if grep -q 'algorithm=reference kernel (cpu: ' <<<"$erf_row" && ! grep -q unavailable <<<"$erf_row"; then
    ok "erf measured on the reference kernel: $(sed 's/.*algorithm=//' <<<"$erf_row")"
  else
    bad "erf's row: $erf_row"
  fi
else
  echo "skip: python3-onnx missing: the reference-kernel row is not checked"
fi

# ---- bad input: one line naming the file --------------------------------
one_error() { # one_error WHAT NAME CMD...: status 1, one stderr line naming NAME
  local what=$1 name=$2
  shift 2
  "$@" >/dev/null 2>err.txt
  local rc=$?
  if [ $rc -eq 1 ] && [ "$(wc -l <err.txt)" = 1 ] && grep -q "^taso-measure: error: .*$name" err.txt; then
    ok "$what: $(cat err.txt)"
  else
    bad "$what: status $rc"
    cat err.txt
  fi
}
one_error "unknown model" nosuchnet "$bin/taso-measure" --job job.ini --db x.h5 --model nosuchnet
echo "not a database" >foreign.h5
one_error "foreign --db" foreign.h5 "$bin/taso-measure" --job job.ini --db foreign.h5 --model squeezenet:size=32
"$bin/taso-show" costs.h5 --device 'AMD\|Intel\|cpu' >/dev/null || bad "taso-show --device"

[ $failed -eq 0 ] && echo "all measure tests passed" || echo "$failed failed"
exit $((failed > 0))
