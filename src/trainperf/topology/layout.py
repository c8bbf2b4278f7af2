"""Where a training job's ranks sit on the cluster, and which link each parallel group's traffic takes.

A Megatron-LM / NeMo job of ``n_nodes`` nodes with ``gpus_per_node`` GPUs each splits its ranks into
tensor-parallel (TP), context-parallel (CP), data-parallel (DP) and pipeline-parallel (PP) groups.
Rank order is Megatron-LM's default ``"tp-cp-ep-dp-pp"`` (``megatron/core/parallel_state.py``,
``initialize_model_parallel``; ``RankGenerator``): TP varies fastest, then CP, then DP, then PP, so
``rank = tp_rank + tp·(cp_rank + cp·(dp_rank + dp·pp_stage))``. The launcher places ranks on nodes
in order, ``gpus_per_node`` per node (``node = rank // gpus_per_node``, ``local_gpu = rank %
gpus_per_node``).

On a **rail-optimized** fabric (NVIDIA DGX SuperPOD reference architecture; SAKURAONE, arXiv
2507.02124 and 2604.13600 abstracts) NIC *i* of every node serves GPU *i* and is cabled to leaf switch
*i* of its pod, "rail" *i*: traffic between GPUs of the same local index on two nodes crosses one
leaf switch, traffic between different local indices must go through a spine or through NVLink
first (NCCL's PXN). :func:`group_links` says, for each kind of group, whether its members share a
node (NVLink) and whether its cross-node traffic can stay on rails.

Units: ranks, nodes and GPUs are counts (Int64).
"""

from __future__ import annotations

import polars as pl

from trainperf.tables import read_table

__all__ = [
    "LAYOUTS_SCHEMA",
    "LAYOUT_SCHEMA",
    "LINKS_SCHEMA",
    "group_links",
    "job_parameters",
    "load_layouts",
    "pick_job",
    "rank_layout",
]

LAYOUT_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int64,
    "node": pl.Int64,
    "local_gpu": pl.Int64,
    "rail": pl.Int64,
    "tp_rank": pl.Int64,
    "cp_rank": pl.Int64,
    "dp_rank": pl.Int64,
    "pp_stage": pl.Int64,
    "tp_group": pl.Int64,
    "dp_group": pl.Int64,
    "pp_group": pl.Int64,
}
"""Columns of :func:`rank_layout`."""


def rank_layout(
    n_nodes: int,
    gpus_per_node: int = 8,
    tp: int = 1,
    pp: int = 1,
    cp: int = 1,
) -> pl.DataFrame:
    """One row per rank: its node and GPU, its rail, and its place in every parallel group.

    Args:
        n_nodes: nodes of the job.
        gpus_per_node: GPUs (and compute NICs, one per GPU) per node.
        tp, pp, cp: tensor-, pipeline- and context-parallel sizes; DP is what remains,
            ``n_nodes·gpus_per_node / (tp·cp·pp)``.

    Returns:
        polars frame with :data:`LAYOUT_SCHEMA`: rank, node, local_gpu, rail (= local_gpu: NIC
        *i* serves GPU *i*), tp_rank, cp_rank, dp_rank, pp_stage, and the id of the rank's TP group
        (``rank // tp``), DP group (the ranks that share tp, cp and pp positions) and PP group
        (the ranks that share tp, cp and dp positions), all Int64, sorted by rank.

    Raises:
        ValueError: a size below 1, or ``tp·cp·pp`` not dividing the job's GPUs.
    """
    for name, v in (("n_nodes", n_nodes), ("gpus_per_node", gpus_per_node), ("tp", tp),
                    ("pp", pp), ("cp", cp)):  # fmt: skip
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    world = n_nodes * gpus_per_node
    if world % (tp * cp * pp):
        raise ValueError(
            f"tp x cp x pp = {tp} x {cp} x {pp} = {tp * cp * pp} does not divide the job's "
            f"{world} GPUs ({n_nodes} nodes x {gpus_per_node})"
        )
    dp = world // (tp * cp * pp)
    r = pl.int_range(0, world, eager=True, dtype=pl.Int64).alias("rank")
    df = pl.DataFrame(r)
    return (
        df.with_columns(
            (pl.col("rank") // gpus_per_node).alias("node"),
            (pl.col("rank") % gpus_per_node).alias("local_gpu"),
            (pl.col("rank") % gpus_per_node).alias("rail"),
            (pl.col("rank") % tp).alias("tp_rank"),
            (pl.col("rank") // tp % cp).alias("cp_rank"),
            (pl.col("rank") // (tp * cp) % dp).alias("dp_rank"),
            (pl.col("rank") // (tp * cp * dp)).alias("pp_stage"),
        )
        .with_columns(
            (pl.col("rank") // tp).alias("tp_group"),
            (pl.col("tp_rank") + tp * (pl.col("cp_rank") + cp * pl.col("pp_stage"))).alias(
                "dp_group"
            ),
            (pl.col("tp_rank") + tp * (pl.col("cp_rank") + cp * pl.col("dp_rank"))).alias(
                "pp_group"
            ),
        )
        .select(list(LAYOUT_SCHEMA))
    )


LINKS_SCHEMA: dict[str, pl.DataType] = {
    "group": pl.String,
    "n_groups": pl.Int64,
    "group_size": pl.Int64,
    "nodes_per_group": pl.Int64,
    "rails_per_group": pl.Int64,
    "intra_node": pl.Boolean,
    "rail_aligned": pl.Boolean,
    "link": pl.String,
}
"""Columns of :func:`group_links`."""


def group_links(layout: pl.DataFrame) -> pl.DataFrame:
    """For TP, DP and PP groups: how many nodes and rails a group spans, and the link it uses.

    A group is ``intra_node`` when all its members are on one node (its traffic is NVLink). It is
    ``rail_aligned`` when it spans nodes and every node holds the same set of the group's local GPU
    indices, so that a ring or pipeline hop between nodes can go GPU *i* to GPU *i*, on rail *i*
    (DP all-reduce rings per rail; PP send/recv between the same local GPU of two nodes).

    Args:
        layout: :func:`rank_layout` output.

    Returns:
        polars frame with :data:`LINKS_SCHEMA`, rows ``TP``, ``DP``, ``PP``: n_groups, group_size,
        nodes_per_group and rails_per_group (the largest over the groups, Int64), intra_node and
        rail_aligned (Boolean, true when every group is), link (String: ``NVLink (inside a node)``,
        ``rails (GPU i to GPU i across nodes)``, ``NVLink + rails`` when groups have several members
        per node and rail-aligned hops between nodes, ``crosses rails (spine or PXN)``, or
        ``none (one rank)`` for groups of size 1).
    """
    rows = []
    for name, col in (("TP", "tp_group"), ("DP", "dp_group"), ("PP", "pp_group")):
        per_node = layout.group_by(col, "node").agg(pl.col("local_gpu").sort().alias("gpus"))
        per_group = per_node.group_by(col).agg(
            pl.len().alias("nodes"),
            pl.col("gpus").n_unique().alias("gpu_sets"),
            pl.col("gpus").first().list.len().alias("per_node"),
        )
        sizes = layout.group_by(col).len()
        rails = layout.group_by(col).agg(pl.col("rail").n_unique().alias("rails"))
        intra = bool((per_group["nodes"] == 1).all())
        aligned = bool(((per_group["nodes"] > 1) & (per_group["gpu_sets"] == 1)).all())
        several = bool((per_group["per_node"] > 1).any())
        if int(sizes["len"].max()) == 1:
            link = "none (one rank)"
        elif intra:
            link = "NVLink (inside a node)"
        elif aligned and several:
            link = "NVLink + rails"
        elif aligned:
            link = "rails (GPU i to GPU i across nodes)"
        else:
            link = "crosses rails (spine or PXN)"
        rows.append(
            {
                "group": name,
                "n_groups": sizes.height,
                "group_size": int(sizes["len"].max()),
                "nodes_per_group": int(per_group["nodes"].max()),
                "rails_per_group": int(rails["rails"].max()),
                "intra_node": intra,
                "rail_aligned": aligned,
                "link": link,
            }
        )
    return pl.DataFrame(rows, schema=LINKS_SCHEMA)


LAYOUTS_SCHEMA: dict[str, pl.DataType] = {
    "system": pl.String,
    "round": pl.String,
    "benchmark": pl.String,
    "n_nodes": pl.Int64,
    "gpus_per_node": pl.Int64,
    "tp": pl.Int64,
    "pp": pl.Int64,
    "vp": pl.Int64,
    "micro_batch_size": pl.Int64,
    "source": pl.String,
}
"""Schema of ``data/reference/parallel_layouts.csv``: the parallel layout of a submission whose log
and systems JSON do not give it, with the public source that does."""


def load_layouts(path=None) -> pl.DataFrame:
    """Load ``data/reference/parallel_layouts.csv`` (:data:`LAYOUTS_SCHEMA`).

    Raises:
        FileNotFoundError: missing file.
    """

    return read_table("parallel_layouts", path, LAYOUTS_SCHEMA)


def job_parameters(
    hyperparameters_row: dict,
    n_nodes: int,
    layouts: pl.DataFrame | None = None,
    gpus_per_node: int | None = None,
) -> dict:
    """The parallel layout of one submission: from its log or systems JSON, else a cited table row.

    Args:
        hyperparameters_row: one row of :func:`trainperf.mlperf.hyperparameters` (round, system,
            benchmark, n_accelerators, tp, pp, vp, cp, micro_batch_size, dp_x_micro_batch,
            parallelism_source).
        n_nodes: nodes of the submission (``runs.n_nodes``).
        layouts: :func:`load_layouts` rows, used when the log and systems JSON give no TP/PP.
        gpus_per_node: default ``n_accelerators / n_nodes``.

    Returns:
        dict: system, round, benchmark (str); n_nodes, gpus_per_node, n_gpus, tp, pp, cp, dp (int);
        vp, micro_batch_size (int or None); implied_micro_batch_size (int or None: the log's
        ``global_batch_size / gradient_accumulation_steps / dp``, when it divides); consistent
        (bool or None: the stated micro-batch equals the implied one); source (str: "log",
        "systems JSON" or the table row's source).

    Raises:
        ValueError: no TP/PP in the log, the systems JSON or ``layouts`` for this submission, or
            sizes that do not divide the GPUs.
    """
    h = hyperparameters_row
    n_gpus = int(h["n_accelerators"])
    gpn = gpus_per_node or n_gpus // n_nodes
    tp, pp, vp, mbs = h.get("tp"), h.get("pp"), h.get("vp"), h.get("micro_batch_size")
    cp = h.get("cp") or 1
    source = h.get("parallelism_source")
    if not (tp and pp) and layouts is not None:
        rows = layouts.filter(
            (pl.col("system") == h["system"])
            & (pl.col("round") == h["round"])
            & (pl.col("benchmark") == h["benchmark"])
        )
        if rows.height:
            r = rows.row(0, named=True)
            tp, pp, vp, mbs, source = r["tp"], r["pp"], r["vp"], r["micro_batch_size"], r["source"]
            gpn = gpus_per_node or r["gpus_per_node"] or gpn
    if not (tp and pp):
        raise ValueError(
            f"no tensor/pipeline parallel sizes for {h['round']} {h['system']} {h['benchmark']}: "
            "not in its log or systems JSON, and no row in parallel_layouts.csv"
        )
    if n_gpus % (tp * pp * cp):
        raise ValueError(f"tp x pp x cp = {tp * pp * cp} does not divide {n_gpus} GPUs")
    dp = n_gpus // (tp * pp * cp)
    per_step = h.get("dp_x_micro_batch")
    implied = per_step // dp if per_step and per_step % dp == 0 else None
    return {
        "system": h["system"],
        "round": h["round"],
        "benchmark": h["benchmark"],
        "n_nodes": n_nodes,
        "gpus_per_node": gpn,
        "n_gpus": n_gpus,
        "tp": tp,
        "pp": pp,
        "cp": cp,
        "dp": dp,
        "vp": vp,
        "micro_batch_size": mbs,
        "implied_micro_batch_size": implied,
        "consistent": None if mbs is None or implied is None else mbs == implied,
        "source": source,
    }


def pick_job(
    hyperparameters: pl.DataFrame,
    runs: pl.DataFrame,
    layouts: pl.DataFrame | None = None,
    system: str | None = None,
) -> dict | None:
    """:func:`job_parameters` of the first submission whose layout is known (or of ``system``).

    Args:
        hyperparameters: :func:`trainperf.mlperf.hyperparameters` output.
        runs: the results' ``runs`` frame (system, round, benchmark, n_nodes).
        layouts: :func:`load_layouts` rows.
        system: only this submission (a results folder name).

    Returns:
        The parameters dict, or None when no submission's layout is known.
    """
    for h in hyperparameters.iter_rows(named=True):
        if system is not None and h["system"] != system:
            continue
        nodes = runs.filter((pl.col("system") == h["system"]) & (pl.col("round") == h["round"]))[
            "n_nodes"
        ].drop_nulls()
        if nodes.len() == 0 or not h.get("n_accelerators"):
            continue
        try:
            return job_parameters(h, int(nodes[0]), layouts)
        except ValueError:
            continue
    return None
