"""trainperf: a reproducible performance report for LLM training on GPU clusters.

The folders are the architecture (``ARCHITECTURE.md`` at the repository root draws the flow):

Input kinds, one reader package each (polars frames in, warnings and data-quality rows out):

- :mod:`trainperf.mlperf`      MLPerf Training result logs (``:::MLLOG``), results folders, scores
- :mod:`trainperf.dcgm`        DCGM telemetry: exposition text, Prometheus API JSON, dmon, CSV; Parquet store
- :mod:`trainperf.slurm`       Slurm accounting (sacct ``--parsable2`` and ``--json``)
- :mod:`trainperf.promsource`  a live Prometheus server as a telemetry source

Models and analyses (return frames, never plot):

- :mod:`trainperf.flops`       model FLOPs, MFU/HFU, accelerator peaks, the training memory model
- :mod:`trainperf.compare`     an evaluated system against a reference (NVIDIA Eos) per GPU
- :mod:`trainperf.telemetry`   telemetry aligned with the phases of an MLPerf run
- :mod:`trainperf.jobs`        job statistics from Slurm accounting, per-job GPU utilisation

Around them:

- :mod:`trainperf.config`      the cluster config (YAML): the evaluated cluster and its inputs
- :mod:`trainperf.report`      the main job, batch runs, charts, the preview site, the command line
- :mod:`trainperf.capture`     tools for a GPU node: telemetry collector, GPT smoke benchmark
- :mod:`trainperf.synthetic`   synthetic demo telemetry and sacct history (always marked as such)
- :mod:`trainperf.tables`      reference tables as data files and their one loader
- :mod:`trainperf.errors`, :mod:`trainperf.quality`, :mod:`trainperf.atomic`  error and warning types,
  data-quality records, atomic output files
"""

from trainperf._project import project_root

__all__ = ["__version__", "project_root"]

__version__ = "0.1.0"
"""The package version (as in ``pyproject.toml``)."""
