#!/usr/bin/env bash
#SBATCH --job-name=taso-measure
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=4
#SBATCH --gres=gpu:1
#SBATCH --time=01:00:00
#SBATCH --output=logs/%x-%j.out
#
# Stage 4 as a Slurm batch job: taso-measure times every operator
# configuration of the job's [measure] models into OUT/costs.h5, reusing
# what that database holds for this device. Submit from the repository root:
#
#   sbatch slurm/measure.sh [JOB [OUT]]
#
#   JOB, OUT, TASO_BIN, TASO_LAUNCHER, TASO_SRUN_MPI   as in verify.sh
#   TASO_MEASURE_BACKEND   gpu or cpu (default cpu; gpu needs a CUDA build)
#
# One task per GPU: --ntasks=N with --gres=gpu:N; the first task of each
# node per visible GPU measures, the others only collect configurations.
# On the cpu backend a device is a set of cores ([measure] cores_per_device,
# default all the task's CPUs): more tasks than devices only collect.
# Every measurement holds its device through a lock that other jobs on the
# node respect ([measure] lock_dir, node-local), so jobs sharing a node
# never time on the same core or GPU; many jobs may fill one costs.h5.
#
# CPU-only partitions: the --gres line above makes sbatch refuse the job
# where no node has a GPU. Remove it from a copy of this script (or give
# the site's equivalent in TASO_MEASURE_ARGS to pipeline.sh) and run with
# TASO_MEASURE_BACKEND=cpu; the figures are then the CPU's, and the device
# identity in costs.h5 says so.
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-$PWD}"
here=${TASO_SLURM_DIR:-$(dirname "$( (scontrol show job "${SLURM_JOB_ID:-none}" 2>/dev/null || true) |
  sed -n 's/^ *Command=\([^ ]*\).*/\1/p' | grep . || echo "${BASH_SOURCE[0]}")")}
# shellcheck source=slurm/stage.sh
source "$here/stage.sh" || exit 1
run_stage measure "$@"
