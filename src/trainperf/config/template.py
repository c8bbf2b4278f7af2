"""``trainperf init FILE``: a commented cluster-config template."""

from __future__ import annotations

from pathlib import Path

from trainperf.atomic import write_text_atomic
from trainperf.errors import ConfigError

__all__ = ["TEMPLATE", "write_template"]

TEMPLATE = """\
# trainperf cluster config: `trainperf report --config THIS_FILE --out DIR` builds the book and
# DIR/comparison.csv for this cluster. Relative paths are taken from this file's folder.
# Unknown keys, missing paths and an unknown accelerator are refused before anything runs.

name: My cluster             # how the book names the evaluated cluster
accelerator: H100 SXM        # a name (or alias) from data/reference/accelerators.csv, or describe one:
# accelerator: {name: Gaudi 3, memory_gb: 128, bf16_dense_tflops: 1835, fp8_dense_tflops: 1835,
#               source: "https://www.intel.com/content/www/us/en/content-details/817486/intel-gaudi-3-ai-accelerator-white-paper.html"}   # dense peaks per precision, TFLOP/s
gpus_per_node: 8             # node counts = GPUs / gpus_per_node (the comparison is at equal GPU count)
# nodes: 64                  # nodes in the cluster (needed with sacct: the occupancy table)
# description: "64 x 8 H100 SXM, 400G RoCE rail-optimized, NeMo 24.09"
# precision: fp8             # datatype the MLPerf runs trained in: bf16, fp8 or fp4 (the logs say first)
language: en                 # en or ja: the figures of the preview site (the prose is English)

# --- inputs (all optional; a chapter whose input is not given says so and shows nothing) ---

# MLPerf Training logs of this cluster: a results folder in the MLCommons layout (found at any
# depth: <submitter>/results/<system>/<benchmark>/result_*.txt, with systems/<system>.json and a
# folder named like v4.1 above it for the round), or a folder of result_*.txt.
# mlperf: path/to/training_results_v4.1

# MLPerf power results (node power logs, <benchmark>/power/result_N/node_K.txt beside the result
# files, as MLCommons publishes them): found under mlperf: by themselves; name another folder here,
# or `power: false` to leave them out. The energy chapter recomputes their energy to train.
# power: path/to/training_results_v4.1/Dell/results

# Self-reported results (no logs): rows in the layout of data/reference/published_results.csv
# whose `system` is the name above; quoted_ratio (optional): a per-GPU ratio to the reference that
# was quoted without its definition, placed against the rows (left out: none in the book).
# published:
#   path: path/to/published_rows.csv
#   quoted_ratio: 1.15

# DCGM telemetry of one MLPerf run: a dcgm-exporter exposition file (.prom, .gz ok), a Parquet store
# folder, or a Prometheus URL; with the MLPerf log of that run and its Slurm job id. The energy
# chapter takes the run's GPU energy per phase from it (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, else
# DCGM_FI_DEV_POWER_USAGE): GPU boards only.
# telemetry:
#   source: http://prometheus:9090
#   mlperf_log: path/to/results/.../result_0.txt
#   job_id: "123456"

# Slurm accounting: sacct --parsable2 or --json dumps (give nodes: above too).
# sacct:
#   - path/to/sacct.txt

# The reference. Without this section each result is compared like for like with the MLPerf
# record (data/reference/mlperf_record.csv, every published result v3.1-v5.1): the best other result
# of the same benchmark, accelerator and GPU count, else the same accelerator's measured scales
# (interpolated only within 4x, else bounds), else the nearest accelerator generation, and its rank.
# With it, against these logs (e.g. NVIDIA Eos, the MLPerf logs bundled in data/mlperf).
# reference:
#   name: Eos
#   mlperf: path/to/reference/results
#   round: v4.1              # compare against this round (default: each result's own round,
#                            # else the nearest, with a warning)
# or pin results of the record instead of a folder of logs:
# reference:
#   submitter: NVIDIA        # and/or system: <folder name>, accelerator: GB300, round: v5.1
"""


def write_template(path: str | Path, force: bool = False) -> Path:
    """Write :data:`TEMPLATE` to ``path`` (atomically).

    Raises:
        ConfigError: ``path`` is a folder, or exists and ``force`` is false.
    """
    path = Path(path)
    if path.is_dir():
        raise ConfigError(
            f"{path} is a folder; give the config file's name, e.g. {path / 'cluster.yaml'}"
        )
    if path.exists() and not force:
        raise ConfigError(f"{path} exists; use --force to overwrite it")
    return write_text_atomic(TEMPLATE, path)
