"""The scale-up domain of a cluster: how many GPUs share one NVLink (or Infinity Fabric, ICI)
domain, and what that means for tensor parallelism, in the book's words.

An 8-GPU HGX or OAM board is one node and one domain; a GB200/GB300 NVL72 rack is one 72-GPU
NVLink domain over 18 compute trays of 4 GPUs (each tray a node of the scheduler), so tensor
parallelism can span trays without leaving NVLink. The domain sizes are the ``scaleup_domain``
column of ``data/reference/accelerators.csv`` (vendor sources there).
"""

from __future__ import annotations

from trainperf.flops import load_accelerators, resolve_accelerator

__all__ = ["scaleup_domain", "tp_domain_sentence"]


def scaleup_domain(accelerator: str, gpus_per_node: int, accelerators=None) -> dict:
    """The NVLink / xGMI / ICI domain of an accelerator in a cluster of ``gpus_per_node``.

    Args:
        accelerator: canonical name or alias (:func:`trainperf.flops.resolve_accelerator`).
        gpus_per_node: GPUs per node (a GB300 NVL72 compute tray: 4).
        accelerators: the accelerator table (default the bundled one).

    Returns:
        ``{"accelerator", "gpus" (domain size, int; null when the table has none: then one
        node), "fabric" (str or None), "nodes" (nodes per domain, int >= 1), "spans_nodes"
        (bool: the domain is larger than one node)}``.

    Raises:
        ValueError: unknown accelerator; ``gpus_per_node`` < 1.
    """
    if gpus_per_node < 1:
        raise ValueError("gpus_per_node must be at least 1")
    table = accelerators if accelerators is not None else load_accelerators()
    name = resolve_accelerator(accelerator, table)
    row = table.filter(table["accelerator"] == name).row(0, named=True)
    size = row.get("scaleup_domain")
    gpus = int(size) if size else gpus_per_node
    nodes = max(1, gpus // gpus_per_node)
    return {
        "accelerator": name,
        "gpus": gpus,
        "fabric": row.get("scaleup_fabric"),
        "nodes": nodes,
        "spans_nodes": gpus > gpus_per_node,
    }


def _link(fabric: str | None) -> str:
    """The family name of a ``scaleup_fabric`` entry for prose: ``NVLink 5 (HGX B200 board)`` ->
    ``NVLink``, ``Infinity Fabric (xGMI) 8-GPU platform`` -> ``Infinity Fabric``, ``ICI (2D torus;
    256-chip pod)`` -> ``ICI``; ``the scale-up fabric`` where the table names none. An AMD or TPU
    domain is never called NVLink."""
    if not fabric:
        return "the scale-up fabric"
    for family in ("NVLink", "Infinity Fabric", "ICI", "RoCE"):
        if fabric.startswith(family):
            return family
    return fabric.split(" (")[0]


def tp_domain_sentence(
    accelerator: str, gpus_per_node: int, accelerators=None, total_gpus: int | None = None
) -> str:
    """Where tensor parallelism can stay inside the fast domain, as one sentence for the book.

    ``total_gpus``: the GPUs of the cluster or job, when fewer than one domain holds (a 2-tray
    slice of an NVL72 rack): the sentence then says all of them share it.

    >>> tp_domain_sentence("H100 SXM", 8)
    'TP stays inside the NVLink domain of one node (8 GPUs on one board, NVLink 4 (HGX/DGX H100 board)).'
    >>> tp_domain_sentence("MI300X", 8)
    'TP stays inside the Infinity Fabric domain of one node (8 GPUs on one board, Infinity Fabric (xGMI) 8-GPU platform).'
    >>> tp_domain_sentence("GB300", 4)[:96]
    'TP can span nodes without leaving NVLink: 72 GPUs share one domain, 18 nodes of 4 GPUs (NVLink 5'
    """
    d = scaleup_domain(accelerator, gpus_per_node, accelerators)
    fabric = f", {d['fabric']}" if d["fabric"] else ""
    link = _link(d["fabric"])
    if d["spans_nodes"] and total_gpus and gpus_per_node < total_gpus <= d["gpus"]:
        return (
            f"TP can span nodes without leaving {link}: all {total_gpus} GPUs "
            f"({total_gpus // gpus_per_node} nodes of {gpus_per_node}) sit in one {d['gpus']}-GPU "
            f"domain ({d['fabric'] or 'one scale-up fabric'})."
        )
    if d["spans_nodes"]:
        return (
            f"TP can span nodes without leaving {link}: {d['gpus']} GPUs share one domain, "
            f"{d['nodes']} nodes of {gpus_per_node} GPUs ({d['fabric'] or 'one scale-up fabric'})."
        )
    if d["gpus"] < gpus_per_node:
        return (
            f"TP stays inside groups of {d['gpus']} GPU{'s' if d['gpus'] != 1 else ''} linked"
            f"{fabric.replace(', ', ' by ', 1) if fabric else ''}; beyond them it crosses PCIe "
            "or the network."
        )
    return f"TP stays inside the {link} domain of one node ({d['gpus']} GPUs on one board{fabric})."
