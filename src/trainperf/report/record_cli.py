"""``trainperf record build DIR... [--out FILE]``: the MLPerf record from results checkouts.

Reads every result folder of checkouts of ``github.com/mlcommons/training_results_vX.Y``
(:func:`trainperf.record.build_record`, worker processes, a progress bar) and writes one row per
(round, division, submitter, system, benchmark) to FILE (default ``mlperf_record.csv`` in the current
folder; ``.parquet`` for Parquet). Prints one summary line; folders whose logs fired data-quality
checks are counted in it (their checks are in the ``quality_checks`` column). The command line imports this module only when the
command runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

from trainperf.record import build_record, write_record

__all__ = ["run_record_build"]


def run_record_build(dirs: list[str], out: str, jobs: int | None = None) -> int:
    """Build the record from ``dirs`` and write it to ``out``; returns the exit status (0).

    Raises:
        FileNotFoundError: a folder is missing or holds no result folder.
    """
    frame = build_record(dirs, jobs=jobs, progress=sys.stderr.isatty())
    path = write_record(frame, Path(out))
    counts = frame["quality_status"].value_counts()
    by = dict(zip(counts["quality_status"], counts["count"], strict=True))
    rounds = ", ".join(sorted(set(frame["round"].drop_nulls()), key=lambda r: r))
    print(
        f"wrote {path}: {frame.height} results of {rounds} ({by.get('clean', 0)} clean, "
        f"{by.get('flagged', 0)} with data-quality checks, {by.get('no_score', 0)} without a score "
        f"by the rules, {by.get('error', 0)} unreadable; see quality_status, quality_checks)"
    )
    return 0
