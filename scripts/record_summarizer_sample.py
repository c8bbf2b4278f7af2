"""The MLCommons result summarizer's scores of a sample of published result folders (test data).

Writes ``tests/data/record/summarizer_sample.csv``: for each sampled folder of checkouts of
``github.com/mlcommons/training_results_vX.Y`` (the smallest folder of each round and benchmark,
by bytes of logs: a deterministic sample that costs little to re-score), the score
``mlperf_logging.result_summarizer._compute_strong_score_standalone`` gives (its own parser, its own
olympic mean, its ``scaling.json`` factor), with the folder's ``logs_sha256``. The record's test
compares the bundled record with this table, and when the checkouts are present, a rebuild of
those folders too (``tests/test_record.py``).

Usage: python scripts/record_summarizer_sample.py ROUND_DIR... (training_results_vX.Y checkouts)
"""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
import tempfile
from pathlib import Path

import polars as pl
from mlperf_logging.result_summarizer import result_summarizer

from trainperf.record.folders import find_result_folders, logs_sha256

OUT = Path(__file__).resolve().parents[1] / "tests/data/record/summarizer_sample.csv"


def _bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.glob("result_*.txt"))


def main(dirs: list[str]) -> None:
    folders = [f for f in find_result_folders(dirs) if list(f.path.glob("result_*.txt"))]
    pick: dict[tuple[str, str], object] = {}
    for f in folders:
        key = (f.round, f.path.name)
        if key not in pick or (_bytes(f.path), f.rel) < (_bytes(pick[key].path), pick[key].rel):
            pick[key] = f
    rows = []
    for (round_, bench), f in sorted(pick.items()):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "folder"
            shutil.copytree(f.path, copy)  # the summarizer may rewrite scaling.json: a copy
            with contextlib.redirect_stdout(io.StringIO()):
                _, _, score, _, scaling = result_summarizer._compute_strong_score_standalone(
                    bench, None, False, str(copy), "training", f"{round_[1:]}.0",
                    return_full_scores=True,
                )  # fmt: skip
        rows.append({"round": round_, "repo": f.repo, "commit": f.commit, "folder": f.rel,
                     "logs_sha256": logs_sha256(f.path), "summarizer_score_min": score,
                     "summarizer_scaling_factor": float(scaling)})  # fmt: skip
        print(round_, f.rel, score, file=sys.stderr)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows).write_csv(OUT)
    print(f"wrote {OUT}: {len(rows)} folders", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
