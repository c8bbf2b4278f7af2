"""Training speed from the logs: step times, training blocks, evaluation curves, throughput and MFU."""

from __future__ import annotations

import json
import math
from functools import cache

import polars as pl

from trainperf import flops as fl
from trainperf.mlperf.checks import as_count
from trainperf.mlperf.loader import Results
from trainperf.mlperf.rules import progress_key

__all__ = [
    "EVAL_CURVE_SCHEMA",
    "STEP_TIMES_SCHEMA",
    "THROUGHPUT_SCHEMA",
    "blocks",
    "eval_curve",
    "runs_with_throughput",
    "step_times",
    "throughput",
]


STEP_TIMES_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.String,
    "step": pl.Int64,
    "time_ms": pl.Float64,
    "step_time_s": pl.Float64,
}
"""Columns of :func:`step_times`."""


def step_times(events: pl.DataFrame) -> pl.DataFrame:
    """Per-step training time from ``tracked_stats`` events, duplicates (one per rank) removed.

    NeMo-based MLPerf implementations log ``tracked_stats`` with value ``{"train_step_timing": s}``
    (v3.x) or ``{"train_step_timing in s": s}`` (v4.1) and metadata ``step`` (for gpt3, a token count).
    v4.0 logs carry no step timing; use block_start/block_stop there. A step timing that is not a
    positive finite number is left out; a ``step`` that is not an integer count is null.

    Args:
        events: an events frame (:func:`parse_log` or ``Results.events``).

    Returns:
        :data:`STEP_TIMES_SCHEMA`.
        polars frame: file (String), step (Int64, the metadata ``step``), time_ms (Float64),
        step_time_s (Float64, seconds). Empty when the log has no step timing.
    """
    # a value without the text "train_step_timing" holds neither key (the value column is the
    # json.dumps of the decoded value, in which a key's ASCII letters stand as they are): most
    # tracked_stats (throughput, init timings) are left out before any Python decode (issue 36)
    ts = events.filter(
        (pl.col("key") == "tracked_stats")
        & pl.col("value").str.contains("train_step_timing", literal=True)
    ).unique(subset=["file", "value", "metadata"], keep="first", maintain_order=True)
    rows = []
    for f, v, m, t in ts.select("file", "value", "metadata", "time_ms").iter_rows():
        val = json.loads(v)
        if not isinstance(val, dict):
            continue
        s = val.get("train_step_timing in s", val.get("train_step_timing"))
        if isinstance(s, bool) or not isinstance(s, int | float):
            continue  # not a step time (the reader keeps the event; a time must be a number)
        try:
            s = float(s)  # an integer of 400 digits does not fit a float: not a step time either
        except OverflowError:
            continue
        if not math.isfinite(s) or s <= 0:
            continue
        meta = json.loads(m)
        rows.append(
            {"file": f, "step": as_count(meta.get("step")), "time_ms": t, "step_time_s": float(s)}
        )
    return pl.DataFrame(
        rows,
        schema=STEP_TIMES_SCHEMA,
    )


EVAL_CURVE_SCHEMA: dict[str, pl.DataType] = {
    "result_file": pl.String,
    "round": pl.String,
    "system": pl.String,
    "benchmark": pl.String,
    "n_accelerators": pl.Int64,
    "progress": pl.Int64,
    "progress_unit": pl.String,
    "eval_value": pl.Float64,
    "eval_target": pl.Float64,
    "time_ms": pl.Float64,
}
"""Columns of :func:`eval_curve`."""


def eval_curve(results: Results) -> pl.DataFrame:
    """Evaluation metric against training progress for every run (rank duplicates removed).

    Args:
        results: what :func:`load_results` returned.

    Returns:
        polars frame: result_file, round, system, benchmark (String), n_accelerators (Int64),
        progress (Int64, the count of the metadata key the round's rules name for eval_accuracy,
        :func:`~trainperf.mlperf.rules.progress_key`: tokens for gpt3 from ``epoch_num``, samples
        from ``samples_count`` for llama2_70b_lora and llama31_*; null when missing or not a count),
        progress_unit (String: "tokens", "samples" or "epochs"), eval_value (Float64), eval_target
        (Float64, the ruleset target), time_ms (Float64, null when excluded as damaged). Sorted by
        result_file and progress (the evaluations' own order, not their timestamps).
        :data:`EVAL_CURVE_SCHEMA`.
    """
    ev = results.events.filter(pl.col("key") == "eval_accuracy").unique(
        subset=["file", "value", "metadata"], keep="first", maintain_order=True
    )
    meta = results.runs.select(
        pl.col("result_file").alias("file"),
        "round",
        "system",
        "benchmark",
        "n_accelerators",
        "eval_target",
    )
    rows = []
    for f, m, v, t in ev.select("file", "metadata", "value_num", "time_ms").iter_rows():
        rows.append({"file": f, "md": m, "eval_value": v, "time_ms": t})
    schema = {"file": pl.String, "md": pl.String, "eval_value": pl.Float64, "time_ms": pl.Float64}
    df = pl.DataFrame(rows, schema=schema).join(meta, on="file", how="left")
    out = []
    for rec in df.iter_rows(named=True):
        key, unit = progress_key(rec["benchmark"], rec["round"]) or ("epoch_num", "epochs")
        md = json.loads(rec["md"])
        rec["progress"] = as_count(md.get(key))
        rec["progress_unit"] = unit
        rec["result_file"] = rec["file"]
        out.append({c: rec[c] for c in EVAL_CURVE_SCHEMA})
    return pl.DataFrame(out, schema=EVAL_CURVE_SCHEMA).sort(
        "result_file", "progress", "time_ms", nulls_last=True, maintain_order=True
    )


def blocks(events: pl.DataFrame) -> pl.DataFrame:
    """Training blocks (``block_start``/``block_stop`` pairs, rank duplicates removed).

    A block is the training between two evaluations; its metadata ``first_epoch_num`` and
    ``epoch_count`` count tokens for gpt3 and samples for llama2_70b_lora.

    Returns:
        polars frame: file (String), first_epoch_num, epoch_count (Int64), start_ms, stop_ms
        (Float64, epoch ms; the earliest start and the latest stop over ranks, times excluded as
        damaged ignored), duration_s (Float64). Counts that are not integers are null.
    """
    be = events.filter(pl.col("key").is_in(["block_start", "block_stop"])).with_columns(
        pl.col("metadata")
        .str.json_path_match("$.first_epoch_num")
        .cast(pl.Int64, strict=False)
        .alias("first_epoch_num"),
        pl.col("metadata")
        .str.json_path_match("$.epoch_count")
        .cast(pl.Int64, strict=False)
        .alias("epoch_count"),
    )
    starts = (
        be.filter(pl.col("key") == "block_start")
        .group_by("file", "first_epoch_num")
        .agg(pl.col("epoch_count").first(), pl.col("time_ms").min().alias("start_ms"))
    )
    stops = (
        be.filter(pl.col("key") == "block_stop")
        .group_by("file", "first_epoch_num")
        .agg(pl.col("time_ms").max().alias("stop_ms"))
    )
    return (
        starts.join(stops, on=["file", "first_epoch_num"], how="inner")
        .with_columns(((pl.col("stop_ms") - pl.col("start_ms")) / 1000.0).alias("duration_s"))
        .sort("file", "first_epoch_num")
    )


THROUGHPUT_SCHEMA = {
    "result_file": pl.String,
    "round": pl.String,
    "system": pl.String,
    "benchmark": pl.String,
    "n_accelerators": pl.Int64,
    "global_batch_size": pl.Int64,
    "accelerator_model": pl.String,
    "step_source": pl.String,
    "step_time_s": pl.Float64,
    "tokens_per_s_per_gpu_step": pl.Float64,
    "tokens_per_s_per_gpu_e2e": pl.Float64,
    "flops_per_token": pl.Float64,
    "model_tflops_per_gpu_step": pl.Float64,
    "mfu_bf16_dense_step": pl.Float64,
    "mfu_fp8_dense_step": pl.Float64,
    "model_tflops_per_gpu_e2e": pl.Float64,
    "mfu_bf16_dense_e2e": pl.Float64,
    "mfu_fp8_dense_e2e": pl.Float64,
    "hfu_bf16_dense_step": pl.Float64,
    "hfu_fp8_dense_step": pl.Float64,
    "note": pl.String,
}
"""Columns of :func:`throughput` (see its docstring for units)."""


def throughput(
    results: Results, recompute: str | None = None, causal: bool = False
) -> pl.DataFrame:
    """Per-run throughput, model TFLOP/s per GPU and MFU from the logs themselves.

    Definitions (per run, n = n_accelerators):

    * step level: ``tokens_per_s_per_gpu_step = global_batch_size x max_sequence_length /
      (median step time x n)``, the step time being the median of the ``tracked_stats`` step timings
      (:func:`step_times`); logs without step timing (v4.0) use the training blocks instead
      (:func:`blocks`: tokens of all blocks / their summed duration, evaluation excluded);
      ``step_source`` says which.
    * end to end: ``tokens_per_s_per_gpu_e2e = tokens_to_converge / (time_to_train x n)``; it includes
      the evaluations inside the timed region, as MLPerf's time to train does.
    * ``model_tflops_per_gpu_* = tokens_per_s_per_gpu_* x F_tok / 1e12`` with F_tok the model FLOPs
      per token of :func:`trainperf.flops.model_flops_per_token` (Narayanan et al., SC21, no
      recomputation; ``causal=True`` halves the attention-score FLOPs as Megatron-LM does since
      2025-03).
    * MFU against both dense peaks of :func:`trainperf.flops.peak_flops`: ``mfu_bf16_dense_*`` and
      ``mfu_fp8_dense_*`` (every NVIDIA-stack H100 MLPerf GPT-3 submission trained in FP8, so the
      BF16 figure alone misleads; the truth lies between the two).
    * HFU (hardware FLOPs, full recomputation counted) only when ``recompute`` is given; the logs do
      not say whether activations were recomputed.

    FLOP figures for the benchmarks of :data:`BENCHMARK_MODELS`: gpt3 (GPT-3 175B, tokens from the
    logs' ``epoch_num``), llama31_405b (Llama 3.1 405B, arXiv:2407.21783 Table 3; tokens = samples x
    ``max_sequence_length``) and llama2_70b_lora (Llama 2 70B with rank-16 adapters on q, k, v, o,
    :func:`trainperf.flops.lora_flops_per_token`; tokens = samples x 8192, the benchmark's fixed
    sequence length, which its logs do not state). Other benchmarks keep null FLOP columns and say
    why in ``note``.

    Args:
        results: :func:`load_results` output.
        recompute: ``"none"``, ``"selective"`` or ``"full"`` when known (for HFU); None: unknown.
        causal: the causal-attention FLOP convention.

    Returns:
        :data:`THROUGHPUT_SCHEMA`, one row per successful run: result_file, round, system, benchmark (String),
        n_accelerators, global_batch_size (Int64), accelerator_model (String), step_source (String:
        "tracked_stats", "blocks" or null), step_time_s (Float64, s), tokens_per_s_per_gpu_step,
        tokens_per_s_per_gpu_e2e (Float64, tokens/s/GPU), flops_per_token (Float64, FLOP),
        model_tflops_per_gpu_step, model_tflops_per_gpu_e2e (Float64, TFLOP/s), mfu_bf16_dense_step,
        mfu_fp8_dense_step, mfu_bf16_dense_e2e, mfu_fp8_dense_e2e (Float64, fraction 0-1),
        hfu_bf16_dense_step, hfu_fp8_dense_step (Float64 or null), note (String).
    """

    st = step_times(results.events).group_by("file").agg(pl.col("step_time_s").median())
    all_blocks = blocks(results.events)
    spanning = _blocks_spanning_evaluations(results.events, all_blocks)
    bl = (
        all_blocks.filter(~pl.col("file").is_in(list(spanning)))
        .group_by("file")
        .agg(
            pl.col("epoch_count").sum().alias("block_tokens"),
            pl.col("duration_s").sum().alias("block_s"),
        )
    )
    step_s = dict(zip(st["file"], st["step_time_s"], strict=True))
    block = {f: (t, d) for f, t, d in bl.select("file", "block_tokens", "block_s").iter_rows()}
    rows = []
    for r in results.runs.filter(pl.col("status") == "success").iter_rows(named=True):
        row = _throughput_row(
            r, step_s.get(r["result_file"]), block.get(r["result_file"]), fl, recompute, causal
        )
        if r["result_file"] in spanning and row["step_source"] is None:
            row["note"] = "; ".join(n for n in (spanning[r["result_file"]], row["note"]) if n)
        rows.append(row)
    return pl.DataFrame(rows, schema=THROUGHPUT_SCHEMA)


def _blocks_spanning_evaluations(events: pl.DataFrame, bl: pl.DataFrame) -> dict[str, str]:
    """Files whose training blocks hold evaluations: {file: why no step-level throughput}.

    A block's ``epoch_count`` is the tokens trained between two evaluations (NVIDIA's logs: the
    evaluation at ``first_epoch_num + epoch_count`` follows ``block_stop``). Some submissions log
    one block over the whole run with ``epoch_count`` one evaluation interval (Intel-HabanaLabs'
    v3.1 GPT-3 logs: ``block_start`` at 0 with ``epoch_count`` 50,331,648, ``block_stop`` at
    ``run_stop``, its 24 evaluations inside); tokens over such a block's duration would count one
    interval's tokens over the whole run (a throughput 24 times too low), so such a file gets no
    block-based step throughput. Detected by progress, not by time alone (rank clocks differ by
    milliseconds): an evaluation logged before a block's stop whose ``epoch_num`` lies beyond
    the block's end ``first_epoch_num + epoch_count``.
    """
    if bl.is_empty():
        return {}
    ev = (
        events.filter(pl.col("key") == "eval_accuracy")
        .select(
            "file",
            pl.col("time_ms").alias("eval_ms"),
            pl.col("metadata")
            .str.json_path_match("$.epoch_num")
            .cast(pl.Int64, strict=False)
            .alias("eval_progress"),
        )
        .drop_nulls()
    )
    inside = (
        bl.drop_nulls(["first_epoch_num", "epoch_count", "stop_ms"])
        .join(ev, on="file", how="inner")
        .filter(
            (pl.col("eval_ms") < pl.col("stop_ms"))
            & (pl.col("eval_ms") > pl.col("start_ms"))
            & (pl.col("eval_progress") > pl.col("first_epoch_num") + pl.col("epoch_count"))
        )
        .group_by("file", "first_epoch_num", "epoch_count")
        .agg(pl.col("eval_progress").n_unique().alias("n_evals"))
        .sort("file", "first_epoch_num")
    )
    out: dict[str, str] = {}
    for f, first, count, n in inside.iter_rows():
        out.setdefault(
            f,
            f"the training block from token {first:,} (epoch_count {count:,}) holds {n} "
            "evaluations beyond its end: no step-level throughput from blocks (end to end only)",
        )
    return out


BENCHMARK_MODELS: dict[str, tuple[str, int | None, int | None]] = {
    "gpt3": ("GPT3_175B", None, None),
    "llama31_405b": ("LLAMA31_405B", None, 8192),
    "llama2_70b_lora": ("LLAMA2_70B", 16, 8192),
}
"""Benchmark -> (model preset in :mod:`trainperf.flops`, LoRA rank or None, sequence length where
the logs state none). GPT-3 and Llama 3.1 405B: the MLPerf reference models; Llama 2 70B LoRA: rank
16 (the logs' ``lora_rank``) on the attention projections, sequences of 8192 tokens
(``mlcommons/training:llama2_70b_lora/README.md``, GovReport inputs padded to 8192; the logs log
no ``max_sequence_length``)."""


def _benchmark_flops(benchmark: str, fl, causal: bool):
    """(F_tok, spec, sequence length fallback) of ``benchmark``, or (None, None, None)."""
    entry = BENCHMARK_MODELS.get(benchmark)
    if entry is None:
        return None, None, None
    spec = getattr(fl, entry[0])
    if entry[1]:
        return fl.lora_flops_per_token(spec, entry[1], causal=causal), spec, entry[2]
    return fl.model_flops_per_token(spec, causal=causal), spec, entry[2]


@cache
def _accelerators() -> pl.DataFrame:
    """The bundled accelerator table, read once per process (issue 36: read per run it was 2 % of
    a round's record build)."""
    return fl.load_accelerators()


def _throughput_row(r: dict, step_s, block, fl, recompute, causal) -> dict:
    """One run's :func:`throughput` row (``step_s``: median step time; ``block``: (tokens, s))."""
    n = r["n_accelerators"]
    keep = ("result_file", "round", "system", "benchmark", "n_accelerators", "global_batch_size")
    out = {k: r[k] for k in (*keep, "accelerator_model")}
    notes = []
    f_tok, spec, seq_default = _benchmark_flops(r["benchmark"], fl, causal)
    seq = r["max_sequence_length"] or seq_default
    step_tps = None
    out["step_source"] = None
    out["step_time_s"] = None
    if n and seq and r["global_batch_size"] and step_s:
        out["step_source"], out["step_time_s"] = "tracked_stats", step_s
        step_tps = r["global_batch_size"] * seq / (step_s * n)
    elif n and r["benchmark"] == "gpt3" and block and block[0] and block[1] and block[1] > 0:
        out["step_source"] = "blocks"
        step_tps = block[0] / (block[1] * n)
    e2e_tps = None
    tokens = r["tokens_to_converge"]
    if not tokens and r["benchmark"] != "gpt3" and seq and r.get("samples_to_converge"):
        tokens = r["samples_to_converge"] * seq  # sequences of seq tokens (BENCHMARK_MODELS)
    if n and tokens and r["time_to_train_min"]:
        e2e_tps = tokens / (r["time_to_train_min"] * 60.0 * n)
    out["tokens_per_s_per_gpu_step"] = step_tps
    out["tokens_per_s_per_gpu_e2e"] = e2e_tps
    out["flops_per_token"] = f_tok
    peaks = {}
    if spec is None:
        notes.append(
            f"no model preset for {r['benchmark']!r} or no token count: FLOP figures not computed"
        )
    elif r["accelerator_model"]:
        try:
            table = _accelerators()
            peaks = {p: fl.peak_flops(r["accelerator_model"], p, table) for p in ("bf16", "fp8")}
        except ValueError as exc:
            notes.append(str(exc))
    for kind, tps in (("step", step_tps), ("e2e", e2e_tps)):
        tfl = tps * f_tok / 1e12 if (tps is not None and f_tok) else None
        out[f"model_tflops_per_gpu_{kind}"] = tfl
        for p in ("bf16", "fp8"):
            out[f"mfu_{p}_dense_{kind}"] = (
                tfl * 1e12 / peaks[p] if (tfl is not None and p in peaks) else None
            )
    hfu_ratio = None
    if recompute and spec and step_tps is not None and r["benchmark"] != "llama2_70b_lora":
        hfu_ratio = fl.model_flops_per_token(spec, causal=causal, recompute=recompute) / f_tok
    for p in ("bf16", "fp8"):
        m = out[f"mfu_{p}_dense_step"]
        out[f"hfu_{p}_dense_step"] = (
            m * hfu_ratio if (m is not None and hfu_ratio is not None) else None
        )
    if recompute is None:
        notes.append("HFU not computed: recomputation unknown")
    out["note"] = "; ".join(notes)
    return out


def runs_with_throughput(results: Results, **kwargs) -> pl.DataFrame:
    """The ``runs`` frame with the :func:`throughput` columns joined on ``result_file``.

    This is the per-run results table that batch runs collect (one Parquet file per results folder).

    Args:
        results: :func:`load_results` output.
        **kwargs: passed to :func:`throughput` (``recompute``, ``causal``).

    Returns:
        ``runs`` columns plus step_source, step_time_s, tokens_per_s_per_gpu_step/e2e, flops_per_token,
        model_tflops_per_gpu_step/e2e, mfu_{bf16,fp8}_dense_{step,e2e}, hfu_{bf16,fp8}_dense_step, note
        (null for runs that did not succeed).
    """
    thr = throughput(results, **kwargs).drop(
        "round", "system", "benchmark", "n_accelerators", "global_batch_size", "accelerator_model"
    )
    return results.runs.join(thr, on="result_file", how="left")
