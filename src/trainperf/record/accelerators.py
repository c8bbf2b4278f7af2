"""The one place the record maps a systems JSON's ``accelerator_model_name`` to a canonical name.

Issue 37 extends the accelerator table (GB300, B300, MI355X ...) with a lookup of a systems-JSON
string to its canonical row; until that lands, this thin call over
:func:`trainperf.flops.resolve_accelerator` is what the record uses. Switching to the new lookup is
a change of this module alone.
"""

from __future__ import annotations

from functools import cache

from trainperf.flops import resolve_accelerator

__all__ = ["canonical_accelerator"]


@cache
def canonical_accelerator(text: str | None) -> str | None:
    """The accelerator table's canonical name of a systems-JSON accelerator string, or None.

    Args:
        text: ``accelerator_model_name`` of ``systems/<system>.json`` (e.g. ``NVIDIA H100-SXM5-80GB``).

    Returns:
        The ``accelerator`` column of ``data/reference/accelerators.csv`` whose name or alias matches
        (:func:`trainperf.flops.normalize_accelerator_name`), or None when none does (the record keeps
        the string; its peak FLOP/s and MFU stay empty).
    """
    if not text or not text.strip():
        return None
    try:
        return resolve_accelerator(text)
    except ValueError:
        return None
