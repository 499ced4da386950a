#!/usr/bin/env bash
# The model zoo (issue 33): real torchvision networks, imported and checked.
#
#   bench/zoo.sh [BUILD] [--only a,b] [--full DIR]
#       Every zoo network with its real weights (scripts/zoo.py full, made
#       once into DIR, default out/zoo-full; needs Debian's python3-torch,
#       python3-torchvision: `bash scripts/setup.sh zoo`): the cpu backend
#       on PyTorch's seeded input against PyTorch's own output (tolerance
#       1e-4 relative). One row per network; exit 1 if any disagrees.
#   bench/zoo.sh [BUILD] quick
#       What the test command checks (ctest zoo_import; that every
#       graph-only file imports is test_zoo's), no PyTorch needed: a handful of small ones
#       (seeded weights) agree between the cpu and reference backends, and
#       the import's pieces (tests/onnx_pieces.py) agree with numpy.
# Every command is echoed into the log, so a row can be repeated.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ] && [ "$1" != quick ]; then
  build=$1
  shift
fi
bin=$build/bin
mode=full only="" full=out/zoo-full
while [ $# -gt 0 ]; do
  case $1 in
  quick) mode=quick ;;
  --only) only=${2:?--only needs a list}; shift ;;
  --full) full=${2:?--full needs a folder}; shift ;;
  -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "zoo.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$bin/taso-run" ] || { echo "zoo.sh: $bin/taso-run not built" >&2; exit 2; }
zoo=$here/data/zoo
[ -f "$zoo/manifest.csv" ] || { echo "zoo.sh: $zoo/manifest.csv missing" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
run() { # run LABEL CMD...: echoes and runs; its output in $tmp/log
  local label=$1
  shift
  echo "+ $*" >>"$tmp/commands"
  if ! "$@" >"$tmp/log" 2>&1; then
    echo "FAIL $label: $*"
    sed 's/^/  /' "$tmp/log" | tail -5
    fail=1
    return 1
  fi
}
rel() { sed -n 's/^--expect: largest difference .* absolute, \(.*\) relative.*/\1/p' "$tmp/log"; }
names() { # the manifest's names, or --only's
  if [ -n "$only" ]; then tr ',' '\n' <<<"$only"; else tail -n +2 "$zoo/manifest.csv" | cut -d, -f1; fi
}

echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ $mode = quick ]; then
  # (that every graph-only file imports is the unit test test_zoo's)
  printf '%-24s %s\n' network "cpu vs reference (seeded weights)"
  for name in mnasnet0_5 shufflenet_v2_x0_5 squeezenet1_1 mobilenet_v3_small; do
    mkdir -p "$tmp/$name"
    run "$name reference" "$bin/taso-run" --model "$zoo/$name.onnx" --backend reference --runs 0 \
      --save "$tmp/$name" || continue
    run "$name cpu" "$bin/taso-run" --model "$zoo/$name.onnx" --backend cpu --runs 0 \
      --expect "$tmp/$name" --tolerance 1e-4 || continue
    printf '%-24s %s\n' "$name" "$(rel)"
  done
  # the import's own tricks, against numpy (tests/onnx_pieces.py)
  if /usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null; then
    run "pieces" /usr/bin/python3 "$here/tests/onnx_pieces.py" "$tmp/pieces" && cp "$tmp/log" "$tmp/pieces.txt"
    printf '%-24s %s\n' piece "cpu vs numpy"
    for name in $(cat "$tmp/pieces.txt" 2>/dev/null); do
      run "$name" "$bin/taso-run" --model "$tmp/pieces/$name.onnx" --backend cpu --runs 0 \
        --inputs "$tmp/pieces/$name" --expect "$tmp/pieces/$name" --tolerance 1e-4 || continue
      printf '%-24s %s\n' "$name" "$(rel)"
    done
  else
    echo "zoo.sh: python3-onnx missing: the import pieces are not checked" >&2
    fail=1
  fi
  exit $fail
fi

py=/usr/bin/python3
if ! $py -c 'import torch, torchvision, onnx' 2>/dev/null; then
  echo "zoo.sh: needs python3-torch and python3-torchvision: bash scripts/setup.sh zoo" >&2
  exit 2
fi
mkdir -p "$full"
printf '%-20s %-14s %6s %6s %6s %9s  %s\n' network family nodes ops steps fallback "cpu vs PyTorch"
for name in $(names); do
  if [ ! -f "$full/$name.onnx" ] || [ ! -f "$full/$name/output_0.pb" ]; then
    run "$name export" $py "$here/scripts/zoo.py" full "$full" --only "$name" --fresh || continue
  fi
  run "$name cpu" "$bin/taso-run" --model "$full/$name.onnx" --backend cpu --runs 0 \
    --inputs "$full/$name" --expect "$full/$name" --tolerance 1e-4 || continue
  row=$(grep "^$name," "$zoo/manifest.csv")
  plan=$(sed -n 's/^model .*: \([0-9]*\) operators in \([0-9]*\) steps.*, \([0-9]*\) on the reference kernel$/\1 \2 \3/p' "$tmp/log")
  printf '%-20s %-14s %6s %6s %6s %9s  %s\n' "$name" "$(cut -d, -f3 <<<"$row")" \
    "$(cut -d, -f6 <<<"$row")" $plan "$(rel)"
done
echo "commands: $(wc -l <"$tmp/commands") (each echoed above on failure)"
exit $fail
