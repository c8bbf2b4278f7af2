"""Result folders of MLCommons Training results checkouts, and where each came from.

A result folder is ``<round root>/<submitter>/results/<system>/<benchmark>/`` holding the
``result_*.txt`` (or ``.txt.gz``) of one submission. The round root is the checkout (a folder named
``training_results_vX.Y``, or ``vX.Y`` as in ``data/mlperf``); its commit comes from git when the
checkout is a git work tree, else from a file ``.commit`` at the round root (one line, the commit a
``git archive`` of the repository was made from), else it is unknown.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from trainperf.mlperf.readonce import held_bytes

__all__ = ["ResultFolder", "find_result_folders", "logs_sha256"]

_ROUND_DIR = re.compile(r"^(training_results_)?v(\d+\.\d+)$")
_RESULT = re.compile(r"^result_.*\.txt(\.gz)?$")


@dataclass(frozen=True)
class ResultFolder:
    """One submission's folder.

    Attributes:
        path: the folder (absolute).
        round: ``v5.1`` (from the round root's name).
        repo: ``github.com/mlcommons/training_results_v5.1`` for a root of that name, else None.
        commit: the checkout's commit (40 hex digits) or None.
        rel: the folder's path inside the repository (``NVIDIA/results/<system>/<benchmark>``).
    """

    path: Path
    round: str
    repo: str | None
    commit: str | None
    rel: str


def _commit(root: Path) -> str | None:
    marker = root / ".commit"
    if marker.is_file():
        text = marker.read_text(encoding="utf-8", errors="replace").strip()
        if re.fullmatch(r"[0-9a-f]{40}", text):
            return text
    if (root / ".git").exists():
        try:
            out = subprocess.run(
                ["git", "-C", str(root), "rev-parse", "HEAD"],
                capture_output=True, text=True, check=True, timeout=30,
            )  # fmt: skip
            return out.stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            return None
    return None


def _round_root(folder: Path) -> Path | None:
    for p in (folder, *folder.parents):
        if _ROUND_DIR.match(p.name):
            return p
    return None


def find_result_folders(dirs: list[str | Path]) -> list[ResultFolder]:
    """Every result folder under ``dirs`` (checkouts, or folders inside one), sorted by round and path.

    A folder counts when it holds a ``result_*.txt`` (or ``.txt.gz``) and lies in the MLCommons layout
    ``.../<submitter>/results/<system>/<benchmark>/`` below a round root (``training_results_vX.Y``
    or ``vX.Y``); other folders with result files are skipped (they cannot be placed in a round).

    Raises:
        FileNotFoundError: a ``dir`` does not exist, or no result folder is found under any.
    """
    seen: dict[Path, ResultFolder] = {}
    commits: dict[Path, str | None] = {}
    for d in dirs:
        base = Path(d).resolve()
        if not base.is_dir():
            raise FileNotFoundError(
                f"{d}: no such folder (expected a training_results_vX.Y checkout)"
            )
        for f in base.rglob("result_*"):
            if not _RESULT.match(f.name):
                continue
            folder = f.parent
            if folder in seen or len(folder.parts) < 4 or folder.parent.parent.name != "results":
                continue
            root = _round_root(folder)
            if root is None:
                continue
            if root not in commits:
                commits[root] = _commit(root)
            m = _ROUND_DIR.match(root.name)
            seen[folder] = ResultFolder(
                path=folder,
                round=f"v{m.group(2)}",
                repo=f"github.com/mlcommons/{root.name}" if m.group(1) else None,
                commit=commits[root],
                rel=folder.relative_to(root).as_posix(),
            )
    if not seen:
        raise FileNotFoundError(
            f"{', '.join(map(str, dirs))}: no result folder (<round>/<submitter>/results/<system>/"
            "<benchmark>/result_*.txt below a folder named training_results_vX.Y or vX.Y)"
        )

    def key(r: ResultFolder):
        return (tuple(int(x) for x in r.round[1:].split(".")), r.rel)

    return sorted(seen.values(), key=key)


def logs_sha256(folder: Path) -> str:
    """sha256 of a folder's logs: of the text ``sha256sum`` prints for its ``result_*`` files, in
    name order (``<hex digest>  <name>\\n`` per file), so one changed byte in any log changes it."""
    lines = []
    for f in sorted(p for p in folder.iterdir() if _RESULT.match(p.name) and p.is_file()):
        data = held_bytes(f)  # inside read_once: read once for the hash and the load
        if data is None:
            data = f.read_bytes()
        lines.append(f"{hashlib.sha256(data).hexdigest()}  {f.name}\n")
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()
