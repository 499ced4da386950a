#!/usr/bin/env bash
# End-to-end test of the executables on jobs/smoke.ini: help and version,
# the pipeline generate -> verify -> validate under mpiexec, the artifacts
# read back with taso-show, h5dump -A and h5py, and bad input, which must
# end with a non-zero status and a message naming the file, never a hang.
#
# ctest provides TASO_SOURCE_DIR, TASO_BIN_DIR and MPIEXEC; run by hand,
# set the first two and put mpiexec on PATH.
set -u

src=${TASO_SOURCE_DIR:?set TASO_SOURCE_DIR to the source tree}
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR to the bin folder of a build}
mpiexec=${MPIEXEC:-mpiexec}
job="$src/jobs/smoke.ini"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
rc=0

ok() {
  passed=$((passed + 1))
  echo "ok: $1"
}

not_ok() {
  failed=$((failed + 1))
  echo "FAIL: $1"
  echo "  exit status $rc; stdout:"
  sed 's/^/    /' "$tmp/out"
  echo "  stderr:"
  sed 's/^/    /' "$tmp/err"
}

check() { # check DESCRIPTION CONDITION...: CONDITION is a command
  local what=$1
  shift
  if "$@"; then ok "$what"; else not_ok "$what"; fi
}

# run CMD...: echoed, so that a failure can be repeated from the log;
# five minutes is far more than any of these needs, so 124 means a hang
# (a minute was not: the 4-rank validate took longer under the sanitizers
# on a loaded 2-core machine).
run() {
  echo "+ $*"
  timeout 300 "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

mpi() { # mpi N CMD...
  local n=$1
  shift
  run "$mpiexec" -n "$n" "$@"
}

out_has() { grep -q -e "$1" "$tmp/out"; }
err_has() { grep -q -e "$1" "$tmp/err"; }
succeeded() { [ "$rc" -eq 0 ]; }

# A failure the tool itself reported: not a hang, not a crash, and one
# "NAME: error:" line that names what was wrong.
failed_with() { # failed_with TOOL TEXT
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -lt 128 ] &&
    [ "$(grep -c "^$1: error: .*$2" "$tmp/err")" -eq 1 ]
}

tools="taso-generate taso-verify taso-validate taso-show"

# ---- help and version ------------------------------------------------------

for t in $tools; do
  run "$bin/$t" --help
  check "$t --help" eval 'succeeded && out_has "^Usage: $t"'
  run "$bin/$t" --version
  check "$t --version" eval 'succeeded && out_has "^$t (taso) [0-9.]*, git [0-9a-z-]*$"'
done
mpi 2 "$bin/taso-generate" --help
check "--help on 2 ranks prints once" eval 'succeeded && [ "$(grep -c "^Usage:" "$tmp/out")" -eq 1 ]'
run "$bin/taso-verify" --help
check "taso-verify --help describes the verdicts" out_has "proved, unknown"
run "$bin/taso-validate" --help
check "taso-validate --help describes the checks" out_has "Redundancy: for each axiom"

# ---- the pipeline ----------------------------------------------------------

mpi 4 "$bin/taso-generate" --job "$job" --out "$tmp/c.h5"
check "generate on 4 ranks" eval 'succeeded &&
  out_has "^taso-generate: [0-9]* graphs, [0-9]* candidate pairs, [0-9]* substitutions -> .*c.h5 (.* s, 4 ranks)$"'
# No --job: verify continues the job recorded in the candidates file.
mpi 2 "$bin/taso-verify" --in "$tmp/c.h5" --out "$tmp/s.h5"
check "verify on 2 ranks" eval 'succeeded && out_has "^taso-verify: [0-9]* candidates: .* -> .*s.h5 (.*, 2 ranks)$"'
# (under sanitizers without its redundancy phase, which took 55 s there:
# the runs below and test_redundancy_lib check that phase)
redundancy=(--redundancy A0,A1 --redundancy-rlimit 200000)
[ "${TASO_TEST_SANITIZED:-0}" = 1 ] && redundancy=(--no-redundancy)
mpi 4 "$bin/taso-validate" --job "$job" --out "$tmp/v.h5" "${redundancy[@]}"
check "validate on 4 ranks" eval 'succeeded && out_has "^taso-validate: .* -> .*v.h5 (.*, 4 ranks)$"'
# killed during the redundancy phase: the next run says it does that phase
# again (issue 32 item 8), and finishes
echo "+ TASO_VALIDATE_STOP_IN_REDUNDANCY=1"
TASO_VALIDATE_STOP_IN_REDUNDANCY=1 mpi 2 "$bin/taso-validate" --job "$job" --out "$tmp/vr.h5" \
  --redundancy A0,A1 --redundancy-rlimit 200000 --sizes 1
# ... and a redundancy query whose process crashes (as Z3 out of memory
# can: TASO_VALIDATE_CRASH_TASK) is undecided, saying why; the run goes on
echo "+ TASO_VALIDATE_CRASH_TASK=0"
TASO_VALIDATE_CRASH_TASK=0 mpi 2 "$bin/taso-validate" --job "$job" --out "$tmp/vr.h5" \
  --redundancy A0,A1 --redundancy-rlimit 200000 --sizes 1
check "validate killed in the redundancy phase says it does it again" eval 'succeeded &&
  out_has "the redundancy phase did not finish before the run stopped: it runs again"'
check "a crashed redundancy query is undecided, saying why" \
  out_has "undecided: Z3 failed: its query process was killed by signal 11"

declare -A kind=([c]=taso-candidates [s]=taso-substitutions [v]=taso-validation)
declare -A ranks=([c]=4 [s]=2 [v]=4)
declare -A counts=(
  [c]="graphs_enumerated candidate_pairs substitutions"
  [s]="proved unknown refuted"
  [v]="combinations proved counterexamples skipped unknown redundancy_entailed
       redundancy_independent redundancy_undecided")

for f in c s v; do
  run "$bin/taso-show" "$tmp/$f.h5"
  check "taso-show $f.h5" eval 'succeeded && out_has "^$tmp/$f.h5: ${kind[$f]}$" &&
    out_has "^  run  *${ranks[$f]} ranks"'
  for c in ${counts[$f]}; do
    check "taso-show $f.h5 shows $c" out_has "counts .* $c [0-9]"
  done

  run h5dump -A "$tmp/$f.h5"
  check "h5dump -A $f.h5" eval 'succeeded && out_has "ATTRIBUTE \"kind\"" &&
    out_has "\"${kind[$f]}\"" && grep -A4 "ATTRIBUTE \"ranks\"" "$tmp/out" | grep -q "(0): ${ranks[$f]}$"'
  for c in ${counts[$f]}; do
    check "h5dump -A $f.h5 has $c" eval 'grep -A4 "ATTRIBUTE \"$c\"" "$tmp/out" | grep -q "(0): [0-9]*$"'
  done
done
run "$bin/taso-show" "$tmp/c.h5"
check "taso-show lists the smoke job's inputs" eval 'out_has "^inputs (6)$" && out_has "^  x1  *2x4$" &&
  out_has "^  i1  *1x2x3x3$" && out_has "^substitutions ([1-9][0-9]*)$"'

# The system python may have h5py where the python first on PATH has not.
python=
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import h5py' 2>/dev/null; then
    python=$p
    break
  fi
done
if [ -n "$python" ]; then
  run "$python" - "$tmp" <<'EOF'
import sys, h5py
d = sys.argv[1]
with h5py.File(d + "/c.h5", "r") as f:
    a = f.attrs
    assert a["kind"] in (b"taso-candidates", "taso-candidates"), a["kind"]
    assert int(a["ranks"]) == 4 and int(a["graphs_enumerated"]) > int(a["substitutions"])
    n = int(a["substitutions"])
    assert n > 0 and len(f["substitutions"]) == n
    assert len(f["graphs/fingerprint"]) == len(f["graphs/index"]) == 2 * n
    text = a["job_text"]
    assert "[job]" in (text.decode() if isinstance(text, bytes) else text)
    assert len(f["inputs"]) == 6
with h5py.File(d + "/v.h5", "r") as f:
    red = f["redundancy"] if "redundancy" in f else []  # none under --no-redundancy
    assert int(f.attrs["redundant_axioms"]) == sum(1 for r in red if r["verdict"] == 1)
    for name, v in (("entailed", 1), ("independent", -1), ("undecided", 0)):
        assert int(f.attrs["redundancy_" + name]) == sum(1 for r in red if r["verdict"] == v)
    assert int(f.attrs["combinations"]) == len(f["checks"]) == sum(f["axioms"]["combinations"])
    assert int(f.attrs["counterexamples"]) == 0 and int(f.attrs["unknown"]) == 0
print("h5py read the attributes")
EOF
  check "h5py reads the attributes" succeeded
else
  echo "skip: no python3 with h5py; the h5py check did not run"
fi

# Results must not depend on the rank count: the same listing from 1 rank.
echo "+ TASO_PROGRESS_SECONDS=0"
TASO_PROGRESS_SECONDS=0 mpi 1 "$bin/taso-generate" --job "$job" --out "$tmp/c1.h5"
# progress from the start: the count pass says it begins, and how far it
# is (issue 32 item 8)
check "generate shows its count pass from the start" eval 'succeeded &&
  head -1 "$tmp/out" | grep -q "^counting the graphs of up to" &&
  err_has "operators at the root counted ([0-9.]*%)"'
"$bin/taso-show" --graphs "$tmp/c.h5" | sed -n '/^inputs/,$p' >"$tmp/show4"
"$bin/taso-show" --graphs "$tmp/c1.h5" | sed -n '/^inputs/,$p' >"$tmp/show1"
check "1 and 4 ranks give the same candidates" cmp -s "$tmp/show1" "$tmp/show4"

# ---- bad input -------------------------------------------------------------

mpi 4 "$bin/taso-generate" --job "$tmp/missing.ini" --out "$tmp/x.h5"
check "missing job file" failed_with taso-generate "missing.ini"

printf '[job]\nname = bad\nthis is not ini\n' >"$tmp/bad.ini"
mpi 4 "$bin/taso-generate" --job "$tmp/bad.ini" --out "$tmp/x.h5"
check "malformed job file" failed_with taso-generate "bad.ini:3"
mpi 2 "$bin/taso-validate" --job "$tmp/bad.ini" --out "$tmp/x.h5"
check "malformed job file (validate)" failed_with taso-validate "bad.ini:3"

run "$bin/taso-generate" --frobnicate --job "$job"
check "unknown option: status 2, one line" eval '[ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
  failed_with taso-generate "unknown option .--frobnicate."'
mpi 2 "$bin/taso-verify" --frobnicate
check "unknown option on 2 ranks" failed_with taso-verify "unknown option .--frobnicate."
run "$bin/taso-generate" --out "$tmp/x.h5"
check "no --job: status 2" eval '[ "$rc" -eq 2 ] && failed_with taso-generate "--job FILE is required"'
run "$bin/taso-generate" --job
check "--job without a value: status 2" eval '[ "$rc" -eq 2 ] && failed_with taso-generate "needs a value"'
run "$bin/taso-generate" --job "$job" --threads many
check "bad --threads: status 2" eval '[ "$rc" -eq 2 ] && failed_with taso-generate "many"'

mpi 2 "$bin/taso-verify" --in "$tmp/nope.h5" --out "$tmp/x.h5"
check "missing --in file" failed_with taso-verify "nope.h5"
run "$bin/taso-show" "$tmp/nope.h5"
check "taso-show of a missing file" failed_with taso-show "nope.h5"

head -c 1000 "$tmp/c.h5" >"$tmp/trunc.h5"
mpi 2 "$bin/taso-verify" --in "$tmp/trunc.h5" --out "$tmp/x.h5"
check "truncated HDF5 file" failed_with taso-verify "trunc.h5"
run "$bin/taso-show" "$tmp/trunc.h5"
check "taso-show of a truncated file" failed_with taso-show "trunc.h5"

if [ -n "$python" ]; then
  "$python" -c 'import sys, h5py; h5py.File(sys.argv[1], "w")["data"] = [1, 2, 3]' "$tmp/foreign.h5"
elif command -v h5mkgrp >/dev/null; then
  h5mkgrp "$tmp/foreign.h5" /group
fi
if [ -f "$tmp/foreign.h5" ]; then
  mpi 2 "$bin/taso-verify" --in "$tmp/foreign.h5" --out "$tmp/x.h5"
  check "foreign HDF5 file" failed_with taso-verify "foreign.h5"
  run "$bin/taso-show" "$tmp/foreign.h5"
  check "taso-show of a foreign file" failed_with taso-show "foreign.h5"
else
  echo "skip: neither h5py nor h5mkgrp can write a foreign HDF5 file"
fi

mpi 2 "$bin/taso-verify" --in "$tmp/v.h5" --out "$tmp/x.h5"
check "artifact of the wrong kind" failed_with taso-verify "v.h5"


mpi 2 "$bin/taso-show" "$tmp/c.h5"
check "taso-show refuses more than one rank" failed_with taso-show "one rank"

# An empty job file names nothing to run: generate refuses it; verify and
# validate, whose settings have defaults, state the ones they used.
printf '# nothing here\n' >"$tmp/empty.ini"
mpi 2 "$bin/taso-generate" --job "$tmp/empty.ini" --out "$tmp/x.h5"
check "empty job file: generate refuses it" failed_with taso-generate "empty.ini: no \[inputs\]"
sed '/^\[inputs\]/,/^$/d' "$job" >"$tmp/noinputs.ini"
mpi 2 "$bin/taso-generate" --job "$tmp/noinputs.ini" --out "$tmp/x.h5"
check "job file without inputs: generate refuses it" failed_with taso-generate "no \[inputs\]"
printf '[inputs]\nx = 2x2\n' >"$tmp/noops.ini"
mpi 2 "$bin/taso-generate" --job "$tmp/noops.ini" --out "$tmp/x.h5"
check "job file without operators: generate refuses it" failed_with taso-generate "no \[generate\] operators"
cd "$src" # where the default axiom folder, data/axioms, is
# Without --job, verify uses the job as the candidates file recorded it:
# not the file as edited since, and not a file that has gone.
cp "$job" "$tmp/gone.ini"
mpi 2 "$bin/taso-generate" --job "$tmp/gone.ini" --out "$tmp/c-gone.h5"
printf '# edited after generating\n' >>"$tmp/gone.ini"
mpi 2 "$bin/taso-verify" --in "$tmp/c-gone.h5" --out "$tmp/s-edited.h5"
check "edited job file: verify uses the recorded job" eval 'succeeded &&
  h5dump -a job_text "$tmp/s-edited.h5" | grep -q "\[verify\]" &&
  ! h5dump -a job_text "$tmp/s-edited.h5" | grep -q "edited after"'
rm "$tmp/gone.ini"
mpi 2 "$bin/taso-verify" --in "$tmp/c-gone.h5" --out "$tmp/s-gone.h5"
check "recorded job file gone: verify uses the recorded job" succeeded
# No candidates at all (one input, one operator) is a valid run with an
# empty output, on 1 and 2 ranks alike (issue 32 item 5).
printf '[inputs]\nx1 = 2x4\n[generate]\nmax_ops = 1\noperators = relu\n' >"$tmp/none.ini"
mpi 2 "$bin/taso-generate" --job "$tmp/none.ini" --out "$tmp/c-none.h5"
for n in 1 2; do
  mpi $n "$bin/taso-verify" --in "$tmp/c-none.h5" --out "$tmp/s-none$n.h5"
  check "no candidates: verify on $n ranks writes an empty result" eval 'succeeded &&
    out_has "0 candidates: 0 proved" && [ "$(h5dump -a proved "$tmp/s-none$n.h5" | grep -c "(0): 0")" = 1 ]'
done
mpi 2 "$bin/taso-verify" --job "$tmp/empty.ini" --in "$tmp/c.h5" --out "$tmp/e.h5"
check "empty job file: verify states its defaults" eval 'succeeded &&
  out_has "^taso-verify: job defaults used: \[job\] seed = 1, \[verify\] axioms = data/axioms, \[verify\] timeout = 5, \[verify\] rlimit = [0-9]*, \[verify\] memory_mb = [0-9]*$"'
mpi 2 "$bin/taso-validate" --job "$tmp/empty.ini" --sizes 1 --no-redundancy --out "$tmp/ev.h5"
check "empty job file: validate states its defaults (not --sizes)" eval 'succeeded &&
  out_has "^taso-validate: job defaults used: \[validate\] timeout = 10, .*\[verify\] axioms = data/axioms$" &&
  ! out_has "job defaults used: .*sizes"'
mpi 2 "$bin/taso-verify" --job "$job" --in "$tmp/c.h5" --out "$tmp/e2.h5"
check "a job that sets everything: no defaults line" eval 'succeeded && ! out_has "job defaults used"'
cd - >/dev/null

# taso-show on ONNX models (issue 13): what the model holds and whether
# taso imports it; a file that is no model is an error naming it.
node=/usr/share/libonnx-testdata/data/node
if [ -d "$node" ]; then
  run "$bin/taso-show" "$node/test_conv_with_strides_padding/model.onnx"
  check "taso-show: an importable ONNX model" eval 'succeeded && out_has "opset 11" &&
    out_has "^operators: Conv 1$" && out_has "^import: every node is supported$"'
  run "$bin/taso-show" "$node/test_lstm_defaults/model.onnx"
  check "taso-show: an ONNX model with an unsupported node" eval 'succeeded &&
    out_has "^import: .*1 of 1 nodes not supported: unnamed (LSTM, opset 14: not an operator taso imports)$"'
else
  echo "skip: $node not found (libonnx-testdata): ONNX models not shown"
fi
head -c 100 "$job" >"$tmp/bad.onnx"
run "$bin/taso-show" "$tmp/bad.onnx"
check "taso-show: a file that is no ONNX model" failed_with taso-show "bad.onnx: not an ONNX model"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
