#!/usr/bin/env bash
# The one prepared GPU check (issue 31), for one GPU and under 8 minutes:
#   1. test_gpu (the backend against the reference; replay, kept
#      algorithms, the device clock);
#   2. every built-in model (and resnet50:bn=1) on the gpu backend against
#      the cpu backend's outputs (--save / --expect), with its end-to-end
#      latency at batch 1, median of 50: FP32 step by step (--no-graph),
#      FP32 replayed as one CUDA graph, and TF32 replayed (--tf32); for
#      the five CNNs TF32 also with cuDNN's legacy algorithms only and with
#      the graph API's fused convolutions (TASO_GPU_CONV_API, _FUSED);
#   3. PyTorch on the same GPU, where `import torch, torchvision` works:
#      torchvision's networks with batch normalization removed, eager and
#      replayed as a CUDA graph, PyTorch's default math (TF32 convolutions)
#      and FP32;
#   4. the measuring rate: taso-measure --backend gpu over the main job's
#      configurations (scripts/setup.sh pipeline's: resnet50:bn=1 with
#      --expand by the workstation and batch-normalization rules);
#   5. the cost model: each model's sum of planned steps' database costs
#      (taso-measure --estimate) over its end-to-end median (part 2), and
#      over the median of a run making the database's calls (--costs);
#   6. taso-optimize --backend gpu of resnet50:bn=1, nasrnn, bert and
#      squeezenet with the speedups it measured end to end, and equality
#      saturation (--search eqsat, issue 35) of nasrnn and bert.
# Each command runs under its own timeout, each part by a time by which it
# ends (what an earlier part leaves goes to the later ones), and all under
# a total time guard, so that one failure or a slow part does not stop the
# rest; every command is echoed (the "+" lines at the end) so that any of
# them can be repeated.
#
# From the bundle (../shared/tools/gpu-bundle.sh BUILD OUT.tar.xz bench
# [out/substitutions.h5 out/batchnorm.h5]), on the GPU host:
#   mkdir -p /opt/b && tar xJf OUT.tar.xz -C /opt/b && . /opt/b/taso/env.sh &&
#     cd /opt/b/taso && bash bench/gpu.sh
# From a source tree: bench/gpu.sh [BUILD_DIR] (default build).
# GPU_SH_SECONDS sets the total guard (default 460 s); GPU_SH_LOGS=DIR keeps
# every command's log there, packed in DIR/gpu-logs.tar.gz (one file, as a
# device tool's $OUT brings back).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=""
[ $# -ge 1 ] && { build=$(cd "$1" && pwd) || exit 2; }
cd "$root" || exit 2
if [ -n "$build" ]; then
  bin=$build/bin tests=$build/tests
elif [ -x bin/taso-run ]; then # the bundle: bin/ and tests/ at its root
  bin=bin tests=tests
else
  bin=build/bin tests=build/tests
fi
[ -x "$bin/taso-run" ] || { echo "gpu.sh: no $bin/taso-run (give the build folder)" >&2; exit 2; }
start=$(date +%s)
total=${GPU_SH_SECONDS:-460}
deadline=$((start + total))
part_end=$deadline
# part N: the time by which part N ends, as a share of the total (of 460 s:
# test_gpu 60, models 150, PyTorch 40, measuring 55, estimates and the
# runs with the database's calls 65, the optimizer the rest)
part() {
  local ends=(0 60 210 250 305 370 460)
  part_end=$((start + total * ends[$1] / 460))
}
tmp=$(mktemp -d /tmp/taso-gpu.XXXXXX)
keep_logs() {
  [ -n "${GPU_SH_LOGS:-}" ] && mkdir -p "$GPU_SH_LOGS" &&
    (cd "$tmp" && find . -maxdepth 1 -type f \( -name '*.log' -o -name commands \) -print0 |
      tar czf "$GPU_SH_LOGS/gpu-logs.tar.gz" --null -T -)
  rm -rf "$tmp"
}
trap keep_logs EXIT
: >"$tmp/commands"
mpirun_cmd=(mpirun -n 2)
[ "$(nproc)" -ge 2 ] || mpirun_cmd+=(--oversubscribe)

left() {
  local end=$part_end
  [ "$deadline" -lt "$end" ] && end=$deadline
  echo $((end - $(date +%s)))
}
# guard CAP LOG CMD...: runs CMD under a timeout of CAP seconds or what the
# total guard leaves, its output in LOG; 124 when cut, 125 when skipped
guard() {
  local cap=$1 log=$2 t
  shift 2
  t=$(left)
  [ "$cap" -lt "$t" ] && t=$cap
  echo "+ $*" >>"$tmp/commands"
  if [ "$t" -lt 5 ]; then
    echo "skipped: the total time guard" >"$log"
    return 125
  fi
  timeout -k 5 "$t" "$@" >"$log" 2>&1
}
# status RC: a word for a guarded command's exit status
status() {
  case $1 in 0) echo ok ;; 124 | 137) echo "timed out" ;; 125) echo "skipped (time guard)" ;; *) echo "failed ($1)" ;; esac
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else print "-" }'; }
field() { sed -n "$1" "$2" | head -1; } # field SED_EXPR FILE: the first match
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

echo "# bench/gpu.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
echo "# ${gpu:-nvidia-smi: none}"
echo "# $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; binaries $bin"

# ---- 1. test_gpu -------------------------------------------------------------
echo
part 1
echo "## 1. test_gpu"
if [ -x "$tests/test_gpu" ]; then
  guard 120 "$tmp/test_gpu.log" "$tests/test_gpu"
  rc=$?
  printf '| %-10s | %-22s | %s |\n' test result checks
  printf '| %-10s | %-22s | %s |\n' test_gpu "$(case $rc in 0) echo passed ;; 77) echo skipped ;; *) status $rc ;; esac)" \
    "$(tail -1 "$tmp/test_gpu.log")"
  # the device, what the timing and replay checks print, and any failure
  grep -E '^gpu:|^  (conv 8x64x56x56|matmul 64x1024|prepare:|reused:|TF32, given|graph call|summand in place|given engine|TF32 call)| n(ch|hw)[wc]: |FAILED|failed|SKIP' \
    "$tmp/test_gpu.log" | head -40 | sed 's/^/    /'
else
  echo "test_gpu: not in this bundle ($tests/test_gpu)"
fi

# ---- 2. models on the gpu against the cpu, and their latencies -----------------
echo
part 2
echo "## 2. built-in models: gpu against cpu outputs; latency at batch 1, median of 50 runs"
models=$(ls data/models 2>/dev/null | sed -n 's/\.model$//p')
[ -n "$models" ] || models="bert inception_v3 mobilenet_v2 nasnet_a nasrnn resnet50 resnext50 squeezenet"
specs=""
for name in $models; do
  [ "$name" = resnet50 ] && specs="$specs resnet50:stem=1 resnet50:bn=1" || specs="$specs $name"
done
declare -A fp32 tf32 tf32_legacy tf32_fused steps cpu_rel tf32_rel
rel() { field 's/^--expect: largest difference .* absolute, \([^ ]*\) relative.*/\1/p' "$1"; }
med() { field 's/^end to end: median \([0-9.]*\) ms.*/\1/p' "$1"; }
printf '| %-16s | %-10s | %-10s | %10s | %10s | %10s | %10s | %10s | %s |\n' model "FP32 rel" \
  "TF32 rel" "step ms" "graph ms" "TF32 ms" "TF32 leg." "TF32 fused" "runs"
for spec in $specs; do
  name=${spec//[:=,]/_}
  ref=$tmp/$name.cpu
  mkdir -p "$ref"
  guard 90 "$tmp/$name.cpu.log" "$bin/taso-run" --model "$spec" --backend cpu --runs 0 --save "$ref"
  rc=$?
  if [ $rc != 0 ]; then
    printf '| %-16s | cpu run %s: %s |\n' "$spec" "$(status $rc)" "$(tail -1 "$tmp/$name.cpu.log")"
    continue
  fi
  # tolerance 1: the difference is judged here, so that timing always follows
  guard 90 "$tmp/$name.fp32.log" "$bin/taso-run" --model "$spec" --backend gpu --expect "$ref" \
    --tolerance 1 --runs 50 --warmup 10
  rc32=$?
  guard 90 "$tmp/$name.tf32.log" "$bin/taso-run" --model "$spec" --backend gpu --tf32 \
    --expect "$ref" --tolerance 1 --runs 50 --warmup 10
  rctf=$?
  guard 90 "$tmp/$name.step.log" "$bin/taso-run" --model "$spec" --backend gpu --no-graph \
    --runs 50 --warmup 10
  rcst=$?
  case $spec in resnet50:stem=1 | resnext50 | squeezenet | mobilenet_v2 | inception_v3)
    # the same with cuDNN's legacy algorithms only (the graph API's engines not timed)
    TASO_GPU_CONV_API=legacy guard 60 "$tmp/$name.tf32legacy.log" "$bin/taso-run" --model "$spec" \
      --backend gpu --tf32 --runs 50 --warmup 10
    tf32_legacy[$spec]=$(med "$tmp/$name.tf32legacy.log")
    # and with the graph API's convolutions fused with bias and ReLU timed too
    TASO_GPU_CONV_FUSED=1 guard 60 "$tmp/$name.tf32fused.log" "$bin/taso-run" --model "$spec" \
      --backend gpu --tf32 --expect "$ref" --tolerance 1 --runs 50 --warmup 10
    fused_ms=$(med "$tmp/$name.tf32fused.log")
    [ -n "$fused_ms" ] && tf32_fused[$spec]="$fused_ms ($(rel "$tmp/$name.tf32fused.log"))"
    ;;
  esac
  cpu_rel[$spec]=$(rel "$tmp/$name.fp32.log")
  tf32_rel[$spec]=$(rel "$tmp/$name.tf32.log")
  fp32[$spec]=$(med "$tmp/$name.fp32.log")
  tf32[$spec]=$(med "$tmp/$name.tf32.log")
  steps[$spec]=$(med "$tmp/$name.step.log")
  verdict=$(awk -v r="${cpu_rel[$spec]:-x}" 'BEGIN { print (r != "x" && r + 0 <= 1e-4) ? "" : " DIFFERS" }')
  runs=$(field 's/^runs: //p' "$tmp/$name.fp32.log")
  [ $rc32 = 0 ] || runs="FP32 $(status $rc32): $(tail -1 "$tmp/$name.fp32.log")"
  [ $rctf = 0 ] || runs="$runs; TF32 $(status $rctf)"
  [ $rcst = 0 ] || runs="$runs; --no-graph $(status $rcst)"
  printf '| %-16s | %-10s | %-10s | %10s | %10s | %10s | %10s | %10s | %s |\n' "$spec" \
    "${cpu_rel[$spec]:--}$verdict" "${tf32_rel[$spec]:--}" "${steps[$spec]:--}" "${fp32[$spec]:--}" \
    "${tf32[$spec]:--}" "${tf32_legacy[$spec]:--}" "${tf32_fused[$spec]:--}" "${runs:--}"
done
echo "(rel: largest |gpu - cpu| over the largest |cpu| output value; FP32 must be <= 1e-4;"
echo " step: one launch per step; graph: the plan replayed as one CUDA graph; TF32: --tf32, replayed;"
echo " TF32 leg.: the same with TASO_GPU_CONV_API=legacy, cuDNN's legacy algorithms only;"
echo " TF32 fused: with TASO_GPU_CONV_FUSED=1, the graph API's conv+bias+ReLU graphs timed too (rel))"

# ---- 3. PyTorch ------------------------------------------------------------------
echo
part 3
echo "## 3. PyTorch on the same GPU (torchvision, batch norm removed, batch 1, median of 50)"
declare -A pt_eager pt_graph pt_fp32
# Python without the bundle's own libraries (env.sh puts them first), which
# could shadow the ones PyTorch was built against; the host's CUDA stays
py=(env "LD_LIBRARY_PATH=$(echo "${LD_LIBRARY_PATH:-}" | tr ':' '\n' | grep -v "^$root/" | paste -sd:)" python3)
if "${py[@]}" -c 'import torch, torchvision' >/dev/null 2>&1; then
  cat >"$tmp/torch_bench.py" <<'PY'
import statistics, sys, time
import torch, torchvision

def strip_bn(m):
    for name, child in m.named_children():
        if isinstance(child, torch.nn.BatchNorm2d):
            setattr(m, name, torch.nn.Identity())
        else:
            strip_bn(child)
    return m

def median_ms(fn, runs=50, warmup=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)

nets = {"resnet50": ("resnet50", 224), "resnext50": ("resnext50_32x4d", 224),
        "squeezenet": ("squeezenet1_1", 224), "mobilenet_v2": ("mobilenet_v2", 224),
        "inception_v3": ("inception_v3", 299)}
for ours, (tv, size) in nets.items():
    kw = {"aux_logits": False, "init_weights": False} if tv == "inception_v3" else {}
    try:
        net = strip_bn(getattr(torchvision.models, tv)(weights=None, **kw)).eval().cuda()
        x = torch.randn(1, 3, size, size, device="cuda")
        out = {}
        with torch.no_grad():
            for mode, tf32 in (("default", True), ("fp32", False)):
                torch.backends.cudnn.allow_tf32 = tf32
                eager = median_ms(lambda: net(x))
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        net(x)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = net(x)
                out[mode] = (eager, median_ms(g.replay))
        print(f"torch {ours} {tv} {out['default'][0]:.3f} {out['default'][1]:.3f} "
              f"{out['fp32'][0]:.3f} {out['fp32'][1]:.3f}", flush=True)
    except Exception as e:  # one network's failure is its line
        print(f"torch {ours} {tv} failed: {e}", flush=True)
print("torch version", torch.__version__, torchvision.__version__, torch.cuda.get_device_name(0))
PY
  guard 150 "$tmp/torch.log" "${py[@]}" "$tmp/torch_bench.py"
  rc=$?
  printf '| %-14s | %-16s | %12s | %12s | %12s | %12s |\n' model torchvision "eager ms" \
    "graph ms" "FP32 eager" "FP32 graph"
  while read -r _ ours tv a b c d; do
    printf '| %-14s | %-16s | %12s | %12s | %12s | %12s |\n' "$ours" "$tv" "$a" "$b" "$c" "$d"
    pt_eager[$ours]=$a pt_graph[$ours]=$b pt_fp32[$ours]=$d
  done < <(grep '^torch [a-z]' "$tmp/torch.log" | grep -v '^torch version')
  grep '^torch version' "$tmp/torch.log" | sed 's/^/    /'
  [ $rc = 0 ] || { echo "    python3 $(status $rc):"; tail -3 "$tmp/torch.log" | sed 's/^/    /'; }
  echo "(eager and graph: PyTorch's default math, TF32 convolutions; FP32: cudnn.allow_tf32 off)"
else
  echo "PyTorch: not available here (python3 -c 'import torch, torchvision' fails)"
fi

# ---- 4. the measuring rate ------------------------------------------------------------
echo
part 4
echo "## 4. measuring rate: taso-measure --backend gpu, the main job's configurations"
subst=out/substitutions.h5 bnrules=out/batchnorm.h5
if [ ! -f "$subst" ] || [ ! -f "$bnrules" ]; then
  subst=$tmp/substitutions.h5 bnrules=$tmp/batchnorm.h5
  t0=$(date +%s.%N)
  guard 60 "$tmp/gen1.log" "${mpirun_cmd[@]}" "$bin/taso-generate" --job jobs/workstation.ini \
    --out "$tmp/candidates.h5" &&
    guard 60 "$tmp/gen2.log" "${mpirun_cmd[@]}" "$bin/taso-verify" --job jobs/workstation.ini \
      --in "$tmp/candidates.h5" --out "$subst" &&
    guard 60 "$tmp/gen3.log" "${mpirun_cmd[@]}" "$bin/taso-generate" --job jobs/batchnorm.ini \
      --out "$tmp/bn.candidates.h5" &&
    guard 60 "$tmp/gen4.log" "${mpirun_cmd[@]}" "$bin/taso-verify" --job jobs/batchnorm.ini \
      --in "$tmp/bn.candidates.h5" --out "$bnrules"
  rc=$?
  echo "rules: no out/*.h5 in the bundle; generated and verified here in $(secs "$t0") s ($(status $rc))"
  [ $rc = 0 ] || tail -3 "$tmp"/gen*.log | sed 's/^/    /'
else
  echo "rules: $subst and $bnrules (bundled)"
fi
db=$tmp/costs.h5
if [ -f "$subst" ] && [ -f "$bnrules" ]; then
  t0=$(date +%s.%N)
  guard 150 "$tmp/measure.log" "$bin/taso-measure" --job jobs/workstation.ini --backend gpu \
    --model resnet50:bn=1 --expand --substitutions "$subst,$bnrules" --db "$db"
  rc=$?
  wall=$(secs "$t0")
  n=$(field 's/^taso-measure: \([0-9]*\) configurations, \([0-9]*\) to measure.*/\2/p' "$tmp/measure.log")
  busy=$(field 's/.*: \([0-9]*\) measurements .* busy \([0-9.]*\) s.*/\1 \2/p' "$tmp/measure.log")
  printf '| %-14s | %14s | %10s | %10s | %18s | %s |\n' job configurations "wall s" "busy s" \
    "configurations/s" status
  printf '| %-14s | %14s | %10s | %10s | %18s | %s |\n' resnet50:bn=1 "${n:--}" "$wall" \
    "${busy#* }" "$(ratio "${busy%% *}" "${busy#* }") ($(ratio "${n:-0}" "$wall") whole)" \
    "$(status $rc)"
  grep -E '^taso-measure: (device|[0-9]+ configurations:)' "$tmp/measure.log" | sed 's/^/    /'
  [ $rc = 0 ] || tail -3 "$tmp/measure.log" | sed 's/^/    /'
else
  echo "no rules: the measuring rate is not available"
fi

# ---- 5. the cost model against end to end ---------------------------------------------
echo
part 5
echo "## 5. cost model: sum of planned steps' costs (taso-measure --estimate) over end to end"
declare -A est
margs=()
for spec in $specs; do margs+=(--model "$spec"); done
guard 150 "$tmp/estimate.log" "$bin/taso-measure" --job jobs/workstation.ini --backend gpu \
  --db "$db" "${margs[@]}" --estimate
rc=$?
# each model again with the calls its costs were measured with (--costs):
# the cost model's own run, and a latency that does not depend on which of
# cuDNN's close algorithms this process would have chosen
declare -A dbrun
for spec in $specs; do
  name=${spec//[:=,]/_}
  guard 30 "$tmp/$name.db.log" "$bin/taso-run" --model "$spec" --backend gpu --costs "$db" \
    --runs 50 --warmup 10 && dbrun[$spec]=$(med "$tmp/$name.db.log")
done
printf '| %-16s | %10s | %10s | %8s | %10s | %8s | %s |\n' model "sum ms" "e2e ms" ratio \
  "db calls" ratio "calls taken"
for spec in $specs; do
  name=${spec//[:=,]/_}
  est[$spec]=$(sed -n "s/^taso-measure: estimate ${spec//\//\\/}: \([0-9.]*\) ms.*/\1/p" "$tmp/estimate.log" | head -1)
  printf '| %-16s | %10s | %10s | %8s | %10s | %8s | %s |\n' "$spec" "${est[$spec]:--}" \
    "${fp32[$spec]:--}" "$(ratio "${est[$spec]:-0}" "${fp32[$spec]:-0}")" "${dbrun[$spec]:--}" \
    "$(ratio "${est[$spec]:-0}" "${dbrun[$spec]:-0}")" \
    "$(field 's/^calls: \([0-9]*\) taken.*/\1/p' "$tmp/$name.db.log" 2>/dev/null)"
done
grep -E '^taso-measure: [0-9]+ configurations:' "$tmp/estimate.log" | sed 's/^/    /'
# the per-step term of the database (ms: median, fastest, spreads, runs)
"$bin/taso-show" "$db" 2>/dev/null | grep -m2 'dispatch:' | cut -c1-140 | sed 's/^ */    /'
[ $rc = 0 ] || { echo "    taso-measure --estimate $(status $rc):"; tail -3 "$tmp/estimate.log" | sed 's/^/    /'; }
echo "(e2e: the FP32 graph median of part 2; db calls: the same run with the database's"
echo " calls, taso-run --costs; the costs are FP32 too)"
# each step timed alone and inside step-by-step runs, against end to end:
# where the difference between the sum of costs and the run comes from
for spec in $specs resnet50:stem=1:tf32; do
  name=${spec//[:=,]/_}
  tf=()
  [ "${spec%:tf32}" != "$spec" ] && tf=(--tf32) spec=${spec%:tf32}
  guard 30 "$tmp/$name.profile.log" "$bin/taso-run" --model "$spec" --backend gpu "${tf[@]}" \
    --profile --runs 20 --warmup 5 || continue
  printf '    %-16s %s\n' "$spec${tf:+ --tf32}" \
    "$(grep -E '^sum of steps' "$tmp/$name.profile.log" | paste -sd';')"
done

# ---- 6. the optimizer on the gpu ----------------------------------------------------------
echo
part 6
echo "## 6. taso-optimize --backend gpu (costs from part 4-5's database; confirmed end to end)"
printf '| %-14s | %-12s | %9s | %9s | %6s | %9s | %9s | %6s | %8s | %s |\n' model search "cost ms" \
  "opt ms" x "run ms" "opt run" x explored "ended by"
opt_models="backtracking/resnet50:bn=1 backtracking/nasrnn eqsat/nasrnn backtracking/bert eqsat/bert
  backtracking/squeezenet"
remaining=6
for run in $opt_models; do
  search=${run%%/*} spec=${run#*/}
  name=${search}_${spec//[:=,]/_}
  rules=$subst
  [ "$spec" = resnet50:bn=1 ] && rules="$subst,$bnrules"
  # the search's seconds: an equal share of what is left, less the
  # start, the checks and the confirmation; at most 30
  tl=$(($(left) / remaining - 15))
  [ $tl -gt 30 ] && tl=30
  remaining=$((remaining - 1))
  if [ ! -f "$subst" ] || [ $tl -lt 5 ]; then
    printf '| %-14s | %-12s | %s |\n' "$spec" "$search" "skipped ($([ -f "$subst" ] && echo 'time guard' || echo 'no rules'))"
    continue
  fi
  costs=()
  [ -f "$db" ] && costs=(--costs "$db")
  how=(--job jobs/workstation.ini --chain --budget 100) # eqsat: its defaults, the time limit
  [ "$search" = eqsat ] && how=(--search eqsat)
  guard $((tl + 30)) "$tmp/$name.opt.log" "$bin/taso-optimize" "${how[@]}" \
    --backend gpu --model "$spec" --substitutions "$rules" "${costs[@]}" \
    --time-limit "$tl" --confirm-runs 20 --out "$tmp/$name.opt.h5"
  rc=$?
  log=$tmp/$name.opt.log
  read -r before after explored _ <<<"$(field \
    's/.*: cost \([^ ]*\) -> \([^ ]*\) ms (x[^)]*), \([0-9]*\) graphs explored.*/\1 \2 \3/p' "$log") - - -"
  read -r lat olat _ <<<"$(field \
    's/^taso-optimize: measured end to end \([^ ]*\) ms -> \([^ ]*\) ms .*/\1 \2/p' "$log") - -"
  ended=$(field 's/.*search ended by \(.*\)$/\1/p' "$log")
  grep -q 'the input graph is written' "$log" && ended="$ended, kept input"
  won=$(field 's/.*faster in \([0-9]* of [0-9]*\) pairs of runs.*/\1/p' "$log")
  [ -n "$won" ] && ended="$ended, won ${won/ of /\/}"
  [ $rc = 3 ] && ended="$ended, RESULT DIFFERS"
  [ $rc = 0 ] || [ $rc = 3 ] || ended="$(status $rc): $(tail -1 "$log")"
  printf '| %-14s | %-12s | %9s | %9s | %6s | %9s | %9s | %6s | %8s | %s |\n' "$spec" "$search" \
    "$before" "$after" \
    "$(ratio "$before" "$after")" "$lat" "$olat" "$(ratio "$lat" "$olat")" "$explored" "${ended:--}"
done
echo "(x: before over after; the measured x is taso-optimize's own paired end-to-end runs)"

# ---- the summary -----------------------------------------------------------------------------
echo
echo "## summary (ms, batch 1; PyTorch columns where available)"
printf '| %-16s | %9s | %9s | %9s | %9s | %9s | %9s | %8s |\n' model "step" "graph" "TF32" \
  "PT eager" "PT graph" "PT FP32 g" "cost/e2e"
for spec in $specs; do
  key=${spec%%:*}
  [ "$spec" = resnet50:bn=1 ] && key=none
  printf '| %-16s | %9s | %9s | %9s | %9s | %9s | %9s | %8s |\n' "$spec" "${steps[$spec]:--}" \
    "${fp32[$spec]:--}" "${tf32[$spec]:--}" "${pt_eager[$key]:--}" "${pt_graph[$key]:--}" \
    "${pt_fp32[$key]:--}" "$(ratio "${est[$spec]:-0}" "${dbrun[$spec]:-${fp32[$spec]:-0}}")"
done
echo "(cost/e2e: the sum of costs over the run making the database's calls, part 5)"
echo
echo "# $(( $(date +%s) - start )) s in all; commands:"
sed 's/^/#   /' "$tmp/commands"
