#!/usr/bin/env bash
# Multi-GPU capture: a GPT with tensor, pipeline and data parallelism (python -m trainperf.capture.parallel)
# on all GPUs of one host, under the telemetry collector (NVLink counters per GPU), with one
# torch.profiler trace per rank and the MLPerf log of rank 0. For data/traces/.
#
# Runs on a machine with several NVIDIA GPUs, from the repository root, with python3 holding torch
# (CUDA), nvidia-ml-py, polars and mlperf-logging (trainperf itself is taken from src/ via PYTHONPATH).
# NVLink multicast stays off (the variables below, also set by trainperf.capture.parallel itself).
# Writes OUTDIR/<run-id>/ with versions.txt, idle.prom, telemetry.prom, gpt_smoke/result_0.txt,
# trace/rank<r>.pt.trace.json.gz, console.log, and packs it as OUTDIR/<run-id>.tar.gz.
# Usage: scripts/capture_parallel.sh OUTDIR [PRESET] [MINUTES]
# Environment: TP, PP, DP        layout (default: trainperf.capture.parallel.auto_layout of the GPU count:
#                                2 -> 1x2x1, 4 -> 2x2x1, 8 -> 2x2x2)
#              MICRO_BATCHES     per step (default 8)
#              MICRO_BATCH_SIZE  sequences per micro-batch (default 2: GPipe keeps the activations of every
#                                micro-batch of the step; 1.3b with 4 x 8 failed on one H200, likely memory; 4 x 2 ran)
#              INTERVAL          collector interval in s (default 0.5)
#              PROFILE           SKIP:WARMUP:ACTIVE steps (default 20:2:4)
set -euo pipefail
OUTDIR=${1:?usage: $0 OUTDIR [PRESET] [MINUTES]}
PRESET=${2:-1.3b}
MINUTES=${3:-2}
PY=${PYTHON:-python3}
INTERVAL=${INTERVAL:-0.5}
PROFILE=${PROFILE:-20:2:4}
MICRO_BATCHES=${MICRO_BATCHES:-8}
MICRO_BATCH_SIZE=${MICRO_BATCH_SIZE:-2}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" CUDA_DEVICE_ORDER=PCI_BUS_ID
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
if [ "$NGPU" -lt 2 ]; then echo "capture_parallel: $NGPU GPU(s); this capture needs at least 2" >&2; exit 2; fi
STAMP=$(date -u +%Y%m%dT%H%MZ)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cd 'A-Za-z0-9' | tr 'A-Z' 'a-z' | sed 's/^nvidia//')
gpus=$(seq -s, 0 $((NGPU - 1)))
layout=()
if [ -n "${TP:-}${PP:-}${DP:-}" ]; then layout=(--layout manual --tp "${TP:-1}" --pp "${PP:-1}" --dp "${DP:-0}"); fi
IFS=: read -r p_skip p_warm p_act <<<"$PROFILE"
run="${GPU}_${NGPU}gpu_parallel_${PRESET}_${STAMP}"
d="$OUTDIR/$run"
mkdir -p "$d"
train=("$PY" -m torch.distributed.run --standalone --nproc-per-node "$NGPU" -m trainperf.capture.parallel
  --preset "$PRESET" --minutes "$MINUTES" --micro-batches "$MICRO_BATCHES" --micro-batch-size "$MICRO_BATCH_SIZE" "${layout[@]}"
  --out-dir "$d/gpt_smoke" --profile-dir "$d/trace"
  --profile-skip "$p_skip" --profile-warmup "$p_warm" --profile-active "$p_act")
{
  echo "date: $(date -u -Iseconds)"; echo "host: $(hostname)"; echo "command: ${train[*]}"
  echo "collector: $PY -m trainperf.capture.collect --interval $INTERVAL --gpus $gpus --out telemetry.prom -- <command>"
  echo "env: NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE TORCH_SYMM_MEM_DISABLE_MULTICAST=$TORCH_SYMM_MEM_DISABLE_MULTICAST NVSHMEM_DISABLE_NVLS=$NVSHMEM_DISABLE_NVLS"
  nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,power.limit,clocks.max.sm,memory.total --format=csv
  "$PY" -c "import torch, sys; print('python', sys.version.split()[0]); print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'nccl', '.'.join(map(str, torch.cuda.nccl.version())))"
  "$PY" -m pip list 2>/dev/null | grep -Ei '^(torch|nvidia-ml-py|mlperf-logging|polars|nvidia-nccl[a-z0-9-]*) ' || true
  nvidia-smi topo -m || true
  nvidia-smi nvlink -s || true
} > "$d/versions.txt" 2>&1
CUDA_VISIBLE_DEVICES=$gpus "$PY" -m trainperf.capture.collect --interval 1 --gpus "$gpus" --out "$d/idle.prom" --duration 20
CUDA_VISIBLE_DEVICES=$gpus "$PY" -m trainperf.capture.collect --interval "$INTERVAL" --gpus "$gpus" --out "$d/telemetry.prom" -- "${train[@]}" > "$d/console.log" 2>&1
tar -C "$OUTDIR" -czf "$OUTDIR/$run.tar.gz" "$run"
echo "captured $run: $(du -sh "$d" | cut -f1)"
