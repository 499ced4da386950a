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
# Fallback when srun cannot start Open MPI ranks (srun --mpi=list lacks
# pmix, or ranks fail in MPI_Init): TASO_LAUNCHER=mpirun sbatch slurm/generate.sh
# mpirun reads the allocation from Slurm itself. Open MPI as root (in
# containers) also needs OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# in the environment sbatch passes on; the scripts never set them.
set -euo pipefail
stage=generate

die() {
  echo "$stage.sh: error: $*" >&2
  exit 1
}
base=${SLURM_SUBMIT_DIR:-$PWD}
cd "$base" || die "cannot enter the submit directory $base"
abs() { case $1 in /*) echo "$1" ;; *) echo "$base/$1" ;; esac }
job=$(abs "${1:-${TASO_JOB:-jobs/smoke.ini}}")
name=$(basename "$job" .ini)
out=$(abs "${2:-${TASO_OUT:-out/$name}}")
bin=$(abs "${TASO_BIN:-build/bin}")
tool=$bin/taso-$stage
[ -f "$job" ] && [ -r "$job" ] || die "job file $job not found (or not readable)"
[ -x "$tool" ] || die "$tool not found: build first (README), or set TASO_BIN to the folder of the executables"
mkdir -p "$out" || die "cannot create the output folder $out"

# One OpenMP thread per CPU Slurm gave each task.
cpus=${SLURM_CPUS_PER_TASK:-1}
export OMP_NUM_THREADS=$cpus
ntasks=${SLURM_NTASKS:-1}
launcher=${TASO_LAUNCHER:-srun}
[ -n "${SLURM_JOB_ID:-}" ] || launcher=mpirun # run by hand, outside Slurm
case $launcher in
# srun 22.05+ no longer takes --cpus-per-task from the batch job; say it.
srun)
  launch=(srun "--ntasks=$ntasks" "--cpus-per-task=$cpus")
  mpi=${TASO_SRUN_MPI-pmix}
  [ -z "$mpi" ] || launch+=("--mpi=$mpi")
  ;;
# Without binding, so that a rank's OpenMP threads spread over its CPUs.
mpirun) launch=(mpirun -n "$ntasks" --bind-to none) ;;
*) die "TASO_LAUNCHER must be srun or mpirun, not '$launcher'" ;;
esac

cmd=("${launch[@]}" "$tool" --job "$job" --out "$out/candidates.h5")

echo "taso $stage: Slurm job ${SLURM_JOB_ID:-none} (${SLURM_JOB_NAME:-by hand}) on $(hostname)," \
  "$ntasks tasks x $cpus CPUs, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "job $job; output $out"
printf '+'
printf ' %q' "${cmd[@]}"
echo
start=$SECONDS
status=0
"${cmd[@]}" || status=$?
echo "taso $stage: exit status $status after $((SECONDS - start)) s"
exit $status
