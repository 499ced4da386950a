#!/usr/bin/env bash
# Prints, per ONNX operator taso imports, how many of the ONNX backend node
# tests (Debian's libonnx-testdata) hold only operators and opsets that the
# importer accepts: the import column of the conformance table (issue 13).
# Running them and comparing outputs needs the runtime, which comes next.
#   bench/onnx_import.sh   (BIN=build/bin by default; minutes: one taso-show,
#   which starts MPI, per test)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/build/bin}
node=${ONNX_NODE_TESTS:-/usr/share/libonnx-testdata/data/node}
[ -d "$node" ] || { echo "no $node: apt-get install libonnx-testdata" >&2; exit 1; }
ops="Conv MatMul Gemm Add Mul Relu Sigmoid Tanh Softmax MaxPool AveragePool GlobalAveragePool
BatchNormalization Concat Split Reshape Flatten Transpose Identity Dropout Clip Constant"
# One taso-show per test (each starts MPI), then a table per operator.
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for dir in "$node"/test_*/; do
  out=$("$bin/taso-show" "$dir/model.onnx" 2>&1) || continue
  ops_line=$(echo "$out" | sed -n 's/^operators: //p')
  why=$(echo "$out" | sed -n 's/^import: every node is supported/ok/p; s/^import: .*model.onnx: //p')
  printf '%s\t%s\n' "$ops_line" "$why" >>"$tmp"
done
printf '%-20s %6s %10s  %s\n' operator tests importable "why not (first)"
for op in $ops; do
  awk -F'\t' -v op="$op" '
    { n_ops = split($1, w, " "); used = 0
      for (i = 1; i < n_ops; i += 2) if (w[i] == op) used = 1
      if (!used) next
      n++; if ($2 == "ok") ok++; else if (why == "") why = substr($2, 1, 60) }
    END { printf "%-20s %6d %10d  %s\n", op, n, ok, why }' "$tmp"
done
echo "($(wc -l <"$tmp") node tests read; a test counts under every operator it uses)"
