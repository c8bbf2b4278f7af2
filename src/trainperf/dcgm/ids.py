"""The reader check of entity labels that are not ids: a ``gpu`` label or a MIG ``GPU_I_ID`` that is
not an integer the frame's Int32 columns can hold (``gpu="99999999999"``, ``GPU_I_ID="x"``).

* A ``gpu`` label that is not an index leaves ``gpu`` null: the series is kept (its ``gpu`` text stays
  in ``labels``), flagged (check ``bad_gpu_label``), and the per-GPU statistics cannot place it.
* A ``GPU_I_ID`` that is not an id still marks a MIG instance: the series is one of a slice, not the
  whole GPU (before, it became a whole-GPU row of the parent and mixed a slice's ratios with the
  GPU's). It is kept as entity ``GPU-I`` with a null ``entity_id`` (check ``bad_instance_id``,
  ``corrected``).

DCGM's ids are unsigned 32-bit (``dcgm_structs.h``: ``dcgm_field_eid_t`` is ``unsigned int``); a label
beyond the Int32 columns is not a real GPU or instance of any machine this tool reads.
"""

from __future__ import annotations

import json

import polars as pl

from trainperf.dcgm.series import to_int
from trainperf.quality import QualityLog

__all__ = ["check_entity_ids"]

_GI_KEYS = ("GPU_I_ID", "exported_GPU_I_ID")


def check_entity_ids(
    series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog
) -> pl.DataFrame:
    """Flag ``gpu`` labels that are not indices and correct ``GPU_I_ID``s that are not ids.

    Args:
        series: the reader's series table (``sid``, ``gpu``, ``entity``, ``labels`` JSON).
        samples: ``sid`` and ``line`` of the samples (for the first line named).
        src: the file, for the message.
        log: the reading's quality log.

    Returns:
        ``series`` with the MIG instances of an unreadable ``GPU_I_ID`` as entity ``GPU-I``.
    """
    cand = series.filter(pl.col("labels").str.contains('"(?:exported_)?(?:gpu|GPU_I_ID)"'))
    if cand.height == 0:
        return series
    bad_gpu, bad_gi = [], []
    for sid, gpu, entity, labels in cand.select("sid", "gpu", "entity", "labels").iter_rows():
        try:
            lab = json.loads(labels)
        except ValueError:
            continue
        if gpu is None and any(lab.get(k) not in (None, "") for k in ("gpu", "exported_gpu")):
            bad_gpu.append(sid)
        gi = next((lab[k] for k in _GI_KEYS if lab.get(k) not in (None, "")), None)
        if gi is not None and to_int(gi) is None and entity == "GPU":
            bad_gi.append(sid)
    for sids, check, action, what in (
        (bad_gpu, "bad_gpu_label", "flagged",
         "a gpu label that is not a GPU index (not an integer, or beyond 2^31 - 1): kept with no "
         "GPU index (the label stays in labels); the per-GPU statistics cannot place them"),
        (bad_gi, "bad_instance_id", "corrected",
         "a MIG GPU_I_ID that is not an instance id (not an integer, or beyond 2^31 - 1): kept as "
         "MIG instances (entity GPU-I) with no instance id, not as the whole GPU"),
    ):  # fmt: skip
        if not sids:
            continue
        s = samples.filter(pl.col("sid").is_in(sids))
        first = s["line"].min() if s.height and s["line"].null_count() < s.height else None
        log.add(src, check, action, f"{len(sids)} series with {what}",
                n_series=len(sids), n_samples=s.height, first_line=first)  # fmt: skip
    if bad_gi:
        series = series.with_columns(
            pl.when(pl.col("sid").is_in(bad_gi))
            .then(pl.lit("GPU-I"))
            .otherwise("entity")
            .alias("entity"),
            pl.when(pl.col("sid").is_in(bad_gi))
            .then(None)
            .otherwise("entity_id")
            .alias("entity_id"),
        )
    return series
