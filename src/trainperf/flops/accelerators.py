"""Accelerator peaks (dense BF16/FP8/FP4 TFLOP/s, memory, scale-up domain) from the reference table, name resolution, MFU against both peaks."""

from __future__ import annotations

import math
import re
from pathlib import Path

import polars as pl

from trainperf.flops.units import TFLOP
from trainperf.tables import read_table

# --------------------------------------------------------------------------------------------
# Accelerators
# --------------------------------------------------------------------------------------------


_ACCEL_SCHEMA = {
    "accelerator": pl.String,
    "aliases": pl.String,
    "bf16_dense_tflops": pl.Float64,
    "fp8_dense_tflops": pl.Float64,
    "memory_gb": pl.Float64,
    "memory_bandwidth_tbps": pl.Float64,
    "fp4_dense_tflops": pl.Float64,
    "fp4_format": pl.String,
    "scaleup_domain": pl.Int64,
    "scaleup_fabric": pl.String,
    "source_url": pl.String,
}
#: Columns a table written before FP4 and scale-up domains were tracked may lack (read as null).
_OPTIONAL_COLUMNS = ("fp4_dense_tflops", "fp4_format", "scaleup_domain", "scaleup_fabric")


def load_accelerators(path: str | Path | None = None) -> pl.DataFrame:
    """Load the accelerator peak table.

    Args:
        path: CSV path; default ``data/reference/accelerators.csv`` in the repository.

    Returns:
        polars frame, one row per accelerator, columns: ``accelerator`` (String, canonical
        name), ``aliases`` (String, ``;``-separated), ``bf16_dense_tflops`` (Float64, TFLOP/s,
        no 2:4 sparsity), ``fp8_dense_tflops`` (Float64, null where unsupported),
        ``memory_gb`` (Float64, decimal GB), ``memory_bandwidth_tbps`` (Float64, TB/s),
        ``fp4_dense_tflops`` (Float64, dense 4-bit tensor peak, null where unsupported),
        ``fp4_format`` (String: ``NVFP4`` on NVIDIA Blackwell, ``MXFP4`` on AMD CDNA 4),
        ``scaleup_domain`` (Int64, accelerators that share one NVLink / xGMI / ICI domain: 8 on
        an HGX board, 72 in an NVL72 rack), ``scaleup_fabric`` (String), ``source_url``
        (String). Values from the vendor datasheets named in ``source_url``
        (``data/reference/README.md``). A table without the four columns after
        ``memory_bandwidth_tbps`` (an older or a user's own file) reads them as null.

    Raises:
        FileNotFoundError: missing file.
    """
    base = {k: v for k, v in _ACCEL_SCHEMA.items() if k not in _OPTIONAL_COLUMNS}
    try:
        return read_table("accelerators", path, _ACCEL_SCHEMA)
    except pl.exceptions.PolarsError:  # an older layout without the optional columns
        table = read_table("accelerators", path, base)
    return table.with_columns(
        pl.lit(None, _ACCEL_SCHEMA[c]).alias(c) for c in _OPTIONAL_COLUMNS
    ).select(list(_ACCEL_SCHEMA))


_STRIP_TOKENS = re.compile(r"^(nvidia|amd|instinct|tesla|\d+gb|hbm\w*)$")


def normalize_accelerator_name(name: str) -> str:
    """Normalise an accelerator string for lookup.

    Lower-cases, splits on non-alphanumerics, drops vendor words (``nvidia``, ``amd``,
    ``instinct``, ``tesla``) and memory tokens (``80gb``, ``hbm3``…), and joins the rest.
    ``"NVIDIA H100-SXM5-80GB"`` (MLPerf ``systems/*.json`` ``accelerator_model_name``) →
    ``"h100sxm5"``, an alias of ``"H100 SXM"``.
    """
    tokens = [t for t in re.split(r"[^0-9a-z]+", name.lower()) if t]
    return "".join(t for t in tokens if not _STRIP_TOKENS.match(t))


def _full_key(name: str) -> str:
    """Case and punctuation folded, every token kept (``"NVIDIA H100-SXM5-96GB"`` ->
    ``"nvidiah100sxm596gb"``): tells apart parts that differ only in memory."""
    return "".join(t for t in re.split(r"[^0-9a-z]+", name.lower()) if t)


def _matching_rows(name: str, table: pl.DataFrame) -> list[str]:
    """Canonical names whose name or alias matches ``name``: exact spelling (case and
    punctuation folded) first; only when none matches, the normalised key
    (:func:`normalize_accelerator_name`)."""
    rows = [
        (r["accelerator"], [r["accelerator"], *((r["aliases"] or "").split(";"))])
        for r in table.select("accelerator", "aliases").iter_rows(named=True)
    ]
    for key_of in (_full_key, normalize_accelerator_name):
        key = key_of(name)
        if not key:
            return []
        hits = [acc for acc, names in rows if any(key_of(n) == key for n in names if n.strip())]
        if hits:
            return list(dict.fromkeys(hits))
    return []


def resolve_accelerator(name: str, accelerators: pl.DataFrame | None = None) -> str:
    """Map an accelerator string (canonical name or alias, any case) to its canonical name.

    An alias spelled exactly (case and punctuation aside) wins over a normalised match, so
    ``"NVIDIA H100-SXM5-96GB"`` is the 96 GB part and ``"NVIDIA H100-SXM5-80GB"`` the 80 GB one.

    Raises:
        ValueError: no row matches; the message lists the known canonical names.
    """
    table = accelerators if accelerators is not None else load_accelerators()
    hits = _matching_rows(name, table)
    if hits:
        return hits[0]
    known = ", ".join(table["accelerator"].to_list())
    raise ValueError(f"unknown accelerator {name!r}; known accelerators: {known}")


class UnknownAcceleratorError(ValueError):
    """An accelerator string (a systems JSON's ``accelerator_model_name``) no row of the
    accelerator table names; the message is one line."""


#: ``accelerator_model_name`` values that name no accelerator (CPU-only systems, e.g. Intel's
#: v3.1 Xeon submissions with ``accelerators_per_node`` 0).
NO_ACCELERATOR = frozenset({"", "n/a", "na", "none", "cpu", "-"})


def lookup_accelerator(name: str, accelerators: pl.DataFrame | None = None) -> dict:
    """The accelerator table's row for a systems JSON ``accelerator_model_name`` string.

    For the MLPerf record: every ``accelerator_model_name`` of the MLCommons Training results
    v3.1 to v5.1 maps to exactly one row (``data/reference/mlperf_accelerator_names.csv``
    lists them with their files; ``tests/test_accelerators.py`` checks each).

    Args:
        name: the string as the systems JSON spells it (e.g. ``"NVIDIA Blackwell Ultra GPU
            (GB300)"``, ``"AMD Instinct MI355X"``).
        accelerators: the table (:func:`load_accelerators` if omitted).

    Returns:
        dict of the row's columns (:func:`load_accelerators`): ``accelerator`` (canonical),
        dense peaks in TFLOP/s (``bf16_dense_tflops``, ``fp8_dense_tflops``,
        ``fp4_dense_tflops``; None where unsupported or unpublished), ``memory_gb``,
        ``scaleup_domain``, ``source_url``...

    Raises:
        UnknownAcceleratorError: a string that names no accelerator (``N/A``) or that no row
            names, or one that two rows claim; one line naming the string and what to do.
    """
    table = accelerators if accelerators is not None else load_accelerators()
    text = name.strip() if isinstance(name, str) else ""
    if text.lower() in NO_ACCELERATOR:
        raise UnknownAcceleratorError(
            f"accelerator_model_name {name!r} names no accelerator (a CPU-only system?): "
            "no accelerator peak or memory"
        )
    hits = _matching_rows(text, table)
    if len(hits) > 1:
        raise UnknownAcceleratorError(
            f"accelerator_model_name {name!r} matches several rows ({', '.join(hits)}) of the "
            "accelerator table: add it as an alias of one"
        )
    if not hits:
        raise UnknownAcceleratorError(
            f"unknown accelerator_model_name {name!r}: not in data/reference/accelerators.csv "
            "(add a row or an alias with its datasheet source, or give the accelerator's peaks "
            "in the config's accelerator: mapping)"
        )
    return table.filter(pl.col("accelerator") == hits[0]).row(0, named=True)


_PRECISION_COLUMNS = {
    "bf16": "bf16_dense_tflops",
    "fp16": "bf16_dense_tflops",
    "fp8": "fp8_dense_tflops",
    "fp4": "fp4_dense_tflops",
    "nvfp4": "fp4_dense_tflops",
    "mxfp4": "fp4_dense_tflops",
}


def peak_flops(
    accelerator: str, precision: str = "bf16", accelerators: pl.DataFrame | None = None
) -> float:
    """Dense (no 2:4 sparsity) peak tensor throughput of one accelerator, FLOP/s.

    Args:
        accelerator: canonical name or alias (e.g. ``"NVIDIA H100-SXM5-80GB"`` → H100 SXM).
        precision: ``'bf16'``, ``'fp16'`` (same peak as BF16), ``'fp8'`` or ``'fp4'``
            (``'nvfp4'``/``'mxfp4'``: the part's 4-bit tensor peak, ``fp4_dense_tflops``).
        accelerators: table from :func:`load_accelerators` (loaded if omitted).

    Returns:
        FLOP/s, e.g. H100 SXM: 989.4e12 (bf16), 1978.9e12 (fp8).

    Raises:
        ValueError: unknown accelerator (message lists known ones), unknown precision, or a
            precision the accelerator does not support (e.g. FP8 on A100).
    """
    table = accelerators if accelerators is not None else load_accelerators()
    canonical = resolve_accelerator(accelerator, table)
    col = _PRECISION_COLUMNS.get(precision.lower())
    if col is None:
        raise ValueError(f"unknown precision {precision!r}; known: {sorted(_PRECISION_COLUMNS)}")
    value = table.filter(pl.col("accelerator") == canonical)[col].item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise ValueError(f"{canonical} has no dense {precision} tensor peak in the table")
    return float(value) * TFLOP


def mfu_both_peaks(
    tflops_per_gpu: float,
    accelerator: str = "H100 SXM",
    accelerators: pl.DataFrame | None = None,
) -> dict[str, float | None]:
    """MFU of a model TFLOP/s/GPU figure against both the BF16 and the FP8 dense peak.

    NVIDIA-stack MLPerf GPT-3 runs trained in FP8 (Transformer Engine FP8 hybrid: ``fp8``
    settings of the NVIDIA GPT-3 configs in ``mlcommons/training_results_v4.1@b87b9e39``), so an MFU against
    the BF16 peak alone can exceed 90% and means little; report both, labelled.

    Returns:
        ``{'mfu_bf16_dense': fraction, 'mfu_fp8_dense': fraction or None if no FP8}``.
        Eos v4.1 n32 step-level 957.5 → 0.968 (BF16) and 0.484 (FP8).
    """
    table = accelerators if accelerators is not None else load_accelerators()
    out: dict[str, float | None] = {
        "mfu_bf16_dense": tflops_per_gpu * TFLOP / peak_flops(accelerator, "bf16", table)
    }
    try:
        out["mfu_fp8_dense"] = tflops_per_gpu * TFLOP / peak_flops(accelerator, "fp8", table)
    except ValueError:
        out["mfu_fp8_dense"] = None
    return out


def with_mfu_columns(
    df: pl.DataFrame,
    tflops_col: str = "tflops_per_gpu",
    accelerator: str = "H100 SXM",
    accelerators: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Append ``mfu_bf16_dense`` and ``mfu_fp8_dense`` (Float64 fractions) to ``df``.

    Args:
        df: any frame with a TFLOP/s/GPU column.
        tflops_col: the model TFLOP/s/GPU column.
        accelerator: accelerator of every row (canonical name or alias).

    Returns:
        ``df`` with two extra Float64 columns (null where ``tflops_col`` is null; FP8 column
        all-null if the accelerator has no FP8 peak).
    """
    table = accelerators if accelerators is not None else load_accelerators()
    bf16 = peak_flops(accelerator, "bf16", table) / TFLOP
    try:
        fp8: float | None = peak_flops(accelerator, "fp8", table) / TFLOP
    except ValueError:
        fp8 = None
    return df.with_columns(
        (pl.col(tflops_col).cast(pl.Float64) / bf16).alias("mfu_bf16_dense"),
        (pl.col(tflops_col).cast(pl.Float64) / fp8 if fp8 else pl.lit(None, pl.Float64)).alias(
            "mfu_fp8_dense"
        ),
    )
