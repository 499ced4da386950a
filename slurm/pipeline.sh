#!/usr/bin/env bash
#SBATCH --job-name=taso-pipeline
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --time=00:05:00
#SBATCH --output=logs/%x-%j.out
#
# The whole pipeline as three chained Slurm jobs: generate, then verify
# once generate has succeeded, then validate once verify has succeeded
# (--dependency=afterok; --kill-on-invalid-dep=yes cancels the rest of the
# chain when a stage fails instead of leaving it pending forever). From the
# repository root, either of
#
#   bash slurm/pipeline.sh [JOB [OUT]]      submits the three and returns
#   sbatch slurm/pipeline.sh [JOB [OUT]]    the same, from a one-CPU job
#
# JOB, OUT, TASO_BIN, TASO_LAUNCHER and TASO_SRUN_MPI as in generate.sh
# (defaults jobs/smoke.ini, out/NAME, build/bin, srun, pmix); they are
# checked here, before anything is submitted. TASO_SBATCH_ARGS is added to
# every sbatch line (e.g. "--partition=long --account=proj"); each stage's
# own size and time are its script's #SBATCH lines, or
# TASO_GENERATE_ARGS, TASO_VERIFY_ARGS and TASO_VALIDATE_ARGS
# (e.g. TASO_GENERATE_ARGS="--ntasks=64 --time=08:00:00").
#
# It prints the three job ids; logs are logs/taso-STAGE-ID.out in the
# submit directory, results OUT/candidates.h5, substitutions.h5 and
# validation.h5. When the job file has a [measure] section, the measure
# stage (slurm/measure.sh: the models' operator costs into OUT/costs.h5)
# chains after verify too, sized by its script or TASO_MEASURE_ARGS, and
# after it the optimize stage (slurm/optimize.sh: a job array, one task
# per [measure] model or TASO_MODELS spec, each writing OUT/NAME.opt.h5;
# TASO_OPTIMIZE_ARGS); their ids are printed on lines of their own.
set -euo pipefail

die() {
  echo "pipeline.sh: error: $*" >&2
  exit 1
}
base=${SLURM_SUBMIT_DIR:-$PWD}
cd "$base" || die "cannot enter the submit directory $base"
abs() { case $1 in /*) echo "$1" ;; *) echo "$base/$1" ;; esac }
job=$(abs "${1:-${TASO_JOB:-jobs/smoke.ini}}")
out=$(abs "${2:-${TASO_OUT:-out/$(basename "$job" .ini)}}")
bin=$(abs "${TASO_BIN:-build/bin}")
# The stage scripts sit next to this one. Under sbatch this file runs
# from a copy in Slurm's spool; the job's Command names the original.
if [ -n "${TASO_SLURM_DIR:-}" ]; then
  here=$(abs "$TASO_SLURM_DIR")
elif [ -n "${SLURM_JOB_ID:-}" ]; then
  here=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/^ *Command=\([^ ]*\).*/\1/p')
  here=$(dirname "$(abs "${here:-slurm/pipeline.sh}")")
else
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fi

[ -f "$job" ] && [ -r "$job" ] || die "job file $job not found (or not readable)"
for s in generate verify validate; do
  [ -x "$bin/taso-$s" ] || die "$bin/taso-$s not found: build first (README), or set TASO_BIN"
  [ -f "$here/$s.sh" ] || die "$here/$s.sh not found: set TASO_SLURM_DIR to the slurm/ folder"
done
measure=
if grep -q '^[[:space:]]*\[measure\]' "$job"; then
  measure=yes
  for s in measure optimize; do
    [ -x "$bin/taso-$s" ] || die "$bin/taso-$s not found: build first (README), or set TASO_BIN"
    [ -f "$here/$s.sh" ] || die "$here/$s.sh not found: set TASO_SLURM_DIR to the slurm/ folder"
  done
  # shellcheck source=slurm/stage.sh
  source "$here/stage.sh" # job_models: the optimize array has one task per model
  # shellcheck disable=SC2086 # TASO_MODELS is a word list
  nmodels=$(if [ -n "${TASO_MODELS:-}" ]; then printf '%s\n' $TASO_MODELS; else job_models "$job"; fi | wc -l)
  [ "$(job_models "$job" | wc -l)" -gt 0 ] || die "$job has a [measure] section but no models in it"
fi
case ${TASO_LAUNCHER:-srun} in srun | mpirun) ;; *) die "TASO_LAUNCHER must be srun or mpirun" ;; esac
command -v sbatch >/dev/null || die "sbatch not found: this needs a Slurm cluster (README: plain mpirun)"
mkdir -p logs "$out" || die "cannot create logs/ or $out in $base"

# Submitted from inside a job, the stages would inherit this job's
# SLURM_* settings (task counts, CPUs) as if they were their own.
if [ -n "${SLURM_JOB_ID:-}" ]; then
  for v in $(compgen -e); do
    case $v in SLURM_CONF) ;; SLURM_* | SBATCH_* | SRUN_*) unset "$v" ;; esac
  done
fi

submitted=()
submit() { # submit STAGE EXTRA_ARGS [DEPENDENCY]: prints the job id
  local stage=$1 extra=$2 dep=${3:-} cmd id
  # shellcheck disable=SC2206 # the *_ARGS variables are word lists on purpose
  cmd=(sbatch --parsable --kill-on-invalid-dep=yes ${TASO_SBATCH_ARGS:-} $extra)
  [ -z "$dep" ] || cmd+=("--dependency=afterok:$dep")
  cmd+=("$here/$stage.sh" "$job" "$out")
  printf '+' >&2
  printf ' %q' "${cmd[@]}" >&2
  echo >&2
  if ! id=$("${cmd[@]}"); then
    # Leave nothing half-submitted behind.
    [ ${#submitted[@]} -eq 0 ] || scancel "${submitted[@]}" || true
    die "sbatch refused the $stage stage (above); nothing is left queued"
  fi
  id=${id%%;*} # --parsable prints ID or ID;CLUSTER
  submitted+=("$id")
}

submit generate "${TASO_GENERATE_ARGS:-}"
submit verify "${TASO_VERIFY_ARGS:-}" "${submitted[0]}"
submit validate "${TASO_VALIDATE_ARGS:-}" "${submitted[1]}"
# Measurement, then optimization of the measured models (one array task
# each, after measure: they read its costs.h5), only for jobs that name
# models to measure ([measure]).
if [ -n "$measure" ]; then
  submit measure "${TASO_MEASURE_ARGS:-}" "${submitted[1]}"
  submit optimize "--array=0-$((nmodels - 1)) ${TASO_OPTIMIZE_ARGS:-}" "${submitted[3]}"
fi
echo "taso pipeline: job $job -> $out"
echo "generate ${submitted[0]}, verify ${submitted[1]}, validate ${submitted[2]}"
[ ${#submitted[@]} -lt 4 ] || echo "measure ${submitted[3]} -> $out/costs.h5"
[ ${#submitted[@]} -lt 5 ] || echo "optimize ${submitted[4]} ($nmodels array tasks) -> $out/NAME.opt.h5"
echo "logs: $base/logs/taso-STAGE-ID.out; follow with squeue -j $(
  IFS=,
  echo "${submitted[*]}"
)"
