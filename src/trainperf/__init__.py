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

- :mod:`trainperf.report`      the main job, batch runs, charts, the preview site, the command line
- :mod:`trainperf.capture`     tools for a GPU node: telemetry collector, GPT smoke benchmark
- :mod:`trainperf.synthetic`   synthetic demo telemetry and sacct history (always marked as such)
- :mod:`trainperf.tables`      reference tables as data files and their one loader
- :mod:`trainperf.errors`, :mod:`trainperf.quality`, :mod:`trainperf.atomic`  error and warning types,
  data-quality records, atomic output files
"""

from importlib.resources import files as _files
from pathlib import Path as _Path

__version__ = "0.1.0"


def project_root() -> _Path:
    """Return the repository root (the folder holding ``pyproject.toml``) for an editable install.

    Raises:
        FileNotFoundError: when the package is not installed from a source checkout.
    """
    here = _Path(str(_files(__package__))).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "data").is_dir():
            return parent
    raise FileNotFoundError(
        f"trainperf is not installed from a source checkout (looked above {here}); "
        "pass explicit data paths instead"
    )
