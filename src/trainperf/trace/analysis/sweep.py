"""The sweep under every time split: ns spent in each combination of running categories, per window.

Time on the GPU is split by what runs, whatever stream it runs on: at each instant the set of
categories with an activity running (``compute``, ``communication``, ``memory``, ``other``, and
``matmul`` for the GEMM/attention subset of compute; categories in :mod:`trainperf.trace.names`)
decides where that instant goes. Per window (a step, a telemetry sample):

* ``compute_s``: some compute kernel runs; ``communication_s``, ``memory_s``, ``matmul_s``: likewise
  (these overlap one another);
* the partition ``compute_s + comm_exposed_s + memory_exposed_s + other_exposed_s + idle_s =
  span_s``: communication with no compute beside it, copies with neither, other activity alone,
  nothing at all;
* ``comm_comp_overlap`` = time with communication *and* compute / ``communication_s`` (HTA's
  communication/computation overlap, ``CommunicationAnalysis.get_comm_comp_overlap``; the paper's
  72.3 % and 67.2 %), null without communication.
"""

from __future__ import annotations

import numpy as np
import polars as pl

__all__ = [
    "BIT",
    "BREAKDOWN_CATEGORIES",
    "TIME_COLS",
    "mask_durations",
    "window_stats",
    "with_shares",
]

BREAKDOWN_CATEGORIES = ("compute", "communication", "memory", "other", "matmul")
"""Bits of the sweep, in order (``matmul`` is a subset of ``compute``)."""

BIT = {c: 1 << i for i, c in enumerate(BREAKDOWN_CATEGORIES)}


# --------------------------------------------------------------------------------------------
# The sweep
# --------------------------------------------------------------------------------------------


def mask_durations(k: pl.DataFrame, windows: np.ndarray) -> np.ndarray:
    """ns spent in each category combination (32 masks) inside each window.

    ``k``: activities of one rank (start_ns, end_ns, category, matmul). ``windows``: (n, 2) int64,
    sorted, non-overlapping [start, end). Returns (n, 32) int64.
    """
    n_win = len(windows)
    out = np.zeros((n_win, 1 << len(BREAKDOWN_CATEGORIES)), dtype=np.int64)
    if n_win == 0:
        return out
    bits = np.zeros(k.height, dtype=np.int64)
    cat = k["category"].to_numpy()
    for c in ("compute", "communication", "memory", "other"):
        bits[cat == c] = BIT[c]
    mm = k["matmul"].fill_null(False).to_numpy()
    starts = k["start_ns"].to_numpy()
    ends = k["end_ns"].to_numpy()
    keep = ends > starts
    cats = list(BREAKDOWN_CATEGORIES)
    # per category: +1 at start, -1 at end (matmul on top of its compute bit)
    pts = [windows[:, 0], windows[:, 1]]
    deltas = [np.zeros((2 * n_win, len(cats)), dtype=np.int64)]
    for j, c in enumerate(cats):
        sel = keep & (mm if c == "matmul" else (bits == BIT[c]))
        if not sel.any():
            continue
        s, e = starts[sel], ends[sel]
        pts += [s, e]
        d = np.zeros((2 * len(s), len(cats)), dtype=np.int64)
        d[: len(s), j] = 1
        d[len(s) :, j] = -1
        deltas.append(d)
    p = np.concatenate(pts)
    dl = np.concatenate(deltas)
    order = np.argsort(p, kind="stable")
    p, dl = p[order], dl[order]
    active = np.cumsum(dl, axis=0)
    mask = ((active > 0) * (1 << np.arange(len(cats)))).sum(axis=1)
    seg = np.diff(p)
    seg_start = p[:-1]
    mask = mask[:-1]
    w = np.searchsorted(windows[:, 0], seg_start, side="right") - 1
    inside = (w >= 0) & (seg > 0)
    inside[inside] &= seg_start[inside] < windows[w[inside], 1]
    np.add.at(out, (w[inside], mask[inside]), seg[inside])
    return out


def window_stats(md: np.ndarray, spans_ns: np.ndarray) -> dict[str, np.ndarray]:
    """The ``*_s`` times of :data:`TIME_COLS` (s) from :func:`mask_durations` and window spans (ns)."""
    m = np.arange(md.shape[1])

    def t(sel: np.ndarray) -> np.ndarray:
        return md[:, sel].sum(axis=1) / 1e9

    has = {c: (m & BIT[c]) > 0 for c in BREAKDOWN_CATEGORIES}
    busy = t(m > 0)
    span = spans_ns / 1e9
    r = {
        "span_s": span,
        "busy_s": busy,
        "idle_s": span - busy,
        "compute_s": t(has["compute"]),
        "communication_s": t(has["communication"]),
        "memory_s": t(has["memory"]),
        "other_s": t(has["other"]),
        "matmul_s": t(has["matmul"]),
        "overlap_s": t(has["communication"] & has["compute"]),
        "comm_exposed_s": t(has["communication"] & ~has["compute"]),
        "memory_exposed_s": t(has["memory"] & ~has["compute"] & ~has["communication"]),
        "other_exposed_s": t(
            has["other"] & ~has["compute"] & ~has["communication"] & ~has["memory"]
        ),
    }
    return r


TIME_COLS = (
    "span_s",
    "busy_s",
    "idle_s",
    "compute_s",
    "communication_s",
    "memory_s",
    "other_s",
    "matmul_s",
    "overlap_s",
    "comm_exposed_s",
    "memory_exposed_s",
    "other_exposed_s",
)


def with_shares(df: pl.DataFrame) -> pl.DataFrame:
    """``*_share`` ratios of the span (null for an empty window) and ``comm_comp_overlap``."""
    span = pl.col("span_s")
    return df.with_columns(
        *[
            pl.when(span > 0).then(pl.col(f"{c}_s") / span).alias(f"{c}_share")
            for c in (
                "busy",
                "idle",
                "compute",
                "communication",
                "memory",
                "matmul",
                "comm_exposed",
                "memory_exposed",
                "other_exposed",
            )
        ],
        pl.when(pl.col("communication_s") > 0)
        .then(pl.col("overlap_s") / pl.col("communication_s"))
        .alias("comm_comp_overlap"),
    )
