"""Does the accounting's GPU type agree with the config's accelerator?

Slurm records a typed GPU allocation as ``gres/gpu:<type>`` in ``AllocTRES``; ``<type>`` is the name
the site gave in ``gres.conf`` (``Type=``), free text such as ``h100``, ``H100``,
``nvidia_h100_80gb_hbm3`` (the autodetected NVML name) or ``mi300x``
(https://slurm.schedmd.com/gres.conf.html, ``Type``; https://slurm.schedmd.com/tres.html). The book's
peaks, memory and MFU all come from the config's ``accelerator``: a dump whose jobs ran on another
GPU family (the config copied from another cluster, or a dump of the wrong partition) would make
every per-GPU number of the operations chapter the wrong cluster's. This check names the families
it can recognise and flags the records whose type is another family than the config's; a type it
cannot place (a site's own word such as ``big``) is not guessed at.
"""

from __future__ import annotations

import re

import polars as pl

from trainperf.quality import QualityLog, empty_quality
from trainperf.slurm.fields import SacctWarning

__all__ = ["accelerator_family", "gpu_type_mismatch"]

# a family token: letters then digits, optional letter suffix ("h100", "gb200", "mi355x", "a100",
# "l40s"); a number alone ("4090") is too loose to place a free-text gres type
_FAMILY = re.compile(r"[a-z]+\d+[a-z]?")


def accelerator_family(canonical: str) -> str | None:
    """The family token of an accelerator table name: ``"H100 SXM"`` -> ``"h100"``, ``"GB300"`` ->
    ``"gb300"``, ``"MI355X"`` -> ``"mi355x"``; ``None`` when the name has no letters-and-digits
    token (``"RTX 4090"``)."""
    m = _FAMILY.search(canonical.lower())
    return m.group(0) if m else None


def _families_in(gres_type: str, families: list[str]) -> set[str]:
    """The families whose token stands alone in ``gres_type`` (not inside a longer token: ``b200``
    is not found in ``gb200``, ``h100`` not in ``h1000``)."""
    text = gres_type.lower()
    return {f for f in families if re.search(rf"(?<![a-z0-9]){re.escape(f)}(?![0-9])", text)}


def gpu_type_mismatch(
    jobs: pl.DataFrame,
    accelerator: str,
    *,
    source: str = "sacct",
    lines: bool = True,
    accelerators: pl.DataFrame | None = None,
    warn: bool = True,
) -> pl.DataFrame:
    """Quality rows for job records whose ``gres/gpu:<type>`` is another GPU family than the config's.

    Args:
        jobs: the ``jobs`` frame of :func:`trainperf.slurm.read_sacct_dumps` (columns ``gpu_type``
            Utf8 and ``source_line`` Int64 are used).
        accelerator: the config's accelerator (a canonical name or alias of
            ``data/reference/accelerators.csv``).
        source: the dump's name for the rows and warnings (several dumps: their names).
        lines: report the first line (``source_line``); ``False`` where ``jobs`` merges several
            dumps, whose lines are each in their own file.
        accelerators: the accelerator table (default: the bundled one).
        warn: emit a :class:`~trainperf.slurm.SacctWarning` per differing type.

    Returns:
        A frame with :data:`trainperf.quality.QUALITY_SCHEMA`: one ``gpu_type_differs`` row (action
        ``flagged``: the records are kept, their per-GPU figures use the config's accelerator) per
        GPU type whose type names a known family other than the config's, with the number of
        records (``n_samples``) and the first line. Empty when the types agree, when no record has a
        type, when no type names a known family, or when the config's accelerator is not in the
        table or has no family token.
    """
    # the FLOP package (0.3 s of imports) loads only when the check runs, not with trainperf.slurm
    from trainperf.flops.accelerators import load_accelerators, resolve_accelerator  # noqa: PLC0415

    table = accelerators if accelerators is not None else load_accelerators()
    try:
        own = accelerator_family(resolve_accelerator(accelerator, table))
    except ValueError:
        return empty_quality()
    if own is None or "gpu_type" not in jobs.columns or jobs.height == 0:
        return empty_quality()
    families = sorted(
        {f for f in map(accelerator_family, table["accelerator"].to_list()) if f is not None}
    )
    typed = (
        jobs.select("gpu_type", "source_line")
        .filter(pl.col("gpu_type").is_not_null() & (pl.col("gpu_type") != ""))
        .group_by("gpu_type", maintain_order=True)
        .agg(n=pl.len(), first_line=pl.col("source_line").min())
    )
    log = QualityLog(category=SacctWarning)
    for row in typed.iter_rows(named=True):
        found = _families_in(row["gpu_type"], families)
        if not found or own in found:
            continue
        log.add(
            source,
            "gpu_type_differs",
            "flagged",
            f"AllocTRES gres/gpu:{row['gpu_type']} names {', '.join(sorted(found)).upper()}, the "
            f"config's accelerator is {accelerator}: these records are kept, their per-GPU figures "
            "use the config's accelerator",
            n_samples=row["n"],
            first_line=row["first_line"] if lines else None,
            warn=warn,
        )
    return log.frame() if log.rows else empty_quality()
