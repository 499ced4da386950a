# The body every stage script shares (sourced by generate.sh, verify.sh and
# validate.sh; not a job of its own): paths, checks, the launcher, the
# launch line echoed into the log, the run and its exit status.
#
#   run_stage STAGE [JOB [OUT]]
#
# JOB, OUT, TASO_BIN, TASO_LAUNCHER and TASO_SRUN_MPI as the stage scripts'
# headers say. The files of the stages: generate writes OUT/candidates.h5,
# verify reads it and writes OUT/substitutions.h5, validate writes
# OUT/validation.h5, measure fills OUT/costs.h5 (TASO_MEASURE_BACKEND: cpu
# or gpu, default cpu).

run_stage() {
  local stage=$1
  shift
  die() {
    echo "$stage.sh: error: $*" >&2
    exit 1
  }
  local base=${SLURM_SUBMIT_DIR:-$PWD}
  cd "$base" || die "cannot enter the submit directory $base"
  abs() { case $1 in /*) echo "$1" ;; *) echo "$base/$1" ;; esac }
  local job name out bin tool
  job=$(abs "${1:-${TASO_JOB:-jobs/smoke.ini}}")
  name=$(basename "$job" .ini)
  out=$(abs "${2:-${TASO_OUT:-out/$name}}")
  bin=$(abs "${TASO_BIN:-build/bin}")
  tool=$bin/taso-$stage
  [ -f "$job" ] && [ -r "$job" ] || die "job file $job not found (or not readable)"
  [ -x "$tool" ] || die "$tool not found: build first (README), or set TASO_BIN to the folder of the executables"
  local files
  case $stage in
  generate) files=(--out "$out/candidates.h5") ;;
  verify)
    [ -f "$out/candidates.h5" ] || die "$out/candidates.h5 not found: run slurm/generate.sh first"
    files=(--in "$out/candidates.h5" --out "$out/substitutions.h5")
    ;;
  validate) files=(--out "$out/validation.h5") ;;
  # The models are the job's [measure] models; the database is shared by
  # every job that measures into the same OUT (merged under its lock).
  measure) files=(--db "$out/costs.h5" --backend "${TASO_MEASURE_BACKEND:-cpu}") ;;
  *) die "unknown stage '$stage'" ;;
  esac
  mkdir -p "$out" || die "cannot create the output folder $out"

  # One OpenMP thread per CPU Slurm gave each task.
  local cpus=${SLURM_CPUS_PER_TASK:-1} ntasks=${SLURM_NTASKS:-1} launcher=${TASO_LAUNCHER:-srun} launch mpi
  export OMP_NUM_THREADS=$cpus
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

  local cmd=("${launch[@]}" "$tool" --job "$job" "${files[@]}")
  echo "taso $stage: Slurm job ${SLURM_JOB_ID:-none} (${SLURM_JOB_NAME:-by hand}) on $(hostname)," \
    "$ntasks tasks x $cpus CPUs, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "job $job; output $out"
  printf '+'
  printf ' %q' "${cmd[@]}"
  echo
  local start=$SECONDS status=0
  "${cmd[@]}" || status=$?
  echo "taso $stage: exit status $status after $((SECONDS - start)) s"
  exit $status
}
