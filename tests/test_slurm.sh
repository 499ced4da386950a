#!/usr/bin/env bash
# The Slurm scripts on a real single-node Slurm: munged, slurmctld and
# slurmd started here with every file in a temporary folder, then
# `sbatch slurm/pipeline.sh` on jobs/smoke.ini (redundancy off) must give the three
# artifacts and logs, with the exact launch lines; a stage started with the
# mpirun fallback must work too; a missing job file must be refused before
# anything is queued, and a failing stage must cancel the rest of the chain.
# The daemons are stopped by their process ids on every exit path.
#
# Missing packages (slurmctld slurmd slurm-client munge) are installed
# first. Where Slurm cannot be started (not root, no packages, a daemon
# that does not come up) it says why and exits 77, which ctest reports as
# skipped. ctest provides TASO_SOURCE_DIR, TASO_BIN_DIR and the Open MPI
# settings for root.
set -u
src=${TASO_SOURCE_DIR:?set TASO_SOURCE_DIR}
bin=${TASO_BIN_DIR:?set TASO_BIN_DIR}
job=$src/jobs/smoke.ini
deadline=$((SECONDS + 170)) # for all jobs together; ctest's own limit is above it

skip() {
  echo "SKIP: $*"
  exit 77
}
failed=0
ok() { echo "ok: $1"; }
bad() {
  echo "FAIL: $1"
  failed=$((failed + 1))
}

[ "$(id -u)" -eq 0 ] || skip "starting slurmctld, slurmd and munged here needs root"

packages=(slurmctld slurmd slurm-client munge)
missing=()
for p in "${packages[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "+ apt-get install -y ${missing[*]}"
  { DEBIAN_FRONTEND=noninteractive apt-get update -q &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"; } >/tmp/taso-slurm-apt.$$ 2>&1 ||
    { tail -5 /tmp/taso-slurm-apt.$$; rm -f /tmp/taso-slurm-apt.$$; skip "cannot install ${missing[*]}"; }
  rm -f /tmp/taso-slurm-apt.$$
fi

dir=$(mktemp -d /tmp/taso-slurm.XXXXXX)
chmod 755 "$dir" # munged wants its socket's folders searchable by all
pidfiles=("$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid")
stop_all() {
  local f pid i
  # Jobs first, so that no job step outlives slurmd.
  [ -f "$dir/slurm.conf" ] && SLURM_CONF=$dir/slurm.conf timeout 10 scancel --quiet --user=root 2>/dev/null
  for f in "${pidfiles[@]}"; do
    pid=$(cat "$f" 2>/dev/null) || continue
    kill "$pid" 2>/dev/null || continue
    for i in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null && echo "stopped $f's $pid with SIGKILL"
  done
  if [ "$failed" -ne 0 ]; then
    for f in "$dir"/*.log "$dir"/submit/logs/*; do
      [ -f "$f" ] && { echo "---- $f"; tail -30 "$f"; }
    done
  fi
  rm -rf "$dir"
}
trap stop_all EXIT
# jobs/smoke.ini with its axioms named absolutely and validate's redundancy
# check off: what is tested here is the scripts and their chain; the
# redundancy phase (a minute of Z3 on 2 ranks, twice here) is tested by
# test_validate_tools and test_tools.
sed -e "s|^axioms = data/axioms|axioms = $src/data/axioms|" -e 's/^\[validate\]$/[validate]\nredundancy = off/' \
  "$job" >"$dir/smoke.ini"
job=$dir/smoke.ini
trap 'exit 1' INT TERM

# munged with its own key, socket, pid, log and seed in $dir.
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/submit"
/usr/sbin/mungekey --create --keyfile="$dir/munge/munge.key" ||
  skip "mungekey cannot create a key"
/usr/sbin/munged --force --socket="$dir/munge/socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
  --seed-file="$dir/munge/munged.seed" ||
  { cat "$dir/munge/munged.log" 2>/dev/null; skip "munged does not start"; }

# Two free TCP ports, so that this cluster meets no other on the machine.
port_free() { ! grep -qi ":$(printf '%04X' "$1") " /proc/net/tcp /proc/net/tcp6 2>/dev/null; }
ports=()
for p in $(shuf -i 20000-60000 -n 50); do
  port_free "$p" && port_free $((p + 1)) && ports=("$p" $((p + 1))) && break
done
[ ${#ports[@]} -eq 2 ] || skip "no two free TCP ports"

node=$(uname -n)
node=${node%%.*} # hostname -s
cat >"$dir/slurm.conf" <<EOF
ClusterName=tasotest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=${ports[0]}
SlurmdPort=${ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$dir/slurm.conf
echo "+ SLURM_CONF=$SLURM_CONF slurmctld; slurmd (ports ${ports[*]})"
/usr/sbin/slurmctld || skip "slurmctld does not start (see $dir/slurmctld.log)"
/usr/sbin/slurmd -N "$node" || skip "slurmd does not start (see $dir/slurmd.log)"
up=
for i in $(seq 60); do
  [ "$(sinfo -h -N -o %t 2>/dev/null)" = idle ] && up=yes && break
  sleep 0.5
done
if [ -z "$up" ]; then
  sinfo
  tail -5 "$dir/slurmctld.log" "$dir/slurmd.log"
  skip "the node did not become idle within 30 s"
fi
ok "single-node Slurm is up ($(sinfo -h -o '%P %D %t %c'), $(sbatch --version))"

state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
# wait_done ID...: until none is pending or running, within the deadline.
wait_done() {
  local id s busy
  while :; do
    busy=
    for id in "$@"; do
      s=$(state "$id")
      case $s in PENDING | RUNNING | CONFIGURING | COMPLETING | "") busy=$id ;; esac
    done
    [ -z "$busy" ] && return 0
    if [ $SECONDS -ge $deadline ]; then
      echo "timed out waiting for job $busy ($(state "$busy"))"
      squeue
      return 1
    fi
    sleep 0.5
  done
}
log_of() { scontrol show job "$1" | sed -n 's/^ *StdOut=//p'; }

cd "$dir/submit" || exit 1
# sbatch passes this environment on (--export=ALL): the build's tools and,
# from ctest, Open MPI's settings for root.
export TASO_BIN=$bin

# ---- the pipeline, submitted with sbatch --------------------------------

echo "+ sbatch --parsable $src/slurm/pipeline.sh $job out"
mkdir -p logs
pid=$(sbatch --parsable "$src/slurm/pipeline.sh" "$job" out)
if [ -z "$pid" ]; then
  bad "sbatch slurm/pipeline.sh"
  exit 1
fi
wait_done "$pid" || bad "pipeline job $pid finished in time"
plog=$(log_of "$pid")
ids=$(sed -n 's/^generate \([0-9]*\), verify \([0-9]*\), validate \([0-9]*\)$/\1 \2 \3/p' "$plog")
[ "$(state "$pid")" = COMPLETED ] && [ -n "$ids" ] && ok "pipeline job $pid submitted jobs $ids" ||
  { bad "pipeline job $pid"; cat "$plog"; exit 1; }
grep -q -- "--kill-on-invalid-dep=yes --dependency=afterok:" "$plog" &&
  ok "stages chained with afterok" || bad "no afterok chain in $plog"
# shellcheck disable=SC2086
wait_done $ids || bad "the three stages finished in time"
read -r -a jid <<<"$ids"
stages=(generate verify validate)
files=(candidates substitutions validation)
kinds=(taso-candidates taso-substitutions taso-validation)
for i in 0 1 2; do
  id=${jid[$i]}
  s=${stages[$i]}
  log=$(log_of "$id")
  if [ "$(state "$id")" = COMPLETED ] && [ "$log" = "$dir/submit/logs/taso-$s-$id.out" ] &&
    grep -q "^+ srun .*--mpi=pmix $bin/taso-$s " "$log" &&
    grep -q "^taso-$s: .* -> $dir/submit/out/${files[$i]}.h5 (.*, [0-9]* ranks)$" "$log" &&
    grep -q "^taso $s: exit status 0" "$log"; then
    ok "$s job $id completed; its log has the srun line and the summary"
  else
    bad "$s job $id: $(state "$id")"
    cat "$log"
  fi
  f=out/${files[$i]}.h5
  if "$bin/taso-show" "$f" >show.txt 2>&1 && grep -q "^$f: ${kinds[$i]}$" show.txt; then
    ok "taso-show $f"
  else
    bad "taso-show $f"
    cat show.txt
  fi
done
grep -q "^  run  *4 ranks" <("$bin/taso-show" out/candidates.h5) &&
  ok "generate ran on the 4 tasks of its #SBATCH line" || bad "candidates.h5 was not made on 4 ranks"

# The same substitutions as the tools give under plain mpiexec on 1 rank.
listing() { "$bin/taso-show" "$1" | sed -n '/^substitutions/,$p'; }
"${MPIEXEC:-mpiexec}" -n 1 "$bin/taso-generate" --job "$job" --out direct-c.h5 >/dev/null &&
  "${MPIEXEC:-mpiexec}" -n 1 "$bin/taso-verify" --in direct-c.h5 --out direct-s.h5 >/dev/null
listing out/substitutions.h5 >slurm.txt
listing direct-s.h5 >direct.txt
if [ -s direct.txt ] && cmp -s slurm.txt direct.txt && grep -q ' => .*\[proved\]$' slurm.txt; then
  ok "substitutions.h5 equals a direct mpiexec run ($(grep -c '\[proved\]$' slurm.txt) proved)"
else
  bad "substitutions.h5 differs from a direct mpiexec run"
  diff slurm.txt direct.txt | head -20
fi

# ---- the mpirun fallback, and the defaults ----------------------------------
# A lone stage with no arguments, from a submit directory laid out like the
# repository (jobs/smoke.ini, data/, the executables at a relative
# TASO_BIN): the defaults are resolved from the submit directory.

mkdir -p repo/jobs repo/logs
cp "$job" repo/jobs/
ln -s "$src/data" repo/data
ln -s "$bin" repo/bin
echo "+ (cd repo && TASO_LAUNCHER=mpirun TASO_BIN=bin sbatch --parsable --ntasks=2 $src/slurm/validate.sh)"
id=$(cd repo && TASO_LAUNCHER=mpirun TASO_BIN=bin sbatch --parsable --ntasks=2 "$src/slurm/validate.sh")
wait_done "$id"
log=$(log_of "$id")
if [ "$(state "$id")" = COMPLETED ] && [ "$log" = "$dir/submit/repo/logs/taso-validate-$id.out" ] &&
  grep -q "^+ mpirun -n 2 --bind-to none $dir/submit/repo/bin/taso-validate --job $dir/submit/repo/jobs/smoke.ini --out $dir/submit/repo/out/smoke/validation.h5$" "$log" &&
  "$bin/taso-show" repo/out/smoke/validation.h5 | grep -q "^  run  *2 ranks"; then
  ok "validate.sh with TASO_LAUNCHER=mpirun and the default job and output"
else
  bad "validate.sh with TASO_LAUNCHER=mpirun: $(state "$id")"
  cat "$log"
fi

# ---- bad input --------------------------------------------------------------

before=$(squeue -h | wc -l)
bash "$src/slurm/pipeline.sh" "$dir/missing.ini" out3 >out.txt 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "^pipeline.sh: error: job file $dir/missing.ini not found" out.txt &&
  [ "$(squeue -h | wc -l)" -eq "$before" ] && [ ! -e out3 ]; then
  ok "a missing job file is refused before anything is queued"
else
  bad "missing job file: status $rc"
  cat out.txt
fi

# A job file that exists but is malformed fails inside the generate job;
# --kill-on-invalid-dep must then cancel verify and validate.
printf '[job]\nname = bad\nthis is not ini\n' >bad.ini
TASO_SBATCH_ARGS="--time=00:05:00" TASO_GENERATE_ARGS="--ntasks=2 --cpus-per-task=2" \
  bash "$src/slurm/pipeline.sh" bad.ini out4 >out.txt 2>&1
# shellcheck disable=SC2046
set -- $(sed -n 's/^generate \([0-9]*\), verify \([0-9]*\), validate \([0-9]*\)$/\1 \2 \3/p' out.txt)
if [ $# -eq 3 ] && wait_done "$@" && [ "$(state "$1")" = FAILED ] &&
  [ "$(state "$2")" = CANCELLED ] && [ "$(state "$3")" = CANCELLED ] &&
  grep -q "^taso-generate: error: .*bad.ini:3" "$(log_of "$1")" &&
  grep -q "^+ srun --ntasks=2 --cpus-per-task=2 " "$(log_of "$1")" &&
  [ "$(grep -c "^+ sbatch --parsable --kill-on-invalid-dep=yes --time=00:05:00 " out.txt)" -eq 3 ]; then
  ok "a failing stage cancels the rest of the chain; its log names bad.ini:3 (TASO_*_ARGS applied)"
else
  bad "failing chain: $(for j in "$@"; do printf '%s=%s ' "$j" "$(state "$j")"; done)"
  cat out.txt
  [ $# -ge 1 ] && cat "$(log_of "$1")"
fi

echo "$failed failed"
[ "$failed" -eq 0 ]
