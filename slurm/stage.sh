# shellcheck shell=bash
# The body every stage script shares (sourced by generate.sh, verify.sh,
# validate.sh, measure.sh and optimize.sh; not a job of its own): paths,
# checks, the launcher, the launch line echoed into the log, the run and its
# exit status.
#
#   run_stage STAGE [JOB [OUT]]
#
# JOB, OUT, TASO_BIN, TASO_LAUNCHER and TASO_SRUN_MPI as the stage scripts'
# headers say. The files of the stages: generate writes OUT/candidates.h5,
# verify reads it and writes OUT/substitutions.h5, validate writes
# OUT/validation.h5, measure fills OUT/costs.h5 (TASO_MEASURE_BACKEND: cpu
# or gpu, default cpu), optimize reads OUT/substitutions.h5 (and
# OUT/costs.h5 when there is one) and writes OUT/NAME.opt.h5 per model.

# job_models JOB: the [measure] models of a job file, one per line. The
# tools read job files with inih; this follows its rules for the one key
# (';' or '#' comment lines, indented continuation lines that append, ' ;'
# inline comments), because the shell must know the models before any tool
# runs: pipeline.sh sizes the optimize job array by them.
job_models() {
  awk '
    function emit(v) { sub(/[ \t];.*$/, "", v); n = split(v, w, /[ \t]+/)
                       for (i = 1; i <= n; i++) if (w[i] != "") print w[i] }
    { sub(/\r$/, "") }
    /^[ \t]*[;#]/ { next }
    key && /^[ \t]+[^ \t]/ { emit($0); next }
    /^[ \t]*\[/ { sec = $0; sub(/^[ \t]*\[/, "", sec); sub(/\].*$/, "", sec); key = 0; next }
    sec == "measure" && /^[ \t]*models[ \t]*[=:]/ { sub(/^[^=:]*[=:]/, ""); key = 1; emit($0); next }
    /[^ \t]/ { key = 0 }
  ' "$1"
}

# model_name SPEC: the file name an optimized model gets, NAME.opt.h5:
# the built-in name before any ':' overrides, or an .onnx/.h5 file's base.
model_name() {
  local n=${1##*/}
  n=${n%%:*}
  n=${n%.onnx}
  echo "${n%.h5}"
}

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
  local files models=("")
  case $stage in
  # TASO_UNTIL_LEVEL=K: stop once level K is checkpointed (a staged run)
  generate)
    files=(--out "$out/candidates.h5")
    [ -z "${TASO_UNTIL_LEVEL:-}" ] || files+=(--until-level "$TASO_UNTIL_LEVEL")
    ;;
  verify)
    [ -f "$out/candidates.h5" ] || die "$out/candidates.h5 not found: run slurm/generate.sh first"
    files=(--in "$out/candidates.h5" --out "$out/substitutions.h5")
    ;;
  validate) files=(--out "$out/validation.h5") ;;
  # The models are the job's [measure] models; the database is shared by
  # every job that measures into the same OUT (merged under its lock).
  measure) files=(--db "$out/costs.h5" --backend "${TASO_MEASURE_BACKEND:-cpu}") ;;
  # One run per model: the array task's model, or (outside an array, e.g.
  # by hand) every model in turn. The backend must be the one measure
  # timed, so that costs.h5's rows are the ones looked up.
  optimize)
    [ -f "$out/substitutions.h5" ] || die "$out/substitutions.h5 not found: run slurm/verify.sh first"
    files=(--substitutions "$out/substitutions.h5" --backend "${TASO_OPTIMIZE_BACKEND:-${TASO_MEASURE_BACKEND:-cpu}}")
    [ ! -f "$out/costs.h5" ] || files+=(--costs "$out/costs.h5")
    [ -z "${TASO_OPTIMIZE_DEVICE:-}" ] || files+=(--device "$TASO_OPTIMIZE_DEVICE")
    local m
    # shellcheck disable=SC2207,SC2086 # specs never hold blanks
    models=($(if [ -n "${TASO_MODELS:-}" ]; then printf '%s\n' $TASO_MODELS; else job_models "$job"; fi))
    [ ${#models[@]} -gt 0 ] || die "no models: give [measure] models in $job, or TASO_MODELS"
    local dup
    dup=$(for m in "${models[@]}"; do model_name "$m"; done | sort | uniq -d | head -1)
    [ -z "$dup" ] || die "two of the models would both write $out/$dup.opt.h5"
    if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
      [ "$SLURM_ARRAY_TASK_ID" -lt ${#models[@]} ] ||
        die "array task $SLURM_ARRAY_TASK_ID, but there are ${#models[@]} models: submit with --array=0-$((${#models[@]} - 1))"
      models=("${models[$SLURM_ARRAY_TASK_ID]}")
    fi
    ;;
  *) die "unknown stage '$stage'" ;;
  esac
  mkdir -p "$out" || die "cannot create the output folder $out"

  # One OpenMP thread per CPU Slurm gave each task.
  local cpus=${SLURM_CPUS_PER_TASK:-1} ntasks=${SLURM_NTASKS:-1} launcher=${TASO_LAUNCHER:-srun} launch mpi
  # taso-optimize runs on one rank; its parallelism is the task's CPUs.
  [ "$stage" != optimize ] || ntasks=1
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

  echo "taso $stage: Slurm job ${SLURM_JOB_ID:-none} (${SLURM_JOB_NAME:-by hand}) on $(hostname)," \
    "$ntasks tasks x $cpus CPUs, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "job $job; output $out"
  # One run, or one per model for optimize; the exit status is the last
  # failure's, so that afterok holds back what follows a failed model.
  local spec cmd start status=0 s
  for spec in "${models[@]}"; do
    cmd=("${launch[@]}" "$tool" --job "$job" "${files[@]}")
    # --fresh: a job run again replaces the model it wrote (only a model)
    [ -z "$spec" ] || cmd+=(--model "$spec" --out "$out/$(model_name "$spec").opt.h5" --fresh)
    printf '+'
    printf ' %q' "${cmd[@]}"
    echo
    start=$SECONDS s=0
    "${cmd[@]}" || s=$?
    echo "taso $stage: exit status $s after $((SECONDS - start)) s"
    [ $s -eq 0 ] || status=$s
  done
  exit $status
}
