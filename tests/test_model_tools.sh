#!/usr/bin/env bash
# The model tools end to end (issue 13): taso-convert between built-in
# names, model .h5 files and .onnx files (checked by Debian's python3-onnx,
# read back by h5py), taso-show on each form, and bad input: an unknown
# model, a malformed model file, a truncated .h5, an output that is not
# ours, an output naming an input (every model tool). Every failure must be
# one "NAME: error:" line naming the problem.
#
# ctest provides TASO_SOURCE_DIR and TASO_BIN_DIR.
set -u
src=${TASO_SOURCE_DIR:?set TASO_SOURCE_DIR}
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR}
py=/usr/bin/python3 # Debian's, with python3-onnx and python3-h5py
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
  echo "FAIL: $1 (exit status $rc)"
  sed 's/^/  out: /' "$tmp/out"
  sed 's/^/  err: /' "$tmp/err"
}
check() { # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then ok "$what"; else not_ok "$what"; fi
}
run() { # echoed, so a failure can be repeated; 124 means a hang
  echo "+ $*"
  timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
out_has() { grep -q -e "$1" "$tmp/out"; }
succeeded() { [ "$rc" -eq 0 ]; }
failed_with() { # failed_with TOOL TEXT: one "TOOL: error:" line with TEXT
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -lt 128 ] &&
    [ "$(grep -c "^$1: error: .*$2" "$tmp/err")" -eq 1 ]
}

run "$bin/taso-convert" --help
check "taso-convert --help" eval 'succeeded && out_has "^Usage: taso-convert IN OUT"'
run "$bin/taso-convert" --list
check "taso-convert --list prints the eight built-in models" \
  eval 'succeeded && [ "$(cat "$tmp/out" | tr "\n" " ")" = "bert inception_v3 mobilenet_v2 nasnet_a nasrnn resnet50 resnext50 squeezenet " ]'

# ---- taso-show on built-in names ----------------------------------------------
run "$bin/taso-show" resnet50
check "taso-show resnet50: 52 conv2d, 16 ewadd, 16 relu, output 1x2048x7x7" \
  eval 'succeeded && out_has "^operators: ewadd 16 relu 16 conv2d 52$" && out_has "^output .*1x2048x7x7"'
run "$bin/taso-show" --graph squeezenet:size=64
check "taso-show --graph: one line per node, readable" \
  eval 'succeeded && out_has "^t[0-9]* = conv2d(s=2x2, pad=valid, x0, w1)  # 1x64x31x31" && out_has "^t[0-9]* = concat(1, t"'

# ---- conversions ----------------------------------------------------------------
run "$bin/taso-convert" squeezenet:size=64 "$tmp/s.h5"
check "taso-convert to a model .h5" eval 'succeeded && [ -f "$tmp/s.h5" ] && [ ! -e "$tmp/s.h5.tmp" ]'
run "$bin/taso-show" "$tmp/s.h5"
check "taso-show reads it back: kind, counts, operators" \
  eval 'succeeded && out_has ": taso-model$" && out_has "weight_values" && out_has "^operators: relu 26 conv2d 26 pool_avg 1 pool_max 3 concat 8 reshape 1$"'
run "$py" -c "
import h5py, sys
f = h5py.File('$tmp/s.h5', 'r')
assert f.attrs['kind'] == b'taso-model' or f.attrs['kind'] == 'taso-model'
assert f['weights'].dtype == 'float32' and f['weights'].shape[0] == f.attrs['weight_values']
assert f['tensors'].shape[0] == f['inputs'].shape[0]
print('h5py ok', f['weights'].shape)"
check "h5py reads the model file: float32 weights, one tensor row per input" succeeded
run "$bin/taso-convert" "$tmp/s.h5" "$tmp/s.onnx"
check "taso-convert .h5 -> .onnx" succeeded
run "$py" "$src/tests/onnx_check.py" "$tmp/s.onnx"
check "python3-onnx: check_model(full_check) and shape inference agree" succeeded
run "$bin/taso-convert" "$tmp/s.onnx" "$tmp/s2.h5"
check "taso-convert .onnx -> .h5" succeeded
run "$bin/taso-show" "$tmp/s2.h5"
check "the round trip keeps the convolutions and concats" \
  eval 'succeeded && out_has "conv2d 26" && out_has "concat 8" && out_has "^output .*1x1000"'

# ---- bad input ------------------------------------------------------------------
run "$bin/taso-show" resnet51
check "an unknown built-in name lists the known ones" failed_with taso-show "unknown model 'resnet51'.*resnet50"
run "$bin/taso-convert" resnet50:size=0 "$tmp/r.h5"
check "an impossible size is refused with the model file and line" failed_with taso-convert "resnet50.model:[0-9]*:"
mkdir -p "$tmp/data/models"
printf 'input x [1, 4, 8, 8]\ny = conv3d(x)\noutput y\n' >"$tmp/data/models/broken.model"
run env TASO_DATA_DIR="$tmp/data" "$bin/taso-show" broken
check "a malformed model file: file, line and the unknown operator" failed_with taso-show "broken.model:2:.*conv3d"
head -c 2000 "$tmp/s.h5" >"$tmp/cut.h5"
run "$bin/taso-show" "$tmp/cut.h5"
check "a truncated model file" failed_with taso-show "cut.h5"
echo "not mine" >"$tmp/keep.onnx"
run "$bin/taso-convert" squeezenet:size=64 "$tmp/keep.onnx"
check "an output that is not ours is refused and kept" \
  eval 'failed_with taso-convert "keep.onnx holds" && [ "$(cat "$tmp/keep.onnx")" = "not mine" ]'
run "$bin/taso-convert" --fresh squeezenet:size=64 "$tmp/keep.onnx"
check "--fresh does not replace a file of another kind (issue 32)" \
  eval 'failed_with taso-convert "keep.onnx holds a text file, not an ONNX model: never replaced" &&
  [ "$(cat "$tmp/keep.onnx")" = "not mine" ]'
run "$bin/taso-convert" squeezenet:size=32 "$tmp/mine.onnx"
run "$bin/taso-convert" nasrnn:hidden=64 "$tmp/mine.onnx"
check "an existing model is replaced only with --fresh" \
  eval 'failed_with taso-convert "mine.onnx exists (what looks like an ONNX model): not replacing it (--fresh replaces it)"'
run "$bin/taso-convert" --fresh nasrnn:hidden=64 "$tmp/mine.onnx"
check "--fresh replaces a model" succeeded
run "$bin/taso-convert" resnet50 "$tmp/r.txt"
check "an output that is neither .onnx nor .h5" failed_with taso-convert "must end in .onnx or .h5"
printf 'not a protobuf' >"$tmp/bad.onnx"
run "$bin/taso-convert" "$tmp/bad.onnx" "$tmp/b.h5"
check "a file that is no ONNX model" failed_with taso-convert "bad.onnx"

# a model text file by its path, with overrides as a built-in takes them
run "$bin/taso-show" "$src/tests/data/branches.model:blocks=2"
check "a .model file with overrides" eval 'succeeded && grep -q "^operators: conv2d 6 concat 2$" "$tmp/out"'
run "$bin/taso-show" "$tmp/nope.model"
check "a missing .model file is named" failed_with taso-show "nope.model"
run "$bin/taso-show" "$src/tests/data/branches.model:blockz=2"
check "an unknown parameter of a .model file" failed_with taso-show "branches.model: unknown parameter 'blockz'"

# ---- no tool writes over its inputs (issue 32 item 4) -------------------------
# One rule for every tool (src/io/replace.h): an output naming an input
# is refused before any work (status 2), even with --fresh; the file is
# left as it was.
run "$bin/taso-convert" squeezenet:size=32 "$tmp/sq.h5"
cp "$tmp/sq.h5" "$tmp/sq-copy.h5"
kept() { cmp -s "$tmp/sq.h5" "$tmp/sq-copy.h5"; }
run "$bin/taso-select" --model "$tmp/sq.h5" --out "$tmp/sq.h5" --estimate-costs --runs 0 --no-check
check "taso-select --out naming --model" eval 'failed_with taso-select "name one file" && kept'
printf "[measure]\nlock_dir = %s/locks\n" "$tmp" >"$tmp/m.ini"
run "$bin/taso-measure" --job "$tmp/m.ini" --model "$tmp/sq.h5" --db "$tmp/sq.h5" --fresh
check "taso-measure --db naming --model, even with --fresh" \
  eval '[ "$rc" -eq 2 ] && failed_with taso-measure "name one file" && kept'
run "$bin/taso-rules" --in "$tmp/sq.h5" --out "$tmp/sq.h5" --fresh
check "taso-rules --out naming one of --in" eval 'failed_with taso-rules "name one file" && kept'
run "$bin/taso-measure" --job "$tmp/m.ini" --model squeezenet:size=32 --db "$tmp/sq.h5" --fresh
check "taso-measure will not turn a model into a cost database, even with --fresh" \
  eval 'failed_with taso-measure "sq.h5 holds a taso-model artifact, not a taso-costs artifact: never replaced" && kept'
run "$bin/taso-convert" nasrnn:hidden=64 "$tmp/sq.h5"
check "taso-convert replaces an existing model only with --fresh" \
  eval 'failed_with taso-convert "sq.h5 exists (a taso-model artifact): not replacing it" && kept'
if [ -d /usr/share/libonnx-testdata/data/node ]; then
  cp "$tmp/mine.onnx" "$tmp/mine-copy.onnx"
  run "$bin/taso-conformance" --dir "$tmp" --markdown "$tmp/mine.onnx" --fresh
  check "taso-conformance --markdown will not write over an ONNX model" \
    eval '[ "$rc" -eq 2 ] && grep -q "mine.onnx holds what looks like an ONNX model, not a text file" "$tmp/err" &&
    cmp -s "$tmp/mine.onnx" "$tmp/mine-copy.onnx"'
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
