#!/usr/bin/env bash
# ResNet-50 v1 at batch 1, 224x224, on the cpu backend (oneDNN) with 2
# threads: end-to-end latency, and the runtime's overhead (end to end
# against the sum of the steps timed alone; the target is within 10%).
# Usage: bench/resnet50_cpu.sh [BUILD_DIR] [RUNS]   (default build, 50)
# Each command is echoed so that a run can be repeated from its log.
set -euo pipefail
build=${1:-build}
runs=${2:-50}
run=$build/bin/taso-run
[ -x "$run" ] || { echo "resnet50_cpu.sh: $run not built (cmake --build $build)" >&2; exit 2; }

echo "# $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores available"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for layout in nchw choose nhwc; do
  cmd="$run --model resnet50:stem=1 --backend cpu --threads 2 --runs $runs --warmup 5 --profile --layout $layout"
  echo "+ $cmd"
  # the per-step table is long: keep the summary lines
  $cmd | grep -E '^(cpu|model|end to end|sum of steps)|^  [a-z_0-9]+ +[0-9.]+ ms'
done
