"""The GPU label checks of the DCGM readers: a ``gpu`` label (DCGM index) that disagrees with the
``device`` label (``nvidiaN`` minor; check ``label_mismatch``) and MIG instance rows (check
``mig_instance``); steps 8 and 9 of :func:`trainperf.dcgm.checks.finish`."""

from __future__ import annotations

import json
import re

import polars as pl

from trainperf.dcgm._checkutil import _field_counts, _label_dict, _summary
from trainperf.quality import QualityLog

__all__: list[str] = []

_DEVICE_RE = re.compile(r"nvidia(\d+)$")


def _fix_gpu_device(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog):
    rows = series.select("sid", "hostname", "gpu", "entity", "field_id", "job_id", "labels").rows()
    minor: dict[int, int] = {}
    seen: dict = {}
    for sid, _h, gpu, ent, _f, _j, lab in rows:
        if ent == "GPU" and gpu is not None and lab and '"device"' in lab:
            m = _DEVICE_RE.fullmatch(str(_label_dict(lab, seen).get("device", "")))
            if m and int(m.group(1)) != gpu:
                minor[sid] = int(m.group(1))
    if not minor:
        return series
    hosts = {rows[s][1] for s in minor}
    by_key: dict[tuple, list[int]] = {}
    for sid, h, gpu, ent, f, _j, _lab in rows:
        if h in hosts and ent == "GPU" and gpu is not None:
            by_key.setdefault((h, f, gpu), []).append(sid)
    unique = all(len(v) == 1 for v in by_key.values())
    sids = sorted(minor)
    s = samples.filter(pl.col("sid").is_in(sids))
    ex_sid = sids[0]
    ex = f'gpu="{rows[ex_sid][2]}" with device="nvidia{minor[ex_sid]}" on {rows[ex_sid][1]}'
    jobs_differ = len({rows[i][5] for v in by_key.values() for i in v}) > 1
    if unique and jobs_differ:
        job = series["job_id"].to_list()
        labels = series["labels"].to_list()
        for sid, m in minor.items():
            h, f = rows[sid][1], rows[sid][4]
            src_sid = by_key.get((h, f, m), [None])[0]
            new = rows[src_sid][5] if src_sid is not None else None  # the exporter's job of index m
            if new != rows[sid][5]:
                lab = json.loads(labels[sid])
                lab["exporter_job_id"] = rows[sid][5] or ""
                labels[sid] = json.dumps(dict(sorted(lab.items())), separators=(",", ":"),
                                         ensure_ascii=False)  # fmt: skip
            job[sid] = new
        series = series.with_columns(
            pl.Series("job_id", job, dtype=pl.String), pl.Series("labels", labels, dtype=pl.String)
        )
        log.add(src, "label_mismatch", "corrected",
                f"the gpu label (DCGM index) and the device label (nvidiaN minor) disagree, {ex}: "
                "job ids re-attributed by device minor (Slurm's GPU index; the exporter's job is "
                "kept as exporter_job_id)", **_summary(s, series))  # fmt: skip
    else:
        why = "" if jobs_differ else " (no job labels to re-attribute)"
        action_detail = "job labels may belong to another GPU" if jobs_differ else "nothing changed"
        log.add(src, "label_mismatch", "flagged",
                f"the gpu label (DCGM index) and the device label (nvidiaN minor) disagree, {ex}; "
                f"{action_detail}{why}", **_summary(s, series))  # fmt: skip
    return series


def _note_mig(series: pl.DataFrame, samples: pl.DataFrame, src: str, log: QualityLog) -> None:
    """MIG instance rows (entity ``GPU-I``, check ``mig_instance``, flagged): kept in the reading,
    but the per-GPU statistics of :mod:`trainperf.telemetry` leave them out (a slice's ratios are
    of the slice, not of the GPU), so the reader says so, naming the file and the first line."""
    mig = [i for i, e in enumerate(series["entity"].to_list()) if e == "GPU-I"]
    if not mig:
        return
    s = samples.filter(pl.col("sid").is_in(mig))
    if s.height == 0:
        return
    log.add(src, "mig_instance", "flagged",
            f"{s.height} samples of MIG instances (entity GPU-I, {_field_counts(s, series)}): "
            "kept in the frame but not in the per-GPU statistics (a slice's ratios are of the "
            "slice, not of the whole GPU)", **_summary(s, series))  # fmt: skip
