#!/usr/bin/env bash
# Capture real GPU telemetry of a real (small) GPT pre-training run, for data/telemetry/.
#
# Runs on a machine with NVIDIA GPUs, from the repository root, with python3 holding torch (CUDA),
# nvidia-ml-py, polars and mlperf-logging (trainperf itself is taken from src/ via PYTHONPATH).
# For each of a 1-GPU run and, when two GPUs are present, a 2-GPU DDP run (so NVLink traffic shows):
#   versions.txt   hardware, driver, software versions, the commands
#   idle.prom      20 s of telemetry with the GPUs idle
#   telemetry.prom telemetry at 1 s while `python -m trainperf.capture.smoke` trains (collector wraps it)
#   gpt_smoke/result_0.txt   the MLPerf-format log of the run
#   console.log    the run's output
#   trace/rank<r>.pt.trace.json.gz   torch.profiler Chrome trace per rank, when PROFILE is set
# and packs each run folder as OUTDIR/<run-id>.tar.gz.
# Usage: scripts/capture_real_telemetry.sh OUTDIR [PRESET] [MINUTES]
# Environment: INTERVAL  collector interval in s (default 1)
#              PROFILE   SKIP:WARMUP:ACTIVE steps of a torch.profiler schedule (trainperf.capture.profile),
#                        e.g. 250:2:8; empty (default): no trace
#              ONLY_1GPU set to 1 to skip the 2-GPU DDP run on a machine with several GPUs
set -euo pipefail
OUTDIR=${1:?usage: $0 OUTDIR [PRESET] [MINUTES]}
PRESET=${2:-1.3b}
MINUTES=${3:-3}
PY=${PYTHON:-python3}
INTERVAL=${INTERVAL:-1}
PROFILE=${PROFILE:-}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" CUDA_DEVICE_ORDER=PCI_BUS_ID
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
STAMP=$(date -u +%Y%m%dT%H%MZ)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cd 'A-Za-z0-9' | tr 'A-Z' 'a-z' | sed 's/^nvidia//')

capture() {  # capture <ngpus>
  local n=$1 gpus run
  gpus=$(seq -s, 0 $((n - 1)))
  run="${GPU}_${n}gpu_${PRESET}_${STAMP}"
  local d="$OUTDIR/$run"
  mkdir -p "$d"
  local opts=(--preset "$PRESET" --minutes "$MINUTES" --out-dir "$d/gpt_smoke")
  if [ -n "$PROFILE" ]; then
    IFS=: read -r p_skip p_warm p_act <<<"$PROFILE"
    opts+=(--profile-dir "$d/trace" --profile-skip "$p_skip" --profile-warmup "$p_warm" --profile-active "$p_act")
  fi
  local train=("$PY" -m trainperf.capture.smoke "${opts[@]}")
  if [ "$n" -gt 1 ]; then train=("$PY" -m torch.distributed.run --standalone --nproc-per-node "$n" -m trainperf.capture.smoke "${opts[@]}"); fi
  {
    echo "date: $(date -u -Iseconds)"; echo "host: $(hostname)"; echo "command: ${train[*]}"
    echo "collector: $PY -m trainperf.capture.collect --interval $INTERVAL --gpus $gpus --out telemetry.prom -- <command>"
    nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,power.limit,clocks.max.sm,memory.total --format=csv
    "$PY" -c "import torch, sys; print('python', sys.version.split()[0]); print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
    "$PY" -m pip list 2>/dev/null | grep -Ei '^(torch|nvidia-ml-py|mlperf-logging|polars) ' || true
    nvidia-smi topo -m || true
  } > "$d/versions.txt" 2>&1
  CUDA_VISIBLE_DEVICES=$gpus "$PY" -m trainperf.capture.collect --interval 1 --gpus "$gpus" --out "$d/idle.prom" --duration 20
  CUDA_VISIBLE_DEVICES=$gpus "$PY" -m trainperf.capture.collect --interval "$INTERVAL" --gpus "$gpus" --out "$d/telemetry.prom" -- "${train[@]}" > "$d/console.log" 2>&1
  tar -C "$OUTDIR" -czf "$OUTDIR/$run.tar.gz" "$run"
  echo "captured $run: $(du -sh "$d" | cut -f1)"
}

capture 1
if [ "$NGPU" -ge 2 ] && [ "${ONLY_1GPU:-0}" != 1 ]; then capture 2; fi
