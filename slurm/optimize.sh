#!/usr/bin/env bash
#SBATCH --job-name=taso-optimize
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=4
#SBATCH --time=01:00:00
#SBATCH --output=logs/%x-%j.out
#
# Stage 5 as a Slurm job array: each array task runs taso-optimize on one
# model with OUT/substitutions.h5 (and the operator costs in OUT/costs.h5
# when measure made one), writing OUT/NAME.opt.h5 (NAME: the model's name,
# "squeezenet" for squeezenet:size=64). Submit from the repository root:
#
#   sbatch --array=0-N slurm/optimize.sh [JOB [OUT]]    task i: model i
#   bash slurm/optimize.sh [JOB [OUT]]                  every model in turn
#
#   JOB, OUT, TASO_BIN, TASO_LAUNCHER, TASO_SRUN_MPI   as in verify.sh
#   TASO_MODELS   model specs separated by blanks (default: the job's
#                 [measure] models, the ones measure timed)
#   TASO_OPTIMIZE_BACKEND   where costs missing from costs.h5 are measured
#                 (default TASO_MEASURE_BACKEND, else cpu)
#   TASO_OPTIMIZE_DEVICE    costs.h5's device to read, when it holds several
#
# The search settings are the job's [optimize] section. Without --array the
# job runs the models one after the other; pipeline.sh sizes the array by
# the model list. The cpu backend's costs depend on the cores a device had:
# keep --cpus-per-task equal to measure's devices (its cores_per_device, by
# default measure.sh's --cpus-per-task) so that costs.h5's rows are found
# rather than measured again.
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-$PWD}"
here=${TASO_SLURM_DIR:-$(dirname "$( (scontrol show job "${SLURM_JOB_ID:-none}" 2>/dev/null || true) |
  sed -n 's/^ *Command=\([^ ]*\).*/\1/p' | grep . || echo "${BASH_SOURCE[0]}")")}
# shellcheck source=slurm/stage.sh
source "$here/stage.sh" || exit 1
run_stage optimize "$@"
