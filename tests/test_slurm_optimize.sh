#!/usr/bin/env bash
# slurm/optimize.sh without Slurm (test_slurm needs root and a Slurm it
# starts; this runs anywhere in seconds): the [measure] models as the
# script reads them (comments, continuation lines, inline comments), the
# checks it makes before running anything, and an array task run by hand
# (SLURM_ARRAY_TASK_ID set, no SLURM_JOB_ID: the mpirun fallback) that must
# write OUT/NAME.opt.h5 with the smoke set and the launch line in its log.
#
# ctest provides TASO_SOURCE_DIR, TASO_BIN_DIR and MPIEXEC.
set -u
src=${TASO_SOURCE_DIR:?set TASO_SOURCE_DIR}
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR}
mpiexec=${MPIEXEC:-mpirun}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
failed=0
ok() { echo "ok: $1"; }
bad() {
  echo "FAIL: $1"
  failed=$((failed + 1))
}
export TASO_BIN=$bin
unset SLURM_JOB_ID SLURM_ARRAY_TASK_ID TASO_MODELS

# The smoke job, with models to measure (and so to optimize) and a tiny
# search; its axioms named absolutely, as the job file moved.
sed "s|^axioms = data/axioms|axioms = $src/data/axioms|" "$src/jobs/smoke.ini" >job.ini
cat >>job.ini <<'EOF'
[measure]
# comment lines and blank lines do not end the list
models = nasrnn:hidden=8  ; an inline comment
  squeezenet:size=32

  # an indented comment
  mobilenet_v2:size=32
min_runs = 5
[optimize]
budget = 3
time_limit = 60
EOF
grep -v '^models\|^  ' job.ini >nomodels.ini

# shellcheck source=slurm/stage.sh
source "$src/slurm/stage.sh"
[ "$(job_models job.ini | tr '\n' ' ')" = "nasrnn:hidden=8 squeezenet:size=32 mobilenet_v2:size=32 " ] &&
  ok "job_models reads the [measure] list" || bad "job_models: $(job_models job.ini | tr '\n' ' ')"
[ "$(model_name inception_v3:batch=1,size=75) $(model_name dir/net.onnx) $(model_name m.h5)" = "inception_v3 net m" ] &&
  ok "model_name" || bad "model_name"

# refused: STATUS, the one error line expected, then the command
refused() {
  local what=$1 msg=$2
  shift 2
  "$@" >out.txt 2>&1
  local rc=$?
  if [ $rc -eq 1 ] && grep -q "^optimize.sh: error: $msg" out.txt && [ ! -e out/squeezenet.opt.h5 ]; then
    ok "refused: $what"
  else
    bad "$what: status $rc"
    cat out.txt
  fi
}
refused "no substitutions.h5" "$tmp/out/substitutions.h5 not found: run slurm/verify.sh first" \
  bash "$src/slurm/optimize.sh" job.ini out

mkdir -p out && "$mpiexec" -n 1 "$bin/taso-generate" --job job.ini --out out/candidates.h5 >gen.txt 2>&1 &&
  "$mpiexec" -n 1 "$bin/taso-verify" --in out/candidates.h5 --out out/substitutions.h5 >>gen.txt 2>&1 ||
  { bad "the smoke set"; cat gen.txt; exit 1; }

refused "a job without models" "no models: give \[measure\] models in $tmp/nomodels.ini" \
  bash "$src/slurm/optimize.sh" nomodels.ini out
refused "two models with one output name" "two of the models would both write $tmp/out/squeezenet.opt.h5" \
  env TASO_MODELS="squeezenet:size=32 squeezenet:size=64" bash "$src/slurm/optimize.sh" job.ini out
refused "an array task beyond the models" "array task 3, but there are 3 models: submit with --array=0-2" \
  env SLURM_ARRAY_TASK_ID=3 bash "$src/slurm/optimize.sh" job.ini out
refused "no executables" "$tmp/nowhere/taso-optimize not found" \
  env TASO_BIN=nowhere bash "$src/slurm/optimize.sh" job.ini out

# Array task 1 is squeezenet:size=32, and only it runs.
SLURM_ARRAY_TASK_ID=1 bash "$src/slurm/optimize.sh" job.ini out >task.txt 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '^+ ' task.txt)" = 1 ] &&
  grep -q "^+ mpirun -n 1 --bind-to none $bin/taso-optimize --job $tmp/job.ini --substitutions $tmp/out/substitutions.h5 --backend cpu --model squeezenet:size=32 --out $tmp/out/squeezenet.opt.h5 --fresh$" task.txt &&
  grep -q "^taso optimize: exit status 0 after" task.txt &&
  "$bin/taso-show" out/squeezenet.opt.h5 | grep -q "^out/squeezenet.opt.h5: taso-model$" &&
  [ ! -e out/nasrnn.opt.h5 ]; then
  ok "array task 1 optimized squeezenet:size=32 into out/squeezenet.opt.h5"
else
  bad "array task 1: status $rc"
  cat task.txt
fi

# pipeline.sh checks the list before anything is submitted (no Slurm here:
# it must stop at the job file, not at the missing sbatch).
bash "$src/slurm/pipeline.sh" nomodels.ini out >out.txt 2>&1
grep -q "^pipeline.sh: error: $tmp/nomodels.ini has a \[measure\] section but no models in it" out.txt &&
  ok "pipeline.sh refuses a [measure] section without models" || { bad "pipeline.sh without models"; cat out.txt; }

echo "$failed failed"
[ "$failed" -eq 0 ]
