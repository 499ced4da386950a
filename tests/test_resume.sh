#!/usr/bin/env bash
# Resume under faults: a stage is killed with SIGKILL part-way (every rank
# and mpiexec at once, as a crashed node would be), started again on the
# same output, killed again, and finished; the result must equal an
# uninterrupted run: no row lost, none duplicated, the same verdicts.
# Rows are watched in the file they stream into, OUT.resume (tests/resume.py),
# so a kill falls between or inside real writes, not at a hook of the tool.
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
n1=0
n2=0
ok() { echo "ok: $1"; }
bad() {
  echo "FAIL: $1"
  failed=$((failed + 1))
}
"$python" -c 'import h5py' 2>/dev/null || { echo "SKIP: $python has no h5py (python3-h5py)"; exit 77; }

# resume_case NAME DATASET SPECS ATTRS -- CMD...
#   CMD... --out FILE runs the stage; it streams rows into DATASET of
#   FILE.resume while it works, and writes FILE at the end. SPECS (space-separated DATASET:KEY:FIELD,FIELD; the
#   first one's dataset holds one row per unit of work in a finished file)
#   and ATTRS (A,B) say what must equal the uninterrupted run
#   (tests/resume.py compare). The runs on the killed file are:
#     1. killed once DATASET has a row
#     2. rerun, killed once DATASET has more rows than after 1
#     3. rerun, killed once DATASET has every row (while it finishes), if
#        it does not end first
#     4. rerun to the end
#   and their outputs are left in $tmp/NAME-run{1,2,3,4}.out; the rows in
#   the file after runs 1 and 2 in $n1 and $n2. On a loaded machine a
#   round of the stage can cover every row left, so that a kill comes too
#   late; then runs 1 and 2 are tried again, up to three times.
resume_case() {
  local name=$1 dataset=$2 specs=$3 attrs=$4
  shift 5
  local clean=$tmp/$name-clean.h5 file=$tmp/$name.h5 total rc attempt done=
  echo "+ $* --out $clean"
  if ! timeout 120 "$@" --out "$clean" >"$tmp/$name-clean.out" 2>&1; then
    bad "$name: the uninterrupted run failed"
    cat "$tmp/$name-clean.out"
    return
  fi
  total=$("$python" "$helper" rows "$clean" "${specs%%:*}")

  for attempt in 1 2 3; do
    rm -f "$file" "$file.resume" "$file.lock" "$file.tmp"
    echo "+ (killed once $dataset has a row) $* --out $file"
    "$python" "$helper" kill "$file.resume" "$dataset" 1 60 -- "$@" --out "$file" >"$tmp/$name-run1.out" 2>&1
    rc=$?
    n1=$("$python" "$helper" rows "$file.resume" "$dataset" 2>/dev/null || echo 0)
    if [ $rc -ne 0 ] || [ "$n1" -eq 0 ] || [ "$n1" -ge "$total" ]; then
      echo "note: attempt $attempt: not killed part-way (status $rc, $n1 of $total rows)"
      cat "$tmp/$name-run1.out"
      continue
    fi
    ok "$name killed part-way: $n1 of $total rows in the file"
    echo "+ (rerun, killed once $dataset has more rows) $* --out $file"
    "$python" "$helper" kill "$file.resume" "$dataset" $((n1 + 1)) 60 -- "$@" --out "$file" \
      >"$tmp/$name-run2.out" 2>&1
    rc=$?
    n2=$("$python" "$helper" rows "$file.resume" "$dataset" 2>/dev/null || echo 0)
    if [ $rc -ne 0 ] || [ "$n2" -le "$n1" ] || [ "$n2" -ge "$total" ]; then
      echo "note: attempt $attempt: rerun not killed part-way (status $rc, $n2 of $total rows)"
      cat "$tmp/$name-run2.out"
      continue
    fi
    ok "$name rerun killed part-way: $n2 of $total rows in the file"
    done=yes
    break
  done
  if [ -z "$done" ]; then
    bad "$name: no run was killed part-way in three attempts"
    return
  fi

  echo "+ (rerun, killed once $dataset has all $total rows) $* --out $file"
  "$python" "$helper" kill "$file.resume" "$dataset" "$total" 60 -- "$@" --out "$file" \
    >"$tmp/$name-run3.out" 2>&1
  case $? in
  0) ok "$name rerun killed while finishing" ;;
  3) echo "note: the rerun ended before it could be killed while finishing" ;;
  *) bad "$name: rerun 3" && cat "$tmp/$name-run3.out" ;;
  esac

  echo "+ $* --out $file"
  if ! timeout 120 "$@" --out "$file" >"$tmp/$name-run4.out" 2>&1; then
    bad "$name: the final rerun failed"
    cat "$tmp/$name-run4.out"
    return
  fi
  # shellcheck disable=SC2086 # SPECS is a list
  if "$python" "$helper" compare "$clean" "$file" --attrs "$attrs" $specs >"$tmp/cmp" 2>&1; then
    ok "$name after the kills equals the uninterrupted run: $(tr '\n' ';' <"$tmp/cmp")"
  else
    bad "$name after the kills differs from the uninterrupted run"
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

# What the reruns say: each kept every row the killed run had left in the
# file (none twice) and decided only the rest.
said() { sed -n 's/.*resuming .*: \([0-9]*\) of [0-9]* rows already decided.*/\1/p' "$tmp/verify-run$1.out"; }
now=$(sed -n 's/.*(\([0-9]*\) decided now).*/\1/p' "$tmp/verify-run4.out")
total=$("$python" "$helper" rows "$tmp/verify-clean.h5" decisions)
if [ "$(said 2)" = "$n1" ] && [ "$(said 3)" = "$n2" ] && [ -n "$now" ] &&
  [ $(($(said 4) + now)) -eq "$total" ]; then
  ok "verify reruns kept $(said 2), $(said 3) and $(said 4) of $total rows; $now decided at the end"
else
  bad "verify reruns did not resume from exactly the killed runs' rows (n1=$n1, n2=$n2)"
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
# Rows stream into /stream in rounds (TASO_VALIDATE_ROUND_SECONDS) and the
# finished file holds them in /checks, sorted by index; sizes {1,2,3} give
# 279,052 rows, a few seconds of checks: enough to be killed part-way.
resume_case validate stream \
  "checks:index:axiom,outcome,path,trees_differ,name,params,shapes" \
  combinations,proved,counterexamples,skipped,unknown -- \
  env TASO_VALIDATE_ROUND_SECONDS=0.2 "$mpiexec" -n 2 "$bin/taso-validate" \
  --axioms "$src/data/axioms" --sizes 1,2,3 --no-redundancy
vsaid() { sed -n 's/.*resuming .*: \([0-9]*\) of [0-9]* combinations already checked.*/\1/p' "$tmp/validate-run$1.out"; }
if [ -n "$(vsaid 2)" ] && [ "$(vsaid 2)" -gt 0 ] && [ -n "$(vsaid 3)" ] && [ "$(vsaid 3)" -ge "$(vsaid 2)" ]; then
  ok "validate reruns resumed from $(vsaid 2) and $(vsaid 3) checked combinations"
else
  bad "validate reruns did not say what they resumed from"
  cat "$tmp"/validate-run*.out
fi

echo "$failed failed"
[ "$failed" -eq 0 ]
