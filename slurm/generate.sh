#!/usr/bin/env bash
#SBATCH --job-name=taso-generate
#SBATCH --ntasks=4
#SBATCH --cpus-per-task=1
#SBATCH --time=02:00:00
#SBATCH --output=logs/%x-%j.out
#
# Stage 1 as a Slurm batch job: taso-generate enumerates and pairs the job's
# graphs into OUT/candidates.h5. Submit from the repository root:
#
#   sbatch slurm/generate.sh [JOB [OUT]]
#
#   JOB            job file (or TASO_JOB; default jobs/smoke.ini)
#   OUT            output folder (or TASO_OUT; default out/NAME, NAME the job
#                  file's name without .ini)
#   TASO_BIN       folder of the executables (default build/bin)
#   TASO_LAUNCHER  srun (default) or mpirun
#   TASO_SRUN_MPI  srun's --mpi plugin (default pmix, the one Debian's Open
#                  MPI starts under; empty for the site's MpiDefault)
#
# Relative paths are resolved from the submit directory ($SLURM_SUBMIT_DIR),
# and logs/ must exist there: the repository has one, and slurm/pipeline.sh
# creates it elsewhere. Options on the sbatch line override the #SBATCH
# lines above, e.g. sbatch --ntasks=64.
# Generation is memory-bound: each rank holds its shard of the graphs, so
# give it more tasks rather than more CPUs per task.
#
# Level by level (method = representatives), every level below the last
# is checkpointed in OUT/candidates.h5.levels: a job ended by its time
# limit or a failed node resumes after its last complete level when
# submitted again with the same --ntasks (docs/cluster.md). In stages,
# e.g. jobs/paper5.ini (k=5; sizes from docs/cluster.md's estimates):
#
#   TASO_UNTIL_LEVEL=3 sbatch --ntasks=64 --time=00:30:00 slurm/generate.sh jobs/paper5.ini
#   sbatch --ntasks=64 --mem-per-cpu=16G --time=12:00:00 slurm/generate.sh jobs/paper5.ini
#
# TASO_UNTIL_LEVEL=K stops once level K is checkpointed (--until-level).
#
# Fallback when srun cannot start Open MPI ranks (srun --mpi=list lacks
# pmix, or ranks fail in MPI_Init): TASO_LAUNCHER=mpirun sbatch slurm/generate.sh
# mpirun reads the allocation from Slurm itself. Open MPI as root (in
# containers) also needs OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# in the environment sbatch passes on; the scripts never set them.
set -euo pipefail
# The shared body is slurm/stage.sh, next to this script. Under sbatch this
# file runs from a copy in Slurm's spool; the job's Command names the
# original (relative to the submit directory). TASO_SLURM_DIR overrides.
cd "${SLURM_SUBMIT_DIR:-$PWD}"
here=${TASO_SLURM_DIR:-$(dirname "$( (scontrol show job "${SLURM_JOB_ID:-none}" 2>/dev/null || true) |
  sed -n 's/^ *Command=\([^ ]*\).*/\1/p' | grep . || echo "${BASH_SOURCE[0]}")")}
# shellcheck source=slurm/stage.sh
source "$here/stage.sh" || exit 1
run_stage generate "$@"
