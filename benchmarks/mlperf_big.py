"""A large MLPerf log for the memory benchmark: the lines of a bundled log, repeated at later times.

``make_log(path, target_bytes)`` writes ``result_0.txt`` in the MLCommons layout under ``path``
(``v4.1/NVIDIA/results/<system>/gpt3/``, with the bundled system description): the ``:::MLLOG`` lines
of the bundled GPT-3 log, repeated as consecutive runs of one long job: each copy's ``time_ms`` are
shifted by the span of the log, so times stay in order and the templates (the text after the time)
repeat, as they do in a long run's log (``init_start`` of every rank, ``tracked_stats``). So that the
file holds one run, later copies log ``epoch_start`` / ``epoch_stop`` where the bundled log has
``run_start`` / ``run_stop``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "data/mlperf/v4.1/NVIDIA/results/eos_n32_ngc24.09_nemo/gpt3/result_0.txt"
SYSTEM = ROOT / "data/mlperf/v4.1/NVIDIA/systems/eos_n32_ngc24.09_nemo.json"
_T = re.compile(r'"time_ms": (\d+)')


def make_log(path: Path, target_bytes: int) -> tuple[Path, int]:
    """Write the log; returns (the results folder to load, number of MLLOG lines written)."""
    lines = [ln for ln in SRC.read_text().split("\n") if ln.startswith(":::MLLOG")]
    times = [int(_T.search(ln).group(1)) for ln in lines]
    span = max(times) - min(times) + 1000
    parts = [(_T.split(ln, maxsplit=1)) for ln in lines]  # [head, digits, tail]
    later = [
        (h, int(d), t.replace('"key": "run_start"', '"key": "epoch_start"').replace(
            '"key": "run_stop"', '"key": "epoch_stop"'))
        for h, d, t in parts
    ]  # fmt: skip
    out = path / "v4.1/NVIDIA/results/eos_n32_ngc24.09_nemo/gpt3"
    out.mkdir(parents=True, exist_ok=True)
    (path / "v4.1/NVIDIA/systems").mkdir(parents=True, exist_ok=True)
    shutil.copy(SYSTEM, path / "v4.1/NVIDIA/systems" / SYSTEM.name)
    n = written = 0
    with open(out / "result_0.txt", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
        written, n, k = f.tell(), len(lines), 1
        while written < target_bytes:
            shift = k * span
            text = "".join(f'{h}"time_ms": {d + shift}{t}\n' for h, d, t in later)
            f.write(text)
            written += len(text)
            n += len(lines)
            k += 1
    return path, n
