"""trainperf: a reproducible performance report for LLM training on GPU clusters.

Modules, one per input kind plus the models and the presentation layer:

- :mod:`trainperf.mlperf`  MLPerf Training result logs (``:::MLLOG``) and MLCommons results folders
- :mod:`trainperf.flops`   model FLOP counts, MFU/HFU and the training memory model
- :mod:`trainperf.compare` per-GPU comparison of an evaluated system with a reference (NVIDIA Eos)
- :mod:`trainperf.dcgm`    DCGM telemetry readers
- :mod:`trainperf.slurm`   Slurm accounting (sacct) readers and job statistics
- :mod:`trainperf.charts`  Altair charts behind one theme, and figure export
- :mod:`trainperf.report`  the main job: execute notebooks, export figures, build the site

Analyses return polars frames and leave plotting to :mod:`trainperf.charts`.
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
