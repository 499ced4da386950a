#!/usr/bin/env bash
# taso-run end to end on a small built-in model (squeezenet at 32x32): the cpu backend agrees
# with outputs the reference backend saved; --compare; fallback-free plan
# listing; one clear error line (and the right exit status) for bad input.
set -uo pipefail
run=${TASO_BIN_DIR:?}/taso-run
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { # check WHAT EXPECTED_STATUS COMMAND...: status and, on error, one stderr line
  local what=$1 want=$2
  shift 2
  "$@" >"$dir/out" 2>"$dir/err"
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL $what: exit $got, expected $want"; cat "$dir/out" "$dir/err"; fail=1
  elif [ "$want" != 0 ] && [ "$(grep -c 'error:' "$dir/err")" != 1 ]; then
    echo "FAIL $what: expected one error line"; cat "$dir/err"; fail=1
  else
    echo "ok   $what"
  fi
}

tiny=squeezenet:size=32
mkdir -p "$dir/ref" "$dir/in"
check "reference saves outputs" 0 "$run" --model $tiny --backend reference --runs 0 --save "$dir/ref"
check "cpu agrees with reference" 0 "$run" --model $tiny --runs 2 --expect "$dir/ref"
grep -q 'relative' "$dir/out" || { echo "FAIL: no difference line"; fail=1; }
check "--save into the --expect folder is refused (issue 32)" 2 "$run" --model $tiny --runs 0 --expect "$dir/ref" --save "$dir/ref"
# a model too big to allocate says what and how much (issue 32 item 8);
# not under AddressSanitizer, whose allocator reports the request itself
if [ "${TASO_TEST_SANITIZED:-0}" = 0 ]; then
  check "a model too big for memory" 1 "$run" --model squeezenet:size=10000000 --runs 0
  grep -q "no memory for input 'data': 1.1 PiB asked for" "$dir/err" && echo "ok   ... naming what and how much" ||
    { echo "FAIL: no size in the message"; cat "$dir/err"; fail=1; }
fi
check "cpu profile" 0 "$run" --model $tiny --runs 3 --profile --threads 1
grep -q 'overhead' "$dir/out" || { echo "FAIL: no overhead line"; fail=1; }
# each convolution step names the library call that runs it (oneDNN's implementation)
grep -E '^ +[0-9]+ +[0-9]+ .* conv2d .*  \| [a-z0-9]' "$dir/out" >/dev/null ||
  { echo "FAIL: no call named on a convolution's profile line"; fail=1; }
check "compare with itself" 0 "$run" --model $tiny --runs 0 --compare $tiny --no-fusion
check "chosen layouts" 0 "$run" --model $tiny --runs 0 --layout choose --expect "$dir/ref"
check "channels last" 0 "$run" --model $tiny --runs 0 --layout nhwc --expect "$dir/ref"
check "bad --layout" 2 "$run" --model $tiny --layout nchwc
check "another seed differs" 1 "$run" --model $tiny --runs 0 --seed 2 --expect "$dir/ref"
check "unknown model" 1 "$run" --model nosuch
check "unknown backend" 2 "$run" --model $tiny --backend tpu
# the gpu backend is a module loaded when asked for (bin/taso-gpu.so, where
# CUDA was found at build time): it loads and runs, or says there is no
# device; never a module that failed to load (a symbol the program lacks)
if [ -e "${TASO_BIN_DIR:?}/taso-gpu.so" ]; then
  "$run" --model $tiny --runs 1 --backend gpu >"$dir/out" 2>"$dir/err"
  if [ $? = 0 ] || grep -q "error: no CUDA device" "$dir/err"; then
    echo "ok   the gpu backend's module loads"
  else
    echo "FAIL the gpu backend's module"; cat "$dir/err"; fail=1
  fi
fi
check "missing --model" 2 "$run"
check "bad --runs" 2 "$run" --model $tiny --runs many
head -c 12 /dev/zero >"$dir/in/data.bin"
check "short input file" 1 "$run" --model $tiny --inputs "$dir/in"
check "a missing input file names it" 1 "$run" --model $tiny --inputs "$dir/nothing"
check "--device without --costs" 2 "$run" --model $tiny --device cpu:x
check "a missing --costs file" 1 "$run" --model $tiny --runs 0 --costs "$dir/none.h5"
grep -q "$dir/none.h5" "$dir/err" || { echo "FAIL: the missing costs file is not named"; fail=1; }

# ONNX test data (Debian's libonnx-testdata): input_K.pb in, output_K.pb expected.
node=/usr/share/libonnx-testdata/data/node
if [ -d "$node" ]; then
  for t in test_conv_with_strides_padding test_gemm_default_matrix_bias test_softmax_axis_1; do
    check "ONNX test data: $t" 0 "$run" --model "$node/$t/model.onnx" --runs 0 \
      --inputs "$node/$t/test_data_set_0" --expect "$node/$t/test_data_set_0"
  done
  check "ONNX test data against the wrong outputs" 1 "$run" \
    --model "$node/test_conv_with_strides_padding/model.onnx" --runs 0 \
    --inputs "$node/test_conv_with_strides_padding/test_data_set_0" \
    --expect "$node/test_conv_with_strides_no_padding/test_data_set_0"
else
  echo "skip: $node not found (libonnx-testdata): ONNX test data not run"
fi
exit $fail
