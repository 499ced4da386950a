#!/usr/bin/env bash
# Sets up a Debian 12 machine for taso and runs it, in one of two modes:
#
#   bash scripts/setup.sh pipeline   install what is missing, build (Release) into build/,
#                                    run generate, verify and validate on
#                                    jobs/workstation.ini with 2 ranks into out/, show them,
#                                    then measure and optimize ResNet-50 (with batch
#                                    normalization) with the proved rules, timed before and after
#   bash scripts/setup.sh test       install what is missing (with Slurm, munge and
#                                    clang-format), build build/ (Release, as the pipeline mode)
#                                    and build-asan/ (RelWithDebInfo, plus ASan and UBSan),
#                                    warnings as errors in both, and run the tests: every test
#                                    in build/, the unit, MPI and six tool tests in build-asan/
#                                    (docs/testing.md)
#   bash scripts/setup.sh zoo        install Debian's python3-torch and python3-torchvision,
#                                    (and python3-matplotlib) for scripts/zoo.py, bench/zoo.sh
#                                    and bench/zoo_optimize.sh only (docs/zoo.md)
#
# Both modes configure build/ the same way (Release, warnings as errors), so
# they run in either order, any number of times, on a fresh clone or a used
# one, and the second one rebuilds nothing.
#
# Packages are installed only when dpkg says one is missing, so a second run
# touches nothing. Every command that matters is echoed with a "+", so a run
# can be repeated from its log. .ci/run calls the test mode.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(libopenmpi-dev openmpi-bin libhdf5-openmpi-dev hdf5-tools libz3-dev z3 libglpk-dev libinih-dev
  python3-h5py pkg-config cmake gcc make
  libdnnl-dev protobuf-c-compiler libprotobuf-c-dev libonnx-dev)
# The test mode also brings up a single-node Slurm with its own daemons
# and state (tests/test_slurm.sh), reads the ONNX backend tests, and
# checks the formatting (scripts/format.sh).
test_packages=(slurmctld slurmd slurm-client munge libonnx-testdata python3-onnx clang-format)

run() {
  echo "+ $*" >&2
  "$@"
}

die() {
  echo "setup.sh: error: $*" >&2
  exit 1
}

is_root() { [ "$(id -u)" -eq 0 ]; }

as_root() {
  if is_root; then
    run "$@"
  elif command -v sudo >/dev/null; then
    run sudo "$@"
  else
    die "installing packages needs root, and sudo is not installed: run as root"
  fi
}

install_packages() { # install_packages NAME...
  local missing=() p
  for p in "$@"; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "setup.sh: all $# packages are installed" >&2
    return
  fi
  echo "setup.sh: installing ${missing[*]}" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
}

build() { # build DIR CMAKE_OPTIONS...
  local dir=$1
  shift
  run cmake -S . -B "$dir" "$@"
  run cmake --build "$dir" -j "$(nproc)"
}

# The one configuration of build/, for both modes: every option is given,
# so what an earlier run or a user left in its cache does not carry over.
build_main() { build build -DCMAKE_BUILD_TYPE=Release -DTASO_WERROR=ON -DTASO_SANITIZE=OFF; }

pipeline() {
  local job=jobs/workstation.ini bin=build/bin mpirun=(mpirun -n 2) f
  build_main
  # Open MPI refuses root unless told, and containers (where one is
  # usually root) forbid the cross-process memory copy it tries first.
  # This is the environment of these mpirun lines, not of the tools.
  if is_root; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
  fi
  # Open MPI counts cores as slots; 2 ranks on 1 core need permission.
  [ "$(nproc)" -ge 2 ] || mpirun+=(--oversubscribe)
  run mkdir -p out
  # The job file edited since its outputs were made (a pull that changed
  # it): generate and verify start afresh, and say so; with the same job,
  # the outputs are reused (generate writes the same candidates, verify
  # finds its file complete).
  local fresh=()
  if [ -f out/candidates.h5 ] && ! python3 - "$job" out/candidates.h5 2>/dev/null <<'EOF'; then
import sys, h5py
text = h5py.File(sys.argv[2], "r").attrs["job_text"]
text = text.decode() if isinstance(text, bytes) else text
sys.exit(0 if text == open(sys.argv[1]).read() else 1)
EOF
    echo "setup.sh: $job changed since out/candidates.h5 was made: generating and verifying afresh" >&2
    fresh=(--fresh)
  fi
  run "${mpirun[@]}" "$bin/taso-generate" --job "$job" --out out/candidates.h5 "${fresh[@]}"
  run "${mpirun[@]}" "$bin/taso-verify" --job "$job" --in out/candidates.h5 --out out/substitutions.h5 \
    "${fresh[@]}"
  run "${mpirun[@]}" "$bin/taso-validate" --job "$job" --out out/validation.h5
  # Each listing goes to out/NAME.txt whole; the terminal gets its head
  # (the workstation set has thousands of lines).
  for f in candidates substitutions validation; do
    echo "+ $bin/taso-show out/$f.h5 > out/$f.txt" >&2
    "$bin/taso-show" "out/$f.h5" >"out/$f.txt"
    head -n 40 "out/$f.txt"
    echo "... ($(wc -l <"out/$f.txt") lines in out/$f.txt)"
    echo
  done
  # What the rules are for (stages 4 and 5): a real model, ResNet-50 with
  # batch normalization after every convolution as trained ones have it.
  # Its operator configurations, and those the proved rules can make from
  # it, are timed into out/costs.h5 (a second run reuses them); the
  # optimizer rewrites it with the workstation rules and those of
  # jobs/batchnorm.ini (which fold a normalization into its convolution),
  # times input and result end to end (it keeps the input unless the
  # result is faster), and the result is run against the original. Rule
  # chains (--chain) fold the 36 normalizations in a few expansions.
  local model=resnet50:bn=1 rules=out/substitutions.h5,out/batchnorm.h5
  run "${mpirun[@]}" "$bin/taso-generate" --job jobs/batchnorm.ini --out out/batchnorm.candidates.h5
  run "${mpirun[@]}" "$bin/taso-verify" --job jobs/batchnorm.ini --in out/batchnorm.candidates.h5 \
    --out out/batchnorm.h5
  run "$bin/taso-measure" --job "$job" --model "$model" --expand --substitutions "$rules" \
    --db out/costs.h5
  run "$bin/taso-optimize" --job "$job" --model "$model" --substitutions "$rules" \
    --costs out/costs.h5 --alpha 1.0 --budget 20 --chain --out out/resnet50_bn.opt.h5 --fresh
  run "$bin/taso-show" out/resnet50_bn.opt.h5
  run "$bin/taso-run" --model out/resnet50_bn.opt.h5 --compare "$model" --runs 0
}

tests() {
  local status=0
  build_main
  build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTASO_SANITIZE=ON -DTASO_WERROR=ON
  # Both configurations run even when the first fails: two reports say more.
  # Three tests at a time on two cores: a test waits part of its time on
  # mpiexec starting and ending ranks, which the third fills (the release
  # tests 740 -> 680 s here).
  (cd build && run ctest --output-on-failure -j3) || status=1
  # The sanitizer settings for MPI tests are in tests/CMakeLists.txt.
  # The sanitizer build takes the release build's rule sets for its
  # fixture (tests/fixture_rules.sh) instead of making them again.
  (cd build-asan && export TASO_FIXTURE_FROM=$PWD/../build/tests/fixtures &&
    run ctest --output-on-failure -j3) || status=1
  return $status
}

case "${1:-}" in
pipeline)
  install_packages "${packages[@]}"
  pipeline
  ;;
test)
  install_packages "${packages[@]}" "${test_packages[@]}"
  tests
  ;;
zoo)
  # Only for scripts/zoo.py, bench/zoo.sh and bench/zoo_optimize.sh
  # (exporting real networks, the heat map): neither the main job nor the
  # tests need these.
  install_packages python3-torch python3-torchvision python3-onnx python3-matplotlib
  ;;
*)
  echo "usage: bash scripts/setup.sh pipeline|test|zoo" >&2
  exit 2
  ;;
esac
