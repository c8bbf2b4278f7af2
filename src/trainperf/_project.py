"""Where the source checkout is (:func:`project_root`)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["project_root"]


def project_root() -> Path:
    """Return the repository root (the folder holding ``pyproject.toml``) for an editable install.

    Raises:
        FileNotFoundError: when the package is not installed from a source checkout.
    """
    here = Path(str(files(__package__))).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "data").is_dir():
            return parent
    raise FileNotFoundError(
        f"trainperf is not installed from a source checkout (looked above {here}); "
        "pass explicit data paths instead"
    )
