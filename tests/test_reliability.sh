#!/usr/bin/env bash
# The tools' outputs under a hostile user (issue 18), on 2 ranks with the
# real mpiexec: a full disk, two runs on one --out, --out pointing at the
# wrong file, a missing output folder. Every failure must end every rank at
# once (no hang, no crash) with one "NAME: error:" line naming the file and
# the reason, and leave the files that were there as they were.
#
# Every tool runs under timeout, so a hang is a failure (status 124), not a
# stuck test. Full disks are real: small tmpfs mounts (root only); where
# mounting is not allowed those cases are skipped and say so.
#
# ctest provides TASO_SOURCE_DIR, TASO_BIN_DIR and MPIEXEC.
set -u
src=${TASO_SOURCE_DIR:?set TASO_SOURCE_DIR}
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR}
mpiexec=${MPIEXEC:-mpiexec}
job=$src/jobs/smoke.ini
rjob=$src/tests/data/resume.ini
tmp=$(mktemp -d)
mounts=()
cleanup() {
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
limit=${TASO_TEST_LIMIT:-120} # seconds; far more than any run here needs
failed=0
rc=0
ok() { echo "ok: $1"; }
bad() {
  echo "FAIL: $1"
  failed=$((failed + 1))
  echo "  exit status $rc; stdout:"
  sed 's/^/    /' "$tmp/out"
  echo "  stderr:"
  sed 's/^/    /' "$tmp/err"
}
check() { # check DESCRIPTION CONDITION...
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
run() { # echoed, so that a failure can be repeated from the log
  echo "+ $*"
  timeout "$limit" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
mpi() { run "$mpiexec" -n 2 "$@"; }
out_has() { grep -q -e "$1" "$tmp/out"; }
err_has() { grep -q -e "$1" "$tmp/err"; }
succeeded() { [ "$rc" -eq 0 ]; }
# A failure the tool reported: status 1 (no hang: 124, no crash: >= 128),
# one "TOOL: error:" line matching TEXT, and no HDF5 error stack.
failed_with() { # failed_with TOOL TEXT
  [ "$rc" -eq 1 ] && [ "$(grep -c "^$1: error: .*$2" "$tmp/err")" -eq 1 ] &&
    [ "$(grep -c "^$1: error:" "$tmp/err")" -eq 1 ] && ! grep -q "HDF5-DIAG" "$tmp/err"
}
same() { cmp -s "$1" "$2"; } # same FILE COPY: left as it was
no_leftovers() { # no OUT.tmp, no OUT.lock
  [ ! -e "$1.tmp" ] && [ ! -e "$1.lock" ]
}
listing() { timeout "$limit" "$bin/taso-show" "$1" | sed -n '/^substitutions/,$p'; }

# can_mount: whether this process may mount a tmpfs (root, not a locked-down
# container); the full-disk cases need it.
can_mount=
mkdir -p "$tmp/probe"
if mount -t tmpfs -o size=64k tmpfs "$tmp/probe" 2>/dev/null; then
  umount "$tmp/probe"
  can_mount=yes
fi
tmpfs() { # tmpfs DIR SIZE
  mkdir -p "$1"
  mount -t tmpfs -o "size=$2" tmpfs "$1" && mounts+=("$1")
}
fill() { # fill DIR KIB: leaves KIB KiB free on DIR's file system
  local avail
  avail=$(df -B1 --output=avail "$1" | tail -1)
  timeout "$limit" fallocate -l $((avail - $2 * 1024)) "$1/filler"
}

# ---- the files the cases work on ---------------------------------------------

mpi "$bin/taso-generate" --job "$job" --out "$tmp/c.h5"
succeeded || { bad "generate $job"; exit 1; }
mpi "$bin/taso-verify" --in "$tmp/c.h5" --out "$tmp/s.h5"
succeeded || { bad "verify"; exit 1; }
mpi "$bin/taso-validate" --sizes 1 --no-redundancy --out "$tmp/v.h5"
succeeded || { bad "validate"; exit 1; }
mpi "$bin/taso-generate" --job "$rjob" --out "$tmp/rc.h5"
succeeded || { bad "generate $rjob"; exit 1; }
rows=$(timeout "$limit" "$bin/taso-show" "$tmp/rc.h5" | sed -n 's/^substitutions (\([0-9]*\))$/\1/p')
mkdir "$tmp/keep"
cp "$tmp/c.h5" "$tmp/s.h5" "$tmp/v.h5" "$tmp/keep/"
check "finished runs leave no OUT.tmp or OUT.lock" eval 'no_leftovers "$tmp/c.h5" && no_leftovers "$tmp/s.h5" &&
  no_leftovers "$tmp/v.h5" && [ ! -e "$tmp/s.h5.resume" ] && [ ! -e "$tmp/v.h5.resume" ]'

# ---- output paths are checked before the work (issue 18, item 5) -------------

mpi "$bin/taso-generate" --job "$job" --out "$tmp/missing/c.h5"
check "generate: a missing output folder is refused before the enumeration" eval \
  'failed_with taso-generate "missing/c.h5: the output folder .*missing: No such file" && ! out_has enumerating'
mpi "$bin/taso-verify" --in "$tmp/c.h5" --out "$tmp/missing/s.h5"
check "verify: a missing output folder is refused before the work" eval \
  'failed_with taso-verify "missing/s.h5: the output folder" && ! out_has "axioms and lemmas"'
mpi "$bin/taso-validate" --sizes 1 --no-redundancy --out "$tmp/missing/v.h5"
check "validate: a missing output folder is refused before the work" eval \
  'failed_with taso-validate "missing/v.h5: the output folder" && ! out_has combinations'
if [ -n "$can_mount" ]; then
  mkdir -p "$tmp/ro"
  mount -t tmpfs -o size=64k,ro tmpfs "$tmp/ro" && mounts+=("$tmp/ro")
  mpi "$bin/taso-generate" --job "$job" --out "$tmp/ro/c.h5"
  check "generate: a read-only output folder is refused before the enumeration" eval \
    'failed_with taso-generate "ro/c.h5: cannot write in the output folder .*Read-only file system" &&
     ! out_has enumerating'
else
  echo "skip: cannot mount a tmpfs here (not root?): no read-only folder case"
fi

# ---- nothing is replaced that is not the stage's own (item 2) ----------------

mpi "$bin/taso-generate" --job "$job" --out "$tmp/s.h5"
check "generate will not replace a substitutions file" eval \
  'failed_with taso-generate "s.h5 holds a taso-substitutions artifact.*--fresh" && same "$tmp/s.h5" "$tmp/keep/s.h5"'
mpi "$bin/taso-validate" --sizes 1 --no-redundancy --out "$tmp/c.h5"
check "validate will not replace a candidates file" eval \
  'failed_with taso-validate "c.h5 holds a taso-candidates artifact" && same "$tmp/c.h5" "$tmp/keep/c.h5"'
mpi "$bin/taso-verify" --in "$tmp/c.h5" --out "$tmp/v.h5"
check "verify will not replace a validation file" eval \
  'failed_with taso-verify "v.h5 holds a taso-validation artifact" && same "$tmp/v.h5" "$tmp/keep/v.h5"'
mpi "$bin/taso-verify" --in "$tmp/c.h5" --out "$tmp/c.h5" --fresh
check "verify will not replace its own input, even with --fresh" eval \
  'failed_with taso-verify "c.h5: is this run.s input" && same "$tmp/c.h5" "$tmp/keep/c.h5"'
cp "$job" "$tmp/job.ini"
mpi "$bin/taso-generate" --job "$tmp/job.ini" --out "$tmp/job.ini"
check "generate will not write over its own job file" eval \
  'failed_with taso-generate "job.ini: is this run.s job file" && same "$tmp/job.ini" "$job"'
printf 'notes that matter\n' >"$tmp/notes.txt"
cp "$tmp/notes.txt" "$tmp/keep/"
mpi "$bin/taso-verify" --in "$tmp/c.h5" --out "$tmp/notes.txt"
check "verify will not turn a text file into HDF5" eval \
  'failed_with taso-verify "notes.txt holds a text file, not HDF5, not a taso-substitutions artifact: never replaced" &&
   same "$tmp/notes.txt" "$tmp/keep/notes.txt"'
mpi "$bin/taso-validate" --sizes 1,2 --no-redundancy --out "$tmp/v.h5"
check "validate will not replace a complete file of another plan" eval \
  'failed_with taso-validate "v.h5 holds the validation of another plan" && same "$tmp/v.h5" "$tmp/keep/v.h5"'
cp "$job" "$tmp/other.ini"
echo "# another job" >>"$tmp/other.ini"
mpi "$bin/taso-generate" --job "$tmp/other.ini" --out "$tmp/c.h5"
check "generate will not replace another job's candidates" eval \
  'failed_with taso-generate "c.h5 holds the candidates of another job" && same "$tmp/c.h5" "$tmp/keep/c.h5"'
head -c 2000 "$tmp/c.h5" >"$tmp/trunc.h5"
mpi "$bin/taso-verify" --in "$tmp/trunc.h5" --out "$tmp/s.h5"
check "a malformed --in leaves --out as it was" eval \
  'failed_with taso-verify "trunc.h5" && same "$tmp/s.h5" "$tmp/keep/s.h5"'

cp "$tmp/v.h5" "$tmp/v2.h5"
mpi "$bin/taso-validate" --sizes 1,2 --no-redundancy --out "$tmp/v2.h5" --fresh
check "--fresh replaces another plan's file" eval 'succeeded && out_has "^taso-validate: 56250 combinations"'
cp "$tmp/s.h5" "$tmp/s2.h5"
mpi "$bin/taso-generate" --job "$job" --out "$tmp/s2.h5" --fresh
check "--fresh does not replace another kind of file (issue 32)" eval \
  'failed_with taso-generate "s2.h5 holds a taso-substitutions artifact, not a taso-candidates artifact: never replaced, even with --fresh" &&
   same "$tmp/s2.h5" "$tmp/s.h5"'
mpi "$bin/taso-verify" --in "$tmp/c.h5" --out "$tmp/notes.txt" --fresh
check "--fresh does not turn a text file into HDF5" eval \
  'failed_with taso-verify "notes.txt holds a text file" && same "$tmp/notes.txt" "$tmp/keep/notes.txt"'

# ---- one run per --out: the lock (item 1) ------------------------------------

# lock_case NAME N OUT -- CMD...: a run on OUT in the background; once it
# holds OUT.lock, a second one on OUT must be refused, naming the holder,
# and the first must end well.
lock_case() {
  local name=$1 n=$2 out=$3 first rc1
  shift 4
  echo "+ (in the background) $mpiexec -n $n $* --out $out"
  timeout "$limit" "$mpiexec" -n "$n" "$@" --out "$out" >"$tmp/first.out" 2>"$tmp/first.err" &
  first=$!
  timeout 60 bash -c "while [ ! -s '$out.lock' ]; do sleep 0.05; done"
  run "$mpiexec" -n "$n" "$@" --out "$out"
  local refused=no
  failed_with "${name%% *}" "$(basename "$out"): in use by another run (host .*, pid [0-9]*" && refused=yes
  kill -0 "$first" 2>/dev/null || echo "note: the first run ended before the second was refused"
  wait "$first"
  rc1=$?
  check "$name on $n rank(s): a second run on the same --out is refused at once" [ $refused = yes ]
  rc=$rc1
  cp "$tmp/first.out" "$tmp/out"
  cp "$tmp/first.err" "$tmp/err"
  check "$name on $n rank(s): the first run ends well and releases the lock" eval \
    'succeeded && no_leftovers "$out" && timeout $limit "$bin/taso-show" "$out" >/dev/null'
}
mkdir "$tmp/lock"
lock_case "taso-validate" 2 "$tmp/lock/v.h5" -- "$bin/taso-validate" --sizes 1,2,3 --no-redundancy
lock_case "taso-verify" 2 "$tmp/lock/s2.h5" -- "$bin/taso-verify" --in "$tmp/rc.h5"
lock_case "taso-verify" 1 "$tmp/lock/s1.h5" -- "$bin/taso-verify" --in "$tmp/rc.h5"

printf 'host gone, pid 999999, since 2020-01-01T00:00:00Z\n' >"$tmp/stale.h5.lock"
mpi "$bin/taso-generate" --job "$job" --out "$tmp/stale.h5"
check "a lock left by a dead process does not stop a run" eval 'succeeded && no_leftovers "$tmp/stale.h5"'

# ---- a full disk (item 1; items 2's atomic outputs and resume) ---------------

if [ -z "$can_mount" ]; then
  echo "skip: cannot mount a tmpfs here (not root?): no full-disk cases"
else
  # Rows stream into OUT.resume until the disk is full (a round every
  # 0.2 s); with room again, the rerun finishes with the clean run's
  # result. OUT.resume's /stream is a slot table made whole at the start,
  # so wherever the disk filled up the rerun can read it: it resumes from
  # the rows marked before (none if the first round did not fit), and
  # never has to start afresh. Uncompressed, the stream of sizes {1,2,3}
  # takes some 220 MB.
  summary() { sed -n 's/^taso-validate: \([0-9]* combinations: .*\) -> .*/\1/p' "$tmp/out"; }
  mpi "$bin/taso-validate" --sizes 1,2,3 --no-redundancy --out "$tmp/v123.h5"
  clean=$(summary)
  tmpfs "$tmp/small" 2m
  echo "+ TASO_VALIDATE_ROUND_SECONDS=0.2"
  TASO_VALIDATE_ROUND_SECONDS=0.2 mpi "$bin/taso-validate" --sizes 1,2,3 --no-redundancy \
    --out "$tmp/small/validation.h5"
  check "validate on a full disk: every rank stops, one line with the reason" \
    failed_with taso-validate "validation.h5.*: cannot write: No space left on device"
  mount -o remount,size=320m "$tmp/small"
  mpi "$bin/taso-validate" --sizes 1,2,3 --no-redundancy --out "$tmp/small/validation.h5"
  check "validate with room again reads what it left (never starts afresh) and ends with the clean result" eval \
    '! err_has "cannot be resumed" && [ -n "$clean" ] && [ "$(summary)" = "$clean" ] &&
     no_leftovers "$tmp/small/validation.h5"'
  if out_has "resuming .*validation.h5.resume"; then
    echo "  (resumed from the rows marked before the disk was full)"
  else
    echo "  (the disk filled in the first round: nothing was marked)"
  fi

  # A second full-disk run from scratch, verify streaming its decisions
  # (its result on rc.h5 is about 50 KB: the disk is smaller).
  tmpfs "$tmp/tiny" 32k
  mpi "$bin/taso-verify" --in "$tmp/rc.h5" --out "$tmp/tiny/s.h5"
  check "verify on a full disk: every rank stops, one line with the reason" \
    failed_with taso-verify "s.h5.*No space left on device"

  # A new file over an existing one on a nearly full disk: the old one stays.
  tmpfs "$tmp/full" 4m
  mpi "$bin/taso-generate" --job "$job" --out "$tmp/full/c.h5"
  cp "$tmp/full/c.h5" "$tmp/keep/full-c.h5"
  fill "$tmp/full" 16
  mpi "$bin/taso-generate" --job "$job" --out "$tmp/full/c.h5"
  check "generate over a file on a full disk fails cleanly and leaves the old file" eval \
    'failed_with taso-generate "c.h5.*No space left on device" && same "$tmp/full/c.h5" "$tmp/keep/full-c.h5" &&
     no_leftovers "$tmp/full/c.h5"'
  rm -f "$tmp/full/filler"

  # The disk fills while verify writes its result: every decision is in
  # OUT.resume, and the rerun, with room again, decides nothing again.
  mpi "$bin/taso-verify" --in "$tmp/rc.h5" --out "$tmp/rs-clean.h5"
  tmpfs "$tmp/final" 8m
  echo "+ TASO_VERIFY_STOP_AFTER=$rows (killed once every row is decided, before the result is written)"
  TASO_VERIFY_STOP_AFTER=$rows timeout "$limit" "$mpiexec" -n 2 "$bin/taso-verify" --in "$tmp/rc.h5" \
    --out "$tmp/final/s.h5" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check "verify killed with every row decided" eval '[ $rc -ne 0 ] && [ -s "$tmp/final/s.h5.resume" ]'
  fill "$tmp/final" 16
  mpi "$bin/taso-verify" --in "$tmp/rc.h5" --out "$tmp/final/s.h5"
  check "verify: the disk fills while the result is written; one line with the reason" eval \
    'failed_with taso-verify "s.h5.*No space left on device" && [ ! -e "$tmp/final/s.h5" ] &&
     [ -s "$tmp/final/s.h5.resume" ]'
  rm -f "$tmp/final/filler"
  mpi "$bin/taso-verify" --in "$tmp/rc.h5" --out "$tmp/final/s.h5"
  check "verify with room again resumes from every decided row" eval \
    'succeeded && out_has "resuming .*: $rows of $rows rows already decided" && out_has "(0 decided now)" &&
     no_leftovers "$tmp/final/s.h5" && [ ! -e "$tmp/final/s.h5.resume" ]'
  check "the resumed result equals an uninterrupted run" eval \
    'cmp -s <(listing "$tmp/rs-clean.h5") <(listing "$tmp/final/s.h5")'
fi

echo "$failed failed"
[ "$failed" -eq 0 ]
