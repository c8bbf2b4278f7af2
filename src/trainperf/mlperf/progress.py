"""The ``train_samples`` event: BERT's own convergence point.

MLPerf Training rules (mlcommons/training_policies ``training_rules.adoc`` @d73e20f1, RCP section,
``--rcp-bert-train-samples``): "For Bert, submitters are allowed to add an extra log line with key
set to train_samples and value the number of samples to converge", and mlperf-logging's
``common.yaml`` requires one ``train_samples`` event in every log (its value: the training samples
of the run; for the other benchmarks the size of the training set, 3901 samples in the LoRA logs,
not a convergence point). Where a BERT log has one, :func:`apply_train_samples` uses it: ``samples_to_converge`` is
its value when the final evaluation gave none, and a final evaluation that counts other samples is
flagged (check ``progress_mismatch``), the logged ``train_samples`` kept (the rules' convergence
point). A ``train_samples`` value that is not a count is flagged (``bad_train_samples``), never used.
"""

from __future__ import annotations

import polars as pl

from trainperf.mlperf.checks import FileChecks, as_count

__all__ = ["apply_train_samples"]


def apply_train_samples(row: dict, events: pl.DataFrame, checks: FileChecks) -> None:
    """Use a BERT log's last ``train_samples`` event for ``row["samples_to_converge"]`` (see the
    module); other benchmarks are left as they are.

    Args:
        row: the run row (``benchmark``, ``samples_to_converge``), changed in place.
        events: the file's events (``key``, ``value``, ``value_num``, ``line``).
        checks: the file's checks.
    """
    if row.get("benchmark") != "bert":  # other benchmarks log the training set's size there
        return
    ts = events.filter(pl.col("key") == "train_samples")
    if ts.height == 0:
        return
    last = ts.row(ts.height - 1, named=True)
    raw = (
        last["value_num"] if last["value_num"] is not None else str(last["value"] or "").strip('"')
    )
    n = as_count(raw)
    if n is None:
        checks.add(
            "bad_train_samples",
            "flagged",
            f"train_samples {str(last['value'])[:40]} is not a count of samples; not used",
            last["line"],
        )
        return
    have = row.get("samples_to_converge")
    if have is not None and have != n:
        checks.add(
            "progress_mismatch",
            "flagged",
            f"train_samples {n} differs from the final evaluation's count {have}; the logged "
            "train_samples (the rules' convergence point) is used",
            last["line"],
        )
    row["samples_to_converge"] = n
