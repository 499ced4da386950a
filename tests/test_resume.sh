#!/usr/bin/env bash
# Resume under faults: a stage is killed with SIGKILL part-way (every rank
# and mpiexec at once, as a crashed node would be), started again on the
# same output, killed again, and finished; the result must equal an
# uninterrupted run: no row lost, none duplicated, the same verdicts.
# Rows are watched in the output file itself (tests/resume.py), so a kill
# falls between or inside real writes, not at a hook of the tool.
#
# resume_case below takes the tool's command line, so another resumable
# stage is a few lines at the end. ctest provides TASO_SOURCE_DIR,
# TASO_BIN_DIR and MPIEXEC; h5py comes with /usr/bin/python3.
set -u
src=${TASO_SOURCE_DIR:?set TASO_SOURCE_DIR}
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR}
mpiexec=${MPIEXEC:-mpiexec}
python=/usr/bin/python3
helper=$src/tests/resume.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
ok() { echo "ok: $1"; }
bad() {
  echo "FAIL: $1"
  failed=$((failed + 1))
}
"$python" -c 'import h5py' 2>/dev/null || { echo "SKIP: $python has no h5py (python3-h5py)"; exit 77; }

# resume_case NAME DATASET SPECS ATTRS -- CMD...
#   CMD... --out FILE runs the stage; it streams rows into DATASET of FILE.
#   SPECS (space-separated DATASET:KEY:FIELD,FIELD) and ATTRS (A,B) say what
#   must equal the uninterrupted run (tests/resume.py compare). Leaves the
#   outputs of the three partial runs in $tmp/NAME-run{1,2,3}.out.
resume_case() {
  local name=$1 dataset=$2 specs=$3 attrs=$4
  shift 5
  local clean=$tmp/$name-clean.h5 file=$tmp/$name.h5 total n1 n2 rc
  echo "+ $* --out $clean"
  if ! timeout 120 "$@" --out "$clean" >"$tmp/$name-clean.out" 2>&1; then
    bad "$name: the uninterrupted run failed"
    cat "$tmp/$name-clean.out"
    return
  fi
  total=$("$python" "$helper" rows "$clean" "$dataset")

  echo "+ (killed once $dataset has a row) $* --out $file"
  "$python" "$helper" kill "$file" "$dataset" 1 60 -- "$@" --out "$file" >"$tmp/$name-run1.out" 2>&1
  rc=$?
  n1=$("$python" "$helper" rows "$file" "$dataset" 2>/dev/null || echo 0)
  if [ $rc -eq 0 ] && [ "$n1" -gt 0 ] && [ "$n1" -lt "$total" ]; then
    ok "$name killed part-way: $n1 of $total rows in the file"
  else
    bad "$name: not killed part-way (status $rc, $n1 of $total rows)"
    cat "$tmp/$name-run1.out"
    return
  fi

  echo "+ (rerun, killed again once $dataset has more rows) $* --out $file"
  "$python" "$helper" kill "$file" "$dataset" $((n1 + 1)) 60 -- "$@" --out "$file" \
    >"$tmp/$name-run2.out" 2>&1
  rc=$?
  n2=$("$python" "$helper" rows "$file" "$dataset" 2>/dev/null || echo 0)
  if [ $rc -eq 0 ] && [ "$n2" -gt "$n1" ] && [ "$n2" -lt "$total" ]; then
    ok "$name rerun killed part-way: $n2 of $total rows in the file"
  else
    bad "$name: rerun not killed part-way (status $rc, $n2 of $total rows)"
    cat "$tmp/$name-run2.out"
    return
  fi

  echo "+ $* --out $file"
  if ! timeout 120 "$@" --out "$file" >"$tmp/$name-run3.out" 2>&1; then
    bad "$name: the final rerun failed"
    cat "$tmp/$name-run3.out"
    return
  fi
  # shellcheck disable=SC2086 # SPECS is a list
  if "$python" "$helper" compare "$clean" "$file" --attrs "$attrs" $specs >"$tmp/cmp" 2>&1; then
    ok "$name after two kills equals the uninterrupted run: $(tr '\n' ';' <"$tmp/cmp")"
  else
    bad "$name after two kills differs from the uninterrupted run"
    cat "$tmp/cmp"
  fi
}

# ---- taso-verify -------------------------------------------------------------
# tests/data/resume.ini: some 2,600 candidate rows, a few seconds to verify
# on 2 ranks; decisions go to the file every 0.2 s instead of every 5 s.
job=$src/tests/data/resume.ini
echo "+ $mpiexec -n 2 $bin/taso-generate --job $job --out $tmp/c.h5"
if ! timeout 120 "$mpiexec" -n 2 "$bin/taso-generate" --job "$job" --out "$tmp/c.h5" >"$tmp/gen.out" 2>&1; then
  bad "generate $job"
  cat "$tmp/gen.out"
  exit 1
fi
resume_case verify decisions "decisions:row:verdict,reason substitutions:src+dst:verdict" \
  proved,unknown,refuted,unverified -- \
  env TASO_VERIFY_ROUND_SECONDS=0.2 "$mpiexec" -n 2 "$bin/taso-verify" --in "$tmp/c.h5"

# What the reruns say: they kept the rows of the killed runs and decided
# only the rest; the listing equals the uninterrupted run's, in order.
r2=$(sed -n 's/.*resuming .*: \([0-9]*\) of \([0-9]*\) rows already decided.*/\1 \2/p' "$tmp/verify-run2.out")
r3=$(sed -n 's/.*resuming .*: \([0-9]*\) of \([0-9]*\) rows already decided.*/\1 \2/p' "$tmp/verify-run3.out")
now=$(sed -n 's/.*(\([0-9]*\) decided now).*/\1/p' "$tmp/verify-run3.out")
read -r kept2 total <<<"${r2:-0 0}"
read -r kept3 _ <<<"${r3:-0 0}"
if [ "$kept2" -gt 0 ] && [ "$kept3" -gt "$kept2" ] && [ -n "$now" ] &&
  [ $((kept3 + now)) -eq "$total" ] && ! grep -q "starting afresh" "$tmp"/verify-run*.out; then
  ok "verify reruns resumed: $kept2, then $kept3 of $total rows kept, $now decided at the end"
else
  bad "verify reruns did not resume from the killed runs' rows"
  cat "$tmp"/verify-run*.out
fi
listing() { "$bin/taso-show" "$1" | sed -n '/^substitutions/,$p'; }
if [ -f "$tmp/verify.h5" ] && cmp -s <(listing "$tmp/verify-clean.h5") <(listing "$tmp/verify.h5"); then
  ok "taso-show lists the same substitutions"
else
  bad "taso-show listings differ"
fi
"$python" - "$tmp/verify-clean.h5" "$tmp/verify.h5" <<'EOF' && ok "/substitutions in the same order" || bad "/substitutions order"
import sys, h5py
a, b = (h5py.File(p, "r")["substitutions"][:] for p in sys.argv[1:])
assert (a["src"] == b["src"]).all() and (a["dst"] == b["dst"]).all() and (a["verdict"] == b["verdict"]).all()
EOF

# ---- taso-validate -----------------------------------------------------------
# To come when taso-validate streams its rows into validation.h5 and resumes
# from them: one resume_case with its dataset, key and fields, e.g.
#   resume_case validate cases "cases:case:verdict" proved,counterexamples,unknown -- \
#     "$mpiexec" -n 2 "$bin/taso-validate" --job "$src/jobs/smoke.ini"
# (a job with enough cases to be killed part-way), plus what its rerun says.

echo "$failed failed"
[ "$failed" -eq 0 ]
