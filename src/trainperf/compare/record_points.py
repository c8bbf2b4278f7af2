"""Every result of one benchmark in the MLPerf record, for the record's figure, and a result's peers.

:func:`record_points` gives one row per scored result of a benchmark (GPUs, GPU-minutes, accelerator
generation, network family) with the evaluated results added and marked; :func:`rank_peers` lists
the results :func:`~trainperf.compare.like_for_like.record_rank` ranks a result among, each with
its network family. The network family comes from the systems JSON's interconnect strings
(:func:`network_family`).
"""

from __future__ import annotations

import re

import polars as pl

from trainperf.compare.like_for_like import record_rank
from trainperf.tables import read_table

__all__ = [
    "NETWORK_FAMILIES",
    "POINTS_SCHEMA",
    "network_family",
    "rank_peers",
    "record_points",
]

NETWORK_FAMILIES = ("InfiniBand", "Ethernet/RoCE", "NVLink only", "other")
"""Network families, in legend order."""

# IB adapters and speeds as the systems JSONs write them: "IB NDR", "Infiniband", "Quantum-2", "HDR100"
_IB = re.compile(r"infini\s*band|\bIB\b|\b[NXH]DR\d*\b|quantum", re.IGNORECASE)
_ETH = re.compile(r"roce|ethernet|\d\s*gbe\b", re.IGNORECASE)
_NVLINK = re.compile(r"nvlink", re.IGNORECASE)
# rack-scale NVLink domains: up to this many GPUs of these accelerators are one NVLink domain (NVL72)
_NVL72 = {"GB200": 72, "GB300": 72}

POINTS_SCHEMA: dict[str, pl.DataType] = {
    "round": pl.String(),
    "submitter": pl.String(),
    "system": pl.String(),
    "accelerator": pl.String(),
    "generation": pl.String(),
    "network": pl.String(),
    "n_gpus": pl.Int64(),
    "score_min": pl.Float64(),
    "gpu_min": pl.Float64(),
    "evaluated": pl.Boolean(),
    "label": pl.String(),
}
"""Columns of :func:`record_points`: round, submitter, system; accelerator (the accelerator table's
canonical name, else the systems JSON's text); generation (the architecture of
``data/reference/accelerator_generations.csv``: Hopper, Blackwell ...; ``other`` for an accelerator
not in it); network (one of :data:`NETWORK_FAMILIES`); n_gpus (Int64); score_min (Float64, min, the
MLPerf score); gpu_min (Float64, GPU-minutes = n_gpus x score_min); evaluated (Boolean, an
evaluated result); label (String, the evaluated result's label, null for the record's)."""


def network_family(
    host_interconnect: str | None,
    accelerator_interconnect: str | None = None,
    n_nodes: int | None = None,
    accelerator: str | None = None,
    n_gpus: int | None = None,
) -> str:
    """The network family of a result from its systems JSON's strings.

    ``NVLink only`` where the GPUs never leave one NVLink domain: one node with an NVLink
    ``accelerator_interconnect``, or a GB200/GB300 NVL72 system of at most 72 GPUs; else from
    ``host_interconnect`` (its ``Compute:`` part where it names one, so a management Ethernet does not
    count): ``InfiniBand`` where it names InfiniBand (IB, NDR/XDR/HDR, Quantum), else
    ``Ethernet/RoCE`` where it names Ethernet, RoCE or GbE, else ``other`` (no string, a NIC name
    alone such as ``BF3``, a TPU's ICI).
    """
    nvlink = bool(accelerator_interconnect and _NVLINK.search(accelerator_interconnect))
    if nvlink and (
        n_nodes == 1 or (n_gpus is not None and n_gpus <= _NVL72.get(accelerator or "", 0))
    ):
        return "NVLink only"
    text = host_interconnect or ""
    m = re.search(r"compute\s*:\s*([^:]*?)(?:,\s*[A-Za-z&+ ]+:|$)", text, re.IGNORECASE)
    if m:
        text = m.group(1)
    if _IB.search(text):
        return "InfiniBand"
    if _ETH.search(text):
        return "Ethernet/RoCE"
    return "other"


def _generations() -> dict[str, str]:
    t = read_table("accelerator_generations")
    return dict(zip(t["accelerator"].to_list(), t["architecture"].to_list(), strict=True))


def record_points(
    record: pl.DataFrame,
    benchmark: str,
    evaluated: pl.DataFrame | None = None,
    rounds: list[str] | None = None,
) -> pl.DataFrame:
    """Every scored result of ``benchmark`` in the record, and the evaluated results, for one figure.

    Args:
        record: the MLPerf record (:func:`trainperf.record.read_record`).
        benchmark: the record's benchmark name (``gpt3``, ``llama2_70b_lora`` ...).
        evaluated: the evaluated results, columns system, n_gpus (Int64), score_min (min), and
            optionally round, accelerator (canonical name), network (a family of
            :data:`NETWORK_FAMILIES`, or text naming the network such as ``400 GbE RoCEv2``, classified
            by :func:`network_family`), label; rows without a score are left out.
        rounds: only these rounds of the record (None: all).

    Returns:
        :data:`POINTS_SCHEMA`, the record's rows (closed and open division; a result folder listed
        twice in the record counted once) then the evaluated ones, sorted by GPUs within each part.
    """
    gens = _generations()
    rec = record.filter(
        (pl.col("benchmark") == benchmark)
        & pl.col("score_min").is_not_null()
        & pl.col("n_gpus").is_not_null()
    )
    if rounds is not None:
        rec = rec.filter(pl.col("round").is_in(rounds))
    # the same logs listed twice (two divisions, or again in a later round) are one result
    rec = rec.unique(["submitter", "system", "logs_sha256"], keep="first", maintain_order=True)
    rows = []
    for r in rec.iter_rows(named=True):
        acc = r["accelerator"] or r["accelerator_model_name"] or "unknown"
        rows.append({
            "round": r["round"], "submitter": r["submitter"], "system": r["system"],
            "accelerator": acc, "generation": gens.get(r["accelerator"] or "", "other"),
            "network": network_family(r["host_interconnect"], r["accelerator_interconnect"],
                                      r["n_nodes"], r["accelerator"], r["n_gpus"]),
            "n_gpus": r["n_gpus"], "score_min": r["score_min"],
            "gpu_min": r["n_gpus"] * r["score_min"], "evaluated": False, "label": None,
        })  # fmt: skip
    own = []
    if evaluated is not None:
        for e in evaluated.iter_rows(named=True):
            if e.get("score_min") is None or not e.get("n_gpus"):
                continue
            net = e.get("network")
            fam = net if net in NETWORK_FAMILIES else network_family(net)
            acc = e.get("accelerator")
            own.append({
                "round": e.get("round"), "submitter": None, "system": e["system"],
                "accelerator": acc, "generation": gens.get(acc or "", "other"), "network": fam,
                "n_gpus": e["n_gpus"], "score_min": e["score_min"],
                "gpu_min": e["n_gpus"] * e["score_min"], "evaluated": True,
                "label": e.get("label") or f"{e['system']} {e['n_gpus']:,} GPUs",
            })  # fmt: skip
    out = pl.DataFrame(rows + own, schema=POINTS_SCHEMA)
    return out.sort("evaluated", "n_gpus", "round", "system", maintain_order=True)


def rank_peers(
    record: pl.DataFrame,
    benchmark: str,
    n_gpus: int,
    minutes: float,
    rounds: list[str],
    label: str,
    network: str | None = None,
    accelerator: str | None = None,
    round_: str | None = None,
) -> tuple[dict, pl.DataFrame]:
    """A result's rank by GPU-minutes among the record's results of ``benchmark`` in ``rounds`` with
    ``n/2 <= N <= 2n`` GPUs, and those results with their network family.

    The rank is :func:`~trainperf.compare.like_for_like.record_rank`'s, over the rounds taken as one
    (one round: exactly its rank; several: the results of all of them in the band).

    Args:
        n_gpus, minutes: the result's GPUs and time to train (min).
        rounds: the record's rounds to rank among.
        label: the result's name in the returned table; network: its network family or text;
            accelerator, round_: its accelerator (canonical name) and round, shown in the table.

    Returns:
        (``record_rank``/``record_peers``/``record_best``/``record_best_gpu_min`` as
        :func:`record_rank` gives them, ``record_best`` naming the best result's own round; the band: :data:`POINTS_SCHEMA` plus ``rank`` (Int64, 1 =
        fewest GPU-minutes; the evaluated result among them), sorted by GPU-minutes).
    """
    one = "+".join(rounds)
    rec = record.filter(pl.col("round").is_in(rounds)).with_columns(pl.lit(one).alias("round"))
    rec = rec.unique(["submitter", "system", "logs_sha256"], maintain_order=True)
    rank = record_rank(benchmark, one, n_gpus, minutes, rec)
    ev = pl.DataFrame(
        {"system": [label], "n_gpus": [n_gpus], "score_min": [minutes], "network": [network],
         "label": [label], "accelerator": [accelerator], "round": [round_]},
        schema_overrides={"network": pl.String, "accelerator": pl.String, "round": pl.String},
    )  # fmt: skip

    pts = record_points(record.filter(pl.col("round").is_in(rounds)), benchmark, ev)
    band = pts.filter(
        pl.col("evaluated") | ((pl.col("n_gpus") >= n_gpus / 2) & (pl.col("n_gpus") <= 2 * n_gpus))
    ).sort("gpu_min", "evaluated", maintain_order=True)
    band = band.with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("rank"))
    best = band.filter(~pl.col("evaluated"))
    if rank and best.height:  # the rounds were taken as one: name the best result's own round
        b = best.row(0, named=True)
        rank["record_best"] = f"{b['round']} {b['submitter']} {b['system']} ({b['n_gpus']:,} GPUs)"
    return rank, band
