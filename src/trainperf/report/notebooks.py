"""Execute one notebook with papermill, atomically (the failed copy kept for inspection)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from trainperf.atomic import atomic_path

__all__ = ["NotebookSpec", "execute_notebook"]


@dataclass(frozen=True)
class NotebookSpec:
    """One analysis notebook of the main job.

    Attributes:
        name: file stem in ``notebooks/``.
        title: page title in the preview site.
        parameters: overrides of the notebook's defaults, relative paths resolved against the repo root.
    """

    name: str
    title: str
    parameters: dict = field(default_factory=dict)


def execute_notebook(
    notebook: str | Path,
    output: str | Path,
    parameters: dict | None = None,
    cwd: str | Path | None = None,
    progress: bool = True,
) -> Path:
    """Execute ``notebook`` with papermill into ``output`` (atomically).

    Args:
        notebook: source notebook (never modified).
        output: executed copy to write.
        parameters: values injected after the cell tagged ``parameters``.
        cwd: working folder of the kernel (defaults to the notebook's folder).
        progress: papermill's per-cell progress bar.

    Returns:
        ``output``.

    Raises:
        papermill.PapermillExecutionError: a cell failed (the failed notebook is kept next to
            ``output`` with the suffix ``.failed.ipynb`` for inspection).
    """
    import papermill as pm

    notebook, output = Path(notebook), Path(output)
    tmp = atomic_path(output.with_suffix(".ipynb"))
    tmp_nb = tmp.with_name(tmp.name + ".ipynb")
    tmp.unlink()
    try:
        pm.execute_notebook(
            str(notebook),
            str(tmp_nb),
            parameters=parameters or {},
            cwd=str(cwd or notebook.parent),
            kernel_name="python3",
            progress_bar=progress,
            log_output=False,
        )
        os.replace(tmp_nb, output)
    except Exception:
        if tmp_nb.exists():
            os.replace(tmp_nb, output.with_suffix(".failed.ipynb"))
        raise
    finally:
        tmp_nb.unlink(missing_ok=True)
    return output
